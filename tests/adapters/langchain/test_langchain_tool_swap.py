"""A middleware that swaps the tool (``request.override(tool=...)``) after a policy
middleware judged the call is a rewrite (docs/integrity.md): the tool that runs is
another object, even when it carries the same name and the call the same arguments. The
policy that handed on the first tool judges the swapped one again at the tool.

Real ``create_agent`` runs (sync ``invoke`` with ``wrap_tool_call``, ``ainvoke`` with
``awrap_tool_call``); each deny has an allow twin, and the upstream twin shows the
swapped tool running past the policy unpatched."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool

from failsecure_langchain_rig import TOOL, tool_messages

MODES = ("sync", "async")
MODULE = "failsecure_langchain_rig_swap"


def middleware(name: str, judge, mode: str) -> AgentMiddleware:
    """A middleware class named ``name``: ``judge(request)`` answers None (hand the call
    on), a tool (hand on ``request.override(tool=it)``) or an answer of its own."""

    def hand_on(request, answer):
        if answer is None:
            return request, None
        if isinstance(answer, StructuredTool):
            return request.override(tool=answer), None
        return None, answer

    def wrap_tool_call(self, request, handler):
        req, own = hand_on(request, judge(request))
        return own if req is None else handler(req)

    async def awrap_tool_call(self, request, handler):
        await asyncio.sleep(0)
        req, own = hand_on(request, judge(request))
        return own if req is None else await handler(req)

    attr = "wrap_tool_call" if mode == "sync" else "awrap_tool_call"
    method = wrap_tool_call if mode == "sync" else awrap_tool_call
    method.__name__, method.__qualname__, method.__module__ = attr, f"{name}.{attr}", MODULE
    cls = type(name, (AgentMiddleware,), {"__module__": MODULE, attr: method})
    cls.__qualname__ = name
    return cls()


def hook(name: str, mode: str) -> str:
    return f"langchain:{MODULE}.{name}.{'wrap_tool_call' if mode == 'sync' else 'awrap_tool_call'}"


def same_name_tool(rig, risk: str, is_async: bool) -> StructuredTool:
    """Another tool object under the marker tool's name, tagged with its risk; it writes
    the marker prefixed with the risk (so the test sees which tool ran)."""

    def write_marker(command: str) -> str:
        """Write the command to the marker file."""
        return rig.marker._write(f"{risk}: {command}")

    async def awrite_marker(command: str) -> str:
        """Write the command to the marker file."""
        return rig.marker._write(f"{risk}: {command}")

    if is_async:
        tool = StructuredTool.from_function(coroutine=awrite_marker, name=TOOL, description="Write the marker.")
    else:
        tool = StructuredTool.from_function(write_marker, name=TOOL)
    tool.metadata = {"risk": risk}
    return tool


class ToolPolicy:
    """Denies a call whose tool is tagged high risk (its own ToolMessage); records the
    risk of every tool it judged."""

    def __init__(self):
        self.looks: list = []

    def __call__(self, request):
        risk = (request.tool.metadata or {}).get("risk", "registered")
        self.looks.append(risk)
        if risk == "high":
            return ToolMessage(content="policy: high-risk tool", name=request.tool_call["name"],
                               tool_call_id=request.tool_call["id"], status="error")
        return None


def run(rig, layers, mode):
    rig.marker.reset()
    agent = rig.agent({"command": "harmless"}, [middleware(n, j, mode) for n, j in layers], is_async_tool=mode == "async")
    state = {"messages": [{"role": "user", "content": "go"}]}
    result = agent.invoke(state) if mode == "sync" else asyncio.run(agent.ainvoke(state))
    [message] = tool_messages(result)
    return message


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_swapped_inside_the_policy_is_judged_by_the_policy(rig, mode):
    policy = ToolPolicy()
    risky = same_name_tool(rig, "high", mode == "async")
    message = run(rig, [("ToolPolicy", policy), ("Swapper", lambda r: risky)], mode)
    assert not rig.marker.ran, rig.marker.calls
    assert message.status == "error" and message.content == "policy: high-risk tool"  # the policy's own answer
    assert policy.looks == ["registered", "high"]
    event = rig.last()
    assert (event["outcome"], event["hook"], event["failure"]) == ("deny", hook("ToolPolicy", mode), None)


@pytest.mark.parametrize("mode", MODES)
def test_a_harmless_tool_swapped_inside_the_policy_runs_swapped(rig, mode):
    """The allow twin: the policy judges the swapped tool again and lets it run, and the
    swapped tool is the one that runs (as upstream)."""
    policy = ToolPolicy()
    low = same_name_tool(rig, "low", mode == "async")
    message = run(rig, [("ToolPolicy", policy), ("Swapper", lambda r: low)], mode)
    assert rig.marker.calls == [{"command": "low: harmless"}] and message.status != "error"
    assert policy.looks == ["registered", "low"]


@pytest.mark.parametrize("mode", MODES)
def test_a_policy_after_the_swap_is_asked_once(rig, mode):
    policy = ToolPolicy()
    risky = same_name_tool(rig, "high", mode == "async")
    message = run(rig, [("Swapper", lambda r: risky), ("ToolPolicy", policy)], mode)
    assert not rig.marker.ran and message.content == "policy: high-risk tool"
    assert policy.looks == ["high"]


def test_a_tool_swapped_inside_the_policy_runs_upstream(rig, upstream):
    """The regression twin: unpatched, the policy judged the registered tool and the
    swapped high-risk tool runs."""
    policy = ToolPolicy()
    risky = same_name_tool(rig, "high", False)
    with upstream:
        message = run(rig, [("ToolPolicy", policy), ("Swapper", lambda r: risky)], "sync")
    assert rig.marker.calls == [{"command": "high: harmless"}] and message.status != "error"
    assert policy.looks == ["registered"]
