"""The settling rule through Strands' real hook registry (issue 25): a callback that
stamps a fresh value into the tool input each time it runs is not denied; a callback
after the last rewrite runs once; a deny after a rewrite stands."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from failsecure_strands_rig import provider

_fresh = itertools.count()


def stamper(event):  # an idempotency key, fresh on every run
    event.tool_use["input"]["idempotency_key"] = f"k-{next(_fresh)}"


def policy(event):
    if "forbidden" in event.tool_use["input"].get("command", ""):
        event.cancel_tool = "policy: no"


def run(agent, mode):
    agent("go") if mode == "sync" else asyncio.run(agent.invoke_async("go"))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("order", ["stamper-last", "stamper-first"])
def test_a_stamping_callback_is_not_denied(rig, mode, order):
    seen = []

    def watching(event):
        seen.append(dict(event.tool_use["input"]))
        policy(event)

    pair = (watching, stamper) if order == "stamper-last" else (stamper, watching)
    run(rig.agent(hooks=[provider(*pair)], command="harmless"), mode)
    assert rig.marker.runs() == ["harmless"]
    assert rig.last()["outcome"] != "deny" and rig.last()["failure"] is None
    assert "idempotency_key" in seen[-1]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stamped_call_the_policy_denies_is_denied(rig, mode):
    run(rig.agent(hooks=[provider(policy, stamper)], command="forbidden rm"), mode)
    assert not rig.marker.ran
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None) and event["hook"].endswith(".policy")


def rewriter(event):
    event.tool_use["input"]["command"] = "harmless rewritten"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_callbacks_after_the_last_rewrite_run_once(rig, mode):
    runs = {"after": 0}
    looks = []

    def before(event):
        looks.append(event.tool_use["input"]["command"])

    def after(event):  # a side effect: once is enough
        runs["after"] += 1

    run(rig.agent(hooks=[provider(before, rewriter, after)], command="harmless"), mode)
    assert rig.marker.runs() == ["harmless rewritten"]
    assert looks == ["harmless", "harmless rewritten"] and runs == {"after": 1}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_deny_after_a_rewrite_stands(rig, mode):
    looks = []

    def denying(event):  # allows its first look, denies the rewritten call
        looks.append(event.tool_use["input"]["command"])
        if len(looks) > 1:
            event.cancel_tool = "no rewritten calls"

    run(rig.agent(hooks=[provider(denying, rewriter, stamper)], command="harmless"), mode)
    assert not rig.marker.ran
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None) and event["hook"].endswith(".denying")
    assert looks == ["harmless", "harmless rewritten"]
