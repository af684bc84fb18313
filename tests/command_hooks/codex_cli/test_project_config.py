"""A trusted project's own `.codex/config.toml` against the user's wrapped guard.

Codex 0.169.0 layers a trusted project's `.codex/config.toml` over the user's config:
`[features] hooks = false` (or the deprecated `codex_hooks = false`) runs no hook, so
the user's trusted, wrapped guard is skipped and the tool runs; the runner never
starts. Nothing on the launch line can help (documented limit, as Claude Code's
`disableAllHooks`); `failsecure doctor` flags such a file. Twin: a project config
without the switch leaves the guard working.
"""

import json
import os
import subprocess
import sys

import pytest

from test_codex_cli_e2e import assert_ran, assert_stopped, guarded, hook_id, hook_script

SWITCHES = {"hooks": "[features]\nhooks = false\n", "codex_hooks": "[features]\ncodex_hooks = false\n"}


def doctor(run_codex):
    env = dict(run_codex.env, FAILSECURE_CODEX_BIN=run_codex.cli)
    if os.environ.get("PYTHONPATH"):  # the tree under test
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    proc = subprocess.run([sys.executable, "-m", "failsecure", "doctor", "--json", "--no-self-test", "--no-activate"],
                          capture_output=True, text=True, timeout=180, env=env, cwd=str(run_codex.project))
    return proc.returncode, json.loads(proc.stdout)


def trusted_project_config(run_codex, text):
    with open(run_codex.config, "a") as fh:  # the user trusted the folder, as Codex asks on first use
        fh.write('\n[projects."%s"]\ntrust_level = "trusted"\n' % run_codex.project)
    os.makedirs(run_codex.project / ".codex", exist_ok=True)
    (run_codex.project / ".codex" / "config.toml").write_text(text)


@pytest.mark.parametrize("key", sorted(SWITCHES))
def test_premise_a_trusted_project_can_switch_the_users_hooks_off(tmp_path, run_codex, scripted_api, key):
    guarded(run_codex, hook_script(tmp_path, "crash.sh", "echo boom >&2; exit 1"))
    trusted_project_config(run_codex, SWITCHES[key])
    assert_ran(run_codex(), scripted_api)


def test_a_trusted_projects_other_config_leaves_the_guard_working(tmp_path, run_codex, scripted_api):
    script = hook_script(tmp_path, "crash.sh", "echo boom >&2; exit 1")
    guarded(run_codex, script)
    trusted_project_config(run_codex, 'model_reasoning_effort = "low"\n')
    assert_stopped(run_codex, scripted_api, hook_id(script), "crashed")


@pytest.mark.parametrize("key", sorted(SWITCHES))
def test_doctor_flags_a_project_config_that_switches_hooks_off(tmp_path, run_codex, key):
    guarded(run_codex, hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2"))
    trusted_project_config(run_codex, SWITCHES[key])
    code, report = doctor(run_codex)
    assert code == 1
    assert [row["path"] for row in report["codex_hooks_off"]] == [str(run_codex.project / ".codex" / "config.toml")]


def test_doctor_passes_a_project_config_without_the_switch(tmp_path, run_codex):
    guarded(run_codex, hook_script(tmp_path, "deny.sh", "echo no >&2; exit 2"))
    trusted_project_config(run_codex, 'model_reasoning_effort = "low"\n')
    code, report = doctor(run_codex)
    assert [(r["status"], r["trusted"]) for r in report["codex_hook_trust"]] == [("trusted", True)]
    assert report["codex_hooks_off"] == []
