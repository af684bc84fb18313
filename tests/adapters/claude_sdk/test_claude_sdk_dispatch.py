"""The SDK's real dispatcher (``Query._handle_control_request``) answering the CLI's
control requests, without the CLI: what each PreToolUse callback and ``can_use_tool``
answer is turned into, which failure branch ran (audit), and the unpatched twins."""

from __future__ import annotations

import asyncio
import threading

import sys

import pytest

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py
SECRET, named = sdk_rig.SECRET, sdk_rig.named

import failsecure
from failsecure import plugins
from failsecure.verdict import Action, Verdict

PRE = "PreToolUse"


def out(decision=None, reason=None, **extra):
    specific = {"hookEventName": PRE}
    if decision is not None:
        specific["permissionDecision"] = decision
    if reason is not None:
        specific["permissionDecisionReason"] = reason
    specific.update(extra)
    return {"hookSpecificOutput": specific}


def gate(name, answer=None, *, raises=None, hang=None):
    async def cb(input_data, tool_use_id, context):
        if raises is not None:
            raise raises
        if hang is not None:
            await asyncio.get_running_loop().run_in_executor(None, hang.wait, 2)
        return answer

    return named(cb, name)


def matchers(*callbacks, matcher="Bash"):
    return {PRE: [{"matcher": matcher, "hooks": [cb]} for cb in callbacks]}


def dispatch(hooks, **kwargs):
    return asyncio.run(sdk_rig.dispatch(hooks, **kwargs))


def decisions(answers):
    return [sdk_rig.decision_of(a) for a in answers]


def outcome(event, name):
    found = [o for o in event["outcomes"] if o["hook"].endswith("." + name)]
    assert len(found) == 1, event["outcomes"]
    return found[0]


# ---------------------------------------------------------------- fault kinds


@pytest.mark.parametrize(
    "name, kwargs, failure, exc_type",
    [
        ("raising", {"raises": RuntimeError("boom " + SECRET)}, "raised", "RuntimeError"),
        ("exiting", {"raises": SystemExit(3)}, "raised", "SystemExit"),
        ("returns_none", {"answer": None}, "invalid", None),
        ("wrong_case", {"answer": out("Deny")}, "invalid", None),
        ("unknown_decision", {"answer": out("maybe")}, "invalid", None),
        ("not_a_dict", {"answer": "deny"}, "invalid", None),
        ("wrong_event", {"answer": {"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}}}, "invalid", None),
        ("backgrounded", {"answer": {"async_": True}}, "invalid", None),
    ],
)
def test_a_failing_callback_is_answered_with_an_explicit_deny(rig, name, kwargs, failure, exc_type):
    _, answers = dispatch(matchers(gate(name, **kwargs)))
    assert decisions(answers) == ["deny"]
    reason = answers[0]["response"]["hookSpecificOutput"]["permissionDecisionReason"]
    assert name in reason and f"({failure})" in reason
    assert SECRET not in str(answers)
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] == failure and event["exception_type"] == exc_type
    assert event["tool"] == "Bash" and event["call_id"] == "toolu_unit_1"


@pytest.mark.parametrize("answer", [{}, out("allow"), out("allow", updatedInput=None), {"continue_": True}])
def test_allow_twin_valid_answers_pass_through_untouched(rig, answer):
    _, answers = dispatch(matchers(gate("valid", answer)))
    assert answers[0]["subtype"] == "success"
    # as upstream sends it (continue_ -> continue)
    assert answers[0]["response"] == {("continue" if k == "continue_" else k): v for k, v in answer.items()}
    assert rig.last()["outcome"] in ("allow", "abstain") and rig.last()["failure"] is None


def test_upstream_twin_fails_open_and_leaks_the_exception_text(rig, adapter):
    failsecure.uninstall()
    try:
        _, raised = dispatch(matchers(gate("raising", raises=RuntimeError("boom " + SECRET))))
        _, none = dispatch(matchers(gate("returns_none", None)))
        _, junk = dispatch(matchers(gate("wrong_case", out("Deny"))))
    finally:
        failsecure.install()
        assert adapter.state == "patched"
    # an error response is "no decision" for the CLI; the exception text goes with it
    assert raised[0]["subtype"] == "error" and SECRET in raised[0]["error"]
    assert none[0]["subtype"] == "error"
    assert sdk_rig.decision_of(junk[0]) == "Deny"  # the CLI reads it as no decision
    assert rig.events() == []


def test_a_hanging_callback_times_out(rig):
    release = threading.Event()
    try:
        _, answers = dispatch(matchers(gate("hanging", out("allow"), hang=release)))
    finally:
        release.set()
    assert decisions(answers) == ["deny"]
    assert rig.last()["failure"] == "timeout"


def test_a_sync_callback_hanging_is_abandoned_at_the_deadline(rig):
    release = threading.Event()

    def blocking(input_data, tool_use_id, context):  # upstream cannot even await it
        release.wait(2)
        return out("allow")

    try:
        _, answers = dispatch(matchers(named(blocking, "blocking")))
    finally:
        release.set()
    assert decisions(answers) == ["deny"]
    assert rig.last()["failure"] == "timeout"


def test_the_cli_deadline_bounds_failsecures_own(rig):
    """No failsecure deadline configured: the matcher's timeout (the CLI's) still bounds
    the callback, so the answer reaches the CLI before it gives up."""
    rig.config(timeout=0)
    release = threading.Event()
    try:
        hooks = {PRE: [{"matcher": "Bash", "hooks": [gate("hanging", out("allow"), hang=release)], "timeout": 0.5}]}
        _, answers = dispatch(hooks)
    finally:
        release.set()
    assert decisions(answers) == ["deny"]
    assert rig.last()["failure"] == "timeout"


# ---------------------------------------------------------------- several callbacks


@pytest.mark.parametrize("order", ["deny first", "deny last"])
def test_a_deny_outranks_allows_in_any_order(rig, order):
    callbacks = [gate("allowing", out("allow")), gate("denying", out("deny", "policy says no"))]
    if order == "deny first":
        callbacks.reverse()
    _, answers = dispatch(matchers(*callbacks))
    assert decisions(answers) == ["deny", "deny"]
    events = rig.events()
    assert len(events) == 1  # one decision per tool call, whatever the number of callbacks
    assert events[0]["outcome"] == "deny" and events[0]["hook"].endswith(".denying")


def test_a_failure_outranks_allows_across_matchers(rig):
    hooks = {PRE: [{"matcher": "Bash", "hooks": [gate("allowing", out("allow"))]},
                   {"matcher": None, "hooks": [gate("raising", raises=ValueError("x"))]}]}
    _, answers = dispatch(hooks)
    assert decisions(answers) == ["deny", "deny"]
    assert outcome(rig.last(), "raising")["failure"] == "raised"


@pytest.mark.parametrize("order", ["ask first", "ask last"])
def test_ask_outranks_allow(rig, order):
    callbacks = [gate("allowing", out("allow")), gate("asking", out("ask", "confirm"))]
    if order == "ask first":
        callbacks.reverse()
    _, answers = dispatch(matchers(*callbacks))
    assert decisions(answers) == ["ask", "ask"]
    assert rig.last()["outcome"] == "ask"


def test_a_callback_whose_matcher_does_not_select_the_tool_is_not_called(rig):
    called = []

    async def edit_only(input_data, tool_use_id, context):
        called.append(1)
        return out("deny", "no edits")

    hooks = {PRE: [{"matcher": "Edit|Write", "hooks": [named(edit_only, "edit_only")]},
                   {"matcher": "Bash", "hooks": [gate("allowing", out("allow"))]}]}
    _, answers = dispatch(hooks)
    assert decisions(answers) == ["allow"] and called == []


# ---------------------------------------------------------------- argument integrity


def test_a_rewrite_is_judged_by_every_gate_and_carried_by_every_answer(rig):
    seen = []

    async def policy(input_data, tool_use_id, context):
        command = input_data["tool_input"]["command"]
        seen.append(command)
        return out("deny", "forbidden") if "forbidden" in command else out("allow")

    async def smuggler(input_data, tool_use_id, context):
        return out(updatedInput=dict(input_data["tool_input"], command="forbidden"))

    _, answers = dispatch(matchers(named(policy, "policy"), named(smuggler, "smuggler")), tool_input={"command": "harmless"})
    assert decisions(answers) == ["deny", "deny"]
    assert seen == ["harmless", "forbidden"]
    assert rig.last()["hook"].endswith(".policy")


def test_allow_twin_a_harmless_rewrite_runs_with_the_final_input(rig):
    async def policy(input_data, tool_use_id, context):
        return out("deny", "forbidden") if "forbidden" in input_data["tool_input"]["command"] else out("allow")

    async def tidy(input_data, tool_use_id, context):
        if input_data["tool_input"]["command"] == "ls -la":
            return {}
        return out(updatedInput={"command": "ls -la"})

    _, answers = dispatch(matchers(named(policy, "policy"), named(tidy, "tidy")), tool_input={"command": "ls"})
    for answer in answers:
        assert answer["response"]["hookSpecificOutput"]["updatedInput"] == {"command": "ls -la"}
    assert decisions(answers) == ["allow", None]


def test_a_rewrite_that_never_settles_is_denied(rig):
    async def grower(input_data, tool_use_id, context):
        return out(updatedInput={"command": input_data["tool_input"]["command"] + "x"})

    _, answers = dispatch(matchers(named(grower, "grower")))
    assert decisions(answers) == ["deny"]
    assert rig.last()["failure"] == "invalid" and rig.last()["hook"] == "claude-agent-sdk:updatedInput"


def test_a_stamping_callback_is_not_denied(rig):
    """Issue 25: a callback that writes a fresh key into the input on every round (an
    idempotency key) settles; the input every gate judged is the one that runs."""
    fresh = iter(range(100))
    seen = []

    async def policy(input_data, tool_use_id, context):
        seen.append(dict(input_data["tool_input"]))
        return out("deny", "forbidden") if "forbidden" in input_data["tool_input"]["command"] else out("allow")

    async def stamper(input_data, tool_use_id, context):
        return out(updatedInput=dict(input_data["tool_input"], idempotency_key=f"k-{next(fresh)}"))

    _, answers = dispatch(matchers(named(policy, "policy"), named(stamper, "stamper")), tool_input={"command": "harmless"})
    assert decisions(answers) == ["allow", None]
    final = answers[0]["response"]["hookSpecificOutput"]["updatedInput"]
    assert final["command"] == "harmless" and final == seen[-1]  # the policy judged what runs
    assert rig.last()["failure"] is None
    # twin: the stamped call the policy denies is denied
    _, answers = dispatch(matchers(named(policy, "policy"), named(stamper, "stamper")), tool_input={"command": "forbidden"})
    assert decisions(answers) == ["deny", "deny"] and rig.last()["hook"].endswith(".policy")


# ---------------------------------------------------------------- required, plugins, config


def test_a_missing_required_callback_denies_even_with_no_callback_at_all(rig):
    rig.config(top='required = ["claude-agent-sdk:policy.gate"]')
    query, answers = dispatch({})
    assert decisions(answers) == ["deny"]  # failsecure's own catch-all gate answered
    assert rig.last()["failure"] == "missing" and rig.last()["hook"] == "claude-agent-sdk:policy.gate"


def test_allow_twin_a_required_callback_registered_for_other_tools_is_present(rig):
    async def edit_gate(input_data, tool_use_id, context):
        return out("deny", "no")

    edit_gate.__module__, edit_gate.__qualname__ = "policy", "gate"
    rig.config(top='required = ["claude-agent-sdk:policy.gate"]')
    _, answers = dispatch({PRE: [{"matcher": "Edit", "hooks": [edit_gate]}]})
    assert decisions(answers) == [None]
    assert rig.last()["outcome"] == "abstain" and rig.last()["failure"] is None


class RaisingPlugin:
    @failsecure.hookimpl
    def failsecure_pre_tool_call(self, call):
        raise RuntimeError(SECRET)


class PolicyPlugin:
    @failsecure.hookimpl
    def failsecure_pre_tool_call(self, call):
        if "forbidden" in str((call.arguments or {}).get("command")):
            return Verdict(action=Action.DENY, reason="plugin policy")
        return Verdict(action=Action.ALLOW)


@pytest.mark.parametrize("plugin, command, expected", [
    (RaisingPlugin, "ls", "deny"), (PolicyPlugin, "forbidden", "deny"), (PolicyPlugin, "ls", None),
])
def test_the_cross_framework_gate_is_consulted_with_no_callback_registered(rig, plugin, command, expected):
    instance = plugin()
    plugins.register(instance, name="sdk-test-plugin")
    try:
        _, answers = dispatch({}, tool_input={"command": command})
    finally:
        plugins.unregister(instance)
    assert decisions(answers) == [expected]
    if plugin is RaisingPlugin:
        assert rig.last()["failure"] == "raised" and rig.last()["exception_type"] == "RuntimeError"
        assert SECRET not in str(answers) and SECRET not in rig.audit_path.read_text()


def test_an_invalid_config_denies(rig, tmp_path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text('on_error = "maybe"\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(bad))
    from failsecure import policy

    assert policy.reload().error
    _, answers = dispatch(matchers(gate("allowing", out("allow"))))
    assert decisions(answers) == ["deny", "deny"]  # the callback's and failsecure's own catch-all
    assert "failsecure:config" in answers[0]["response"]["hookSpecificOutput"]["permissionDecisionReason"]


# ---------------------------------------------------------------- observers


def test_other_hook_events_are_untouched(rig):
    async def post(input_data, tool_use_id, context):
        return None

    pre = gate("allowing", out("allow"))
    hooks = {"PostToolUse": [{"matcher": None, "hooks": [post]}], PRE: [{"matcher": None, "hooks": [pre]}]}
    query, _ = dispatch(hooks)
    assert query.hooks["PostToolUse"][0]["hooks"][0] is post
    assert query.hooks[PRE][0]["hooks"][0] is not pre  # the guarded trigger
    assert hooks[PRE][0]["hooks"][0] is pre  # the caller's own dict is not changed


# ---------------------------------------------------------------- can_use_tool


def perm(query_hooks=None, callback=None, **kwargs):
    async def go():
        query, _ = await sdk_rig.dispatch(query_hooks or {}, can_use_tool=callback)
        return await sdk_rig.permission(query, **kwargs)

    return asyncio.run(go())


def permission_callback(name, answer=None, *, raises=None, hang=None):
    async def cb(tool_name, input_data, context):
        if raises is not None:
            raise raises
        if hang is not None:
            await asyncio.get_running_loop().run_in_executor(None, hang.wait, 2)
        return answer() if callable(answer) else answer

    return named(cb, name)


@pytest.mark.parametrize("name, kwargs, failure", [
    ("perm_raising", {"raises": KeyError(SECRET)}, "raised"),
    ("perm_none", {"answer": None}, "invalid"),
    ("perm_dict", {"answer": {"behavior": "allow"}}, "invalid"),
])
def test_can_use_tool_failures_deny(rig, name, kwargs, failure):
    answer = perm(callback=permission_callback(name, **kwargs))
    assert answer["subtype"] == "success"
    assert answer["response"]["behavior"] == "deny"
    assert name in answer["response"]["message"] and f"({failure})" in answer["response"]["message"]
    assert SECRET not in str(answer)
    assert rig.last()["failure"] == failure


def test_can_use_tool_hanging_denies_with_its_own_deadline(rig, adapter):
    """can_use_tool may wait for a person: no default deadline, a per-hook one applies."""
    release = threading.Event()
    callback = permission_callback("perm_hanging", hang=release)
    rig.config(tables=f'[hooks."{adapter.callable_id(callback)}"]\ntimeout = 0.3\n')
    try:
        answer = perm(callback=callback)
    finally:
        release.set()
    assert answer["response"]["behavior"] == "deny"
    assert rig.last()["failure"] == "timeout"


def test_can_use_tool_allow_and_deny_twins_pass_through(rig):
    from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

    allowed = perm(callback=permission_callback("perm_allow", lambda: PermissionResultAllow()))
    assert allowed["response"] == {"behavior": "allow", "updatedInput": {"command": "true"}}
    denied = perm(callback=permission_callback("perm_deny", lambda: PermissionResultDeny(message="nope")))
    assert denied["response"] == {"behavior": "deny", "message": "nope"}


def test_can_use_tool_rewrite_is_judged_by_the_pretooluse_gates(rig):
    from claude_agent_sdk import PermissionResultAllow

    async def policy(input_data, tool_use_id, context):
        return out("deny", "forbidden") if "forbidden" in input_data["tool_input"]["command"] else out("allow")

    smuggle = permission_callback("perm_smuggle", lambda: PermissionResultAllow(updated_input={"command": "forbidden"}))
    answer = perm(matchers(named(policy, "policy")), smuggle)
    assert answer["response"]["behavior"] == "deny" and "forbidden" in answer["response"]["message"]
    tidy = permission_callback("perm_tidy", lambda: PermissionResultAllow(updated_input={"command": "ls -la"}))
    answer = perm(matchers(named(policy, "policy")), tidy)
    assert answer["response"] == {"behavior": "allow", "updatedInput": {"command": "ls -la"}}


def test_can_use_tool_upstream_twin_leaks_the_exception_text(rig, adapter):
    failsecure.uninstall()
    try:
        answer = perm(callback=permission_callback("perm_raising", raises=KeyError(SECRET)), )
    finally:
        failsecure.install()
    assert answer["subtype"] == "error" and SECRET in answer["error"]
