"""Audit: one event per gated decision, to stdlib logging (logger ``failsecure``), to a
JSON-lines file when ``[audit] path`` is set, to ``failsecure_audit`` plugin sinks, and to
OpenTelemetry when ``[audit] otel = true`` (the ``failsecure[otel]`` extra, ``failsecure.otel``).

An event carries ids, categories, exception TYPE names and timings. Never the tool
arguments, never ``str(exception)``, never a hook's stderr: events are built only from
our own Outcome fields, which hold none of those.

The decision is final before it is audited, and the tool call never waits on a sink.
The file and the plugin sinks are each fed through a bounded queue that one daemon
writer thread drains, in order (a "lane": the file's, the plugins'; a plugin sink that
hangs does not hold the file back). The file is opened without blocking (a FIFO with no
reader fails at once) and its ``flock`` is waited for at most ``LOCK_WAIT`` seconds. A
full queue drops the event (counted in ``dropped``; said once on stderr). ``flush``
waits, bounded, until everything queued was handed on; so does the interpreter's exit
(``EXIT_FLUSH``). The OpenTelemetry sinks take the decision on the tool call's own
thread (``failsecure.otel.inline``: never blocking) so that span events and trace context
are the call's. The stdlib logger's record is made on the tool call's thread (its time,
thread and process are the call's) and handed to the application's handlers on a third
lane ("log"), in a copy of the call's context: a handler that blocks (a stuck pipe, a lock
that 500 threads contend for) holds up no tool call and no event loop.
"""

from __future__ import annotations

import _thread
import os
import stat
import sys
import time
from typing import Any

from ._fastjson import dumps as _dumps

# Light on purpose (no threading, no json at import): the command-hook runner writes
# through write_jsonl on the critical path of a tool call. The writer threads (and
# ``threading``) start with the first queued event, which only a gated call makes.

#: events waiting in one lane (the file's, the plugin sinks'); beyond this they are
#: dropped and counted in ``dropped``
QUEUE_SIZE = 10000
#: seconds a writer thread waits for the audit file's lock (another process holding it)
#: before it appends without it (one O_APPEND write per batch)
LOCK_WAIT = 2.0
#: the same bound for ``write_jsonl`` on the caller's own thread (the command-hook runner)
SYNC_LOCK_WAIT = 0.25
#: seconds the interpreter's exit waits for queued events to be written
EXIT_FLUSH = 2.0
#: seconds a woken writer lets further events gather before it takes them: a burst of
#: decisions becomes one batch (one open, lock and write) and one wake-up, not one each
GATHER = 0.002

_file_lock = _thread.allocate_lock()
_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0)


def _flock(fd: int, deadline: float) -> bool:
    """An exclusive flock on ``fd``, waited for until ``deadline`` (monotonic). False when
    it was not had (held elsewhere past the deadline, or no flock here)."""
    try:
        import fcntl
    except ImportError:
        return False
    delay = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.02)
        except OSError:
            return False


def _append(path: str, data: bytes, wait: float, block: bool = False) -> None:
    """Append ``data`` to ``path``: one open that never blocks (a FIFO without a reader
    raises ENXIO at once), the flock waited for at most ``wait`` seconds, then the whole
    ``data`` written. On a FIFO or a device ``block`` makes the writes blocking (a writer
    thread's, never a tool call's); otherwise a full pipe past ``wait`` raises."""
    deadline = time.monotonic() + wait
    lock = _file_lock
    locked = lock.acquire(True, wait)  # a writer stuck on a FIFO must not hold us forever
    try:
        fd = os.open(path, _OPEN_FLAGS, 0o600)
        try:
            special = not stat.S_ISREG(os.fstat(fd).st_mode)
            if special and block:
                os.set_blocking(fd, True)
            _flock(fd, deadline)
            view = memoryview(data)
            while view:
                try:
                    written = os.write(fd, view)
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.001)
                    continue
                view = view[written:]
        finally:
            os.close(fd)
    finally:
        if locked:
            lock.release()


def write_jsonl(path: str, event: dict, wait: float = SYNC_LOCK_WAIT) -> None:
    """Append one event to a JSON-lines file now, on the caller's thread: one write,
    flock'd across processes; never waits more than ``wait`` seconds for a lock or a
    full pipe, and never on opening (a FIFO without a reader raises ENXIO)."""
    _append(path, (_dumps(event) + "\n").encode("utf-8"), wait)


def outcome_fields(outcome) -> dict:
    return entry(
        outcome.hook,
        outcome.action.value,
        outcome.failure.value if outcome.failure is not None else None,
        outcome.exception_type,
        outcome.elapsed_ms,
    )


def entry(hook, outcome, failure, exception_type, elapsed_ms) -> dict:
    """One hook's line in an event's ``outcomes``: its own answer, before policy."""
    return {
        "hook": hook,
        "outcome": outcome,
        "failure": failure,
        "exception_type": exception_type,
        "elapsed_ms": round(elapsed_ms, 3),
    }


def _text(value):
    """A str as a plain str (a subclass's own methods never reach a sink), else None."""
    if type(value) is str:
        return value
    return str.__str__(value) if isinstance(value, str) else None


def event(*, framework, framework_version, tool, call_id, outcome, primary, elapsed_ms, outcomes) -> dict:
    """The audit event: the design's fields, from plain values only. ``primary`` is the
    ``entry`` of the outcome that decided (or None)."""
    return {
        "ts": time.time(),
        "framework": framework,
        "framework_version": framework_version,
        "hook": primary["hook"] if primary else None,
        "tool": _text(tool),
        "outcome": outcome,
        "failure": primary["failure"] if primary else None,
        "exception_type": primary["exception_type"] if primary else None,
        "elapsed_ms": round(elapsed_ms, 3),
        "call_id": _text(call_id),
        "outcomes": outcomes,
    }


def decision_event(decision, *, framework: str, framework_version: str | None, tool: str | None, call_id: str | None) -> dict:
    outcomes = [outcome_fields(o) for o in decision.outcomes]
    primary = decision.primary
    return event(
        framework=framework,
        framework_version=framework_version,
        tool=tool,
        call_id=call_id,
        outcome=decision.action.value,
        primary=outcomes[decision.outcomes.index(primary)] if primary is not None else None,
        elapsed_ms=sum(o.elapsed_ms for o in decision.outcomes),
        outcomes=outcomes,
    )


def _level(failed: bool) -> int:
    return 30 if failed else 20  # logging.WARNING, logging.INFO


def listening(audit_path: str | None, failed: bool, otel: bool | None = None) -> bool:
    """Whether any sink would receive an event: skip building one nobody reads. ``otel``:
    the config's ``[audit] otel`` (looked up when not given); it registers the
    OpenTelemetry sink the first time, whatever other sink listens too."""
    if otel is None:
        policy = sys.modules.get("failsecure.policy")
        otel = policy is not None and getattr(policy.current(), "audit_otel", False)
    if otel and _otel_state is not False and _otel_enabled():
        return True
    if audit_path:
        return True
    plugins = sys.modules.get("failsecure.plugins")
    if plugins is not None and plugins.has_audit_sinks():
        return True
    global _logger
    if _logger is None:
        logging = sys.modules.get("logging")
        if logging is None:
            return False
        _logger = logging.getLogger("failsecure")
    level = _level(failed)
    if not _logger.isEnabledFor(level):
        return False
    logger = _logger  # a handler other than the library's NullHandler, up the chain
    while logger is not None:
        for handler in logger.handlers:
            if type(handler).__name__ != "NullHandler" and level >= handler.level:
                return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


_logger = None

#: audit failures counted per sink (an exporter that raised, a full queue, a file that
#: cannot be written): a sink's first failure is reported once on stderr, the rest only
#: counted here
failures: dict = {}
#: events dropped per lane ("file", "plugins"): a full queue, a file that cannot be written
dropped: dict = {}


def failed(sink: str, why: str, message: str | None = None) -> None:
    """Count one failure of an audit sink; report the first on stderr. ``why`` is a type
    name or a fixed phrase, never exception text (``message``: the whole first line, built
    from the same). Never raises: audit never flips a decision."""
    try:
        count = failures.get(sink, 0) + 1
        failures[sink] = count
        if count == 1:
            from .report import problem

            problem(
                (message or f"failsecure: audit sink '{sink}' failed ({why})")
                + "; decisions are unaffected, further failures are only counted (failsecure.audit.failures)",
                level=30,
            )
    except Exception:  # noqa: BLE001 - the failure report itself must never raise: audit never flips a decision
        pass


def _drop(lane: str, count: int, why: str, message: str | None = None) -> None:
    dropped[lane] = dropped.get(lane, 0) + count
    failed(lane, why, message)


def _why(exc: BaseException) -> str:
    """A fixed description of an exception: its type, and an OSError's errno name."""
    import errno

    name = type(exc).__name__
    code = getattr(exc, "errno", None)
    if isinstance(exc, OSError) and isinstance(code, int):
        if code == errno.ENXIO:
            return f"{name} ENXIO: a FIFO with no reader"
        return f"{name} {errno.errorcode.get(code, code)}"
    return name


class _Lane:
    """A bounded queue and the one daemon thread that hands its items, in order and in
    batches, to ``handle``. ``put`` never blocks and takes no lock while the writer is
    busy (a deque append); ``wait`` is bounded."""

    def __init__(self, name: str, handle):
        self.name = name
        self.handle = handle
        self.reset()

    def reset(self) -> None:
        """A fresh lane (after a fork: the parent writes what it had queued)."""
        import collections

        self.items: Any = collections.deque()
        self.busy = False
        self.waiting = False
        self.alive = False
        self.ident: Any = None
        self.cond: Any = None  # wakes the writer
        self.done: Any = None  # wakes those waiting in flush

    def put(self, item) -> bool:
        if _exited:  # after the exit flush nobody waits for the writer: the caller hands it on itself
            return False
        cond = self.cond
        if cond is None or not self.alive:
            cond = self._start()
            if cond is None:
                return False
        items = self.items
        if len(items) >= QUEUE_SIZE:
            _drop(self.name, 1, "queue full", f"failsecure: the audit {self.name} queue is full ({QUEUE_SIZE} events: a sink is slow or stuck), events are dropped")
            return True
        items.append(item)
        if self.waiting:  # set under the lock before the writer's last look at the queue
            with cond:
                cond.notify()
        return True

    def _start(self):
        with _start_lock:
            if self.cond is not None and self.alive:
                return self.cond
            try:
                import threading

                if self.cond is None:
                    lock = threading.Lock()
                    self.cond, self.done = threading.Condition(lock), threading.Condition(lock)
                self.alive = True
                threading.Thread(target=self._run, name=f"failsecure-audit-{self.name}", daemon=True).start()
            except Exception:  # noqa: BLE001 - no thread now (interpreter shutdown): the caller decides
                self.alive = False
                return None
            _at_exit()
            return self.cond

    def _run(self) -> None:
        cond, items = self.cond, self.items
        self.ident = _thread.get_ident()
        try:
            while True:
                if not items:
                    with cond:
                        self.waiting = True
                        while not items:
                            cond.wait(1.0)
                        self.waiting = False
                    time.sleep(GATHER)  # the producers only append meanwhile: a burst is one batch
                self.busy = True
                batch = [items.popleft() for _ in range(len(items))]
                try:
                    self.handle(batch)
                except BaseException as exc:  # noqa: BLE001 - a sink's SystemExit too: counted by failed(), the lane keeps going
                    failed(self.name, type(exc).__name__)
                finally:
                    self.busy = False
                    if not items:
                        with cond:
                            self.done.notify_all()
        finally:
            self.alive = False

    def wait(self, deadline: float) -> bool:
        """Until the queue is empty and the writer idle, or ``deadline`` (monotonic)."""
        done = self.done
        if done is None:
            return True
        if _thread.get_ident() == self.ident:
            return not self.items and not self.busy
        with done:
            while self.items or self.busy:
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive:
                    return False
                done.wait(min(left, 0.05))
        return True

    def pending(self) -> int:
        return len(self.items) + (1 if self.busy else 0)


def _write_batch(batch: list, wait: float = LOCK_WAIT, block: bool = True) -> None:
    """The file lane: consecutive lines to one path in one write. (The lines were made on
    the tool call's thread: this thread mostly waits in system calls, without the GIL.)"""
    i, n = 0, len(batch)
    while i < n:
        path = batch[i][0]
        lines = []
        while i < n and batch[i][0] == path:
            lines.append(batch[i][1])
            i += 1
        try:
            _append(path, b"".join(lines), wait, block)
        except Exception as exc:  # noqa: BLE001 - any write failure drops the lines, counted and said once (_drop)
            why = _why(exc)
            _drop("file", len(lines), why, f"failsecure: cannot write the audit file {path} ({why})")


def _sink_batch(batch: list) -> None:
    """The plugins lane: every ``failsecure_audit`` sink, in the tool call's context."""
    plugins = sys.modules.get("failsecure.plugins")
    if plugins is None:
        return
    for event, context in batch:
        event = dict(event)  # the sinks' own copy (of the rows too): the caller keeps its event
        if type(event.get("outcomes")) is list:
            event["outcomes"] = [dict(row) if type(row) is dict else row for row in event["outcomes"]]
        try:
            if context is not None:
                context.run(plugins.audit, event)
            else:
                plugins.audit(event)
        except Exception as exc:  # noqa: BLE001 - a plugin sink's own exception: counted by failed(), never flips a decision
            failed("plugins", type(exc).__name__)


def _log_batch(batch: list) -> None:
    """The log lane: each record to the ``failsecure`` logger's handlers (``Logger.handle``:
    its filters, then every handler up the chain), in the tool call's context."""
    for logger, record, context in batch:
        try:
            context.run(logger.handle, record)
        except Exception as exc:  # noqa: BLE001 - an application log handler's own exception: counted by failed(), never flips a decision
            failed("log", type(exc).__name__)


_start_lock = _thread.allocate_lock()
_file_lane = _Lane("file", _write_batch)
_plugins_lane = _Lane("plugins", _sink_batch)
_log_lane = _Lane("log", _log_batch)
_exit_registered = False
#: the exit flush ran: an exit handler registered before it (atexit: last in, first out)
#: decides after it, and the writers are stopped by the finalization before they hand
#: anything on, so the lanes take nothing more (``put``: False, the caller's way out)
_exited = False


def _at_exit() -> None:
    global _exit_registered
    if not _exit_registered:
        _exit_registered = True
        import atexit

        atexit.register(_exit_flush)


def _exit_flush() -> None:
    global _exited
    try:
        flush(EXIT_FLUSH)
    finally:
        _exited = True


def on_writer() -> bool:
    """True on the plugin sinks' writer thread (``failsecure.otel`` skips the events it
    already took on the tool call's thread)."""
    return _thread.get_ident() == _plugins_lane.ident


def flush(timeout: float = 5.0) -> bool:
    """Wait at most ``timeout`` seconds until every event emitted before was handed to its
    sinks: written to the file, given to the plugin sinks, and by the OpenTelemetry sinks
    to their LoggerProvider. True when nothing is left queued. Tests read the audit file
    after it; the interpreter's exit calls it (``EXIT_FLUSH``)."""
    deadline = time.monotonic() + timeout
    done = _file_lane.wait(deadline)
    done = _plugins_lane.wait(deadline) and done
    done = _log_lane.wait(deadline) and done
    otel = sys.modules.get("failsecure.otel")
    if otel is not None:
        try:
            done = otel.flush_all(max(0.0, deadline - time.monotonic())) and done
        except Exception:  # noqa: BLE001 - an OpenTelemetry flush failure: reported as not flushed
            done = False
    return done


def status() -> dict:
    """What is queued, dropped and failed so far, per lane and sink (never an event)."""
    return {
        "queued": {"file": _file_lane.pending(), "plugins": _plugins_lane.pending(), "log": _log_lane.pending()},
        "dropped": dict(dropped),
        "failures": dict(failures),
    }


_otel_state: bool | None = None  # None: not tried yet; True: sink registered; False: unavailable
_otel_lock = _thread.allocate_lock()


def _otel_enabled() -> bool:
    """Register the OpenTelemetry sink the first time a config asks for it. The extra
    missing is said once on stderr; decisions are unaffected (audit is not a gate)."""
    global _otel_state
    if _otel_state is None:
        with _otel_lock:
            if _otel_state is None:
                from .report import internal, problem

                try:
                    from . import otel

                    otel.enable()
                    _otel_state = True
                except ImportError as exc:
                    _otel_state = False
                    policy = sys.modules.get("failsecure.policy")
                    where = policy.current().origins.get("audit_otel") if policy is not None else None
                    problem(
                        f"failsecure: [audit] otel = true{f' in {where}' if where else ''}, but the OpenTelemetry extra is not installed "
                        f"(missing module {getattr(exc, 'name', None) or '?'}): decisions are not sent to OpenTelemetry; "
                        "install it with: pip install 'failsecure[otel]'"
                    )
                except Exception as exc:  # noqa: BLE001 - any failure to start the sink: reported, the sink stays off
                    _otel_state = False
                    internal(exc, "failsecure: the OpenTelemetry audit sink could not start ({type})")
    return _otel_state


def log(logger: Any, level: int, msg: str, args: tuple = (), extra: dict | None = None) -> None:
    """One record of the ``failsecure`` logger, made here (its time, thread and process
    are the caller's) and handed to the application's handlers on the log lane, in a copy
    of the caller's context: a handler that blocks holds up no tool call. Raises what the
    application's record factory raises (the caller's to swallow)."""
    record = logger.makeRecord(logger.name, level, __file__, 0, msg, args, None, extra=extra)
    from contextvars import copy_context

    if not _log_lane.put((logger, record, copy_context())):
        if _log_lane.pending():  # its writer is stuck in a handler (holding its lock): never wait on it
            _drop("log", 1, "the log lane is stuck")
        else:
            logger.handle(record)  # no thread to be had (interpreter exit): here, as logging does


def emit(event: dict, audit_path: str | None = None) -> None:
    """Send one event to every sink. Never raises and never waits on a sink: audit must
    not flip, nor hold up, a decision."""
    try:
        import logging

        logger = logging.getLogger("failsecure")
        level = _level(bool(event.get("failure")))
        if logger.isEnabledFor(level):
            log(logger, level, "failsecure decision %s", (event.get("outcome"),), {"failsecure": event})
    except Exception:  # noqa: BLE001 - a raising log handler or filter of the application: audit never flips a decision
        pass
    plugins = sys.modules.get("failsecure.plugins")
    if plugins is not None:
        try:
            if plugins.has_audit_sinks():
                others = True
                otel = sys.modules.get("failsecure.otel")
                if otel is not None:
                    others = otel.inline(event)
                if others:
                    from contextvars import copy_context

                    if not _plugins_lane.put((event, copy_context())):
                        _drop("plugins", 1, "no writer thread")
        except Exception as exc:  # noqa: BLE001 - a plugin sink's failure: counted by failed(), never flips a decision
            failed("plugins", type(exc).__name__)
    if audit_path:
        try:
            item = (audit_path, (_dumps(event) + "\n").encode("utf-8"))  # the line as it is now
            if not _file_lane.put(item):
                _write_batch([item], SYNC_LOCK_WAIT, False)  # no thread to be had (interpreter exit): bounded, here
        except Exception as exc:  # noqa: BLE001 - a file sink's failure: counted by failed(), never flips a decision
            failed("file", type(exc).__name__)


def _after_fork() -> None:
    """In a forked child: the parent's threads are gone and may have held our locks."""
    global _file_lock, _otel_lock, _start_lock
    _file_lock = _thread.allocate_lock()
    _otel_lock = _thread.allocate_lock()
    _start_lock = _thread.allocate_lock()
    _file_lane.reset()
    _plugins_lane.reset()
    _log_lane.reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
