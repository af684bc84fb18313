from hypothesis import given, strategies as st

from failsecure import policy
from failsecure.reduce import reduce
from failsecure.verdict import Action, Failure, Outcome, Verdict


def out(hook, action=None, failure=None):
    return Outcome(hook=hook, verdict=Verdict(action=action) if action else None, failure=failure)


def test_rank_deny_over_ask_over_allow_over_abstain():
    assert reduce([out("a:1", "allow"), out("a:2", "ask")]).action is Action.ASK
    assert reduce([out("a:1", "ask"), out("a:2", "deny"), out("a:3", "allow")]).action is Action.DENY
    assert reduce([out("a:1", "abstain"), out("a:2", "allow")]).action is Action.ALLOW
    assert reduce([out("a:1", "abstain")]).action is Action.ABSTAIN
    assert reduce([]).action is Action.ABSTAIN


def test_failed_gate_denies_with_hook_and_category_only():
    d = reduce([out("a:ok", "allow"), out("a:bad", failure=Failure.TIMEOUT)], policy.current())
    assert d.action is Action.DENY
    assert d.primary.hook == "a:bad" and d.primary.failure is Failure.TIMEOUT
    assert d.reason == "failsecure: hook 'a:bad' failed closed (timeout)"


def test_failed_gate_with_on_error_allow_abstains(write_config):
    config = write_config('[hooks."a:bad"]\non_error = "allow"\n')
    d = reduce([out("a:ok", "allow"), out("a:bad", failure=Failure.RAISED)], config)
    assert d.action is Action.ALLOW
    # twin: the same failure under the default policy denies
    assert reduce([out("a:ok", "allow"), out("a:other", failure=Failure.RAISED)], config).action is Action.DENY


def test_global_on_error_allow(write_config):
    config = write_config('on_error = "allow"\n')
    assert reduce([out("a:bad", failure=Failure.INVALID)], config).action is Action.ABSTAIN


def test_observer_never_blocks_and_never_decides(write_config):
    config = write_config('[hooks."a:trace"]\nrole = "observer"\n')
    assert reduce([out("a:trace", failure=Failure.RAISED)], config).action is Action.ABSTAIN
    assert reduce([out("a:trace", "deny"), out("a:g", "allow")], config).action is Action.ALLOW
    # twin: a gate with the same answer does decide
    assert reduce([out("a:gate", "deny"), out("a:g", "allow")], config).action is Action.DENY


def test_required_hook_missing_denies():
    d = reduce([out("a:1", "allow")], None, ["a:guard"])
    assert d.action is Action.DENY
    assert d.primary.failure is Failure.MISSING and d.primary.hook == "a:guard"
    assert d.reason == "failsecure: hook 'a:guard' is missing"
    # twin: present (whatever it said) is not missing
    assert reduce([out("a:1", "allow"), out("a:guard", "abstain")], None, ["a:guard"]).action is Action.ALLOW


def test_deciding_keeps_call_order_within_rank():
    d = reduce([out("a:1", "allow"), out("a:2", "allow"), out("a:3", "abstain")])
    assert [o.hook for o in d.deciding] == ["a:1", "a:2"]
    assert d.primary.hook == "a:1"


actions = st.sampled_from(["allow", "deny", "ask", "abstain"])
outcome_st = st.one_of(
    st.builds(lambda i, a: out(f"h:{i}", a), st.integers(0, 30), actions),
    st.builds(lambda i, f: out(f"h:{i}", failure=f), st.integers(0, 30), st.sampled_from(list(Failure))),
)


@given(st.lists(outcome_st, max_size=8), st.randoms())
def test_any_permutation_gives_the_same_decision(outcomes, rnd):
    shuffled = list(outcomes)
    rnd.shuffle(shuffled)
    a, b = reduce(outcomes), reduce(shuffled)
    assert a.action is b.action
    assert sorted(o.hook for o in a.deciding) == sorted(o.hook for o in b.deciding)


@given(st.lists(outcome_st, max_size=8), st.integers(0, 8))
def test_a_deny_anywhere_denies(outcomes, where):
    outcomes.insert(min(where, len(outcomes)), out("h:deny", "deny"))
    assert reduce(outcomes).action is Action.DENY


@given(st.lists(outcome_st, max_size=8), st.integers(0, 8))
def test_adding_an_abstain_never_changes_a_decision(outcomes, where):
    before = reduce(outcomes)
    outcomes.insert(min(where, len(outcomes)), out("h:quiet", "abstain"))
    after = reduce(outcomes)
    assert after.action is before.action and after.reason == before.reason


@given(st.lists(outcome_st, max_size=8))
def test_a_failure_anywhere_denies_under_default_policy(outcomes):
    outcomes.append(out("h:broken", failure=Failure.RAISED))
    assert reduce(outcomes, policy.Config()).action is Action.DENY
