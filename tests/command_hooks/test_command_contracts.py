"""kiro_crew and poolside Pool, tested at the contract level.

Neither host is on a registry this project reaches (kiro_crew lives on GitHub,
Pool is a closed-source CLI), so no real host runs here. What is tested is the
documented decision rule of each host applied to what the installed command
really prints, from real subprocesses:

- kiro_crew (`run_script_hook`, src/kiro_crew/hooks.py, as described in the
  seed): the command runs as ``["/bin/sh", "-c", command]`` with a per-hook
  timeout; ``blocked`` is ``exit_code == 2`` and the reason is stderr; a timeout
  leaves exit_code -1 and a missing binary 127, which the pre-fix code treated
  as "no opinion" (allow).
- Pool (README: hooks "fail open if they fail, time out, or return output pool
  cannot parse"): Claude-compatible, so a tool call is blocked only by a
  parseable Claude deny on stdout or by exit 2.
"""

import json
import subprocess

import pytest
from cmdhook_helpers import hook_id, payload_for, wrap

from failsecure.runner import settings as settings
from failsecure.failures import failure_reason


def kiro_crew_blocks(command_line, payload, timeout):
    """kiro_crew's pre-fix rule: (blocked, reason); every failure is 'no opinion'."""
    try:
        proc = subprocess.run(["/bin/sh", "-c", command_line], input=payload, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, ""  # exit_code = -1
    blocked = proc.returncode == 2
    return blocked, proc.stderr.decode().strip() if blocked else ""


def pool_blocks(command_line, payload, timeout):
    """Pool's documented fail-open rule for a Claude-compatible hook: (blocked, reason)."""
    try:
        proc = subprocess.run(["/bin/sh", "-c", command_line], input=payload, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, ""
    if proc.returncode == 2:
        return True, proc.stderr.decode().strip()
    if proc.returncode != 0:
        return False, ""
    try:
        answer = json.loads(proc.stdout or b"{}")
    except ValueError:
        return False, ""
    specific = answer.get("hookSpecificOutput") or {}
    if answer.get("decision") == "block" or specific.get("permissionDecision") == "deny":
        return True, answer.get("reason") or specific.get("permissionDecisionReason") or ""
    return False, ""


HOSTS = {
    "kiro": (kiro_crew_blocks, lambda cmd: {"hooks": {"PreToolUse": [{"command": cmd, "timeout": 5}]}}),
    "pool": (pool_blocks, lambda cmd: {"hooks": {"PreToolUse": [{"command": cmd, "timeout_ms": 5000}]}}),
}

FAILURES = {
    # name: (hook command, category)
    "hang": ("sleep 30", "timeout"),
    "crash": ("exit 1", "crashed"),
    "missing": ("/no/such/policy-hook", "missing"),
    "signal": ("kill -9 $$", "crashed"),
}


def installed(tmp_path, host, hook_command, runner_timeout=None):
    rule, document = HOSTS[host]
    path = tmp_path / ("%s.json" % host)
    doc = document(hook_command)
    if runner_timeout is not None:
        key = "timeout" if host == "kiro" else "timeout_ms"
        doc["hooks"]["PreToolUse"][0][key] = runner_timeout if host == "kiro" else int(runner_timeout * 1000)
    path.write_text(json.dumps(doc))
    wrap(str(path), host)
    return json.loads(path.read_text())["hooks"]["PreToolUse"][0]


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_host_rule_fails_open_without_the_runner(host, failure):
    """The premise: each failure is an allow for the bare hook."""
    rule = HOSTS[host][0]
    hook_command, _ = FAILURES[failure]
    assert rule(hook_command, payload_for("claude"), timeout=0.3) == (False, "")


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_installed_hook_blocks_every_failure(tmp_path, host, failure):
    rule = HOSTS[host][0]
    hook_command, category = FAILURES[failure]
    handler = installed(tmp_path, host, hook_command, runner_timeout=0.3)
    key = "timeout" if host == "kiro" else "timeout_ms"
    host_timeout = handler[key] if host == "kiro" else handler[key] / 1000
    assert host_timeout > 0.3  # the host's own deadline stays above the runner's
    blocked, why = rule(handler["command"], payload_for("claude"), timeout=host_timeout)
    assert (blocked, why) == (True, failure_reason(hook_id(hook_command), category))


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("answer", ["exit 0", "cat >/dev/null; exit 0"])
def test_installed_hook_allow_twin(tmp_path, host, answer):
    rule = HOSTS[host][0]
    handler = installed(tmp_path, host, answer, runner_timeout=0.3)
    assert rule(handler["command"], payload_for("claude"), timeout=5) == (False, "")


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_installed_hook_keeps_an_explicit_deny(tmp_path, host):
    rule = HOSTS[host][0]
    handler = installed(tmp_path, host, "echo 'no network tools' >&2; exit 2")
    assert rule(handler["command"], payload_for("claude"), timeout=5) == (True, "no network tools")


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_missing_runner_still_blocks(tmp_path, host):
    rule, document = HOSTS[host]
    package = tmp_path / "gone" / "failsecure"
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(document("exit 0")))
    wrap(str(path), host, runner=str(package / "command.py"))
    handler = json.loads(path.read_text())["hooks"]["PreToolUse"][0]
    assert rule(handler["command"], payload_for("claude"), timeout=5) == (
        True,
        failure_reason(hook_id("exit 0"), "missing"),
    )


# ---------------------------------------------------------------- a Kiro hook that sets no timeout
# Kiro CLI gives a hook that sets no `timeout_ms` 30,000 ms (kiro.dev/docs/cli/hooks, in
# /work/shared/upstream/hosts.md) and a host timeout is an allow. `hook install` writes
# no timeout for such a hook, so the runner's own deadline must stay below the host's
# 30 s with margin: a runner that answers at 30 s answers after the host gave up.

KIRO_CLI_DEFAULT = 30.0


def _kiro_cli_agent(tmp_path, hook_command):
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"hooks": {"preToolUse": [{"matcher": "execute_bash", "command": hook_command}]}}))
    wrap(str(path), "kiro")
    handler = json.loads(path.read_text())["hooks"]["preToolUse"][0]
    assert "timeout_ms" not in handler and "timeout" not in handler  # the host's default applies
    return handler


def test_kiro_hook_without_a_timeout_is_denied_before_the_hosts_default(tmp_path):
    handler = _kiro_cli_agent(tmp_path, "sleep 60")
    blocked, why = kiro_crew_blocks(handler["command"], payload_for("claude"), timeout=KIRO_CLI_DEFAULT)
    assert (blocked, why) == (True, failure_reason(hook_id("sleep 60"), "timeout"))


def test_kiro_hook_without_a_timeout_allow_twin(tmp_path):
    handler = _kiro_cli_agent(tmp_path, "sleep 1; exit 0")
    proc = subprocess.run(["/bin/sh", "-c", handler["command"]], input=payload_for("claude"), capture_output=True,
                          timeout=KIRO_CLI_DEFAULT)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
