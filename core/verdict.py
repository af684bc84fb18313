"""Result types: what one hook said (Verdict), what one guarded call produced (Outcome),
and what a gated tool call was decided (Decision).

Immutable pydantic models. Nothing here ever calls into a hook's objects: a Verdict is
built by an adapter's validator from plain values, so a hostile ``__str__`` or ``__bool__``
in a hook's return value cannot reach the reducer or the audit trail.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from . import failures


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


class Invalid(Exception):
    """Raised by a validator: the hook's answer is not one the framework would honour.

    ``failure`` names the category when the answer itself reports a failure (a command
    hook's result that says the process timed out or died): ``Invalid(Failure.CRASHED)``.
    Carries no payload text."""

    def __init__(self, failure: "Failure | None" = None):
        super().__init__()
        self.failure = failure if failure is not None else Failure.INVALID


_FROZEN = ConfigDict(frozen=True, arbitrary_types_allowed=True)


class Verdict(BaseModel):
    model_config = _FROZEN

    action: Action
    reason: Optional[str] = None
    # adapter-private native detail (e.g. an approve's rule_key); never audited, never shown
    data: Any = Field(default=None, repr=False, exclude=True)


class Outcome(BaseModel):
    model_config = _FROZEN

    hook: str
    verdict: Optional[Verdict] = None
    failure: Optional[Failure] = None
    exception_type: Optional[str] = None
    elapsed_ms: float = 0.0

    @property
    def action(self) -> Action:
        """The hook's own answer, before any policy; a failure has no answer (ABSTAIN)."""
        return self.verdict.action if self.verdict is not None else Action.ABSTAIN

    @classmethod
    def trusted(cls, hook: str, verdict: Optional[Verdict], failure: Optional[Failure], exception_type: Optional[str], elapsed_ms: float) -> "Outcome":
        """Build an Outcome from values the guard made itself, skipping re-validation
        (the guard's hot path; validated construction costs ~1.5 us here). Equal to
        ``Outcome(...)`` with the same values (tested)."""
        outcome = _new(cls)
        _set(outcome, "__dict__", {"hook": hook, "verdict": verdict, "failure": failure, "exception_type": exception_type, "elapsed_ms": elapsed_ms})
        _set(outcome, "__pydantic_fields_set__", _OUTCOME_FIELDS)
        _set(outcome, "__pydantic_extra__", None)
        _set(outcome, "__pydantic_private__", None)
        return outcome


_new = object.__new__
_set = object.__setattr__
_OUTCOME_FIELDS = frozenset(Outcome.model_fields)


class Decision(BaseModel):
    model_config = _FROZEN

    verdict: Verdict
    outcomes: tuple[Outcome, ...] = ()
    # every outcome that ranks with the decision, in call order (order-independent as a set)
    deciding: tuple[Outcome, ...] = ()

    @property
    def action(self) -> Action:
        return self.verdict.action

    @property
    def denied(self) -> bool:
        return self.verdict.action is Action.DENY

    @property
    def reason(self) -> Optional[str]:
        return self.verdict.reason

    @property
    def primary(self) -> Optional[Outcome]:
        return self.deciding[0] if self.deciding else None


ALLOW = Verdict(action=Action.ALLOW)
ABSTAIN = Verdict(action=Action.ABSTAIN)
ASK = Verdict(action=Action.ASK)


failure_reason = failures.failure_reason
