"""How the guard starts its workers' threads under load: an event loop never waits on a
start, sync callers start theirs one at a time, and a worker that begins late is judged
from its own start, within one more deadline (see ``_Pool.start`` and ``_check``)."""

import asyncio
import threading
import time

from core_helpers import validate
from failsecure import guard
from failsecure.verdict import Action, Failure


def fresh_pool(monkeypatch) -> guard._Pool:
    pool = guard._Pool()
    monkeypatch.setattr(guard, "_pool", pool)
    return pool


def test_an_event_loop_never_waits_on_a_workers_thread_start(monkeypatch):
    # the worker's thread starts only once another task on the same loop has run: had the
    # loop waited on the start (a hand-shake, under load a long wait for the GIL), that
    # task could not run and the start would give up waiting after 5 s
    pool = fresh_pool(monkeypatch)
    real = guard._start_thread
    ticked = threading.Event()
    seen = []

    def start(name, target, *args):
        if name == "failsecure-guard":
            seen.append((ticked.wait(5), threading.current_thread().name))
        real(name, target, *args)

    monkeypatch.setattr(guard, "_start_thread", start)

    async def tick():
        await asyncio.sleep(0)
        ticked.set()

    async def main():
        return await asyncio.gather(guard.acall("t:h", lambda: "allow", validate=validate, timeout=10.0), tick())

    outcome, _ = asyncio.run(main())
    assert outcome.failure is None and outcome.action is Action.ALLOW
    assert seen == [(True, "failsecure-guard-starter")]
    for _ in range(500):  # the starter ends once nothing is queued
        if not pool.starter:
            break
        time.sleep(0.01)
    assert not pool.starter and pool.queued == []


def test_a_sync_caller_starts_its_own_worker_one_start_at_a_time(monkeypatch):
    # the twin: a sync caller has nothing else to run, so it starts its worker itself,
    # under the pool's lock (in a burst the other callers wait on it, off the GIL)
    pool = fresh_pool(monkeypatch)
    real = guard._start_thread
    seen = []

    def start(name, target, *args):
        seen.append((name, threading.current_thread() is threading.main_thread(), pool.starting.locked()))
        real(name, target, *args)

    monkeypatch.setattr(guard, "_start_thread", start)
    o = guard.call("t:h", lambda: "allow", validate=validate, timeout=10.0)
    assert o.failure is None and o.action is Action.ALLOW
    assert seen == [("failsecure-guard", True, True)] and not pool.starting.locked()


def late_start(monkeypatch, after: float):
    """Workers' threads start only ``after`` deadlines past their job's hand-off."""
    real = guard._start_thread

    def start(name, target, *args):
        if name != "failsecure-guard":
            return real(name, target, *args)
        job = args[0].job
        timeout = job.calls[0][5]

        def later():
            while time.perf_counter() < job.submitted + after * timeout:
                time.sleep(0.005)
            target(*args)

        real("late", later)

    monkeypatch.setattr(guard, "_start_thread", start)


def test_a_worker_that_begins_after_its_deadline_is_judged_from_its_own_start(monkeypatch):
    # its thread began between one and two deadlines after the hand-off: the quick gate
    # it then runs is allowed, from a sync caller and from an event loop
    fresh_pool(monkeypatch)
    late_start(monkeypatch, 1.5)
    for o in (guard.call("t:q", lambda: "allow", validate=validate, timeout=0.1),
              asyncio.run(guard.acall("t:q", lambda: "allow", validate=validate, timeout=0.1))):
        assert o.failure is None and o.action is Action.ALLOW, o


def test_a_worker_not_begun_within_two_deadlines_times_out_without_running(monkeypatch):
    # the twin: begun only after two deadlines, the call is a TIMEOUT and its gate never
    # runs (nor does any bound count it: it is no sign of a hung gate)
    pool = fresh_pool(monkeypatch)
    late_start(monkeypatch, 3.0)
    ran = []
    for o in (guard.call("t:q", lambda: ran.append(1) or "allow", validate=validate, timeout=0.1),
              asyncio.run(guard.acall("t:q", lambda: ran.append(1) or "allow", validate=validate, timeout=0.1))):
        assert o.failure is Failure.TIMEOUT, o
    assert guard.abandoned_calls() == 0 and pool.by_hook == {}
    for _ in range(500):  # the late threads begin, find their jobs given up, run nothing
        if len(pool.idle) == 2:
            break
        time.sleep(0.01)
    assert ran == [] and len(pool.idle) == 2
