"""The runner reading what the host reads: the host's current clock in a settings file
the host parses (comments, a hook copied to a second matcher group), a hook answer with
numbers JavaScript reads, and an answer a host still reads after the hook exited.

- Gemini CLI 0.61.0 reads its settings files through strip-json-comments
  (``loadSettings``: ``JSON.parse(stripJsonComments(content))``), so a ``//`` or
  ``/* */`` comment the user adds after install is fine for the host. The runner read the
  file with a strict parser, found nothing, and kept the deadline install wrote: a host
  timeout lowered at the same time then killed the runner first (a hook Gemini times out
  fails open).
- A wrapped hook copied into a second matcher group carries the same launch line (the
  same --record token). Gemini runs each matching copy with its own ``timeout``
  (``deduplicateHooks`` keeps the first copy *that matched*): the runner took the first
  copy in the file, so a shorter clock on the other copy killed the runner first.
- An integer literal past CPython's int() digit limit (4300) is a number to
  JavaScript's JSON.parse (a double): an allow carrying one in a key Claude Code drops
  was `invalid` under the runner, a false deny.
- Gemini CLI resolves a hook on the child's ``close`` (``HookRunner.executeCommandHook``:
  ``child.on("close", ...)``), i.e. once stdout and stderr are at EOF, not at the exit: a
  background process of the hook that still holds stdout and writes a deny there later
  (within the host's timeout) blocks the tool. The runner judges the answer once the hook
  exited and its pipes were drained for DRAIN_GRACE, so that deny is not read (strict
  xfail: reading until EOF or the deadline would change the existing
  test_escaped_daemon_holding_stdout_does_not_turn_an_answer_into_a_timeout).

The runner runs as the host starts it (the launch line `hook install` writes, the
payload on stdin); every deny has its allow twin, every failure names its branch.
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest
from cmdhook_helpers import expected_deny, hook_id, payload_for

from failsecure.failures import failure_reason
from failsecure.runner import settings as settings

HOST_SECONDS = 2.0


def _gemini_settings(tmp_path, hook_command, groups=1):
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "%s"\n' % audit)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
        {"type": "command", "command": hook_command, "timeout": 5000}]}]}}, indent=2))
    settings.wrap_settings(str(path), "gemini", python=sys.executable,
                           environ={"PATH": "/usr/bin:/bin", "FAILSECURE_CONFIG": str(config)})
    return path, audit


def _run_as_gemini(command):
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", command], input=payload_for("gemini"), capture_output=True, timeout=30)
    return proc, time.monotonic() - start


def _events(audit):
    return [(e["outcome"], e["failure"]) for e in (json.loads(line) for line in audit.read_text().splitlines())]


def _lower_with_a_comment(path):
    """The user lowers the host timeout to 2 s after install and leaves a comment (both as
    Gemini CLI reads the file: strip-json-comments, then JSON.parse)."""
    document = json.loads(path.read_text())
    handler = document["hooks"]["BeforeTool"][0]["hooks"][0]
    handler["timeout"] = int(HOST_SECONDS * 1000)
    text = json.dumps(document, indent=2)
    text = text.replace('"hooks": {', '// lowered: the guard must be quick\n  "hooks": { /* see the wiki */', 1)
    path.write_text(text)
    return handler["command"]


def test_a_commented_settings_file_still_gives_the_hosts_lowered_clock(tmp_path):
    path, audit = _gemini_settings(tmp_path, "sleep 30")
    command = _lower_with_a_comment(path)
    proc, elapsed = _run_as_gemini(command)
    assert (proc.stdout.decode(), proc.stderr.decode(), proc.returncode) == expected_deny(
        "gemini", failure_reason(hook_id("sleep 30"), "timeout"))
    assert elapsed < HOST_SECONDS, "the runner answered after the host's %.1f s clock: %.2f s" % (HOST_SECONDS, elapsed)
    assert _events(audit) == [("deny", "timeout")]


def test_a_commented_settings_file_leaves_a_quick_allow_alone(tmp_path):
    path, audit = _gemini_settings(tmp_path, "cat >/dev/null; echo '{\"decision\":\"allow\"}'")
    command = _lower_with_a_comment(path)
    proc, elapsed = _run_as_gemini(command)
    assert (proc.stdout, proc.stderr, proc.returncode) == (b'{"decision":"allow"}\n', b"", 0)
    assert _events(audit) == [("allow", None)]


def _copy_to_a_second_group(path, host_ms):
    """The user copies the wrapped hook to a second matcher group with a shorter clock."""
    document = json.loads(path.read_text())
    first = document["hooks"]["BeforeTool"][0]
    second = json.loads(json.dumps(first))
    second["matcher"] = "write_file|run_shell_command"
    second["hooks"][0]["timeout"] = host_ms
    document["hooks"]["BeforeTool"].append(second)
    path.write_text(json.dumps(document, indent=2))
    return first["hooks"][0]["command"]


def test_the_shortest_clock_of_a_copied_hook_is_the_hosts(tmp_path):
    path, audit = _gemini_settings(tmp_path, "sleep 30")
    command = _copy_to_a_second_group(path, int(HOST_SECONDS * 1000))
    proc, elapsed = _run_as_gemini(command)
    assert (proc.stdout.decode(), proc.stderr.decode(), proc.returncode) == expected_deny(
        "gemini", failure_reason(hook_id("sleep 30"), "timeout"))
    assert elapsed < HOST_SECONDS, "the runner answered after the copy's %.1f s clock: %.2f s" % (HOST_SECONDS, elapsed)
    assert _events(audit) == [("deny", "timeout")]


def test_a_copied_hook_with_a_longer_clock_keeps_the_installed_deadline(tmp_path):
    # twin: a copy whose clock is longer changes nothing (the installed 5 s stands)
    path, audit = _gemini_settings(tmp_path, "cat >/dev/null; sleep 2.5; echo '{\"decision\":\"allow\"}'")
    command = _copy_to_a_second_group(path, 20000)
    proc, elapsed = _run_as_gemini(command)
    assert (proc.stdout, proc.stderr, proc.returncode) == (b'{"decision":"allow"}\n', b"", 0)
    assert _events(audit) == [("allow", None)]


# ---------------------------------------------------------------- numbers JavaScript reads

BIG = "1" * 5000  # past sys.int_max_str_digits: int() refuses it, JSON.parse reads a double


@pytest.fixture
def runner(tmp_path):
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "%s"\n' % audit)
    env = {k: v for k, v in os.environ.items() if k not in ("FAILSECURE_CONFIG", "XDG_CACHE_HOME")}
    launch = settings.launch_argv(sys.executable, settings.runner_path())

    def run(protocol, command, timeout=10):
        if audit.exists():
            audit.unlink()
        line = launch + ["run", "--protocol", protocol, "--timeout", str(timeout), "--hook-id", "guard", "--config", str(config),
                         "--cache-home", str(tmp_path / "cache"), "--", "/bin/sh", "-c", command]
        proc = subprocess.run(line, input=payload_for(protocol), capture_output=True, env=env, timeout=30)
        events = [json.loads(text) for text in audit.read_text().splitlines() if text.strip()] if audit.exists() else []
        assert len(events) == 1, events
        return (proc.stdout, proc.stderr, proc.returncode), (events[0]["outcome"], events[0]["failure"])

    return run


def _printing(tmp_path, text):
    answer = tmp_path / "answer.json"
    answer.write_text(text)
    return "cat >/dev/null; cat %s" % shlex.quote(str(answer))


def test_an_allow_with_a_long_integer_is_passed_on(runner, tmp_path):
    text = '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"},"ruleSerial":%s}\n' % BIG
    told, audited = runner("claude", _printing(tmp_path, text))
    assert told == (text.encode(), b"", 0)
    assert audited == ("allow", None)


def test_a_deny_with_a_long_integer_is_the_hooks_deny(runner, tmp_path):
    text = ('{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
            '"permissionDecisionReason":"not today"},"ruleSerial":%s}\n' % BIG)
    told, audited = runner("claude", _printing(tmp_path, text))
    out, err, code = expected_deny("claude", "not today")
    assert told == (out.encode(), err.encode(), code)
    assert audited == ("deny", None)


def test_a_gemini_rewrite_with_a_long_integer_is_passed_on(runner, tmp_path):
    text = '{"decision":"allow","hookSpecificOutput":{"tool_input":{"command":"ls","count":%s}}}\n' % BIG
    told, audited = runner("gemini", _printing(tmp_path, text))
    assert told == (text.encode(), b"", 0)
    assert audited == ("allow", None)


def test_a_long_integer_where_a_flag_belongs_is_still_invalid(runner, tmp_path):
    # twin of the fix: a number is still the wrong type for `continue`
    told, audited = runner("claude", _printing(tmp_path, '{"continue":%s}\n' % BIG))
    out, err, code = expected_deny("claude", failure_reason("command:guard", "invalid"))
    assert told == (out.encode(), err.encode(), code)
    assert audited == ("deny", "invalid")


# ---------------------------------------------------------------- an answer after the exit, before EOF

LATE = (
    "cat >/dev/null; setsid sh -c 'echo $$ > {pid}.tmp; mv {pid}.tmp {pid}; sleep 0.8; "
    "printf %s {answer}' & while [ ! -s {pid} ]; do sleep 0.01; done; exit 0"
)


def _late(tmp_path, answer):
    pid = tmp_path / "late.pid"
    return pid, LATE.format(pid=shlex.quote(str(pid)), answer=shlex.quote(answer))


def _reap(pid):
    try:
        os.kill(int(pid.read_text()), signal.SIGKILL)
    except (OSError, ValueError):
        pass


@pytest.mark.xfail(strict=True, reason=(
    "Gemini CLI reads a hook's answer at the child's close (stdout and stderr at EOF), so a "
    "deny that a background process of the hook writes after the hook exited blocks the "
    "tool; the runner judges what it read by DRAIN_GRACE after the exit (here: nothing, "
    "no opinion). Reading on to EOF or the deadline would change "
    "test_escaped_daemon_holding_stdout_does_not_turn_an_answer_into_a_timeout (answer in < 3 s)"))
def test_a_deny_written_after_the_exit_before_eof_is_the_hooks_deny(runner, tmp_path):
    pid, command = _late(tmp_path, '{"decision":"deny","reason":"late no"}')
    try:
        told, audited = runner("gemini", command, timeout=5)
    finally:
        _reap(pid)
    out, err, code = expected_deny("gemini", "late no")
    assert told == (out.encode(), err.encode(), code)
    assert audited == ("deny", None)


def test_an_allow_written_after_the_exit_lets_the_call_run(runner, tmp_path):
    # twin: the late answer is an allow (Gemini runs the tool; so does the runner)
    pid, command = _late(tmp_path, '{"decision":"allow"}')
    try:
        (out, err, code), audited = runner("gemini", command, timeout=5)
    finally:
        _reap(pid)
    assert code == 0 and audited[0] in ("allow", "abstain") and audited[1] is None


# ---------------------------------------------------------------- a project config that is slow to read

def _slow_project(tmp_path):
    """A cloned repository whose own failsecure.toml is just under the runner's 4 MiB
    cap: valid, and only stricter (each entry denies on error), so the runner reads and
    parses it on every call (it is too large for the cache) -- for seconds on a loaded
    machine, before the hook starts."""
    repo = tmp_path / "repo"
    repo.mkdir()
    entry = '[hooks."command:project-%06d"]\non_error = "deny"\n'
    count = (4 * 1024 * 1024 - 4096) // len(entry % 0)
    (repo / "failsecure.toml").write_text("".join(entry % i for i in range(count)))
    return repo


def test_a_slow_project_config_does_not_push_the_answer_past_the_hosts_clock(tmp_path):
    # the user's guard denies; under the host's 2 s clock the answer must come in time,
    # or Gemini CLI fails open and the tool runs
    path, audit = _gemini_settings(tmp_path, "cat >/dev/null; echo 'guard: no' >&2; exit 2")
    document = json.loads(path.read_text())
    handler = document["hooks"]["BeforeTool"][0]["hooks"][0]
    handler["timeout"] = int(HOST_SECONDS * 1000)
    path.write_text(json.dumps(document, indent=2))
    repo = _slow_project(tmp_path)
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", handler["command"]], input=payload_for("gemini"), capture_output=True,
                          timeout=60, cwd=str(repo))
    elapsed = time.monotonic() - start
    assert elapsed < HOST_SECONDS, "the runner answered after the host's %.1f s clock: %.2f s" % (HOST_SECONDS, elapsed)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["decision"] == "deny"
    if not audit.exists():  # the config was not read in time: its own timeout, blamed on it
        assert (proc.stdout.decode(), proc.stderr.decode(), proc.returncode) == expected_deny(
            "gemini", failure_reason("failsecure:config", "timeout"))


def test_a_small_project_config_leaves_an_allowing_guard_alone(tmp_path):
    path, audit = _gemini_settings(tmp_path, "cat >/dev/null; echo '{\"decision\":\"allow\"}'")
    document = json.loads(path.read_text())
    handler = document["hooks"]["BeforeTool"][0]["hooks"][0]
    handler["timeout"] = int(HOST_SECONDS * 1000)
    path.write_text(json.dumps(document, indent=2))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "failsecure.toml").write_text('[hooks."command:project-000001"]\non_error = "deny"\n')
    proc = subprocess.run(["bash", "-c", handler["command"]], input=payload_for("gemini"), capture_output=True,
                          timeout=60, cwd=str(repo))
    assert (proc.stdout, proc.stderr, proc.returncode) == (b'{"decision":"allow"}\n', b"", 0)
    assert _events(audit) == [("allow", None)]


# ---------------------------------------------------------------- doctor reads a workspace's settings as Gemini CLI does

@pytest.mark.parametrize("switch,flagged", [({"enabled": False}, True), ({"notifications": False}, False)],
                         ids=["all-off", "unrelated"])
def test_doctor_reads_a_commented_workspace_settings_file(tmp_path, switch, flagged):
    # Gemini CLI reads a workspace's .gemini/settings.json through strip-json-comments: a
    # comment does not stop `hooksConfig.enabled: false` from switching the user's wrapped
    # guard off, so it must not hide the switch from doctor either (it made the file
    # "not valid JSON" there, a note, exit 0). Twin: an unrelated hooksConfig, exit 0.
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    user = home / ".gemini" / "settings.json"
    user.write_text(json.dumps({"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "name": "guard", "command": "guard.sh"}]}]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAILSECURE_", "XDG_"))}
    settings.wrap_settings(str(user), "gemini", environ={"PATH": "/usr/bin:/bin"})
    project = tmp_path / "project"
    (project / ".gemini").mkdir(parents=True)
    workspace = project / ".gemini" / "settings.json"
    workspace.write_text('{\n  // the team\'s defaults\n  "hooksConfig": %s /* quiet */\n}\n' % json.dumps(switch))
    import failsecure

    # the doctor under test is this source tree's (a relative PYTHONPATH would not reach it from the project)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(failsecure.__file__))))
    doctor = [sys.executable, "-m", "failsecure", "doctor", "--no-self-test"]
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    if flagged:
        assert out.returncode == 1, out.stdout
        assert '"hooksConfig"' in out.stdout and str(workspace) in out.stdout
    else:
        assert "hooksConfig" not in out.stdout and out.returncode == 0, out.stdout


def test_reading_a_commented_settings_file_is_bounded():
    # the comment-aware read runs on the hot path (before the hook starts): linear, and
    # only for a file of at most COMMENTED_CAP (a larger one is read strictly, as before)
    from failsecure.runner import protocols

    worst = ['"\\"' * (protocols.COMMENTED_CAP // 2), "//\n" * (protocols.COMMENTED_CAP // 3), "/*" + "*" * protocols.COMMENTED_CAP]
    for text in worst:
        start = time.monotonic()
        protocols._strip_json_comments(text)
        assert time.monotonic() - start < 1.0
    big = "{" + " " * (protocols.COMMENTED_CAP + 1) + '"a": 1 // x\n}'
    with pytest.raises(ValueError):
        protocols._settings_document(big)
    assert protocols._settings_document('{"a": "//", /* b */ "c": [1 /**/, 2]} // end') == {"a": "//", "c": [1, 2]}


@pytest.mark.parametrize("document,flagged", [({"disableAllHooks": True}, True), ({"permissions": {}}, False)],
                         ids=["all-off", "unrelated"])
def test_doctor_reads_a_projects_claude_settings_after_a_byte_order_mark(tmp_path, document, flagged):
    # Claude Code 2.1.332 reads a repository's .claude/settings.json after a UTF-8
    # byte-order mark, its disableAllHooks included (claude_code/
    # test_project_settings_reading.py); doctor read the file as strict JSON, an error
    # note, exit 0. Twin: an unrelated file with a mark, exit 0.
    import failsecure

    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    user = home / ".claude" / "settings.json"
    user.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "guard.sh"}]}]}}))
    settings.wrap_settings(str(user), "claude", on_failure="omit", environ={"PATH": "/usr/bin:/bin"})
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    workspace = project / ".claude" / "settings.json"
    workspace.write_text("\ufeff" + json.dumps(document), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAILSECURE_", "XDG_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(failsecure.__file__))))
    doctor = [sys.executable, "-m", "failsecure", "doctor", "--no-self-test"]
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    if flagged:
        assert out.returncode == 1, out.stdout
        assert '"disableAllHooks"' in out.stdout and str(workspace) in out.stdout
    else:
        assert "disableAllHooks" not in out.stdout and out.returncode == 0, out.stdout
