"""The tool boundary (issue 29) in real openai-agents runs: a function tool whose
``on_invoke_tool`` runs inside a run (``Runner.run`` / ``run_sync`` / ``run_streamed``, a
resumed run) without the guardrail path's decision for that call is ungoverned —
audited with ``failure = "ungoverned"``, denied while a gate is registered, allowed and
audited when none is (or under ``ungoverned = "audit"``). Application code calling a
tool outside any run is not an agent's tool call. Every deny has an allow twin."""

from __future__ import annotations

import asyncio
import json

import pytest

MODES = ["sync", "async", "streamed"]
HOOK = "openai-agents:FunctionTool.on_invoke_tool"


def deny_forbidden(data):
    """The user's gate on the inner tool: ``forbidden`` never runs."""
    from agents import ToolGuardrailFunctionOutput

    command = json.loads(data.context.tool_arguments or "{}").get("command", "")
    if "forbidden" in command:
        return ToolGuardrailFunctionOutput.reject_content("no forbidden commands")
    return ToolGuardrailFunctionOutput.allow()


def run(rig, rigmod, agent, mode):
    from agents import RunConfig, Runner

    config = RunConfig(tracing_disabled=True)
    if mode == "streamed":
        async def streamed():
            result = Runner.run_streamed(agent, "go", run_config=config, max_turns=4)
            async for _ in result.stream_events():
                pass
            return result

        return asyncio.run(streamed())
    return rigmod.run(agent, mode)


def bypass_agent(rig, rigmod, command, gates=()):
    inner = rig.tool.build(list(gates))
    rig.model = rigmod.make_model({"command": command})
    rig.caught = []
    return rigmod.agent_with(rigmod.wrapper_tool(inner, caught=rig.caught), rig.model)


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e.get("failure") == "ungoverned"]


@pytest.mark.parametrize("mode", MODES)
def test_a_wrapper_tool_invoking_a_gated_tool_is_denied_as_ungoverned(rig, rigmod, mode):
    agent = bypass_agent(rig, rigmod, "forbidden", [rigmod.guardrail(deny_forbidden)])
    run(rig, rigmod, agent, mode)
    assert rig.tool.runs() == [], "the gated tool ran through the wrapper"
    found = ungoverned(rig)
    assert [(e["tool"], e["outcome"], e["hook"]) for e in found] == [(rigmod.TOOL, "deny", HOOK)]
    # the wrapper (the caller) gets Ungoverned, whose text is the audited reason, no arguments
    assert len(rig.caught) == 1 and f"'{HOOK}'" in rig.caught[0] and "(ungoverned)" in rig.caught[0]
    assert "forbidden" not in rig.caught[0] and "forbidden" not in (rig.told() or "")


@pytest.mark.parametrize("mode", MODES)
def test_a_harmless_call_through_the_wrapper_is_denied_too(rig, rigmod, mode):
    """The gate would have allowed it, but it never judged it: a decision is needed."""
    agent = bypass_agent(rig, rigmod, "harmless", [rigmod.guardrail(deny_forbidden)])
    run(rig, rigmod, agent, mode)
    assert rig.tool.runs() == [] and ungoverned(rig)


@pytest.mark.parametrize("mode", MODES)
def test_the_normal_path_with_an_allowing_gate_runs(rig, rigmod, mode):
    """Allow twin: the model calls the gated tool itself; its grant is consumed."""
    rig.model = rigmod.make_model({"command": "harmless"})
    agent = rigmod.agent_with(rig.tool.build([rigmod.guardrail(deny_forbidden)]), rig.model)
    run(rig, rigmod, agent, mode)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert ungoverned(rig) == []


@pytest.mark.parametrize("mode", MODES)
def test_the_normal_path_with_a_denying_gate_is_the_gates_deny(rig, rigmod, mode):
    rig.model = rigmod.make_model({"command": "forbidden"})
    agent = rigmod.agent_with(rig.tool.build([rigmod.guardrail(deny_forbidden)]), rig.model)
    run(rig, rigmod, agent, mode)
    assert rig.tool.runs() == [] and rig.told() == "no forbidden commands" and ungoverned(rig) == []


@pytest.mark.parametrize("mode", MODES)
def test_the_bypass_with_no_gate_runs_audited(rig, rigmod, mode):
    """Allow twin: nothing to bypass; the call runs and is audited as ungoverned."""
    agent = bypass_agent(rig, rigmod, "harmless")
    run(rig, rigmod, agent, mode)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert [(e["outcome"], e["hook"]) for e in ungoverned(rig)] == [("allow", HOOK)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_ungoverned_audit_lets_the_bypass_run(rig, rigmod, mode):
    rig.config(top='ungoverned = "audit"')
    agent = bypass_agent(rig, rigmod, "forbidden", [rigmod.guardrail(deny_forbidden)])
    run(rig, rigmod, agent, mode)
    assert rig.tool.runs() == [{"command": "forbidden"}]
    assert [e["outcome"] for e in ungoverned(rig)] == ["allow"]


def test_application_code_calling_a_gated_tool_outside_a_run_runs(rig, rigmod):
    """Allow twin: not an agent's tool call (no run), even with a denying gate."""
    from agents.tool_context import ToolContext

    tool = rig.tool.build([rigmod.guardrail(deny_forbidden)])
    context = ToolContext(context=None, tool_name=rigmod.TOOL, tool_call_id="app-1", tool_arguments='{"command": "forbidden"}')
    assert asyncio.run(tool.on_invoke_tool(context, '{"command": "forbidden"}')) == "ran forbidden"
    assert rig.tool.runs() == [{"command": "forbidden"}] and ungoverned(rig) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_approved_by_a_human_runs_on_resume(rig, rigmod, mode):
    """A resumed run is a run: the approved call is judged again by the guardrail path
    and runs once."""
    result = rig.run([rigmod.guardrail(deny_forbidden)], needs_approval=True, mode=mode)
    assert result.interruptions and rig.tool.runs() == []
    state = result.to_state()
    state.approve(result.interruptions[0])
    rig.resume(state, mode)
    assert rig.tool.runs() == [{"command": "harmless"}] and ungoverned(rig) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_two_calls_run_on_their_own_grants(rig, rigmod, mode):
    rig.run([rigmod.guardrail(deny_forbidden)], mode=mode, calls=2)
    assert rig.tool.runs() == [{"command": "harmless"}] * 2 and ungoverned(rig) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_agent_as_tool_runs_its_own_judged_calls(rig, rigmod, mode):
    """A nested run (``Agent.as_tool``) is part of the run: its own tool calls have their
    own decisions and grants."""
    from agents import Agent

    inner_model = rigmod.make_model({"command": "harmless"})
    inner = rigmod.agent_with(rig.tool.build([rigmod.guardrail(deny_forbidden)]), inner_model)
    outer_model = rigmod.make_model({"input": "go"})
    nested = inner.as_tool(tool_name=rigmod.TOOL, tool_description="runs the inner agent")
    outer = Agent(name="outer", instructions="delegate", tools=[nested], model=outer_model)
    rigmod.run(outer, mode)
    assert rig.tool.runs() == [{"command": "harmless"}] and ungoverned(rig) == []


def allow_all(data):
    """The user's gate on the outer tool (the agent used as a tool): it allows."""
    from agents import ToolGuardrailFunctionOutput

    return ToolGuardrailFunctionOutput.allow()


def interrupted_nested_run(rig, rigmod, mode):
    """An outer agent whose tool is an agent (``Agent.as_tool``, gated by an allowing
    guardrail) whose own tool needs approval: the first run stops at the nested approval."""
    from agents import Agent

    inner_model = rigmod.make_model({"command": "harmless"})
    inner = rigmod.agent_with(rig.tool.build(needs_approval=True), inner_model)
    nested = inner.as_tool(tool_name=rigmod.TOOL, tool_description="runs the inner agent")
    nested.tool_input_guardrails = [rigmod.guardrail(allow_all)]
    outer = Agent(name="outer", instructions="delegate", tools=[nested], model=rigmod.make_model({"input": "go"}))
    result = rigmod.run(outer, mode)
    assert result.interruptions and rig.tool.runs() == []
    state = result.to_state()
    for item in result.interruptions:
        state.approve(item)
    return outer, nested, state


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_approved_nested_call_runs_on_resume(rig, rigmod, mode):
    """The SDK resumes an interrupted agent-as-tool call without the guardrail path (its
    nested continuation): the outer call was judged when first dispatched, so its
    continuation runs on that decision, and the approved inner call runs."""
    outer, _, state = interrupted_nested_run(rig, rigmod, mode)
    rigmod.run(outer, mode, state=state)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert ungoverned(rig) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_resumed_nested_call_with_other_arguments_is_ungoverned(rig, rigmod, mode):
    """Deny twin: on that resume, the outer tool invoked with other arguments than the
    ones judged is not the judged call's continuation: ungoverned, denied."""
    outer, nested, state = interrupted_nested_run(rig, rigmod, mode)
    invoker = nested.on_invoke_tool

    async def replaying(ctx, _raw):
        return await invoker(ctx, json.dumps({"input": "something else"}))

    nested.on_invoke_tool = replaying
    try:  # an agent used as a tool re-raises its failure: the run ends with the audited reason
        rigmod.run(outer, mode, state=state)
    except Exception as exc:
        assert "(ungoverned)" in str(exc) and "something else" not in str(exc)
    assert rig.tool.runs() == []
    assert [(e["tool"], e["outcome"], e["hook"]) for e in ungoverned(rig)] == [(rigmod.TOOL, "deny", HOOK)]
