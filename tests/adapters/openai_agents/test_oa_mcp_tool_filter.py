"""An MCP server's callable ``tool_filter(ctx, tool)`` decides which of its tools are
offered, and so whether a model's call to one runs. Upstream includes a tool on any truthy
answer (``"no"``, ``1``) and waits for ever on a hang (a raise excludes the tool). Under
failsecure only ``True`` includes: junk or a hang past its deadline excludes the tool,
audited as the filter's failure. Driven through the SDK's own ``_apply_tool_filter``."""

from __future__ import annotations

import asyncio
import time

import pytest

import failsecure


def _offered(tool_filter):
    from agents import Agent, RunContextWrapper
    from agents.mcp import MCPServerStdio
    from mcp.types import Tool as MCPTool

    server = MCPServerStdio(params={"command": "true"}, tool_filter=tool_filter, name="filter-server")
    tools = [MCPTool(name=n, inputSchema={"type": "object", "properties": {}}) for n in ("read_file", "run_command")]
    kept = asyncio.run(server._apply_tool_filter(tools, RunContextWrapper(context=None), Agent(name="owner")))
    return [t.name for t in kept]


def hook_of(fn):
    return f"openai-agents:{fn.__module__}.{fn.__qualname__}"


def only_read(ctx, tool):
    return tool.name == "read_file"


async def only_read_async(ctx, tool):
    return tool.name == "read_file"


def junk_no(ctx, tool):
    return "no"


def junk_one(ctx, tool):
    return 1


def hangs(ctx, tool):
    time.sleep(3)
    return True


async def hangs_async(ctx, tool):
    await asyncio.sleep(3)
    return True


def raises(ctx, tool):
    raise RuntimeError("secret-payload")


@pytest.mark.parametrize("fn", [only_read, only_read_async])
def test_a_filters_bool_answers_are_honoured(rig, fn):
    assert _offered(fn) == ["read_file"]
    assert [e for e in rig.events() if e.get("failure")] == []


def test_a_static_filter_is_left_alone(rig):
    assert _offered({"allowed_tool_names": ["run_command"]}) == ["run_command"]


@pytest.mark.parametrize("fn", [junk_no, junk_one])
def test_a_filters_junk_answer_does_not_offer_the_tool(rig, fn):
    assert _offered(fn) == []
    failures = {(e["hook"], e["failure"]) for e in rig.events() if e.get("failure")}
    assert failures == {(hook_of(fn), "invalid")}


@pytest.mark.parametrize("fn", [hangs, hangs_async])
def test_a_filter_hanging_past_its_deadline_does_not_offer_the_tool(rig, fn):
    assert _offered(fn) == []
    assert {(e["hook"], e["failure"]) for e in rig.events() if e.get("failure")} == {(hook_of(fn), "timeout")}


def test_a_raising_filter_excludes_the_tool_without_its_text(rig):
    assert _offered(raises) == []
    events = rig.events()
    assert {e.get("failure") for e in events if e.get("failure")} == {"raised"}
    assert "secret-payload" not in repr(events)


def test_a_filters_junk_offers_the_tool_upstream(rig, adapter):
    """What failsecure changes: upstream offers a tool its filter said "no" about."""
    failsecure.uninstall()
    try:
        assert _offered(junk_no) == ["read_file", "run_command"]
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
