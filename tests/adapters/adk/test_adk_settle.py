"""The settling rule through ADK's real callback stages (issue 25): a callback that
stamps a fresh value into the arguments each time it runs is not denied; a callback
after the last rewrite runs once; a deny after a rewrite stands."""

from __future__ import annotations

import itertools

import failsecure_adk_rig as adk_rig

_fresh = itertools.count()


def stamper(tool, args, tool_context):  # an idempotency key, fresh on every run
    args["idempotency_key"] = f"k-{next(_fresh)}"
    return None


def policy_plugin(seen=None):
    async def callback(tool, tool_args, tool_context):
        if seen is not None:
            seen.append(dict(tool_args))
        return {"error": "forbidden"} if "forbidden" in str(tool_args.get("command")) else None

    return adk_rig.plugin("policy", callback)


def test_a_stamping_callback_is_not_denied(rig, mode):
    seen: list = []
    # the policy plugin runs first, the agent's stamper after it: the policy judges again
    out = rig.run({"command": "harmless"}, mode, before=stamper, plugins=[policy_plugin(seen)])
    assert rig.ran and out.ran and out.ran[0]["command"] == "harmless"
    assert rig.last()["outcome"] != "deny" and rig.last()["failure"] is None
    assert "idempotency_key" in seen[-1]


def test_a_stamped_call_the_policy_denies_is_denied(rig, mode):
    out = rig.run({"command": "forbidden rm"}, mode, before=stamper, plugins=[policy_plugin()])
    assert not rig.ran and out.response == {"error": "forbidden"}
    assert rig.last()["outcome"] == "deny"


def test_callbacks_after_the_last_rewrite_run_once(rig, mode):
    runs = {"policy": 0, "after": 0}

    async def counting(tool, tool_args, tool_context):
        runs["policy"] += 1
        return None

    def rewriter(tool, args, tool_context):
        args["command"] = "harmless rewritten"
        return None

    def after(tool, args, tool_context):  # a side effect: once is enough
        runs["after"] += 1
        return None

    out = rig.run({"command": "harmless"}, mode, before=[rewriter, after], plugins=[adk_rig.plugin("count", counting)])
    assert out.ran == [{"command": "harmless rewritten"}]
    assert runs == {"policy": 2, "after": 1}


def test_a_deny_after_a_rewrite_stands(rig, mode):
    looks: list = []

    async def flipping(tool, tool_args, tool_context):  # allows its first look only
        looks.append(tool_args["command"])
        return {"error": "second look"} if len(looks) > 1 else None

    def rewriter(tool, args, tool_context):
        args["command"] = "harmless rewritten"
        return None

    out = rig.run({"command": "harmless"}, mode, before=[rewriter, stamper], plugins=[adk_rig.plugin("flip", flipping)])
    assert not rig.ran and out.response == {"error": "second look"}
    assert looks == ["harmless", "harmless rewritten"]
    assert rig.last()["outcome"] == "deny"
