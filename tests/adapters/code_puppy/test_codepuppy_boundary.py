"""The tool boundary (issue 29) in real pydantic-ai agent runs with code-puppy's pre-tool
patch and its callbacks: a tool that runs inside an agent run without a decision of the
``pre_tool_call`` dispatch for that call is ungoverned — audited with ``failure =
"ungoverned"``, denied while a ``pre_tool_call`` callback (or a failsecure plugin gate) is
registered, allowed and audited when none is (or under ``ungoverned = "audit"``).
Application code calling a tool outside any run is not an agent's tool call."""

import asyncio

import pytest

TOOL = "marker_tool"
WRAPPER = "wrapper_tool"


def agent_with(steps: list, how: str = "call_tool"):
    """A pydantic-ai agent whose scripted model calls the tools of ``steps`` ((tool,
    arguments), in order), then answers; the marker tool records each run, the wrapper
    runs the marker tool past the dispatch (its toolset's ``call_tool``, or a subclass's
    own ``call_tool`` calling the base one)."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    turn = [0]

    def model(messages, info):
        if turn[0] < len(steps):
            tool, arguments = steps[turn[0]]
            turn[0] += 1
            return ModelResponse(parts=[ToolCallPart(tool, dict(arguments))])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model))
    ran: list = []

    @agent.tool_plain
    def marker_tool(command: str) -> str:
        ran.append(command)
        return "ran"

    @agent.tool
    async def wrapper_tool(ctx: RunContext, command: str) -> str:
        toolset = agent._function_toolset
        tools = await toolset.get_tools(ctx)
        return str(await toolset.call_tool(TOOL, {"command": command}, ctx, tools[TOOL]))

    return agent, ran


def run(agent, mode: str = "async"):
    from failsecure.adapter import Ungoverned

    try:
        if mode == "sync":
            return agent.run_sync("go").output
        return asyncio.run(agent.run("go")).output
    except Ungoverned as exc:
        return f"Ungoverned: {exc}"


def ungoverned(rig) -> list:
    """The ungoverned events that decided. pydantic-ai's boundary (code-puppy runs on it)
    may see the same execution first: with no gate of pydantic-ai's it lets it on, audited
    as its own ungoverned allow, and code-puppy's boundary beneath judges it by code-puppy's
    rule (tests/core/test_boundary.py: two adapters around one tool); with a plugin gate in
    force it denies it itself."""
    events = [e for e in rig.events() if e["failure"] == "ungoverned"]
    assert {e["framework"] for e in events} <= {"code-puppy", "pydantic-ai"}
    return [e for e in events if not (e["framework"] == "pydantic-ai" and e["outcome"] == "allow")]


def deny_marker(tool_name, tool_args, context=None):
    """The user's gate: the marker tool is never to run; everything else may."""
    if tool_name == TOOL:
        return {"blocked": True, "error_message": "not the marker tool"}
    return None


def allow_all(tool_name, tool_args, context=None):
    return {"blocked": False}


BYPASS = [(WRAPPER, {"command": "smuggled"})]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_wrapper_tool_running_a_gated_tool_is_denied_as_ungoverned(rig, registry, mode):
    registry.register_callback("pre_tool_call", deny_marker)
    agent, ran = agent_with(BYPASS)
    seen = run(agent, mode)
    assert ran == [], "the gated tool ran through the wrapper"
    assert seen.startswith("Ungoverned: ") and "smuggled" not in seen
    found = ungoverned(rig)
    # the path: the class whose method ran
    assert [(e["tool"], e["outcome"], e["hook"]) for e in found] == [(TOOL, "deny", "code-puppy:FunctionToolset.call_tool")]


class AllowingPlugin:
    """A failsecure plugin gate that allows every call (it still needs to be asked)."""

    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        return Verdict(action=Action.ALLOW)


def test_a_plugin_gate_alone_denies_the_bypass(rig, registry):
    from failsecure import plugins

    plugin = AllowingPlugin()
    type(plugin).failsecure_pre_tool_call = plugins.hookimpl(AllowingPlugin.failsecure_pre_tool_call)
    plugins.register(plugin, name="boundary-test")
    try:
        agent, ran = agent_with(BYPASS)
        run(agent)
    finally:
        plugins.unregister(plugin)
    assert ran == []
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_the_same_bypass_with_no_gate_runs_and_is_audited(rig, registry):
    agent, ran = agent_with(BYPASS)
    run(agent)
    assert ran == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


def test_a_shell_guard_alone_leaves_the_bypass_audited(rig, registry):
    """A ``run_shell_command`` callback judges inside the shell tool whatever path reached
    it: the bypass passes by no gate of the user's."""
    registry.register_callback("run_shell_command", lambda context, command, cwd=None, timeout=60: None)
    agent, ran = agent_with(BYPASS)
    run(agent)
    assert ran == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


def test_ungoverned_audit_setting_runs_the_bypass_audited(rig, registry):
    rig.config(top='ungoverned = "audit"')
    registry.register_callback("pre_tool_call", deny_marker)
    agent, ran = agent_with(BYPASS)
    run(agent)
    assert ran == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_normal_path_with_an_allowing_gate_runs_and_is_not_flagged(rig, registry, mode):
    registry.register_callback("pre_tool_call", allow_all)
    agent, ran = agent_with([(TOOL, {"command": "harmless"}), (TOOL, {"command": "harmless"})])
    assert run(agent, mode) == "done"
    assert ran == ["harmless", "harmless"]  # two calls, two decisions
    assert ungoverned(rig) == []


def test_a_callback_rewrite_is_the_judged_call(rig, registry):
    """A ``pre_tool_call`` callback that rewrites the arguments in place: the tool runs
    with what every callback judged, which is what the grant holds."""

    def rewrite(tool_name, tool_args, context=None):
        if tool_name == TOOL:
            tool_args["command"] = "rewritten"
        return None

    registry.register_callback("pre_tool_call", rewrite)
    agent, ran = agent_with([(TOOL, {"command": "harmless"})])
    assert run(agent) == "done"
    assert ran == ["rewritten"]
    assert ungoverned(rig) == []


def test_a_wrapper_judged_for_itself_still_cannot_run_the_gated_tool(rig, registry):
    """The wrapper's own call was allowed; the marker tool it runs inside has no decision."""
    registry.register_callback("pre_tool_call", lambda tool_name, tool_args, context=None: None if tool_name == WRAPPER else deny_marker(tool_name, tool_args))
    agent, ran = agent_with([(TOOL, {"command": "harmless"}), (WRAPPER, {"command": "harmless"})])
    run(agent)
    assert ran == []  # the model's own call was blocked, the wrapper's inner call denied
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_a_second_execution_on_one_decision_is_ungoverned(rig, registry):
    """The model's call of the marker tool was allowed and ran; the wrapper replaying it
    with the same arguments has no decision of its own."""
    registry.register_callback("pre_tool_call", lambda tool_name, tool_args, context=None: {"blocked": False})
    agent, ran = agent_with([(TOOL, {"command": "harmless"}), (WRAPPER, {"command": "harmless"})])
    run(agent)
    assert ran == ["harmless"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_application_code_outside_a_run_keeps_working(rig, registry):
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    registry.register_callback("pre_tool_call", deny_marker)
    agent, ran = agent_with([])
    toolset = agent._function_toolset

    async def direct():
        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        tools = await toolset.get_tools(ctx)
        return await toolset.call_tool(TOOL, {"command": "direct"}, ctx, tools[TOOL])

    assert asyncio.run(direct()) == "ran"
    assert ran == ["direct"]
    assert ungoverned(rig) == []


def test_code_puppy_agent_run_is_a_run_entry(adapter):
    """code-puppy's own agent turn is a run entry point (the boundary knows it is inside a
    run from there on), as is the pydantic-ai run it goes through."""
    from code_puppy.agents.base_agent import BaseAgent
    from pydantic_ai.agent.abstract import AbstractAgent

    assert adapter.state == "patched"
    for owner, attr in ((BaseAgent, "run_with_mcp"), (AbstractAgent, "run")):
        assert type(vars(owner)[attr]).__name__ == "FunctionWrapper", (owner, attr)
