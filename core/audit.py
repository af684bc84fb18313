"""Audit: one event per gated decision, to stdlib logging (logger ``failsecure``), to a
JSON-lines file when ``[audit] path`` is set, and to ``failsecure_audit`` plugin sinks.

An event carries ids, categories, exception TYPE names and timings. Never the tool
arguments, never ``str(exception)``, never a hook's stderr: events are built only from
our own Outcome fields, which hold none of those.
"""

from __future__ import annotations

import os
import sys
import threading
import time

_file_lock = threading.Lock()


def _dumps(event: dict) -> str:
    import json

    return json.dumps(event, separators=(",", ":"), default=str)


def write_jsonl(path: str, line: str) -> None:
    """Append one line to a JSON-lines file: one write, flushed, flock'd across processes."""
    data = (line + "\n").encode("utf-8")
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
    return {
        "hook": outcome.hook,
        "outcome": outcome.action.value,
        "failure": outcome.failure.value if outcome.failure is not None else None,
        "exception_type": outcome.exception_type,
        "elapsed_ms": round(outcome.elapsed_ms, 3),
    }


def decision_event(decision, *, framework: str, framework_version: str | None, tool: str | None, call_id: str | None) -> dict:
    primary = decision.primary
    return {
        "ts": time.time(),
        "framework": framework,
        "framework_version": framework_version,
        "hook": primary.hook if primary is not None else None,
        "tool": tool if isinstance(tool, str) else None,
        "outcome": decision.action.value,
        "failure": primary.failure.value if primary is not None and primary.failure is not None else None,
        "exception_type": primary.exception_type if primary is not None else None,
        "elapsed_ms": round(sum(o.elapsed_ms for o in decision.outcomes), 3),
        "call_id": call_id if isinstance(call_id, str) else None,
        "outcomes": [outcome_fields(o) for o in decision.outcomes],
    }


def emit(event: dict, audit_path: str | None = None) -> None:
    """Send one event to every sink. Never raises: audit must not flip a decision."""
    try:
        import logging

        logger = logging.getLogger("failsecure")
        level = logging.WARNING if event.get("failure") else logging.INFO
        if logger.isEnabledFor(level):
            logger.log(level, "failsecure decision %s", event.get("outcome"), extra={"failsecure": event})
    except Exception:
        pass
    if audit_path:
        try:
            write_jsonl(audit_path, _dumps(event))
        except Exception as exc:
            print(f"failsecure: cannot write the audit file {audit_path} ({type(exc).__name__})", file=sys.stderr)
    plugins = sys.modules.get("failsecure.plugins")
    if plugins is not None:
        plugins.audit(event)
