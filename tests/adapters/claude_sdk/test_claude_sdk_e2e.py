"""End to end: the SDK starts its bundled Claude Code CLI, which talks to a scripted
Messages API on 127.0.0.1; each prompt makes the model call Bash once with a command
that creates a marker file. One session per test (each costs about a second), several
tool calls per session.

One PreToolUse callback judges every call by the marker its command creates: it
raises, hangs, returns None, answers a wrong-case decision, or allows.
"""

from __future__ import annotations

import asyncio
import sys
import threading

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py
SECRET, named = sdk_rig.SECRET, sdk_rig.named

import failsecure  # noqa: E402
from claude_agent_sdk import HookMatcher  # noqa: E402

ALLOW = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}


def scripted_gate(release: threading.Event):
    async def gate(input_data, tool_use_id, context):
        command = input_data["tool_input"]["command"]
        if command.endswith("/raise"):
            raise RuntimeError("gate failed on " + SECRET)
        if command.endswith("/hang"):
            await asyncio.get_running_loop().run_in_executor(None, release.wait, 2)
            return ALLOW
        if command.endswith("/none"):
            return None
        if command.endswith("/junk"):
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "Deny"}}
        return ALLOW

    return named(gate, "scripted_gate")


def test_failing_callbacks_stop_the_call_and_an_allowing_one_lets_it_run(rig):
    release = threading.Event()
    markers = ["raise", "hang", "none", "junk", "ok"]
    try:
        run = rig.run(*(rig.touch(m) for m in markers), hooks=[HookMatcher(matcher="Bash", hooks=[scripted_gate(release)])])
    finally:
        release.set()
    assert run.error is None, run.error
    assert [m for m in markers if run.ran(m)] == ["ok"]
    events = rig.events()
    assert [(e["outcome"], e["failure"], e["exception_type"]) for e in events] == [
        ("deny", "raised", "RuntimeError"),
        ("deny", "timeout", None),
        ("deny", "invalid", None),
        ("deny", "invalid", None),
        ("allow", None, None),
    ]
    assert all(e["hook"].endswith(".scripted_gate") and e["tool"] == "Bash" for e in events)
    told = run.told
    for category in ("raised", "timeout", "invalid"):
        assert f"failed closed ({category})" in told
    assert SECRET not in told and SECRET not in rig.audit_path.read_text()


def test_upstream_twin_the_same_callbacks_fail_open(rig, adapter):
    failsecure.uninstall()
    try:
        markers = ["raise", "none", "junk", "ok"]
        run = rig.run(*(rig.touch(m) for m in markers), hooks=[HookMatcher(matcher="Bash", hooks=[scripted_gate(threading.Event())])])
    finally:
        failsecure.install()
        assert adapter.state == "patched"
    assert run.error is None, run.error
    assert [m for m in markers if run.ran(m)] == markers  # every one ran
    assert rig.events() == []


def test_can_use_tool_failures_stop_the_call(rig):
    """No allowed_tools: the CLI asks the SDK's permission callback for every Bash call."""
    from claude_agent_sdk import PermissionResultAllow

    async def permission(tool_name, input_data, context):
        command = input_data["command"]
        if command.endswith("/raise"):
            raise RuntimeError(SECRET)
        if command.endswith("/junk"):
            return {"behavior": "allow"}
        return PermissionResultAllow()

    markers = ["raise", "junk", "ok"]
    run = rig.run(*(rig.touch(m) for m in markers), can_use_tool=named(permission, "permission"), allowed=())
    assert run.error is None, run.error
    assert [m for m in markers if run.ran(m)] == ["ok"]
    assert [(e["outcome"], e["failure"]) for e in rig.events()] == [("deny", "raised"), ("deny", "invalid"), ("allow", None)]
    assert SECRET not in run.told
