import asyncio
import threading
import time

import pytest

from core_helpers import validate
from failsecure import guard
from failsecure.verdict import Action, Failure


class Boom(Exception):
    pass


def raiser(exc):
    def hook():
        raise exc

    return hook


# ---------------------------------------------------------------- sync


def test_answer_is_validated():
    o = guard.call("t:h", lambda: "deny", validate=validate)
    assert o.failure is None and o.action is Action.DENY and o.elapsed_ms >= 0
    # twin
    assert guard.call("t:h", lambda: "allow", validate=validate).action is Action.ALLOW


@pytest.mark.parametrize("exc", [Boom("secret"), SystemExit(3), GeneratorExit(), RecursionError()])
def test_any_exception_is_raised_failure_with_type_only(exc):
    o = guard.call("t:h", raiser(exc), validate=validate)
    assert o.failure is Failure.RAISED and o.exception_type == type(exc).__name__
    assert "secret" not in repr(o)


def test_keyboard_interrupt_propagates():
    with pytest.raises(KeyboardInterrupt):
        guard.call("t:h", raiser(KeyboardInterrupt()), validate=validate)
    with pytest.raises(KeyboardInterrupt):
        guard.call("t:h", raiser(KeyboardInterrupt()), validate=validate, timeout=1)


@pytest.mark.parametrize("junk", ["DENY", 0, [], {"blocked": True}, object()])
def test_junk_is_invalid(junk):
    o = guard.call("t:h", lambda: junk, validate=validate)
    assert o.failure is Failure.INVALID and o.verdict is None


def test_sync_deadline_abandons_the_call():
    release = threading.Event()
    o = guard.call("t:h", lambda: release.wait(5), validate=validate, timeout=0.05)
    assert o.failure is Failure.TIMEOUT and 40 <= o.elapsed_ms < 2000
    assert guard.abandoned_calls() >= 1
    release.set()
    for _ in range(200):
        if guard.abandoned_calls() == 0:
            break
        time.sleep(0.01)
    assert guard.abandoned_calls() == 0


def test_sync_deadline_twin_answers_in_time_and_raises_in_time():
    assert guard.call("t:h", lambda: "allow", validate=validate, timeout=1).action is Action.ALLOW
    o = guard.call("t:h", raiser(Boom()), validate=validate, timeout=1)
    assert o.failure is Failure.RAISED and o.exception_type == "Boom"


def test_abandoned_calls_are_bounded(monkeypatch):
    monkeypatch.setattr(guard, "MAX_ABANDONED", 3)
    release = threading.Event()
    threads_before = threading.active_count()
    for _ in range(3):
        assert guard.call("t:h", lambda: release.wait(5), validate=validate, timeout=0.02).failure is Failure.TIMEOUT
    start = time.perf_counter()
    o = guard.call("t:h", lambda: "allow", validate=validate, timeout=1)
    assert o.failure is Failure.TIMEOUT and time.perf_counter() - start < 0.5  # at once, not run
    assert threading.active_count() <= threads_before + 3
    release.set()
    for _ in range(200):
        if guard.abandoned_calls() == 0:
            break
        time.sleep(0.01)
    # the pool recovers: a deadlined call runs again
    assert guard.call("t:h", lambda: "allow", validate=validate, timeout=1).action is Action.ALLOW


def test_sync_call_returning_a_coroutine_is_undecided():
    async def hook():
        return "allow"

    o = guard.call("t:h", hook, validate=validate)
    assert o.failure is Failure.INVALID


def test_contextvars_reach_a_deadlined_hook():
    import contextvars

    var = contextvars.ContextVar("v", default="unset")
    var.set("caller")
    seen = []
    guard.call("t:h", lambda: seen.append(var.get()), validate=validate, timeout=1)
    assert seen == ["caller"]


class Hostile:
    def __bool__(self):
        raise Boom()

    def __str__(self):
        raise Boom()

    def __eq__(self, other):
        raise Boom()

    def __hash__(self):
        raise Boom()

    def get(self, *a):
        raise Boom()

    @property
    def __class__(self):
        raise Boom()


def test_hostile_object_is_invalid_not_allow():
    def judge(result):
        if result.get("blocked"):
            raise AssertionError
        return validate(None)

    o = guard.call("t:h", lambda: Hostile(), validate=judge)
    assert o.failure is Failure.INVALID and o.exception_type == "Boom"
    o = guard.call("t:h", lambda: Hostile(), validate=validate, timeout=1)
    assert o.failure is Failure.INVALID


def test_hostile_exception_is_raised_failure():
    class Nasty(Exception):
        def __str__(self):
            raise Boom()

        def __repr__(self):
            raise Boom()

    o = guard.call("t:h", raiser(Nasty()), validate=validate)
    assert o.failure is Failure.RAISED and o.exception_type == "Nasty"


def test_validator_returning_a_non_verdict_is_invalid():
    assert guard.call("t:h", lambda: None, validate=lambda r: "allow").failure is Failure.INVALID


# ---------------------------------------------------------------- async


def run(coro):
    return asyncio.run(coro)


def test_async_hook_answer_and_failures():
    async def deny():
        return "deny"

    async def boom():
        raise Boom()

    async def junk():
        return "DENY"

    assert run(guard.acall("t:h", deny, validate=validate)).action is Action.DENY
    o = run(guard.acall("t:h", boom, validate=validate, timeout=1))
    assert o.failure is Failure.RAISED and o.exception_type == "Boom"
    assert run(guard.acall("t:h", junk, validate=validate)).failure is Failure.INVALID


def test_async_deadline_cancels_the_hook():
    cancelled = []

    async def hang():
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    o = run(guard.acall("t:h", hang, validate=validate, timeout=0.05))
    assert o.failure is Failure.TIMEOUT and cancelled == [True]


def test_async_hook_raising_its_own_timeout_error_is_raised_not_timeout():
    async def hook():
        raise TimeoutError()

    o = run(guard.acall("t:h", hook, validate=validate, timeout=5))
    assert o.failure is Failure.RAISED and o.exception_type == "TimeoutError"


def test_sync_hook_in_async_path_gets_a_deadline_too():
    release = threading.Event()
    o = run(guard.acall("t:h", lambda: release.wait(5), validate=validate, timeout=0.05))
    release.set()
    assert o.failure is Failure.TIMEOUT
    assert run(guard.acall("t:h", lambda: "allow", validate=validate, timeout=1)).action is Action.ALLOW


def test_caller_cancellation_propagates():
    async def hang():
        await asyncio.sleep(5)

    async def main():
        task = asyncio.ensure_future(guard.acall("t:h", hang, validate=validate, timeout=10))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())


def test_hook_cancelling_itself_is_a_failure():
    async def hook():
        raise asyncio.CancelledError()

    o = run(guard.acall("t:h", hook, validate=validate))
    assert o.failure is Failure.RAISED and o.exception_type == "CancelledError"


def test_async_keyboard_interrupt_propagates():
    async def hook():
        raise KeyboardInterrupt()

    with pytest.raises(KeyboardInterrupt):
        run(guard.acall("t:h", hook, validate=validate))


def test_outcome_is_an_immutable_value():
    from failsecure.verdict import ABSTAIN, Outcome

    for args in [("t:h", ABSTAIN, None, None, 1.5), ("t:h", None, Failure.RAISED, "Boom", 0.25)]:
        positional = Outcome(*args)
        named = Outcome(hook=args[0], verdict=args[1], failure=args[2], exception_type=args[3], elapsed_ms=args[4])
        assert positional == named and positional.as_dict() == named.as_dict() and hash(positional) == hash(named)
        with pytest.raises(AttributeError):
            positional.hook = "other"


def test_validator_can_name_the_failure_category():
    from failsecure.verdict import Invalid

    def judge(result):
        if result == "died":
            raise Invalid(Failure.CRASHED)
        return validate(result)

    o = guard.call("t:h", lambda: "died", validate=judge)
    assert o.failure is Failure.CRASHED and o.exception_type is None
    assert guard.call("t:h", lambda: "allow", validate=judge).action is Action.ALLOW


def test_async_hook_that_suspends_then_answers_or_raises():
    async def deny_later():
        await asyncio.sleep(0.01)
        return "deny"

    async def raise_later():
        await asyncio.sleep(0)
        raise Boom()

    assert run(guard.acall("t:h", deny_later, validate=validate, timeout=1)).action is Action.DENY
    o = run(guard.acall("t:h", raise_later, validate=validate, timeout=1))
    assert o.failure is Failure.RAISED and o.exception_type == "Boom"


def test_async_hook_swallowing_the_deadline_is_still_a_timeout():
    async def stubborn():
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "allow"

    o = run(guard.acall("t:h", stubborn, validate=validate, timeout=0.05))
    assert o.failure is Failure.TIMEOUT
    # twin: the same hook answering in time is allowed
    async def prompt():
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            return "deny"
        return "allow"

    assert run(guard.acall("t:h", prompt, validate=validate, timeout=1)).action is Action.ALLOW


def test_hook_cancelling_itself_after_suspending_is_a_failure():
    async def hook():
        await asyncio.sleep(0)
        raise asyncio.CancelledError()

    o = run(guard.acall("t:h", hook, validate=validate, timeout=1))
    assert o.failure is Failure.RAISED and o.exception_type == "CancelledError"


def test_caller_cancellation_after_the_hook_suspended_reaches_the_hook():
    seen = []

    async def hang():
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main():
        task = asyncio.ensure_future(guard.acall("t:h", hang, validate=validate, timeout=10))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert seen == ["cancelled"]


def test_call_each_keeps_order_and_gives_each_hook_its_own_outcome():
    ran = []
    release = threading.Event()

    def rec(name, answer):
        def hook():
            ran.append(name)
            if answer == "hang":
                release.wait(5)
            if answer == "boom":
                raise Boom()
            return answer

        return hook

    calls = [
        ("t:a", rec("a", "allow"), (), None, validate, 1.0),
        ("t:b", rec("b", "hang"), (), None, validate, 0.05),
        ("t:c", rec("c", "boom"), (), None, validate, 1.0),
        ("t:d", rec("d", "junk"), (), None, validate, 1.0),
        ("t:e", rec("e", "deny"), (), None, validate, None),
    ]
    outcomes = guard.call_each(calls)
    release.set()
    assert [o.hook for o in outcomes] == ["t:a", "t:b", "t:c", "t:d", "t:e"]
    assert outcomes[0].action is Action.ALLOW
    assert outcomes[1].failure is Failure.TIMEOUT
    assert outcomes[2].failure is Failure.RAISED and outcomes[2].exception_type == "Boom"
    assert outcomes[3].failure is Failure.INVALID
    assert outcomes[4].action is Action.DENY
    time.sleep(0.05)
    assert ran == ["a", "b", "c", "d", "e"]  # the abandoned hook's successors ran once, after it


def test_call_each_without_deadlines_runs_inline():
    caller = threading.current_thread()
    seen = []
    outcomes = guard.call_each([("t:a", lambda: seen.append(threading.current_thread()), (), None, validate, None)])
    assert seen == [caller] and outcomes[0].failure is None and outcomes[0].action is Action.ABSTAIN
