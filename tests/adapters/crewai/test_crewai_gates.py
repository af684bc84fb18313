"""Before-tool-call hooks through CrewAI's real dispatcher, in a real Crew run: every
fault kind denies (category and exception type from the audit), each with an allow twin."""

from __future__ import annotations

import threading

import pytest
from crewai.hooks import HookAborted, before_tool_call, register_before_tool_call_hook
from crewai.hooks.dispatch import InterceptionPoint, on

BLOCKED = "Tool execution blocked by hook. Tool: marker_tool."


def _assert_denied(rig, run, hook, failure, exception_type=None):
    assert not run.ran, "the tool ran"
    event = rig.last()
    assert event["framework"] == "crewai" and event["outcome"] == "deny"
    assert event["hook"] == hook
    assert event["failure"] == failure
    assert event["exception_type"] == exception_type
    assert event["tool"] == "marker_tool"
    assert BLOCKED in run.told
    if failure:
        assert f"failsecure: hook '{hook}' failed closed ({failure})" in run.told


class Secret(Exception):
    pass


@pytest.mark.parametrize("exc", [RuntimeError("SECRET-1"), Secret("SECRET-1"), SystemExit(3), KeyError("SECRET-1")])
def test_a_raising_hook_denies(rig, exc):
    def raising(context):
        raise exc

    register_before_tool_call_hook(raising)
    run = rig.run({"command": "SECRET-ARG"})
    _assert_denied(rig, run, rig.hook_id(raising), "raised", type(exc).__name__)
    text = rig.audit_path.read_text() + run.told.split(BLOCKED, 1)[1]
    assert "SECRET" not in text


def test_a_hook_that_returns_none_allows(rig):
    seen = []

    def watching(context):
        seen.append(dict(context.tool_input))
        return None

    register_before_tool_call_hook(watching)
    run = rig.run({"command": "harmless"})
    assert run.calls == [{"command": "harmless"}]
    assert seen == [{"command": "harmless"}]
    assert rig.events() == [] or rig.last()["outcome"] != "deny"


def test_a_hook_that_returns_true_allows(rig):
    def approving(context):
        return True

    register_before_tool_call_hook(approving)
    run = rig.run()
    assert run.ran
    event = rig.last()
    assert event["outcome"] == "allow" and event["failure"] is None and event["hook"] == rig.hook_id(approving)


def test_a_hanging_hook_denies_at_its_deadline(rig):
    release = threading.Event()

    def hanging(context):
        release.wait(5)

    register_before_tool_call_hook(hanging)
    try:
        run = rig.run()
    finally:
        release.set()
    _assert_denied(rig, run, rig.hook_id(hanging), "timeout")
    assert rig.last()["elapsed_ms"] < 3000


def test_a_slow_hook_inside_its_deadline_allows(rig):
    def slow(context):
        threading.Event().wait(0.05)
        return None

    register_before_tool_call_hook(slow)
    assert rig.run().ran


@pytest.mark.parametrize("junk", ["DENY", 0, 1, "", {"block": True}, [False], "False", 0.0])
def test_a_junk_answer_denies(rig, junk):
    def junky(context):
        return junk

    register_before_tool_call_hook(junky)
    _assert_denied(rig, rig.run(), rig.hook_id(junky), "invalid")


def test_a_hostile_answer_denies(rig):
    class Hostile:
        def __bool__(self):
            raise RuntimeError("SECRET")

        def __eq__(self, other):
            raise RuntimeError("SECRET")

        __hash__ = object.__hash__

        def __repr__(self):
            return "SECRET"

    def hostile(context):
        return Hostile()

    register_before_tool_call_hook(hostile)
    _assert_denied(rig, rig.run(), rig.hook_id(hostile), "invalid")
    assert "SECRET" not in rig.audit_path.read_text()


def test_an_async_hook_denies_as_invalid(rig):
    async def coroutine_hook(context):
        return None

    register_before_tool_call_hook(coroutine_hook)
    _assert_denied(rig, rig.run(), rig.hook_id(coroutine_hook), "invalid")


def test_false_still_denies(rig):
    def blocking(context):
        return False

    register_before_tool_call_hook(blocking)
    _assert_denied(rig, rig.run(), rig.hook_id(blocking), None)


def test_hook_aborted_still_denies(rig):
    def aborting(context):
        raise HookAborted("SECRET reason")

    register_before_tool_call_hook(aborting)
    run = rig.run()
    _assert_denied(rig, run, rig.hook_id(aborting), None)
    assert "SECRET" not in run.told and "SECRET" not in rig.audit_path.read_text()


@pytest.mark.parametrize("deny_first", [True, False])
def test_a_deny_outranks_an_allow_in_any_order(rig, deny_first):
    def approving(context):
        return True

    def raising(context):
        raise RuntimeError("x")

    for hook in ((raising, approving) if deny_first else (approving, raising)):
        register_before_tool_call_hook(hook)
    _assert_denied(rig, rig.run(), rig.hook_id(raising), "raised", "RuntimeError")


def test_hooks_after_a_deny_are_not_run(rig):
    later = []

    def blocking(context):
        return False

    def after(context):
        later.append(1)

    register_before_tool_call_hook(blocking)
    register_before_tool_call_hook(after)
    _assert_denied(rig, rig.run(), rig.hook_id(blocking), None)
    assert later == []  # as upstream: the first block ends the round


def test_the_decorator_and_its_filters(rig):
    @before_tool_call(tools=["marker_tool"])
    def filtered_gate(context):
        raise RuntimeError("x")

    run = rig.run()
    _assert_denied(rig, run, "crewai:" + __name__ + ".test_the_decorator_and_its_filters.<locals>.filtered_gate", "raised", "RuntimeError")


def test_the_decorator_filter_skips_other_tools(rig):
    @before_tool_call(tools=["another_tool"])
    def other_tools_only(context):
        raise RuntimeError("x")

    assert rig.run().ran


def test_an_on_hook(rig):
    @on(InterceptionPoint.PRE_TOOL_CALL)
    def on_gate(context):
        raise ValueError("x")

    _assert_denied(rig, rig.run(), rig.hook_id(on_gate), "raised", "ValueError")


def test_an_execution_scoped_hook(rig):
    from crewai.hooks.dispatch import register_scoped, scoped_hooks

    def scoped_gate(context):
        return "junk"

    with scoped_hooks():
        register_scoped(InterceptionPoint.PRE_TOOL_CALL, scoped_gate)
        run = rig.run()
    _assert_denied(rig, run, rig.hook_id(scoped_gate), "invalid")
    assert rig.run().ran  # out of scope


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_every_call_path(rig, mode, native):
    def raising(context):
        raise RuntimeError("x")

    register_before_tool_call_hook(raising)
    _assert_denied(rig, rig.run(mode=mode, native=native), rig.hook_id(raising), "raised", "RuntimeError")


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_every_call_path_allow_twin(rig, mode, native):
    def watching(context):
        return None

    register_before_tool_call_hook(watching)
    run = rig.run({"command": "harmless"}, mode=mode, native=native)
    assert run.calls == [{"command": "harmless"}]
    assert "blocked" not in run.told


class FakeTTY:
    """A terminal whose person takes 0.5 s to press Enter."""

    def isatty(self):
        return True

    def readline(self):
        threading.Event().wait(0.5)  # a person thinking
        return "\n"


def test_a_human_may_answer_no_default_deadline(rig, monkeypatch):
    """stdin is a TTY and the hook asks there (``context.request_human_input``): the
    global deadline does not cut it off; a per-hook timeout in the config still does."""
    monkeypatch.setattr("sys.stdin", FakeTTY())

    def asking(context):
        context.request_human_input(prompt="Allow?")
        return True

    register_before_tool_call_hook(asking)
    assert rig.run().ran
    rig.config(tables=f'[hooks."{rig.hook_id(asking)}"]\ntimeout = 0.2\n')
    run = rig.run()
    _assert_denied(rig, run, rig.hook_id(asking), "timeout")


def test_a_terminal_keeps_the_deadline_of_a_hook_that_asks_nobody(rig, monkeypatch):
    """stdin is a TTY, but this hook never asks the person: it keeps the default
    deadline (upstream and the old adapter waited for it for ever)."""
    monkeypatch.setattr("sys.stdin", FakeTTY())
    release = threading.Event()

    def hung(context):
        release.wait(5)
        return True

    register_before_tool_call_hook(hung)
    run = rig.run()
    release.set()
    _assert_denied(rig, run, rig.hook_id(hung), "timeout")


def test_a_terminal_and_a_hook_asking_through_a_method_is_interactive(rig, monkeypatch):
    """The allow twin with the asking call inside a nested function of the hook."""
    monkeypatch.setattr("sys.stdin", FakeTTY())

    def asking(context):
        def ask():
            return context.request_human_input(prompt="Allow?")

        ask()
        return True

    register_before_tool_call_hook(asking)
    assert rig.run().ran


@pytest.mark.parametrize("tolerated", ['on_error = "allow"', 'role = "observer"'])
@pytest.mark.parametrize("kind", ["raise", "abort", "false"])
def test_a_tolerated_hook_does_not_hide_a_later_deny(rig, tolerated, kind):
    """A hook whose failure (or block) the trusted config tolerates does not stop the
    round: a later policy hook still runs, and its deny stands."""

    def tolerated_hook(context):
        if kind == "raise":
            raise RuntimeError("SECRET-1")
        if kind == "abort":
            raise HookAborted("no")
        return False

    def policy(context):
        return False

    register_before_tool_call_hook(tolerated_hook)
    register_before_tool_call_hook(policy)
    if kind != "raise" and "on_error" in tolerated:
        pytest.skip("on_error tolerates failures, not a deliberate block")
    rig.config(tables=f'[hooks."{rig.hook_id(tolerated_hook)}"]\n{tolerated}\n')
    run = rig.run()
    _assert_denied(rig, run, rig.hook_id(policy), None)


@pytest.mark.parametrize("tolerated", ['on_error = "allow"', 'role = "observer"'])
def test_a_tolerated_hook_that_raises_lets_the_call_run(rig, tolerated):
    """The allow twin: the tolerated hook raises, the later hook allows: the tool runs."""

    def tolerated_hook(context):
        raise RuntimeError("SECRET-1")

    seen = []

    def policy(context):
        seen.append(1)
        return None

    register_before_tool_call_hook(tolerated_hook)
    register_before_tool_call_hook(policy)
    rig.config(tables=f'[hooks."{rig.hook_id(tolerated_hook)}"]\n{tolerated}\n')
    run = rig.run()
    assert run.ran and seen


def _crewbase(rig, gate_answer):
    from crewai import Agent, Crew, Task
    from crewai.project import CrewBase, agent, task
    from crewai.project import crew as crew_method

    llm, tool = rig.parts()

    @CrewBase
    class GuardedCrew:
        agents_config = {}
        tasks_config = {}

        @before_tool_call
        def gate(self, context):
            return gate_answer(context)

        @before_tool_call(tools=["marker_tool"])
        def filtered_gate(self, context):
            return None

        @agent
        def operator(self) -> Agent:
            return Agent(role="operator", goal="run", backstory="b", llm=llm, tools=[tool], verbose=False, max_iter=3)

        @task
        def run_it(self) -> Task:
            return Task(description="Run the command once.", expected_output="done", agent=self.operator())

        @crew_method
        def crew(self) -> Crew:
            return Crew(agents=self.agents, tasks=self.tasks, verbose=False)

    instance = GuardedCrew()
    return rig.run_crew(instance.crew(), llm), GuardedCrew


def test_a_crew_scoped_hook_that_raises_denies(rig):
    def boom(context):
        raise RuntimeError("x")

    run, cls = _crewbase(rig, boom)
    hook = f"crewai:{__name__}._crewbase.<locals>.GuardedCrew.gate"
    _assert_denied(rig, run, hook, "raised", "RuntimeError")


def test_a_crew_scoped_hook_allow_twin(rig):
    run, _ = _crewbase(rig, lambda context: None)
    assert run.calls == [{"command": "harmless"}]
    ids = {rig.hook_id(h) for h in __import__("crewai.hooks.tool_hooks", fromlist=["x"]).get_before_tool_call_hooks()}
    assert f"crewai:{__name__}._crewbase.<locals>.GuardedCrew.filtered_gate" in ids
