"""A tool's ``max_usage_count``: a call the hooks denied never ran, so it does not spend
the tool's budget (the next allowed call runs), and a call refused by the spent budget is
CrewAI's refusal, not a failsecure deny (no false deny, nothing ungoverned), on the
ReAct and the native path."""

from __future__ import annotations

import json

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks import register_before_tool_call_hook

from .conftest import MarkerTool, ScriptedLLM


class SeqLLM(ScriptedLLM):
    """Asks for marker_tool once per command of ``commands``, one per turn, then answers."""

    def __init__(self, commands, native, **kwargs):
        super().__init__({}, native=native, **kwargs)
        object.__setattr__(self, "_commands", list(commands))

    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None,
             from_agent=None, response_model=None, **kwargs):
        turn = self._script_turn
        object.__setattr__(self, "_script_turn", turn + 1)
        self.read.append(messages)
        if turn < len(self._commands):
            arguments = json.dumps({"command": self._commands[turn]})
            if self._script_native:
                return [{"id": f"call_failsecure_{turn}", "type": "function",
                         "function": {"name": "marker_tool", "arguments": arguments}}]
            return f"Thought: I act\nAction: marker_tool\nAction Input: {arguments}"
        return "Thought: I am done\nFinal Answer: finished"


def _run(rig, commands, native):
    rig.parts()
    llm = SeqLLM(commands, native)
    tool = MarkerTool(marker=str(rig.marker), max_usage_count=1)
    agent = Agent(role="operator", goal="run the commands", backstory="a test agent", llm=llm,
                  tools=[tool], verbose=False, max_iter=5)
    crew = Crew(agents=[agent], tasks=[Task(description="Run them.", expected_output="done", agent=agent)],
                verbose=False, cache=False)
    return rig.run_crew(crew, llm)


def _policy(context):
    return False if "rm" in str(context.tool_input.get("command")) else True


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_a_denied_call_does_not_spend_the_budget(rig, native):
    register_before_tool_call_hook(_policy)
    run = _run(rig, ["rm -rf /", "ls"], native)
    assert run.error is None, run.error
    assert run.calls == [{"command": "ls"}], run.calls
    assert [e["outcome"] for e in rig.events()] == ["deny", "allow"]


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_a_spent_budget_is_crewais_refusal_not_a_deny(rig, native):
    register_before_tool_call_hook(_policy)
    run = _run(rig, ["ls", "echo again"], native)
    assert run.error is None, run.error
    assert run.calls == [{"command": "ls"}], run.calls
    assert "usage limit" in run.told
    assert "deny" not in [e["outcome"] for e in rig.events()]
    assert not [e for e in rig.events() if e.get("failure") == "ungoverned"]
