"""Tiny JSON helpers for the command-hook runner's hot path.

``import json`` costs ~11 ms on a slow machine (json.decoder pulls in ``re``);
the C accelerator ``_json`` costs ~1 ms. The runner only needs to parse a
payload / a hook's answer strictly and to emit small objects, so this module
drives ``_json.make_scanner`` and ``_json.encode_basestring_ascii`` directly
and falls back to :mod:`json` where the accelerator is missing.

``loads`` is strict: one JSON value surrounded by optional whitespace, no
NaN/Infinity, no trailing data; anything else raises :class:`ValueError`.
"""

__all__ = ("loads", "dumps")

_WS = " \t\n\r"


def _reject_constant(name):
    raise ValueError("non-standard JSON constant " + name)


def _parse_int(text):
    """An integer literal as a number: past CPython's digit limit for int()
    (sys.int_max_str_digits, 4300) JavaScript's JSON.parse still reads it (as a
    double), so it is read as a float here too, never a parse error."""
    try:
        return int(text)
    except ValueError:
        return float(text)


class _Context:
    # The attributes the C scanner reads from a JSONDecoder.
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = staticmethod(_parse_int)
    parse_constant = staticmethod(_reject_constant)
    memo = None


def _unique_pairs(pairs):
    """An object whose keys are all different, else ValueError: parsers disagree on a
    key given twice (the last wins, the first wins, or the document is rejected)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate key in a JSON object")
    return obj


class _UniqueContext(_Context):
    object_pairs_hook = staticmethod(_unique_pairs)  # type: ignore[assignment]


try:
    from _json import encode_basestring_ascii as _encode_str
    from _json import make_scanner as _make_scanner

    _scan_once = _make_scanner(_Context())  # type: ignore[arg-type]
    _scan_unique = _make_scanner(_UniqueContext())  # type: ignore[arg-type]
except ImportError:  # pragma: no cover - CPython always ships _json
    _scan_once = _scan_unique = None  # type: ignore[assignment]
    _encode_str = None  # type: ignore[assignment]


def loads(text, unique=False):
    """Parse one strict JSON document from ``text`` (str or bytes); ``unique``: an
    object with a key given twice is a ValueError too."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")  # UnicodeDecodeError is a ValueError
    if _scan_once is None:  # pragma: no cover
        import json

        try:
            return json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int,
                              object_pairs_hook=_unique_pairs if unique else None)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
    end = len(text.rstrip(_WS))
    start = len(text) - len(text.lstrip(_WS))
    if start >= end:
        raise ValueError("empty JSON document")
    try:
        value, stop = (_scan_unique if unique else _scan_once)(text, start)
    except StopIteration as exc:
        raise ValueError("invalid JSON at %d" % exc.value) from None
    except SystemError:
        # The C scanner builds its errors from json.decoder.JSONDecodeError, which it
        # looks up in sys.modules only: the runner never imports json, so an unfinished
        # string or object surfaced as "returned NULL without setting an exception".
        raise ValueError("invalid JSON") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if stop != end:
        raise ValueError("extra data after JSON value at %d" % stop)
    return value


def _encode(value, out):
    if isinstance(value, str):
        out.append(_encode_str(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("NaN/Infinity are not JSON")
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError("JSON object keys must be str")
            if not first:
                out.append(",")
            first = False
            out.append(_encode_str(key))
            out.append(":")
            _encode(item, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise TypeError("not JSON serialisable: %s" % type(value).__name__)


def dumps(value):
    """Compact, ASCII-only JSON text for str/int/float/bool/None/dict/list."""
    if _encode_str is None:  # pragma: no cover
        import json

        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    out: list[str] = []
    _encode(value, out)
    return "".join(out)
