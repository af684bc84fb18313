"""Red team (rv2) of false denies of normal HITL flows (holds): a call id the model reuses
in a later turn, reviewed and edited again (batched with and without ``when``, and
``per_call``), and one model message's calls answered approve / edit / reject. Upstream
runs the reviewer's calls; so must failsecure."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from failsecure_langchain_rig import TOOL, ScriptedChat

PER_CALL = "interrupt_mode" in inspect.signature(HumanInTheLoopMiddleware.__init__).parameters


def calls(*cmds, ids=None):
    return [{"name": TOOL, "args": {"command": c}, "id": (ids[i] if ids else f"c{i}"), "type": "tool_call"} for i, c in enumerate(cmds)]


def agent_of(rig, messages, hitl, before=(), after=(), mode="sync"):
    model = ScriptedChat(messages=iter(messages))
    return create_agent(model, tools=[rig.marker.tool(mode == "async")], middleware=[*before, hitl, *after],
                        checkpointer=InMemorySaver())


def go(agent, state, thread, mode):
    config = {"configurable": {"thread_id": thread}}
    if mode == "sync":
        return agent.invoke(state, config=config)
    return asyncio.run(agent.ainvoke(state, config=config))


@pytest.mark.parametrize("kind", ["always", "when"] + (["per_call"] if PER_CALL else []))
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_reused_call_id_reviewed_again_in_a_later_turn_runs_the_edit(rig, mode, kind):
    extra = {"interrupt_mode": "per_call"} if kind == "per_call" else {}
    cfg = True if kind == "always" else {"allowed_decisions": ["approve", "edit", "reject"], "when": lambda req: True}
    if kind == "always":
        cfg = {"allowed_decisions": ["approve", "edit", "reject"]}
    hitl = HumanInTheLoopMiddleware(interrupt_on={TOOL: cfg}, **extra)
    msgs = [AIMessage(content="", tool_calls=calls("one")), AIMessage(content="done"),
            AIMessage(content="", tool_calls=calls("two")), AIMessage(content="done")]
    a = agent_of(rig, msgs, hitl, mode=mode)
    t = f"ru-{mode}-{kind}"
    wrap = (lambda d: d) if kind == "per_call" else (lambda d: {"decisions": [d]})
    assert "__interrupt__" in go(a, {"messages": [{"role": "user", "content": "go"}]}, t, mode)
    go(a, Command(resume=wrap({"type": "edit", "edited_action": {"name": TOOL, "args": {"command": "one-edited"}}})), t, mode)
    assert "__interrupt__" in go(a, {"messages": [{"role": "user", "content": "again"}]}, t, mode)
    go(a, Command(resume=wrap({"type": "edit", "edited_action": {"name": TOOL, "args": {"command": "two-edited"}}})), t, mode)
    assert [c["command"] for c in rig.marker.calls] == ["one-edited", "two-edited"], rig.events()


@pytest.mark.parametrize("kind", ["always", "when"] + (["per_call"] if PER_CALL else []))
@pytest.mark.parametrize("mode", ["sync"])
def test_approve_edit_reject_of_one_message_run_the_reviewers_calls(rig, mode, kind):
    extra = {"interrupt_mode": "per_call"} if kind == "per_call" else {}
    cfg = {"allowed_decisions": ["approve", "edit", "reject"]}
    if kind == "when":
        cfg["when"] = lambda req: True
    hitl = HumanInTheLoopMiddleware(interrupt_on={TOOL: cfg}, **extra)
    a = agent_of(rig, [AIMessage(content="", tool_calls=calls("one", "two", "three")), AIMessage(content="done")], hitl, mode=mode)
    t = f"mx-{mode}-{kind}"
    r = go(a, {"messages": [{"role": "user", "content": "go"}]}, t, mode)
    ds = [{"type": "approve"}, {"type": "edit", "edited_action": {"name": TOOL, "args": {"command": "two-edited"}}}, {"type": "reject", "message": "no"}]
    if kind == "per_call":
        intr = r["__interrupt__"]
        byval = {}
        for i in intr:
            cmd = i.value["action_requests"][0]["args"]["command"] if isinstance(i.value, dict) and "action_requests" in i.value else str(i.value)
            byval[i.id] = cmd
        m = {"one": ds[0], "two": ds[1], "three": ds[2]}
        resume = {iid: next(v for k, v in m.items() if k in cmd) for iid, cmd in byval.items()}
    else:
        resume = {"decisions": ds}
    r = go(a, Command(resume=resume), t, mode)
    assert sorted(c["command"] for c in rig.marker.calls) == ["one", "two-edited"], rig.events()
