"""Red-team of the plain copy of a callback's answer: an int past CPython's digit limit
for its text (sys.int_max_str_digits, 4300) is a plain ``int``, but the SDK's
``json.dumps`` cannot write it (ValueError): the real ``Query`` sends an error response,
which the CLI reads as no decision. The plain copy took it as the round trip's value, so
the gates judged an answer the CLI never gets (an allow's rewrite or a deny that does not
reach the CLI). The round trip made it INVALID: a deny the adapter writes itself."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from failsecure.adapters import claude_sdk
from failsecure.verdict import Invalid

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py

PRE = "PreToolUse"
HUGE = 10 ** (getattr(sys, "get_int_max_str_digits", lambda: 4300)() + 10)


def _gate(name, answer):
    async def cb(input_data, tool_use_id, context):
        return answer

    return sdk_rig.named(cb, name)


def _dispatch(*callbacks):
    return asyncio.run(sdk_rig.dispatch({PRE: [{"matcher": "Bash", "hooks": [cb]} for cb in callbacks]}))


def test_the_sdk_cannot_write_a_huge_int():
    with pytest.raises(ValueError):
        json.dumps({"a": HUGE})  # what the SDK does with the answer


@pytest.mark.parametrize("answer", [
    {"a": HUGE}, {"a": [1, {"b": -HUGE}]},
])
def test_an_int_the_sdk_cannot_write_is_invalid(answer):
    with pytest.raises(Invalid):
        claude_sdk._wire(answer)


def test_the_twin_a_long_int_the_sdk_writes_is_copied():
    big = 10 ** 4000
    assert claude_sdk._wire({"a": big}) == {"a": big}


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_an_answer_with_a_huge_int_is_a_deny_the_cli_reads(rig, decision):
    answer = {"hookSpecificOutput": {"hookEventName": PRE, "permissionDecision": decision,
                                     "permissionDecisionReason": "no", "updatedInput": {"command": "true", "n": HUGE}},
              "extra": HUGE}
    _, answers = _dispatch(_gate("huge", answer))
    assert sdk_rig.decision_of(answers[0]) == "deny", answers  # written, and a deny
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] == "invalid"


def test_the_twin_the_same_answer_with_a_writable_int_passes(rig):
    answer = {"hookSpecificOutput": {"hookEventName": PRE, "permissionDecision": "allow",
                                     "updatedInput": {"command": "true", "n": 10 ** 40}}}
    _, answers = _dispatch(_gate("big", answer))
    assert answers[0]["subtype"] == "success" and sdk_rig.decision_of(answers[0]) == "allow"
    assert answers[0]["response"]["hookSpecificOutput"]["updatedInput"] == {"command": "true", "n": 10 ** 40}
    assert rig.last()["outcome"] == "allow" and rig.last()["failure"] is None
