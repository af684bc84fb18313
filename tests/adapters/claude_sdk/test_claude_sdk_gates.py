"""Every gate kind of a claude-agent-sdk session, through the SDK's real dispatcher
(``Query._handle_control_request``) answering control requests as the CLI sends them:
a stop answer is sent as the deny the audit records, ``defer`` is a decision, the
``PermissionRequest`` callbacks are gates (and outrank ``can_use_tool``), a deny of any
integrity round stands, late answers are timeouts, a session whose hooks were not applied
refuses to start. Each deny test asserts the failure branch and has an allow twin."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py
SECRET, named = sdk_rig.SECRET, sdk_rig.named

import failsecure  # noqa: E402

PRE, PERM = "PreToolUse", "PermissionRequest"
DEADLINE = 0.3  # the rig's config deadline


def out(decision=None, reason=None, **extra):
    specific = {"hookEventName": PRE}
    if decision is not None:
        specific["permissionDecision"] = decision
    if reason is not None:
        specific["permissionDecisionReason"] = reason
    specific.update(extra)
    return {"hookSpecificOutput": specific}


def perm_out(behavior=None, **extra):
    decision = dict(extra)
    if behavior is not None:
        decision["behavior"] = behavior
    return {"hookSpecificOutput": {"hookEventName": PERM, "decision": decision}}


def gate(name, answer=None, *, raises=None, delay=None):
    async def cb(input_data, tool_use_id, context):
        if delay is not None:
            await asyncio.sleep(delay)
        if raises is not None:
            raise raises
        return answer(input_data) if callable(answer) else answer

    return named(cb, name)


def pre(*callbacks, matcher="Bash"):
    return [{"matcher": matcher, "hooks": [cb]} for cb in callbacks]


def dispatch(hooks, **kwargs):
    return asyncio.run(sdk_rig.dispatch(hooks, **kwargs))


def ask_path(hooks, can_use_tool=None, **kwargs):
    return asyncio.run(sdk_rig.ask_path(hooks, can_use_tool, **kwargs))


def decisions(answers):
    return [sdk_rig.decision_of(a) for a in answers]


def behaviors(answers):
    return [sdk_rig.permission_decision_of(a) for a in answers]


def allowing_permission(name="perm_allow", seen=None):
    from claude_agent_sdk import PermissionResultAllow

    async def cb(tool_name, input_data, context):
        if seen is not None:
            seen.append(input_data)
        return PermissionResultAllow()

    return named(cb, name)


# ---------------------------------------------------------------- a stop answer


@pytest.mark.parametrize("answer", [
    {"continue_": False, "stopReason": "stop the run"},
    {"continue_": False},
    {"decision": "block", "reason": "blocked"},
    {"continue_": False, "hookSpecificOutput": {"hookEventName": PRE, "permissionDecision": "allow"}},
], ids=["continue_ False", "continue_ False, no reason", "decision block", "continue_ False beside an allow"])
def test_a_stop_answer_is_sent_as_the_deny_the_audit_records(rig, answer):
    _, answers = dispatch({PRE: pre(gate("stopper", answer))})
    assert decisions(answers) == ["deny"]  # the shape the CLI reads as a deny of the tool
    response = answers[0]["response"]
    assert response["hookSpecificOutput"]["permissionDecisionReason"]
    if answer.get("continue_") is False:
        assert response["continue"] is False  # the callback's own stop is kept beside it
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] is None and event["hook"].endswith(".stopper")


def test_a_stop_answer_outranks_an_allow_and_every_answer_says_deny(rig):
    _, answers = dispatch({PRE: pre(gate("allowing", out("allow")), gate("stopper", {"continue_": False}))})
    assert decisions(answers) == ["deny", "deny"]
    assert rig.last()["outcome"] == "deny" and rig.last()["hook"].endswith(".stopper")


def test_allow_twin_continue_true_is_untouched(rig):
    answer = {"continue_": True, "hookSpecificOutput": {"hookEventName": PRE, "permissionDecision": "allow"}}
    _, answers = dispatch({PRE: pre(gate("going_on", answer))})
    assert answers[0]["response"] == {"continue": True, "hookSpecificOutput": answer["hookSpecificOutput"]}
    assert rig.last()["outcome"] == "allow"


# ---------------------------------------------------------------- defer


def test_defer_is_a_decision_sent_unchanged(rig):
    answer = out("defer", "waiting for approval")
    _, answers = dispatch({PRE: pre(gate("deferring", answer))})
    assert answers[0]["response"] == answer
    event = rig.last()
    assert event["outcome"] == "ask" and event["failure"] is None and event["hook"].endswith(".deferring")


@pytest.mark.parametrize("other, expected, outcome", [
    (out("deny", "policy"), "deny", "deny"),
    ({"continue_": False}, "deny", "deny"),
    (out("allow"), "defer", "ask"),
    (out("ask", "confirm"), "defer", "ask"),
    ({}, "defer", "ask"),
], ids=["deny", "stop", "allow", "ask", "no opinion"])
@pytest.mark.parametrize("order", ["defer first", "defer last"])
def test_defer_ranks_below_deny_and_above_ask_and_allow(rig, other, expected, outcome, order):
    callbacks = [gate("deferring", out("defer", "approval")), gate("other", other)]
    if order == "defer last":
        callbacks.reverse()
    _, answers = dispatch({PRE: pre(*callbacks)})
    assert decisions(answers) == [expected, expected]
    assert rig.last()["outcome"] == outcome


def test_a_failure_outranks_a_defer(rig):
    _, answers = dispatch({PRE: pre(gate("deferring", out("defer")), gate("raising", raises=RuntimeError(SECRET)))})
    assert decisions(answers) == ["deny", "deny"]
    event = rig.last()
    assert event["failure"] == "raised" and event["exception_type"] == "RuntimeError"
    assert SECRET not in json.dumps(answers)


def test_a_defer_is_not_reused_when_the_call_is_asked_about_again(rig):
    """Resume after approval: the CLI asks the callback again for the same tool call; the
    new answer decides (the deferred decision is not served from before)."""
    calls = []

    async def approver(input_data, tool_use_id, context):
        calls.append(tool_use_id)
        return out("defer") if len(calls) == 1 else out("allow")

    hooks = {PRE: pre(named(approver, "approver"), gate("other", {}))}

    async def go():
        query, ids = sdk_rig.build(hooks)
        answers = []
        for round_ in range(2):
            requests = [sdk_rig.hook_request(f"req_{round_}_{n}", cid, PRE, "Bash", {"command": "true"}, "toolu_same")
                        for n, (cid, _) in enumerate(ids[PRE])]
            before = len(query.transport.written)
            await asyncio.gather(*(query._handle_control_request(r) for r in requests))
            answers.append([a["response"] for a in query.transport.written[before:]])
        return answers

    first, second = asyncio.run(go())
    assert decisions(first) == ["defer", "defer"]
    assert sorted(map(str, decisions(second))) == ["None", "allow"]
    assert [e["outcome"] for e in rig.events()] == ["ask", "allow"]


# ---------------------------------------------------------------- PermissionRequest callbacks


@pytest.mark.parametrize("name, kwargs, failure, exc_type", [
    ("perm_raising", {"raises": RuntimeError("boom " + SECRET)}, "raised", "RuntimeError"),
    ("perm_exiting", {"raises": SystemExit(2)}, "raised", "SystemExit"),
    ("perm_none", {"answer": None}, "invalid", None),
    ("perm_bad_behavior", {"answer": perm_out("Allow")}, "invalid", None),
    ("perm_pre_shape", {"answer": out("allow")}, "invalid", None),
    ("perm_decision_not_dict", {"answer": {"hookSpecificOutput": {"hookEventName": PERM, "decision": "allow"}}}, "invalid", None),
    ("perm_bad_updated", {"answer": perm_out("allow", updatedInput="rm -rf /")}, "invalid", None),
    ("perm_async", {"answer": {"async_": True}}, "invalid", None),
    ("perm_hanging", {"answer": perm_out("allow"), "delay": 5}, "timeout", None),
])
def test_a_failing_permission_request_callback_denies(rig, name, kwargs, failure, exc_type):
    _, hooks, _ = ask_path({PERM: pre(gate(name, **kwargs))})
    assert behaviors(hooks) == ["deny"]
    message = hooks[0]["response"]["hookSpecificOutput"]["decision"]["message"]
    assert name in message and f"({failure})" in message
    assert SECRET not in json.dumps(hooks)
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] == failure and event["exception_type"] == exc_type


@pytest.mark.parametrize("answer", [{}, perm_out("allow"), perm_out("deny", message="no"), perm_out("allow", updatedPermissions=[])])
def test_allow_twin_valid_permission_request_answers_pass_through(rig, answer):
    _, hooks, _ = ask_path({PERM: pre(gate("perm_valid", answer))})
    assert hooks[0]["subtype"] == "success" and hooks[0]["response"] == answer
    assert rig.last()["failure"] is None


def test_upstream_twin_a_raising_permission_request_callback_leaks_and_decides_nothing(rig, adapter):
    failsecure.uninstall()
    try:
        _, hooks, _ = ask_path({PERM: pre(gate("perm_raising", raises=RuntimeError(SECRET)))}, prepare=False)
    finally:
        failsecure.install()
    assert hooks[0]["subtype"] == "error" and SECRET in hooks[0]["error"]


@pytest.mark.parametrize("kwargs, failure", [
    ({"answer": perm_out("deny", message="policy"), "delay": 0.05}, None),
    ({"raises": RuntimeError(SECRET), "delay": 0.05}, "raised"),
    ({"answer": "junk", "delay": 0.05}, "invalid"),
], ids=["deny", "raise", "junk"])
def test_a_permission_request_deny_or_failure_outranks_a_can_use_tool_allow(rig, kwargs, failure):
    called = []
    _, hooks, permission = ask_path({PERM: pre(gate("perm_gate", **kwargs))}, allowing_permission(seen=called))
    assert behaviors(hooks) == ["deny"]
    assert permission["response"]["behavior"] == "deny"  # whichever the CLI takes first, a deny
    assert called == []  # nobody is asked about a call a gate already denied
    assert SECRET not in json.dumps([hooks, permission])
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] == failure and event["hook"].endswith(".perm_gate")


def test_allow_twin_no_opinion_from_the_hooks_leaves_the_call_to_can_use_tool(rig):
    called = []
    _, hooks, permission = ask_path({PERM: pre(gate("perm_silent", {}, delay=0.05))}, allowing_permission(seen=called))
    assert behaviors(hooks) == [None]
    assert permission["response"]["behavior"] == "allow" and called == [{"command": "true"}]


def test_allow_twin_a_permission_request_allow_needs_no_can_use_tool(rig):
    called = []
    _, hooks, permission = ask_path({PERM: pre(gate("perm_allowing", perm_out("allow")))}, allowing_permission(seen=called))
    assert behaviors(hooks) == ["allow"] and permission["response"]["behavior"] == "allow"
    assert called == []  # the CLI applies the hook's allow and drops the permission request


def _policy(name="policy"):
    async def policy(input_data, tool_use_id, context):
        return out("deny", "forbidden") if "forbidden" in input_data["tool_input"]["command"] else out("allow")

    return named(policy, name)


def test_a_permission_request_rewrite_is_judged_by_the_pretooluse_gates(rig):
    seen = []

    async def smuggler(input_data, tool_use_id, context):
        seen.append(input_data["hook_event_name"])
        return perm_out("allow", updatedInput={"command": "forbidden"})

    hooks = {PRE: pre(_policy()), PERM: pre(named(smuggler, "smuggler"))}
    _, answers, _ = ask_path(hooks)
    assert behaviors(answers) == ["deny"]
    event = rig.last()
    assert event["outcome"] == "deny" and event["hook"].endswith(".policy")


def test_allow_twin_a_harmless_permission_request_rewrite_runs_with_the_final_input(rig):
    hooks = {PRE: pre(_policy()), PERM: pre(gate("tidy", perm_out("allow", updatedInput={"command": "ls -la"})))}
    _, answers, _ = ask_path(hooks)
    assert behaviors(answers) == ["allow"]
    assert answers[0]["response"]["hookSpecificOutput"]["decision"]["updatedInput"] == {"command": "ls -la"}


def test_a_can_use_tool_rewrite_is_judged_by_the_permission_request_gates(rig):
    from claude_agent_sdk import PermissionResultAllow

    async def perm_policy(input_data, tool_use_id, context):
        return perm_out("deny", message="no") if "forbidden" in input_data["tool_input"]["command"] else {}

    async def smuggle(tool_name, input_data, context):
        return PermissionResultAllow(updated_input={"command": "forbidden"})

    _, _, permission = ask_path({PERM: pre(named(perm_policy, "perm_policy"))}, named(smuggle, "perm_smuggle"))
    assert permission["response"]["behavior"] == "deny"
    assert rig.last()["hook"].endswith(".perm_policy")


# ---------------------------------------------------------------- a deny in any round stands


def test_a_deny_of_an_earlier_round_stands_when_a_rewrite_passes_later(rig):
    seen = []

    async def policy(input_data, tool_use_id, context):
        command = input_data["tool_input"]["command"]
        seen.append(command)
        return out("deny", "not that") if command == "harmless" else out("allow")

    async def rewriter(input_data, tool_use_id, context):
        return out(updatedInput={"command": "rewritten"})

    _, answers = dispatch({PRE: pre(named(policy, "policy"), named(rewriter, "rewriter"))}, tool_input={"command": "harmless"})
    assert decisions(answers) == ["deny", "deny"]
    assert "rewritten" in seen  # the rewrite was judged, and passed, and the first deny still stands
    event = rig.last()
    assert event["outcome"] == "deny" and event["hook"].endswith(".policy")


def test_a_failure_of_an_earlier_round_stands(rig):
    calls = []

    async def flaky(input_data, tool_use_id, context):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(SECRET)
        return out("allow")

    async def rewriter(input_data, tool_use_id, context):
        return out(updatedInput={"command": "rewritten"})

    _, answers = dispatch({PRE: pre(named(flaky, "flaky"), named(rewriter, "rewriter"))})
    assert decisions(answers) == ["deny", "deny"]
    assert rig.last()["failure"] == "raised"


def test_allow_twin_a_rewrite_every_round_allows_runs(rig):
    async def policy(input_data, tool_use_id, context):
        return out("allow")

    async def rewriter(input_data, tool_use_id, context):
        return out(updatedInput={"command": "rewritten"})

    _, answers = dispatch({PRE: pre(named(policy, "policy"), named(rewriter, "rewriter"))})
    assert decisions(answers) == ["allow", None]
    assert all(a["response"]["hookSpecificOutput"]["updatedInput"] == {"command": "rewritten"} for a in answers)


# ---------------------------------------------------------------- late answers, one guard path


def test_an_async_callback_that_blocks_the_loop_past_its_deadline_times_out(rig):
    async def blocking(input_data, tool_use_id, context):
        time.sleep(DEADLINE * 2)  # synchronous work inside async def: no deadline can interrupt it
        return out("allow")

    _, answers = dispatch({PRE: pre(named(blocking, "blocking"))})
    assert decisions(answers) == ["deny"]
    assert rig.last()["failure"] == "timeout"


def test_an_async_permission_request_callback_that_blocks_the_loop_past_its_deadline_times_out(rig):
    async def blocking(input_data, tool_use_id, context):
        time.sleep(DEADLINE * 2)
        return perm_out("allow")

    _, answers, _ = ask_path({PERM: pre(named(blocking, "perm_blocking"))})
    assert behaviors(answers) == ["deny"]
    assert rig.last()["failure"] == "timeout"


def test_can_use_tool_that_sleeps_past_its_deadline_then_allows_is_a_timeout(rig, adapter):
    from claude_agent_sdk import PermissionResultAllow

    async def slow(tool_name, input_data, context):
        time.sleep(DEADLINE * 2)
        return PermissionResultAllow()

    slow = named(slow, "perm_slow")
    rig.config(tables=f'[hooks."{adapter.callable_id(slow)}"]\ntimeout = {DEADLINE}\n')
    _, _, permission = ask_path({}, slow)
    assert permission["response"]["behavior"] == "deny"
    assert rig.last()["failure"] == "timeout" and "(timeout)" in permission["response"]["message"]


def test_allow_twin_callbacks_that_block_briefly_within_their_deadline_are_honoured(rig, adapter):
    from claude_agent_sdk import PermissionResultAllow

    async def brief(input_data, tool_use_id, context):
        time.sleep(0.01)
        return out("allow")

    async def brief_perm(tool_name, input_data, context):
        time.sleep(0.01)
        return PermissionResultAllow()

    brief_perm = named(brief_perm, "perm_brief")
    rig.config(tables=f'[hooks."{adapter.callable_id(brief_perm)}"]\ntimeout = 5\n')
    _, answers = dispatch({PRE: pre(named(brief, "brief"))})
    assert decisions(answers) == ["allow"]
    _, _, permission = ask_path({}, brief_perm)
    assert permission["response"]["behavior"] == "allow"


def test_every_callback_is_called_through_the_adapters_guarded_call(rig, adapter, monkeypatch):
    """PreToolUse, PermissionRequest and can_use_tool callbacks all go through
    ``Adapter.ahook_call`` (the core's deadline and late-answer rule), none around it."""
    through = []
    original = type(adapter).ahook_call

    async def spy(self, hook_id, fn, *args, **kwargs):
        through.append(hook_id.rsplit(".", 1)[-1])
        return await original(self, hook_id, fn, *args, **kwargs)

    monkeypatch.setattr(type(adapter), "ahook_call", spy)
    dispatch({PRE: pre(gate("pre_gate", out("allow")))})
    ask_path({PERM: pre(gate("perm_gate", {}))}, allowing_permission("perm_callback"))
    assert through == ["pre_gate", "perm_gate", "perm_callback"]


# ---------------------------------------------------------------- hooks that never reach the CLI


class AnsweringTransport:
    """A custom ``Transport`` (the SDK's public extension point, as for a remote
    session) whose other end answers ``initialize`` with ``answer`` and sends nothing
    else."""

    def __init__(self, answer: dict):
        self.answer = answer
        self.written: list = []
        self.queue: asyncio.Queue = asyncio.Queue()

    async def connect(self):
        pass

    async def write(self, data: str):
        message = json.loads(data)
        self.written.append(message)
        if message.get("type") == "control_request" and message["request"].get("subtype") == "initialize":
            await self.queue.put({"type": "control_response", "response": {
                "subtype": "success", "request_id": message["request_id"], "response": dict(self.answer)}})

    async def read_messages(self):
        while True:
            yield await self.queue.get()

    async def close(self):
        pass

    def is_ready(self):
        return True

    async def end_input(self):
        pass


def _connect(answer, hooks, can_use_tool=None):
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

    async def go():
        client = ClaudeSDKClient(options=ClaudeAgentOptions(hooks=hooks, can_use_tool=can_use_tool), transport=AnsweringTransport(answer))
        try:
            await client.connect()
        finally:
            await client.disconnect()

    asyncio.run(go())


def _hooks(callback):
    from claude_agent_sdk import HookMatcher

    return {PRE: [HookMatcher(matcher="Bash", hooks=[callback])]}


def test_a_session_that_did_not_apply_the_hooks_refuses_to_start(rig):
    from claude_agent_sdk import CLIConnectionError

    with pytest.raises(CLIConnectionError, match=r"failsecure: hook 'claude-agent-sdk:.*\.joined_gate' is missing"):
        _connect({"hooks_applied": False, "hook_on_failure_supported": True}, _hooks(gate("joined_gate", out("allow"))))
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] == "missing" and event["hook"].endswith(".joined_gate")


def test_allow_twin_a_session_that_applied_the_hooks_starts(rig):
    _connect({"hooks_applied": True, "hook_on_failure_supported": True}, _hooks(gate("own_gate", out("allow"))))
    _connect({}, _hooks(gate("own_gate", out("allow"))))  # a CLI that predates the field
    _connect({"hooks_applied": False}, None)  # nothing to gate: a joining client without hooks
    assert rig.events() == []


def test_upstream_twin_a_joining_client_runs_without_its_hooks_silently(rig, adapter):
    failsecure.uninstall()
    try:
        _connect({"hooks_applied": False, "hook_on_failure_supported": True}, _hooks(gate("joined_gate", out("allow"))))
    finally:
        failsecure.install()
    assert rig.events() == []


def test_a_query_that_never_sends_its_hooks_refuses_to_start(rig):
    from claude_agent_sdk import CLIConnectionError
    from claude_agent_sdk._internal.query import Query

    hooks = {PRE: pre(gate("unsent_gate", out("allow")))}
    with pytest.raises(CLIConnectionError, match="unsent_gate' is missing"):
        asyncio.run(Query(transport=sdk_rig.CaptureTransport(), is_streaming_mode=False, hooks=hooks).initialize())
    assert rig.last()["failure"] == "missing"
    # allow twin: nothing to gate
    assert asyncio.run(Query(transport=sdk_rig.CaptureTransport(), is_streaming_mode=False, hooks={}).initialize()) is None


# ---------------------------------------------------------------- required gates across gate kinds


def test_a_required_pretooluse_callback_is_present_for_the_permission_decisions(rig):
    """A ``required`` callback registered with the session counts as present in the
    ``PermissionRequest`` and ``can_use_tool`` decisions too (it was consulted at the
    PreToolUse stage, or does not select the tool)."""
    policy_gate = gate("policy_gate", out("allow"))
    policy_gate.__module__, policy_gate.__qualname__ = "policy", "gate"
    rig.config(top='required = ["claude-agent-sdk:policy.gate"]')
    _, hooks, permission = ask_path({PRE: pre(policy_gate), PERM: pre(gate("perm_silent", {}))}, allowing_permission())
    assert behaviors(hooks) == [None] and permission["response"]["behavior"] == "allow"
    assert all(e["failure"] is None for e in rig.events())


def test_deny_twin_a_required_callback_registered_nowhere_denies_the_permission_decisions(rig):
    rig.config(top='required = ["claude-agent-sdk:policy.absent"]')
    _, hooks, permission = ask_path({PERM: pre(gate("perm_silent", {}))}, allowing_permission())
    assert behaviors(hooks) == ["deny"] and permission["response"]["behavior"] == "deny"
    assert rig.last()["failure"] == "missing" and rig.last()["hook"] == "claude-agent-sdk:policy.absent"


def test_an_ask_of_an_earlier_round_stands_when_a_rewrite_passes_later(rig):
    """A PreToolUse hook asks about the model's input, another rewrites it; the next round
    the asking hook allows the rewritten input: its ask stands (upstream merges the
    concurrent answers, ask over allow, so the person is asked)."""
    seen = []

    async def policy(input_data, tool_use_id, context):
        command = input_data["tool_input"]["command"]
        seen.append(command)
        return out("ask", "check this") if command == "harmless" else out("allow")

    async def rewriter(input_data, tool_use_id, context):
        return out(updatedInput={"command": "rewritten"})

    _, answers = dispatch({PRE: pre(named(policy, "policy"), named(rewriter, "rewriter"))}, tool_input={"command": "harmless"})
    assert "rewritten" in seen  # the rewrite was judged, and passed, and the first ask still stands
    assert "allow" not in decisions(answers) and "ask" in decisions(answers)
    event = rig.last()
    assert event["outcome"] == "ask" and event["hook"].endswith(".policy")
