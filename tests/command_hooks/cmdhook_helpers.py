"""Shared helpers of the command-hook runner tests (payloads, expected host denies)."""

import json

from failsecure.hookid import command_name

SECRET = "sk-payload-secret-4242"


def payload_for(protocol, event=None, **extra):
    if event is None:
        event = "BeforeTool" if protocol == "gemini" else "PreToolUse"
    body = {
        "session_id": "s-1",
        "hook_event_name": event,
        "tool_name": "run_shell_command" if protocol == "gemini" else "Bash",
        "tool_input": {"command": "echo " + SECRET},
        "tool_use_id": "toolu_test_1",
    }
    body.update(extra)
    return json.dumps(body).encode()


def expected_deny(protocol, reason, event="PreToolUse"):
    """The exact (stdout, stderr, exit) each host needs to block (upstream note's table)."""
    if protocol == "claude":
        body = {"decision": "block", "reason": reason}
        if event == "PreToolUse":
            body["hookSpecificOutput"] = {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        return json.dumps(body, separators=(",", ":")) + "\n", reason + "\n", 2
    if protocol == "gemini":
        return json.dumps({"decision": "deny", "reason": reason}, separators=(",", ":")) + "\n", reason + "\n", 2
    if protocol in ("codex", "kiro"):
        return "", reason + "\n", 2
    raise AssertionError(protocol)


def hook_id(command):
    """The hook id the runner and `hook install` derive from a command (argv or shell line)."""
    return "command:" + command_name(command)


def wrap(path, host, **options):
    """`hook install` on one settings file -> the ids of the hooks it wrapped."""
    from failsecure.runner.settings import wrap_settings

    return wrap_settings(path, host, **options).ids
