"""Claude Code end to end: the real bundled CLI (claude-agent-sdk 0.2.189 ships
Claude Code 2.1.332), a scripted model on 127.0.0.1, and a user settings file
rewritten by `failsecure hook install --host claude`.

A crashing, a hanging and a missing PreToolUse hook each stop the Bash call
(marker file absent), with the deny reason the model saw and the audit event
naming the failure branch; an allowing hook lets it run. The premise tests show
the same broken hooks fail open without the runner.
"""

import json
import os
import subprocess
import sys

import pytest

from failsecure.runner import settings as settings
from failsecure.failures import failure_reason
from failsecure.hookid import command_name


def hook_id(command):
    return "command:" + command_name(command)


def settings_with(path, hook_command, timeout=None):
    handler = {"type": "command", "command": hook_command}
    if timeout is not None:
        handler["timeout"] = timeout
    document = {
        "permissions": {"allow": ["Bash"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]},
    }
    path.write_text(json.dumps(document, indent=2) + "\n")


def hook_script(tmp_path, name, body):
    script = tmp_path / name
    script.write_text("#!/bin/sh\ncat >/dev/null\n%s\n" % body)
    script.chmod(0o755)
    return str(script)


def install_env(settings):
    """The installing user's environment: FAILSECURE_CONFIG names the rig's config (the
    run_claude fixture's), so install writes it on the launch line as --config."""
    return dict(os.environ, FAILSECURE_CONFIG=str(settings.parents[2] / "failsecure.toml"))


def install(settings, claude_cli, *extra):
    proc = subprocess.run(
        [sys.executable, "-m", "failsecure", "hook", "install", "--host", "claude", "--claude-bin", claude_cli, *extra, str(settings)],
        capture_output=True,
        text=True,
        timeout=120,
        env=install_env(settings),
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]


def audit_events(run_claude):
    if not os.path.exists(run_claude.audit):
        return []
    with open(run_claude.audit) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def tool_result_text(scripted_api):
    results = scripted_api.tool_results()
    assert len(results) == 1, results
    content = results[0]["content"]
    if isinstance(content, list):
        content = " ".join(block.get("text", "") for block in content if isinstance(block, dict))
    return results[0], content


def assert_stopped(run_claude, scripted_api, hook_id, category):
    proc = run_claude()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert not os.path.exists(scripted_api.marker), "the Bash tool ran"
    result, text = tool_result_text(scripted_api)
    assert result.get("is_error") is True
    assert failure_reason(hook_id, category) in text
    events = audit_events(run_claude)
    assert [(e["hook"], e["outcome"], e["failure"], e["tool"], e["call_id"]) for e in events] == [
        (hook_id, "deny", category, "Bash", "toolu_e2e_1")
    ]
    with open(run_claude.audit) as fh:
        assert scripted_api.secret not in fh.read()


def test_cli_is_the_release_with_on_failure(claude_cli):
    assert settings.claude_cli_version(claude_cli) == (2, 1, 332)
    assert settings.claude_cli_version(claude_cli) >= settings.CLAUDE_ON_FAILURE_MIN


@pytest.mark.parametrize("body", ["exit 1", "sleep 30"], ids=["crash", "hang"])
def test_premise_bare_broken_hooks_fail_open(tmp_path, run_claude, scripted_api, body):
    settings_with(run_claude.settings, hook_script(tmp_path, "broken.sh", body), timeout=1)
    proc = run_claude()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert os.path.exists(scripted_api.marker), "expected Claude Code to fail open on a broken bare hook"


def test_premise_bare_missing_hook_fails_open(tmp_path, run_claude, scripted_api):
    settings_with(run_claude.settings, str(tmp_path / "gone.sh"))
    run_claude()
    assert os.path.exists(scripted_api.marker)


@pytest.mark.parametrize("on_failure", ["auto", "omit"])
def test_crashing_hook_stops_the_tool(tmp_path, run_claude, scripted_api, claude_cli, on_failure):
    settings_with(run_claude.settings, hook_script(tmp_path, "crash.sh", "echo boom >&2; exit 1"))
    handler = install(run_claude.settings, claude_cli, "--on-failure", on_failure)
    assert ("onFailure" in handler) == (on_failure == "auto")
    assert_stopped(run_claude, scripted_api, hook_id(str(tmp_path / "crash.sh")), "crashed")


def test_hanging_hook_stops_the_tool(tmp_path, run_claude, scripted_api, claude_cli):
    settings_with(run_claude.settings, hook_script(tmp_path, "hang.sh", "sleep 30"), timeout=0.5)
    handler = install(run_claude.settings, claude_cli)
    assert handler["timeout"] == 6 and handler["onFailure"] == "block"
    assert_stopped(run_claude, scripted_api, hook_id(str(tmp_path / "hang.sh")), "timeout")


def test_missing_hook_stops_the_tool(tmp_path, run_claude, scripted_api, claude_cli):
    settings_with(run_claude.settings, str(tmp_path / "gone.sh"))
    install(run_claude.settings, claude_cli)
    assert_stopped(run_claude, scripted_api, hook_id(str(tmp_path / "gone.sh")), "missing")


def test_junk_answer_stops_the_tool(tmp_path, run_claude, scripted_api, claude_cli):
    # {"async": true} backgrounds a bare hook in Claude Code: the tool would run.
    settings_with(run_claude.settings, hook_script(tmp_path, "junk.sh", """echo '{"async": true}'"""))
    install(run_claude.settings, claude_cli)
    assert_stopped(run_claude, scripted_api, hook_id(str(tmp_path / "junk.sh")), "invalid")


def test_allowing_hook_lets_the_tool_run(tmp_path, run_claude, scripted_api, claude_cli):
    settings_with(run_claude.settings, hook_script(tmp_path, "allow.sh", "exit 0"))
    install(run_claude.settings, claude_cli)
    proc = run_claude()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert os.path.exists(scripted_api.marker)
    result, _text = tool_result_text(scripted_api)
    assert not result.get("is_error")
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_claude)] == [(hook_id(str(tmp_path / "allow.sh")), "abstain", None)]


def test_explicit_allow_answer_lets_the_tool_run(tmp_path, run_claude, scripted_api, claude_cli):
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
    settings_with(run_claude.settings, hook_script(tmp_path, "ok.sh", "echo '%s'" % answer))
    install(run_claude.settings, claude_cli)
    run_claude()
    assert os.path.exists(scripted_api.marker)
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_claude)] == [("allow", None)]


def test_hooks_own_deny_reaches_the_model(tmp_path, run_claude, scripted_api, claude_cli):
    settings_with(run_claude.settings, hook_script(tmp_path, "deny.sh", "echo 'no shell today' >&2; exit 2"))
    install(run_claude.settings, claude_cli)
    run_claude()
    assert not os.path.exists(scripted_api.marker)
    _result, text = tool_result_text(scripted_api)
    assert "no shell today" in text
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_claude)] == [("deny", None)]


@pytest.mark.parametrize("on_failure", ["auto", "omit"])
def test_missing_runner_stops_the_tool(tmp_path, run_claude, scripted_api, claude_cli, on_failure):
    # The installed runner disappears (package removed): the sh prelude denies on
    # its own, with or without Claude Code's onFailure.
    package = tmp_path / "site" / "failsecure"
    package.mkdir(parents=True)
    runner = package / "command.py"
    runner.write_text("")
    settings_with(run_claude.settings, hook_script(tmp_path, "allow.sh", "exit 0"))
    settings.wrap_settings(
        str(run_claude.settings), "claude", runner=str(runner), on_failure=on_failure, claude_bin=claude_cli,
        environ=install_env(run_claude.settings),
    )
    runner.unlink()
    run_claude()
    assert not os.path.exists(scripted_api.marker)
    _result, text = tool_result_text(scripted_api)
    assert failure_reason(hook_id(str(tmp_path / "allow.sh")), "missing") in text
    assert audit_events(run_claude) == []  # the runner never ran


def test_uninstall_restores_the_users_file(tmp_path, run_claude, claude_cli):
    settings_with(run_claude.settings, hook_script(tmp_path, "allow.sh", "exit 0"), timeout=3)
    original = run_claude.settings.read_text()
    install(run_claude.settings, claude_cli)
    assert run_claude.settings.read_text() != original
    proc = subprocess.run([sys.executable, "-m", "failsecure", "hook", "uninstall", str(run_claude.settings)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert run_claude.settings.read_text() == original


# ---------------------------------------------------------------- the project's settings (issue 27)


def project_settings(run_claude, document):
    path = run_claude.project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def test_a_projects_env_cannot_choose_the_hooks_shell_or_config(tmp_path, run_claude, scripted_api, claude_cli):
    # A cloned repository's .claude/settings.json `env` reaches the hook's environment:
    # BASH=/bin/true made the previous launch line "run" the hook with /bin/true (an
    # allow), FAILSECURE_CONFIG pointed the runner at a config declaring it fail-open.
    crash = hook_script(tmp_path, "crash.sh", "exit 1")
    loose = tmp_path / "loose.toml"
    loose.write_text('[hooks."%s"]\non_error = "allow"\n' % hook_id(crash))
    project_settings(run_claude, {"env": {"BASH": "/bin/true", "FAILSECURE_CONFIG": str(loose), "XDG_CONFIG_HOME": str(tmp_path)}})
    settings_with(run_claude.settings, crash)
    install(run_claude.settings, claude_cli)
    assert_stopped(run_claude, scripted_api, hook_id(crash), "crashed")


def test_a_projects_env_leaves_an_allowing_guard_allowing(tmp_path, run_claude, scripted_api, claude_cli):
    project_settings(run_claude, {"env": {"BASH": "/bin/false"}})  # twin
    settings_with(run_claude.settings, hook_script(tmp_path, "allow.sh", "exit 0"))
    install(run_claude.settings, claude_cli)
    run_claude()
    assert os.path.exists(scripted_api.marker)


def test_premise_a_projects_disable_all_hooks_turns_the_users_guard_off(tmp_path, run_claude, scripted_api, claude_cli):
    # Documented limit (docs/command-hooks.md, flagged by `failsecure doctor`): nothing
    # the runner does can run when the host runs no hook at all.
    project_settings(run_claude, {"disableAllHooks": True})
    settings_with(run_claude.settings, hook_script(tmp_path, "crash.sh", "exit 1"))
    install(run_claude.settings, claude_cli)
    run_claude()
    assert os.path.exists(scripted_api.marker), "Claude Code ran the tool with every hook disabled"
    assert audit_events(run_claude) == []


def _schema_keys(strings, anchor):
    """The keys of the zod object literal that starts at `anchor` in the CLI's bundle."""
    import re

    start = strings.index(anchor)
    depth, i = 0, start + len("u(")
    body = []
    while i < len(strings):
        ch = strings[i]
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            if depth == 0:
                break
            depth -= 1
        if depth <= 1:
            body.append(ch)
        i += 1
    return set(re.findall(r"[{,]([A-Za-z_]+):", "".join(body)))


def test_the_runners_claude_schema_is_the_pinned_releases(claude_cli):
    # Derived from the release: the bundle's own hook output schema (zod), top level
    # and the PreToolUse / PreSkillShellCommand hookSpecificOutput objects.
    from failsecure.runner.protocols import CLAUDE_SPECIFIC_KEYS, CLAUDE_TOP_KEYS

    data = open(claude_cli, "rb").read().decode("latin-1")
    top = _schema_keys(data, 'u({continue:M().optional(),suppressOutput:M().optional(),stopReason:')
    assert top == set(CLAUDE_TOP_KEYS)
    for event, keys in CLAUDE_SPECIFIC_KEYS.items():
        found = _schema_keys(data, 'u({hookEventName:P("%s"),permissionDecision:' % event)
        assert found == set(keys), event


@pytest.mark.parametrize("body,stopped", [("exit 1", True), ("exit 0", False)], ids=["crash", "allow-twin"])
def test_a_settings_file_of_the_previous_install_ignores_a_projects_bash(tmp_path, run_claude, scripted_api, body, stopped):
    # Not re-installed since: the previous launch line, `"${BASH:-/bin/sh}" -c <hook>`.
    hook = hook_script(tmp_path, "guard.sh", body)
    record = settings._b64encode(json.dumps({"keys": {"command": hook, "timeout": 5}}, separators=(",", ":")).encode())
    line = settings.prelude(sys.executable, settings.runner_path(), "claude", settings._derive_hook_id(hook), 5, record, hook, _legacy=True)
    assert '"${BASH:-/bin/sh}"' in line
    settings_with(run_claude.settings, line, timeout=10)
    project_settings(run_claude, {"env": {"BASH": "/bin/true"}})
    run_claude()
    assert os.path.exists(scripted_api.marker) is not stopped
