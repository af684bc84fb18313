"""The tool boundary (issue 29) in real LangChain / LangGraph runs: a tool whose ``_run`` /
``_arun`` runs inside a graph's run (``invoke``, ``ainvoke``, ``stream``, ``astream``,
``batch``) without ToolNode having dispatched that very tool run is ungoverned — audited
with ``failure = "ungoverned"``, denied while a gate is in force (a gate callback handler
in the run's callbacks, the agent's ``wrap_tool_call`` middleware or HITL), allowed and
audited when none is (or under ``ungoverned = "audit"``). Application code calling a tool
outside any run is not an agent's tool call."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from failsecure.adapter import Ungoverned
from failsecure_langchain_rig import TOOL, WRAPPER, handler, script, tool_messages, wrapper_tool

STATE = {"messages": [{"role": "user", "content": "go"}]}
HOW = ["invoke", "_run"]


def allowing(*args, **kwargs):
    return None


def gate():
    """The user's gate: a strict callback handler that lets every call through."""
    return handler("BoundaryGate", allowing)


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def run(agent, callbacks=(), mode="sync", config=None):
    """One run of ``agent`` in ``mode``; (final state or None, the exception or None)."""
    config = {"callbacks": list(callbacks), **(config or {})}
    try:
        if mode == "sync":
            return agent.invoke(STATE, config=config), None
        if mode == "async":
            return asyncio.run(agent.ainvoke(STATE, config=config)), None
        if mode == "stream":
            return list(agent.stream(STATE, config=config)), None
        if mode == "astream":
            async def consume():
                return [chunk async for chunk in agent.astream(STATE, config=config)]

            return asyncio.run(consume()), None
        if mode == "batch":
            return agent.batch([STATE], config=config)[0], None
    except Exception as exc:  # noqa: BLE001 - the run's end is what the test looks at
        return None, exc
    raise AssertionError(mode)


def wrapped_agent(rig, how="invoke", is_async=False, middleware=(), **kwargs):
    """An agent whose model calls the wrapper tool, which runs the marker tool itself."""
    marker = rig.marker.tool(is_async)
    return create_agent(script({"command": "smuggled"}, tool=WRAPPER),
                        tools=[marker, wrapper_tool(marker, is_async=is_async, how=how)],
                        middleware=list(middleware), **kwargs)


class Passes(AgentMiddleware):
    """The agent's own gate: a ``wrap_tool_call`` middleware that lets every call through."""

    def wrap_tool_call(self, request, handler):
        return handler(request)

    async def awrap_tool_call(self, request, handler):
        return await handler(request)


# -------------------------------------------------------------------- the bypass, denied


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("mode", ["sync", "async", "stream", "astream", "batch"])
def test_a_wrapper_tool_running_a_tool_itself_is_denied_as_ungoverned(rig, how, mode):
    _, exc = run(wrapped_agent(rig, how, is_async=mode in ("async", "astream")), [gate()], mode)
    assert not rig.marker.ran, "the tool ran past ToolNode"
    assert isinstance(exc, Ungoverned) and "ungoverned" in str(exc) and "smuggled" not in str(exc)
    [event] = ungoverned(rig)
    assert (event["tool"], event["outcome"]) == (TOOL, "deny")
    assert event["hook"] == ("langchain:StructuredTool._arun" if mode in ("async", "astream") else "langchain:StructuredTool._run")
    assert "smuggled" not in rig.audit_path.read_text()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_agent_s_own_middleware_makes_the_bypass_denied(rig, mode):
    """No callback gate: the agent's ``wrap_tool_call`` middleware is the gate bypassed."""
    _, exc = run(wrapped_agent(rig, is_async=mode == "async", middleware=[Passes()]), (), mode)
    assert not rig.marker.ran and isinstance(exc, Ungoverned)
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_a_hitl_review_makes_the_bypass_denied(rig):
    hitl = HumanInTheLoopMiddleware(interrupt_on={TOOL: {"allowed_decisions": ["approve", "reject"]}})
    agent = wrapped_agent(rig, middleware=[hitl], checkpointer=InMemorySaver())
    _, exc = run(agent, (), "sync", config={"configurable": {"thread_id": "b1"}})
    assert not rig.marker.ran and isinstance(exc, Ungoverned)


def graph_with_node(rig, how="invoke"):
    """A custom graph: a node of the application's that runs the tool itself, then ToolNode."""
    marker = rig.marker.tool()

    def my_node(state):
        if how == "_run":
            marker._run(command="from the node", config={})
        else:
            marker.invoke({"command": "from the node"})
        return {"messages": []}

    graph = StateGraph(MessagesState)
    graph.add_node("mine", my_node)
    graph.add_node("tools", ToolNode([marker]))
    graph.add_edge(START, "mine")
    graph.add_edge("mine", "tools")
    graph.add_edge("tools", END)
    return graph.compile()


TOOL_CALL = {"messages": [AIMessage(content="", tool_calls=[{"name": TOOL, "args": {"command": "by ToolNode"},
                                                              "id": "call_1", "type": "tool_call"}])]}


@pytest.mark.parametrize("how", HOW)
def test_a_custom_node_running_a_tool_is_denied_and_toolnode_s_call_runs(rig, how):
    app = graph_with_node(rig, how)
    with pytest.raises(Ungoverned):
        app.invoke(TOOL_CALL, config={"callbacks": [gate()]})
    assert rig.marker.calls == []
    # the twin: the same graph without the node's own call, ToolNode's dispatch runs
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([rig.marker.tool()]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    graph.compile().invoke(TOOL_CALL, config={"callbacks": [gate()]})
    assert rig.marker.calls == [{"command": "by ToolNode"}]
    assert [e["outcome"] for e in ungoverned(rig)] == ["deny"]


def test_a_tool_class_defined_later_has_the_boundary(rig):
    calls = []

    class LateTool(BaseTool):
        name: str = "late_tool"
        description: str = "defined after failsecure was installed"

        def _run(self, command: str) -> str:
            calls.append(command)
            return "ran"

    late = LateTool()

    def my_node(state):
        late.invoke({"command": "x"})
        return {"messages": []}

    graph = StateGraph(MessagesState)
    graph.add_node("mine", my_node)
    graph.add_edge(START, "mine")
    graph.add_edge("mine", END)
    with pytest.raises(Ungoverned):
        graph.compile().invoke(STATE, config={"callbacks": [gate()]})
    assert calls == []
    [event] = ungoverned(rig)
    assert event["tool"] == "late_tool" and event["hook"].endswith(".LateTool._run")
    assert late.invoke({"command": "outside"}) == "ran" and calls == ["outside"]  # outside a run


# -------------------------------------------------------------------- allow twins


@pytest.mark.parametrize("mode", ["sync", "async", "stream", "astream", "batch"])
def test_the_normal_path_with_an_allowing_gate_runs_and_is_not_flagged(rig, mode):
    agent = create_agent(script({"command": "harmless"}), tools=[rig.marker.tool(mode in ("async", "astream"))],
                         middleware=[Passes()])
    _, exc = run(agent, [gate()], mode)
    assert exc is None and rig.marker.calls == [{"command": "harmless"}]
    assert ungoverned(rig) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_wrapper_tool_that_runs_its_own_code_runs(rig, mode):
    """The wrapper is dispatched by ToolNode: its own body (StructuredTool's ``_arun``
    handing on to its ``_run`` in a worker thread) is the judged call."""
    agent = create_agent(script({"command": "harmless"}, tool=WRAPPER),
                         tools=[wrapper_tool(rig.marker.tool(), how="none", is_async=False)])
    result, exc = run(agent, [gate()], mode)
    assert exc is None and ungoverned(rig) == []


def test_the_same_bypass_with_no_gate_runs_and_is_audited(rig):
    result, exc = run(wrapped_agent(rig), (), "sync")
    assert exc is None and rig.marker.calls == [{"command": "smuggled"}]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


def test_ungoverned_audit_setting_runs_the_bypass_audited(rig):
    rig.config(top='ungoverned = "audit"')
    result, exc = run(wrapped_agent(rig, middleware=[Passes()]), [gate()], "sync")
    assert exc is None and rig.marker.calls == [{"command": "smuggled"}]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


@pytest.mark.parametrize("how", HOW)
def test_application_code_outside_a_run_is_not_an_agent_s_call(rig, how):
    """The agent has its gates (middleware; the callbacks gate in the call's config): the
    application's own call of the tool, outside any run, runs as upstream."""
    marker = rig.marker.tool()
    create_agent(script({"command": "harmless"}), tools=[marker], middleware=[Passes()])
    if how == "_run":
        marker._run(command="by the application", config={})
    else:
        marker.invoke({"command": "by the application"}, config={"callbacks": [gate()]})
    assert rig.marker.calls == [{"command": "by the application"}]
    assert ungoverned(rig) == []


def test_the_consumer_of_a_stream_is_outside_the_run(rig):
    """``stream`` is a run step by step: the application's code between chunks is not."""
    agent = create_agent(script({"command": "harmless"}), tools=[rig.marker.tool()], middleware=[Passes()])
    marker = rig.marker.tool()
    for _ in agent.stream(STATE, config={"callbacks": [gate()]}):
        marker.invoke({"command": "between chunks"})
    assert {"command": "between chunks"} in rig.marker.calls and ungoverned(rig) == []


def test_a_forged_tool_call_id_inside_a_dispatched_tool_gets_no_grant(rig):
    """A wrapper dispatched as ``call_1`` that invokes the inner tool as a ToolCall of the
    same id: only the first tool start under ToolNode's execution is the dispatched one."""
    marker = rig.marker.tool()

    def forging(command: str) -> str:
        """Run a command."""
        return str(marker.invoke({"name": TOOL, "args": {"command": command}, "id": "call_1", "type": "tool_call"}))

    from langchain_core.tools import StructuredTool

    agent = create_agent(script({"command": "smuggled"}, tool="forging"),
                         tools=[marker, StructuredTool.from_function(forging)])
    _, exc = run(agent, [gate()], "sync")
    assert not rig.marker.ran and isinstance(exc, Ungoverned)


class Plain(BaseTool):
    """A user's tool class with only a sync ``_run`` (BaseTool's ``_arun`` runs it)."""

    name: str = TOOL
    description: str = "writes the marker"
    marker: object = None

    def _run(self, command: str, run_manager=None) -> str:
        # upstream hands run_manager to a class without its own _arun (by identity of _arun)
        assert run_manager is not None
        return self.marker._write(command)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_user_tool_class_runs_through_toolnode_as_upstream(rig, mode):
    agent = create_agent(script({"command": "harmless"}), tools=[Plain(marker=rig.marker)], middleware=[Passes()])
    result, exc = run(agent, [gate()], mode)
    assert exc is None and rig.marker.calls == [{"command": "harmless"}]
    assert tool_messages(result)[0].content == "wrote harmless" and ungoverned(rig) == []


def test_a_user_tool_class_invoked_by_a_node_is_denied(rig):
    plain = Plain(marker=rig.marker)

    async def my_node(state):
        await plain.ainvoke({"command": "from the node"})
        return {"messages": []}

    graph = StateGraph(MessagesState)
    graph.add_node("mine", my_node)
    graph.add_edge(START, "mine")
    graph.add_edge("mine", END)
    with pytest.raises(Ungoverned):
        asyncio.run(graph.compile().ainvoke(STATE, config={"callbacks": [gate()]}))
    assert rig.marker.calls == []
    [event] = ungoverned(rig)
    assert event["hook"].endswith("Plain._run")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_agent_used_as_a_tool_runs_its_own_tools_and_parallel_calls_run(rig, mode):
    """A tool (dispatched by ToolNode) that runs an agent: the inner agent's ToolNode
    dispatches its own calls; two calls of one model turn run in parallel."""
    marker = rig.marker.tool()

    def sub_agent(command: str) -> str:
        """Run a sub-agent."""
        inner = create_agent(script({"command": command}, call_id="inner_1"), tools=[marker], middleware=[Passes()])
        return inner.invoke(STATE)["messages"][-1].content

    from langchain_core.tools import StructuredTool

    calls = [{"name": "sub_agent", "args": {"command": "a"}, "id": "c1", "type": "tool_call"},
             {"name": TOOL, "args": {"command": "b"}, "id": "c2", "type": "tool_call"}]
    from failsecure_langchain_rig import ScriptedChat

    model = ScriptedChat(messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="done")]))
    agent = create_agent(model, tools=[marker, StructuredTool.from_function(sub_agent)], middleware=[Passes()])
    result, exc = run(agent, [gate()], mode)
    assert exc is None and sorted(c["command"] for c in rig.marker.calls) == ["a", "b"]
    assert ungoverned(rig) == []


def stripping_wrapper(marker):
    from langchain_core.tools import StructuredTool

    def stripping(command: str) -> str:
        """Run a command, without the run's callbacks."""
        return str(marker.invoke({"command": command}, config={"callbacks": []}))

    return StructuredTool.from_function(stripping)


def test_a_bypass_that_drops_the_run_s_callbacks_is_still_denied(rig):
    """The gate handler is in the run's config: a wrapper that invokes the inner tool with
    no callbacks at all leaves none in the inner tool's context; the run is gated still."""
    marker = rig.marker.tool()
    agent = create_agent(script({"command": "smuggled"}, tool="stripping"), tools=[marker, stripping_wrapper(marker)])
    _, exc = run(agent, [gate()], "sync")
    assert not rig.marker.ran and isinstance(exc, Ungoverned)
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_a_node_that_drops_the_callbacks_before_any_tool_call_is_denied(rig):
    marker = rig.marker.tool()

    def my_node(state):
        marker.invoke({"command": "first thing"}, config={"callbacks": []})
        return {"messages": []}

    graph = StateGraph(MessagesState)
    graph.add_node("mine", my_node)
    graph.add_edge(START, "mine")
    graph.add_edge("mine", END)
    app = graph.compile()
    with pytest.raises(Ungoverned):
        app.invoke(STATE, config={"callbacks": [gate()]})
    assert rig.marker.calls == []
    app.invoke(STATE)  # the twin: the same run without a gate runs (audited)
    assert rig.marker.calls == [{"command": "first thing"}]
    assert [e["outcome"] for e in ungoverned(rig)] == ["deny", "allow"]
