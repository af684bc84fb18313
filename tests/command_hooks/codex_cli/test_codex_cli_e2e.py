"""Codex CLI end to end: the real CLI (npm @openai/codex 0.169.0), a scripted Responses
API on 127.0.0.1, and the user's $CODEX_HOME/hooks.json rewritten by `failsecure hook
install --host codex`.

Every failure kind of a PreToolUse hook (crash, hang, kill, missing, junk, bad schema,
ask) stops the exec_command call (marker file absent), with the audit event naming
the failure branch; an allowing hook lets it run. The premise tests show the same
hooks fail open without the runner. Classes only the real CLI shows: Codex runs the
tool on "ask"; Codex silently skips a hook whose hash the user has not trusted (and
install changes the hook); a host timeout lowered after install.
"""

import json
import os
import subprocess
import sys

import pytest

from failsecure.failures import failure_reason
from failsecure.hookid import command_name

from codex_rig import PINNED, hook_states, trust_hooks

ASK = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}})


def hook_id(command):
    return "command:" + command_name(command)


def hooks_with(path, hook_command, timeout=None):
    handler = {"type": "command", "command": hook_command}
    if timeout is not None:
        handler["timeout"] = timeout
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}}, indent=2) + "\n")


def hook_script(tmp_path, name, body):
    script = tmp_path / name
    script.write_text("#!/bin/sh\ncat >/dev/null\n%s\n" % body)
    script.chmod(0o755)
    return str(script)


def failsecure(run_codex, *args):
    return subprocess.run([sys.executable, "-m", "failsecure", "hook", *args], capture_output=True, text=True, timeout=180, env=run_codex.env)


def install(run_codex, *extra):
    proc = failsecure(run_codex, "install", "--host", "codex", "--codex-bin", run_codex.cli, *extra, str(run_codex.hooks))
    assert proc.returncode == 0, proc.stderr
    return json.loads(run_codex.hooks.read_text())["hooks"]["PreToolUse"][0]["hooks"][0], proc.stdout


def guarded(run_codex, command, timeout=None):
    """The user's trusted guard, then `hook install`."""
    hooks_with(run_codex.hooks, command, timeout)
    trust_hooks(run_codex)
    return install(run_codex)


def audit_events(run_codex):
    if not os.path.exists(run_codex.audit):
        return []
    with open(run_codex.audit) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def assert_ran(proc, scripted_api):
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert os.path.exists(scripted_api.marker), "the tool did not run: " + proc.stderr.decode()[-2000:]


def assert_stopped(run_codex, scripted_api, hid, category):
    proc = run_codex()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert not os.path.exists(scripted_api.marker), "the tool ran: " + proc.stderr.decode()[-2000:]
    assert "hook: PreToolUse Blocked" in proc.stderr.decode()
    outputs = json.dumps(scripted_api.call_outputs())
    reason = failure_reason(hid, category) if category else "failsecure: hook '%s' denied" % hid
    assert reason in outputs, outputs
    events = audit_events(run_codex)
    assert [(e["hook"], e["outcome"], e["failure"], e["tool"]) for e in events] == [(hid, "deny", category, "Bash")]
    with open(run_codex.audit) as fh:
        assert scripted_api.secret not in fh.read()


def test_cli_is_the_pinned_release(codex_cli):
    proc = subprocess.run([codex_cli, "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.stdout.strip() == PINNED


# ---------------------------------------------------------------- the premise: bare hooks fail open

PREMISE = [("crash", "echo boom >&2; exit 1"), ("hang", "exec sleep 30"), ("junk", "echo not json"), ("ask", "echo '%s'" % ASK)]


@pytest.mark.parametrize("kind,body", PREMISE, ids=[p[0] for p in PREMISE])
def test_premise_bare_broken_hooks_fail_open(tmp_path, run_codex, scripted_api, kind, body):
    hooks_with(run_codex.hooks, hook_script(tmp_path, kind + ".sh", body), timeout=1)
    trust_hooks(run_codex)
    assert_ran(run_codex(), scripted_api)


def test_premise_a_trusted_bare_deny_blocks(tmp_path, run_codex, scripted_api):
    hooks_with(run_codex.hooks, hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2"))
    trust_hooks(run_codex)
    run_codex()
    assert not os.path.exists(scripted_api.marker)


def test_premise_an_untrusted_deny_is_skipped_silently(tmp_path, run_codex, scripted_api):
    hooks_with(run_codex.hooks, hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2"))
    proc = run_codex()
    assert_ran(proc, scripted_api)
    assert "hook: PreToolUse" not in proc.stderr.decode()


# ---------------------------------------------------------------- every failure kind stops the tool

FAILURES = [
    ("crash", "echo boom >&2; exit 1", "crashed", None),
    ("hang", "sleep 30", "timeout", 1),
    ("kill", "kill -9 $$", "crashed", None),
    ("junk", "echo not json", "invalid", None),
    ("bad-schema", """echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "additionalContext": "x"}}'""", "invalid", None),
    ("wrong-case", """echo '{"decision": "Block"}'""", "invalid", None),
    ("ask", "echo '%s'" % ASK, None, None),
]


@pytest.mark.parametrize("kind,body,category,timeout", FAILURES, ids=[f[0] for f in FAILURES])
def test_failing_hook_stops_the_tool(tmp_path, run_codex, scripted_api, kind, body, category, timeout):
    script = hook_script(tmp_path, kind + ".sh", body)
    handler, _out = guarded(run_codex, script, timeout)
    if timeout is not None:
        assert handler["timeout"] == timeout + 5
    assert_stopped(run_codex, scripted_api, hook_id(script), category)


def test_missing_hook_stops_the_tool(tmp_path, run_codex, scripted_api):
    gone = str(tmp_path / "gone.sh")
    guarded(run_codex, gone)
    assert_stopped(run_codex, scripted_api, hook_id(gone), "missing")


def test_allowing_hook_lets_the_tool_run(tmp_path, run_codex, scripted_api):
    script = hook_script(tmp_path, "allow.sh", "exit 0")
    guarded(run_codex, script)
    assert_ran(run_codex(), scripted_api)
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_codex)] == [(hook_id(script), "abstain", None)]


def test_explicit_allow_answer_lets_the_tool_run(tmp_path, run_codex, scripted_api):
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
    guarded(run_codex, hook_script(tmp_path, "ok.sh", "echo '%s'" % answer))
    assert_ran(run_codex(), scripted_api)
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_codex)] == [("allow", None)]


def test_hooks_own_deny_reaches_the_model(tmp_path, run_codex, scripted_api):
    guarded(run_codex, hook_script(tmp_path, "deny.sh", "echo 'no shell today' >&2; exit 2"))
    run_codex()
    assert not os.path.exists(scripted_api.marker)
    assert "no shell today" in json.dumps(scripted_api.call_outputs())
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_codex)] == [("deny", None)]


# ---------------------------------------------------------------- hook trust across install and uninstall


def test_install_keeps_the_users_trust(tmp_path, run_codex, scripted_api):
    script = hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2")
    _handler, out = guarded(run_codex, script)
    states = hook_states(run_codex)
    assert [h["trustStatus"] for h in states.values()] == ["trusted"]
    assert "kept trusted" in out
    run_codex()
    assert not os.path.exists(scripted_api.marker)
    assert [(e["hook"], e["outcome"]) for e in audit_events(run_codex)] == [(hook_id(script), "deny")]


def test_install_does_not_trust_what_the_user_did_not(tmp_path, run_codex, scripted_api):
    # the twin: trust comes from the user; an untrusted hook stays untrusted, and install says so
    hooks_with(run_codex.hooks, hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2"))
    config = run_codex.config.read_bytes()
    _handler, out = install(run_codex)
    assert "NOT TRUSTED" in out and "/hooks" in out
    assert [h["trustStatus"] for h in hook_states(run_codex).values()] == ["untrusted"]
    assert run_codex.config.read_bytes() == config


def test_install_without_codex_refuses_to_turn_a_trusted_gate_off(tmp_path, run_codex, scripted_api):
    hooks_with(run_codex.hooks, hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2"))
    trust_hooks(run_codex)
    before = run_codex.hooks.read_bytes()
    env = dict(run_codex.env, FAILSECURE_CODEX_BIN="")
    proc = subprocess.run([sys.executable, "-m", "failsecure", "hook", "install", "--host", "codex", str(run_codex.hooks)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 1 and "--codex-bin" in proc.stderr and "/hooks" in proc.stderr
    assert run_codex.hooks.read_bytes() == before
    run_codex()
    assert not os.path.exists(scripted_api.marker)  # the user's gate is still in force


def test_uninstall_restores_the_users_files_and_trust(tmp_path, run_codex, scripted_api):
    hooks_with(run_codex.hooks, hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2"), timeout=3)
    trust_hooks(run_codex)
    original, config = run_codex.hooks.read_bytes(), run_codex.config.read_bytes()
    install(run_codex)
    assert run_codex.hooks.read_bytes() != original and run_codex.config.read_bytes() != config
    proc = failsecure(run_codex, "uninstall", "--codex-bin", run_codex.cli, str(run_codex.hooks))
    assert proc.returncode == 0, proc.stderr
    assert run_codex.hooks.read_bytes() == original
    assert run_codex.config.read_bytes() == config
    run_codex()
    assert not os.path.exists(scripted_api.marker)  # the user's own deny, trusted again
    assert audit_events(run_codex) == []


# ---------------------------------------------------------------- the host's timeout, lowered after install


def _lower_host_timeout(run_codex, seconds):
    document = json.loads(run_codex.hooks.read_text())
    document["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = seconds
    run_codex.hooks.write_text(json.dumps(document, indent=2) + "\n")
    trust_hooks(run_codex)  # the user reviews the edited hook in /hooks


def test_lowered_host_timeout_still_gets_the_runners_deny(tmp_path, run_codex, scripted_api):
    # install: runner 5 s, host 10 s. The user lowers the host's to 2 s: Codex would
    # time the runner out first and fail open; the runner reads it and answers first.
    script = hook_script(tmp_path, "hang.sh", "sleep 30")
    handler, _out = guarded(run_codex, script, timeout=5)
    assert handler["timeout"] == 10
    _lower_host_timeout(run_codex, 2)
    assert_stopped(run_codex, scripted_api, hook_id(script), "timeout")


def test_lowered_host_timeout_leaves_a_quick_hook_alone(tmp_path, run_codex, scripted_api):
    guarded(run_codex, hook_script(tmp_path, "allow.sh", "exit 0"), timeout=5)
    _lower_host_timeout(run_codex, 2)
    assert_ran(run_codex(), scripted_api)
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_codex)] == [("abstain", None)]


# ---------------------------------------------------------------- doctor


def doctor(run_codex):
    env = dict(run_codex.env, FAILSECURE_CODEX_BIN=run_codex.cli)
    proc = subprocess.run([sys.executable, "-m", "failsecure", "doctor", "--json", "--no-self-test", "--no-activate"],
                          capture_output=True, text=True, timeout=180, env=env, cwd=str(run_codex.project))
    return proc.returncode, json.loads(proc.stdout)["codex_hook_trust"]


def test_doctor_flags_an_untrusted_hook(tmp_path, run_codex):
    hooks_with(run_codex.hooks, hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2"))
    code, rows = doctor(run_codex)
    assert code == 1
    assert [(r["status"], r["trusted"]) for r in rows] == [("untrusted", False)]


def test_doctor_passes_a_trusted_hook(tmp_path, run_codex):
    hooks_with(run_codex.hooks, hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2"))
    trust_hooks(run_codex)
    install(run_codex)
    _code, rows = doctor(run_codex)
    assert [(r["status"], r["trusted"]) for r in rows] == [("trusted", True)]
