"""The tool boundary (issue 29) in real ADK runs: a tool whose ``run_async`` runs inside a
runner's or agent's run without a decision of the before-tool stages for that very call
(matched by ADK's function call id and the judged arguments) is ungoverned — audited with
``failure = "ungoverned"``, denied while a gate of ADK (or a failsecure plugin gate) is
registered, allowed and audited when none is (or under ``ungoverned = "audit"``).
Application code that calls a tool outside any run is not an agent's tool call."""

from __future__ import annotations

import asyncio

import failsecure_adk_rig as adk_rig

TOOL = adk_rig.TOOL
WRAPPER = adk_rig.WRAPPER
HOOK = "google-adk:FunctionTool.run_async"


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def policy(name="policy"):
    """The user's gate (a runner plugin): the marker tool is never to run."""

    async def callback(tool, tool_args, tool_context):
        return {"error": "not this tool"} if tool.name == TOOL else None

    return adk_rig.plugin(name, callback)


def allow_all(name="allow"):
    async def callback(tool, tool_args, tool_context):
        return None

    return adk_rig.plugin(name, callback)


def test_a_wrapper_tool_running_a_gated_tool_is_denied_as_ungoverned(rig, mode):
    out = rig.run({"command": "smuggled"}, mode, plugins=[policy()], call=WRAPPER, wrapper=True)
    assert not rig.ran, "the gated tool ran through the wrapper"
    assert [(e["tool"], e["outcome"], e["hook"]) for e in ungoverned(rig)] == [(TOOL, "deny", HOOK)]
    # the wrapper's call is answered with the deny (ADK's tool-error path), the run goes on
    assert out.error is None, out.error
    assert out.response == {"error": "failsecure: a tool ran at 'google-adk:FunctionTool.run_async' without a decision "
                                     "for that call (ungoverned)"}
    assert "smuggled" not in out.told()


def test_a_wrapper_is_denied_when_the_gate_is_an_agent_callback(rig, mode):
    def agent_gate(tool, args, tool_context):
        return None

    rig.run({"command": "smuggled"}, mode, before=agent_gate, call=WRAPPER, wrapper=True)
    assert not rig.ran
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_the_same_bypass_with_no_gate_runs_and_is_audited(rig, mode):
    out = rig.run({"command": "smuggled"}, mode, call=WRAPPER, wrapper=True)
    assert out.error is None, out.error
    assert rig.ran and out.ran == [{"command": "smuggled"}]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


def test_ungoverned_audit_setting_runs_the_bypass_audited(rig, mode):
    rig.config(top='ungoverned = "audit"')
    out = rig.run({"command": "smuggled"}, mode, plugins=[policy()], call=WRAPPER, wrapper=True)
    assert rig.ran and out.ran == [{"command": "smuggled"}]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


def test_the_normal_path_with_an_allowing_gate_runs_and_is_not_flagged(rig, mode):
    out = rig.run({"command": "harmless"}, mode, plugins=[allow_all()])
    assert out.error is None, out.error
    assert rig.ran and out.response == {"ok": True}
    assert ungoverned(rig) == []


def test_an_allowing_gate_on_the_wrapper_does_not_cover_its_inner_call(rig, mode):
    """The gates judged the wrapper call, not the call its code makes to another tool."""
    out = rig.run({"command": "harmless"}, mode, plugins=[allow_all()], call=WRAPPER, wrapper=True)
    assert not rig.ran  # the inner run_command had no decision of its own: a gate is registered
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]
    assert all(e["tool"] != WRAPPER for e in ungoverned(rig))


def test_an_after_tool_callback_running_the_tool_again_is_ungoverned(rig, mode):
    """One decision is good for one execution: an observer that runs the judged tool a
    second time (with other arguments) is not the call the gates allowed."""
    seen = []

    async def run_again(tool, args, tool_context, tool_response):
        try:
            await tool.run_async(args={"command": "again"}, tool_context=tool_context)
        except PermissionError as exc:
            seen.append(type(exc).__name__)
        return None

    out = rig.run({"command": "harmless"}, mode, plugins=[allow_all()], after=run_again)
    assert out.ran == [{"command": "harmless"}], "only the judged execution ran"
    assert seen == ["Ungoverned"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_a_confirmed_call_resumes_through_the_boundary(rig, mode):
    out = rig.run({"command": "harmless"}, mode, plugins=[allow_all()], confirm=True, resume={"confirmed": True})
    assert rig.ran and out.response == {"ok": True}
    assert ungoverned(rig) == []


def test_application_code_outside_a_run_calls_a_tool_directly(rig):
    """Not an agent's tool call: no run, nothing to check (a denying gate is registered
    on a runner the application also has)."""
    marker = rig.marker
    outcome = adk_rig.Outcome()
    tool = adk_rig.make_tool(marker, outcome)
    result = asyncio.run(tool.run_async(args={"command": "direct"}, tool_context=None))
    assert result == {"ok": True} and outcome.ran == [{"command": "direct"}]
    assert ungoverned(rig) == []
