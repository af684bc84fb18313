"""How Claude Code 2.1.332 reads two answers the runner used to read differently:

- an integer literal past CPython's int() digit limit (4300 digits) in a key the CLI
  drops: JSON.parse reads it as a number, so a deny carrying one blocks and an allow
  carrying one allows; under the runner the same answers were a parse error
  (`invalid`): a false deny for the allow, the runner's text for the deny;
- a deny a background process of the hook (in a session of its own, out of the hook's
  process group) writes on the inherited stdout after the hook exited: Claude Code
  resolves the hook at its exit and never reads it (measured), and neither does the
  runner (it judges what it read by DRAIN_GRACE after the exit): the same answer. Gemini
  CLI reads it (it resolves at the pipes' close): a strict xfail there.

The bare hook first (what the host itself does), then the same hooks under the runner."""

import json
import os

import pytest
from test_claude_code_e2e import audit_events, hook_id, hook_script, install, settings_with, tool_result_text

BIG = "1" * 5000
BLOCK = '{"decision":"block","reason":"numbers say no","ruleSerial":%s}' % BIG
ALLOW = '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"},"ruleSerial":%s}' % BIG


def answering_hook(tmp_path, name, answer):
    path = tmp_path / (name + ".json")
    path.write_text(answer + "\n")
    return hook_script(tmp_path, name, "cat '%s'" % path)


def test_premise_claude_code_reads_a_deny_with_a_long_integer(tmp_path, run_claude, scripted_api):
    settings_with(run_claude.settings, answering_hook(tmp_path, "deny.sh", BLOCK))
    run_claude()
    assert not os.path.exists(scripted_api.marker), "Claude Code did not read the deny"
    _result, text = tool_result_text(scripted_api)
    assert "numbers say no" in text


def test_under_the_runner_a_deny_with_a_long_integer_is_the_hooks_deny(tmp_path, run_claude, scripted_api, claude_cli):
    script = answering_hook(tmp_path, "deny.sh", BLOCK)
    settings_with(run_claude.settings, script)
    install(run_claude.settings, claude_cli)
    run_claude()
    assert not os.path.exists(scripted_api.marker)
    _result, text = tool_result_text(scripted_api)
    assert "numbers say no" in text
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_claude)] == [(hook_id(script), "deny", None)]


def test_under_the_runner_an_allow_with_a_long_integer_is_an_allow(tmp_path, run_claude, scripted_api, claude_cli):
    script = answering_hook(tmp_path, "allow.sh", ALLOW)
    settings_with(run_claude.settings, script)
    install(run_claude.settings, claude_cli)
    run_claude()
    assert os.path.exists(scripted_api.marker), "a false deny"
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_claude)] == [(hook_id(script), "allow", None)]


LATE = json.dumps({"decision": "block", "reason": "late says no"})


def late_hook(tmp_path, name, answer):
    """Exits 0 at once; a process in its own session writes `answer` on the inherited
    stdout 1 s later."""
    pid = tmp_path / (name + ".pid")
    body = ("setsid sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; sleep 1; printf \"%%s\\n\" '\"'\"'%s'\"'\"'' & "
            "while [ ! -s %s ]; do sleep 0.01; done; exit 0") % (pid, pid, pid, answer, pid)
    return hook_script(tmp_path, name, body)


def test_premise_claude_code_does_not_wait_for_a_deny_written_after_the_exit(tmp_path, run_claude, scripted_api):
    # Claude Code resolves the hook at its exit: the late deny is never read, the tool runs
    # (Gemini CLI, which resolves at the pipes' close, does read it: see
    # tests/command_hooks/test_runner_host_reading.py)
    settings_with(run_claude.settings, late_hook(tmp_path, "late.sh", LATE), timeout=20)
    run_claude()
    assert os.path.exists(scripted_api.marker)


def test_under_the_runner_a_deny_written_after_the_exit_is_read_as_claude_code_reads_it(tmp_path, run_claude, scripted_api, claude_cli):
    script = late_hook(tmp_path, "late.sh", LATE)
    settings_with(run_claude.settings, script, timeout=20)
    install(run_claude.settings, claude_cli)
    run_claude()
    assert os.path.exists(scripted_api.marker)
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_claude)] == [(hook_id(script), "abstain", None)]


# A byte that is not UTF-8 (a Latin-1 "é", 0xE9) inside a string of the answer: Claude Code
# decodes the hook's stdout lossily (U+FFFD), so the answer is read. The runner decodes it
# strictly: `invalid`, a false deny for an allow (kept as a strict xfail: the strict oracle
# of tests/command_hooks/host_rules.py, strict_json, rejects it too); a deny stays a deny.
LATIN1_ALLOW = "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\"},\"systemMessage\":\"caf\\351\"}"
LATIN1_BLOCK = "{\"decision\":\"block\",\"reason\":\"caf\\351 says no\"}"


def latin1_hook(tmp_path, name, answer):
    return hook_script(tmp_path, name, "printf '%s\\n'" % answer)


def test_premise_claude_code_reads_a_deny_with_a_latin1_byte(tmp_path, run_claude, scripted_api):
    settings_with(run_claude.settings, latin1_hook(tmp_path, "deny.sh", LATIN1_BLOCK))
    run_claude()
    assert not os.path.exists(scripted_api.marker)
    _result, text = tool_result_text(scripted_api)
    assert "says no" in text


@pytest.mark.xfail(strict=True, reason=(
    "the runner decodes an exit-0 hook's stdout strictly (invalid UTF-8: invalid, a deny); "
    "Claude Code decodes it lossily and reads the allow"))
def test_under_the_runner_an_allow_with_a_latin1_byte_is_an_allow(tmp_path, run_claude, scripted_api, claude_cli):
    settings_with(run_claude.settings, latin1_hook(tmp_path, "allow.sh", LATIN1_ALLOW))
    install(run_claude.settings, claude_cli)
    run_claude()
    assert os.path.exists(scripted_api.marker), "a false deny"


def test_under_the_runner_a_deny_with_a_latin1_byte_is_a_deny(tmp_path, run_claude, scripted_api, claude_cli):
    settings_with(run_claude.settings, latin1_hook(tmp_path, "deny.sh", LATIN1_BLOCK))
    install(run_claude.settings, claude_cli)
    run_claude()
    assert not os.path.exists(scripted_api.marker)
