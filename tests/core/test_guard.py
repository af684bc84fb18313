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
