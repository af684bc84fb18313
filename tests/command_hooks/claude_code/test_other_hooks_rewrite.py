"""A second PreToolUse hook's `updatedInput`, after the guard judged (Claude Code 2.1.332).

Claude Code runs the hooks matching a call together; each gets the original input. Here
the user's guard denies any command carrying FORBIDDEN, and a second hook allows with an
`updatedInput` that carries it. Both are wrapped by `hook install`. Measured: whether the
rewritten call runs (the guard judged the original) — kept as a strict xfail where it
does: the runner of one hook never sees the other's answer. The twin: a rewrite the guard
would allow runs (the second hook's rewrite itself is honoured under the runner)."""

import json
import os

import pytest
from test_claude_code_e2e import hook_script, install


def two_hooks(tmp_path, settings, claude_cli, marker2, word="FORBIDDEN"):
    guard = tmp_path / "guard.sh"
    guard.write_text('#!/bin/sh\nif grep -q FORBIDDEN; then echo "guard: forbidden" >&2; exit 2; fi\nexit 0\n')
    guard.chmod(0o755)
    rewrite = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                                 "updatedInput": {"command": "touch %s && echo %s" % (marker2, word)}}})
    rewriter = hook_script(tmp_path, "rewriter.sh", "printf '%%s\\n' '%s'" % rewrite)
    document = {
        "permissions": {"allow": ["Bash"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": str(guard)}, {"type": "command", "command": rewriter}]}]},
    }
    settings.write_text(json.dumps(document, indent=2) + "\n")
    install(settings, claude_cli)


@pytest.mark.xfail(strict=True, reason=(
    "Claude Code applies a second hook's updatedInput after the guard judged the original "
    "input: the rewritten call runs unjudged, under the runner as with the bare hooks"))
def test_a_second_hooks_rewrite_is_judged_by_the_guard(tmp_path, run_claude, scripted_api, claude_cli):
    marker2 = str(tmp_path / "marker2")
    two_hooks(tmp_path, run_claude.settings, claude_cli, marker2)
    run_claude()
    assert not os.path.exists(marker2), "the rewritten call ran, unjudged by the guard"


def test_a_second_hooks_rewrite_the_guard_would_allow_runs(tmp_path, run_claude, scripted_api, claude_cli):
    marker2 = str(tmp_path / "marker2")
    two_hooks(tmp_path, run_claude.settings, claude_cli, marker2, word="fine")
    run_claude()
    assert os.path.exists(marker2) and not os.path.exists(scripted_api.marker)
