"""The settling rule (``integrity.settle`` / ``asettle``): gates run one by one; a deny
in any pass stands; only the gates that judged a stale call run again; a stamp (a fresh
value in a field the same gate alone wrote) is accepted; a fight is unsettled."""

import asyncio
import itertools

import pytest

from failsecure import integrity, policy
from failsecure.verdict import Action, Failure, Outcome, Verdict

_fresh = itertools.count()


class Gates:
    """A call and gates that read and write it, each counting its runs and the
    arguments it judged."""

    def __init__(self, args):
        self.args = args
        self.runs: dict = {}
        self.seen: dict = {}

    def gate(self, name, act=None, answer="allow"):
        def step():
            self.runs[name] = self.runs.get(name, 0) + 1
            self.seen.setdefault(name, []).append(repr(self.args))
            said = answer(self.args) if callable(answer) else answer
            if act is not None:
                act(self.args)
            if said == "raise":
                return Outcome(hook=f"t:{name}", failure=Failure.RAISED, exception_type="RuntimeError")
            return Outcome(hook=f"t:{name}", verdict=Verdict(Action(said), f"{name} said {said}"))

        return step

    def settle(self, *steps, **kw):
        return integrity.settle(list(steps), lambda: self.args, "t:args", **kw)

    def asettle(self, *steps, **kw):
        async def wrap(step):
            return step()

        return asyncio.run(integrity.asettle([lambda s=s: wrap(s) for s in steps], lambda: self.args, "t:args", **kw))


def stamp(key):
    return lambda a: a.__setitem__(key, next(_fresh))


def policy_no_rm(a):
    return "deny" if "rm" in str(a.get("command")) else "allow"


def actions(outcomes):
    return [(o.hook, o.action if o.failure is None else o.failure) for o in outcomes]


def test_gates_that_change_nothing_run_once():
    g = Gates({"command": "ls"})
    out = g.settle(g.gate("a"), g.gate("b"), g.gate("c"))
    assert g.runs == {"a": 1, "b": 1, "c": 1}
    assert actions(out) == [("t:a", Action.ALLOW), ("t:b", Action.ALLOW), ("t:c", Action.ALLOW)]


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_stamping_gate_is_not_denied(where):
    g = Gates({"command": "ls"})
    gates = [g.gate("p1", answer=policy_no_rm), g.gate("p2", answer=policy_no_rm)]
    gates.insert({"first": 0, "middle": 1, "last": 2}[where], g.gate("stamper", stamp("idempotency_key")))
    out = g.settle(*gates)
    assert all(o.failure is None for o in out) and {o.action for o in out} == {Action.ALLOW}
    assert g.runs["stamper"] == 1  # nothing after it changed the call
    # the gates before the stamp judged again, with the stamp in it
    assert all("idempotency_key" in g.seen[name][-1] for name in ("p1", "p2"))
    # twin: the stamped call that a policy denies is denied
    g = Gates({"command": "rm -rf /"})
    gates = [g.gate("p1", answer=policy_no_rm)]
    gates.insert(0 if where == "first" else 1, g.gate("stamper", stamp("idempotency_key")))
    out = g.settle(*gates)
    assert ("t:p1", Action.DENY) in actions(out)


def test_two_stampers_and_a_rewriter_settle():
    g = Gates({"command": "ls"})
    normalize = lambda a: a.__setitem__("command", a["command"].strip())  # noqa: E731
    g.args["command"] = " ls "
    out = g.settle(g.gate("s1", stamp("key")), g.gate("p", answer=policy_no_rm), g.gate("s2", stamp("ts")), g.gate("norm", normalize))
    assert all(o.failure is None for o in out), actions(out)
    assert g.args["command"] == "ls"
    assert g.runs == {"s1": 2, "p": 2, "s2": 2, "norm": 1}
    # every gate has judged the normalized command
    assert all("' ls '" not in g.seen[name][-1] for name in ("s1", "p", "s2"))


def test_a_rewrite_after_a_policy_is_judged_by_the_policy():
    g = Gates({"command": "ls"})
    out = g.settle(g.gate("policy", answer=policy_no_rm), g.gate("rewriter", lambda a: a.__setitem__("command", "rm -rf /")))
    assert ("t:policy", Action.DENY) in actions(out)
    assert g.runs == {"policy": 2, "rewriter": 1}
    # twin: a harmless rewrite is judged again and allowed
    g = Gates({"command": "ls"})
    out = g.settle(g.gate("policy", answer=policy_no_rm), g.gate("rewriter", lambda a: a.__setitem__("command", "ls -la")))
    assert {o.action for o in out} == {Action.ALLOW} and g.runs == {"policy": 2, "rewriter": 1}


def test_gates_after_the_last_change_run_once():
    g = Gates({"command": "ls"})
    once = {"done": False}

    def rewrite(a):
        if not once["done"]:
            once["done"] = True
            a["command"] = "ls -la"

    out = g.settle(g.gate("a"), g.gate("b"), g.gate("rewriter", rewrite), g.gate("c"), g.gate("d"))
    assert g.runs == {"a": 2, "b": 2, "rewriter": 1, "c": 1, "d": 1}
    assert all(o.failure is None for o in out)


def test_a_deny_in_a_later_pass_stands():
    g = Gates({"command": "ls"})
    state = {"n": 0}

    def flip(a):  # allows the first look, denies the rewritten call
        state["n"] += 1
        return "allow" if state["n"] == 1 else "deny"

    out = g.settle(g.gate("policy", answer=flip), g.gate("rewriter", lambda a: a.__setitem__("command", "ls -la")), g.gate("after"))
    assert ("t:policy", Action.DENY) in actions(out)
    assert g.runs == {"policy": 2, "rewriter": 1, "after": 1}
    # a deny ends the pass at once: the gates after it do not run
    g = Gates({"command": "rm"})
    out = g.settle(g.gate("policy", answer=policy_no_rm), g.gate("after"))
    assert g.runs == {"policy": 1} and actions(out) == [("t:policy", Action.DENY)]


def test_a_tolerated_failure_does_not_end_the_pass(write_config):
    write_config('[hooks."t:flaky"]\non_error = "allow"\n')
    g = Gates({"command": "rm"})
    out = g.settle(g.gate("flaky", answer="raise"), g.gate("policy", answer=policy_no_rm))
    assert g.runs == {"flaky": 1, "policy": 1}
    assert ("t:policy", Action.DENY) in actions(out)
    # twin: a failure the config counts as a deny ends the pass
    policy.reload()
    write_config("")
    g = Gates({"command": "rm"})
    out = g.settle(g.gate("flaky", answer="raise"), g.gate("policy", answer=policy_no_rm))
    assert g.runs == {"flaky": 1} and actions(out) == [("t:flaky", Failure.RAISED)]


def test_an_observer_deny_does_not_end_the_pass(write_config):
    write_config('[hooks."t:watch"]\nrole = "observer"\n')
    g = Gates({"command": "rm"})
    out = g.settle(g.gate("watch", answer="deny"), g.gate("policy", answer=policy_no_rm))
    assert g.runs == {"watch": 1, "policy": 1} and ("t:policy", Action.DENY) in actions(out)


def test_two_gates_fighting_over_one_field_are_unsettled():
    g = Gates({"mode": "x"})
    out = g.settle(g.gate("a", lambda a: a.__setitem__("mode", "a")), g.gate("b", lambda a: a.__setitem__("mode", "b")))
    assert out[-1].hook == "t:args" and out[-1].failure is Failure.INVALID
    # twin: two gates writing the same value agree and settle
    g = Gates({"mode": "x"})
    out = g.settle(g.gate("a", lambda a: a.__setitem__("mode", "a")), g.gate("b", lambda a: a.__setitem__("mode", "a")))
    assert all(o.failure is None for o in out) and g.runs == {"a": 1, "b": 1}


def test_a_gate_that_stamps_a_field_another_gate_also_writes_is_a_rewrite():
    g = Gates({"command": "ls"})
    # a writes key (fresh each time); b overwrites key: the field is not a's alone
    out = g.settle(g.gate("a", stamp("key")), g.gate("p"), g.gate("b", stamp("key")))
    assert out[-1].failure is Failure.INVALID and out[-1].hook == "t:args"
    # twin: each stamping its own field settles
    g = Gates({"command": "ls"})
    out = g.settle(g.gate("a", stamp("key")), g.gate("p"), g.gate("b", stamp("other")))
    assert all(o.failure is None for o in out)


def test_a_field_the_model_sent_rewritten_on_each_run_is_taken_back_or_judged():
    """A gate that rewrites a field of the call as it arrived, differently on each run:
    its re-run's value is taken back, so the call runs with the value the policy judged
    (as upstream, which runs each gate once, runs it)."""
    g = Gates({"command": "ls"})
    values = iter(["ls -1", "rm -rf /", "ls -2", "ls -3"])
    once = {"done": False}

    def later(a):
        if not once["done"]:
            once["done"] = True
            a["note"] = "x"

    out = g.settle(g.gate("swapper", lambda a: a.__setitem__("command", next(values))), g.gate("p", answer=policy_no_rm), g.gate("later", later))
    assert all(o.failure is None for o in out) and {o.action for o in out} == {Action.ALLOW}
    assert g.args == {"command": "ls -1", "note": "x"} and g.runs == {"swapper": 2, "p": 2, "later": 1}
    # twin: where the call is replaced (it cannot be put back) the re-run's value is a
    # rewrite, and the policy judges it
    holder = {"args": {"command": "ls"}}
    values = iter(["ls -1", "rm -rf /", "ls -2", "ls -3"])
    once["done"] = False

    def swapper():
        holder["args"] = dict(holder["args"], command=next(values))
        return Outcome(hook="t:swapper", verdict=Verdict(Action.ALLOW))

    def p():
        return Outcome(hook="t:p", verdict=Verdict(Action(policy_no_rm(holder["args"]))))

    def later_step():
        later(holder["args"])
        return Outcome(hook="t:later", verdict=Verdict(Action.ALLOW))

    out = integrity.settle([swapper, p, later_step], lambda: holder["args"], "t:args")
    assert ("t:p", Action.DENY) in actions(out)


def test_gates_refreshing_fields_the_call_arrived_with_settle_on_the_values_judged():
    """Two gates that each refresh a field the model sent (a timestamp, a request id) on
    every run settle, as upstream runs them: each re-run's fresh value is taken back, and
    the call runs with the values the policy judged."""
    arrived = {"command": "ls", "timestamp": 0, "request_id": "model"}
    g = Gates(dict(arrived))
    clock = g.gate("clock", lambda a: a.__setitem__("timestamp", next(_fresh)))
    ids = g.gate("ids", lambda a: a.__setitem__("request_id", f"id-{next(_fresh)}"))
    out = g.settle(clock, ids, g.gate("p", answer=policy_no_rm))
    assert all(o.failure is None for o in out) and {o.action for o in out} == {Action.ALLOW}
    assert g.seen["p"][-1] == repr(g.args) and g.args["request_id"] != "model"
    # twin: the values the policy judged are still the policy's to deny
    g = Gates(dict(arrived))
    clock = g.gate("clock", lambda a: a.__setitem__("timestamp", next(_fresh)))
    ids = g.gate("ids", lambda a: a.__setitem__("request_id", f"id-{next(_fresh)}"))
    out = g.settle(clock, ids, g.gate("p", answer=lambda a: "deny" if a["request_id"].startswith("id-") else "allow"))
    assert ("t:p", Action.DENY) in actions(out) and all(o.failure is None for o in out)


def test_a_rewrite_in_a_later_pass_makes_the_gates_after_the_first_change_judge_again():
    """The round-1 rule alone would leave the gates after the first pass's last change
    judged on a call a re-run rewrote: they run again."""
    g = Gates({"command": "ls"})
    n = {"a": 0}

    def a_rewrites_on_second_run(a):
        n["a"] += 1
        if n["a"] == 2:
            a["command"] = "rm -rf /"

    once = {"done": False}

    def b_rewrites_once(a):
        if not once["done"]:
            once["done"] = True
            a["flag"] = True

    out = g.settle(g.gate("a", a_rewrites_on_second_run), g.gate("b", b_rewrites_once), g.gate("policy", answer=policy_no_rm))
    assert ("t:policy", Action.DENY) in actions(out)
    assert g.runs["policy"] == 2


def test_a_call_that_cannot_be_pictured_is_unsettled_with_two_gates():
    g = Gates({"x": 1})
    out = g.settle(g.gate("a"), g.gate("b"), picture=lambda v: integrity.CHANGED)
    assert out[-1].failure is Failure.INVALID and out[-1].hook == "t:args"
    # twin: a single gate needs no picture and nothing to settle
    g = Gates({"x": 1})
    out = g.settle(g.gate("a"), picture=lambda v: integrity.CHANGED)
    assert actions(out) == [("t:a", Action.ALLOW)]


def test_stamps_outside_the_stamp_root_are_rewrites():
    """With a picture of (tool, arguments), a gate that swaps the tool on each run is a
    rewriter: only the arguments' own fields can be stamped."""
    g = Gates({"tool": "a", "args": {"command": "ls"}})
    out = g.settle(g.gate("s", lambda a: a.__setitem__("tool", object())), g.gate("p"), g.gate("r", stamp("x")), stamp_root=("args",))
    assert out[-1].failure is Failure.INVALID
    g = Gates({"tool": "a", "args": {"command": "ls"}})
    out = g.settle(g.gate("s", lambda a: a["args"].__setitem__("k", next(_fresh))), g.gate("p"), g.gate("r", stamp("x")), stamp_root=("args",))
    assert all(o.failure is None for o in out)


def test_async_settle_follows_the_same_rule():
    g = Gates({"command": "ls"})
    out = g.asettle(g.gate("p", answer=policy_no_rm), g.gate("stamper", stamp("key")), g.gate("after"))
    assert all(o.failure is None for o in out) and g.runs == {"p": 2, "stamper": 1, "after": 1}
    g = Gates({"command": "ls"})
    out = g.asettle(g.gate("p", answer=policy_no_rm), g.gate("rewriter", lambda a: a.__setitem__("command", "rm")))
    assert ("t:p", Action.DENY) in actions(out)
    g = Gates({"mode": "x"})
    out = g.asettle(g.gate("a", lambda a: a.__setitem__("mode", "a")), g.gate("b", lambda a: a.__setitem__("mode", "b")))
    assert out[-1].failure is Failure.INVALID


def test_a_step_may_answer_several_outcomes():
    g = Gates({"command": "ls"})

    def two():
        return [Outcome(hook="t:x", verdict=Verdict(Action.ALLOW)), Outcome(hook="t:y", verdict=Verdict(Action.ASK))]

    out = integrity.settle([two, g.gate("p")], lambda: g.args, "t:args")
    assert [o.hook for o in out] == ["t:x", "t:y", "t:p"]


def test_finish_pass_runs_the_rest_of_the_pass_after_a_deny_and_the_deny_stands():
    g = Gates({"command": "rm"})
    rewrite = lambda a: a.__setitem__("command", "ls")  # noqa: E731  (after the deny: never re-judged)
    out = g.settle(g.gate("policy", answer=policy_no_rm), g.gate("after"), g.gate("rewriter", rewrite), finish_pass=True)
    assert g.runs == {"policy": 1, "after": 1, "rewriter": 1}
    assert ("t:policy", Action.DENY) in actions(out) and ("t:after", Action.ALLOW) in actions(out)
    # twin: without it the pass ends at the deny
    g = Gates({"command": "rm"})
    out = g.settle(g.gate("policy", answer=policy_no_rm), g.gate("after"), g.gate("rewriter", rewrite))
    assert g.runs == {"policy": 1} and actions(out) == [("t:policy", Action.DENY)]


def test_whole_rounds_with_an_origin_accept_a_stamp_in_a_key_an_earlier_round_added():
    """For a dispatcher whose gates run concurrently (no per-gate order): a round that
    only changes a key earlier rounds added settles."""
    arrived = {"command": "ls"}
    args = dict(arrived, key="k-0")  # the first round (run by the adapter) added the key
    rounds = []

    def round_(call):
        rounds.append(1)
        args["key"] = f"k-{next(_fresh)}"
        return [Outcome(hook="t:a", verdict=Verdict(Action.ALLOW))]

    out = integrity.until_stable(round_, lambda: args, "t:args", origin=arrived)
    assert len(rounds) == 1 and [o.failure for o in out] == [None]
    # twin: a round that keeps changing a key the model sent never settles
    rounds.clear()

    def rewriting_round(call):
        rounds.append(1)
        args["command"] = f"ls {len(rounds)}"
        return [Outcome(hook="t:a", verdict=Verdict(Action.ALLOW))]

    out = asyncio.run(_arounds(rewriting_round, args, arrived))
    assert len(rounds) == integrity.MAX_ROUNDS and out[-1].failure is Failure.INVALID
    # without an origin the stamp is not known as one
    rounds.clear()
    out = integrity.until_stable(round_, lambda: args, "t:args")
    assert out[-1].failure is Failure.INVALID


async def _arounds(round_, args, arrived):
    async def run(call):
        return round_(call)

    return await integrity.auntil_stable(run, lambda: args, "t:args", origin=arrived)


def test_no_stamp_when_the_call_as_it_arrived_could_not_be_pictured(monkeypatch):
    g = Gates({"big": list(range(50)), "command": "ls"})

    def shrink_then_stamp(a):
        a.pop("big", None)
        a["key"] = next(_fresh)

    monkeypatch.setattr(integrity, "BUDGET", 20)
    out = g.settle(g.gate("s", shrink_then_stamp), g.gate("p"), g.gate("r", stamp("other")),
                   picture=lambda v: integrity.fingerprint(v, integrity.BUDGET))
    assert out[-1].failure is Failure.INVALID
    # twin: the same gates on a call that can be pictured settle
    monkeypatch.setattr(integrity, "BUDGET", 1000)
    g = Gates({"big": list(range(50)), "command": "ls"})
    out = g.settle(g.gate("s", shrink_then_stamp), g.gate("p"), g.gate("r", stamp("other")),
                   picture=lambda v: integrity.fingerprint(v, integrity.BUDGET))
    assert all(o.failure is None for o in out)


def _stamping_round(holder, seen, fresh):
    """A round whose one gate judges the call as it is now, then stamps the key with a
    value nobody judged (``fresh``: in place, or as a new call object)."""

    def round_(call):
        args = holder["args"]
        seen.append(args["key"])
        if fresh == "in place":
            args["key"] = f"unjudged-{next(_fresh)}"
        else:
            holder["args"] = dict(args, key=f"unjudged-{next(_fresh)}")
        return [Outcome(hook="t:a", verdict=Verdict(Action.ALLOW))]

    return round_


@pytest.mark.parametrize("run", ["sync", "async"])
def test_whole_rounds_take_a_stamp_back_so_the_judged_value_runs(run):
    arrived = {"command": "ls"}
    holder = {"args": dict(arrived, key="k-0")}  # the first round added the key
    seen = []
    round_ = _stamping_round(holder, seen, "in place")
    if run == "sync":
        out = integrity.until_stable(round_, lambda: holder["args"], "t:args", origin=arrived)
    else:
        async def one(call):
            return round_(call)

        out = asyncio.run(integrity.auntil_stable(one, lambda: holder["args"], "t:args", origin=arrived))
    assert [o.failure for o in out] == [None]  # the stamping hook is not denied
    assert seen == ["k-0"] and holder["args"] == {"command": "ls", "key": "k-0"}  # what the gate judged runs


@pytest.mark.parametrize("restore", [False, True])
def test_whole_rounds_a_stamp_on_a_new_object_is_taken_back_by_restore_or_is_a_rewrite(restore):
    arrived = {"command": "ls"}
    holder = {"args": dict(arrived, key="k-0")}
    seen = []
    put_back = (lambda value: holder.__setitem__("args", value)) if restore else None
    out = integrity.until_stable(_stamping_round(holder, seen, "new object"), lambda: holder["args"], "t:args",
                                 origin=arrived, restore=put_back)
    if restore:  # the allow twin: put back, the judged value runs
        assert [o.failure for o in out] == [None] and seen == ["k-0"]
        assert holder["args"] == {"command": "ls", "key": "k-0"}
    else:  # cannot be put back: a rewrite, judged again, never settles
        assert out[-1].failure is Failure.INVALID and len(seen) == integrity.MAX_ROUNDS


def test_a_rename_and_back_settles_on_the_call_every_gate_judged():
    """One gate renames the tool, a later one renames it back: the pass ends with the
    call as it arrived, judged by the policy. The renamer's re-run makes the very change
    it made from that call in pass 1 (which the later gate took back): a repeat, taken
    back; the call runs as upstream runs it (it was unsettled before)."""
    g = Gates({"name": "run", "command": "ls"})
    out = g.settle(g.gate("to", lambda a: a.__setitem__("name", "dangerous")), g.gate("back", lambda a: a.__setitem__("name", "run")),
                   g.gate("policy", answer=lambda a: "deny" if a["name"] == "dangerous" else "allow"))
    assert all(o.failure is None for o in out) and ("t:policy", Action.ALLOW) in actions(out)
    assert g.args == {"name": "run", "command": "ls"} and g.runs == {"to": 2, "back": 1, "policy": 1}


def test_a_rename_and_back_to_another_name_is_judged():
    """The deny twin: renamed back to another name than the one the call arrived with,
    the renamer's re-run is handed another call than pass 1's: a rewrite, and the policy
    judges the name that would run."""
    g = Gates({"name": "run", "command": "ls"})
    out = g.settle(g.gate("to", lambda a: a.__setitem__("name", "dangerous")), g.gate("away", lambda a: a.__setitem__("name", "rm")),
                   g.gate("policy", answer=lambda a: "deny" if a["name"] in ("dangerous", "rm") else "allow"))
    assert ("t:policy", Action.DENY) in actions(out)


def test_a_repeat_needs_the_call_its_earlier_pass_ended_with():
    """A gate that undoes a sanitizer each time it runs is handed, in its re-run, the
    sanitized call, not the one pass 1 handed it (nor one a pass ended with after its
    change): no repeat, a fight over one field, unsettled; the undone call never runs."""
    g = Gates({"command": "ls"})

    def undo(a):
        a["command"] = "rm -rf /"

    def sanitize(a):
        if "rm" in a["command"]:
            a["command"] = "ls -i"

    out = g.settle(g.gate("undo", undo), g.gate("sanitize", sanitize), g.gate("policy", answer=policy_no_rm))
    assert out[-1].hook == "t:args" and out[-1].failure is Failure.INVALID


def _policy(hook, call):
    return Outcome(hook=hook, verdict=Verdict(Action.DENY if call["v"] == "evil" else Action.ALLOW))


@pytest.mark.parametrize("run", ["sync", "async"])
def test_whole_rounds_whose_gates_run_in_order_never_settle(run):
    """Whole rounds are for gates run concurrently on one input. A round that runs A
    (sets good), P (judges), B (sets evil) in order on its input starts and ends with
    evil from round 2 on, yet P only ever judged good: the round changed the input its
    gates were handed, so it never settles, and the call is denied (``invalid``), never
    run with evil. (Written to run against the earlier API too, whose rounds were handed
    nothing and used the live call: there it settled on evil.)"""
    live = {"v": "good"}
    judged = []

    def one_round(*handed):
        call = handed[0] if handed else live
        call["v"] = "good"  # A
        judged.append(call["v"])
        p = _policy("t:P", call)  # P judges A's output
        call["v"] = "evil"  # B, after P
        return [Outcome(hook="t:A", verdict=Verdict(Action.ALLOW)), p, Outcome(hook="t:B", verdict=Verdict(Action.ALLOW))]

    if run == "sync":
        out = integrity.until_stable(one_round, lambda: live, "t:args", origin={"v": "good"})
    else:
        async def one(*handed):
            return one_round(*handed)

        out = asyncio.run(integrity.auntil_stable(one, lambda: live, "t:args", origin={"v": "good"}))
    assert out[-1].hook == "t:args" and out[-1].failure is Failure.INVALID
    assert judged == ["good"] * integrity.MAX_ROUNDS and live == {"v": "good"}


@pytest.mark.parametrize("rewrite", ["better", "evil"])
def test_whole_rounds_of_concurrent_gates_run_what_every_gate_was_handed(rewrite):
    """The twins: gates run concurrently, each on its own copy of the round's input; B's
    rewrite lands on the live call. A harmless rewrite settles in round 2 on the value
    P judged there (allow); an evil one is judged by P in round 2 and denied."""
    holder = {"args": {"v": "good"}}
    judged = []

    def one_round(call):
        p_in, b_in = integrity.snapshot(call), integrity.snapshot(call)
        judged.append(p_in["v"])
        p = _policy("t:P", p_in)
        holder["args"] = dict(b_in, v=rewrite)  # B's rewrite, applied after the round
        return [p, Outcome(hook="t:B", verdict=Verdict(Action.ALLOW))]

    out = integrity.until_stable(one_round, lambda: holder["args"], "t:args", origin={"v": "good"})
    if rewrite == "better":
        assert [o.failure for o in out] == [None, None] and {o.action for o in out} == {Action.ALLOW}
        assert judged == ["good", "better"] and holder["args"] == {"v": "better"}
    else:
        assert ("t:P", Action.DENY) in actions(out) and judged == ["good", "evil"]


# ---------------------------------------------------------------- end=: the last picture


def _set(key, value):
    def act(args):
        args[key] = value

    return act


def test_end_is_the_picture_of_the_call_the_gates_left():
    g = Gates({"cmd": "ls"})
    end: list = []
    g.settle(g.gate("a"), g.gate("b", act=_set("cmd", "pwd")), end=end)
    assert g.runs == {"a": 2, "b": 1}
    assert end == [integrity.fingerprint({"cmd": "pwd"})]


def test_end_after_a_rewrite_past_the_settling_is_no_picture_of_the_rewrite():
    g = Gates({"cmd": "ls"})
    end: list = []
    g.settle(g.gate("a"), g.gate("b"), end=end)
    g.args["cmd"] = "rm -rf /"  # after the last gate: what end holds was judged, this was not
    assert end == [integrity.fingerprint({"cmd": "ls"})] and end[0] != integrity.fingerprint(g.args)


def test_end_of_one_gate_is_changed_the_caller_pictures_the_call():
    g = Gates({"cmd": "ls"})
    end: list = []
    g.settle(g.gate("a", act=_set("cmd", "pwd")), end=end)
    assert end == [integrity.CHANGED]


def test_end_of_an_async_settling():
    g = Gates({"cmd": "ls"})
    end: list = []

    def later(step):
        async def run():
            return step()

        return run

    asyncio.run(integrity.asettle([later(g.gate("a")), later(g.gate("b", act=_set("cmd", "pwd")))], lambda: g.args, "t:args", end=end))
    assert end == [integrity.fingerprint({"cmd": "pwd"})]
