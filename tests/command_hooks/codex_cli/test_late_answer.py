"""Codex CLI 0.169.0 reads a hook's stdout to its end: a deny that a process the hook
left behind (in a session of its own, out of the hook's process group) writes on the
inherited stdout after the hook exited is read, and blocks the tool (measured). Gemini CLI
does the same (it resolves at the pipes' close); Claude Code does not (it resolves at the
exit). The runner judges what it read by DRAIN_GRACE (0.2 s) after the exit, so under it
the late deny is lost: a strict xfail (reading on to EOF would change the existing
test_escaped_daemon_holding_stdout_does_not_turn_an_answer_into_a_timeout). The bare hook
first (the host itself), then under the runner, with the allow twin."""

import json
import os

import pytest
from codex_rig import trust_hooks
from test_codex_cli_e2e import assert_ran, guarded, hook_script, hooks_with

DENY = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                          "permissionDecisionReason": "late says no"}})
ALLOW = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})


def late_hook(tmp_path, name, answer):
    """Exits 0 at once; a process in its own session writes `answer` on the inherited
    stdout 1 s later."""
    pid = tmp_path / (name + ".pid")
    body = ("setsid sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; sleep 1; printf \"%%s\\n\" '\"'\"'%s'\"'\"'' & "
            "while [ ! -s %s ]; do sleep 0.01; done; exit 0") % (pid, pid, pid, answer, pid)
    return hook_script(tmp_path, name, body)


def test_premise_codex_reads_a_deny_written_after_the_exit(tmp_path, run_codex, scripted_api):
    hooks_with(run_codex.hooks, late_hook(tmp_path, "late.sh", DENY))
    trust_hooks(run_codex)
    run_codex()
    assert not os.path.exists(scripted_api.marker), "Codex did not wait for the late deny"
    assert "late says no" in json.dumps(scripted_api.call_outputs())


@pytest.mark.xfail(strict=True, reason=(
    "the runner judges what it read by DRAIN_GRACE after the hook's exit; Codex reads on to "
    "the end of stdout, so the late deny blocks the bare hook and not the wrapped one"))
def test_under_the_runner_a_deny_written_after_the_exit_stops_the_tool(tmp_path, run_codex, scripted_api):
    guarded(run_codex, late_hook(tmp_path, "late.sh", DENY))
    run_codex()
    assert not os.path.exists(scripted_api.marker)


def test_under_the_runner_an_allow_written_after_the_exit_lets_the_tool_run(tmp_path, run_codex, scripted_api):
    guarded(run_codex, late_hook(tmp_path, "late.sh", ALLOW))
    assert_ran(run_codex(), scripted_api)
