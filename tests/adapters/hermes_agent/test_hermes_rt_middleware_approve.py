"""Red-team (rthc): an ``approve`` gate and a ``tool_execution`` middleware rewrite.

A middleware rewrite (0.18.1+) is judged again by the ``pre_tool_call`` gates right before
the tool. When a gate answers ``approve`` there, the call must go to hermes' own approval
gate again (``tools.approval.request_tool_approval``, as ``resolve_pre_tool_block`` does:
a human, yolo, cron ``approve`` mode) rather than be refused outright: upstream runs the
rewritten call once approved, so a refusal is a false deny of every approve-gated tool
behind a middleware that stamps its arguments (a trace id). A refused approval, or a
block, still denies."""

from __future__ import annotations

import textwrap

import pytest

import failsecure_hermes_rig as H

APPROVE = "return {'action': 'approve', 'message': 'needs a nod', 'rule_key': 'probe'}"
BLOCK_FORBIDDEN = "return {'action': 'block', 'message': 'policy: forbidden'} if 'forbidden' in str(kw['args']) else None"


def middleware(rig, new_path: str) -> None:
    pytest.importorskip("hermes_cli.middleware")
    name = f"b_stamp_{next(H._serial)}"
    folder = rig.home / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(f"name: {name}\nversion: '1.0'\n")
    (folder / "__init__.py").write_text(textwrap.dedent(f"""
        def mw(next_call=None, args=None, **kw):
            return next_call(dict(args, path={new_path!r}))

        def register(ctx):
            ctx.register_middleware('tool_execution', mw)
    """))
    rig.enabled.append(name)


@pytest.fixture
def cron_approve(rig, monkeypatch):
    if not H.has_approve():
        pytest.skip("no approve directive before 0.18.1")
    monkeypatch.setenv("HERMES_CRON_SESSION", "1")
    rig.config = {"approvals": {"cron_mode": "approve"}}


def test_an_approved_call_a_middleware_rewrites_is_approved_again_and_runs(rig, cron_approve):
    rig.plugin("a_approver", APPROVE)
    middleware(rig, "/srv/stamped")
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert out["ran"] and rig.ran[-1] == {"path": "/srv/stamped"}
    assert not [e for e in rig.events() if e["outcome"] == "deny"]


def test_an_approved_call_a_middleware_rewrites_into_a_block_is_denied(rig, cron_approve):
    rig.plugin("a_approver", APPROVE)
    rig.plugin("a_policy", BLOCK_FORBIDDEN)
    middleware(rig, "/srv/forbidden")
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert not out["ran"] and out["result"] == {"error": "policy: forbidden"}


def test_a_rewritten_call_the_approval_gate_refuses_is_denied(rig, monkeypatch):
    """No yolo, no cron approve, no TTY: hermes' own approval gate refuses the approve."""
    if not H.has_approve():
        pytest.skip("no approve directive before 0.18.1")
    monkeypatch.setenv("HERMES_CRON_SESSION", "1")
    rig.config = {"approvals": {"cron_mode": "deny"}}
    rig.plugin("a_approver", APPROVE)
    middleware(rig, "/srv/stamped")
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert not out["ran"] and "error" in out["result"]


def test_in_an_agent_run_the_call_approved_again_runs_on_its_grant(rig, cron_approve):
    rig.plugin("a_approver", APPROVE)
    middleware(rig, "/srv/stamped")
    rig.load()
    told = H.agent_run(H.TOOL, {"path": "/srv/ok"})
    assert told == ['{"ok": true}'] and rig.ran[-1] == {"path": "/srv/stamped"}
    assert not [e for e in rig.events() if e["outcome"] == "deny" or e["failure"] == "ungoverned"]


def test_in_an_agent_run_a_rewrite_into_a_block_after_an_approve_never_runs(rig, cron_approve):
    rig.plugin("a_approver", APPROVE)
    rig.plugin("a_policy", BLOCK_FORBIDDEN)
    middleware(rig, "/srv/forbidden")
    rig.load()
    told = H.agent_run(H.TOOL, {"path": "/srv/ok"})
    assert not rig.ran and any("policy: forbidden" in (t or "") for t in told)
