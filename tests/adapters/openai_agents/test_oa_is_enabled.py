"""A function tool's callable ``is_enabled(ctx, agent)`` decides whether the tool is
offered, and so whether a model's call to it runs (a call to a tool that is not enabled
is the SDK's "tool not found"). Upstream takes ``bool(answer)``: a truthy junk answer
such as ``"no"`` enables the tool, a hang waits for ever, a raise ends the run. Under
failsecure only ``True`` enables: junk, a raise or a hang past its deadline disables the
tool, audited as that hook's failure. Real ``Runner`` runs."""

from __future__ import annotations

import asyncio
import time

import pytest


def _run(rig, rigmod, is_enabled, mode="sync"):
    tool = rig.tool.build()
    tool.is_enabled = is_enabled
    agent = rigmod.agent_with(tool, rigmod.make_model({"command": "harmless"}))
    try:
        rigmod.run(agent, mode)
    except Exception as exc:  # noqa: BLE001 - the SDK's "tool not found" for a disabled tool: what matters is whether it ran
        return exc
    return None


def enabled_true(ctx, agent):
    return True


def enabled_false(ctx, agent):
    return False


async def enabled_async_true(ctx, agent):
    return True


def enabled_junk_str(ctx, agent):
    return "no"


def enabled_junk_int(ctx, agent):
    return 1


def enabled_junk_dict(ctx, agent):
    return {"enabled": False}


def enabled_raises(ctx, agent):
    raise RuntimeError("secret-payload")


def enabled_hangs(ctx, agent):
    time.sleep(3)
    return True


async def enabled_hangs_async(ctx, agent):
    await asyncio.sleep(3)
    return True


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("fn,runs", [(enabled_true, True), (enabled_async_true, True), (enabled_false, False)])
def test_is_enabled_bool_answers_are_honoured(rig, rigmod, fn, runs, mode):
    _run(rig, rigmod, fn, mode)
    assert rig.tool.runs() == ([{"command": "harmless"}] if runs else [])
    assert [e for e in rig.events() if e.get("failure")] == []


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("fn", [enabled_junk_str, enabled_junk_int, enabled_junk_dict])
def test_is_enabled_junk_answer_does_not_enable_the_tool(rig, rigmod, fn, mode):
    _run(rig, rigmod, fn, mode)
    assert rig.tool.runs() == []
    failures = [(e["hook"], e["failure"]) for e in rig.events() if e.get("failure")]
    assert failures and set(failures) == {(f"openai-agents:{fn.__module__}.{fn.__qualname__}", "invalid")}, [(e["hook"], e["outcome"], e.get("failure"), e.get("tool"), e.get("reason")) for e in rig.events()]


def test_is_enabled_raising_disables_the_tool_without_its_text(rig, rigmod):
    _run(rig, rigmod, enabled_raises)
    assert rig.tool.runs() == []
    events = rig.events()
    assert {e.get("failure") for e in events if e.get("failure")} == {"raised"}
    assert "secret-payload" not in repr(events)


@pytest.mark.parametrize("fn", [enabled_hangs, enabled_hangs_async])
def test_is_enabled_hanging_past_its_deadline_disables_the_tool(rig, rigmod, fn):
    _run(rig, rigmod, fn)
    assert rig.tool.runs() == []
    assert {e.get("failure") for e in rig.events() if e.get("failure")} == {"timeout"}


def test_is_enabled_junk_enables_the_tool_upstream(rig, rigmod, adapter):
    """What failsecure changes: upstream runs the tool its is_enabled said "no" about."""
    import failsecure

    failsecure.uninstall()
    try:
        _run(rig, rigmod, enabled_junk_str)
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    assert rig.tool.runs() == [{"command": "harmless"}]


def enabled_none(ctx, agent):
    return None  # upstream: bool(None), the tool is not offered


def enabled_raises_plain(ctx, agent):
    raise RuntimeError("backend down")  # upstream: the run ends, the tool never runs


@pytest.mark.parametrize("fn", [enabled_none, enabled_raises_plain])
def test_is_enabled_failure_under_on_error_allow_offers_no_tool_upstream_withholds(rig, rigmod, fn):
    """``on_error = "allow"`` lets a failing hook's call go on as upstream has it; it must
    not offer a tool upstream does not offer (a None answer disables it upstream, a raise
    ends the run): never more than upstream."""
    rig.config(tables=f'[hooks."openai-agents:{fn.__module__}.{fn.__qualname__}"]\non_error = "allow"\n')
    _run(rig, rigmod, fn)
    assert rig.tool.runs() == []  # red-team: holds (the tool is not offered)


def test_is_enabled_true_under_on_error_allow_offers_the_tool(rig, rigmod):
    """Twin: the same setting, a valid True: offered, the call runs."""
    rig.config(tables=f'[hooks."openai-agents:{enabled_true.__module__}.{enabled_true.__qualname__}"]\non_error = "allow"\n')
    _run(rig, rigmod, enabled_true)
    assert rig.tool.runs() == [{"command": "harmless"}]
