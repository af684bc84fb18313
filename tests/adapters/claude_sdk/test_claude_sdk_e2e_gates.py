"""End to end through the bundled Claude Code CLI and the scripted Messages API: the gate
kinds beyond a plain PreToolUse callback. A marker file proves whether the tool ran.

- a stop answer (``continue_: False``) is honoured by the CLI as a deny only in the shape
  failsecure sends (upstream the tool runs);
- ``defer`` pauses the run with the call deferred, and a resumed session runs it once
  approved (upstream failsecure denied it as junk);
- the CLI races ``PermissionRequest`` hooks against ``can_use_tool``: a slow deny or a
  crash of the hook loses to a fast allow upstream (and the crash text reaches the CLI's
  stderr); with failsecure the deny stands.
"""

from __future__ import annotations

import asyncio
import sys

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py
SECRET, named = sdk_rig.SECRET, sdk_rig.named

import failsecure  # noqa: E402
from claude_agent_sdk import HookMatcher, PermissionResultAllow  # noqa: E402

PRE, PERM = "PreToolUse", "PermissionRequest"
ALLOW = {"hookSpecificOutput": {"hookEventName": PRE, "permissionDecision": "allow"}}


def _stopper():
    async def stopper(input_data, tool_use_id, context):
        if input_data["tool_input"]["command"].endswith("/stop"):
            return {"continue_": False, "stopReason": "stop here"}
        return {}

    return named(stopper, "stopper")


def test_a_stop_answer_denies_the_tool(rig):
    run = rig.run(rig.touch("stop"), hooks=[HookMatcher(matcher="Bash", hooks=[_stopper()])])
    assert not run.ran("stop")
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] is None and event["hook"].endswith(".stopper")


def test_allow_twin_and_upstream_twin_of_the_stop_answer(rig, adapter):
    run = rig.run(rig.touch("ok"), hooks=[HookMatcher(matcher="Bash", hooks=[_stopper()])])
    assert run.error is None and run.ran("ok")
    failsecure.uninstall()
    try:
        upstream = rig.run(rig.touch("stop"), hooks=[HookMatcher(matcher="Bash", hooks=[_stopper()])])
    finally:
        failsecure.install()
        assert adapter.state == "patched"
    assert upstream.ran("stop")  # the CLI does not read continue: false as a deny of the tool


def test_defer_pauses_the_call_and_a_resumed_session_runs_it_once_approved(rig):
    approved = []

    async def approver(input_data, tool_use_id, context):
        if not approved:
            return {"hookSpecificOutput": {"hookEventName": PRE, "permissionDecision": "defer",
                                           "permissionDecisionReason": "waiting for a person"}}
        return ALLOW

    hooks = [HookMatcher(matcher="Bash", hooks=[named(approver, "approver")])]
    first = rig.run(rig.touch("deferred"), hooks=hooks)
    assert first.error is None, first.error
    assert not first.ran("deferred")
    deferred = first.result.deferred_tool_use
    assert deferred is not None and deferred.name == "Bash"
    assert rig.events()[-1]["outcome"] == "ask" and rig.events()[-1]["failure"] is None
    approved.append(True)
    resumed = rig.run("continue", hooks=hooks, resume=first.result.session_id)
    assert resumed.error is None, resumed.error
    assert resumed.ran("deferred")


def test_deny_twin_a_defer_beside_a_deny_is_a_deny(rig):
    async def deferring(input_data, tool_use_id, context):
        return {"hookSpecificOutput": {"hookEventName": PRE, "permissionDecision": "defer"}}

    async def denying(input_data, tool_use_id, context):
        return {"hookSpecificOutput": {"hookEventName": PRE, "permissionDecision": "deny", "permissionDecisionReason": "no"}}

    run = rig.run(rig.touch("denied"), hooks=[HookMatcher(matcher="Bash", hooks=[named(deferring, "deferring")]),
                                               HookMatcher(matcher="Bash", hooks=[named(denying, "denying")])])
    assert run.error is None and not run.ran("denied")
    assert run.result.deferred_tool_use is None
    assert rig.last()["outcome"] == "deny" and rig.last()["hook"].endswith(".denying")


def _permission_hook():
    async def perm_gate(input_data, tool_use_id, context):
        command = input_data["tool_input"]["command"]
        await asyncio.sleep(0.1)  # slower than the permission callback, within the deadline
        if command.endswith("/raise"):
            raise RuntimeError("permission hook failed on " + SECRET)
        if command.endswith("/deny"):
            return {"hookSpecificOutput": {"hookEventName": PERM, "decision": {"behavior": "deny", "message": "no"}}}
        return {}

    return named(perm_gate, "perm_gate")


async def _allow_everything(tool_name, input_data, context):
    return PermissionResultAllow()


def _ask_path_run(rig, *markers):
    stderr: list = []
    run = rig.run(*(rig.touch(m) for m in markers), allowed=(), can_use_tool=named(_allow_everything, "allow_everything"),
                  events={PERM: [HookMatcher(matcher="Bash", hooks=[_permission_hook()])]}, stderr=stderr)
    return run, "\n".join(stderr)


def test_a_permission_request_deny_or_crash_outranks_a_fast_can_use_tool_allow(rig):
    run, stderr = _ask_path_run(rig, "raise", "deny", "ok")
    assert run.error is None, run.error
    assert [m for m in ("raise", "deny", "ok") if run.ran(m)] == ["ok"]
    outcomes = [(e["outcome"], e["failure"]) for e in rig.events() if (e["hook"] or "").endswith(".perm_gate")]
    assert ("deny", "raised") in outcomes and ("deny", None) in outcomes
    assert SECRET not in stderr and SECRET not in run.told and SECRET not in rig.audit_path.read_text()


def test_upstream_twin_the_fast_allow_wins_and_the_crash_text_reaches_stderr(rig, adapter):
    failsecure.uninstall()
    try:
        run, stderr = _ask_path_run(rig, "raise", "deny", "ok")
    finally:
        failsecure.install()
        assert adapter.state == "patched"
    assert run.ran("raise") and run.ran("deny") and run.ran("ok")
    assert SECRET in stderr
