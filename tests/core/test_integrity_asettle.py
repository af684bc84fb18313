"""``integrity.asettle`` follows ``settle``'s rule (docs/integrity.md): every scenario of
tests/core/test_integrity_settle.py that settles through its ``Gates.settle`` is run again
with the gates awaited one by one; plus what only the async form has (its one-gate path,
``first`` as a coroutine function, the unsettled outcome's hook)."""

import asyncio
import inspect

import pytest
import test_integrity_settle as rule
from test_integrity_settle import Gates, actions, policy_no_rm, stamp

from failsecure import integrity
from failsecure.verdict import Action, Failure, Outcome, Verdict


def _scenarios():
    out = []
    for name, fn in vars(rule).items():
        if not name.startswith("test_") or "g.settle(" not in inspect.getsource(fn):
            continue
        params = list(inspect.signature(fn).parameters)
        if params == ["where"]:
            out += [pytest.param(name, {"where": w}, id=f"{name}[{w}]") for w in ("first", "middle", "last")]
        elif params in ([], ["write_config"], ["monkeypatch"]):
            out.append(pytest.param(name, {p: None for p in params}, id=name))
    return out


SCENARIOS = _scenarios()


def test_the_sync_scenarios_are_found():
    assert len(SCENARIOS) >= 20


@pytest.mark.parametrize("name, kwargs", SCENARIOS)
def test_asettle_follows_the_rule_of_settle(name, kwargs, monkeypatch, request):
    monkeypatch.setattr(Gates, "settle", Gates.asettle)
    args = {k: request.getfixturevalue(k) for k in kwargs if k != "where"}
    if "where" in kwargs:
        args["where"] = kwargs["where"]
    getattr(rule, name)(**args)


def _astep(outcome):
    async def step():
        return outcome

    return step


def test_one_async_gate_is_awaited_once_and_its_outcomes_returned():
    one = Outcome(hook="t:a", verdict=Verdict(Action.ALLOW))
    two = [Outcome(hook="t:x", verdict=Verdict(Action.ALLOW)), Outcome(hook="t:y", verdict=Verdict(Action.DENY, "no"))]
    assert asyncio.run(integrity.asettle([_astep(one)], lambda: {}, "t:args")) == [one]
    got = asyncio.run(integrity.asettle([_astep(two)], lambda: {}, "t:args"))
    assert got == two and got is not two


def test_an_unsettled_async_call_is_denied_under_its_hook():
    g = Gates({"mode": "x"})
    out = g.asettle(g.gate("a", lambda a: a.__setitem__("mode", "a")), g.gate("b", lambda a: a.__setitem__("mode", "b")))
    assert out[-1].failure is Failure.INVALID and out[-1].hook == "t:args"
    assert [o.hook for o in out] == ["t:a", "t:b", "t:args"]


def test_a_fail_closed_hook_ends_an_async_pass(write_config):
    """``fail_closed``: a failure of these hooks denies whatever the config says."""
    write_config('on_error = "allow"\n')
    g = Gates({"command": "ls"})
    out = g.asettle(g.gate("flaky", answer="raise"), g.gate("policy", answer=policy_no_rm), fail_closed=("t:flaky",))
    assert g.runs == {"flaky": 1} and actions(out) == [("t:flaky", Failure.RAISED)]
    # twin: tolerated, the pass goes on
    g = Gates({"command": "ls"})
    out = g.asettle(g.gate("flaky", answer="raise"), g.gate("policy", answer=policy_no_rm))
    assert g.runs == {"flaky": 1, "policy": 1}


def test_an_async_first_pass_is_given_how_to_picture_the_call_and_its_picture():
    g = Gates({"command": "ls"})
    seen = []
    steps = [g.gate("s", stamp("key")), g.gate("p", answer=policy_no_rm)]

    async def first(take, pic):
        seen.append(pic)
        ran = []
        for step in steps:
            outs = step()
            ran.append((outs, take(g.args)))
        return ran

    async def wrap(step):
        return step()

    out = asyncio.run(integrity.asettle([lambda s=s: wrap(s) for s in steps], lambda: g.args, "t:args", first=first))
    assert seen == [integrity.fingerprint({"command": "ls"})]
    assert all(o.failure is None for o in out) and g.runs == {"s": 1, "p": 1}


def test_an_async_save_puts_a_stamped_call_back():
    """``save``: how the call is put back; a stamp in a re-run is taken back through it."""
    holder = {"call": {"command": "ls"}}
    saved = []

    def save(call):
        copy = dict(call)

        def restore(now):
            saved.append(copy)
            holder["call"] = dict(copy)
            return True

        return restore

    runs = {"s": 0, "r": 0}

    async def stamper():
        runs["s"] += 1
        holder["call"] = {**holder["call"], "key": runs["s"]}  # a new object each run: only ``save`` restores it
        return Outcome(hook="t:s", verdict=Verdict(Action.ALLOW))

    async def policy():
        return Outcome(hook="t:p", verdict=Verdict(Action.ALLOW))

    async def rewriter():
        runs["r"] += 1
        if runs["s"] == 1:
            holder["call"] = {**holder["call"], "command": "ls -l"}
        return Outcome(hook="t:r", verdict=Verdict(Action.ALLOW))

    out = asyncio.run(integrity.asettle([stamper, policy, rewriter], lambda: holder["call"], "t:args", save=save))
    assert all(o.failure is None for o in out) and saved and holder["call"]["key"] == 1
    assert runs == {"s": 2, "r": 1}  # the stamp taken back: nobody judges again
    # twin: without ``save`` the new object cannot be put back, the stamp is a rewrite
    holder["call"], saved[:] = {"command": "ls"}, []
    runs.update(s=0, r=0)
    out = asyncio.run(integrity.asettle([stamper, policy, rewriter], lambda: holder["call"], "t:args"))
    assert all(o.failure is None for o in out) and not saved and holder["call"]["key"] == 2
    assert runs == {"s": 2, "r": 2}  # the rewrite judged by the gate that saw an older call
