"""Delegation (``allow_delegation=True``: CrewAI's "Delegate work to coworker" tool runs
the coworker agent's ``execute_task`` inside the tool call): the delegation is a tool
call the before-tool-call hooks judge, and the coworker's own tool calls are judged by
them again, inside the delegating call; a nested run entry never turns a later call of
the delegating agent into an ungoverned one (false deny)."""

from __future__ import annotations

import json

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks import register_before_tool_call_hook

from .conftest import MarkerTool, ScriptedLLM

DELEGATE = "delegate_work_to_coworker"


class ListLLM(ScriptedLLM):
    """Answers the ReAct actions of ``script`` in turn ((tool, arguments)), then a final answer."""

    def __init__(self, script: list, **kwargs):
        super().__init__({}, **kwargs)
        object.__setattr__(self, "_list", list(script))

    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None,
             from_agent=None, response_model=None, **kwargs):
        turn = self._script_turn
        object.__setattr__(self, "_script_turn", turn + 1)
        self.read.append(messages)
        if turn < len(self._list):
            tool, arguments = self._list[turn]
            return f"Thought: I act\nAction: {tool}\nAction Input: {json.dumps(arguments)}"
        return "Thought: I am done\nFinal Answer: finished"


def _crew(rig, manager_script, worker_command="ls"):
    rig.parts()  # clears the marker
    worker_llm = ListLLM([("marker_tool", {"command": worker_command})])
    manager_llm = ListLLM(manager_script)
    worker = Agent(role="worker", goal="run commands", backstory="a worker", llm=worker_llm,
                   tools=[MarkerTool(marker=str(rig.marker))], verbose=False, max_iter=3)
    manager = Agent(role="manager", goal="get it done", backstory="a manager", llm=manager_llm,
                    tools=[MarkerTool(marker=str(rig.marker))], allow_delegation=True, verbose=False, max_iter=4)
    task = Task(description="Get the command run.", expected_output="done", agent=manager)
    crew = Crew(agents=[manager, worker], tasks=[task], verbose=False)
    return crew, manager_llm, worker_llm


_DELEGATION = (DELEGATE, {"task": "run the command", "context": "none", "coworker": "worker"})


def test_a_denied_delegation_never_runs_the_coworker(rig):
    names = []

    def policy(context):
        names.append(context.tool_name)
        return False if context.tool_name == DELEGATE else None

    register_before_tool_call_hook(policy)
    crew, manager_llm, worker_llm = _crew(rig, [_DELEGATION])
    run = rig.run_crew(crew, manager_llm)
    assert run.error is None, run.error
    assert worker_llm._script_turn == 0 and not run.ran
    assert DELEGATE in names and "marker_tool" not in names
    event = rig.last()
    assert event["outcome"] == "deny" and event["hook"] == rig.hook_id(policy) and event["failure"] is None


def test_an_allowed_delegation_runs_the_coworker_whose_tool_is_judged(rig):
    names = []

    def policy(context):
        names.append((context.tool_name, getattr(context.agent, "role", None)))
        return None

    register_before_tool_call_hook(policy)
    crew, manager_llm, worker_llm = _crew(rig, [_DELEGATION])
    run = rig.run_crew(crew, manager_llm)
    assert run.error is None, run.error
    assert run.calls == [{"command": "ls"}]
    assert (DELEGATE, "manager") in names and ("marker_tool", "worker") in names


@pytest.mark.parametrize("worker_hook", ["raise", "hang"])
def test_the_coworkers_tool_call_fails_closed_inside_the_delegation(rig, worker_hook):
    import time

    def policy(context):
        if context.tool_name == "marker_tool":
            if worker_hook == "raise":
                raise RuntimeError("SECRET-3")
            time.sleep(1.0)
        return None

    register_before_tool_call_hook(policy)
    crew, manager_llm, worker_llm = _crew(rig, [_DELEGATION])
    run = rig.run_crew(crew, manager_llm)
    assert run.error is None, run.error
    assert not run.ran
    failures = [e["failure"] for e in rig.events() if e["outcome"] == "deny"]
    assert failures == [{"raise": "raised", "hang": "timeout"}[worker_hook]]
    assert "SECRET" not in rig.audit_path.read_text()


def test_the_delegating_agents_own_call_after_the_delegation_runs(rig):
    """No false deny: the manager's own tool call after the coworker's run still runs."""
    register_before_tool_call_hook(lambda context: None)
    crew, manager_llm, worker_llm = _crew(rig, [_DELEGATION, ("marker_tool", {"command": "echo manager"})])
    run = rig.run_crew(crew, manager_llm)
    assert run.error is None, run.error
    assert run.calls == [{"command": "ls"}, {"command": "echo manager"}]
    assert [e["outcome"] for e in rig.events()] == ["abstain"] * 3
