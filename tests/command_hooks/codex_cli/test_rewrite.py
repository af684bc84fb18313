"""Codex CLI 0.169.0 honours `hookSpecificOutput.updatedInput` on a PreToolUse allow:
the tool runs the rewritten arguments (measured: the rewritten command runs, the
original does not). The runner's Codex schema has no `updatedInput`, so such an answer
is `invalid` under it: a false deny where the bare guard's own rewrite runs. Kept as a
strict xfail (reading it as Codex does would change the strict oracle of
tests/command_hooks/host_rules.py, `_CODEX_SPECIFIC`, which the fuzz tests use); the
twin: a deny carrying a rewrite stays a deny."""

import json
import os

import pytest
from codex_rig import trust_hooks
from test_codex_cli_e2e import guarded, hook_script, hooks_with


def rewriting(tmp_path, marker2, decision="allow"):
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                                "permissionDecisionReason": "rewritten",
                                                "updatedInput": {"command": "touch %s" % marker2}}})
    return hook_script(tmp_path, "rewrite.sh", "printf '%%s\\n' '%s'" % answer)


def test_premise_codex_runs_the_rewritten_call(tmp_path, run_codex, scripted_api):
    marker2 = str(tmp_path / "marker2")
    hooks_with(run_codex.hooks, rewriting(tmp_path, marker2))
    trust_hooks(run_codex)
    run_codex()
    assert os.path.exists(marker2) and not os.path.exists(scripted_api.marker)


@pytest.mark.xfail(strict=True, reason=(
    "the runner's Codex schema has no updatedInput: the guard's own rewrite is invalid (a "
    "deny) under the runner, while Codex 0.169.0 runs it"))
def test_under_the_runner_the_guards_rewrite_runs(tmp_path, run_codex, scripted_api):
    marker2 = str(tmp_path / "marker2")
    guarded(run_codex, rewriting(tmp_path, marker2))
    run_codex()
    assert os.path.exists(marker2) and not os.path.exists(scripted_api.marker)


def test_under_the_runner_a_deny_with_a_rewrite_is_a_deny(tmp_path, run_codex, scripted_api):
    marker2 = str(tmp_path / "marker2")
    guarded(run_codex, rewriting(tmp_path, marker2, decision="deny"))
    run_codex()
    assert not os.path.exists(marker2) and not os.path.exists(scripted_api.marker)
