"""`hook install --host gemini` and the runner against Gemini CLI's textual expansion of
$GEMINI_PROJECT_DIR, $GEMINI_CWD, $GEMINI_PLANS_DIR, $GEMINI_SESSION_ID and
$CLAUDE_PROJECT_DIR in a hook's command (0.61.0, HookRunner.expandCommand; end to end
in gemini_cli/test_project_dir_expansion.py): the prelude leaves none for Gemini to
expand, the runner expands them in the original as Gemini would, uninstall gives the
user's entry back exactly, and an install written before is upgraded by a re-install."""

import json
import os
import subprocess
import sys

import pytest
from cmdhook_helpers import payload_for

from failsecure.runner import settings
from failsecure.runner.protocols import gemini_expand

COMMAND = "$GEMINI_PROJECT_DIR/hooks/guard.sh --session $GEMINI_SESSION_ID && echo $CLAUDE_PROJECT_DIR"


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("FAILSECURE_CONFIG", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env.update(extra)
    return env


def settings_file(tmp_path, command=COMMAND):
    path = tmp_path / "settings.json"
    handler = {"type": "command", "name": "guard", "command": command, "timeout": 5000}
    text = json.dumps({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [handler]}]}}, indent=2) + "\n"
    path.write_text(text)
    return path, text


def handler_of(path):
    return json.loads(path.read_text())["hooks"]["BeforeTool"][0]["hooks"][0]


def gemini_would_expand(line):
    return any("$" + name in line for name in settings.GEMINI_EXPANDED)


def test_the_prelude_leaves_nothing_for_gemini_to_expand_and_uninstall_restores(tmp_path):
    path, original = settings_file(tmp_path)
    settings.wrap_settings(str(path), "gemini", environ=clean_env())
    handler = handler_of(path)
    assert not gemini_would_expand(handler["command"])
    assert settings._launch_of(handler).original == COMMAND  # the user's command, as written
    report = settings.wrap_settings(str(path), "gemini", environ=clean_env())
    assert report.wrapped == [] and "already runs under failsecure" in report.left[0].why  # idempotent
    settings.unwrap_settings(str(path))
    assert path.read_text() == original


def test_a_command_without_gemini_variables_is_written_as_before_twin(tmp_path):
    path, _original = settings_file(tmp_path, "guard.sh")
    settings.wrap_settings(str(path), "gemini", environ=clean_env())
    launch = settings._launch_of(handler_of(path))
    assert handler_of(path)["command"] == launch.regenerate()["command"] and "$''" not in handler_of(path)["command"]


def earlier_install(path):
    """What `hook install` wrote before the protection: the same prelude, the variables as they were."""
    settings.wrap_settings(str(path), "gemini", environ=clean_env())
    document = json.loads(path.read_text())
    handler = document["hooks"]["BeforeTool"][0]["hooks"][0]
    launch = settings._launch_of(handler)
    handler["command"] = settings.prelude(launch.python, launch.runner, launch.protocol, launch.hook_id, float(launch.timeout),
                                          launch.token, launch.original, shell=launch.shell, options=launch.options, _unprotected=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    assert gemini_would_expand(handler_of(path)["command"]) and settings._launch_of(handler_of(path)) is not None


def test_an_earlier_install_is_upgraded_by_a_reinstall(tmp_path):
    path, original = settings_file(tmp_path)
    earlier_install(path)
    report = settings.wrap_settings(str(path), "gemini", environ=clean_env())
    assert len(report.wrapped) == 1 and not gemini_would_expand(handler_of(path)["command"])
    settings.unwrap_settings(str(path))
    assert path.read_text() == original


def test_an_earlier_install_is_uninstalled_exactly(tmp_path):
    path, original = settings_file(tmp_path)
    earlier_install(path)
    assert settings.unwrap_settings(str(path)) == 1 and path.read_text() == original


def test_an_edited_earlier_install_is_left_as_it_is(tmp_path):
    path, _original = settings_file(tmp_path)
    earlier_install(path)
    document = json.loads(path.read_text())
    document["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] = 9000  # the user's edit since
    path.write_text(json.dumps(document, indent=2) + "\n")
    before = path.read_text()
    report = settings.wrap_settings(str(path), "gemini", environ=clean_env())
    assert report.wrapped == [] and "edited since" in report.left[0].why and path.read_text() == before


@pytest.mark.parametrize("cwd,wanted", [
    ("/work/plain", "/work/plain/hooks/guard.sh --session s-1 && echo /work/plain"),
    ("/work/my project", "'/work/my project'/hooks/guard.sh --session s-1 && echo '/work/my project'"),
    ("/work/a); exit 0; (b", "'/work/a); exit 0; (b'/hooks/guard.sh --session s-1 && echo '/work/a); exit 0; (b'"),
    ("/work/it's", "\"/work/it's\"/hooks/guard.sh --session s-1 && echo \"/work/it's\""),
])
def test_the_runner_expands_as_gemini_does(cwd, wanted):
    # shell-quote's quote([cwd]), as Gemini's escapeShellArg (checked against the bundled
    # JavaScript on 3,000 random strings while writing this)
    assert gemini_expand(COMMAND, {"cwd": cwd, "session_id": "s-1"}) == wanted


def test_the_runner_runs_the_expanded_command(tmp_path):
    project = tmp_path / "my project"
    (project / "hooks").mkdir(parents=True)
    guard = project / "hooks" / "guard.sh"
    guard.write_text("#!/bin/sh\ncat >/dev/null\necho 'guard says no' >&2; exit 2\n")
    guard.chmod(0o755)
    config = tmp_path / "failsecure.toml"
    config.write_text("")
    launch = settings.launch_argv(sys.executable, settings.runner_path())
    line = launch + ["run", "--protocol", "gemini", "--timeout", "10", "--hook-id", "guard", "--config", str(config),
                     "--cache-home", str(tmp_path / "cache"),
                     "--", "/bin/sh", "-c", "$GEMINI_PROJECT_DIR/hooks/guard.sh"]
    payload = json.loads(payload_for("gemini"))
    payload["cwd"] = str(project)
    proc = subprocess.run(line, input=json.dumps(payload).encode(), capture_output=True, env=clean_env(), timeout=30)
    assert proc.returncode == 2 and b"guard says no" in proc.stdout
    guard.write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")  # twin
    proc = subprocess.run(line, input=json.dumps(payload).encode(), capture_output=True, env=clean_env(), timeout=30)
    assert (proc.returncode, proc.stdout) == (0, b"")


def test_doctor_notes_an_earlier_install_until_a_reinstall(tmp_path):
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    path, _original = settings_file(home / ".gemini")
    earlier_install(path)
    env = dict(clean_env(), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    doctor = [sys.executable, "-m", "failsecure", "doctor", "--no-self-test"]
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=120)
    assert "1 wrapped hook(s) whose launch line still carries $GEMINI_PROJECT_DIR" in out.stdout, out.stdout
    settings.wrap_settings(str(path), "gemini", environ=clean_env())  # twin: re-installed, no note
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=120)
    assert "still carries" not in out.stdout, out.stdout
