"""Argument integrity: the gates judge the arguments the tool really runs with.

Where a framework lets a hook rewrite the arguments (or swap the tool) after another
hook approved them, an adapter runs the whole round of hooks again on the rewritten
call until a round changes nothing: every gate has then seen exactly what the tool
will run with. A round that keeps rewriting past ``MAX_ROUNDS`` is a failure
(``invalid``), never a silent pass.

What a round compares is a ``fingerprint`` of the call: containers (dict, list, tuple)
by content, plain values by type and value (``True`` is not ``1``), any other object by
identity (the picture holds the object, so a new object cannot take a freed one's
address and pass for it). A rewrite of the
arguments' containers (all a hook can reach that the tool will see as new) changes it;
an argument object that cannot be copied or compared (a client, a lock) never reads as
"rewritten", so it is not falsely denied. ``snapshot`` (a deep copy) is there for
adapters that need a copy of what a gate saw. Neither ever raises.
"""

from __future__ import annotations

import copy
from typing import Any, Awaitable, Callable, Optional

from .verdict import Action, Failure, Outcome

#: rounds of hooks before a call that keeps being rewritten is denied
MAX_ROUNDS = 3

_CHANGED = object()
CHANGED = _CHANGED  # what a fingerprint returns for a value it cannot picture


_PLAIN = (str, int, bytes, type(None))  # bool is pictured with its type: True == 1


def fingerprint(value: Any, depth: int = 0) -> Any:
    """An immutable picture of ``value`` built only from builtin types (comparing two
    runs no code of the hook's objects): containers by content, others by identity."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is bool:
        return ("b", value)
    if kind is float:
        return ("f", value.hex())  # NaN equals itself here
    if depth < 32:  # containers: plain items without a call each, list comprehensions (no generator)
        plain = _PLAIN
        if kind is dict:
            return ("d", tuple([
                (k if type(k) in plain else fingerprint(k, depth + 1), v if type(v) in plain else fingerprint(v, depth + 1))
                for k, v in value.items()
            ]))
        if kind is list or kind is tuple:
            return ("l" if kind is list else "t", tuple([v if type(v) in plain else fingerprint(v, depth + 1) for v in value]))
    # Same id while both pictures hold their object: the same object, and the tuple
    # comparison stops at the id or at the identity check, never calling the object's __eq__.
    return ("id", id(value), value)


def snapshot(value: Any) -> Any:
    """A deep copy of what a gate saw (``_CHANGED`` when it cannot be copied)."""
    try:
        return copy.deepcopy(value)
    except BaseException:  # a hostile __deepcopy__ / __reduce__
        return _CHANGED


def same(before: Any, after: Any) -> bool:
    """True only when ``after`` provably equals the snapshot ``before``."""
    if before is _CHANGED or after is _CHANGED:
        return False
    try:
        result = before == after
        return result is True or (type(result) is bool and result)
    except BaseException:
        return False


def _denied(outcomes: list[Outcome]) -> bool:
    for o in outcomes:
        if o.failure is not None or (o.verdict is not None and o.verdict.action is Action.DENY):
            return True
    return False


def unsettled(hook: str) -> Outcome:
    """The outcome when the call was still being rewritten after ``MAX_ROUNDS``."""
    return Outcome(hook=hook, failure=Failure.INVALID)


def until_stable(run_round: Callable[[], list[Outcome]], current: Callable[[], Any], hook: str, picture: Optional[Callable[[Any], Any]] = None) -> list[Outcome]:
    """Run ``run_round`` (every hook once, in order, on the call as it is now; hooks may
    rewrite it) until a round leaves ``current()`` unchanged. Returns the last round's
    outcomes; a round with a deny or a failure ends it at once (nothing more to judge).
    ``hook`` names the unsettled outcome added when rewriting never stops.
    ``picture``: how to picture the call (default: the module's ``fingerprint``; it
    must never raise; return ``CHANGED`` for what it cannot picture)."""
    take = picture or fingerprint
    for _ in range(MAX_ROUNDS):
        before = take(current())
        outcomes = run_round()
        if _denied(outcomes) or same(before, take(current())):
            return outcomes
    return outcomes + [unsettled(hook)]


async def auntil_stable(run_round: Callable[[], Awaitable[list[Outcome]]], current: Callable[[], Any], hook: str, picture: Optional[Callable[[Any], Any]] = None) -> list[Outcome]:
    """``until_stable`` for async rounds."""
    take = picture or fingerprint
    for _ in range(MAX_ROUNDS):
        before = take(current())
        outcomes = await run_round()
        if _denied(outcomes) or same(before, take(current())):
            return outcomes
    return outcomes + [unsettled(hook)]
