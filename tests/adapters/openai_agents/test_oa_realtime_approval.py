"""The realtime ``needs_approval`` (RealtimeSession): a human's
approval resumes the call (no false deny), a rejection does not run it, and two calls in
one session at once (one ``needs_approval`` hanging, one letting through) are each judged
by themselves. The real ``RealtimeSession``; the model is the stand-in transport."""

from __future__ import annotations

import asyncio
import json

import pytest
from failsecure_oa_rig import Transport, hook_of


def _session(rig, needs_approval):
    from agents import function_tool
    from agents.realtime import RealtimeAgent
    from agents.realtime.session import RealtimeSession

    @function_tool(needs_approval=needs_approval)
    def run_command(command: str) -> str:
        """Run a command."""
        with open(rig.tool.marker, "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return "ran"

    model = Transport()
    return RealtimeSession(model, RealtimeAgent(name="rt", tools=[run_command]), None), model


def _event(call_id, command):
    from agents.realtime.model_events import RealtimeModelToolCallEvent

    return RealtimeModelToolCallEvent(name="run_command", call_id=call_id, arguments=json.dumps({"command": command}))


def _outputs(model):
    return {e.tool_call.call_id: e.output for e in model.sent if type(e).__name__ == "RealtimeModelSendToolOutput"}


def approval_asks(ctx, params, call_id):
    return True


def test_a_human_approving_a_realtime_call_runs_it(rig):
    """The approval resumes the call (an enqueued task): it runs with the model's arguments."""
    model = _approve_flow(rig)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert _outputs(model) == {"call_a": "ran"}


def test_a_human_rejecting_a_realtime_call_does_not_run_it(rig):
    session, model = _session(rig, approval_asks)

    async def go():
        await session._handle_tool_call(_event("call_a", "harmless"))
        await session.reject_tool_call("call_a")
        for _ in range(50):
            await asyncio.sleep(0.01)

    asyncio.run(go())
    assert rig.tool.runs() == []


async def approval_by_command(ctx, params, call_id):
    if params.get("command") == "hang":
        await asyncio.sleep(30)
    return False


def test_two_realtime_calls_at_once_are_each_judged_by_themselves(rig):
    session, model = _session(rig, approval_by_command)

    async def go():
        await asyncio.gather(
            session._handle_tool_call(_event("call_hang", "hang")),
            session._handle_tool_call(_event("call_ok", "harmless")),
        )

    asyncio.run(go())
    assert rig.tool.runs() == [{"command": "harmless"}]
    told = _outputs(model)
    assert told["call_ok"] == "ran"
    assert hook_of(approval_by_command) in told["call_hang"] and "timeout" in told["call_hang"]
    failures = sorted((e["call_id"], e["failure"]) for e in rig.events() if e["outcome"] == "deny")
    assert failures == [("call_hang", "timeout")], rig.events()


def _approve_flow(rig):
    session, model = _session(rig, approval_asks)

    async def go():
        await session._handle_tool_call(_event("call_a", "harmless"))
        await session.approve_tool_call("call_a")
        for _ in range(50):  # an enqueued resume (async tool calls) gets its turn
            await asyncio.sleep(0.01)

    asyncio.run(go())
    return model


def test_a_human_approving_a_realtime_call_runs_it_upstream(rig, adapter):
    import failsecure

    failsecure.uninstall()
    try:
        model = _approve_flow(rig)
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    assert rig.tool.runs() == [{"command": "harmless"}], [type(e).__name__ for e in model.sent]


# ------------------------------------------------ a namespaced tool's approval (realtime)

def _namespaced_session(rig, guardrails):
    """A realtime tool in a ``tool_namespace``: the session files the human's approval under
    the tool's qualified name. ``guardrails=None`` is a function tool's default (no list):
    the guardrail path judges it with none."""
    from agents import function_tool, tool_namespace
    from agents.realtime import RealtimeAgent
    from agents.realtime.session import RealtimeSession

    @function_tool
    def run_command(command: str) -> str:
        """Run a command."""
        with open(rig.tool.marker, "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return "ran"

    run_command.tool_input_guardrails = guardrails
    (tool,) = tool_namespace(name="ops", description="operations", tools=[run_command])
    model = Transport()
    return RealtimeSession(model, RealtimeAgent(name="rt", tools=[tool]), None), model


def _answer_plugin_ask(rig, session, approve):
    async def go():
        await session._handle_tool_call(_event("call_a", "sensitive"))
        assert list(session._pending_tool_calls) == ["call_a"]  # the plugin's ask is the interruption
        if approve:
            await session.approve_tool_call("call_a")
        else:
            await session.reject_tool_call("call_a")
        for _ in range(50):
            await asyncio.sleep(0.01)

    asyncio.run(go())


@pytest.mark.parametrize("guardrails", [None, []], ids=["default-setting", "empty-list"])
@pytest.mark.parametrize("approve", [True, False], ids=["approved", "rejected"])
def test_a_human_answer_to_a_plugin_ask_about_a_namespaced_realtime_tool_is_found(rig, asking_plugin, guardrails, approve):
    """The guardrail path looks the approval up under every key the SDK files it by, also
    for a tool with no guardrail list (it was looked up by the bare name only: an approved
    call was rejected, ``asked for approval; this call was not approved``)."""
    session, model = _namespaced_session(rig, guardrails)
    _answer_plugin_ask(rig, session, approve)
    told = _outputs(model)
    if approve:
        assert rig.tool.runs() == [{"command": "sensitive"}], told
        assert told == {"call_a": "ran"}
    else:
        assert rig.tool.runs() == []
        assert told["call_a"] != "ran"
    assert [e["outcome"] for e in rig.events()][0] == "ask"


def test_a_namespaced_realtime_tool_no_plugin_ask_runs(rig, asking_plugin):
    """Twin: a call the plugin gate does not ask about runs, nobody asked."""
    session, model = _namespaced_session(rig, None)

    async def go():
        await session._handle_tool_call(_event("call_a", "plain"))

    asyncio.run(go())
    assert session._pending_tool_calls == {}
    assert rig.tool.runs() == [{"command": "plain"}] and _outputs(model) == {"call_a": "ran"}
