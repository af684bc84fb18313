"""openai-agents: tool input guardrails and ``needs_approval`` fail closed, the core decides.

The OpenAI Agents SDK has two pre-tool gates:

- tool input guardrails (``@tool_input_guardrail`` on a ``function_tool``), run by
  ``agents.run_internal.tool_execution._execute_tool_input_guardrails``. Upstream runs
  them in order with no deadline (a hanging sync guardrail blocks the event loop), treats
  a behavior type it does not know (``"deny"``, a typo) as allow, crashes the run on a
  raising guardrail or a junk answer, and stops at the first ``reject_content``;
- ``needs_approval`` (a bool or a callable) of a tool, turned into a bool by
  ``agents.util._approvals.evaluate_needs_approval_setting``: ``bool(answer)``, so
  ``None`` or ``"yes"``-like junk silently decides whether a human is asked.

The patch (``wrapt``):

- ``_execute_tool_input_guardrails`` is replaced by the adapter's own loop: every
  guardrail function runs under the guard (a sync one on the guard's worker with its
  deadline, an async one cancelled at it), its answer is validated into a Verdict
  (``ToolGuardrailFunctionOutput`` with behavior ``allow`` / ``reject_content`` (str
  message) / ``raise_exception``; anything else is ``invalid``), every guardrail runs
  (a deny from any of them wins whatever the order), and ``adecide`` reduces them with
  the cross-framework gates, ``required`` and the config. The Decision goes back in the
  SDK's own shapes: ``None`` (allow), the rejection message (``reject_content``: the
  model is told the call was rejected, with the hook id and failure category only), or
  ``ToolInputGuardrailTripwireTriggered`` for a guardrail's own ``raise_exception`` (and
  for failures when the config says ``[frameworks."openai-agents"] failure_behavior =
  "raise_exception"``). The guardrails' valid
  outputs are appended to the run's ``tool_input_guardrail_results`` as upstream does.
  This runs for every function tool call, with or without guardrails, so plugin gates
  and ``required`` hooks are consulted on every call.
- ``evaluate_needs_approval_setting`` (at every module that imported it by name):
  a callable setting runs under the guard; ``True`` asks (ASK), ``False`` allows,
  anything else is ``invalid``; a raise, a hang or junk denies a function tool's call
  (``needs_approval`` answers "no approval" and the guardrail loop, before the tool,
  rejects the call with the audited reason: nobody is asked to approve a failed check);
  for another tool (shell, apply-patch, custom: no guardrail path) it answers "approval
  required" and the SDK's ``resolve_approval_status``, next, rejects the call with the
  reason (neither ``on_approval`` nor a human is asked). ``function_needs_approval`` is
  wrapped only to know the tool's name for the audit and the plugin gates.
- ``ComputerTool.on_safety_check``, ``on_approval`` of shell / apply-patch / custom tools
  and ``HostedMCPTool.on_approval_request`` are gates too (``_guarded_callback``).
- The tool boundary (docs/ungoverned.md): ``AgentRunner.run`` / ``run_sync`` /
  ``run_streamed`` are the run entry points, the invoker of every ``function_tool`` the
  innermost call; the guardrail path grants the call it lets run.

ASK is native (``supports_ask``): an ASK decision in the approval path is an approval
interruption (``result.interruptions``, resolved with ``state.approve``/``reject``).
The guardrail path cannot interrupt: there an ASK allows only a call a human already
approved, and is rejected otherwise.

Argument integrity: a guardrail can rewrite the call it is shown
(``data.context.tool_call.arguments`` is the string the tool runs with;
``data.context.tool_arguments`` is what guardrails read). Before every round the adapter
shows the gates the arguments the tool will run with; the guardrails run one by one under
``integrity.asettle``: the guardrails that judged the arguments before a later one
rewrote them judge again (a stamp, a fresh value in a key the same guardrail alone wrote,
is accepted; a guardrail after the last rewrite runs once): every gate has seen the final
arguments.

Tool output guardrails observe results; they are untouched.

Hook ids: ``openai-agents:<module>.<qualname>`` of the guardrail function or the
``needs_approval`` callable.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import json
import sys
import warnings
from typing import Any, Optional

from failsecure.adapter import Adapter, PatchError, asettle, fingerprint, plain_str, plugin_gates, when_imported
from failsecure.adapters import ADAPTERS
from failsecure.verdict import ABSTAIN, Action, Decision, Failure, Invalid, Outcome, Verdict, exactly, failure_reason

PACKAGE = "agents"
TOOL_EXECUTION = "agents.run_internal.tool_execution"
APPROVALS = "agents.util._approvals"
GUARDRAILS = "agents.tool_guardrails"
EXCEPTIONS = "agents.exceptions"
MCP_SERVER = "agents.mcp.server"
TOOL = "agents.tool"
APPROVAL_STATUS = "resolve_approval_status"
#: callbacks a tool carries that decide whether its call runs: (class, attribute, kind)
TOOL_CALLBACKS = (
    ("ComputerTool", "on_safety_check", "safety"),
    ("HostedMCPTool", "on_approval_request", "request"),
    ("FunctionTool", "is_enabled", "enabled"),
)
MCP_APPROVAL = "_get_needs_approval_for_tool"
#: the realtime API runs a function tool's input guardrails with a loop of its own
REALTIME_SESSION = "agents.realtime.session"
REALTIME_LOOP = "_run_tool_input_guardrails"
REALTIME_APPROVAL = "_maybe_request_tool_approval"
#: ... and evaluates a function tool's ``needs_approval`` in a method of its own
REALTIME_NEEDS_APPROVAL = "_function_needs_approval"

#: the tool boundary (docs/ungoverned.md): the run entry points (``Runner``'s classmethods
#: call the default ``AgentRunner``'s) and the invoker every ``function_tool`` runs through
RUNNER = "agents.run"
AGENT = "agents.agent"
RUN_ENTRIES = ("run", "run_sync", "run_streamed")
INVOKER = "_FailureHandlingFunctionToolInvoker"

GUARDRAIL_LOOP = "_execute_tool_input_guardrails"
NEEDS_APPROVAL = "evaluate_needs_approval_setting"
FUNCTION_NEEDS_APPROVAL = "function_needs_approval"
_LOOP_PARAMS = ("func_tool", "tool_context", "agent", "tool_input_guardrail_results")

#: the values of the config's ``[frameworks."openai-agents"] failure_behavior``, the loosest
#: first (declared in the adapter's ``ADAPTERS`` entry)
FAILURE_BEHAVIORS = ADAPTERS["openai-agents"].settings["failure_behavior"]

_ALLOW = Verdict(action=Action.ALLOW)
_ASK = Verdict(action=Action.ASK)
_APPROVAL_ANSWERS = ((True, _ASK), (False, _ALLOW))
_SAFETY_ANSWERS = ((True, Verdict(action=Action.ALLOW, data=True)), (False, Verdict(action=Action.DENY, data=False)))
#: the grant of a call the guardrail path lets run (an ASK a human approved included)
_RUNS = Decision(_ALLOW)

#: (tool name, parsed arguments) of the function tool call whose ``needs_approval`` is
#: being evaluated: for the audit and the plugin gates (the setting gets ``{}`` as its
#: arguments when it is a bool)
_function_call: "contextvars.ContextVar[Optional[tuple]]" = contextvars.ContextVar("failsecure_openai_agents_call", default=None)

#: a realtime session is deciding whether to ask for approval (its guardrail pass there is
#: the pre-approval pass)
_realtime_pre: "contextvars.ContextVar[bool]" = contextvars.ContextVar("failsecure_openai_agents_realtime_pre", default=False)

#: the guardrail loop about to run is the pre-approval pass (``pre_approval_tool_input_guardrails``):
#: the approval interruption comes after it, so an ASK there is not a rejection
_pre_approval: "contextvars.ContextVar[bool]" = contextvars.ContextVar("failsecure_openai_agents_pre_approval", default=False)
PRE_APPROVAL = "_should_run_pre_approval_tool_input_guardrails"
#: an agent used as a tool whose nested run was interrupted for approval is resumed by
#: ``_execute_single_tool_body`` without the guardrail path (the SDK's "nested
#: continuation", told by ``peek_agent_tool_run_result``): the continuation of that one call
TOOL_BODY = "_execute_single_tool_body"
PEEK_NESTED = "peek_agent_tool_run_result"
NESTED_INTERRUPTIONS = "_get_nested_tool_interruptions"


def _approval_verdict(native: Any) -> Verdict:
    """``needs_approval`` answers: exactly ``True`` (ask a human) or ``False``."""
    return exactly(native, _APPROVAL_ANSWERS)


def _safety_verdict(native: Any) -> Verdict:
    """``on_safety_check``: exactly ``True`` (acknowledge) or ``False`` (do not)."""
    return exactly(native, _SAFETY_ANSWERS)


def _enabled_verdict(native: Any) -> Verdict:
    """``is_enabled``: exactly ``True`` (the tool is offered) or ``False`` (it is not)."""
    return exactly(native, _SAFETY_ANSWERS)


def _approval_result_verdict(native: Any) -> Verdict:
    """``on_approval`` / ``on_approval_request``: a mapping whose ``approve`` is a bool
    (and ``reason``, when there, a string)."""
    from collections.abc import Mapping

    if not isinstance(native, Mapping):
        raise Invalid()
    approve = native.get("approve")
    reason = native.get("reason")
    if type(approve) is not bool or (reason is not None and type(reason) is not str):
        raise Invalid()
    return Verdict(action=Action.ALLOW if approve else Action.DENY, data=native)


def _mcp_policy(policy: Any, agent: Any, tool: Any) -> Any:
    """An MCP tool's ``needs_approval``: the server's ``require_approval`` policy, called
    as the SDK calls it, with its own answer (not ``bool()`` of it)."""

    async def needs_approval(run_context: Any, _args: Any, _call_id: Any) -> Any:
        result = policy(run_context, agent, tool)
        if inspect.isawaitable(result):
            result = await result
        return result

    needs_approval._failsecure_policy = policy  # type: ignore[attr-defined]
    return needs_approval


class _NoGuardrails:
    """A realtime tool whose ``tool_input_guardrails`` is not a list of guardrails: upstream
    runs none, so the guardrail path judges it with none (plugin gates, ``required``)."""

    tool_input_guardrails: tuple = ()

    def __init__(self, tool: Any) -> None:
        self.name = getattr(tool, "name", None)
        self.needs_approval = getattr(tool, "needs_approval", False)
        self.tool = tool  # the SDK's tool itself: its namespace keys the human's approval


def _plain(value: Any) -> Any:
    """A call's arguments as plain data for the plugin gates: a JSON object string
    parsed, a mapping copied, a pydantic model dumped; None when it is none of these."""
    try:
        if type(value) is str:
            return _parsed(value)
        if isinstance(value, dict):
            return dict(value)
        dump = getattr(type(value), "model_dump", None)
        return dump(value) if callable(dump) else None
    except Exception:  # noqa: BLE001 - a model_dump or mapping of the framework's or user's can raise anything: no plain arguments
        return None


def _callback_call(kind: str, tool: Optional[str], args: tuple) -> tuple:
    """(tool name, call id, arguments) of the call a safety or approval callback judges:
    ``on_safety_check(data)`` (a computer call), ``on_approval(ctx, item)`` (a shell,
    apply-patch or custom call), ``on_approval_request(request)`` (a hosted MCP call)."""
    try:
        if kind == "safety":
            call = getattr(args[0], "tool_call", None)
            return tool, plain_str(getattr(call, "call_id", None)), _plain(getattr(call, "action", None))
        if len(args) >= 2:  # on_approval(ctx, approval item)
            item = getattr(args[1], "raw_item", None)
            get = item.get if isinstance(item, dict) else lambda key: getattr(item, key, None)
            name = plain_str(getattr(args[1], "tool_name", None)) or tool
            for key in ("input", "arguments", "action"):
                if get(key) is not None:
                    return name, plain_str(get("call_id")), _plain(get(key))
            return name, plain_str(get("call_id")), None
        data = getattr(args[0], "data", None)  # on_approval_request(MCPToolApprovalRequest)
        return plain_str(getattr(data, "name", None)) or tool, plain_str(getattr(data, "id", None)), _plain(getattr(data, "arguments", None))
    except Exception:  # noqa: BLE001 - the approval item or tool call (SDK or user objects) can raise anything: no call id, no arguments
        return tool, None, None


def _same_text(a: Any, b: Any) -> bool:
    """The same arguments: one object, or two texts (``str`` or a subclass) of equal
    content. Told by ``str``'s own comparison, never the objects' ``==`` / ``!=`` (a
    guardrail's rewrite in a ``str`` subclass whose ``!=`` says "unchanged" is a rewrite)."""
    return a is b or (issubclass(type(a), str) and issubclass(type(b), str) and str.__eq__(a, b) is True)


def _parsed(arguments: Any) -> Any:
    kind = type(arguments)
    if kind is not str:
        if not issubclass(kind, str):
            return None
        arguments = str.__str__(arguments)  # a str subclass: its text, as the SDK's parser reads it (none of its code runs)
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError, MemoryError):  # all json.loads raises for a str: not JSON, nested too deep, too large
        return None
    return value if isinstance(value, dict) else None


#: JSON text -> its parsed object, for the readers that never change what they are given
#: (the settling pictures, the boundary's grants and checks, the core's copy for plugin
#: gates): one call's arguments are read four to six times, parsed once
_VIEWS: dict = {}
_VIEW_TEXT_MAX = 65536  # longer texts are parsed each time (the views stay small)
_VIEWS_MAX = 32
_MISS = object()


def _view(arguments: Any) -> Any:
    """``_parsed`` for a reader that never changes the object it gets (it is shared)."""
    if type(arguments) is not str or len(arguments) > _VIEW_TEXT_MAX:
        return _parsed(arguments)
    got = _VIEWS.get(arguments, _MISS)
    if got is _MISS:
        got = _parsed(arguments)
        if len(_VIEWS) >= _VIEWS_MAX:
            _VIEWS.clear()
        _VIEWS[arguments] = got
    return got


#: (JSON text, whether the context still holds the call) -> the settling picture of that
#: state: the arguments a JSON object is parsed to are plain data, so the picture of a
#: text is the same every time; the guardrail path pictures the call once per guardrail
#: and once before them, mostly with the same text
_PICTURES: dict = {}


def _picture(state: tuple) -> Any:
    """``fingerprint`` of (the arguments, parsed where they are a JSON object; whether the
    context still holds the call): what the settling rule compares (``_current``)."""
    arguments = state[0]
    if type(arguments) is str and len(arguments) <= _VIEW_TEXT_MAX:
        got = _PICTURES.get(state, _MISS)
        if got is _MISS:
            parsed = _view(arguments)
            got = fingerprint((arguments if parsed is None else parsed, state[1]))
            if len(_PICTURES) >= _VIEWS_MAX:
                _PICTURES.clear()
            _PICTURES[state] = got
        return got
    parsed = _parsed(arguments)
    return fingerprint((arguments if parsed is None else parsed, state[1]))


class OpenAIAgentsAdapter(Adapter):
    name = "openai-agents"
    fail_closed_upstream = ""
    modules = (TOOL_EXECUTION, APPROVALS)
    supports_ask = True
    self_test_junk = "deny"  # not even an output object; see _probe

    #: the hook the guardrail path's unsettled outcome names (rewriting that never stops)
    _unsettled_hook = "openai-agents:tool_input_guardrails"

    #: what the deprecated ``failure_behavior`` attribute was set to (None: never)
    _failure_behavior: Optional[str] = None

    def __init__(self) -> None:
        super().__init__()
        self._active = False
        self._te: Any = None
        self._g: Any = None  # agents.tool_guardrails
        self._tripwire: Any = None
        self._user_error: Any = None
        self._mcp_watch = False
        self._runs_wrapped = False
        self._mcp_patched = False
        self._realtime_watch = False
        self._realtime_patched = False
        #: (tool name, call id) -> deny reason: function tool calls whose ``needs_approval``
        #: callable failed; nobody is asked, the guardrail loop (before the tool) rejects them
        self._failed: dict = {}
        #: call id -> deny reason: shell / apply-patch / custom tool calls whose
        #: ``needs_approval`` failed or was denied; ``resolve_approval_status`` rejects them
        self._refused: dict = {}
        #: hook id -> the ABSTAIN Outcome of a callable ``needs_approval`` (``_approval_present``)
        self._present: dict = {}

    @property
    def failure_behavior(self) -> str:
        """How a failed guardrail (raise, hang, junk, missing) denies: ``reject_content``
        (the model is told) or ``raise_exception`` (the run stops with
        ``ToolInputGuardrailTripwireTriggered``). The config decides
        (``[frameworks."openai-agents"] failure_behavior``, docs/configuration.md); setting
        this attribute is deprecated and can only make it ``raise_exception``, the stricter."""
        configured = self.setting("failure_behavior")
        return "raise_exception" if self._failure_behavior == "raise_exception" else configured

    @failure_behavior.setter
    def failure_behavior(self, value: str) -> None:
        warnings.warn(
            'failure_behavior on the adapter is deprecated: set [frameworks."openai-agents"] failure_behavior in the config',
            DeprecationWarning, stacklevel=2,
        )
        self._failure_behavior = value

    # ------------------------------------------------------------ patching

    def _targets(self) -> tuple:
        te = importlib.import_module(TOOL_EXECUTION)
        approvals = importlib.import_module(APPROVALS)
        guardrails = importlib.import_module(GUARDRAILS)
        exceptions = importlib.import_module(EXCEPTIONS)
        loop = vars(te).get(GUARDRAIL_LOOP)
        if not inspect.iscoroutinefunction(loop):
            raise PatchError(f"{TOOL_EXECUTION}.{GUARDRAIL_LOOP}")
        params = inspect.signature(loop).parameters
        if tuple(p for p in _LOOP_PARAMS if p in params) != _LOOP_PARAMS:
            raise PatchError(f"{TOOL_EXECUTION}.{GUARDRAIL_LOOP} parameters")
        for owner, attr in ((approvals, NEEDS_APPROVAL), (te, FUNCTION_NEEDS_APPROVAL)):
            if not inspect.iscoroutinefunction(vars(owner).get(attr)):
                raise PatchError(f"{owner.__name__}.{attr}")
        for attr in ("ToolGuardrailFunctionOutput", "ToolInputGuardrail", "ToolInputGuardrailData", "ToolInputGuardrailResult"):
            if not isinstance(getattr(guardrails, attr, None), type):
                raise PatchError(f"{GUARDRAILS}.{attr}")
        for attr in ("ToolInputGuardrailTripwireTriggered", "UserError"):
            if not isinstance(getattr(exceptions, attr, None), type):
                raise PatchError(f"{EXCEPTIONS}.{attr}")
        return te, approvals, guardrails, exceptions

    def _patch(self) -> None:
        te, approvals, guardrails, exceptions = self._targets()
        self._te, self._g = te, guardrails
        self._tripwire = exceptions.ToolInputGuardrailTripwireTriggered
        self._user_error = exceptions.UserError
        adapter = self

        def guardrail_loop(wrapped, instance, args, kwargs):
            if not adapter._active:
                return wrapped(*args, **kwargs)
            return adapter._input_guardrails(wrapped, args, kwargs)

        def needs_approval(wrapped, instance, args, kwargs):
            if not adapter._active:
                return wrapped(*args, **kwargs)
            return adapter._needs_approval(wrapped, args, kwargs)

        def function_needs_approval(wrapped, instance, args, kwargs):
            if not adapter._active:
                return wrapped(*args, **kwargs)
            return adapter._named(wrapped, args, kwargs)

        def pre_approval(wrapped, instance, args, kwargs):
            answer = wrapped(*args, **kwargs)
            if answer is True and adapter._active:
                _pre_approval.set(True)
            return answer

        def approval_status(wrapped, instance, args, kwargs):
            on_approval = kwargs.get("on_approval")
            refused = adapter._refused.pop(kwargs.get("call_id"), None) if adapter._active and adapter._refused else None
            if refused is not None:
                # its needs_approval failed (or a gate denied it): the SDK's own rejection,
                # with the audited reason; neither on_approval nor a human is asked
                kwargs = dict(kwargs, on_approval=lambda _ctx, _item: {"approve": False, "reason": refused})
            elif adapter._active and callable(on_approval) and not getattr(on_approval, "_failsecure_guarded", False):
                kwargs = dict(kwargs, on_approval=adapter._guarded_callback(on_approval, "approval", kwargs.get("tool_name")))
            return wrapped(*args, **kwargs)

        # the SDK imports these helpers by name into its call sites: wrapped everywhere
        self.wrap(te, GUARDRAIL_LOOP, guardrail_loop)
        if inspect.iscoroutinefunction(vars(te).get(APPROVAL_STATUS)):
            self.wrap_everywhere(te, APPROVAL_STATUS, approval_status, PACKAGE)
        tool_module = sys.modules.get(TOOL) or importlib.import_module(TOOL)
        for class_name, attr, kind in TOOL_CALLBACKS:
            owner = getattr(tool_module, class_name, None)
            if isinstance(owner, type):
                self._guard_attribute(owner, attr, kind)
        executor = getattr(te, "_FunctionToolBatchExecutor", None)
        if isinstance(executor, type) and callable(vars(executor).get(PRE_APPROVAL)):
            self.wrap(executor, PRE_APPROVAL, pre_approval)
        if isinstance(executor, type) and inspect.iscoroutinefunction(vars(executor).get(TOOL_BODY)) and callable(vars(te).get(PEEK_NESTED)):

            def tool_body(wrapped, instance, args, kwargs):
                if adapter._active:
                    adapter._continuation(te, instance, kwargs)
                return wrapped(*args, **kwargs)

            self.wrap(executor, TOOL_BODY, tool_body)
        self.wrap_everywhere(approvals, NEEDS_APPROVAL, needs_approval, PACKAGE)
        self.wrap_everywhere(te, FUNCTION_NEEDS_APPROVAL, function_needs_approval, PACKAGE)
        self._wrap_boundary(tool_module)
        self._active = True
        if MCP_SERVER in sys.modules:
            self._patch_mcp(sys.modules[MCP_SERVER])
        elif not self._mcp_watch:
            self._mcp_watch = True
            when_imported(MCP_SERVER, self._late_mcp)
        if REALTIME_SESSION in sys.modules:
            self._patch_realtime(sys.modules[REALTIME_SESSION])
        elif not self._realtime_watch:
            self._realtime_watch = True
            when_imported(REALTIME_SESSION, self._late_realtime)

    def _wrap_boundary(self, tool_module: Any) -> None:
        """The tool boundary: ``AgentRunner.run`` / ``run_sync`` / ``run_streamed`` are the
        run entry points (``Runner``'s classmethods, a resumed run's too, go through them);
        the innermost call is the invoker of every ``function_tool``
        (``_FailureHandlingFunctionToolInvoker.__call__``: what ``on_invoke_tool`` is),
        matched by the tool call id and the arguments the guardrail path judged."""
        invoker = getattr(tool_module, INVOKER, None)
        if not isinstance(invoker, type) or not inspect.iscoroutinefunction(vars(invoker).get("__call__")):
            raise PatchError(f"{TOOL}.{INVOKER}.__call__")
        self.wrap_boundary(invoker, "__call__", self._read_invocation, where="FunctionTool.on_invoke_tool")
        if self._runner_ready():
            self._wrap_runs(sys.modules[RUNNER])
            return
        # the trigger module executes while ``agents.run`` is still being imported: the run
        # entry points are wrapped once it has been, before the first run (every run has
        # an ``Agent``, built after ``import agents`` returned)
        agent = getattr(sys.modules.get(AGENT) or importlib.import_module(AGENT), "Agent", None)
        if not isinstance(agent, type) or not callable(vars(agent).get("__post_init__")):
            raise PatchError(f"{AGENT}.Agent.__post_init__")
        adapter = self

        def post_init(wrapped, instance, args, kwargs):
            result = wrapped(*args, **kwargs)
            if adapter._active and not adapter._runs_wrapped:
                adapter._late_runner()
            return result

        self.wrap(agent, "__post_init__", post_init)

    @staticmethod
    def _runner_ready() -> bool:
        module = sys.modules.get(RUNNER)
        if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
            return False
        return hasattr(module, "AgentRunner")

    def _wrap_runs(self, module: Any) -> None:
        runner = getattr(module, "AgentRunner", None)
        if not isinstance(runner, type) or not all(callable(vars(runner).get(attr)) for attr in RUN_ENTRIES):
            raise PatchError(f"{RUNNER}.AgentRunner")
        for attr in RUN_ENTRIES:
            self.wrap_run(runner, attr)
        self._runs_wrapped = True

    def _late_runner(self) -> None:
        if self._runner_ready():
            self.patch_late(self._wrap_runs, sys.modules[RUNNER])

    def _read_invocation(self, invoker: Any, args: tuple, kwargs: dict) -> tuple:
        """One ``on_invoke_tool(ctx, input)``: (tool name, call id, arguments, the tool
        object, whether it or its agent has a gate)."""
        ctx = args[0] if args else kwargs.get("ctx")
        raw = args[1] if len(args) > 1 else kwargs.get("input")
        function_tool = vars(invoker).get("_function_tool")
        tool = plain_str(getattr(function_tool, "name", None))
        call_id = plain_str(getattr(ctx, "tool_call_id", None))
        parsed = _view(raw)
        return tool, call_id, raw if parsed is None else parsed, ("openai-agents", id(function_tool)), self._gated(function_tool, ctx)

    @staticmethod
    def _gated(function_tool: Any, ctx: Any) -> bool:
        """The tool, or another function tool of the agent running it, has a gate of the
        SDK's (input guardrails, ``needs_approval``): what a call past the guardrail path
        bypasses."""
        tools = [function_tool, *list(getattr(getattr(ctx, "agent", None), "tools", None) or ())]
        for tool in tools:
            if getattr(tool, "tool_input_guardrails", None) or getattr(tool, "needs_approval", False) is not False:
                return True
        return False

    def _continuation(self, te: Any, executor: Any, kwargs: dict) -> None:
        """The SDK's nested continuation of a function tool call (an ``Agent.as_tool`` call
        whose nested run stopped at an approval, now resumed) skips the guardrail path: the
        outer call was judged when it was first dispatched (the nested run it started is
        recorded under that call's id and arguments). It gets its grant, for that call id
        and those arguments only: an execution with other arguments stays ungoverned.
        Anything unexpected grants nothing (the call is then ungoverned, as without this)."""
        try:
            task_state = kwargs["task_state"]
            func_tool, tool_call, tool_context = kwargs["func_tool"], kwargs["tool_call"], kwargs["tool_context"]
            pending = getattr(te, PEEK_NESTED)(task_state.tool_run.tool_call, scope_id=executor.tool_state_scope_id)
            if pending is None or not getattr(executor, NESTED_INTERRUPTIONS)(pending):
                return
            call_id = plain_str(getattr(tool_context, "tool_call_id", None))
            arguments = getattr(tool_call, "arguments", None)
            if call_id is None or call_id != plain_str(getattr(tool_call, "call_id", None)) or type(arguments) is not str:
                return
        except Exception:  # noqa: BLE001 - the SDK's nested-run state can raise anything: no grant, the call stays ungoverned (as without this)
            return
        self._granted(plain_str(getattr(func_tool, "name", None)), call_id, arguments)

    def _granted(self, tool: Optional[str], call_id: Optional[str], arguments: Any) -> None:
        parsed = _view(arguments)
        self.granted(_RUNS, tool, call_id, arguments if parsed is None else parsed)

    def _guard_attribute(self, owner: type, attr: str, kind: str) -> None:
        """Every callable set as ``owner.<attr>`` (in ``__init__`` or later) is put under
        the guard: the SDK reads the attribute and calls what it finds."""
        adapter = self
        original = owner.__setattr__

        def __setattr__(instance, name, value):
            if name == attr and callable(value) and adapter._active and not getattr(value, "_failsecure_guarded", False):
                value = adapter._guarded_callback(value, kind, getattr(instance, "name", None))
            original(instance, name, value)

        self.replace(owner, "__setattr__", __setattr__)

    def _guarded_callback(self, callback: Any, kind: str, tool: Any) -> Any:
        """A tool's approval or safety callback as a gate: deadline, any exception, an
        answer of the wrong shape. ``kind`` "safety" (``on_safety_check``: a bool, True
        acknowledges) or "approval" (``on_approval`` / ``on_approval_request``: a mapping
        with ``approve`` a bool; "request" for ``on_approval_request``, which must answer).
        It is the call's only decision point (a computer, shell,
        apply-patch, custom or hosted MCP call has no guardrail path): the plugin gates
        and ``required`` are consulted with it. A failure (or another gate's deny) is the
        SDK's own no carrying the audited reason: a ``UserError`` ending the run for a
        safety check (as the SDK's own "not acknowledged"), ``{"approve": False, "reason":
        <reason>}`` for an approval (the model is told the reason). A plugin gate's ASK
        leaves an ``on_approval`` to a human (the SDK's interruption); a safety check and
        a hosted MCP request cannot ask (a no).
        A valid answer is passed through as it came."""
        adapter = self
        if kind in ("enabled", "filter"):
            return self._guarded_enabled(callback, tool)
        validate = _safety_verdict if kind == "safety" else _approval_result_verdict
        name = plain_str(tool)

        async def guarded(*args, **kwargs):
            if not adapter._active:
                result = callback(*args, **kwargs)
                return await result if inspect.isawaitable(result) else result
            hook_id = adapter.callable_id(callback)
            outcome = await adapter.ahook_call(hook_id, callback, *args, _validate=validate, **kwargs)
            tool_name, call_id, arguments = _callback_call(kind, name, args)
            decision = await adapter.adecide(
                tool_name, [outcome], call_id=call_id, arguments=arguments if adapter._has_plugin_gates() else None
            )
            action = decision.action
            if outcome.failure is None and (action is Action.ALLOW or action is Action.ABSTAIN):
                return outcome.verdict.data  # type: ignore[union-attr]
            if outcome.failure is None and outcome.verdict is not None and decision.primary is outcome:
                return outcome.verdict.data  # the callback's own no, as it said it
            if action is Action.ASK and kind == "approval":
                return None  # no decision: the SDK asks a human (its approval interruption)
            reason = decision.reason or failure_reason(hook_id, outcome.failure or Failure.INVALID)
            if kind == "safety":
                # the SDK's own no to a safety check is a UserError that ends the run; this
                # one carries the reason the audit records (not "not acknowledged")
                raise adapter._user_error(reason)
            return {"approve": False, "reason": reason}

        guarded._failsecure_guarded = True  # type: ignore[attr-defined]
        guarded.__wrapped__ = callback  # type: ignore[attr-defined]
        return guarded

    def _guarded_enabled(self, callback: Any, tool: Any) -> Any:
        """A function tool's callable ``is_enabled(ctx, agent)`` (an MCP server's callable
        ``tool_filter(ctx, tool)`` likewise, for each of its tools) decides whether the tool is
        offered, so whether a model's call to it runs (upstream takes ``bool(answer)``: a
        truthy junk answer such as ``"no"`` enabled it, and a hang had no deadline). Under
        the guard only ``True`` enables and ``False`` disables, as said (not audited: no
        call yet); a raise, a hang past its deadline or junk is audited as its failure (a
        later decision point: no plugin gates, no ``required``) and disables the tool; a
        failure the config tolerates (``on_error = "allow"``) abstains, which offers
        nothing either (never more than upstream, where ``None`` disables and a raise
        ends the run)."""
        adapter = self
        name = plain_str(tool)

        async def guarded(*args, **kwargs):
            if not adapter._active:
                result = callback(*args, **kwargs)
                return await result if inspect.isawaitable(result) else result
            hook_id = adapter.callable_id(callback)
            outcome = await adapter.ahook_call(hook_id, callback, *args, _validate=_enabled_verdict, **kwargs)
            if outcome.failure is None and outcome.verdict is not None:
                return outcome.verdict.action is Action.ALLOW
            decision = await adapter.adecide_stage(name, [outcome])
            return decision.action is Action.ALLOW

        guarded._failsecure_guarded = True  # type: ignore[attr-defined]
        guarded.__wrapped__ = callback  # type: ignore[attr-defined]
        return guarded

    def _late_mcp(self, module: Any) -> None:
        if self._active and not self._mcp_patched:
            self.patch_late(self._patch_mcp, module)

    def _patch_mcp(self, module: Any) -> None:
        """An MCP server's ``require_approval`` callable becomes each of its tools'
        ``needs_approval`` through a wrapper of the SDK's that answers ``bool(result)``:
        junk would decide, and the hook id would name that wrapper. The patched method
        hands back a wrapper that returns the policy's own answer (judged like any
        ``needs_approval`` answer) and names the user's policy."""
        server = getattr(module, "MCPServer", None)
        if not isinstance(server, type) or not callable(vars(server).get(MCP_APPROVAL)):
            raise PatchError(f"{MCP_SERVER}.MCPServer.{MCP_APPROVAL}")
        adapter = self

        def get_needs_approval(wrapped, instance, args, kwargs):
            setting = wrapped(*args, **kwargs)
            policy = getattr(instance, "_needs_approval_policy", None)
            agent = args[1] if len(args) > 1 else kwargs.get("agent")
            tool = args[0] if args else kwargs.get("tool")
            if not adapter._active or not callable(setting) or not callable(policy) or agent is None:
                return setting
            return _mcp_policy(policy, agent, tool)

        self.wrap(server, MCP_APPROVAL, get_needs_approval)
        # a callable tool_filter(ctx, tool) decides whether a server's tool is offered (so
        # whether a model's call to it runs): upstream includes the tool on any truthy
        # answer and waits for ever on a hang; guarded as is_enabled is
        self._guard_attribute(server, "tool_filter", "filter")
        self._mcp_patched = True

    def _late_realtime(self, module: Any) -> None:
        if self._active and not self._realtime_patched:
            self.patch_late(self._patch_realtime, module)

    def _patch_realtime(self, module: Any) -> None:
        """``RealtimeSession._run_tool_input_guardrails(tool=, tool_call=, agent=)`` runs a
        function tool's input guardrails in order, with no deadline, reading
        ``behavior["type"]`` (an unknown one runs the tool) and letting a raise end the
        tool call: replaced by the run loop's guardrail path (the same gates, decision,
        rendering and audit), on a ``ToolContext`` built as upstream builds it. Called
        from ``_maybe_request_tool_approval`` it is the pre-approval pass."""
        session = getattr(module, "RealtimeSession", None)
        if not isinstance(session, type) or not inspect.iscoroutinefunction(vars(session).get(REALTIME_LOOP)):
            raise PatchError(f"{REALTIME_SESSION}.RealtimeSession.{REALTIME_LOOP}")
        tool_context_type: Any = getattr(module, "ToolContext", None)
        if not isinstance(tool_context_type, type) or not callable(getattr(tool_context_type, "from_agent_context", None)):
            raise PatchError(f"{REALTIME_SESSION}.ToolContext")
        from_agent_context: Any = getattr(tool_context_type, "from_agent_context")
        adapter = self

        async def _guardrails(instance: Any, kwargs: dict) -> Any:
            tool: Any = kwargs.get("tool")
            call: Any = kwargs.get("tool_call")
            agent: Any = kwargs.get("agent")
            guardrails = getattr(tool, "tool_input_guardrails", None)
            if isinstance(guardrails, (str, bytes)):
                guardrails = None  # upstream skips a setting that is not a sequence
            try:
                tool_context = from_agent_context(
                    instance._context_wrapper,
                    tool_name=call.name,
                    tool_call_id=call.call_id,
                    tool_arguments=call.arguments,
                    agent=agent,
                )
            except Exception as exc:  # noqa: BLE001 - the SDK's context builder can raise anything: failsecure cannot show the call to its gates, denied
                hook = adapter.hook_id(REALTIME_LOOP)
                tool_name = plain_str(getattr(tool, "name", None))
                decision = adapter.failed(exc, tool_name, plain_str(getattr(call, "call_id", None)), hook=hook)
                return decision.reason or failure_reason(hook, Failure.RAISED)
            token = _pre_approval.set(_realtime_pre.get())
            try:
                if guardrails is None:
                    kwargs = {"func_tool": _NoGuardrails(tool), "tool_context": tool_context, "agent": agent}
                else:
                    kwargs = {"func_tool": tool, "tool_context": tool_context, "agent": agent}
                return await adapter._input_guardrails(None, (), {**kwargs, "tool_input_guardrail_results": None})
            finally:
                _pre_approval.reset(token)

        def loop(wrapped, instance, args, kwargs):
            if not adapter._active:
                return wrapped(*args, **kwargs)
            return _guardrails(instance, kwargs)

        async def _asking(wrapped, args, kwargs):
            token = _realtime_pre.set(True)
            try:
                return await wrapped(*args, **kwargs)
            finally:
                _realtime_pre.reset(token)

        def asking(wrapped, instance, args, kwargs):
            if not adapter._active:
                return wrapped(*args, **kwargs)
            return _asking(wrapped, args, kwargs)

        async def _evaluating(wrapped, args, kwargs):
            function_tool = args[0] if args else kwargs.get("function_tool")
            tool_call = args[1] if len(args) > 1 else kwargs.get("tool_call")
            token = _function_call.set((plain_str(getattr(function_tool, "name", None)), getattr(tool_call, "arguments", None)))
            try:
                return await wrapped(*args, **kwargs)
            finally:
                _function_call.reset(token)

        def evaluating(wrapped, instance, args, kwargs):
            """``_function_needs_approval(function_tool, tool_call)``: the function tool's
            call is named, as the run loop's ``function_needs_approval`` names it, so a
            failing ``needs_approval`` is the call's deny at the guardrail path (which the
            session runs next) and nobody is asked."""
            if not adapter._active:
                return wrapped(*args, **kwargs)
            return _evaluating(wrapped, args, kwargs)

        self.wrap(session, REALTIME_LOOP, loop)
        if inspect.iscoroutinefunction(vars(session).get(REALTIME_APPROVAL)):
            self.wrap(session, REALTIME_APPROVAL, asking)
        if inspect.iscoroutinefunction(vars(session).get(REALTIME_NEEDS_APPROVAL)):
            self.wrap(session, REALTIME_NEEDS_APPROVAL, evaluating)
        self._realtime_patched = True

    def _unpatch(self) -> None:
        self._active = False
        self._realtime_patched = False
        self._mcp_patched = False
        self._runs_wrapped = False

    def _lockdown(self) -> None:
        """The targets are not where expected: the guardrail loop (if there) rejects every
        call and every ``needs_approval`` evaluation asks (the adapter is refused, so
        ``decide`` denies)."""
        te = sys.modules.get(TOOL_EXECUTION)
        approvals = sys.modules.get(APPROVALS)
        adapter = self

        async def rejecting(*args, **kwargs):
            func_tool = kwargs.get("func_tool")
            tool = plain_str(getattr(func_tool, "name", None))
            decision = await adapter.adecide(tool, [])
            return decision.reason or failure_reason(adapter.hook_id("failsecure"), Failure.MISSING)

        async def asking(*args, **kwargs):
            return True

        if te is not None and callable(vars(te).get(GUARDRAIL_LOOP)):
            self.replace(te, GUARDRAIL_LOOP, rejecting)
        original = vars(approvals).get(NEEDS_APPROVAL) if approvals is not None else None
        if callable(original):
            for module in self.bindings(original, PACKAGE):
                self.replace(module, NEEDS_APPROVAL, asking)

    # ------------------------------------------------------------ needs_approval

    async def _named(self, wrapped, args, kwargs):
        function_tool = args[0] if args else kwargs.get("function_tool")
        tool_call = args[2] if len(args) > 2 else kwargs.get("tool_call")
        name = plain_str(getattr(function_tool, "name", None))
        # the raw arguments: parsed only when a decision needs them (not for a bool setting
        # without plugin gates, the common case)
        token = _function_call.set((name, getattr(tool_call, "arguments", None)))
        try:
            return await wrapped(*args, **kwargs)
        finally:
            _function_call.reset(token)

    async def _needs_approval(self, wrapped, args, kwargs):
        setting = args[0] if args else kwargs.get("needs_approval_setting")
        rest = args[1:]
        try:
            if isinstance(setting, bool):
                if setting or not self._has_plugin_gates():
                    return setting
                hook_id, outcomes = None, []
            elif callable(setting):
                hook_id = self.callable_id(getattr(setting, "_failsecure_policy", setting))
                outcomes = [await self.ahook_call(hook_id, setting, *rest, _validate=_approval_verdict)]
            else:
                return await wrapped(*args, **kwargs)  # upstream's own UserError / default
            named = _function_call.get()
            tool, arguments = (named[0], self._arguments(named[1])) if named is not None else (None, rest[1] if len(rest) > 1 else None)
            call_id = plain_str(rest[2]) if len(rest) > 2 else None
            decision = await self.adecide(tool, outcomes, call_id=call_id, arguments=arguments)
            if decision.action is Action.DENY:
                if outcomes and outcomes[0].failure is not None:
                    if self._deny_at_tool(tool, call_id, decision.deny_text):
                        return False
                elif named is None:  # a plugin gate or ``required`` denied a non-function call
                    self._deny_at_tool(None, call_id, decision.deny_text)
            return self._ask_rendered(decision, hook_id, tool)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: a needs_approval that cannot be judged is the call's deny, audited
            named = _function_call.get() or (None,)
            decision = self.failed(exc, named[0], hook=self.hook_id(NEEDS_APPROVAL))
            call_id = plain_str(rest[2]) if len(rest) > 2 else None
            reason = decision.reason or failure_reason(self.hook_id(NEEDS_APPROVAL), Failure.RAISED)
            return not self._deny_at_tool(named[0], call_id, reason)

    def _deny_at_tool(self, tool: Optional[str], call_id: Optional[str], reason: str) -> bool:
        """A function tool call whose approval check failed is denied, not put to a human
        (who would not be told the check failed): ``needs_approval`` answers "no
        approval" and the guardrail loop, which runs before the tool, rejects the call with
        the audited reason. Another tool's call (shell, apply-patch, custom: no guardrail
        loop) is remembered by its call id: ``needs_approval`` answers "approval required"
        and the SDK's ``resolve_approval_status``, next, rejects it with the reason
        (returns False: the caller answers True). False with no call id: the call asks."""
        if call_id is None:
            return False
        if tool is None or _function_call.get() is None:
            if len(self._refused) >= 4096 and call_id not in self._refused:
                self._refused.pop(next(iter(self._refused)))
            self._refused[call_id] = reason
            return False
        if len(self._failed) >= 4096 and (tool, call_id) not in self._failed:
            self._failed.pop(next(iter(self._failed)))
        self._failed[(tool, call_id)] = reason
        return True

    @staticmethod
    def _ask_rendered(decision, hook_id: Optional[str], tool: Optional[str]) -> bool:
        """The Decision as ``needs_approval``'s bool. ASK asks. A deny of a call that is
        not a function tool's asks (``resolve_approval_status`` then rejects the call it
        remembered, ``_deny_at_tool``): an approval is never skipped. A deny of a function
        tool's call by another gate (a plugin gate, ``required``) is left to the guardrail
        path, which runs next and rejects the call with its reason."""
        action = decision.action
        if action is Action.ASK:
            return True
        if action is Action.DENY:
            own = hook_id is not None and any(o.hook == hook_id for o in decision.deciding)
            return own or tool is None
        return False

    def _arguments(self, raw: Any) -> Any:
        """The call's JSON arguments as a dict for the plugin gates (the only readers of
        a decision's arguments): not parsed when there are none."""
        return _view(raw) if self._has_plugin_gates() else None

    @staticmethod
    def _has_plugin_gates() -> bool:
        return plugin_gates()

    # ------------------------------------------------------------ tool input guardrails

    def to_verdict(self, native: Any) -> Verdict:
        """A tool input guardrail's answer: a ``ToolGuardrailFunctionOutput`` whose
        behavior is a dict of a known type. ``data`` = (kind, output)."""
        output_type = self._g.ToolGuardrailFunctionOutput
        if not isinstance(native, output_type):
            raise Invalid()
        behavior = vars(native).get("behavior")
        if type(behavior) is not dict:
            raise Invalid()
        kind = behavior.get("type")
        if type(kind) is not str:
            raise Invalid()
        if kind == "allow":
            return Verdict(action=Action.ALLOW, data=("allow", native))
        if kind == "reject_content":
            message = behavior.get("message")
            if type(message) is not str:
                raise Invalid()
            return Verdict(action=Action.DENY, reason=message, data=("reject_content", native))
        if kind == "raise_exception":
            return Verdict(action=Action.DENY, reason="raise_exception", data=("raise_exception", native))
        raise Invalid()

    def _guardrail_fn(self, guardrail: Any) -> Any:
        """The guardrail function to call under the guard: the plain function (so a sync
        one runs on the guard's worker with its deadline), or ``run`` of a subclass that
        overrides it."""
        base = self._g.ToolInputGuardrail
        if isinstance(guardrail, base) and getattr(type(guardrail), "run", None) is base.run:
            return guardrail.guardrail_function, guardrail.guardrail_function
        return getattr(guardrail, "run", guardrail), getattr(guardrail, "guardrail_function", guardrail)

    @staticmethod
    def _show_final(tool_context: Any, call: Any) -> None:
        """Show the gates what the tool will run with: the call's own arguments."""
        if call is None:
            return
        if getattr(tool_context, "tool_call", call) is not call:
            tool_context.tool_call = call
        arguments = getattr(call, "arguments", None)
        if not _same_text(getattr(tool_context, "tool_arguments", None), arguments):
            tool_context.tool_arguments = arguments

    @staticmethod
    def _current(tool_context: Any, call: Any) -> tuple:
        """(the arguments the tool runs with; whether the context still holds the call),
        pictured by ``_picture`` (the arguments parsed where they are a JSON object, so a
        stamped key is told apart from a rewrite). Read after ``_show_final``: what
        guardrails read is what runs."""
        arguments = getattr(call, "arguments", None) if call is not None else getattr(tool_context, "tool_arguments", None)
        return (arguments, getattr(tool_context, "tool_call", None) is call)

    async def _input_guardrails(self, wrapped, args, kwargs):
        kwargs = dict(zip(_LOOP_PARAMS, args), **kwargs)
        func_tool = kwargs.get("func_tool")
        tool_context = kwargs.get("tool_context")
        agent = kwargs.get("agent")
        results = kwargs.get("tool_input_guardrail_results")
        tool = plain_str(getattr(func_tool, "name", None))
        call_id = plain_str(getattr(tool_context, "tool_call_id", None))
        pre = _pre_approval.get()
        if pre:
            _pre_approval.set(False)
        failed = self._failed.pop((tool, call_id), None) if call_id is not None else None
        if failed is not None:
            return failed  # its needs_approval failed: denied (audited then), nobody asked
        try:
            guardrails = list(getattr(func_tool, "tool_input_guardrails", None) or ())
            call = getattr(tool_context, "tool_call", None)
            entry = getattr(call, "arguments", None) if call is not None else getattr(tool_context, "tool_arguments", None)
            ran: list = []  # [(guardrail, outcome)] of the last round
            data_type = self._g.ToolInputGuardrailData

            latest: dict = {}  # guardrail index -> its latest outcome

            def step(index: int, guardrail: Any) -> Any:
                fn, named = self._guardrail_fn(guardrail)
                hook = self.callable_id(named)

                async def run() -> list:  # one guardrail, shown the call as it is now
                    self._show_final(tool_context, call)
                    outcomes = await self.ahook_calls([(hook, fn, (data_type(context=tool_context, agent=agent),), None, None)])
                    self._show_final(tool_context, call)  # a decoy in tool_arguments never runs
                    latest[index] = outcomes[0]
                    return outcomes

                return run

            outcomes: list = []
            if guardrails:
                # guardrail by guardrail: a stamping guardrail settles, one after the last
                # rewrite runs once, a deny in any pass stands
                outcomes = await asettle(
                    [step(i, g) for i, g in enumerate(guardrails)], lambda: self._current(tool_context, call),
                    self._unsettled_hook, _picture, stamp_root=(0,), finish_pass=True,
                )
                ran.extend((guardrails[i], latest[i]) for i in sorted(latest))
                self._show_final(tool_context, call)
            arguments = self._arguments(getattr(call, "arguments", None) if call is not None else getattr(tool_context, "tool_arguments", None))
            decision = await self.adecide(tool, self._approval_present(func_tool) + outcomes, call_id=call_id, arguments=arguments)
            self._record(results, ran)
            rendered = self._render(decision, ran, tool_context, func_tool, pre)
            final = getattr(call, "arguments", None) if call is not None else getattr(tool_context, "tool_arguments", None)
            if rendered is None and not pre and guardrails and not _same_text(final, entry):
                rendered = await self._approval_again(func_tool, tool_context, tool, call_id, final)
            if rendered is None and not pre:
                self._granted(tool, call_id, final)  # this call may run once, with these arguments
            return rendered
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except self._tripwire:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: a bug here must not read as "no guardrail objected"; failed() says it and rejects
            decision = self.failed(exc, tool, call_id)
            return decision.reason or failure_reason("failsecure:internal", Failure.RAISED)

    def _approval_present(self, func_tool: Any) -> list:
        """A callable ``needs_approval`` of the tool is one of this call's hooks (the SDK
        judged the call with it before it got here): present for ``required``, with no
        opinion of its own in this decision (its answer was the approval)."""
        setting = getattr(func_tool, "needs_approval", None)
        if isinstance(setting, bool) or not callable(setting):
            return []
        hook_id = self.callable_id(getattr(setting, "_failsecure_policy", setting))
        present = self._present.get(hook_id)  # an Outcome is immutable: one per hook id
        if present is None:
            if len(self._present) >= 4096:
                self._present.clear()
            present = self._present[hook_id] = Outcome(hook=hook_id, verdict=ABSTAIN)
        return [present]

    def _record(self, results: Any, ran: list) -> None:
        """Each guardrail's valid output goes to the run's results, as upstream."""
        if not isinstance(results, list):
            return
        result_type = self._g.ToolInputGuardrailResult
        for guardrail, outcome in ran:
            if outcome.failure is None and outcome.verdict is not None and isinstance(outcome.verdict.data, tuple):
                results.append(result_type(guardrail=guardrail, output=outcome.verdict.data[1]))

    async def _approval_again(self, func_tool: Any, tool_context: Any, tool: Optional[str], call_id: Optional[str], final: Any) -> Optional[str]:
        """A guardrail rewrote the arguments after ``needs_approval`` (and any human
        approval) judged the model's: the approval setting judges the final arguments.
        A plain ``True`` approved the old arguments only; a callable is asked again. A call
        that wants approval now is rejected (no one can be asked here); one that does not
        runs. Returns the rejection text, or None."""
        setting = getattr(func_tool, "needs_approval", False)
        if setting is False:
            return None
        if callable(setting):
            hook_id = self.callable_id(getattr(setting, "_failsecure_policy", setting))
            parsed = _parsed(final)
            outcome = await self.ahook_call(hook_id, setting, tool_context, parsed if parsed is not None else {}, call_id, _validate=_approval_verdict)
        else:
            hook_id = self.hook_id("needs_approval")
            outcome = Outcome(hook=hook_id, verdict=_ASK)
        decision = await self.adecide_stage(tool, [outcome], call_id=call_id)
        if decision.action is Action.ALLOW or decision.action is Action.ABSTAIN:
            return None
        if decision.action is Action.ASK:
            return f"failsecure: hook '{hook_id}' asks for approval of the rewritten arguments; this call was not approved"
        return decision.reason or f"failsecure: hook '{hook_id}' denied the rewritten call"

    def _render(self, decision, ran: list, tool_context: Any, func_tool: Any, pre: bool = False) -> Optional[str]:
        action = decision.action
        if action is Action.ALLOW or action is Action.ABSTAIN:
            return None
        if action is Action.ASK:
            if pre or self._approved(tool_context, func_tool):
                return None  # the pre-approval pass: the approval interruption comes next
            hook = decision.primary.hook if decision.primary is not None else self.name
            return f"failsecure: hook '{hook}' asked for approval; this call was not approved"
        by_outcome = {id(outcome): guardrail for guardrail, outcome in ran}
        for outcome in decision.deciding:  # a guardrail's own raise_exception halts the run
            verdict = outcome.verdict
            if outcome.failure is None and verdict is not None and isinstance(verdict.data, tuple) and verdict.data[0] == "raise_exception":
                raise self._tripwire(guardrail=by_outcome.get(id(outcome)), output=verdict.data[1])
        if self.failure_behavior == "raise_exception":
            for outcome in decision.deciding:
                if outcome.failure is not None and id(outcome) in by_outcome:
                    output = self._g.ToolGuardrailFunctionOutput.raise_exception(
                        output_info={"failsecure": failure_reason(outcome.hook, outcome.failure)}
                    )
                    raise self._tripwire(guardrail=by_outcome[id(outcome)], output=output)
        return decision.reason or f"failsecure: the call to '{plain_str(getattr(func_tool, 'name', None))}' was denied"

    @staticmethod
    def _approved(tool_context: Any, func_tool: Any) -> bool:
        """A human approved this call: the SDK keys the approval of a namespaced tool
        (``tool_namespace``, an MCP-prefixed name) by its qualified name / lookup key, not
        its bare name, so every key the SDK files it under is asked. Approved when one
        says yes and none says no."""
        if isinstance(func_tool, _NoGuardrails):
            func_tool = func_tool.tool  # the namespace is the tool's, not the stand-in's
        try:
            keys = [func_tool.name]
            try:
                from agents import _tool_identity as identity

                keys += [k for k in identity.get_function_tool_approval_keys(
                    tool_name=func_tool.name,
                    tool_namespace=identity.get_function_tool_namespace(func_tool),
                    tool_lookup_key=identity.get_function_tool_lookup_key_for_tool(func_tool),
                ) if k not in keys]
            except (ImportError, AttributeError, TypeError):  # a release without namespaces: the bare name
                pass
            statuses = [tool_context.is_tool_approved(key, tool_context.tool_call_id) for key in keys]
        except Exception:  # noqa: BLE001 - the SDK's approval lookup can raise anything: not approved, so the ask rejects the call
            return False
        return any(status is True for status in statuses) and not any(status is False for status in statuses)

    # ------------------------------------------------------------ doctor

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only input guardrail of a tool, through the SDK's real (patched)
        guardrail loop: True when the call would be rejected. The gate's ``None`` is read
        as ``ToolGuardrailFunctionOutput.allow()`` (the self-test's allowing gate)."""
        from agents import Agent, function_tool
        from agents.tool_context import ToolContext

        output_type = self._g.ToolGuardrailFunctionOutput

        def probe_gate(data):
            answer = gate(data)
            return output_type.allow() if answer is None else answer

        @function_tool
        def failsecure_self_test(command: str) -> str:
            """A tool that is never run."""
            return command

        failsecure_self_test.tool_input_guardrails = [self._g.ToolInputGuardrail(guardrail_function=probe_gate)]
        context = ToolContext(context=None, tool_name="failsecure_self_test", tool_call_id="failsecure-self-test", tool_arguments='{"command": "x"}')
        agent = Agent(name="failsecure-self-test")
        loop = getattr(self._te, GUARDRAIL_LOOP)

        async def dispatch():
            try:
                return await loop(func_tool=failsecure_self_test, tool_context=context, agent=agent, tool_input_guardrail_results=[])
            except self._tripwire:
                return "tripwire"

        rejected = self.run_probe(lambda: asyncio.run(dispatch()), default="no answer")
        return rejected is not None


__all__ = ["OpenAIAgentsAdapter", "FAILURE_BEHAVIORS"]
