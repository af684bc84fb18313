"""An MCP server's ``require_approval`` callable decides whether a human approves each of
its tools' calls. The SDK turns it into the tool's ``needs_approval`` through a wrapper
that answers ``bool(result)``: junk decides, and a hook id would name that wrapper. Under
failsecure the server's policy itself is the gate: only ``True``/``False`` keep their
meaning, anything else (and a raise, a hang) denies the call (nobody is asked), and the audit
names the user's policy. Real agent runs; every fail-closed case asserts the failure and has an
allow twin."""

from __future__ import annotations

import asyncio

import pytest

import failsecure

MODES = ["sync", "async"]


def hook_of(fn):
    return f"openai-agents:{fn.__module__}.{fn.__qualname__}"


def mcp_needs_approval(policy):
    """The real SDK conversion: an MCP server built with ``require_approval=policy`` and
    its ``_get_needs_approval_for_tool`` for one tool and agent."""
    from agents import Agent
    from agents.mcp import MCPServerStdio
    from mcp.types import Tool as MCPTool

    server = MCPServerStdio(params={"command": "true"}, require_approval=policy, name="policy-server")
    tool = MCPTool(name="run_command", inputSchema={"type": "object", "properties": {"command": {"type": "string"}}})
    return server._get_needs_approval_for_tool(tool, Agent(name="owner"))


def run_with(rig, policy, mode):
    return rig.run(needs_approval=mcp_needs_approval(policy), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_a_policy_answering_false_runs_the_tool(rig, mode):
    def policy(run_context, agent, tool):
        return False

    result = run_with(rig, policy, mode)
    assert result.interruptions == [] and rig.tool.runs() == [{"command": "harmless"}]


@pytest.mark.parametrize("mode", MODES)
def test_a_policy_answering_true_asks(rig, mode):
    async def policy(run_context, agent, tool):
        return True

    result = run_with(rig, policy, mode)
    assert [i.tool_name for i in result.interruptions] == ["run_command"] and rig.tool.runs() == []


def denied(rig, result, policy, failure):
    assert result.interruptions == [] and rig.tool.runs() == []
    events = [e for e in rig.events() if any(o["hook"] == hook_of(policy) for o in e["outcomes"])]
    assert len(events) == 1 and (events[0]["outcome"], events[0]["failure"]) == ("deny", failure)
    assert rig.told() == f"failsecure: hook '{hook_of(policy)}' failed closed ({failure})"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer", [None, 0, "", "yes", [1]], ids=repr)
def test_a_policy_answering_junk_denies_and_names_the_policy(rig, mode, answer):
    def policy(run_context, agent, tool):
        return answer

    denied(rig, run_with(rig, policy, mode), policy, "invalid")  # upstream: falsy junk runs it


@pytest.mark.parametrize("mode", MODES)
def test_a_hanging_policy_denies(rig, mode):
    async def policy(run_context, agent, tool):
        await asyncio.sleep(3)
        return False

    denied(rig, run_with(rig, policy, mode), policy, "timeout")


@pytest.mark.parametrize("mode", MODES)
def test_a_raising_policy_denies(rig, mode):
    def policy(run_context, agent, tool):
        raise KeyError("secret-in-message")

    denied(rig, run_with(rig, policy, mode), policy, "raised")
    assert "secret-in-message" not in rig.audit_path.read_text()


def test_a_falsy_junk_policy_skips_approval_upstream(rig, adapter):
    def policy(run_context, agent, tool):
        return None

    failsecure.uninstall()
    try:
        result = run_with(rig, policy, "sync")
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    assert result.interruptions == [] and rig.tool.runs() == [{"command": "harmless"}]
