"""The runner's hardening: its last words when the host terminates it, one canonical
deny shape per host, `hook install` wrapping every hook it does not itself recognise,
and hook ids that never carry a command line.

Every deny asserts the exact bytes the host needs and the failure branch the audit
event names; every deny has an allow twin.
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest
from cmdhook_helpers import SECRET, expected_deny, hook_id, payload_for

from failsecure.runner import settings as settings
from failsecure.failures import failure_reason

PROTOCOLS = ("claude", "gemini", "codex", "kiro")
HOOK = "command:guard"


def event_of(protocol):
    return "BeforeTool" if protocol == "gemini" else "PreToolUse"


def audit_events(path):
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_for(predicate, what, limit=10):
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for " + what)
        time.sleep(0.02)


@pytest.fixture
def runner(tmp_path):
    """runner(protocol, argv) -> Popen of the runner, launched as `hook install` launches it."""
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "%s"\n' % audit)
    procs = []

    def start(protocol, argv, timeout=30):
        line = settings.launch_argv(sys.executable, settings.runner_path()) + [
            "run", "--protocol", protocol, "--timeout", str(timeout), "--hook-id", "guard", "--config", str(config), "--",
        ] + list(argv)
        proc = subprocess.Popen(
            line,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if k != "FAILSECURE_CONFIG"},
            cwd=str(tmp_path),
        )
        proc.audit = str(audit)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if not pipe.closed:
                pipe.close()


def finish(proc, timeout=10):
    """-> (stdout, stderr) of a runner whose stdin the test already closed."""
    proc.wait(timeout=timeout)
    return proc.stdout.read(), proc.stderr.read()


# ---------------------------------------------------------------- last words


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_terminated_runner_says_the_protocols_deny_and_kills_the_hook_group(runner, tmp_path, protocol, signame):
    pidfile = tmp_path / "hook.pid"
    proc = runner(protocol, ["/bin/sh", "-c", "echo $$ > %s; exec sleep 30" % pidfile])
    proc.stdin.write(payload_for(protocol))
    proc.stdin.close()
    wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "the hook to start")
    proc.send_signal(getattr(signal, signame))
    out, err = finish(proc)
    reason = failure_reason(HOOK, "crashed")
    assert (out.decode(), err.decode(), proc.returncode) == expected_deny(protocol, reason, event_of(protocol))
    wait_for(lambda: not alive(int(pidfile.read_text())), "the hook's group to die", limit=3)
    [event] = audit_events(proc.audit)
    assert (event["hook"], event["outcome"], event["failure"]) == (HOOK, "deny", "crashed")
    assert SECRET not in out.decode() + err.decode()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_runner_left_alone_answers_for_the_same_hook(runner, tmp_path, protocol):
    # twin: the same hook, not terminated, is the hook's own no-opinion answer
    pidfile = tmp_path / "hook.pid"
    proc = runner(protocol, ["/bin/sh", "-c", "echo $$ > %s; exec sleep 0.2" % pidfile])
    out, err = proc.communicate(payload_for(protocol), timeout=10)
    assert (out, err, proc.returncode) == (b"", b"", 0)
    [event] = audit_events(proc.audit)
    assert (event["hook"], event["outcome"], event["failure"]) == (HOOK, "abstain", None)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_terminated_while_reading_the_payload_still_denies(runner, protocol):
    # The host has not finished writing the payload (stdin open) when it terminates
    # the runner: no hook runs, and the host still reads a deny, not a death by signal.
    proc = runner(protocol, ["/bin/true"])
    proc.stdin.write(payload_for(protocol)[:10])
    proc.stdin.flush()
    time.sleep(0.3)  # let the runner start and block on stdin
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    reason = failure_reason(HOOK, "crashed")
    assert (out.decode(), err.decode(), proc.returncode) == expected_deny(protocol, reason, None)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_payload_written_in_full_twin_allows(runner, protocol):
    proc = runner(protocol, ["/bin/true"])
    proc.stdin.write(payload_for(protocol)[:10])
    proc.stdin.flush()
    time.sleep(0.3)
    out, err = proc.communicate(payload_for(protocol)[10:], timeout=10)
    assert (out, err, proc.returncode) == (b"", b"", 0)


# ---------------------------------------------------------------- one canonical deny per host


def json_hook(obj):
    return ["/bin/sh", "-c", "cat >/dev/null; printf '%%s\\n' '%s'" % json.dumps(obj)]


@pytest.mark.parametrize("protocol", ("claude", "codex", "gemini"))
@pytest.mark.parametrize("stop_reason", ["stop now", None])
def test_continue_false_is_normalised_to_the_host_deny(run_hook, protocol, stop_reason):
    # Codex does not honour {"continue": false}: passed on raw, the tool would run.
    answer = {"continue": False}
    if stop_reason:
        answer["stopReason"] = stop_reason
    run = run_hook(protocol, json_hook(answer), timeout=5)
    reason = stop_reason or "failsecure: hook 'command:guard' denied"
    assert run.triple == expected_deny(protocol, reason, event_of(protocol))
    assert (run.event["hook"], run.event["outcome"], run.event["failure"]) == (HOOK, "deny", None)


@pytest.mark.parametrize("protocol", ("claude", "codex", "gemini"))
def test_continue_true_twin_passes_through(run_hook, protocol):
    run = run_hook(protocol, json_hook({"continue": True}), timeout=5)
    assert run.triple == (json.dumps({"continue": True}) + "\n", "", 0)
    assert (run.event["outcome"], run.event["failure"]) == ("abstain", None)


@pytest.mark.parametrize("protocol", ("claude", "codex", "gemini"))
def test_a_deny_with_extra_keys_is_reemitted_bare(run_hook, protocol):
    extra = {"decision": "block", "reason": "no", "systemMessage": "see the policy"}
    if protocol == "gemini":
        extra["decision"] = "deny"
    run = run_hook(protocol, json_hook(extra), timeout=5)
    assert run.triple == expected_deny(protocol, "no", event_of(protocol))
    assert (run.event["outcome"], run.event["failure"]) == ("deny", None)


# ---------------------------------------------------------------- hook install wraps every hook


def settings_file(tmp_path, handler, name="settings.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}}, indent=2) + "\n")
    return path


def first_handler(path):
    return json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]


def run_handler(handler, protocol="claude"):
    if isinstance(handler.get("args"), list):
        argv = [handler["command"]] + handler["args"]
    else:
        argv = ["/bin/sh", "-c", handler["command"]]
    proc = subprocess.run(argv, input=payload_for(protocol), capture_output=True, timeout=30)
    return proc.stdout.decode(), proc.stderr.decode(), proc.returncode


def gate_script(tmp_path, code):
    script = tmp_path / "gate"
    script.write_text("#!/bin/sh\ncat >/dev/null\nexit %d\n" % code)
    script.chmod(0o755)
    return str(script)


LOOKALIKES = [
    # a hook whose own words look like a runner invocation
    "{gate} run --protocol claude --timeout 5 --hook-id x --record abc -- true",
    "{gate} run --protocol kiro --record yes",
    "R=/usr/bin/python3; F=/tmp/failsecure/command.py; {gate} run --protocol claude --record x -- y",
]


@pytest.mark.parametrize("template", LOOKALIKES)
def test_a_hook_that_looks_wrapped_is_wrapped(tmp_path, template):
    line = template.format(gate=gate_script(tmp_path, 1))
    path = settings_file(tmp_path, {"type": "command", "command": line})
    report = settings.wrap_settings(str(path), "claude", on_failure="omit")
    assert [e.hook for e in report.wrapped] == [hook_id(line)]
    handler = first_handler(path)
    assert handler["command"] != line
    assert run_handler(handler) == expected_deny("claude", failure_reason(hook_id(line), "crashed"))
    # twin: the same lookalike whose gate allows runs, wrapped, to an allow
    gate_script(tmp_path, 0)
    assert run_handler(handler) == ("", "", 0)
    # and what install itself wrote is recognised: a second install leaves it alone
    again = settings.wrap_settings(str(path), "claude", on_failure="omit")
    assert again.wrapped == [] and [e.why for e in again.left] == ["already runs under failsecure"]


def test_an_exec_form_hook_with_record_in_its_args_is_wrapped(tmp_path):
    gate = gate_script(tmp_path, 1)
    path = settings_file(tmp_path, {"type": "command", "command": gate, "args": ["--record", "x", "run", "--protocol"]})
    report = settings.wrap_settings(str(path), "claude", on_failure="omit")
    assert len(report.wrapped) == 1
    handler = first_handler(path)
    assert handler["command"] == sys.executable
    reason = failure_reason(hook_id([gate, "--record", "x", "run", "--protocol"]), "crashed")
    assert run_handler(handler) == expected_deny("claude", reason)
    gate_script(tmp_path, 0)  # twin
    assert run_handler(handler) == ("", "", 0)
    assert settings.wrap_settings(str(path), "claude", on_failure="omit").wrapped == []


def test_install_reports_every_hook_wrapped_and_left_alone(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}, {"type": "prompt", "prompt": "ok?"}]},
                        {"hooks": [{"type": "command", "command": "ps.ps1", "shell": "powershell"}]},
                    ],
                    "PostToolUse": [{"hooks": [{"type": "command", "command": "logger done"}]}],
                }
            },
            indent=2,
        )
    )
    cli = [sys.executable, "-m", "failsecure", "hook", "install", "--host", "claude", "--on-failure", "omit", str(path)]
    first = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "failsecure: %s: wrapped 1 hook(s), left 3 alone" % path
    assert "  wrapped      hooks.PreToolUse[0].hooks[0]  %s" % hook_id("guard.sh") in lines
    assert "  left alone   hooks.PreToolUse[0].hooks[1]  -: type 'prompt' is not a command hook" in lines
    assert any(line.startswith("  left alone   hooks.PreToolUse[1].hooks[0]  %s: a PowerShell hook" % hook_id("ps.ps1")) for line in lines)
    assert "  left alone   hooks.PostToolUse[0].hooks[0]  %s: PostToolUse does not gate a tool call" % hook_id("logger done") in lines
    second = subprocess.run(cli, capture_output=True, text=True, timeout=60)
    assert "  left alone   hooks.PreToolUse[0].hooks[0]  %s: already runs under failsecure" % hook_id("guard.sh") in second.stdout.splitlines()


# ---------------------------------------------------------------- hook ids never carry the command line


def test_install_derives_ids_from_hookid_without_the_command_line(tmp_path):
    line = "bash -c 'check --token=%s'" % SECRET
    path = settings_file(tmp_path, {"type": "command", "command": line})
    report = settings.wrap_settings(str(path), "claude", on_failure="omit")
    assert report.ids == [hook_id(line)] and report.ids[0].startswith("command:bash#")
    handler = first_handler(path)
    hid = shlex.split(handler["command"].split(" --hook-id ")[1])[0]
    assert "command:" + hid == hook_id(line) and SECRET not in hid
    # the deny the host shows names the id, never the token
    out, err, code = run_handler(handler)
    assert code == 2 and SECRET not in out + err
    assert json.loads(out)["reason"] == failure_reason(hook_id(line), "missing")


def test_runner_derives_the_id_from_the_command(run_hook):
    run = run_hook("kiro", ["/bin/sh", "-c", "exit 1", "--token", SECRET], hook_id=None, timeout=5)
    expected = hook_id(["/bin/sh", "-c", "exit 1", "--token", SECRET])
    assert expected.startswith("command:sh#")
    assert run.triple == ("", failure_reason(expected, "crashed") + "\n", 2)
    assert run.event["hook"] == expected and run.event["failure"] == "crashed"
    other = run_hook("kiro", ["/bin/sh", "-c", "exit 1", "--token", "other"], hook_id=None, timeout=5)
    assert other.event["hook"] != expected  # another command line, another hook


def test_an_explicit_hook_id_stays_as_given(run_hook):
    run = run_hook("kiro", ["/bin/sh", "-c", "exit 1", SECRET], hook_id="my-gate", timeout=5)
    assert run.triple == ("", failure_reason("command:my-gate", "crashed") + "\n", 2)
    twin = run_hook("kiro", ["/bin/sh", "-c", "exit 0", SECRET], hook_id="my-gate", timeout=5)
    assert twin.triple == ("", "", 0) and twin.event["hook"] == "command:my-gate"
