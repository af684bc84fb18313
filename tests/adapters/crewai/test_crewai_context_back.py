"""A before-tool-call hook runs under its deadline on the guard's worker; upstream calls
it right before the tool, in the tool's own context, so a ContextVar it sets is seen by
the tool. With failsecure the change is handed back when its answer is taken on time;
a late hook's never reaches the tool (and the call is denied)."""

from __future__ import annotations

import contextvars
import json
import threading

import pytest
from crewai.hooks import register_before_tool_call_hook

_VAR = contextvars.ContextVar("s40_crewai_request", default=None)


def _reading_tool(rig, monkeypatch, seen):
    cls = type(rig.parts()[1])

    def _run(self, command: str) -> str:
        seen.append(_VAR.get())
        with open(self.marker, "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return "ran"

    monkeypatch.setattr(cls, "_run", _run)


@pytest.mark.parametrize("native", [False, True])
def test_a_hooks_variable_reaches_the_tool_as_upstream(rig, monkeypatch, native):
    seen: list = []
    _reading_tool(rig, monkeypatch, seen)

    def tag(context):
        _VAR.set("v")
        return None

    register_before_tool_call_hook(tag)
    run = contextvars.Context().run(rig.run, {"command": "harmless"}, "sync", native)
    assert run.ran and seen == ["v"]


@pytest.mark.parametrize("native", [False, True])
def test_a_late_hooks_variable_never_reaches_the_tool(rig, monkeypatch, native):
    seen: list = []
    _reading_tool(rig, monkeypatch, seen)
    go = threading.Event()

    def late(context):
        _VAR.set("late")
        go.wait(2)
        _VAR.set("later")
        return None

    register_before_tool_call_hook(late)
    try:
        run = contextvars.Context().run(rig.run, {"command": "harmless"}, "sync", native)
    finally:
        go.set()
    assert not run.ran and seen == []
    assert rig.last()["failure"] == "timeout"
