"""Command hooks code-puppy runs itself (core-plugins' ``claude_code_hooks`` on
``code_puppy.hook_engine``): upstream reads a missing binary, death by a signal and any
exit status but 1 as "not blocked". With failsecure each process is judged by its raw
result with the command runner's rules, and the category reaches the audit."""

from __future__ import annotations

import pytest

pytest.importorskip("code_puppy.hook_engine.executor")
plugin = pytest.importorskip("code_puppy_core_plugins.claude_code_hooks.register_callbacks")


@pytest.fixture
def command_hook(cb, rig, monkeypatch):
    from code_puppy.hook_engine import HookEngine

    def install(command: str, timeout_ms: int = 5000):
        config = {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": timeout_ms}]}]}
        monkeypatch.setattr(plugin, "_hook_engine", HookEngine(config, strict_validation=False))
        cb.register_callback("pre_tool_call", plugin.on_pre_tool_call_hook)

    return install


def dispatch(cb, run):
    return run(cb.on_pre_tool_call("agent_run_shell_command", {"command": "echo secret-payload"}))


def blocked(results):
    return [r for r in results if isinstance(r, dict) and r.get("blocked")]


def process_outcome(rig):
    found = [o for o in rig.last()["outcomes"] if o["hook"].startswith("code-puppy:command:")]
    assert len(found) == 1, rig.last()["outcomes"]
    return found[0]


@pytest.mark.parametrize(
    "command, category",
    [
        ("/nonexistent/failsecure-hook-bin", "missing"),
        ("kill -9 $$", "crashed"),
        ("exit 3", "crashed"),
        ("sleep 5", "timeout"),
    ],
)
def test_failing_command_hook_denies_with_its_category(cb, rig, run, command_hook, command, category):
    rig.config(timeout=10)  # the callback's own deadline well past the hook process's
    command_hook(command, timeout_ms=300 if category == "timeout" else 5000)
    blocks = blocked(dispatch(cb, run))
    said = "is missing" if category == "missing" else f"failed closed ({category})"
    assert any(said in b["error_message"] for b in blocks)
    assert all("secret-payload" not in str(b) for b in blocks)
    assert rig.last()["outcome"] == "deny"
    outcome = process_outcome(rig)
    assert outcome["failure"] == category
    assert "#" in outcome["hook"] and "nonexistent" not in outcome["hook"]  # basename + hash only


def test_claude_style_exit_2_blocks(cb, rig, run, command_hook):
    command_hook("echo no >&2; exit 2")
    assert blocked(dispatch(cb, run))
    assert rig.last()["outcome"] == "deny" and process_outcome(rig)["failure"] is None


def test_command_hook_exit_0_runs(cb, rig, run, command_hook):
    command_hook("exit 0")
    assert not blocked(dispatch(cb, run))
    assert rig.last()["outcome"] in ("allow", "abstain")


def test_command_hook_own_block_keeps_upstream_meaning(cb, rig, run, command_hook):
    command_hook("echo policy says no >&2; exit 1")
    blocks = blocked(dispatch(cb, run))
    assert any("policy says no" in b["error_message"] for b in blocks)  # upstream's own block, its own reason


def test_unpatched_missing_binary_fails_open(cb, rig, run, command_hook, adapter):
    command_hook("/nonexistent/failsecure-hook-bin")
    adapter.unpatch()
    try:
        assert not blocked(dispatch(cb, run))  # upstream: "not blocked", the tool would run
    finally:
        adapter.patch()
    assert blocked(dispatch(cb, run))
