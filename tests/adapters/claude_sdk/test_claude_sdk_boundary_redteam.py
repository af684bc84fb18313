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
