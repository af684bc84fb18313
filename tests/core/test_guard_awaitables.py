"""Tests that kill mutants of core/guard.py which survived `tox -e mutation` (see
docs/mutation.md): an awaitable answered to a sync dispatcher is closed, never left
pending, and a pool starts empty."""

import asyncio
import functools
import inspect
import threading
import time
import warnings

import pytest

from core_helpers import validate
from failsecure import guard
from failsecure.verdict import Action, Failure


async def _answer(value):
    return value


class _NoClose:
    """An awaitable without ``close()`` (as a hand-written awaitable or a Future-like)."""

    def __await__(self):
        return iter(())


class _BadClose(_NoClose):
    """An awaitable whose ``close()`` raises."""

    closed = 0

    def close(self):
        type(self).closed += 1
        raise RuntimeError("close failed")


@pytest.mark.parametrize("timeout", [None, 1.0], ids=["inline", "worker"])
def test_a_coroutine_answered_to_a_sync_dispatcher_is_invalid_and_closed(timeout):
    answered = []

    def hook():
        coro = _answer("allow")
        answered.append(coro)
        return coro

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would be a leak
        o = guard.call("t:h", hook, validate=validate, timeout=timeout)
    assert o.failure is Failure.INVALID and o.verdict is None and o.exception_type is None and o.hook == "t:h"
    assert inspect.getcoroutinestate(answered[0]) == inspect.CORO_CLOSED
    # twin: the same hook answering the value itself is judged
    assert guard.call("t:h", lambda: "allow", validate=validate, timeout=timeout).action is Action.ALLOW


@pytest.mark.parametrize("timeout", [None, 1.0], ids=["inline", "worker"])
def test_an_awaitable_without_close_answered_to_a_sync_dispatcher_is_invalid(timeout):
    o = guard.call("t:h", _NoClose, validate=validate, timeout=timeout)
    assert o.failure is Failure.INVALID and o.exception_type is None


@pytest.mark.parametrize("timeout", [None, 1.0], ids=["inline", "worker"])
def test_an_awaitable_whose_close_raises_is_still_invalid(timeout):
    _BadClose.closed = 0
    o = guard.call("t:h", _BadClose, validate=validate, timeout=timeout)
    assert o.failure is Failure.INVALID and o.exception_type is None
    assert _BadClose.closed == 1  # close was tried, its failure swallowed


def test_a_coroutine_answered_after_the_deadline_is_closed_by_the_worker():
    release = threading.Event()
    answered = []

    def late():
        release.wait(5)
        coro = _answer("allow")
        answered.append(coro)
        return coro

    o = guard.call("t:late", late, validate=validate, timeout=0.05)
    assert o.failure is Failure.TIMEOUT
    release.set()
    for _ in range(300):
        if answered and guard.abandoned_calls() == 0:
            break
        time.sleep(0.01)
    assert inspect.getcoroutinestate(answered[0]) == inspect.CORO_CLOSED


# ---------------------------------------------------------------- a fresh pool


def test_a_fresh_pool_starts_with_nothing_abandoned_and_keeps_its_worker(monkeypatch):
    pool = guard._Pool()
    monkeypatch.setattr(guard, "_pool", pool)
    assert guard.abandoned_calls() == 0 and pool.idle == []
    threads = []

    def hook():
        threads.append(threading.current_thread())
        return "allow"

    for _ in range(3):
        o = guard.call("t:h", hook, validate=validate, timeout=1.0)
        assert o.failure is None and o.action is Action.ALLOW
    assert len(set(threads)) == 1 and threads[0] is not threading.current_thread()  # reused
    assert threads[0].name == "failsecure-guard" and threads[0].daemon  # named, never holds up exit
    assert len(pool.idle) == 1 and guard.abandoned_calls() == 0


def test_a_fresh_pool_counts_an_abandoned_call_until_it_returns(monkeypatch):
    pool = guard._Pool()
    monkeypatch.setattr(guard, "_pool", pool)
    release = threading.Event()
    o = guard.call("t:h", lambda: release.wait(5), validate=validate, timeout=0.05)
    assert o.failure is Failure.TIMEOUT and guard.abandoned_calls() == 1
    release.set()
    for _ in range(300):
        if guard.abandoned_calls() == 0:
            break
        time.sleep(0.01)
    assert guard.abandoned_calls() == 0
    # the abandoned worker, once its hook returned, went back to the pool for reuse
    assert len(pool.idle) == 1
    assert guard.call("t:h", lambda: "deny", validate=validate, timeout=1.0).action is Action.DENY
    assert len(pool.idle) == 1


def test_a_fresh_pool_in_an_async_dispatcher(monkeypatch):
    pool = guard._Pool()
    monkeypatch.setattr(guard, "_pool", pool)

    async def main():
        return await guard.acall("t:h", lambda: "deny", validate=validate, timeout=1.0)

    o = asyncio.run(main())
    assert o.failure is None and o.action is Action.DENY
    assert len(pool.idle) == 1 and guard.abandoned_calls() == 0


# ---------------------------------------------------------------- helpers for the pool tests


@pytest.fixture
def pool(monkeypatch):
    """A pool of its own for the test (the module's one is shared with every other test)."""
    fresh = guard._Pool()
    monkeypatch.setattr(guard, "_pool", fresh)
    yield fresh
    for _ in range(300):
        if fresh.abandoned == 0:
            break
        time.sleep(0.01)


def _wait_until(predicate, seconds=3.0):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def _echo(*args, **kwargs):
    return "deny" if (args, kwargs) == (("a", 1), {"k": "v"}) else "allow"


# ---------------------------------------------------------------- arguments reach the hook


@pytest.mark.parametrize("timeout", [None, 1.0], ids=["inline", "worker"])
def test_call_hands_args_and_kwargs_to_the_hook(timeout):
    o = guard.call("t:h", _echo, ("a", 1), {"k": "v"}, validate=validate, timeout=timeout)
    assert o.failure is None and o.action is Action.DENY
    # twin: without them the hook sees nothing and answers the other way
    assert guard.call("t:h", _echo, validate=validate, timeout=timeout).action is Action.ALLOW


@pytest.mark.parametrize("timeout", [None, 1.0], ids=["inline", "worker"])
def test_acall_hands_args_and_kwargs_to_a_sync_hook(timeout):
    o = asyncio.run(guard.acall("t:h", _echo, ("a", 1), {"k": "v"}, validate=validate, timeout=timeout))
    assert o.failure is None and o.action is Action.DENY
    assert asyncio.run(guard.acall("t:h", _echo, validate=validate, timeout=timeout)).action is Action.ALLOW


@pytest.mark.parametrize("timeout", [None, 1.0], ids=["inline", "worker"])
def test_each_batch_hands_args_and_kwargs_to_every_hook(timeout):
    calls = [
        ("t:both", _echo, ("a", 1), {"k": "v"}, validate, timeout),
        ("t:args", _echo, ("a", 1), None, validate, timeout),
        ("t:none", _echo, (), None, validate, timeout),
    ]
    for outcomes in (guard.call_each(calls), asyncio.run(guard.acall_each(calls))):
        assert [o.hook for o in outcomes] == ["t:both", "t:args", "t:none"]
        assert [o.action for o in outcomes] == [Action.DENY, Action.ALLOW, Action.ALLOW]


def test_acall_each_without_deadlines_runs_every_hook_inline_on_the_loop():
    seen = []

    def rec(answer):
        def hook():
            seen.append(threading.current_thread())
            return answer

        return hook

    calls = [("t:a", rec("allow"), (), None, validate, None), ("t:b", rec("deny"), (), None, validate, None)]
    outcomes = asyncio.run(guard.acall_each(calls))
    assert [(o.hook, o.action, o.failure) for o in outcomes] == [("t:a", Action.ALLOW, None), ("t:b", Action.DENY, None)]
    assert seen == [threading.current_thread()] * 2


def test_acall_of_a_sync_hook_without_deadline_runs_on_the_loops_thread(monkeypatch):
    monkeypatch.setattr(guard, "MAX_ABANDONED", 0)  # no worker may be taken: it must not need one
    seen = []
    o = asyncio.run(guard.acall("t:h", lambda: seen.append(threading.current_thread()) or "deny", validate=validate))
    assert o.failure is None and o.action is Action.DENY and seen == [threading.current_thread()]
    # twin: with a deadline it needs a worker, and none may be taken: a timeout at once
    o = asyncio.run(guard.acall("t:h", lambda: "deny", validate=validate, timeout=1.0))
    assert o.failure is Failure.TIMEOUT and o.hook == "t:h"


# ---------------------------------------------------------------- async hooks need no worker


async def _deny_later():
    await asyncio.sleep(0)
    return "deny"


class _AsyncCallable:
    async def __call__(self):
        await asyncio.sleep(0)
        return "deny"


@pytest.mark.parametrize(
    "hook",
    [_deny_later, functools.partial(_deny_later)],
    ids=["async-def", "partial"],
)
def test_an_async_hook_with_a_deadline_runs_when_no_worker_may_be_taken(monkeypatch, hook):
    monkeypatch.setattr(guard, "MAX_ABANDONED", 0)
    o = asyncio.run(guard.acall("t:h", hook, validate=validate, timeout=1.0))
    assert o.failure is None and o.action is Action.DENY
    # twin: a sync hook with a deadline is refused at once then, without running
    ran = []
    o = asyncio.run(guard.acall("t:s", lambda: ran.append(1) or "allow", validate=validate, timeout=1.0))
    assert o.failure is Failure.TIMEOUT and o.hook == "t:s" and o.elapsed_ms >= 0 and ran == []


def test_a_callable_object_is_called_as_a_hook():
    class Hook:
        __code__ = "not a code object"  # some wrappers carry an attribute of that name

        def __call__(self):
            return "deny"

    for timeout in (None, 1.0):
        o = asyncio.run(guard.acall("t:h", Hook(), validate=validate, timeout=timeout))
        assert o.failure is None and o.action is Action.DENY
    o = asyncio.run(guard.acall("t:h", _AsyncCallable(), validate=validate, timeout=1.0))
    assert o.failure is None and o.action is Action.DENY


def test_acall_each_refused_by_the_bound_fails_every_hook_as_timeout_at_once(monkeypatch):
    monkeypatch.setattr(guard, "MAX_ABANDONED", 0)
    ran = []
    calls = [(f"t:{i}", lambda: ran.append(1) or "allow", (), None, validate, 1.0) for i in range(2)]
    for outcomes in (guard.call_each(calls), asyncio.run(guard.acall_each(calls))):
        assert [o.hook for o in outcomes] == ["t:0", "t:1"]
        assert all(o.failure is Failure.TIMEOUT and o.verdict is None and 0 <= o.elapsed_ms < 500 for o in outcomes)
    assert ran == []


# ---------------------------------------------------------------- async hooks: each ending, named


def run(coro):
    return asyncio.run(coro)


def test_an_async_hook_raising_timeout_error_after_suspending_is_raised_not_timeout():
    async def hook():
        await asyncio.sleep(0)
        raise TimeoutError("its own")

    o = run(guard.acall("t:own", hook, validate=validate, timeout=5))
    assert (o.hook, o.failure, o.exception_type, o.verdict) == ("t:own", Failure.RAISED, "TimeoutError", None)
    assert 0 <= o.elapsed_ms < 1000


def test_async_failures_name_their_hook():
    async def cancel_now():
        raise asyncio.CancelledError()

    async def cancel_later():
        await asyncio.sleep(0)
        raise asyncio.CancelledError()

    async def boom():
        raise ValueError()

    async def stubborn():
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "allow"

    for name, hook, timeout, failure, exc in [
        ("t:cancel-now", cancel_now, None, Failure.RAISED, "CancelledError"),
        ("t:cancel-later", cancel_later, 1.0, Failure.RAISED, "CancelledError"),
        ("t:boom", boom, None, Failure.RAISED, "ValueError"),
        ("t:stubborn", stubborn, 0.05, Failure.TIMEOUT, None),
        ("t:sync-boom", _raise_value_error, 1.0, Failure.RAISED, "ValueError"),
    ]:
        o = run(guard.acall(name, hook, validate=validate, timeout=timeout))
        assert (o.hook, o.failure, o.exception_type, o.verdict) == (name, failure, exc, None)
        assert o.elapsed_ms >= 0


def _raise_value_error():
    raise ValueError()


def test_a_sync_hook_timing_out_in_an_async_dispatcher_names_its_hook():
    release = threading.Event()
    try:
        o = run(guard.acall("t:slow", lambda: release.wait(5), validate=validate, timeout=0.05))
    finally:
        release.set()
    assert (o.hook, o.failure, o.verdict) == ("t:slow", Failure.TIMEOUT, None) and 40 <= o.elapsed_ms < 2000


def test_keyboard_interrupt_from_a_deadlined_sync_hook_propagates_in_an_async_dispatcher():
    def hook():
        raise KeyboardInterrupt()

    with pytest.raises(KeyboardInterrupt):
        run(guard.acall("t:h", hook, validate=validate, timeout=1.0))
    # twin: any other BaseException is the hook's failure
    o = run(guard.acall("t:h", raiser_of(SystemExit(2)), validate=validate, timeout=1.0))
    assert o.failure is Failure.RAISED and o.exception_type == "SystemExit"


def raiser_of(exc):
    def hook():
        raise exc

    return hook


def test_an_async_hook_without_deadline_may_suspend():
    async def hook():
        await asyncio.sleep(0.01)
        return "deny"

    o = run(guard.acall("t:h", hook, validate=validate))
    assert o.failure is None and o.action is Action.DENY


def test_an_async_hook_that_overran_its_deadline_before_suspending_is_cut_when_it_does():
    async def hook():
        time.sleep(0.2)  # sync work in the first step, past the deadline
        await asyncio.sleep(5)
        return "allow"

    start = time.perf_counter()
    o = run(guard.acall("t:h", hook, validate=validate, timeout=0.1))
    took = time.perf_counter() - start
    assert o.failure is Failure.TIMEOUT and o.hook == "t:h"
    assert 0.15 <= took < 0.45  # cut as soon as it suspended, not 0.1 s (or 1 s) later


def test_the_deadline_reaches_an_async_hook_that_only_yields():
    """A hook that polls with ``await asyncio.sleep(0)`` has no future the deadline could
    cancel: the cancellation must be thrown into the hook itself."""
    seen = []

    async def poll():
        end = time.perf_counter() + 1.0
        try:
            while time.perf_counter() < end:
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "allow"

    start = time.perf_counter()
    o = run(guard.acall("t:h", poll, validate=validate, timeout=0.05))
    assert o.failure is Failure.TIMEOUT and seen == ["cancelled"]
    assert time.perf_counter() - start < 0.6


def test_an_async_dispatcher_awaits_an_awaitable_that_is_not_a_coroutine():
    async def main():
        future = asyncio.get_running_loop().create_future()
        future.set_result("deny")
        return await guard.acall("t:h", lambda: future, validate=validate)

    o = run(main())
    assert o.failure is None and o.action is Action.DENY


def test_a_batch_answering_a_coroutine_after_a_timed_out_hook_still_gets_it_awaited():
    release = threading.Event()
    calls = [
        ("t:hang", lambda: release.wait(5), (), None, validate, 0.05),
        ("t:coro", lambda: _answer("deny"), (), None, validate, 1.0),
    ]
    try:
        outcomes = run(guard.acall_each(calls))
    finally:
        release.set()
    assert [o.hook for o in outcomes] == ["t:hang", "t:coro"]
    assert outcomes[0].failure is Failure.TIMEOUT
    assert outcomes[1].failure is None and outcomes[1].action is Action.DENY


# ---------------------------------------------------------------- deadlines after a hook without one


def test_a_batch_waits_out_a_slow_hook_without_deadline_after_one_with_a_deadline():
    calls = [
        ("t:a", lambda: "allow", (), None, validate, 0.05),
        ("t:b", lambda: time.sleep(0.15) or "deny", (), None, validate, None),
        ("t:c", lambda: None, (), None, validate, None),
    ]
    outcomes = guard.call_each(calls)
    assert [(o.hook, o.failure) for o in outcomes] == [("t:a", None), ("t:b", None), ("t:c", None)]
    assert [o.action for o in outcomes] == [Action.ALLOW, Action.DENY, Action.ABSTAIN]


def test_while_a_hook_without_deadline_runs_the_caller_wakes_for_the_soonest_later_deadline():
    release = threading.Event()
    calls = [
        ("t:free", lambda: "allow", (), None, validate, None),
        ("t:hang", lambda: release.wait(5), (), None, validate, 0.1),
        ("t:late", lambda: "deny", (), None, validate, 1.5),
    ]
    start = time.perf_counter()
    try:
        outcomes = guard.call_each(calls)
    finally:
        release.set()
    took = time.perf_counter() - start
    assert [o.failure for o in outcomes] == [None, Failure.TIMEOUT, None]
    assert outcomes[2].action is Action.DENY
    assert took < 0.9  # the hanging hook was cut near its 0.1 s, not at the later 1.5 s


# ---------------------------------------------------------------- the pool


def test_a_deadlined_sync_hook_in_an_async_dispatcher_gives_its_worker_back(pool):
    threads = []

    def hook():
        threads.append(threading.current_thread())
        return "allow"

    async def main():
        return [await guard.acall("t:h", hook, validate=validate, timeout=1.0) for _ in range(3)]

    assert [o.action for o in run(main())] == [Action.ALLOW] * 3
    assert len(set(threads)) == 1 and pool.idle and pool.idle[0] is not None


def test_an_abandoned_worker_beyond_the_idle_bound_retires(pool, monkeypatch):
    monkeypatch.setattr(guard, "MAX_IDLE", 1)
    release = threading.Event()
    threads = []

    def hang():
        threads.append(threading.current_thread())
        release.wait(5)

    assert guard.call("t:hang", hang, validate=validate, timeout=0.05).failure is Failure.TIMEOUT
    assert guard.call("t:ok", lambda: "allow", validate=validate, timeout=1.0).action is Action.ALLOW
    assert len(pool.idle) == 1  # the second worker, idle; the first still runs its hook
    release.set()
    assert _wait_until(lambda: pool.abandoned == 0)
    assert _wait_until(lambda: not threads[0].is_alive())  # retired: the idle list was full
    assert len(pool.idle) == 1


def test_cancelled_callers_each_count_their_abandoned_call(pool):
    release = threading.Event()

    async def cancelled():
        task = asyncio.ensure_future(guard.acall_each([("t:a", lambda: release.wait(5), (), None, validate, 5.0)]))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        assert guard.call("t:h", lambda: release.wait(5), validate=validate, timeout=0.05).failure is Failure.TIMEOUT
        assert guard.abandoned_calls() == 1
        run(cancelled())
        assert guard.abandoned_calls() == 2
    finally:
        release.set()
    assert _wait_until(lambda: guard.abandoned_calls() == 0)


def test_a_caller_interrupted_after_its_hooks_ended_gives_the_worker_back(pool, monkeypatch):
    """Interrupted while it waits, but the batch has ended by then: the caller takes the
    worker's ``done`` and frees it, and the interrupt propagates."""
    real_take = pool.take
    taken = []

    def take():
        worker = real_take()
        done = worker.done

        class InterruptedOnce:
            interrupted = False

            def acquire(self, *a):
                if a and not self.interrupted:
                    self.interrupted = True
                    _wait_until(lambda: worker.job is None)  # the worker ran the whole job
                    time.sleep(0.02)
                    raise KeyboardInterrupt()
                return done.acquire(*a)

            def release(self):
                done.release()

        worker.done = InterruptedOnce()
        taken.append((worker, done))
        return worker

    monkeypatch.setattr(pool, "take", take)
    with pytest.raises(KeyboardInterrupt):
        guard.call("t:h", lambda: "allow", validate=validate, timeout=1.0)
    worker, done = taken[0]
    worker.done = done
    assert guard.abandoned_calls() == 0 and pool.idle == [worker]
    monkeypatch.setattr(pool, "take", real_take)
    # the freed worker serves the next call
    assert guard.call("t:h", lambda: "deny", validate=validate, timeout=1.0).action is Action.DENY


# ---------------------------------------------------------------- batches: every kind of answer


class _Ticket:
    """A non-plain answer a framework's validator understands."""

    def __init__(self, action):
        self.action = action


def _ticket_validate(result):
    if isinstance(result, _Ticket):
        return validate(result.action)
    return validate(result)


def test_a_batch_judges_a_non_plain_answer_with_the_hooks_own_validator():
    calls = [
        ("t:ticket", lambda: _Ticket("deny"), (), None, _ticket_validate, 1.0),
        ("t:plain", lambda: "allow", (), None, _ticket_validate, 1.0),
    ]
    for outcomes in (guard.call_each(calls), run(guard.acall_each(calls))):
        assert [(o.hook, o.failure, o.action) for o in outcomes] == [
            ("t:ticket", None, Action.DENY),
            ("t:plain", None, Action.ALLOW),
        ]
    # twin: the plain validator does not understand it: INVALID, named
    outcomes = guard.call_each([("t:ticket", lambda: _Ticket("deny"), (), None, validate, 1.0)])
    assert (outcomes[0].hook, outcomes[0].failure) == ("t:ticket", Failure.INVALID)


def test_an_async_batch_starting_with_a_hook_without_deadline():
    calls = [
        ("t:free", lambda: "allow", (), None, validate, None),
        ("t:coro", lambda: _answer("deny"), (), None, validate, None),
        ("t:timed", lambda: "allow", (), None, validate, 1.0),
    ]
    outcomes = run(guard.acall_each(calls))
    assert [(o.hook, o.failure, o.action) for o in outcomes] == [
        ("t:free", None, Action.ALLOW),
        ("t:coro", None, Action.DENY),
        ("t:timed", None, Action.ALLOW),
    ]


def test_a_coroutine_answered_in_a_batch_keeps_the_hooks_deadline_from_its_start():
    async def slow():
        await asyncio.sleep(5)
        return "allow"

    def hook():
        time.sleep(0.2)  # most of its 0.25 s spent before it answers the coroutine
        return slow()

    start = time.perf_counter()
    outcomes = run(guard.acall_each([("t:h", hook, (), None, validate, 0.25)]))
    took = time.perf_counter() - start
    assert outcomes[0].failure is Failure.TIMEOUT and outcomes[0].hook == "t:h"
    assert 0.2 <= took < 0.55  # what was left of 0.25 s, not 0.25 s again nor a second


# ---------------------------------------------------------------- idle bound, and waiting without spinning


def test_release_keeps_at_most_max_idle_workers_and_the_rest_retire_cleanly(pool, monkeypatch):
    monkeypatch.setattr(guard, "MAX_IDLE", 1)
    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_type))
    both = threading.Barrier(2)
    threads = []

    def hook():
        threads.append(threading.current_thread())
        both.wait(2)  # two callers at once: two workers
        return "allow"

    results = []
    callers = [threading.Thread(target=lambda: results.append(guard.call("t:h", hook, validate=validate, timeout=3.0))) for _ in range(2)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(5)
    assert [o.action for o in results] == [Action.ALLOW, Action.ALLOW] and len(set(threads)) == 2
    assert len(pool.idle) == 1
    assert _wait_until(lambda: sum(t.is_alive() for t in threads) == 1)  # the other retired
    assert errors == []


def test_the_caller_sleeps_while_a_batch_runs_it_does_not_spin():
    calls = [
        ("t:a", lambda: "allow", (), None, validate, 0.05),
        ("t:b", lambda: time.sleep(0.3) or "deny", (), None, validate, 1.0),
    ]
    cpu = time.thread_time()
    outcomes = guard.call_each(calls)
    assert time.thread_time() - cpu < 0.1
    assert [o.action for o in outcomes] == [Action.ALLOW, Action.DENY]

    async def main():
        calls = [
            ("t:a", lambda: "allow", (), None, validate, 0.05),
            ("t:b", lambda: time.sleep(0.3) or "deny", (), None, validate, None),
        ]
        cpu = time.thread_time()
        outcomes = await guard.acall_each(calls)
        return time.thread_time() - cpu, outcomes

    spent, outcomes = run(main())
    assert spent < 0.1
    assert [o.action for o in outcomes] == [Action.ALLOW, Action.DENY]


def test_a_validator_tripped_by_a_hostile_answer_names_the_hook():
    class Hostile:
        def __eq__(self, other):
            raise ValueError("hostile")

        __hash__ = object.__hash__

    def judge(result):
        if result == "allow":
            return validate("allow")
        return validate(None)

    for timeout in (None, 1.0):
        o = guard.call("t:hostile", Hostile, validate=judge, timeout=timeout)
        assert (o.hook, o.failure, o.exception_type, o.verdict) == ("t:hostile", Failure.INVALID, "ValueError", None)
        # twin: a plain answer goes through the same validator
        assert guard.call("t:plain", lambda: "allow", validate=judge, timeout=timeout).action is Action.ALLOW
