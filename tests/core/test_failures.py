"""Tests that kill mutants which survived `tox -e mutation` (see docs/mutation.md)."""

import pytest

from failsecure import failures
from failsecure.failures import CRASHED, MISSING, TIMEOUT, process_failure


@pytest.mark.parametrize(
    "could_not_start, timed_out, returncode, category",
    [
        (True, False, None, MISSING),  # the command never started
        (True, True, 1, MISSING),  # not starting outranks everything else
        (False, True, None, TIMEOUT),
        (False, True, 0, TIMEOUT),  # a deadline overrun is a timeout even if it exited 0 later
        (False, False, None, CRASHED),  # no exit status at all
        (False, False, "0", CRASHED),  # only an int is an exit status
        (False, False, True, CRASHED),  # bool is not an exit status either
        (False, False, -9, CRASHED),  # killed by a signal
        (False, False, -1, CRASHED),
        (False, False, 126, MISSING),  # found but not executable
        (False, False, 127, MISSING),  # not found by the shell
        (False, False, 1, CRASHED),
        (False, False, 3, CRASHED),
        (False, False, 125, CRASHED),
        (False, False, 128, CRASHED),
        (False, False, 255, CRASHED),
        (False, False, 0, None),  # a normal exit
        (False, False, 2, None),  # the Claude-style block is a meaningful answer
    ],
)
def test_process_failure_maps_each_ending_to_one_category(could_not_start, timed_out, returncode, category):
    assert process_failure(could_not_start, timed_out, returncode) == category


def test_failure_reason_names_only_the_hook_and_category():
    assert failures.failure_reason("pre", MISSING) == "failsecure: hook 'pre' is missing"
    assert failures.failure_reason("pre", TIMEOUT) == "failsecure: hook 'pre' failed closed (timeout)"


# ---------------------------------------------------------------- reduce: ask, fail_closed, no opinion

from failsecure.policy import Config  # noqa: E402
from failsecure.reduce import reduce  # noqa: E402
from failsecure.verdict import ABSTAIN, ALLOW, ASK, Action, Failure, Outcome, Verdict  # noqa: E402


def test_an_ask_where_the_framework_cannot_ask_is_a_deny_that_says_so():
    asked = Outcome(hook="fw:asker", verdict=ASK)
    allowed = Outcome(hook="fw:ok", verdict=ALLOW)
    d = reduce([allowed, asked], ask=False, framework="fw 1.2")
    assert d.action is Action.DENY and d.denied
    assert d.reason == "failsecure: hook 'fw:asker' asked for approval, which fw 1.2 cannot do"
    assert d.deciding == (asked,) and d.counts == (Action.ALLOW, Action.ASK)
    # without a framework name the reason still names the hook and says why
    assert reduce([asked], ask=False).reason == "failsecure: hook 'fw:asker' asked for approval, which this framework cannot do"
    # twin: a framework that can ask keeps the ask, with the hook's own verdict
    kept = reduce([allowed, asked], ask=True, framework="fw 1.2")
    assert kept.action is Action.ASK and kept.verdict is ASK and kept.deciding == (asked,)


def test_a_hook_that_opted_into_failing_closed_denies_even_under_on_error_allow():
    lenient = Config(on_error="allow")
    failed = Outcome(hook="fw:check", failure=Failure.RAISED, exception_type="Boom")
    d = reduce([failed], lenient, fail_closed=("fw:check",))
    assert d.denied and d.deciding == (failed,) and d.counts == (Action.DENY,)
    assert d.reason and "fw:check" in d.reason
    # twin: without the opt-in, on_error = "allow" lets the failure count as no opinion
    open_ = reduce([failed], lenient)
    assert not open_.denied and open_.action is Action.ABSTAIN and open_.counts == (Action.ABSTAIN,)
    # and the opt-in of another hook changes nothing for this one
    assert not reduce([failed], lenient, fail_closed=("fw:other",)).denied


def test_no_opinion_keeps_every_outcome_and_what_it_counted_as():
    quiet = [Outcome(hook="fw:a", verdict=ABSTAIN), Outcome(hook="fw:b", verdict=ABSTAIN)]
    d = reduce(quiet)
    assert d.action is Action.ABSTAIN and d.deciding == () and d.primary is None
    assert d.outcomes == tuple(quiet) and d.counts == (Action.ABSTAIN, Action.ABSTAIN)
    assert d.counted(quiet[1]) is Action.ABSTAIN
    # twin: one allow among them decides, and the rest are still kept
    voiced = quiet + [Outcome(hook="fw:c", verdict=ALLOW)]
    v = reduce(voiced)
    assert v.action is Action.ALLOW and v.outcomes == tuple(voiced) and v.counted(voiced[2]) is Action.ALLOW


def test_an_outcome_with_neither_verdict_nor_failure_is_no_opinion():
    # Outcome(hook) alone: nothing said, nothing failed -> counts as abstain, under any policy
    bare = Outcome(hook="a:bare")
    decision = reduce([bare])
    assert decision.action is Action.ABSTAIN and decision.counts == (Action.ABSTAIN,)
    # deny twin: beside a deny it changes nothing
    denied = reduce([bare, Outcome(hook="a:no", verdict=Verdict(Action.DENY, "no"))])
    assert denied.action is Action.DENY and denied.counts == (Action.ABSTAIN, Action.DENY)
