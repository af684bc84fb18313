"""A function tool's callable ``is_enabled(ctx, agent)`` decides whether the tool is
offered, and so whether a model's call to it runs (a call to a tool that is not enabled
is the SDK's "tool not found"). Upstream takes ``bool(answer)`` (a truthy junk answer such
as ``"no"`` enables the tool) and waits for ever on a hang. failsecure does not gate it
yet: the junk rows are strict xfails naming the fix they need (an ``is_enabled`` guarded
as a gate: only ``True`` enables, a failure disables). Real ``Runner`` runs."""

from __future__ import annotations

import pytest


def _run(rig, rigmod, is_enabled):
    tool = rig.tool.build()
    tool.is_enabled = is_enabled
    agent = rigmod.agent_with(tool, rigmod.make_model({"command": "harmless"}))
    try:
        rigmod.run(agent, "sync")
    except Exception as exc:  # noqa: BLE001 - the SDK's "tool not found" for a disabled tool: what matters is whether it ran
        return exc
    return None


@pytest.mark.parametrize("answer", [True, False])
def test_is_enabled_bool_answers_are_honoured(rig, rigmod, answer):
    _run(rig, rigmod, lambda ctx, agent: answer)
    assert rig.tool.runs() == ([{"command": "harmless"}] if answer else [])


@pytest.mark.xfail(strict=True, reason="is_enabled is not a failsecure gate yet: the SDK takes bool('no') and enables the tool; needs is_enabled guarded (only True enables, junk/raise/timeout disable, audited)")
@pytest.mark.parametrize("answer", ["no", 1, {"enabled": False}], ids=["str", "int", "dict"])
def test_is_enabled_junk_answer_does_not_enable_the_tool(rig, rigmod, answer):
    _run(rig, rigmod, lambda ctx, agent: answer)
    assert rig.tool.runs() == []
    assert [e.get("failure") for e in rig.events()] == ["invalid"]
