"""Red-team reproducer for the claude-agent-sdk tool boundary (issue 29), with the real
bundled CLI: a grant is good for one execution; an in-process tool whose handler raised
must not leave its grant for a wrapper to run it again (the CLI never re-runs a
``tools/call`` itself: the model's next call is judged again)."""

import asyncio
import sys

from claude_agent_sdk import HookMatcher

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]

KIT, WRAPPER = sdk_rig.KIT_TOOLS


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def once_kit():
    """The user's gate: the kit tool may be called once in this session (a budget)."""
    seen: list = []

    async def gate(input_data, tool_use_id, context):
        if input_data.get("tool_name") == KIT:
            seen.append(tool_use_id)
            if len(seen) > 1:
                return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                               "permissionDecisionReason": "budget spent"}}
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}

    return gate


def session(rig, prompts, hooks):
    ran: list = []

    def record(command):
        if len(ran) == 1:  # the first run fails after its side effect
            raise RuntimeError("transient failure")

    server, _ = sdk_rig.kit_server(ran, record=record)
    api = sdk_rig.ToolCallAPI()
    opts = sdk_rig.options(api, str(rig.home), str(rig.dir), allowed_tools=["Bash", KIT, WRAPPER],
                           mcp_servers={"kit": server}, hooks={"PreToolUse": list(hooks)})
    opts.env.update(sdk_rig.IN_PROCESS_ENV)
    error = None
    try:
        asyncio.run(sdk_rig.run_prompts(opts, list(prompts), timeout=90))
    except Exception as exc:  # noqa: BLE001 - the test looks at what ran
        error = exc
    finally:
        api.close()
    return ran, error


def test_a_grant_a_raised_handler_gave_back_is_not_left_for_a_wrapper(rig):
    ran, error = session(rig, [sdk_rig.call_line(KIT, {"command": "deploy"}), sdk_rig.call_line(WRAPPER, {"command": "deploy"})],
                         [HookMatcher(matcher=None, hooks=[once_kit()])])
    assert error is None, error
    assert ran == ["deploy"], "the wrapper ran the kit tool again on the raised call's grant"
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [("kit_tool", "deny")]


async def no_decision(input_data, tool_use_id, context):
    """A PreToolUse callback that watches every tool and decides nothing (the CLI asks
    its permission callback next)."""
    return {}


def host_denying_kit():
    from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

    async def host(tool_name, input_data, context):
        if tool_name == KIT:
            return PermissionResultDeny(message="the host says no")
        return PermissionResultAllow()

    return host


def permission_session(rig, prompts, hooks, can_use_tool):
    ran: list = []
    server, _ = sdk_rig.kit_server(ran)
    api = sdk_rig.ToolCallAPI()
    opts = sdk_rig.options(api, str(rig.home), str(rig.dir), allowed_tools=[], mcp_servers={"kit": server},
                           hooks={"PreToolUse": list(hooks)}, can_use_tool=can_use_tool)
    opts.env.update(sdk_rig.IN_PROCESS_ENV)
    error = None
    try:
        asyncio.run(sdk_rig.run_prompts(opts, list(prompts), timeout=90))
    except Exception as exc:  # noqa: BLE001 - the test looks at what ran
        error = exc
    finally:
        api.close()
    return ran, error


def test_a_grant_of_a_call_the_permission_callback_then_denied_is_not_left_for_a_wrapper(rig):
    """PreToolUse lets the kit call on (no objection), the host's ``can_use_tool`` denies
    it: the CLI never runs it. The wrapper (allowed) then calls the kit handler with the
    same arguments: no decision allowed that execution."""
    ran, error = permission_session(rig, [sdk_rig.call_line(KIT, {"command": "deploy"}), sdk_rig.call_line(WRAPPER, {"command": "deploy"})],
                                    [HookMatcher(matcher=None, hooks=[no_decision])], host_denying_kit())
    assert error is None, error
    assert ran == [], "the wrapper ran the kit call the host had denied"
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [("kit_tool", "deny")]


def test_a_call_the_permission_callback_allows_runs(rig):
    """Allow twin: the same session shape, the host allows the kit call: it runs once."""
    from claude_agent_sdk import PermissionResultAllow

    async def host(tool_name, input_data, context):
        return PermissionResultAllow()

    ran, error = permission_session(rig, [sdk_rig.call_line(KIT, {"command": "deploy"})],
                                    [HookMatcher(matcher=None, hooks=[no_decision])], host)
    assert error is None, error
    assert ran == ["deploy"]
    assert ungoverned(rig) == []


def test_two_decision_points_allowing_one_call_leave_no_second_grant(rig):
    """PreToolUse lets the kit call on and the host's ``can_use_tool`` allows it: one call,
    one grant. The wrapper replaying it with the same arguments has no decision."""
    from claude_agent_sdk import PermissionResultAllow

    async def host(tool_name, input_data, context):
        return PermissionResultAllow()

    ran, error = permission_session(rig, [sdk_rig.call_line(KIT, {"command": "deploy"}), sdk_rig.call_line(WRAPPER, {"command": "deploy"})],
                                    [HookMatcher(matcher=None, hooks=[no_decision])], host)
    assert error is None, error
    assert ran == ["deploy"], "the wrapper replayed the kit call on a second grant"
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [("kit_tool", "deny")]


async def watch_bash(input_data, tool_use_id, context):
    return {}


def test_a_call_the_permission_callback_allowed_is_not_granted_again_on_arrival(rig):
    """No PreToolUse callback selects the kit tool (a Bash-only gate); the host's
    ``can_use_tool`` allows the kit call, then the CLI's ``tools/call`` arrives: one call,
    one grant. The wrapper replaying it with the same arguments has no decision."""
    from claude_agent_sdk import PermissionResultAllow

    async def host(tool_name, input_data, context):
        return PermissionResultAllow()

    ran, error = permission_session(rig, [sdk_rig.call_line(KIT, {"command": "deploy"}), sdk_rig.call_line(WRAPPER, {"command": "deploy"})],
                                    [HookMatcher(matcher="Bash", hooks=[watch_bash])], host)
    assert error is None, error
    assert ran == ["deploy"], "the wrapper replayed the kit call on a second grant"
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [("kit_tool", "deny")]
