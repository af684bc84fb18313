"""The tool boundary (issue 29) with the real bundled CLI: most tools run inside the CLI
process (no Python code sees them); the tools that run in this process are the SDK MCP
servers' tools. One that runs inside a session's run without a decision for that call
(a tool handler calling another tool's handler directly, a replay) is ungoverned —
audited with ``failure = "ungoverned"``, denied while a session has a gating callback
(or a failsecure plugin gate is registered), allowed and audited when none has (or under
``ungoverned = "audit"``). The CLI's own ``tools/call`` is the dispatcher's path: a
``PreToolUse`` allow grants it, and a tool no ``PreToolUse`` callback selects runs as
the CLI's permission rules decided. Application code outside a run keeps working."""

import asyncio
import sys

import pytest
from claude_agent_sdk import HookMatcher

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]

KIT, WRAPPER = sdk_rig.KIT_TOOLS


def session(rig, prompt, hooks=None, can_use_tool=None, allowed=("Bash", KIT, WRAPPER)):
    """One offline session with the ``kit`` server; returns (what ran, what the model
    was told, the session's error or None)."""
    ran: list = []
    server, _ = sdk_rig.kit_server(ran)
    api = sdk_rig.ToolCallAPI()
    options = {"mcp_servers": {"kit": server}}
    if hooks is not None:
        options["hooks"] = {"PreToolUse": list(hooks)}
    if can_use_tool is not None:
        options["can_use_tool"] = can_use_tool
    opts = sdk_rig.options(api, str(rig.home), str(rig.dir), allowed_tools=list(allowed), **options)
    opts.env.update(sdk_rig.IN_PROCESS_ENV)
    error = None
    try:
        asyncio.run(sdk_rig.run_prompts(opts, [prompt] if isinstance(prompt, str) else list(prompt), timeout=90))
    except Exception as exc:  # noqa: BLE001 - the test decides whether a failed session is expected
        error = exc
    finally:
        api.close()
    told = "\n".join(str(b.get("content")) for b in api.model.tool_results())
    return ran, told, error


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


async def watch_bash(input_data, tool_use_id, context):
    """The user's gate: it judges Bash only (its matcher selects nothing else)."""
    return {}


async def allow_all(input_data, tool_use_id, context):
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}


async def deny_kit(input_data, tool_use_id, context):
    if input_data.get("tool_name") == KIT:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "not the kit tool"}}
    return {}


BYPASS = sdk_rig.call_line(WRAPPER, {"command": "smuggled"})


def test_a_handler_calling_another_tool_is_denied_as_ungoverned(rig):
    ran, told, error = session(rig, BYPASS, hooks=[HookMatcher(matcher="Bash", hooks=[watch_bash])])
    assert error is None, error
    assert ran == [], "the kit tool ran through the wrapper"
    assert "ungoverned" in told and "smuggled" not in told
    assert [(e["tool"], e["outcome"], e["hook"]) for e in ungoverned(rig)] == [("kit_tool", "deny", "claude-agent-sdk:kit.kit_tool")]


def test_the_same_bypass_with_no_gate_runs_and_is_audited(rig):
    ran, _, error = session(rig, BYPASS)
    assert error is None, error
    assert ran == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [("kit_tool", "allow")]


def test_ungoverned_audit_setting_runs_the_bypass_audited(rig):
    rig.config(top='ungoverned = "audit"')
    ran, _, error = session(rig, BYPASS, hooks=[HookMatcher(matcher="Bash", hooks=[watch_bash])])
    assert error is None, error
    assert ran == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [("kit_tool", "allow")]


@pytest.mark.parametrize("matcher", [None, KIT])
def test_a_preToolUse_allow_grants_the_in_process_call(rig, matcher):
    ran, _, error = session(rig, sdk_rig.call_line(KIT, {"command": "harmless"}), hooks=[HookMatcher(matcher=matcher, hooks=[allow_all])])
    assert error is None, error
    assert ran == ["harmless"]
    assert ungoverned(rig) == []


def test_a_preToolUse_deny_still_denies_the_in_process_call(rig):
    ran, told, error = session(rig, sdk_rig.call_line(KIT, {"command": "harmless"}), hooks=[HookMatcher(matcher=None, hooks=[deny_kit])])
    assert error is None, error
    assert ran == [] and "not the kit tool" in told
    assert ungoverned(rig) == []


def test_a_tool_no_callback_selects_runs_as_the_cli_decided(rig):
    """A Bash-only gate: the CLI runs the in-process tool by its permission rules, as
    upstream; that call is the dispatcher's, not ungoverned."""
    ran, _, error = session(rig, sdk_rig.call_line(KIT, {"command": "harmless"}), hooks=[HookMatcher(matcher="Bash", hooks=[watch_bash])])
    assert error is None, error
    assert ran == ["harmless"]
    assert ungoverned(rig) == []


def test_a_second_execution_on_one_decision_is_ungoverned(rig):
    """The model's call of the kit tool was allowed and ran; the wrapper replaying it
    with the same arguments has no decision of its own."""
    ran, _, error = session(rig, [sdk_rig.call_line(KIT, {"command": "harmless"}), sdk_rig.call_line(WRAPPER, {"command": "harmless"})],
                            hooks=[HookMatcher(matcher=None, hooks=[allow_all])])
    assert error is None, error
    assert ran == ["harmless"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [("kit_tool", "deny")]


def test_a_can_use_tool_allow_grants_the_call(rig):
    from claude_agent_sdk import PermissionResultAllow

    async def host(tool_name, input_data, context):
        return PermissionResultAllow()

    ran, _, error = session(rig, sdk_rig.call_line(KIT, {"command": "harmless"}), can_use_tool=host, allowed=())
    assert error is None, error
    assert ran == ["harmless"]
    assert ungoverned(rig) == []


def test_application_code_outside_a_run_keeps_working(rig):
    """A handler called by the application itself (no session running it) is no agent's
    tool call, even while a session with gates was prepared."""
    session(rig, sdk_rig.call_line(KIT, {"command": "harmless"}), hooks=[HookMatcher(matcher="Bash", hooks=[watch_bash])])
    ran: list = []
    _, kit_tool = sdk_rig.kit_server(ran)
    assert asyncio.run(kit_tool.handler({"command": "direct"}))["content"][0]["text"] == "ran"
    assert ran == ["direct"]
    assert ungoverned(rig) == []


def test_a_tool_name_claude_code_rewrites_is_granted_under_its_own(rig):
    """The CLI offers the in-process tool ``kit.dot`` as ``mcp__kit__kit_dot``: the
    PreToolUse allow still grants the handler's call (``kit.dot``)."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    ran: list = []

    @tool("kit.dot", "Runs a command.", {"command": str})
    async def dotted(args):
        ran.append(args["command"])
        return {"content": [{"type": "text", "text": "ran"}]}

    api = sdk_rig.ToolCallAPI()
    opts = sdk_rig.options(api, str(rig.home), str(rig.dir), allowed_tools=["mcp__kit__kit_dot"],
                           mcp_servers={"kit": create_sdk_mcp_server("kit", tools=[dotted])},
                           hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[allow_all])]})
    opts.env.update(sdk_rig.IN_PROCESS_ENV)
    try:
        asyncio.run(sdk_rig.run_prompts(opts, [sdk_rig.call_line("mcp__kit__kit_dot", {"command": "harmless"})], timeout=90))
    finally:
        api.close()
    assert ran == ["harmless"]
    assert ungoverned(rig) == []
