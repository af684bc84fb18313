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


def test_a_failure_produced_after_the_deadline_is_a_timeout():
    start = perf_counter()
    for elapsed, late in ((999.0, False), (1000.0, False), (1000.5, True), (2500.0, True)):
        raised = Outcome(hook="fw:h", failure=Failure.RAISED, exception_type="ValueError", elapsed_ms=elapsed)
        got = guard._in_time(raised, 1.0, start)
        if late:
            assert got.failure is Failure.TIMEOUT and got.hook == "fw:h", elapsed
        else:
            assert got is raised, elapsed
    assert guard._in_time(raised, None, start) is raised  # no deadline: never late


def test_advisory_is_a_gate_when_the_config_cannot_be_read(monkeypatch):
    from failsecure import policy

    with policy.using(policy.validate({"hooks": {"fw:w": {"role": "observer"}}})):
        assert guard._advisory("fw:w") is True and guard._advisory("fw:g") is False

    def broken():
        raise RuntimeError("no config")

    with monkeypatch.context() as patch:
        patch.setattr(policy, "current", broken)
        assert guard._advisory("fw:w") is False


def deadlined(hook_id, timeout=1.0):
    return (hook_id, lambda: "allow", (), None, None, timeout)


def test_admitted_passes_over_hooks_without_a_deadline(monkeypatch):
    monkeypatch.setattr(guard._pool, "by_hook", {"fw:b": guard.MAX_ABANDONED_PER_HOOK})
    assert guard._admitted([deadlined("fw:a", None), deadlined("fw:b"), deadlined("fw:c")]) == 1
    assert guard._admitted([deadlined("fw:a", None), deadlined("fw:c")]) == 2  # the twin


def test_admitted_counts_a_hook_with_no_abandoned_call_as_none(monkeypatch):
    monkeypatch.setattr(guard, "MAX_ABANDONED_PER_HOOK", 1)
    monkeypatch.setattr(guard._pool, "by_hook", {"fw:other": 1})
    assert guard._admitted([deadlined("fw:a")]) == 1
    assert guard._admitted([deadlined("fw:other")]) == 0  # the twin: that hook is at its bound


def test_an_async_callers_sync_hook_refused_by_the_bounds_is_a_timeout_at_once(monkeypatch):
    import asyncio

    from failsecure.verdict import Action, Verdict

    monkeypatch.setattr(guard._pool, "abandoned", guard.MAX_ABANDONED_PER_HOOK)
    monkeypatch.setattr(guard._pool, "by_hook", {"fw:a": guard.MAX_ABANDONED_PER_HOOK})
    ran = []

    def hook():
        ran.append(1)
        return "allow"

    def validate(result):
        return Verdict(Action.ALLOW)

    got = asyncio.run(guard.acall("fw:a", hook, validate=validate, timeout=5.0))
    assert got.hook == "fw:a" and got.failure is Failure.TIMEOUT and 0 <= got.elapsed_ms < 5000 and ran == []
    got = asyncio.run(guard.acall("fw:b", hook, validate=validate, timeout=5.0))  # the twin: another hook runs
    assert got.failure is None and got.verdict.action is Action.ALLOW and ran == [1]
