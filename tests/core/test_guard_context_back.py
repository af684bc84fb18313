"""A sync hook run with a deadline runs on the guard's worker, in a copy of the caller's
context; upstream runs it on the caller, in the caller's context, so a ContextVar it sets
is seen by the tool and the hooks after it. The guard hands those changes back when the
answer is taken on time (``guard._give_back``): never a late or abandoned call's (nor
those of the calls after it in the same hand-off), and never failsecure's own
variables (the run marker, the execution under way, the config in force)."""

import asyncio
import contextvars
import threading

import pytest

from core_helpers import validate
from failsecure import guard, policy
from failsecure.verdict import Action, Failure

REQUEST = contextvars.ContextVar("fs_test_request", default=None)
OTHER = contextvars.ContextVar("fs_test_other", default=None)


def setter(var, value, answer="allow"):
    def hook():
        var.set(value)
        return answer

    return hook


def in_fresh_context(fn, *args):
    """Each test's variables start unset: run it in a context of its own."""
    return contextvars.Context().run(fn, *args)


def run_async(coro_fn):
    return in_fresh_context(lambda: asyncio.run(coro_fn()))


# ---------------------------------------------------------------- on time: handed back


def test_a_sync_hook_with_a_deadline_sets_a_variable_the_caller_sees():
    def body():
        o = guard.call("t:h", setter(REQUEST, "req-1"), validate=validate, timeout=5)
        assert o.action is Action.ALLOW
        return REQUEST.get()

    assert in_fresh_context(body) == "req-1"


def test_without_a_deadline_the_hook_runs_in_the_callers_context_as_before():
    def body():
        guard.call("t:h", setter(REQUEST, "inline"), validate=validate)
        return REQUEST.get()

    assert in_fresh_context(body) == "inline"


def test_nothing_set_leaves_the_caller_as_it_was():
    def body():
        REQUEST.set("mine")
        before = contextvars.copy_context()
        guard.call("t:h", lambda: "allow", validate=validate, timeout=5)
        after = contextvars.copy_context()
        return REQUEST.get(), dict(before.items()) == dict(after.items())

    assert in_fresh_context(body) == ("mine", True)


def test_the_hooks_of_one_batch_see_each_others_and_the_caller_sees_all():
    seen = []

    def reader():
        seen.append(REQUEST.get())
        OTHER.set("second")
        return "allow"

    def body():
        guard.call_each([("t:a", setter(REQUEST, "first"), (), None, validate, 5),
                         ("t:b", reader, (), None, validate, 5)])
        return REQUEST.get(), OTHER.get()

    assert in_fresh_context(body) == ("first", "second")
    assert seen == ["first"]


def test_a_hook_that_raised_or_denied_on_time_still_hands_its_changes_back():
    """Upstream the set happened in the caller's context before the raise: never worse."""

    def raising():
        REQUEST.set("before-raise")
        raise RuntimeError("x")

    def body():
        o = guard.call("t:h", raising, validate=validate, timeout=5)
        d = guard.call("t:d", setter(OTHER, "denied", "deny"), validate=validate, timeout=5)
        return o.failure, d.action, REQUEST.get(), OTHER.get()

    assert in_fresh_context(body) == (Failure.RAISED, Action.DENY, "before-raise", "denied")


def test_an_async_callers_sync_hook_hands_its_changes_back():
    async def main():
        o = await guard.acall("t:h", setter(REQUEST, "acall"), validate=validate, timeout=5)
        outcomes = await guard.acall_each([("t:a", setter(OTHER, "each"), (), None, validate, 5)])
        return o.action, outcomes[0].action, REQUEST.get(), OTHER.get()

    assert run_async(main) == (Action.ALLOW, Action.ALLOW, "acall", "each")


def test_a_sync_hooks_changes_reach_the_task_only_not_another_task():
    async def tagged(value):
        await guard.acall("t:h", setter(REQUEST, value), validate=validate, timeout=5)
        await asyncio.sleep(0)
        return REQUEST.get()

    async def untouched():
        await asyncio.sleep(0.01)
        return REQUEST.get()

    async def main():
        return await asyncio.gather(tagged("a"), tagged("b"), untouched())

    assert run_async(main) == ["a", "b", None]


# ---------------------------------------------------------------- late, abandoned: nothing back


def test_an_abandoned_hooks_variable_is_not_handed_back():
    release = threading.Event()

    def hangs():
        REQUEST.set("abandoned")
        release.wait(5)
        return "allow"

    def body():
        o = guard.call("t:hang", hangs, validate=validate, timeout=0.05)
        return o.failure, REQUEST.get()

    try:
        assert in_fresh_context(body) == (Failure.TIMEOUT, None)
    finally:
        release.set()


def test_in_a_batch_the_changes_before_the_abandoned_hook_go_back_and_its_own_do_not():
    release = threading.Event()
    seen = []

    def hangs():
        OTHER.set("abandoned")
        release.wait(5)
        return "allow"

    def after():
        seen.append((REQUEST.get(), OTHER.get()))
        return "allow"

    def body():
        outcomes = guard.call_each([("t:first", setter(REQUEST, "first"), (), None, validate, 5),
                                    ("t:hang2", hangs, (), None, validate, 0.05),
                                    ("t:after", after, (), None, validate, 5)])
        return [o.failure for o in outcomes], REQUEST.get(), OTHER.get()

    try:
        assert in_fresh_context(body) == ([None, Failure.TIMEOUT, None], "first", None)
    finally:
        release.set()
    assert seen == [("first", None)]  # the hook after it (a fresh worker) sees the first's only


def test_an_async_callers_abandoned_hooks_variable_is_not_handed_back():
    release = threading.Event()

    def hangs():
        REQUEST.set("abandoned")
        release.wait(5)
        return "allow"

    async def main():
        o = await guard.acall("t:ahang", hangs, validate=validate, timeout=0.05)
        each = await guard.acall_each([("t:ahang2", hangs, (), None, validate, 0.05)])
        return o.failure, each[0].failure, REQUEST.get()

    try:
        assert run_async(main) == (Failure.TIMEOUT, Failure.TIMEOUT, None)
    finally:
        release.set()


def run_job_here(calls):
    """The worker's own loop, run in this thread with nobody waiting: a call that ends
    past its deadline is late (a TIMEOUT), as when a hook holds the GIL past it."""
    worker = guard._Worker()
    job = guard._Job(calls)
    assert job.ctx.run(guard._Pool._run_job, worker, job)
    return job


def test_a_late_answers_variable_is_not_handed_back_nor_a_later_hooks():
    import time

    def late():
        REQUEST.set("late")
        time.sleep(0.03)
        return "allow"

    def body():
        job = run_job_here([("t:on", setter(OTHER, "on-time"), (), None, validate, 5),
                            ("t:late", late, (), None, validate, 0.01),
                            ("t:next", setter(OTHER, "after-late"), (), None, validate, 5)])
        assert [r.failure for r in job.results] == [None, Failure.TIMEOUT, None]
        guard._give_back(job, 3)
        return REQUEST.get(), OTHER.get()

    assert in_fresh_context(body) == (None, "on-time")


def test_the_twin_an_answer_on_time_is_handed_back():
    def body():
        job = run_job_here([("t:on", setter(REQUEST, "on-time"), (), None, validate, 5)])
        assert job.results[0].action is Action.ALLOW
        guard._give_back(job, 1)
        return REQUEST.get()

    assert in_fresh_context(body) == "on-time"


def test_a_value_is_compared_by_identity_no_code_of_it_runs():
    class Hostile:
        def __eq__(self, other):
            raise RuntimeError("eq")

        __hash__ = None

    hostile = Hostile()

    def body():
        REQUEST.set(hostile)
        guard.call("t:h", setter(OTHER, Hostile()), validate=validate, timeout=5)
        return REQUEST.get() is hostile, type(OTHER.get()) is Hostile

    assert in_fresh_context(body) == (True, True)


# ---------------------------------------------------------------- failsecure's own variables


def test_a_hooks_failsecure_variable_is_not_handed_back_and_a_users_is():
    mine = contextvars.ContextVar("failsecure_test_own", default="unset")

    def hook():
        mine.set("forged")
        REQUEST.set("user")
        return "allow"

    def body():
        guard.call("t:h", hook, validate=validate, timeout=5)
        return mine.get(), REQUEST.get()

    assert in_fresh_context(body) == ("unset", "user")


def test_every_contextvar_of_failsecure_is_named_failsecure():
    """What keeps them from being handed back is their name: every one must carry it."""
    import pathlib
    import re

    import failsecure

    root = pathlib.Path(failsecure.__file__).parent
    names, made = [], 0
    for path in root.rglob("*.py"):
        text = path.read_text()
        names += re.findall(r"ContextVar\(\s*[\"']([^\"']*)[\"']", text)
        made += len(re.findall(r"ContextVar\(", text))
    assert len(names) >= 10
    assert made == len(names)  # every one is named by a literal the check above reads
    assert [n for n in names if not n.startswith("failsecure")] == []


def test_the_config_in_force_is_not_a_hooks_to_set():
    loose = policy.validate({"ungoverned": "audit"})

    def hook():
        policy._override.set(loose)
        return "allow"

    def body():
        guard.call("t:h", hook, validate=validate, timeout=5)
        return policy.current() is loose

    assert in_fresh_context(body) is False


def test_a_hostile_value_replacing_the_callers_is_handed_back_without_calling_it():
    """A variable the caller had, set anew by the hook to an object whose ``__eq__``
    raises (or would never return): no ``Context ==`` on the caller, identity only."""

    class Hostile:
        def __eq__(self, other):
            raise RuntimeError("eq")

        __hash__ = None

    def body():
        REQUEST.set("caller's")
        OTHER.set("caller's too")
        guard.call("t:h", setter(REQUEST, Hostile()), validate=validate, timeout=5)
        return type(REQUEST.get()), OTHER.get()

    assert in_fresh_context(body) == (Hostile, "caller's too")


def test_the_cheap_comparison_tells_a_copy_from_a_changed_one():
    if guard._same is None:
        pytest.skip("not this interpreter's layout: the exact comparison runs")
    base = contextvars.copy_context()
    copy = base.copy()
    assert guard._same(copy, base) and copy.run(guard._same, copy, base)  # entered too
    copy.run(REQUEST.set, "x")
    assert not guard._same(copy, base) and not copy.run(guard._same, copy, base)


@pytest.mark.parametrize("test", [test_a_sync_hook_with_a_deadline_sets_a_variable_the_caller_sees,
                                  test_nothing_set_leaves_the_caller_as_it_was,
                                  test_a_hooks_failsecure_variable_is_not_handed_back_and_a_users_is,
                                  test_a_hostile_value_replacing_the_callers_is_handed_back_without_calling_it])
def test_without_the_cheap_comparison_the_same(monkeypatch, test):
    monkeypatch.setattr(guard, "_same", None)
    test()
