"""The guarded hook call: run one hook under the contract and return an Outcome.

- Any exception is captured (SystemExit and other BaseExceptions too) as RAISED with its
  type name only; KeyboardInterrupt and the caller's own asyncio cancellation propagate.
- A deadline per call. Async hooks are cancelled at the deadline. Sync hooks run on a
  small worker pool and are abandoned at the deadline (a thread cannot be killed); the
  number of abandoned calls still running is bounded, and once the bound is reached
  further calls with a deadline fail as TIMEOUT at once instead of piling up threads.
- The adapter's validator turns the raw answer into a Verdict inside the same guard, so
  junk or a hostile object (raising ``__bool__``, ``.get``, ``__eq__`` ...) is INVALID.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from _thread import allocate_lock as _allocate_lock
from time import perf_counter
from typing import Any, Callable, Optional

from .report import type_name
from .verdict import Failure, Invalid, Outcome, Verdict

Validator = Callable[[Any], Verdict]

#: Abandoned sync calls allowed to keep running before further deadlined calls fail at once.
MAX_ABANDONED = 32
#: Idle worker threads kept for reuse.
MAX_IDLE = 4


_outcome = Outcome


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
    except BaseException as exc:  # a hostile object tripping the validator
        return _failed(hook, Failure.INVALID, start, exc)
    return _outcome(hook, verdict, None, None, (perf_counter() - start) * 1000.0)


_PLAIN = frozenset({type(None), bool, int, float, str, bytes, dict, list, tuple})


def _awaitable(result: Any) -> bool:
    if type(result) in _PLAIN:
        return False
    try:
        return inspect.isawaitable(result)
    except BaseException:  # a hostile __class__; the validator will judge it
        return False


def _close_awaitable(result: Any) -> None:
    close = getattr(type(result), "close", None)
    if close is not None:
        try:
            close(result)
        except BaseException:
            pass


# ---------------------------------------------------------------- the worker pool


class _Job:
    """Hook calls handed to one worker, run in order. Each call has its own lock,
    released when that call ended, so the caller can wait for each with its own
    deadline; several gates of one tool call cost one thread hand-off, not one each."""

    __slots__ = ("calls", "ctx", "locks", "results", "completed", "state", "notify")

    def __init__(self, calls, notify=None):
        self.calls = calls  # [(fn, args, kwargs)]
        self.ctx = contextvars.copy_context()
        self.locks = []
        for _ in calls:
            lock = _allocate_lock()
            lock.acquire()
            self.locks.append(lock)
        self.results: list = [None] * len(calls)  # (result, exception)
        self.completed = 0
        self.state = "running"  # -> "done" | "abandoned"
        self.notify = notify  # async callers: called once when the job ends


class _Worker:
    __slots__ = ("wake", "job")

    def __init__(self):
        self.wake = _allocate_lock()
        self.wake.acquire()
        self.job: _Job | None = None


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: list[_Worker] = []
        self.abandoned = 0

    def submit(self, job: _Job) -> bool:
        if self.abandoned >= MAX_ABANDONED:
            return False
        try:
            worker = self.idle.pop()  # atomic under the GIL
        except IndexError:
            worker = None
        if worker is None:
            worker = _Worker()
            worker.job = job
            worker.wake.release()
            thread = threading.Thread(target=self._run, args=(worker,), name="failsecure-guard", daemon=True)
            thread.start()
        else:
            worker.job = job
            worker.wake.release()
        return True

    def abandon(self, job: _Job, index: int) -> bool:
        """Give up on call ``index`` of a job at its deadline (the worker starts none of
        the later calls). False if that call ended in the meantime."""
        with self.lock:
            if job.completed > index:
                return False
            job.state = "abandoned"
            self.abandoned += 1
            return True

    def _run(self, worker: _Worker) -> None:
        while True:
            worker.wake.acquire()
            job = worker.job
            worker.job = None
            assert job is not None  # set before every wake
            last_index = len(job.calls) - 1
            keep = True
            for index, (fn, args, kwargs) in enumerate(job.calls):
                result: tuple
                try:
                    result = job.ctx.run(fn, *args, **kwargs), None
                except BaseException as exc:  # handed to the caller, KeyboardInterrupt included
                    result = None, exc
                job.results[index] = result
                with self.lock:
                    stop = job.state == "abandoned"
                    if stop:
                        self.abandoned -= 1
                    else:
                        job.completed = index + 1
                        if index == last_index:
                            job.state = "done"
                    if stop or index == last_index:
                        keep = len(self.idle) < MAX_IDLE
                        if keep:
                            self.idle.append(worker)
                if stop:
                    if _awaitable(result[0]):
                        _close_awaitable(result[0])
                    break
                if index == last_index and job.notify is not None:
                    try:
                        job.notify()
                    except BaseException:
                        pass
                # last, so the caller wakes while this thread is about to block again
                job.locks[index].release()
            if not keep:
                return


_pool = _Pool()


def abandoned_calls() -> int:
    """How many abandoned sync hook calls are still running."""
    return _pool.abandoned


# ---------------------------------------------------------------- sync


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
    except BaseException as exc:
        return _failed(hook_id, Failure.RAISED, start, exc)
    return _finish_sync(hook_id, result, None, validate, start)


def call_each(calls: list) -> list[Outcome]:
    """Call several sync hooks in order, each under the contract with its own deadline:
    ``calls`` is a list of ``(hook_id, fn, args, kwargs, validate, timeout)``. The ones
    with deadlines share one hand-off to a worker; a hook that misses its deadline is
    abandoned and the hooks after it go on in a fresh worker."""
    outcomes: list[Outcome] = []
    pending = list(calls)
    while pending:
        if not any(c[5] for c in pending):
            outcomes.extend(call(h, fn, a, k, validate=v) for h, fn, a, k, v, _ in pending)
            break
        job = _Job([(fn, a or (), k or {}) for _, fn, a, k, _, _ in pending])
        start = perf_counter()
        if not _pool.submit(job):
            outcomes.extend(_failed(c[0], Failure.TIMEOUT, start) for c in pending)
            break
        rest: list = []
        for index, (hook_id, _, _, _, validate, timeout) in enumerate(pending):
            if not job.locks[index].acquire(timeout=timeout or -1) and _pool.abandon(job, index):
                outcomes.append(_failed(hook_id, Failure.TIMEOUT, start))
                rest = pending[index + 1 :]
                break
            result, exc = job.results[index]
            outcomes.append(_finish_sync(hook_id, result, exc, validate, start))
            start = perf_counter()
        pending = rest
    return outcomes


# ---------------------------------------------------------------- async


_CO_COROUTINE = inspect.CO_COROUTINE


def _is_async(fn: Any) -> bool:
    """inspect.iscoroutinefunction, with a fast path for plain functions and methods."""
    code = getattr(fn, "__code__", None)
    if code is not None and type(code) is type(_is_async.__code__):
        return bool(code.co_flags & _CO_COROUTINE)
    return inspect.iscoroutinefunction(fn)


class _Resumed:
    """The rest of a coroutine whose first step already ran and yielded ``first``:
    awaiting it drives the coroutine on exactly as ``await coro`` would have (values
    sent and exceptions thrown in by the Task, the deadline's cancellation included,
    are passed through)."""

    __slots__ = ("coro", "first")

    def __init__(self, coro, first):
        self.coro, self.first = coro, first

    def __await__(self):
        coro, value = self.coro, self.first
        while True:
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    value = coro.throw(exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    value = coro.send(sent)
                except StopIteration as stop:
                    return stop.value



async def _run_sync_in_pool(hook_id: str, fn, args, kwargs, timeout: float, start: float):
    """A sync hook from an async dispatcher, with a deadline: run on the pool, awaited
    without blocking the loop. -> an Outcome (failure) or the hook's raw result."""
    loop = asyncio.get_running_loop()
    waiter = loop.create_future()

    def notify() -> None:
        def wake() -> None:
            if not waiter.done():
                waiter.set_result(None)

        loop.call_soon_threadsafe(wake)

    job = _Job([(fn, args, kwargs)], notify)
    if not _pool.submit(job):
        return _failed(hook_id, Failure.TIMEOUT, start)
    try:
        await asyncio.wait_for(asyncio.shield(waiter), timeout)
    except asyncio.TimeoutError:
        if _pool.abandon(job, 0):
            return _failed(hook_id, Failure.TIMEOUT, start)
    except asyncio.CancelledError:
        _pool.abandon(job, 0)
        raise
    job.locks[0].acquire()
    result, exc = job.results[0]
    if exc is not None:
        if issubclass(type(exc), KeyboardInterrupt):  # never isinstance: a hostile __class__
            raise exc
        return _failed(hook_id, Failure.RAISED, start, exc)
    return _Ran(result)


class _Ran:
    __slots__ = ("result",)

    def __init__(self, result):
        self.result = result


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
            ran = await _run_sync_in_pool(hook_id, fn, args, kwargs, timeout, start)
            if isinstance(ran, Outcome):
                return ran
            result = ran.result
        else:
            result = fn(*args, **kwargs)
        if _awaitable(result) and inspect.iscoroutine(result):
            # Run the first step now: most gates return without ever suspending, and
            # those need no timer (arming asyncio.timeout costs ~7 us here).
            try:
                first = result.send(None)
            except StopIteration as stop:
                result = stop.value
            else:
                result = _Resumed(result, first)
        if _awaitable(result):
            remaining = None
            if timeout:
                remaining = max(timeout - (perf_counter() - start), 0.0)
            deadline = asyncio.timeout(remaining)
            try:
                async with deadline:
                    result = await result
                if deadline.expired():  # the hook swallowed the deadline's cancellation
                    return _failed(hook_id, Failure.TIMEOUT, start)
            except TimeoutError as exc:
                if deadline.expired():
                    return _failed(hook_id, Failure.TIMEOUT, start)
                return _failed(hook_id, Failure.RAISED, start, exc)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise
                # the hook cancelled itself: a failure, not our cancellation
                return _failed(hook_id, Failure.RAISED, start, asyncio.CancelledError())
    except KeyboardInterrupt:
        raise
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise
        return _failed(hook_id, Failure.RAISED, start, exc)
    except BaseException as exc:
        return _failed(hook_id, Failure.RAISED, start, exc)
    return _judge(hook_id, result, validate, start)
