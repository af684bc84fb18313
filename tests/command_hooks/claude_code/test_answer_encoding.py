"""How Claude Code 2.1.332 reads a hook's stdout that starts with a UTF-8 byte-order
mark (U+FEFF, bytes EF BB BF), as some editors and Windows tools write one. The bare
hook first (what the host itself does), then the same hook under the runner: the
runner reads the answer as the host does, so a BOM allow is not a false deny, and a
BOM deny stays a deny."""

import json
import os

from test_claude_code_e2e import hook_script, settings_with, tool_result_text

BOM = "\\357\\273\\277"  # printf octal escapes of EF BB BF
BLOCK = json.dumps({"decision": "block", "reason": "bom says no"})
ALLOW = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})


def bom_hook(tmp_path, name, answer):
    return hook_script(tmp_path, name, "printf '%s%%s\\n' '%s'" % (BOM, answer))


def test_premise_claude_code_reads_a_bom_prefixed_deny(tmp_path, run_claude, scripted_api):
    settings_with(run_claude.settings, bom_hook(tmp_path, "deny.sh", BLOCK))
    run_claude()
    assert not os.path.exists(scripted_api.marker), "Claude Code did not read the BOM-prefixed deny"
    _result, text = tool_result_text(scripted_api)
    assert "bom says no" in text


def test_premise_claude_code_reads_a_bom_prefixed_allow(tmp_path, run_claude, scripted_api):
    settings_with(run_claude.settings, bom_hook(tmp_path, "allow.sh", ALLOW))
    run_claude()
    assert os.path.exists(scripted_api.marker)
