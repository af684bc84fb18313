"""The ReAct path runs a tool whose first ``invoke`` raised once more at once, with the
model's arguments unfiltered (``ToolUsage._use``: ``except Exception: arguments =
calling.arguments; tool.invoke(...)``): the same judged call, so it runs as upstream
runs it (no false deny), and a deny still runs neither attempt."""

from __future__ import annotations

import json

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks import register_before_tool_call_hook
from crewai.tools import BaseTool

from .conftest import ScriptedLLM


class FlakyTool(BaseTool):
    name: str = "marker_tool"
    description: str = "Runs a command; fails on its first attempt."
    marker: str = ""
    attempts: int = 0

    def _run(self, command: str) -> str:
        self.attempts += 1
        with open(self.marker, "a") as fh:
            fh.write(json.dumps({"command": command, "attempt": self.attempts}) + "\n")
        if self.attempts == 1:
            raise RuntimeError("transient")
        return "ran"


def _run(rig, mode):
    rig.parts()
    llm = ScriptedLLM({"command": "ls", "extra": "not in the schema"})
    tool = FlakyTool(marker=str(rig.marker))
    agent = Agent(role="operator", goal="run the command", backstory="a test agent", llm=llm,
                  tools=[tool], verbose=False, max_iter=3)
    crew = Crew(agents=[agent], tasks=[Task(description="Run it once.", expected_output="done", agent=agent)],
                verbose=False)
    if mode == "async":
        import asyncio

        class _A:
            def kickoff(self):
                return asyncio.run(crew.kickoff_async())

        return rig.run_crew(_A(), llm)
    return rig.run_crew(crew, llm)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_immediate_rerun_of_a_raised_tool_runs_as_upstream(rig, mode):
    register_before_tool_call_hook(lambda context: True)
    run = _run(rig, mode)
    assert run.error is None, run.error
    assert [c["attempt"] for c in run.calls][:2] == [1, 2], run.calls
    assert all(c["command"] == "ls" for c in run.calls)
    assert not [e for e in rig.events() if e["outcome"] == "deny"], [(e["outcome"], e["failure"]) for e in rig.events()]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_denied_flaky_tool_runs_no_attempt(rig, mode):
    def policy(context):
        raise RuntimeError("SECRET-4")

    register_before_tool_call_hook(policy)
    run = _run(rig, mode)
    assert not run.ran
    assert {e["failure"] for e in rig.events() if e["outcome"] == "deny"} == {"raised"}
