"""LangChain / LangGraph: callback gates, the HITL ``when`` predicate and ``wrap_tool_call``
middleware fail closed; the core decides.

LangChain v1 gates a tool call in three places (``langchain-core``, ``langchain``,
``langgraph``):

1. Callback handlers' ``on_tool_start``, dispatched by ``langchain_core.callbacks.manager``
   (``handle_event`` for sync tools, ``ahandle_event`` for async ones). Upstream logs and
   swallows a handler's error unless ``raise_error = True``, and even then swallows
   ``NotImplementedError`` and every error of an async handler on a sync tool (run
   detached by ``_run_coros``); there is no deadline; return values are ignored.
2. ``HumanInTheLoopMiddleware``'s ``when`` predicate: ``None``, any falsy answer or ...
   skips the human review.
3. ``wrap_tool_call`` / ``awrap_tool_call`` middleware (the onion around ToolNode's tool
   execution): an exception propagates (closed), but there is no deadline.

What is patched (``wrapt``; ``unpatch`` restores every attribute):

- ``handle_event`` and ``ahandle_event`` for the ``on_tool_start`` event only (every other
  event goes straight to upstream). The handlers are split in two:

  * **gates**: a handler with ``raise_error = True`` (LangChain's own "stop the run when I
    fail"), or any handler whose hook id has ``role = "gate"`` in the config. Each runs
    under the guard (deadline; any exception, ``NotImplementedError`` and ``SystemExit``
    included, is RAISED; an async handler on a sync tool is driven to completion on its
    own loop, not detached; an answer other than ``None`` is INVALID);
  * **observers**: every other handler (tracers, loggers, LangSmith), and a gate with
    ``role = "observer"``. They go through upstream's own ``handle_event`` /
    ``ahandle_event`` unchanged: their errors are logged and swallowed, the tool runs.

  Observers run first (they see every start, as upstream), then the gates judge the
  inputs as they are now, one by one under ``integrity.settle``: the gates that judged
  the inputs before a later gate rewrote them judge again (a stamp, a fresh value in a
  key the same gate alone wrote, is accepted; a gate after the last rewrite runs once). ``decide`` adds the cross-framework gates, ``required``
  and the config. A deny raises ``ToolCallDenied`` (text: hook id + category) out of
  ``tool.invoke``/``tool.ainvoke`` before the tool body runs; the observers are told
  ``on_tool_error`` with it so no trace is left open.
- ``langgraph.prebuilt.tool_node.ToolNode._execute_tool_sync`` / ``_execute_tool_async``:
  a ``ToolCallDenied`` becomes the ``ToolMessage`` (``status="error"``) the agent's model
  sees, instead of crashing the run.
- ``langchain.agents.middleware.human_in_the_loop.HumanInTheLoopMiddleware.__init__``:
  each ``when`` predicate is put under the guard; only a real ``True``/``False`` keeps its
  meaning, anything else (``None``, junk, a raise, a hang) denies the call: nobody is
  asked, and the call is denied (the audited reason) where it reaches its tool.
- ``langchain.agents.factory._chain_tool_call_wrappers`` /
  ``_chain_async_tool_call_wrappers``: each middleware's wrapper gets the deadline while
  it holds the call (not while the tool it handed on runs); a wrapper that raises, misses
  its deadline or answers junk is denied with the ``ToolMessage``. Each one that hands the
  call on is recorded (``_HANDED``, with a picture of the call); where the call reaches
  the tool, one that handed on another call than the final one judges the final call
  again with a handler that does not run the tool (``_settle_middleware``).
- ``langchain.agents.factory.traceable`` (for ``awrap_tool_call`` only): langsmith runs
  a traced async middleware in a task of its own, and asyncio re-raises a ``SystemExit``
  escaping a task out of the loop; the middleware's ``SystemExit`` is carried out of
  that task as ``_Exited`` (no text) and taken back by the guard.

- The tool boundary (docs/ungoverned.md): ``langgraph.pregel.main.Pregel``'s ``invoke``,
  ``ainvoke``, ``stream``, ``astream`` are the run entry points; every ``BaseTool`` class's
  own ``_run`` / ``_arun`` (``langchain_core.tools.base``, classes defined later too) the
  innermost call. The first ``on_tool_start`` under ToolNode's execution of a call (after
  every middleware and the HITL checks) is the dispatched tool run: when its callbacks
  allow, that tool run (its run id, the parent run its body sees) is granted. A tool run
  inside a graph's run without one (a node's or a wrapper tool's own ``invoke`` /
  ``_run`` of a tool) is ungoverned.

``langchain`` and ``langgraph`` may be imported after ``langchain_core``: their patches
are applied by post-import hooks as soon as they are imported.

Hook ids: ``langchain:<module>.<qualname>`` of the handler's class, of the ``when``
predicate, and of the middleware's ``wrap_tool_call`` (``<module>.<Class>.wrap_tool_call``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import inspect
import sys
import threading
import types
from time import perf_counter
from typing import Any, Optional

from failsecure.adapter import (
    CHANGED,
    Adapter,
    PatchError,
    asettle,
    current_config,
    fingerprint,
    problem,
    settle,
    type_name,
    unsettled,
    when_imported,
)
from failsecure.verdict import ABSTAIN, Action, Failure, Invalid, Outcome, Verdict, exactly

MANAGER = "langchain_core.callbacks.manager"
FACTORY = "langchain.agents.factory"
HITL = "langchain.agents.middleware.human_in_the_loop"
TOOL_NODE = "langgraph.prebuilt.tool_node"
EVENT = "on_tool_start"
#: the tool boundary (docs/ungoverned.md): the run entry points and the innermost call
PREGEL = "langgraph.pregel.main"
RUN_ENTRIES = ("invoke", "ainvoke", "stream", "astream")
TOOLS = "langchain_core.tools.base"
CONFIG = "langchain_core.runnables.config"
#: ToolNode's own execution of one tool call, while the call has not reached its tool's
#: callbacks yet: [tool call id, tool name, the hooks that took part]; emptied by the first
#: ``on_tool_start`` under it (the tool's own), so a tool that the tool runs in turn is
#: never the dispatched call
_DISPATCH: contextvars.ContextVar[Optional[list]] = contextvars.ContextVar("failsecure_langchain_dispatch", default=None)
#: the hooks that judged this call on its way to the tool: ``wrap_tool_call`` middleware
#: that handed it on (outermost first), the HITL ``when`` predicate that judged it
_TOOK_PART: contextvars.ContextVar[tuple] = contextvars.ContextVar("failsecure_langchain_handed_on", default=())
_REVIEW = Verdict(action=Action.ASK)
_DENY = Verdict(action=Action.DENY)
_WHEN_ANSWERS = ((True, _REVIEW), (False, ABSTAIN))
#: the ``wrap_tool_call`` middleware that handed this call on, outermost first: (hook id,
#: the middleware's wrapper, async or not, the picture of the call it handed on, that
#: request): at the tool, a middleware that handed on another call than the one that
#: runs judges the final call again (``_settle_middleware``)
#: what a proxy puts in ``from_handler`` when the middleware hands the call on
_ENTERED = object()
#: the batched HITL middleware of the agent ``create_agent`` is building (its ToolNode keeps them)
_BUILDING: contextvars.ContextVar[tuple] = contextvars.ContextVar("failsecure_langchain_building", default=())
_HANDED: contextvars.ContextVar[tuple] = contextvars.ContextVar("failsecure_langchain_handed", default=())
#: the key (``_call_key``) of the call ToolNode built from the model's message, before any
#: middleware had it: a middleware that hands the call on under another tool call id, or
#: with a state that no longer holds the model's message, is still found at the tool
_ENTRY: contextvars.ContextVar[Optional[tuple]] = contextvars.ContextVar("failsecure_langchain_entry", default=None)
#: the reviewer's edit of that call (``_edited_picture``) as the state ToolNode built it
#: with holds it: a middleware that hands the call on with a state of its own cannot name
#: its rewrite "the reviewer's edit"; and whether another call of the model's message
#: shares the call's id. (picture or None, shared); () outside _run_one
_ENTRY_EDIT: contextvars.ContextVar[tuple] = contextvars.ContextVar("failsecure_langchain_entry_edit", default=())
#: while a middleware judges the final call again: the decisions of its failures
_FAILED: contextvars.ContextVar[Optional[list]] = contextvars.ContextVar("failsecure_langchain_failed", default=None)


class ToolCallDenied(Exception):
    """A tool call denied by failsecure. ``str()`` is the decision's reason: the hook id
    and the failure category, nothing of the arguments or of any hook's exception."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class LangChainAdapter(Adapter):
    name = "langchain"
    modules = (MANAGER,)
    self_test_junk = "DENY"

    def __init__(self) -> None:
        super().__init__()
        self._late_done: set = set()
        self._hooks_registered = False
        self._handler_ids: dict = {}  # handler class -> hook id
        #: (thread id, tool call id) of the HITL calls a ``when`` decided to review: on
        #: resume the predicate is asked again, and that first answer must stick
        self._reviewed: dict = {}
        #: (thread id, model message id, tool call id) -> picture of the reviewer's edit,
        #: or None (HITL saw the call and nobody edited it): the edit as HITL itself made it
        #: (its batched ``after_model``'s answer, its ``per_call`` review), never the
        #: state's ``hitl_edited_tool_calls`` at the tool, which a later node can write
        self._edits: dict = {}
        #: (thread id, model message id, tool call id) -> (hook id of the HITL middleware,
        #: picture of the call): the calls a review that stopped the run showed the person
        self._shown: dict = {}
        #: the same keys -> (hook id of the HITL middleware, picture of the call as it came
        #: back): calls that changed between the
        #: review's question and its resume (a checkpoint edited in between): the person's
        #: answer was about another call
        self._changed: dict = {}
        #: (thread id, model message id, tool call id) -> deny reason: the HITL calls whose
        #: ``when`` failed (nobody is asked; the call is denied at its tool)
        self._failed: dict = {}
        #: (thread id, model message id, tool call id) -> (guarded ``when``, pictures of
        #: the calls it judged): what a later rewrite is compared against
        self._judged: dict = {}
        #: (thread id, model message id, tool call id) -> (hook id of the HITL middleware,
        #: pictures of the calls under that key as the review let them run; a model may
        #: give two calls one id): calls of a tool HITL reviews
        #: every time (no ``when``), so a call rewritten after the review is one nobody saw
        self._always: dict = {}
        #: (thread id, model message id, tool call id) -> (the HITL middleware, the name of
        #: the tool the call named when HITL's batched ``after_model`` saw it, after the
        #: review): a call that reaches another tool (a middleware renamed it, or swapped
        #: the tool) is judged by HITL's setting for the tool that runs
        self._seen: dict = {}

    def handler_id(self, handler: Any) -> str:
        """The hook id of a callback handler: ``langchain:<module>.<qualname>`` of its class."""
        cls = type(handler)
        hook_id = self._handler_ids.get(cls)
        if hook_id is None:
            hook_id = self.callable_id(handler)
            if len(self._handler_ids) < 4096:
                self._handler_ids[cls] = hook_id
        return hook_id

    # ------------------------------------------------------------ patching

    def _patch(self) -> None:
        manager = importlib.import_module(MANAGER)
        for attr in ("handle_event", "ahandle_event"):
            if not callable(vars(manager).get(attr)):
                raise PatchError(f"{MANAGER}.{attr}")
        adapter = self

        # A module that imported these names while patched (``from ... import
        # handle_event``) keeps the wrapper after unpatch: it then calls upstream.
        def handle_event(wrapped, instance, args, kwargs):
            if len(args) < 3 or args[1] != EVENT or adapter.state == "unpatched":
                return wrapped(*args, **kwargs)
            return adapter._gate(wrapped, args, kwargs)

        def ahandle_event(wrapped, instance, args, kwargs):
            if len(args) < 3 or args[1] != EVENT or adapter.state == "unpatched":
                return wrapped(*args, **kwargs)
            return adapter._agate(wrapped, args, kwargs)

        self.wrap(manager, "handle_event", handle_event)
        self.wrap(manager, "ahandle_event", ahandle_event)
        self._late_done.clear()
        for module in _LATE:  # imported already: patched now (a PatchError refuses)
            if module in sys.modules and not _executing(sys.modules[module]):
                self._late_done.add(module)
                _LATE[module](self, sys.modules[module])
        if not self._hooks_registered:

            self._hooks_registered = True
            for module in _LATE:
                # not imported yet, or still executing (its import imported the trigger:
                # ``from langchain.agents import create_agent`` first): patched once it ran
                if module not in sys.modules or _executing(sys.modules[module]):
                    when_imported(module, _late_hook(adapter, module))

    def _late(self, module: str) -> None:
        """Patch a module imported after ``langchain_core`` (post-import hook)."""
        with self._lock:
            if self.state != "patched" or module in self._late_done:
                return  # not active (or uninstalled): the hook stays registered, does nothing
            self._late_done.add(module)
            self.patch_late(_LATE[module], self, sys.modules[module])

    def _unpatch(self) -> None:
        self.restore()
        self._late_done.clear()

    def _lockdown(self) -> None:
        """The dispatcher is not where expected: every tool start we can reach denies."""
        manager = sys.modules.get(MANAGER)
        if manager is None:
            return
        adapter = self

        def refused_sync(wrapped, instance, args, kwargs):
            raise ToolCallDenied(adapter.decide(None, ()).reason or "failsecure: denied")

        async def _refused_async():
            raise ToolCallDenied((await adapter.adecide(None, ())).reason or "failsecure: denied")

        def refused_async(wrapped, instance, args, kwargs):
            return _refused_async()

        for owner, wrapper in (("CallbackManager", refused_sync), ("AsyncCallbackManager", refused_async)):
            cls = getattr(manager, owner, None)
            if isinstance(cls, type) and callable(getattr(cls, EVENT, None)):
                self.wrap(cls, EVENT, wrapper)

    # ------------------------------------------------------------ callback handlers

    def to_verdict(self, native: Any) -> Verdict:
        """A gate handler's ``on_tool_start`` answer: LangChain ignores return values, so
        ``None`` is the only answer (no objection); anything else is INVALID."""
        if native is None:
            return ABSTAIN
        raise Invalid()

    def _split(self, handlers: Any, ignore: Any) -> tuple[list, list]:
        """(gates as [(hook id, handler)], observers) in upstream order."""
        config = current_config()
        gates, observers = [], []
        for handler in list(handlers):
            hook_id = self.handler_id(handler)
            try:
                strict: Optional[bool] = bool(handler.raise_error)
            except Exception:  # noqa: BLE001 - a handler's raise_error property can raise anything: unreadable, so the core makes it a gate
                strict = None  # unreadable: the core makes it a gate
            if self.role(hook_id, strict, config) == "observer":
                observers.append(handler)
            else:
                gates.append((hook_id, handler))
        return gates, observers

    def _describe(self, rest: tuple, kwargs: dict) -> tuple:
        """(tool name, call id, the inputs the gates judge) of one ``on_tool_start``."""
        serialized = rest[0] if rest else kwargs.get("serialized")
        tool = serialized.get("name") if isinstance(serialized, dict) else None
        if not isinstance(tool, str):
            tool = kwargs.get("name") if isinstance(kwargs.get("name"), str) else None
        call_id = kwargs.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            run_id = kwargs.get("run_id")
            call_id = str(run_id) if run_id is not None else None
        inputs = kwargs.get("inputs")
        if inputs is None:
            inputs = rest[1] if len(rest) > 1 else kwargs.get("input_str")
        return tool, call_id, inputs

    def _gate_calls(self, gates: list, ignore: Any, rest: tuple, kwargs: dict, isolate: bool = False) -> tuple[list, list]:
        """(guarded calls, outcomes fixed already) for the gate handlers. ``isolate`` (an
        async tool start): a sync handler that is not ``run_inline`` runs in a copy of
        the context of its own, as upstream runs it (in an executor, under
        ``copy_context().run``): what it sets reaches neither the tool nor the task (the
        guard would hand a deadlined hook's changes back to the task)."""
        calls, fixed = [], []
        for hook_id, handler in gates:
            try:
                if ignore is not None and getattr(handler, ignore):
                    continue  # the handler opted out of tool events, as upstream
                method = getattr(handler, EVENT)
                if isolate and not inspect.iscoroutinefunction(method) and not handler.run_inline:
                    method = _isolated(method)
            except Exception as exc:  # noqa: BLE001 - a handler's own attributes can raise anything: that is this gate's failure (raised), judged
                fixed.append(Outcome(hook=hook_id, failure=Failure.RAISED, exception_type=type_name(exc)))
                continue
            calls.append((hook_id, method))
        return calls, fixed

    def _gate(self, wrapped, args: tuple, kwargs: dict) -> None:
        handlers, event, ignore, rest = args[0], args[1], args[2], args[3:]
        tool = call_id = inputs = None
        observers: list = []
        try:
            gates, observers = self._split(handlers, ignore)
            if observers:
                _observe_sync(wrapped, observers, event, ignore, rest, kwargs)
            tool, call_id, inputs = self._describe(rest, kwargs)
            dispatched, took = self._dispatch_of(tool, kwargs)
            calls, fixed = self._gate_calls(gates, ignore, rest, kwargs)
            outcomes = _took_part(took) + fixed
            if calls:
                def step(h: str, m: Any) -> Any:
                    return lambda: self.hook_calls([(h, _drive, (m,) + rest, kwargs, None)])

                # gate by gate: a stamping gate settles, a gate after the last rewrite runs once
                outcomes += settle([step(h, m) for h, m in calls], lambda: inputs, self.hook_id(EVENT), finish_pass=True)
            decision = self.decide(tool, outcomes, call_id=call_id, arguments=inputs)
            self._grant(decision, tool, gates, kwargs, dispatched)
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as "no handler objected": failed() says it and the call is denied
            decision = self.failed(exc, tool, call_id)
        if decision.denied:
            denied = ToolCallDenied(decision.deny_text)
            if observers:
                _observe_sync(wrapped, observers, "on_tool_error", ignore, (denied,), _error_kwargs(kwargs))
            raise denied

    async def _agate(self, wrapped, args: tuple, kwargs: dict) -> None:
        handlers, event, ignore, rest = args[0], args[1], args[2], args[3:]
        tool = call_id = inputs = None
        observers: list = []
        try:
            gates, observers = self._split(handlers, ignore)
            if observers:
                await _observe_async(wrapped, observers, event, ignore, rest, kwargs)
            tool, call_id, inputs = self._describe(rest, kwargs)
            dispatched, took = self._dispatch_of(tool, kwargs)
            calls, fixed = self._gate_calls(gates, ignore, rest, kwargs, isolate=True)
            outcomes = _took_part(took) + fixed
            if calls:
                def astep(h: str, m: Any) -> Any:
                    async def run() -> Outcome:
                        return await self.ahook_call(h, m, *rest, **kwargs)

                    return run

                outcomes += await asettle([astep(h, m) for h, m in calls], lambda: inputs, self.hook_id(EVENT), finish_pass=True)
            decision = await self.adecide(tool, outcomes, call_id=call_id, arguments=inputs)
            self._grant(decision, tool, gates, kwargs, dispatched)
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as "no handler objected": failed() says it and the call is denied
            decision = self.failed(exc, tool, call_id)
        if decision.denied:
            denied = ToolCallDenied(decision.deny_text)
            if observers:
                await _observe_async(wrapped, observers, "on_tool_error", ignore, (denied,), _error_kwargs(kwargs))
            raise denied

    # ------------------------------------------------------------ the tool boundary

    def _grant(self, decision: Any, tool: Optional[str], gates: list, kwargs: dict, dispatched: bool) -> None:
        """After the tool's callbacks decided: the tool run ToolNode dispatched (after every
        ``wrap_tool_call`` middleware and the HITL checks) may run once; any other tool
        run inside an agent run reached its tool past ToolNode (a custom node, a wrapper
        tool): it gets no grant. Keyed by the tool run's id, which the tool's body sees as
        its parent run."""
        run_id = kwargs.get("run_id")
        if run_id is None or not self.in_run():
            return
        if gates:  # a tool start of this run had a gate (a tool's own callbacks too): the run has it
            self.mark_gated()
        if dispatched:
            self.granted(decision, tool, run_id, None)

    @staticmethod
    def _dispatch_of(tool: Optional[str], kwargs: dict) -> tuple:
        """(this tool start is the one of the call ToolNode executes, the hooks that took
        part in the call on its way here). The first tool start under ToolNode's execution
        is the tool's own; any later one (a tool the tool runs) is not that call."""
        dispatch = _DISPATCH.get()
        if not dispatch:  # outside ToolNode's execution, or inside a dispatched tool's body
            return False, _TOOK_PART.get()
        call_id, name, took = dispatch
        dispatch.clear()
        if call_id == kwargs.get("tool_call_id") and name == tool:
            return True, took
        return False, ()

    def _read_tool(self, tool: Any, args: tuple, kwargs: dict) -> tuple:
        """A tool's ``_run`` / ``_arun``: (name, the tool run it is the body of, no
        arguments: the run's callbacks judged what its ``run`` parses, key, gated)."""
        config = _child_config()
        call_id = getattr(config.get("callbacks"), "parent_run_id", None) if config is not None else None
        return tool.name, call_id, None, id(tool), None

    def user_gates(self) -> bool:
        """A gate handler is in the callbacks the tool's body runs with (the run's)."""
        return self._has_gate(_child_config())

    def _has_gate(self, config: Any) -> bool:
        """A runnable config's callbacks (a list, or a callback manager) hold a gate handler."""
        callbacks = config.get("callbacks") if isinstance(config, dict) else None
        if callbacks is None:
            return False
        if isinstance(callbacks, (list, tuple)):
            handlers = list(callbacks)
        else:
            handlers = list(getattr(callbacks, "handlers", None) or ()) + list(getattr(callbacks, "inheritable_handlers", None) or ())
        return bool(self._split(handlers, None)[0])

    def _call_gated(self, graph: Any, args: tuple, kwargs: dict) -> bool:
        """A graph run entered with a gate handler in its config (``invoke(input, config)``),
        or in the config it runs under (a graph run inside a run)."""
        config = kwargs.get("config", args[1] if len(args) > 1 else None)
        return self._has_gate(config) or self._has_gate(_child_config())

    def _agent_gated(self, graph: Any) -> bool:
        """A graph with a gate of its own: a ToolNode with ``wrap_tool_call`` middleware
        (``create_agent``'s, or handed to it), or a HITL middleware's node."""
        hitl = getattr(sys.modules.get(HITL), "HumanInTheLoopMiddleware", None)
        node_type = getattr(sys.modules.get(TOOL_NODE), "ToolNode", None)
        for node in list((getattr(graph, "nodes", None) or {}).values()):
            bound = getattr(node, "bound", None)
            if isinstance(node_type, type) and isinstance(bound, node_type):
                if getattr(bound, "_wrap_tool_call", None) is not None or getattr(bound, "_awrap_tool_call", None) is not None:
                    return True
            owner = getattr(getattr(bound, "func", None), "__self__", None)
            if isinstance(hitl, type) and isinstance(owner, hitl):
                return True
        return False

    # ------------------------------------------------------------ HITL `when`

    def _guard_when(self, when: Any, tool: Any) -> Any:
        if isinstance(when, _GuardedWhen):
            return when
        return _GuardedWhen(self, when, tool if isinstance(tool, str) else None)

    def _judge_when(self, guarded: "_GuardedWhen", request: Any) -> Any:
        """HITL's ``when`` for one call: ``True`` asks the human, ``False`` does not. A
        predicate that failed (raised, hung, answered junk) denies the call: nobody is
        asked (``False``) and the call is denied where it reaches its tool, with the reason
        the audit recorded. A call without an id cannot be found there: the deny ends the
        run (``ToolCallDenied``), as upstream's own raising predicate does."""
        call_key = _call_key(request)
        if call_key is not None and call_key in self._failed:
            return False  # the predicate failed for this call before: the deny stands
        key = call_key if call_key is not None and call_key[0] is not None else None
        if key is not None and key in self._reviewed:
            return True  # asked for this call before: the review (and its answer) stands
        review, denied = self._ask_when(guarded, request)
        if denied is not None:
            if call_key is None:
                raise ToolCallDenied(denied)
            self._judged.pop(call_key, None)  # it did not judge this call cleanly
            _remember(self._failed, call_key, denied)
            return False
        if call_key is not None:
            if len(self._judged) >= 4096 and call_key not in self._judged:
                self._judged.pop(next(iter(self._judged)))
            seen = self._judged.setdefault(call_key, (guarded, []))[1]
            if len(seen) < 8:
                seen.append(_call_picture(request))
        if review and key is not None:
            _remember(self._reviewed, key, True)
        return review

    def _ask_when(self, guarded: "_GuardedWhen", request: Any) -> tuple:
        """(review?, deny reason): the predicate's answer, or the deny of a predicate that
        failed (audited; None when the policy lets that failure pass)."""
        hook_id = self.callable_id(guarded.original)
        outcome = self.hook_call(hook_id, guarded.original, request, _validate=_when_verdict)
        if outcome.failure is None:
            return outcome.verdict.action is Action.ASK, None  # type: ignore[union-attr]
        _, call_id = _request_ids(request)
        try:
            decision = self.decide_stage(guarded.tool, [outcome], call_id=call_id)
        except Exception as exc:  # noqa: BLE001 - a predicate's failure that cannot be decided is a deny, audited (failed() says it)
            decision = self.failed(exc, guarded.tool, call_id)
        if decision.action is Action.ABSTAIN or decision.action is Action.ALLOW:
            return False, None
        return False, decision.reason or _failure_text(hook_id, outcome.failure)

    @staticmethod
    def _thread() -> Any:
        """The thread id of the graph run the current code runs in (None outside one)."""
        from langgraph.config import get_config

        try:
            configurable = get_config().get("configurable")
        except RuntimeError:
            configurable = None
        thread = configurable.get("thread_id") if isinstance(configurable, dict) else None
        return thread if type(thread) in (str, int) else None

    def _review_seen(self, state: Any, middleware: Any) -> None:
        """HITL's batched ``after_model`` is about to judge the calls of the state's last
        model message (a call naming a tool it does not review is let through unasked):
        each call is remembered with the tool it names, so a call that reaches another
        tool is judged by HITL's setting for that tool (``_renamed``)."""
        try:
            if getattr(middleware, "interrupt_mode", "batched") != "batched":
                return  # per_call: HITL reviews each call in its own wrap_tool_call, on the call it gets
            messages = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
            last = next((m for m in reversed(list(messages or ())) if getattr(m, "type", None) == "ai"), None)
            message_id = getattr(last, "id", None)
            if last is None or not isinstance(message_id, str) or not getattr(last, "tool_calls", None):
                return
            thread = self._thread()
            now: dict = {}
            for call in last.tool_calls:
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    now.setdefault((thread, message_id, call["id"]), []).append(_picture(call.get("name"), call.get("args"), call.get("name")))
            for key, pictures in now.items():
                self._compare_shown(key, tuple(pictures))
            for call in last.tool_calls:
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    _remember(self._seen, (thread, message_id, call["id"]), (middleware, call.get("name")))
                    _remember(self._edits, (thread, message_id, call["id"]), None)
        except Exception:  # noqa: BLE001 - the state's messages (user objects) can raise anything: nothing recorded, the check at the tool has no record of this call
            return

    def _unreviewed(self, request: Any, keys: list, reviewers: tuple, edited: Any = None) -> Optional[str]:
        """HITL's batched review judges each call of the model message by the tool it
        names. A call that reaches a tool one of the agent's batched HITL middleware
        (``reviewers``) reviews, and that HITL did not see naming that tool, skipped the
        review: a middleware renamed the call or swapped the tool, or the call was never
        in a message HITL judged (a tool's ``Command(goto="tools")`` with a message of its
        own, an ``after_model`` jumping to the tools past HITL's). Not the reviewer's edit.
        HITL's setting for the tool that runs judges it: a tool reviewed every time is
        denied (nobody can be asked at the tool), under the HITL middleware's hook id; one
        with a ``when`` predicate is judged by it (a review wanted is denied, a failure
        denies); a tool HITL does not review runs. Returns the deny text, or None."""
        call_name, call_id = _request_ids(request)
        try:
            tool = getattr(request, "tool", None)
            names = [n for n in (call_name, getattr(tool, "name", None) if tool is not None else None) if isinstance(n, str)]
        except Exception:  # noqa: BLE001 - the tool's name property can raise anything: judged under the call's own name
            names = [call_name] if call_name is not None else []
        names = list(dict.fromkeys(names))
        for middleware in reviewers:
            configs = getattr(middleware, "interrupt_on", None)
            if not isinstance(configs, dict) or getattr(middleware, "interrupt_mode", "batched") != "batched":
                continue
            wanted = [n for n in names if isinstance(configs.get(n), dict)]
            if not wanted:
                continue
            seen = next((self._seen.get(k) for k in keys if k is not None and self._seen.get(k) is not None), None)
            if seen is None and not any(k is not None and isinstance(k[1], str) for k in keys):
                continue  # a call with no model message id cannot be told: as before
            seen_name = seen[1] if seen is not None and seen[0] is middleware else None
            wanted = [n for n in wanted if n != seen_name]
            if not wanted:
                continue
            if edited is not None and _same_picture(_call_picture(request), edited):
                return None  # the reviewer's edit
            for name in wanted:
                hook = self.callable_id(type(middleware))
                when = configs[name].get("when")
                if isinstance(when, _GuardedWhen):
                    review, denied = self._ask_when(when, request)
                    if denied is not None:
                        return denied
                    if not review:
                        continue
                    hook = self.callable_id(when.original)
                decision = self.decide_stage(name, [Outcome(hook=hook, verdict=_REVIEW)], call_id=call_id)
                return decision.reason or f"failsecure: hook '{hook}' asks for a review of a call it never saw"
        return None

    def _compare_shown(self, key: Any, pictures: tuple) -> None:
        """A review resumes: calls under ``key`` that are not the ones its question showed
        (a model may give two calls one id) changed in between (recorded under the call's
        key: a ``per_call`` question of a call sharing its id is shown under a longer one)."""
        shown = self._shown.pop(key, None)
        if shown is not None and not all(any(_same_picture(p, q) for q in shown[1]) for p in pictures):
            _remember(self._changed, key[:3], (shown[0], pictures))

    def _review_asked(self, state: Any, middleware: Any) -> None:
        """HITL's batched ``after_model`` stopped the run to ask a person about the calls
        of the state's last model message: each is pictured as it was shown."""
        try:
            messages = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
            last = next((m for m in reversed(list(messages or ())) if getattr(m, "type", None) == "ai"), None)
            message_id = getattr(last, "id", None)
            if last is None or not isinstance(message_id, str):
                return
            thread, hook = self._thread(), self.callable_id(type(middleware))
            shown: dict = {}
            for call in getattr(last, "tool_calls", None) or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    shown.setdefault((thread, message_id, call["id"]), []).append(
                        _picture(call.get("name"), call.get("args"), call.get("name")))
            for key, pictures in shown.items():
                _remember(self._shown, key, (hook, tuple(pictures)))
        except Exception:  # noqa: BLE001 - the state's messages (user objects) can raise anything: nothing pictured, a resume is not compared
            return

    def _per_call_asking(self, request: Any, middleware: Any) -> tuple:
        """HITL's ``per_call`` review is about to judge ``request``: (its key, picture,
        whether another call of its message shares its id), compared with what an
        earlier question about that call showed."""
        try:
            key, picture = _call_key(request), _asked_picture(request)
            if key is not None and _shares_id(request):
                # calls sharing the id ask at once, each under the call ToolNode built
                # (the model's call): compared with its own question only
                entry = _ENTRY_EDIT.get()
                built = entry[2] if len(entry) > 2 else CHANGED
                key = None if built is CHANGED else (*key, built)
            if key is not None:
                self._compare_shown(key, (picture,))
            return key, picture
        except Exception:  # noqa: BLE001 - the request (user objects) can raise anything: not compared
            return None, None

    def _per_call_edit(self, request: Any, resolved: Any) -> None:
        """HITL's ``per_call`` review answered with the reviewer's edit (``to_run,
        executed``): it is the reviewer's call, recorded under the call's keys."""
        try:
            if not isinstance(resolved, tuple) or len(resolved) != 2 or resolved[1] is None:
                return
            picture = _action_picture(resolved[1])
            for key in (_call_key(request), _ENTRY.get()):
                if key is not None:
                    _remember(self._edits, key, picture)
        except Exception:  # noqa: BLE001 - the reviewer's action (user objects) can raise anything: no edit recorded, the call at the tool is judged
            return

    def _review_done(self, result: Any, middleware: Any = None) -> None:
        """HITL's batched ``after_model`` has the human's decisions: the model message it
        hands on holds each reviewed call as the reviewer let it run (approved, or edited
        on 1.3). That picture, not the state's message at the tool (a later ``after_model``
        can replace it), is the reviewed call."""
        try:
            messages = result.get("messages") if isinstance(result, dict) else None
            if not messages:
                return
            thread = self._thread()
            configs = getattr(middleware, "interrupt_on", None)
            configs = configs if isinstance(configs, dict) else {}
            edits = result.get("hitl_edited_tool_calls")
            kept = isinstance(edits, dict)  # langchain 1.5 keeps the edits there; 1.3 edits the message
            edits = edits if kept else {}
            always: dict = {}
            for message in messages:
                message_id = getattr(message, "id", None)
                if not isinstance(message_id, str):
                    continue
                for call in getattr(message, "tool_calls", None) or ():
                    key = (thread, message_id, call.get("id") if isinstance(call, dict) else None)
                    picture = _picture(call.get("name"), call.get("args"), call.get("name"))
                    if key in self._reviewed:
                        self._reviewed[key] = picture
                    if key in self._seen:  # the call as the review let it run (an edit's name)
                        self._seen[key] = (middleware, call.get("name"))
                    if key in self._edits:
                        self._edits[key] = _action_picture(edits.get(key[2]))
                    changed = self._changed.get(key)
                    if not kept and changed is not None and not any(_same_picture(p, picture) for p in changed[1]):
                        _remember(self._edits, key, picture)  # 1.3: the review handed on another call: the edit
                    config = configs.get(call.get("name"))
                    if isinstance(config, dict) and config.get("when") is None and key[2] is not None:
                        always.setdefault(key, []).append(picture)
            for key, pictures in always.items():
                _remember(self._always, key, (self.callable_id(type(middleware)), tuple(pictures)))
        except Exception:  # noqa: BLE001 - the middleware's own objects can raise anything: nothing recorded, the check at the tool keeps its older picture
            return

    def _predicates_of(self, request: Any) -> tuple:
        """The hook id of the HITL ``when`` predicate that judged this call, if any."""
        try:
            for key in _keys_at_tool(request):
                known = self._judged.get(key)
                if known is not None:
                    return (self.callable_id(known[0].original),)
            return ()
        except Exception:  # noqa: BLE001 - the keys and callable_id never raise; should they, no predicate took part, so a required one is unmet
            return ()

    def _at_tool(self, request: Any, reviewers: tuple = ()) -> Optional[str]:
        """A tool call has reached its tool (every ``wrap_tool_call`` middleware has had
        it). When a HITL ``when`` predicate judged this call and the call that runs now
        is not one it judged, nor the model's call a human reviewed, nor the reviewer's
        edit, a middleware rewrote it (or swapped the tool) after the review: the
        predicate judges the final call again, and a call it wants reviewed is denied
        (nobody can be asked here). Returns the deny text, or None to run."""
        # the call as it arrives here, and as ToolNode built it from the model's message
        # (a middleware may have handed it on under another id, or with another state)
        keys = _keys_at_tool(request)
        entry = _ENTRY_EDIT.get()
        # the records of a call are taken here, unless another call of its message shares
        # its id (those are kept for it: the table is bounded)
        take = dict.pop if not (entry[1] if entry else _shares_id(request)) else dict.get
        found = [(take(self._judged, k, None), take(self._reviewed, k, None), take(self._failed, k, None)) for k in keys]
        always = next((a for a in (take(self._always, k, None) for k in keys) if a is not None), None)
        edits = [take(self._edits, k) for k in keys if k in self._edits]
        if self.state != "patched":
            return None
        # the reviewer's edit as HITL made it; a call no HITL review recorded: the edit
        # the state ToolNode built the call with holds
        edited = next((e for e in edits if e is not None), None) if edits else _edited_picture(request)
        stale = next((h[0] for h in (take(self._changed, k, None) for k in keys) if h is not None), None)
        failed = next((f for _, _, f in found if f is not None), None)
        if failed is not None:
            return failed  # the call's `when` predicate failed: denied, nobody was asked
        if stale is not None and not (edited is not None and _same_picture(_call_picture(request), edited)):
            # the call changed between the review's question and its answer: the person
            # answered about another call (only the reviewer's own edit runs)
            tool, call_id = _request_ids(request)
            decision = self.decide_stage(tool, [Outcome(hook=stale, verdict=_REVIEW)], call_id=call_id)
            return decision.reason or f"failsecure: hook '{stale}' asks for a review of a call changed after it was shown"
        unreviewed = self._unreviewed(request, keys, reviewers, edited)
        if unreviewed is not None:
            return unreviewed
        key = keys[0]
        call_id = key[2] if key is not None else None
        final = _call_picture(request)
        known = next((j for j, _, _ in found if j is not None), None)
        if known is None:
            if always is None:
                return None
            # a tool reviewed every time: the call that runs is the one reviewed (or the
            # reviewer's edit), or a call nobody saw: nobody can be asked here, denied
            hook, reviewed_calls = always
            if any(_same_picture(final, p) for p in (*reviewed_calls, edited) if p is not None):
                return None
            tool, _ = _request_ids(request)
            decision = self.decide_stage(tool, [Outcome(hook=hook, verdict=_REVIEW)], call_id=call_id)
            return decision.reason or f"failsecure: hook '{hook}' asks for a review of a rewritten call"
        guarded, _ = known
        allowed = [p for j, _, _ in found if j is not None for p in j[1]]
        allowed.append(edited)
        for _, reviewed, _ in found:
            if reviewed is True:  # no batched after_model recorded the reviewed call (per_call)
                allowed.append(_state_picture(request))
            elif reviewed is not None:
                allowed.append(reviewed)  # the call as the review let it run
        if any(_same_picture(final, p) for p in allowed if p is not None):
            return None
        try:
            review, denied = self._ask_when(guarded, request)
        except Exception as exc:  # noqa: BLE001 - the reviewed call's predicate: any failure to ask it is that call's deny, audited
            return self.failed(exc, guarded.tool, call_id, hook=self.callable_id(guarded.original)).reason
        if denied is not None:
            return denied
        if not review:
            return None
        hook = self.callable_id(guarded.original)
        decision = self.decide_stage(guarded.tool, [Outcome(hook=hook, verdict=_REVIEW)], call_id=call_id)
        return decision.reason or f"failsecure: hook '{hook}' asks for a review of a rewritten call"

    # ------------------------------------------------------------ wrap_tool_call middleware

    def _guard_wrapper(self, wrapper: Any) -> Any:
        if getattr(wrapper, "_failsecure_guarded", False):
            return wrapper
        adapter, hook_id = self, self.callable_id(wrapper)

        def guarded(request, handler):
            if adapter.state != "patched":
                return wrapper(request, handler)
            return adapter._run_middleware(hook_id, wrapper, request, handler)

        guarded._failsecure_guarded = True  # type: ignore[attr-defined]
        guarded.__wrapped__ = wrapper  # type: ignore[attr-defined]
        return guarded

    def _aguard_wrapper(self, wrapper: Any) -> Any:
        if getattr(wrapper, "_failsecure_guarded", False):
            return wrapper
        adapter, hook_id = self, self.callable_id(wrapper)

        async def guarded(request, handler):
            if adapter.state != "patched":
                return await wrapper(request, handler)
            try:
                return await adapter._arun_middleware(hook_id, wrapper, request, handler)
            except _Exited as carried:  # not the middleware's own (the tool's): as upstream
                raise carried.exc from None

        guarded._failsecure_guarded = True  # type: ignore[attr-defined]
        guarded.__wrapped__ = wrapper  # type: ignore[attr-defined]
        return guarded

    def _middleware_failed(self, hook_id: str, request: Any, failure: Failure, exc: Optional[BaseException], start: float):
        outcome = Outcome(
            hook=hook_id,
            failure=failure,
            exception_type=type_name(exc) if exc is not None else None,
            elapsed_ms=(perf_counter() - start) * 1000.0,
        )
        tool, call_id = _request_ids(request)
        decision = self.decide_stage(tool, [outcome], call_id=call_id)
        failed = _FAILED.get()
        if failed is not None:
            failed.append(decision)
        return decision

    def _run_middleware(self, hook_id: str, wrapper: Any, request: Any, handler: Any) -> Any:
        """One sync middleware under its deadline: it runs on its own thread (with this
        thread's context); the deadline counts only while it holds the call, not while
        the handler it called (the tool) runs. A handler called after the deadline
        denies instead of running the tool."""
        limit = current_config().timeout_for(hook_id)
        start = perf_counter()
        from_handler: list = []
        cond = threading.Condition()
        state = {"inside": 0, "since": start, "done": False, "abandoned": False, "late": False, "ended": start}
        box: dict = {}

        def proxy(req):
            with cond:
                if not state["abandoned"] and limit and not state["inside"] and perf_counter() - state["since"] > limit:
                    # past its deadline, and the caller has not woken to say so (the
                    # middleware held the GIL): late, whoever noticed it first
                    state["abandoned"] = state["late"] = True
                    cond.notify_all()
                if state["abandoned"]:
                    raise ToolCallDenied(_failure_text(hook_id, Failure.TIMEOUT))
                state["inside"] += 1
            try:
                with _handing_on(hook_id, wrapper, False, req, from_handler):
                    return handler(req)
            finally:
                with cond:
                    state["inside"] -= 1
                    state["since"] = perf_counter()
                    cond.notify_all()

        if not limit:
            try:
                return self._answered(hook_id, request, wrapper(request, proxy), start)
            except BaseException as exc:
                answer = self._middleware_raised(hook_id, request, exc, from_handler, start)
                if answer is None:
                    raise
                return answer

        ctx = contextvars.copy_context()

        def run():
            try:
                box["result"] = ctx.run(wrapper, request, proxy)
            except BaseException as exc:  # noqa: BLE001 - SystemExit too: whatever the middleware raised in its thread is handed to the caller's
                box["exc"] = exc
            finally:
                ended = perf_counter()
                with cond:
                    state["done"], state["ended"] = True, ended
                    cond.notify_all()

        threading.Thread(target=run, name="failsecure-middleware", daemon=True).start()
        timed_out = False
        with cond:
            while not state["done"]:
                if state["late"]:
                    timed_out = True
                    break
                if state["inside"]:
                    cond.wait()
                    continue
                remaining = limit - (perf_counter() - state["since"])
                if remaining <= 0:
                    state["abandoned"] = timed_out = True
                    break
                cond.wait(remaining)
            if not timed_out and (state["late"] or state["ended"] - state["since"] > limit):
                # it answered (or handed on) past its deadline: the caller could not wake in
                # time (a middleware holding the GIL), the clock decides
                state["abandoned"] = timed_out = True
        if timed_out:
            decision = self._middleware_failed(hook_id, request, Failure.TIMEOUT, None, start)
            if decision.denied:
                return _tool_message(request, decision.reason)
            return handler(request)  # on_error = "allow": the middleware is skipped
        if "exc" in box:
            error = box.pop("exc")
            answer = self._middleware_raised(hook_id, request, error, from_handler, start)
            if answer is None:
                raise error
            return answer
        return self._answered(hook_id, request, box.get("result"), start)

    def _answered(self, hook_id: str, request: Any, result: Any, start: float) -> Any:
        """A middleware's answer: a ``ToolMessage`` or a ``Command`` (its own, or the
        handler's). Anything else (``None``, a string, a dict) is no answer ToolNode
        defines: denied as ``invalid``, told as the deny."""
        if _is_answer(result):
            return result
        decision = self._middleware_failed(hook_id, request, Failure.INVALID, None, start)
        return _tool_message(request, decision.reason or _failure_text(hook_id, Failure.INVALID))

    def _middleware_raised(self, hook_id, request, exc, from_handler, start) -> Any:
        """A middleware's own exception (not an interrupt, not the tool's error) is audited
        and denies: -> the deny ``ToolMessage`` the model is told (never the exception's
        text), or None when the exception is not the middleware's own (it propagates, as
        upstream) or the trusted config tolerates this middleware's failures."""
        if isinstance(exc, _Exited):
            exc = exc.exc
        if from_handler or _bubbles_up(exc):
            # the middleware had handed the call on: the tool may have run, or this is the
            # tool's error (as raised, or re-raised with it as its cause): upstream's
            return None
        if isinstance(exc, (ToolCallDenied, KeyboardInterrupt, GeneratorExit, asyncio.CancelledError)):
            return None
        decision = self._middleware_failed(hook_id, request, Failure.RAISED, exc, start)
        if not decision.denied:
            return None
        return _tool_message(request, decision.reason or _failure_text(hook_id, Failure.RAISED))

    async def _arun_middleware(self, hook_id: str, wrapper: Any, request: Any, handler: Any) -> Any:
        limit = current_config().timeout_for(hook_id)
        start = perf_counter()
        from_handler: list = []
        if not limit:

            async def handing_on(req):
                with _handing_on(hook_id, wrapper, True, req, from_handler):
                    return await handler(req)

            try:
                return self._answered(hook_id, request, await wrapper(request, handing_on), start)
            except BaseException as exc:
                answer = self._middleware_raised(hook_id, request, exc, from_handler, start)
                if answer is None:
                    raise
                return answer
        loop = asyncio.get_running_loop()
        deadline = asyncio.timeout(limit)
        inside = [0]
        late_call = [False]

        def late() -> bool:
            # a middleware that blocks the loop past its deadline has not been cancelled
            # yet when it answers (the timeout callback could not run): the clock decides
            when = deadline.when()
            return deadline.expired() or (when is not None and not inside[0] and loop.time() >= when)

        async def proxy(req):
            if late():
                late_call[0] = True
                raise ToolCallDenied(_failure_text(hook_id, Failure.TIMEOUT))
            inside[0] += 1
            deadline.reschedule(None)
            try:
                with _handing_on(hook_id, wrapper, True, req, from_handler):
                    return await handler(req)
            finally:
                inside[0] -= 1
                if not inside[0]:
                    deadline.reschedule(loop.time() + limit)

        try:
            async with deadline:
                result = await wrapper(request, proxy)
            if not late() and not late_call[0]:
                return self._answered(hook_id, request, result, start)
        except TimeoutError as exc:
            if not deadline.expired() or any(exc is e for e in from_handler):
                answer = self._middleware_raised(hook_id, request, exc, from_handler, start)
                if answer is None:
                    raise
                return answer
        except BaseException as exc:
            if not late_call[0]:
                answer = self._middleware_raised(hook_id, request, exc, from_handler, start)
                if answer is None:
                    raise
                return answer
        decision = self._middleware_failed(hook_id, request, Failure.TIMEOUT, None, start)
        if decision.denied:
            return _tool_message(request, decision.reason)
        return await handler(request)

    # ------------------------------------------------------------ the call that runs

    def _stale(self, request: Any) -> list:
        """The middleware that handed this call on as another call than the one reaching
        the tool now (an inner middleware rewrote it, or changed it in place, after it
        handed it on), outermost first. The innermost handed on this very request, and
        nothing ran since: with one middleware no picture is compared."""
        records = _HANDED.get()
        if records and records[-1][4] is request:
            records = records[:-1]
        if not records:
            return []
        final = _handed_picture(request)
        return [r for r in records if not _same_picture(r[3], final)]

    def _settle_middleware(self, request: Any) -> Any:
        """Every middleware judges the call that really runs: one that judged (handed on)
        an older call judges the final one again, in order, under its deadline, with a
        handler that does not run the tool. Returns None (the tool runs) or the answer the
        ToolNode gives instead (a deny)."""
        for hook_id, wrapper, is_async, _, _ in self._stale(request):
            answer = self._unsettled(request) if is_async else self._rerun(hook_id, wrapper, request)
            if answer is not None:
                return answer
        return None

    async def _asettle_middleware(self, request: Any) -> Any:
        for hook_id, wrapper, is_async, _, _ in self._stale(request):
            answer = await self._arerun(hook_id, wrapper, request) if is_async else self._rerun(hook_id, wrapper, request)
            if answer is not None:
                return answer
        return None

    def _rerun(self, hook_id: str, wrapper: Any, request: Any) -> Any:
        final, handed, placeholder = _handed_picture(request), [], _tool_message(request, "")

        def probe(req):
            handed.append(_handed_picture(req))
            return placeholder

        failed: list = []
        token = _FAILED.set(failed)
        try:
            result = self._run_middleware(hook_id, wrapper, request, probe)
        except ToolCallDenied as denied:
            return _tool_message(request, denied.reason)
        finally:
            _FAILED.reset(token)
        return self._settled(hook_id, request, final, handed, result, failed)

    async def _arerun(self, hook_id: str, wrapper: Any, request: Any) -> Any:
        final, handed, placeholder = _handed_picture(request), [], _tool_message(request, "")

        async def probe(req):
            handed.append(_handed_picture(req))
            return placeholder

        failed: list = []
        token = _FAILED.set(failed)
        try:
            result = await self._arun_middleware(hook_id, wrapper, request, probe)
        except ToolCallDenied as denied:
            return _tool_message(request, denied.reason)
        except _Exited as carried:
            raise carried.exc from None
        finally:
            _FAILED.reset(token)
        return self._settled(hook_id, request, final, handed, result, failed)

    def _settled(self, hook_id: str, request: Any, final: Any, handed: list, result: Any, failed: list) -> Any:
        """A middleware's second look at the final call: it raised, hung or answered junk
        (audited and denied as on its first look), it handed on yet another call (the
        call never settles: denied, ``invalid``), it handed the call on as it is (None:
        allowed), or it answered itself (its answer is the deny)."""
        if any(d.denied for d in failed):
            return result
        if any(not _same_picture(p, final) for p in handed):
            return self._unsettled(request)
        if handed:
            return None
        tool, call_id = _request_ids(request)
        self.decide_stage(tool, [Outcome(hook=hook_id, verdict=_DENY)], call_id=call_id)
        return result

    def _unsettled(self, request: Any) -> Any:
        hook = self.hook_id("wrap_tool_call")
        tool, call_id = _request_ids(request)
        decision = self.decide_stage(tool, [unsettled(hook)], call_id=call_id, fail_closed=(hook,))
        return _tool_message(request, decision.reason or _failure_text(hook, Failure.INVALID))

    # ------------------------------------------------------------ doctor

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the ``on_tool_start`` of a strict (``raise_error = True``) handler
        of a real ``StructuredTool`` call: True when the tool was denied (did not run)."""
        from langchain_core.callbacks import BaseCallbackHandler
        from langchain_core.tools import StructuredTool

        ran: list = []

        class SelfTestGate(BaseCallbackHandler):
            raise_error = True

            def on_tool_start(self, *args, **kwargs):
                return gate(*args, **kwargs)

        SelfTestGate.__qualname__ = "SelfTestGate"  # hook id langchain:failsecure.self_test.SelfTestGate
        SelfTestGate.__module__ = "failsecure.self_test"

        def failsecure_self_test(command: str) -> str:
            """failsecure self-test tool."""
            ran.append(command)
            return "ran"

        tool = StructuredTool.from_function(failsecure_self_test)
        try:
            tool.invoke({"command": "probe"}, config={"callbacks": [SelfTestGate()]})
        except ToolCallDenied:
            return not ran
        return False


# ---------------------------------------------------------------- late patches


def _patch_tool_node(adapter: LangChainAdapter, module: Any) -> None:
    node = getattr(module, "ToolNode", None)
    if not isinstance(node, type):
        raise PatchError(f"{TOOL_NODE}.ToolNode")
    for attr in ("_execute_tool_sync", "_execute_tool_async"):
        if not callable(vars(node).get(attr)):
            raise PatchError(f"{TOOL_NODE}.ToolNode.{attr}")

    if not callable(vars(node).get("__init__")):
        raise PatchError(f"{TOOL_NODE}.ToolNode.__init__")

    def execute_sync(wrapped, instance, args, kwargs):
        request = args[0] if args else kwargs.get("request")
        judged = adapter._predicates_of(request)
        reason = adapter._at_tool(request, _reviewers_of(instance))
        if reason is not None:
            return _tool_message(request, reason)
        answer = adapter._settle_middleware(request)
        if answer is not None:
            return answer
        tokens = _dispatching(request, judged)
        try:
            return wrapped(*args, **kwargs)
        except ToolCallDenied as denied:
            return _tool_message(request, denied.reason)
        finally:
            _dispatched_done(tokens)

    async def _execute_async(wrapped, instance, args, kwargs):
        request = args[0] if args else kwargs.get("request")
        judged = adapter._predicates_of(request)
        reason = adapter._at_tool(request, _reviewers_of(instance))
        if reason is not None:
            return _tool_message(request, reason)
        answer = await adapter._asettle_middleware(request)
        if answer is not None:
            return answer
        tokens = _dispatching(request, judged)
        try:
            return await wrapped(*args, **kwargs)
        except ToolCallDenied as denied:
            return _tool_message(request, denied.reason)
        finally:
            _dispatched_done(tokens)

    def execute_async(wrapped, instance, args, kwargs):
        return _execute_async(wrapped, instance, args, kwargs)

    def init(wrapped, instance, args, kwargs):
        # ``wrap_tool_call`` / ``awrap_tool_call`` handed to a ToolNode directly (a custom
        # graph, no ``create_agent``) get the same deadline as agent middleware
        wrapped(*args, **kwargs)
        reviewers = _BUILDING.get()
        if reviewers:
            try:  # the batched HITL middleware of the agent this ToolNode is built for
                instance._failsecure_reviewers = reviewers
            except Exception:  # noqa: BLE001 - a ToolNode that takes no attribute: its calls are judged without them (as before)
                pass
        if getattr(instance, "_wrap_tool_call", None) is not None:
            instance._wrap_tool_call = adapter._guard_wrapper(instance._wrap_tool_call)
        if getattr(instance, "_awrap_tool_call", None) is not None:
            instance._awrap_tool_call = adapter._aguard_wrapper(instance._awrap_tool_call)

    def run_one(wrapped, instance, args, kwargs):
        token, edit = _ENTRY.set(_entry_key(args, kwargs)), _ENTRY_EDIT.set(_entry_edit(args, kwargs))
        try:
            return wrapped(*args, **kwargs)
        finally:
            _ENTRY_EDIT.reset(edit)
            _ENTRY.reset(token)

    async def _arun_one(wrapped, args, kwargs):
        token, edit = _ENTRY.set(_entry_key(args, kwargs)), _ENTRY_EDIT.set(_entry_edit(args, kwargs))
        try:
            return await wrapped(*args, **kwargs)
        finally:
            _ENTRY_EDIT.reset(edit)
            _ENTRY.reset(token)

    def arun_one(wrapped, instance, args, kwargs):
        return _arun_one(wrapped, args, kwargs)

    for attr, wrapper in (("_run_one", run_one), ("_arun_one", arun_one)):
        if callable(vars(node).get(attr)):
            adapter.wrap(node, attr, wrapper)
    adapter.wrap(node, "_execute_tool_sync", execute_sync)
    adapter.wrap(node, "_execute_tool_async", execute_async)
    adapter.wrap(node, "__init__", init)


def _patch_hitl(adapter: LangChainAdapter, module: Any) -> None:
    middleware = getattr(module, "HumanInTheLoopMiddleware", None)
    if not isinstance(middleware, type) or not callable(vars(middleware).get("__init__")):
        raise PatchError(f"{HITL}.HumanInTheLoopMiddleware.__init__")

    def init(wrapped, instance, args, kwargs):
        wrapped(*args, **kwargs)
        configs = getattr(instance, "interrupt_on", None)
        if isinstance(configs, dict):
            for tool, config in list(configs.items()):
                if isinstance(config, dict) and config.get("when") is not None:
                    configs[tool] = {**config, "when": adapter._guard_when(config["when"], tool)}

    def after_model(wrapped, instance, args, kwargs):
        state = args[0] if args else kwargs.get("state")
        if adapter.state == "patched":
            adapter._review_seen(state, instance)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            if adapter.state == "patched" and _bubbles_up(exc):  # the question is put to a person
                adapter._review_asked(state, instance)
            raise
        if adapter.state == "patched":
            adapter._review_done(result, instance)
        return result

    def resolve_per_call(wrapped, instance, args, kwargs):
        request = args[0] if args else kwargs.get("request")
        key, picture = adapter._per_call_asking(request, instance) if adapter.state == "patched" else (None, None)
        try:
            resolved = wrapped(*args, **kwargs)
        except BaseException as exc:
            if key is not None and _bubbles_up(exc):  # the question is put to a person
                _remember(adapter._shown, key, (adapter.callable_id(type(instance)), (picture,)))
            raise
        if adapter.state == "patched":
            adapter._per_call_edit(request, resolved)
        return resolved

    adapter.wrap(middleware, "__init__", init)
    if callable(vars(middleware).get("after_model")):  # batched reviews (aafter_model calls it)
        adapter.wrap(middleware, "after_model", after_model)
    if callable(vars(middleware).get("_resolve_per_call")):  # per_call reviews (langchain 1.5)
        adapter.wrap(middleware, "_resolve_per_call", resolve_per_call)


def _patch_factory(adapter: LangChainAdapter, module: Any) -> None:
    for attr in ("_chain_tool_call_wrappers", "_chain_async_tool_call_wrappers"):
        if not callable(vars(module).get(attr)):
            raise PatchError(f"{FACTORY}.{attr}")

    def chain(wrapped, instance, args, kwargs):
        wrappers = args[0] if args else kwargs.pop("wrappers")
        return _guarded(wrapped([adapter._guard_wrapper(w) for w in wrappers], *args[1:], **kwargs))

    def achain(wrapped, instance, args, kwargs):
        wrappers = args[0] if args else kwargs.pop("wrappers")
        return _guarded(wrapped([adapter._aguard_wrapper(w) for w in wrappers], *args[1:], **kwargs))

    def create(wrapped, instance, args, kwargs):
        # the ToolNode built here gets the agent's HITL middleware (``_unreviewed``)
        hitl = getattr(sys.modules.get(HITL), "HumanInTheLoopMiddleware", None)
        try:
            reviewers = tuple(m for m in (kwargs.get("middleware") or ()) if isinstance(hitl, type) and isinstance(m, hitl))
        except Exception:  # noqa: BLE001 - the application's middleware sequence can raise anything: none known (create_agent itself reads it next)
            reviewers = ()
        token = _BUILDING.set(reviewers)
        try:
            return wrapped(*args, **kwargs)
        finally:
            _BUILDING.reset(token)

    if callable(vars(module).get("create_agent")):
        adapter.wrap_everywhere(module, "create_agent", create, "langchain")
    adapter.wrap(module, "_chain_tool_call_wrappers", chain)
    adapter.wrap(module, "_chain_async_tool_call_wrappers", achain)
    if callable(vars(module).get("traceable")):
        # langsmith's ``traceable`` runs an async middleware in a task of its own: a
        # SystemExit escaping that task is re-raised by asyncio out of the event loop
        # (with its text), past the guard around the traced wrapper. The middleware is
        # contained inside that task instead.
        def traceable(wrapped, instance, args, kwargs):
            decorate = wrapped(*args, **kwargs)
            if not callable(decorate):
                return decorate

            def decorator(fn):
                if getattr(fn, "__name__", None) == "awrap_tool_call" and inspect.iscoroutinefunction(fn):
                    fn = _contained(adapter, fn)
                return decorate(fn)

            return decorator

        adapter.wrap(module, "traceable", traceable)


def _patch_tools(adapter: LangChainAdapter, module: Any) -> None:
    base = getattr(module, "BaseTool", None)
    if not isinstance(base, type):
        raise PatchError(f"{TOOLS}.BaseTool")
    # BaseTool's own ``_arun`` runs ``_run`` in an executor (the boundary is there), and
    # ``arun`` compares it by identity to choose what it hands ``run_manager`` / ``config``
    adapter.wrap_subclasses(base, ("_run", "_arun"), adapter._read_tool, base_attrs=("_run",))


def _patch_pregel(adapter: LangChainAdapter, module: Any) -> None:
    pregel = getattr(module, "Pregel", None)
    if not isinstance(pregel, type) or not all(callable(vars(pregel).get(a)) for a in RUN_ENTRIES):
        raise PatchError(f"{PREGEL}.Pregel")
    for attr in RUN_ENTRIES:
        adapter.wrap_run(pregel, attr, gated=adapter._agent_gated, gated_call=adapter._call_gated)


_LATE = {TOOL_NODE: _patch_tool_node, HITL: _patch_hitl, FACTORY: _patch_factory, TOOLS: _patch_tools,
         PREGEL: _patch_pregel}


def _late_hook(adapter: LangChainAdapter, module: str) -> Any:
    def hook(imported: Any) -> None:
        adapter._late(module)

    return hook


# ---------------------------------------------------------------- helpers


class _Exited(Exception):
    """A middleware's ``SystemExit`` carried out of the task it ran in (``exc``); no text."""

    def __init__(self, exc: BaseException):
        super().__init__()
        self.exc = exc


def _contained(adapter: LangChainAdapter, fn: Any) -> Any:
    """``fn`` (an ``awrap_tool_call``) with its ``SystemExit`` carried as ``_Exited``
    while failsecure is active (``_arun_middleware`` takes the original back out)."""
    import functools

    @functools.wraps(fn)
    async def contained(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except SystemExit as exc:
            if adapter.state != "patched":
                raise
            raise _Exited(exc) from None

    return contained


class _GuardedWhen:
    """A HITL ``when`` predicate under the guard. When failsecure is not active it calls
    the predicate exactly as upstream does."""

    __slots__ = ("adapter", "original", "tool", "__wrapped__")

    def __init__(self, adapter: LangChainAdapter, original: Any, tool: Optional[str]):
        self.adapter, self.original, self.tool = adapter, original, tool
        self.__wrapped__ = original

    def __call__(self, request: Any) -> Any:
        if self.adapter.state != "patched":
            return self.original(request)
        try:
            return self.adapter._judge_when(self, request)
        except ToolCallDenied:
            raise
        except Exception as exc:  # noqa: BLE001 - failsecure failed: the call is denied (audited), never let through
            tool, call_id = _request_ids(request)
            decision = self.adapter.failed(exc, self.tool or tool, call_id)
            raise ToolCallDenied(decision.reason or "failsecure: denied") from None


def _executing(module: Any) -> bool:
    """A module in ``sys.modules`` whose code is still running (it imported the trigger)."""
    return getattr(getattr(module, "__spec__", None), "_initializing", False) is True


def _reviewers_of(node: Any) -> tuple:
    """The HITL middleware of the agent a ToolNode was built for (none for a ToolNode
    built by hand)."""
    try:
        reviewers = vars(node).get("_failsecure_reviewers", ())
    except TypeError:  # no __dict__
        return ()
    return reviewers if type(reviewers) is tuple else ()


def _dispatching(request: Any, judged: tuple) -> tuple:
    """ToolNode executes ``request``: the marker its tool's own ``on_tool_start`` takes
    ([tool call id, the name of the tool that runs, the hooks that took part in the call]);
    the tool's body (an agent run as a tool, a tool run by a tool) starts with no hook of
    this call taking part and no middleware hand-on pictured."""
    name, call_id = _request_ids(request)
    try:
        tool = getattr(request, "tool", None)
        name = tool.name if tool is not None else name
    except Exception:  # noqa: BLE001 - the tool's name property can raise anything: the call's own name stands
        pass
    return (_DISPATCH.set([call_id, name, _TOOK_PART.get() + judged]), _TOOK_PART.set(()), _HANDED.set(()))


def _dispatched_done(tokens: tuple) -> None:
    dispatch, took, handed = tokens
    _HANDED.reset(handed)
    _TOOK_PART.reset(took)
    _DISPATCH.reset(dispatch)


#: LangChain's context variable of the runnable config the current code runs under
_CHILD_CONFIG: list = [None]


def _child_config() -> Optional[dict]:
    """The runnable config the current code runs under (the tool run's, in a tool's body)."""
    var = _CHILD_CONFIG[0]
    if var is None:
        var = _CHILD_CONFIG[0] = getattr(sys.modules.get(CONFIG), "var_child_runnable_config", None)
        if var is None:
            return None
    config = var.get(None)
    return config if isinstance(config, dict) else None


def _remember(table: dict, key: Any, value: Any) -> None:
    if len(table) >= 4096 and key not in table:
        table.pop(next(iter(table)))
    table[key] = value


def _when_verdict(native: Any) -> Verdict:
    """``True``: review; ``False``: no review; anything else is INVALID."""
    return exactly(native, _WHEN_ANSWERS)


def _isolated(method: Any) -> Any:
    """``method`` called in a fresh copy of the context it is called in (upstream's
    ``copy_context().run`` for a sync handler of an async tool start)."""

    def isolated(*args: Any, **kwargs: Any) -> Any:
        return contextvars.copy_context().run(method, *args, **kwargs)

    return isolated


def _drive(method: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a handler's ``on_tool_start`` from a sync tool. An async handler's coroutine
    is run to its end on a loop of its own (upstream runs it detached and swallows its
    error), in this thread, or in a fresh one when a loop already runs here."""
    result = method(*args, **kwargs)
    if not inspect.iscoroutine(result):
        return result
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_coro(result)
    box: dict = {}
    ctx = contextvars.copy_context()

    def run():
        try:
            box["result"] = ctx.run(_run_coro, result)
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: whatever the handler's coroutine raised in its thread is handed to the caller's
            box["exc"] = exc

    thread = threading.Thread(target=run, name="failsecure-async-handler", daemon=True)
    thread.start()
    thread.join()
    if "exc" in box:
        raise box["exc"]
    return box.get("result")


def _run_coro(coro: Any) -> Any:
    with asyncio.Runner() as runner:
        return runner.run(coro)


def _observe_sync(wrapped, observers, event, ignore, rest, kwargs) -> None:
    """The observer handlers through upstream's own ``handle_event``; failsecure never
    lets an observer's error stop the tool (a ``role = "observer"`` strict handler)."""
    try:
        wrapped(observers, event, ignore, *rest, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a role = "observer" handler's raise is ignored by the user's config: said, the tool runs
        problem(f"failsecure: an observer callback raised {type_name(exc)}; ignored", level=30)


async def _observe_async(wrapped, observers, event, ignore, rest, kwargs) -> None:
    try:
        await wrapped(observers, event, ignore, *rest, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a role = "observer" handler's raise is ignored by the user's config: said, the tool runs
        problem(f"failsecure: an observer callback raised {type_name(exc)}; ignored", level=30)


def _error_kwargs(kwargs: dict) -> dict:
    """What ``CallbackManagerForToolRun.on_tool_error`` passes, from the start's kwargs."""
    out = {k: kwargs[k] for k in ("run_id", "parent_run_id", "tags") if k in kwargs}
    if kwargs.get("tool_call_id") is not None:
        out["tool_call_id"] = kwargs["tool_call_id"]
    return out


def _guarded(composed: Any) -> Any:
    """Mark a chain of guarded middleware wrappers: the ToolNode it is handed to does
    not guard it a second time as a whole."""
    if composed is not None:
        try:
            composed._failsecure_guarded = True
        except Exception:  # noqa: BLE001 - a chain that takes no attribute (slots, a hostile __setattr__): ToolNode guards it once more
            pass
    return composed


def _call_key(request: Any) -> Optional[tuple]:
    """(thread id or None, id of the model message that made the call, tool call id) of
    a request: what a resumed run shares with the run it resumes (the model message
    comes back from the checkpoint). None when the call has no id."""
    try:
        _, call_id = _request_ids(request)
        if call_id is None:
            return None
        config = getattr(getattr(request, "runtime", None), "config", None)
        configurable = config.get("configurable") if isinstance(config, dict) else None
        thread = configurable.get("thread_id") if isinstance(configurable, dict) else None
        message = _model_call(request, call_id)[0]
        message_id = getattr(message, "id", None) if message is not None else None
    except Exception:  # noqa: BLE001 - the request's runtime, config or messages (user objects) can raise anything: the call has no key
        return None
    return (
        thread if type(thread) in (str, int) else None,
        message_id if isinstance(message_id, str) else None,
        call_id,
    )


def _entry_key(args: tuple, kwargs: dict) -> Optional[tuple]:
    """The ``_call_key`` of the call ``ToolNode._run_one(call, input_type, tool_runtime)``
    is about to hand to the middleware."""
    try:
        call = args[0] if args else kwargs.get("call")
        runtime = args[2] if len(args) > 2 else kwargs.get("tool_runtime")
        request = types.SimpleNamespace(tool_call=call, runtime=runtime, state=getattr(runtime, "state", None))
        return _call_key(request)
    except Exception:  # noqa: BLE001 - the framework's call and runtime objects can raise anything: no key, the call is found by its others
        return None


def _entry_edit(args: tuple, kwargs: dict) -> tuple:
    """(``_edited_picture``, shared id, picture of the call) of the call
    ``ToolNode._run_one(call, input_type, tool_runtime)`` is about to hand to the
    middleware, read from the state ToolNode has."""
    try:
        call: Any = args[0] if args else kwargs.get("call")
        runtime = args[2] if len(args) > 2 else kwargs.get("tool_runtime")
        request = types.SimpleNamespace(tool_call=call, state=getattr(runtime, "state", None))
        return (_state_edit(request), _shares_id(request), _picture(call.get("name"), call.get("args"), call.get("name")))
    except Exception:  # noqa: BLE001 - the framework's call and runtime objects can raise anything: no reviewer's edit known, the id read as shared (records kept)
        return (None, True, CHANGED)


def _shares_id(request: Any) -> bool:
    """Another tool call of the model message that made this call has its tool call id."""
    try:
        _, call_id = _request_ids(request)
        if call_id is None:
            return False
        message = _model_call(request, call_id)[0]
        calls = (getattr(message, "tool_calls", None) or ()) if message is not None else ()
        return sum(1 for c in calls if isinstance(c, dict) and c.get("id") == call_id) > 1
    except Exception:  # noqa: BLE001 - the state's messages (user objects) can raise anything: read as shared (the records are kept, bounded)
        return True


def _keys_at_tool(request: Any) -> list:
    """The keys a call at its tool is known by: its own, and the one ToolNode built it as."""
    keys = [k for k in (_call_key(request), _ENTRY.get()) if k is not None]
    return [k for i, k in enumerate(keys) if k not in keys[:i]] or [None]


def _model_call(request: Any, call_id: str) -> tuple:
    """(the model message in the request's state that made the call, that tool call)."""
    state = getattr(request, "state", None)
    messages = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    for message in reversed(list(messages or ())):
        for call in getattr(message, "tool_calls", None) or ():
            if isinstance(call, dict) and call.get("id") == call_id:
                return message, call
    return None, None


def _picture(name: Any, args: Any, tool: Any = None) -> Any:
    return fingerprint((name, args, tool))


@contextlib.contextmanager
def _handing_on(hook_id: str, wrapper: Any, is_async: bool, request: Any, from_handler: list):
    """A middleware hands ``request`` on: it took part in the call (``_TOOK_PART``), and
    what it handed on is pictured (``_HANDED``) for the check where the call reaches the
    tool. ``from_handler`` gets ``_ENTERED`` (the tool may run from here on) and whatever
    the handler raised."""
    token = _TOOK_PART.set(_TOOK_PART.get() + (hook_id,))
    handed = _HANDED.set(_HANDED.get() + ((hook_id, wrapper, is_async, _handed_picture(request), request),))
    from_handler.append(_ENTERED)
    try:
        yield
    except BaseException as exc:
        from_handler.append(exc)
        raise
    finally:
        _HANDED.reset(handed)
        _TOOK_PART.reset(token)


def _call_picture(request: Any) -> Any:
    """The call as it would run: the call's name and arguments and the tool's name."""
    try:
        call = request.tool_call
        tool = getattr(request, "tool", None)
        return _picture(call.get("name"), call.get("args"), getattr(tool, "name", None) if tool is not None else call.get("name"))
    except Exception:  # noqa: BLE001 - the request's tool_call or tool (user objects) can raise anything: pictured as changed (judged again)
        return CHANGED


def _asked_picture(request: Any) -> Any:
    """The call a ``per_call`` question shows, as a resume of it is compared: the call
    (``_call_picture``) with the arguments the model's call has keys for, and the keys a
    middleware before HITL added by name only (a stamp's fresh value on each pass, such
    as a trace id, is the same call; a key added on one pass only is another call)."""
    try:
        call = request.tool_call
        args = call.get("args")
        _, call_id = _request_ids(request)
        model = _model_call(request, call_id)[1] if call_id is not None else None
        known = model.get("args") if isinstance(model, dict) else None
        if type(args) is dict and type(known) is dict:
            added = tuple(sorted((k for k in args if k not in known), key=repr))
            args = ({k: v for k, v in args.items() if k in known}, added)
        tool = getattr(request, "tool", None)
        return _picture(call.get("name"), args, getattr(tool, "name", None) if tool is not None else call.get("name"))
    except Exception:  # noqa: BLE001 - the request's tool_call or state (user objects) can raise anything: pictured as changed (judged again)
        return CHANGED


def _handed_picture(request: Any) -> Any:
    """What a middleware handed on, as the tool will run it: the call (``_call_picture``)
    and the tool object itself, by identity (``request.override(tool=...)`` with another
    tool of the same name is another call: the middleware that judged the first one
    judges it again)."""
    picture = _call_picture(request)
    if picture is CHANGED:
        return CHANGED
    try:
        return (picture, fingerprint(getattr(request, "tool", None)))
    except Exception:  # noqa: BLE001 - the request's tool (a user object) can raise anything: pictured as changed (judged again)
        return CHANGED


def _state_picture(request: Any) -> Any:
    """The call as the model message in the state has it (a 1.3 reviewer's edit lands there)."""
    try:
        _, call_id = _request_ids(request)
        call = _model_call(request, call_id)[1]
        return None if call is None else _picture(call.get("name"), call.get("args"), call.get("name"))
    except Exception:  # noqa: BLE001 - the state's model message (user objects) can raise anything: no picture of it, nothing allowed by it
        return None


def _edited_picture(request: Any) -> Any:
    """The reviewer's edit of the call, where HITL keeps it (``hitl_edited_tool_calls``):
    in the state ToolNode built the call with (HITL's own ``wrap_tool_call`` reads it there
    when it is the outermost middleware), never the state a middleware handed on
    (``request.override(state=...)`` naming its own rewrite the edit)."""
    entry = _ENTRY_EDIT.get()
    if entry:
        return entry[0]
    return _state_edit(request)


def _state_edit(request: Any) -> Any:
    """The reviewer's edit of the call as ``request.state`` holds it."""
    try:
        _, call_id = _request_ids(request)
        state = getattr(request, "state", None)
        edits = state.get("hitl_edited_tool_calls") if isinstance(state, dict) else None
        edit = edits.get(call_id) if isinstance(edits, dict) else None
        if edit is None:
            return None
        name = edit.get("name") if isinstance(edit, dict) else getattr(edit, "name", None)
        args = edit.get("args") if isinstance(edit, dict) else getattr(edit, "args", None)
        return _picture(name, args, name)
    except Exception:  # noqa: BLE001 - a reviewer's edit (user objects) can raise anything: no picture of it, nothing allowed by it
        return None


def _action_picture(action: Any) -> Any:
    """The picture of a reviewer's action (``{"name", "args"}``), or None."""
    if action is None:
        return None
    name = action.get("name") if isinstance(action, dict) else getattr(action, "name", None)
    args = action.get("args") if isinstance(action, dict) else getattr(action, "args", None)
    return _picture(name, args, name)


def _same_picture(a: Any, b: Any) -> bool:
    if a is CHANGED or b is CHANGED:
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - pictures compare as builtins, but a MemoryError on a huge one must read as not the same
        return False


def _request_ids(request: Any) -> tuple:
    try:
        call = request.tool_call
        tool, call_id = call.get("name"), call.get("id")
        return (tool if isinstance(tool, str) else None, call_id if isinstance(call_id, str) else None)
    except Exception:  # noqa: BLE001 - the request's tool_call (a user object) can raise anything: no name, no id
        return None, None


def _tool_message(request: Any, reason: Optional[str]) -> Any:
    """The deny the agent's model sees: an error ``ToolMessage`` for this tool call."""
    from langchain_core.messages import ToolMessage

    tool, call_id = _request_ids(request)
    return ToolMessage(content=reason or "failsecure: denied", name=tool, tool_call_id=call_id or "", status="error")


def _took_part(took: tuple) -> list:
    """The hooks that judged the call on its way here, as outcomes of the tool's
    decision: they took part (a ``required`` one is present, the audit names it), with no
    opinion of their own in it."""
    return [Outcome(hook=h, verdict=ABSTAIN) for h in took]


def _is_answer(result: Any) -> bool:
    """A ``ToolMessage`` or a LangGraph ``Command``: what ``ToolNode`` takes from a
    ``wrap_tool_call`` middleware."""
    from langchain_core.messages import ToolMessage

    if isinstance(result, ToolMessage):
        return True
    types = sys.modules.get("langgraph.types")
    command = getattr(types, "Command", None) if types is not None else None
    return isinstance(command, type) and isinstance(result, command)


def _failure_text(hook_id: str, failure: Failure) -> str:
    from failsecure.verdict import failure_reason

    return failure_reason(hook_id, failure)


def _bubbles_up(exc: BaseException) -> bool:
    """LangGraph's control flow (an interrupt, a parent command): never a failure."""
    errors = sys.modules.get("langgraph.errors")
    bubble = getattr(errors, "GraphBubbleUp", None) if errors is not None else None
    return isinstance(bubble, type) and isinstance(exc, bubble)


__all__ = ["LangChainAdapter", "ToolCallDenied"]
