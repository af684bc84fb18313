"""The guarded hook call: run one hook under the contract and return an Outcome.

- Any exception is captured (SystemExit and other BaseExceptions too) as RAISED with its
  type name only; KeyboardInterrupt and the caller's own asyncio cancellation propagate.
- A deadline per call, and it holds: an answer that ends after its deadline is a TIMEOUT
  however it was produced (a gate holding the GIL, or blocking the event loop, cannot be
  woken up in time; its end time is compared with its deadline). Async hooks are
  cancelled at the deadline, and the decision is taken then even if the hook swallows
  its cancellation (the rest of it is left to a background task, given ``ASYNC_GRACE``
  to clean up, then closed). Sync hooks run on a small worker pool and are abandoned at
  the deadline (a thread cannot be killed); abandoned calls still running are bounded per
  hook (``MAX_ABANDONED_PER_HOOK``: a hung hook's further calls fail as TIMEOUT at once,
  other hooks go on) and in all (``MAX_ABANDONED`` for gates; observers and advisory
  hooks have their own, ``MAX_ABANDONED_ADVISORY``, so they never make a gate fail).
- The adapter's validator turns the raw answer into a Verdict inside the same guard, so
  junk or a hostile object (raising ``__bool__``, ``.get``, ``__eq__`` ...) is INVALID.
  With a deadline the validator runs on the worker under the hook's deadline too: an
  answer whose ``__eq__`` never returns is a TIMEOUT, and the caller never waits on it.

Read top to bottom: outcomes (how an answer becomes an Outcome); the worker pool (the
threads sync hooks run on, and what a worker does with a job); the bounds on abandoned
calls; the caller's wait (deadlines, the poll), shared by both kinds of caller; the sync
callers (``call``, ``call_each``); the async callers, first with sync hooks on the pool
(``acall_each``), then with coroutine hooks on the loop (``acall``).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import os
import threading
import types
from _thread import allocate_lock as _allocate_lock
from contextvars import copy_context as _copy_context
from time import perf_counter
from typing import Any, Callable, Optional

from . import policy
from .report import type_name
from .verdict import Failure, Invalid, Outcome, Verdict

Validator = Callable[[Any], Verdict]

#: Abandoned sync calls of gates allowed to keep running (a thread each), all hooks
#: together: past it, further deadlined calls of gates fail as TIMEOUT at once instead of
#: piling up threads. The backstop when many different gates hang at once.
MAX_ABANDONED = 128
#: Abandoned sync calls of one hook allowed to keep running: past it, further deadlined
#: calls of that hook fail as TIMEOUT at once (it would most likely hang again), while
#: the other hooks keep running. This contains a hung gate without denying the rest.
MAX_ABANDONED_PER_HOOK = 8
#: Abandoned sync calls of observers and advisory hooks (``role = "observer"``,
#: ``on_error = "allow"``) allowed to keep running: their own bound. Past it, their
#: further calls fail at once (which denies nothing); they never count toward the gates'.
MAX_ABANDONED_ADVISORY = 32
#: Idle worker threads kept for reuse.
MAX_IDLE = 4
#: The longest a lock may be waited on: a deadline beyond it (a valid ``timeout = 1e300``)
#: is waited for in steps of it (effectively forever), never raised on.
MAX_WAIT = threading.TIMEOUT_MAX
#: How long the rest of an async hook that swallowed its deadline's cancellation may run
#: on in the background (its own clean-up) before it is closed. The call is decided at
#: the deadline either way.
ASYNC_GRACE = 1.0


_outcome = Outcome


# ---------------------------------------------------------------- outcomes


def _failed(hook: str, failure: Failure, start: float, exc: BaseException | None = None) -> Outcome:
    exception_type = type_name(exc) if exc is not None else None
    return _outcome(hook, None, failure, exception_type, (perf_counter() - start) * 1000.0)


def _judge(hook: str, result: Any, validate: Validator, start: float) -> Outcome:
    try:
        verdict = validate(result)
        if not isinstance(verdict, Verdict):
            raise Invalid()
    except KeyboardInterrupt:
        raise
    except Invalid as exc:
        return _failed(hook, exc.failure, start)
    except BaseException as exc:  # noqa: BLE001 - a hostile object tripping the validator is INVALID
        return _failed(hook, Failure.INVALID, start, exc)
    return _outcome(hook, verdict, None, None, (perf_counter() - start) * 1000.0)


def _finish_sync(hook_id: str, result: Any, exc: BaseException | None, validate: Validator, start: float) -> Outcome:
    if exc is not None:
        if issubclass(type(exc), KeyboardInterrupt):  # never isinstance: a hostile __class__
            raise exc
        return _failed(hook_id, Failure.RAISED, start, exc)
    if _awaitable(result):
        # an async hook reached from a sync dispatcher is undecided, not unopposed
        _close_awaitable(result)
        return _failed(hook_id, Failure.INVALID, start)
    return _judge(hook_id, result, validate, start)


def _in_time(outcome: Outcome, timeout, start: float) -> Outcome:
    """A failure the hook produced after its deadline (blocking the loop) is a TIMEOUT."""
    if timeout and outcome.elapsed_ms > timeout * 1000.0:
        return _failed(outcome.hook, Failure.TIMEOUT, start)
    return outcome


_PLAIN = frozenset({type(None), bool, int, float, str, bytes, dict, list, tuple})
_COROUTINE = types.CoroutineType


def _awaitable(result: Any) -> bool:
    if type(result) in _PLAIN:
        return False
    try:
        return inspect.isawaitable(result)
    except BaseException:  # noqa: BLE001 - a hostile __class__; the validator will judge it
        return False


def _close_awaitable(result: Any) -> None:
    close = getattr(type(result), "close", None)
    if close is not None:
        try:
            close(result)
        except BaseException:  # noqa: BLE001 - a hostile close(): the answer is dropped either way
            pass


_NO_KWARGS: dict = {}  # only ever unpacked (``**``), never handed to a hook itself


# ---------------------------------------------------------------- the worker pool
#
# One thread hand-off per batch of deadlined sync hooks: the caller hands the whole batch
# to one worker and waits on that worker's ``done`` lock once (polling it for ``SPIN``
# first, then asleep); the worker runs every hook
# in order and releases ``done`` once, after the last. Each hook keeps its own deadline:
# the caller sleeps until the earliest deadline still pending (the running hook's; while
# a hook without a deadline runs, the soonest a later one could expire), and when it wakes
# before ``done`` it looks at the worker's progress under the worker's lock. A hook still
# running at its deadline is abandoned: the worker starts none of the later hooks, and
# they go on in a fresh worker. Nothing is allocated per hook on the way (locks belong to
# the worker, one context copy per batch). The worker also judges each answer, so the
# caller wakes to finished Outcomes.

_RUNNING, _DONE, _ABANDONED = 0, 1, 2


class _Raised:
    """A hook's exception, as the worker hands it back (KeyboardInterrupt included)."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


#: ``_Job.counted`` of a job no bound counts: not abandoned, or abandoned before its
#: worker began it (it never runs a hook: no sign that a hook hangs)
_UNCOUNTED: tuple = ("", False)


class _Job:
    """Hook calls handed to one worker, run in order: ``calls`` is the caller's list of
    ``(hook_id, fn, args, kwargs, validate, timeout)``. ``results[i]`` is hook i's
    Outcome, judged by the worker under the same deadline (with ``validate`` None: its
    raw answer, or a ``_Raised``); a ``_Raised`` only for KeyboardInterrupt; with
    ``awaitables``, an awaitable answer is left for the async caller to await.
    ``ends[i]`` is when it ended; ``completed``, ``state`` and ``counted`` (the abandoned
    call's ``(hook id, advisory)``, as the bounds count it) change only under the
    worker's lock. The hooks run in ``ctx``, a copy of the caller's context (``base``);
    what they set there is handed back to the caller for the calls that ended on time
    (``clean``, ``snaps``: ``_give_back``)."""

    __slots__ = ("calls", "base", "ctx", "results", "ends", "completed", "state", "notify", "submitted", "started",
                 "awaitables", "counted", "clean", "snaps")

    def __init__(self, calls: list, notify=None, awaitables: bool = False):
        self.calls = calls
        self.base = base = _copy_context()  # the caller's context as it was handed over
        self.ctx = base.copy()  # the one the hooks run in (the same mapping until one sets a variable)
        n = len(calls)
        #: the first ``clean`` calls ended within their deadlines, and none before them
        #: missed one: their context changes may go back to the caller (``_give_back``)
        self.clean = 0
        #: ``snaps[i]``: the hooks' context after call i (the last call's: ``ctx``)
        self.snaps: Optional[list] = [None] * (n - 1) if n > 1 else None
        self.results: list = [None] * n
        self.ends: list = [0.0] * n
        self.completed = 0
        self.state = _RUNNING
        self.notify = notify  # async callers: called once when the job ends
        self.submitted = 0.0
        self.started = 0.0  # when the worker began the first call: each deadline runs from its call's start
        self.awaitables = awaitables
        self.counted: tuple = _UNCOUNTED


class _Worker:
    __slots__ = ("wake", "done", "ended", "lock", "job", "started", "lost")

    def __init__(self):
        self.wake = _allocate_lock()  # caller -> worker: a job is set (None: retire)
        self.wake.acquire()
        self.done = _allocate_lock()  # worker -> caller: the job ended, every result is in
        self.done.acquire()
        self.ended = bytearray(1)  # set to 1 just before ``done``: what a polling caller reads
        self.lock = _allocate_lock()  # the job's progress and state
        self.job: _Job | None = None
        self.started = False
        self.lost = False  # its thread could not be started (by the starter): it never begins


def _advisory(hook_id: str) -> bool:
    """True when a failure of ``hook_id`` denies nothing under the config in force: an
    observer, or ``on_error = "allow"``. Read only when a call is abandoned or a bound
    is full, in the caller's context (``policy.using`` included). When in doubt: a gate."""
    try:
        hook = policy.current().hook(hook_id)
        return hook.role == "observer" or hook.on_error == "allow"
    except Exception:  # noqa: BLE001 - the config cannot be read here: a gate, when in doubt
        return False


class _Pool:
    def __init__(self) -> None:
        self.lock = _allocate_lock()
        self.starting = _allocate_lock()  # held by a sync caller while its worker's thread starts
        self.queued: list[_Worker] = []  # fresh workers of async callers, for the starter to start
        self.starter = False  # the starter thread runs (under ``lock``)
        self.idle: list[_Worker] = []
        self.abandoned = 0  # every abandoned call still running
        self.gates = 0  # of which gates'
        self.advisory = 0  # of which observers' and advisory hooks'
        self.by_hook: dict = {}  # hook id -> its abandoned calls still running (none: absent)

    def take(self) -> _Worker:
        """An idle worker, or a new one (its thread starts with its first job). The
        bounds are the caller's to check first (``_admitted``)."""
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return _Worker()

    def start(self, worker: _Worker, job: _Job) -> None:
        """Hand ``job`` to ``worker``, starting its thread if it has none yet.

        A thread's start is a hand-shake (``Thread.start`` waits until the new thread
        runs), and under load each side of it waits its turn for the GIL. So a sync
        caller starts its worker under ``starting``, one start at a time: in a burst the
        other callers wait on that lock, off the GIL, instead of queueing for it in front
        of the workers whose gates have answered (which then miss their deadlines). An
        event loop (an async caller's job: ``awaitables``) never waits on a start, which
        would hold every task on it (the coroutine gates miss theirs): its fresh workers
        are queued for the starter thread, which starts them in order. Either way the
        job's deadline runs from when its worker began it (``_check``)."""
        worker.job = job
        worker.ended[0] = 0
        worker.wake.release()
        if worker.started:
            return
        worker.started = True
        if job.awaitables:
            with self.lock:
                self.queued.append(worker)
                if self.starter:
                    return
                self.starter = True
            try:
                _start_thread("failsecure-guard-starter", self._start_queued)
            except BaseException:  # no thread to be had: this worker is never started
                with self.lock:
                    self.starter = False
                    self.queued.remove(worker)
                raise
            return
        with self.starting:
            _start_thread("failsecure-guard", self._run, worker)

    def _start_queued(self) -> None:
        """The starter thread: start the queued workers' threads in order, then end."""
        while self._start_next(True):
            pass

    def _start_next(self, starter: bool = False) -> bool:
        """Start the next queued worker's thread. -> False when none was queued (the
        ``starter`` then ends). Each worker's thread starts the next one before its own
        job, beside the starter, so a long queue (an event loop's burst) is started in a
        few rounds of hand-shakes, not one after another. A worker whose thread cannot
        start never begins its job: its caller gives it up as a TIMEOUT (``_check``)."""
        with self.lock:
            if not self.queued:
                if starter:
                    self.starter = False
                return False
            worker = self.queued.pop(0)
        try:
            _start_thread("failsecure-guard", self._run, worker)
        except BaseException:  # noqa: BLE001 - this worker's call times out; the others must still start
            worker.lost = True  # its caller gives it up when it next looks (``_check``), deadline or none
        return True

    def release(self, worker: _Worker) -> None:
        """The caller took a finished job's results (and its ``done``): the worker is free."""
        with self.lock:
            keep = len(self.idle) < MAX_IDLE
            if keep:
                self.idle.append(worker)
        if not keep:
            worker.job = None
            worker.wake.release()

    def count(self, job: _Job, hook_id: str, advisory: bool) -> None:
        """Count hook ``hook_id``'s call of ``job`` as abandoned. Called under the
        worker's lock as the job is marked abandoned, so the worker (which reads the
        state under that lock) uncounts it only after this."""
        job.counted = (hook_id, advisory)
        with self.lock:
            self.abandoned += 1
            if advisory:
                self.advisory += 1
            else:
                self.gates += 1
            by_hook = self.by_hook
            by_hook[hook_id] = by_hook.get(hook_id, 0) + 1

    def _uncount(self, job: _Job) -> None:
        """Under ``self.lock``: the abandoned call ended."""
        hook_id, advisory = job.counted
        self.abandoned -= 1
        if advisory:
            self.advisory -= 1
        else:
            self.gates -= 1
        by_hook = self.by_hook
        left = by_hook.get(hook_id, 0) - 1
        if left > 0:
            by_hook[hook_id] = left
        else:
            by_hook.pop(hook_id, None)

    def abandon(self, worker: _Worker, job: _Job, index: int) -> bool:
        """Give up on call ``index`` of a job (the worker starts none of the later
        calls). False if that call ended in the meantime."""
        hook_id = job.calls[index][0]
        advisory = _advisory(hook_id)  # before the lock: it may read the config
        with worker.lock:
            if job.completed > index or job.state != _RUNNING:
                return False
            if job.started:  # never begun: it will run nothing, so no bound counts it
                self.count(job, hook_id, advisory)
            job.state = _ABANDONED  # after the count: the worker may read it without the lock
        return True

    def _run(self, worker: _Worker) -> None:
        if self.queued:  # read without the lock: a hint (``_start_next`` reads it again)
            self._start_next()
        while True:
            worker.wake.acquire()
            job = worker.job
            worker.job = None
            if job is None:
                return
            if job.ctx.run(self._run_job, worker, job):
                # the caller takes ``done`` and frees this worker; an idle worker holds no
                # job (its contexts hold the caller's variables and the hooks' values:
                # what the caller lets go of is freed now, as upstream)
                job = None
                continue
            with self.lock:  # abandoned: nobody waits for this worker
                if job.counted is not _UNCOUNTED:
                    self._uncount(job)
                keep = len(self.idle) < MAX_IDLE
                if keep:
                    self.idle.append(worker)
            job = None
            if not keep:
                return

    @staticmethod
    def _run_job(worker: _Worker, job: _Job) -> bool:
        """Run the job's calls in order (and judge their answers, when the job says how).
        True when all ended (``done`` released), False when the caller abandoned it. An
        answer that ended past its hook's deadline is a TIMEOUT, however late the
        caller woke (a hook holding the GIL keeps the caller from waking in time)."""
        lock, results, ends, awaitables = worker.lock, job.results, job.ends, job.awaitables
        last = len(job.calls) - 1
        with lock:  # the caller reads ``started`` under it to tell a begun job from one that never ran
            began = job.started = perf_counter()
            if job.state == _ABANDONED:  # given up before it began: nothing runs
                return False
        clean = True  # every call so far ended on time: the context changes may go back
        for index, (hook_id, fn, args, kwargs, validate, timeout) in enumerate(job.calls):
            try:
                result = fn(*(args or ()), **(kwargs or _NO_KWARGS))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, KeyboardInterrupt included
                result = _Raised(exc)
            if validate is not None:
                result = _judged(hook_id, validate, result, began, awaitables)
            end = perf_counter()
            if timeout and end - began > timeout:
                result = _late(hook_id, result, began)
                clean = False  # nothing it or a later call set goes back to the caller
            elif clean:
                if index != last:  # what the caller takes if a later call misses its deadline
                    job.snaps[index] = _copy_context()  # type: ignore[index]
                job.clean = index + 1  # before ``completed``: a caller that sees that sees this
            results[index] = result
            ends[index] = began = end
            with lock:
                if job.state == _ABANDONED:
                    stop = True
                else:
                    stop = False
                    job.completed = index + 1
                    if index == last:
                        job.state = _DONE
            if stop:
                if _awaitable(result):
                    _close_awaitable(result)
                return False
        notify = job.notify  # set (under the lock) before the job was marked done, or never
        worker.ended[0] = 1
        worker.done.release()  # the caller wakes while this thread blocks again
        if notify is not None:  # after ``done``: the woken loop takes it at once, never waits
            try:  # for this thread to get the GIL back (under load, ms per gate on the loop)
                notify()
            except BaseException:  # noqa: BLE001 - the loop closed under it: its caller is gone
                pass
        return True


def _start_thread(name: str, target: Callable, *args: Any) -> None:
    threading.Thread(target=target, args=args, name=name, daemon=True).start()


def _late(hook_id: str, result: Any, start: float) -> Any:
    """A hook's answer (or Outcome) that ended after its deadline -> a TIMEOUT Outcome.
    A KeyboardInterrupt still reaches the caller; an awaitable answer is closed."""
    if type(result) is _Raised and issubclass(type(result.exc), KeyboardInterrupt):
        return result
    if type(result) is not Outcome and _awaitable(result):
        _close_awaitable(result)
    return _failed(hook_id, Failure.TIMEOUT, start)


def _judged(hook_id: str, validate: Validator, result: Any, start: float, awaitables: bool) -> Any:
    """In the worker: a hook's answer -> its Outcome (``_Raised`` for KeyboardInterrupt,
    which the caller re-raises; the raw answer for an async caller's awaitable)."""
    try:
        if type(result) in _PLAIN:  # the common answers: never awaitable
            return _judge(hook_id, result, validate, start)
        if type(result) is _Raised:
            return _finish_sync(hook_id, None, result.exc, validate, start)
        if awaitables and _awaitable(result):
            return result
        return _finish_sync(hook_id, result, None, validate, start)
    except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt, from the hook or its validator
        return _Raised(exc)


_pool = _Pool()


def _after_fork() -> None:
    """In a forked child only the forking thread exists: the idle workers' threads are
    gone (a job handed to one would never run, and every deadlined hook would time out)
    and the abandoned calls belong to the parent. The child starts with a fresh pool."""
    global _pool
    _pool = _Pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def abandoned_calls() -> int:
    """How many abandoned sync hook calls are still running."""
    return _pool.abandoned


def _forsake(worker: _Worker, job: _Job) -> None:
    """The caller leaves without the results (interrupted or cancelled while waiting):
    the worker must not be lost. Still running: abandoned (counted; it frees itself when
    its hook returns). Ended: take its ``done`` and free it."""
    with worker.lock:
        running = job.state == _RUNNING
        if running:
            hook_id = job.calls[min(job.completed, len(job.calls) - 1)][0]
            _pool.count(job, hook_id, _advisory(hook_id))
            job.state = _ABANDONED
    if not running and worker.done.acquire(True, 1.0):
        _pool.release(worker)


# ---------------------------------------------------------------- the bounds on abandoned calls


def _inline(pending: list) -> bool:
    for c in pending:
        if c[5]:
            return False
    return True


def _admitted(pending: list) -> int:
    """How many of the first hooks of ``pending`` the bounds on abandoned calls let run
    (checked only while some abandoned call still runs, or with a bound at 0): a hook
    with a deadline is refused when its own abandoned calls reached
    ``MAX_ABANDONED_PER_HOOK``, or those of its kind (gates; observers and advisory
    hooks) reached their bound. A hook without a deadline is never abandoned: never
    refused. The counts are read without the lock: a bound, not an exact quota."""
    pool = _pool
    by_hook = pool.by_hook
    gates_full = pool.gates >= MAX_ABANDONED
    advisory_full = pool.advisory >= MAX_ABANDONED_ADVISORY
    per_hook = MAX_ABANDONED_PER_HOOK
    for index, c in enumerate(pending):
        if not c[5]:
            continue
        if by_hook and by_hook.get(c[0], 0) >= per_hook:
            return index
        if (gates_full or advisory_full) and (advisory_full if _advisory(c[0]) else gates_full):
            return index
    return len(pending)


def _batch(pending: list, outcomes: list) -> list:
    """The hooks of ``pending`` to hand to one worker now (a prefix), after the bounds:
    the hooks at its head the bounds refuse fail as TIMEOUT at once (appended to
    ``outcomes``), without running. [] when none is left."""
    while pending:
        admitted = _admitted(pending)
        if admitted:
            return pending if admitted == len(pending) else pending[:admitted]
        outcomes.append(_failed(pending[0][0], Failure.TIMEOUT, perf_counter()))
        pending = pending[1:]
    return pending


def _next(pending: list, outcomes: list, inline: bool = True) -> tuple:
    """The next batch of ``pending`` for a worker -> (batch, the calls left from it on).
    Calls the bounds on abandoned calls refuse become TIMEOUT outcomes at once, in their
    place; a batch with no deadline runs inline here (``inline``; else it is handed back
    for the async caller to run inline). ``batch`` None: nothing to hand over this time
    (the calls left go on in the next turn)."""
    batch = pending
    if _pool.abandoned or MAX_ABANDONED <= 0:  # a hung call still runs: the bounds apply
        done = len(outcomes)
        batch = _batch(pending, outcomes)
        pending = pending[len(outcomes) - done :]
        if not batch:
            return None, []
    if inline and _inline(batch):
        outcomes.extend([call(h, fn, a, k, validate=v) for h, fn, a, k, v, _ in batch])
        return None, pending[len(batch) :]
    return batch, pending


# ---------------------------------------------------------------- the caller's wait, shared by sync and async callers


def _soonest(pending: list, index: int) -> float:
    """While hook ``index`` runs: the soonest a later hook's deadline could expire, from
    now (a later hook starts no earlier than now; -1: none has one)."""
    soonest = -1.0
    for c in pending[index + 1 :]:
        if c[5] and (soonest < 0 or c[5] < soonest):
            soonest = c[5]
    return soonest


def _sleep(pending: list, index: int, timeout, deadline: float) -> float:
    """How long the caller may sleep while hook ``index`` runs: until its own deadline,
    and no longer than the soonest a later hook's could expire (the running hook may end
    at once and a later one with a shorter deadline hang). -1: no bound at all."""
    soonest = _soonest(pending, index)
    if timeout:
        wait = deadline - perf_counter()
        if wait < 0.0:
            wait = 0.0
        if not 0.0 <= soonest < wait:
            soonest = wait
    return soonest if soonest <= MAX_WAIT else MAX_WAIT  # a huge deadline: waited for in steps


def _check(worker: _Worker, job: _Job, pending: list, index: int, timeout, deadline: float):
    """The caller woke before the job ended (at a deadline, or at a bound on one): look
    at the worker's progress. -> (the index of a hook abandoned at its deadline, or -1;
    then the hook watched now, its timeout, its deadline, and how long to sleep next)."""
    with worker.lock:
        completed = job.completed
    if completed == index:
        if worker.lost and index == 0 and not job.started and _pool.abandon(worker, job, index):
            # its thread could not be started: it never begins, so a first hook without a
            # deadline of its own must not be waited for (a later hook's woke the caller)
            return index, index, timeout, deadline, 0.0
        if timeout and perf_counter() >= deadline:
            began = job.started if index == 0 else 0.0
            if began + timeout > deadline:
                # the worker began the first call after the hand-off (a thread starting
                # under load): its deadline runs from its own start, as a later call's does
                deadline = began + timeout
            elif index == 0 and not began and deadline < job.submitted + 2 * timeout:
                # its worker has not begun yet (its thread still starting, or queued for
                # the starter): one more deadline to begin; never begun by then, the call
                # is a TIMEOUT without running (and counts toward no bound)
                deadline = job.submitted + 2 * timeout
            elif _pool.abandon(worker, job, index):
                return index, index, timeout, deadline, 0.0
    elif completed < len(pending):
        index = completed
        timeout = pending[index][5]
        deadline = job.ends[index - 1] + timeout if timeout else 0.0
    # else: all ended just now, ``done`` follows at once
    return -1, index, timeout, deadline, _sleep(pending, index, timeout, deadline)


def _begin(worker: _Worker, job: _Job, pending: list) -> tuple:
    """Hand the job to the worker: -> (the first hook's timeout, its deadline, how long
    the caller may sleep first)."""
    timeout = pending[0][5]
    job.submitted = now = perf_counter()
    deadline = now + timeout if timeout else 0.0
    wait = _sleep(pending, 0, timeout, deadline)
    _pool.start(worker, job)
    return timeout, deadline, wait


#: How long a caller polls for its batch before it sleeps on it. A sleeping caller's CPU
#: goes idle, and on a VM an idle vCPU is slow to come back (tens of microseconds, and the
#: caller's own code runs slower for a while after): most gates end within this, so the
#: caller yields the CPU between polls instead (``os.sched_yield``: a thread waiting for
#: that CPU, the worker included, runs at once). It costs at most this much CPU time
#: per batch; 0 turns it off.
SPIN = 100e-6

_yield = getattr(os, "sched_yield", None)
if _yield is None:  # not on this platform: no polling
    SPIN = 0.0

try:  # the compiled poll (setup.py builds it where it can): it never takes the GIL
    from ._spin import wait as _cwait
except ImportError:  # no compiler at install time, another platform: the poll is in Python
    _cwait = None


def _spin(worker: _Worker, wait: float) -> float:
    """Poll for ``worker``'s job to end for up to ``SPIN``, never past ``wait`` (the
    caller's next deadline; -1: none). -> -2.0 when it ended (its ``done`` is taken),
    else what is left of ``wait``."""
    done = worker.done
    if done.acquire(False):
        return -2.0
    limit = SPIN if wait < 0.0 or wait > SPIN else wait
    if _cwait is not None:
        if _cwait(worker.ended, limit) and done.acquire(False):
            return -2.0
    else:
        now = perf_counter()
        end = now + limit
        while now < end:
            _yield()  # type: ignore[misc]
            if done.acquire(False):
                return -2.0
            now = perf_counter()
    return wait if wait < 0.0 else max(wait - limit, 0.0)


def _collect(job: _Job, pending: list, ended: int, outcomes: list, awaitables: Optional[list] = None) -> None:
    """The outcomes of the first ``ended`` hooks of a job (judged by the worker). With
    ``awaitables`` (an async caller), a sync hook that answered an awaitable is noted
    there as (position, awaitable, time left) and awaited by the caller instead."""
    results = job.results
    for index in range(ended):
        result = results[index]
        if type(result) is _Raised:  # KeyboardInterrupt: the worker is already released
            raise result.exc
        if type(result) is not Outcome:  # an awaitable, for the async caller
            timeout = pending[index][5]
            start = job.ends[index - 1] if index else job.started
            left = max(timeout - (perf_counter() - start), 0.0) if timeout else None
            awaitables.append((len(outcomes), result, left))  # type: ignore[union-attr]
            result = None  # filled in by the caller
        outcomes.append(result)
    if ended < len(pending):
        outcomes.append(_failed(pending[ended][0], Failure.TIMEOUT, job.ends[ended - 1] if ended else job.submitted))


def _give_back(job: _Job, ended: int) -> None:
    """In the caller's thread (its task), after it took the first ``ended`` results of
    ``job``: the context variables those hooks set go back to the caller's context, as
    if they had run there (upstream calls them in it) -- only up to the first call that
    missed its deadline (a late or abandoned call's changes, and those of the calls after
    it in the same job, go nowhere), and never failsecure's own variables (a
    ``failsecure_*`` ContextVar: the run marker, the ledger's scope, the config in force
    are not a hook's to set). Values are compared by identity only (``Context == ``
    would call a hook's value's ``__eq__`` here, on the caller). Nothing set: the two
    contexts hold the very same mapping (``_same``, ~0.1 us whatever their size)."""
    clean = job.clean
    if ended < clean:
        clean = ended
    if not clean:
        return
    ctx = job.ctx if clean == len(job.calls) else job.snaps[clean - 1]  # type: ignore[index]
    base = job.base
    if _same is not None and _same(ctx, base):  # nothing was set: the common case
        return
    for var, value in ctx.items():
        if base.get(var, _UNSET) is value:  # by identity: no code of the value runs
            continue
        if var.name.startswith("failsecure"):
            continue
        var.set(value)


_UNSET = object()


def _mapping_same(a: contextvars.Context, b: contextvars.Context) -> bool:
    """``a`` and ``b`` hold the very same (immutable) mapping of variables: a copy that
    nothing was set in since. CPython's Context refers to its mapping last (after the
    context it was entered from, while it runs): no value is compared, no code runs."""
    return _referents(a)[-1] is _referents(b)[-1]


def _probe_same() -> Optional[Callable[[contextvars.Context, contextvars.Context], bool]]:
    """``_mapping_same`` if it tells this interpreter's contexts apart, else None (then
    ``_give_back`` compares every variable)."""
    try:
        var: contextvars.ContextVar = contextvars.ContextVar("failsecure_guard_probe")
        base = contextvars.Context()
        copy = base.copy()
        if not _mapping_same(base, copy) or not copy.run(lambda: _mapping_same(copy, base)):
            return None
        copy.run(var.set, 1)
        if _mapping_same(base, copy) or copy.run(lambda: _mapping_same(copy, base)):
            return None
        return _mapping_same
    except Exception:  # noqa: BLE001 - not CPython's layout: the exact comparison it is
        return None


try:
    from gc import get_referents as _referents
except ImportError:  # pragma: no cover - no gc module: the exact comparison
    _same = None
else:
    _same = _probe_same()


# ---------------------------------------------------------------- sync callers


def _wait(worker: _Worker, job: _Job, pending: list) -> int:
    """Start the job, then sleep until it ends or a hook misses its deadline. -> the
    number of hooks that ended (``len(pending)``: all; otherwise hook ``i`` timed out and
    was abandoned). Nothing runs between handing the job over and sleeping but the wait."""
    done = worker.done
    index = 0
    timeout, deadline, wait = _begin(worker, job, pending)
    try:
        if SPIN:
            wait = _spin(worker, wait)
            if wait == -2.0:
                return len(pending)
        while True:
            if done.acquire(True, wait):
                return len(pending)
            abandoned, index, timeout, deadline, wait = _check(worker, job, pending, index, timeout, deadline)
            if abandoned >= 0:
                return abandoned
    except BaseException:  # KeyboardInterrupt while waiting: leave no worker behind
        _forsake(worker, job)
        raise


def call(
    hook_id: str,
    fn: Callable[..., Any],
    args: tuple = (),
    kwargs: Optional[dict] = None,
    *,
    validate: Validator,
    timeout: Optional[float] = None,
) -> Outcome:
    """Call a sync hook under the contract. Never raises, except KeyboardInterrupt."""
    if timeout:
        return call_each([(hook_id, fn, args, kwargs, validate, timeout)])[0]
    start = perf_counter()
    try:
        result = fn(*args, **(kwargs or {}))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - any exception of a hook is RAISED (KeyboardInterrupt re-raised above)
        return _failed(hook_id, Failure.RAISED, start, exc)
    return _finish_sync(hook_id, result, None, validate, start)


def call_each(calls: list) -> list[Outcome]:
    """Call several sync hooks in order, each under the contract with its own deadline:
    ``calls`` is a list of ``(hook_id, fn, args, kwargs, validate, timeout)``. When any
    has a deadline they run on one worker, one hand-off for all of them; a hook that
    misses its deadline is abandoned and the hooks after it go on in a fresh worker.
    A hook the bounds on abandoned calls refuse is a TIMEOUT at once, in its place."""
    outcomes: list[Outcome] = []
    pending = calls
    while pending:
        batch, pending = _next(pending, outcomes)
        if batch is None:
            continue
        worker = _pool.take()
        job = _Job(batch)
        ended = _wait(worker, job, batch)
        if ended == len(batch):
            _pool.release(worker)  # before judging: a KeyboardInterrupt result must not lose it
        _collect(job, batch, ended, outcomes)
        _give_back(job, ended)
        pending = pending[ended + 1 if ended < len(batch) else ended :]
    return outcomes


# ---------------------------------------------------------------- async callers: sync hooks on the pool


#: how long an async dispatcher's thread waits on the worker before it awaits instead: a
#: sync hook run inline would hold the loop at least as long, and most gates end well
#: within it, so they cost one thread hand-off and no trip through the loop
LOOP_GRACE = 0.002


async def _await(worker: _Worker, job: _Job, pending: list) -> int:
    """``_wait`` for an async dispatcher: the loop's thread waits up to ``LOOP_GRACE``,
    then awaits the job (woken by the worker when it ends, or at the deadlines). Not
    while other callbacks are ready on the loop (other tasks' steps, parallel tool
    calls): holding the loop then would delay all of them, and under load push their
    gates past their deadlines; the job is awaited at once instead."""
    done = worker.done
    index = 0
    timeout, deadline, wait = _begin(worker, job, pending)
    try:
        loop = asyncio.get_running_loop()
        if getattr(loop, "_ready", None):  # asyncio's queue of ready callbacks: others wait
            grace = 0.0
        else:
            grace = LOOP_GRACE if wait < 0.0 or wait > LOOP_GRACE else wait
            if SPIN:
                grace = _spin(worker, grace)
                if grace == -2.0:
                    return len(pending)
        if done.acquire(True, grace):
            return len(pending)
        finished = loop.create_future()

        def notify() -> None:
            loop.call_soon_threadsafe(_wake, finished)

        with worker.lock:
            running = job.state == _RUNNING
            if running:
                job.notify = notify  # read by the worker after it marks the job done
        while running:
            abandoned, index, timeout, deadline, wait = _check(worker, job, pending, index, timeout, deadline)
            if abandoned >= 0:
                return abandoned
            try:
                await asyncio.wait_for(asyncio.shield(finished), None if wait < 0.0 else wait)
                break
            except asyncio.TimeoutError:
                pass
        done.acquire()  # released right after the job ended
        return len(pending)
    except BaseException:  # the caller's cancellation, KeyboardInterrupt: leave no worker behind
        _forsake(worker, job)
        raise


async def acall_each(calls: list) -> list[Outcome]:
    """``call_each`` for an async dispatcher: the same sync hooks, one hand-off for all
    of them, each with its own deadline. The loop's thread waits up to ``LOOP_GRACE`` for
    the worker; a batch still running then is awaited without blocking the loop. A sync
    hook that answers an awaitable (a plain function returning a coroutine) has it awaited
    here, within what is left of its deadline, as an async dispatcher would."""
    outcomes: list[Outcome] = []
    awaitables: list = []
    pending = calls
    while pending:
        batch, pending = _next(pending, outcomes, inline=False)
        if batch is None:
            continue
        if _inline(batch):  # no deadline: run here, an awaitable answer awaited as with one
            for h, fn, a, k, v, _ in batch:
                outcomes.append(await acall(h, fn, a or (), k, validate=v))
            pending = pending[len(batch) :]
            continue
        worker = _pool.take()
        job = _Job(batch, awaitables=True)
        ended = await _await(worker, job, batch)
        if ended == len(batch):
            _pool.release(worker)
        base = len(outcomes)
        _collect(job, batch, ended, outcomes, awaitables)
        _give_back(job, ended)  # before the awaitables: they run on in this context
        for position, awaitable, left in awaitables:
            hook_id, validate = batch[position - base][0], batch[position - base][4]
            outcomes[position] = await acall(hook_id, _awaited, (awaitable,), validate=validate, timeout=left if left is None else max(left, 1e-6))
        awaitables.clear()
        pending = pending[ended + 1 if ended < len(batch) else ended :]
    return outcomes


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def _run_sync_in_pool(hook_id: str, fn, args, kwargs, validate: Validator, timeout: float, start: float) -> Any:
    """A sync hook from an async dispatcher, with a deadline: run (and its answer judged)
    on the pool (see ``_await``). -> its Outcome, or the awaitable it answered."""
    call = [(hook_id, fn, args, kwargs, validate, timeout)]
    if (_pool.abandoned or MAX_ABANDONED <= 0) and not _admitted(call):
        return _failed(hook_id, Failure.TIMEOUT, start)
    worker = _pool.take()
    job = _Job(call, awaitables=True)
    if not await _await(worker, job, call):
        return _failed(hook_id, Failure.TIMEOUT, start)
    _pool.release(worker)
    result = job.results[0]
    if type(result) is _Raised:  # KeyboardInterrupt
        raise result.exc
    _give_back(job, 1)
    return result


# ---------------------------------------------------------------- async callers: coroutine hooks on the loop


_CO_COROUTINE = inspect.CO_COROUTINE


def _is_async(fn: Any) -> bool:
    """inspect.iscoroutinefunction, with a fast path for plain functions and methods."""
    code = getattr(fn, "__code__", None)
    if code is not None and type(code) is type(_is_async.__code__):
        return bool(code.co_flags & _CO_COROUTINE)
    return inspect.iscoroutinefunction(fn)


is_async = _is_async  # Adapter.ahook_calls: coroutine hooks on the loop, runs of sync ones batched


#: ``_Resumed.first`` for an awaitable not started yet
_UNSTARTED = object()


#: ``_Resumed.deadline`` of the rest of a hook left to the background: whatever is
#: thrown in (a cancellation) closes it
_CLOSING = object()


class _Resumed:
    """The rest of a coroutine whose first step already ran and yielded ``first``:
    awaiting it drives the coroutine on exactly as ``await coro`` would have (values
    sent and exceptions thrown in by the Task, the deadline's cancellation included,
    are passed through). With its ``deadline`` (an ``asyncio.timeout``) expired, a
    coroutine that swallows the cancellation and waits on is not waited for: its rest
    goes to the background (``_abandon``) and the cancellation goes on to the
    deadline, so the call is decided at it."""

    __slots__ = ("coro", "first", "deadline")

    def __init__(self, coro, first, deadline=None):
        self.coro, self.first, self.deadline = coro, first, deadline

    def __await__(self):
        coro, value = self.coro, self.first
        if value is _UNSTARTED:
            try:
                value = coro.send(None)
            except StopIteration as stop:
                return stop.value
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # whatever the Task throws in is passed on to the hook
                deadline = self.deadline
                if deadline is _CLOSING:
                    _close(coro)
                    raise
                try:
                    value = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
                if deadline is not None and deadline.expired():
                    # it swallowed its deadline's cancellation and waits on: decided now
                    _abandon(coro, value)
                    raise
            else:
                try:
                    value = coro.send(sent)
                except StopIteration as stop:
                    return stop.value


def _close(coro) -> None:
    try:
        coro.close()
    except BaseException:  # noqa: BLE001 - it ignored GeneratorExit: it is never driven again either way
        pass


def _abandon(coro, value) -> None:
    """The rest of a hook that swallowed its deadline's cancellation (it last yielded
    ``value``): driven on by a background task of its own, in a copy of the caller's
    context, so its clean-up can finish; closed when that task is cancelled (after
    ``ASYNC_GRACE``, or by the loop's shutdown), so it never holds ``asyncio.run`` up.
    Its answer and exceptions are dropped, and nothing is logged for it (no "Task was
    destroyed but it is pending" when the loop closes first: the timer holds the task
    until then, and it is marked not to complain)."""
    try:
        loop = asyncio.get_running_loop()
        task = loop.create_task(_drain(_Resumed(coro, value, _CLOSING)), context=contextvars.copy_context())
        task._log_destroy_pending = False  # type: ignore[attr-defined]
        timer = loop.call_later(ASYNC_GRACE, task.cancel)
        task.add_done_callback(lambda _: timer.cancel())
    except BaseException:  # noqa: BLE001 - no loop to drive it: it is not driven again
        _close(coro)


async def _drain(rest: _Resumed) -> None:
    try:
        await rest
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - the abandoned hook's own business, and our closing it
        pass


def _wake(waiter) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def acall(
    hook_id: str,
    fn: Callable[..., Any],
    args: tuple = (),
    kwargs: Optional[dict] = None,
    *,
    validate: Validator,
    timeout: Optional[float] = None,
) -> Outcome:
    """Call a sync or async hook under the contract. Never raises, except
    KeyboardInterrupt and the cancellation of the calling task."""
    kwargs = kwargs or {}
    start = perf_counter()
    try:
        if timeout and not _is_async(fn):
            result = await _run_sync_in_pool(hook_id, fn, args, kwargs, validate, timeout, start)
            if type(result) is Outcome:  # judged on the worker, its end against its deadline too
                return result
        else:
            result = fn(*args, **kwargs)
        if type(result) is _COROUTINE:  # exactly a coroutine: no code of another awaitable runs here
            # Run the first step now: most gates return without ever suspending, and
            # those need no timer (arming asyncio.timeout costs ~7 us here).
            try:
                first = result.send(None)
            except StopIteration as stop:
                result = stop.value
            else:
                result = _Resumed(result, first)
        if _awaitable(result):
            if type(result) is not _Resumed:  # any other awaitable: driven the same way
                result = _Resumed(_awaited(result), _UNSTARTED)
            remaining = None
            if timeout:
                remaining = max(timeout - (perf_counter() - start), 0.0)
            deadline = result.deadline = asyncio.timeout(remaining)
            try:
                async with deadline:
                    result = await result
                if deadline.expired():  # the hook swallowed the deadline's cancellation
                    return _failed(hook_id, Failure.TIMEOUT, start)
            except TimeoutError as exc:
                if deadline.expired():
                    return _failed(hook_id, Failure.TIMEOUT, start)
                return _in_time(_failed(hook_id, Failure.RAISED, start, exc), timeout, start)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise
                # the hook cancelled itself: a failure, not our cancellation
                return _in_time(_failed(hook_id, Failure.RAISED, start, asyncio.CancelledError()), timeout, start)
            except KeyboardInterrupt:
                raise
            except BaseException:  # re-raised, unless the hook raised it past its deadline
                if deadline.expired():  # it raised after its deadline
                    return _failed(hook_id, Failure.TIMEOUT, start)
                raise
    except KeyboardInterrupt:
        raise
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise
        return _in_time(_failed(hook_id, Failure.RAISED, start, exc), timeout, start)
    except BaseException as exc:  # noqa: BLE001 - any exception of a hook is RAISED (KeyboardInterrupt re-raised above)
        return _in_time(_failed(hook_id, Failure.RAISED, start, exc), timeout, start)
    outcome = _judge(hook_id, result, validate, start)
    if timeout and outcome.elapsed_ms > timeout * 1000.0:  # it held the loop past its deadline
        return _failed(hook_id, Failure.TIMEOUT, start)
    return outcome
