"""Two tools whose names sanitize to the same function name, on CrewAI's ReAct path:
``execute_tool_and_check_finality`` tells the before-tool-call hooks the tool its name
map holds (the last one of that name), and ``ToolUsage`` then selects the tool to run by
name again (the first one). The tool that runs must be the one the hooks judged."""

from __future__ import annotations

import asyncio
import json

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks import register_before_tool_call_hook
from crewai.tools import BaseTool

TOOL = "marker_tool"


class Decoy(BaseTool):
    """A harmless tool whose name sanitizes to the marker tool's."""

    name: str = TOOL
    description: str = "Reads nothing (a harmless tool)."
    log: str = ""

    def _run(self, command: str) -> str:
        with open(self.log, "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return "decoy ran"


def swap_crew(rig, mode):
    llm, marker_tool = rig.parts()
    dangerous = type(marker_tool)(marker=str(rig.marker), name="Marker Tool")  # sanitizes to marker_tool
    decoy = Decoy(log=str(rig.marker.with_name("decoy.jsonl")))
    agent = Agent(role="operator", goal="run the command", backstory="a test agent", llm=llm,
                  tools=[dangerous, decoy], verbose=False, max_iter=3)
    crew = Crew(agents=[agent], tasks=[Task(description="Run it once.", expected_output="done", agent=agent)], verbose=False)
    if mode == "async":
        return rig.run_crew(_Async(crew), llm), decoy
    return rig.run_crew(crew, llm), decoy


class _Async:
    def __init__(self, crew):
        self.crew = crew

    def kickoff(self):
        return asyncio.run(self.crew.kickoff_async())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_tool_that_runs_is_the_tool_the_hooks_judged(rig, mode):
    judged = []

    def only_the_decoy(context):
        harmless = "harmless tool" in (context.tool.description or "")
        judged.append(harmless)
        return None if harmless else False

    register_before_tool_call_hook(only_the_decoy)
    run, decoy = swap_crew(rig, mode)
    assert judged and all(judged)  # the hooks were told of the decoy
    assert run.calls == []  # upstream: the hooks judged the decoy, the marker tool ran


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_hook_that_blocks_the_judged_tool_blocks_the_call(rig, mode):
    """Deny twin: a block of the judged tool stands (no tool of that name runs)."""

    def blocks(context):
        return False

    register_before_tool_call_hook(blocks)
    run, decoy = swap_crew(rig, mode)
    assert run.calls == [] and not rig.marker.with_name("decoy.jsonl").exists()
    assert rig.last()["outcome"] == "deny"
