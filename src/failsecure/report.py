"""Reporting failsecure's own problems: one helper for every internal error.

A problem that can leave a gate open (an adapter that cannot load, a lockdown that
failed, a plugin that did not register, an audit sink that raised) must never be told
only to a logger nobody listens to: it goes to stderr (once per distinct message, so a
per-call problem does not flood the terminal) and to the ``failsecure`` logger. Never
any payload or exception text: callers pass type names only.

failsecure's OWN failures (not a gate's, which are judged) take one idiom,
:func:`internal_error` (after sentry-python's ``capture_internal_exceptions``)::

    with internal_error("failsecure: the OpenTelemetry audit sink could not start ({type})"):
        otel.enable()
        return True
    return False  # the fail-closed value: reached only when the block raised

The block's exception is reported once through :func:`problem` (the ``{type}`` in the
message becomes the exception's type name; its text, which may carry payload, is never
read) and swallowed; the caller goes on to its fail-closed value. Where the caller needs
the exception itself (to audit its type), :func:`internal` reports it the same way.
Every report is also kept in :data:`INTERNAL_ERRORS` (bounded), which the test suite
reads: a test in which an unexpected internal error was reported fails.
"""

from __future__ import annotations

import sys
from collections import deque
from contextlib import contextmanager
from typing import Iterator, NamedTuple

_said: set = set()
_ERROR = 40


class InternalError(NamedTuple):
    """One reported internal error: the message as said, and the exception's type name."""

    message: str
    type: str


#: The internal errors reported so far in this process (the newest 100); tests clear and read it.
INTERNAL_ERRORS: deque[InternalError] = deque(maxlen=100)


def problem(message: str, *, level: int = _ERROR) -> None:
    """Say ``message`` on stderr once per process, and log it every time. Never raises."""
    try:
        if message not in _said:
            _said.add(message)
            err = sys.stderr
            if err is not None:
                err.write(message + "\n")
                err.flush()
    except BaseException:  # noqa: BLE001 - a closed or hostile stderr: the log record below still goes out
        pass
    try:
        logging = sys.modules.get("logging")
        if logging is not None:
            logger = logging.getLogger("failsecure")
            if logger.isEnabledFor(level):
                audit = sys.modules.get("failsecure.audit")
                if audit is not None:  # on the log lane: a blocking handler never holds the call
                    audit.log(logger, level, message)
                else:
                    logger.log(level, message)
    except BaseException:  # noqa: BLE001 - a raising log handler: the report must never raise into a gate
        pass


def internal(exc: BaseException, message: str, *, level: int = _ERROR) -> None:
    """Report ``exc``, failsecure's own failure, as ``message`` with ``{type}`` replaced by
    the exception's type name (never its text). Never raises."""
    try:
        name = type_name(exc)
        said = message.replace("{type}", name)
        INTERNAL_ERRORS.append(InternalError(said, name))
    except BaseException:  # noqa: BLE001 - the reporter itself must never raise (a MemoryError, a hostile str)
        return
    problem(said, level=level)


@contextmanager
def internal_error(message: str, *, level: int = _ERROR) -> Iterator[None]:
    """Run the block; if it raises an ``Exception``, report it once (:func:`internal`) and
    swallow it, so the caller continues to its fail-closed value. ``BaseException``s that
    are not ``Exception`` (``KeyboardInterrupt``, ``SystemExit``) pass through."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - the idiom itself: every internal failure is reported here
        internal(exc, message, level=level)


def type_name(obj) -> str:
    """The name of ``obj``'s type, read without running anything the type defines (a
    metaclass ``__name__`` property, a hostile ``__class__``). Never raises. A name that is
    not a short identifier is ``"<unnamed>"``: a class made at run time can carry any text
    in its name (``type(secret, (Exception,), {})``), and the name reaches the audit and
    stderr."""
    try:
        name = type.__dict__["__name__"].__get__(type(obj))
        return name if type(name) is str and len(name) <= 100 and name.isidentifier() else "<unnamed>"
    except BaseException:  # noqa: BLE001 - a hostile type's own exception: the name is unknown, not an error
        return "<unnamed>"
