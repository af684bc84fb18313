"""``permission_prompt_tool_name``: an in-process SDK MCP tool the Claude Code CLI asks
instead of the user when no rule allows a tool (exclusive with ``can_use_tool``). End to
end through the bundled CLI: the CLI sends a ``tools/call`` of that tool with
``{"tool_name", "input", "tool_use_id"}`` and honours a text content holding
``{"behavior": "allow", "updatedInput"?}`` or ``{"behavior": "deny", "message"}``.

Upstream (measured with this rig): a raising handler denies but the model is told the
exception text; junk denies with the CLI's own "invalid permission result"; a hanging
handler holds the call as long as it hangs and a late allow runs the tool. With
failsecure the handler is a gate: a raise, junk or an answer past its ``timeout`` denies
in the CLI's deny shape naming the hook and the failure, audited; a PermissionRequest
callback's deny outranks its allow; and its call is not an ungoverned tool run (a
PreToolUse callback that selects every tool used to deny every prompt as ungoverned).
Every deny has an allow twin."""

from __future__ import annotations

import asyncio
import json
import sys
import time

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py
SECRET, named = sdk_rig.SECRET, sdk_rig.named

import pytest  # noqa: E402
from claude_agent_sdk import HookMatcher, create_sdk_mcp_server, tool  # noqa: E402

PROMPT = "mcp__perm__approve"


def prompt_server(behave, name="approve_prompt"):
    """An SDK MCP server ``perm`` whose tool ``approve`` answers ``behave(args)``."""

    async def handler(args):
        answer = await behave(args)
        if isinstance(answer, dict) and "behavior" in answer:
            return {"content": [{"type": "text", "text": json.dumps(answer)}]}
        return answer

    named(handler, name)
    hook = f"claude-agent-sdk:{handler.__module__}.{name}"
    return create_sdk_mcp_server("perm", tools=[tool("approve", "Permission prompt.", {"tool_name": str, "input": dict})(handler)]), hook


def allowing():
    async def behave(args):
        return {"behavior": "allow", "updatedInput": args["input"]}

    return behave


def run(rig, marker, behave, **kwargs):
    server, hook = prompt_server(behave)
    out = rig.run(rig.touch(marker), allowed=(), mcp_servers={"perm": server}, permission_prompt_tool_name=PROMPT, **kwargs)
    return out, hook


def denied_as(rig, out, hook, category, exception_type=None):
    event = rig.last()
    assert event["outcome"] == "deny", event
    o = rig.outcome_of(hook.split(":", 1)[1], event)
    assert (o["failure"], o["exception_type"]) == (category, exception_type)
    assert f"failsecure: hook '{hook}' failed closed ({category})" in out.told
    assert SECRET not in out.told and SECRET not in rig.audit_path.read_text()


def test_a_prompt_that_allows_runs_the_tool(rig):
    out, hook = run(rig, "ok", allowing())
    assert out.error is None and out.ran("ok")
    assert rig.last()["outcome"] == "allow"


def test_a_prompt_that_allows_runs_beside_a_pre_tool_use_callback_for_every_tool(rig):
    """The CLI's call of its prompt tool is not a model's tool call: not ungoverned."""

    async def pre(input_data, tool_use_id, context):
        return {}

    out, hook = run(rig, "ok", allowing(), hooks=[HookMatcher(matcher=None, hooks=[named(pre, "pre_all")])])
    assert out.error is None and out.ran("ok"), out.told
    assert not [e for e in rig.events() if e["failure"] == "ungoverned"]


def test_a_prompt_that_denies_denies_with_its_own_message(rig):
    async def behave(args):
        return {"behavior": "deny", "message": "not this one"}

    out, hook = run(rig, "no", behave)
    assert not out.ran("no") and "not this one" in out.told
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] is None


@pytest.mark.parametrize("exc_type", [RuntimeError, SystemExit])
def test_a_raising_prompt_denies_without_its_text(rig, exc_type):
    async def behave(args):
        raise exc_type(SECRET)

    out, hook = run(rig, "raise", behave)
    assert not out.ran("raise")  # upstream denies too, but tells the model the exception text
    denied_as(rig, out, hook, "raised", exc_type.__name__)


@pytest.mark.parametrize("answer", [
    {"content": [{"type": "text", "text": "yes please"}]},
    {"behavior": "maybe"},
    {"content": [{"type": "text", "text": "{\"behavior\": \"allow\", \"updatedInput\": \"x\"}"}]},
], ids=["text", "unknown behavior", "updatedInput not an object"])
def test_a_prompt_answering_junk_denies(rig, answer):
    async def behave(args):
        return answer

    out, hook = run(rig, "junk", behave)
    assert not out.ran("junk")
    denied_as(rig, out, hook, "invalid")


def test_a_prompt_past_its_timeout_denies(rig):
    async def behave(args):
        await asyncio.sleep(3)
        return {"behavior": "allow", "updatedInput": args["input"]}

    _, hook = prompt_server(behave)
    rig.config(f'[hooks."{hook}"]\ntimeout = 0.3\n')
    out, hook = run(rig, "hang", behave)
    assert not out.ran("hang")  # upstream waits, then runs the tool on the late allow
    denied_as(rig, out, hook, "timeout")


def test_a_prompt_that_answers_after_its_timeout_is_a_timeout(rig):
    """It holds the loop (no await) past its timeout, then allows: a late answer."""

    async def behave(args):
        time.sleep(0.6)
        return {"behavior": "allow", "updatedInput": args["input"]}

    _, hook = prompt_server(behave)
    rig.config(f'[hooks."{hook}"]\ntimeout = 0.3\n')
    out, hook = run(rig, "late", behave)
    assert not out.ran("late")
    denied_as(rig, out, hook, "timeout")


def test_a_prompt_inside_its_timeout_runs(rig):
    async def behave(args):
        await asyncio.sleep(0.05)
        return {"behavior": "allow", "updatedInput": args["input"]}

    _, hook = prompt_server(behave)
    rig.config(f'[hooks."{hook}"]\ntimeout = 0.3\n')
    out, hook = run(rig, "fast", behave)
    assert out.error is None and out.ran("fast")


def _permission_hook(answer):
    async def permission(input_data, tool_use_id, context):
        return answer

    return HookMatcher(matcher=None, hooks=[named(permission, "permission_hook")])


def test_a_permission_request_deny_outranks_the_prompts_allow(rig):
    deny = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "hook says no"}}}
    out, hook = run(rig, "outranked", allowing(), events={"PermissionRequest": [_permission_hook(deny)]})
    assert not out.ran("outranked")
    assert any(e["outcome"] == "deny" and e["hook"].endswith("permission_hook") for e in rig.events())


def test_a_permission_request_with_no_opinion_and_the_prompts_allow_run(rig):
    out, hook = run(rig, "both", allowing(), events={"PermissionRequest": [_permission_hook({})]})
    assert out.error is None and out.ran("both")


def _pre_denying(word):
    """A PreToolUse policy: denies a command with ``word`` in it, no opinion otherwise."""

    async def pre(input_data, tool_use_id, context):
        command = (input_data.get("tool_input") or {}).get("command", "")
        if word in command:
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                           "permissionDecisionReason": "policy says no"}}
        return {}

    return HookMatcher(matcher=None, hooks=[named(pre, "pre_policy")])


def rewriting(command):
    async def behave(args):
        return {"behavior": "allow", "updatedInput": dict(args["input"], command=command)}

    return behave


def test_a_prompts_rewrite_is_judged_by_the_pre_tool_use_callbacks(rig):
    """The CLI asks PreToolUse before its permission path, so upstream the prompt's
    updatedInput runs unjudged: the policy that would deny it never sees it."""
    evil = rig.touch("evil")[len("run: "):]
    out, hook = run(rig, "ok", rewriting(evil), hooks=[_pre_denying("evil")])
    assert not out.ran("evil") and not out.ran("ok")
    assert "policy says no" in out.told
    assert any(e["outcome"] == "deny" and e["hook"].endswith("pre_policy") for e in rig.events())


def test_a_prompts_rewrite_the_pre_tool_use_callbacks_allow_runs(rig):
    fine = rig.touch("fine")[len("run: "):]
    out, hook = run(rig, "ok", rewriting(fine), hooks=[_pre_denying("evil")])
    assert out.error is None and out.ran("fine") and not out.ran("ok"), out.told
    assert not [e for e in rig.events() if e["outcome"] == "deny"]
