"""Native function calling with several tool calls in one model turn: CrewAI's agent
executor runs them at once, each in a worker thread of its own
(``contextvars.copy_context().run``). Each call is judged on its own arguments: a deny
of one never runs it and never denies its sibling (no grant crosses from one call to
the other), and two allowed calls both run."""

from __future__ import annotations

import json
import threading

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks import register_before_tool_call_hook

from .conftest import MarkerTool, ScriptedLLM


class TwoCallLLM(ScriptedLLM):
    def __init__(self, commands, **kwargs):
        super().__init__({}, native=True, **kwargs)
        object.__setattr__(self, "_commands", list(commands))

    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None,
             from_agent=None, response_model=None, **kwargs):
        turn = self._script_turn
        object.__setattr__(self, "_script_turn", turn + 1)
        self.read.append(messages)
        if turn == 0:
            return [{"id": f"call_failsecure_{i}", "type": "function",
                     "function": {"name": "marker_tool", "arguments": json.dumps({"command": c})}}
                    for i, c in enumerate(self._commands)]
        return "Thought: I am done\nFinal Answer: finished"


class ThreadMarker(MarkerTool):
    def _run(self, command: str) -> str:
        with open(self.marker, "a") as fh:
            fh.write(json.dumps({"command": command, "thread": threading.current_thread().name}) + "\n")
        return "ran"


def _run(rig, commands):
    rig.parts()
    llm = TwoCallLLM(commands)
    agent = Agent(role="operator", goal="run the commands", backstory="a test agent", llm=llm,
                  tools=[ThreadMarker(marker=str(rig.marker))], verbose=False, max_iter=3)
    crew = Crew(agents=[agent], tasks=[Task(description="Run them.", expected_output="done", agent=agent)],
                verbose=False)
    return rig.run_crew(crew, llm)


def _policy(context):
    return False if "rm" in str(context.tool_input.get("command")) else True


def test_a_denied_call_beside_an_allowed_one_runs_only_the_allowed(rig):
    register_before_tool_call_hook(_policy)
    run = _run(rig, ["ls", "rm -rf /"])
    assert run.error is None, run.error
    assert [c["command"] for c in run.calls] == ["ls"], run.calls
    outcomes = sorted(e["outcome"] for e in rig.events())
    assert outcomes == ["allow", "deny"], outcomes
    assert "Tool execution blocked by hook." in run.told


@pytest.mark.parametrize("hook", ["allow", "raise-on-rm"])
def test_two_allowed_calls_in_one_turn_both_run(rig, hook):
    if hook == "allow":
        register_before_tool_call_hook(_policy)
    else:
        def raising(context):
            if "rm" in str(context.tool_input.get("command")):
                raise RuntimeError("SECRET-5")
            return None

        register_before_tool_call_hook(raising)
    run = _run(rig, ["ls", "echo two"])
    assert run.error is None, run.error
    assert sorted(c["command"] for c in run.calls) == ["echo two", "ls"], run.calls
    assert len({c["thread"] for c in run.calls}) == 2  # run at once, each in a thread of its own
    assert not [e for e in rig.events() if e["outcome"] == "deny"]
