"""google-adk: every before-tool callback is a gate under the guard, the core decides.

ADK runs a tool call's before-tool callbacks in two stages
(``flows/llm_flows/tools/_caller.py`` from 2.8, ``flows/llm_flows/functions.py`` before):

1. ``PluginManager.run_before_tool_callback``: the runner plugins'
   ``BasePlugin.before_tool_callback``, in registration order; the first answer that is
   not ``None`` wins and the rest never run; a raise becomes a ``RuntimeError``;
2. only when no plugin answered: the agent's ``before_tool_callback`` (one callable or a
   list, ``LlmAgent.canonical_before_tool_callbacks``), again first answer wins.

``None`` means "proceed"; a dict means "skip the tool and use this as its result". That
stays. What fails open upstream: no deadline (a hanging callback hangs the run), junk
answers (a string, ``False``, any object) become the tool's result or are ignored, an
earlier ``None`` hides nothing but an earlier answer hides every later gate, and an agent
callback can rewrite ``tool_args`` in place after every plugin approved them, so the tool
runs with arguments no plugin judged.

The patch:

- ``PluginManager.run_before_tool_callback`` (wrapt) runs BOTH stages itself: every
  plugin's ``before_tool_callback`` and then every agent ``before_tool_callback``, each one
  guarded call (deadline, any exception, junk -> one Outcome), one by one under
  ``integrity.asettle``: the callbacks that judged the arguments before a later one
  rewrote them judge again (a stamp, a fresh value in a key the same callback alone
  wrote, is accepted; a callback after the last rewrite runs once), so every gate has
  judged the arguments the tool runs with. ``adecide`` reduces the outcomes with
  the cross-framework gates, ``required`` and the config: one audited decision per call.
- ``LlmAgent.canonical_before_tool_callbacks`` (the property the agent stage reads) then
  yields one failsecure callback instead of the user's list: it answers ``None`` for a
  call the plugin stage has already judged (so the agent callbacks do not run twice), and
  gates the agent's callbacks itself for a call that reached the agent stage any other way.
- A workflow ``ToolNode`` (2.13) calls the plugin stage with no agent stage after it:
  there only the plugins are gates, as upstream.

Deny shape: ADK's own function response for a skipped tool. A gate's own dict is passed
through untouched (it is the result ADK would have used); every other deny answers
``{"error": "failsecure: hook '<id>' failed closed (<category>)"}`` (the shape of ADK's
own "tool not found" response). A failed ``require_confirmation`` predicate, or a tool
class's own ``check_require_confirmation`` (any BaseTool subclass but FunctionTool and
McpTool, classes defined later too), denies in the same shape, answered where ADK turns
its answer into the call's response (``apply_confirmation_gate`` from 2.8, the tool's
``run_async`` in every release).

On resume (the human's ``ToolConfirmation`` in the next turn) ADK re-executes the paused
call through the same stages: a deny of a confirmation stage of that call stands for the
rest of the resume, and a tool or final arguments other than those the gates judged when
ADK paused the call deny as an argument change (the human confirmed another call).

The tool boundary (docs/ungoverned.md): ``Runner.run_async``/``run_live``/``run_debug``
and ``BaseAgent.run_async``/``run_live`` are run entry points; every ``BaseTool`` class's
own ``run_async`` is the innermost call, matched by ADK's function call id and the
arguments the before-tool stages allowed.

Hook ids: ``google-adk:plugin:<plugin name>`` for a plugin, ``google-adk:<module>.<qualname>``
for an agent callback.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import sys
import threading
from types import SimpleNamespace
from typing import Any, Optional

from failsecure.adapter import (
    CHANGED,
    Adapter,
    IdCache,
    PatchError,
    Ungoverned,
    asettle,
    fingerprint,
    is_async,
    nonempty_str,
    on_loop,
    plain_str,
    when_imported,
)
from failsecure.verdict import ABSTAIN, Action, Decision, Failure, Invalid, Outcome, Verdict

PLUGIN_MANAGER = "google.adk.plugins.plugin_manager"
LLM_AGENT = "google.adk.agents.llm_agent"
PIPELINE = "google.adk.utils._callback_pipeline"
TOOL_NODE = "google.adk.workflow._tool_node"
#: the ToolNode method that calls the plugin stage with no agent stage after it
TOOL_NODE_CALLER = "_run_tool_with_plugin_callbacks"
PROPERTY = "canonical_before_tool_callbacks"
CALLBACK = "before_tool_callback"
#: the tools whose ``require_confirmation`` may be a user predicate, and the method that
#: asks it (ADK calls it before the tool runs: from ``apply_confirmation_gate`` in 2.13,
#: from the tool's own ``run_async`` before, and again when a confirmation comes back)
CONFIRMING = (("google.adk.tools.function_tool", "FunctionTool"), ("google.adk.tools.mcp_tool.mcp_tool", "McpTool"))
CONFIRM = "check_require_confirmation"
#: where ADK turns the predicate's answer into the call's response: the tool's own
#: ``run_async`` (every release) and, from 2.8, ``apply_confirmation_gate`` before it
RUN = "run_async"
GATE_MODULE, GATE = "google.adk.tools._confirmation_utils", "apply_confirmation_gate"
#: the order ADK binds callback parameters positionally when the names do not match
_POSITIONAL = ("tool", "args", "tool_context")
#: paused calls (and standing denies) remembered at most, the oldest go first
MAX_PAUSED = 4096
#: the tool boundary (docs/ungoverned.md): the run entry points, (module, class, methods)
#: (``Runner.run`` is a sync generator that runs ``run_async`` on a thread of its own)
RUN_ENTRIES = (
    ("google.adk.runners", "Runner", ("run_async", "run_live", "run_debug")),
    ("google.adk.agents.base_agent", "BaseAgent", ("run_async", "run_live")),
)
#: ... and the innermost tool execution: every BaseTool class's own ``run_async``
TOOL_BASE = ("google.adk.tools.base_tool", "BaseTool", ("run_async",))


#: the decision of a call ADK holds for a human's confirmation (``granted``: its grant goes)
_HELD = Decision(verdict=Verdict(action=Action.ASK))
#: ... and of one a confirmation stage denied
_DENIED = Decision(verdict=Verdict(action=Action.DENY))

#: the tool context whose agent callbacks the plugin stage already ran (this task only)
_judged: "contextvars.ContextVar[Any]" = contextvars.ContextVar("failsecure_adk_judged", default=None)
#: (tool context, answer): the confirmation predicate already judged this call (this task
#: only), so ADK's later asks of it in the same call get that answer, not a second run
_asked: "contextvars.ContextVar[Any]" = contextvars.ContextVar("failsecure_adk_asked", default=None)
#: (tool context, the keys of the model's arguments) of the call the before-tool stages
#: judge in this task: a key a callback added (a stamp) is not part of what a resume
#: must match
_model_keys: "contextvars.ContextVar[Any]" = contextvars.ContextVar("failsecure_adk_model_keys", default=None)


class ADKAdapter(Adapter):
    name = "google-adk"
    fail_closed_upstream = ""
    modules = (PLUGIN_MANAGER, LLM_AGENT)

    def __init__(self) -> None:
        super().__init__()
        self._active = False
        self._manager_wrapped = False
        self._agent_class: Any = None  # LlmAgent, once its property is replaced
        self._agent_property: Any = None  # the property failsecure put in its place
        self._original_property: Any = None
        self._watching = False
        self._bound_watch = False  # TOOL_BASE's import watched for user tool classes
        self._agent_lock = threading.Lock()
        self._shapes = IdCache()  # function -> shape
        self._confirming: set = set()  # tool classes whose confirmation predicate is guarded
        self._confirm_watch: set = set()  # their modules watched for import
        #: user tool classes (any BaseTool subclass but those of CONFIRMING) whose own
        #: ``check_require_confirmation`` is the gate, guarded
        self._overriding: set = set()
        self._override_base = False  # BaseTool's subclasses are visited (now and later)
        self._gate_wrapped = False  # apply_confirmation_gate (2.8 and later)
        #: (session id, call id) -> the call ADK paused for a human's confirmation, as
        #: every gate judged it: (tool name, tool class, function, arguments' picture)
        self._paused: dict = {}
        #: (session id, call id) -> the deny of a confirmation stage that stands on resume
        self._stuck: dict = {}

    # ------------------------------------------------------------ patching

    def _patch(self) -> None:
        plugin_manager = importlib.import_module(PLUGIN_MANAGER)
        manager = getattr(plugin_manager, "PluginManager", None)
        base = getattr(plugin_manager, "BasePlugin", None)
        if manager is None or not callable(manager.__dict__.get("run_before_tool_callback")):
            raise PatchError(f"{PLUGIN_MANAGER}.PluginManager.run_before_tool_callback")
        if base is None or not callable(getattr(base, CALLBACK, None)):
            raise PatchError(f"{PLUGIN_MANAGER}.BasePlugin.{CALLBACK}")
        agent_module = sys.modules.get(LLM_AGENT)
        if agent_module is not None and hasattr(agent_module, "LlmAgent"):
            self._check_agent(agent_module)  # before anything changes
        adapter = self

        def run_before_tool_callback(wrapped, instance, args, kwargs):
            node = _from_tool_node()
            return adapter._plugin_stage(instance, kwargs.get("tool"), kwargs.get("tool_args"), kwargs.get("tool_context"), node)

        async def run_on_tool_error_callback(wrapped, instance, args, kwargs):
            error = kwargs.get("error")
            if isinstance(error, Ungoverned):  # the boundary denied a call inside the tool
                return {"error": str(error)}  # the call's answer, as a before-tool deny's
            return await wrapped(*args, **kwargs)

        self.wrap(manager, "run_before_tool_callback", run_before_tool_callback)
        if inspect.iscoroutinefunction(vars(manager).get("run_on_tool_error_callback")):
            self.wrap(manager, "run_on_tool_error_callback", run_on_tool_error_callback)
        self._manager_wrapped = True
        self._active = True
        self._ensure_agent_patch()
        for module_name, class_name in CONFIRMING:
            self._ensure_confirmation_patch(module_name, class_name)
        self._ensure_override_patch()
        self.bind_classes(RUN_ENTRIES + (TOOL_BASE,), self._bind_boundary)
        if not self._bound_watch:
            self._bound_watch = True
            when_imported(TOOL_BASE[0], lambda _module: self._ensure_override_patch())
        if self._agent_class is None and not self._watching and LLM_AGENT not in sys.modules:
            self._watching = True
            when_imported(LLM_AGENT, lambda module: self._ensure_agent_patch())

    def _bind_boundary(self, entry: tuple, cls: type) -> None:
        """The run entry points and the innermost tool call of every module of them that
        is loaded."""
        _, class_name, attrs = entry
        if entry is TOOL_BASE:
            self.wrap_subclasses(cls, attrs, self._read_tool)
            return
        gated = self._runner_gated if class_name == "Runner" else self._agent_gated
        for attr in attrs:
            if callable(vars(cls).get(attr)):
                self.wrap_run(cls, attr, gated=gated)

    @staticmethod
    def _read_tool(tool: Any, args: tuple, kwargs: dict) -> tuple:
        """A tool's ``run_async(*, args, tool_context)``: ADK's call id, the arguments."""
        call_args = kwargs["args"] if "args" in kwargs else (args[0] if args else None)
        context = kwargs["tool_context"] if "tool_context" in kwargs else (args[1] if len(args) > 1 else None)
        name = _tool_name(tool)
        return name, _call_id(context), call_args, name, None

    def _runner_gated(self, runner: Any) -> bool:
        """A gate of ADK is registered with what this runner runs: a plugin with a
        before-tool callback, or an agent's (below)."""
        manager = getattr(runner, "plugin_manager", None)
        if any(_overrides(plugin) for plugin in list(getattr(manager, "plugins", ()) or ())):
            return True
        return self._agent_gated(getattr(runner, "agent", None))

    @staticmethod
    def _agent_gated(agent: Any) -> bool:
        """The agent or one of its sub-agents has a before-tool callback or a tool with a
        ``require_confirmation`` predicate."""
        pending, seen = [agent], 0
        while pending and seen < 256:
            current = pending.pop()
            seen += 1
            if current is None:
                continue
            if getattr(current, CALLBACK, None):
                return True
            for tool in list(getattr(current, "tools", ()) or ()):
                if callable(getattr(tool, "_require_confirmation", None)) or _overrides_confirmation(tool):
                    return True
            pending.extend(list(getattr(current, "sub_agents", ()) or ()))
        return False

    def _check_agent(self, agent_module: Any) -> tuple[Any, Any]:
        agent_class = getattr(agent_module, "LlmAgent", None)
        prop = vars(agent_class).get(PROPERTY) if isinstance(agent_class, type) else None
        if not isinstance(prop, property) or prop.fget is None:
            raise PatchError(f"{LLM_AGENT}.LlmAgent.{PROPERTY}")
        return agent_class, prop

    def _ensure_agent_patch(self) -> None:
        """Replace ``LlmAgent.canonical_before_tool_callbacks`` once ``llm_agent`` is fully
        imported (the trigger module is imported while ``llm_agent`` is half-initialized,
        so this runs at activation, after the import, and at the first gated call)."""
        if self._agent_class is not None or not self._active:
            return
        agent_module = sys.modules.get(LLM_AGENT)
        if agent_module is None or not hasattr(agent_module, "LlmAgent"):
            return  # not imported yet: no LlmAgent can exist
        with self._agent_lock:
            if self._agent_class is not None or not self._active:
                return
            try:
                agent_class, original = self._check_agent(agent_module)
            except PatchError as exc:
                self.refuse(f"PatchError: {exc}")
                return
            adapter = self

            def canonical_before_tool_callbacks(agent):
                callbacks = original.fget(agent)
                if not callbacks:
                    return callbacks

                def failsecure_agent_gate(tool, args, tool_context):
                    return adapter._agent_stage(agent, callbacks, tool, args, tool_context)

                return [failsecure_agent_gate]

            replacement = property(canonical_before_tool_callbacks, doc=original.__doc__)
            self.replace(agent_class, PROPERTY, replacement)
            self._original_property = original
            self._agent_property = replacement
            self._agent_class = agent_class

    def _ensure_confirmation_patch(self, module_name: str, class_name: str) -> None:
        """Guard ``<tool class>.check_require_confirmation`` once its module is imported
        (now, or when it is: ``mcp_tool`` needs the optional ``mcp`` package)."""
        if not self._active:
            return
        module = sys.modules.get(module_name)
        tool_class = getattr(module, class_name, None) if module is not None else None
        if not isinstance(tool_class, type):
            if module_name not in self._confirm_watch:
                self._confirm_watch.add(module_name)
                when_imported(module_name, lambda _m: self._ensure_confirmation_patch(module_name, class_name))
            return
        with self._agent_lock:
            if tool_class in self._confirming or not self._active:
                return
            if not inspect.iscoroutinefunction(vars(tool_class).get(CONFIRM)):
                self.refuse(f"PatchError: {module_name}.{class_name}.{CONFIRM}")
                return
            adapter = self

            async def check_require_confirmation(wrapped, instance, args, kwargs):
                predicate = getattr(instance, "_require_confirmation", None)
                hook = adapter.callable_id(predicate) if callable(predicate) else None
                return await adapter._confirmation(wrapped, instance, args, kwargs, hook)

            async def run_async(wrapped, instance, args, kwargs):
                return await adapter._confirm_gate(wrapped, instance, kwargs.get("args"), kwargs.get("tool_context"), args, kwargs)

            self.wrap(tool_class, CONFIRM, check_require_confirmation)
            if inspect.iscoroutinefunction(vars(tool_class).get(RUN)):
                self.wrap(tool_class, RUN, run_async)
            self._confirming.add(tool_class)
        self._ensure_gate_patch()

    def _ensure_override_patch(self) -> None:
        """Guard the ``check_require_confirmation`` of every ``BaseTool`` subclass that
        defines its own (a user's tool class: its method is the gate, inventory row 5),
        those defined later too; FunctionTool's and McpTool's are the predicate's
        (``_ensure_confirmation_patch``), BaseTool's own answers False (no user code)."""
        if not self._active or self._override_base:
            return
        module = sys.modules.get(TOOL_BASE[0])
        base = getattr(module, TOOL_BASE[1], None) if module is not None else None
        if not isinstance(base, type) or not hasattr(module, TOOL_BASE[1]):
            return  # not imported yet (watched): no tool class can exist
        adapter = self

        def visit(cls: type) -> None:
            if cls is base or (cls.__module__, cls.__name__) in CONFIRMING or cls in adapter._overriding:
                return
            method = vars(cls).get(CONFIRM)
            if method is None or not callable(method) or getattr(method, "__isabstractmethod__", False):
                return
            if isinstance(method, (staticmethod, classmethod)) or hasattr(method, "__wrapped__"):
                return  # not a method ADK binds to the tool, or wrapped already: left as it is
            hook = adapter.callable_id(method)

            async def check_require_confirmation(wrapped, instance, args, kwargs):
                return await adapter._confirmation(wrapped, instance, args, kwargs, hook)

            adapter.wrap(cls, CONFIRM, check_require_confirmation)
            adapter._overriding.add(cls)

        with self._agent_lock:
            if not self._active or self._override_base:
                return
            self._override_base = True
            self.each_subclass(base, visit)
        self._ensure_gate_patch()  # where 2.13 asks it: apply_confirmation_gate

    def _ensure_gate_patch(self) -> None:
        """Guard ADK's ``apply_confirmation_gate`` (2.8 and later) where it is called: it
        asks the predicate and answers the call before the tool's ``run_async``."""
        module = sys.modules.get(GATE_MODULE)
        if module is None:
            if GATE_MODULE not in self._confirm_watch:
                self._confirm_watch.add(GATE_MODULE)
                when_imported(GATE_MODULE, lambda _m: self._ensure_gate_patch())
            return
        with self._agent_lock:
            if not self._active or self._gate_wrapped or not inspect.iscoroutinefunction(vars(module).get(GATE)):
                return
            adapter = self

            async def apply_confirmation_gate(wrapped, instance, args, kwargs):
                tool, call_args, tool_context = (list(args) + [None] * 3)[:3]
                tool = kwargs.get("tool", tool)
                call_args = kwargs.get("function_args", call_args)
                tool_context = kwargs.get("tool_context", tool_context)
                return await adapter._confirm_gate(wrapped, tool, call_args, tool_context, args, kwargs)

            self.wrap_everywhere(module, GATE, apply_confirmation_gate, "google.adk")
            self._gate_wrapped = True

    def _unpatch(self) -> None:
        self._active = False
        self.restore()
        self._manager_wrapped = False
        self._agent_class = self._agent_property = self._original_property = None
        self._shapes.clear()
        self._confirming.clear()
        self._overriding.clear()
        self._override_base = False
        self._gate_wrapped = False
        self._paused.clear()
        self._stuck.clear()

    def _lockdown(self) -> None:
        """The targets are not where expected: the plugin stage denies every tool call
        (the adapter is refused, so every decision denies)."""
        plugin_manager = sys.modules.get(PLUGIN_MANAGER)
        manager = getattr(plugin_manager, "PluginManager", None) if plugin_manager is not None else None
        if self._manager_wrapped or manager is None or not callable(getattr(manager, "run_before_tool_callback", None)):
            return
        adapter = self

        def locked(wrapped, instance, args, kwargs):
            return adapter._refused(kwargs.get("tool"), kwargs.get("tool_context"))

        self.wrap(manager, "run_before_tool_callback", locked)
        self._manager_wrapped = True

    async def _refused(self, tool: Any, tool_context: Any) -> dict:
        decision = await self.adecide(_tool_name(tool), (), call_id=_call_id(tool_context))
        return self._native(decision, ())  # type: ignore[return-value]

    # ------------------------------------------------------------ the gate

    async def _plugin_stage(self, manager: Any, tool: Any, tool_args: Any, tool_context: Any, node: bool = False) -> Optional[dict]:
        """Both stages of one tool call (the plugins, then the agent's callbacks unless a
        workflow ToolNode is calling) -> ADK's answer: None to run the tool, a dict to
        answer the call instead."""
        try:
            key = _call_key(tool_context)
            if getattr(tool_context, "tool_confirmation", None) is not None:  # a resume
                stuck = self._stuck.get(key) if key is not None else None
                if stuck is not None:  # denied while ADK checked the confirmation: it stands
                    return {"error": stuck}
            elif key is not None:
                # a new call of the model: one that reuses the id of an earlier call (a
                # model may) is not that call, neither its standing deny nor its pause
                self._stuck.pop(key, None)
                self._paused.pop(key, None)
            if type(tool_args) is dict and tool_context is not None:
                _model_keys.set((tool_context, tuple(tool_args)))
            self._ensure_agent_patch()
            calls = self._plugin_calls_of(manager, tool, tool_args, tool_context)
            agent_callbacks = None if node else self._agent_callbacks(tool_context)
            if agent_callbacks:
                calls += self._agent_calls(agent_callbacks, tool, tool_args, tool_context)
            return await self._agate(calls, tool, tool_args, tool_context, judged=bool(agent_callbacks))
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as ADK's "no answer" (run the tool): failed() says it and denies
            return self._native(self.failed(exc, _tool_name(tool), _call_id(tool_context)), ())

    async def _agent_stage(self, agent: Any, callbacks: list, tool: Any, args: Any, tool_context: Any) -> Optional[dict]:
        """The agent stage: None when the plugin stage already judged this call (with the
        agent's callbacks); otherwise the agent's callbacks as gates."""
        if tool_context is not None and _judged.get() is tool_context:
            _judged.set(None)
            return None
        try:
            calls = self._agent_calls(callbacks, tool, args, tool_context)
            return await self._agate(calls, tool, args, tool_context, judged=False)
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as ADK's "no answer" (run the tool): failed() says it and denies
            return self._native(self.failed(exc, _tool_name(tool), _call_id(tool_context)), ())

    async def _agate(self, calls: list, tool: Any, tool_args: Any, tool_context: Any, judged: bool) -> Optional[dict]:
        def step(hook: str, fn: Any, args: Any, kwargs: Any, plain: bool) -> Any:
            async def run() -> list[Outcome]:
                # a plain sync callback holds the loop while it runs, as upstream does (it
                # calls it on the loop); the rest are awaited under their deadline
                if plain:
                    return self.hook_calls([(hook, fn, args, kwargs, None)])
                return [await self.ahook_call(hook, fn, *args, **kwargs)]

            return run

        if calls:
            # a sync callback runs where ADK runs it, on the loop: on the worker (for its
            # deadline) it is lent the loop, which may ask for it (get_running_loop)
            loop = asyncio.get_running_loop()
            direct = all(plain or is_async(fn) for _, fn, _, _, plain in calls)
            calls = [c if is_async(c[1]) else (c[0], on_loop, (loop, c[1], *c[2]), c[3], c[4]) for c in calls]
            # callback by callback: a stamping callback settles, one after the last
            # rewrite runs once, a deny in any pass stands
            steps = [step(*c) for c in calls]
            if direct:
                # pass 1 as one batch: each run of plain sync callbacks one hand-off, held
                # on the loop as above; a callable object or partial (it may answer an
                # awaitable) keeps its own step, off the loop
                batch = [(hook, fn, args, kwargs, None) for hook, fn, args, kwargs, _ in calls]
                outcomes = await self.asettle_calls(batch, lambda: tool_args, self.hook_id("arguments"), steps,
                                                    hold_loop=True, finish_pass=True)
            else:
                outcomes = await asettle(steps, lambda: tool_args, self.hook_id("arguments"), finish_pass=True)
        else:
            outcomes = []
        call_id = _call_id(tool_context)
        decision = await self.adecide(_tool_name(tool), outcomes, call_id=call_id, arguments=tool_args, later=self._later(tool))
        self.granted(decision, _tool_name(tool), call_id, tool_args)
        answer = self._native(decision, outcomes)
        if answer is None and judged and tool_context is not None:
            _judged.set(tool_context)
        return answer

    def _later(self, tool: Any) -> tuple:
        """The gate of this call ADK asks after the before-tool stages: the tool's
        ``require_confirmation`` predicate, or its class's own ``check_require_confirmation``,
        when it is user code of a guarded tool class."""
        asked = self._confirm_hook(tool)
        return () if asked is None else (asked[1],)

    def _confirm_hook(self, tool: Any) -> Optional[tuple]:
        """(the method to ask under the guard, its hook id) of a tool whose confirmation
        runs user code: a predicate given to FunctionTool / McpTool (their method asks
        it), or a tool class's own ``check_require_confirmation`` (the method itself is
        the gate); None for upstream's (a static flag, BaseTool's own False)."""
        owner = next((c for c in type(tool).__mro__ if CONFIRM in c.__dict__), None)
        if owner is None:
            return None
        method = vars(owner)[CONFIRM]
        check = getattr(method, "__wrapped__", None)
        if check is None:
            return None  # not guarded (BaseTool's own, or a class failsecure did not wrap)
        if owner in self._overriding:
            return check, self.callable_id(check)
        predicate = getattr(tool, "_require_confirmation", None)
        if owner in self._confirming and callable(predicate):
            return check, self.callable_id(predicate)
        return None

    async def _confirmation(self, wrapped: Any, tool: Any, args: tuple, kwargs: dict, hook: Optional[str]) -> bool:
        """``check_require_confirmation`` -> ADK's answer (True: confirmation required).
        Asked where ``_confirm_gate`` does not stand before it (ADK's check of a
        confirmation that comes back), a failed predicate reads as a rejected
        confirmation; in the same call after ``_confirm_gate`` it is that gate's answer."""
        tool_context = kwargs.get("tool_context", args[1] if len(args) > 1 else None)
        known = _asked.get()
        if known is not None and tool_context is not None and known[0] is tool_context:
            return known[1]
        decision, answer = await self._judge_confirmation(wrapped, tool, args, kwargs, tool_context, hook)
        if decision is not None and decision.denied:
            reason = decision.reason
            _reject(tool_context, reason)
            self._stick(tool_context, reason)  # the call's answer where ADK then asks again
            return True
        return answer

    async def _confirm_gate(self, wrapped: Any, tool: Any, call_args: Any, tool_context: Any, args: tuple, kwargs: dict) -> Any:
        """Where ADK answers a call from its confirmation predicate (``apply_confirmation_gate``,
        the tool's ``run_async``): the predicate is asked here, once per call, under the
        guard. Its failure denies the call in the adapter's deny shape, ``{"error":
        "failsecure: hook '<id>' failed closed (<category>)"}``, the deny the audit
        records (the context also holds a rejected confirmation, so ADK reads the call
        as answered, not paused); any other answer is ADK's to act on as upstream does
        (True asks a human, False runs the tool).

        On resume (the human's confirmation in the context) the call must be the one ADK
        paused: a deny of a confirmation stage of this call stands, and a tool or
        arguments other than those every gate judged when ADK asked the human are
        denied as an argument change (``google-adk:arguments``, invalid)."""
        known = _asked.get()
        again = tool_context is not None and known is not None and known[0] is tool_context
        resumed = getattr(tool_context, "tool_confirmation", None) if tool_context is not None else None
        if resumed is not None and not again:
            answer = await self._resumed(tool, call_args, tool_context, resumed)
            if answer is not None:
                return answer
        asked = self._confirm_hook(tool) if tool_context is not None and not again else None
        if asked is None:
            return await self._pausing(wrapped, tool, call_args, tool_context, args, kwargs)
        check, hook = asked
        # the gate gets the objects the tool runs with (the arguments dict itself, or a
        # copy of it holding the same values): what it rewrites in place, after every
        # before-tool gate judged the call, no gate judged
        judged = fingerprint(call_args)
        decision, answer = await self._judge_confirmation(check, tool, (tool, call_args, tool_context), {}, tool_context, hook)
        if decision is not None and decision.denied:
            reason = decision.reason
            _reject(tool_context, reason)
            self._stick(tool_context, reason)
            return {"error": reason}
        if judged is not CHANGED and fingerprint(call_args) != judged:
            denied = await self._changed(tool, tool_context)
            if denied is not None:
                return denied
        _asked.set((tool_context, answer))
        return await self._pausing(wrapped, tool, call_args, tool_context, args, kwargs)

    async def _pausing(self, wrapped: Any, tool: Any, call_args: Any, tool_context: Any, args: tuple, kwargs: dict) -> Any:
        """ADK's own step; when it paused the call for a human's confirmation, the call as
        the gates judged it is remembered for the resume."""
        result = await wrapped(*args, **kwargs)
        try:
            key = _call_key(tool_context)
            actions = getattr(tool_context, "actions", None)
            requested = getattr(actions, "requested_tool_confirmations", None)
            if key is not None and isinstance(requested, dict) and key[1] in requested:
                # held for a human: the before-tool stages' allow no longer lets the tool
                # run (a retry of the held call, a wrapper, would run it unconfirmed)
                self.granted(_HELD, _tool_name(tool), key[1], None)
                shape = self._call_shape(tool, call_args, tool_context)
                if shape is not None:
                    _remember(self._paused, key, shape)
        except Exception:  # noqa: BLE001 - ADK's objects: nothing remembered, the resume is judged as upstream's plus the gates
            pass
        return result

    async def _resumed(self, tool: Any, call_args: Any, tool_context: Any, confirmation: Any) -> Optional[dict]:
        """A call ADK re-executes with a human's answer -> the deny that stands for it, or
        None (judge it as any call)."""
        key = _call_key(tool_context)
        if key is None:
            return None
        stuck = self._stuck.get(key)
        if stuck is not None:
            _reject(tool_context, stuck)
            return {"error": stuck}
        paused = self._paused.pop(key, None)
        if paused is None or getattr(confirmation, "confirmed", None) is not True:
            return None  # not paused in this process, or rejected (ADK answers it rejected)
        if self._call_shape(tool, call_args, tool_context) == paused:
            return None
        return await self._changed(tool, tool_context)

    async def _changed(self, tool: Any, tool_context: Any) -> Optional[dict]:
        """The call's arguments are not those every gate judged (a resume of another
        call, a confirmation gate's rewrite in place) -> its deny (``google-adk:arguments``,
        invalid), which stands on resume; None when the config lets it through."""
        hook = self.hook_id("arguments")
        call_id = _call_id(tool_context)
        try:
            decision = await self.adecide_stage(_tool_name(tool), [Outcome(hook=hook, failure=Failure.INVALID)], call_id=call_id)
        except Exception as exc:  # noqa: BLE001 - the call changed since the gates judged it: any failure to decide it is its deny, audited
            decision = self.failed(exc, _tool_name(tool), call_id, hook=hook)
        if not decision.denied:
            return None
        reason = decision.deny_text
        _reject(tool_context, reason)
        self._stick(tool_context, reason)
        return {"error": reason}

    def _call_shape(self, tool: Any, call_args: Any, tool_context: Any = None) -> Optional[tuple]:
        """What identifies a call for its resume: the tool (name, class, function) and the
        picture of the arguments the model's call has keys for, and the keys callbacks
        added (by name only: a stamp's fresh value on each pass is the same call); None
        when they cannot be pictured."""
        known = _model_keys.get()
        added: frozenset = frozenset()
        if known is not None and known[0] is tool_context and type(call_args) is dict:
            # a key a callback added counts by its presence (a stamp's value changes on
            # every pass; a key added on one pass only is another call)
            added = frozenset(k for k in call_args if k not in known[1])
            call_args = {k: call_args[k] for k in known[1] if k in call_args}
        picture = fingerprint(call_args)
        if picture is CHANGED:
            return None
        func = getattr(tool, "func", None)
        return (_tool_name(tool), type(tool).__qualname__, self.callable_id(func) if callable(func) else None, picture,
                added)

    def _stick(self, tool_context: Any, reason: str) -> None:
        """A confirmation stage denied the call: the deny stands on resume, and the grant
        the before-tool stages' allow gave the call goes (no other path runs it)."""
        key = _call_key(tool_context)
        if key is not None:
            _remember(self._stuck, key, reason)
            self.granted(_DENIED, None, key[1], None)

    async def _judge_confirmation(self, check: Any, tool: Any, args: tuple, kwargs: dict, tool_context: Any,
                                  hook: Optional[str]) -> tuple:
        """The confirmation of ``tool`` (its predicate, or its class's own method: ``hook``)
        under the guard -> (decision or None, ADK's answer). It runs with its deadline,
        any exception and an answer that is not a bool are failures. A human's rejection
        of this call stands whatever it says on resume. A static ``require_confirmation``
        (a bool, no user code; ``hook`` None) is left to upstream (decision None)."""
        if hook is None:
            return None, await check(*args, **kwargs)
        outcome = None
        try:
            outcome = await self.ahook_call(hook, check, *args, _validate=_confirmation_verdict, **kwargs)
            decision = await self.adecide_stage(_tool_name(tool), [outcome], call_id=_call_id(tool_context))
        except Exception as exc:  # noqa: BLE001 - a confirmation that cannot be decided is a deny (audited), never ADK's own answer
            decision = self.failed(exc, _tool_name(tool), _call_id(tool_context), hook=hook)
        if decision.denied:
            return decision, True
        confirmation = getattr(tool_context, "tool_confirmation", None)
        if confirmation is not None and getattr(confirmation, "confirmed", None) is not True:
            return decision, True  # a human rejected this call: ADK answers it rejected
        verdict = outcome.verdict if outcome is not None else None
        return decision, bool(verdict is not None and verdict.data is True)

    def _plugin_calls_of(self, manager: Any, tool: Any, tool_args: Any, tool_context: Any) -> list:
        calls = []
        for plugin in list(getattr(manager, "plugins", ()) or ()):
            if not _overrides(plugin):
                continue  # BasePlugin's own no-op: not a gate
            name = getattr(plugin, "name", None)
            callback = getattr(plugin, CALLBACK)
            hook = self.hook_id(f"plugin:{name}") if type(name) is str and name else self.callable_id(callback)
            plain = self._shape(callback)[1]
            calls.append((hook, callback, (), {"tool": tool, "tool_args": tool_args, "tool_context": tool_context}, plain))
        return calls

    def _agent_callbacks(self, tool_context: Any) -> Optional[list]:
        """The agent's own before-tool callbacks, when the agent stage will ask failsecure
        (its class reads the patched property); None otherwise (left to upstream)."""
        if self._agent_class is None:
            return None
        invocation = getattr(tool_context, "_invocation_context", None)
        agent = getattr(invocation, "agent", None)
        if agent is None or _class_attr(type(agent), PROPERTY) is not self._agent_property:
            return None
        return list(self._original_property.fget(agent) or ())

    def _agent_calls(self, callbacks: list, tool: Any, args: Any, tool_context: Any) -> list:
        kwargs = {"tool": tool, "args": args, "tool_context": tool_context}
        calls: list[tuple] = []
        for callback in callbacks:
            positional, plain, hook = self._shape(callback, agent=True)
            if positional:
                calls.append((hook, callback, (tool, args, tool_context), {}, plain))
            else:
                calls.append((hook, callback, (), kwargs, plain))
        return calls

    def _shape(self, callback: Any, agent: bool = False) -> tuple[bool, bool, str]:
        """(positional, plain, hook id) of a callback, cached. ``positional``: ADK 2.13 calls an
        agent callback positionally when its parameters are not named
        ``tool``/``args``/``tool_context`` (``_callback_pipeline._invoke_callback``).
        ``plain``: a plain sync function or method (not a coroutine function, not a
        callable object or partial that might hand back an awaitable)."""
        key = getattr(callback, "__func__", callback)
        known = self._shapes.get(key)
        if known is not None:
            return known
        hook = self.callable_id(callback)
        plain = (inspect.isfunction(key) or inspect.isbuiltin(key)) and not (
            inspect.iscoroutinefunction(key) or inspect.isasyncgenfunction(key)
        )
        positional = False
        pipeline = sys.modules.get(PIPELINE)
        if agent and pipeline is not None and callable(getattr(pipeline, "_invoke_callback", None)):
            try:
                signature = inspect.signature(callback)
                try:
                    signature.bind(tool=None, args=None, tool_context=None)
                except TypeError:
                    signature.bind(None, None, None)
                    positional = True
            except (ValueError, TypeError):
                positional = False
        shape = (positional, plain, hook)
        return self._shapes.put(key, shape)

    def _native(self, decision: Any, outcomes: Any) -> Optional[dict]:
        """A Decision as ADK's before-tool answer."""
        if decision.denied:
            primary = decision.primary
            data = primary.verdict.data if primary is not None and primary.verdict is not None else None
            if type(data) is dict:
                return data  # the gate's own answer, untouched
            return {"error": decision.reason}
        # an observer (role = "observer") that answered the call: ADK skips the tool for it
        for outcome in outcomes:
            if outcome.verdict is not None and type(outcome.verdict.data) is dict:
                return outcome.verdict.data
        return None

    def to_verdict(self, native: Any) -> Verdict:
        """``None``: proceed (no opinion). A plain dict with string keys: ADK's
        short-circuit result, a deny that answers the call itself. Anything else (a
        string, ``False``, a list, a dict subclass, a hostile object) is INVALID."""
        if native is None:
            return ABSTAIN
        if type(native) is not dict:
            raise Invalid()
        for key in native:
            if type(key) is not str:
                raise Invalid()
        return Verdict(action=Action.DENY, data=native)

    # ------------------------------------------------------------ doctor

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only plugin of a fresh, real ``PluginManager``, through its
        (patched) ``run_before_tool_callback``: True when ADK would skip the tool."""
        plugin_manager = sys.modules[PLUGIN_MANAGER]
        base: Any = plugin_manager.BasePlugin

        class SelfTestPlugin(base):
            pass

        plugin = SelfTestPlugin(name="failsecure-self-test")
        setattr(plugin, CALLBACK, gate)
        manager = plugin_manager.PluginManager(plugins=[plugin])
        tool = SimpleNamespace(name="failsecure-self-test")
        context = SimpleNamespace(function_call_id=None)

        answer = self.run_probe(lambda: asyncio.run(manager.run_before_tool_callback(tool=tool, tool_args={}, tool_context=context)))
        return answer is not None


# ---------------------------------------------------------------- helpers


def _confirmation_verdict(answer: Any) -> Verdict:
    """A confirmation predicate's answer: a bool (True: ask a human), no opinion on the
    call itself; anything else is INVALID (upstream reads falsy junk as "run it")."""
    if type(answer) is not bool:
        raise Invalid()
    return Verdict(action=Action.ABSTAIN, data=answer)


def _remember(store: dict, key: Any, value: Any) -> None:
    store.pop(key, None)
    store[key] = value
    while len(store) > MAX_PAUSED:
        del store[next(iter(store))]


def _call_key(tool_context: Any) -> Optional[tuple]:
    """(session id, call id) of a tool call: what a resume in a later turn shares with it."""
    call_id = _call_id(tool_context)
    if call_id is None:
        return None
    session = getattr(getattr(tool_context, "_invocation_context", None), "session", None)
    session_id = getattr(session, "id", None)
    return (plain_str(session_id), call_id)


def _reject(tool_context: Any, reason: str) -> None:
    """Answer the call as rejected, in ADK's own shape: a confirmation that says no."""
    from google.adk.tools.tool_confirmation import ToolConfirmation

    tool_context.tool_confirmation = ToolConfirmation(hint=reason, confirmed=False)


def _overrides_confirmation(tool: Any) -> bool:
    """The tool's class (not FunctionTool / McpTool, whose method asks a predicate) has a
    ``check_require_confirmation`` of its own that failsecure guards."""
    owner = next((c for c in type(tool).__mro__ if CONFIRM in c.__dict__), None)
    return owner is not None and (owner.__module__, owner.__name__) not in CONFIRMING and hasattr(
        vars(owner)[CONFIRM], "__wrapped__")


_overriding: dict = {}  # plugin class -> it overrides BasePlugin.before_tool_callback


def _overrides(plugin: Any) -> bool:
    """The plugin has a before-tool callback of its own (not BasePlugin's no-op)."""
    if CALLBACK in getattr(plugin, "__dict__", {}):
        return True
    cls = type(plugin)
    known = _overriding.get(cls)
    if known is None:
        base = sys.modules[PLUGIN_MANAGER].BasePlugin
        known = inspect.getattr_static(cls, CALLBACK, None) is not vars(base).get(CALLBACK)
        if len(_overriding) < 1024:
            _overriding[cls] = known
    return known


def _class_attr(cls: Any, name: str) -> Any:
    """``inspect.getattr_static(cls, name, None)`` for a plain class (the first class of
    its MRO whose own dict holds ``name``), without getattr_static's general machinery:
    asked on every gated call."""
    try:
        for klass in cls.__mro__:
            own = vars(klass)
            if name in own:
                return own[name]
    except Exception:  # noqa: BLE001 - a hostile metaclass (__mro__, a __dict__-less class): getattr_static's own walk answers
        return inspect.getattr_static(cls, name, None)
    return None


def _from_tool_node() -> bool:
    """The plugin stage is being called by a workflow ToolNode (no agent stage follows):
    the caller's frame, seen from the wrapt wrapper (one more frame without wrapt's C
    extension)."""
    try:
        frame: Any = sys._getframe(2)
    except ValueError:
        return False
    for _ in range(4):
        if frame is None:
            return False
        if frame.f_code.co_name == TOOL_NODE_CALLER and frame.f_globals.get("__name__") == TOOL_NODE:
            return True
        frame = frame.f_back
    return False


def _tool_name(tool: Any) -> Optional[str]:
    name = getattr(tool, "name", None)
    return plain_str(name)


def _call_id(tool_context: Any) -> Optional[str]:
    call_id = getattr(tool_context, "function_call_id", None)
    return nonempty_str(call_id)


__all__ = ["ADKAdapter"]
