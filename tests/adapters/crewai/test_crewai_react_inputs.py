"""The ReAct path hands the before-tool-call hooks a dict of its own when the model gave
no arguments: ``execute_tool_and_check_finality`` builds the hook context with
``tool_input = tool_calling.arguments if tool_calling.arguments else {}``, and
``ToolUsage._use`` then runs ``tool.invoke(input={})`` from ``calling.arguments``. A
hook's in-place rewrite of that empty input (what CrewAI documents for every hook) was
judged by the gates but never reached the tool: the tool ran with its own defaults, which
no gate saw. The tool must run with the input the gates judged, on the ReAct path as on
the native one.

And a tool that raised is retried by ``ToolUsage`` (``should_retry`` -> ``use``), which
selects the tool to run by name once more: the retry must run the tool the hooks judged,
not another tool whose name sanitizes alike."""

from __future__ import annotations

import asyncio
import json

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks import register_before_tool_call_hook
from crewai.tools import BaseTool

TOOL = "marker_tool"
DEFAULT = "rm -rf default"


class DefaultingTool(BaseTool):
    """A tool whose argument has a default the model need not give."""

    name: str = TOOL
    description: str = "Runs a command (test tool: appends it to a marker file)."
    marker: str = ""

    def _run(self, command: str = DEFAULT) -> str:
        with open(self.marker, "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return f"ran {len(command)} chars"


def run_empty(rig, native=False, mode="sync"):
    scripted = type(rig.parts()[0])
    llm = scripted({}, native=native)  # the model gives no arguments at all
    tool = DefaultingTool(marker=str(rig.marker))
    agent = Agent(role="operator", goal="run the command", backstory="a test agent", llm=llm,
                  tools=[tool], verbose=False, max_iter=3)
    crew = Crew(agents=[agent], tasks=[Task(description="Run it once.", expected_output="done", agent=agent)],
                verbose=False)
    if mode == "async":
        return rig.run_crew(_Async(crew), llm)
    return rig.run_crew(crew, llm)


class _Async:
    def __init__(self, crew):
        self.crew = crew

    def kickoff(self):
        return asyncio.run(self.crew.kickoff_async())


def injector(context):
    """Makes the call safe: the command it runs is the one this hook chose."""
    context.tool_input["command"] = "echo safe"


def only_echo(context):
    return None if str(context.tool_input.get("command", DEFAULT)).startswith("echo") else False


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_rewrite_of_an_empty_input_is_what_runs(rig, native, mode):
    seen = []

    def policy(context):
        seen.append(dict(context.tool_input))
        return only_echo(context)

    register_before_tool_call_hook(injector)
    register_before_tool_call_hook(policy)
    run = run_empty(rig, native=native, mode=mode)
    assert seen and seen[-1] == {"command": "echo safe"}  # the gate judged the injected command
    assert run.calls == [{"command": "echo safe"}]  # ... and that is what ran, never the default
    assert rig.last()["outcome"] == "abstain" and rig.last()["failure"] is None


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_an_empty_input_no_hook_rewrites_runs_with_the_defaults(rig, native):
    """The twin: nobody rewrites the empty input, the tool runs with its defaults as
    upstream (the gate judged the empty input, which is what runs)."""
    seen = []

    def watcher(context):
        seen.append(dict(context.tool_input))
        return True

    register_before_tool_call_hook(watcher)
    run = run_empty(rig, native=native)
    assert seen == [{}]
    assert run.calls == [{"command": DEFAULT}]


def test_a_deny_of_the_injected_input_still_denies(rig):
    def forbidding_injector(context):
        context.tool_input["command"] = "forbidden"

    register_before_tool_call_hook(forbidding_injector)
    register_before_tool_call_hook(only_echo)
    run = run_empty(rig)
    assert not run.ran
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] is None and event["hook"] == rig.hook_id(only_echo)


def test_unpatched_upstream_runs_the_default_no_gate_judged(rig, adapter):
    seen = []

    def policy(context):
        seen.append(dict(context.tool_input))
        return only_echo(context)

    register_before_tool_call_hook(injector)
    register_before_tool_call_hook(policy)
    adapter.unpatch()
    try:
        run = run_empty(rig)
    finally:
        adapter.patch()
    assert seen == [{"command": "echo safe"}]
    assert run.calls == [{"command": DEFAULT}]  # upstream: judged "echo safe", ran the default
    assert adapter.state == "patched"


# ------------------------------------------------------------ the retry of a raised tool


class Flaky(BaseTool):
    """The tool the hooks judge: raises on its first run (CrewAI retries it)."""

    name: str = TOOL
    description: str = "A harmless tool that fails once."
    log: str = ""

    def _run(self, command: str) -> str:
        with open(self.log, "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        if sum(1 for _ in open(self.log)) == 1:
            raise RuntimeError("transient")
        return "flaky ran"


def retry_crew(rig):
    llm, marker_tool = rig.parts()
    dangerous = type(marker_tool)(marker=str(rig.marker), name="Marker Tool")  # sanitizes to marker_tool
    flaky = Flaky(log=str(rig.marker.with_name("flaky.jsonl")))
    agent = Agent(role="operator", goal="run the command", backstory="a test agent", llm=llm,
                  tools=[dangerous, flaky], verbose=False, max_iter=3)
    crew = Crew(agents=[agent], tasks=[Task(description="Run it once.", expected_output="done", agent=agent)],
                verbose=False)
    return rig.run_crew(crew, llm), flaky


def _runs(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def only_the_harmless_tool(context):
    return None if "harmless tool" in (context.tool.description or "") else False


def test_the_retry_of_a_raised_tool_runs_the_judged_tool(rig):
    register_before_tool_call_hook(only_the_harmless_tool)
    run, flaky = retry_crew(rig)
    assert not run.ran, "the retry ran the tool no hook judged"
    assert len(_runs(rig.marker.with_name("flaky.jsonl"))) == 2  # the judged tool, retried


def test_the_retry_with_one_tool_of_the_name_runs_it_again(rig):
    """The twin: one tool of that name, it raises once and is retried with the judged
    input (its grant given back)."""
    register_before_tool_call_hook(only_the_harmless_tool)
    llm, _ = rig.parts()
    flaky = Flaky(log=str(rig.marker.with_name("flaky.jsonl")))
    agent = Agent(role="operator", goal="run the command", backstory="a test agent", llm=llm,
                  tools=[flaky], verbose=False, max_iter=3)
    crew = Crew(agents=[agent], tasks=[Task(description="Run it once.", expected_output="done", agent=agent)],
                verbose=False)
    rig.run_crew(crew, llm)
    assert _runs(rig.marker.with_name("flaky.jsonl")) == [{"command": "harmless"}] * 2


# ------------------------------------------------------------ a flow action's tool name


class NamedFlowTool(BaseTool):
    """A flow action's tool whose display name is not its sanitized name."""

    name: str = "Delete Files"
    description: str = "Appends its command to the marker file named by the environment."

    def _run(self, command: str) -> str:
        import os

        with open(os.environ["FAILSECURE_CREWAI_FLOW_MARKER"], "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return "ran"


def _flow_action(tmp_path, monkeypatch):
    from crewai.flow.flow import Flow
    from crewai.flow.flow_definition import FlowToolActionDefinition
    from crewai.flow.runtime._actions import ToolAction

    class EmptyFlow(Flow):
        pass

    marker = tmp_path / "flow-marker"
    monkeypatch.setenv("FAILSECURE_CREWAI_FLOW_MARKER", str(marker))
    definition = FlowToolActionDefinition(call="tool", ref=f"{__name__}:NamedFlowTool", **{"with": {"command": "rm"}})
    return ToolAction(EmptyFlow(), definition), marker


@pytest.mark.parametrize("how", ["filter", "name"])
def test_a_flow_action_names_its_tool_as_an_agents_call_does(rig, tmp_path, monkeypatch, how):
    """An agent's call sites tell the hooks the sanitized name (``delete_files``), which a
    ``@before_tool_call(tools=[...])`` filter and a policy compare with: the flow action's
    tool must be named the same way, or the hook scoped to it is skipped and it runs."""
    from crewai.hooks import before_tool_call

    if how == "filter":
        @before_tool_call(tools=["delete_files"])
        def no_deleting(context):
            return False
    else:
        def no_deleting(context):
            return False if context.tool_name == "delete_files" else None

        register_before_tool_call_hook(no_deleting)
    action, marker = _flow_action(tmp_path, monkeypatch)
    result = action.run()
    assert not marker.exists(), "the flow action ran past the hook scoped to its tool"
    assert str(result).startswith("Tool execution blocked by hook.")
    assert rig.last()["outcome"] == "deny" and rig.last()["tool"] == "delete_files"


def test_a_flow_action_of_another_tool_name_is_not_caught_by_the_filter(rig, tmp_path, monkeypatch):
    from crewai.hooks import before_tool_call

    @before_tool_call(tools=["some_other_tool"])
    def no_other(context):
        return False

    action, marker = _flow_action(tmp_path, monkeypatch)
    assert action.run() == "ran"
    assert [json.loads(line) for line in marker.read_text().splitlines()] == [{"command": "rm"}]


# ------------------------------------------------------------ an aliased argument


class AliasedTool(BaseTool):
    """A tool whose argument schema names a field by an alias (``path`` for
    ``file_path``): the ReAct path keeps the keys of the schema's JSON properties."""

    name: str = TOOL
    description: str = "Writes a path to the marker file."
    marker: str = ""

    def __init__(self, **kwargs):
        from pydantic import BaseModel, ConfigDict, Field

        class Args(BaseModel):
            model_config = ConfigDict(populate_by_name=True)
            file_path: str = Field(alias="path")

        super().__init__(args_schema=Args, **kwargs)

    def _run(self, **kwargs) -> str:
        with open(self.marker, "a") as fh:
            fh.write(json.dumps(kwargs) + "\n")
        return "ran"


def test_an_aliased_argument_with_an_extra_key_runs_as_upstream(rig, adapter):
    """The model sends the alias and a key the schema lacks: the ReAct path drops the
    extra key (by the schema's JSON properties, which name the alias) and runs the tool.
    The call the hooks allowed is that call: it runs, not denied as ungoverned."""
    def watcher(context):
        return True

    register_before_tool_call_hook(watcher)
    scripted = type(rig.parts()[0])

    def run_it():
        if rig.marker.exists():
            rig.marker.unlink()
        llm = scripted({"path": "notes.txt", "extra": 1})
        agent = Agent(role="operator", goal="write", backstory="a test agent", llm=llm,
                      tools=[AliasedTool(marker=str(rig.marker))], verbose=False, max_iter=3)
        crew = Crew(agents=[agent], tasks=[Task(description="Write.", expected_output="done", agent=agent)],
                    verbose=False)
        return rig.run_crew(crew, llm)

    adapter.unpatch()
    try:
        upstream = run_it()
    finally:
        adapter.patch()
    run = run_it()
    assert upstream.calls, "upstream ran the tool"
    assert run.calls == upstream.calls
    assert all(e["failure"] != "ungoverned" for e in rig.events())
