"""CrewAI's tool cache (``Crew(cache=True)``, the default): a repeated call (not the
immediately previous one, which the ReAct path refuses as a repeat) is answered
from the cache only after the before-tool-call hooks allowed it (a deny blocks it as any
call), and a call served from the cache runs nothing, so nothing is ungoverned."""

from __future__ import annotations

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks import register_before_tool_call_hook

from .conftest import MarkerTool
from .test_crewai_usage_limit import SeqLLM


def _run(rig, commands, native):
    rig.parts()
    llm = SeqLLM(commands, native)
    agent = Agent(role="operator", goal="run the commands", backstory="a test agent", llm=llm,
                  tools=[MarkerTool(marker=str(rig.marker))], verbose=False, max_iter=5)
    crew = Crew(agents=[agent], tasks=[Task(description="Run them.", expected_output="done", agent=agent)],
                verbose=False, cache=True)
    return rig.run_crew(crew, llm)


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_a_denied_repeat_is_not_answered_from_the_cache(rig, native):
    seen = []

    def policy(context):
        seen.append(context.tool_input.get("command"))
        return len(seen) < 3  # the repeat is denied

    register_before_tool_call_hook(policy)
    run = _run(rig, ["ls", "pwd", "ls"], native)
    assert run.error is None, run.error
    assert run.calls == [{"command": "ls"}, {"command": "pwd"}]
    assert seen == ["ls", "pwd", "ls"]
    assert [e["outcome"] for e in rig.events()] == ["allow", "allow", "deny"]
    assert "Tool execution blocked by hook." in run.told


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_an_allowed_repeat_is_answered_from_the_cache(rig, native):
    register_before_tool_call_hook(lambda context: True)
    run = _run(rig, ["ls", "pwd", "ls"], native)
    assert run.error is None, run.error
    assert run.calls == [{"command": "ls"}, {"command": "pwd"}]  # the repeat came from the cache
    assert [e["outcome"] for e in rig.events()] == ["allow", "allow", "allow"]
    assert "Tool execution blocked by hook." not in run.told and "reusing the same input" not in run.told
