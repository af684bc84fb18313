"""Gemini CLI 0.61.0 expands `$GEMINI_PROJECT_DIR`, `$GEMINI_CWD`, `$GEMINI_PLANS_DIR`,
`$GEMINI_SESSION_ID` and `$CLAUDE_PROJECT_DIR` TEXTUALLY in a hook's command before
the shell runs it (HookRunner.expandCommand: `command.replace(/\\$GEMINI_PROJECT_DIR/g,
escapeShellArg(cwd))`, a shell-quoted word). In the bare command that word lands
where the user wrote the variable, unquoted, so a project folder with a space works.
Under the prelude the user's command is ONE single-quoted word: the quoted folder
closes that quote, so the words after it are the prelude's own: a folder with a space
broke the launch (a false deny), and a folder named so that it closes the runner's
`$(...)` and says `exit 0` swallowed the runner's deny (the tool ran where the bare
hook blocks). Each: the bare hook (the host itself) first, then under the runner."""

import json
import os

import pytest
from gemini_rig import base_settings
from test_gemini_cli_e2e import audit_events, failsecure

FOLDERS = {"space": "my project", "crafted": "a); exit 0; (b"}


@pytest.fixture
def project_named(gemini_env):
    def make(name):
        project = gemini_env["project"].parent / name
        (project / "hooks").mkdir(parents=True)
        (gemini_env["home"] / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
        return project

    return make


def guard(project, body):
    script = project / "hooks" / "guard.sh"
    script.write_text("#!/bin/sh\ncat >/dev/null\n%s\n" % body)
    script.chmod(0o755)


def settings_with(run_gemini, command):
    handler = {"type": "command", "name": "guard", "command": command, "timeout": 20000}
    document = dict(base_settings(), hooks={"BeforeTool": [{"matcher": "run_shell_command", "hooks": [handler]}]})
    run_gemini.settings.write_text(json.dumps(document, indent=2) + "\n")


def run_in(run_gemini, gemini_cli, project):
    import subprocess

    return subprocess.run([gemini_cli, "-p", "make the marker", "--yolo", "--output-format", "stream-json"], cwd=str(project),
                          env=run_gemini.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)


def ran(scripted_api):
    return os.path.exists(scripted_api.marker)


def install(run_gemini):
    proc = failsecure(run_gemini, "install", "--host", "gemini", str(run_gemini.settings))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("variable", ["$GEMINI_PROJECT_DIR", "$CLAUDE_PROJECT_DIR"])
def test_premise_the_bare_hook_runs_in_a_folder_with_a_space(run_gemini, gemini_cli, scripted_api, project_named, variable):
    project = project_named(FOLDERS["space"])
    guard(project, "exit 0")
    settings_with(run_gemini, variable + "/hooks/guard.sh")
    assert run_in(run_gemini, gemini_cli, project).returncode == 0 and ran(scripted_api)


@pytest.mark.parametrize("variable", ["$GEMINI_PROJECT_DIR", "$CLAUDE_PROJECT_DIR"])
def test_a_wrapped_allowing_guard_allows_in_a_folder_with_a_space(run_gemini, gemini_cli, scripted_api, project_named, variable):
    project = project_named(FOLDERS["space"])
    guard(project, "exit 0")
    settings_with(run_gemini, variable + "/hooks/guard.sh")
    install(run_gemini)
    assert run_in(run_gemini, gemini_cli, project).returncode == 0 and ran(scripted_api)
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [("abstain", None)]


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_premise_the_bare_denying_hook_blocks(run_gemini, gemini_cli, scripted_api, project_named, folder):
    project = project_named(FOLDERS[folder])
    guard(project, "echo 'guard says no' >&2; exit 2")
    settings_with(run_gemini, "$GEMINI_PROJECT_DIR/hooks/guard.sh")
    assert run_in(run_gemini, gemini_cli, project).returncode == 0 and not ran(scripted_api)


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_a_wrapped_denying_guard_blocks_whatever_the_folder_is_named(run_gemini, gemini_cli, scripted_api, project_named, folder):
    project = project_named(FOLDERS[folder])
    guard(project, "echo 'guard says no' >&2; exit 2")
    settings_with(run_gemini, "$GEMINI_PROJECT_DIR/hooks/guard.sh")
    install(run_gemini)
    assert run_in(run_gemini, gemini_cli, project).returncode == 0
    assert not ran(scripted_api), "the tool ran"
    assert "guard says no" in json.dumps(scripted_api.function_responses())
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [("deny", None)]


def test_a_wrapped_allowing_guard_allows_in_a_crafted_folder_twin(run_gemini, gemini_cli, scripted_api, project_named):
    project = project_named(FOLDERS["crafted"])
    guard(project, "exit 0")
    settings_with(run_gemini, "$GEMINI_PROJECT_DIR/hooks/guard.sh")
    install(run_gemini)
    assert run_in(run_gemini, gemini_cli, project).returncode == 0 and ran(scripted_api)
    assert [(e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [("abstain", None)]
