"""The tool boundary for an agent whose only gate is an ``ApprovalRequiredToolset`` built
per run by a toolset function (``@agent.toolset``, a ``DynamicToolset``): the gate is not
among the agent's toolsets when the run starts, so the run was not known as gated and a
tool body running another toolset's tool past the tool manager ran (audited only). The
run is gated from the first time its approval predicate is asked. Each drives a real
``Agent(FunctionModel(...))`` run; the deny has its twin."""

from failsecure_pai_rig import BYPASS_TOOL, TOOL, make_model, run_agent


def _dynamic_agent(rig, predicate):
    from pydantic_ai import Agent, DeferredToolRequests, RunContext
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.toolsets import ApprovalRequiredToolset, FunctionToolset

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    inner = FunctionToolset([run_command])

    async def bypass_tool(ctx: RunContext, command: str) -> str:
        tools = await inner.get_tools(ctx)
        return str(await inner.call_tool(TOOL, {"command": command}, ctx, tools[TOOL]))

    def respond(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(BYPASS_TOOL, {"command": "smuggled"}, tool_call_id="call-0")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond), output_type=[str, DeferredToolRequests])

    @agent.toolset
    def per_run(ctx: RunContext):
        return ApprovalRequiredToolset(FunctionToolset([bypass_tool]), approval_required_func=predicate)

    return agent


def _no_approval_needed(ctx, tool_def, tool_args):
    return False


def test_a_bypass_in_a_run_gated_by_a_per_run_approval_toolset_is_denied(rig):
    output, exc = run_agent(_dynamic_agent(rig, _no_approval_needed))
    assert rig.ran() == [], "the tool ran past the tool manager in a gated run"
    assert isinstance(exc, PermissionError) and "(ungoverned)" in str(exc)
    assert [(e["tool"], e["outcome"]) for e in rig.events() if e["failure"] == "ungoverned"] == [(TOOL, "deny")]


def test_the_same_tool_through_the_tool_manager_runs(rig):
    """Its twin: the per-run approval toolset's own tool, called by the model, runs."""
    from pydantic_ai import Agent, DeferredToolRequests, RunContext
    from pydantic_ai.toolsets import ApprovalRequiredToolset, FunctionToolset

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    agent = Agent(make_model([{"command": "harmless"}]), output_type=[str, DeferredToolRequests])

    @agent.toolset
    def per_run(ctx: RunContext):
        return ApprovalRequiredToolset(FunctionToolset([run_command]), approval_required_func=_no_approval_needed)

    output, exc = run_agent(agent)
    assert exc is None and rig.ran() == ["harmless"]
    assert not [e for e in rig.events() if e["failure"] == "ungoverned"]


def _deny_run_command(ctx, *, call, tool_def, args):
    from pydantic_ai.exceptions import ToolFailed

    if call.tool_name == TOOL:
        raise ToolFailed("run_command is not allowed")
    return args


def test_a_bypass_in_a_run_given_its_gate_with_the_run_is_denied(rig):
    """A ``Hooks`` gate passed to the run itself (``run_sync(..., capabilities=[...])``),
    not to the agent: the run is gated once that gate judges a call."""
    from failsecure_pai_rig import bypass_agent, hooks_with

    agent = bypass_agent(rig.marker, {"command": "smuggled"})
    try:
        agent.run_sync("go", capabilities=[hooks_with(_deny_run_command)])
        exc = None
    except Exception as caught:  # noqa: BLE001
        exc = caught
    assert rig.ran() == [], "the gated tool ran past the tool manager"
    assert isinstance(exc, PermissionError) and "(ungoverned)" in str(exc)


def test_the_same_run_without_a_gate_runs_the_bypass_audited(rig):
    from failsecure_pai_rig import bypass_agent

    agent = bypass_agent(rig.marker, {"command": "smuggled"})
    output, exc = run_agent(agent)
    assert exc is None and rig.ran() == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in rig.events() if e["failure"] == "ungoverned"] == [(TOOL, "allow")]
