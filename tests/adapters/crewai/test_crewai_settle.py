"""The settling rule through CrewAI's real dispatcher (issue 25): a hook that stamps a
fresh value each time it runs is not denied; a hook after the last rewrite runs once;
a deny after a rewrite stands; two hooks fighting over one field are denied."""

from __future__ import annotations

import itertools

import pytest
from crewai.hooks import register_before_tool_call_hook
import crewai.hooks.tool_hooks as tool_hooks

_fresh = itertools.count()


def policy(context):
    return False if "forbidden" in str(context.tool_input.get("command")) else None


def stamper(context):  # an idempotency key, fresh on every run
    context.tool_input["idempotency_key"] = f"k-{next(_fresh)}"


@pytest.mark.parametrize("order", ["stamper-last", "stamper-first", "stamper-between"])
def test_a_stamping_hook_is_not_denied(rig, order):
    runs = []

    def counting_policy(context):
        runs.append(dict(context.tool_input))
        return policy(context)

    def rewriter(context):  # a one-time rewrite after the stamper: the stamper runs again
        context.tool_input["command"] = context.tool_input["command"].strip()

    hooks = {"stamper-last": [counting_policy, stamper],
             "stamper-first": [stamper, counting_policy],
             "stamper-between": [counting_policy, stamper, rewriter]}[order]
    for hook in hooks:
        register_before_tool_call_hook(hook)
    run = rig.run({"command": " harmless "})
    event = rig.last()
    assert event["outcome"] != "deny" and event["failure"] is None, event
    assert run.ran and run.calls[0]["command"] == ("harmless" if order == "stamper-between" else " harmless ")
    assert "idempotency_key" in runs[-1]  # the policy judged the stamped input


def test_a_stamped_call_the_policy_denies_is_denied(rig):
    register_before_tool_call_hook(policy)
    register_before_tool_call_hook(stamper)
    run = rig.run({"command": "forbidden rm"})
    assert not run.ran
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] is None and event["hook"] == rig.hook_id(policy)


def test_hooks_after_the_last_rewrite_run_once(rig):
    runs = {"before": 0, "after": 0}

    def before(context):
        runs["before"] += 1

    def rewriter(context):
        context.tool_input["command"] = "harmless rewritten"

    def after(context):  # a side effect (a counter, a prompt): once is enough
        runs["after"] += 1

    for hook in (before, rewriter, after):
        register_before_tool_call_hook(hook)
    run = rig.run({"command": "harmless"})
    assert run.calls == [{"command": "harmless rewritten"}]
    assert runs == {"before": 2, "after": 1}


def test_a_deny_after_a_rewrite_stands(rig):
    looks = []

    def flipping_policy(context):  # allows its first look, denies the rewritten input
        looks.append(context.tool_input["command"])
        return None if len(looks) == 1 else False

    def rewriter(context):
        context.tool_input["command"] = "harmless rewritten"

    register_before_tool_call_hook(flipping_policy)
    register_before_tool_call_hook(rewriter)
    register_before_tool_call_hook(stamper)
    run = rig.run({"command": "harmless"})
    assert not run.ran
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] is None and event["hook"] == rig.hook_id(flipping_policy)
    assert looks == ["harmless", "harmless rewritten"]


def test_two_hooks_fighting_over_one_field_are_denied(rig):
    def one(context):
        context.tool_input["command"] = "harmless one"

    def two(context):
        context.tool_input["command"] = "harmless two"

    register_before_tool_call_hook(one)
    register_before_tool_call_hook(two)
    run = rig.run({"command": "harmless"})
    assert not run.ran
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] == "invalid" and event["hook"] == "crewai:pre_tool_call"
    # twin: two hooks that agree settle
    def agree(context):
        context.tool_input["command"] = "harmless one"

    tool_hooks.clear_all_tool_call_hooks()
    register_before_tool_call_hook(one)
    register_before_tool_call_hook(agree)
    run = rig.run({"command": "harmless"})
    assert run.calls == [{"command": "harmless one"}]
