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


# ---------------------------------------------------------------- exit-0 answers code-puppy cannot honour (issue 27)


def echo(obj_text: str) -> str:
    import shlex

    return "cat >/dev/null; printf '%s' " + shlex.quote(obj_text)


UNHONOURED = [
    # (label, stdout of an exit-0 hook, its twin that code-puppy honours and the call runs)
    ("ask", '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}',
     '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'),
    ("defer", '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer"}}',
     '{"hookSpecificOutput": {"hookEventName": "PreToolUse"}}'),
    ("second-document", '{"decision": "block"}\n{"decision": "approve"}', '{"decision": "approve"}'),
    ("trailing-text", '{"decision": "block", "reason": "no"} and more', '{"decision": "approve", "reason": "fine"}'),
    ("wrong-case", '{"decision": "Block"}', '{"decision": "approve"}'),
    ("wrong-case-result", '{"result": "Block"}', '{"result": "allow"}'),
    ("deny-in-decision", '{"decision": "deny"}', '{"continue": true}'),
]


@pytest.mark.parametrize("label, junk, twin", UNHONOURED, ids=[c[0] for c in UNHONOURED])
def test_exit_0_answer_code_puppy_cannot_honour_denies(cb, rig, run, command_hook, adapter, label, junk, twin):
    command_hook(echo(junk))
    blocks = blocked(dispatch(cb, run))
    assert blocks and rig.last()["outcome"] == "deny"
    outcome = process_outcome(rig)
    assert outcome["failure"] == ("invalid" if label not in ("ask", "defer") else None)
    # upstream as shipped lets each of them through
    adapter.unpatch()
    try:
        assert not blocked(dispatch(cb, run))
    finally:
        adapter.patch()
    command_hook(echo(twin))  # twin: an answer code-puppy honours runs
    assert not blocked(dispatch(cb, run))
    assert rig.last()["outcome"] in ("allow", "abstain")


def test_exit_0_block_and_plain_output_keep_their_meaning(cb, rig, run, command_hook):
    command_hook(echo('{"decision": "block", "reason": "policy 7"}'))
    blocks = blocked(dispatch(cb, run))
    assert any("policy 7" in b["error_message"] for b in blocks)
    command_hook(echo("all good, nothing to say"))  # twin: plain text is output, not a decision
    assert not blocked(dispatch(cb, run))


def test_deny_text_never_carries_the_hooks_command_line(cb, rig, run, command_hook):
    # a token on the command line, and the tool arguments code-puppy substitutes into it
    command_hook("TOKEN=sk-live-hook-token-99 /bin/sh -c 'cat >/dev/null; exit 3' $CLAUDE_TOOL_INPUT")
    blocks = blocked(dispatch(cb, run))
    assert blocks
    for b in blocks:
        text = str(b)
        assert "sk-live-hook-token-99" not in text and "secret-payload" not in text and "exit 3" not in text
    command_hook("TOKEN=sk-live-hook-token-99 /bin/sh -c 'cat >/dev/null; echo nope >&2; exit 1'")
    blocks = blocked(dispatch(cb, run))  # the hook's own block: its own reason, still no command line
    assert any("nope" in b["error_message"] for b in blocks)
    assert all("sk-live-hook-token-99" not in str(b) for b in blocks)


def test_a_background_child_holding_the_pipes_is_not_a_timeout(cb, rig, run, command_hook, adapter):
    # the hook answers and exits at once; a daemon it started keeps stdout open for 30 s
    command_hook("cat >/dev/null; (sleep 30 &) ; exit 0", timeout_ms=1500)
    rig.config(timeout=10)
    assert not blocked(dispatch(cb, run))
    assert rig.last()["outcome"] in ("allow", "abstain")
    # twin: a hook that itself hangs is a timeout
    command_hook("cat >/dev/null; sleep 30", timeout_ms=300)
    assert blocked(dispatch(cb, run))
    assert process_outcome(rig)["failure"] == "timeout"


def test_a_command_hooks_junk_answer_is_the_audited_failure(cb, rig, run, command_hook):
    """The claude_code_hooks callback wraps the judged process's deny in its own block;
    the audit's deciding failure is the process's (``invalid``), not the wrapper's."""
    command_hook("echo '{ broken'")
    blocks = blocked(dispatch(cb, run))
    assert blocks and all("failed closed (invalid)" in b["error_message"] for b in blocks)
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", "invalid")
    assert event["hook"].startswith("code-puppy:command:")


def test_a_command_hooks_own_block_is_audited_as_its_block(cb, rig, run, command_hook):
    command_hook("""echo '{"decision": "block", "reason": "policy says no"}'""")
    blocks = blocked(dispatch(cb, run))
    assert any("policy says no" in b["error_message"] for b in blocks)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


def test_a_required_command_hook_that_ran_and_allowed_is_there(cb, rig, run, command_hook):
    from failsecure.hookid import command_name

    rig.config(top=f'required = ["code-puppy:command:{command_name("exit 0")}"]')
    command_hook("exit 0")
    assert not blocked(dispatch(cb, run))
    assert rig.last()["outcome"] != "deny"


def test_a_required_command_hook_that_is_not_configured_denies(cb, rig, run, command_hook):
    from failsecure.hookid import command_name

    rig.config(top=f'required = ["code-puppy:command:{command_name("exit 0")}"]')
    command_hook("true")  # another hook runs; the required one is not there
    assert blocked(dispatch(cb, run))
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "missing")
