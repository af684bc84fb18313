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
