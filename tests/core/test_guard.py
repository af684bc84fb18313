import asyncio
import os
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


# ---------------------------------------------------------------- one hand-off per batch


def _settle():
    for _ in range(300):
        if guard.abandoned_calls() == 0:
            return
        time.sleep(0.01)


def test_call_each_runs_the_batch_on_one_worker_and_wakes_the_caller_once(monkeypatch):
    threads = []
    released = []
    taken = []
    calls = [(f"t:{i}", lambda: threads.append(threading.current_thread()), (), None, validate, 1.0) for i in range(4)]
    guard.call_each(calls)  # a warm worker
    real = guard._pool.take

    def take():
        worker = real()
        done = worker.done

        class Counting:
            def acquire(self, *a):
                got = done.acquire(*a)
                released.append((a[0] if a else True, got))
                return got

            def release(self):
                done.release()

        worker.done = Counting()
        monkeypatch.setattr(guard._pool, "take", real)
        taken.append((worker, done))
        return worker

    monkeypatch.setattr(guard._pool, "take", take)
    threads.clear()
    outcomes = guard.call_each(calls)
    assert [o.hook for o in outcomes] == ["t:0", "t:1", "t:2", "t:3"] and all(o.failure is None for o in outcomes)
    assert len(set(threads)) == 1 and threads[0] is not threading.current_thread()
    # one wake for the whole batch: the batch's end is taken once, and the caller never
    # woke from a sleep without it (its polls before sleeping do not block)
    assert [got for _, got in released].count(True) == 1 and released[-1][1] is True
    assert not [1 for blocking, got in released if blocking and not got]
    for worker, done in taken:
        worker.done = done


def test_each_hook_in_a_batch_keeps_its_own_deadline():
    release = threading.Event()
    # two quick hooks, then one that hangs: it is cut at ITS deadline counted from its own
    # start, not from the batch's; the others' answers are kept
    calls = [
        ("t:a", lambda: time.sleep(0.15) or "allow", (), None, validate, 0.5),
        ("t:b", lambda: time.sleep(0.15) or "allow", (), None, validate, 0.5),
        ("t:c", lambda: release.wait(5), (), None, validate, 0.2),
    ]
    start = time.perf_counter()
    outcomes = guard.call_each(calls)
    took = time.perf_counter() - start
    release.set()
    assert [o.failure for o in outcomes] == [None, None, Failure.TIMEOUT]
    assert 0.45 <= took < 2.0  # 0.15 + 0.15 + 0.2: the third got its whole 0.2 s
    assert 180 <= outcomes[2].elapsed_ms < 1500
    assert 100 <= outcomes[0].elapsed_ms < 1000 and 100 <= outcomes[1].elapsed_ms < 1000
    _settle()


def test_a_slow_hook_early_in_a_batch_is_cut_at_its_own_deadline():
    release = threading.Event()
    ran = []
    calls = [
        ("t:a", lambda: ran.append("a") or release.wait(5), (), None, validate, 0.05),
        ("t:b", lambda: ran.append("b") or "deny", (), None, validate, 1.0),
    ]
    start = time.perf_counter()
    outcomes = guard.call_each(calls)
    assert time.perf_counter() - start < 1.0
    assert outcomes[0].failure is Failure.TIMEOUT and outcomes[1].action is Action.DENY
    release.set()
    time.sleep(0.05)
    assert ran == ["a", "b"]  # b ran once, on a fresh worker
    _settle()
    assert guard.abandoned_calls() == 0


def test_a_hook_without_deadline_then_a_hanging_one_with_a_deadline():
    release = threading.Event()
    calls = [
        ("t:a", lambda: time.sleep(0.1) or "allow", (), None, validate, None),
        ("t:b", lambda: release.wait(5), (), None, validate, 0.05),
    ]
    start = time.perf_counter()
    outcomes = guard.call_each(calls)
    took = time.perf_counter() - start
    release.set()
    assert outcomes[0].action is Action.ALLOW and outcomes[1].failure is Failure.TIMEOUT
    assert took < 1.0
    _settle()


def test_interrupted_caller_leaves_no_worker_behind(monkeypatch):
    release = threading.Event()
    calls = [("t:a", lambda: release.wait(5), (), None, validate, 5.0)]
    real = guard._pool.take
    taken = []

    def take():
        worker = real()
        done = worker.done

        class Interrupted:
            def acquire(self, *a):
                if a:
                    raise KeyboardInterrupt()
                return done.acquire()

            def release(self):
                done.release()

        worker.done = Interrupted()
        taken.append((worker, done))
        return worker

    monkeypatch.setattr(guard._pool, "take", take)
    with pytest.raises(KeyboardInterrupt):
        guard.call_each(calls)
    monkeypatch.setattr(guard._pool, "take", real)
    assert guard.abandoned_calls() == 1  # still running: counted, bounded
    release.set()
    _settle()
    assert guard.abandoned_calls() == 0
    for worker, done in taken:
        worker.done = done


def test_keyboard_interrupt_from_a_batched_hook_propagates_and_frees_the_worker():
    before = len(guard._pool.idle)
    calls = [
        ("t:a", lambda: "allow", (), None, validate, 1.0),
        ("t:b", raiser(KeyboardInterrupt()), (), None, validate, 1.0),
    ]
    with pytest.raises(KeyboardInterrupt):
        guard.call_each(calls)
    assert len(guard._pool.idle) >= min(before, guard.MAX_IDLE) and len(guard._pool.idle) >= 1
    assert guard.call_each(calls[:1])[0].action is Action.ALLOW


def test_idle_workers_are_reused_not_piled_up():
    calls = [(f"t:{i}", lambda: None, (), None, validate, 1.0) for i in range(3)]
    guard.call_each(calls)
    threads = threading.active_count()
    for _ in range(200):
        guard.call_each(calls)
    assert threading.active_count() <= threads
    assert len(guard._pool.idle) <= guard.MAX_IDLE


def test_many_callers_at_once_each_get_their_own_results():
    errors = []

    def caller(n):
        calls = [(f"t:{n}:{i}", (lambda v: lambda: v)(("allow", "deny")[(n + i) % 2]), (), None, validate, 2.0) for i in range(3)]
        for _ in range(50):
            got = [o.action for o in guard.call_each(calls)]
            want = [Action.ALLOW if (n + i) % 2 == 0 else Action.DENY for i in range(3)]
            if got != want:
                errors.append((n, got))

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert guard.abandoned_calls() == 0


def test_async_sync_hook_with_deadline_answers_times_out_and_frees_its_worker():
    release = threading.Event()

    async def main():
        ok = await guard.acall("t:h", lambda: "allow", validate=validate, timeout=1)
        slow = await guard.acall("t:h", lambda: release.wait(5), validate=validate, timeout=0.05)
        boom = await guard.acall("t:h", raiser(Boom()), validate=validate, timeout=1)
        return ok, slow, boom

    ok, slow, boom = asyncio.run(main())
    release.set()
    assert ok.action is Action.ALLOW and slow.failure is Failure.TIMEOUT
    assert boom.failure is Failure.RAISED and boom.exception_type == "Boom"
    _settle()
    assert guard.abandoned_calls() == 0


def test_async_slow_sync_hook_is_awaited_without_holding_the_loop():
    release = threading.Event()
    ticks = []

    async def ticker():
        while not release.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.005)

    async def main():
        task = asyncio.ensure_future(ticker())
        slow = await guard.acall("t:h", lambda: time.sleep(0.1) or "deny", validate=validate, timeout=1)
        hung = await guard.acall("t:h", lambda: release.wait(5), validate=validate, timeout=0.1)
        release.set()
        await task
        return slow, hung

    slow, hung = asyncio.run(main())
    assert slow.action is Action.DENY and hung.failure is Failure.TIMEOUT
    assert len(ticks) >= 10  # the loop kept running while both hooks ran on the worker
    _settle()
    assert guard.abandoned_calls() == 0


def test_acall_each_one_hand_off_each_hook_its_own_deadline():
    release = threading.Event()
    ran = []

    def rec(name, answer):
        def hook():
            ran.append((name, threading.current_thread()))
            if answer == "hang":
                release.wait(5)
            if answer == "slow":
                time.sleep(0.05)
                return "allow"
            if answer == "boom":
                raise Boom()
            return answer

        return hook

    calls = [
        ("t:a", rec("a", "allow"), (), None, validate, 1.0),
        ("t:s", rec("s", "slow"), (), None, validate, 1.0),
        ("t:b", rec("b", "hang"), (), None, validate, 0.1),
        ("t:c", rec("c", "boom"), (), None, validate, 1.0),
        ("t:d", rec("d", "junk"), (), None, validate, 1.0),
        ("t:e", rec("e", "deny"), (), None, validate, None),
    ]

    async def main():
        ticks = []

        async def ticker():
            while not release.is_set():
                ticks.append(1)
                await asyncio.sleep(0.005)

        task = asyncio.ensure_future(ticker())
        outcomes = await guard.acall_each(calls)
        release.set()
        await task
        return outcomes, ticks

    outcomes, ticks = asyncio.run(main())
    assert [o.hook for o in outcomes] == ["t:a", "t:s", "t:b", "t:c", "t:d", "t:e"]
    assert outcomes[0].action is Action.ALLOW and outcomes[1].action is Action.ALLOW
    assert outcomes[2].failure is Failure.TIMEOUT and 90 <= outcomes[2].elapsed_ms < 1500
    assert outcomes[3].failure is Failure.RAISED and outcomes[3].exception_type == "Boom"
    assert outcomes[4].failure is Failure.INVALID
    assert outcomes[5].action is Action.DENY
    assert len(ticks) >= 5  # the loop ran while the batch did
    assert ran[0][1] is ran[1][1] is ran[2][1]  # one worker for the batch, up to the hang
    _settle()
    assert guard.abandoned_calls() == 0


def test_acall_each_caller_cancellation_propagates_and_frees_the_worker():
    release = threading.Event()

    async def main():
        task = asyncio.ensure_future(guard.acall_each([("t:a", lambda: release.wait(5), (), None, validate, 5.0)]))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert guard.abandoned_calls() == 1
    release.set()
    _settle()
    assert guard.abandoned_calls() == 0


def test_batched_sync_hook_answering_a_coroutine_is_awaited_in_an_async_dispatcher():
    """A plain function returning a coroutine, batched from async code: awaited within its
    deadline (as an async dispatcher awaits it), judged on what it returns; its twin that
    hangs is a timeout."""

    async def answer(value, delay=0.0):
        await asyncio.sleep(delay)
        return value

    calls = [
        ("t:plain", lambda: "allow", (), None, validate, 1.0),
        ("t:returns-coro", lambda: answer("deny"), (), None, validate, 1.0),
        ("t:returns-slow-coro", lambda: answer("allow", 5.0), (), None, validate, 0.2),
    ]
    outcomes = run(guard.acall_each(calls))
    assert [o.hook for o in outcomes] == ["t:plain", "t:returns-coro", "t:returns-slow-coro"]
    assert outcomes[0].action is Action.ALLOW
    assert outcomes[1].action is Action.DENY and outcomes[1].failure is None
    assert outcomes[2].failure is Failure.TIMEOUT


# ---------------------------------------------------------------- answers judged under the deadline


class _Stuck(str):
    """An answer whose comparison hangs: a validator reading it never returns."""

    def __eq__(self, other):
        _STUCK.wait(10)
        return str.__eq__(self, other)

    __hash__ = str.__hash__


_STUCK = threading.Event()


def _dict_validate(result):
    """Reads a dict answer the way framework validators do (``.get`` then ``==``)."""
    if type(result) is dict and result.get("action") == "deny":
        return guard.Verdict(action=Action.DENY, reason="no")
    if type(result) is dict and result.get("action") == "allow":
        return guard.Verdict(action=Action.ALLOW)
    raise guard.Invalid()


def test_a_hostile_answer_that_hangs_the_validator_is_cut_at_the_deadline():
    _STUCK.clear()
    try:
        start = time.perf_counter()
        outcomes = guard.call_each([
            ("t:ok", lambda: {"action": "allow"}, (), None, _dict_validate, 1.0),
            ("t:stuck", lambda: {"action": _Stuck("allow")}, (), None, _dict_validate, 0.2),
        ])
        took = time.perf_counter() - start
        assert [o.failure for o in outcomes] == [None, Failure.TIMEOUT]
        assert outcomes[0].action is Action.ALLOW and outcomes[1].hook == "t:stuck"
        assert took < 2.0  # the caller never waited on the validator
        # twin: the same answer with a plain string is judged and allowed
        twin = guard.call_each([("t:plain", lambda: {"action": "allow"}, (), None, _dict_validate, 0.2)])
        assert twin[0].failure is None and twin[0].action is Action.ALLOW
    finally:
        _STUCK.set()


def test_a_hostile_answer_that_hangs_the_validator_does_not_hold_the_loop():
    _STUCK.clear()

    async def main():
        ticks = []

        async def ticker():
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.01)

        tick = asyncio.create_task(ticker())
        try:
            stuck = await guard.acall("t:stuck", lambda: {"action": _Stuck("deny")}, validate=_dict_validate, timeout=0.2)
            plain = await guard.acall("t:plain", lambda: {"action": "deny"}, validate=_dict_validate, timeout=0.2)
        finally:
            tick.cancel()
        return stuck, plain, ticks

    try:
        stuck, plain, ticks = asyncio.run(main())
        assert stuck.failure is Failure.TIMEOUT and stuck.elapsed_ms < 2000
        assert len(ticks) >= 5  # the loop kept running while the validator hung
        # twin: a plain answer is judged (a deny here, with its reason)
        assert plain.failure is None and plain.action is Action.DENY and plain.verdict.reason == "no"
    finally:
        _STUCK.set()


# ---------------------------------------------------------------- fork


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_a_working_pool():
    """A host that forks after a decision (a pre-fork server, multiprocessing's fork
    start) must not inherit idle workers whose threads did not survive the fork: every
    deadlined gate would then time out in the child."""
    guard.call_each([("t:warm", lambda: "allow", (), None, validate, 1.0)])  # an idle worker now
    assert guard._pool.idle
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never return into pytest
        code = 1
        try:
            ok = guard.call_each([("t:child", lambda: "allow", (), None, validate, 2.0)])
            gone = threading.Event()
            hung = guard.call_each([("t:hang", lambda: gone.wait(5), (), None, validate, 0.2)])
            failed = hung[0].failure.value if hung[0].failure is not None else "none"
            os.write(write, f"{ok[0].failure is None}|{ok[0].action.value}|{failed}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    got = os.read(read, 200).decode()
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # allowed in the child, within its deadline; the twin: a hanging gate still times out
    assert got == "True|allow|timeout"


def test_a_later_hooks_shorter_deadline_is_kept_after_an_earlier_longer_one():
    """The caller must not sleep on the first hook's long deadline while a later hook
    with a short one hangs: it wakes no later than the soonest deadline that could expire."""
    release = threading.Event()
    try:
        calls = [("t:a", lambda: "allow", (), None, validate, 2.0),
                 ("t:b", lambda: release.wait(5), (), None, validate, 0.05)]
        start = time.perf_counter()
        outcomes = guard.call_each(calls)
        took = time.perf_counter() - start
        assert outcomes[0].failure is None and outcomes[0].action is Action.ALLOW
        assert outcomes[1].hook == "t:b" and outcomes[1].failure is Failure.TIMEOUT
        assert took < 1.0 and outcomes[1].elapsed_ms < 1000
        # twin: the same batch whose second hook answers in time is allowed in full
        twin = guard.call_each([calls[0], ("t:b", lambda: "allow", (), None, validate, 0.05)])
        assert [o.failure for o in twin] == [None, None] and twin[1].action is Action.ALLOW
    finally:
        release.set()


# ---------------------------------------------------------------- polling before sleeping


@pytest.mark.parametrize("spin", [guard.SPIN, 0.0, 0.2])
def test_a_deadline_shorter_than_the_polling_is_kept(monkeypatch, spin):
    # the caller polls for SPIN before it sleeps: a hook whose deadline comes first is
    # still cut at it, and the polling never outlasts the deadline
    monkeypatch.setattr(guard, "SPIN", spin)
    release = threading.Event()
    try:
        start = time.perf_counter()
        out = guard.call_each([("t:hang", release.wait, (5,), None, validate, 0.00005)])
        waited = time.perf_counter() - start
    finally:
        release.set()
    assert out[0].failure is Failure.TIMEOUT and out[0].verdict is None
    assert waited < 2.0  # the hook would have returned at 5 s


@pytest.mark.parametrize("spin", [guard.SPIN, 0.0])
def test_a_hook_slower_than_the_polling_is_waited_for(monkeypatch, spin):
    # allow twin: a hook that outlasts the polling (the caller then sleeps) but ends
    # within its deadline is judged, not timed out
    monkeypatch.setattr(guard, "SPIN", spin)
    out = guard.call_each([("t:slow", time.sleep, (0.02,), None, validate, 5.0), ("t:quick", lambda: None, (), None, validate, 5.0)])
    assert [o.failure for o in out] == [None, None]
    assert [o.action for o in out] == [Action.ABSTAIN, Action.ABSTAIN]



@pytest.mark.parametrize("spin", [guard.SPIN, 0.0, 0.2])
def test_an_async_dispatcher_keeps_a_deadline_shorter_than_the_polling(monkeypatch, spin):
    monkeypatch.setattr(guard, "SPIN", spin)
    release = threading.Event()
    calls = [("t:hang", release.wait, (5,), None, validate, 0.00005), ("t:after", lambda: None, (), None, validate, 5.0)]
    try:
        out = asyncio.run(guard.acall_each(calls))
    finally:
        release.set()
    assert out[0].failure is Failure.TIMEOUT
    assert out[1].failure is None and out[1].action is Action.ABSTAIN  # the next hook still ran



@pytest.fixture(params=["python", "compiled"])
def polls(request, monkeypatch):
    """The caller's two ways to poll: in Python (sched_yield between polls), and the
    compiled ``failsecure._spin`` where it was built. -> the list each poll appends to."""
    seen: list = []
    if request.param == "python":
        monkeypatch.setattr(guard, "_cwait", None)
        real = guard._yield
        monkeypatch.setattr(guard, "_yield", lambda: seen.append(1) or real())
    else:
        if guard._cwait is None:
            pytest.skip("failsecure._spin is not built here")
        real = guard._cwait
        monkeypatch.setattr(guard, "_cwait", lambda flag, limit: seen.append(1) or real(flag, limit))
    return seen


def test_the_caller_polls_for_a_moment_then_sleeps(polls):
    # while a slow hook runs the caller polls for at most SPIN, then sleeps: it neither
    # skips the polling nor burns its CPU for the hook's whole run
    cpu = time.thread_time()
    out = guard.call_each([("t:slow", time.sleep, (0.3,), None, validate, 5.0)])
    spent = time.thread_time() - cpu
    assert out[0].failure is None and out[0].action is Action.ABSTAIN
    assert polls, "the caller never polled"
    assert spent < 0.1, f"the caller spent {spent:.3f} s of CPU waiting for a 0.3 s hook"


def test_an_async_dispatcher_polls_for_a_moment_then_sleeps(polls):
    cpu = time.thread_time()
    out = asyncio.run(guard.acall_each([("t:slow", time.sleep, (0.3,), None, validate, 5.0)]))
    spent = time.thread_time() - cpu
    assert out[0].failure is None and out[0].action is Action.ABSTAIN
    assert polls and spent < 0.1


@pytest.mark.parametrize("spin", [guard.SPIN, 0.2])
def test_a_quick_batch_ends_within_the_polling_either_way(polls, monkeypatch, spin):
    # allow twin of the deadline tests, in both polling modes: quick gates are judged
    monkeypatch.setattr(guard, "SPIN", spin)
    out = guard.call_each([(f"t:{i}", lambda: None, (), None, validate, 5.0) for i in range(3)])
    assert [o.action for o in out] == [Action.ABSTAIN] * 3 and [o.failure for o in out] == [None] * 3
    hang = threading.Event()
    try:
        out = guard.call_each([("t:hang", hang.wait, (5,), None, validate, 0.00005)])
    finally:
        hang.set()
    assert out[0].failure is Failure.TIMEOUT


def test_the_compiled_poll_is_used_where_it_was_built():
    try:
        from failsecure import _spin
    except ImportError:
        pytest.skip("failsecure._spin is not built here")
    assert guard._cwait is _spin.wait


def test_the_compiled_poll_itself():
    try:
        from failsecure import _spin
    except ImportError:
        pytest.skip("failsecure._spin is not built here")
    flag = bytearray(1)
    start = time.perf_counter()
    assert _spin.wait(flag, 0.002) is False  # not set: gives up at the limit
    assert time.perf_counter() - start >= 0.002
    flag[0] = 1
    assert _spin.wait(flag, 5.0) is True  # set: at once
    setter = threading.Timer(0.01, lambda: flag.__setitem__(0, 1))
    flag[0] = 0
    setter.start()
    assert _spin.wait(flag, 5.0) is True  # set by another thread while it polls (the GIL is free)
    setter.join()
    with pytest.raises(ValueError):
        _spin.wait(bytearray(), 0.001)
    with pytest.raises(TypeError):
        _spin.wait(b"\x00", 0.001)  # read-only


# ---------------------------------------------------------------- deadlines that hold (issue 25)
#
# An answer that ends after its deadline is a timeout however it was produced: a gate
# that holds the GIL (the caller cannot wake in time, then finds a finished answer), an
# async gate that blocks the event loop, an async gate that swallows its cancellation.


import re  # noqa: E402

from failsecure import policy  # noqa: E402


def _regex_gate(length):
    """A gate running a catastrophic regex on its input: the GIL is held in C throughout
    (about a second for 25 characters on the reference machine; 5 is instant)."""

    def gate(*args, **kwargs):
        re.match(r"(a+)+$", "a" * length + "b")
        return "allow"

    return gate


def _bounded(fn, seconds=20.0):
    """Run ``fn()`` in a thread: -> its result, or fail (never hang the suite) when it
    does not return within ``seconds``."""
    box: list = []

    def run():
        try:
            box.append(("ok", fn()))
        except BaseException as exc:  # handed back to the test
            box.append(("raised", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"did not return within {seconds} s"
    kind, value = box[0]
    if kind == "raised":
        raise value
    return value


def test_a_gate_holding_the_gil_past_its_deadline_is_a_timeout_on_every_sync_path():
    slow, quick = _regex_gate(24), _regex_gate(5)
    after = ("t:after", lambda: "allow", (), None, validate, 5.0)
    for gate, late in ((slow, True), (quick, False)):  # twin: the same gate on a short input
        deadline = 0.005 if late else 5.0
        outcomes = [
            guard.call("t:re", gate, validate=validate, timeout=deadline),
            guard.call_each([("t:re", gate, (), None, validate, deadline), after])[0],
            asyncio.run(guard.acall("t:re", gate, validate=validate, timeout=deadline)),
            asyncio.run(guard.acall_each([("t:re", gate, (), None, validate, deadline)]))[0],
        ]
        for o in outcomes:
            if late:
                assert o.failure is Failure.TIMEOUT and o.verdict is None and o.hook == "t:re", o
            else:
                assert o.failure is None and o.action is Action.ALLOW, o
    # the hook after a late one still runs, on a fresh worker, and is judged
    out = guard.call_each([("t:re", slow, (), None, validate, 0.005), after])
    assert out[0].failure is Failure.TIMEOUT and out[1].failure is None and out[1].action is Action.ALLOW


def test_a_gate_holding_the_gil_then_raising_past_its_deadline_is_a_timeout():
    def gate():
        _regex_gate(24)()
        raise Boom()

    assert guard.call("t:re", gate, validate=validate, timeout=0.005).failure is Failure.TIMEOUT
    # twin: raising in time is RAISED, with its type
    o = guard.call("t:re", raiser(Boom()), validate=validate, timeout=5.0)
    assert o.failure is Failure.RAISED and o.exception_type == "Boom"


def test_an_async_gate_blocking_the_loop_past_its_deadline_is_a_timeout():
    async def before_any_await():
        time.sleep(0.2)  # a sync HTTP client, time.sleep: the loop is held
        return "allow"

    async def after_an_await():
        await asyncio.sleep(0)
        time.sleep(0.2)
        return "allow"

    async def raises_after_blocking():
        await asyncio.sleep(0)
        time.sleep(0.2)
        raise Boom()

    async def regex():
        await asyncio.sleep(0)
        return _regex_gate(24)()

    for gate in (before_any_await, after_an_await, raises_after_blocking, regex):
        o = asyncio.run(guard.acall("t:a", gate, validate=validate, timeout=0.02))
        assert o.failure is Failure.TIMEOUT and o.verdict is None, (gate.__name__, o)
    # twins: the same gates within their deadline are judged as they answered
    for gate in (before_any_await, after_an_await):
        o = asyncio.run(guard.acall("t:a", gate, validate=validate, timeout=5.0))
        assert o.failure is None and o.action is Action.ALLOW
    o = asyncio.run(guard.acall("t:a", raises_after_blocking, validate=validate, timeout=5.0))
    assert o.failure is Failure.RAISED and o.exception_type == "Boom"


def test_a_sync_hook_answering_a_coroutine_that_blocks_the_loop_is_a_timeout():
    async def blocks():
        time.sleep(0.2)
        return "allow"

    calls = [("t:c", lambda: blocks(), (), None, validate, 0.05), ("t:after", lambda: "allow", (), None, validate, 5.0)]
    out = asyncio.run(guard.acall_each(calls))
    assert out[0].failure is Failure.TIMEOUT and out[1].failure is None and out[1].action is Action.ALLOW
    # twin: the coroutine answering in time is awaited and judged
    out = asyncio.run(guard.acall_each([("t:c", lambda: blocks(), (), None, validate, 5.0)]))
    assert out[0].failure is None and out[0].action is Action.ALLOW


class _Stubborn:
    """An async gate that swallows every cancellation and waits on (for ever, or until
    ``release``). Records what became of it."""

    def __init__(self, cleanup: float = 0.0):
        self.cleanup = cleanup
        self.cancelled = 0
        self.closed = False
        self.cleaned = False

    async def __call__(self):
        try:
            while True:
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    self.cancelled += 1
                    if self.cleanup:  # a clean-up that awaits, then gives up the call
                        await asyncio.sleep(self.cleanup)
                        self.cleaned = True
                        return "allow"
        finally:
            self.closed = True


def test_an_async_gate_swallowing_its_cancellation_is_decided_at_its_deadline(caplog):
    stubborn = _Stubborn()
    errors: list = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context.get("message")))
        start = time.perf_counter()
        o = await guard.acall("t:s", stubborn, validate=validate, timeout=0.05)
        return o, time.perf_counter() - start

    with caplog.at_level("DEBUG", logger="asyncio"):
        o, took = _bounded(lambda: asyncio.run(main()))  # asyncio.run's shutdown must not hang either
    assert o.failure is Failure.TIMEOUT and o.verdict is None
    assert took < 2.0, took  # the gate would hold it for ever
    assert stubborn.cancelled >= 1 and stubborn.closed  # closed at the loop's shutdown at the latest
    assert errors == [] and not [r for r in caplog.records if "destroyed" in r.getMessage()]
    # twin: the same gate answering before its deadline is judged
    async def prompt():
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            pass
        return "allow"

    assert asyncio.run(guard.acall("t:s", prompt, validate=validate, timeout=5.0)).action is Action.ALLOW


def test_the_rest_of_an_abandoned_async_gate_runs_its_clean_up_then_ends(monkeypatch):
    monkeypatch.setattr(guard, "ASYNC_GRACE", 5.0, raising=False)
    stubborn = _Stubborn(cleanup=0.05)

    async def main():
        o = await guard.acall("t:s", stubborn, validate=validate, timeout=0.05)
        decided_before_clean_up = not stubborn.cleaned
        for _ in range(300):  # the loop runs on: the abandoned rest finishes its clean-up
            if stubborn.closed:
                break
            await asyncio.sleep(0.01)
        return o, decided_before_clean_up

    o, early = _bounded(lambda: asyncio.run(main()))
    assert o.failure is Failure.TIMEOUT and early  # decided at the deadline, not after the clean-up
    assert stubborn.cleaned and stubborn.closed  # its late "allow" went nowhere


def test_the_rest_of_an_abandoned_async_gate_is_closed_after_the_grace(monkeypatch):
    monkeypatch.setattr(guard, "ASYNC_GRACE", 0.05, raising=False)
    stubborn = _Stubborn()

    async def main():
        o = await guard.acall("t:s", stubborn, validate=validate, timeout=0.02)
        for _ in range(300):
            if stubborn.closed:
                break
            await asyncio.sleep(0.01)
        return o, stubborn.closed, len(asyncio.all_tasks())

    o, closed, tasks = _bounded(lambda: asyncio.run(main()))
    assert o.failure is Failure.TIMEOUT and closed and tasks == 1  # only main() is left


def test_an_abandoned_async_gate_on_a_loop_closed_before_its_grace_leaves_no_noise(caplog):
    import gc

    stubborn = _Stubborn()
    loop = asyncio.new_event_loop()
    errors: list = []
    loop.set_exception_handler(lambda loop, context: errors.append(context.get("message")))
    with caplog.at_level("DEBUG", logger="asyncio"):
        try:
            o = _bounded(lambda: loop.run_until_complete(guard.acall("t:s", stubborn, validate=validate, timeout=0.02)))
        finally:
            loop.close()  # with the abandoned rest still pending: no shutdown of tasks here
        gc.collect()
    assert o.failure is Failure.TIMEOUT
    assert errors == [] and not [r for r in caplog.records if "destroyed" in r.getMessage()]


def test_the_callers_own_cancellation_still_propagates_through_a_stubborn_gate():
    """The caller's cancellation is not the deadline's: it still reaches the caller (the
    gate swallowing it is the gate's business, as without failsecure)."""

    async def main():
        stubborn = _Stubborn(cleanup=0.01)
        task = asyncio.ensure_future(guard.acall("t:s", stubborn, validate=validate, timeout=10))
        await asyncio.sleep(0.02)
        task.cancel()
        return await task

    o = _bounded(lambda: asyncio.run(main()))
    # the gate swallowed the caller's cancellation and answered: judged as before
    assert o.failure is None and o.action is Action.ALLOW


# ---------------------------------------------------------------- the bounds on abandoned calls


def _hang(release):
    return lambda *a, **k: release.wait(10) and "allow"


def _settle_until(predicate, seconds=5.0):
    end = time.perf_counter() + seconds
    while not predicate():
        assert time.perf_counter() < end, "did not settle"
        time.sleep(0.01)


@pytest.fixture
def bounds(monkeypatch):
    """A pool of its own, small bounds, and a config with an observer and an advisory hook."""
    monkeypatch.setattr(guard, "_pool", guard._Pool())
    monkeypatch.setattr(guard, "MAX_ABANDONED", 2)
    monkeypatch.setattr(guard, "MAX_ABANDONED_ADVISORY", 2, raising=False)
    monkeypatch.setattr(guard, "MAX_ABANDONED_PER_HOOK", 100, raising=False)
    config = policy.Config(hooks={
        "t:obs": policy.HookPolicy(role="observer"),
        "t:obs2": policy.HookPolicy(role="observer"),
        "t:adv": policy.HookPolicy(on_error="allow"),
    })
    release = threading.Event()
    with policy.using(config):
        yield release
    release.set()
    _settle_until(lambda: guard.abandoned_calls() == 0)


def test_abandoned_observer_and_advisory_calls_do_not_fill_the_gates_bound(bounds):
    release = bounds
    for hook in ("t:obs", "t:adv"):
        assert guard.call(hook, _hang(release), validate=validate, timeout=0.02).failure is Failure.TIMEOUT
    assert guard.abandoned_calls() == 2
    ran: list = []
    gate = lambda: ran.append(1) or "allow"  # noqa: E731
    for o in (guard.call("t:gate", gate, validate=validate, timeout=1.0),
              guard.call_each([("t:obs", lambda: None, (), None, validate, 1.0), ("t:gate", gate, (), None, validate, 1.0)])[1],
              asyncio.run(guard.acall("t:gate", gate, validate=validate, timeout=1.0))):
        assert o.failure is None and o.action is Action.ALLOW  # the gate ran and answered
    assert len(ran) == 3
    # twin: as many hung gates fill the gates' bound: the next gate is refused at once
    for hook in ("t:g1", "t:g2"):
        assert guard.call(hook, _hang(release), validate=validate, timeout=0.02).failure is Failure.TIMEOUT
    o = guard.call("t:gate", gate, validate=validate, timeout=1.0)
    assert o.failure is Failure.TIMEOUT and o.elapsed_ms < 500 and len(ran) == 3


def test_observers_and_advisory_hooks_have_a_bound_of_their_own(bounds):
    release = bounds
    for hook in ("t:obs", "t:adv"):
        guard.call(hook, _hang(release), validate=validate, timeout=0.02)
    ran: list = []
    out = guard.call_each([("t:obs2", lambda: ran.append("obs2"), (), None, validate, 1.0),
                           ("t:gate", lambda: ran.append("gate") or "allow", (), None, validate, 1.0)])
    # the observer's bound is full: it is refused at once (which denies nothing); the gate runs
    assert out[0].failure is Failure.TIMEOUT and out[1].failure is None and out[1].action is Action.ALLOW
    assert ran == ["gate"]
    release.set()
    _settle_until(lambda: guard.abandoned_calls() == 0)
    # twin: once the hung observers returned, observers run again
    assert guard.call("t:obs2", lambda: ran.append("obs2"), validate=validate, timeout=1.0).failure is None
    assert ran == ["gate", "obs2"]


def test_a_hung_hook_is_contained_by_its_own_bound_and_the_others_run(monkeypatch):
    monkeypatch.setattr(guard, "_pool", guard._Pool())
    monkeypatch.setattr(guard, "MAX_ABANDONED_PER_HOOK", 2, raising=False)
    release = threading.Event()
    ran: list = []
    try:
        for _ in range(2):
            assert guard.call("t:hung", _hang(release), validate=validate, timeout=0.02).failure is Failure.TIMEOUT
        # its third call is refused at once, without running ...
        o = guard.call("t:hung", lambda: ran.append("hung") or "allow", validate=validate, timeout=1.0)
        assert o.failure is Failure.TIMEOUT and o.elapsed_ms < 500 and ran == []
        o = asyncio.run(guard.acall("t:hung", lambda: ran.append("hung") or "allow", validate=validate, timeout=1.0))
        assert o.failure is Failure.TIMEOUT and ran == []
        # ... while every other hook runs, in order, around it in a batch
        out = guard.call_each([
            ("t:a", lambda: ran.append("a") or "allow", (), None, validate, 1.0),
            ("t:hung", lambda: ran.append("hung") or "allow", (), None, validate, 1.0),
            ("t:b", lambda: ran.append("b") or "deny", (), None, validate, 1.0),
        ])
        assert [(o.hook, o.failure, o.action) for o in out] == [
            ("t:a", None, Action.ALLOW), ("t:hung", Failure.TIMEOUT, Action.ABSTAIN), ("t:b", None, Action.DENY)]
        out = asyncio.run(guard.acall_each([
            ("t:hung", lambda: ran.append("hung") or "allow", (), None, validate, 1.0),
            ("t:a", lambda: ran.append("a") or "allow", (), None, validate, 1.0),
        ]))
        assert [(o.hook, o.failure) for o in out] == [("t:hung", Failure.TIMEOUT), ("t:a", None)]
        assert ran == ["a", "b", "a"]
    finally:
        release.set()
    _settle_until(lambda: guard.abandoned_calls() == 0)
    # twin: once its hung calls returned, the hook runs again
    assert guard.call("t:hung", lambda: "allow", validate=validate, timeout=1.0).action is Action.ALLOW


# ---------------------------------------------------------------- a huge deadline


def test_a_deadline_beyond_the_longest_lock_wait_is_waited_for_not_raised():
    huge = 1e300  # a valid config value, far beyond threading.TIMEOUT_MAX
    assert huge > threading.TIMEOUT_MAX

    def slow():  # slower than the caller's polling: it sleeps on the worker
        time.sleep(0.05)
        return "allow"

    async def aslow():
        await asyncio.sleep(0.05)
        return "allow"

    outcomes = [
        guard.call("t:h", slow, validate=validate, timeout=huge),
        guard.call_each([("t:a", slow, (), None, validate, None), ("t:h", slow, (), None, validate, huge)])[1],
        asyncio.run(guard.acall("t:h", slow, validate=validate, timeout=huge)),
        asyncio.run(guard.acall("t:h", aslow, validate=validate, timeout=huge)),
        asyncio.run(guard.acall_each([("t:h", slow, (), None, validate, huge)]))[0],
    ]
    assert [(o.failure, o.action) for o in outcomes] == [(None, Action.ALLOW)] * 5
    # twins: a raising gate is still RAISED, and a hanging one after it keeps its own deadline
    release = threading.Event()
    try:
        out = guard.call_each([("t:r", raiser(Boom()), (), None, validate, huge), ("t:hang", _hang(release), (), None, validate, 0.05)])
    finally:
        release.set()
    assert out[0].failure is Failure.RAISED and out[1].failure is Failure.TIMEOUT


def test_a_huge_timeout_in_a_config_is_kept_as_the_longest_deadline_and_works():
    config = policy.validate({"timeout": 1e300, "hooks": {"dl:own": {"timeout": 1e300}}})
    assert policy.MAX_TIMEOUT == threading.TIMEOUT_MAX
    assert config.timeout == policy.MAX_TIMEOUT and config.timeout_for("dl:own") == policy.MAX_TIMEOUT
    assert policy.validate({"timeout": 2.5}).timeout == 2.5  # twin: an ordinary deadline is kept as written
    toy = _Toy()

    def slow():
        time.sleep(0.05)
        return "allow"

    with policy.using(config):
        o = toy.hook_call("dl:slow", slow)
        d = toy.decide("ls", [o])
        batch = toy.hook_calls([("dl:own", slow, (), None, None), ("dl:slow", slow, (), None, None)])
        ao = asyncio.run(toy.ahook_call("dl:slow", slow))
    assert o.failure is None and d.action is Action.ALLOW
    assert [x.failure for x in batch] == [None, None] and ao.action is Action.ALLOW


# ---------------------------------------------------------------- through the adapter


from failsecure import plugins  # noqa: E402
from failsecure.adapter import Adapter  # noqa: E402


class _Toy(Adapter):
    name = "dl"
    distribution = "pytest"
    modules = ("fs_dl_framework",)

    def _patch(self):
        pass

    def to_verdict(self, native):
        return validate(native)

    def _probe(self, gate):
        return self.decide("probe", [self.hook_call("dl:probe", gate)]).denied


class _PluginGate:
    def __init__(self, fn):
        self.fn = fn

    @plugins.hookimpl
    def failsecure_pre_tool_call(self, call):
        return self.fn(call)


@pytest.fixture
def plugin_gate():
    registered = []

    def add(fn, name):
        plugin = _PluginGate(fn)
        plugins.register(plugin, name=name)
        registered.append(plugin)

    yield add
    for p in registered:
        plugins.unregister(p)


def test_a_plugin_gate_answering_past_its_deadline_denies_as_timeout_in_decide(plugin_gate):
    length = {"n": 24}
    plugin_gate(lambda call: _regex_gate(length["n"])() and None, "re")
    toy = _Toy()
    with policy.using(policy.Config(hooks={"plugin:re": policy.HookPolicy(timeout=0.005)})):
        d = toy.decide("ls", [])
    assert d.denied and d.primary.hook == "plugin:re" and d.primary.failure is Failure.TIMEOUT
    # twin: the same gate on a short input answers in time: nothing denies
    length["n"] = 5
    with policy.using(policy.Config(hooks={"plugin:re": policy.HookPolicy(timeout=5.0)})):
        d = toy.decide("ls", [])
    assert not d.denied and [o.failure for o in d.outcomes] == [None]


def test_an_async_plugin_gate_blocking_the_loop_past_its_deadline_denies_as_timeout_in_adecide(plugin_gate):
    block = {"s": 0.2}

    async def blocks_the_loop(call):
        time.sleep(block["s"])  # a sync HTTP client inside async def
        return None

    plugin_gate(blocks_the_loop, "loop")
    toy = _Toy()
    with policy.using(policy.Config(hooks={"plugin:loop": policy.HookPolicy(timeout=0.02)})):
        d = asyncio.run(toy.adecide("ls", []))
    assert d.denied and d.primary.hook == "plugin:loop" and d.primary.failure is Failure.TIMEOUT
    # twin: blocking for less than its deadline, it is judged (an abstain)
    block["s"] = 0.0
    with policy.using(policy.Config(hooks={"plugin:loop": policy.HookPolicy(timeout=5.0)})):
        d = asyncio.run(toy.adecide("ls", []))
    assert not d.denied and [o.failure for o in d.outcomes] == [None]


def test_a_hanging_observer_never_makes_a_gate_fail_nor_takes_its_blame(monkeypatch):
    """One hanging observer used to fill the abandoned-call bound; then every call's
    gates were refused and the deny blamed on a gate that would have answered at once."""
    monkeypatch.setattr(guard, "_pool", guard._Pool())
    monkeypatch.setattr(guard, "MAX_ABANDONED", 2)
    release = threading.Event()
    toy = _Toy()
    hang = _hang(release)
    config = policy.Config(timeout=0.02, hooks={"dl:watch": policy.HookPolicy(role="observer")})
    decisions = []
    try:
        with policy.using(config):
            for _ in range(4):  # twice the bound of hung observer calls
                outcomes = toy.hook_calls([("dl:watch", hang, (), None, None), ("dl:gate", lambda: "allow", (), None, None)])
                decisions.append(toy.decide("ls", outcomes))
            async def tasks():
                return [await toy.ahook_calls([("dl:watch", hang, (), None, None), ("dl:gate", lambda: "allow", (), None, None)])
                        for _ in range(2)]
            for outcomes in asyncio.run(tasks()):
                decisions.append(toy.decide("ls", outcomes))
            for d in decisions:
                assert d.action is Action.ALLOW and d.primary.hook == "dl:gate" and d.primary.failure is None, d
                assert [o.failure for o in d.outcomes] == [Failure.TIMEOUT, None]  # the observer timed out, uncounted
            assert guard.abandoned_calls() == 6
            # the twin: a hanging *gate* fills the gates' bound: past it a gate is refused,
            # and the deny is the refused gate's timeout
            for _ in range(2):
                d = toy.decide("ls", toy.hook_calls([("dl:hung-gate", hang, (), None, None)]))
                assert d.denied and d.primary.hook == "dl:hung-gate" and d.primary.failure is Failure.TIMEOUT
            refused = toy.decide("ls", toy.hook_calls([("dl:gate", lambda: "allow", (), None, None)]))
    finally:
        release.set()
    assert refused.denied and refused.primary.failure is Failure.TIMEOUT and refused.primary.elapsed_ms < 500
    _settle_until(lambda: guard.abandoned_calls() == 0)


# ---------------------------------------------------------------- fork while a lock is held


def _forked(child, seconds=10):
    """Run ``child()`` in a forked child (an alarm ends it if it hangs): -> what it wrote."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # never return into pytest
        code = 1
        try:
            import signal

            signal.signal(signal.SIGALRM, lambda *a: os._exit(3))
            signal.alarm(seconds)
            os.write(write, child().encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    chunks = []
    while True:
        chunk = os.read(read, 1000)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code != 3, "the child hung"
    assert code == 0, code
    return b"".join(chunks).decode()


def _holding(lock):
    """A thread that takes ``lock`` and keeps it until the returned event is set."""
    taken, release = threading.Event(), threading.Event()

    def hold():
        with lock:
            taken.set()
            release.wait(30)

    threading.Thread(target=hold, daemon=True).start()
    assert taken.wait(5)
    return release


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_fork_while_other_threads_hold_the_guards_locks_leaves_the_child_working():
    guard.call("t:warm", lambda: "allow", validate=validate, timeout=1.0)  # an idle worker
    worker = guard._pool.idle[-1]
    release = threading.Event()
    busy = threading.Thread(target=lambda: guard.call("t:busy", lambda: release.wait(30), validate=validate, timeout=30), daemon=True)
    busy.start()  # a worker in the middle of a hook
    holds = [_holding(guard._pool.lock), _holding(worker.lock)]
    try:
        def child():
            ok = guard.call_each([("t:child", lambda: "allow", (), None, validate, 2.0)])[0]
            gone = threading.Event()
            hung = guard.call("t:hang", lambda: gone.wait(5), validate=validate, timeout=0.1)
            aok = asyncio.run(guard.acall("t:child", lambda: "deny", validate=validate, timeout=2.0))
            return f"{ok.action.value}|{hung.failure.value}|{aok.action.value}|{guard.abandoned_calls()}"

        got = _forked(child)
    finally:
        for hold in holds:
            hold.set()
        release.set()
        busy.join(5)
    # the child's gates answer within their deadlines; twin: a hanging one still times out
    assert got == "allow|timeout|deny|1"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_fork_while_another_thread_holds_an_adapters_lock_leaves_the_childs_patch_working():
    toy = _Toy()
    release = _holding(toy._lock)  # a patch under way in another thread
    try:
        def child():
            state = toy.patch()
            toy.unpatch()
            return state

        got = _forked(child, seconds=5)
    finally:
        release.set()
    assert got == "patched"
    # twin: in this process, once the lock is free, the same adapter patches as usual
    assert toy.patch() == "patched"
    toy.unpatch()


def test_a_command_hook_under_the_longest_deadline_runs():
    """The command-hook runner waits with poll(2), whose milliseconds are a C int: the
    longest deadline a config can give (policy.MAX_TIMEOUT) is waited for in steps."""
    from failsecure.runner import process as runner_process

    result = runner_process.execute(["cat"], b"payload", threading.TIMEOUT_MAX)  # = policy.MAX_TIMEOUT
    assert not result.timed_out and result.status == 0 and result.stdout == b"payload"
    # twin: a short deadline still cuts a hook that outlives it
    result = runner_process.execute(["sleep", "5"], b"", 0.1)
    assert result.timed_out


def test_a_gates_deadline_runs_from_its_own_start_not_from_a_slow_hand_off(monkeypatch):
    """Under load the worker may begin a call well after the hand-off (a thread starting
    among hundreds): that time is not the gate's. Here the hand-off itself takes longer
    than the deadline; the gate, quick once started, is judged."""
    monkeypatch.setattr(guard, "_pool", guard._Pool())
    real = guard._pool.start

    def slow_start(worker, job):
        time.sleep(0.3)
        real(worker, job)

    monkeypatch.setattr(guard._pool, "start", slow_start)
    quick = lambda: time.sleep(0.02) or "allow"  # noqa: E731
    for o in (guard.call("t:q", quick, validate=validate, timeout=0.2),
              asyncio.run(guard.acall("t:q", quick, validate=validate, timeout=0.2))):
        assert o.failure is None and o.action is Action.ALLOW, o
    # twin: a gate that overruns its deadline from its own start is still a timeout
    release = threading.Event()
    try:
        o = guard.call("t:slow", lambda: release.wait(5), validate=validate, timeout=0.2)
    finally:
        release.set()
    assert o.failure is Failure.TIMEOUT


def test_a_gate_whose_worker_never_begins_times_out_unstarted_and_no_bound_counts_it(monkeypatch):
    # a worker not scheduled by the deadline: the call is abandoned before it ran its
    # gate, so it is no sign of a hung hook and no bound counts it (it would take a slot of
    # that gate's per-hook bound until its thread ran); the twin, a call abandoned while its gate
    # runs, is counted: test_guard_awaitables' test_a_fresh_pool_counts_an_abandoned_call_until_it_returns
    pool = guard._Pool()
    monkeypatch.setattr(guard, "_pool", pool)
    held = []
    real_start = pool.start
    monkeypatch.setattr(pool, "start", lambda worker, job: held.append((worker, job)))
    ran = []
    o = guard.call("t:q", lambda: ran.append(1) or "allow", validate=validate, timeout=0.1)
    assert o.failure is Failure.TIMEOUT and ran == []
    assert guard.abandoned_calls() == 0 and pool.by_hook == {}
    real_start(*held.pop())  # scheduled at last: it runs nothing, and frees itself
    for _ in range(500):
        if pool.idle:
            break
        time.sleep(0.01)
    assert ran == [] and len(pool.idle) == 1 and guard.abandoned_calls() == 0 and pool.by_hook == {}
