"""crewai: the before-tool-call hooks run under the guard, the core decides.

CrewAI (1.15.3+) runs every ``pre_tool_call`` hook through one generic dispatcher,
``crewai.hooks.dispatch``: ``_invoke_hook`` swallows every exception except
``HookAborted`` ("fail-open ... to preserve the framework's protection against a buggy
user hook"), there is no deadline, and ``before_tool_call_reducer`` blocks only on
``result is False`` (a junk answer runs the tool). A hook may also rewrite
``context.tool_input`` in place after an earlier hook approved it.

Every tool-call path (the ReAct text path in ``utilities.tool_utils``, sync and async;
the native function-calling paths in ``utilities.agent_utils`` and the agent executors)
asks ``tool_hooks.run_before_tool_call_hooks(context)``, which calls the module global
``tool_hooks.dispatch(PRE_TOOL_CALL, context, ...)`` and reads a ``HookAborted`` as
"blocked". The patch is one ``wrapt`` wrapper on that global, ``tool_hooks.dispatch``:

- ``PRE_TOOL_CALL``: the hooks come from upstream's own ``_resolve_hooks`` (global
  registrations, ``@before_tool_call``, crew-scoped ``@CrewBase`` methods and ``@on``
  hooks, then execution-scoped ones) at call time. Each hook is one guarded call
  (``hook_calls``: one thread hand-off for all of them, each with its own deadline);
  ``None`` abstains, ``True`` allows, ``False`` and ``HookAborted`` deny, anything else
  is INVALID. ``decide`` reduces them with the cross-framework gates, ``required`` and
  the config; a deny is raised as ``HookAborted`` so upstream's own call sites report
  the block. As upstream does, the hooks after a deny (or a raise the config counts as
  a deny) are not run.
- Argument integrity: the hooks run one by one under ``integrity.settle``: the hooks
  that judged the tool input before a later hook rewrote it judge it again (a hook
  that stamps a fresh value into a key it alone wrote is accepted; a hook after the
  last rewrite runs once), so every gate has judged the dict the tool really runs with. Before each hook, ``context.tool_input``/``tool_name``/``tool`` are
  bound back to what the call site runs (rebinding them never reaches the tool).
- ``POST_TOOL_CALL`` goes to upstream untouched (after-tool-call hooks are observers);
  only when the call was denied by failsecure, and the after hooks left CrewAI's own
  block text ("Tool execution blocked by hook. Tool: X") as it was, the Decision's reason
  (hook id + failure category) is appended to that text, which is what the model reads.

Hook ids: ``crewai:<module>.<qualname>`` of the user's function (the wrappers CrewAI
puts around decorated, filtered and crew-scoped hooks are looked through).
"""

from __future__ import annotations

import contextvars
import importlib
import inspect
import sys
from time import perf_counter
from typing import Any, Optional

from failsecure.adapter import Adapter, IdCache, PatchError, internal, names_in_code, settle, when_imported
from failsecure.verdict import ABSTAIN, Action, Verdict, exactly

TOOL_HOOKS = "crewai.hooks.tool_hooks"
#: a flow's declarative tool actions run their tool without the before-tool-call hooks
FLOW_ACTIONS = "crewai.flow.runtime._actions"
#: the ReAct path selects the tool to run by name again after the hooks judged one
TOOL_USAGE = "crewai.tools.tool_usage"
DISPATCH = "crewai.hooks.dispatch"
#: an MCP server config's callable ``tool_filter`` decides which of its tools an agent is offered
MCP_RESOLVER = "crewai.mcp.tool_resolver"
#: CrewAI's own text for a blocked tool call (every call site starts with it)
BLOCKED = "Tool execution blocked by hook."

#: the tool boundary (docs/ungoverned.md): the run entry points, (module, class, methods)
RUN_ENTRIES = (
    ("crewai.crew", "Crew", ("kickoff", "kickoff_async", "akickoff", "kickoff_for_each", "kickoff_for_each_async", "akickoff_for_each")),
    ("crewai.agent.core", "Agent", ("execute_task", "aexecute_task", "kickoff", "kickoff_async", "akickoff")),
    ("crewai.lite_agent", "LiteAgent", ("kickoff", "kickoff_async", "akickoff")),
    ("crewai.flow.runtime", "Flow", ("kickoff", "kickoff_async", "akickoff")),
)
#: ... and the innermost tool executions: every BaseTool class's own run/arun/_run/_arun
#: (the native path calls ``run``, a structured tool's ``invoke`` calls ``_run``) and the
#: structured tool's invoke/ainvoke (the ReAct path)
TOOL_CLASSES = (
    ("crewai.tools.base_tool", "BaseTool", ("run", "arun", "_run", "_arun")),
    ("crewai.tools.structured_tool", "CrewStructuredTool", ("invoke", "ainvoke", "_run")),
)

_ALLOW = Verdict(action=Action.ALLOW)
_DENY = Verdict(action=Action.DENY)


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


#: a hook raised HookAborted (CrewAI's explicit deny)
_ABORTED: Any = _Marker("HookAborted")
#: a hook not run because an earlier hook of the same round denied
_SKIPPED: Any = _Marker("skipped")
_FILTER_ANSWERS = ((True, _ALLOW), (False, _DENY), (None, _DENY))
_ANSWERS = ((None, ABSTAIN), (_SKIPPED, ABSTAIN), (True, _ALLOW), (False, _DENY), (_ABORTED, _DENY))


def _filter_verdict(native: Any) -> Verdict:
    """An MCP ``tool_filter``: exactly ``True`` lists the tool, ``False``/``None`` do not."""
    return exactly(native, _FILTER_ANSWERS)


class _Round:
    __slots__ = ("stopped",)

    def __init__(self) -> None:
        self.stopped = False


#: (the tool input of the denied call, the deny reason) until its after-hooks ran
#: (the tool object, its sanitized name) the last before-tool-call round judged: the ReAct
#: path's ``ToolUsage._select_tool`` runs that tool, not another of the same sanitized name
_judged_tool: "contextvars.ContextVar[Optional[tuple]]" = contextvars.ContextVar("failsecure_crewai_judged_tool", default=None)
_denied: "contextvars.ContextVar[Optional[tuple]]" = contextvars.ContextVar("failsecure_crewai_denied", default=None)


_tty: list = [None, False]  # (the stdin object last asked, its answer)


def _interactive() -> bool:
    """A human may be answering (``context.request_human_input`` reads stdin): stdin is
    a TTY. Asked once per stdin object (``isatty`` is a system call)."""
    stdin = sys.stdin
    if stdin is _tty[0]:
        return _tty[1]
    try:
        answer = bool(stdin is not None and stdin.isatty())
    except Exception:  # noqa: BLE001 - sys.stdin is whatever the application put there (closed: ValueError): not a terminal, the default deadlines hold
        answer = False
    _tty[0], _tty[1] = stdin, answer
    return answer


_asking = IdCache()  # user function -> it calls request_human_input


_ASKING = frozenset({"request_human_input"})


def _asks_human(hook: Any) -> bool:
    """The hook asks a person (``context.request_human_input``): named in its code, its
    nested functions', or a function of its own module it names (``names_in_code``),
    read once per hook. A hook that asks only through another module's helper keeps the
    default deadline (a slow answer then denies, never runs); so does one whose code
    cannot be read."""
    fn = _user_function(hook)
    known = _asking.get(fn)
    if known is not None:
        return known
    try:
        answer = names_in_code(fn, _ASKING)
    except Exception:  # noqa: BLE001 - a hook's own attributes can raise anything: not known to ask, the default deadline holds
        answer = False
    return _asking.put(fn, answer)


def _cell(fn: Any, name: str) -> Any:
    """The value a closure ``fn`` holds for the free variable ``name`` (or None)."""
    try:
        code = fn.__code__
        return fn.__closure__[code.co_freevars.index(name)].cell_contents
    except Exception:  # noqa: BLE001 - a hook's own attributes (__code__, __closure__) can raise anything: not unwrapped, named as it is
        return None


def _user_function(hook: Any) -> Any:
    """The user's own function behind CrewAI's wrappers: a ``*HookMethod.__get__``
    lambda (crew-scoped methods) and ``crew_base``'s per-crew ``filtered`` closures.
    (``functools.wraps`` wrappers already carry the user's names.)"""
    for _ in range(4):
        try:
            qualname = getattr(hook, "__qualname__", None)
            module = getattr(hook, "__module__", None)
        except Exception:  # noqa: BLE001 - a hostile __getattr__ on the hook: it is named as it is, not unwrapped
            return hook
        if type(qualname) is not str or type(module) is not str or not module.startswith("crewai."):
            return hook
        if qualname.endswith("HookMethod.__get__.<locals>.<lambda>"):
            method = _cell(hook, "self")
            inner = getattr(method, "_meth", None) if method is not None else None
            if inner is None:
                return hook
            hook = inner
        elif qualname.endswith("<locals>.filtered"):
            inner = _cell(hook, "bound_fn") or _cell(hook, "func")
            if inner is None:
                return hook
            hook = inner
        else:
            return hook
    return hook


def _run_hook(hook: Any, ctx: Any, original: tuple, state: _Round, stops: tuple) -> Any:
    """One hook, the way upstream's ``_invoke_hook`` calls it, inside the guard. As
    upstream, a block ends the round (the hooks after it are not run); but only a block
    that counts: ``stops`` is (its deny counts, its failure counts) under the config, so
    an observer's or an ``on_error = "allow"`` hook's failure never hides a later gate."""
    if state.stopped:
        return _SKIPPED
    ctx.tool_input, ctx.tool_name, ctx.tool = original
    try:
        result = hook(ctx)
    except _HookAborted.cls:
        state.stopped = stops[0]
        return _ABORTED
    except BaseException:
        state.stopped = stops[1]
        raise
    if result is False:
        state.stopped = stops[0]
    return result


class _GatedTool:
    """A flow tool action's tool behind the before-tool-call hooks: ``run`` asks them
    first (CrewAI's own ``run_before_tool_call_hooks``, which failsecure gates) and
    answers CrewAI's block text instead of running the tool. Everything else is the
    tool's. (Built once per action, so parallel runs share no state.)"""

    __slots__ = ("_tool", "_adapter")

    def __init__(self, tool: Any, adapter: "CrewAIAdapter") -> None:
        object.__setattr__(self, "_tool", tool)
        object.__setattr__(self, "_adapter", adapter)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_tool"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_tool"), name, value)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        tool = object.__getattribute__(self, "_tool")
        adapter = object.__getattribute__(self, "_adapter")
        if adapter.state != "patched":
            return tool.run(*args, **kwargs)
        tool_hooks = sys.modules[TOOL_HOOKS]
        # named as an agent's call sites name it (``sanitize_tool_name``): the hooks' tool
        # filters (``@before_tool_call(tools=[...])``) and policies compare with that name
        name = adapter._clean(getattr(tool, "name", None))
        ctx = tool_hooks.ToolCallHookContext(tool_name=name or "", tool_input=kwargs, tool=tool)
        if tool_hooks.run_before_tool_call_hooks(ctx):
            pending = _denied.get()
            _denied.set(None)
            reason = pending[1] if pending is not None else "failsecure: denied"
            return f"{BLOCKED} Tool: {ctx.tool_name}. {reason}"
        return tool.run(*args, **ctx.tool_input)


class _HookAborted:
    """CrewAI's ``HookAborted`` class, set by ``_patch`` (the shim catches it)."""

    cls: Any = ()


class CrewAIAdapter(Adapter):
    name = "crewai"
    fail_closed_upstream = ""
    modules = (TOOL_HOOKS, DISPATCH)
    self_test_junk = "DENY"

    def __init__(self) -> None:
        super().__init__()
        self._tool_hooks: Any = None
        self._dispatch: Any = None
        self._pre: Any = None
        self._resolve: Any = None
        self._locked: list = []  # (hook list, lockdown hook) inserted by _lockdown
        self._flow_watch = False
        self._flow_patched = False
        self._usage_watch = False
        self._usage_patched = False
        self._mcp_watch = False
        self._mcp_patched = False
        self._names: dict = {}  # id(tool) -> (tool, its sanitized name)
        self._schema_cache: dict = {}  # args_schema class -> its JSON schema's property names

    # ------------------------------------------------------------ patching

    def _targets(self) -> tuple:
        tool_hooks = importlib.import_module(TOOL_HOOKS)
        dispatch = importlib.import_module(DISPATCH)
        points = getattr(dispatch, "InterceptionPoint", None)
        pre = getattr(points, "PRE_TOOL_CALL", None)
        post = getattr(points, "POST_TOOL_CALL", None)
        if pre is None or post is None:
            raise PatchError(f"{DISPATCH}.InterceptionPoint.PRE_TOOL_CALL")
        aborted = getattr(dispatch, "HookAborted", None)
        if not (isinstance(aborted, type) and issubclass(aborted, Exception)) or getattr(tool_hooks, "HookAborted", None) is not aborted:
            raise PatchError(f"{DISPATCH}.HookAborted")
        if not callable(vars(tool_hooks).get("dispatch")):
            raise PatchError(f"{TOOL_HOOKS}.dispatch")
        if not callable(getattr(dispatch, "_resolve_hooks", None)):
            raise PatchError(f"{DISPATCH}._resolve_hooks")
        for attr in ("run_before_tool_call_hooks", "run_after_tool_call_hooks"):
            fn = getattr(tool_hooks, attr, None)
            names = getattr(getattr(fn, "__code__", None), "co_names", ())
            if not callable(fn) or "dispatch" not in names:
                raise PatchError(f"{TOOL_HOOKS}.{attr} (does not dispatch through {TOOL_HOOKS}.dispatch)")
        if "HookAborted" not in tool_hooks.run_before_tool_call_hooks.__code__.co_names:
            raise PatchError(f"{TOOL_HOOKS}.run_before_tool_call_hooks (does not read HookAborted as a block)")
        return tool_hooks, dispatch, pre, post, aborted

    def _patch(self) -> None:
        tool_hooks, dispatch, pre, post, aborted = self._targets()  # all checked before anything changes
        self._tool_hooks, self._dispatch, self._pre = tool_hooks, dispatch, pre
        self._resolve = dispatch._resolve_hooks
        _HookAborted.cls = aborted
        adapter = self

        def dispatch_wrapper(wrapped, instance, args, kwargs):
            point = args[0] if args else kwargs.get("point")
            if point == pre:
                ctx = args[1] if len(args) > 1 else kwargs.get("ctx")
                tool = getattr(ctx, "tool", None)
                judged = (tool, adapter._clean(getattr(ctx, "tool_name", None)), getattr(ctx, "tool_input", None))
                _judged_tool.set(judged if tool is not None else None)
                return adapter._gate(ctx)
            if point == post:
                result = wrapped(*args, **kwargs)
                adapter._tell(args[1] if len(args) > 1 else kwargs.get("ctx"))
                return result
            return wrapped(*args, **kwargs)

        self.wrap(tool_hooks, "dispatch", dispatch_wrapper)
        self.bind_classes(RUN_ENTRIES + TOOL_CLASSES, self._bind_boundary)
        if FLOW_ACTIONS in sys.modules:
            self._patch_flow_actions(sys.modules[FLOW_ACTIONS])
        elif not self._flow_watch:
            self._flow_watch = True
            when_imported(FLOW_ACTIONS, self._late_flow_actions)
        if TOOL_USAGE in sys.modules:
            self._patch_tool_usage(sys.modules[TOOL_USAGE])
        elif not self._usage_watch:
            self._usage_watch = True
            when_imported(TOOL_USAGE, self._late_tool_usage)
        if MCP_RESOLVER in sys.modules:
            self._patch_mcp(sys.modules[MCP_RESOLVER])
        elif not self._mcp_watch:
            self._mcp_watch = True
            when_imported(MCP_RESOLVER, self._late_mcp)

    def _bind_boundary(self, entry: tuple, cls: type) -> None:
        """The run entry points and the innermost tool calls of every module of them that
        is loaded."""
        _, class_name, attrs = entry
        if entry in TOOL_CLASSES:
            self.wrap_subclasses(cls, attrs, self._read_structured if class_name == "CrewStructuredTool" else self._read_tool)
            return
        for attr in attrs:
            if callable(vars(cls).get(attr)):
                self.wrap_run(cls, attr)

    def _clean(self, name: Any) -> Optional[str]:
        """A tool name as CrewAI's call sites give it to the hooks (``sanitize_tool_name``)."""
        if type(name) is not str:
            return None
        clean = self._names.get(name)
        if clean is None:
            sanitize = getattr(sys.modules.get("crewai.utilities.string_utils"), "sanitize_tool_name", None)
            clean = sanitize(name) if sanitize is not None else name
            if len(self._names) > 4096:
                self._names.clear()
            self._names[name] = clean
        return clean

    def _tool_name(self, tool: Any) -> Optional[str]:
        return self._clean(getattr(tool, "name", None))

    def _read_tool(self, tool: Any, args: tuple, kwargs: dict) -> tuple:
        """A BaseTool's run/arun/_run/_arun call: the keyword arguments the native path
        passes (a positional call is no dispatcher's: it matches no decision)."""
        name = self._tool_name(tool)
        # "the tool's own execution" is this tool object's (its run calling its _run), never
        # another tool's of the same name (a wrapper registered under a gated tool's name)
        return name, None, (kwargs if not args else (args, kwargs)), (name, id(tool)), None

    def _read_structured(self, tool: Any, args: tuple, kwargs: dict) -> tuple:
        """A structured tool's invoke/ainvoke(input, config=None, **kwargs) (the ReAct
        path) or its legacy ``_run``: one execution with the BaseTool it was made from."""
        name = self._tool_name(tool)
        original = getattr(tool, "_original_tool", None)
        key = (name, id(tool if original is None else original))
        if "input" in kwargs:
            return name, None, kwargs["input"], key, None
        if len(args) >= 1 and type(args[0]) in (dict, str):
            return name, None, args[0], key, None
        return name, None, (kwargs if not args else (args, kwargs)), key, None

    def _late_tool_usage(self, module: Any) -> None:
        if self.state == "patched" and not self._usage_patched:
            self.patch_late(self._patch_tool_usage, module)

    def _patch_tool_usage(self, module: Any) -> None:
        """The ReAct path (``tool_utils.execute_tool_and_check_finality``) tells the hooks
        the tool its name map holds for the sanitized name (the last tool of that name),
        then ``ToolUsage.use`` selects the tool to run by name again (the first, or a
        fuzzy match): with two tools whose names sanitize alike, another tool than the
        judged one ran. The selection is the judged tool whenever the name is its name."""
        usage = getattr(module, "ToolUsage", None)
        if not isinstance(usage, type) or not callable(vars(usage).get("_select_tool")):
            raise PatchError(f"{TOOL_USAGE}.ToolUsage._select_tool")
        for attr in ("use", "ause"):
            if not callable(vars(usage).get(attr)):
                raise PatchError(f"{TOOL_USAGE}.ToolUsage.{attr}")
        adapter = self

        def use(wrapped, instance, args, kwargs):
            adapter._judged_input(args[0] if args else kwargs.get("calling"))
            return wrapped(*args, **kwargs)

        def select(wrapped, instance, args, kwargs):
            judged = _judged_tool.get()
            _judged_tool.set(None)  # one round judges one selection
            selected = wrapped(*args, **kwargs)
            if judged is None or selected is judged[0] or adapter.state != "patched":
                return selected
            tool, name = judged[0], judged[1]
            try:
                same = name is not None and adapter._clean(getattr(selected, "name", None)) == name
                offered = any(t is tool for t in (getattr(instance, "tools", None) or ()))
            except Exception:  # noqa: BLE001 - a tool's own name property or list can raise anything: upstream's selection, as before
                return selected
            return tool if same and offered else selected

        self.wrap(usage, "_select_tool", select)
        for attr in ("use", "ause"):
            self.wrap(usage, attr, use)
        self._usage_patched = True

    def _judged_input(self, calling: Any) -> None:
        """The ReAct path gives the hooks a dict of its own when the model gave no
        arguments (``tool_calling.arguments if tool_calling.arguments else {}``), then runs
        the tool from ``calling.arguments``: a hook's in-place rewrite of that empty input
        was judged and never ran (the tool's defaults did). The calling carries the input
        the hooks judged, so that is what runs."""
        judged = _judged_tool.get()
        if judged is None or self.state != "patched":
            return
        judged_input = judged[2]
        try:
            arguments = calling.arguments
            if arguments is judged_input or arguments or type(judged_input) is not dict or not judged_input:
                return
            if self._clean(getattr(calling, "tool_name", None)) != judged[1]:
                return
            calling.arguments = judged_input
        except Exception as exc:  # noqa: BLE001 - crewai's calling object (a pydantic model) refused the judged input: said; the boundary still checks what runs
            internal(exc, "failsecure: crewai judged input not handed to the tool ({type})")

    def _late_mcp(self, module: Any) -> None:
        if self.state == "patched" and not self._mcp_patched:
            self.patch_late(self._patch_mcp, module)

    def _patch_mcp(self, module: Any) -> None:
        """An MCP server config's callable ``tool_filter`` decides which of the server's
        tools the agent is offered, so whether a model's call to one runs: upstream lists a
        tool on any truthy answer (``"no"`` listed it) and waits for ever on a hang. The
        resolver is handed a copy of the config whose filter runs under the guard."""
        resolver = getattr(module, "MCPToolResolver", None)
        if not isinstance(resolver, type) or not callable(vars(resolver).get("_resolve_native")):
            raise PatchError(f"{MCP_RESOLVER}.MCPToolResolver._resolve_native")
        adapter = self

        def resolve(wrapped, instance, args, kwargs):
            if adapter.state == "patched":
                if args:
                    args = (adapter._guarded_config(args[0]),) + tuple(args[1:])
                elif "mcp_config" in kwargs:
                    kwargs = dict(kwargs, mcp_config=adapter._guarded_config(kwargs["mcp_config"]))
            return wrapped(*args, **kwargs)

        self.wrap(resolver, "_resolve_native", resolve)
        self._mcp_patched = True

    def _guarded_config(self, config: Any) -> Any:
        """``config`` with its callable ``tool_filter`` under the guard (the user's config
        object is not changed). Called as upstream calls it (``(context, tool)``, or
        ``(tool)`` for a filter that takes one argument), only ``True`` lists the tool;
        ``False`` and ``None`` do not (as upstream); a raise, a hang past its deadline or
        junk is audited as its failure (a later decision point) and does not list it,
        unless the config lets that hook's failures allow."""
        callback = getattr(config, "tool_filter", None)
        if not callable(callback) or getattr(callback, "_failsecure_guarded", False):
            return config
        adapter = self

        def guarded(*args: Any) -> bool:
            if adapter.state != "patched":
                return callback(*args)
            try:
                inspect.signature(callback).bind(*args)
            except TypeError:
                raise  # upstream's call with (context, tool) then asks (tool)
            except ValueError:
                pass  # no signature to read: called as given
            hook_id = adapter.callable_id(callback)
            tool = args[-1] if args else None
            name = tool.get("name") if isinstance(tool, dict) else None
            outcome = adapter.hook_call(hook_id, callback, *args, _validate=_filter_verdict)
            if outcome.failure is None and outcome.verdict is not None:
                return outcome.verdict.action is Action.ALLOW
            decision = adapter.decide_stage(name if isinstance(name, str) else None, [outcome])
            return not decision.denied  # a failure the config tolerates lists it, as upstream

        guarded._failsecure_guarded = True  # type: ignore[attr-defined]
        guarded.__wrapped__ = callback  # type: ignore[attr-defined]
        try:
            return config.model_copy(update={"tool_filter": guarded})
        except Exception as exc:  # noqa: BLE001 - not a pydantic config as expected: said, the filter left as it is
            internal(exc, "failsecure: crewai MCP tool_filter not guarded ({type})")
            return config

    def _late_flow_actions(self, module: Any) -> None:
        if self.state == "patched" and not self._flow_patched:
            self.patch_late(self._patch_flow_actions, module)

    def _patch_flow_actions(self, module: Any) -> None:
        """A flow's tool action (``do: {tool: ...}``) calls ``self.tool.run(**args)`` with
        no before-tool-call hook: each ToolAction's tool is put behind the hooks (CrewAI's
        own ``run_before_tool_call_hooks``, so the same gates judge it as an agent's call)."""
        action = getattr(module, "ToolAction", None)
        if not isinstance(action, type) or not callable(vars(action).get("__init__")):
            raise PatchError(f"{FLOW_ACTIONS}.ToolAction.__init__")
        adapter = self

        def init(wrapped, instance, args, kwargs):
            wrapped(*args, **kwargs)
            tool = getattr(instance, "tool", None)
            if tool is not None and not isinstance(tool, _GatedTool):
                instance.tool = _GatedTool(tool, adapter)

        self.wrap(action, "__init__", init)
        self._flow_patched = True

    def _unpatch(self) -> None:
        self.restore()
        self._names.clear()
        self._schema_cache.clear()
        self._flow_patched = False
        self._usage_patched = False
        self._mcp_patched = False
        for hooks, hook in self._locked:
            try:
                while hook in hooks:
                    hooks.remove(hook)
            except Exception:  # noqa: BLE001 - crewai's hook list (a hostile __eq__): the lockdown hook stays, which only denies more
                pass
        self._locked.clear()

    def _lockdown(self) -> None:
        """The dispatcher is not where expected: a deny hook goes first in CrewAI's
        before-tool-call registry (a ``False`` answer blocks in every release with the
        hook API, and upstream stops at the first block), and
        ``run_before_tool_call_hooks`` (where it exists) answers "blocked"."""
        tool_hooks = sys.modules.get(TOOL_HOOKS)
        if tool_hooks is None:
            return
        adapter = self

        def failsecure_refused(context: Any = None, *args: Any, **kwargs: Any) -> bool:
            tool = getattr(context, "tool_name", None)
            adapter.decide(tool if isinstance(tool, str) else None, ())
            return False

        hooks = vars(tool_hooks).get("_before_tool_call_hooks")
        if isinstance(hooks, list):
            hooks.insert(0, failsecure_refused)
            self._locked.append((hooks, failsecure_refused))

        def run_before_tool_call_hooks(context: Any = None, *args: Any, **kwargs: Any) -> bool:
            failsecure_refused(context)
            return True

        original = vars(tool_hooks).get("run_before_tool_call_hooks")
        if callable(original):
            for module in self.bindings(original, "crewai"):  # tool_hooks and the call sites that imported it by name
                self.replace(module, "run_before_tool_call_hooks", run_before_tool_call_hooks)

    # ------------------------------------------------------------ the gate

    def hook_name(self, hook: Any) -> str:
        """The hook id of one registered before-tool-call hook."""
        return self.callable_id(_user_function(hook))

    def _gate(self, ctx: Any) -> Any:
        """Every ``pre_tool_call`` hook under the guard -> the context (run the tool) or
        ``HookAborted`` (blocked, read by upstream's ``run_before_tool_call_hooks``)."""
        start = perf_counter()
        self.bind_loaded()
        tool = None
        hooks: list = []
        original: tuple = (getattr(ctx, "tool_input", None),)
        try:
            _denied.set(None)
            tool = getattr(ctx, "tool_name", None)
            tool = tool if isinstance(tool, str) else None
            hooks = list(self._resolve(self._pre))
            original = (ctx.tool_input, ctx.tool_name, ctx.tool)
            outcomes: list = []
            if hooks:
                tty = _interactive()
                ids = [self.hook_name(h) for h in hooks]
                stops = [(self.would_deny(hid, False), self.would_deny(hid, True)) for hid in ids]
                # only a hook that asks a person (``context.request_human_input``) waits
                # for one without the default deadline, and only when stdin is a terminal
                asks = [tty and _asks_human(h) for h in hooks]

                def step(i: int) -> Any:
                    def run() -> list:  # one hook on the call as it is now
                        try:
                            return self.hook_calls(
                                [(ids[i], _run_hook, (hooks[i], ctx, original, _Round(), stops[i]), None, None)],
                                _interactive=asks[i],
                            )
                        finally:
                            ctx.tool_input, ctx.tool_name, ctx.tool = original

                    return run

                # hook by hook: a stamping hook settles, a hook after the last rewrite runs once
                outcomes = settle([step(i) for i in range(len(hooks))], lambda: original[0], self.hook_id("pre_tool_call"))
            decision = self.decide(tool, outcomes, arguments=original[0])
            self.granted(decision, self._clean(tool), None, original[0],
                         also=self._normalised(ctx.tool, original[0]))
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as "no hook objected": failed() says it and the call is denied
            decision = self.failed(exc, tool)
        if not decision.denied:
            self._telemetry(hooks, start, None, None)
            return ctx
        primary = decision.primary
        source = primary.hook if primary is not None else self.hook_id("pre_tool_call")
        reason = decision.reason
        _denied.set((original[0], reason))
        self._telemetry(hooks, start, reason, source)
        raise _HookAborted.cls(reason, source)

    def _normalised(self, tool: Any, arguments: Any) -> tuple:
        """The judged arguments as CrewAI's ReAct path passes them to the tool: only the
        keys of the tool's argument schema, as ``ToolUsage`` filters them (the properties
        of ``args_schema.model_json_schema()``: a field's alias where it has one)."""
        if type(arguments) is not dict:
            return ()
        accepted = self._schema_keys(getattr(tool, "args_schema", None))
        if accepted is None or all(k in accepted for k in arguments):
            return ()
        return ({k: v for k, v in arguments.items() if k in accepted},)

    def _schema_keys(self, schema: Any) -> Optional[frozenset]:
        """The property names of an argument schema's JSON schema (cached per schema
        class), or None when it has none (``ToolUsage`` then passes every argument)."""
        try:
            keys = self._schema_cache.get(schema)
        except TypeError:  # an unhashable schema object: read it each time
            keys = None
        if keys is not None:
            return keys or None
        try:
            keys = frozenset(schema.model_json_schema()["properties"].keys())
        except Exception:  # noqa: BLE001 - no schema, or one pydantic cannot render: ToolUsage passes every argument too
            keys = frozenset()
        try:
            if len(self._schema_cache) > 1024:
                self._schema_cache.clear()
            self._schema_cache[schema] = keys
        except TypeError:
            pass
        return keys or None

    def _tell(self, ctx: Any) -> None:
        """After the after-hooks of a call failsecure denied: the reason goes into
        CrewAI's own block text, the tool result the model reads."""
        pending = _denied.get()
        if pending is None:
            return
        _denied.set(None)
        try:
            if getattr(ctx, "tool_input", None) is not pending[0]:
                return
            result = ctx.tool_result
            if type(result) is str and result.startswith(BLOCKED) and pending[1] not in result:
                ctx.tool_result = f"{result.rstrip('.')}. {pending[1]}"
        except Exception as exc:  # noqa: BLE001 - the deny stands; only its reason in crewai's block text is lost (ctx is crewai's object), said
            internal(exc, "failsecure: crewai deny text not set ({type})")

    def _telemetry(self, hooks: list, start: float, reason: Optional[str], source: Optional[str]) -> None:
        """The HookDispatchedEvent upstream's ``run_hooks`` emits when hooks ran."""
        if not hooks:
            return
        emit = getattr(self._dispatch, "_emit_telemetry", None)
        if emit is None:
            return
        try:
            outcome = "aborted" if reason is not None else "proceeded"
            emit(self._pre, outcome, len(hooks), (perf_counter() - start) * 1000.0, reason, source)
        except Exception:  # noqa: BLE001 - crewai's own telemetry emitter: its failure never touches the decision
            pass

    def to_verdict(self, native: Any) -> Verdict:
        """A before-tool-call hook's answer: ``None`` abstains, ``True`` allows, ``False``
        and ``HookAborted`` deny; anything else (``0``, ``"DENY"``, a dict, a coroutine,
        a hostile object) is INVALID."""
        return exactly(native, _ANSWERS)

    # ------------------------------------------------------------ doctor

    def inventory(self) -> list[str]:
        """The hook ids of the before-tool-call hooks CrewAI would run now outside any
        execution scope: the global registrations and ``@before_tool_call`` hooks."""
        if self._resolve is None:
            return []
        return [self.hook_name(hook) for hook in list(self._resolve(self._pre))]

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only before-tool-call hook (in an empty execution scope),
        through CrewAI's real ``run_before_tool_call_hooks``: True when it blocks."""
        tool_hooks, dispatch = self._tool_hooks, self._dispatch
        registry = dispatch.get_global_hook_list(self._pre)
        saved = list(registry)
        registry[:] = [gate]
        try:
            ctx = tool_hooks.ToolCallHookContext(tool_name="failsecure-self-test", tool_input={}, tool=None)
            with dispatch.scoped_hooks({}):
                blocked = tool_hooks.run_before_tool_call_hooks(ctx)
            _denied.set(None)
            return bool(blocked)
        finally:
            registry[:] = saved


__all__ = ["CrewAIAdapter"]
