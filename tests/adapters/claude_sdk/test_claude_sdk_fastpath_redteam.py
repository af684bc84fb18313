"""Red-team of the one-callback fast path (a trigger that is its tool call's only
callback goes straight to ``_one``) and the per-session (event, tool) selection cache,
driven through the SDK's real dispatcher (``Query._handle_control_request``). Each deny
has its allow twin."""

from __future__ import annotations

import asyncio
import sys

import pytest

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py
named = sdk_rig.named

PRE = "PreToolUse"


def out(decision=None, reason=None, **extra):
    specific = {"hookEventName": PRE}
    if decision is not None:
        specific["permissionDecision"] = decision
    if reason is not None:
        specific["permissionDecisionReason"] = reason
    specific.update(extra)
    return {"hookSpecificOutput": specific}


def dispatch(hooks, **kwargs):
    return asyncio.run(sdk_rig.dispatch(hooks, **kwargs))


def decisions(answers):
    return [sdk_rig.decision_of(a) for a in answers]


def wire(answer):
    """What the CLI reads: the answer's response as the SDK wrote it."""
    return answer["response"]


def fixed(name, answer):
    async def cb(input_data, tool_use_id, context):
        return answer

    return named(cb, name)


# ---------------------------------------------------------------- rewrites on the fast path


def _rewriter(name, to, deny_when=None):
    seen = []

    async def cb(input_data, tool_use_id, context):
        command = input_data["tool_input"]["command"]
        seen.append(command)
        if deny_when is not None and command == deny_when:
            return out("deny", "no")
        if command == to:
            return out("allow")
        return out("allow", updatedInput={"command": to})

    return named(cb, name), seen


def test_a_lone_callbacks_rewrite_is_judged_again_and_its_round_two_deny_stands(rig):
    cb, seen = _rewriter("lone_rewriter", "evil", deny_when="evil")
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [cb]}]})
    assert decisions(answers) == ["deny"]
    assert seen == ["true", "evil"]
    assert rig.last()["outcome"] == "deny"


def test_allow_twin_a_lone_callbacks_harmless_rewrite_runs_with_it(rig):
    cb, seen = _rewriter("lone_rewriter", "safe")
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [cb]}]})
    assert decisions(answers) == ["allow"]
    assert wire(answers[0])["hookSpecificOutput"]["updatedInput"] == {"command": "safe"}
    assert rig.last()["outcome"] == "allow"


# ---------------------------------------------------------------- shapes on the fast path


@pytest.mark.parametrize("answer, failure", [
    ({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "permissionDecision": "allow"}}, "invalid"),
    ({"hookSpecificOutput": {"hookEventName": "PostToolUse"}}, "invalid"),
    ({"hookSpecificOutput": {"permissionDecision": "allow"}}, "invalid"),
    ({"hookSpecificOutput": None}, None),
    ({"hookSpecificOutput": "allow"}, "invalid"),
    ({"hookSpecificOutput": []}, "invalid"),
])
def test_hook_specific_output_only_junk_on_the_fast_path(rig, answer, failure):
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [fixed("lone", answer)]}]})
    if failure is None:
        assert rig.last()["failure"] is None
    else:
        assert decisions(answers) == ["deny"]
        assert rig.last()["failure"] == failure


def test_extra_keys_beside_hook_specific_output_pass(rig):
    answer = out("allow", extra="x")
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [fixed("lone", answer)]}]})
    assert decisions(answers) == ["allow"]
    assert rig.last()["outcome"] == "allow"


@pytest.mark.parametrize("answer", [
    {"continue_": True, "continue": False},
    {"continue_": None, "continue": False},
])
def test_a_stop_the_sdk_sends_is_the_stop_judged(rig, answer):
    """The SDK turns ``continue_`` into ``continue`` key by key, so with both keys the
    last one in the answer is what the CLI reads: a ``continue: False`` the CLI is sent
    is the deny the audit records."""
    answer = dict(answer)
    answer.update(out("allow"))
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [fixed("lone", answer)]}]})
    sent = wire(answers[0])
    assert sent.get("continue") is False  # what upstream sends
    assert decisions(answers) == ["deny"]
    assert rig.last()["outcome"] == "deny"


@pytest.mark.parametrize("answer", [
    {"continue": False, "continue_": True},
    {"continue": False, "continue_": None},
])
def test_allow_twin_a_go_on_the_sdk_sends_is_not_a_stop(rig, answer):
    answer = dict(answer)
    answer.update(out("allow"))
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [fixed("lone", answer)]}]})
    sent = wire(answers[0])
    assert sent.get("continue") is not False
    assert decisions(answers) == ["allow"]
    assert rig.last()["outcome"] == "allow"


# ---------------------------------------------------------------- several matchers, one selects


def test_only_the_matching_matcher_of_several_decides(rig):
    _, answers = dispatch({PRE: [
        {"matcher": "Read", "hooks": [fixed("reader", out("allow"))]},
        {"matcher": "Bash", "hooks": [fixed("basher", out("deny", "no"))]},
        {"matcher": "Write|Edit", "hooks": [fixed("writer", out("allow"))]},
    ]})
    assert decisions(answers) == ["deny"]
    assert [o["hook"].rsplit(".", 1)[-1] for o in rig.last()["outcomes"]] == ["basher"]


def test_allow_twin_only_the_matching_matcher_of_several_decides(rig):
    _, answers = dispatch({PRE: [
        {"matcher": "Read", "hooks": [fixed("reader", out("deny", "no"))]},
        {"matcher": "Bash", "hooks": [fixed("basher", out("allow"))]},
    ]})
    assert decisions(answers) == ["allow"]
    assert rig.last()["outcome"] == "allow"


# ---------------------------------------------------------------- the cache


def test_a_full_selection_cache_mid_session_still_selects(rig, adapter):
    from claude_agent_sdk._internal.query import Query

    async def go():
        query, ids = sdk_rig.build({PRE: [{"matcher": "Bash", "hooks": [fixed("basher", out("deny", "no"))]},
                                          {"matcher": "Read", "hooks": [fixed("reader", out("allow"))]}]})
        session = query._failsecure_session
        for n in range(4095):
            session._choice(PRE, "T%d" % n)
        (bash_id, _), (read_id, _) = ids[PRE]
        await query._handle_control_request(sdk_rig.hook_request("r1", bash_id, PRE, "Bash", {"command": "x"}, "toolu_a"))
        await query._handle_control_request(sdk_rig.hook_request("r2", read_id, PRE, "Read", {"file_path": "x"}, "toolu_b"))
        return {a["response"]["request_id"]: a["response"] for a in query.transport.written}

    by_id = asyncio.run(go())
    assert sdk_rig.decision_of(by_id["r1"]) == "deny"
    assert sdk_rig.decision_of(by_id["r2"]) == "allow"


def test_two_queries_keep_their_own_selections(rig):
    _, a = dispatch({PRE: [{"matcher": "Bash", "hooks": [fixed("first", out("deny", "no"))]}]})
    _, b = dispatch({PRE: [{"matcher": "Bash", "hooks": [fixed("second", out("allow"))]}]})
    assert decisions(a) == ["deny"] and decisions(b) == ["allow"]


# ---------------------------------------------------------------- late answers on the fast path


def _blockers(delay):
    import functools
    import time

    class Gate:
        async def __call__(self, input_data, tool_use_id, context):
            time.sleep(delay)
            return out("allow")

    async def plain(tag, input_data, tool_use_id, context):
        time.sleep(delay)
        return out("allow")

    def returns_coroutine(input_data, tool_use_id, context):
        async def later():
            time.sleep(delay)
            return out("allow")

        return later()

    class Bound:
        async def method(self, input_data, tool_use_id, context):
            time.sleep(delay)
            return out("allow")

    return {
        "callable_object": Gate(),
        "partial": functools.partial(plain, "x"),
        "returns_coroutine": named(returns_coroutine, "returns_coroutine"),
        "bound_method": Bound().method,
    }


@pytest.mark.parametrize("kind", ["callable_object", "partial", "returns_coroutine", "bound_method"])
def test_a_lone_callback_of_any_form_that_blocks_the_loop_past_its_deadline_times_out(rig, kind):
    cb = _blockers(0.6)[kind]
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [cb]}]})
    assert decisions(answers) == ["deny"]
    assert rig.last()["failure"] == "timeout"


@pytest.mark.parametrize("kind", ["callable_object", "partial", "returns_coroutine", "bound_method"])
def test_allow_twin_a_lone_callback_of_any_form_within_its_deadline_is_honoured(rig, kind):
    cb = _blockers(0.01)[kind]
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [cb]}]})
    assert decisions(answers) == ["allow"]
    assert rig.last()["outcome"] == "allow"


# ---------------------------------------------------------------- the CLI's matcher forms
#
# The bundled CLI (both pins) reads a PreToolUse / PermissionRequest matcher made of
# names, ``|``, ``,``, spaces and ``-`` as a list of names split on ``|`` or ``,`` and
# trimmed, and a name through its legacy aliases (``Task`` is the ``Agent`` tool): a
# callback failsecure thought selected no tool then decides the call all the same.

PERM = "PermissionRequest"


def perm_out(behavior, **decision):
    return {"hookSpecificOutput": {"hookEventName": PERM, "decision": dict(decision, behavior=behavior)}}


def _allowing(seen):
    from claude_agent_sdk import PermissionResultAllow

    async def host(tool_name, input_data, context):
        seen.append(input_data)
        return PermissionResultAllow()

    return named(host, "host_allows")


def _ask(hooks, can_use_tool, tool, selected, tool_input=None, call_id="toolu_m1"):
    """The CLI's permission path of one call: the PermissionRequest callbacks it selects
    (``selected``: their matchers) and can_use_tool, at once."""
    tool_input = {"command": "true"} if tool_input is None else tool_input

    async def go():
        query, ids = sdk_rig.build(hooks, can_use_tool)
        requests = [sdk_rig.hook_request("req_%d" % n, cid, PERM, tool, tool_input, call_id)
                    for n, (cid, matcher) in enumerate(ids.get(PERM, [])) if matcher in selected]
        requests.append(sdk_rig.permission_request(tool, tool_input, call_id))
        await asyncio.gather(*(query._handle_control_request(r) for r in requests))
        by_id = {a["response"]["request_id"]: a["response"] for a in query.transport.written}
        return [by_id[r["request_id"]] for r in requests[:-1]], by_id["req_perm"]

    return asyncio.run(go())


@pytest.mark.parametrize("matcher, tool", [("Write, Bash", "Bash"), (" Bash | Write", "Bash"), ("Read,Bash", "Bash"),
                                           ("Task", "Agent")])
def test_a_permission_request_deny_by_a_matcher_form_the_cli_reads_outranks_can_use_tool(rig, matcher, tool):
    seen = []
    hooks = {PERM: [{"matcher": matcher, "hooks": [fixed("perm_policy", perm_out("deny", message="no"))]}]}
    answers, permission = _ask(hooks, _allowing(seen), tool, {matcher})
    assert [a["response"]["hookSpecificOutput"]["decision"]["behavior"] for a in answers] == ["deny"]
    assert permission["response"]["behavior"] == "deny"  # whichever the CLI takes first
    assert seen == []
    assert rig.last()["outcome"] == "deny"


@pytest.mark.parametrize("matcher, tool", [("Write, Read", "Bash"), ("Task", "Bash")])
def test_allow_twin_a_matcher_form_that_selects_another_tool_leaves_the_call_to_can_use_tool(rig, matcher, tool):
    seen = []
    hooks = {PERM: [{"matcher": matcher, "hooks": [fixed("perm_policy", perm_out("deny", message="no"))]}]}
    _, permission = _ask(hooks, _allowing(seen), tool, set())
    assert permission["response"]["behavior"] == "allow" and len(seen) == 1


def _rewriting(to):
    from claude_agent_sdk import PermissionResultAllow

    async def host(tool_name, input_data, context):
        return PermissionResultAllow(updated_input=to)

    return named(host, "host_rewrites")


@pytest.mark.parametrize("matcher", ["Write, Bash", "Bash , Read"])
def test_a_can_use_tool_rewrite_is_judged_by_a_pretooluse_gate_of_a_names_list_matcher(rig, matcher):
    async def policy(input_data, tool_use_id, context):
        return out("deny", "forbidden") if "forbidden" in input_data["tool_input"]["command"] else out("allow")

    hooks = {PRE: [{"matcher": matcher, "hooks": [named(policy, "names_policy")]}]}
    _, permission = _ask(hooks, _rewriting({"command": "forbidden"}), "Bash", set())
    assert permission["response"]["behavior"] == "deny"
    assert rig.last()["outcome"] == "deny" and rig.last()["outcomes"][0]["hook"].endswith(".names_policy")


@pytest.mark.parametrize("matcher", ["Write, Bash", "Bash , Read"])
def test_allow_twin_a_harmless_can_use_tool_rewrite_under_a_names_list_matcher_runs(rig, matcher):
    async def policy(input_data, tool_use_id, context):
        return out("deny", "forbidden") if "forbidden" in input_data["tool_input"]["command"] else out("allow")

    hooks = {PRE: [{"matcher": matcher, "hooks": [named(policy, "names_policy")]}]}
    _, permission = _ask(hooks, _rewriting({"command": "ls"}), "Bash", set())
    assert permission["response"]["behavior"] == "allow"
    assert permission["response"]["updatedInput"] == {"command": "ls"}


# ---------------------------------------------------------------- answers the SDK cannot send
#
# The SDK writes the answer with ``json.dumps``: an answer it cannot write (an object in
# it, a NaN the CLI's JSON.parse rejects) becomes an error response, which the CLI reads
# as no decision (the tool runs on the CLI's permission rules, with its original input),
# whatever failsecure judged and audited.

import math  # noqa: E402


def _unsendable():
    return {"object": object(), "set": {1}, "nan": math.nan}


@pytest.mark.parametrize("extra", ["object", "set", "nan"])
@pytest.mark.parametrize("shape", ["deny", "allow_rewrite", "pre_field"])
def test_an_answer_the_sdk_cannot_send_is_a_deny_the_cli_gets(rig, extra, shape):
    bad = _unsendable()[extra]
    if shape == "deny":
        answer = out("deny", "policy", junk=bad)
    elif shape == "allow_rewrite":
        answer = out("allow", updatedInput={"command": "echo safe", "note": bad})
    else:
        answer = dict(out("allow"), systemMessage=bad)
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [fixed("unsendable", answer)]}]})
    assert answers[0]["subtype"] == "success"
    assert decisions(answers) == ["deny"]
    assert rig.last()["outcome"] == "deny" and rig.last()["failure"] == "invalid"


def test_allow_twin_an_answer_the_sdk_can_send_passes(rig):
    answer = dict(out("allow", updatedInput={"command": "echo safe", "note": [1, 2.5, None, True]}), systemMessage="ok")
    _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [fixed("sendable", answer)]}]})
    assert answers[0]["subtype"] == "success"
    assert decisions(answers) == ["allow"]
    assert wire(answers[0])["hookSpecificOutput"]["updatedInput"]["command"] == "echo safe"


@pytest.mark.parametrize("extra", ["object", "nan"])
def test_a_permission_request_answer_the_sdk_cannot_send_denies(rig, extra):
    seen = []
    answer = perm_out("allow", updatedInput={"command": "echo", "x": _unsendable()[extra]})
    hooks = {PERM: [{"matcher": "Bash", "hooks": [fixed("perm_unsendable", answer)]}]}
    answers, permission = _ask(hooks, _allowing(seen), "Bash", {"Bash"})
    assert answers[0]["subtype"] == "success"
    assert answers[0]["response"]["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    assert permission["response"]["behavior"] == "deny"
    assert rig.last()["failure"] == "invalid"


def test_upstream_twin_an_unsendable_deny_is_an_error_response(rig, adapter):
    import failsecure

    failsecure.uninstall()
    try:
        _, answers = dispatch({PRE: [{"matcher": "Bash", "hooks": [fixed("unsendable", out("deny", "policy", junk=object()))]}]},
                              prepare=False)
    finally:
        failsecure.install()
        assert adapter.state == "patched"
    assert answers[0]["subtype"] == "error"  # the CLI: no decision
