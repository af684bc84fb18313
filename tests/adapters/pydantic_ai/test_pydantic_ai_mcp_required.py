"""A ``required`` naming an ``MCPToolset``'s ``process_tool_call`` (inventory row 14): the
hook is registered with the toolset that runs the call, asked when the call is handed to
it, so the call's first decision finds it there (found by the conformance kit's
``process_tool_call`` kind: "required gate present" was denied ``missing``). A required
hook that is not the toolset's is still missing. Real ``MCPToolset`` over an in-process MCP
server (no network)."""

import pytest

pytest.importorskip("fastmcp.client", reason="the MCP client (pydantic-ai-slim[mcp]) is not installed")

from failsecure_pai_rig import hook_id, make_model, mcp_server, run_agent


async def hand_on(ctx, call_tool, name, tool_args):
    return await call_tool(name, tool_args)


async def another_hook(ctx, call_tool, name, tool_args):  # never registered
    return await call_tool(name, tool_args)


def _agent(rig, hook):
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset

    return Agent(make_model([{"command": "ls"}]), toolsets=[MCPToolset(mcp_server(rig.marker), process_tool_call=hook)])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_required_process_tool_call_of_the_toolset_is_met_and_runs(rig, mode):
    rig.config(top=f'required = ["{hook_id(hand_on)}"]')
    output, exc = run_agent(_agent(rig, hand_on), mode)
    assert exc is None and rig.ran() == ["ls"]
    assert all(e.get("failure") != "missing" for e in rig.events())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_required_process_tool_call_not_registered_denies_missing(rig, mode):
    rig.config(top=f'required = ["{hook_id(another_hook)}"]')
    output, exc = run_agent(_agent(rig, hand_on), mode)
    assert rig.ran() == []
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "missing")
