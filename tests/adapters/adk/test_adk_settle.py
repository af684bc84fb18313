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


def _count_handoffs(monkeypatch):
    from failsecure import guard

    taken = [0]
    take = guard._pool.take

    def counted():
        taken[0] += 1
        return take()

    monkeypatch.setattr(guard._pool, "take", counted)
    return taken


def _gates(n, deny_last=False):
    seen: list = []

    def gate(i):
        def callback(tool, args, tool_context):
            seen.append(i)
            return {"error": "no"} if deny_last and i == n - 1 else None

        return callback

    return [gate(i) for i in range(n)], seen


def test_plain_sync_callbacks_settle_in_one_hand_off(rig, mode, monkeypatch):
    # pass 1 of three plain sync callbacks (and a coroutine plugin) is one hand-off, as one is
    counts = []
    for n in (1, 3):
        before, seen = _gates(n)
        taken = _count_handoffs(monkeypatch)
        out = rig.run({"command": "harmless"}, mode, before=before, plugins=[policy_plugin()])
        assert rig.ran and out.ran == [{"command": "harmless"}] and seen == list(range(n))
        assert rig.last()["outcome"] != "deny"
        counts.append(taken[0])
    assert counts[0] == counts[1], counts


def test_a_deny_of_the_last_batched_callback_stands(rig, mode, monkeypatch):
    counts = []
    for n in (1, 3):
        before, seen = _gates(n, deny_last=True)
        taken = _count_handoffs(monkeypatch)
        out = rig.run({"command": "harmless"}, mode, before=before)
        assert not rig.ran and out.response == {"error": "no"} and seen == list(range(n))
        assert rig.last()["outcome"] == "deny"
        counts.append(taken[0])
    assert counts[0] == counts[1], counts


def test_a_callable_object_keeps_its_own_step(rig, mode):
    class Gate:  # not plain: it may answer an awaitable, so it does not hold the loop
        def __call__(self, tool, args, tool_context):
            return {"error": "object says no"} if "forbidden" in str(args.get("command")) else None

    before, seen = _gates(2)
    out = rig.run({"command": "harmless"}, mode, before=[before[0], Gate(), before[1]])
    assert rig.ran and seen == [0, 1]
    out = rig.run({"command": "forbidden"}, mode, before=[before[0], Gate(), before[1]])
    assert not rig.ran and out.response == {"error": "object says no"}
    assert rig.last()["outcome"] == "deny"
