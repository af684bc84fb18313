"""Red team: the guard's worker start when a thread cannot be had.

For an event loop the worker's thread is started by the starter thread, which goes on
past a failure to start it (``_Pool._start_next``): the job never begins. When the
batch's first hook has no deadline (a hook waiting for a human gets none by default)
and a later one has, the caller wakes at the later hook's deadline, finds hook 0
"running" with no deadline of its own and sleeps again: forever. The sync caller's twin
gets the failure at once (the start raises in its own thread).
"""

import asyncio
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "core"))

from core_helpers import validate  # noqa: E402

from failsecure import guard  # noqa: E402


def no_worker_threads(monkeypatch):
    pool = guard._Pool()
    monkeypatch.setattr(guard, "_pool", pool)
    real = guard._start_thread

    def start(name, target, *args):
        if name == "failsecure-guard":
            raise RuntimeError("can't start new thread")
        real(name, target, *args)

    monkeypatch.setattr(guard, "_start_thread", start)
    return pool


def calls(ran):
    return [("t:human", lambda: ran.append(0) or "allow", (), None, validate, None),
            ("t:gate", lambda: ran.append(1) or "allow", (), None, validate, 0.1)]


def run_bounded(fn):
    """Run ``fn`` in a thread; -> its result, or "hung" when it has not returned in 20 s
    (no timing assertion: a generous bound that only a hang exceeds)."""
    box = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()
    thread.join(20)
    return box[0] if box else "hung"


def test_an_event_loops_batch_whose_worker_never_starts_ends_denied(monkeypatch):
    no_worker_threads(monkeypatch)
    ran = []
    outcomes = run_bounded(lambda: asyncio.run(guard.acall_each(calls(ran))))
    assert outcomes != "hung", "the caller waits forever on a worker that never started"
    assert ran == [] and all(o.failure is not None for o in outcomes)


def test_twin_a_sync_callers_batch_whose_worker_never_starts_is_refused_at_once(monkeypatch):
    no_worker_threads(monkeypatch)
    ran = []

    def sync():
        try:
            return guard.call_each(calls(ran))
        except RuntimeError as exc:
            return exc

    got = run_bounded(sync)
    assert got != "hung" and ran == []
