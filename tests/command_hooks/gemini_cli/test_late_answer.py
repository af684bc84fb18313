"""Gemini CLI 0.61.0 resolves a command hook at the child's `close`
(`HookRunner.executeCommandHook`: `child.on("close", ...)`), once its stdout and stderr
reached EOF, not at its exit: a deny that a process the hook left behind (in a session of
its own, out of the hook's process group) writes on the inherited stdout after the hook
exited is read, and blocks the tool. Claude Code resolves at the exit and never reads it
(tests/command_hooks/claude_code/test_answer_reading.py). The runner judges what it read
by DRAIN_GRACE (0.2 s) after the exit: under it the late deny is lost (strict xfail:
reading on to EOF would change the existing
test_escaped_daemon_holding_stdout_does_not_turn_an_answer_into_a_timeout). The bare
hook first (the host itself), then under the runner, with the allow twin."""

import json
import os

import pytest
from test_gemini_cli_e2e import assert_ran, hook_script, install, settings_with

DENY = json.dumps({"decision": "deny", "reason": "late says no"})
ALLOW = json.dumps({"decision": "allow"})


def late_hook(tmp_path, name, answer):
    """Exits 0 at once; a process in its own session writes `answer` on the inherited
    stdout 1 s later."""
    pid = tmp_path / (name + ".pid")
    body = ("setsid sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; sleep 1; printf \"%%s\\n\" '\"'\"'%s'\"'\"'' & "
            "while [ ! -s %s ]; do sleep 0.01; done; exit 0") % (pid, pid, pid, answer, pid)
    return hook_script(tmp_path, name, body)


def test_premise_gemini_reads_a_deny_written_after_the_exit(tmp_path, run_gemini, scripted_api):
    settings_with(run_gemini.settings, late_hook(tmp_path, "late.sh", DENY))
    proc = run_gemini()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert not os.path.exists(scripted_api.marker), "Gemini CLI did not wait for the late deny"
    assert "late says no" in json.dumps(scripted_api.function_responses())


@pytest.mark.xfail(strict=True, reason=(
    "the runner judges what it read by DRAIN_GRACE after the hook's exit; Gemini CLI reads on "
    "to the pipes' close, so the late deny blocks the bare hook and not the wrapped one"))
def test_under_the_runner_a_deny_written_after_the_exit_stops_the_tool(tmp_path, run_gemini, scripted_api):
    settings_with(run_gemini.settings, late_hook(tmp_path, "late.sh", DENY))
    install(run_gemini)
    run_gemini()
    assert not os.path.exists(scripted_api.marker)


def test_under_the_runner_an_allow_written_after_the_exit_lets_the_tool_run(tmp_path, run_gemini, scripted_api):
    settings_with(run_gemini.settings, late_hook(tmp_path, "late.sh", ALLOW))
    install(run_gemini)
    assert_ran(run_gemini(), scripted_api)
