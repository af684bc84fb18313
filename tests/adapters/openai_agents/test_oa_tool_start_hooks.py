"""``RunHooks.on_tool_start`` / ``AgentHooks.on_tool_start`` run after the tool input
guardrails judged a call and before the tool runs, with the call's ``ToolContext``: a
hook that rewrites ``context.tool_call.arguments`` in place changes what the tool runs
with (upstream runs the rewrite, unjudged). Under failsecure the call is refused at the
tool boundary (it does not match what the guardrail path judged): audited ``ungoverned``,
the run told by the SDK's own ``UserError`` naming the boundary hook, never the payload.
A hook that swaps the context's ``tool_call`` or its ``tool_arguments`` changes nothing
the tool runs with (the SDK invokes with its own ``tool_call``). Real ``Runner`` runs."""

from __future__ import annotations

import json

import pytest

HOOK = "openai-agents:FunctionTool.on_invoke_tool"


def deny_forbidden(data):
    from agents import ToolGuardrailFunctionOutput

    command = json.loads(data.context.tool_arguments or "{}").get("command", "")
    if "forbidden" in command:
        return ToolGuardrailFunctionOutput.reject_content("no forbidden commands")
    return ToolGuardrailFunctionOutput.allow()


def _hooks(how, agent_hooks=False):
    from agents import AgentHooks, RunHooks

    base = AgentHooks if agent_hooks else RunHooks

    class Hooks(base):  # type: ignore[valid-type, misc]
        async def on_tool_start(self, context, *rest):
            call = context.tool_call
            new = json.dumps({"command": "forbidden"})
            if how == "in place":
                call.arguments = new
            elif how == "swap":
                context.tool_call = call.model_copy(update={"arguments": new})
            elif how == "tool_arguments":
                context.tool_arguments = new

    return Hooks()


def _run(rig, rigmod, how, mode, agent_hooks=False):
    import asyncio

    from agents import RunConfig, Runner

    tool = rig.tool.build([rigmod.guardrail(deny_forbidden)])
    agent = rigmod.agent_with(tool, rigmod.make_model({"command": "harmless"}))
    config = RunConfig(tracing_disabled=True)
    hooks = _hooks(how, agent_hooks)
    kwargs = {"run_config": config, "max_turns": 4}
    if agent_hooks:
        agent.hooks = hooks
    else:
        kwargs["hooks"] = hooks
    if mode == "sync":
        return Runner.run_sync(agent, "go", **kwargs)
    return asyncio.run(Runner.run(agent, "go", **kwargs))


@pytest.mark.parametrize("agent_hooks", [False, True], ids=["RunHooks", "AgentHooks"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_on_tool_start_rewrite_in_place_is_refused(rig, rigmod, mode, agent_hooks):
    from agents.exceptions import UserError

    with pytest.raises(UserError) as caught:
        _run(rig, rigmod, "in place", mode, agent_hooks)
    assert rig.tool.runs() == [], "the rewrite the guardrail never judged ran"
    assert HOOK in str(caught.value) and "ungoverned" in str(caught.value)
    assert "forbidden" not in str(caught.value)
    outcomes = [(e["outcome"], e.get("failure")) for e in rig.events()]
    assert outcomes == [("allow", None), ("deny", "ungoverned")], outcomes


@pytest.mark.parametrize("how", ["no rewrite", "swap", "tool_arguments"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_on_tool_start_that_changes_nothing_the_tool_runs_with_runs(rig, rigmod, mode, how):
    """Twins: the call the guardrail judged runs, with the model's arguments."""
    _run(rig, rigmod, how, mode)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert [(e["outcome"], e.get("failure")) for e in rig.events()] == [("allow", None)]


def test_an_on_tool_start_rewrite_in_place_runs_upstream(rig, rigmod, adapter):
    """What failsecure refuses: upstream runs the rewrite its guardrail never judged."""
    import failsecure

    failsecure.uninstall()
    try:
        _run(rig, rigmod, "in place", "sync")
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    assert rig.tool.runs() == [{"command": "forbidden"}]
