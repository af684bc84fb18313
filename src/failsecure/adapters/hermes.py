"""hermes-agent: every ``pre_tool_call`` callback runs under the guard, the core decides.

hermes has one loop over its ``pre_tool_call`` callbacks (``PluginManager.invoke_hook``)
and one aggregator on top of it (``get_pre_tool_call_block_message`` up to 0.18.0,
``_get_pre_tool_call_directive_details`` / ``resolve_pre_tool_block`` from 0.18.1). The
loop logs and skips a raising plugin, has no deadline, and the aggregator ignores junk and
lets the first directive win, so an approve registered before a block hides the block.

The patch is one wrapper on ``PluginManager.invoke_hook`` for ``pre_tool_call`` only:

- each callback (Python plugin or shell hook) is one guarded call -> one Outcome;
- ``decide`` reduces them with the cross-framework gates, ``required`` and the config;
- the Decision goes back to hermes as the single directive the upstream aggregator
  honours: ``[{"action": "block", "message": ...}]`` for a deny,
  ``[{"action": "approve", ...}]`` for an ask (0.18.1+), ``[]`` otherwise.

So the upstream aggregator, the approval gate and every call site stay as they are. Two
more small wrappers: ``PluginContext.register_hook`` records which plugin registered a
callback (the hook id), and the aggregator entry points turn an exception the call sites
would swallow (and then run the tool) into a block.

Shell hooks (``hooks.pre_tool_call`` in config.yaml) are not called through their
closure, which turns every failure into ``None``: failsecure runs hermes' own ``_spawn``
with the hook's spec (its timeout bounded by failsecure's) and judges the raw result.

Hook ids: ``hermes-agent:<plugin key>`` (the ``name`` in plugin.yaml, the entry-point
name, or ``<category>/<name>``), ``hermes-agent:shell:<executable>#<hash>`` (the
basename of the command's executable and a hash of the whole command line, so a token
on it never reaches a deny text or the audit), and
``hermes-agent:<module>.<qualname>`` for a callback put in the hook list by other means.
"""

from __future__ import annotations

import contextvars
import copy
import importlib
import json
import os
import sys
from time import perf_counter
from typing import Any, Optional

from failsecure.adapter import (
    CHANGED,
    Adapter,
    Check,
    IdCache,
    Later,
    PatchError,
    activate,
    callable_name,
    command_name,
    current_config,
    fingerprint,
    nonempty_str,
    past_deadline,
    process_failure,
    run_command,
    same,
    snapshot,
    type_name,
)
from failsecure.verdict import ABSTAIN, Action, Failure, Invalid, Outcome, Verdict

EVENT = "pre_tool_call"
PLUGINS = "hermes_cli.plugins"
MIDDLEWARE = "hermes_cli.middleware"
SHELL = "agent.shell_hooks"
#: the aggregator entry points call sites import (lazily, inside try/except Exception)
ENTRY_POINTS = ("resolve_pre_tool_block", "get_pre_tool_call_block_message")
_DEFAULT_SHELL_BLOCK = "Blocked by shell hook."  # hermes' own default for a shell block
#: the tool boundary (docs/ungoverned.md): the agent's run entry point (``chat`` calls it)
RUN_ENTRY = ("run_agent", "AIAgent", ("run_conversation",))
#: ... and the innermost tool call: the registry's handler dispatch (every registered
#: tool's handler runs through it; hermes passes it no call id: matched by tool and the
#: judged arguments)
REGISTRY = ("tools.registry", "ToolRegistry", ("dispatch",))


class HermesAdapter(Adapter):
    name = "hermes-agent"
    fail_closed_upstream = ""  # detected from the code instead: see upstream_fail_closed
    modules = (PLUGINS,)
    supports_ask = True  # an ASK is hermes' approve directive, where the release has one (ask_api)

    def __init__(self) -> None:
        super().__init__()
        self._names: dict[int, tuple[Any, str]] = {}  # id(callback) -> (callback, plugin key)
        self._ids = IdCache()  # callback -> (hook id, shell spec)
        self._approve = False  # the release has the approve directive (0.18.1+)
        self.ask_api = False  # nothing seen yet: the patch says what the release has
        self._schema: Any = None  # OBSERVER_SCHEMA_VERSION, added to the hook kwargs (0.18.1+)

    # ------------------------------------------------------------ patching

    def upstream_fail_closed(self) -> bool:
        """hermes main (unreleased) has ``hermes_cli/plugins_dispatch.py``, whose
        ``invoke_hook`` turns a raising or timed-out ``pre_tool_call`` callback into a
        block. A release shipping it is left to its own dispatcher (not wrapped twice)."""
        try:
            dispatch = sys.modules.get(PLUGINS + "_dispatch")
            if dispatch is None:
                from importlib.util import find_spec

                if find_spec(PLUGINS + "_dispatch") is None:
                    return False
                dispatch = importlib.import_module(PLUGINS + "_dispatch")
            return EVENT in getattr(dispatch, "_HOOK_TIMEOUT_FAIL_CLOSED_HOOKS", ())
        except Exception:  # noqa: BLE001 - hermes' dispatch module cannot be read (an import can raise anything): failsecure gates it itself
            return False

    def _targets(self) -> tuple[Any, Any, Any]:
        plugins = importlib.import_module(PLUGINS)
        manager = getattr(plugins, "PluginManager", None)
        context = getattr(plugins, "PluginContext", None)
        if manager is None or not callable(manager.__dict__.get("invoke_hook")):
            raise PatchError(f"{PLUGINS}.PluginManager.invoke_hook")
        if context is None or not callable(context.__dict__.get("register_hook")):
            raise PatchError(f"{PLUGINS}.PluginContext.register_hook")
        if not any(callable(getattr(plugins, attr, None)) for attr in ENTRY_POINTS):
            raise PatchError(f"{PLUGINS}.{ENTRY_POINTS[1]}")
        return plugins, manager, context

    def _patch(self) -> None:
        plugins, manager, context = self._targets()  # all checked before anything changes
        self._approve = callable(getattr(plugins, "resolve_pre_tool_block", None))
        self.ask_api = self._approve  # what this release has: an approve escalates to hermes' approval gate (0.18.1+)
        self._schema = getattr(plugins, "OBSERVER_SCHEMA_VERSION", None)
        adapter = self

        def invoke_hook(wrapped, instance, args, kwargs):
            if (args[0] if args else kwargs.get("hook_name")) != EVENT:
                return wrapped(*args, **kwargs)
            hook_kwargs = dict(kwargs)
            hook_kwargs.pop("hook_name", None)
            return adapter._gate(instance, hook_kwargs)

        def register_hook(wrapped, instance, args, kwargs):
            result = wrapped(*args, **kwargs)
            hook_name = args[0] if args else kwargs.get("hook_name")
            callback = args[1] if len(args) > 1 else kwargs.get("callback")
            if hook_name == EVENT:
                try:
                    adapter._names[id(callback)] = (callback, _manifest_key(instance.manifest))
                except Exception:  # noqa: BLE001 - a plugin's manifest that cannot be read: the callback's plugin is found by its module instead
                    pass
            return result

        def entry_point(wrapped, instance, args, kwargs):
            # the call sites catch Exception from these and then run the tool
            _asking.set(None)
            try:
                message = wrapped(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - hermes' call sites catch Exception from here and run the tool: any failure is this call's block, audited
                tool = args[0] if args else kwargs.get("tool_name")
                return adapter.failed(exc, tool, kwargs.get("tool_call_id"), hook=adapter.hook_id(EVENT)).reason
            asked = _asking.get()
            if message is None and asked is not None:  # hermes' approval prompt said yes
                _asking.set(None)
                adapter.granted(asked[0], asked[1], None, asked[2], approved=True, also=_coerced(asked[1], asked[2]))
            return message

        def dispatch_tool(wrapped, instance, args, kwargs):
            # a plugin's direct tool call never reaches the pre_tool_call hooks upstream
            tool = args[0] if args else kwargs.get("tool_name")
            tool_args = args[1] if len(args) > 1 else kwargs.get("args")
            blocked = adapter._direct_call_blocked(instance, tool, tool_args)
            if blocked is not None:
                return json.dumps({"error": blocked}, ensure_ascii=False)
            return wrapped(*args, **kwargs)

        self.wrap(manager, "invoke_hook", invoke_hook)
        self.wrap(context, "register_hook", register_hook)
        if callable(context.__dict__.get("dispatch_tool")):
            self.wrap(context, "dispatch_tool", dispatch_tool)
        for attr in ENTRY_POINTS:
            if callable(getattr(plugins, attr, None)):
                self.wrap(plugins, attr, entry_point)
        self._patch_middleware()
        self.bind_classes((RUN_ENTRY, REGISTRY), self._bind_boundary)

    def _bind_boundary(self, entry: tuple, cls: type) -> None:
        """The run entry point and the registry's dispatch, once their modules are loaded."""
        _, class_name, attrs = entry
        for attr in attrs:
            if not callable(vars(cls).get(attr)):
                continue
            if entry is REGISTRY:
                self.wrap_boundary(cls, attr, _read_dispatch, where=f"{class_name}.{attr}")
            else:
                self.wrap_run(cls, attr)

    def _patch_middleware(self) -> None:
        """hermes' tool-execution middleware (0.18+) runs after ``pre_tool_call`` and may
        call the next stage with new arguments; a middleware that raises before calling
        it is skipped and the tool still runs. So: a middleware that fails before the tool
        denies the call, and arguments other than those the gates judged are judged
        again before the tool runs."""
        middleware = sys.modules.get(MIDDLEWARE)
        if middleware is None:
            from importlib.util import find_spec

            if find_spec(MIDDLEWARE) is None:
                return  # 0.13-0.17: no middleware, nothing runs after the gates
            middleware = importlib.import_module(MIDDLEWARE)
        run = getattr(middleware, "run_tool_execution_middleware", None)
        kind = getattr(middleware, "TOOL_EXECUTION_MIDDLEWARE", None)
        if not callable(run) or not callable(getattr(middleware, "_get_middleware_callbacks", None)) or kind is None:
            raise PatchError(f"{MIDDLEWARE}.run_tool_execution_middleware")
        adapter = self

        def callbacks(wrapped, instance, args, kwargs):
            found = wrapped(*args, **kwargs)
            state = _chain.get()
            if (args[0] if args else kwargs.get("kind")) != kind or state is None:
                return found
            return [_watched(cb, state, adapter.hook_id(f"middleware:{callable_name(cb)}")) for cb in found]

        def run_chain(wrapped, instance, args, kwargs):
            if not getattr(sys.modules[PLUGINS].get_plugin_manager(), "_middleware", {}).get(kind):
                return wrapped(*args, **kwargs)  # no middleware: nothing runs between the gates and the tool
            names = ("tool_name", "args", "next_call")
            bound = dict(zip(names, args))
            bound.update({k: kwargs.pop(k) for k in names if k in kwargs})
            state = _ChainState()
            tool, terminal = bound.get("tool_name"), bound.get("next_call")
            try:  # the arguments the gates judged (the grant's), as they are before any middleware
                entered = snapshot(bound.get("args"))
            except Exception:  # noqa: BLE001 - no copy: no grant to take back by them (the re-judge still decides)
                entered = CHANGED

            def guarded(final_args):
                late = state.late()  # a middleware that held the call past its deadline: a late answer
                state.reached = True
                blocked = adapter._before_tool(tool, final_args, state, kwargs, entered, late)
                if blocked is not None:
                    return json.dumps({"error": blocked}, ensure_ascii=False)
                return terminal(final_args)

            token = _chain.set(state)
            try:
                return wrapped(tool, bound.get("args"), guarded, **kwargs)
            finally:
                _chain.reset(token)

        self.wrap(middleware, "_get_middleware_callbacks", callbacks)
        self.wrap(middleware, "run_tool_execution_middleware", run_chain)

    def _before_tool(self, tool: Any, final_args: Any, state: "_ChainState", context: dict, entered: Any = None,
                     late: Any = None) -> Optional[str]:
        """The last step before the tool: a block message, or None to run it. Arguments
        a middleware changed are judged again, and that decision is the call's one grant:
        the grant of the arguments the chain was entered with (``entered``) goes. ``late``:
        the middleware that held the call past its deadline before handing it on."""
        call_id = context.get("tool_call_id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        try:
            if state.failed is not None or late is not None:
                if state.failed is not None:
                    hook, exc_type = state.failed
                    outcome = Outcome(hook=hook, failure=Failure.RAISED, exception_type=exc_type)
                else:
                    outcome = Outcome(hook=late, failure=Failure.TIMEOUT)
                decision = self.decide(tool if isinstance(tool, str) else None, [outcome], call_id=call_id)
                if decision.denied:
                    return decision.reason
                # a tolerated failure (on_error = "allow") is no judgement of the arguments:
                # hermes goes on with what the middleware left (edited in place, maybe)
            judged = _judged_call(call_id)
            if judged is not None and judged[0] == tool and same(judged[1], fingerprint(final_args)):
                return None
            if judged is not None and judged[0] == tool and entered is not CHANGED and same(judged[1], fingerprint(entered)):
                self.ungrant(tool if isinstance(tool, str) else None, entered)
            kwargs = {"tool_name": tool, "args": final_args, "task_id": context.get("task_id", ""),
                      "session_id": context.get("session_id", ""), "tool_call_id": context.get("tool_call_id", "")}
            directives = self._gate(sys.modules[PLUGINS].get_plugin_manager(), kwargs)
        except Exception as exc:  # noqa: BLE001 - the last step before the tool: any failure to judge the final arguments blocks it (audited)
            return self.failed(exc, tool, call_id, hook=self.hook_id(EVENT)).reason
        for directive in directives:
            if directive.get("action") == "approve":  # hermes' own approval gate, asked again
                return self._approve_again(tool, final_args, directive, call_id)
            if directive.get("action") == "block":
                return directive.get("message") or self.decide(tool, [], call_id=call_id).reason or "failsecure: denied"
        return None

    def _approve_again(self, tool: Any, final_args: Any, directive: dict, call_id: Optional[str]) -> Optional[str]:
        """A gate asked for the call a middleware changed: hermes' own approval gate
        answers, as ``resolve_pre_tool_block`` has it answer an ``approve`` (a human, yolo,
        cron ``approve`` mode; a failing or refusing gate blocks). Approved, the call's
        grant is the arguments judged."""
        asked = _asking.get()
        _asking.set(None)
        try:
            from tools.approval import request_tool_approval

            name = tool if isinstance(tool, str) else ""
            result = request_tool_approval(name, directive.get("message") or "", rule_key=directive.get("rule_key") or name)
            approved = isinstance(result, dict) and result.get("approved") is True
        except Exception as exc:  # noqa: BLE001 - hermes' approval gate failed: the call is blocked (audited), as hermes blocks it
            return self.failed(exc, tool, call_id, hook=self.hook_id(EVENT)).reason
        if not approved:
            message = result.get("message") if isinstance(result, dict) else None
            return message if type(message) is str and message else f"BLOCKED: plugin approval required for {tool}"
        if asked is not None:
            self.granted(asked[0], asked[1], None, asked[2], approved=True, also=_coerced(asked[1], asked[2]))
        return None

    def _unpatch(self) -> None:
        self.restore()
        self._ids.clear()

    def _lockdown(self) -> None:
        """The targets are not where expected: deny every ``pre_tool_call`` we can reach.
        The entry-point names are (re)defined even when missing, since call sites import
        them by name and a missing name would only be swallowed."""
        plugins = sys.modules.get(PLUGINS)
        if plugins is None:
            return
        adapter = self

        def refused(tool_name=None, *args, **kwargs):
            return adapter.decide(tool_name if isinstance(tool_name, str) else None, ()).reason

        for attr in ENTRY_POINTS:
            self.replace(plugins, attr, refused)
        manager = getattr(plugins, "PluginManager", None)
        if callable(getattr(manager, "invoke_hook", None)):
            def locked(wrapped, instance, args, kwargs):
                if (args[0] if args else kwargs.get("hook_name")) != EVENT:
                    return wrapped(*args, **kwargs)
                return [{"action": "block", "message": refused(kwargs.get("tool_name"))}]

            self.wrap(manager, "invoke_hook", locked)

    # ------------------------------------------------------------ the gate

    def _gate(self, manager: Any, kwargs: dict) -> list:
        """All ``pre_tool_call`` callbacks under the guard -> one native directive."""
        tool, call_id = kwargs.get("tool_name"), kwargs.get("tool_call_id")
        try:
            if self._schema is not None:
                kwargs.setdefault("telemetry_schema_version", self._schema)
            # callback by callback: the ones that judged the arguments before a later one
            # rewrote them judge again (a stamping callback settles; one after the last
            # rewrite runs once); what was judged is the call as it is at the end
            outcomes = self.settle_calls(self._entries(manager, kwargs), lambda: kwargs.get("args"), self.hook_id(EVENT), finish_pass=True)
            judged = (tool, fingerprint(kwargs.get("args")))
            decision = self.decide(
                tool,
                outcomes,
                call_id=call_id if isinstance(call_id, str) and call_id else None,
                arguments=kwargs.get("args"),
            )
            # a denied call never reaches its middleware chain: only a call that may run is
            # one the chain may find judged (a model can name two calls with one id)
            _judge(call_id, None if decision.denied else judged)
            # hermes hands the registry no call id: the grant is by tool and arguments (only
            # inside an agent run: outside one there is no boundary to pass)
            if self.in_run():
                self.granted(decision, tool if isinstance(tool, str) else None, None, kwargs.get("args"),
                             also=_coerced(tool, kwargs.get("args")))
            # an ask: the arguments as the gates judged them, for the grant hermes' prompt's yes makes
            _asking.set((decision, tool, snapshot(kwargs.get("args"))) if decision.action is Action.ASK else None)
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as "no directive": failed() says it and the call is blocked
            decision = self.failed(exc, tool, call_id)
        return self._native(decision)

    def _direct_call_blocked(self, ctx: Any, tool: Any, tool_args: Any) -> Optional[str]:
        """``PluginContext.dispatch_tool`` (a plugin's slash command calling a tool) goes
        through the same gates; returns the block message, or None to run. An approve
        runs: the call was started by a person's command, there is no approval prompt."""
        kwargs = {"tool_name": tool, "args": tool_args, "task_id": "", "session_id": "", "tool_call_id": ""}
        try:
            directives = self._gate(ctx._manager, kwargs)
        except Exception as exc:  # noqa: BLE001 - a plugin's dispatch_tool: any failure to judge the call blocks it (audited)
            return self.failed(exc, tool, hook=self.hook_id(EVENT)).reason
        for directive in directives:
            if directive.get("action") == "block":
                return directive["message"]
        return None

    def _native(self, decision) -> list:
        """A Decision in hermes' own directive shape (what the aggregator honours)."""
        action = decision.action
        primary = decision.primary
        if action is Action.DENY:
            return [{"action": "block", "message": decision.reason}]
        if action is Action.ASK:  # only where the core says it can ask (can_ask): it denies it elsewhere
            directive: dict = {"action": "approve"}
            if decision.reason:
                directive["message"] = decision.reason
            rule_key = primary.verdict.data if primary is not None and primary.verdict is not None else None
            if type(rule_key) is str and rule_key:
                directive["rule_key"] = rule_key
            return [directive]
        return []

    def _entries(self, manager: Any, kwargs: dict) -> list:
        """Every ``pre_tool_call`` callback, in registration order, as a gate for
        ``settle_calls`` (pass 1 is one thread hand-off for all of them): Python plugins
        with the hook kwargs, shell hooks through hermes' own ``_spawn`` with their
        timeout bounded by ours, an unreadable shell hook a MISSING outcome."""
        entries: list = []
        for cb in list(manager._hooks.get(EVENT, ())):
            hook_id, spec = self._identify(manager, cb)
            if spec is None:
                entries.append((hook_id, cb, (), kwargs, None))
            elif spec is _UNREADABLE:
                entries.append(Outcome(hook=hook_id, failure=Failure.MISSING))
            else:
                entries.append((hook_id, _run_shell, (spec, kwargs, current_config().timeout_for(hook_id)), None, _shell_verdict))
        return entries

    def _identify(self, manager: Any, cb: Any) -> tuple[str, Any]:
        known = self._ids.get(cb)
        if known is not None:
            return known
        spec = None
        name: Optional[str]
        module = getattr(cb, "__module__", None)
        if module == SHELL:
            spec = _shell_spec(cb)
            name = f"shell:{command_name(spec.command)}" if spec is not _UNREADABLE else f"shell:{callable_name(cb)}"
        else:
            named = self._names.get(id(cb))
            name = named[1] if named is not None and named[0] is cb else _plugin_key(manager, module)
            if name is None:
                qualname = getattr(cb, "__qualname__", None) or type(cb).__qualname__
                name = f"{module or type(cb).__module__}.{qualname}"
        hook_id = self.hook_id(name)
        return self._ids.put(cb, (hook_id, spec))

    # ------------------------------------------------------------ Python plugins

    def to_verdict(self, native: Any) -> Verdict:
        """A plugin's ``pre_tool_call`` answer. None: no opinion. A block needs a
        non-empty string message (a message-less block is junk, INVALID); an approve
        (0.18.1+) may carry a message and a ``rule_key``. Anything else is INVALID."""
        if native is None:
            return ABSTAIN
        if not isinstance(native, dict):
            raise Invalid()
        action = native.get("action")
        if type(action) is not str:
            raise Invalid()
        if action == "block":
            message = native.get("message")
            if type(message) is not str or not message:
                raise Invalid()
            return Verdict(action=Action.DENY, reason=message)
        if action == "approve" and self._approve:
            message = native.get("message")
            rule_key = native.get("rule_key")
            rule_key = rule_key.strip() if type(rule_key) is str else None
            return Verdict(
                action=Action.ASK,
                reason=nonempty_str(message),
                data=rule_key or None,
            )
        raise Invalid()

    # ------------------------------------------------------------ doctor

    def inventory(self) -> list[str]:
        plugins = sys.modules.get(PLUGINS)
        if plugins is None or not callable(getattr(plugins, "get_plugin_manager", None)):
            return []
        manager = plugins.get_plugin_manager()
        return [self._identify(manager, cb)[0] for cb in list(manager._hooks.get(EVENT, ()))]

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only ``pre_tool_call`` callback of a fresh, real
        ``PluginManager``, through its (patched) ``invoke_hook``: True when hermes'
        aggregator would block the tool call."""
        plugins = sys.modules[PLUGINS]
        manager = plugins.PluginManager()
        manager._hooks[EVENT] = [gate]
        self._names[id(gate)] = (gate, f"self-test.{getattr(gate, '__name__', 'gate')}")
        try:
            results = manager.invoke_hook(EVENT, tool_name="failsecure-self-test", args={}, task_id="", session_id="", tool_call_id="")
        finally:
            self._names.pop(id(gate), None)
            self._ids.pop(gate)
        return any(isinstance(r, dict) and r.get("action") == "block" and r.get("message") for r in results)

    def self_test(self) -> list[Check]:
        if self.state == "native":
            return [Check("native", True, "hermes' own dispatcher fails closed; not wrapped")]
        return super().self_test()


# ---------------------------------------------------------------- helpers

#: what the gates judged in this context: call id (None: a call without one) -> (tool
#: name, fingerprint of the arguments). A dict shared with the contexts copied from this
#: one: hermes judges a concurrent batch call by call on the agent's thread, then runs
#: each call on a worker with a copy of the turn's context, where its middleware chain
#: must find what was judged for that call (not the batch's last call)
_judged: "contextvars.ContextVar[Any]" = contextvars.ContextVar("failsecure_hermes_judged", default=None)
_JUDGED_KEPT = 256  # calls remembered per context (a long session's oldest go)


def _judge(call_id: Any, judged: Optional[tuple]) -> None:
    calls = _judged.get()
    if calls is None:
        calls = {}
        _judged.set(calls)
    key = call_id if isinstance(call_id, str) and call_id else None
    calls.pop(key, None)
    if judged is not None:
        calls[key] = judged
    while len(calls) > _JUDGED_KEPT:
        calls.pop(next(iter(calls)), None)


def _judged_call(call_id: Any) -> Any:
    calls = _judged.get()
    if not calls:
        return None
    return calls.get(call_id if isinstance(call_id, str) and call_id else None)


class _ChainState:
    """One run of the tool-execution middleware chain."""

    __slots__ = ("reached", "failed", "held")

    def __init__(self) -> None:
        self.reached = False  # the tool (the chain's terminal call) was reached
        self.failed: Any = None  # (hook id, exception type) of a middleware that raised first
        self.held: list = []  # (hook id, when it was handed the call) of each middleware, in order

    def late(self) -> Any:
        """The hook id of the first middleware that held the call past its deadline before
        handing it on (the next one, or the tool, was reached after it), else None."""
        now, held = perf_counter(), self.held
        for i, (hook, since) in enumerate(held):
            if past_deadline(hook, since, held[i + 1][1] if i + 1 < len(held) else now):
                return hook
        return None


_chain: "contextvars.ContextVar[Any]" = contextvars.ContextVar("failsecure_hermes_chain", default=None)
#: (decision, tool, arguments) of an ask sent to hermes' approval prompt in this context
_asking: "contextvars.ContextVar[Any]" = contextvars.ContextVar("failsecure_hermes_asking", default=None)


def _coerced(tool: Any, arguments: Any) -> tuple:
    """The judged arguments as ``handle_function_call`` passes them to the registry when
    the agent loop judged them first: ``coerce_tool_args`` by the tool's schema ("42" ->
    42), on a copy of the judged arguments the core makes."""
    coerce = getattr(sys.modules.get("model_tools"), "coerce_tool_args", None)
    if not callable(coerce) or not isinstance(tool, str) or type(arguments) is not dict:
        return ()
    # made only when the execution's arguments are not the judged ones as they are (a
    # call through handle_function_call was judged already coerced); a raise, or an
    # answer that is no dict, is no second form
    return (Later(_coerce_form, coerce, tool, judged=True),)


def _coerce_form(coerce: Any, tool: str, judged: dict) -> Any:
    # ``judged``: the core's copy of the judged dict (a dict: a CHANGED copy never gets here)
    return _dict_or_changed(coerce(tool, judged))


def _dict_or_changed(value: Any) -> Any:
    return value if type(value) is dict else CHANGED


def _read_dispatch(registry: Any, args: tuple, kwargs: dict) -> tuple:
    """``ToolRegistry.dispatch(name, args, **kwargs)``: the tool and its arguments."""
    name = args[0] if args else kwargs.get("name")
    tool_args = args[1] if len(args) > 1 else kwargs.get("args")
    name = name if isinstance(name, str) else None
    return name, None, tool_args, name, None


def _watched(callback: Any, state: _ChainState, hook: str) -> Any:
    """A middleware callback whose failure before the tool is remembered (hermes skips
    it and runs the tool; failsecure's terminal step then denies)."""

    def middleware(**kwargs):
        if not state.reached:
            state.held.append((hook, perf_counter()))
        try:
            return callback(**kwargs)
        except Exception as exc:
            if not state.reached and state.failed is None:
                state.failed = (hook, type_name(exc))
            raise

    return middleware



class _Unreadable:
    def __repr__(self) -> str:
        return "<unreadable shell hook>"


_UNREADABLE: Any = _Unreadable()


def _shell_spec(cb: Any) -> Any:
    """The ShellHookSpec a hermes shell-hook callback closes over (identical 0.13-0.19)."""
    try:
        cell = cb.__closure__[cb.__code__.co_freevars.index("spec")]
        spec = cell.cell_contents
        shell = sys.modules[SHELL]
        if isinstance(spec, shell.ShellHookSpec) and callable(getattr(shell, "_spawn", None)):
            return spec
    except Exception:  # noqa: BLE001 - a callback's own attributes can raise anything: not a shell hook failsecure can read (_UNREADABLE)
        pass
    return _UNREADABLE


def _manifest_key(manifest: Any) -> str:
    """A plugin's name in its hook id: its key (``name``, ``<category>/<name>``, the
    entry-point name). A plugin of the working directory's ``.hermes/plugins`` (source
    ``project``: a cloned repo's) is ``project:<key>``: hermes lets it replace the user's
    plugin of the same key, and the user's ``required`` and per-hook settings name the
    user's plugin, never a project's that took its name."""
    key = str(manifest.key or manifest.name)
    return f"project:{key}" if getattr(manifest, "source", None) == "project" and not _project_is_users() else key


def _project_is_users() -> bool:
    """The working directory's ``.hermes/plugins`` is the user's own plugin directory (hermes
    run in the directory holding its home, ``~`` with ``~/.hermes``): hermes scans it a
    second time as ``project``, and what it loads from there is the user's plugins, under
    the user's keys. Any doubt: it is the project's."""
    try:
        from hermes_constants import get_hermes_home

        project = os.path.realpath(os.path.join(os.getcwd(), ".hermes", "plugins"))
        return project == os.path.realpath(os.path.join(str(get_hermes_home()), "plugins"))
    except Exception:  # noqa: BLE001 - hermes' home or the working directory cannot be read: the plugin is the project's
        return False


def _plugin_key(manager: Any, module: Optional[str]) -> Optional[str]:
    """The plugin that owns a callback registered before failsecure was active."""
    if not isinstance(module, str):
        return None
    try:
        for key, loaded in list(manager._plugins.items()):
            owner = getattr(getattr(loaded, "module", None), "__name__", None)
            if owner and (module == owner or module.startswith(owner + ".")):
                manifest = getattr(loaded, "manifest", None)
                return _manifest_key(manifest) if manifest is not None else str(key)
    except Exception:  # noqa: BLE001 - hermes' plugin table or a plugin object (a hostile __getattr__): the callback has no plugin key
        pass
    return None


def _run_shell(spec: Any, kwargs: dict, limit: Optional[float]) -> Optional[dict]:
    """Run one shell hook as hermes does (its argv, its payload), its own timeout
    bounded by ours, through the command runner's process supervision."""
    if not spec.matches_tool(kwargs.get("tool_name")):
        return None
    shell = sys.modules[SHELL]
    if limit and limit < spec.timeout:
        spec = copy.copy(spec)
        spec.timeout = limit
    return _spawn(spec, shell._serialize_payload(spec.event, kwargs))


def _spawn(spec: Any, stdin_json: str) -> dict:
    """hermes' ``_spawn`` (same argv: ``shlex.split`` of the expanded command, no shell;
    same result keys), run by ``failsecure.runner.process.execute``, the one
    implementation every command hook runs under: a new session, the deadline, the
    group killed, capped pipes, and a hook that answered and exited is judged by its
    answer even when a background process it left keeps the pipes open (hermes'
    ``subprocess.run`` waits for the pipes and calls that a timeout)."""
    import errno
    import shlex


    result: dict = {"returncode": None, "stdout": "", "stderr": "", "timed_out": False, "elapsed_seconds": 0.0, "error": None}
    try:
        argv = shlex.split(os.path.expanduser(spec.command))
    except ValueError:
        result["error"] = "command cannot be parsed"
        return result
    if not argv:
        result["error"] = "empty command"
        return result
    ran = run_command(argv, stdin_json.encode("utf-8"), max(float(spec.timeout), 0.001))
    result["elapsed_seconds"] = round(ran.elapsed_ms / 1000.0, 3)
    if ran.spawn_errno is not None:
        result["error"] = "command not executable" if ran.spawn_errno == errno.EACCES else "command not found"
        return result
    if ran.timed_out:
        result["timed_out"] = True
        return result
    result["returncode"] = ran.status
    result["stdout"] = ran.stdout.decode("utf-8", "replace")
    result["stderr"] = ran.stderr.decode("utf-8", "replace")
    result["oversized"] = ran.oversized
    return result


def _shell_verdict(run: Optional[dict]) -> Verdict:
    """Judge hermes' raw ``_spawn`` result. A block directive on stdout is honoured
    whatever the exit status (hermes parses stdout after a non-zero exit too); otherwise
    a process that could not start, timed out or died fails with the category
    ``failsecure.failures.process_failure`` gives it (the same for every command-hook
    host); exit 2 is the Claude-style block; output other than nothing or a block
    directive is INVALID."""
    if run is None:  # the matcher did not select this tool
        return ABSTAIN
    code = run.get("returncode")
    category = process_failure(bool(run.get("error")), bool(run.get("timed_out")), code)
    if run.get("oversized"):
        raise Invalid(Failure.INVALID)  # the runner stopped reading an answer over its cap
    ran_to_exit = type(code) is int and code >= 0 and not run.get("timed_out")
    kind, message = _shell_directive(run.get("stdout")) if ran_to_exit else ("none", None)
    if kind == "block":
        return Verdict(action=Action.DENY, reason=message or _DEFAULT_SHELL_BLOCK)
    if category is not None:
        raise Invalid(Failure(category))
    if code == 2:
        return Verdict(action=Action.DENY, reason=_DEFAULT_SHELL_BLOCK)
    if kind == "none":
        return ABSTAIN
    raise Invalid()


def _shell_directive(stdout: Any) -> tuple[str, Optional[str]]:
    text = stdout.strip() if isinstance(stdout, str) else ""
    if not text:
        return "none", None
    try:
        data = json.loads(text)
    except ValueError:
        return "junk", None
    if not isinstance(data, dict):
        return "junk", None
    if data.get("action") == "block":
        fields = (data.get("message"), data.get("reason"))
    elif data.get("decision") == "block":
        fields = (data.get("reason"), data.get("message"))
    else:
        return "junk", None
    message = next((f for f in fields if isinstance(f, str) and f), None)
    return "block", message


def register(ctx: Any) -> None:
    """hermes plugin entry point (``hermes_agent.plugins``, enabled with
    ``plugins.enabled: [failsecure]``): activate the adapter from inside hermes."""

    activate("hermes-agent")


__all__ = ["HermesAdapter", "register"]
