"""Result types: what one hook said (Verdict), what one guarded call produced (Outcome),
and what a gated tool call was decided (Decision).

Frozen, slotted, stdlib-only: the command-hook runner imports them on every tool call.
Nothing here ever calls into a hook's objects: a Verdict is built by an adapter's
validator from plain values, so a hostile ``__str__`` or ``__bool__`` in a hook's return
value cannot reach the reducer or the audit trail.
"""

from __future__ import annotations

from enum import Enum

from . import failures

TYPE_CHECKING = False  # typing is not imported at run time (the runner's start budget)
if TYPE_CHECKING:
    from typing import Any, Optional


class Action(str, Enum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"
    ABSTAIN = "abstain"


class Failure(str, Enum):
    """See ``failsecure.failures`` for what each category means."""

    RAISED = failures.RAISED
    TIMEOUT = failures.TIMEOUT
    INVALID = failures.INVALID
    MISSING = failures.MISSING
    CRASHED = failures.CRASHED
    UNGOVERNED = failures.UNGOVERNED


class Invalid(Exception):
    """Raised by a validator: the hook's answer is not one the framework (or the host of
    a command hook) would honour.

    ``failure`` names the category when the answer itself reports a failure (a command
    hook's result that says the process timed out or died): ``Invalid(Failure.CRASHED)``.
    ``why``: which rule the answer broke, in fixed words ("unknown decision"), for the
    reader of the code; never the answer's text (it carries no payload)."""

    def __init__(self, failure: "Failure | None" = None, why: str = ""):
        super().__init__(*((why,) if why else ()))
        self.failure = failure if failure is not None else Failure.INVALID


def exactly(native: object, answers: tuple) -> "Verdict":
    """The verdict of an answer that IS one of ``answers``' keys, pairs ``(key, verdict)``
    compared by identity: ``True``, ``False``, ``None`` or a framework's own sentinel
    (``1``, ``0``, ``""``, an equal object are none of them). Anything else is INVALID:
    a validator of a framework whose contract is a closed set of values."""
    for key, verdict in answers:
        if native is key:
            return verdict
    raise Invalid(why="not one of the answers")




class _Frozen:
    """Immutable value object: fields set once in ``__init__``, compared and hashed by
    value, ``repr`` shows the fields listed in ``_shown``."""

    __slots__ = ()
    _fields: tuple = ()
    _shown: tuple = ()

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _values(self) -> tuple:
        return tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self):
        # an unhashable field (adapter data, a dict) adds nothing: equal values hash equal
        return hash((type(self).__name__,) + tuple(v if _hashable(v) else None for v in self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._shown) + ")"

    def as_dict(self) -> dict:
        return {f: getattr(self, f) for f in self._shown}


def _hashable(value) -> bool:
    try:
        hash(value)
        return True
    except Exception:  # noqa: BLE001 - a hostile __hash__: not hashable, not an error
        return False


class Verdict(_Frozen):
    """One hook's answer. ``data``: adapter-private native detail (an approve's
    rule_key, a callback's own block dict); never audited, never shown."""

    __slots__ = ("action", "reason", "data")
    _fields = ("action", "reason", "data")
    _shown = ("action", "reason")
    action: Action
    reason: Optional[str]
    data: Any

    def __init__(self, action: Action, reason: Optional[str] = None, data: Any = None):
        if type(action) is not Action:
            action = Action(action)
        if reason is not None and type(reason) is not str:
            raise TypeError("Verdict.reason must be a str or None")
        _v_action(self, action)
        _v_reason(self, reason)
        _v_data(self, data)


class Outcome(_Frozen):
    """What one guarded hook call produced: a verdict, or a failure category."""

    __slots__ = ("hook", "verdict", "failure", "exception_type", "elapsed_ms")
    _fields = _shown = ("hook", "verdict", "failure", "exception_type", "elapsed_ms")
    hook: str
    verdict: Optional[Verdict]
    failure: Optional[Failure]
    exception_type: Optional[str]
    elapsed_ms: float

    def __init__(
        self,
        hook: str,
        verdict: Optional[Verdict] = None,
        failure: Optional[Failure] = None,
        exception_type: Optional[str] = None,
        elapsed_ms: float = 0.0,
    ):
        if failure is not None and type(failure) is not Failure:
            failure = Failure(failure)
        _o_hook(self, hook)
        _o_verdict(self, verdict)
        _o_failure(self, failure)
        _o_exception_type(self, exception_type)
        _o_elapsed_ms(self, float(elapsed_ms))

    @property
    def action(self) -> Action:
        """The hook's own answer, before any policy; a failure has no answer (ABSTAIN)."""
        return self.verdict.action if self.verdict is not None else Action.ABSTAIN


class Decision(_Frozen):
    """The decision on one gated tool call. ``deciding``: every outcome that ranks with
    the decision, in call order (order-independent as a set)."""

    __slots__ = ("verdict", "outcomes", "deciding", "counts")
    _fields = _shown = ("verdict", "outcomes", "deciding")
    verdict: Verdict
    outcomes: tuple
    deciding: tuple
    counts: tuple

    def __init__(self, verdict: Verdict, outcomes: tuple = (), deciding: tuple = (), counts: tuple = ()):
        _d_verdict(self, verdict)
        _d_outcomes(self, tuple(outcomes))
        _d_deciding(self, tuple(deciding))
        #: what each outcome counted as once its hook's policy was applied (same order)
        _d_counts(self, tuple(counts))

    def counted(self, outcome: "Outcome") -> "Action":
        """What ``outcome`` (one of ``outcomes``) counted as in this decision; ABSTAIN
        for an outcome that is not part of it."""
        for mine, action in zip(self.outcomes, self.counts):
            if mine is outcome:
                return action
        return Action.ABSTAIN

    @property
    def action(self) -> Action:
        return self.verdict.action

    @property
    def denied(self) -> bool:
        return self.verdict.action is Action.DENY

    @property
    def reason(self) -> Optional[str]:
        """The text the framework or host is told. Never empty for a deny: a hook that
        denied without a reason is named by its hook id (the core words it, so no adapter
        needs a fallback). An ask keeps the hook's own text (a framework may render an ask
        without one); an allow or no opinion has none."""
        said = self.verdict.reason
        if (said is None or said == "") and self.verdict.action is Action.DENY:
            primary = self.primary
            return f"failsecure: hook '{primary.hook}' denied the call" if primary is not None else "failsecure: denied the call"
        return said

    @property
    def deny_text(self) -> str:
        """``reason`` where the decision denies (it is never empty there), typed as text:
        what an adapter tells the framework of a deny."""
        return self.reason or "failsecure: denied the call"

    @property
    def primary(self) -> Optional[Outcome]:
        return self.deciding[0] if self.deciding else None


# The slot setters each class's ``__init__`` sets its fields with, in ``__slots__`` order
# (``object.__setattr__`` without the name lookup: a third cheaper per Outcome).
_v_action, _v_reason, _v_data = (Verdict.__dict__[f].__set__ for f in Verdict.__dict__["__slots__"])
_o_hook, _o_verdict, _o_failure, _o_exception_type, _o_elapsed_ms = (
    Outcome.__dict__[f].__set__ for f in Outcome.__dict__["__slots__"]
)
_d_verdict, _d_outcomes, _d_deciding, _d_counts = (Decision.__dict__[f].__set__ for f in Decision.__dict__["__slots__"])


ALLOW = Verdict(Action.ALLOW)
ABSTAIN = Verdict(Action.ABSTAIN)
ASK = Verdict(Action.ASK)


failure_reason = failures.failure_reason
