"""Rig for the langchain adapter tests (loaded by conftest.py as ``failsecure_langchain_rig``): the real pinned langchain, langchain-core and
langgraph, a scripted chat model (no LLM, no network) and a real tool whose side effect
(a marker file) proves whether it ran."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import failsecure

failsecure.install()
import langchain_core.callbacks.manager  # noqa: E402,F401  (the trigger module)
from langchain.agents import create_agent  # noqa: E402
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402

from failsecure.testing import Harness, NotSupported, Ran, Seen  # noqa: E402
from failsecure.testing import AuditRig  # noqa: E402

DEADLINE = 0.3
TOOL = "write_marker"


class ScriptedChat(GenericFakeChatModel):
    """A chat model that answers from a script; tools binding is a no-op."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChat":
        return self


def script(args: dict, tool: str = TOOL, call_id: str = "call_1") -> ScriptedChat:
    return ScriptedChat(
        messages=iter(
            [
                AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": call_id, "type": "tool_call"}]),
                AIMessage(content="done"),
            ]
        )
    )


class Marker:
    """The real tool: writes a marker file, records what it ran with."""

    def __init__(self, path: Path):
        self.path = path
        self.calls: list = []

    def _write(self, command: str) -> str:
        self.calls.append({"command": command})
        with open(self.path, "a") as fh:
            fh.write(command + "\n")
        return f"wrote {command}"

    @property
    def ran(self) -> bool:
        return self.path.exists()

    def tool(self, is_async: bool = False) -> StructuredTool:
        def write_marker(command: str) -> str:
            """Write the command to the marker file."""
            return self._write(command)

        async def awrite_marker(command: str) -> str:
            """Write the command to the marker file."""
            await asyncio.sleep(0)
            return self._write(command)

        if is_async:
            return StructuredTool.from_function(coroutine=awrite_marker, name=TOOL, description="Write the marker.")
        return StructuredTool.from_function(write_marker, name=TOOL)

    def reset(self) -> None:
        self.calls.clear()
        if self.path.exists():
            self.path.unlink()


WRAPPER = "wrapper_tool"


def wrapper_tool(inner: StructuredTool, is_async: bool = False, how: str = "invoke") -> StructuredTool:
    """A third-party style wrapper tool: runs ``inner`` itself (its ``invoke`` /
    ``ainvoke``, or its inner ``_run`` / ``_arun``), past ToolNode."""

    def wrapper_tool(command: str) -> str:
        """Run a command through the marker tool."""
        if how == "none":  # a wrapper that runs only its own code
            return f"wrapped {command}"
        if how == "_run":
            return str(inner._run(command=command, config={}))
        return str(inner.invoke({"command": command}))

    async def awrapper_tool(command: str) -> str:
        """Run a command through the marker tool."""
        if how == "_run":
            return str(await inner._arun(command=command, config={}))
        return str(await inner.ainvoke({"command": command}))

    if is_async:
        return StructuredTool.from_function(coroutine=awrapper_tool, name=WRAPPER, description="Run via the marker.")
    return StructuredTool.from_function(wrapper_tool, name=WRAPPER)


def handler(name: str, on_start, *, strict: bool = True, is_async: bool = False, **attrs) -> BaseCallbackHandler:
    """A callback handler whose class is named ``name`` (its hook id is
    ``langchain:<this module>.<name>``), ``raise_error = strict``."""
    if is_async:
        async def on_tool_start(self, *args, **kwargs):
            result = on_start(*args, **kwargs)
            if asyncio.iscoroutine(result):
                result = await result
            return result

        base = AsyncCallbackHandler
    else:
        def on_tool_start(self, *args, **kwargs):
            return on_start(*args, **kwargs)

        base = BaseCallbackHandler
    cls = type(name, (base,), {"raise_error": strict, "on_tool_start": on_tool_start, "__module__": __name__, **attrs})
    cls.__qualname__ = name
    return cls()


def hook_id(name: str) -> str:
    return f"langchain:{__name__}.{name}"


class Rig(AuditRig):
    config_file = "trusted-config.toml"  # $FAILSECURE_CONFIG, not a project file

    def __init__(self, path: Path, monkeypatch):
        super().__init__(path, monkeypatch, deadline=DEADLINE)
        self.marker = Marker(path / "marker.txt")
        self.release = threading.Event()

    def outcome_of(self, hook: str, event: dict | None = None) -> dict:
        """The audited outcome of the hook whose id is exactly ``hook``."""
        event = event or self.last()
        found = [o for o in event["outcomes"] if o["hook"] == hook]
        assert len(found) == 1, event["outcomes"]
        return found[0]

    # ---------------------------------------------------------------- runs

    def invoke(self, callbacks=(), mode: str = "sync", command: str = "harmless", is_async_tool: bool = False):
        """A direct tool call: ``tool.invoke`` / ``tool.ainvoke``. Returns (result, exception)."""
        tool = self.marker.tool(is_async_tool)
        config = {"callbacks": list(callbacks)}
        try:
            if mode == "sync":
                return tool.invoke({"command": command}, config=config), None
            return asyncio.run(tool.ainvoke({"command": command}, config=config)), None
        except Exception as exc:  # noqa: BLE001
            return None, exc

    def agent(self, args=None, middleware=(), is_async_tool: bool = False, **kwargs):
        return create_agent(
            script(args or {"command": "harmless"}),
            tools=[self.marker.tool(is_async_tool)],
            middleware=list(middleware),
            **kwargs,
        )

    def run_agent(self, callbacks=(), mode: str = "sync", args=None, middleware=(), is_async_tool=False, **kwargs):
        """One agent run: ``invoke`` / ``ainvoke``. Returns the final state."""
        agent = self.agent(args, middleware, is_async_tool, **kwargs)
        config = {"callbacks": list(callbacks), "configurable": {"thread_id": "t1"}}
        state = {"messages": [{"role": "user", "content": "go"}]}
        if mode == "sync":
            return agent.invoke(state, config=config)
        return asyncio.run(agent.ainvoke(state, config=config))


def tool_messages(result: dict) -> list:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


# -------------------------------------------------------------------- conformance kit


class LangChainHarness(Harness):
    """The kit's gates are strict callback handlers (``raise_error = True``) passed in
    the run config of a real ``create_agent`` run; the tool writes a marker file."""

    framework = "langchain"
    modes = ("sync", "async")
    async_gates = True
    has_ask = False

    def __init__(self, path: Path):
        self.marker = Marker(path / "kit-marker.txt")
        self.handlers: list = []
        self.unsupported: list = []  # NotSupported raised inside a gate during a run

    def add_gate(self, name, behave, *, is_async=False):
        def on_start(serialized, input_str, **kwargs):
            inputs = kwargs.get("inputs")
            seen = Seen(tool=(serialized or {}).get("name"), arguments=dict(inputs or {}), native=kwargs)
            try:
                result = behave(seen)
                if asyncio.iscoroutine(result):
                    return self._unsupported_async(result)
                return result
            except NotSupported as exc:
                self.unsupported.append(exc)
                raise

        clean = "".join(c if c.isalnum() else "_" for c in name)
        gate = handler(f"KitGate_{clean}", on_start, is_async=is_async)
        self.handlers.append(gate)
        return hook_id(type(gate).__qualname__)

    async def _unsupported_async(self, coro):
        try:
            return await coro
        except NotSupported as exc:
            self.unsupported.append(exc)
            raise

    def reset(self):
        self.handlers.clear()
        self.unsupported.clear()
        self.marker.reset()

    def allow(self, seen):
        return None

    def deny(self, seen):
        raise PermissionError("denied by the kit's policy gate")

    def junk(self):
        return [("string", "DENY"), ("false", False), ("true", True), ("dict", {"allow": False}), ("zero", 0)]

    def rewrite(self, seen, arguments):
        raise NotSupported("rewrite")

    def run(self, arguments, mode):
        ran = self._run(arguments, mode)
        if self.unsupported:
            raise self.unsupported[0]
        return ran

    def bypass(self, arguments, mode):
        ran = self._run(arguments, mode, bypass=True)
        if self.unsupported:
            raise self.unsupported[0]
        return ran

    def _run(self, arguments, mode, bypass: bool = False):
        self.marker.reset()
        tools = [self.marker.tool(mode == "async")]
        if bypass:  # the model calls a wrapper tool that invokes the marker tool itself
            tools.append(wrapper_tool(tools[0], is_async=mode == "async"))
        agent = create_agent(script(arguments, tool=tools[-1].name), tools=tools)
        config = {"callbacks": list(self.handlers)}
        state = {"messages": [{"role": "user", "content": "go"}]}
        try:
            if mode == "sync":
                result = agent.invoke(state, config=config)
            else:
                result = asyncio.run(agent.ainvoke(state, config=config))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001  (upstream lets a gate's SystemExit end the run)
            return Ran(ran=self.marker.ran, arguments=self.marker.calls[-1] if self.marker.calls else None, told=str(exc))
        told = " ".join(str(m.content) for m in tool_messages(result))
        return Ran(ran=self.marker.ran, arguments=self.marker.calls[-1] if self.marker.calls else None, told=told)




class _Pass:
    """A middleware's "allow": hand the call on (``handler(request)``)."""

    def __init__(self, arguments: dict | None = None):
        self.arguments = arguments  # a rewrite: hand on ``request.override(tool_call=...)``


class MiddlewareHarness(LangChainHarness):
    """The kit's gates are ``wrap_tool_call`` (sync mode) / ``awrap_tool_call`` (async
    mode) of ``AgentMiddleware`` subclasses in a real ``create_agent`` run, in the order
    added (the first is the outermost). A middleware's allow is handing the call on, its
    deny is answering a ``ToolMessage`` itself (the tool does not run), its rewrite is
    handing on ``request.override(tool_call=...)``; anything else it answers without
    handing on is junk."""

    kind = "wrap_tool_call"
    modes = ("sync",)
    async_gates = False  # a sync ``wrap_tool_call`` cannot await (``awrap_tool_call`` below)
    method = "wrap_tool_call"

    def __init__(self, path: Path):
        super().__init__(path)
        self.middleware: list = []

    def _answer(self, answer, request, handler):
        if isinstance(answer, _Pass):
            if answer.arguments is not None:
                call = {**request.tool_call, "args": dict(answer.arguments)}
                return handler(request.override(tool_call=call))
            return handler(request)
        return answer

    def _seen(self, request) -> Seen:
        call = request.tool_call
        return Seen(tool=call.get("name"), arguments=dict(call.get("args") or {}), native=request)

    def add_gate(self, name, behave, *, is_async=False):
        harness = self

        def judged(request):
            try:
                return behave(harness._seen(request))
            except NotSupported as exc:
                harness.unsupported.append(exc)
                raise

        def wrap_tool_call(self, request, handler):
            return harness._answer(judged(request), request, handler)

        async def awrap_tool_call(self, request, handler):
            answer = judged(request)
            if asyncio.iscoroutine(answer):
                answer = await answer
            if isinstance(answer, _Pass):
                if answer.arguments is not None:
                    call = {**request.tool_call, "args": dict(answer.arguments)}
                    return await handler(request.override(tool_call=call))
                return await handler(request)
            return answer

        from langchain.agents.middleware import AgentMiddleware

        clean = "KitMiddleware_" + "".join(c if c.isalnum() else "_" for c in name)
        method = wrap_tool_call if self.method == "wrap_tool_call" else awrap_tool_call
        method.__name__, method.__qualname__, method.__module__ = self.method, f"{clean}.{self.method}", __name__
        body = {"__module__": __name__, self.method: method}
        cls = type(clean, (AgentMiddleware,), body)
        cls.__qualname__ = clean
        self.middleware.append(cls())
        return f"langchain:{__name__}.{clean}.{self.method}"

    def reset(self):
        super().reset()
        self.middleware.clear()

    def allow(self, seen):
        return _Pass()

    def abstain(self, seen):
        return _Pass()  # a middleware has no "no opinion" besides handing the call on

    def deny(self, seen):
        request = seen.native
        return ToolMessage(content="kit: denied", name=request.tool_call.get("name"),
                           tool_call_id=request.tool_call.get("id") or "", status="error")

    def junk(self):
        return [("None", None), ("string", "DENY"), ("dict", {"allow": False}), ("True", True)]

    def rewrite(self, seen, arguments):
        return _Pass(dict(arguments))

    def _run(self, arguments, mode):
        self.marker.reset()
        agent = create_agent(script(arguments), tools=[self.marker.tool(mode == "async")], middleware=list(self.middleware))
        return self._invoke(lambda state: agent.invoke(state), lambda state: agent.ainvoke(state), mode)

    def _invoke(self, sync, asyn, mode):
        import signal

        state = {"messages": [{"role": "user", "content": "go"}]}
        sigint = signal.getsignal(signal.SIGINT)
        try:
            result = sync(state) if mode == "sync" else asyncio.run(asyn(state))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001  (a middleware's own error ends the run, as upstream)
            try:
                told = str(exc)
            except Exception:  # a hostile exception: what reached the caller cannot even be printed
                told = ""
            # asyncio.run could not finish its cleanup on a hostile exception: its SIGINT
            # handler (which holds the failed task) would break every later asyncio.run.
            # ``_signal`` sets it back without ``signal``'s repr of the old handler.
            import _signal

            _signal.signal(signal.SIGINT, sigint)
            return Ran(ran=self.marker.ran, arguments=self.marker.calls[-1] if self.marker.calls else None, told=told)
        told = " ".join(str(m.content) for m in tool_messages(result))
        return Ran(ran=self.marker.ran, arguments=self.marker.calls[-1] if self.marker.calls else None, told=told,
                   asked=_interrupted(result))


class AsyncMiddlewareHarness(MiddlewareHarness):
    """The same, with ``awrap_tool_call`` middleware in ``ainvoke`` runs (a sync-bodied
    kit gate runs inside the coroutine, as a user's blocking code would)."""

    kind = "awrap_tool_call"
    modes = ("async",)
    async_gates = True
    method = "awrap_tool_call"


class ToolNodeHarness(MiddlewareHarness):
    """``wrap_tool_call`` / ``awrap_tool_call`` functions handed straight to LangGraph's
    ``ToolNode`` in a custom graph (no ``create_agent``). Several gates are chained the
    way a user composes them: the first added is the outermost."""

    kind = "ToolNode(wrap_tool_call)"
    modes = ("sync",)
    async_gates = False
    method = "wrap_tool_call"

    def rewrite(self, seen, arguments):
        # A ToolNode takes one wrapper: gates composed into it are ONE hook to the framework
        # and to failsecure, and a rewrite inside it is that hook's own answer. A policy
        # judged before a rewriter can only be told apart as two create_agent middleware
        # (the wrap_tool_call / awrap_tool_call kinds, where the rewrite is re-judged).
        if len(self.middleware) > 1:
            raise NotSupported("a ToolNode takes one wrap_tool_call: composed gates are one hook")
        return super().rewrite(seen, arguments)

    def add_gate(self, name, behave, *, is_async=False):
        harness = self
        clean = "kit_node_" + "".join(c if c.isalnum() else "_" for c in name)

        def judged(request):
            try:
                return behave(harness._seen(request))
            except NotSupported as exc:
                harness.unsupported.append(exc)
                raise

        def wrapper(request, handler):
            return harness._answer(judged(request), request, handler)

        async def awrapper(request, handler):
            answer = judged(request)
            if asyncio.iscoroutine(answer):
                answer = await answer
            if isinstance(answer, _Pass):
                if answer.arguments is not None:
                    call = {**request.tool_call, "args": dict(answer.arguments)}
                    return await handler(request.override(tool_call=call))
                return await handler(request)
            return answer

        for fn in (wrapper, awrapper):
            fn.__name__ = fn.__qualname__ = clean
            fn.__module__ = __name__
        self.middleware.append((wrapper, awrapper))
        return f"langchain:{__name__}.{clean}"

    def _run(self, arguments, mode):
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode

        self.marker.reset()
        sync_chain, async_chain = _compose([w for w, _ in self.middleware]), _acompose([a for _, a in self.middleware])
        if len(self.middleware) == 1:  # one function: handed over as is (its own hook id)
            sync_chain, async_chain = self.middleware[0]
        kwargs = {"wrap_tool_call": sync_chain} if mode == "sync" else {"awrap_tool_call": async_chain}
        node = ToolNode([self.marker.tool(mode == "async")], **(kwargs if self.middleware else {}))
        graph = StateGraph(MessagesState)
        graph.add_node("tools", node)
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        app = graph.compile()
        call = {"name": TOOL, "args": dict(arguments), "id": "call_1", "type": "tool_call"}
        first = {"messages": [AIMessage(content="", tool_calls=[call])]}
        return self._invoke(lambda state: app.invoke(first), lambda state: app.ainvoke(first), mode)


def _compose(wrappers: list):
    def chained(request, handler):
        def step(i, req):
            if i == len(wrappers):
                return handler(req)
            return wrappers[i](req, lambda r: step(i + 1, r))

        return step(0, request)

    return chained


def _acompose(wrappers: list):
    async def chained(request, handler):
        async def step(i, req):
            if i == len(wrappers):
                return await handler(req)
            return await wrappers[i](req, lambda r: step(i + 1, r))

        return await step(0, request)

    return chained


class AsyncToolNodeHarness(ToolNodeHarness):
    kind = "ToolNode(awrap_tool_call)"
    modes = ("async",)
    async_gates = True
    method = "awrap_tool_call"


class ReviewHarness(MiddlewareHarness):
    """The gate is the ``when`` predicate of ``HumanInTheLoopMiddleware`` for the tool
    (one per tool) in a real ``create_agent`` run with a checkpointer: ``True`` asks for a
    review (the run stops with an interrupt, left unanswered), ``False`` lets the call
    run. A predicate has no deny and cannot rewrite; a failed one denies (the error
    ``ToolMessage`` the model is told, no review). ``told`` is what the model is told (the review request the human would see
    shows the arguments by design, so it is not a deny text)."""

    kind = "HITL when"
    modes = ("sync", "async")
    async_gates = False  # HITL calls ``when`` synchronously
    has_ask = True
    interrupt_mode: dict = {}

    def __init__(self, path: Path):
        super().__init__(path)
        self.predicates: list = []
        self.threads = 0

    def add_gate(self, name, behave, *, is_async=False):
        if self.predicates:
            raise NotSupported("a tool has one HITL `when` predicate")
        harness = self

        def when(request):
            call = request.tool_call
            try:
                return behave(Seen(tool=call.get("name"), arguments=dict(call.get("args") or {}), native=request))
            except NotSupported as exc:
                harness.unsupported.append(exc)
                raise

        clean = "kit_when_" + "".join(c if c.isalnum() else "_" for c in name)
        when.__name__ = when.__qualname__ = clean
        when.__module__ = __name__
        self.predicates.append(when)
        return f"langchain:{__name__}.{clean}"

    def reset(self):
        super().reset()
        self.predicates = []

    def allow(self, seen):
        return False

    def abstain(self, seen):
        return False

    def ask(self, seen):
        return True

    def deny(self, seen):
        raise NotSupported("a `when` predicate cannot deny (its strongest answer is a review)")

    def junk(self):
        return [("None", None), ("string 'yes'", "yes"), ("1", 1), ("0", 0), ("list", [])]

    def rewrite(self, seen, arguments):
        raise NotSupported("a `when` predicate cannot rewrite")

    def _run(self, arguments, mode):
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langgraph.checkpoint.memory import InMemorySaver

        self.marker.reset()
        middleware = []
        if self.predicates:
            config = {"allowed_decisions": ["approve", "reject"], "when": self.predicates[0]}
            middleware.append(HumanInTheLoopMiddleware(interrupt_on={TOOL: config}, **self.interrupt_mode))
        agent = create_agent(script(arguments), tools=[self.marker.tool(mode == "async")], middleware=middleware,
                             checkpointer=InMemorySaver())
        self.threads += 1
        config = {"configurable": {"thread_id": f"kit-{self.threads}"}}
        return self._invoke(lambda state: agent.invoke(state, config=config), lambda state: agent.ainvoke(state, config=config), mode)


def _interrupted(result: Any) -> bool:
    return isinstance(result, dict) and bool(result.get("__interrupt__"))


class PerCallReviewHarness(ReviewHarness):
    """The same predicate with ``interrupt_mode="per_call"`` (HITL asks from its own
    ``wrap_tool_call``), where the release has it."""

    kind = "HITL when (per_call)"
    interrupt_mode = {"interrupt_mode": "per_call"}

    def add_gate(self, name, behave, *, is_async=False):
        import inspect

        from langchain.agents.middleware import HumanInTheLoopMiddleware

        if "interrupt_mode" not in inspect.signature(HumanInTheLoopMiddleware.__init__).parameters:
            raise NotSupported("no interrupt_mode in this langchain release")
        return super().add_gate(name, behave, is_async=is_async)


def reviews_etc(request) -> bool:
    """The kit's reviewer policy for the HITL kinds below: a call naming ``/etc`` goes to a
    person, every other call (each of the kit's) is let through unasked."""
    return "/etc" in str((request.tool_call.get("args") or {}).get("command", ""))


class AfterReviewHarness(MiddlewareHarness):
    """Inventory row 7: the kit's gates are ``wrap_tool_call`` middleware placed after
    ``HumanInTheLoopMiddleware`` in a real ``create_agent`` run with a checkpointer. HITL
    judges every call first (its ``when`` predicate, ``reviews_etc``, lets the kit's calls
    through unasked); the kit's middleware then judge, deny or rewrite the call
    (``request.override(tool_call=...)``) between the review and the tool, so the rewrite
    rows are a call changed after HITL judged it: at the tool it is judged again (by the
    predicate and by every middleware that handed it on)."""

    kind = "wrap_tool_call after HITL"
    modes = ("sync",)
    async_gates = False
    method = "wrap_tool_call"

    def __init__(self, path: Path):
        super().__init__(path)
        self.threads = 0

    def _run(self, arguments, mode):
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langgraph.checkpoint.memory import InMemorySaver

        self.marker.reset()
        judged: list = []

        def reviews(request):
            judged.append(request.tool_call.get("name"))
            return reviews_etc(request)

        reviews.__name__ = reviews.__qualname__ = "kit_reviews_etc"
        reviews.__module__ = __name__
        review = HumanInTheLoopMiddleware(interrupt_on={TOOL: {"allowed_decisions": ["approve", "edit", "reject"],
                                                               "when": reviews}})
        agent = create_agent(script(arguments), tools=[self.marker.tool(mode == "async")],
                             middleware=[review, *self.middleware], checkpointer=InMemorySaver())
        self.threads += 1
        config = {"configurable": {"thread_id": f"kit-after-review-{self.threads}"}}
        ran = self._invoke(lambda state: agent.invoke(state, config=config),
                           lambda state: agent.ainvoke(state, config=config), mode)
        # the kind's premise: HITL judged the call before the kit's middleware saw it
        assert TOOL in judged, "HITL's predicate never judged the call"
        return ran


class AsyncAfterReviewHarness(AfterReviewHarness):
    """The same, with ``awrap_tool_call`` middleware in ``ainvoke`` runs."""

    kind = "awrap_tool_call after HITL"
    modes = ("async",)
    async_gates = True
    method = "awrap_tool_call"
