"""The answer as the CLI gets it: a plain answer is copied without the JSON text in
between; the copy is what the round trip gives back, and anything else still takes the
round trip (an answer the SDK cannot write is INVALID)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from failsecure.adapters import claude_sdk
from failsecure.verdict import Invalid

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _round_trip(value):
    return json.loads(json.dumps(value, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), plain, max_size=5))
def test_a_plain_answer_is_the_round_trips_and_a_copy(answer):
    wired = claude_sdk._wire(answer)
    assert wired == _round_trip(answer)
    assert json.dumps(wired) == json.dumps(_round_trip(answer))  # same order, same types
    if answer:
        assert wired is not answer


def test_the_copy_is_not_the_callbacks_objects():
    inner = {"command": "ls"}
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": inner}}
    wired = claude_sdk._wire(answer)
    inner["command"] = "rm -rf /"  # the callback's own objects change after it answered
    assert wired["hookSpecificOutput"]["updatedInput"] == {"command": "ls"}


class _Str(str):
    pass


@pytest.mark.parametrize("answer, expected", [
    ({1: "a"}, {"1": "a"}),                      # a key the SDK writes as text
    ({"a": (1, 2)}, {"a": [1, 2]}),              # a tuple: written as a list
    ({"a": _Str("x")}, {"a": "x"}),              # a str subclass: written as its text
    ({"a": True, None: 1}, {"a": True, "null": 1}),
])
def test_what_is_not_plain_takes_the_round_trip(answer, expected):
    assert claude_sdk._wire(answer) == expected


@pytest.mark.parametrize("answer", [
    {"a": math.nan}, {"a": [math.inf]}, {"a": {"b": -math.inf}}, {"a": object()}, {"a": {1, 2}},
])
def test_what_the_sdk_cannot_write_is_invalid(answer):
    with pytest.raises(Invalid):
        claude_sdk._wire(answer)


def test_a_cycle_is_invalid():
    answer: dict = {}
    answer["self"] = answer
    with pytest.raises(Invalid):
        claude_sdk._wire(answer)


def test_a_deep_plain_answer_is_the_round_trips():
    answer: dict = {"v": 1}
    for _ in range(100):
        answer = {"n": answer}
    assert claude_sdk._wire(answer) == _round_trip(answer)
