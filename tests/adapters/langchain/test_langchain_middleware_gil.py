"""A deadline is a deadline for a sync ``wrap_tool_call`` middleware too: one that holds
the GIL past its deadline (a catastrophic regex: C code the caller cannot interrupt)
and then hands the call on, or answers, is late (a timeout), however the waiting thread
woke. Custom graph ``ToolNode(wrap_tool_call=...)``; each deny has an allow twin (the
same middleware on a short input)."""

from __future__ import annotations

import re
import time

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from failsecure_langchain_rig import DEADLINE, TOOL


def regex_length() -> int:
    """A regex input that holds the GIL well past the rig's deadline on this machine."""
    for length in range(18, 30):
        start = time.perf_counter()
        re.match(r"(a+)+$", "a" * length + "b")
        if time.perf_counter() - start > 3 * DEADLINE:
            return length
    return 30


def run_node(node):
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    call = {"name": TOOL, "args": {"command": "harmless"}, "id": "call_1", "type": "tool_call"}
    result = graph.compile().invoke({"messages": [AIMessage(content="", tool_calls=[call])]})
    [message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    return message


@pytest.mark.parametrize("how", ["hand on", "answer"])
@pytest.mark.parametrize("late", [True, False])
def test_a_middleware_holding_the_gil_past_its_deadline_is_late(rig, how, late):
    length = regex_length() if late else 5

    def gil_holder(request, handler):
        re.match(r"(a+)+$", "a" * length + "b")
        if how == "hand on":
            return handler(request)
        return ToolMessage(content="own answer", name=TOOL, tool_call_id=request.tool_call["id"])

    message = run_node(ToolNode([rig.marker.tool()], wrap_tool_call=gil_holder))
    if late:
        assert not rig.marker.ran
        assert message.status == "error" and message.content.endswith("failed closed (timeout)")
        event = rig.last()
        assert (event["outcome"], event["failure"]) == ("deny", "timeout") and event["hook"].endswith("gil_holder")
    elif how == "hand on":
        assert rig.marker.ran and message.status == "success"
    else:
        assert not rig.marker.ran and message.content == "own answer"
