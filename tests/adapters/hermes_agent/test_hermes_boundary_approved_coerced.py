"""Red-team (rt40): an ``approve`` directive that hermes' approval prompt answers yes
grants the call like an allow; the grant must accept the arguments as
``handle_function_call`` then coerces them by the tool's schema ("42" -> 42), as an
allow's grant does (upstream runs the approved call)."""

from __future__ import annotations

import json

import pytest

import failsecure_hermes_rig as H

TOOL = "fs_count_approved"


@pytest.fixture
def counting(rig):
    from tools.registry import registry

    ran: list = []

    def handler(args, **kwargs):
        ran.append(dict(args))
        return json.dumps({"ok": True})

    schema = {"name": TOOL, "description": "counts", "parameters": {"type": "object", "properties": {"count": {"type": "integer"}}}}
    registry.register(name=TOOL, toolset=H.TOOLSET, schema=schema, handler=handler)
    return ran


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def test_an_approved_call_hermes_coerces_runs(rig, counting, monkeypatch):
    if not H.has_approve():
        pytest.skip("no approve directive before 0.18.1")
    import tools.approval

    monkeypatch.setattr(tools.approval, "request_tool_approval", lambda *a, **k: {"approved": True, "message": None})
    rig.plugin("approver", "return {'action': 'approve', 'message': 'a human should look'}")
    rig.load()
    H.agent_run(TOOL, {"count": "42"})
    assert counting == [{"count": 42}]
    assert ungoverned(rig) == []


def test_a_refused_call_hermes_would_coerce_does_not_run(rig, counting, monkeypatch):
    if not H.has_approve():
        pytest.skip("no approve directive before 0.18.1")
    import tools.approval

    monkeypatch.setattr(tools.approval, "request_tool_approval", lambda *a, **k: {"approved": False, "message": "no"})
    rig.plugin("approver", "return {'action': 'approve', 'message': 'a human should look'}")
    rig.load()
    H.agent_run(TOOL, {"count": "42"})
    assert counting == []
