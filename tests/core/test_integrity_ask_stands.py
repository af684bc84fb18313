"""The settling rule keeps an ask as it keeps a deny: a gate that asked about the call in
an earlier pass, then allowed the call a later gate rewrote, still asks (the reducer ranks
it over the allow). Upstream stops at a gate's ask, so the call would wait for a person;
a rewrite after it must not turn it into a run. Twins: a gate that asks only about the
rewritten call, and one that never asks."""

import asyncio

import pytest

from failsecure import integrity
from failsecure.reduce import reduce
from failsecure.verdict import Action, Outcome, Verdict


def _run(kind, steps, current):
    if kind == "sync":
        return integrity.settle(steps, current, "t:args")

    async def go():
        async def wrap(step):
            return step()

        return await integrity.asettle([lambda s=s: wrap(s) for s in steps], current, "t:args")

    return asyncio.run(go())


def _gates(ask_when):
    args = {"command": "ls"}

    def asker():
        said = Action.ASK if ask_when(args) else Action.ALLOW
        return Outcome(hook="t:asker", verdict=Verdict(said))

    def rewriter():
        args["command"] = "ls -la"
        return Outcome(hook="t:rewriter", verdict=Verdict(Action.ALLOW))

    return [asker, rewriter], lambda: args


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_ask_before_a_rewrite_stands(kind):
    steps, current = _gates(lambda a: a["command"] == "ls")  # asks about the model's call only
    outcomes = _run(kind, steps, current)
    assert reduce(outcomes).action is Action.ASK
    assert [(o.hook, o.action) for o in outcomes if o.hook == "t:asker"] == [("t:asker", Action.ALLOW), ("t:asker", Action.ASK)]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_ask_about_the_rewritten_call_is_counted_once(kind):
    steps, current = _gates(lambda a: a["command"] == "ls -la")
    outcomes = _run(kind, steps, current)
    assert reduce(outcomes).action is Action.ASK
    assert [o.action for o in outcomes if o.hook == "t:asker"] == [Action.ASK]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_gate_that_never_asks_allows_the_rewritten_call(kind):
    steps, current = _gates(lambda a: False)
    outcomes = _run(kind, steps, current)
    assert reduce(outcomes).action is Action.ALLOW
    assert current() == {"command": "ls -la"}


def _round_gates(ask_when):
    """Two hooks run concurrently on one input (``until_stable``): ``t:asker`` asks
    about the model's call, ``t:rewriter`` hands back a rewritten one."""
    state = {"args": {"command": "ls"}}

    def one_round(call):
        said = Action.ASK if ask_when(call) else Action.ALLOW
        state["args"] = {"command": "ls -la"}
        return [Outcome(hook="t:asker", verdict=Verdict(said)), Outcome(hook="t:rewriter", verdict=Verdict(Action.ALLOW))]

    return one_round, lambda: state["args"]


def _rounds(kind, one_round, current):
    if kind == "sync":
        return integrity.until_stable(lambda call: one_round(call), current, "t:args")

    async def go():
        async def run(call):
            return one_round(call)

        return await integrity.auntil_stable(run, current, "t:args")

    return asyncio.run(go())


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_ask_in_an_earlier_round_stands(kind):
    one_round, current = _round_gates(lambda call: call["command"] == "ls")
    outcomes = _rounds(kind, one_round, current)
    assert reduce(outcomes).action is Action.ASK
    assert [o.action for o in outcomes if o.hook == "t:asker"] == [Action.ALLOW, Action.ASK]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_rounds_without_an_ask_allow_the_rewritten_call(kind):
    one_round, current = _round_gates(lambda call: False)
    outcomes = _rounds(kind, one_round, current)
    assert reduce(outcomes).action is Action.ALLOW and current() == {"command": "ls -la"}
