"""`hook install --host claude` against the installed Claude Code CLI (2.1.332 in the
claude-code env; also run on 2.1.257, claude-sdk-0.2.150's: both spawn an exec-form
hook directly, not through CLAUDE_CODE_SHELL_PREFIX): a
shell-form hook is written in exec form, `{"command": "/bin/sh", "args": ["-c",
<prelude>]}`, and `hook uninstall` gives the user's entry back exactly. A settings file
an earlier install wrote in shell form keeps working and is upgraded by a re-install.
End to end: a guard named through `${CLAUDE_PROJECT_DIR}`, which Claude Code
substitutes textually into an exec-form hook's args, still stops the tool (twin:
allows)."""

import json
import os
import subprocess
import sys

from test_claude_code_e2e import assert_stopped, hook_id, hook_script, install, install_env, settings_with

from failsecure.failures import failure_reason
from failsecure.runner import settings


def handler_of(path):
    return json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]


def run_as_claude_code(handler, cwd):
    """Exec form as Claude Code 2.1.332 spawns it: `command` with `args`, no shell."""
    assert isinstance(handler.get("args"), list)
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1"})
    proc = subprocess.run([handler["command"]] + handler["args"], input=payload.encode(), capture_output=True, cwd=str(cwd), timeout=60)
    return proc.stdout.decode(), proc.stderr.decode(), proc.returncode


def user_file(tmp_path, command, **keys):
    # where install_env looks for the config: three levels up (as in the run_claude rig)
    path = tmp_path / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "failsecure.toml").write_text("")
    handler = {"type": "command", "command": command, "timeout": 3}
    handler.update(keys)
    text = json.dumps({"model": "x", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}}, indent=2) + "\n"
    path.write_text(text)
    return path, text


def uninstall(path):
    proc = subprocess.run([sys.executable, "-m", "failsecure", "hook", "uninstall", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_install_writes_a_shell_form_hook_in_exec_form_and_uninstall_restores_it(tmp_path, claude_cli):
    crash = hook_script(tmp_path, "it's crash.sh", "exit 1")
    path, original = user_file(tmp_path, "'%s'" % crash.replace("'", "'\\''"), statusMessage="guarding")
    assert settings.claude_cli_version(claude_cli) >= settings.CLAUDE_EXEC_FORM_MIN
    handler = install(path, claude_cli)
    assert handler["command"] == "/bin/sh" and handler["args"][0] == "-c" and len(handler["args"]) == 2
    assert handler["statusMessage"] == "guarding" and handler["timeout"] == 8
    assert settings._launch_of(handler).exec_shell == "/bin/sh"
    wanted = failure_reason(hook_id("'%s'" % crash.replace("'", "'\\''")), "crashed")
    out, err, code = run_as_claude_code(handler, tmp_path)
    assert code == 2 and wanted in out and wanted in err
    again = subprocess.run(
        [sys.executable, "-m", "failsecure", "hook", "install", "--host", "claude", "--claude-bin", claude_cli, str(path)],
        capture_output=True, text=True, timeout=120, env=install_env(path),
    )
    assert again.returncode == 0 and "already runs under failsecure" in again.stdout  # idempotent
    uninstall(path)
    assert path.read_text() == original


def test_an_exec_form_install_of_an_allowing_hook_allows(tmp_path, claude_cli):
    path, original = user_file(tmp_path, hook_script(tmp_path, "allow.sh", "echo fine >&2; exit 0"))
    handler = install(path, claude_cli)
    assert run_as_claude_code(handler, tmp_path) == ("", "fine\n", 0)
    uninstall(path)
    assert path.read_text() == original


def test_no_placeholder_reaches_the_exec_form_args(tmp_path, claude_cli):
    # Claude Code substitutes ${CLAUDE_PROJECT_DIR} textually into each arg of an exec-form
    # hook: the prelude must carry none, or a project path would land unquoted in it
    path, original = user_file(tmp_path, '"${CLAUDE_PROJECT_DIR}"/hooks/guard.sh && echo "${HOME}"')
    handler = install(path, claude_cli)
    assert "${" not in handler["args"][1]
    assert settings._launch_of(handler).original == '"${CLAUDE_PROJECT_DIR}"/hooks/guard.sh && echo "${HOME}"'
    uninstall(path)
    assert path.read_text() == original


def test_a_shell_form_install_of_an_earlier_release_is_upgraded_by_a_reinstall(tmp_path, claude_cli):
    crash = hook_script(tmp_path, "crash.sh", "exit 1")
    path, original = user_file(tmp_path, crash)
    # what `hook install` wrote before exec form (no CLI found then: shell form)
    settings.wrap_settings(str(path), "claude", claude_bin=str(tmp_path / "no-claude"), environ=install_env(path))
    old = handler_of(path)
    assert "args" not in old and settings._in_shell_form(old)
    handler = install(path, claude_cli)
    assert handler["command"] == "/bin/sh" and settings._launch_of(handler).original == crash
    assert handler["timeout"] == 8  # from the user's 3 s, not from the earlier install's 8
    uninstall(path)
    assert path.read_text() == original


def test_an_edited_shell_form_install_is_left_as_it_is(tmp_path, claude_cli):
    path, _original = user_file(tmp_path, hook_script(tmp_path, "crash.sh", "exit 1"))
    settings.wrap_settings(str(path), "claude", claude_bin=str(tmp_path / "no-claude"), environ=install_env(path))
    document = json.loads(path.read_text())
    document["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = 20  # the user's edit since
    path.write_text(json.dumps(document, indent=2) + "\n")
    before = path.read_text()
    proc = subprocess.run(
        [sys.executable, "-m", "failsecure", "hook", "install", "--host", "claude", "--claude-bin", claude_cli, str(path)],
        capture_output=True, text=True, timeout=120, env=install_env(path),
    )
    assert proc.returncode == 0 and "in shell form and edited since install" in proc.stdout
    assert path.read_text() == before


def test_doctor_suggests_a_reinstall_for_a_shell_form_install(tmp_path, claude_cli):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    user = home / ".claude" / "settings.json"
    user.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "guard.sh"}]}]}}))
    settings.wrap_settings(str(user), "claude", claude_bin=str(tmp_path / "no-claude"), environ=install_env(user))
    env = {k: v for k, v in os.environ.items() if k not in ("FAILSECURE_CONFIG", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    doctor = [sys.executable, "-m", "failsecure", "doctor", "--no-self-test"]
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=120)
    assert "1 wrapped hook(s) in shell form" in out.stdout and "hook install --host claude" in out.stdout
    install(user, claude_cli)  # twin: exec form, no note
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=120)
    assert "in shell form" not in out.stdout, out.stdout


def test_a_guard_named_through_the_project_dir_placeholder_stops_the_tool(tmp_path, run_claude, scripted_api, claude_cli):
    hooks = run_claude.project / "hooks"
    hooks.mkdir()
    hook_script(hooks, "guard.sh", "exit 1")
    command = '"${CLAUDE_PROJECT_DIR}"/hooks/guard.sh'
    settings_with(run_claude.settings, command)
    assert "args" in install(run_claude.settings, claude_cli)
    assert_stopped(run_claude, scripted_api, hook_id(command), "crashed")


def test_a_guard_named_through_the_project_dir_placeholder_allow_twin(tmp_path, run_claude, scripted_api, claude_cli):
    hooks = run_claude.project / "hooks"
    hooks.mkdir()
    hook_script(hooks, "guard.sh", "exit 0")
    settings_with(run_claude.settings, '"${CLAUDE_PROJECT_DIR}"/hooks/guard.sh')
    install(run_claude.settings, claude_cli)
    run_claude()
    assert os.path.exists(scripted_api.marker)


def test_only_gating_shell_form_installs_are_upgraded(tmp_path, claude_cli):
    # a wrapped hook the user moved to an event that does not gate stays as it is
    path, _original = user_file(tmp_path, hook_script(tmp_path, "crash.sh", "exit 1"))
    settings.wrap_settings(str(path), "claude", claude_bin=str(tmp_path / "no-claude"), environ=install_env(path))
    document = json.loads(path.read_text())
    document["hooks"]["PostToolUse"] = document["hooks"].pop("PreToolUse")
    path.write_text(json.dumps(document, indent=2) + "\n")
    before = path.read_text()
    report = settings.wrap_settings(str(path), "claude", claude_bin=claude_cli, environ=install_env(path))
    assert report.wrapped == [] and path.read_text() == before


def test_a_shell_form_install_with_a_damaged_record_is_left_alone(tmp_path, claude_cli):
    path, _original = user_file(tmp_path, hook_script(tmp_path, "crash.sh", "exit 1"))
    settings.wrap_settings(str(path), "claude", claude_bin=str(tmp_path / "no-claude"), environ=install_env(path))
    launch = settings._launch_of(handler_of(path))
    path.write_text(path.read_text().replace(launch.token, "AAAA" + launch.token[4:]))
    before = path.read_text()
    report = settings.wrap_settings(str(path), "claude", claude_bin=claude_cli, environ=install_env(path))
    assert report.wrapped == [] and "damaged" in report.left[0].why and path.read_text() == before
