"""The realtime API (``agents.realtime``) runs a function tool's input guardrails with a
loop of its own (``RealtimeSession._run_tool_input_guardrails``), not the run loop's:
upstream it runs the tool on an unknown behavior, waits for a hung guardrail and ends the
tool call with a raising one's exception. Under failsecure they are the same gates as in a
``Runner`` run. The real ``RealtimeSession`` handles the model's tool call event; the
realtime model is a stand-in transport (it records what the session sends back: what
the model is told). Every deny asserts the audited failure and has an allow twin."""

from __future__ import annotations

import asyncio
import json

import pytest

import failsecure
from failsecure_oa_rig import Transport, hook_of

SECRET = "SECRET-realtime-4711"


def realtime_call(rig, *guardrails, command="harmless", needs_approval=False, run_config=None):
    """One tool call event through a real RealtimeSession; returns (what the model was
    told as the tool output, or None, and the exception the handler raised, or None)."""
    from agents import function_tool
    from agents.realtime import RealtimeAgent
    from agents.realtime.model_events import RealtimeModelToolCallEvent
    from agents.realtime.session import RealtimeSession
    from agents.tool_guardrails import tool_input_guardrail

    @function_tool(tool_input_guardrails=[tool_input_guardrail(g) for g in guardrails], needs_approval=needs_approval)
    def run_command(command: str) -> str:
        """Run a command."""
        with open(rig.tool.marker, "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return "ran"

    model = Transport()
    session = RealtimeSession(model, RealtimeAgent(name="rt", tools=[run_command]), None, run_config=run_config)
    event = RealtimeModelToolCallEvent(name="run_command", call_id="call_rt1", arguments=json.dumps({"command": command}))

    async def go():
        try:
            await session._handle_tool_call(event)
        except Exception as exc:
            return exc
        return None

    raised = asyncio.run(go())
    realtime_call.asked = list(session._pending_tool_calls)  # calls left to a human's approval
    outputs = [getattr(e, "output", None) for e in model.sent if type(e).__name__ == "RealtimeModelSendToolOutput"]
    return (outputs[-1] if outputs else None), raised


def allows(data):
    from agents import ToolGuardrailFunctionOutput

    return ToolGuardrailFunctionOutput.allow()


def unknown_behavior(data):
    from agents import ToolGuardrailFunctionOutput

    return ToolGuardrailFunctionOutput(output_info=None, behavior={"type": "maybe"})


def raises(data):
    raise KeyError(SECRET)


def denied(rig, told, raised, fn, failure):
    assert rig.tool.runs() == []
    assert raised is None and isinstance(told, str)
    assert hook_of(fn) in told and SECRET not in told
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] == failure and event["hook"] == hook_of(fn)
    assert SECRET not in json.dumps(rig.events())


def test_an_allowing_guardrail_runs_the_realtime_tool(rig):
    told, raised = realtime_call(rig, allows)
    assert raised is None and told == "ran"
    assert rig.tool.runs() == [{"command": "harmless"}]


def test_an_unknown_behavior_denies_the_realtime_tool(rig):
    told, raised = realtime_call(rig, unknown_behavior)
    denied(rig, told, raised, unknown_behavior, "invalid")


def test_a_raising_guardrail_denies_the_realtime_tool_without_its_text(rig):
    told, raised = realtime_call(rig, raises)
    denied(rig, told, raised, raises, "raised")


def test_a_hanging_guardrail_is_denied_at_the_deadline(rig):
    async def hangs(data):
        await asyncio.sleep(30)

    told, raised = realtime_call(rig, hangs)
    denied(rig, told, raised, hangs, "timeout")


def test_a_deny_outranks_a_later_allow_in_realtime(rig):
    from agents import ToolGuardrailFunctionOutput

    def rejects(data):
        return ToolGuardrailFunctionOutput.reject_content("no")

    told, raised = realtime_call(rig, rejects, allows)
    assert rig.tool.runs() == [] and raised is None and told is not None
    assert rig.last()["outcome"] == "deny"


def test_an_unknown_behavior_runs_the_realtime_tool_upstream(rig, adapter):
    failsecure.uninstall()
    try:
        told, raised = realtime_call(rig, unknown_behavior)
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    assert told == "ran" and rig.tool.runs() == [{"command": "harmless"}]


PRE = {"tool_execution": {"pre_approval_tool_input_guardrails": True}}


def test_a_raising_pre_approval_guardrail_denies_before_anyone_is_asked(rig):
    told, raised = realtime_call(rig, raises, needs_approval=True, run_config=PRE)
    denied(rig, told, raised, raises, "raised")


def test_an_allowing_pre_approval_guardrail_leaves_the_call_to_the_approval(rig):
    """Allow twin: the call waits for a human (no output, the tool has not run)."""
    told, raised = realtime_call(rig, allows, needs_approval=True, run_config=PRE)
    assert raised is None and told is None and rig.tool.runs() == []


# ---------------------------------------------------------------- a realtime needs_approval


def approval_raises(ctx, params, call_id):
    raise KeyError(SECRET)


async def approval_hangs(ctx, params, call_id):
    await asyncio.sleep(30)


def approval_junk(ctx, params, call_id):
    return "yes"


def approval_asks(ctx, params, call_id):
    return True


def approval_lets_through(ctx, params, call_id):
    return False


@pytest.mark.parametrize("fn, failure", [(approval_raises, "raised"), (approval_hangs, "timeout"), (approval_junk, "invalid")])
@pytest.mark.parametrize("guardrails", [(), (allows,)], ids=["no-guardrail", "guardrail"])
def test_a_failing_realtime_needs_approval_denies_without_asking(rig, fn, failure, guardrails):
    """Upstream a raising needs_approval ends the tool call; under failsecure it is the
    call's deny, audited as the failure, told to the model, and nobody is asked (the human
    would not be told the check failed)."""
    told, raised = realtime_call(rig, *guardrails, needs_approval=fn)
    assert realtime_call.asked == []
    denied(rig, told, raised, fn, failure)


def test_a_failing_realtime_needs_approval_denies_before_pre_approval_guardrails(rig):
    told, raised = realtime_call(rig, allows, needs_approval=approval_raises, run_config=PRE)
    assert realtime_call.asked == []
    denied(rig, told, raised, approval_raises, "raised")


def test_a_realtime_needs_approval_that_asks_leaves_the_call_to_a_human(rig):
    """Allow twin (the approval): the call waits for a human, the tool has not run."""
    told, raised = realtime_call(rig, needs_approval=approval_asks)
    assert raised is None and told is None and rig.tool.runs() == []
    assert realtime_call.asked == ["call_rt1"]


@pytest.mark.parametrize("guardrails", [(), (allows,)], ids=["no-guardrail", "guardrail"])
def test_a_realtime_needs_approval_that_lets_through_runs_the_tool(rig, guardrails):
    """Allow twin (no approval needed): the tool runs with the model's arguments."""
    told, raised = realtime_call(rig, *guardrails, needs_approval=approval_lets_through)
    assert raised is None and told == "ran" and realtime_call.asked == []
    assert rig.tool.runs() == [{"command": "harmless"}]


class _Forbids:
    @failsecure.hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        if "forbidden" in str((call.arguments or {}).get("command")):
            return Verdict(action=Action.DENY, reason="plugin: forbidden")
        return Verdict(action=Action.ALLOW)


@pytest.fixture
def forbids():
    from failsecure import plugins

    p = _Forbids()
    plugins.register(p, name="oa-test-realtime-policy")
    yield p
    plugins.unregister(p)


@pytest.mark.parametrize("command, asked", [("forbidden", []), ("harmless", ["call_rt1"])])
def test_a_plugin_gate_deny_of_a_realtime_approval_is_not_put_to_a_human(rig, forbids, command, asked):
    """A plugin gate that denies the call a realtime needs_approval would ask about: the
    call is rejected with the gate's reason, nobody is asked; its twin (the gate allows) is
    left to the approval."""
    told, raised = realtime_call(rig, command=command, needs_approval=approval_asks)
    assert raised is None and realtime_call.asked == asked and rig.tool.runs() == []
    assert told == ("plugin: forbidden" if command == "forbidden" else None)
