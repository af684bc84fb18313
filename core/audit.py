"""Audit: one event per gated decision, to stdlib logging (logger ``failsecure``), to a
JSON-lines file when ``[audit] path`` is set, to ``failsecure_audit`` plugin sinks, and to
OpenTelemetry when ``[audit] otel = true`` (the ``failsecure[otel]`` extra, ``failsecure.otel``).

An event carries ids, categories, exception TYPE names and timings. Never the tool
arguments, never ``str(exception)``, never a hook's stderr: events are built only from
our own Outcome fields, which hold none of those.
"""

from __future__ import annotations

import _thread
import os
import sys
import time

from ._fastjson import dumps as _dumps

# Light on purpose (no threading, no json): the command-hook runner writes through
# write_jsonl on the critical path of a tool call.
_file_lock = _thread.allocate_lock()


def write_jsonl(path: str, event: dict) -> None:
    """Append one event to a JSON-lines file: one write, flushed, flock'd across processes."""
    data = (_dumps(event) + "\n").encode("utf-8")
    with _file_lock:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX)
            except (ImportError, OSError):
                pass
            os.write(fd, data)
        finally:
            os.close(fd)


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


def event(*, framework, framework_version, tool, call_id, outcome, primary, elapsed_ms, outcomes) -> dict:
    """The audit event: the design's fields, from plain values only. ``primary`` is the
    ``entry`` of the outcome that decided (or None)."""
    return {
        "ts": time.time(),
        "framework": framework,
        "framework_version": framework_version,
        "hook": primary["hook"] if primary else None,
        "tool": tool if isinstance(tool, str) else None,
        "outcome": outcome,
        "failure": primary["failure"] if primary else None,
        "exception_type": primary["exception_type"] if primary else None,
        "elapsed_ms": round(elapsed_ms, 3),
        "call_id": call_id if isinstance(call_id, str) else None,
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


def listening(audit_path: str | None, failed: bool) -> bool:
    """Whether any sink would receive an event: skip building one nobody reads."""
    if audit_path:
        return True
    policy = sys.modules.get("failsecure.policy")
    if policy is not None and getattr(policy.current(), "audit_otel", False) and _otel_enabled():
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

#: audit failures counted per sink (an exporter that raised, a full queue): a sink's
#: first failure is reported once on stderr, the rest only counted here
failures: dict = {}


def failed(sink: str, why: str) -> None:
    """Count one failure of an audit sink; report the first on stderr. ``why`` is a type
    name or a fixed phrase, never exception text. Never raises: audit never flips a decision."""
    try:
        count = failures.get(sink, 0) + 1
        failures[sink] = count
        if count == 1:
            from .report import problem

            problem(
                f"failsecure: audit sink '{sink}' failed ({why}); decisions are unaffected, "
                "further failures are only counted (failsecure.audit.failures)",
                level=30,
            )
    except Exception:
        pass


_otel_state: bool | None = None  # None: not tried yet; True: sink registered; False: unavailable
_otel_lock = _thread.allocate_lock()


def _otel_enabled() -> bool:
    """Register the OpenTelemetry sink the first time a config asks for it. The extra
    missing is said once on stderr; decisions are unaffected (audit is not a gate)."""
    global _otel_state
    if _otel_state is None:
        with _otel_lock:
            if _otel_state is None:
                from .report import problem, type_name

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
                except Exception as exc:
                    _otel_state = False
                    problem(f"failsecure: the OpenTelemetry audit sink could not start ({type_name(exc)})")
    return _otel_state


def emit(event: dict, audit_path: str | None = None) -> None:
    """Send one event to every sink. Never raises: audit must not flip a decision."""
    try:
        import logging

        logger = logging.getLogger("failsecure")
        level = _level(bool(event.get("failure")))
        if logger.isEnabledFor(level):
            logger.log(level, "failsecure decision %s", event.get("outcome"), extra={"failsecure": event})
    except Exception:
        pass
    if audit_path:
        try:
            write_jsonl(audit_path, event)
        except Exception as exc:
            print(f"failsecure: cannot write the audit file {audit_path} ({type(exc).__name__})", file=sys.stderr)
    plugins = sys.modules.get("failsecure.plugins")
    if plugins is not None:
        plugins.audit(event)
