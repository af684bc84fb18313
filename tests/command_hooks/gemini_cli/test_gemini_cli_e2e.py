"""Gemini CLI end to end: the real CLI (npm @google/gemini-cli 0.61.0), a scripted
model on 127.0.0.1, and the user's ~/.gemini/settings.json rewritten by `failsecure
hook install --host gemini`.

Every failure kind of a BeforeTool hook (crash, hang, kill, missing, junk, bad schema)
stops the run_shell_command call (marker file absent), with the deny reason the model
saw and the audit event naming the failure branch; an allowing hook lets it run. The
premise tests show the same broken hooks fail open without the runner. Two classes
only the real CLI shows: a trusted workspace's `.env` reaching the shell that starts
the runner, and a host timeout lowered after install.
"""

import json
import os
import subprocess
import sys

import pytest

from failsecure.failures import failure_reason
from failsecure.hookid import command_name

from gemini_rig import PINNED, base_settings


def hook_id(command):
    return "command:" + command_name(command)


def settings_with(path, hook_command, timeout=None, **extra):
    handler = {"type": "command", "name": "guard", "command": hook_command}
    if timeout is not None:
        handler["timeout"] = timeout
    handler.update(extra)
    document = dict(base_settings(), hooks={"BeforeTool": [{"matcher": "run_shell_command", "hooks": [handler]}]})
    path.write_text(json.dumps(document, indent=2) + "\n")


def hook_script(tmp_path, name, body):
    script = tmp_path / name
    script.write_text("#!/bin/sh\ncat >/dev/null\n%s\n" % body)
    script.chmod(0o755)
    return str(script)


def failsecure(run_gemini, *args):
    return subprocess.run([sys.executable, "-m", "failsecure", "hook", *args], capture_output=True, text=True, timeout=120, env=run_gemini.env)


def install(run_gemini):
    proc = failsecure(run_gemini, "install", "--host", "gemini", str(run_gemini.settings))
    assert proc.returncode == 0, proc.stderr
    return json.loads(run_gemini.settings.read_text())["hooks"]["BeforeTool"][0]["hooks"][0]


def audit_events(run_gemini):
    if not os.path.exists(run_gemini.audit):
        return []
    with open(run_gemini.audit) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def assert_ran(proc, scripted_api):
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert os.path.exists(scripted_api.marker), "the tool did not run: " + proc.stdout.decode()[-2000:]


def assert_stopped(run_gemini, scripted_api, hid, category, proc=None):
    proc = proc or run_gemini()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert not os.path.exists(scripted_api.marker), "the tool ran"
    responses = json.dumps(scripted_api.function_responses())
    assert failure_reason(hid, category) in responses, responses
    events = audit_events(run_gemini)
    assert [(e["hook"], e["outcome"], e["failure"], e["tool"]) for e in events] == [(hid, "deny", category, "run_shell_command")]
    with open(run_gemini.audit) as fh:
        assert scripted_api.secret not in fh.read()


def test_cli_is_the_pinned_release(gemini_cli):
    proc = subprocess.run([gemini_cli, "--version"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.stdout.strip() == PINNED


# ---------------------------------------------------------------- the premise: bare hooks fail open


@pytest.mark.parametrize("body", ["echo boom >&2; exit 1", "exec sleep 30", "echo not json"], ids=["crash", "hang", "junk"])
def test_premise_bare_broken_hooks_fail_open(tmp_path, run_gemini, scripted_api, body):
    settings_with(run_gemini.settings, hook_script(tmp_path, "broken.sh", body), timeout=1000)
    assert_ran(run_gemini(), scripted_api)


def test_premise_bare_missing_hook_is_blocked_by_the_host(tmp_path, run_gemini, scripted_api):
    # Measured on 0.61.0: bash answers 127 with a message, "any other exit" blocks with
    # that text as the reason. The runner must not be worse (test_missing_hook_stops_the_tool).
    settings_with(run_gemini.settings, str(tmp_path / "gone.sh"))
    run_gemini()
    assert not os.path.exists(scripted_api.marker)


# ---------------------------------------------------------------- every failure kind stops the tool

FAILURES = [
    ("crash", "echo boom >&2; exit 1", "crashed", None),
    ("hang", "sleep 30", "timeout", 1000),
    ("kill", "kill -9 $$", "crashed", None),
    ("junk", "echo not json", "invalid", None),
    ("bad-schema", """echo '{"decision": "Deny"}'""", "invalid", None),
    ("bad-type", """echo '{"decision": "allow", "hookSpecificOutput": {"tool_input": "rm -rf /"}}'""", "invalid", None),
]


@pytest.mark.parametrize("kind,body,category,timeout", FAILURES, ids=[f[0] for f in FAILURES])
def test_failing_hook_stops_the_tool(tmp_path, run_gemini, scripted_api, kind, body, category, timeout):
    script = hook_script(tmp_path, kind + ".sh", body)
    settings_with(run_gemini.settings, script, timeout=timeout)
    handler = install(run_gemini)
    if timeout is not None:
        assert handler["timeout"] == timeout + 5000  # the host's clock: the runner's plus headroom
    assert_stopped(run_gemini, scripted_api, hook_id(script), category)


def test_missing_hook_stops_the_tool(tmp_path, run_gemini, scripted_api):
    gone = str(tmp_path / "gone.sh")
    settings_with(run_gemini.settings, gone)
    install(run_gemini)
    assert_stopped(run_gemini, scripted_api, hook_id(gone), "missing")


def test_allowing_hook_lets_the_tool_run(tmp_path, run_gemini, scripted_api):
    script = hook_script(tmp_path, "allow.sh", "exit 0")
    settings_with(run_gemini.settings, script)
    install(run_gemini)
    assert_ran(run_gemini(), scripted_api)
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [(hook_id(script), "abstain", None)]


def test_explicit_allow_answer_lets_the_tool_run(tmp_path, run_gemini, scripted_api):
    settings_with(run_gemini.settings, hook_script(tmp_path, "ok.sh", """echo '{"decision": "allow"}'"""))
    install(run_gemini)
    assert_ran(run_gemini(), scripted_api)
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [("allow", None)]


def test_hooks_own_deny_reaches_the_model(tmp_path, run_gemini, scripted_api):
    settings_with(run_gemini.settings, hook_script(tmp_path, "deny.sh", "echo 'no shell today' >&2; exit 2"))
    install(run_gemini)
    run_gemini()
    assert not os.path.exists(scripted_api.marker)
    assert "no shell today" in json.dumps(scripted_api.function_responses())
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [("deny", None)]


# ---------------------------------------------------------------- the workspace's .env reaches the hook's shell

# Gemini CLI copies a trusted workspace's .env into the environment its hooks inherit
# (every variable its own environment does not set). Each of these makes a failing
# hook's launch line answer "allow": BASH_ENV is sourced by `bash -c` before the
# command (here it exits 0), SHELLOPTS=noexec makes bash run nothing and exit 0, and
# FAILSECURE_CONFIG would make the project's own config the trusted one.
DOTENV = {
    "BASH_ENV": lambda project: "BASH_ENV=%s\n" % _write(project / "env.sh", "exit 0\n"),
    "SHELLOPTS": lambda project: "SHELLOPTS=noexec\n",
    "FAILSECURE_CONFIG": lambda project: "FAILSECURE_CONFIG=%s\n" % _write(project / "lax.toml", 'on_error = "allow"\n'),
}


def _write(path, text):
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("variable", sorted(DOTENV))
def test_workspace_env_cannot_open_the_gate(tmp_path, run_gemini, scripted_api, variable):
    (run_gemini.project / ".env").write_text(DOTENV[variable](run_gemini.project))
    script = hook_script(tmp_path, "crash.sh", "exit 1")
    settings_with(run_gemini.settings, script)
    handler = install(run_gemini)
    assert handler["env"][variable] in ("", run_gemini.env.get(variable, ""))
    assert_stopped(run_gemini, scripted_api, hook_id(script), "crashed")


@pytest.mark.parametrize("variable", sorted(DOTENV))
def test_workspace_env_leaves_an_allowing_hook_alone(tmp_path, run_gemini, scripted_api, variable):
    (run_gemini.project / ".env").write_text(DOTENV[variable](run_gemini.project))
    script = hook_script(tmp_path, "allow.sh", "exit 0")
    settings_with(run_gemini.settings, script)
    install(run_gemini)
    proc = run_gemini()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    # The tool itself runs in Gemini's own shell, which the same .env reaches (with
    # BASH_ENV or SHELLOPTS it then does nothing): the hook let it run.
    results = [json.loads(line) for line in proc.stdout.decode().splitlines() if '"tool_result"' in line]
    assert [r["status"] for r in results] == ["success"], proc.stdout.decode()[-2000:]
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [(hook_id(script), "abstain", None)]


def test_users_own_hook_env_is_kept(tmp_path, run_gemini, scripted_api):
    script = hook_script(tmp_path, "env.sh", '[ "$GUARD_MODE" = strict ] || exit 1')
    settings_with(run_gemini.settings, script, env={"GUARD_MODE": "strict"})
    handler = install(run_gemini)
    assert handler["env"]["GUARD_MODE"] == "strict"
    assert_ran(run_gemini(), scripted_api)


# ---------------------------------------------------------------- the host's timeout, lowered after install


def _lower_host_timeout(run_gemini, milliseconds):
    document = json.loads(run_gemini.settings.read_text())
    document["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] = milliseconds
    run_gemini.settings.write_text(json.dumps(document, indent=2) + "\n")


def test_lowered_host_timeout_still_gets_the_runners_deny(tmp_path, run_gemini, scripted_api):
    # install: runner 5 s, host 10 s. The user lowers the host's to 2 s: Gemini would
    # time the runner out first and fail open; the runner reads it and answers first.
    script = hook_script(tmp_path, "hang.sh", "sleep 30")
    settings_with(run_gemini.settings, script, timeout=5000)
    assert install(run_gemini)["timeout"] == 10000
    _lower_host_timeout(run_gemini, 2000)
    assert_stopped(run_gemini, scripted_api, hook_id(script), "timeout")


def test_lowered_host_timeout_leaves_a_quick_hook_alone(tmp_path, run_gemini, scripted_api):
    script = hook_script(tmp_path, "allow.sh", "exit 0")
    settings_with(run_gemini.settings, script, timeout=5000)
    install(run_gemini)
    _lower_host_timeout(run_gemini, 2000)
    assert_ran(run_gemini(), scripted_api)
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [("abstain", None)]


# ---------------------------------------------------------------- uninstall


@pytest.mark.parametrize("extra", [{}, {"env": {"GUARD_MODE": "strict"}}], ids=["no-env", "own-env"])
def test_uninstall_restores_the_users_file(tmp_path, run_gemini, scripted_api, extra):
    settings_with(run_gemini.settings, hook_script(tmp_path, "allow.sh", "exit 0"), timeout=3000, **extra)
    original = run_gemini.settings.read_bytes()
    install(run_gemini)
    assert run_gemini.settings.read_bytes() != original
    proc = failsecure(run_gemini, "uninstall", str(run_gemini.settings))
    assert proc.returncode == 0, proc.stderr
    assert run_gemini.settings.read_bytes() == original
    assert_ran(run_gemini(), scripted_api)
    assert audit_events(run_gemini) == []  # the bare hook again: no runner
