"""A strict sync handler's ``on_tool_start`` runs under its deadline on the guard's
worker; upstream calls it in the tool caller's context, so a ContextVar it sets is seen
by the tool (``BaseTool.run`` copies the context after ``on_tool_start``). With
failsecure the change is handed back when the answer is taken on time: the tool sees it,
as upstream; a late handler's never reaches it (and the call is denied)."""

from __future__ import annotations

import contextvars
import threading

import pytest
from langchain_core.tools import StructuredTool

from failsecure_langchain_rig import DEADLINE, handler, hook_id

REQUEST = contextvars.ContextVar("fs_lc_request", default=None)


def tool_reading(seen: list, is_async: bool = False) -> StructuredTool:
    def read_var(command: str) -> str:
        """Read the variable."""
        seen.append(REQUEST.get())
        return "read"

    async def aread_var(command: str) -> str:
        """Read the variable."""
        seen.append(REQUEST.get())
        return "read"

    if is_async:
        return StructuredTool.from_function(coroutine=aread_var, name="read_var", description="Read the variable.")
    return StructuredTool.from_function(read_var, name="read_var")


def sets(value):
    def on_start(*args, **kwargs):
        REQUEST.set(value)
        return None

    return on_start


def invoke(tool, callbacks, mode):
    import asyncio

    config = {"callbacks": list(callbacks)}

    def body():
        if mode == "sync":
            return tool.invoke({"command": "x"}, config=config)
        return asyncio.run(tool.ainvoke({"command": "x"}, config=config))

    try:
        return contextvars.Context().run(body), None
    except Exception as exc:  # noqa: BLE001
        return None, exc


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_strict_handlers_variable_reaches_the_tool_as_upstream(rig, upstream, mode):
    seen: list = []
    with upstream:
        result, exc = invoke(tool_reading(seen, mode == "async"), [handler("Sets", sets("v"))], mode)
        assert exc is None
    # upstream: the sync tool call sees it; an async one runs the sync handler in an
    # executor, in a copy of the context, and does not
    assert seen == (["v"] if mode == "sync" else [None])
    upstream_seen = list(seen)
    seen.clear()
    result, exc = invoke(tool_reading(seen, mode == "async"), [handler("Sets", sets("v"))], mode)
    assert exc is None, exc
    assert seen == upstream_seen
    assert rig.last()["outcome"] == "abstain"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_late_handlers_variable_never_reaches_and_the_call_is_denied(rig, mode):
    seen: list = []
    go = threading.Event()

    def late(*args, **kwargs):
        REQUEST.set("late")
        go.wait(DEADLINE * 4)
        REQUEST.set("later")
        return None

    try:
        result, exc = invoke(tool_reading(seen, mode == "async"), [handler("Late", late)], mode)
    finally:
        go.set()
    assert type(exc).__name__ == "ToolCallDenied" and seen == []
    assert rig.outcome_of(hook_id("Late"))["failure"] == "timeout"


def test_an_inline_sync_handler_of_an_async_tool_start_sets_it_for_the_tool_as_upstream(rig, upstream):
    """``run_inline = True``: upstream calls it on the task itself; the tool sees it."""
    seen: list = []
    with upstream:
        _, exc = invoke(tool_reading(seen, True), [handler("Inline", sets("v"), run_inline=True)], "async")
        assert exc is None
    assert seen == ["v"]
    seen.clear()
    _, exc = invoke(tool_reading(seen, True), [handler("Inline", sets("v"), run_inline=True)], "async")
    assert exc is None, exc
    assert seen == ["v"]


def _middleware(value):
    from langchain.agents.middleware import AgentMiddleware

    class SetsVar(AgentMiddleware):
        def wrap_tool_call(self, request, handler):
            REQUEST.set(value)
            return handler(request)

        async def awrap_tool_call(self, request, handler):
            REQUEST.set(value)
            return await handler(request)

    return SetsVar()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_wrap_tool_call_middlewares_variable_reaches_the_tool_as_upstream(rig, upstream, monkeypatch, mode):
    """A sync ``wrap_tool_call`` under its deadline runs on a thread of its own (in a copy
    of the caller's context), and the tool it hands on to runs inside it: the tool sees
    what it set, as upstream."""
    seen: list = []
    real = rig.marker._write

    def write(command):
        seen.append(REQUEST.get())
        return real(command)

    monkeypatch.setattr(rig.marker, "_write", write)
    with upstream:
        contextvars.Context().run(rig.run_agent, (), mode, None, [_middleware("v")])
    assert seen == ["v"]
    seen.clear()
    rig.marker.reset()
    contextvars.Context().run(rig.run_agent, (), mode, None, [_middleware("v")])
    assert seen == ["v"]


@pytest.mark.parametrize("mode,is_async_tool", [("sync", False), ("async", False), ("async", True)])
def test_in_an_agent_run_a_strict_handlers_variable_reaches_the_tool_as_upstream(rig, upstream, monkeypatch, mode, is_async_tool):
    """Through ``create_agent``'s ToolNode: upstream calls the handler in the tool's
    context (a sync run; an async run of a sync tool, which runs ``invoke`` in an
    executor), or in an executor's copy (an async tool's ``ainvoke``); failsecure the same."""
    seen: list = []
    real = rig.marker._write

    def write(command):
        seen.append(REQUEST.get())
        return real(command)

    monkeypatch.setattr(rig.marker, "_write", write)
    with upstream:
        contextvars.Context().run(rig.run_agent, [handler("Sets", sets("v"))], mode, None, (), is_async_tool)
    upstream_seen = list(seen)
    assert upstream_seen == ([None] if mode == "async" and is_async_tool else ["v"])
    seen.clear()
    rig.marker.reset()
    contextvars.Context().run(rig.run_agent, [handler("Sets", sets("v"))], mode, None, (), is_async_tool)
    assert seen == upstream_seen
