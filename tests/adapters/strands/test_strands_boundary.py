"""The tool boundary (issue 29) in real Strands agent runs: a tool that runs inside an
agent's run without a decision of the BeforeToolCallEvent dispatcher for that call (a
wrapper tool calling another tool as a function or through its ``stream``, a replay of a
call id that already ran) is ungoverned — audited with ``failure = "ungoverned"``,
denied while a gate is registered, allowed and audited when none is (or under
``ungoverned = "audit"``). Application code calling a tool outside any run keeps working."""

import asyncio

import pytest

MODES = ("sync", "async")
EXECUTORS = ("concurrent", "sequential")


def provider(*callbacks):
    from strands.hooks import BeforeToolCallEvent, HookProvider

    class Gates(HookProvider):
        def register_hooks(self, registry, **kwargs):
            for cb in callbacks:
                registry.add_callback(BeforeToolCallEvent, cb)

    return Gates()


def deny_marker(event):
    """The user's gate: ``run_command`` is never to run; every other tool may."""
    if event.tool_use["name"] == "run_command":
        event.cancel_tool = "run_command is not allowed"


def allow_all(event):
    event.cancel_tool = False


def run(agent, mode):
    if mode == "sync":
        return agent("go")
    return asyncio.run(agent.invoke_async("go"))


def wrappers(marker_tool):
    from strands import tool

    @tool
    def call_wrapper(command: str) -> str:
        """Runs a command through the marker tool, called as a function.

        Args:
            command: the command line
        """
        return marker_tool(command=command)

    @tool
    async def stream_wrapper(command: str) -> str:
        """Runs a command through the marker tool's own stream.

        Args:
            command: the command line
        """
        last = None
        async for last in marker_tool.stream({"toolUseId": "inner", "name": "run_command", "input": {"command": command}}, {}):
            pass
        return str(last)

    @tool
    async def replay(command: str) -> str:
        """Runs the model's first tool call again (its call id already ran).

        Args:
            command: the command line
        """
        last = None
        async for last in marker_tool.stream({"toolUseId": "call-0", "name": "run_command", "input": {"command": command}}, {}):
            pass
        return str(last)

    return {"call_wrapper": call_wrapper, "stream_wrapper": stream_wrapper, "replay": replay}


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def agent_with(rig, calls, hooks=(), executor="concurrent"):
    marker_tool = rig.marker.tool()
    tools = [marker_tool, *wrappers(marker_tool).values()]
    return rig.agent(calls=calls, hooks=hooks, tools=tools, executor=executor)


@pytest.mark.parametrize("wrapper", ["call_wrapper", "stream_wrapper"])
@pytest.mark.parametrize("mode", MODES)
def test_a_wrapper_tool_running_a_gated_tool_is_denied_as_ungoverned(rig, wrapper, mode):
    agent = agent_with(rig, [(wrapper, {"command": "smuggled"})], hooks=[provider(deny_marker)])
    run(agent, mode)
    assert not rig.marker.ran, "the gated tool ran through the wrapper"
    found = ungoverned(rig)
    assert [(e["tool"], e["outcome"]) for e in found] == [("run_command", "deny")]
    where = "DecoratedFunctionTool.__call__" if wrapper == "call_wrapper" else "DecoratedFunctionTool.stream"
    assert found[0]["hook"] == f"strands:{where}"


@pytest.mark.parametrize("wrapper", ["call_wrapper", "stream_wrapper"])
def test_the_same_bypass_with_no_gate_runs_and_is_audited(rig, wrapper):
    run(agent_with(rig, [(wrapper, {"command": "smuggled"})]), "sync")
    assert rig.marker.runs() == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [("run_command", "allow")]


def test_ungoverned_audit_setting_runs_the_bypass_audited(rig):
    rig.config(top='ungoverned = "audit"')
    run(agent_with(rig, [("call_wrapper", {"command": "smuggled"})], hooks=[provider(deny_marker)]), "sync")
    assert rig.marker.runs() == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [("run_command", "allow")]


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("mode", MODES)
def test_the_normal_path_with_an_allowing_gate_runs_and_is_not_flagged(rig, mode, executor):
    agent = agent_with(rig, [("run_command", {"command": "one"}), ("run_command", {"command": "two"})],
                       hooks=[provider(allow_all)], executor=executor)
    run(agent, mode)
    assert rig.marker.runs() == ["one", "two"]
    assert ungoverned(rig) == []


def test_a_replayed_call_id_is_ungoverned(rig):
    """The model's call ``call-0`` was allowed and ran; a tool running it again under the
    same call id and arguments has no decision of its own."""
    agent = agent_with(rig, [("run_command", {"command": "once"}), ("replay", {"command": "once"})],
                       hooks=[provider(lambda event: None)], executor="sequential")
    run(agent, "sync")
    assert rig.marker.runs() == ["once"]
    assert [(e["tool"], e["outcome"], e["call_id"]) for e in ungoverned(rig)] == [("run_command", "deny", "call-0")]


def test_a_direct_tool_call_inside_a_run_is_judged_by_the_gates(rig):
    """Strands' own direct call (``agent.tool.<name>``) goes through the gates: not ungoverned."""
    from strands import tool

    box = {}

    @tool
    def direct(command: str) -> str:
        """Calls the marker tool the Strands way.

        Args:
            command: the command line
        """
        return str(box["agent"].tool.run_command(command=command, record_direct_tool_call=False))

    marker_tool = rig.marker.tool()
    agent = rig.agent(calls=[("direct", {"command": "via agent.tool"})], hooks=[provider(allow_all)],
                      tools=[marker_tool, direct])
    box["agent"] = agent
    run(agent, "sync")
    assert rig.marker.runs() == ["via agent.tool"]
    assert ungoverned(rig) == []


def test_application_code_outside_a_run_keeps_working(rig):
    marker_tool = rig.marker.tool()
    rig.agent(hooks=[provider(deny_marker)], tools=[marker_tool])  # a gate is registered
    assert marker_tool(command="direct") == "ran direct"
    wrapper = wrappers(marker_tool)["call_wrapper"]
    assert wrapper(command="wrapped") == "ran wrapped"
    assert rig.marker.runs() == ["direct", "wrapped"]
    assert ungoverned(rig) == []
