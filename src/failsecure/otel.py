"""OpenTelemetry audit sink: the ``failsecure[otel]`` extra (opentelemetry-api and -sdk).

Each gated decision becomes

- a log record (event name ``failsecure.decision``, body ``failsecure decision <outcome>``,
  severity INFO, WARN when a hook failed) with the audit fields as attributes, emitted
  through the process's LoggerProvider (or the one given to ``Sink``) and carrying the
  trace context of the tool call;
- a span event ``failsecure.decision`` with the same attributes on the current span, when
  one is recording: a denied tool call shows inside the agent's own trace.

Only the fields named in ``FIELDS`` and ``OUTCOME_FIELDS`` are copied, and only plain
values (str, int, float, bool): never the tool arguments, exception text or a hook's
output. The audit event holds none of those, and nothing else is read.

The sink takes each decision on the tool call's own thread (``failsecure.audit`` calls
``inline``; the sink's ``failsecure_audit`` hook does the same when called by other code),
and the tool call never waits on an exporter. The span event is an in-memory append to
the span (spans are exported when they end, by the application's span processor). The
log record is emitted at once when the provider cannot block (the SDK's LoggerProvider
whose processors are all ``BatchLogRecordProcessor``: an in-memory append); otherwise it
goes into a bounded queue that one daemon thread drains into the LoggerProvider, and when
the queue is full (an exporter hanging behind a synchronous processor) the record is
dropped. Either way a flush of the application's provider includes every decision made
before it: the sink wraps the provider's ``force_flush`` and ``shutdown`` so that they
first drain the sink's queue (at most ``FLUSH_BOUND`` seconds, within their own timeout).
Every failure (a full queue, a provider that raised) is counted in
``failsecure.audit.failures["otel"]``, and the first is said once on stderr.

Enabled by config, ``[audit] otel = true`` (``failsecure.audit`` registers the sink the
first time a config in force asks for it), or by hand::

    from failsecure import otel, plugins
    plugins.register(otel.Sink(logger_provider=my_provider), name="my-otel")
"""

from __future__ import annotations

import atexit
import collections
import os
import sys
import threading
import time
import weakref
from typing import Any, Optional

from opentelemetry import context as _context
from opentelemetry import trace as _trace
from opentelemetry._logs import LogRecord, SeverityNumber, get_logger_provider

from . import audit
from .plugins import hookimpl, register
from .report import problem, type_name

#: the sink's name in ``failsecure.audit.failures`` and in its stderr line
NAME = "otel"
#: the plugin name the config-enabled sink is registered under
PLUGIN_NAME = "failsecure.otel"
#: the log record's event name and the span event's name
EVENT_NAME = "failsecure.decision"
#: the instrumentation scope of the log records
SCOPE = "failsecure"
#: log records waiting for the exporter; beyond this they are dropped (and counted)
QUEUE_SIZE = 2048
#: seconds the interpreter's exit waits for queued records to reach the LoggerProvider
EXIT_FLUSH = 2.0
#: at most this many seconds of a provider's ``force_flush``/``shutdown`` go to draining
#: the sink's queue into it first
FLUSH_BOUND = 5.0

#: the event's own fields, copied as ``failsecure.<field>`` when plain and present
FIELDS = ("framework", "framework_version", "hook", "tool", "outcome", "failure", "exception_type", "elapsed_ms", "call_id")
#: each consulted hook's fields, copied as parallel arrays ``failsecure.outcomes.<field>``
OUTCOME_FIELDS = ("hook", "outcome", "failure", "exception_type", "elapsed_ms")
#: the OpenTelemetry GenAI semantic-convention names, set beside ours for correlation
GEN_AI = {"tool": "gen_ai.tool.name", "call_id": "gen_ai.tool.call.id"}

_OUTCOMES = ("allow", "deny", "ask", "abstain")


def _plain(value: Any) -> bool:
    return type(value) in (str, int, float, bool)


def attributes(event: dict) -> dict:
    """The audit event as OpenTelemetry attributes: the documented fields only, plain
    values only; an absent or None field is left out (``outcomes`` arrays use ``""``
    and ``0.0`` for an absent value, so the arrays stay parallel)."""
    attrs: dict = {}
    for key in FIELDS:
        value = event.get(key)
        if _plain(value):
            attrs["failsecure." + key] = value
            alias = GEN_AI.get(key)
            if alias is not None:
                attrs[alias] = value
    outcomes = event.get("outcomes")
    if type(outcomes) is list:
        rows = [row for row in outcomes if type(row) is dict]
        attrs["failsecure.outcomes.count"] = len(rows)
        for key in OUTCOME_FIELDS:
            if key == "elapsed_ms":
                attrs["failsecure.outcomes.elapsed_ms"] = [
                    float(row[key]) if type(row.get(key)) in (int, float) else 0.0 for row in rows
                ]
            else:
                attrs[f"failsecure.outcomes.{key}"] = [row[key] if type(row.get(key)) is str else "" for row in rows]
    return attrs


def _ns(ts: Any) -> int:
    return int(ts * 1e9) if type(ts) in (int, float) else time.time_ns()


class Sink:
    """A ``failsecure_audit`` plugin that sends each decision to OpenTelemetry.

    ``logger_provider``: where log records go (default: the process's global provider,
    looked up at each emission, so one set after failsecure started is used).
    ``span_events``: also add the decision to the current span. ``only_when_configured``:
    skip decisions whose config in force has ``[audit] otel`` off (the config-enabled sink)."""

    def __init__(self, logger_provider: Any = None, *, span_events: bool = True, queue_size: int = QUEUE_SIZE,
                 only_when_configured: bool = False):
        self._provider = logger_provider
        self.span_events = span_events
        self.queue_size = queue_size
        self._only_when_configured = only_when_configured
        self._queue: collections.deque = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._busy = False
        self._thread: Optional[threading.Thread] = None
        self._logger: Any = None
        self._logger_of: Any = None
        self._warned_no_provider = False
        self._direct: tuple = (None, None, False)  # (provider, its processors, emit on the caller's thread)
        self._hooked: list = []  # providers whose force_flush/shutdown drain this sink first
        _sinks.add(self)
        if hasattr(os, "register_at_fork"):
            ref = weakref.ref(self)

            def after_in_child() -> None:
                sink = ref()
                if sink is not None:
                    sink._after_fork()

            os.register_at_fork(after_in_child=after_in_child)

    # ------------------------------------------------------------ the hook (the tool call's thread)

    @hookimpl
    def failsecure_audit(self, event: dict) -> None:
        """Never raises, never waits on an exporter. On failsecure's own audit writer
        thread it does nothing: ``failsecure.audit`` gave this sink the event on the tool
        call's thread already (``inline``)."""
        if audit.on_writer():
            return
        self.take(event)

    def take(self, event: dict) -> None:
        """One decision, on the caller's thread: never raises, never waits on an exporter."""
        if self._only_when_configured and not _configured():
            return
        try:
            attrs = attributes(event)
            ts = _ns(event.get("ts"))
            ctx = _context.get_current()
            outcome = event.get("outcome")
            item = (attrs, bool(event.get("failure")), ts, ctx, outcome if outcome in _OUTCOMES else None)
        except Exception as exc:  # noqa: BLE001 - an OpenTelemetry sink failure: counted by audit.failed(), never flips a decision
            audit.failed(NAME, type_name(exc))
            return
        if self.span_events:
            try:
                span = _trace.get_current_span(ctx)
                if span.is_recording():
                    span.add_event(EVENT_NAME, attrs, ts)
            except Exception as exc:  # noqa: BLE001 - an OpenTelemetry sink failure: counted by audit.failed(), never flips a decision
                audit.failed(NAME, f"span event: {type_name(exc)}")
        try:
            provider = self._provider if self._provider is not None else get_logger_provider()
            if not any(p is provider for p in self._hooked):
                self._hook(provider)
            if not self._queue and not self._busy and self._emits_directly(provider):
                self._emit(*item, provider=provider)  # an in-memory append: part of any flush from now on
                return
        except Exception as exc:  # noqa: BLE001 - an OpenTelemetry sink failure: counted by audit.failed(), never flips a decision
            audit.failed(NAME, type_name(exc))
            return
        self._put(item)

    def _emits_directly(self, provider: Any) -> bool:
        """Whether a record can be emitted on the caller's thread without any wait: the
        SDK's own LoggerProvider, processors called in turn, each the SDK's batching one
        (its on_emit appends to a bounded in-memory queue). Cached per processor tuple."""
        multi = getattr(provider, "_multi_log_record_processor", None)
        processors = getattr(multi, "_log_record_processors", None)
        cached = self._direct
        if cached[0] is provider and cached[1] is processors:
            return cached[2]
        ok = False
        try:
            from opentelemetry.sdk._logs import LoggerProvider as SdkProvider
            from opentelemetry.sdk._logs._internal import SynchronousMultiLogRecordProcessor
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

            ok = (
                type(provider) is SdkProvider
                and type(multi) is SynchronousMultiLogRecordProcessor
                and type(processors) is tuple
                and all(type(p) is BatchLogRecordProcessor for p in processors)
            )
        except Exception:  # noqa: BLE001 - an unknown provider: take the queued path, which is always correct
            ok = False
        self._direct = (provider, processors, ok)
        return ok

    def _hook(self, provider: Any) -> None:
        """Make the provider's ``force_flush`` and ``shutdown`` drain this sink's queue
        into it first (bounded), so that a flush right after a tool call includes its
        decision. A provider that does not take the attribute is left as it is."""
        self._hooked.append(provider)
        ref = weakref.ref(self)
        for name in ("force_flush", "shutdown"):
            original = getattr(provider, name, None)
            if not callable(original):
                continue
            try:
                setattr(provider, name, _draining(ref, original, name == "force_flush"))
            except Exception:  # noqa: BLE001 - a provider we cannot wrap keeps its own flush; the queue still drains at exit
                pass

    def _put(self, item: tuple) -> None:
        with self._cond:
            full = len(self._queue) >= self.queue_size
            if not full:
                self._queue.append(item)
                self._cond.notify()
                if self._thread is None or not self._thread.is_alive():
                    self._start()
        if full:
            audit.failed(NAME, "queue full: the log exporter is slow or hanging, records are dropped")

    def _start(self) -> None:
        thread = threading.Thread(target=self._run, name="failsecure-otel", daemon=True)
        thread.start()
        self._thread = thread

    # ------------------------------------------------------------ the worker

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                item = self._queue.popleft()
                self._busy = True
            try:
                self._emit(*item)
            except Exception as exc:  # noqa: BLE001 - an OpenTelemetry sink failure: counted by audit.failed(), the writer keeps going
                audit.failed(NAME, type_name(exc))
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _emit(self, attrs: dict, failed: bool, ts: int, ctx: Any, outcome: Optional[str], provider: Any = None) -> None:
        if provider is None:
            provider = self._provider if self._provider is not None else get_logger_provider()
        if self._logger is None or self._logger_of is not provider:
            if self._provider is None:
                self._check_provider(provider)
            self._logger = provider.get_logger(SCOPE, _version())
            self._logger_of = provider
        self._logger.emit(
            LogRecord(
                timestamp=ts,
                context=ctx,
                severity_number=SeverityNumber.WARN if failed else SeverityNumber.INFO,
                severity_text="WARN" if failed else "INFO",
                body=f"failsecure decision {outcome or 'unknown'}",
                attributes=attrs,
                event_name=EVENT_NAME,
            )
        )

    def _check_provider(self, provider: Any) -> None:
        """Say once when the process has no LoggerProvider yet: records would go nowhere."""
        if self._warned_no_provider or type(provider).__name__ not in ("ProxyLoggerProvider", "NoOpLoggerProvider"):
            return
        internal = sys.modules.get("opentelemetry._logs._internal")
        if type(provider).__name__ == "ProxyLoggerProvider" and getattr(internal, "_LOGGER_PROVIDER", None) is not None:
            return
        self._warned_no_provider = True
        problem(
            "failsecure: [audit] otel is on, but this process has no OpenTelemetry LoggerProvider yet: "
            "decision log records go nowhere until one is set (span events still reach the current span)",
            level=30,
        )

    # ------------------------------------------------------------ control

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait (at most ``timeout`` seconds) until every queued record was handed to the
        LoggerProvider. True when the queue is empty. (The provider's own processors
        export on their schedule: call its ``force_flush`` to push them out.)"""
        deadline = time.monotonic() + timeout
        if self._thread is not None and threading.get_ident() == self._thread.ident:
            return not self._queue and not self._busy  # the worker itself (an exporter flushing): no wait
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def pending(self) -> int:
        return len(self._queue)

    def _after_fork(self) -> None:
        """In a forked child: fresh lock and no worker; the parent sends what it queued."""
        self._cond = threading.Condition(threading.Lock())
        self._queue = collections.deque()
        self._busy = False
        self._thread = None


def _draining(ref: Any, original: Any, takes_timeout: bool) -> Any:
    """``original`` (a provider's force_flush or shutdown), after the sink ``ref`` drained
    its queue into the provider: at most ``FLUSH_BOUND`` seconds, and within the timeout
    ``force_flush`` was given (what is spent draining is taken off the provider's share)."""

    def drain_then(*args: Any, **kwargs: Any) -> Any:
        sink = ref()
        if sink is not None:
            bound = FLUSH_BOUND
            timeout: Any = kwargs.get("timeout_millis", args[0] if args else None) if takes_timeout else None
            if type(timeout) in (int, float):
                bound = max(0.0, min(bound, timeout / 1000.0))
            start = time.monotonic()
            try:
                sink.flush(bound)
            except Exception:  # noqa: BLE001 - the application's own flush failure: not ours to report, the exporter's is next
                pass
            if type(timeout) in (int, float):
                left = max(0, int(timeout - (time.monotonic() - start) * 1000.0))
                if "timeout_millis" in kwargs:
                    kwargs["timeout_millis"] = left
                elif args:
                    args = (left,) + args[1:]
        return original(*args, **kwargs)

    drain_then.__wrapped__ = original  # type: ignore[attr-defined]
    return drain_then


#: every Sink made (weakly): ``inline`` and ``flush_all`` find them here
_sinks: "weakref.WeakSet[Sink]" = weakref.WeakSet()


def inline(event: dict) -> bool:
    """``failsecure.audit.emit``'s call on the tool call's thread: every registered
    ``Sink`` takes the decision here. -> whether other audit sinks remain (for the
    writer thread)."""
    others = False
    from . import plugins

    for impl in plugins.manager().hook.failsecure_audit.get_hookimpls():
        plugin = impl.plugin
        if isinstance(plugin, Sink) and not (impl.wrapper or impl.hookwrapper):
            plugin.take(event)
        else:
            others = True
    return others


def flush_all(timeout: float) -> bool:
    """Every sink's ``flush``, within ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    done = True
    for sink in list(_sinks):
        done = sink.flush(max(0.0, deadline - time.monotonic())) and done
    return done


def _configured() -> bool:
    policy = sys.modules.get("failsecure.policy")
    return bool(policy is not None and getattr(policy.current(), "audit_otel", False))


_version_cache: Optional[str] = None


def _version() -> Optional[str]:
    global _version_cache
    if _version_cache is None:
        try:
            from importlib.metadata import version

            _version_cache = version("failsecure")
        except Exception:  # noqa: BLE001 - broken distribution metadata: the version attribute is left out
            _version_cache = ""
    return _version_cache or None


_sink: Optional[Sink] = None
_lock = threading.Lock()


def _reset_lock() -> None:
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_lock)


def enable() -> Sink:
    """Register the config-enabled sink (once): it sends the decisions whose config in
    force has ``[audit] otel = true`` to the process's OpenTelemetry providers."""
    global _sink
    with _lock:
        if _sink is None:
            sink = Sink(only_when_configured=True)
            register(sink, name=PLUGIN_NAME)
            atexit.register(sink.flush, EXIT_FLUSH)
            _sink = sink
    return _sink


def sink() -> Optional[Sink]:
    """The config-enabled sink, or None before a config asked for it."""
    return _sink
