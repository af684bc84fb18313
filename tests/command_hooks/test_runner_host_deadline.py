"""The runner's whole run, audit included, ends before the host's own clock.

Hosts read a command hook's answer when it EXITS (Claude Code, Codex, Gemini CLI) and
fail open when their timeout passes first. The runner writes its deny, then appends the
audit event, waiting up to decision.AUDIT_BOUND (1 s) for the audit file's lock. With
a host timeout of a few seconds the runner's margin below it is 0.5 s
(protocols.host_margin), so a held lock pushed the exit of a timed-out hook past the
host's deadline: the host's timeout, an allow. Here: a Gemini hook installed with 5 s,
its host timeout lowered to 2 s afterwards (the runner reads it at run time), a hook
that hangs, and the audit file's lock held by another process. Twin: the lock free.
"""

import fcntl
import json
import subprocess
import sys
import time

from cmdhook_helpers import expected_deny, hook_id, payload_for

from failsecure.failures import failure_reason
from failsecure.runner import settings as settings

HOST_SECONDS = 2.0


def installed_gemini(tmp_path, hook_command):
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "%s"\n' % audit)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
        {"type": "command", "command": hook_command, "timeout": 5000}]}]}}))
    settings.wrap_settings(str(path), "gemini", python=sys.executable,
                           environ={"PATH": "/usr/bin:/bin", "FAILSECURE_CONFIG": str(config)})
    document = json.loads(path.read_text())
    handler = document["hooks"]["BeforeTool"][0]["hooks"][0]
    handler["timeout"] = int(HOST_SECONDS * 1000)  # the user lowers it after install
    path.write_text(json.dumps(document))
    return handler["command"], audit


def run_as_gemini(command):
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", command], input=payload_for("gemini"), capture_output=True, timeout=30)
    return proc, time.monotonic() - start


def test_a_held_audit_lock_does_not_push_the_deny_past_the_hosts_clock(tmp_path):
    command, audit = installed_gemini(tmp_path, "sleep 30")
    holder = open(audit, "a")
    fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
    try:
        proc, elapsed = run_as_gemini(command)
    finally:
        holder.close()
    assert (proc.stdout.decode(), proc.stderr.decode(), proc.returncode) == expected_deny(
        "gemini", failure_reason(hook_id("sleep 30"), "timeout"))
    assert elapsed < HOST_SECONDS, "the runner exited after the host's %.1f s: %.2f s" % (HOST_SECONDS, elapsed)


def test_with_the_audit_lock_free_the_deny_is_in_time_and_audited(tmp_path):
    command, audit = installed_gemini(tmp_path, "sleep 30")
    proc, elapsed = run_as_gemini(command)
    assert proc.returncode == 2 and elapsed < HOST_SECONDS
    events = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(e["outcome"], e["failure"]) for e in events] == [("deny", "timeout")]


def test_a_quick_allow_is_unchanged_with_the_lock_held(tmp_path):
    command, audit = installed_gemini(tmp_path, "exit 0")
    holder = open(audit, "a")
    fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
    try:
        proc, elapsed = run_as_gemini(command)
    finally:
        holder.close()
    assert (proc.stdout, proc.stderr, proc.returncode) == (b"", b"", 0) and elapsed < HOST_SECONDS
