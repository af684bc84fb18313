"""How Claude Code 2.1.332 reads a hook's stdout padded the way some editors and tools
write it: a UTF-8 byte-order mark (U+FEFF, bytes EF BB BF), two of them, U+00A0, a
form feed. It parses the trimmed text (JavaScript's trim strips all of these), so a
deny after any of them blocks. The bare hook first (what the host itself does), then
the same hooks under the runner: the runner reads the answer as the host does, so a
padded allow is not a false deny, and a padded deny stays the hook's deny."""

import json
import os

import pytest
from test_claude_code_e2e import audit_events, hook_id, hook_script, install, settings_with, tool_result_text

PADS = {"bom": "\\357\\273\\277", "two-boms": "\\357\\273\\277\\357\\273\\277", "nbsp": "\\302\\240", "formfeed": "\\014"}
BLOCK = json.dumps({"decision": "block", "reason": "padded says no"})
ALLOW = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})


def padded_hook(tmp_path, name, pad, answer):
    return hook_script(tmp_path, name, "printf '%s%%s\\n' '%s'" % (PADS[pad], answer))


@pytest.mark.parametrize("pad", sorted(PADS))
def test_premise_claude_code_reads_a_padded_deny(tmp_path, run_claude, scripted_api, pad):
    settings_with(run_claude.settings, padded_hook(tmp_path, "deny.sh", pad, BLOCK))
    run_claude()
    assert not os.path.exists(scripted_api.marker), "Claude Code did not read the padded deny"
    _result, text = tool_result_text(scripted_api)
    assert "padded says no" in text


def test_premise_claude_code_reads_a_bom_prefixed_allow(tmp_path, run_claude, scripted_api):
    settings_with(run_claude.settings, padded_hook(tmp_path, "allow.sh", "bom", ALLOW))
    run_claude()
    assert os.path.exists(scripted_api.marker)


@pytest.mark.parametrize("pad", sorted(PADS))
def test_under_the_runner_a_padded_deny_is_the_hooks_deny(tmp_path, run_claude, scripted_api, claude_cli, pad):
    script = padded_hook(tmp_path, "deny.sh", pad, BLOCK)
    settings_with(run_claude.settings, script)
    install(run_claude.settings, claude_cli)
    run_claude()
    assert not os.path.exists(scripted_api.marker)
    _result, text = tool_result_text(scripted_api)
    assert "padded says no" in text
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_claude)] == [(hook_id(script), "deny", None)]


@pytest.mark.parametrize("pad", sorted(PADS))
def test_under_the_runner_a_padded_allow_is_an_allow(tmp_path, run_claude, scripted_api, claude_cli, pad):
    script = padded_hook(tmp_path, "allow.sh", pad, ALLOW)
    settings_with(run_claude.settings, script)
    install(run_claude.settings, claude_cli)
    run_claude()
    assert os.path.exists(scripted_api.marker), "a false deny"
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_claude)] == [(hook_id(script), "allow", None)]
