"""The tool boundary (issue 29) in real pydantic-ai runs: a tool that runs inside an agent
run (``run``, ``run_sync``, ``iter``, ``run_stream``, ``run_stream_events``) without a
decision of the tool manager's gates for that very execution is ungoverned — audited with
``failure = "ungoverned"``, denied while a gate is registered, allowed and audited when
none is (or under ``ungoverned = "audit"``). Application code calling a toolset outside
any run is not an agent's tool call."""

import asyncio

import pytest
from failsecure_pai_rig import BYPASS_TOOL, TOOL, bypass_agent, hooks_with, make_agent, run_agent

MODES = ("sync", "async")
WHERE = "pydantic-ai:FunctionToolset.call_tool"


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def deny_run_command(ctx, *, call, tool_def, args):
    """The user's gate: ``run_command`` never runs; every other tool may."""
    from pydantic_ai.exceptions import ToolFailed

    if call.tool_name == TOOL:
        raise ToolFailed("run_command is not allowed")
    return args


def allow_all(ctx, *, call, tool_def, args):
    return args


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_running_another_toolsets_tool_is_denied_as_ungoverned(rig, mode):
    agent = bypass_agent(rig.marker, {"command": "smuggled"}, [hooks_with(deny_run_command)])
    output, exc = run_agent(agent, mode)
    assert rig.ran() == [], "the gated tool ran past the tool manager"
    assert isinstance(exc, PermissionError) and "(ungoverned)" in str(exc) and "smuggled" not in str(exc)
    found = ungoverned(rig)
    assert [(e["tool"], e["outcome"], e["hook"]) for e in found] == [(TOOL, "deny", WHERE)]
    # the wrapper tool itself was judged and allowed by the gate
    assert any(e["tool"] == BYPASS_TOOL and e["outcome"] == "allow" for e in rig.events())


@pytest.mark.parametrize("mode", MODES)
def test_the_same_bypass_with_no_gate_runs_and_is_audited(rig, mode):
    output, exc = run_agent(bypass_agent(rig.marker, {"command": "smuggled"}), mode)
    assert exc is None and rig.ran() == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


def test_ungoverned_audit_setting_runs_the_bypass_audited(rig):
    rig.config(top='ungoverned = "audit"')
    output, exc = run_agent(bypass_agent(rig.marker, {"command": "smuggled"}, [hooks_with(deny_run_command)]))
    assert exc is None and rig.ran() == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


def test_a_capability_class_gate_makes_the_run_gated(rig):
    """A gate that is a capability class (no ``Hooks``) counts as a gate registered."""
    from pydantic_ai.capabilities import AbstractCapability

    class Policy(AbstractCapability):
        async def before_tool_execute(self, ctx, *, call, tool_def, args):
            return args

    output, exc = run_agent(bypass_agent(rig.marker, {"command": "smuggled"}, [Policy()]))
    assert rig.ran() == [] and isinstance(exc, PermissionError)
    assert [e["outcome"] for e in ungoverned(rig)] == ["deny"]


async def _drive(agent, path):
    if path == "run":
        return (await agent.run("go")).output
    if path == "iter":
        async with agent.iter("go") as run:
            async for _ in run:
                pass
        return run.result.output
    if path == "run_stream":
        async with agent.run_stream("go") as result:
            async for _ in result.stream_output():
                pass
        return None
    if path == "run_stream_events":
        async with agent.run_stream_events("go") as events:
            async for _ in events:
                pass
        return None
    raise AssertionError(path)


def _test_model_agent(rig, capabilities):
    """A ``TestModel`` agent (it streams) calling ``run_command``."""
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    agent = Agent(TestModel(call_tools=[TOOL]), capabilities=list(capabilities))
    marker = rig.marker

    @agent.tool_plain
    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    return agent


@pytest.mark.parametrize("path", ["run_sync", "run", "iter", "run_stream", "run_stream_events"])
def test_the_normal_path_with_an_allowing_gate_runs_and_is_not_flagged(rig, path):
    agent = _test_model_agent(rig, [hooks_with(allow_all)])
    if path == "run_sync":
        agent.run_sync("go")
    else:
        asyncio.run(_drive(agent, path))
    assert len(rig.ran()) == 1
    assert ungoverned(rig) == []


def _streaming_bypass_agent(rig, capabilities):
    """``bypass_agent`` with a ``TestModel`` (it streams) calling ``bypass_tool``."""
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.toolsets import FunctionToolset

    from pydantic_ai import Agent

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    inner = FunctionToolset([run_command])
    agent = Agent(TestModel(call_tools=[BYPASS_TOOL]), capabilities=list(capabilities))

    @agent.tool
    async def bypass_tool(ctx: RunContext, command: str) -> str:
        tools = await inner.get_tools(ctx)
        return str(await inner.call_tool(TOOL, {"command": command}, ctx, tools[TOOL]))

    return agent


@pytest.mark.parametrize("path", ["run_sync", "run", "iter", "run_stream", "run_stream_events"])
def test_a_bypass_is_seen_on_every_run_path(rig, path):
    if path in ("run_stream", "run_stream_events"):
        agent = _streaming_bypass_agent(rig, [hooks_with(deny_run_command)])
    else:
        agent = bypass_agent(rig.marker, {"command": "smuggled"}, [hooks_with(deny_run_command)])
    with pytest.raises(PermissionError):
        if path == "run_sync":
            agent.run_sync("go")
        else:
            asyncio.run(_drive(agent, path))
    assert rig.ran() == [] and [e["outcome"] for e in ungoverned(rig)] == ["deny"]


def test_an_agent_with_no_gate_is_not_flagged(rig):
    """No gate, no plugin gate: upstream's path, nothing ungoverned (and no decision)."""
    output, exc = run_agent(make_agent(rig.marker, [{"command": "harmless"}]))
    assert exc is None and rig.ran() == ["harmless"] and rig.events() == []


def test_application_code_outside_a_run_keeps_working(rig):
    """A toolset's ``call_tool`` called by application code after the run (with a gate
    that would deny it): not an agent's tool call."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.toolsets import FunctionToolset

    marker = rig.marker
    kept: list = []

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    toolset = FunctionToolset([run_command])
    agent = make_agent(marker, [{"command": "harmless"}], [hooks_with(deny_run_command)])
    assert isinstance(agent, Agent)

    @agent.tool
    def keep(ctx: RunContext) -> str:
        kept.append(ctx)
        return "kept"

    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("keep", {}, tool_call_id="call-k")])
        return ModelResponse(parts=[TextPart("done")])

    agent.run_sync("go", model=FunctionModel(respond))
    assert kept

    async def outside():
        tools = await toolset.get_tools(kept[0])
        return await toolset.call_tool(TOOL, {"command": "by the application"}, kept[0], tools[TOOL])

    assert asyncio.run(outside()) == "ran by the application"
    assert rig.ran() == ["by the application"] and ungoverned(rig) == []


def _twice_agent(rig, times, capabilities):
    """A toolset wrapper that runs the judged call ``times`` times."""
    from pydantic_ai import Agent
    from pydantic_ai.toolsets import FunctionToolset, WrapperToolset
    from failsecure_pai_rig import make_model

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    class Repeating(WrapperToolset):
        async def call_tool(self, name, tool_args, ctx, tool):
            result = None
            for _ in range(times):
                result = await super().call_tool(name, tool_args, ctx, tool)
            return result

    return Agent(make_model([{"command": "harmless"}]), toolsets=[Repeating(FunctionToolset([run_command]))], capabilities=list(capabilities))


def test_a_second_execution_on_one_decision_is_ungoverned(rig):
    output, exc = run_agent(_twice_agent(rig, 2, [hooks_with(allow_all)]))
    assert rig.ran() == ["harmless"], "the judged call ran twice"
    assert isinstance(exc, PermissionError)
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_one_execution_on_one_decision_runs(rig):
    output, exc = run_agent(_twice_agent(rig, 1, [hooks_with(allow_all)]))
    assert exc is None and rig.ran() == ["harmless"] and ungoverned(rig) == []


def test_an_agent_run_inside_a_tool_is_governed(rig):
    """A tool whose body runs another agent (agents as tools): the inner agent's calls go
    through its own tool manager and gates: judged, not ungoverned."""
    from pydantic_ai import RunContext
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from pydantic_ai import Agent

    inner = make_agent(rig.marker, [{"command": "inner"}], [hooks_with(allow_all)])

    def respond(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("delegate", {}, tool_call_id="outer-0")])
        return ModelResponse(parts=[TextPart("done")])

    outer = Agent(FunctionModel(respond), capabilities=[hooks_with(allow_all)])

    @outer.tool
    async def delegate(ctx: RunContext) -> str:
        return str((await inner.run("go")).output)

    output, exc = run_agent(outer, "async")
    assert exc is None and rig.ran() == ["inner"] and ungoverned(rig) == []


def test_an_approved_call_runs_and_is_not_flagged(rig):
    """A call that waited for approval and was approved by a handler: the approval's
    decision lets it run once."""
    from pydantic_ai import DeferredToolResults
    from pydantic_ai.capabilities import Hooks
    from failsecure_pai_rig import _approval_tool_agent

    hooks = hooks_with(allow_all)

    def approve(ctx, *, requests):
        return DeferredToolResults(approvals={c.tool_call_id: True for c in requests.approvals})

    hooks.on.deferred_tool_calls(approve)
    assert isinstance(hooks, Hooks)
    output, exc = run_agent(_approval_tool_agent(rig.marker, {"command": "harmless"}, [hooks]))
    assert exc is None and rig.ran() == ["harmless"] and ungoverned(rig) == []
