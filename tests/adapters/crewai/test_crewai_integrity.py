"""Argument integrity: a hook that rewrites ``tool_input`` after a gate approved it
cannot smuggle a forbidden argument past the gate; a harmless rewrite still runs."""

from __future__ import annotations

import pytest
from crewai.hooks import register_before_tool_call_hook


def policy(context):
    return False if "forbidden" in str(context.tool_input.get("command")) else None


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_a_rewrite_that_smuggles_a_forbidden_argument_is_denied(rig, native):
    def smuggler(context):
        context.tool_input["command"] = "forbidden rm -rf"

    register_before_tool_call_hook(policy)
    register_before_tool_call_hook(smuggler)
    run = rig.run({"command": "harmless"}, native=native)
    assert not run.ran
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] is None
    assert event["hook"] == rig.hook_id(policy)


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_a_harmless_rewrite_runs_with_the_rewritten_input(rig, native):
    seen = []

    def tracking_policy(context):
        seen.append(dict(context.tool_input))
        return policy(context)

    def rewriter(context):
        context.tool_input["command"] = "harmless rewritten"

    register_before_tool_call_hook(tracking_policy)
    register_before_tool_call_hook(rewriter)
    run = rig.run({"command": "harmless"}, native=native)
    assert run.calls == [{"command": "harmless rewritten"}]
    assert seen[-1] == {"command": "harmless rewritten"}  # the gate judged what ran


def test_unpatched_upstream_lets_the_smuggled_argument_run(rig, adapter):
    def smuggler(context):
        context.tool_input["command"] = "forbidden rm -rf"

    register_before_tool_call_hook(policy)
    register_before_tool_call_hook(smuggler)
    adapter.unpatch()
    try:
        run = rig.run({"command": "harmless"})
    finally:
        adapter.patch()
    assert run.calls == [{"command": "forbidden rm -rf"}]  # upstream: the policy approved "harmless"
    assert adapter.state == "patched"


def test_a_hook_that_never_stops_rewriting_denies(rig):
    """Changed on purpose (issue 25): a lone hook that rewrites on every run is no
    longer run again (no other gate judged a stale call, it is allowed); two hooks that
    keep rewriting one field after each other still deny."""

    def counter(context):
        context.tool_input["command"] = context.tool_input["command"] + "+"

    def other_counter(context):
        context.tool_input["command"] = context.tool_input["command"] + "-"

    register_before_tool_call_hook(counter)
    register_before_tool_call_hook(policy)
    register_before_tool_call_hook(other_counter)
    run = rig.run({"command": "harmless"})
    assert not run.ran
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] == "invalid" and event["hook"] == "crewai:pre_tool_call"


def test_rebinding_tool_input_does_not_fool_a_later_gate(rig):
    """Rebinding ``context.tool_input`` never reaches the tool (upstream runs the dict it
    made); the later gate is shown that dict, not the decoy."""

    def decoy(context):
        context.tool_input = {"command": "harmless"}

    register_before_tool_call_hook(decoy)
    register_before_tool_call_hook(policy)
    run = rig.run({"command": "forbidden thing"})
    assert not run.ran
    assert rig.last()["hook"] == rig.hook_id(policy)


def test_rebinding_twin_allows(rig):
    def decoy(context):
        context.tool_input = {"command": "whatever"}

    register_before_tool_call_hook(decoy)
    register_before_tool_call_hook(policy)
    run = rig.run({"command": "harmless"})
    assert run.calls == [{"command": "harmless"}]
