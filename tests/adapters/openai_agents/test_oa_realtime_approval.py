"""The realtime ``needs_approval`` (RealtimeSession): a human's
approval resumes the call (no false deny), a rejection does not run it, and two calls in
one session at once (one ``needs_approval`` hanging, one letting through) are each judged
by themselves. The real ``RealtimeSession``; the model is the stand-in transport."""

from __future__ import annotations

import asyncio
import json

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
