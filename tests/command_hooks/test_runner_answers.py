"""Answers whose meaning depends on the reader, through the real runner process.

- A key given twice in one JSON object: JSON.parse (Claude Code, Gemini CLI) keeps the
  last value, a serde struct (Codex) rejects the answer, other parsers keep the first.
  `{"decision": "block", "decision": "approve"}` is a block to one host and an allow to
  another; deny outranks allow in any order, so an answer with a duplicate key is
  `invalid` (a deny), never passed on as the allow its last value says. Twin: the same
  answer without the duplicate passes byte for byte.
- The hook's own deny reason with a lone surrogate escape (`"\\ud800"`, valid JSON):
  still the hook's own deny (audit failure None), not a runner failure (`raised`).
"""

import json

import pytest
from cmdhook_helpers import expected_deny

from failsecure.failures import failure_reason

HID = "command:guard"


def printing(text, code=0):
    return ["/bin/sh", "-c", 'printf "%%s" "$1"; exit %d' % code, "sh", text]


DUPLICATES = {
    "claude": [
        '{"decision":"block","decision":"approve"}',
        '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"},'
        '"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}',
        '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecision":"allow"}}',
    ],
    "codex": ['{"decision":"block","decision":"approve"}'],
    "gemini": ['{"decision":"deny","decision":"allow"}'],
}
CASES = [(p, a) for p, answers in sorted(DUPLICATES.items()) for a in answers]


@pytest.mark.parametrize("protocol,answer", CASES)
def test_an_answer_with_a_duplicate_key_is_invalid(run_hook, protocol, answer):
    run = run_hook(protocol, printing(answer))
    assert run.triple == expected_deny(protocol, failure_reason(HID, "invalid"))
    assert (run.event["outcome"], run.event["failure"]) == ("deny", "invalid")


@pytest.mark.parametrize("protocol,answer", CASES)
def test_the_same_answer_without_the_duplicate_passes(run_hook, protocol, answer):
    last = json.dumps(json.loads(answer), separators=(",", ":"))  # what JSON.parse keeps: the last value
    run = run_hook(protocol, printing(last))
    assert run.triple == (last, "", 0)
    assert run.event["failure"] is None and run.event["outcome"] == "allow"


@pytest.mark.parametrize("protocol", ["claude", "codex", "gemini"])
@pytest.mark.parametrize("escape,shown", [("\\ud800", "\ufffd"), ("\\u00e9", "\u00e9")], ids=["lone-surrogate", "twin"])
def test_the_hooks_own_deny_reason_is_its_deny(run_hook, protocol, escape, shown):
    word = "deny" if protocol == "gemini" else "block"
    run = run_hook(protocol, printing('{"decision":"%s","reason":"no %s"}' % (word, escape)))
    assert run.triple == expected_deny(protocol, "no " + shown)
    assert (run.event["outcome"], run.event["failure"]) == ("deny", None)


@pytest.mark.parametrize("protocol,answer", CASES + [("claude", '{"stopReason":"allow","stopReason":"allow"}')])
def test_the_oracle_counts_a_duplicate_key_as_an_answer_no_host_honours_alike(protocol, answer):
    """The fuzz tests' oracle (host_rules) agrees with the runner: a key given twice, even
    with the same value twice, is no answer every host reads alike (found by
    test_runner_fuzz: the oracle had called it a valid abstain). Twin: without it, valid."""
    from host_rules import valid_answer

    assert valid_answer(protocol, answer.encode()) is None
    last = json.dumps(json.loads(answer), separators=(",", ":"))
    assert valid_answer(protocol, last.encode()) is not None
