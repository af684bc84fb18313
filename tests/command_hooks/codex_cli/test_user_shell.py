"""A user whose login shell is fish (not a POSIX shell): fish reads the prelude
`hook install` writes (`R=...; if [ ... ]; then`) as a syntax error and exits 0 (no
opinion: the tool would run). Codex 0.169.0 runs hooks with `$SHELL -lc` only for the
shells it knows, and a POSIX shell otherwise, so the installed line still runs under
the runner: a crashing hook is stopped, an allowing one lets the tool run.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from codex_rig import trust_hooks
from test_codex_cli_e2e import assert_ran, assert_stopped, hook_id, hook_script, hooks_with

FISH = shutil.which("fish")
pytestmark = pytest.mark.skipif(FISH is None, reason="fish is not installed (apt-get install fish)")


def _install_under(run_codex, shell):
    env = dict(run_codex.env, SHELL=shell)
    if os.environ.get("PYTHONPATH"):  # the tree under test, as the runner is
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    proc = subprocess.run(
        [sys.executable, "-m", "failsecure", "hook", "install", "--host", "codex", "--codex-bin", run_codex.cli,
         str(run_codex.hooks)], capture_output=True, text=True, timeout=180, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(run_codex.hooks.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]


def test_crashing_hook_stops_the_tool_under_fish(tmp_path, run_codex, scripted_api):
    script = hook_script(tmp_path, "crash.sh", "echo boom >&2; exit 1")
    run_codex.env["SHELL"] = FISH
    hooks_with(run_codex.hooks, script)
    trust_hooks(run_codex)
    _install_under(run_codex, FISH)
    trust_hooks(run_codex)
    assert_stopped(run_codex, scripted_api, hook_id(script), "crashed")


def test_allowing_hook_still_runs_the_tool_under_fish(tmp_path, run_codex, scripted_api):
    script = hook_script(tmp_path, "allow.sh", "exit 0")
    run_codex.env["SHELL"] = FISH
    hooks_with(run_codex.hooks, script)
    trust_hooks(run_codex)
    _install_under(run_codex, FISH)
    trust_hooks(run_codex)
    assert_ran(run_codex(), scripted_api)
