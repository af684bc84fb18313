"""The tool boundary (issue 29) in real hermes-agent runs: a registered tool whose handler
runs through ``ToolRegistry.dispatch`` inside ``AIAgent.run_conversation`` without a
decision of the ``pre_tool_call`` gates for that call (hermes hands the registry no call
id: matched by tool and the judged arguments) is ungoverned — audited with ``failure =
"ungoverned"``, denied while a ``pre_tool_call`` hook (or a failsecure plugin gate) is
registered, allowed and audited when none is (or under ``ungoverned = "audit"``).
Application code calling the registry outside any run is not an agent's tool call."""

from __future__ import annotations

import json

import pytest

import failsecure_hermes_rig as H

HOOK = "hermes-agent:ToolRegistry.dispatch"
ARGS = {"path": "/tmp/smuggled"}


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def test_a_wrapper_tool_running_a_gated_tool_is_denied_as_ungoverned(rig):
    rig.plugin("guard", "return None")
    rig.load()
    told = H.agent_run(H.WRAPPER, ARGS)
    assert not rig.ran, "the gated tool ran through the wrapper"
    assert [(e["tool"], e["outcome"], e["hook"]) for e in ungoverned(rig)] == [(H.TOOL, "deny", HOOK)]
    assert len(told) == 1 and "ungoverned" in told[0] and "smuggled" not in told[0]


def test_a_shell_hook_is_a_gate_the_bypass_would_pass(rig):
    rig.shell_hook(rig.script("exit 0"))
    rig.load()
    H.agent_run(H.WRAPPER, ARGS)
    assert not rig.ran
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(H.TOOL, "deny")]


def test_the_same_bypass_with_no_gate_runs_and_is_audited(rig):
    rig.load()
    told = H.agent_run(H.WRAPPER, ARGS)
    assert rig.ran == [ARGS] and json.loads(told[0]) == {"ok": True}
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(H.TOOL, "allow")]


def test_ungoverned_audit_setting_runs_the_bypass_audited(rig):
    rig.failsecure('ungoverned = "audit"')
    rig.plugin("guard", "return None")
    rig.load()
    H.agent_run(H.WRAPPER, ARGS)
    assert rig.ran == [ARGS]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(H.TOOL, "allow")]


def test_the_normal_path_with_an_allowing_gate_runs_and_is_not_flagged(rig):
    rig.plugin("guard", "return None")
    rig.load()
    told = H.agent_run(H.TOOL, ARGS)
    assert rig.ran == [ARGS] and json.loads(told[0]) == {"ok": True}
    assert ungoverned(rig) == []


def test_a_rewriting_gate_grants_the_arguments_it_left(rig):
    """The grant is for the arguments as they are after every gate."""
    rig.plugin("normaliser", "kw['args']['path'] = '/tmp/normalised'\nreturn None")
    rig.load()
    H.agent_run(H.TOOL, ARGS)
    assert rig.ran == [{"path": "/tmp/normalised"}]
    assert ungoverned(rig) == []


def test_an_approved_ask_runs_in_a_run(rig, monkeypatch):
    """An approve directive that hermes' approval prompt answers yes: the call runs once
    (the human's yes grants it like an allow)."""
    if not H.has_approve():
        pytest.skip("no approve directive before 0.18.1")
    import tools.approval

    monkeypatch.setattr(tools.approval, "request_tool_approval", lambda *a, **k: {"approved": True, "message": None})
    rig.plugin("approver", "return {'action': 'approve', 'message': 'a human should look'}")
    rig.load()
    H.agent_run(H.TOOL, ARGS)
    assert rig.ran == [ARGS]
    assert ungoverned(rig) == []


def test_a_refused_ask_does_not_run_in_a_run(rig, monkeypatch):
    if not H.has_approve():
        pytest.skip("no approve directive before 0.18.1")
    import tools.approval

    monkeypatch.setattr(tools.approval, "request_tool_approval", lambda *a, **k: {"approved": False, "message": "no"})
    rig.plugin("approver", "return {'action': 'approve', 'message': 'a human should look'}")
    rig.load()
    H.agent_run(H.TOOL, ARGS)
    assert not rig.ran


def test_application_code_outside_a_run_calls_the_registry_directly(rig):
    from tools.registry import registry

    rig.plugin("guard", "return {'action': 'block', 'message': 'never'}")
    rig.load()
    assert json.loads(registry.dispatch(H.TOOL, dict(ARGS))) == {"ok": True}
    assert rig.ran == [ARGS] and ungoverned(rig) == []


def test_arguments_hermes_coerces_by_the_schema_are_the_judged_call(rig):
    """The agent loop judges the model's arguments, ``handle_function_call`` then coerces
    them by the tool's schema ("42" -> 42): that is the judged call still."""
    from tools.registry import registry

    ran = []

    def handler(args, **kwargs):
        ran.append(dict(args))
        return json.dumps({"ok": True})

    schema = {"name": "fs_count", "description": "counts", "parameters": {"type": "object", "properties": {"count": {"type": "integer"}}}}
    registry.register(name="fs_count", toolset=H.TOOLSET, schema=schema, handler=handler)
    rig.plugin("guard", "return None")
    rig.load()
    H.agent_run("fs_count", {"count": "42"})
    assert len(ran) == 1 and ungoverned(rig) == []
