"""Reporting failsecure's own problems: one helper for every internal error.

A problem that can leave a gate open (an adapter that cannot load, a lockdown that
failed, a plugin that did not register, an audit sink that raised) must never be told
only to a logger nobody listens to: it goes to stderr (once per distinct message, so a
per-call problem does not flood the terminal) and to the ``failsecure`` logger. Never
any payload or exception text: callers pass type names only.
"""

from __future__ import annotations

import sys

_said: set = set()
_ERROR = 40


def problem(message: str, *, level: int = _ERROR) -> None:
    """Say ``message`` on stderr once per process, and log it every time. Never raises."""
    try:
        if message not in _said:
            _said.add(message)
            err = sys.stderr
            if err is not None:
                err.write(message + "\n")
                err.flush()
    except BaseException:
        pass
    try:
        logging = sys.modules.get("logging")
        if logging is not None:
            logging.getLogger("failsecure").log(level, message)
    except BaseException:
        pass


def type_name(obj) -> str:
    """The name of ``obj``'s type, read without running anything the type defines (a
    metaclass ``__name__`` property, a hostile ``__class__``). Never raises."""
    try:
        name = type.__dict__["__name__"].__get__(type(obj))
        return name if type(name) is str else "<unnamed>"
    except BaseException:
        return "<unnamed>"
