"""A Claude-style command hook may answer "allow, with this input instead"
(``hookSpecificOutput.updatedInput``, Claude Code's PreToolUse rewrite). code-puppy's hook
engine never applies it: the tool runs with the original input, which the hook approved
only as rewritten. With failsecure such an answer is one code-puppy cannot honour: denied,
``invalid``; an ``updatedInput`` that is the input the hook was shown is no rewrite."""

from __future__ import annotations

import json
import shlex

import pytest

pytest.importorskip("code_puppy.hook_engine.executor")
plugin = pytest.importorskip("code_puppy_core_plugins.claude_code_hooks.register_callbacks")

INPUT = {"command": "rm -rf build"}


@pytest.fixture
def command_hook(cb, rig, monkeypatch):
    from code_puppy.hook_engine import HookEngine

    def install(command: str, timeout_ms: int = 5000):
        config = {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": timeout_ms}]}]}
        monkeypatch.setattr(plugin, "_hook_engine", HookEngine(config, strict_validation=False))
        cb.register_callback("pre_tool_call", plugin.on_pre_tool_call_hook)

    return install


def answering(answer: dict) -> str:
    return "cat >/dev/null; printf '%s' " + shlex.quote(json.dumps(answer))


def allow_with(updated) -> dict:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": updated}}


def dispatch(cb, run):
    return run(cb.on_pre_tool_call("agent_run_shell_command", dict(INPUT)))


def blocked(results):
    return [r for r in results if isinstance(r, dict) and r.get("blocked")]


def process_outcome(rig):
    found = [o for o in rig.last()["outcomes"] if o["hook"].startswith("code-puppy:command:")]
    assert len(found) == 1, rig.last()["outcomes"]
    return found[0]


def test_a_rewrite_code_puppy_never_applies_denies(cb, rig, run, command_hook, adapter):
    command_hook(answering(allow_with({"command": "rm -rf build --dry-run"})))
    assert blocked(dispatch(cb, run))
    assert rig.last()["outcome"] == "deny" and process_outcome(rig)["failure"] == "invalid"
    adapter.unpatch()
    try:  # upstream: "not blocked", the original command would run
        assert not blocked(dispatch(cb, run))
    finally:
        adapter.patch()


def test_an_updated_input_that_is_the_input_shown_runs(cb, rig, run, command_hook):
    command_hook(answering(allow_with(dict(INPUT))))
    assert not blocked(dispatch(cb, run))
    assert rig.last()["outcome"] in ("allow", "abstain") and process_outcome(rig)["failure"] is None


def test_a_deny_with_an_updated_input_blocks_with_its_reason(cb, rig, run, command_hook):
    answer = allow_with({"command": "x"})
    answer["hookSpecificOutput"].update(permissionDecision="deny", permissionDecisionReason="policy 9")
    command_hook(answering(answer))
    blocks = blocked(dispatch(cb, run))
    assert any("policy 9" in b["error_message"] for b in blocks)
    assert process_outcome(rig)["failure"] is None
