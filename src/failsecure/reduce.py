"""The verdict reducer: many outcomes -> one Decision. Pure and order-independent.

Rank: deny > ask > allow > abstain. A failed gate ranks as deny unless its policy says
``on_error = "allow"`` (then abstain); an observer never counts; a required hook with no
outcome is a deny. Within a rank the outcomes keep call order, so an adapter can honour
its framework's "first approve wins" detail while the action stays order-independent.
"""

from __future__ import annotations

from .verdict import Action, Decision, Failure, Outcome, Verdict, failure_reason

TYPE_CHECKING = False  # typing is not imported at run time (the runner's start budget)
if TYPE_CHECKING:
    from typing import Iterable, Sequence

    from .policy import Config

#: the order of the actions (deny > ask > allow > abstain): what outranks what
RANK = {Action.DENY: 3, Action.ASK: 2, Action.ALLOW: 1, Action.ABSTAIN: 0}
_RANK = RANK
_NOBODY = Verdict(action=Action.ABSTAIN)
_ABSTAIN = Action.ABSTAIN


def effective(outcome: Outcome, config: "Config | None", fail_closed: "frozenset | tuple" = ()) -> Action:
    """What one outcome counts as once its hook's policy is applied. A hook in
    ``fail_closed`` (its author declared it a security check through the framework's
    own opt-in) fails closed whatever ``on_error`` says."""
    if config is not None:
        hook_policy = config.hook(outcome.hook)
        if hook_policy.role == "observer":
            return Action.ABSTAIN
        on_error = hook_policy.on_error
    else:
        on_error = "deny"
    if outcome.failure is not None:
        return Action.DENY if on_error == "deny" or outcome.hook in fail_closed else Action.ABSTAIN
    return outcome.action


def missing(required: Iterable[str], outcomes: Sequence[Outcome]) -> list[Outcome]:
    """Synthetic MISSING outcomes for required hook ids that produced no outcome."""
    seen = {o.hook for o in outcomes}
    return [Outcome(hook=r, failure=Failure.MISSING) for r in required if r not in seen]


def reduce(
    outcomes: Iterable[Outcome],
    config: "Config | None" = None,
    required: Iterable[str] = (),
    *,
    ask: bool = True,
    framework: str = "this framework",
    fail_closed: "frozenset | tuple" = (),
) -> Decision:
    """``ask=False``: the framework cannot ask a human, so an ASK decision becomes a
    deny whose reason says so (same deciding outcomes)."""
    outcomes = tuple(outcomes)
    if required:
        outcomes += tuple(missing(required, outcomes))
    best = _ABSTAIN
    rank = 0
    deciding: list[Outcome] = []
    counts = []
    hook = config.hook if config is not None else None
    for outcome in outcomes:
        said = outcome.verdict
        if outcome.failure is None:
            action = said.action if said is not None else _ABSTAIN
            if action is _ABSTAIN:  # no opinion counts as none under any policy
                counts.append(action)
                continue
            if hook is not None and hook(outcome.hook).role == "observer":
                action = _ABSTAIN
        else:
            action = effective(outcome, config, fail_closed)
        counts.append(action)
        if action is best:
            if action is not _ABSTAIN:
                deciding.append(outcome)
        elif _RANK[action] > rank:
            best, rank, deciding = action, _RANK[action], [outcome]
    if not deciding:
        return Decision(_NOBODY, outcomes, (), tuple(counts))
    primary = deciding[0]
    if primary.failure is not None:
        verdict = Verdict(best, failure_reason(primary.hook, primary.failure))
    else:
        verdict = primary.verdict  # type: ignore[assignment]
    if best is Action.ASK and not ask:
        verdict = Verdict(Action.DENY, ask_unsupported(primary.hook, framework))
    return Decision(verdict, outcomes, tuple(deciding), tuple(counts))


def ask_unsupported(hook: str, framework: str) -> str:
    return f"failsecure: hook '{hook}' asked for approval, which {framework} cannot do"
