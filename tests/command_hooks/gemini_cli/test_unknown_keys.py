"""Gemini CLI 0.61.0 does not check a hook's answer against a schema: `createHookOutput`
copies `decision`, `reason`, `hookSpecificOutput`, ... and ignores every other key, and
only `block` / `deny` (and `ask`) are decisions — any other value is no block. So an
allow carrying a key of the hook's own (`ruleId`) or answering the legacy word
`approve` lets the tool run. The runner reads every unknown key and every unknown
decision on Gemini's protocol as `invalid` (a deny): a false deny where the bare hook
runs. Kept as strict xfails (reading them as Gemini does would change the strict oracle
of tests/command_hooks/host_rules.py, `_gemini(strict=True)`, and the documented rule);
the deny twin: a deny with the same key stays the hook's deny."""

import json
import os

import pytest
from test_gemini_cli_e2e import assert_ran, audit_events, hook_id, hook_script, install, settings_with

ANSWERS = {
    "extra-key": {"decision": "allow", "ruleId": "r-1"},
    "approve": {"decision": "approve"},
}


def answering(tmp_path, kind, answer):
    return hook_script(tmp_path, kind + ".sh", "printf '%%s\\n' '%s'" % json.dumps(answer))


@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_premise_gemini_runs_the_tool(tmp_path, run_gemini, scripted_api, kind):
    settings_with(run_gemini.settings, answering(tmp_path, kind, ANSWERS[kind]))
    assert_ran(run_gemini(), scripted_api)


@pytest.mark.xfail(strict=True, reason=(
    "the runner reads an unknown key (or decision) on Gemini's protocol as invalid, a deny; "
    "Gemini CLI 0.61.0 ignores the key and runs the tool"))
@pytest.mark.parametrize("kind", sorted(ANSWERS))
def test_under_the_runner_the_tool_runs(tmp_path, run_gemini, scripted_api, kind):
    settings_with(run_gemini.settings, answering(tmp_path, kind, ANSWERS[kind]))
    install(run_gemini)
    assert_ran(run_gemini(), scripted_api)


def test_under_the_runner_a_deny_with_an_extra_key_is_a_deny(tmp_path, run_gemini, scripted_api):
    script = answering(tmp_path, "deny", {"decision": "deny", "reason": "keyed no", "ruleId": "r-1"})
    settings_with(run_gemini.settings, script)
    install(run_gemini)
    proc = run_gemini()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert not os.path.exists(scripted_api.marker)
    assert [(e["hook"], e["outcome"]) for e in audit_events(run_gemini)] == [(hook_id(script), "deny")]
