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

The tool call never waits on an exporter. The span event is an in-memory append to the
span (spans are exported when they end, by the application's span processor). The log
record goes into a bounded queue that one daemon thread drains into the LoggerProvider;
when the queue is full (an exporter hanging behind a synchronous processor) the record
is dropped. Every failure (a full queue, a provider that raised) is counted in
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
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork)

    # ------------------------------------------------------------ the hook (the tool call's thread)

    @hookimpl
    def failsecure_audit(self, event: dict) -> None:
        """Never raises, never waits on an exporter."""
        if self._only_when_configured and not _configured():
            return
        try:
            attrs = attributes(event)
            ts = _ns(event.get("ts"))
            ctx = _context.get_current()
            outcome = event.get("outcome")
            item = (attrs, bool(event.get("failure")), ts, ctx, outcome if outcome in _OUTCOMES else None)
        except Exception as exc:
            audit.failed(NAME, type_name(exc))
            return
        if self.span_events:
            try:
                span = _trace.get_current_span(ctx)
                if span.is_recording():
                    span.add_event(EVENT_NAME, attrs, ts)
            except Exception as exc:
                audit.failed(NAME, f"span event: {type_name(exc)}")
        self._put(item)

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
            except Exception as exc:
                audit.failed(NAME, type_name(exc))
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _emit(self, attrs: dict, failed: bool, ts: int, ctx: Any, outcome: Optional[str]) -> None:
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
        self._cond = threading.Condition(threading.Lock())
        self._busy = False
        self._thread = None


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
        except Exception:
            _version_cache = ""
    return _version_cache or None


_sink: Optional[Sink] = None
_lock = threading.Lock()


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
