"""The command-hook runner, per host protocol, with real subprocess hooks.

Every failure asserts the exact stdout / stderr / exit code the host needs to
block AND which failure branch ran (the audit event's category); every one has
an allow twin that differs only in not failing, so a runner that denies
everything cannot pass.
"""

import json
import time

import pytest
from cmdhook_helpers import SECRET, expected_deny, hook_id, payload_for

from failsecure.runner import process, settings
from failsecure.failures import failure_reason

PROTOCOLS = ("claude", "gemini", "codex", "kiro")
HOOK = "command:guard"


def reason(category, hook=HOOK):
    return failure_reason(hook, category)


def sh(script):
    return ["/bin/sh", "-c", script]


def alive(pid):
    """True while pid runs (a killed orphan may linger as a zombie until init reaps it)."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def assert_dead_soon(pid):
    deadline = time.monotonic() + 2
    while alive(pid):
        if time.monotonic() > deadline:
            pytest.fail("the hook's grandchild %d survived" % pid)
        time.sleep(0.02)


def assert_denied(run, protocol, category, event=None):
    event = event or ("BeforeTool" if protocol == "gemini" else "PreToolUse")
    assert run.triple == expected_deny(protocol, reason(category), event)
    audit = run.event
    assert (audit["hook"], audit["outcome"], audit["failure"]) == (HOOK, "deny", category)
    assert audit["outcomes"] == [
        {"hook": HOOK, "outcome": "abstain", "failure": category, "exception_type": None, "elapsed_ms": audit["elapsed_ms"]}
    ]
    assert audit["tool"] in ("Bash", "run_shell_command") and audit["call_id"] == "toolu_test_1"
    with open(run.audit_path) as fh:
        assert SECRET not in fh.read()
    assert SECRET not in run.stdout + run.stderr


def assert_passed(run, stdout="", action="abstain"):
    assert run.triple == (stdout, "", 0)
    audit = run.event
    assert (audit["hook"], audit["outcome"], audit["failure"]) == (HOOK, action, None)


def test_reason_text_is_the_cores():
    from failsecure.verdict import Failure, failure_reason

    for category in Failure:
        assert failure_reason("command:x", category.value) == failure_reason("command:x", category)


# ---------------------------------------------------------------- process failures, every protocol


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timeout_denies(run_hook, protocol):
    started = time.monotonic()
    run = run_hook(protocol, sh("sleep 5"), timeout=0.3)
    assert time.monotonic() - started < 3
    assert_denied(run, protocol, "timeout")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timeout_twin_allows(run_hook, protocol):
    assert_passed(run_hook(protocol, sh("sleep 0.05"), timeout=2))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_missing_binary_denies(run_hook, protocol, tmp_path):
    assert_denied(run_hook(protocol, [str(tmp_path / "no-such-hook")]), protocol, "missing")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_missing_binary_twin_allows(run_hook, protocol, tmp_path):
    hook = tmp_path / "hook"
    hook.write_text("#!/bin/sh\ncat >/dev/null\n")
    hook.chmod(0o755)
    assert_passed(run_hook(protocol, [str(hook)]))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_not_executable_denies(run_hook, protocol, tmp_path):
    hook = tmp_path / "hook"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o644)
    assert_denied(run_hook(protocol, [str(hook)]), protocol, "missing")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_shell_command_not_found_denies(run_hook, protocol):
    # What a host's `sh -c` reports for a missing hook script: 127.
    assert_denied(run_hook(protocol, sh("/no/such/hook-script")), protocol, "missing")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_shell_command_found_twin_allows(run_hook, protocol):
    assert_passed(run_hook(protocol, sh("/bin/true")))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("code", [1, 3, 255])
def test_crash_exit_code_denies(run_hook, protocol, code):
    run = run_hook(protocol, sh("echo 'Traceback: %s' >&2; exit %d" % (SECRET, code)))
    assert_denied(run, protocol, "crashed")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_crash_twin_exit_zero_allows(run_hook, protocol):
    assert_passed(run_hook(protocol, sh("exit 0")))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_signal_denies(run_hook, protocol):
    assert_denied(run_hook(protocol, sh("kill -9 $$")), protocol, "crashed")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_signal_twin_allows(run_hook, protocol):
    assert_passed(run_hook(protocol, sh("kill -0 $$")))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_oversized_stdout_denies(run_hook, protocol):
    size = process.STDOUT_CAP + 1
    assert_denied(run_hook(protocol, sh("head -c %d /dev/zero | tr '\\0' ' '" % size)), protocol, "invalid")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_oversized_stdout_twin_allows(run_hook, protocol):
    run = run_hook(protocol, sh("head -c 4096 /dev/zero | tr '\\0' ' '"))
    assert_passed(run, stdout=" " * 4096)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_timeout_kills_the_whole_process_group(run_hook, protocol, tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    run = run_hook(protocol, sh("sleep 30 & echo $! > %s; wait" % pidfile), timeout=0.3)
    assert_denied(run, protocol, "timeout")
    assert_dead_soon(int(pidfile.read_text()))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_exited_hook_leaves_no_orphans_and_does_not_wait_for_them(run_hook, protocol, tmp_path):
    # The allow twin of the group kill: the hook itself answers in time.
    pidfile = tmp_path / "grandchild.pid"
    started = time.monotonic()
    run = run_hook(protocol, sh("sleep 30 & echo $! > %s; exit 0" % pidfile), timeout=5)
    assert time.monotonic() - started < 3
    assert_passed(run)
    assert_dead_soon(int(pidfile.read_text()))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_escaped_daemon_holding_stdout_does_not_turn_an_answer_into_a_timeout(run_hook, protocol, tmp_path):
    # A daemon in its own session keeps the stdout pipe open after the hook exited.
    pidfile = tmp_path / "daemon.pid"
    started = time.monotonic()
    # the hook exits once the daemon has escaped (a fixed sleep raced on a loaded machine)
    script = "setsid sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 30' & while [ ! -s %s ]; do sleep 0.01; done; exit 0"
    run = run_hook(protocol, sh(script % ((pidfile,) * 4)), timeout=5)
    assert time.monotonic() - started < 3
    assert_passed(run)
    import os
    import signal

    os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_terminated_runner_takes_the_hook_group_along(tmp_path):
    import signal
    import subprocess
    import sys

    pidfile = tmp_path / "hook.pid"
    line = settings.launch_argv(sys.executable, settings.runner_path()) + [
        "run", "--protocol", "claude", "--timeout", "30", "--", "/bin/sh", "-c", "echo $$ > %s; exec sleep 30" % pidfile,
    ]
    proc = subprocess.Popen(line, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(payload_for("claude"))
    proc.stdin.close()
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 2
    assert_dead_soon(int(pidfile.read_text()))
    proc.stdout.close()
    proc.stderr.close()


# ---------------------------------------------------------------- exit 2: the hook's own deny


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_exit_two_is_a_deny_in_the_host_shape(run_hook, protocol):
    run = run_hook(protocol, sh("echo 'rm -rf is not allowed' >&2; exit 2"))
    event = "BeforeTool" if protocol == "gemini" else "PreToolUse"
    assert run.triple == expected_deny(protocol, "rm -rf is not allowed", event)
    assert (run.event["outcome"], run.event["failure"]) == ("deny", None)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_exit_two_with_empty_stderr_still_gets_a_reason(run_hook, protocol):
    # Codex treats exit 2 with empty stderr as a (fail-open) failure.
    run = run_hook(protocol, sh("exit 2"))
    event = "BeforeTool" if protocol == "gemini" else "PreToolUse"
    assert run.triple == expected_deny(protocol, "failsecure: hook 'command:guard' denied", event)


def test_gemini_exit_two_with_an_allow_on_stdout_still_denies(run_hook):
    # Gemini reads JSON on stdout whatever the exit code; the runner answers the deny.
    run = run_hook("gemini", sh("""echo '{"decision":"allow"}'; echo no >&2; exit 2"""))
    assert run.triple == expected_deny("gemini", "no", "BeforeTool")


# ---------------------------------------------------------------- answers the host would not honour

CLAUDE_LIKE = ("claude", "codex")


def json_hook(obj):
    return sh("cat >/dev/null; printf '%%s\\n' '%s'" % json.dumps(obj))


JUNK = {
    "not-json": (sh("echo 'all good'"), sh("printf ''")),
    "broken-json": (sh("echo '{\"decision\": '"), json_hook({})),
    "not-an-object": (json_hook(["approve"]), json_hook({"continue": True})),
    "nan": (sh("echo '{\"continue\": NaN}'"), json_hook({"continue": True})),
    "trailing-data": (sh("echo '{} {}'"), json_hook({})),
}


@pytest.mark.parametrize("protocol", ("claude", "codex", "gemini"))
@pytest.mark.parametrize("case", sorted(JUNK))
def test_junk_stdout_denies_with_twin(run_hook, protocol, case):
    junk, twin = JUNK[case]
    assert_denied(run_hook(protocol, junk), protocol, "invalid")
    run = run_hook(protocol, twin)
    assert run.code == 0 and run.stderr == "" and run.event["failure"] is None


def test_kiro_stdout_is_not_a_verdict(run_hook):
    # kiro_crew: only the exit code decides; stdout passes through untouched.
    assert_passed(run_hook("kiro", sh("echo 'all good'")), stdout="all good\n")


CLAUDE_JUNK = [
    # (label, junk answer, twin answer that the host honours)
    ("async", {"async": True}, {"continue": True}),
    ("unknown-key", {"decision": "approve", "verdict": "deny"}, {"decision": "approve"}),
    ("unknown-decision", {"decision": "Deny"}, {"decision": "approve"}),
    ("wrong-type", {"reason": 5}, {"reason": "five"}),
    (
        "wrong-event",
        {"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "allow"}},
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
    ),
    (
        "no-event",
        {"hookSpecificOutput": {"permissionDecision": "allow"}},
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
    ),
    (
        "unknown-permission",
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "Allow"}},
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}},
    ),
    ("specific-not-object", {"hookSpecificOutput": "deny"}, {"systemMessage": "deny"}),
]


@pytest.mark.parametrize("protocol", CLAUDE_LIKE)
@pytest.mark.parametrize("label,junk,twin", CLAUDE_JUNK, ids=[c[0] for c in CLAUDE_JUNK])
def test_claude_like_answers_the_host_would_not_honour(run_hook, protocol, label, junk, twin):
    assert_denied(run_hook(protocol, json_hook(junk)), protocol, "invalid")
    if protocol == "codex" and twin.get("hookSpecificOutput", {}).get("permissionDecision") == "ask":
        twin = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}  # Codex cannot ask: ask denies
    run = run_hook(protocol, json_hook(twin))
    assert run.code == 0 and run.stdout == json.dumps(twin) + "\n"
    assert run.event["failure"] is None


def test_codex_drops_a_deny_with_additional_context_so_the_runner_denies(run_hook):
    junk = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "additionalContext": "x"}}
    assert_denied(run_hook("codex", json_hook(junk)), "codex", "invalid")
    # twin: Claude Code honours additionalContext, so there it is the hook's own deny
    run = run_hook(
        "claude",
        json_hook(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "no",
                    "additionalContext": "x",
                }
            }
        ),
    )
    assert run.triple == expected_deny("claude", "no")
    assert (run.event["outcome"], run.event["failure"]) == ("deny", None)


GEMINI_JUNK = [
    ("unknown-decision", {"decision": "approve"}, {"decision": "allow"}),
    ("unknown-key", {"decision": "allow", "permissionDecision": "deny"}, {"decision": "allow"}),
    (
        "wrong-event",
        {"decision": "allow", "hookSpecificOutput": {"hookEventName": "AfterTool"}},
        {"decision": "allow", "hookSpecificOutput": {"hookEventName": "BeforeTool"}},
    ),
    ("async", {"async": True}, {"continue": True}),
]


@pytest.mark.parametrize("label,junk,twin", GEMINI_JUNK, ids=[c[0] for c in GEMINI_JUNK])
def test_gemini_answers_the_host_would_not_honour(run_hook, label, junk, twin):
    assert_denied(run_hook("gemini", json_hook(junk)), "gemini", "invalid")
    run = run_hook("gemini", json_hook(twin))
    assert run.code == 0 and run.stdout == json.dumps(twin) + "\n" and run.event["failure"] is None


# ---------------------------------------------------------------- valid answers: pass-through / normalised deny


@pytest.mark.parametrize(
    "protocol,answer,action",
    [
        ("claude", {"decision": "approve", "reason": "ok"}, "allow"),
        ("claude", {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}, "ask"),
        ("claude", {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer"}}, "abstain"),
        ("claude", {"suppressOutput": True}, "abstain"),
        ("codex", {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}, "allow"),
        ("gemini", {"decision": "allow", "systemMessage": "fine"}, "allow"),
        ("gemini", {"decision": "ask"}, "ask"),
    ],
)
def test_valid_answers_pass_through_unchanged(run_hook, protocol, answer, action):
    run = run_hook(protocol, sh("cat >/dev/null; printf '%%s' '%s'; echo note >&2" % json.dumps(answer)))
    assert run.triple == (json.dumps(answer), "note\n", 0)
    assert (run.event["outcome"], run.event["failure"]) == (action, None)


@pytest.mark.parametrize(
    "protocol,answer",
    [
        ("claude", {"decision": "block", "reason": "nope"}),
        ("claude", {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "nope"}}),
        ("codex", {"decision": "block", "reason": "nope"}),
        ("gemini", {"decision": "deny", "reason": "nope"}),
        ("gemini", {"decision": "block", "reason": "nope"}),
    ],
)
def test_json_denies_are_normalised_to_the_host_deny(run_hook, protocol, answer):
    run = run_hook(protocol, json_hook(answer))
    event = "BeforeTool" if protocol == "gemini" else "PreToolUse"
    assert run.triple == expected_deny(protocol, "nope", event)
    assert (run.event["outcome"], run.event["failure"]) == ("deny", None)


def test_hook_receives_the_payload_unchanged(run_hook, tmp_path):
    seen = tmp_path / "seen.json"
    big = payload_for("claude", padding="x" * 300_000)  # larger than a pipe buffer
    run = run_hook("claude", sh("cat > %s" % seen), payload=big)
    assert_passed(run)
    assert seen.read_bytes() == big


def test_hook_that_ignores_a_large_payload_still_answers(run_hook):
    run = run_hook("claude", sh("exit 0"), payload=payload_for("claude", padding="x" * 300_000))
    assert_passed(run)


# ---------------------------------------------------------------- payload problems


def test_unparseable_payload_is_treated_as_gating(run_hook):
    run = run_hook("claude", sh("exit 1"), payload=b"not json")
    assert run.triple == expected_deny("claude", reason("crashed"), event=None)
    twin = run_hook("claude", sh("exit 0"), payload=b"not json")
    assert twin.triple == ("", "", 0)


# ---------------------------------------------------------------- policy: advisory events and hooks


@pytest.mark.parametrize("protocol,event", [("claude", "PostToolUse"), ("gemini", "AfterTool"), ("codex", "Stop"), ("kiro", "AgentSpawn")])
def test_non_gating_events_are_advisory(run_hook, protocol, event):
    run = run_hook(protocol, sh("sleep 5"), timeout=0.3, payload=payload_for(protocol, event=event))
    assert run.triple == ("", "", 0)
    assert (run.event["outcome"], run.event["failure"]) == ("abstain", "timeout")
    # twin: the same event's answer goes through untouched, exit 2 included
    run = run_hook(protocol, sh("echo out; echo err >&2; exit 2"), payload=payload_for(protocol, event=event))
    assert run.triple == ("out\n", "err\n", 2)


def test_on_error_allow_makes_a_hook_advisory(run_hook, config_file, tmp_path):
    audit = tmp_path / "audit.jsonl"
    config = '[audit]\npath = "%s"\n[hooks."command:guard"]\non_error = "allow"\n' % audit
    run = run_hook("claude", sh("exit 1"), config=config)
    assert run.triple == ("", "", 0)
    assert (run.event["outcome"], run.event["failure"]) == ("abstain", "crashed")
    # twin: an advisory hook's explicit deny is still a deny
    run = run_hook("claude", sh("echo no >&2; exit 2"), config=config)
    assert run.triple == expected_deny("claude", "no")


def test_observer_role_never_decides(run_hook, tmp_path):
    audit = tmp_path / "audit.jsonl"
    config = '[audit]\npath = "%s"\n[hooks."command:guard"]\nrole = "observer"\n' % audit
    run = run_hook("claude", sh("echo no >&2; exit 2"), config=config)
    assert run.triple == ("", "", 0)
    assert run.event["outcome"] == "abstain" and run.event["outcomes"][0]["outcome"] == "deny"


def test_invalid_config_denies_every_gated_call(run_hook):
    run = run_hook("claude", sh("exit 0"), config="on_error = 'maybe'\n")
    assert run.triple == expected_deny("claude", "failsecure: hook 'failsecure:config' failed closed (invalid)")
    twin = run_hook("claude", sh("exit 0"), config="on_error = 'deny'\n")
    assert twin.triple == ("", "", 0)


def test_config_timeout_for_the_hook_applies_without_timeout_flag(run_hook, tmp_path):
    audit = tmp_path / "audit.jsonl"
    config = '[audit]\npath = "%s"\n[hooks."command:guard"]\ntimeout = 0.3\n' % audit
    assert_denied(run_hook("claude", sh("sleep 5"), timeout=None, config=config), "claude", "timeout")
    assert_passed(run_hook("claude", sh("sleep 0.05"), timeout=None, config=config))


def test_config_timeout_can_only_shorten_the_installed_one(run_hook, tmp_path):
    audit = tmp_path / "audit.jsonl"
    config = '[audit]\npath = "%s"\n[hooks."command:guard"]\ntimeout = 60\n' % audit
    started = time.monotonic()
    assert_denied(run_hook("claude", sh("sleep 5"), timeout=0.3, config=config), "claude", "timeout")
    assert time.monotonic() - started < 3


def test_global_timeout_applies_when_no_flag(run_hook, tmp_path):
    audit = tmp_path / "audit.jsonl"
    config = 'timeout = 0.3\n[audit]\npath = "%s"\n' % audit
    assert_denied(run_hook("kiro", sh("sleep 5"), timeout=None, config=config), "kiro", "timeout")


def test_default_hook_id_is_the_command_name(run_hook, tmp_path):
    run = run_hook("kiro", sh("exit 1"), hook_id=None)
    assert run.triple == ("", failure_reason(hook_id(sh("exit 1")), "crashed") + "\n", 2)
    assert run.event["hook"] == hook_id(sh("exit 1"))


# ---------------------------------------------------------------- the runner's own command line


@pytest.mark.parametrize(
    "args,protocol",
    [
        (["run", "--protocol", "nope", "--", "true"], None),
        (["run", "--protocol", "claude", "--timeout", "-1", "--", "true"], "claude"),
        (["run", "--protocol", "gemini", "--bogus", "--", "true"], "gemini"),
        (["run", "--protocol=codex", "--"], "codex"),
        (["run", "--protocol", "kiro", "--"], "kiro"),
    ],
)
def test_usage_errors_are_the_protocols_deny(args, protocol):
    """A broken launch line denies in the host's own shape (unknown protocol: a deny every host honours)."""
    import subprocess
    import sys

    proc = subprocess.run(
        settings.launch_argv(sys.executable, settings.runner_path()) + args, input=b"{}", capture_output=True, timeout=30
    )
    why = proc.stderr.decode().rstrip("\n")
    assert why.startswith("failsecure: hook runner usage error (") and "\n" not in why
    if protocol is None:
        assert (proc.stdout, proc.returncode) == ((json.dumps({"decision": "block", "reason": why}, separators=(",", ":")) + "\n").encode(), 2)
    else:
        assert (proc.stdout.decode(), proc.stderr.decode(), proc.returncode) == expected_deny(protocol, why, event=None)


def test_usage_error_twin_runs_the_hook():
    import subprocess
    import sys

    proc = subprocess.run(
        settings.launch_argv(sys.executable, settings.runner_path()) + ["run", "--protocol", "codex", "--", "true"],
        input=b"{}", capture_output=True, timeout=30,
    )
    assert (proc.stdout, proc.stderr, proc.returncode) == (b"", b"", 0)


def test_runner_as_a_script_and_through_the_cli(tmp_path):
    import subprocess
    import sys

    script = [sys.executable, "-I", "-S", settings.runner_path()]
    cli = [sys.executable, "-m", "failsecure", "hook"]
    for prefix in (script, cli):
        deny = subprocess.run(prefix + ["run", "--protocol", "kiro", "--hook-id", "g", "--", "false"], input=b"{}", capture_output=True, timeout=30)
        assert (deny.returncode, deny.stderr) == (2, b"failsecure: hook 'command:g' failed closed (crashed)\n")
        allow = subprocess.run(prefix + ["run", "--protocol", "kiro", "--hook-id", "g", "--", "true"], input=b"{}", capture_output=True, timeout=30)
        assert (allow.returncode, allow.stdout, allow.stderr) == (0, b"", b"")


# ---------------------------------------------------------------- kernels without pidfd_open


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no-pidfd"])
def test_execute_with_and_without_pidfd(monkeypatch, pidfd):
    import os

    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    done = process.execute(["/bin/sh", "-c", "cat; echo err >&2; exit 3"], b"payload", 5)
    assert (done.status, done.stdout, done.stderr, done.timed_out) == (3, b"payload", b"err\n", False)
    started = time.monotonic()
    hung = process.execute(["/bin/sh", "-c", "exec sleep 30"], b"", 0.3)
    assert hung.timed_out and hung.status == -9 and time.monotonic() - started < 3
    missing = process.execute(["/no/such/hook"], b"", 1)
    assert missing.spawn_errno is not None
