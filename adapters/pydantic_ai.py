"""pydantic-ai: the ``Hooks`` capability's before-tool hooks run under the guard, the core decides.

pydantic-ai's ``Hooks`` capability (``pydantic_ai.capabilities.hooks``) dispatches its
``before_tool_execute`` hooks in one loop, ``Hooks.before_tool_execute``: each hook gets the
validated arguments and returns the arguments the tool runs with (a rewrite is a new dict),
or raises to stop the call (``ModelRetry``, ``ToolFailed``, ``SkipToolExecution``,
``CallDeferred``, ``ApprovalRequired``). Upstream already fails closed on a raise (the run
crashes), but a hook has no deadline unless it was registered with its own ``timeout=``,
a later hook can rewrite the arguments after an earlier one approved them, and the
exception text of a raising hook reaches the caller.

The patch is one ``wrapt`` wrapper on ``Hooks.before_tool_execute``:

- the entries come from upstream's own registry and tool filter (``_get`` and
  ``_filter_tool_entries``, looked up at call time), each hook is called through
  upstream's own ``_call_entry`` (its own ``timeout=`` still applies, a sync hook still
  runs in pydantic-ai's worker thread) under the guard with failsecure's deadline;
- the native answers map to verdicts: the arguments dict is an allow carrying the
  arguments, ``ApprovalRequired`` is an ask, the other control-flow exceptions are the
  hook's own deny; anything else (``None``, a string, a list, a dict with non-string keys,
  a hostile object) is ``invalid``; any other exception is ``raised``; the hook's own
  ``timeout=`` expiring is ``timeout``;
- the hooks run one by one under ``integrity.asettle``: the hooks that judged the
  arguments before a later one rewrote them judge again (a stamp, a fresh value in a key
  the same hook alone wrote, is accepted; a hook after the last rewrite runs once), so
  every gate has judged the arguments the tool runs with; the cross-framework gates see
  the final arguments;
- the Decision goes back in pydantic-ai's own shape: a hook's own deny (or ask) is
  re-raised as it was; failsecure's deny is ``ToolFailed("failsecure: hook '<id>' failed
  closed (<category>)")``, which the model sees as a failed tool result; an ask from a
  cross-framework gate is ``ApprovalRequired()`` unless the call was approved already.

A second wrapper covers ``Hooks.handle_deferred_tool_calls`` (approval handlers): each
handler runs under the guard; a handler that raises, hangs or answers junk has its answer
dropped, so the calls it was asked about still require approval (they come back as
``DeferredToolRequests``), and the failure is audited.

A ``Hooks`` capability with no ``before_tool_execute`` hook for the called tool is left to
upstream untouched (no decision, no audit), unless the config requires a
``pydantic-ai:`` hook. Other frameworks built on pydantic-ai (code-puppy) register no such
hooks, so their tool calls are not affected.

Hook ids: ``pydantic-ai:<module>.<qualname>`` of the hook function.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from typing import Any

from failsecure import integrity, policy
from failsecure.adapter import Adapter, PatchError
from failsecure.verdict import Action, Failure, Invalid, Outcome, Verdict, failure_reason

HOOKS = "pydantic_ai.capabilities.hooks"
EXCEPTIONS = "pydantic_ai.exceptions"
DEFERRED = "pydantic_ai._deferred"
EVENT = "before_tool_execute"
APPROVER = "handle_deferred_tool_calls"

_ABSTAIN = Verdict(action=Action.ABSTAIN)


class _Raised:
    """A hook's answer given as one of pydantic-ai's control-flow exceptions."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


class PydanticAIAdapter(Adapter):
    name = "pydantic-ai"
    distribution = "pydantic-ai-slim"
    supported = ">=2.42.0,<=2.68.0"
    tested = ("2.42.0", "2.68.0")
    fail_closed_upstream = ""  # raises fail closed upstream, but hangs, rewrites and leaks do not
    modules = (HOOKS,)
    supports_ask = True  # ApprovalRequired: the call comes back as a DeferredToolRequests
    self_test_junk = "DENY"

    def __init__(self) -> None:
        super().__init__()
        self._hooks: Any = None
        self._exc: Any = None
        self._deny_types: tuple = ()
        self._ask_type: Any = None
        self._failed_type: Any = None
        self._results_type: Any = None
        self._approval_types: tuple = ()

    # ------------------------------------------------------------ patching

    def _targets(self) -> tuple[Any, Any]:
        hooks = importlib.import_module(HOOKS)
        cls = getattr(hooks, "Hooks", None)
        if not isinstance(cls, type) or not callable(cls.__dict__.get(EVENT)):
            raise PatchError(f"{HOOKS}.Hooks.{EVENT}")
        for attr in ("_call_entry", "_filter_tool_entries", "HookTimeoutError"):
            if getattr(hooks, attr, None) is None:
                raise PatchError(f"{HOOKS}.{attr}")
        if not callable(getattr(cls, "_get", None)):
            raise PatchError(f"{HOOKS}.Hooks._get")
        utils = getattr(hooks, "_utils", None)
        if not callable(getattr(utils, "abandon_threads_on_cancel", None)):
            raise PatchError(f"{HOOKS}._utils.abandon_threads_on_cancel")
        exc = importlib.import_module(EXCEPTIONS)
        for attr in ("ModelRetry", "ToolFailed", "SkipToolExecution", "CallDeferred", "ApprovalRequired"):
            if not isinstance(getattr(exc, attr, None), type):
                raise PatchError(f"{EXCEPTIONS}.{attr}")
        return hooks, exc

    def _patch(self) -> None:
        hooks, exc = self._targets()  # everything checked before anything changes
        self._hooks, self._exc = hooks, exc
        self._deny_types = (exc.ModelRetry, exc.ToolFailed, exc.SkipToolExecution, exc.CallDeferred)
        self._ask_type = exc.ApprovalRequired
        self._failed_type = exc.ToolFailed
        adapter = self

        def before_tool_execute(wrapped, instance, args, kwargs):
            return adapter._gate(wrapped, instance, args, kwargs)

        self.wrap(hooks.Hooks, EVENT, before_tool_execute)

        deferred = sys.modules.get(DEFERRED)
        if deferred is None:
            try:
                deferred = importlib.import_module(DEFERRED)
            except Exception:
                deferred = None
        results = getattr(deferred, "DeferredToolResults", None)
        approved, denied = getattr(deferred, "ToolApproved", None), getattr(deferred, "ToolDenied", None)
        if callable(hooks.Hooks.__dict__.get(APPROVER)) and isinstance(results, type) and isinstance(approved, type) and isinstance(denied, type):
            self._results_type = results
            self._approval_types = (approved, denied)

            def handle_deferred(wrapped, instance, args, kwargs):
                return adapter._approvers(wrapped, instance, args, kwargs)

            self.wrap(hooks.Hooks, APPROVER, handle_deferred)

    def _unpatch(self) -> None:
        self.restore()

    def _lockdown(self) -> None:
        """The targets are not where expected: a ``Hooks`` capability that has
        ``before_tool_execute`` hooks registered denies its tool calls (the adapter is
        refused, so ``decide`` denies). One with none is left alone: frameworks built on
        pydantic-ai use ``Hooks`` for other hooks and must keep working."""
        hooks = sys.modules.get(HOOKS)
        cls = getattr(hooks, "Hooks", None) if hooks is not None else None
        if not isinstance(cls, type) or not callable(cls.__dict__.get(EVENT)):
            return  # no before-tool dispatch in this release: nothing to gate
        exc = sys.modules.get(EXCEPTIONS)
        failed_type = getattr(exc, "ToolFailed", None) if exc is not None else None
        adapter = self

        async def refused(wrapped, instance, args, kwargs):
            registry = getattr(instance, "_registry", None)
            if isinstance(registry, dict) and not registry.get(EVENT):
                return await wrapped(*args, **kwargs)
            call = kwargs.get("call")
            tool = getattr(call, "tool_name", None)
            decision = await adapter.adecide(tool if isinstance(tool, str) else None, ())
            text = decision.reason or failure_reason(adapter.hook_id("failsecure"), Failure.MISSING)
            if isinstance(failed_type, type):
                raise failed_type(text)
            raise RuntimeError(text)

        self.wrap(cls, EVENT, refused)

    # ------------------------------------------------------------ native answers

    def to_verdict(self, native: Any) -> Verdict:
        """``before_tool_execute`` answers: the arguments (a plain dict with string keys)
        are an allow carrying them; ``ApprovalRequired`` is an ask; ``ModelRetry``,
        ``ToolFailed``, ``SkipToolExecution`` and ``CallDeferred`` are the hook's own deny.
        Anything else is invalid."""
        if type(native) is dict:
            for key in native:
                if type(key) is not str:
                    raise Invalid()
            return Verdict(action=Action.ALLOW, data=native)
        if type(native) is _Raised:
            if isinstance(native.exc, self._ask_type):
                return Verdict(action=Action.ASK, data=native)
            return Verdict(action=Action.DENY, data=native)
        raise Invalid()

    def _results_verdict(self, native: Any) -> Verdict:
        """``handle_deferred_tool_calls`` answers: ``None`` or a ``DeferredToolResults``
        whose approvals are bools, ``ToolApproved`` or ``ToolDenied`` keyed by call id."""
        if native is None:
            return _ABSTAIN
        if not isinstance(native, self._results_type):
            raise Invalid()
        approvals, calls = native.approvals, native.calls
        if type(approvals) is not dict or type(calls) is not dict:
            raise Invalid()
        for key, value in approvals.items():
            if type(key) is not str or not (type(value) is bool or isinstance(value, self._approval_types)):
                raise Invalid()
        for key in calls:
            if type(key) is not str:
                raise Invalid()
        return Verdict(action=Action.ALLOW, data=native)

    async def _invoke(self, entry: Any, hook_name: str, *args: Any, **kwargs: Any) -> Any:
        """Upstream's own call of one hook entry (its ``timeout=``, its worker thread for
        sync hooks); a sync hook's thread is abandoned when failsecure's deadline cancels
        the wait. Control-flow exceptions come back as answers."""
        hooks = self._hooks
        try:
            with hooks._utils.abandon_threads_on_cancel():
                return await hooks._call_entry(entry, hook_name, *args, **kwargs)
        except (self._ask_type,) + self._deny_types as exc:
            if hook_name != EVENT:
                raise
            return _Raised(exc)

    def _entry_id(self, entry: Any) -> str:
        return self.callable_id(getattr(entry, "func", entry))

    async def _call(self, entry: Any, hook_name: str, ctx: Any, validate: Any = None, **kwargs: Any) -> Outcome:
        """One hook entry under the guard. The hook's own ``timeout=`` expiring (upstream
        raises ``HookTimeoutError``) is a ``timeout``, like failsecure's own deadline."""
        outcome = await self.ahook_call(self._entry_id(entry), self._invoke, entry, hook_name, ctx, _validate=validate, **kwargs)
        if outcome.failure is Failure.RAISED and outcome.exception_type == "HookTimeoutError":
            outcome = Outcome(hook=outcome.hook, failure=Failure.TIMEOUT, exception_type=outcome.exception_type, elapsed_ms=outcome.elapsed_ms)
        return outcome

    # ------------------------------------------------------------ the gate

    def _gated(self, entries: list) -> bool:
        """A dispatch with no hook for this tool is upstream's, unless a ``pydantic-ai:``
        hook is required (then its absence denies)."""
        if entries:
            return True
        prefix = self.name + ":"
        return any(r.startswith(prefix) for r in policy.current().required_for(self.name))

    async def _gate(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        ctx = args[0] if args else kwargs.get("ctx")
        call, tool_def, arguments = kwargs.get("call"), kwargs.get("tool_def"), kwargs.get("args")
        if len(args) > 1 or call is None or "args" not in kwargs:
            return await wrapped(*args, **kwargs)  # not the dispatcher's own calling shape
        tool = getattr(call, "tool_name", None)
        tool = tool if isinstance(tool, str) else None
        call_id = getattr(call, "tool_call_id", None)
        call_id = call_id if isinstance(call_id, str) and call_id else None
        state = {"args": arguments}
        try:
            entries = self._hooks._filter_tool_entries(instance._get(EVENT), call=call)
            if not self._gated(entries):
                return arguments
            def step(entry: Any) -> Any:
                async def run() -> Outcome:  # one hook, given the arguments as they are now
                    outcome = await self._call(entry, EVENT, ctx, call=call, tool_def=tool_def, args=state["args"])
                    if outcome.failure is None and outcome.action is Action.ALLOW:
                        # its answer: the arguments
                        state["args"] = outcome.verdict.data  # type: ignore[union-attr]
                    return outcome  # a failure (an observer's, a tolerated one): the arguments stand

                return run

            # hook by hook: the hooks that judged the arguments before a later one rewrote
            # them judge again; a stamping hook settles; a deny (upstream stops at a raise
            # too) ends it. Compared by fingerprint: no code of the arguments' objects runs.
            outcomes = await integrity.asettle([step(e) for e in entries], lambda: state["args"], self.hook_id(EVENT))
            decision = await self.adecide(tool, outcomes, call_id=call_id, arguments=state["args"])
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:  # a bug here must not let the tool run unjudged
            decision = self.failed(exc, tool, call_id, hook=self.hook_id(EVENT))
        return self._render(decision, ctx, state["args"])

    def _render(self, decision: Any, ctx: Any, final: Any) -> Any:
        """The Decision in pydantic-ai's shape: the final arguments, or a raise."""
        action = decision.action
        if action is Action.DENY or action is Action.ASK:
            primary = decision.primary
            verdict = primary.verdict if primary is not None else None
            if primary is not None and primary.failure is None and verdict is not None and type(verdict.data) is _Raised:
                raise verdict.data.exc  # the hook's own deny or ask, as upstream raises it
            if action is Action.ASK:
                if getattr(ctx, "tool_call_approved", False) is True:
                    return final  # a person approved this call already
                raise self._ask_type()
            raise self._failed_type(decision.reason or failure_reason(self.hook_id(EVENT), Failure.RAISED))
        return final

    # ------------------------------------------------------------ approval handlers

    async def _approvers(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        ctx = args[0] if args else kwargs.get("ctx")
        requests = kwargs.get("requests")
        if len(args) > 1 or "requests" not in kwargs:
            return await wrapped(*args, **kwargs)
        entries = instance._get(APPROVER)
        if not entries:
            return None
        accumulated = self._results_type()
        remaining = requests
        any_handled = False
        for entry in entries:
            outcome = await self._call(entry, APPROVER, ctx, self._results_verdict, requests=remaining)
            if outcome.failure is not None:
                # the answer is dropped: the calls still require approval
                await self.adecide(None, [outcome])
                continue
            result = outcome.verdict.data  # type: ignore[union-attr]
            if result is None or not (result.approvals or result.calls):
                continue
            any_handled = True
            accumulated.update(result)
            remaining_or_none = remaining.remaining(result)  # type: ignore[union-attr]
            if remaining_or_none is None:
                break
            remaining = remaining_or_none
        return accumulated if any_handled else None

    # ------------------------------------------------------------ doctor

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only ``before_tool_execute`` hook of a real agent run
        (``FunctionModel`` calling one tool): True when the tool did not run. A gate
        answering ``None`` lets the arguments through unchanged."""
        from pydantic_ai import Agent
        from pydantic_ai.capabilities import Hooks
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel

        ran: list = []

        def model(messages, info):
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart("failsecure_self_test", {"value": "x"})])
            return ModelResponse(parts=[TextPart("done")])

        def hook(ctx, *, call, tool_def, args):
            answer = gate(ctx, call=call, tool_def=tool_def, args=args)
            return args if answer is None else answer

        hooks = Hooks()
        hooks.on.before_tool_execute(hook)
        agent = Agent(FunctionModel(model), capabilities=[hooks])

        @agent.tool_plain
        def failsecure_self_test(value: str) -> str:
            ran.append(value)
            return "ran"

        def run() -> None:
            try:
                agent.run_sync("self-test")
            except Exception:
                pass

        try:
            asyncio.get_running_loop()
            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            thread.join(30)
        except RuntimeError:
            run()
        return not ran


__all__ = ["PydanticAIAdapter"]
