"""The guard's bookkeeping of late and abandoned calls, unit by unit: ``_late`` (an answer
that came after its deadline is a TIMEOUT; a KeyboardInterrupt still reaches the caller;
only an awaitable answer is closed) and ``_Pool.count``/``_uncount`` (every abandoned call
counted by kind and by hook, and uncounted exactly once when it ends, so the bounds that
``_admitted`` reads go back to zero). test_guard.py drives both through real hung hooks;
these pin each branch without timing."""

import types
from time import perf_counter

from failsecure import guard
from failsecure.verdict import Failure, Outcome


def test_a_late_answer_is_a_timeout():
    start = perf_counter()
    for answer in ("allow", None, {"x": 1}, guard._Raised(ValueError("late"))):
        late = guard._late("fw:h", answer, start)
        assert type(late) is Outcome and late.hook == "fw:h" and late.failure is Failure.TIMEOUT, answer


def test_a_late_keyboard_interrupt_still_reaches_the_caller():
    raised = guard._Raised(KeyboardInterrupt())
    assert guard._late("fw:h", raised, perf_counter()) is raised
    raised = guard._Raised(SystemExit(1))  # the twin: not an interrupt, a timeout
    assert guard._late("fw:h", raised, perf_counter()).failure is Failure.TIMEOUT


def test_a_late_outcome_is_a_timeout_too():
    start = perf_counter()
    on_time = guard._failed("fw:h", Failure.RAISED, start)
    late = guard._late("fw:h", on_time, start)
    assert late.failure is Failure.TIMEOUT and late is not on_time


def test_a_late_awaitable_is_closed_and_nothing_else_is():
    async def answer():
        return "allow"

    coro = answer()
    assert guard._late("fw:h", coro, perf_counter()).failure is Failure.TIMEOUT
    assert coro.cr_frame is None  # closed: no "never awaited" warning, nothing left running

    def steps():
        yield 1
        yield 2

    gen = steps()  # has a close() but is no awaitable: left alone
    assert guard._late("fw:h", gen, perf_counter()).failure is Failure.TIMEOUT
    assert next(gen) == 1


def job():
    return types.SimpleNamespace(counted=None)


def test_abandoned_calls_are_counted_by_kind_and_hook_and_uncounted_once():
    pool = guard._Pool()
    a1, a2, b = job(), job(), job()
    pool.count(a1, "fw:a", False)
    pool.count(a2, "fw:a", False)
    pool.count(b, "fw:b", True)
    assert (pool.abandoned, pool.gates, pool.advisory, pool.by_hook) == (3, 2, 1, {"fw:a": 2, "fw:b": 1})
    with pool.lock:
        pool._uncount(a1)
    assert (pool.abandoned, pool.gates, pool.advisory, pool.by_hook) == (2, 1, 1, {"fw:a": 1, "fw:b": 1})
    with pool.lock:
        pool._uncount(b)
    assert (pool.abandoned, pool.gates, pool.advisory, pool.by_hook) == (1, 1, 0, {"fw:a": 1})
    with pool.lock:
        pool._uncount(a2)
    assert (pool.abandoned, pool.gates, pool.advisory, pool.by_hook) == (0, 0, 0, {})


def test_many_abandoned_calls_of_one_hook_count_down_to_absent():
    pool = guard._Pool()
    jobs = [job() for _ in range(4)]
    for j in jobs:
        pool.count(j, "fw:a", True)
    for left in (3, 2, 1):
        with pool.lock:
            pool._uncount(jobs[left])
        assert pool.by_hook == {"fw:a": left} and pool.advisory == left and pool.gates == 0
    with pool.lock:
        pool._uncount(jobs[0])
    assert pool.by_hook == {} and pool.advisory == 0 and pool.abandoned == 0
