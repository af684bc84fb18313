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

The agent's root ``CombinedCapability.before_tool_execute`` is wrapped too: every gate of
every capability (each ``Hooks`` capability's hooks, each capability class with its own
``before_tool_execute``) is one round in upstream's order, re-run while any gate rewrites,
and one decision per call consults the plugin gates for every agent. What the gates let
through travels with the call (context variables) to the toolset that runs the tool
(``FunctionToolset.call_tool`` and, patched once per class, any other toolset that lists a
called tool): arguments or a tool changed on the way (a ``WrapperToolset.call_tool``, 2.42.0's
``wrap_tool_execute``) are judged again there. ``ApprovalRequiredToolset``'s predicate and
the approval handlers of capability classes run under the guard.

A wrapper the call passes through on its way to the tool (a ``wrap_tool_execute`` hook of
a ``Hooks`` capability, a capability class's own ``wrap_tool_execute``, a user's
``WrapperToolset.call_tool``) has the deadline of a gate for handing it on: a wrapper that
calls its handler (or the toolset it wraps) later than its deadline after it was handed
the call is a ``timeout`` (``ToolFailed`` with the hook id and category), and the tool does
not run. pydantic-ai's own wrappers (``pydantic_ai.*``) hand on as they are.
An ``MCPToolset``'s ``process_tool_call`` is such a wrapper too (hook id of the user's
callable): it is called inside ``MCPToolset.call_tool`` with the call to the server, so the
toolset's check is where that call reaches the server (``_call_tool_checked``, 2.42.0's
``direct_call_tool``), with the name and arguments the hook handed on.

The tool boundary (docs/ungoverned.md): the run entry points (``AbstractAgent.run`` and its
sync and streaming forms, every agent class's ``iter``) mark an agent run; each decision
that lets a call run grants it once (by call id and the judged arguments), and the
toolset that runs the tool consumes the grant. A ``call_tool`` there that no tool manager
dispatched, inside a run, or a second execution of one judged call, is ungoverned.

A call with no gate at all (no hook, no capability gate, no plugin gate, nothing required)
is left to upstream untouched (no decision, no audit). Other frameworks built on
pydantic-ai (code-puppy) register no such hooks, so their tool calls are not affected
unless a plugin gate is registered.

Hook ids: ``pydantic-ai:<module>.<qualname>`` of the hook function.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import importlib
import sys
import types
from time import perf_counter
from typing import Any, Awaitable

from failsecure.adapter import (
    CHANGED,
    Adapter,
    PatchError,
    Ungoverned,
    asettle,
    fingerprint,
    is_async,
    on_loop,
    past_deadline,
    same,
    snapshot,
    when_imported,
)
from failsecure.verdict import ABSTAIN, Action, Decision, Failure, Invalid, Outcome, Verdict, exactly, failure_reason

HOOKS = "pydantic_ai.capabilities.hooks"
EXCEPTIONS = "pydantic_ai.exceptions"
DEFERRED = "pydantic_ai._deferred"
EVENT = "before_tool_execute"
APPROVER = "handle_deferred_tool_calls"
COMBINED = "pydantic_ai.capabilities.combined"
ABSTRACT = "pydantic_ai.capabilities.abstract"
WRAPPER_CAP = "pydantic_ai.capabilities.wrapper"
TOOL_MANAGER = "pydantic_ai.tool_manager"
TOOLSETS = "pydantic_ai.toolsets"
ABSTRACT_AGENT = "pydantic_ai.agent.abstract"
#: the run entry points (docs/ungoverned.md): ``AbstractAgent``'s, and the ``iter`` of every
#: agent class (``Agent.iter``: the one every run and stream of an ``Agent`` goes through)
RUN_ENTRIES = ("run", "run_sync", "run_stream", "run_stream_sync", "run_stream_events")
#: the run entry points each agent class defines for itself (``@asynccontextmanager``
#: methods: the run is their ``async with`` body): ``iter``, and the realtime session
#: (``agent.realtime(model).session()`` enters ``_open_realtime_session``; its tool calls
#: go through the tool manager's hooks as a run's do)
AGENT_RUN_ENTRIES = ("iter", "_open_realtime_session")
APPROVAL = "pydantic_ai.toolsets.approval_required"
#: an ``MCPToolset``'s ``call_tool`` runs the user's ``process_tool_call`` around the call
#: that reaches the server: ``_call_tool_checked`` (2.68.0: every path to the server, the
#: MCP Apps one too) or ``direct_call_tool`` (2.42.0)
MCP = "pydantic_ai.mcp"
MCP_RUNNERS = ("_call_tool_checked", "direct_call_tool")
#: the wrappers a call is handed through on its way to the tool: a ``Hooks`` capability's
#: ``wrap_tool_execute`` entries (one chain link each, built by ``hooks._make_wrap_link``),
#: each capability's ``wrap_tool_execute`` (one link each, ``combined._make_tool_execute_wrap``)
WRAP = "wrap_tool_execute"
WRAP_LINK = "_make_wrap_link"
_WRAP_LINK_PARAMS = ("entry", "hook_name", "ctx", "static_kwargs", "inner_handler", "handler_arg")
CAP_WRAP_LINK = "_make_tool_execute_wrap"
_CAP_WRAP_PARAMS = ("cap", "ctx", "call", "tool_def", "inner")

_HOOK = "hook"  # an entry of a Hooks capability's before_tool_execute registry
_CAPABILITY = "capability"  # a capability class's own before_tool_execute


class _Judged:
    """What the before-tool gates of one call judged (the arguments they let through)."""

    __slots__ = ("call", "snapshot", "root", "tool_def")

    def __init__(self, call: Any, snapshot: Any, root: Any, tool_def: Any):
        self.call, self.snapshot, self.root, self.tool_def = call, snapshot, root, tool_def


class _Dispatch:
    """A tool call on its way from the tool manager to the toolset that runs it."""

    __slots__ = ("call", "ctx", "judged", "listed", "approvals", "held", "late", "mcp", "root")

    def __init__(self, call: Any, ctx: Any, judged: Any, listed: Any, root: Any = None):
        self.call, self.ctx, self.judged, self.listed = call, ctx, judged, listed
        self.root = root  # the tool manager's root capability: its gates judge a call no gate's judgement reached
        self.approvals: tuple = ()  # (approval predicate, the arguments it let run unasked)
        self.held: Any = None  # (hook id, since when) of the user's toolset wrapper holding the call
        self.late: Any = None  # (hook id, the deny raised) of a late hand-on by such a wrapper
        self.mcp: Any = None  # (MCPToolset, run context, listed tool) while its process_tool_call holds the call


_CALL_TOOL_PARAMS = ("name", "tool_args", "ctx", "tool")


def _call_tool_args(args: tuple, kwargs: dict) -> Any:
    """``(name, tool_args, ctx, tool)`` of a toolset's ``call_tool(...)``, given by position
    or by name; ``None`` for any other shape."""
    if not kwargs:
        return args if len(args) == 4 else None
    if len(args) + len(kwargs) != 4 or any(k not in _CALL_TOOL_PARAMS[len(args) :] for k in kwargs):
        return None
    return tuple(args) + tuple(kwargs[k] for k in _CALL_TOOL_PARAMS[len(args) :])


#: set by the root capability's gate when it let a call through
_JUDGED: contextvars.ContextVar = contextvars.ContextVar("failsecure_pydantic_ai_judged", default=None)
#: set by the tool manager's ``_run_execute_hooks``: the tool the call's gates are for
_CALLING: contextvars.ContextVar = contextvars.ContextVar("failsecure_pydantic_ai_calling", default=None)
#: set by the tool manager's ``_raw_execute`` while the toolsets dispatch the call
_DISPATCH: contextvars.ContextVar = contextvars.ContextVar("failsecure_pydantic_ai_dispatch", default=None)
#: a call with no gate at all (upstream's): what the boundary is told the dispatcher let run
_UNGATED = Decision(Verdict(action=Action.ALLOW))
_PREDICATE_ANSWERS = ((True, Verdict(action=Action.ASK)), (False, Verdict(action=Action.ALLOW)))
#: call id -> the hook ids of the approval handlers that approved it in this run (a
#: ``required`` handler is met by the decision on the call it approved)
_APPROVED_BY: contextvars.ContextVar = contextvars.ContextVar("failsecure_pydantic_ai_approved_by", default=None)



class _Raised:
    """A hook's answer given as one of pydantic-ai's control-flow exceptions."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


class PydanticAIAdapter(Adapter):
    name = "pydantic-ai"
    fail_closed_upstream = ""  # raises fail closed upstream, but hangs, rewrites and leaks do not
    modules = (HOOKS,)
    supports_ask = True  # ApprovalRequired: the call comes back as a DeferredToolRequests
    self_test_junk = "DENY"

    def __init__(self) -> None:
        super().__init__()
        self._hooks: Any = None
        self._abandon: Any = None  # upstream's abandon-threads flag, where it is one context variable
        self._exc: Any = None
        self._deny_types: tuple = ()
        self._ask_type: Any = None
        self._failed_type: Any = None
        self._results_type: Any = None
        self._approval_types: tuple = ()
        self._combined: Any = None
        self._abstract_cap: Any = None
        self._wrapper_cap: Any = None
        self._owners: dict = {}
        self._cap_ids: dict = {}
        self._passthrough_toolsets: tuple = ()
        self._wrapper_toolset: Any = None
        self._leaf_classes: set = set()
        self._runs_on = False
        self._runs_watch = False
        self._iters: set = set()
        self._holders: set = set()  # the user's WrapperToolset classes whose call_tool hands on under a deadline
        self._mcp_runner: Any = None  # the MCPToolset class whose runner is patched (MCP_RUNNERS)
        self._held_ctx: dict = {}  # id(run context) -> (it, the dispatch) while a user's wrapper holds the call
        self._held_runs: dict = {}  # run id -> [(run context, the dispatch)] while a user's wrapper holds a call of that run
        self._wrap_ids: dict = {}  # capability class -> the hook id of its own wrap_tool_execute, or ""

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

    def _more_targets(self) -> tuple:
        """The root capability's dispatch, the tool manager's call into the toolsets, the
        toolsets (wrappers, the leaf that runs a function tool, the approval toolset)."""
        combined = importlib.import_module(COMBINED)
        abstract = importlib.import_module(ABSTRACT)
        wrapper_cap = importlib.import_module(WRAPPER_CAP)
        manager = importlib.import_module(TOOL_MANAGER)
        toolsets = importlib.import_module(TOOLSETS)
        approval = importlib.import_module(APPROVAL)
        cls = getattr(combined, "CombinedCapability", None)
        if not isinstance(cls, type) or not callable(cls.__dict__.get(EVENT)) or not callable(getattr(combined, "_ctx_for_active_cap", None)):
            raise PatchError(f"{COMBINED}.CombinedCapability.{EVENT}")
        base = getattr(abstract, "AbstractCapability", None)
        wcap = getattr(wrapper_cap, "WrapperCapability", None)
        if not isinstance(base, type) or EVENT not in vars(base) or not isinstance(wcap, type) or EVENT not in vars(wcap):
            raise PatchError(f"{ABSTRACT}.AbstractCapability.{EVENT}")
        tm = getattr(manager, "ToolManager", None)
        if not isinstance(tm, type) or not callable(tm.__dict__.get("_raw_execute")):
            raise PatchError(f"{TOOL_MANAGER}.ToolManager._raw_execute")
        names = ("WrapperToolset", "CombinedToolset", "FunctionToolset")
        for name in names:
            if not isinstance(getattr(toolsets, name, None), type):
                raise PatchError(f"{TOOLSETS}.{name}")
        art = getattr(approval, "ApprovalRequiredToolset", None)
        if not isinstance(art, type) or not callable(art.__dict__.get("call_tool")):
            raise PatchError(f"{APPROVAL}.ApprovalRequiredToolset.call_tool")
        return combined, base, wcap, tm, toolsets, art

    def _patch(self) -> None:
        hooks, exc = self._targets()  # everything checked before anything changes
        combined, base, wcap, tm, toolsets, art = self._more_targets()
        self._combined, self._abstract_cap, self._wrapper_cap = combined, base, wcap
        self._owners = {}
        self._wrapper_toolset = toolsets.WrapperToolset
        self._passthrough_toolsets = (toolsets.WrapperToolset, toolsets.CombinedToolset)
        self._leaf_classes = set()
        self._mcp_runner = None
        self._hooks, self._exc = hooks, exc
        self._abandon = _abandon_flag(hooks._utils)
        self._deny_types = (exc.ModelRetry, exc.ToolFailed, exc.SkipToolExecution, exc.CallDeferred)
        self._ask_type = exc.ApprovalRequired
        self._failed_type = exc.ToolFailed
        adapter = self

        def before_tool_execute(wrapped, instance, args, kwargs):
            return adapter._gate(wrapped, instance, args, kwargs)

        self.wrap(hooks.Hooks, EVENT, before_tool_execute)

        def root_before_tool_execute(wrapped, instance, args, kwargs):
            return adapter._root_gate(wrapped, instance, args, kwargs)

        self.wrap(combined.CombinedCapability, EVENT, root_before_tool_execute)

        def raw_execute(wrapped, instance, args, kwargs):
            return adapter._dispatching(wrapped, instance, args, kwargs)

        self.wrap(tm, "_raw_execute", raw_execute)
        self._approval_toolset = art
        if callable(tm.__dict__.get("_run_execute_hooks")):

            def run_execute_hooks(wrapped, instance, args, kwargs):
                return adapter._executing(wrapped, args, kwargs)

            self.wrap(tm, "_run_execute_hooks", run_execute_hooks)

        def approval_call_tool(wrapped, instance, args, kwargs):
            return adapter._approval(wrapped, instance, args, kwargs)

        self.wrap(art, "call_tool", approval_call_tool)
        self._leaf(toolsets.FunctionToolset)
        self._patch_hand_ons(hooks, combined, toolsets)
        self._runs_on, self._iters = True, set()
        if not self._runs_watch:  # imported after the trigger module: patched once it is
            self._runs_watch = True
            when_imported(ABSTRACT_AGENT, lambda _module: self._patch_runs())
        else:
            self._patch_runs()

        deferred = sys.modules.get(DEFERRED)
        if deferred is None:
            try:
                deferred = importlib.import_module(DEFERRED)
            except Exception:  # noqa: BLE001 - importing pydantic-ai's deferred-tools module can raise anything: then no approval handler is gated
                deferred = None
        results = getattr(deferred, "DeferredToolResults", None)
        approved, denied = getattr(deferred, "ToolApproved", None), getattr(deferred, "ToolDenied", None)
        if callable(hooks.Hooks.__dict__.get(APPROVER)) and isinstance(results, type) and isinstance(approved, type) and isinstance(denied, type):
            self._results_type = results
            self._approval_types = (approved, denied)

            def handle_deferred(wrapped, instance, args, kwargs):
                return adapter._approvers(wrapped, instance, args, kwargs)

            self.wrap(hooks.Hooks, APPROVER, handle_deferred)
            if callable(combined.CombinedCapability.__dict__.get(APPROVER)) and APPROVER in vars(base):

                def root_handle_deferred(wrapped, instance, args, kwargs):
                    return adapter._root_approvers(wrapped, instance, args, kwargs)

                self.wrap(combined.CombinedCapability, APPROVER, root_handle_deferred)

    def _patch_runs(self) -> None:
        """The run entry points (the tool boundary): ``AbstractAgent.run`` and its sync and
        streaming forms, and the ``iter`` of every agent class (``Agent.iter``, an
        ``@asynccontextmanager``: the run is its ``async with`` body), classes defined later
        too (``Agent`` is: its module is still being imported when this one is). A run
        whose agent has a gate denies its ungoverned calls."""
        base = getattr(sys.modules.get(ABSTRACT_AGENT), "AbstractAgent", None)
        if not self._runs_on or not isinstance(base, type) or base in self._iters:
            return
        self._iters.add(base)
        for attr in RUN_ENTRIES:
            if callable(base.__dict__.get(attr)):
                self.wrap_run(base, attr, gated=self._agent_gated)
        def own_iter(cls: type) -> None:
            if not self._runs_on or cls in self._iters:
                return
            self._iters.add(cls)
            for attr in AGENT_RUN_ENTRIES:
                value = vars(cls).get(attr)
                if callable(value) and not getattr(value, "__isabstractmethod__", False):
                    self.wrap_run(cls, attr, gated=self._agent_gated)

        self.each_subclass(base, own_iter)

    def _agent_gated(self, agent: Any) -> bool:
        """The agent has a gate registered: a before-tool gate or an approval handler of a
        capability, or an ``ApprovalRequiredToolset``. An agent that is not an ``Agent`` (a
        ``WrapperAgent``) is judged when its ``Agent``'s ``iter`` is entered."""
        root = getattr(agent, "_root_capability", None)
        if root is None:
            return False
        try:
            if self._cap_gated(root, 0):
                return True
            pending = list(getattr(agent, "_user_toolsets", None) or ())
            seen = 0
            while pending and seen < 256:
                toolset, seen = pending.pop(), seen + 1
                if isinstance(toolset, self._approval_toolset):
                    return True
                for attr in ("wrapped", "toolsets"):
                    inner = getattr(toolset, attr, None)
                    if inner is not None:
                        pending.extend(inner if isinstance(inner, (list, tuple)) else (inner,))
            return False
        except Exception:  # noqa: BLE001 - the agent's capabilities or toolsets (user objects) can raise anything: cannot tell, fail closed
            return True  # cannot tell: fail closed

    def _cap_gated(self, capability: Any, depth: int) -> bool:
        if depth > 16:
            return True
        cls = type(capability)
        if self._owner(cls) is self._combined.CombinedCapability:
            dispatch = getattr(capability, "_dispatch", None)
            return any(self._cap_gated(c, depth + 1) for c in (dispatch if dispatch is not None else capability.capabilities))
        if isinstance(capability, self._hooks.Hooks):
            return bool(capability._get(EVENT) or capability._get(APPROVER))
        if self._owner(cls) is self._wrapper_cap and getattr(capability, "wrapped", None) is not None:
            return self._cap_gated(capability.wrapped, depth + 1)
        approver = next((c for c in cls.__mro__ if APPROVER in vars(c)), object)
        return self._owner(cls) is not self._abstract_cap or approver is not self._abstract_cap

    def _patch_hand_ons(self, hooks: Any, combined: Any, toolsets: Any) -> None:
        """The wrappers a call is handed through hand it on within their deadline: each
        ``wrap_tool_execute`` link (a ``Hooks`` entry, a capability class's own method) and
        the ``call_tool`` of each of the user's ``WrapperToolset`` subclasses (those
        defined later too). A release without the link builders keeps its wrappers
        unwatched (as before)."""
        adapter = self
        if callable(vars(hooks).get(WRAP_LINK)):

            def make_wrap_link(wrapped, instance, args, kwargs):
                return adapter._hooks_link(wrapped, args, kwargs)

            self.wrap(hooks, WRAP_LINK, make_wrap_link)
        if callable(vars(combined).get(CAP_WRAP_LINK)):

            def make_tool_execute_wrap(wrapped, instance, args, kwargs):
                return adapter._capability_link(wrapped, args, kwargs)

            self.wrap(combined, CAP_WRAP_LINK, make_tool_execute_wrap)
        self._holders = set()
        self.each_subclass(toolsets.WrapperToolset, self._holder)

    def _unpatch(self) -> None:
        self._runs_on = False
        self.restore()
        self._leaf_classes = set()
        self._iters = set()
        self._holders = set()
        self._mcp_runner = None

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
            return ABSTAIN
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
        flag = self._abandon
        try:
            if flag is None:
                with hooks._utils.abandon_threads_on_cancel():
                    return await hooks._call_entry(entry, hook_name, *args, **kwargs)
            token = flag.set(True)  # what abandon_threads_on_cancel() does, without its generator's cost
            try:
                return await hooks._call_entry(entry, hook_name, *args, **kwargs)
            finally:
                flag.reset(token)
        except (self._ask_type,) + self._deny_types as exc:
            if hook_name != EVENT:
                raise
            return _Raised(exc)

    def _entry_id(self, entry: Any) -> str:
        return self.callable_id(getattr(entry, "func", entry))

    async def _call(self, entry: Any, hook_name: str, ctx: Any, validate: Any = None, **kwargs: Any) -> Outcome:
        """One hook entry under the guard (``_timed``)."""
        return _timed(await self.ahook_call(self._entry_id(entry), self._invoke, entry, hook_name, ctx, _validate=validate, **kwargs))

    # ------------------------------------------------------------ the gate

    async def _gate(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """A ``Hooks`` capability dispatched on its own (not from a ``CombinedCapability``,
        which flattens its hooks into its own round)."""
        ctx = args[0] if args else kwargs.get("ctx")
        call, tool_def, arguments = kwargs.get("call"), kwargs.get("tool_def"), kwargs.get("args")
        if len(args) > 1 or call is None or "args" not in kwargs:
            return await wrapped(*args, **kwargs)  # not the dispatcher's own calling shape
        try:
            entries = [(_HOOK, entry, ctx) for entry in self._hooks._filter_tool_entries(instance._get(EVENT), call=call)]
            # no hook for this tool: upstream's, unless a pydantic-ai hook is required
            # (then its absence denies): the core says which
            if not entries and not self.requires_own():
                return arguments
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException:  # noqa: BLE001 - SystemExit too: hooks that cannot be listed are None entries, which _judge denies
            entries = None
        decision, final, _ = await self._judge(entries, ctx, call, tool_def, arguments)
        self._grant(decision, ctx, call, final)
        return self._render(decision, ctx, final)

    def _grant(self, decision: Any, ctx: Any, call: Any, final: Any) -> None:
        """The tool boundary: the call may run once with ``final`` where ``decision`` lets it
        (an ask a person already approved included); ``None`` (no gate at all: upstream's)
        lets it too. A deny or an ask takes back the call id's grant."""
        if decision is None or (decision.action is Action.ASK and getattr(ctx, "tool_call_approved", False) is True):
            decision = _UNGATED
        tool, call_id = getattr(call, "tool_name", None), getattr(call, "tool_call_id", None)
        self.granted(decision, tool if isinstance(tool, str) else None, call_id if isinstance(call_id, str) and call_id else None, final)

    async def _judge(self, entries: Any, ctx: Any, call: Any, tool_def: Any, arguments: Any) -> tuple[Any, Any, Any]:
        """One decision on a tool call: ``entries`` (``(kind, gate, ctx)``, in dispatch
        order) run in rounds until none changes the arguments it was given, then the
        core decides on the final arguments (the plugin gates see them). ``None`` entries:
        the gates could not be listed (a deny). Returns the decision, the final arguments
        (a copy made right after the gates) and their picture then (objects opened:
        ``_opened``), what the toolset that runs the tool compares with."""
        tool = getattr(call, "tool_name", None)
        tool = tool if isinstance(tool, str) else None
        call_id = getattr(call, "tool_call_id", None)
        call_id = call_id if isinstance(call_id, str) and call_id else None
        state = {"args": arguments, "picture": CHANGED}
        try:
            if entries == [] and not self.must_decide():
                return None, arguments, CHANGED  # no gate at all for this call: upstream's, no audit
            if entries is None:
                raise PatchError("the before-tool gates of this call could not be listed")

            if len(entries) == 1:  # one gate: nothing can have judged a stale call (asettle's own rule)
                outcome = _timed(await self._one(entries[0], call, tool_def, arguments), entries[0])
                state["args"] = _after(outcome, arguments)
                outcomes = [outcome]
            else:

                def step(gate: tuple) -> Any:
                    async def run() -> Outcome:  # one gate, given the arguments as they are now
                        outcome = _timed(await self._one(gate, call, tool_def, state["args"]), gate)
                        state["args"] = _after(outcome, state["args"])
                        return outcome

                    return run

                # hook by hook: the hooks that judged the arguments before a later one
                # rewrote them judge again; a stamping hook settles; a deny (upstream stops
                # at a raise too) ends it. Compared by fingerprint: no code of the
                # arguments' objects runs.
                outcomes = await asettle([step(e) for e in entries], lambda: state["args"], self.hook_id(EVENT), _picture)
            # what the gates judged, copied now: a gate still holding the arguments (one
            # abandoned at its deadline, tolerated by the config) cannot write into what runs
            frozen = snapshot(state["args"]) if type(state["args"]) is dict else CHANGED
            if frozen is not CHANGED:
                state["args"] = frozen
            # and pictured now, objects opened: what the plugin gates are shown shares the
            # arguments' objects, and a change they make is not what the gates judged
            state["picture"] = snapshot(_opened(state["args"]))
            decision = await self.adecide(tool, outcomes, call_id=call_id, arguments=state["args"], later=self._later(call_id))
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: a bug here must not let the tool run unjudged; failed() says it and denies
            decision = self.failed(exc, tool, call_id)
        return decision, state["args"], state["picture"]

    def _one(self, gate: tuple, call: Any, tool_def: Any, args: Any) -> Any:
        """The guarded call of one entry ``(kind, gate, ctx)`` of ``_judge``: the guard's
        own awaitable, no coroutine around it (its outcome goes through ``_timed``)."""
        kind, entry, entry_ctx = gate
        if kind is _HOOK:
            return self.ahook_call(self._entry_id(entry), self._invoke, entry, EVENT, entry_ctx, call=call, tool_def=tool_def, args=args)
        return self._call_capability(entry, entry_ctx, call, tool_def, args)

    async def _executing(self, wrapped: Any, args: tuple, kwargs: dict) -> Any:
        """``ToolManager._run_execute_hooks``: the tool the call's gates judge, for
        ``_later``."""
        validated = args[0] if args else kwargs.get("validated")
        token = _CALLING.set(getattr(validated, "tool", None))
        try:
            return await wrapped(*args, **kwargs)
        finally:
            _CALLING.reset(token)

    def _later(self, call_id: Any = None) -> tuple:
        """The hook ids of the approval predicates on the way from the agent's toolset to
        the toolset that lists the tool being judged (``ApprovalRequiredToolset``s, asked
        after the before-tool gates): a ``required`` naming one is met by the first
        decision, and the predicate itself is judged when it is asked. Also the approval
        handlers that approved this call in this run (judged when they answered), and the
        ``process_tool_call`` of an ``MCPToolset`` there (a wrapper the call is handed to
        after the gates, its hand-on checked where the call reaches the server)."""
        tool = _CALLING.get()
        approved = _APPROVED_BY.get()
        found: list = list(approved.get(call_id, ())) if approved is not None and call_id is not None else []
        mcp = sys.modules.get(MCP)  # the MCPToolset class (its leaf is patched only once it runs a call)
        mcp_toolset = getattr(mcp, "MCPToolset", None) if mcp is not None else None
        try:
            depth = 0
            while tool is not None and depth < 32:
                for toolset in (getattr(tool, "source_toolset", None), getattr(tool, "toolset", None)):
                    inner = 0
                    while toolset is not None and inner < 32:
                        if isinstance(toolset, self._approval_toolset):
                            predicate = getattr(toolset, "approval_required_func", None)
                            if callable(predicate):
                                found.append(self.callable_id(predicate))
                        elif isinstance(mcp_toolset, type) and isinstance(toolset, mcp_toolset):
                            hook = self._process_tool_call(toolset)  # asked when the call is handed to it
                            if hook is not None:
                                found.append(hook)
                        toolset, inner = getattr(toolset, "wrapped", None), inner + 1
                tool, depth = getattr(tool, "source_tool", None), depth + 1
        except Exception:  # noqa: BLE001 - the tool's toolsets (user objects) can raise anything: no predicate found, so a required one fails closed
            return ()  # then a required predicate is missing here: fails closed
        return tuple(found)

    def _render(self, decision: Any, ctx: Any, final: Any) -> Any:
        """The Decision in pydantic-ai's shape: the final arguments, or a raise."""
        if decision is None:
            return final
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

    # ------------------------------------------------------------ every capability

    async def _invoke_capability(self, capability: Any, ctx: Any, **kwargs: Any) -> Any:
        """A capability class's own ``before_tool_execute``; control-flow exceptions come
        back as answers."""
        try:
            return await capability.before_tool_execute(ctx, **kwargs)
        except (self._ask_type,) + self._deny_types as exc:
            return _Raised(exc)

    def _call_capability(self, capability: Any, ctx: Any, call: Any, tool_def: Any, args: Any) -> Awaitable[Outcome]:
        return self.ahook_call(self._capability_id(type(capability)), self._invoke_capability, capability, ctx, call=call, tool_def=tool_def, args=args)

    def _entries(self, root: Any, ctx: Any, call: Any) -> list:
        """Every before-tool gate of ``root`` (a ``CombinedCapability``) in upstream's dispatch
        order, flattened: a ``Hooks`` capability's registered hooks (with its own tool
        filter), a capability class that overrides ``before_tool_execute`` (one gate), the
        capabilities inside a nested ``CombinedCapability`` or a plain ``WrapperCapability``.
        A capability that does not override it only returns the arguments: not a gate."""
        entries: list = []
        self._flatten(root, ctx, call, entries, 0)
        return entries

    def _flatten(self, root: Any, ctx: Any, call: Any, entries: list, depth: int) -> None:
        if depth > 16:
            raise PatchError("capabilities nested too deep")
        combined = self._combined
        dispatch = getattr(root, "_dispatch", None)
        if dispatch is None:
            dispatch = root.capabilities
        for capability in dispatch:
            cap_ctx = combined._ctx_for_active_cap(capability, ctx)
            if cap_ctx is None:
                continue  # upstream skips a capability whose loading is deferred and not active
            self._flatten_one(capability, cap_ctx, call, entries, depth)

    def _capability_id(self, cls: type) -> str:
        """``pydantic-ai:<module>.<class qualname>.before_tool_execute`` of the capability's
        own class (a subclass that inherits the method is named by itself)."""
        found = self._cap_ids.get(cls)
        if found is None:
            found = self.hook_id(f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}.{EVENT}")
            if len(self._cap_ids) > 1024:
                self._cap_ids.clear()
            self._cap_ids[cls] = found
        return found

    def _owner(self, cls: type) -> Any:
        """The class whose ``before_tool_execute`` a capability of class ``cls`` runs."""
        owner = self._owners.get(cls)
        if owner is None:
            owner = next((c for c in cls.__mro__ if EVENT in vars(c)), object)
            if len(self._owners) > 1024:
                self._owners.clear()
            self._owners[cls] = owner
        return owner

    def _flatten_one(self, capability: Any, ctx: Any, call: Any, entries: list, depth: int) -> None:
        owner = self._owner(type(capability))
        if owner is self._combined.CombinedCapability:
            self._flatten(capability, ctx, call, entries, depth + 1)
        elif owner is self._hooks.Hooks:
            for entry in self._hooks._filter_tool_entries(capability._get(EVENT), call=call):
                entries.append((_HOOK, entry, ctx))
        elif owner is self._abstract_cap:
            return  # the default only returns the arguments: not a gate
        elif owner is self._wrapper_cap and getattr(capability, "wrapped", None) is not None:
            self._flatten_one(capability.wrapped, ctx, call, entries, depth + 1)
        else:
            entries.append((_CAPABILITY, capability, ctx))

    async def _root_gate(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """The root capability's ``before_tool_execute``: every gate of every capability in
        one round, re-run while any gate rewrites, the plugin gates consulted for every
        call (an agent with no gate of its own included)."""
        ctx = args[0] if args else kwargs.get("ctx")
        call, tool_def, arguments = kwargs.get("call"), kwargs.get("tool_def"), kwargs.get("args")
        if len(args) > 1 or call is None or "args" not in kwargs:
            return await wrapped(*args, **kwargs)  # not the dispatcher's own calling shape
        try:
            entries = self._entries(instance, ctx, call)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException:  # noqa: BLE001 - SystemExit too: gates that cannot be listed are None entries, which _judge denies
            entries = None
        if entries != []:
            # a gate is in force in this run (one given to the run itself, not the agent,
            # too): its ungoverned calls are denied from now on
            self.mark_gated()
        decision, final, picture = await self._judge(entries, ctx, call, tool_def, arguments)
        self._grant(decision, ctx, call, final)
        final = self._render(decision, ctx, final)
        _JUDGED.set(_Judged(call, picture, instance, tool_def))
        return final

    # ------------------------------------------------------------ the toolsets

    async def _dispatching(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """``ToolManager._raw_execute``: the call goes into the toolsets. What the gates
        judged travels with it to the toolset that runs it (``_leaf``)."""
        validated = args[0] if args else kwargs.get("validated")
        tool = getattr(validated, "tool", None)
        call = getattr(validated, "call", None)
        if tool is None or call is None or getattr(getattr(tool, "tool_def", None), "kind", None) == "output":
            return await wrapped(*args, **kwargs)  # output tools are the run's result, not gated
        judged = _JUDGED.get()
        if judged is not None and judged.call is not call:
            judged = None
        listed = self._observe(tool)
        root = getattr(instance, "root_capability", None)
        root = root if root is not None and self._owner(type(root)) is self._combined.CombinedCapability else None
        token = _DISPATCH.set(_Dispatch(call, getattr(validated, "ctx", None), judged, listed, root))
        try:
            return await wrapped(*args, **kwargs)
        finally:
            _DISPATCH.reset(token)

    def _observe(self, tool: Any) -> Any:
        """The toolset that lists ``tool`` runs it: its ``call_tool`` checks the arguments
        (patched once per class). Returns the tool as that toolset listed it."""
        seen = 0
        while getattr(tool, "source_tool", None) is not None and seen < 32:
            tool, seen = tool.source_tool, seen + 1
        leaf = getattr(tool, "toolset", None)
        cls = type(leaf)
        if leaf is None or isinstance(leaf, self._passthrough_toolsets) or cls in self._leaf_classes:
            return tool
        if any(c in self._leaf_classes for c in cls.__mro__) and "call_tool" not in vars(cls):
            self._leaf_classes.add(cls)
            return tool
        try:
            self._leaf(cls)
        except Exception:  # noqa: BLE001 - a toolset class that cannot be patched: that leaf cannot check (documented), the gates still judge
            pass  # then the leaf cannot check: documented
        return tool

    @staticmethod
    def _swapped(listed: Any, name: Any, tool: Any) -> bool:
        """The toolset is asked to run another tool than the one the model called: another
        function (a function toolset), or another name (any other toolset). A rename by a
        wrapper (``RenamedToolset``, ``PrefixedToolset``) keeps the function."""
        if listed is None:
            return False
        try:
            listed_func = getattr(listed, "call_func", None)
            if listed_func is not None:
                return not (getattr(tool, "call_func", None) == listed_func)
            return name != getattr(getattr(listed, "tool_def", None), "name", name)
        except Exception:  # noqa: BLE001 - a hostile __eq__ or attribute on the tool: read as swapped, so the tool that runs is judged
            return True

    def _leaf(self, cls: type) -> None:
        adapter = self

        def call_tool(wrapped, instance, args, kwargs):
            return adapter._at_leaf(wrapped, instance, args, kwargs)

        self.wrap(cls, "call_tool", call_tool)
        self._leaf_classes.add(cls)
        self._mcp(cls)  # after: a release without the call to the server still checks at call_tool

    def _mcp(self, cls: type) -> None:
        """A leaf that is an ``MCPToolset`` (of a release that has one): the call that
        reaches its server is checked there too (``_mcp_runs``), once for the class."""
        mcp = sys.modules.get(MCP)
        base = getattr(mcp, "MCPToolset", None) if mcp is not None else None
        if not isinstance(base, type) or not issubclass(cls, base) or self._mcp_runner is base:
            return
        runner = next((name for name in MCP_RUNNERS if callable(vars(base).get(name))), None)
        if runner is None:
            raise PatchError("MCPToolset has no call to its server where expected")
        adapter = self

        def runs(wrapped, instance, args, kwargs):
            return adapter._mcp_runs(wrapped, instance, args, kwargs)

        self.wrap(base, runner, runs)
        self._mcp_runner = base

    async def _at_leaf(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """The toolset that runs the tool: the arguments that reach it are the ones the
        gates judged, or they are judged now (every gate, the plugin gates) and run only
        if that allows them. A call no gate judged (a tool manager with no root
        capability) is judged here."""
        dispatch = _DISPATCH.get()
        if dispatch is None:  # not a tool manager's dispatch: the tool boundary
            return await self._unseen(wrapped, instance, args, kwargs)
        if dispatch.mcp is None and self._mcp_runner is not None and isinstance(instance, self._mcp_runner):
            hook = self._process_tool_call(instance)
            if hook is not None:  # the user's process_tool_call holds the call: checked where it reaches the server
                return await self._mcp_hold(wrapped, instance, args, kwargs, dispatch, hook)
        held = dispatch.held
        if held is not None:  # the user's toolset wrapper handed the call on: in time?
            await self._late(dispatch, held)
        bound = _call_tool_args(args, kwargs)
        if bound is None:  # a call shape that cannot be judged
            raise self._failed_type(failure_reason(self.hook_id(EVENT), Failure.INVALID))
        name, tool_args, ctx, tool = bound
        judged = dispatch.judged
        swapped = self._swapped(dispatch.listed, name, tool)
        if judged is None or swapped or not same(judged.snapshot, _opened(tool_args)):
            call = dispatch.call
            tool_def = judged.tool_def if judged is not None and not swapped else getattr(tool, "tool_def", None)
            try:
                if swapped:  # the gates judge the tool that runs, under its name
                    runs = getattr(tool_def, "name", name)
                    call = dataclasses.replace(call, tool_name=runs if isinstance(runs, str) else name)
                # a call whose gates' judgement did not reach here (handed on from a context of
                # its own, 2.42.0's wrap_tool_execute handler run from a thread): every gate of
                # the tool manager's root capability judges it
                root = judged.root if judged is not None else dispatch.root
                entries = self._entries(root, ctx, call) if root is not None else []
            except (KeyboardInterrupt, asyncio.CancelledError):
                raise
            except BaseException:  # noqa: BLE001 - SystemExit too: gates that cannot be listed are None entries, which _judge denies
                entries = None
            judge_ctx = _unapproved(ctx, dispatch)
            decision, final, _ = await self._judge(entries, judge_ctx, call, tool_def, tool_args)
            self._grant(decision, judge_ctx, dispatch.call, final)
            tool_args = self._render(decision, judge_ctx, final)
        for predicate, allowed in dispatch.approvals:
            if not same(allowed, _opened(tool_args)):  # asked about other arguments: ask again
                await self._ask_predicate(predicate, dispatch, name, ctx, tool, tool_args)
        # one execution per decision: a wrapper that runs the judged call twice is ungoverned
        call_id = getattr(dispatch.call, "tool_call_id", None)
        denied, entered = self.at_boundary(name if isinstance(name, str) else None, call_id if isinstance(call_id, str) and call_id else None,
                                           tool_args, where=f"{type(instance).__qualname__}.call_tool")
        if denied is not None:
            raise Ungoverned(denied)
        token = _DISPATCH.set(None)  # what the tool itself dispatches is not the tool manager's
        failed = True
        try:
            result = await wrapped(name, tool_args, ctx, tool)
            failed = False
            return result
        finally:
            _DISPATCH.reset(token)
            self.leave(entered, failed)
            if held is not None:  # back with the wrapper: its clock starts again
                dispatch.held = (held[0], perf_counter())

    # ------------------------------------------------------------ MCPToolset.process_tool_call

    def _process_tool_call(self, toolset: Any) -> Any:
        """The hook id of an ``MCPToolset``'s ``process_tool_call``, or None without one."""
        try:
            hook = getattr(toolset, "process_tool_call", None)  # as upstream reads it
        except Exception:  # noqa: BLE001 - a hostile toolset: read as holding the call, so what reaches the server is judged
            return self.hook_id("pydantic_ai.mcp.MCPToolset.process_tool_call")
        if hook is None:
            return None
        return self.callable_id(hook)

    async def _mcp_hold(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict, dispatch: Any, hook: str) -> Any:
        """``MCPToolset.call_tool`` with a ``process_tool_call``: upstream calls the hook
        with the call to the server (``call_tool_func``), which it may hand other arguments
        or another tool's name, or not call at all. The hook is a wrapper handing the call
        on (as a user's ``WrapperToolset.call_tool``: ``_holding``, the deadline of a gate
        for handing on); what reaches the server is checked there (``_mcp_runs``)."""
        bound = _call_tool_args(args, kwargs)
        if bound is None:  # a call shape that cannot be judged
            raise self._failed_type(failure_reason(self.hook_id(EVENT), Failure.INVALID))
        dispatch.mcp = (instance, bound[2], bound[3])
        try:
            return await self._holding(wrapped, args, kwargs, hook)
        finally:
            dispatch.mcp = None

    async def _mcp_runs(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """The call an ``MCPToolset`` makes to its server. Handed on by its
        ``process_tool_call`` (``_mcp_hold``): the toolset that runs the tool
        (``_at_leaf``), with the name and arguments that reach the server, another tool's
        name judged as that tool. Any other call (no ``process_tool_call``: checked at
        ``call_tool``; application code) goes on as upstream."""
        dispatch = _DISPATCH.get()
        held = dispatch.mcp if dispatch is not None else None
        if held is None or held[0] is not instance:
            return await wrapped(*args, **kwargs)
        toolset, ctx, listed = held
        name = args[0] if args else kwargs.get("name")
        tool_args = args[1] if len(args) > 1 else kwargs.get("args")
        rest = {k: v for k, v in kwargs.items() if k not in ("name", "args")}
        if len(args) > 2:  # not the shape of this release's call: judged as it is, run as it was made
            return await self._at_leaf(lambda *_: wrapped(*args, **kwargs), instance, (name, tool_args, ctx, listed), {})
        tool = listed if name == getattr(getattr(listed, "tool_def", None), "name", None) else await self._mcp_tool(toolset, ctx, listed, name)

        def run(name: Any, tool_args: Any, ctx: Any, tool: Any) -> Any:
            return wrapped(name, tool_args, **rest)

        return await self._at_leaf(run, instance, (name, tool_args, ctx, tool), {})

    async def _mcp_tool(self, toolset: Any, ctx: Any, listed: Any, name: Any) -> Any:
        """The tool ``toolset`` lists under ``name`` (another tool than the model called),
        for its gates; one named so with the listed tool's other fields where the server
        lists none (an unknown tool: the server answers its error)."""
        try:
            tools = await toolset.get_tools(ctx)  # the toolset's cached list, as upstream lists it
            found = tools.get(name) if isinstance(name, str) else None
            if found is not None:
                return found
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except Exception:  # noqa: BLE001 - the listing failed: the tool is judged under its name with what is known
            pass
        return dataclasses.replace(listed, tool_def=dataclasses.replace(listed.tool_def, name=name, description=None))

    async def _unseen(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """A toolset's ``call_tool`` no tool manager dispatched (a tool body, a custom
        executor, application code): outside any agent run it is application code and runs;
        inside one it is ungoverned unless it is part of the execution under way (the
        tool's own toolset one level further in)."""
        bound = _call_tool_args(args, kwargs)
        if bound is None:
            name, call_id, tool_args = None, None, (args, kwargs)
        else:
            name, tool_args, ctx, _tool = bound
            call_id = getattr(ctx, "tool_call_id", None)
            # a user's wrapper holding a call of a run handed it on from elsewhere (not a
            # tool's own code under way here: that stays the boundary's)
            holder = self._holder_of(ctx) if not self.executing() else None
            if holder is not None:
                token = _DISPATCH.set(holder[1])  # checked as the toolset that runs that call: in time, as judged
                try:
                    return await self._at_leaf(wrapped, instance, args, kwargs)
                finally:
                    _DISPATCH.reset(token)
        denied, entered = self.at_boundary(name if isinstance(name, str) else None, call_id if isinstance(call_id, str) and call_id else None,
                                           tool_args, where=f"{type(instance).__qualname__}.call_tool")
        if denied is not None:
            raise Ungoverned(denied)
        failed = True
        try:
            result = await wrapped(*args, **kwargs)
            failed = False
            return result
        finally:
            self.leave(entered, failed)

    def _holder_of(self, ctx: Any) -> Any:
        """``(run context, dispatch)`` of the call a user's toolset wrapper holds that ``ctx``
        belongs to, for a ``call_tool`` that reaches a toolset outside the tool manager's
        context (the wrapper handed it on from a thread or a context of its own): the very
        run context, else one of the same run and call id (a copy), else the latest call
        of the same run held (a context made up for another call id). None outside."""
        if not self._held_ctx:
            return None
        holder = self._held_ctx.get(id(ctx))
        if holder is not None and holder[0] is ctx:
            return holder
        try:
            run_id, call_id = getattr(ctx, "run_id", None), getattr(ctx, "tool_call_id", None)
            held = self._held_runs.get(run_id) if isinstance(run_id, str) else None
            if not held:
                return None
            for entry in reversed(held):
                if getattr(entry[1].call, "tool_call_id", None) == call_id:
                    return entry
            return held[-1]
        except Exception:  # noqa: BLE001 - a made-up run context can raise anything: not known as a held call
            return None

    # ------------------------------------------------------------ handing the call on

    async def _late(self, dispatch: Any, held: tuple) -> None:
        """``_on_time`` for the user's toolset wrapper holding ``dispatch``'s call; its deny
        is noted on the dispatch (the wrapper may catch it: the deny still stands)."""
        try:
            await self._on_time(held[0], held[1], dispatch.call)
        except Exception as exc:  # its deny (ToolFailed); a cancellation is not noted
            dispatch.late = (held[0], exc)
            raise

    async def _on_time(self, hook: str, since: float, call: Any) -> None:
        """A wrapper handed on the call it was handed at ``since``: later than ``hook``'s
        deadline is a late answer, a ``timeout`` (audited), and the call is denied here
        (``ToolFailed``, the tool does not run). A tolerated failure hands it on."""
        now = perf_counter()
        if not past_deadline(hook, since, now):
            return
        held = now - since
        tool, call_id = getattr(call, "tool_name", None), getattr(call, "tool_call_id", None)
        tool = tool if isinstance(tool, str) else None
        call_id = call_id if isinstance(call_id, str) and call_id else None
        outcome = Outcome(hook=hook, failure=Failure.TIMEOUT, elapsed_ms=held * 1000.0)
        decision = await self.adecide_stage(tool, [outcome], call_id=call_id)
        if decision.denied:
            self.granted(decision, tool, call_id, None)  # a grant of the call goes
            raise self._failed_type(decision.deny_text)

    def _watched(self, build: Any, bound: dict, handler: str, hook: str, call: Any) -> Any:
        """One link of a ``wrap_tool_execute`` chain, built by upstream's ``build`` with an
        inner handler that checks the link handed the call on in time; the link's clock
        starts when it is called (and again after each hand-on returned)."""
        held = [0.0]
        late: list = []  # the deny of a late hand-on: it stands even if the link catches it
        inner = bound[handler]
        adapter = self

        async def handed_on(*args: Any, **kwargs: Any) -> Any:
            try:
                await adapter._on_time(hook, held[0], call)
            except Exception as exc:  # its deny (ToolFailed); a cancellation is not noted
                late.append(exc)
                raise
            try:
                return await inner(*args, **kwargs)
            finally:
                held[0] = perf_counter()

        link = build(**dict(bound, **{handler: handed_on}))

        async def timed(*args: Any, **kwargs: Any) -> Any:
            held[0] = perf_counter()
            result = await link(*args, **kwargs)
            if late:  # the link caught its own late hand-on's deny: the model is told the audited deny
                raise late[-1]
            return result

        return timed

    def _hooks_link(self, build: Any, args: tuple, kwargs: dict) -> Any:
        """``hooks._make_wrap_link(entry, hook_name, ctx, static_kwargs, inner_handler,
        handler_arg)``: a ``wrap_tool_execute`` entry's link is watched, the hook id its
        function's (as a ``before_tool_execute`` hook's)."""
        if (args[1] if len(args) > 1 else kwargs.get("hook_name")) != WRAP:
            return build(*args, **kwargs)  # another hook's chain (wrap_model_request, ...)
        bound = dict(zip(_WRAP_LINK_PARAMS, args), **kwargs)
        static = bound.get("static_kwargs")
        if len(bound) != len(_WRAP_LINK_PARAMS) or type(static) is not dict:
            return build(*args, **kwargs)
        return self._watched(build, bound, "inner_handler", self._entry_id(bound["entry"]), static.get("call"))

    def _capability_link(self, build: Any, args: tuple, kwargs: dict) -> Any:
        """``combined._make_tool_execute_wrap(cap, ctx, call, tool_def, inner)``: the link of
        a capability whose own ``wrap_tool_execute`` is the user's is watched."""
        capability = args[0] if args else kwargs.get("cap")
        hook = self._wrap_ids.get(type(capability))  # known for every class but a plain WrapperCapability
        if hook is None:
            hook = self._wrap_id(capability)
        if not hook:
            return build(*args, **kwargs)
        bound = dict(zip(_CAP_WRAP_PARAMS, args), **kwargs)
        if len(bound) != len(_CAP_WRAP_PARAMS):
            return build(*args, **kwargs)
        return self._watched(build, bound, "inner", hook, bound.get("call"))

    def _wrap_id(self, capability: Any) -> str:
        """The hook id of a capability's own ``wrap_tool_execute``:
        ``pydantic-ai:<module>.<class qualname>.wrap_tool_execute``; "" for pydantic-ai's own
        (a ``Hooks`` capability's entries are links of their own, a nested
        ``CombinedCapability``'s capabilities too; a plain ``WrapperCapability`` is the
        capability it wraps)."""
        for _ in range(16):
            cls = type(capability)
            known = self._wrap_ids.get(cls)
            if known is not None:
                return known
            owner = next((c for c in cls.__mro__ if WRAP in vars(c)), object)
            if owner is self._wrapper_cap and getattr(capability, "wrapped", None) is not None:
                capability = capability.wrapped
                continue
            module = getattr(owner, "__module__", None)
            own = not (type(module) is str and (module == "pydantic_ai" or module.startswith("pydantic_ai.")))
            found = self.hook_id(f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}.{WRAP}") if own else ""
            if len(self._wrap_ids) > 1024:
                self._wrap_ids.clear()
            self._wrap_ids[cls] = found
            return found
        return ""

    def _holder(self, cls: type) -> None:
        """A user's ``WrapperToolset`` subclass with its own ``call_tool``: it hands the call
        on (to the toolset it wraps, through ``super()`` or ``self.wrapped``) within its
        deadline, checked where the call arrives next (another such wrapper, or the toolset
        that runs the tool). pydantic-ai's own wrappers are not watched."""
        value = vars(cls).get("call_tool")
        module = getattr(cls, "__module__", None)
        if cls in self._holders or value is None or not callable(value) or getattr(value, "__isabstractmethod__", False):
            return
        if type(module) is not str or module == "pydantic_ai" or module.startswith("pydantic_ai."):
            return
        hook = self.hook_id(f"{module}.{cls.__qualname__}.call_tool")
        adapter = self

        def call_tool(wrapped, instance, args, kwargs):
            return adapter._holding(wrapped, args, kwargs, hook)

        self.wrap(cls, "call_tool", call_tool)
        self._holders.add(cls)

    async def _holding(self, wrapped: Any, args: tuple, kwargs: dict, hook: str) -> Any:
        dispatch = _DISPATCH.get()
        if dispatch is None:  # not a tool manager's dispatch (the boundary judges it at the leaf)
            return await wrapped(*args, **kwargs)
        outer = dispatch.held
        if outer is not None:  # the wrapper outside this one handed the call on: in time?
            await self._late(dispatch, outer)
        dispatch.held = (hook, perf_counter())
        bound = _call_tool_args(args, kwargs)
        ctx = bound[2] if bound is not None else None
        # a hand-on from a context of its own (a thread) is known by the run context it carries
        added = ctx is not None and id(ctx) not in self._held_ctx
        run_id = getattr(ctx, "run_id", None) if added else None
        if added:
            self._held_ctx[id(ctx)] = (ctx, dispatch)
            if isinstance(run_id, str):
                self._held_runs.setdefault(run_id, []).append(self._held_ctx[id(ctx)])
        try:
            result = await wrapped(*args, **kwargs)
            late = dispatch.late
            if late is not None and late[0] == hook:  # it caught its own late hand-on's deny: that deny stands
                raise late[1]
            return result
        finally:  # the call is back with the wrapper outside: its clock starts again
            dispatch.held = None if outer is None else (outer[0], perf_counter())
            if added:
                entry = self._held_ctx.pop(id(ctx), None)
                held = self._held_runs.get(run_id) if isinstance(run_id, str) else None
                if held is not None:
                    for i, kept in enumerate(held):
                        if kept is entry:  # by identity: no run context's __eq__ runs
                            del held[i]
                            break
                    if not held:
                        self._held_runs.pop(run_id, None)

    # ------------------------------------------------------------ ApprovalRequiredToolset

    def _predicate_verdict(self, native: Any) -> Verdict:
        """An approval predicate answers a bool: ``True`` asks a person, ``False`` lets the
        call run without asking. Anything else is invalid."""
        return exactly(native, _PREDICATE_ANSWERS)

    async def _approval(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """``ApprovalRequiredToolset.call_tool``: its ``approval_required_func`` decides
        whether a person is asked. It runs under the guard (deadline; a raise, junk or a
        timeout denies); ``True`` asks, ``False`` goes on to the wrapped toolset. An
        approved call does not consult it (upstream neither). A ``False`` answer holds for
        the arguments it was given: the toolset that runs the tool asks it again when a
        wrapper inside changed them."""
        bound = _call_tool_args(args, kwargs)
        if bound is None:
            return await wrapped(*args, **kwargs)  # upstream's own error for a wrong call
        name, tool_args, ctx, tool = bound
        self.mark_gated()  # an approval gate is in force in this run (one a toolset function builds per run too)
        dispatch = _DISPATCH.get()
        if getattr(ctx, "tool_call_approved", False) and (dispatch is None or getattr(dispatch.ctx, "tool_call_approved", False) is True):
            return await wrapped(*args, **kwargs)  # a call a person approved (as the tool manager dispatched it)
        # else unapproved, or an approval made up on the way (a wrapper's run context): asked
        predicate = instance.approval_required_func
        held, asked = (dispatch.held if dispatch is not None else None), perf_counter()
        await self._ask_predicate(predicate, dispatch, name, ctx, tool, tool_args)
        if held is not None and dispatch.held is held:  # the predicate's time (its own deadline) is not the wrapper's
            dispatch.held = (held[0], held[1] + (perf_counter() - asked))
        if dispatch is not None:
            dispatch.approvals = dispatch.approvals + ((predicate, snapshot(_opened(tool_args))),)
        return await self._wrapper_toolset.call_tool(instance, name, tool_args, ctx, tool)

    async def _ask_predicate(self, predicate: Any, dispatch: Any, name: Any, ctx: Any, tool: Any, tool_args: Any) -> None:
        """One approval predicate's answer: returns when the call may run without asking,
        raises ``ApprovalRequired`` (ask) or ``ToolFailed`` (deny)."""
        call = dispatch.call if dispatch is not None else None
        tool_name = getattr(call, "tool_name", name)
        tool_name = tool_name if isinstance(tool_name, str) else None
        call_id = getattr(call, "tool_call_id", None)
        call_id = call_id if isinstance(call_id, str) and call_id else None
        try:
            asked = (predicate,) if is_async(predicate) else (on_loop, asyncio.get_running_loop(), predicate)
            # upstream calls it inline on the loop: a sync one is lent the loop on the worker
            outcome = await self.ahook_call(
                self.callable_id(predicate), *asked, ctx, getattr(tool, "tool_def", None), tool_args,
                _validate=self._predicate_verdict,
            )
            decision = await self.adecide_stage(tool_name, [outcome], call_id=call_id)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: an approval predicate that cannot be judged is the call's deny, audited
            decision = self.failed(exc, tool_name, call_id, hook=self.hook_id("approval_required_func"))
        if decision.action is not Action.ALLOW:
            self.granted(decision, tool_name, call_id, tool_args)  # takes the call's grant back
        if decision.action is Action.ASK:
            raise self._ask_type()
        if decision.action is Action.DENY:
            raise self._failed_type(decision.deny_text)

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
                result = await self._denied(remaining, outcome)
            else:
                result = outcome.verdict.data  # type: ignore[union-attr]
                self._approved(outcome.hook, result)
            if result is None or not (result.approvals or result.calls):
                continue
            any_handled = True
            accumulated.update(result)
            remaining_or_none = remaining.remaining(result)  # type: ignore[union-attr]
            if remaining_or_none is None:
                break
            remaining = remaining_or_none
        return accumulated if any_handled else None

    async def _root_approvers(self, wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
        """``CombinedCapability.handle_deferred_tool_calls``, upstream's loop, with each
        capability class's own handler (``HandleDeferredToolCalls(handler=...)`` or a
        subclass's ``handle_deferred_tool_calls``) under the guard: one that raises, hangs or
        answers junk has its answer dropped (audited), so its calls still require approval.
        ``Hooks`` handlers are guarded one by one (``_approvers``)."""
        ctx = args[0] if args else kwargs.get("ctx")
        if len(args) > 1 or "requests" not in kwargs:
            return await wrapped(*args, **kwargs)
        dispatch = getattr(instance, "_dispatch", None)
        if dispatch is None:
            dispatch = instance.capabilities
        accumulated = self._results_type()
        remaining = kwargs["requests"]
        any_handled = False
        for capability in dispatch:
            cap_ctx = self._combined._ctx_for_active_cap(capability, ctx)
            if cap_ctx is None:
                continue
            result = await self._approve_one(capability, cap_ctx, remaining, 0)
            if result is None or not (result.approvals or result.calls):
                continue
            any_handled = True
            accumulated.update(result)
            remaining_or_none = remaining.remaining(result)
            if remaining_or_none is None:
                break
            remaining = remaining_or_none
        return accumulated if any_handled else None

    async def _approve_one(self, capability: Any, ctx: Any, requests: Any, depth: int) -> Any:
        owner = next((c for c in type(capability).__mro__ if APPROVER in vars(c)), object)
        if owner is self._abstract_cap:
            return None  # the default handles nothing
        if owner is self._hooks.Hooks or owner is self._combined.CombinedCapability:
            return await capability.handle_deferred_tool_calls(ctx, requests=requests)  # guarded there
        if owner is self._wrapper_cap and getattr(capability, "wrapped", None) is not None and depth < 16:
            return await self._approve_one(capability.wrapped, ctx, requests, depth + 1)
        handler = getattr(capability, "handler", None)
        if callable(handler) and getattr(owner, "__module__", "").startswith("pydantic_ai."):
            hook = self.callable_id(handler)  # a built-in capability running the user's handler
        else:
            hook = self.hook_id(f"{type(capability).__module__}.{type(capability).__qualname__}.{APPROVER}")
        # an approval handler may wait for a person (a UI, a terminal prompt): no default
        # deadline, as upstream; the user bounds it with [hooks."<id>"] timeout
        outcome = await self.ahook_call(hook, capability.handle_deferred_tool_calls, ctx, requests=requests,
                                        _validate=self._results_verdict, _interactive=True)
        if outcome.failure is not None:
            return await self._denied(requests, outcome)
        self._approved(hook, outcome.verdict.data)  # type: ignore[union-attr]
        return outcome.verdict.data  # type: ignore[union-attr]

    def _approved(self, hook: str, result: Any) -> None:
        """The calls ``result`` approves were judged by the handler ``hook`` (for ``_later``)."""
        if result is None:
            return
        try:
            approved = [k for k, v in result.approvals.items() if v is True or isinstance(v, self._approval_types[0])]
            if not approved:
                return
            seen = _APPROVED_BY.get()
            if seen is None or len(seen) > 1024:
                seen = {}
                _APPROVED_BY.set(seen)
            for call_id in approved:
                seen[call_id] = seen.get(call_id, ()) + (hook,)
        except Exception:  # noqa: BLE001 - the deferred results (user objects) can raise anything: nothing recorded, a required handler fails closed
            return  # then a required handler is missing at the call: fails closed

    async def _denied(self, requests: Any, outcome: Outcome) -> Any:
        """An approval handler failed (raised, hung, answered junk): its answer is dropped
        and each call it was asked to approve is decided on that failure, one decision per
        call (audited with the call's tool and id). A deny is ``ToolDenied`` with the
        decision's reason, so the model is told the hook id and category and the run goes
        on; a tolerated failure (``on_error = "allow"``, an observer) leaves the call
        awaiting approval, as the handler had not answered. External calls it was asked
        about stay with the caller."""
        denied = self._approval_types[1]
        approvals: dict = {}
        calls = list(getattr(requests, "approvals", None) or ())
        if not calls:
            await self.adecide_stage(None, [outcome])
            return None
        for call in calls:
            tool, call_id = getattr(call, "tool_name", None), getattr(call, "tool_call_id", None)
            tool = tool if isinstance(tool, str) else None
            decision = await self.adecide_stage(tool, [outcome], call_id=call_id if isinstance(call_id, str) and call_id else None)
            if decision.action is Action.DENY and isinstance(call_id, str):
                approvals[call_id] = denied(message=decision.deny_text)
        return self._results_type(approvals=approvals) if approvals else None

    # ------------------------------------------------------------ doctor

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only ``before_tool_execute`` hook of a real agent run
        (``FunctionModel`` calling one tool): True when the tool did not run. A gate
        answering ``None`` lets the arguments through unchanged."""
        from pydantic_ai.capabilities import Hooks
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel

        from pydantic_ai import Agent

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
            except Exception:  # noqa: BLE001 - the probe's agent run ends however it ends: the check is only whether the tool ran
                pass

        self.run_probe(run)
        return not ran


__all__ = ["PydanticAIAdapter"]


def _timed(outcome: Outcome, gate: tuple = (None,)) -> Outcome:
    """A hook entry's own ``timeout=`` expiring (upstream raises ``HookTimeoutError``) is a
    ``timeout``, like failsecure's own deadline. ``gate``: the ``_judge`` entry it came
    from; a capability class's outcome is taken as it is."""
    if outcome.failure is Failure.RAISED and outcome.exception_type == "HookTimeoutError" and gate[0] is not _CAPABILITY:
        return Outcome(hook=outcome.hook, failure=Failure.TIMEOUT, exception_type=outcome.exception_type, elapsed_ms=outcome.elapsed_ms)
    return outcome


def _unapproved(ctx: Any, dispatch: Any) -> Any:
    """``ctx`` as a toolset is handed it, unless it says the call was approved where the
    tool manager dispatched it unapproved (an approval made up on the way, by a
    wrapper's run context): then a copy that says it was not."""
    try:
        if getattr(ctx, "tool_call_approved", False) is True and getattr(dispatch.ctx, "tool_call_approved", False) is not True:
            return dataclasses.replace(ctx, tool_call_approved=False)
    except Exception:  # noqa: BLE001 - a made-up run context that cannot be copied: the tool manager's own
        return dispatch.ctx
    return ctx


def _after(outcome: Outcome, args: Any) -> Any:
    """The arguments after one gate: an allow's answer is the arguments it returns; a
    failure (an observer's, a tolerated one), a deny or an ask leaves them."""
    if outcome.failure is None and outcome.action is Action.ALLOW:
        return outcome.verdict.data  # type: ignore[union-attr]
    if outcome.failure is Failure.TIMEOUT and type(args) is dict:
        # the gate may still be running (a sync hook abandoned in its worker thread) and
        # holds these arguments: the gates after it are handed a copy it cannot write into
        frozen = snapshot(args)
        if frozen is not CHANGED:
            return frozen
    return args


def _abandon_flag(utils: Any) -> Any:
    """The context variable ``utils.abandon_threads_on_cancel()`` sets to True for the
    calls inside it, where it is exactly that (checked by entering it once); None
    otherwise (then the context manager itself is used on every call)."""
    flag = getattr(utils, "_abandon_on_cancel", None)
    if type(flag) is not contextvars.ContextVar:
        return None
    try:
        before = flag.get(None)
        with utils.abandon_threads_on_cancel():
            inside = flag.get(None)
        return flag if inside is True and flag.get(None) is before else None
    except Exception:  # noqa: BLE001 - upstream's helper changed shape: use it as it is, on every call
        return None


_PLAIN_ATOMS = (str, int, float, bool, bytes, type(None))
#: the most objects and containers ``_opened`` walks for one call's arguments
_OPEN_BUDGET = 1_000_000  # as the pictures' own budget (integrity.BUDGET)


def _opened(value: Any) -> Any:
    """The arguments as the pictures should see them: pydantic-ai validates a tool's
    arguments into the parameters' own types, so a ``BaseModel`` or a dataclass instance,
    or a ``set``, is a value a later hook or a toolset wrapper can change in place, where a
    picture by identity would not see it. Each such object becomes ``("object", it, its
    fields)`` (its instance ``__dict__`` and slots, read through the builtin descriptors:
    no code of the object runs), a set of plain values ``("set", its values, sorted)``, a
    ``bytearray`` its bytes,
    any depth; plain containers are copied, other objects kept (by identity). The value
    itself when there is nothing to open; ``CHANGED`` when it cannot be read (a cycle
    through an object, past ``_OPEN_BUDGET``): it then reads as changed."""
    budget = [_OPEN_BUDGET]
    try:
        found = _open(value, budget, set())
    except BaseException:  # noqa: BLE001 - a racing or hostile object: read as changed, the call is judged again
        return CHANGED
    return value if found is _NOTHING_OPENED else found


_NOTHING_OPENED = object()


def _picture(value: Any) -> Any:
    """The settling rule's picture of the arguments: their fingerprint, objects opened
    (``_opened``)."""
    opened = _opened(value)
    return CHANGED if opened is CHANGED else fingerprint(opened)
_BASE_MODEL: list = []  # pydantic.BaseModel, looked up once


def _open(value: Any, budget: list, path: set) -> Any:
    """``_opened`` of one value: ``_NOTHING_OPENED`` when it holds nothing to open."""
    kind = type(value)
    if kind in _PLAIN_ATOMS:
        return _NOTHING_OPENED
    budget[0] -= 1
    if budget[0] < 0:
        raise Invalid()
    if kind is dict or kind is list or kind is tuple:
        if id(value) in path:
            raise Invalid()  # a cycle: read as changed
        path.add(id(value))
        items = list(dict.items(value)) if kind is dict else list(value)
        opened, any_opened = [], False
        for item in items:
            if kind is dict:
                inner = _open(item[1], budget, path)
                opened.append((item[0], item[1] if inner is _NOTHING_OPENED else inner))
            else:
                inner = _open(item, budget, path)
                opened.append(item if inner is _NOTHING_OPENED else inner)
            any_opened = any_opened or inner is not _NOTHING_OPENED
        path.discard(id(value))
        if not any_opened:
            return _NOTHING_OPENED
        if kind is dict:  # keys of the builtin atoms are hashed again; other keys are not (their __hash__ could be anyone's)
            return dict(opened) if all(type(k) in _PLAIN_ATOMS for k, _v in opened) else ("dict", tuple(opened))
        return opened if kind is list else tuple(opened)
    if kind is set or kind is frozenset:
        members = list(value)
        if all(type(m) in _PLAIN_ATOMS for m in members):
            return ("set", kind.__name__, tuple(sorted(members, key=lambda m: (type(m).__name__, repr(m)))))
        return _NOTHING_OPENED  # by identity
    if kind is bytearray:
        return ("bytearray", bytes(value))
    fields = _fields(kind, value)
    if fields is None:
        return _NOTHING_OPENED
    if id(value) in path:
        raise Invalid()
    path.add(id(value))
    inner = _open(fields, budget, path)
    path.discard(id(value))
    return ("object", value, fields if inner is _NOTHING_OPENED else inner)


def _fields(kind: type, value: Any) -> Any:
    """The fields of a pydantic model or a dataclass instance (its instance ``__dict__``
    and slots, read through the builtin descriptors), None for any other object."""
    mro = _TYPE_MRO(kind)  # through type's own descriptors: no metaclass code runs
    if type(mro) is not tuple:
        return None
    if not _BASE_MODEL:
        pydantic = sys.modules.get("pydantic")
        base = getattr(pydantic, "BaseModel", None) if pydantic is not None else None
        if isinstance(base, type):
            _BASE_MODEL.append(base)
    namespaces = [_TYPE_DICT(c) for c in mro]
    if not ((_BASE_MODEL and any(c is _BASE_MODEL[0] for c in mro)) or any("__dataclass_fields__" in ns for ns in namespaces)):
        return None
    fields: dict = {}
    for i, namespace in enumerate(namespaces):
        names = namespace.get("__slots__", ())
        names = (names,) if type(names) is str else tuple(names) if type(names) in (tuple, list) else ()
        for name in names + ("__dict__",):
            descriptor = namespace.get(name) if type(name) is str else None
            if type(descriptor) is _MEMBER and name != "__dict__":
                try:
                    fields[f"{i}.{name}"] = descriptor.__get__(value, kind)
                except AttributeError:
                    pass  # an empty slot
            elif name == "__dict__" and type(descriptor) is _GETSET and "__dict__" not in fields:
                found = descriptor.__get__(value, kind)
                fields["__dict__"] = dict(found) if type(found) is dict else found
    return fields


_MEMBER = types.MemberDescriptorType  # a slot
_TYPE_MRO = type.__dict__["__mro__"].__get__  # a class's own, whatever its metaclass
_TYPE_DICT = type.__dict__["__dict__"].__get__
_GETSET = types.GetSetDescriptorType  # an instance's __dict__
