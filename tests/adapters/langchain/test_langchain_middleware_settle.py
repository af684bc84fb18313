"""Every ``wrap_tool_call`` / ``awrap_tool_call`` middleware judges the call that really
runs (docs/integrity.md): a policy middleware that handed the call on judges it again
when a middleware inside it rewrote it (``request.override``) or changed it in place.
Its second look runs with a handler that does not run the tool: handing the call on as
it is allows, answering itself denies (its answer is what the model is told), handing
on yet another call never settles (denied, ``invalid``). A middleware that made the
change, or that judged the final call, is not asked again.

Real ``create_agent`` runs (sync ``invoke`` with ``wrap_tool_call``, ``ainvoke`` with
``awrap_tool_call``) and a custom graph's ``ToolNode``; each deny has an allow twin."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt import ToolNode

from failsecure_langchain_rig import TOOL, tool_messages

MODES = ("sync", "async")
MODULE = "failsecure_langchain_rig_settle"


def middleware(name: str, judge, mode: str) -> AgentMiddleware:
    """A middleware class named ``name``: ``judge(request)`` answers None (hand the call
    on), a dict of arguments (hand on ``request.override`` with them), a callable (run it
    on the request, then hand the same request on) or an answer of its own."""

    def hand_on(request, answer):
        if answer is None:
            return request, None
        if isinstance(answer, dict):
            return request.override(tool_call={**request.tool_call, "args": dict(answer)}), None
        if callable(answer):
            answer(request)
            return request, None
        return None, answer

    def wrap_tool_call(self, request, handler):
        req, own = hand_on(request, judge(request))
        return own if req is None else handler(req)

    async def awrap_tool_call(self, request, handler):
        await asyncio.sleep(0)
        req, own = hand_on(request, judge(request))
        return own if req is None else await handler(req)

    attr = "wrap_tool_call" if mode == "sync" else "awrap_tool_call"
    method = wrap_tool_call if mode == "sync" else awrap_tool_call
    method.__name__, method.__qualname__, method.__module__ = attr, f"{name}.{attr}", MODULE
    cls = type(name, (AgentMiddleware,), {"__module__": MODULE, attr: method})
    cls.__qualname__ = name
    return cls()


def hook(name: str, mode: str) -> str:
    return f"langchain:{MODULE}.{name}.{'wrap_tool_call' if mode == 'sync' else 'awrap_tool_call'}"


def command(request) -> str:
    return request.tool_call["args"]["command"]


def denial(request) -> ToolMessage:
    return ToolMessage(content="policy: forbidden", name=request.tool_call["name"],
                       tool_call_id=request.tool_call["id"], status="error")


class Policy:
    """Denies a forbidden command with its own ToolMessage; records what it judged."""

    def __init__(self):
        self.looks: list = []

    def __call__(self, request):
        self.looks.append(command(request))
        return denial(request) if "forbidden" in command(request) else None


def run(rig, layers, mode):
    rig.marker.reset()
    agent = rig.agent({"command": "harmless"}, [middleware(n, j, mode) for n, j in layers], is_async_tool=mode == "async")
    state = {"messages": [{"role": "user", "content": "go"}]}
    result = agent.invoke(state) if mode == "sync" else asyncio.run(agent.ainvoke(state))
    [message] = tool_messages(result)
    return message


@pytest.mark.parametrize("mode", MODES)
def test_a_rewrite_inside_the_policy_is_judged_by_the_policy(rig, mode):
    policy = Policy()
    message = run(rig, [("Policy", policy), ("Smuggler", lambda r: {"command": "forbidden rm"})], mode)
    assert not rig.marker.ran
    assert message.status == "error" and message.content == "policy: forbidden"  # the policy's own answer
    assert policy.looks == ["harmless", "forbidden rm"]
    event = rig.last()
    assert (event["outcome"], event["hook"], event["failure"]) == ("deny", hook("Policy", mode), None)


@pytest.mark.parametrize("mode", MODES)
def test_a_harmless_rewrite_inside_the_policy_runs_rewritten(rig, mode):
    policy, rewrites = Policy(), []

    def rewriter(request):
        rewrites.append(command(request))
        return {"command": "harmless rewritten"}

    message = run(rig, [("Policy", policy), ("Rewriter", rewriter)], mode)
    assert rig.marker.calls == [{"command": "harmless rewritten"}] and message.status != "error"
    assert policy.looks == ["harmless", "harmless rewritten"]
    assert rewrites == ["harmless"]  # it made the change: judged its own output, asked once


@pytest.mark.parametrize("mode", MODES)
def test_an_in_place_change_inside_the_policy_is_judged(rig, mode):
    policy = Policy()

    def mutate(request):
        request.tool_call["args"]["command"] = "forbidden rm"

    message = run(rig, [("Policy", policy), ("Mutator", lambda r: mutate)], mode)
    assert not rig.marker.ran and message.content == "policy: forbidden"
    assert policy.looks == ["harmless", "forbidden rm"]


@pytest.mark.parametrize("mode", MODES)
def test_a_policy_after_the_rewrite_is_asked_once(rig, mode):
    policy = Policy()
    message = run(rig, [("Rewriter", lambda r: {"command": "forbidden rm"}), ("Policy", policy)], mode)
    assert not rig.marker.ran and message.content == "policy: forbidden"
    assert policy.looks == ["forbidden rm"]
    # twin: a harmless rewrite before the policy runs, the policy asked once
    policy = Policy()
    run(rig, [("Rewriter", lambda r: {"command": "harmless rewritten"}), ("Policy", policy)], mode)
    assert rig.marker.calls == [{"command": "harmless rewritten"}] and policy.looks == ["harmless rewritten"]


@pytest.mark.parametrize("mode", MODES)
def test_a_middleware_that_rewrites_again_on_its_second_look_never_settles(rig, mode):
    looks: list = []

    def restless(request):  # hands on a different call on every look
        looks.append(command(request))
        return {"command": f"harmless {len(looks)}"} if len(looks) > 1 else None

    message = run(rig, [("Restless", restless), ("Rewriter", lambda r: {"command": "harmless rewritten"})], mode)
    assert not rig.marker.ran and message.status == "error"
    assert "(invalid)" in message.content
    event = rig.last()
    assert (event["outcome"], event["hook"], event["failure"]) == ("deny", "langchain:wrap_tool_call", "invalid")
    assert looks == ["harmless", "harmless rewritten"]


@pytest.mark.parametrize("mode", MODES)
def test_a_policy_that_raises_on_its_second_look_fails_closed(rig, mode):
    looks: list = []

    def fragile(request):
        looks.append(command(request))
        if len(looks) > 1:
            raise RuntimeError("policy crashed SECRET-4712")
        return None

    message = run(rig, [("Fragile", fragile), ("Rewriter", lambda r: {"command": "harmless rewritten"})], mode)
    assert not rig.marker.ran and "(raised)" in message.content and "SECRET" not in message.content
    event = rig.last()
    assert (event["hook"], event["failure"], event["exception_type"]) == (hook("Fragile", mode), "raised", "RuntimeError")
    assert "SECRET" not in rig.audit_path.read_text()


# -------------------------------------------------------------------- ToolNode(wrap_tool_call=...)


def run_node(node: ToolNode, mode: str):
    """A custom graph: START -> the ToolNode -> END, fed one model message with one call."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile()
    call = {"name": TOOL, "args": {"command": "harmless"}, "id": "call_1", "type": "tool_call"}
    state = {"messages": [AIMessage(content="", tool_calls=[call])]}
    return app.invoke(state) if mode == "sync" else asyncio.run(app.ainvoke(state))


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_node_wrapper_that_rewrites_judged_its_own_output(rig, mode):
    """One wrapper handed to ``ToolNode``: the call it hands on is its own output, so it is
    not asked again (its side effects run once), and the tool runs with its rewrite, as
    upstream."""
    looks: list = []

    def rewrite(request):
        looks.append(command(request))
        return request.override(tool_call={**request.tool_call, "args": {"command": f"harmless {len(looks)}"}})

    def wrapper(request, handler):
        return handler(rewrite(request))

    async def awrapper(request, handler):
        return await handler(rewrite(request))

    kwargs = {"wrap_tool_call": wrapper} if mode == "sync" else {"awrap_tool_call": awrapper}
    result = run_node(ToolNode([rig.marker.tool(mode == "async")], **kwargs), mode)
    assert rig.marker.calls == [{"command": "harmless 1"}] and looks == ["harmless"]
    assert tool_messages(result)[0].status != "error"


@pytest.mark.parametrize("mode", MODES)
def test_a_rewrite_inside_the_policy_is_judged_in_a_tool_node_of_create_agent(rig, mode):
    """The same settling where ``create_agent``'s chain reaches the tool through
    ``ToolNode._execute_tool_sync`` / ``_execute_tool_async``, the policy outermost of
    three, the tool an async one in async runs: judged at the tool."""
    policy, audits = Policy(), []
    layers = [("Auditor", lambda r: audits.append(command(r))), ("Policy", policy), ("Smuggler", lambda r: {"command": "forbidden rm"})]
    message = run(rig, layers, mode)
    assert not rig.marker.ran and message.content == "policy: forbidden"
    assert policy.looks == ["harmless", "forbidden rm"]
    assert audits == ["harmless", "forbidden rm"]  # it judged the stale call too: asked again, in order


# -------------------------------------------------------------------- SystemExit in a traced async middleware


def test_an_async_middleware_raising_system_exit_is_denied_without_its_text(rig):
    """``create_agent`` traces each ``awrap_tool_call`` with langsmith's ``traceable``,
    which runs it in a task of its own: asyncio re-raises a SystemExit escaping a task
    out of the event loop. It is a raise like any other: denied, audited, no text."""

    def exiting(request):
        raise SystemExit("SECRET-4713")

    message = run(rig, [("Exiting", exiting)], "async")
    assert not rig.marker.ran and "(raised)" in message.content and "SECRET" not in message.content
    event = rig.last()
    assert (event["hook"], event["failure"], event["exception_type"]) == (hook("Exiting", "async"), "raised", "SystemExit")
    assert "SECRET" not in rig.audit_path.read_text()
    # twin: the same middleware handing the call on runs the tool
    run(rig, [("Exiting", lambda r: None)], "async")
    assert rig.marker.calls == [{"command": "harmless"}]
