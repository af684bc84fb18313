"""Argument integrity: rounds of hooks run again while a hook rewrites the call."""

import asyncio
import threading

from failsecure import integrity
from failsecure.verdict import Action, Failure, Outcome, Verdict


def allow(hook="t:h"):
    return Outcome(hook=hook, verdict=Verdict(Action.ALLOW))


def test_a_round_that_changes_nothing_runs_once():
    args = {"command": "ls"}
    rounds = []
    outcomes = integrity.until_stable(lambda call: rounds.append(1) or [allow()], lambda: args, "t:args")
    assert len(rounds) == 1 and [o.action for o in outcomes] == [Action.ALLOW]


def test_a_rewrite_is_judged_again_until_it_settles():
    args = {"command": "ls"}
    seen = []

    def round_(call):
        seen.append(dict(args))
        if args["command"] == "ls":
            args["command"] = "ls -la"  # a later hook rewrites in place
        return [allow()]

    outcomes = integrity.until_stable(round_, lambda: args, "t:args")
    assert seen == [{"command": "ls"}, {"command": "ls -la"}]
    assert all(o.failure is None for o in outcomes)


def test_a_call_that_never_settles_is_invalid():
    args = {"n": 0}

    def round_(call):
        args["n"] += 1
        return [allow()]

    outcomes = integrity.until_stable(round_, lambda: args, "t:args")
    assert args["n"] == integrity.MAX_ROUNDS
    assert outcomes[-1].hook == "t:args" and outcomes[-1].failure is Failure.INVALID


def test_a_deny_ends_the_rounds_at_once():
    args = {"n": 0}

    def round_(call):
        args["n"] += 1
        return [Outcome(hook="t:h", verdict=Verdict(Action.DENY, "no"))]

    integrity.until_stable(round_, lambda: args, "t:args")
    assert args["n"] == 1


def test_objects_that_cannot_be_copied_or_compared_are_not_a_rewrite():
    class Opaque:
        def __deepcopy__(self, memo):
            raise RuntimeError("no copies")

        def __eq__(self, other):
            raise RuntimeError("no equality")

        __hash__ = object.__hash__

    args = {"client": Opaque(), "lock": threading.Lock(), "nan": float("nan")}
    rounds = []
    outcomes = integrity.until_stable(lambda call: rounds.append(1) or [allow()], lambda: args, "t:args")
    assert len(rounds) == 1 and all(o.failure is None for o in outcomes)


def test_swapping_an_object_is_a_rewrite():
    first, second = object(), object()
    assert integrity.fingerprint({"tool": first}) != integrity.fingerprint({"tool": second})
    assert integrity.fingerprint({"a": [1, 2.5, ("x",)]}) == integrity.fingerprint({"a": [1, 2.5, ("x",)]})
    assert integrity.fingerprint({"a": [1]}) != integrity.fingerprint({"a": (1,)})


def test_async_rounds():
    args = {"command": "a"}

    async def round_(call):
        if args["command"] == "a":
            args["command"] = "b"
        return [allow()]

    outcomes = asyncio.run(integrity.auntil_stable(round_, lambda: args, "t:args"))
    assert args == {"command": "b"} and all(o.failure is None for o in outcomes)
