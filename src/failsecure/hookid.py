"""Hook ids: the one place they are derived, for the runner and every adapter.

- a Python callable: ``<module>.<qualname>`` (read without calling the object's own
  ``__str__``/``__repr__``; a hostile object gets its type's name);
- a command line: the executable's basename plus a short hash of the rest, so a token on
  the command line never reaches a deny text, the audit or a log.

Stdlib only (the command-hook runner imports it on every tool call).
"""

from __future__ import annotations

import os

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#: what a Python callable's name keeps (``<lambda>``, ``<locals>`` included)
_SAFE = frozenset(_LETTERS + "._-+@/<>")
#: what a command hook's id keeps as given (``--hook-id``, a settings file): the
#: ``command:`` prefix and the ``#`` of a derived id included
_COMMAND_SAFE = frozenset(_LETTERS + "._:@+-/#")


def _clean(text: str, limit: "int | None" = 120, safe: frozenset = _SAFE, empty: str = "_") -> str:
    """The one sanitizer of hook ids: the first ``limit`` characters, each not in
    ``safe`` replaced by ``_``; ``empty`` for nothing left."""
    out = "".join(c if c in safe else "_" for c in text[:limit])
    return out or empty


def command_id(text: str) -> str:
    """A command hook's id as given (an explicit ``--hook-id``, a derived one): ASCII
    letters and digits and ``._:@+-/#`` kept, any other character ``_``; ``hook`` for an
    empty one."""
    return _clean(text, None, _COMMAND_SAFE, "hook")


def plain_str(value) -> "str | None":
    """``value`` when it is exactly a str (a subclass could run code of its own when
    compared or printed), else None."""
    return value if type(value) is str else None


def nonempty_str(value) -> "str | None":
    """``plain_str`` that takes an empty string for none (a call id, a message)."""
    return value if type(value) is str and value else None



def _attr(obj, name):
    try:
        return plain_str(getattr(obj, name, None))
    except BaseException:  # noqa: BLE001 - a hostile __getattr__: the name is unknown, not an error
        return None


def callable_name(fn) -> str:
    """``<module>.<qualname>`` of a hook callable; never raises."""
    try:
        module = _attr(fn, "__module__")
        qualname = _attr(fn, "__qualname__")
        if qualname is None:  # an instance with __call__, a partial, a proxy ...
            cls = type(fn)
            module = plain_str(type.__dict__["__module__"].__get__(cls)) if module is None else module
            qualname = plain_str(type.__dict__["__qualname__"].__get__(cls))
        if qualname is None:
            return "<unnamed>"
        return _clean(f"{module}.{qualname}" if module else qualname, 200)
    except BaseException:  # noqa: BLE001 - a hostile callable: its id is '<unnamed>', not an error
        return "<unnamed>"


def _digest(text: str) -> str:
    # FNV-1a 64: stdlib-free of hashlib on the runner's path, stable across processes
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8", "surrogatepass"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%08x" % (h >> 32)


def command_name(command) -> str:
    """The hook id of a command hook: ``<basename>#<hash of the whole command>``.

    ``command`` is an argv list or a shell command string. Two hooks that run the same
    executable with other arguments get other ids; nothing of the arguments shows."""
    if isinstance(command, (list, tuple)):
        parts = [str(p) for p in command]
        whole = "\\0".join(parts)
    else:
        whole = str(command)
        try:  # shell words: a quoted VAR='a b' assignment is one word, never the executable
            import shlex

            parts = shlex.split(whole, comments=False, posix=True)
        except ValueError:  # unbalanced quotes: no executable can be told
            parts = []
    exe = ""
    for part in parts:  # skip leading VAR=value assignments of a shell line
        if "=" in part.split("/")[0] and not part.startswith(("/", ".")):
            continue
        exe = part
        break
    base = os.path.basename(exe.rstrip("/")) or "command"
    return f"{_clean(base, 60)}#{_digest(whole)}"
