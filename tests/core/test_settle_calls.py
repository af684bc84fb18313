"""``Adapter.settle_calls`` / ``asettle_calls``: the settling rule with pass 1 run as one
``hook_calls`` batch (one thread hand-off for all the sync gates). Every scenario is run
both ways, batched and one gate per step (``integrity.settle`` over per-gate
``hook_calls``), and must come out the same: the same outcomes, the same runs per gate,
the same arguments each gate judged; and pass 1 costs one hand-off, not one per gate."""

import asyncio
import itertools

import pytest

from failsecure import guard
from failsecure.adapter import Adapter, asettle, settle
from failsecure.verdict import Action, Failure, Outcome, Verdict


class Toy(Adapter):
    name = "toy"
    distribution = "pytest"
    supported = ">=1"
    modules = ("fs_toy_settle",)

    def _patch(self):
        pass

    def _unpatch(self):
        pass

    def _probe(self, gate):
        return True

    def to_verdict(self, native):
        return Verdict(Action.DENY if native == "deny" else Action.ALLOW, f"said {native}")


class Gates:
    """A call and gates (sync or coroutine functions) that read and write it."""

    def __init__(self, args):
        self.args = args
        self.runs: dict = {}
        self.seen: dict = {}

    def gate(self, name, act=None, answer="allow", coro=False):
        def judge():
            self.runs[name] = self.runs.get(name, 0) + 1
            self.seen.setdefault(name, []).append(repr(self.args))
            said = answer(self.args) if callable(answer) else answer
            if act is not None:
                act(self.args)
            if said == "raise":
                raise RuntimeError("gate broke")
            return said

        if coro:
            async def agate():
                return judge()

            return (f"toy:{name}", agate, (), None, None)
        return (f"toy:{name}", judge, (), None, None)


def stamp(key):
    fresh = itertools.count()  # a fresh value at every run, the same sequence for every build
    return lambda a: a.__setitem__(key, next(fresh))


def no_rm(a):
    return "deny" if "rm" in str(a.get("command")) else "allow"


def rewrite(a):
    a["command"] = "ls -la"


def fight_a(a):
    a["mode"] = "a"


def fight_b(a):
    a["mode"] = "b"


SCENARIOS = {
    "unchanged": lambda g: [g.gate("a"), g.gate("b"), g.gate("c")],
    "stamp first": lambda g: [g.gate("s", stamp("key")), g.gate("p1", answer=no_rm), g.gate("p2", answer=no_rm)],
    "stamp middle": lambda g: [g.gate("p1", answer=no_rm), g.gate("s", stamp("key")), g.gate("p2", answer=no_rm)],
    "stamp last": lambda g: [g.gate("p1", answer=no_rm), g.gate("p2", answer=no_rm), g.gate("s", stamp("key"))],
    "rewrite": lambda g: [g.gate("p1", answer=no_rm), g.gate("w", rewrite), g.gate("p2", answer=no_rm)],
    "deny then more": lambda g: [g.gate("a"), g.gate("d", answer="deny"), g.gate("c")],
    "raises": lambda g: [g.gate("a"), g.gate("r", answer="raise"), g.gate("c")],
    "fight": lambda g: [g.gate("x", fight_a), g.gate("y", fight_b)],
    "judged before": lambda g: [Outcome(hook="toy:given", verdict=Verdict(Action.ALLOW, "given")), g.gate("a"),
                                g.gate("w", rewrite)],
}


def _summary(outcomes):
    return [(o.hook, o.failure if o.failure is not None else o.verdict.action) for o in outcomes]


def _step(adapter, call):
    if isinstance(call, Outcome):
        return lambda: call
    return lambda: adapter.hook_calls([call])


def _astep(adapter, call):
    async def given():
        return call

    if isinstance(call, Outcome):
        return given
    return lambda: adapter.ahook_calls([call])


def _count_handoffs(monkeypatch):
    taken = [0]
    take = guard._pool.take

    def counted():
        taken[0] += 1
        return take()

    monkeypatch.setattr(guard._pool, "take", counted)
    return taken


def _both(command, scenario):
    g = Gates({"command": command})
    return g, SCENARIOS[scenario](g)


@pytest.mark.parametrize("command", ["ls", "rm -rf /"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_batched_pass_settles_as_one_gate_per_step(scenario, command, monkeypatch):
    adapter = Toy()
    one, calls = _both(command, scenario)
    expected = settle([_step(adapter, c) for c in calls], lambda: one.args, "toy:args", finish_pass=True)
    two, calls = _both(command, scenario)
    taken = _count_handoffs(monkeypatch)
    got = adapter.settle_calls(calls, lambda: two.args, "toy:args", finish_pass=True)
    assert _summary(got) == _summary(expected)
    assert (two.runs, two.seen) == (one.runs, one.seen)
    assert two.args == one.args
    if scenario in ("unchanged", "deny then more", "raises"):  # nothing to re-run: one hand-off for the pass
        assert taken[0] == 1
    if scenario == "raises":
        assert ("toy:r", Failure.RAISED) in _summary(got)
    if scenario == "fight":
        assert ("toy:args", Failure.INVALID) in _summary(got)


@pytest.mark.parametrize("hold_loop", [False, True])
@pytest.mark.parametrize("command", ["ls", "rm -rf /"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_async_batched_pass_settles_as_one_gate_per_step(scenario, command, hold_loop):
    adapter = Toy()

    one, calls = _both(command, scenario)
    expected = asyncio.run(asettle([_astep(adapter, c) for c in calls], lambda: one.args, "toy:args", finish_pass=True))
    two, calls = _both(command, scenario)
    got = asyncio.run(adapter.asettle_calls(calls, lambda: two.args, "toy:args", hold_loop=hold_loop, finish_pass=True))
    assert _summary(got) == _summary(expected)
    assert (two.runs, two.seen) == (one.runs, one.seen)
    # every other gate a coroutine function: awaited on the loop between the sync runs
    three = Gates({"command": command})
    calls = [_as_coro(c) if not isinstance(c, Outcome) and i % 2 else c for i, c in enumerate(SCENARIOS[scenario](three))]
    got = asyncio.run(adapter.asettle_calls(calls, lambda: three.args, "toy:args", hold_loop=hold_loop, finish_pass=True))
    assert _summary(got) == _summary(expected)
    assert (three.runs, three.seen) == (one.runs, one.seen)


def _as_coro(call):
    hook, fn, a, k, v = call

    async def agate(*args, **kwargs):
        return fn(*args, **kwargs)

    return (hook, agate, a, k, v)


def test_without_finish_pass_a_deny_ends_the_pass_as_before():
    adapter = Toy()
    g = Gates({"command": "ls"})
    out = adapter.settle_calls([g.gate("a"), g.gate("d", answer="deny"), g.gate("c")], lambda: g.args, "toy:args")
    assert g.runs == {"a": 1, "d": 1}
    assert _summary(out) == [("toy:a", Action.ALLOW), ("toy:d", Action.DENY)]
    # twin: all allow, all run
    g = Gates({"command": "ls"})
    out = adapter.settle_calls([g.gate("a"), g.gate("b"), g.gate("c")], lambda: g.args, "toy:args")
    assert g.runs == {"a": 1, "b": 1, "c": 1}
