"""Red-team round on the context hand-back (``guard._give_back``): the deadline's edge,
a hook that goes on after its deadline, resets and fresh variables, several tasks, a
context with many variables. Each holds: the invariants of docs/decisions.md
("Context variables")."""

import asyncio
import contextvars
import threading
import time

import pytest

from core_helpers import validate
from failsecure import guard
from failsecure.verdict import Action, Failure

REQUEST = contextvars.ContextVar("fs_rt_request", default=None)
NODEFAULT = contextvars.ContextVar("fs_rt_nodefault")


def in_fresh_context(fn, *args):
    return contextvars.Context().run(fn, *args)


def test_at_the_deadlines_edge_the_variable_goes_back_exactly_when_the_answer_is_taken():
    """A hook that answers right at its deadline: whichever way each call is decided, the
    variable reaches the caller if and only if the answer was taken (never a TIMEOUT's)."""
    timeout = 0.004

    def edge():
        start = time.perf_counter()
        REQUEST.set("edge")
        while time.perf_counter() - start < timeout * 0.98:
            pass
        return "allow"

    seen = {"taken": 0, "timeout": 0}

    def body():
        o = guard.call("t:edge", edge, validate=validate, timeout=timeout)
        got = REQUEST.get()
        if o.failure is Failure.TIMEOUT:
            assert got is None
            seen["timeout"] += 1
        else:
            assert o.action is Action.ALLOW and got == "edge"
            seen["taken"] += 1

    for _ in range(150):
        in_fresh_context(body)
    assert seen["taken"] + seen["timeout"] == 150


def test_a_hook_that_goes_on_after_its_deadline_and_sets_the_variable_then_never_reaches_the_caller():
    go, finished = threading.Event(), threading.Event()

    def hangs():
        go.wait(5)
        REQUEST.set("late-set")
        finished.set()
        return "allow"

    def body():
        o = guard.call("t:goes-on", hangs, validate=validate, timeout=0.05)
        go.set()
        assert finished.wait(5)
        time.sleep(0.05)
        # the next (on-time) hand-off of the same caller does not carry the late one's change
        o2 = guard.call("t:next", lambda: "allow", validate=validate, timeout=5)
        return o.failure, o2.action, REQUEST.get()

    assert in_fresh_context(body) == (Failure.TIMEOUT, Action.ALLOW, None)


def test_a_thread_an_on_time_hook_starts_sets_nothing_in_the_caller():
    started = threading.Event()

    def hook():
        ctx = contextvars.copy_context()
        threading.Thread(target=lambda: (time.sleep(0.05), ctx.run(REQUEST.set, "thread"), started.set())).start()
        return "allow"

    def body():
        o = guard.call("t:thread", hook, validate=validate, timeout=5)
        assert started.wait(5)
        return o.action, REQUEST.get()

    assert in_fresh_context(body) == (Action.ALLOW, None)


def test_a_hook_that_sets_and_resets_leaves_the_caller_as_it_was_and_a_fresh_variable_goes_back():
    fresh = contextvars.ContextVar("fs_rt_fresh_in_hook")

    def hook():
        t1 = REQUEST.set("temp")
        REQUEST.reset(t1)
        t2 = NODEFAULT.set("temp")
        NODEFAULT.reset(t2)
        fresh.set("new")
        return "allow"

    def body():
        mine = object()
        REQUEST.set(mine)
        o = guard.call("t:reset", hook, validate=validate, timeout=5)
        try:
            NODEFAULT.get()
            unset = False
        except LookupError:
            unset = True
        return o.action, REQUEST.get() is mine, unset, fresh.get()

    assert in_fresh_context(body) == (Action.ALLOW, True, True, "new")


def test_gathered_tasks_each_get_their_own_hooks_change_only():
    def hook(value):
        REQUEST.set(value)
        time.sleep(0.01)
        return "allow"

    async def one(value):
        o = await guard.acall("t:g", hook, (value,), validate=validate, timeout=5)
        each = await guard.acall_each([("t:g2", hook, (value + "-each",), None, validate, 5)])
        return o.action, each[0].action, REQUEST.get()

    async def main():
        a, b = await asyncio.gather(one("a"), one("b"))
        return a, b, REQUEST.get()

    a, b, outer = in_fresh_context(lambda: asyncio.run(main()))
    assert a == (Action.ALLOW, Action.ALLOW, "a-each")
    assert b == (Action.ALLOW, Action.ALLOW, "b-each")
    assert outer is None


def test_a_context_with_ten_thousand_variables_stays_cheap_when_nothing_is_set_and_linear_when_one_is():
    many = [contextvars.ContextVar(f"fs_rt_many_{i}") for i in range(10_000)]

    def body():
        for i, v in enumerate(many):
            v.set(i)
        calls = [("t:none", lambda: "allow", (), None, validate, 5)]
        job = guard._Job(calls)
        assert job.ctx.run(guard._Pool._run_job, guard._Worker(), job)
        t = time.perf_counter()
        for _ in range(1000):
            guard._give_back(job, 1)
        nothing = (time.perf_counter() - t) / 1000
        job = guard._Job([("t:one", lambda: REQUEST.set("x") and "allow", (), None, validate, 5)])
        assert job.ctx.run(guard._Pool._run_job, guard._Worker(), job)
        t = time.perf_counter()
        guard._give_back(job, 1)
        one = time.perf_counter() - t
        return nothing, one, REQUEST.get()

    nothing, one, got = in_fresh_context(body)
    assert got == "x"
    assert nothing < 20e-6, nothing  # a pointer comparison, whatever the size
    assert one < 0.05, one  # one pass over the variables, no value's code


def _freed_after_call(hook):
    import gc
    import weakref

    var = contextvars.ContextVar("fs_rt_held")

    class Held:
        pass

    def body():
        value = Held()
        ref = weakref.ref(value)
        token = var.set(value)
        del value
        o = guard.call("t:held", hook, validate=validate, timeout=5)
        var.reset(token)  # the caller lets go of it: upstream, nothing holds it now
        for _ in range(50):
            gc.collect()
            if ref() is None:
                break
            time.sleep(0.01)
        return o.action, ref() is None

    return in_fresh_context(body)


def test_a_value_the_caller_lets_go_of_after_a_deadlined_call_is_freed():
    """The worker keeps no finished job: the caller's context copy (and the hooks') goes
    with it, so a value the caller drops is freed (its ``__del__`` runs, a resource it
    holds closes) as upstream, not whenever that worker next runs a job."""
    assert _freed_after_call(lambda: "allow") == (Action.ALLOW, True)


def test_the_twin_a_value_the_hook_handed_back_lives_while_the_caller_holds_it():
    keep = contextvars.ContextVar("fs_rt_keep")

    class Kept:
        pass

    def hook():
        keep.set(Kept())
        return "allow"

    def body():
        import gc

        o = guard.call("t:keep", hook, validate=validate, timeout=5)
        gc.collect()
        return o.action, type(keep.get()).__name__

    assert in_fresh_context(body) == (Action.ALLOW, "Kept")


NEXT = contextvars.ContextVar("fs_rt_next", default=None)


def _late_then_on_time(late_hook):
    def sets_next():
        NEXT.set("next")
        return "allow"

    def body():
        outcomes = guard.call_each([("t:late-first", late_hook, (), None, validate, 0.01),
                                    ("t:on-time-after", sets_next, (), None, validate, 5)])
        return [o.failure for o in outcomes], outcomes[1].action, NEXT.get()

    return in_fresh_context(body)


@pytest.mark.xfail(strict=True, reason=(
    "an on-time hook after a late one in the same hand-off loses its changes (docs/decisions.md: "
    "'those of the calls after it in the same hand-off'; asserted by test_guard_context_back.py::"
    "test_a_late_answers_variable_is_not_handed_back_nor_a_later_hooks). Whether the later hook's "
    "change reaches the caller then depends on who saw the deadline first: the caller (abandoned: "
    "the later hook runs in a fresh hand-off, handed back) or the worker (late: dropped) -- in a "
    "race loop ~98% dropped. With the late hook advisory (observer, on_error=allow) the tool runs "
    "without the on-time gate's variable, which upstream (no deadlines, the caller's context) "
    "gives it. A fix (after a late call, run the rest from the last on-time snapshot, or stop the "
    "job there and go on in a fresh hand-off) changes that existing assertion: left to the maintainers."))
def test_an_on_time_hooks_change_after_a_late_one_reaches_the_caller_as_upstream():
    import sys

    def holds_the_gil_past_its_deadline():
        start = time.perf_counter()
        while time.perf_counter() - start < 0.03:  # no switch: the caller cannot abandon it
            pass
        return "allow"

    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    try:
        got = _late_then_on_time(holds_the_gil_past_its_deadline)
    finally:
        sys.setswitchinterval(old)
    assert got == ([Failure.TIMEOUT, None], Action.ALLOW, "next")


def test_the_twin_after_an_abandoned_hook_the_on_time_hooks_change_reaches_the_caller():
    release = threading.Event()

    def hangs():
        release.wait(5)
        return "allow"

    try:
        assert _late_then_on_time(hangs) == ([Failure.TIMEOUT, None], Action.ALLOW, "next")
    finally:
        release.set()
