"""Strands Agents: every ``BeforeToolCallEvent`` callback runs under the guard, the core decides.

Strands fires ``BeforeToolCallEvent`` through ``HookRegistry.invoke_callbacks_async`` (the
tool executor's ``_stream``, for ``Agent`` and ``BidiAgent``; 1.52 names the bidi event
``BidiBeforeToolCallEvent``). A callback answers by writing to the event:
``cancel_tool = True`` or a message cancels the tool; ``selected_tool`` / ``tool_use`` swap
the tool or its input; ``event.interrupt(...)`` raises ``InterruptException`` to ask a
human. Upstream, ``cancel_tool`` is one mutable field every callback can write, so a
later callback setting it back to ``False`` un-denies an earlier cancel; a falsy but set
value (``""``, ``0``) reads as allow; return values are ignored; there is no deadline;
and a later callback can swap the tool or its input after a gate saw them.

The patch is one ``wrapt`` wrapper on ``HookRegistry.invoke_callbacks_async`` (and on the
sync ``invoke_callbacks``) for the before-tool event only; every other event goes
straight to upstream:

- the callbacks come from upstream's own ``get_callbacks_for(event)``, in upstream's
  order; each is one guarded call -> one Outcome. Its verdict is what it did to the
  event: ``cancel_tool`` written ``True`` or a non-empty ``str`` denies (with that
  message), written ``False`` allows, nothing written abstains, any other write (``""``,
  ``0``, ``None``, a ``str`` subclass, an object) is junk (INVALID); a return value other
  than ``None`` is junk too (upstream drops it silently); ``InterruptException`` is an
  ASK carrying the native interrupt; raising anything else is RAISED, a missed deadline
  TIMEOUT;
- argument integrity: the callbacks run one by one under ``integrity.settle``; the
  callbacks that judged the call before a later one swapped the tool or changed
  ``tool_use`` judge again (a stamp, a fresh value in an input key the same callback
  alone wrote, is accepted; a callback after the last change runs once), so every gate
  judged the call that really runs;
- ``decide`` reduces the outcomes with the cross-framework gates, ``required`` and the
  config, and the Decision is written back as the one answer upstream honours: a deny
  sets ``cancel_tool`` to the Decision's reason (Strands' own cancelled-tool result: a
  ``ToolCancelEvent`` and an error tool result with that text), an ask returns the
  callbacks' interrupts (upstream's human-in-the-loop stop), anything else leaves
  ``cancel_tool`` as it was before the callbacks ran.

Also gates (issue 26): each ``before_tool_call`` handler of an interventions registry
(instead of the registry's one callback; its actions read as verdicts, its ``on_error``
fail-open paths closed); a renamed ``tool_use["name"]`` (1.6x runs the tool of the new
name: ``selected_tool`` is pointed at it so the gates judge it); each ExecuteToolStage
Input and Wrap handler (a guarded layer of the chain: a deadline until it proceeds, its
raise or junk context a failure; a call it replaced judged again by the layers outside
it) and the chain's terminal (a tool or tool use replaced after the gates is judged
again by them); the batch gate ``BeforeToolsEvent`` (``cancel`` cancels a turn's tool
uses: each user callback a gate, decided as a later stage of those calls).
Sync callbacks run on the guard's worker with the dispatching loop as its running loop,
the loop's thread waiting (as upstream, which runs them on the loop).

``AfterToolCallEvent`` and every other event are observers: untouched.

Hook ids: ``strands:<module>.<qualname>`` of the callback (a bound method names its class).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import sys
import threading
from typing import Any, Optional

from failsecure.adapter import (
    CHANGED,
    Adapter,
    IdCache,
    PatchError,
    ask_unsupported,
    awaitable,
    callable_name,
    close_awaitable,
    current_config,
    fingerprint,
    nonempty_str,
    plain_str,
    snapshot,
    type_name,
)
from failsecure.verdict import ABSTAIN, ALLOW, Action, Failure, Invalid, Outcome, Verdict

REGISTRY = "strands.hooks.registry"
#: the trigger: the package, so its events module has finished executing too
EVENTS = "strands.hooks"
INTERRUPT = "strands.interrupt"
#: the tool executor: ``_lookup_tool`` (1.6x: a renamed ``tool_use`` runs the tool of the new
#: name) and ``_make_execute_tool_terminal`` (the end of the ExecuteToolStage middleware chain)
EXECUTOR = "strands.tools.executors._executor"
#: the middleware registry (1.6x public, 1.52 private) and its stages: the ExecuteToolStage
#: chain is composed per tool call (``compose``); each of its Input and Wrap handlers is a gate
MIDDLEWARE = (("strands.middleware._registry", "strands.middleware.stages"),
              ("strands._middleware.registry", "strands._middleware.stages"))
#: the interventions registry: one hook callback running every handler
INTERVENTIONS = "strands.interventions.registry"
ACTIONS = "strands.interventions.actions"
#: the before-tool event classes (1.52 has a separate, experimental one for BidiAgent)
GATED_EVENTS = ("BeforeToolCallEvent", "BidiBeforeToolCallEvent")
#: the batch gate: fired once before a turn's tool uses; ``cancel`` cancels them all
BATCH_EVENT = "BeforeToolsEvent"
#: fired once the batch's tool uses ran (or were refused): what the batch judged of them is done
AFTER_BATCH_EVENT = "AfterToolsEvent"
#: upstream's own text for ``cancel = True`` of the batch
BATCH_CANCEL = "Tool cancelled by hook"
#: upstream's own text for ``cancel_tool = True``
DEFAULT_CANCEL = "tool cancelled by user"
_DENY_DEFAULT = Verdict(action=Action.DENY, reason=DEFAULT_CANCEL)
#: where a stamp may be in the picture of ``_current`` (selected tool, tool use): the input
_STAMPABLE = (1, "input")

_UNSET = object()
#: how often a dispatch lists the callbacks again when a callback registered another
#: (beyond it the list never settles: invalid)
_RELISTS = 3
#: what an ``InterruptException`` carried when it was no ``strands.interrupt.Interrupt``
#: (``None``, a text, a look-alike): junk, never "no interrupt"
_JUNK_INTERRUPT = object()

#: the tool boundary (docs/ungoverned.md): the run entry points...
AGENT = "strands.agent.agent"
RUN_ENTRIES = ("__call__", "invoke_async", "stream_async", "structured_output", "structured_output_async")
#: ... and the innermost tool execution: every ``AgentTool`` class's own ``stream`` (what
#: the executor's terminal calls), and a decorated tool called as a plain function
TOOLS = "strands.types.tools"
DECORATOR = "strands.tools.decorator"
#: the run entry points and the innermost tool calls (``bind_classes``)
BOUNDARY = ((AGENT, "Agent", RUN_ENTRIES), (TOOLS, "AgentTool", ("stream",)), (DECORATOR, "DecoratedFunctionTool", ("__call__",)))


class _Acted:
    """What one intervention handler answered, as failsecure read it (``None``: junk)."""

    __slots__ = ("verdict",)

    def __init__(self, verdict: Optional[Verdict]):
        self.verdict = verdict


class _Held:
    """A sync intervention handler's call that failed on the worker (its deadline, the
    guard's own refusal): that failure is the handler's."""

    __slots__ = ("failure",)

    def __init__(self, failure: Any):
        self.failure = failure if failure is not None else Failure.INVALID


class _Pending:
    """What a sync intervention handler left for the loop: the awaitable it answered, or
    the exception it raised."""

    __slots__ = ("awaitable", "before", "exc")

    def __init__(self, awaitable: Any, before: Any, exc: Optional[BaseException] = None):
        self.awaitable, self.before, self.exc = awaitable, before, exc


def _carried(answer: Any) -> Verdict:
    """The worker's answer carried back to ``_handler_held`` as it is (judged there)."""
    return Verdict(action=Action.ABSTAIN, data=answer)


class _Did:
    """What one callback did to the event (built by failsecure, judged by ``_verdict``)."""

    __slots__ = ("before", "after", "result", "interrupt")

    def __init__(self, before: Any, after: Any, result: Any, interrupt: Any = None):
        self.before, self.after, self.result, self.interrupt = before, after, result, interrupt


def _verdict(did: Any) -> Verdict:
    """The verdict of one ``BeforeToolCallEvent`` callback: what it wrote to
    ``cancel_tool`` (identity, not equality: ``0`` is not ``False``), whether it raised an
    interrupt, and that it returned nothing."""
    if type(did) is _Held:
        raise Invalid(did.failure)
    if type(did) is _Acted:
        if did.verdict is None:
            raise Invalid()
        return did.verdict
    if type(did) is not _Did:
        raise Invalid()
    if did.result is not None or did.interrupt is _JUNK_INTERRUPT:
        raise Invalid()
    after = did.after
    if after is not did.before:
        if after is True:
            return _DENY_DEFAULT
        if type(after) is str and after:
            return Verdict(action=Action.DENY, reason=after)
        if after is not False:
            raise Invalid()
        if did.interrupt is None:
            return ALLOW
    if did.interrupt is not None:
        return Verdict(action=Action.ASK, data=did.interrupt)
    return ABSTAIN


def _batch_picture(event: Any) -> Any:
    """What the batch gates judged: the tool uses of the message (by content)."""
    try:
        return fingerprint([c.get("toolUse") for c in event.message["content"] if isinstance(c, dict)])
    except Exception:  # noqa: BLE001 - the message can hold anything: pictured as changed, judged again (denied if never settled)
        return CHANGED


def _batch_verdict(did: Any) -> Verdict:
    """``_verdict`` for a ``BeforeToolsEvent`` callback: ``cancel = True`` is upstream's own
    batch text."""
    verdict = _verdict(did)
    if verdict is _DENY_DEFAULT:
        return Verdict(action=Action.DENY, reason=BATCH_CANCEL)
    return verdict


class _BatchSeen:
    """What the batch gates (``BeforeToolsEvent``) judged of one tool use, carried to its
    call: the use's picture (``CHANGED``: not known), and what a round of its own needs
    (the registry, the event class, the agent, the invocation state); ``late``: a batch
    gate missed its deadline (abandoned, it may still write the use at any time); ``ids``:
    the hook ids of the batch gates that judged it (there for the call: a ``required``
    naming one is met)."""

    __slots__ = ("pic", "registry", "kind", "agent", "state", "late", "ids")

    def __init__(self, pic: Any, registry: Any, kind: Any, agent: Any, state: Any, late: bool, ids: tuple = ()):
        self.pic, self.registry, self.kind, self.agent, self.state, self.late = pic, registry, kind, agent, state, late
        self.ids = ids


def _same_use(pic: Any, use: Any) -> bool:
    """``use`` is the tool use the batch gates judged (pictured ``pic``)."""
    if pic is CHANGED:
        return False
    now = fingerprint(use)
    try:
        return now is not CHANGED and bool(now == pic)
    except Exception:  # noqa: BLE001 - a hostile __eq__ inside a picture: not the same use
        return False


def _is(value: Any, cls: Any) -> bool:
    """``isinstance`` against a class looked up at call time (not a narrowing check)."""
    return isinstance(cls, type) and isinstance(value, cls)


class StrandsAdapter(Adapter):
    name = "strands"
    fail_closed_upstream = ""
    modules = (EVENTS, REGISTRY)
    supports_ask = True  # a callback's interrupt stops the agent for a human's answer
    self_test_junk = "DENY"  # a return value: upstream ignores it, failsecure judges it junk

    def __init__(self) -> None:
        super().__init__()
        self._interrupt_exc: Any = None
        self._interrupt_cls: Any = None
        self._ids = IdCache()  # intervention handler class -> hook id
        self._gated: dict[type, bool] = {}
        self._batch: dict[tuple, bool] = {}
        #: call id -> (tool, fingerprint of the tool use, event class) the gates last allowed
        self._judged: dict[Any, tuple] = {}
        #: call id -> what the batch gates judged of that tool use (``_carry``)
        self._batch_seen: dict[Any, _BatchSeen] = {}
        self._executor: Any = None  # the executor module once its terminal is wrapped
        self._stage: Any = None  # (ExecuteToolStage, ExecuteToolContext) once compose is wrapped
        self._lookup: Any = None
        self._lock: Any = threading.Lock()
        self._set_loop = getattr(asyncio.events, "_set_running_loop", None)
        self._get_loop = getattr(asyncio.events, "_get_running_loop", None)

    # ------------------------------------------------------------ patching

    def _targets(self) -> tuple[Any, Any]:
        registry = importlib.import_module(REGISTRY)
        hooks = registry.__dict__.get("HookRegistry")
        if not isinstance(hooks, type):
            raise PatchError(f"{REGISTRY}.HookRegistry")
        for attr in ("invoke_callbacks_async", "invoke_callbacks", "get_callbacks_for"):
            if not callable(hooks.__dict__.get(attr)):
                raise PatchError(f"{REGISTRY}.HookRegistry.{attr}")
        if not inspect.iscoroutinefunction(hooks.__dict__["invoke_callbacks_async"]):
            raise PatchError(f"{REGISTRY}.HookRegistry.invoke_callbacks_async is not async")
        interrupt = getattr(importlib.import_module(INTERRUPT), "InterruptException", None)
        if not (isinstance(interrupt, type) and issubclass(interrupt, BaseException)):
            raise PatchError(f"{INTERRUPT}.InterruptException")
        if not isinstance(getattr(sys.modules[INTERRUPT], "Interrupt", None), type):
            raise PatchError(f"{INTERRUPT}.Interrupt")
        event = getattr(importlib.import_module(EVENTS), "BeforeToolCallEvent", None)
        fields = getattr(event, "__dataclass_fields__", {})
        for field in ("cancel_tool", "selected_tool", "tool_use"):
            if field not in fields:
                raise PatchError(f"{EVENTS}.BeforeToolCallEvent.{field}")
        return hooks, interrupt

    def _patch(self) -> None:
        hooks, interrupt = self._targets()  # all checked before anything changes
        self._interrupt_exc = interrupt
        self._interrupt_cls = sys.modules[INTERRUPT].Interrupt
        adapter = self

        def invoke_callbacks_async(wrapped, instance, args, kwargs):
            event = args[0] if args else kwargs.get("event")
            if not adapter._is_gated(event):
                if adapter._is_batch(event):
                    return adapter._abatch(instance, event, wrapped, args, kwargs)
                if adapter._batch_seen and adapter._is_batch(event, AFTER_BATCH_EVENT):
                    adapter._batch_done(event)
                return wrapped(*args, **kwargs)
            if adapter._executor is None:
                adapter._wrap_executor()
            adapter.bind_loaded()
            if adapter._batch_seen:  # a batch gate judged a turn's tool uses: this one may have changed since
                return adapter._entered(instance, event)
            return adapter._agate(instance, event)

        def invoke_callbacks(wrapped, instance, args, kwargs):
            event = args[0] if args else kwargs.get("event")
            if not adapter._is_gated(event):
                return wrapped(*args, **kwargs)
            try:
                callbacks = list(instance.get_callbacks_for(event))
            except Exception as exc:  # noqa: BLE001 - the registry's callbacks cannot be listed: the call is cancelled (audited), never run ungated
                adapter._deny(event, adapter.failed(exc, adapter._tool(event), adapter._call_id(event), hook=adapter.hook_id("BeforeToolCallEvent")))
                return event, []
            if any(inspect.iscoroutinefunction(cb) for cb in callbacks):
                return wrapped(*args, **kwargs)  # upstream raises RuntimeError: use the async path
            if callbacks:
                adapter.mark_gated()
            return adapter._gate(callbacks, event)

        self.wrap(hooks, "invoke_callbacks_async", invoke_callbacks_async)
        self.wrap(hooks, "invoke_callbacks", invoke_callbacks)
        self.bind_classes(BOUNDARY, self._bind_boundary)

    def _bind_boundary(self, entry: tuple, cls: type) -> None:
        """The run entry points and the innermost tool calls, for each of their modules
        that is loaded."""
        module, _, attrs = entry
        if module == TOOLS:
            # give_back=False: Strands never runs a judged call's stream again unjudged (a
            # hook's retry fires BeforeToolCallEvent again, a middleware retry meets the
            # terminal's check), so a raised run's grant is spent, not left for another
            # tool to run on under that call id
            self.wrap_subclasses(cls, attrs, self._read_stream, give_back=False)
            return
        for attr in attrs:
            if not callable(cls.__dict__.get(attr)):
                continue
            if module == AGENT:
                self.wrap_run(cls, attr, gated=self._agent_gated)
            else:
                self.wrap_boundary(cls, attr, self._read_call, where="DecoratedFunctionTool.__call__")

    def _agent_gated(self, agent: Any) -> bool:
        """The agent has a before-tool-call callback registered (a gate to bypass)."""
        registered = getattr(getattr(agent, "hooks", None), "_registered_callbacks", None)
        if not isinstance(registered, dict):
            return True  # cannot tell: fail closed
        for kind, entries in list(registered.items()):
            if entries and self._is_gated_class(kind):
                return True
            if entries and self._is_batch_class(kind) and any(not _strands_own(getattr(e, "callback", None)) for e in list(entries)):
                return True  # a user's batch gate (strands' own, such as AgentDelegation's, is none)
        return self._middleware_gated(agent)

    @staticmethod
    def _is_batch_class(cls: Any) -> bool:
        return any(k.__name__ == BATCH_EVENT and str(getattr(k, "__module__", "")).startswith("strands.")
                   for k in getattr(cls, "__mro__", ()))

    @staticmethod
    def _middleware_gated(agent: Any) -> bool:
        """The agent has an ExecuteToolStage Input or Wrap handler of its user's (a gate
        too: a tool run past the executor bypasses it); Output handlers only observe, and
        strands' own (1.62's ``AgentDelegation`` on every agent) are no user's gate."""
        try:
            handlers = agent._middleware_registry._handlers
        except AttributeError:  # no middleware registry (a BidiAgent, another release): no such gate
            return False
        except Exception:  # noqa: BLE001 - strands' private registry cannot be read: cannot tell, fail closed
            return True
        if not isinstance(handlers, dict):
            return False
        for _, stages_name in MIDDLEWARE:
            stage = getattr(sys.modules.get(stages_name), "ExecuteToolStage", None)
            if stage is None:
                continue
            tagged = handlers.get(stage)
            for t in list(tagged or ()):
                if getattr(t, "phase", None) != "output" and not _strands_own(_user_handler(t.handler)):
                    return True
        return False

    def _is_gated_class(self, cls: Any) -> bool:
        return any(k.__name__ in GATED_EVENTS and str(getattr(k, "__module__", "")).startswith("strands.")
                   for k in getattr(cls, "__mro__", ()))

    @staticmethod
    def _tool_name(tool: Any) -> Optional[str]:
        try:
            name = tool.tool_name
        except Exception:  # noqa: BLE001 - a tool's tool_name property can raise anything: no name
            return None
        return plain_str(name)

    @staticmethod
    def _key(name: Optional[str], tool: Any) -> tuple:
        """What identifies one tool for "its own execution": the tool object, not its name
        (a wrapper registered under a gated tool's name must not run the real one ungated).
        Its id, so that no code of the tool's runs when keys are compared; the tool is
        alive while its execution is under way, so the id is not reused meanwhile."""
        return (name, id(tool))

    def _read_stream(self, tool: Any, args: tuple, kwargs: dict) -> tuple:
        """``AgentTool.stream(tool_use, invocation_state, **kwargs)``: the call id and
        input of the tool use it runs; the agent of the invocation state says whether a
        gate is registered."""
        tool_use = args[0] if args else kwargs.get("tool_use")
        state = args[1] if len(args) > 1 else kwargs.get("invocation_state")
        name = self._tool_name(tool)
        if not isinstance(tool_use, dict):
            return name, None, CHANGED, self._key(name, tool), None
        call_id = tool_use.get("toolUseId")
        agent = state.get("agent") if isinstance(state, dict) else None
        gated = self._agent_gated(agent) if agent is not None else None
        # what the grant holds (``_granted_call``): the tool's own name with the input, so
        # a grant is spent only by the tool the gates judged, never by another tool run
        # under that call id and input (a dispatcher tool, an unknown tool's unused grant)
        return name, nonempty_str(call_id), (name, tool_use.get("input")), self._key(name, tool), gated or None

    def _read_call(self, tool: Any, args: tuple, kwargs: dict) -> tuple:
        """A decorated tool called as a function: never a dispatcher's call."""
        name = self._tool_name(tool)
        return name, None, (kwargs if not args else (args, kwargs)), self._key(name, tool), None

    def _wrap_executor(self) -> None:
        """The executor module is imported after ``strands.hooks``: its middleware terminal
        is wrapped at the first gated event (the executor has been imported by then)."""
        with self._lock:
            if self._executor is not None:
                return
            executor = sys.modules.get(EXECUTOR)
            if executor is None:
                return
            lookup = executor.__dict__.get("_lookup_tool")
            self._lookup = lookup if callable(lookup) else None
            if callable(executor.__dict__.get("_make_execute_tool_terminal")):
                adapter = self

                def make_terminal(wrapped, instance, args, kwargs):
                    return adapter._judged_terminal(wrapped(*args, **kwargs))

                self.wrap(executor, "_make_execute_tool_terminal", make_terminal)
            self._wrap_middleware()
            self._executor = executor

    def _wrap_middleware(self) -> None:
        """``MiddlewareRegistry.compose`` for ``ExecuteToolStage``: the chain is built from
        guarded layers (``_layer``), by upstream's own ``compose`` over a view of the
        registry whose handlers are the guarded ones."""
        adapter = self
        for registry_name, stages_name in MIDDLEWARE:
            registry, stages = sys.modules.get(registry_name), sys.modules.get(stages_name)
            cls = getattr(registry, "MiddlewareRegistry", None)
            stage = getattr(stages, "ExecuteToolStage", None)
            context = getattr(stages, "ExecuteToolContext", None)
            if not isinstance(cls, type) or stage is None or not callable(cls.__dict__.get("compose")):
                continue

            def compose(wrapped, instance, args, kwargs, stage=stage, context=context, original=cls.__dict__["compose"]):
                asked = args[0] if args else kwargs.get("stage")
                tagged = instance._handlers.get(asked) if asked is stage else None
                if not tagged:
                    return wrapped(*args, **kwargs)
                if any(getattr(t, "phase", None) != "output" and not _strands_own(_user_handler(t.handler)) for t in list(tagged)):
                    adapter.mark_gated()  # a user's Input or Wrap handler added since the run began is a gate of it too
                chain: list = []  # one _Box per layer entered, outermost first
                view = _View({asked: [dataclasses.replace(t, handler=adapter._layer(t, chain, context)) for t in tagged]})
                return original(view, *args, **kwargs)

            self.wrap(cls, "compose", compose)
            self._stage = (stage, context)

    def _later(self, event: Any) -> tuple:
        """The hook ids of the gates of this call decided at another point than its
        ``BeforeToolCallEvent`` callbacks: the ExecuteToolStage gates (asked later, at the
        chain) and the batch gates (``BeforeToolsEvent``) that judged it before; there for
        the call, so a ``required`` naming one is met."""
        call_id = self._call_id(event)
        seen = self._batch_seen.get(call_id) if call_id is not None else None
        return self._middleware_ids(getattr(event, "agent", None)) + (seen.ids if seen is not None else ())

    def _middleware_ids(self, agent: Any) -> tuple:
        """The hook ids of the ExecuteToolStage gates registered on ``agent``: asked later,
        at the chain (a ``required`` naming one is met when it is registered)."""
        stage = self._stage[0] if self._stage is not None else None
        try:
            tagged = agent._middleware_registry._handlers.get(stage) if stage is not None else None
        except Exception:  # noqa: BLE001 - strands' middleware registry (private, may change) cannot be read: no later gate is known
            return ()
        return tuple(self.callable_id(_user_handler(t.handler)) for t in tagged or () if getattr(t, "phase", None) != "output")

    def _unpatch(self) -> None:
        self.restore()
        self._ids.clear()
        self._judged.clear()
        self._batch_seen.clear()
        self._executor = self._lookup = self._stage = None

    def _lockdown(self) -> None:
        """The targets are not where expected: every before-tool event we can reach is
        cancelled (the refused adapter's ``decide`` denies)."""
        registry = sys.modules.get(REGISTRY)
        hooks = getattr(registry, "HookRegistry", None) if registry is not None else None
        if not isinstance(hooks, type):
            return
        adapter = self

        def refuse(event):
            decision = adapter.decide(adapter._tool(event), (), call_id=adapter._call_id(event))
            adapter._deny(event, decision)

        def locked_async(wrapped, instance, args, kwargs):
            event = args[0] if args else kwargs.get("event")
            if not adapter._is_gated(event):
                return wrapped(*args, **kwargs)

            async def cancelled():
                refuse(event)
                return event, []

            return cancelled()

        def locked(wrapped, instance, args, kwargs):
            event = args[0] if args else kwargs.get("event")
            if not adapter._is_gated(event):
                return wrapped(*args, **kwargs)
            refuse(event)
            return event, []

        for attr, wrapper in (("invoke_callbacks_async", locked_async), ("invoke_callbacks", locked)):
            if callable(hooks.__dict__.get(attr)):
                self.wrap(hooks, attr, wrapper)

    # ------------------------------------------------------------ the batch gate

    def _is_batch(self, event: Any, name: str = BATCH_EVENT) -> bool:
        """``event`` is a ``BeforeToolsEvent`` (``name``: or the ``AfterToolsEvent`` ending
        its turn)."""
        cls = type(event)
        known = self._batch.get((cls, name))
        if known is None:
            known = any(
                k.__name__ == name and str(getattr(k, "__module__", "")).startswith("strands.")
                for k in getattr(cls, "__mro__", ())
            ) and (name != BATCH_EVENT or "cancel" in getattr(cls, "__dataclass_fields__", {}))
            self._batch[(cls, name)] = known
        return known

    def _batch_done(self, event: Any) -> None:
        """``AfterToolsEvent``: the turn's tool uses ran (or were refused); what the batch
        gates judged of them is dropped (a later turn fires its own ``BeforeToolsEvent``)."""
        try:
            for c in event.message["content"]:
                result = c.get("toolResult") if isinstance(c, dict) else None
                if isinstance(result, dict):
                    self._batch_seen.pop(result.get("toolUseId"), None)
        except Exception:  # noqa: BLE001 - the results message can hold anything: the entries stay (dropped as the oldest later)
            pass

    async def _abatch(self, registry: Any, event: Any, wrapped: Any, args: tuple, kwargs: dict) -> tuple:
        """``BeforeToolsEvent``: a user's callback decides whether the batch of tool uses
        runs at all (``cancel``). Each callback is a gate (deadline, raise, junk write or
        return, ``cancel`` sticking, an interrupt an ask), decided as a later stage of the
        turn's calls (the plugin gates and ``required`` belong to each call's own
        ``BeforeToolCallEvent``, which still judges every tool). With no callback of a
        user's (only strands' own, such as 1.62's ``AgentDelegation``) it is upstream's.
        What the gates judged of each tool use is carried to its call (``_carry``)."""
        try:
            callbacks = list(registry.get_callbacks_for(event))
            if not any(not _strands_own(cb) for cb in callbacks):
                return await wrapped(*args, **kwargs)
            self.mark_gated()  # a batch gate registered since the run began is in force for it too
            start = event.cancel
            before = self._use_pics(event)  # the tool uses as the gates are given them
            decision, late = await self._batch_round(lambda: list(registry.get_callbacks_for(event)), event, start)
            if decision.action is Action.DENY:
                self._write(event, "cancel", decision.deny_text)
                return event, []
            self._write(event, "cancel", start)
            if decision.action is Action.ASK:
                return event, [o.verdict.data for o in decision.deciding if o.verdict is not None and o.verdict.data is not None]
            ids = tuple(self.callable_id(cb) for cb in registry.get_callbacks_for(event) if not _strands_own(cb))
            self._carry(event, registry, before, late, ids)
            return event, []
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as "no callback objected": failed() says it and the batch is cancelled
            self._write(event, "cancel", self.failed(exc).deny_text)
            return event, []

    async def _batch_round(self, listing: Any, event: Any, start: Any) -> tuple:
        """One round of the batch gates (``listing()``: the callbacks, listed again while
        they register others) -> (the Decision, whether a gate missed its deadline: a gate
        abandoned then may still be running, and writing)."""
        callbacks = listing()
        loop = asyncio.get_running_loop()
        outcomes = await self._abatch_settle(callbacks, event, start, loop)
        ran = list(callbacks)
        for relist in range(_RELISTS + 1):  # a batch gate registered now judges this batch (live list upstream)
            now = listing()
            if len(now) == len(callbacks) and all(x is y for x, y in zip(now, callbacks)):
                break
            if relist == _RELISTS:
                outcomes.append(Outcome(hook=self.hook_id(BATCH_EVENT), failure=Failure.INVALID))
                break
            callbacks = now
            # the callbacks that ran already keep their outcomes (upstream runs each once:
            # one registering a callback every time it runs is no list that never settles)
            outcomes = _merged(outcomes, await self._abatch_settle(callbacks, event, start, loop, _judged(callbacks, ran)))
            ran = list(callbacks)
        tool, call_id = self._batch_call(event)
        late = any(o.failure is Failure.TIMEOUT for o in outcomes)
        return self.decide_stage(tool, outcomes, call_id=call_id), late

    # ------------------------------------------------------------ the batch's judged tool uses

    @staticmethod
    def _uses(event: Any) -> list:
        """The tool uses of a ``BeforeToolsEvent``'s message (as the executor reads them)."""
        return [c["toolUse"] for c in event.message["content"] if isinstance(c, dict) and "toolUse" in c]

    def _use_pics(self, event: Any) -> dict:
        """Call id -> picture of each tool use of the batch."""
        try:
            return {u.get("toolUseId"): fingerprint(u) for u in self._uses(event) if type(u) is dict}
        except Exception:  # noqa: BLE001 - the message can hold anything: no picture, each use is judged again at its call
            return {}

    def _carry(self, event: Any, registry: Any, before: dict, late: bool, ids: tuple = ()) -> None:
        """What the batch gates judged of each tool use, carried to its call (``_batch_seen``,
        by call id): a use that reaches its call changed is judged again by them. Pictured
        as the round left it; where a gate missed its deadline (it may still be writing) and
        the use is not as the gates were given it, not known (``CHANGED``: judged again)."""
        try:
            uses = self._uses(event)
            agent, state, kind = event.agent, event.invocation_state, type(event)
        except Exception:  # noqa: BLE001 - the message or event cannot be read: nothing to carry (upstream reads the same message to run the tools)
            return
        seen = self._batch_seen
        if len(seen) > 4096:  # the oldest half: a batch's calls run before the next batch of their agent
            for key in list(seen)[:2048]:
                seen.pop(key, None)
        for use in uses:
            call_id = nonempty_str(use.get("toolUseId")) if type(use) is dict else None
            if call_id is None:
                continue
            pic = fingerprint(use)
            if late and (pic is CHANGED or before.get(call_id, CHANGED) != pic):
                pic = CHANGED
            seen[call_id] = _BatchSeen(pic, registry, kind, agent, state, late, ids)

    async def _entered(self, registry: Any, event: Any) -> tuple:
        """A tool use at its ``BeforeToolCallEvent``, before any of its callbacks ran: one
        the batch gates judged and that changed since (a gate of theirs abandoned at its
        deadline writing after the batch's decision, a tool of the batch run before it
        editing the message) is judged again by them first (``_batch_again``)."""
        call_id = self._call_id(event)
        seen = self._batch_seen.get(call_id) if call_id is not None else None
        if seen is not None:
            use = self._tool_use(event)
            if not _same_use(seen.pic, use):
                text = await self._batch_again(seen, use, self._tool(event), call_id)
                if text is not None:
                    self._deny(event, None, text)
                    return event, []
        out = await self._agate(registry, event)
        if seen is not None:
            now = self._call_id(event)
            if now is not None and now != call_id and not event.cancel_tool:
                self._batch_seen[now] = seen  # a callback renamed the call id: what the batch judged follows it
        return out

    async def _batch_again(self, seen: Any, use: Any, tool: Optional[str], call_id: Optional[str]) -> Optional[str]:
        """The batch gates judge ``use`` (a tool use changed since they judged it) again, in
        a ``BeforeToolsEvent`` of its own (its message that one use; the agent, invocation
        state and registry of the batch; each user's callback a gate as in the batch, with
        its deadline and role; strands' own callbacks, such as ``AgentDelegation``'s batch
        bookkeeping, do not run again): None when they let it run (``seen`` then holds it as
        judged), else the text of the refusal. A use changed while they judge it again,
        where a gate of theirs missed its deadline, is judged once more; beyond
        ``_RELISTS`` rounds it never settles: invalid."""
        hook = self.hook_id(BATCH_EVENT)
        registry = seen.registry
        for _ in range(_RELISTS):
            before = fingerprint(use)
            try:
                event = seen.kind(agent=seen.agent, message={"role": "assistant", "content": [{"toolUse": use}]},
                                  invocation_state=seen.state)

                def listing(event: Any = event) -> list:
                    return [cb for cb in registry.get_callbacks_for(event) if not _strands_own(cb)]

                if not listing():  # no batch gate of a user's any more: upstream would run no batch gate
                    seen.pic, seen.late = before, False
                    return None
                decision, late = await self._batch_round(listing, event, event.cancel)
            except Exception as exc:  # noqa: BLE001 - the round cannot be built or run: the call is refused (audited), never run unjudged
                self._batch_seen.pop(call_id, None)
                return self.failed(exc, tool, call_id, hook=hook).deny_text
            if decision.action is Action.DENY:
                self._batch_seen.pop(call_id, None)
                return decision.deny_text
            if decision.action is Action.ASK:  # the batch's interrupt cannot stop a single tool call: refused
                self._batch_seen.pop(call_id, None)
                asked = next((o.hook for o in decision.deciding), hook)
                refusal = Verdict(action=Action.DENY, reason=ask_unsupported(asked, f"{self.name} (a batch gate judging a changed tool use again)"))
                return self.decide_stage(tool, [Outcome(hook=asked, verdict=refusal)], call_id=call_id).deny_text
            seen.late = seen.late or late
            after = fingerprint(use)
            if after is not CHANGED and (not seen.late or after == before):
                seen.pic = after
                return None
        decision = self.decide_stage(tool, [Outcome(hook=hook, failure=Failure.INVALID)], call_id=call_id)
        self._batch_seen.pop(call_id, None)
        return decision.reason or f"failsecure: hook '{hook}' failed closed (invalid)"

    async def _abatch_settle(self, callbacks: list, event: Any, start: Any, loop: Any, judged: Optional[list] = None) -> list:
        """The ``BeforeToolsEvent`` gates of ``callbacks`` under the settling rule; those
        ``judged`` (by an earlier listing) run again only on a later pass."""
        entries: list[Any] = []
        for cb in callbacks:
            if inspect.iscoroutinefunction(cb):
                entries.append(((self.callable_id(cb), self._batch_async, (cb, event), None, _batch_verdict), True))
            else:
                entries.append(((self.callable_id(cb), self._in_loop, (loop, self._batch_sync, cb, event), None, _batch_verdict), False))
        # a callback that rewrites a tool use of the message after a batch gate judged it:
        # the gates before it judge the batch again (the settling rule, no stamps)
        return await self._settle_entries(
            entries, lambda: self._write(event, "cancel", start), judged, lambda: event, self.hook_id(BATCH_EVENT),
            picture=_batch_picture, save=lambda _event: None,
        )

    def _batch_call(self, event: Any) -> tuple:
        """The audit's tool and call id for a batch: those of its one tool use, else none."""
        try:
            uses = [c["toolUse"] for c in event.message["content"] if isinstance(c, dict) and "toolUse" in c]
        except Exception:  # noqa: BLE001 - the message can hold anything: no one call to name
            return None, None
        if len(uses) != 1 or not isinstance(uses[0], dict):
            return None, None
        return plain_str(uses[0].get("name")), nonempty_str(uses[0].get("toolUseId"))

    def _batch_sync(self, cb: Any, event: Any) -> _Did:
        before = event.cancel
        try:
            result = cb(event)
        except self._interrupt_exc as exc:
            return _Did(before, event.cancel, None, self._asked(exc))
        if awaitable(result):  # a sync callable handing back a coroutine: never run upstream
            close_awaitable(result)
        return _Did(before, event.cancel, result)

    async def _batch_async(self, cb: Any, event: Any) -> _Did:
        before = event.cancel
        try:
            result = await cb(event)
        except self._interrupt_exc as exc:
            return _Did(before, event.cancel, None, self._asked(exc))
        return _Did(before, event.cancel, result)

    @staticmethod
    def _write(event: Any, field: str, value: Any) -> None:
        try:
            setattr(event, field, value)
        except Exception:  # noqa: BLE001 - an event that refuses the write (a subclass's __setattr__): written past it
            object.__setattr__(event, field, value)

    # ------------------------------------------------------------ the event

    def _is_gated(self, event: Any) -> bool:
        cls = type(event)
        known = self._gated.get(cls)
        if known is None:
            known = any(
                k.__name__ in GATED_EVENTS and str(getattr(k, "__module__", "")).startswith("strands.")
                for k in getattr(cls, "__mro__", ())
            ) and "cancel_tool" in getattr(cls, "__dataclass_fields__", {})
            self._gated[cls] = known
        return known

    @staticmethod
    def _tool_use(event: Any) -> Any:
        try:
            tool_use = event.tool_use
            return tool_use if isinstance(tool_use, dict) else None
        except Exception:  # noqa: BLE001 - the event's tool_use property can raise anything: no tool use
            return None

    def _tool(self, event: Any) -> Optional[str]:
        """The name of the tool that will run: a swapped ``selected_tool``'s own name,
        else ``tool_use["name"]`` (``_follow_rename`` has already pointed ``selected_tool``
        at a renamed call's tool where the executor looks the new name up)."""
        tool_use = self._tool_use(event)
        name = tool_use.get("name") if tool_use is not None else None
        try:
            selected = event.selected_tool
            if selected is not None:
                own = selected.tool_name
                if type(own) is str and own:
                    return own
        except Exception:  # noqa: BLE001 - the selected tool's tool_name can raise anything: the tool use's name stands
            pass
        return plain_str(name)

    def _call_id(self, event: Any) -> Optional[str]:
        tool_use = self._tool_use(event)
        call_id = tool_use.get("toolUseId") if tool_use is not None else None
        return nonempty_str(call_id)

    def _arguments(self, event: Any) -> Any:
        tool_use = self._tool_use(event)
        return tool_use.get("input") if tool_use is not None else None

    def _granted_call(self, event: Any) -> tuple:
        """What an allowed call's grant holds for the boundary (``_read_stream`` reads the
        same of the execution): the selected tool's own name (None: no tool, an unknown
        one) and the judged input."""
        try:
            selected = event.selected_tool
        except Exception:  # noqa: BLE001 - the event's property can raise anything: no tool to grant the call to
            selected = None
        return (self._tool_name(selected) if selected is not None else None, self._arguments(event))

    def _current(self, event: Any) -> Any:
        """What the gates must have judged: the selected tool (by identity) and the tool
        use (``integrity.fingerprint``: plain values by value, an agent or client injected
        into a direct call's input by identity, never deep-copied)."""
        try:
            return fingerprint((event.selected_tool, event.tool_use))
        except Exception:  # noqa: BLE001 - the event's properties can raise anything: pictured as changed, judged again (denied if never settled)
            return CHANGED  # equal to nothing: judged again, denied if it never settles

    @staticmethod
    def _put_back(event: Any) -> Any:
        """How to put the call back as it is now (for the settling rule's take-back of a
        stamp or a repeat): the selected tool and the tool use (the object, its content)."""
        tool, use = event.selected_tool, event.tool_use
        if type(use) is not dict:
            return None
        copy = snapshot(use)
        if copy is CHANGED:
            return None

        def restore(now: Any) -> bool:
            if now is not event:
                return False
            if event.selected_tool is not tool:
                event.selected_tool = tool
            if event.tool_use is not use:
                event.tool_use = use
            use.clear()
            use.update(copy)
            return True

        return restore

    # ------------------------------------------------------------ one callback

    def _call_sync(self, cb: Any, event: Any, origin: Optional[list] = None) -> _Did:
        before = event.cancel_tool
        try:
            result = cb(event)
        except self._interrupt_exc as exc:
            return _Did(before, event.cancel_tool, None, self._asked(exc))
        finally:
            if origin is not None:
                self._follow_rename(event, origin)
        if awaitable(result):  # a sync callable handing back a coroutine: never run upstream
            close_awaitable(result)
        return _Did(before, event.cancel_tool, result)

    async def _call_async(self, cb: Any, event: Any, origin: Optional[list] = None) -> _Did:
        before = event.cancel_tool
        try:
            result = await cb(event)
        except self._interrupt_exc as exc:
            return _Did(before, event.cancel_tool, None, self._asked(exc))
        finally:
            if origin is not None:
                self._follow_rename(event, origin)
        return _Did(before, event.cancel_tool, result)

    def _asked(self, exc: Any) -> Any:
        """The interrupt an ``InterruptException`` carries, ``_JUNK_INTERRUPT`` when it is
        no ``Interrupt`` (upstream's registry reads ``interrupt.name`` and ends the run;
        read as "no interrupt" it would let the tool run)."""
        interrupt = exc.interrupt
        return interrupt if isinstance(interrupt, self._interrupt_cls) else _JUNK_INTERRUPT

    # ------------------------------------------------------------ the gate

    def _gate(self, callbacks: list, event: Any) -> tuple:
        """Sync registries (``invoke_callbacks``): all callbacks are sync."""
        try:
            start = event.cancel_tool
            last = [len(callbacks)]  # the index of the step run last: a lower one starts a pass

            def step(i: int, cb: Any) -> Any:
                def run() -> list[Outcome]:
                    if i <= last[0]:
                        event.cancel_tool = start  # each pass starts from the call site's state
                    last[0] = i
                    return self.hook_calls([(self.callable_id(cb), self._call_sync, (cb, event), None, _verdict)])

                return run

            # callback by callback: a stamping callback settles, one after the last rewrite runs once
            # (pass 1 one hand-off for all of them)
            end: list = []
            outcomes = self.settle_calls(
                [(self.callable_id(cb), self._call_sync, (cb, event), None, _verdict) for cb in callbacks], lambda: event,
                self.hook_id("BeforeToolCallEvent"), steps=[step(i, cb) for i, cb in enumerate(callbacks)],
                picture=self._current, stamp_root=_STAMPABLE, finish_pass=True, save=self._put_back, end=end,
            )
            outcomes = _one_interrupt_per_name(outcomes)
            judged = self._settled(event, end)  # before the plugin gates decide: a rewrite meanwhile is judged again
            tool, call_id = self._tool(event), self._call_id(event)
            decision = self.decide(tool, outcomes, call_id=call_id, arguments=self._arguments(event),
                                   later=self._later(event))
            return self._render(event, start, decision, tool, call_id, judged)
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as "no callback objected": failed() says it and the call is cancelled
            self._deny(event, self.failed(exc, self._tool(event), self._call_id(event)))
            return event, []

    async def _agate(self, registry: Any, event: Any, follow: bool = True) -> tuple:
        """``invoke_callbacks_async``: sync and async callbacks, in upstream's order, each
        intervention handler a gate of its own. A run of sync callbacks shares one thread
        hand-off, with the dispatching loop set as the worker's running loop and the loop's
        thread waiting on the worker (as upstream, which runs them on the loop itself).
        ``follow``: a renamed ``tool_use`` runs the tool of the new name (the executor's
        dispatch; not for the re-judged call of the middleware terminal)."""
        try:
            callbacks = list(registry.get_callbacks_for(event))
            if callbacks:  # a gate registered since the run began (a lazily set-up policy) is in force for it too
                self.mark_gated()
            # each intervention registry's handlers, read once per listing (before they run: a
            # handler one appends is new) for the listing, the gates' keys and their entries
            handlers = self._handlers_of(callbacks)
            listed = self._listing(callbacks, handlers)
            start = event.cancel_tool
            loop = asyncio.get_running_loop()
            origin = self._origin(event) if follow and self._lookup is not None else None
            ran = self._gate_keys(callbacks, handlers)
            end: list = []  # the picture of the call as the last settling left it
            outcomes = await self._asettle(callbacks, handlers, event, start, loop, origin, end=end)
            # upstream iterates the live list: a gate a callback registers now (a lazily set-up
            # policy) runs for this very call. The gates new to the changed list judge the call
            # as it is now; those that ran keep their outcomes (upstream runs each once, so one
            # registering a callback every time it runs is no list that never settles) and
            # judge again only if a new one changes the call (the settling rule)
            for relist in range(_RELISTS + 1):
                now = list(registry.get_callbacks_for(event))
                handlers = self._handlers_of(now)
                relisted = self._listing(now, handlers)
                if len(relisted) == len(listed) and all(a is b for a, b in zip(relisted, listed)):
                    break
                listed = relisted
                if relist == _RELISTS:  # the callbacks keep registering callbacks: it never settles
                    outcomes.append(Outcome(hook=self.hook_id("BeforeToolCallEvent"), failure=Failure.INVALID))
                    break
                callbacks = now
                keys = self._gate_keys(callbacks, handlers)
                outcomes = _merged(outcomes, await self._asettle(callbacks, handlers, event, start, loop, origin, _judged(keys, ran), end=end))
                ran = keys
            judged = self._settled(event, end)  # before the plugin gates decide: a rewrite meanwhile is judged again
            tool, call_id = self._tool(event), self._call_id(event)
            decision = await self.adecide(tool, outcomes, call_id=call_id, arguments=self._arguments(event),
                                          later=self._later(event))
            return self._render(event, start, decision, tool, call_id, judged)
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as "no callback objected": failed() says it and the call is cancelled
            self._deny(event, self.failed(exc, self._tool(event), self._call_id(event)))
            return event, []

    def _settled(self, event: Any, end: list) -> Any:
        """The picture of the call as the gates left it: the last settling's (``end``), or,
        where it took none (one gate), the call pictured now, right after the gates and
        before anything else runs (the plugin gates, a gate abandoned at its deadline)."""
        judged = end[-1] if end else CHANGED
        return self._current(event) if judged is CHANGED else judged

    def _handlers_of(self, callbacks: list) -> Optional[list]:
        """Per callback, the ``(handler, before_tool_call)`` pairs of an interventions
        registry's (``_interventions``), else None; None for all when none is one."""
        found = [self._interventions(cb) for cb in callbacks]
        return found if any(h is not None for h in found) else None

    @staticmethod
    def _listing(callbacks: list, handlers: Optional[list]) -> list:
        """What the dispatch runs, for telling whether it changed: each callback and, for an
        interventions registry's, each of its handlers (upstream iterates both lists live)."""
        if handlers is None:
            return callbacks
        out: list = []
        for cb, pairs in zip(callbacks, handlers):
            out.append(cb)
            if pairs is not None:
                out += [handler for handler, _ in pairs]
        return out

    @staticmethod
    def _gate_keys(callbacks: list, handlers: Optional[list]) -> list:
        """One key per gate of ``callbacks``, aligned with ``_entries``: the callback, or
        (the callback, the handler) for each handler of an interventions registry's."""
        if handlers is None:
            return callbacks
        keys: list = []
        for cb, pairs in zip(callbacks, handlers):
            keys += [cb] if pairs is None else [_Key(cb, handler) for handler, _ in pairs]
        return keys

    async def _asettle(self, callbacks: list, handlers: Optional[list], event: Any, start: Any, loop: Any,
                       origin: Optional[list], judged: Optional[list] = None, end: Optional[list] = None) -> list:
        """The gates of ``callbacks`` (each intervention handler one, ``handlers``: from
        ``_handlers_of``) under the settling rule, in upstream's order: the outcomes, one
        interrupt per name. The gates ``judged`` (by an earlier listing) run again only on
        a later pass. ``end``: the picture of the call as the gates left it is appended."""
        entries = self._entries(callbacks, handlers, event, loop, origin)

        def reset() -> None:
            event.cancel_tool = start

        return await self._settle_entries(
            entries, reset, judged, lambda: event, self.hook_id("BeforeToolCallEvent"),
            picture=self._current, stamp_root=_STAMPABLE, save=self._put_back, end=end,
        )

    async def _settle_entries(self, entries: list, reset: Any, judged: Optional[list], current: Any, hook: str,
                              **rule: Any) -> list:
        """``entries`` (a ``hook_calls`` entry and whether it is async, per gate) under the
        settling rule, each pass starting from the call site's state (``reset()``); pass 1
        runs each run of sync gates in one hand-off, the loop held as upstream holds it. The
        gates ``judged`` by an earlier listing run again only on a later pass. The outcomes,
        one interrupt per name."""
        last = [len(entries)]  # the index of the step run last: a lower one starts a pass

        def step(i: int, entry: Any, is_async: bool) -> Any:
            async def run() -> list[Outcome]:
                if i <= last[0]:
                    reset()  # each pass starts from the call site's state
                last[0] = i
                if is_async:
                    return await self.ahook_calls([entry])
                return self.hook_calls([entry])

            return run

        steps = [step(i, entry, is_async) for i, (entry, is_async) in enumerate(entries)]
        held: list = []
        if judged:
            calls, steps, held = _relisted(entries, judged, steps)
        else:
            calls = [entry for entry, _ in entries]
        outcomes = await self.asettle_calls(calls, current, hook, steps=steps, hold_loop=True, finish_pass=True, **rule)
        if held:
            outcomes = [o for o in outcomes if not _among(o, held)]
        return _one_interrupt_per_name(outcomes)

    def _entries(self, callbacks: list, handlers: Optional[list], event: Any, loop: Any, origin: Optional[list]) -> list:
        """``(guarded call, is_async)`` per gate: a callback, or each ``before_tool_call``
        handler of an interventions registry's callback (``handlers``: ``_handlers_of``)."""
        entries: list[Any] = []
        for i, cb in enumerate(callbacks):
            pairs = handlers[i] if handlers is not None else None
            if pairs is None:
                # the kind as upstream reads it, at every dispatch (a function's ``__code__``
                # can be swapped): only the hook id is cached (``callable_id``)
                hook_id = self.callable_id(cb)
                if inspect.iscoroutinefunction(cb):
                    entries.append(((hook_id, self._call_async, (cb, event, origin), None, _verdict), True))
                else:
                    entries.append(((hook_id, self._in_loop, (loop, self._call_sync, cb, event, origin), None, _verdict), False))
                continue
            for handler, method in pairs:
                hook_id = self._handler_hook(handler)
                if inspect.iscoroutinefunction(method):
                    entries.append(((hook_id, self._handler_async, (handler, event, origin), None, _verdict), True))
                else:
                    entries.append(((hook_id, self._handler_held, (hook_id, loop, handler, event, origin), None, _verdict), True))
        return entries

    def _in_loop(self, loop: Any, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` with ``loop`` as this thread's running loop (a sync callback may ask
        for it: ``asyncio.get_running_loop()``); the loop's own thread is waiting meanwhile."""
        set_loop, get_loop = self._set_loop, self._get_loop
        if set_loop is None or get_loop is None:
            return fn(*args)
        previous = get_loop()
        if previous is loop:  # run inline on the loop's own thread (no deadline): it is running there already
            return fn(*args)
        set_loop(loop)
        try:
            return fn(*args)
        finally:
            set_loop(previous)

    # ------------------------------------------------------------ renames

    def _name(self, event: Any) -> Any:
        tool_use = self._tool_use(event)
        return tool_use.get("name") if tool_use is not None else None

    def _origin(self, event: Any) -> list:
        """``_follow_rename``'s origin for this dispatch. A round retried by an
        ``AfterToolCallEvent`` hook starts from the tool use an earlier round renamed, with
        the executor's first tool selected: upstream compares the name with that tool's
        (the model's) and runs the tool of the renamed one, so that tool is selected before
        the first gate judges (renamed back, the executor's tool is selected again)."""
        tool, name = event.selected_tool, self._name(event)
        origin = [tool, name, _UNSET]
        if tool is not None and type(name) is str:
            own = self._tool_name(tool)
            if own is not None and own != name:
                origin[1] = own
                self._follow_rename(event, origin)
        return origin

    def _follow_rename(self, event: Any, origin: list) -> None:
        """Strands 1.6x runs the tool registered under a renamed ``tool_use["name"]`` when
        no callback selected another tool: point ``selected_tool`` at it, right after the
        callback that renamed, so the gates after it, the next round, the plugin gates and
        the audit judge and name the tool that runs. ``origin``: ``[the executor's tool,
        the model's name, the tool failsecure selected for a rename or _UNSET]``; a name
        renamed back selects the executor's tool again, as upstream would run it."""
        tool, name, ours = origin
        selected = event.selected_tool
        if selected is not tool and (ours is _UNSET or selected is not ours):
            return  # a callback selected a tool itself: upstream runs that one
        new = self._name(event)
        if new == name:
            if selected is not tool:
                event.selected_tool = tool
                origin[2] = _UNSET
            return
        if type(new) is not str:
            raise TypeError("tool_use name")
        found = self._lookup(event.agent, new)
        event.selected_tool = found
        origin[2] = found

    # ------------------------------------------------------------ interventions

    def _interventions(self, cb: Any) -> Optional[list]:
        """The ``(handler, before_tool_call)`` pairs an interventions registry's callback
        would run, in its order; None for any other callback (or a registry subclass that
        changes how it dispatches: then it is one callback)."""
        func = getattr(cb, "__func__", None)  # a bound method (a plain function is no registry's)
        if func is None:
            return None
        module = sys.modules.get(INTERVENTIONS)
        if module is None:
            return None
        cls = module.__dict__.get("InterventionRegistry")
        if not isinstance(cls, type) or func is not cls.__dict__.get("_on_before_tool_call"):
            return None
        owner = cb.__self__
        kind = type(owner)
        for attr in ("_dispatch", "_apply_before_tool_call", "_is_overridden"):
            if getattr(kind, attr, None) is not cls.__dict__.get(attr):
                return None
        pairs = []
        for handler in list(owner._handlers):
            if owner._is_overridden(handler, "before_tool_call"):
                pairs.append((handler, _own_method(handler)))
        return pairs

    def _handler_hook(self, handler: Any) -> str:
        """``strands:<module>.<class>.before_tool_call`` of an intervention handler's class."""
        cls = type(handler)
        known = self._ids.get(cls)
        if known is not None:
            return known
        return self._ids.put(cls, self.hook_id(f"{callable_name(cls)}.before_tool_call"))

    async def _handler_held(self, hook_id: str, loop: Any, handler: Any, event: Any, origin: Optional[list]) -> Any:
        """A sync ``before_tool_call``, as upstream's registry runs it: called (on the
        guard's worker, the loop held, within the handler's deadline: ``_handler_sync``),
        and an awaitable it answers awaited on the loop within what is left of it (this
        coroutine's own deadline, ``guard.acall``'s), then carried out like an async
        handler's action. A raise on the worker is raised here (its type audited); a hang
        there holds this coroutine past its deadline: a timeout."""
        got = self.hook_calls([(hook_id, self._in_loop, (loop, self._handler_sync, handler, event, origin), None, _carried)])[0]
        if got.failure is not None or got.verdict is None:
            return _Held(got.failure)
        answer = got.verdict.data
        if type(answer) is not _Pending:
            return answer
        if answer.exc is not None:
            raise answer.exc
        before = answer.before
        try:
            action = await answer.awaitable
            return self._act(handler, event, before, action)
        except self._interrupt_exc as exc:
            return _Did(before, event.cancel_tool, None, self._asked(exc))
        finally:
            if origin is not None:
                self._follow_rename(event, origin)

    def _handler_sync(self, handler: Any, event: Any, origin: Optional[list] = None) -> Any:
        """The sync part of ``_handler_held`` (on the worker): its answer, or a ``_Pending``
        (an awaitable to await on the loop, or what it raised, to raise there)."""
        before = event.cancel_tool
        try:
            action = handler.before_tool_call(event)
            if awaitable(action):  # a sync method handing back a coroutine: awaited on the loop, as upstream
                return _Pending(action, before)
            return self._act(handler, event, before, action)
        except self._interrupt_exc as exc:
            return _Did(before, event.cancel_tool, None, self._asked(exc))
        except BaseException as exc:  # noqa: BLE001 - not judged here: raised again by _handler_held on the loop, where the guard judges it
            return _Pending(None, before, exc)
        finally:
            if origin is not None:
                self._follow_rename(event, origin)

    async def _handler_async(self, handler: Any, event: Any, origin: Optional[list] = None) -> Any:
        before = event.cancel_tool
        try:
            action = await handler.before_tool_call(event)
            return self._act(handler, event, before, action)
        except self._interrupt_exc as exc:
            return _Did(before, event.cancel_tool, None, self._asked(exc))
        finally:
            if origin is not None:
                self._follow_rename(event, origin)

    def _act(self, handler: Any, event: Any, before: Any, action: Any) -> Any:
        """An intervention action as a verdict, carried out as the registry would (a
        ``Transform`` applied, a ``Confirm`` asked), inside the handler's guarded call."""
        if event.cancel_tool is not before:  # the handler wrote the event itself
            try:
                written = _verdict(_Did(before, event.cancel_tool, None))
            except Invalid:
                return _Acted(None)
            if written.action is Action.DENY:
                return _Acted(written)
        actions = sys.modules.get(ACTIONS)
        kinds: dict[str, Any] = actions.__dict__ if actions is not None else {}
        deny, proceed, guide = kinds.get("Deny"), kinds.get("Proceed"), kinds.get("Guide")
        transform, confirm = kinds.get("Transform"), kinds.get("Confirm")
        # upstream's order (``_dispatch`` reads a Guide first, then ``_apply_before_tool_call``
        # Deny, Confirm, Transform, Proceed): an action of two kinds (a user's class deriving
        # from Proceed and a Confirm) is what upstream takes it for, never a Proceed first
        if _is(action, guide):
            feedback = action.feedback
            if type(feedback) is not str:
                return _Acted(None)
            return _Acted(Verdict(action=Action.DENY, reason=f"GUIDANCE: [{handler.name}] {feedback}"))
        if _is(action, deny):
            reason = action.reason
            return _Acted(Verdict(action=Action.DENY, reason=f"DENIED: {reason}") if type(reason) is str else None)
        if _is(action, confirm):
            extra = {"response": action.response} if action.response is not None else {}
            try:
                answer = event.interrupt(handler.name, reason=action.prompt, **extra)
            except self._interrupt_exc as exc:
                return _Did(before, before, None, self._asked(exc))
            check: Any = action.evaluate if action.evaluate is not None else kinds.get("default_evaluate")
            ok = check(answer)
            if ok is True:
                return _Acted(ALLOW)
            if ok is False:
                return _Acted(Verdict(action=Action.DENY, reason=f"CONFIRMATION_FAILED: {action.prompt}"))
            return _Acted(None)
        if _is(action, transform):
            action.apply(event)
            if event.cancel_tool is not before:
                try:
                    written = _verdict(_Did(before, event.cancel_tool, None))
                except Invalid:
                    return _Acted(None)
                if written.action is Action.DENY:
                    return _Acted(written)
            return _Acted(ABSTAIN)  # the rewrite is judged by the next round
        if _is(action, proceed):
            return _Acted(ALLOW)
        return _Acted(None)  # None, or anything that is not an action

    # ------------------------------------------------------------ ExecuteToolStage middleware

    def _layer(self, tagged: Any, chain: list, context: Any) -> Any:
        """One ExecuteToolStage handler as a gate. Its decision is what it does before the
        tool: proceed (``next_fn(ctx)`` iterated: allow, with the context it passes on),
        short-circuit with its own result, ask (``ctx.interrupt``). Until it proceeds it has
        its deadline (an ``await`` past it is cancelled; a loop blocked past it is a
        timeout when it proceeds); a raise, a timeout or a context that is none (junk) is
        a failure, decided as a later stage of the call: a deny becomes the tool's error
        result with the Decision's reason (never the exception text). A context it passes
        on that differs from the one it got (a replaced tool or tool use) is judged again
        by every layer outside it that proceeded with another one. Output handlers run
        after the tool: not gates."""
        handler = tagged.handler
        if getattr(tagged, "phase", None) == "output":
            return handler
        user = _user_handler(handler)
        hook = self.callable_id(user)
        adapter = self
        if user is not handler and getattr(tagged, "phase", None) == "input" and not inspect.iscoroutinefunction(user):
            return self._input_layer(handler, user, hook, chain, context)

        async def layer(ctx: Any, next_fn: Any) -> Any:
            box = _Box(ctx, hook, len(chain), handler, adapter._ctx_pic(ctx) if chain else CHANGED)
            chain.append(box)

            def proceed(passed: Any) -> Any:
                return adapter._proceed(box, passed, next_fn, chain, context)

            gen = handler(ctx, proceed)
            try:
                while box.went is _UNSET:
                    try:
                        item = await adapter._step(box, gen)
                    except StopAsyncIteration:
                        return
                    if item is _FAILED:
                        if box.decision is not None and box.decision.action is Action.DENY:
                            yield adapter._error_result(ctx, box.decision)
                            return
                        async for event in next_fn(ctx):  # a failure that does not deny: the layer is skipped
                            yield event
                        return
                    yield item
                async for item in gen:
                    yield item
            finally:
                await gen.aclose()

        return layer

    def _input_layer(self, handler: Any, user: Any, hook: str, chain: list, context: Any) -> Any:
        """A sync Input handler (``handler(ctx) -> ctx``, or an awaitable of it): run on the
        guard's worker with the dispatching loop as its running loop (as the callbacks), so
        its deadline holds even when it blocks; its answer is the context it proceeds with."""
        adapter = self

        def judge(answer: Any) -> Verdict:
            if type(answer) is _Asked:
                return Verdict(action=Action.ASK, data=answer)
            if not (isinstance(context, type) and isinstance(answer, context)):
                raise Invalid()
            return Verdict(action=Action.ALLOW, data=answer)

        def call(loop: Any, ctx: Any) -> Any:
            try:
                return adapter._in_loop(loop, user, ctx)
            except adapter._interrupt_exc as exc:  # ``ctx.interrupt``: the human's stop, raised on the loop
                return _Asked(exc)

        async def layer(ctx: Any, next_fn: Any) -> Any:
            box = _Box(ctx, hook, len(chain), handler, adapter._ctx_pic(ctx) if chain else CHANGED)
            chain.append(box)
            loop = asyncio.get_running_loop()
            outcome = (await adapter.ahook_calls([(hook, call, (loop, ctx), None, judge)]))[0]
            verdict = outcome.verdict
            if verdict is not None and verdict.action is Action.ASK:
                raise verdict.data.exc
            if outcome.failure is not None or verdict is None:
                decision = adapter._stage_decision(ctx, [outcome])
                if decision.action is Action.DENY:
                    yield adapter._error_result(ctx, decision)
                    return
                passed = ctx  # a failure that does not deny: the layer is skipped
            else:
                passed = verdict.data
            async for event in adapter._proceed(box, passed, next_fn, chain, context):
                yield event

        return layer

    async def _step(self, box: Any, gen: Any) -> Any:
        """One step of a layer's handler before it proceeded, within its deadline; a failure
        is decided (``box.decision``) and answered ``_FAILED``."""
        timeout = current_config().timeout_for(box.hook)
        loop = asyncio.get_running_loop()
        if box.deadline is None and timeout:
            box.deadline = loop.time() + timeout
        try:
            async with asyncio.timeout_at(box.deadline) as scope:
                box.scope = scope
                try:
                    return await gen.__anext__()
                finally:
                    box.scope = None
        except StopAsyncIteration:
            raise
        except self._interrupt_exc:
            raise  # the middleware asks a human: upstream's stop
        except TimeoutError as exc:
            if box.went is not _UNSET:
                raise  # the chain inside it (the tool) raised it
            failure = Outcome(hook=box.hook, failure=Failure.TIMEOUT) if scope.expired() else \
                Outcome(hook=box.hook, failure=Failure.RAISED, exception_type=type_name(exc))
        except Exception as exc:
            if box.went is not _UNSET:
                raise
            failure = Outcome(hook=box.hook, failure=Failure.RAISED, exception_type=type_name(exc))
        except BaseException as exc:  # SystemExit, a hostile BaseException: the gate failed
            if box.went is not _UNSET or isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError, GeneratorExit)):
                raise
            failure = Outcome(hook=box.hook, failure=Failure.RAISED, exception_type=type_name(exc))
        box.decision = self._stage_decision(box.ctx, [failure])
        return _FAILED

    def _stage_decision(self, ctx: Any, outcomes: list) -> Any:
        return self.decide_stage(self._ctx_tool(ctx), outcomes, call_id=self._ctx_call_id(ctx))

    def _proceed(self, box: Any, passed: Any, next_fn: Any, chain: list, context: Any) -> Any:
        """What a layer's ``next_fn(ctx)`` returns: reached (iterated), the layer's decision is
        made: late or junk fails; a replaced call is judged again by the layers outside."""
        adapter = self

        async def reached(passed: Any = passed) -> Any:
            first = box.went is _UNSET  # a later next_fn (a retry inside the middleware) is judged the same
            box.went = passed
            # pictured now: a layer editing the tool use in place passes on the very context it got
            box.went_pic = pic = adapter._ctx_pic(passed)
            scope = box.scope
            if scope is not None:
                scope.reschedule(None)  # the tool's own time is not the middleware's
            failure = None
            if first and box.deadline is not None and asyncio.get_running_loop().time() > box.deadline:
                failure = Outcome(hook=box.hook, failure=Failure.TIMEOUT)  # it blocked the loop past its deadline
            elif not (isinstance(context, type) and isinstance(passed, context)):
                failure = Outcome(hook=box.hook, failure=Failure.INVALID)
            if failure is not None:
                decision = adapter._stage_decision(box.ctx, [failure])
                if decision.action is Action.DENY:
                    yield adapter._error_result(box.ctx, decision)
                    return
                passed = box.ctx
                box.went, box.went_pic = passed, adapter._ctx_pic(passed)
            elif box.index and not adapter._same_as(pic, box.pic, passed, box.ctx):
                decision = await adapter._rejudge(chain[:box.index], passed)
                if decision is not None:
                    yield adapter._error_result(passed, decision)
                    return
            async for event in next_fn(passed):
                yield event

        return reached()

    async def _rejudge(self, outer: list, ctx: Any) -> Any:
        """The layers outside one that replaced the call, each asked again about ``ctx``
        (its handler run up to where it proceeds; nothing runs after): the Decision when
        one of them does not proceed with it unchanged (its short-circuit a deny, a
        further change unsettled: invalid), else None."""
        outcomes: list = []
        for judged in outer:
            if judged.went is _UNSET or self._same_as(judged.went_pic, self._ctx_pic(ctx), judged.went, ctx):
                continue
            again = _Box(ctx, judged.hook, judged.index)

            def probe(passed: Any, again: Any = again) -> Any:
                async def reached() -> Any:
                    again.went = passed
                    if again.scope is not None:
                        again.scope.reschedule(None)
                    return
                    yield  # an async generator that yields nothing

                return reached()

            gen = judged.handler_of(ctx, probe)
            try:
                item = _UNSET
                while again.went is _UNSET:
                    try:
                        item = await self._step(again, gen)
                    except StopAsyncIteration:
                        break
                    except Exception:
                        if again.went is _UNSET:
                            raise
                        break  # what it does after it proceeded (nothing ran): not its decision
                    if item is _FAILED or isinstance(item, self._executor.ToolResultEvent):
                        break  # failed, or answered with its own result
            finally:
                await gen.aclose()
            if item is _FAILED:
                if again.decision is not None and again.decision.action is Action.DENY:
                    return again.decision
                continue
            if again.went is _UNSET:  # it answered with its own result (or none): it refuses this call
                outcomes.append(Outcome(hook=judged.hook, verdict=Verdict(action=Action.DENY)))
            elif not self._same_ctx(again.went, ctx):
                outcomes.append(Outcome(hook=judged.hook, failure=Failure.INVALID))
        if not outcomes:
            return None
        decision = self._stage_decision(ctx, outcomes)
        return decision if decision.action is Action.DENY else None

    @staticmethod
    def _ctx_pic(ctx: Any) -> Any:
        """A context's call as it is now: its tool (by identity) and tool use (by value)."""
        try:
            return (ctx.tool, fingerprint(ctx.tool_use))
        except Exception:  # noqa: BLE001 - the context's tool or tool_use can raise anything: pictured as changed, judged again
            return CHANGED

    def _same_as(self, pic: Any, then: Any, a: Any, b: Any) -> bool:
        """Context ``a`` now (pictured ``pic``) holds the call ``b`` held when pictured
        ``then``; where either could not be pictured (too big, a cycle), as the contexts
        are now (``_same_ctx``: the very context is the same call)."""
        if pic is CHANGED or then is CHANGED or pic[1] is CHANGED or then[1] is CHANGED:
            return self._same_ctx(a, b)
        return _same_pic(pic, then)

    @staticmethod
    def _same_ctx(a: Any, b: Any) -> bool:
        if a is b:
            return True
        try:
            return a.tool is b.tool and fingerprint(a.tool_use) == fingerprint(b.tool_use) and fingerprint(a.tool_use) is not CHANGED
        except Exception:  # noqa: BLE001 - the contexts' tool or tool_use can raise anything: not the same call, so it is judged again
            return False

    def _ctx_tool(self, ctx: Any) -> Optional[str]:
        name = self._tool_name(getattr(ctx, "tool", None))
        if name is None:
            tool_use = getattr(ctx, "tool_use", None)
            name = tool_use.get("name") if isinstance(tool_use, dict) else None
        return plain_str(name)

    def _error_result(self, ctx: Any, decision: Any) -> Any:
        text = decision.deny_text
        result = {"toolUseId": str(self._ctx_call_id(ctx)), "status": "error", "content": [{"text": text}]}
        return self._executor.ToolResultEvent(result)

    # ------------------------------------------------------------ the middleware terminal

    def _judged_terminal(self, terminal: Any) -> Any:
        """The end of the ExecuteToolStage chain: a tool use or tool the middleware
        replaced after the gates allowed the call is judged again by every gate before it
        runs; cancelled, the tool gets the cancel as its error result instead of running."""
        adapter = self

        async def judged(ctx):
            try:
                seen = adapter._judged.pop(adapter._ctx_call_id(ctx), None)
                same = adapter._same_judged(seen, ctx)
            except Exception:  # noqa: BLE001 - the context's tool or tool_use can raise anything: not the call judged, so it is judged again
                same = False
            kind = seen[2] if seen is not None else None
            text = None
            if not same:
                ctx, text = await adapter._regate(ctx, kind)
            if text is None and adapter._batch_seen:  # a batch gate judged the turn's tool uses
                ctx, text = await adapter._batch_terminal(ctx, kind)
            if text is not None:
                result = {"toolUseId": str(adapter._ctx_call_id(ctx)), "status": "error", "content": [{"text": text}]}
                yield adapter._executor.ToolResultEvent(result)
                return
            async for item in terminal(ctx):
                yield item

        return judged

    async def _batch_terminal(self, ctx: Any, kind: Any) -> tuple:
        """The call about to run, where a batch gate of its turn missed its deadline (an
        abandoned gate may write the tool use at any time, also while its callbacks or the
        plugin gates judge it): changed from what the batch gates judged, it is judged
        again by them (``_batch_again``); changed while they judge it, by the per-call
        gates again (``_regate``). ``(context to run, None)`` or ``(context, refusal)``. A
        batch whose gates all answered in time is not judged again here: a change since
        the call's entry is its callbacks' own (judged by the per-call gates)."""
        call_id = self._ctx_call_id(ctx)
        for _ in range(_RELISTS):
            seen = self._batch_seen.get(call_id) if nonempty_str(call_id) is not None else None
            try:
                use = ctx.tool_use
            except Exception:  # noqa: BLE001 - the context's tool_use property can raise anything: pictured as changed
                use = _UNSET
            if seen is None or not seen.late or (use is not _UNSET and _same_use(seen.pic, use)):
                return ctx, None
            judged = self._ctx_pic(ctx)  # as the per-call gates judged it (just checked)
            text = await self._batch_again(seen, use, self._ctx_tool(ctx), call_id)
            if text is not None:
                return ctx, text
            if not _same_pic(self._ctx_pic(ctx), judged):  # changed while the batch gates judged it again
                ctx, text = await self._regate(ctx, kind)
                if text is not None:
                    return ctx, text
        decision = self.decide_stage(self._ctx_tool(ctx), [Outcome(hook=self.hook_id(BATCH_EVENT), failure=Failure.INVALID)], call_id=call_id)
        return ctx, decision.reason or f"failsecure: hook '{self.hook_id(BATCH_EVENT)}' failed closed (invalid)"

    @staticmethod
    def _ctx_call_id(ctx: Any) -> Any:
        try:
            tool_use = ctx.tool_use
            return tool_use.get("toolUseId") if isinstance(tool_use, dict) else None
        except Exception:  # noqa: BLE001 - the context's tool_use property can raise anything: no call id
            return None

    async def _regate(self, ctx: Any, kind: Any = None) -> tuple:
        """``(context to run, None)``, or ``(context, cancel text)`` when the gates deny.
        ``kind``: the event class the gates judged the call with (1.52's ``BidiAgent`` has
        its own), else ``BeforeToolCallEvent``."""
        events = sys.modules[EVENTS]
        for _ in range(_RELISTS):
            try:
                event = (kind or events.BeforeToolCallEvent)(agent=ctx.agent, selected_tool=ctx.tool, tool_use=ctx.tool_use, invocation_state=ctx.invocation_state)
                hooks = ctx.agent.hooks
            except Exception as exc:  # noqa: BLE001 - the event cannot be built from the middleware's context: the call is cancelled (audited)
                decision = self.failed(exc, None, self._ctx_call_id(ctx), hook=self.hook_id("ExecuteToolStage"))
                return ctx, decision.reason or f"failsecure: hook '{self.hook_id('ExecuteToolStage')}' failed closed (raised)"
            _, interrupts = await self._agate(hooks, event, follow=False)
            if interrupts:
                raise self._interrupt_exc(interrupts[0])
            cancel = event.cancel_tool
            if cancel:
                return ctx, cancel if type(cancel) is str else DEFAULT_CANCEL
            call_id = self._ctx_call_id(ctx)
            seen = self._judged.pop(call_id, None)
            if event.selected_tool is not ctx.tool or event.tool_use is not ctx.tool_use:
                ctx = dataclasses.replace(ctx, tool=event.selected_tool, tool_use=event.tool_use)
            # what runs is the call judged now, as the terminal's own check: one rewritten
            # while it was judged again (the plugin gates deciding) is judged once more;
            # one too large to picture was judged just now as it is (once: a change while
            # the gates judged it cannot be seen)
            if nonempty_str(call_id) is None or self._same_judged(seen, ctx) or self._judged_unpictured(seen, ctx):
                return ctx, None
        decision = self.decide_stage(self._ctx_tool(ctx), [Outcome(hook=self.hook_id("BeforeToolCallEvent"), failure=Failure.INVALID)],
                                     call_id=self._ctx_call_id(ctx))
        return ctx, decision.reason or f"failsecure: hook '{self.hook_id('BeforeToolCallEvent')}' failed closed (invalid)"

    @staticmethod
    def _same_judged(seen: Optional[tuple], ctx: Any) -> bool:
        """``ctx``'s call is the one ``seen`` (a ``_judged`` entry) holds as judged. A call
        too large to picture (``CHANGED``) is the same as nothing: two such pictures are
        equal whatever the calls hold, so it is judged again."""
        try:
            return (seen is not None and seen[0] is ctx.tool and seen[1] is not CHANGED
                    and seen[1] == fingerprint((ctx.tool, ctx.tool_use)))
        except Exception:  # noqa: BLE001 - the context's tool or tool_use can raise anything: not the call judged
            return False

    @staticmethod
    def _judged_unpictured(seen: Optional[tuple], ctx: Any) -> bool:
        """``seen`` holds the call just judged again with ``ctx``'s tool, too large to picture."""
        try:
            return seen is not None and seen[0] is ctx.tool and seen[1] is CHANGED
        except Exception:  # noqa: BLE001 - the context's tool can raise anything: not the call judged
            return False

    def _render(self, event: Any, start: Any, decision, tool: Optional[str], call_id: Optional[str], judged: Any = CHANGED) -> tuple:
        """The Decision in upstream's own terms: ``(event, interrupts)``. ``judged``: the
        settling's last picture of the call (what the gates judged; nothing ran on it since),
        else ``CHANGED`` (pictured now)."""
        self.granted(decision, tool, call_id, self._granted_call(event))
        if decision.action is Action.DENY:
            self._deny(event, decision)
            return event, []
        if decision.action is Action.ASK:
            interrupts = []
            for outcome in decision.deciding:
                interrupt = outcome.verdict.data if outcome.verdict is not None else None
                if interrupt is None:  # a failsecure plugin gate asked: Strands has no such answer
                    self._deny(event, None, ask_unsupported(outcome.hook, self.name))
                    return event, []
                interrupts.append(interrupt)
            event.cancel_tool = start
            return event, interrupts
        event.cancel_tool = start
        if call_id is not None:
            if len(self._judged) > 4096:
                self._judged.clear()
            self._judged[call_id] = (event.selected_tool, self._current(event) if judged is CHANGED else judged, type(event))
        return event, []

    def _deny(self, event: Any, decision, text: Optional[str] = None) -> None:
        self._judged.pop(self._call_id(event), None)
        if text is None:
            text = decision.deny_text if decision is not None else "failsecure: denied the call"
        try:
            event.cancel_tool = text
        except Exception:  # noqa: BLE001 - an event that refuses the write (a subclass's __setattr__): cancel_tool is written past it
            object.__setattr__(event, "cancel_tool", text)

    # ------------------------------------------------------------ Verdicts

    def to_verdict(self, native: Any) -> Verdict:
        return _verdict(native)

    # ------------------------------------------------------------ doctor

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only ``BeforeToolCallEvent`` callback of a fresh, real
        ``HookRegistry``, through its (patched) ``invoke_callbacks_async``: True when
        Strands would cancel the tool call."""
        registry_mod = sys.modules[REGISTRY]
        events = importlib.import_module(EVENTS)
        registry = registry_mod.HookRegistry()

        def callback(event):
            return gate(event)

        callback.__qualname__ = f"self-test.{getattr(gate, '__name__', 'gate')}"
        registry.add_callback(events.BeforeToolCallEvent, callback)
        event = events.BeforeToolCallEvent(
            agent=None,
            selected_tool=None,
            tool_use={"toolUseId": "failsecure-self-test", "name": "failsecure-self-test", "input": {}},
            invocation_state={},
        )
        self.run_probe(lambda: asyncio.run(registry.invoke_callbacks_async(event)))
        cancel = event.cancel_tool
        return cancel is True or (type(cancel) is str and bool(cancel))


class _View:
    """A registry as ``compose`` reads it: only its handlers."""

    __slots__ = ("_handlers",)

    def __init__(self, handlers: dict):
        self._handlers = handlers


_FAILED = object()


class _Asked:
    """A sync Input handler's ``ctx.interrupt``, carried off the worker."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


class _Box:
    """One ExecuteToolStage layer of one call: the context it got, what it proceeded with
    (``went``), its deadline and the failure's Decision."""

    __slots__ = ("ctx", "hook", "index", "went", "deadline", "scope", "decision", "handler_of", "pic", "went_pic")

    def __init__(self, ctx: Any, hook: str, index: int, handler: Any = None, pic: Any = CHANGED):
        self.ctx, self.hook, self.index, self.handler_of = ctx, hook, index, handler
        self.pic = pic  # the call as the layer got it (``_ctx_pic``; a layer with others outside it)
        self.went: Any = _UNSET
        self.went_pic: Any = CHANGED  # the call as it proceeded with it
        self.deadline: Any = None
        self.scope: Any = None
        self.decision: Any = None


def _same_pic(a: Any, b: Any) -> bool:
    """Two ``_ctx_pic`` pictures of one call (CHANGED equal to nothing)."""
    if a is CHANGED or b is CHANGED or a[1] is CHANGED:
        return False
    try:
        return a[0] is b[0] and bool(a[1] == b[1])
    except Exception:  # noqa: BLE001 - a hostile __eq__ inside a picture: not the same call
        return False


def _user_handler(handler: Any) -> Any:
    """The user's handler behind upstream's Input/Output adapter closure (named after it)."""
    code = getattr(handler, "__code__", None)
    if code is not None and getattr(handler, "__name__", "") == "adapted" and "handler" in code.co_freevars:
        try:
            return handler.__closure__[code.co_freevars.index("handler")].cell_contents
        except Exception:  # noqa: BLE001 - an adapted handler's closure that cannot be read: the adapter closure itself is the hook
            return handler
    return handler


def _own_method(handler: Any) -> Any:
    """The ``before_tool_call`` upstream's registry calls (``getattr(handler, ...)``), for
    telling a coroutine function from a sync one: one set on the instance itself outranks
    the class's (an ``async def`` put there is awaited, as upstream awaits it)."""
    try:
        own = object.__getattribute__(handler, "__dict__")
    except Exception:  # noqa: BLE001 - a handler without an instance dict (slots): the class's method is the one
        own = None
    if type(own) is dict and "before_tool_call" in own:
        return own["before_tool_call"]
    return getattr(type(handler), "before_tool_call")


def _strands_own(fn: Any) -> bool:
    """``fn`` is strands' own code (its module is in the ``strands`` package)."""
    try:
        module = plain_str(getattr(fn, "__module__", None))
    except Exception:  # noqa: BLE001 - a hostile handler's attribute: not strands' own
        return False
    return module is not None and (module == "strands" or module.startswith("strands."))


def _asked_name(outcome: Outcome) -> Any:
    verdict = outcome.verdict
    if verdict is None or verdict.action is not Action.ASK or verdict.data is None:
        return None
    name = getattr(verdict.data, "name", None)
    return (outcome.hook, name) if type(name) is str else None


def _merged(earlier: list, later: list) -> list:
    """The outcomes of a listing and of the relisting after it: a gate that asked in both
    (it judged a call a new gate rewrote again, and asked again) asks once, its later
    interrupt standing; any other interrupt of one name twice is invalid."""
    again = {key for key in map(_asked_name, later) if key is not None}
    return _one_interrupt_per_name([o for o in earlier if _asked_name(o) not in again] + later)


def _one_interrupt_per_name(outcomes: list) -> list:
    """Upstream raises ``ValueError`` when two callbacks raise an interrupt of one name;
    failsecure judges the later one INVALID instead (a deny, audited)."""
    names: set = set()
    out = []
    for outcome in outcomes:
        verdict = outcome.verdict
        if verdict is not None and verdict.action is Action.ASK and verdict.data is not None:
            name = getattr(verdict.data, "name", None)
            key = name if type(name) is str else id(verdict.data)
            if key in names:
                outcome = Outcome(hook=outcome.hook, failure=Failure.INVALID, elapsed_ms=outcome.elapsed_ms)
            names.add(key)
        out.append(outcome)
    return out




class _Key:
    """A gate of an interventions registry's callback: the callback and the handler."""

    __slots__ = ("callback", "handler")

    def __init__(self, callback: Any, handler: Any):
        self.callback, self.handler = callback, handler


def _among(item: Any, items: list) -> bool:
    """``item`` is one of ``items`` by identity (a ``_Key`` by both of its parts)."""
    return _count(item, items) > 0


def _count(item: Any, items: list) -> int:
    if type(item) is _Key:
        return sum(1 for k in items if type(k) is _Key and k.callback is item.callback and k.handler is item.handler)
    return sum(1 for k in items if k is item)


def _judged(keys: list, ran: list) -> list:
    """Per gate of ``keys``: it ran in the listing before (``ran``). A callback registered
    once more is one gate more: its n-th entry ran only if it was listed n times."""
    return [_count(k, keys[:i]) < _count(k, ran) for i, k in enumerate(keys)]


def _relisted(entries: list, judged: list, steps: list) -> tuple:
    """The settling calls and steps of a listing whose gates ``judged`` ran in an earlier
    one: such a gate is a placeholder (no opinion, dropped from the outcomes after) on
    pass 1 and runs again on a later pass (a new gate changed the call) -> (calls, steps,
    the placeholders)."""
    held: list = []
    calls: list = []
    for (entry, _), old in zip(entries, judged):
        if old:
            held.append(Outcome(hook=entry[0], verdict=ABSTAIN))
            calls.append(held[-1])
        else:
            calls.append(entry)
    if held and len(entries) < 2:  # settled one by one: the steps are pass 1 too
        steps = [(lambda c=c: _given(c)) if isinstance(c, Outcome) else s for c, s in zip(calls, steps)]
    return calls, steps, held


async def _given(outcome: Outcome) -> list:
    return [outcome]
