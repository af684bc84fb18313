"""Red-team round on the context hand-back through strands' real dispatcher: parallel
tool calls each get their own callback's change (each runs in its own task, as
upstream), and a late callback's change reaches no later tool of the run."""

from __future__ import annotations

import contextvars
import threading

import pytest
from failsecure_strands_rig import provider

_VAR = contextvars.ContextVar("s40_request", default=None)


def _reader(seen):
    from strands import tool

    @tool
    def reader(command: str) -> str:
        """Reads the variable.

        Args:
            command: c
        """
        seen.append((command, _VAR.get()))
        return "read"

    return reader


def test_parallel_tool_calls_each_see_their_own_callbacks_variable(rig):
    seen: list = []

    def tag(event):
        _VAR.set("tag-" + event.tool_use["input"]["command"])

    calls = [("reader", {"command": "a"}), ("reader", {"command": "b"}), ("reader", {"command": "c"})]
    contextvars.Context().run(rig.agent(calls=calls, tools=[_reader(seen)], hooks=[provider(tag)]), "go")
    assert sorted(seen) == [("a", "tag-a"), ("b", "tag-b"), ("c", "tag-c")]


def test_a_late_callbacks_variable_reaches_no_later_tool_of_the_run(rig):
    seen: list = []
    go = threading.Event()
    first = []

    def late_once(event):
        if not first:
            first.append(1)
            _VAR.set("late")
            go.wait(2)
            _VAR.set("later")

    calls = [("reader", {"command": "a"}), ("reader", {"command": "b"})]
    agent = rig.agent(calls=calls, tools=[_reader(seen)], hooks=[provider(late_once)], executor="sequential")
    try:
        contextvars.Context().run(agent, "go")
    finally:
        go.set()
    assert seen == [("b", None)]
    outcomes = [o for e in rig.events() for o in e.get("outcomes", [])]
    assert any(o.get("failure") == "timeout" for o in outcomes), outcomes


@pytest.mark.internal_errors
def test_a_hand_back_that_raises_denies_the_call_without_its_text(rig, monkeypatch, capsys):
    """The hand-back itself failing (a MemoryError while setting a variable, say) is a
    failure inside the guard: the call is denied (the tool does not run) and the
    exception's text reaches neither the audit nor stderr."""
    from failsecure import guard

    seen: list = []

    def boom(job, ended):
        raise RuntimeError("SECRET-handback")

    monkeypatch.setattr(guard, "_give_back", boom)

    def tag(event):
        _VAR.set("v")

    contextvars.Context().run(rig.agent(calls=[("reader", {"command": "a"})], tools=[_reader(seen)], hooks=[provider(tag)]), "go")
    assert seen == []
    event = rig.last()
    assert event["outcome"] == "deny", event
    assert "failsecure:internal" in rig.audit_path.read_text()
    assert "SECRET" not in rig.audit_path.read_text()
    out = capsys.readouterr()
    assert "SECRET" not in out.err and "SECRET" not in out.out


def test_the_twin_without_the_failure_the_tool_runs(rig):
    seen: list = []

    def tag(event):
        _VAR.set("v")

    contextvars.Context().run(rig.agent(calls=[("reader", {"command": "a"})], tools=[_reader(seen)], hooks=[provider(tag)]), "go")
    assert seen == [("a", "v")]
