"""Result types: value semantics of Verdict/Outcome/Decision (immutability, validation,
hashing with unhashable adapter data) and what a Decision says each outcome counted as."""

import pytest

from failsecure.reduce import reduce
from failsecure.verdict import ABSTAIN, ALLOW, Action, Decision, Failure, Outcome, Verdict


def test_verdict_is_immutable_and_validates_its_fields():
    v = Verdict("deny", "no")
    assert v.action is Action.DENY and v.reason == "no"  # a plain string is coerced to the enum
    with pytest.raises(AttributeError, match="Verdict is immutable"):
        v.action = Action.ALLOW
    # deletion is refused the same way, and the field stays
    with pytest.raises(AttributeError, match="Verdict is immutable"):
        del v.reason
    assert v.action is Action.DENY and v.reason == "no"
    with pytest.raises(ValueError):
        Verdict("maybe")
    with pytest.raises(TypeError, match="reason must be a str or None"):
        Verdict(Action.DENY, reason=b"no")
    # twin: None and a str are accepted reasons
    assert Verdict(Action.DENY, reason=None).reason is None


def test_outcome_coerces_its_failure_and_abstains_without_a_verdict():
    o = Outcome(hook="a:h", failure="timeout", elapsed_ms=3)
    assert o.failure is Failure.TIMEOUT and o.elapsed_ms == 3.0 and type(o.elapsed_ms) is float
    assert o.action is Action.ABSTAIN
    with pytest.raises(ValueError):
        Outcome(hook="a:h", failure="exploded")
    with pytest.raises(AttributeError, match="Outcome is immutable"):
        o.failure = None
    # twin: an outcome with a verdict answers with the verdict's action
    assert Outcome(hook="a:h", verdict=Verdict(Action.DENY)).action is Action.DENY


def test_equal_values_hash_equal_even_when_built_from_distinct_objects():
    reason_a = "".join(["blocked ", "by policy"])
    reason_b = "".join(["blocked by", " policy"])
    assert reason_a == reason_b and reason_a is not reason_b
    a, b = Verdict(Action.DENY, reason_a), Verdict(Action.DENY, reason_b)
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    oa = Outcome(hook="a:" + reason_a, verdict=a, elapsed_ms=1.5)
    ob = Outcome(hook="a:" + reason_b, verdict=b, elapsed_ms=1.5)
    assert oa == ob and hash(oa) == hash(ob)


def test_verdict_with_unhashable_adapter_data_is_still_hashable():
    # an adapter keeps its framework's own block dict in ``data``
    block = {"decision": "block", "reason": "no"}
    v = Verdict(Action.DENY, "no", data=block)
    assert hash(v) == hash(v)
    assert v in {v}
    o = Outcome(hook="a:h", verdict=v)
    d = Decision(verdict=v, outcomes=[o], deciding=[o], counts=[Action.DENY])
    assert hash(d) == hash(d) and d in {d}
    # data is never shown, but it does take part in equality
    assert repr(v) == "Verdict(action=<Action.DENY: 'deny'>, reason='no')"
    assert v != Verdict(Action.DENY, "no", data={"decision": "approve"})


def test_equal_values_with_unhashable_data_hash_equal():
    # two adapters' copies of the same block dict: equal, so one hash and one set member
    a = Verdict(Action.DENY, "no", data={"decision": "block"})
    b = Verdict(Action.DENY, "no", data={"decision": "block"})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    # twin: different data stays a different value (equality, not the hash, tells them apart)
    c = Verdict(Action.DENY, "no", data={"decision": "approve"})
    assert c != a and len({a, c}) == 2


def test_different_values_hash_apart():
    values = [Verdict(a, r) for a in Action for r in (None, "x", "y")]
    values += [Outcome(hook=h, failure=f) for h in ("a:1", "a:2") for f in Failure]
    assert len(set(values)) == len(values)
    assert len({hash(v) for v in values}) == len(values)


def test_types_never_compare_equal_across_classes():
    assert Verdict(Action.ALLOW) == ALLOW and Verdict(Action.ALLOW) != ABSTAIN
    assert Verdict(Action.ALLOW) != (Action.ALLOW, None, None)  # not equal to its bare values
    assert Outcome(hook="a:h") != Decision(verdict=ABSTAIN)


def test_decision_reports_what_each_outcome_counted_as(write_config):
    config = write_config('[hooks."a:trace"]\nrole = "observer"\n[hooks."a:flaky"]\non_error = "allow"\n')
    gate = Outcome(hook="a:gate", verdict=Verdict(Action.ALLOW, "ok"))
    trace = Outcome(hook="a:trace", verdict=Verdict(Action.DENY, "observer says no"))
    flaky = Outcome(hook="a:flaky", failure=Failure.RAISED, exception_type="RuntimeError")
    d = reduce([gate, trace, flaky], config)
    assert d.action is Action.ALLOW and not d.denied and d.reason == "ok"
    assert d.primary is gate and d.deciding == (gate,)
    assert d.counts == (Action.ALLOW, Action.ABSTAIN, Action.ABSTAIN)
    assert d.counted(gate) is Action.ALLOW
    assert d.counted(trace) is Action.ABSTAIN  # an observer's deny never counts
    assert d.counted(flaky) is Action.ABSTAIN  # a tolerated failure
    # an outcome that is not part of the decision, even one equal to a member, counted as nothing
    twin = Outcome(hook="a:gate", verdict=Verdict(Action.ALLOW, "ok"))
    assert twin == gate and d.counted(twin) is Action.ABSTAIN


def test_decision_counted_deny_twin():
    ok = Outcome(hook="a:ok", verdict=Verdict(Action.ALLOW))
    bad = Outcome(hook="a:bad", failure=Failure.TIMEOUT)
    d = reduce([ok, bad])
    assert d.denied and d.action is Action.DENY and d.primary is bad
    assert d.reason == "failsecure: hook 'a:bad' failed closed (timeout)"
    assert [d.counted(ok), d.counted(bad)] == [Action.ALLOW, Action.DENY]


def test_an_empty_decision_abstains_with_no_primary():
    d = Decision(verdict=ABSTAIN)
    assert d.action is Action.ABSTAIN and not d.denied and d.primary is None and d.reason is None
    assert d.outcomes == d.deciding == d.counts == ()
    assert d.counted(Outcome(hook="a:h")) is Action.ABSTAIN
    assert d.as_dict() == {"verdict": ABSTAIN, "outcomes": (), "deciding": ()}


def test_an_outcome_built_without_a_time_took_none():
    # adapters build synthetic outcomes (missing, unsettled) without timing them
    assert Outcome(hook="a:h", failure=Failure.MISSING).elapsed_ms == 0.0
    # twin: a timed one keeps its time
    assert Outcome(hook="a:h", failure=Failure.MISSING, elapsed_ms=2.5).elapsed_ms == 2.5


def test_a_deny_without_a_reason_is_worded_by_the_core_naming_the_hook():
    silent_deny = Outcome(hook="fw:quiet", verdict=Verdict(Action.DENY, reason=None))
    d = Decision(Verdict(Action.DENY, reason=None), (silent_deny,), (silent_deny,), (Action.DENY,))
    assert d.reason == "failsecure: hook 'fw:quiet' denied the call"
    # the twins: an ask keeps the hook's own (empty) text; a hook's own reason is kept as it
    # said it; an allow has none
    silent_ask = Outcome(hook="fw:quiet", verdict=Verdict(Action.ASK, reason=None))
    assert Decision(silent_ask.verdict, (silent_ask,), (silent_ask,), (Action.ASK,)).reason is None
    said = Outcome(hook="fw:loud", verdict=Verdict(Action.DENY, reason="no: policy 7"))
    assert Decision(said.verdict, (said,), (said,), (Action.DENY,)).reason == "no: policy 7"
    allow = Outcome(hook="fw:ok", verdict=Verdict(Action.ALLOW))
    assert Decision(allow.verdict, (allow,), (allow,), (Action.ALLOW,)).reason is None


def test_exactly_takes_only_an_answer_that_is_one_of_its_keys():
    from failsecure.verdict import Invalid, exactly

    deny = Verdict(Action.DENY)
    marker = object()
    answers = ((True, ALLOW), (False, deny), (None, ABSTAIN), (marker, deny))
    assert exactly(True, answers) is ALLOW  # the allow twin
    assert exactly(False, answers) is deny and exactly(marker, answers) is deny
    assert exactly(None, answers) is ABSTAIN

    class Equal:
        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    # compared by identity: equal or truthy values are not the answers
    for junk in (1, 0, 1.0, "", "true", [], {}, Equal(), object()):
        with pytest.raises(Invalid) as raised:
            exactly(junk, answers)
        assert raised.value.failure is Failure.INVALID
