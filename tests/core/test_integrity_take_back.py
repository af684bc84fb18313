"""Taking a stamp back (docs/integrity.md): in a re-run, a change confined to paths the same
gate alone wrote before, inside the stamp root, is a stamp: the call is put back (a plain
dict or list in place, or the adapter's ``save``) so the value every other gate judged
runs. Where the call cannot be put back, or does not read as before once put back, the
change is a rewrite and the gates that judged an older call judge again. Whole rounds
(``until_stable`` with ``origin``) take back a round that only changed what earlier
rounds added; any other change is judged again."""

import asyncio
import itertools

from test_integrity_settle import Gates, actions, policy_no_rm

from failsecure import integrity
from failsecure.verdict import Action, Failure, Outcome, Verdict

_fresh = itertools.count(1000)


def allow(hook):
    return Outcome(hook=hook, verdict=Verdict(Action.ALLOW))


class Call:
    """A call replaced by a new object on every change (only ``save`` can put it back),
    with a stamper, a policy and a gate that rewrites it once."""

    def __init__(self):
        self.call = {"command": "ls"}
        self.runs = {"s": 0, "p": 0, "r": 0}

    def stamper(self):
        self.runs["s"] += 1
        self.call = {**self.call, "key": next(_fresh)}
        return allow("t:s")

    def policy(self):
        self.runs["p"] += 1
        return allow("t:p")

    def rewriter(self):
        self.runs["r"] += 1
        if self.runs["r"] == 1:
            self.call = {**self.call, "command": "ls -l"}
        return allow("t:r")

    def settle(self, **kw):
        return integrity.settle([self.stamper, self.policy, self.rewriter], lambda: self.call, "t:args", **kw)


def test_save_is_asked_only_before_a_gate_runs_again():
    c = Call()
    asked = []

    def save(call):
        asked.append(c.runs["s"] + c.runs["p"] + c.runs["r"])  # gates run so far
        judged = dict(call)

        def restore(now):
            c.call = dict(judged)
            return True

        return restore

    out = c.settle(save=save)
    assert all(o.failure is None for o in out)
    assert asked == [3, 4]  # before each gate of pass 2 (the stamper, the policy), never in pass 1
    assert c.runs == {"s": 2, "p": 2, "r": 1}


def test_a_save_that_cannot_put_the_call_back_makes_the_stamp_a_rewrite():
    c = Call()
    out = c.settle(save=lambda call: None)
    assert all(o.failure is None for o in out)
    assert c.runs["r"] == 2  # the rewriter judged the stamped call again


def test_a_restore_that_raised_is_not_a_restore():
    c = Call()

    def save(call):
        judged = dict(call)

        def restore(now):
            c.call = dict(judged)  # put back, then failed: not to be trusted
            raise RuntimeError("restore failed")

        return restore

    c.settle(save=save)
    assert c.runs["r"] == 2


def test_a_restore_that_says_it_did_but_did_not_is_a_rewrite():
    c = Call()
    c.settle(save=lambda call: (lambda now: True))
    assert c.runs["r"] == 2
    # twin: a restore that does put the call back takes the stamp back
    c = Call()

    def save(call):
        judged = dict(call)

        def restore(now):
            c.call = dict(judged)
            return True

        return restore

    c.settle(save=save)
    assert c.runs["r"] == 1


def test_a_list_call_is_put_back_in_place():
    args = ["ls", {}]
    runs = {"s": 0, "r": 0}

    def stamper():
        runs["s"] += 1
        args[1]["key"] = next(_fresh)
        return allow("t:s")

    def rewriter():
        runs["r"] += 1
        if runs["r"] == 1:
            args[0] = "ls -l"
        return allow("t:r")

    out = integrity.settle([stamper, lambda: allow("t:p"), rewriter], lambda: args, "t:args")
    assert all(o.failure is None for o in out)
    assert runs == {"s": 2, "r": 1}  # the stamp taken back: the rewriter does not judge again
    assert args[0] == "ls -l" and list(args[1]) == ["key"]


def test_a_stamp_outside_the_stamp_root_is_a_rewrite_at_any_depth():
    """A re-run's fresh value under ``meta`` (outside the root ``args``) is a rewrite: kept,
    and judged by the gates after it; the same under ``args`` is a stamp, taken back."""
    for where, stamp_is_taken_back in (("meta", False), ("args", True)):
        g = Gates({"meta": {"ts": 0}, "args": {"command": "ls"}})
        judged = []
        out = g.settle(g.gate("s", lambda a: a[where].__setitem__("ts", next(_fresh))), g.gate("p"),
                       g.gate("r", lambda a: (judged.append(a[where]["ts"]), a["args"].__setitem__("k", next(_fresh)))),
                       stamp_root=("args",))
        assert all(o.failure is None for o in out)
        assert g.runs == {"s": 2, "p": 2, "r": 1 if stamp_is_taken_back else 2}
        assert g.args[where]["ts"] == judged[-1]  # the value the last gate judged runs


def test_a_stamper_that_also_rewrites_another_field_is_judged_again():
    runs = {"s": 0}

    def stamp_then_rewrite(a):
        runs["s"] += 1
        a["key"] = next(_fresh)
        if runs["s"] == 2:
            a["command"] = "rm -rf /"  # beside its own stamp: a rewrite

    g = Gates({"command": "ls"})
    out = g.settle(g.gate("s", stamp_then_rewrite), g.gate("p", answer=policy_no_rm),
                   g.gate("r", lambda a: a.__setitem__("n", 1)))
    assert ("t:p", Action.DENY) in actions(out)


def test_a_rerun_that_makes_the_call_unpicturable_is_never_taken_back():
    """A picture that cannot be made reads as changed at every look: no stamp, no repeat."""
    def picture(call):
        return integrity.CHANGED if call.get("huge") else integrity.fingerprint(call)

    g = Gates({"command": "ls"})
    runs = {"p": 0}

    def blow_up(a):
        runs["p"] += 1
        if runs["p"] == 2:
            a["huge"] = True

    out = g.settle(g.gate("p", blow_up), g.gate("r", lambda a: a.__setitem__("command", "ls -l")), picture=picture)
    assert out[-1].failure is Failure.INVALID


def test_a_step_with_no_opinion_does_not_end_the_pass():
    g = Gates({"command": "ls"})
    out = integrity.settle([lambda: Outcome(hook="t:quiet"), g.gate("p")], lambda: g.args, "t:args")
    assert [o.hook for o in out] == ["t:quiet", "t:p"] and g.runs == {"p": 1}


def test_one_gate_answering_several_outcomes_returns_them_flat():
    two = [allow("t:x"), allow("t:y")]
    assert integrity.settle([lambda: two], lambda: {}, "t:args") == two


def test_a_first_pass_is_given_how_to_picture_the_call_and_its_picture():
    g = Gates({"command": "ls"})
    steps = [g.gate("policy0"), g.gate("r", lambda a: a.__setitem__("command", "ls -l")), g.gate("deny", answer="deny")]
    seen = []

    def first(take, pic):
        seen.append(pic)
        return [(step(), take(g.args)) for step in steps]

    out = integrity.settle(steps, lambda: g.args, "t:args", first=first)
    assert seen == [integrity.fingerprint({"command": "ls"})]
    # the deny in the first pass stands: policy0, which judged an older call, is not run again
    assert g.runs == {"policy0": 1, "r": 1, "deny": 1} and ("t:deny", Action.DENY) in actions(out)


def test_whole_rounds_take_a_stamp_back_on_a_list_call():
    args = ["ls", {}]
    handed = []

    def round_(call):
        handed.append(integrity.snapshot(call))
        args[1]["key"] = next(_fresh)  # the first round adds a field, later rounds refresh only it
        return [allow("t:r")]

    out = integrity.until_stable(round_, lambda: args, "t:args", origin=["ls", {}])
    assert all(o.failure is None for o in out) and len(handed) == 2
    assert args == handed[1]  # the call that round judged runs


def test_whole_rounds_judge_again_a_change_of_a_field_the_call_arrived_with():
    call = {"command": "ls", "n": 0}

    def round_(given):
        call["n"] += 1  # a field of the call as it arrived: never a stamp
        return [allow("t:r")]

    out = integrity.until_stable(round_, lambda: call, "t:args", origin={"command": "ls", "n": 0})
    assert out[-1].failure is Failure.INVALID and call["n"] == integrity.MAX_ROUNDS


def test_a_round_is_handed_the_live_call_when_it_cannot_be_copied():
    box = []
    loop = (box,)
    box.append(loop)  # a cycle through a tuple: no copy
    call = {"a": loop}
    assert integrity.snapshot(call) is integrity.CHANGED
    handed = []

    def round_(given):
        handed.append(given)
        return [allow("t:r")]

    out = integrity.until_stable(round_, lambda: call, "t:args")
    assert handed == [call] and handed[0] is call and all(o.failure is None for o in out)


def test_async_whole_rounds_take_a_stamp_on_a_new_object_back_by_restore():
    holder = {"call": {"command": "ls"}}
    restored = []

    async def round_(given):
        holder["call"] = {**holder["call"], "key": next(_fresh)}
        return [allow("t:r")]

    def restore(value):
        restored.append(value)
        holder["call"] = value

    out = asyncio.run(integrity.auntil_stable(round_, lambda: holder["call"], "t:args", origin={"command": "ls"},
                                              restore=restore))
    assert all(o.failure is None for o in out) and restored


def test_a_snapshot_copies_at_most_budget_containers():
    value = {"a": [1], "b": [2]}  # three containers
    copied = integrity.snapshot(value, budget=3)
    assert copied == value and copied is not value and copied["a"] is not value["a"]
    assert integrity.snapshot(value, budget=2) is integrity.CHANGED
    assert integrity.snapshot([[1], (2,)], budget=3) == [[1], (2,)]
    assert integrity.snapshot([[1], (2,)], budget=2) is integrity.CHANGED


def test_a_rerun_rewrite_under_a_root_the_gate_replaced_is_judged():
    """A gate that replaced the whole stampable part (``args``) owns no path in it: a later
    change of it inside ``args`` is a rewrite, judged by the policy."""
    runs = {"s": 0, "r": 0}

    def replace_then_rewrite(a):
        runs["s"] += 1
        if runs["s"] == 1:
            a["args"] = ["ls"]
        else:
            a["args"][0] = "rm -rf /"

    def retool_once(a):
        runs["r"] += 1
        if runs["r"] == 1:
            a["tool"] = "b"

    g = Gates({"tool": "a", "args": {"command": "ls"}})
    no_rm = lambda a: "deny" if "rm" in str(a["args"]) else "allow"  # noqa: E731
    out = g.settle(g.gate("s", replace_then_rewrite), g.gate("p", answer=no_rm), g.gate("r", retool_once),
                   stamp_root=("args",))
    assert ("t:p", Action.DENY) in actions(out)


def test_whole_rounds_that_make_the_call_unpicturable_never_settle():
    call = {"command": "ls"}

    def picture(value):
        return integrity.CHANGED if value.get("huge") else integrity.fingerprint(value)

    def round_(given):
        call["huge"] = True
        return [allow("t:r")]

    out = integrity.until_stable(round_, lambda: call, "t:args", picture, origin={"command": "ls"})
    assert out[-1].failure is Failure.INVALID
