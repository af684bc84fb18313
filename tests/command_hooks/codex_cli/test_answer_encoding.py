"""How Codex CLI 0.169.0 reads a hook's stdout that starts with a UTF-8 byte-order mark
(U+FEFF, bytes EF BB BF). The bare hook first (what the host itself does), then the
same hook under the runner."""

import json
import os

from codex_rig import trust_hooks
from test_codex_cli_e2e import assert_ran, hook_script, hooks_with

BOM = "\\357\\273\\277"  # printf octal escapes of EF BB BF
DENY = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "bom says no"}})


def bom_hook(tmp_path, name, answer):
    return hook_script(tmp_path, name, "printf '%s%%s\\n' '%s'" % (BOM, answer))


def test_premise_codex_does_not_read_a_bom_prefixed_deny(tmp_path, run_codex, scripted_api):
    hooks_with(run_codex.hooks, bom_hook(tmp_path, "deny.sh", DENY))
    trust_hooks(run_codex)
    assert_ran(run_codex(), scripted_api)


def test_premise_codex_reads_the_same_deny_without_the_bom(tmp_path, run_codex, scripted_api):
    hooks_with(run_codex.hooks, hook_script(tmp_path, "deny.sh", "printf '%%s\\n' '%s'" % DENY))
    trust_hooks(run_codex)
    run_codex()
    assert not os.path.exists(scripted_api.marker)
