"""The settling rule through code-puppy's real ``on_pre_tool_call`` dispatch (issue 25):
a callback that stamps a fresh value into ``tool_args`` each time it runs is not denied;
a callback after the last rewrite runs once; a deny after a rewrite stands."""

import itertools

_fresh = itertools.count()


def blocked(results):
    return [r for r in results if isinstance(r, dict) and r.get("blocked")]


async def stamper(tool_name, tool_args, context=None):  # an idempotency key, fresh on every run
    tool_args["idempotency_key"] = f"k-{next(_fresh)}"
    return None


async def policy(tool_name, tool_args, context=None):
    if "rm -rf" in str(tool_args.get("command", "")):
        return {"blocked": True, "error_message": "policy: no rm"}
    return None


def test_a_stamping_callback_is_not_denied(cb, rig, run):
    seen = []

    async def watching(tool_name, tool_args, context=None):
        seen.append(dict(tool_args))
        return await policy(tool_name, tool_args, context)

    for order in ((watching, stamper), (stamper, watching)):
        cb.clear_callbacks("pre_tool_call")
        for fn in order:
            cb.register_callback("pre_tool_call", fn)
        tool_args = {"command": "echo hi"}
        results = run(cb.on_pre_tool_call("agent_run_shell_command", tool_args))
        assert not blocked(results)
        assert rig.last()["outcome"] in ("allow", "abstain") and rig.last()["failure"] is None
        assert "idempotency_key" in seen[-1] and tool_args["command"] == "echo hi"


def test_a_stamped_call_the_policy_denies_is_denied(cb, rig, run):
    cb.register_callback("pre_tool_call", policy)
    cb.register_callback("pre_tool_call", stamper)
    results = run(cb.on_pre_tool_call("agent_run_shell_command", {"command": "rm -rf /"}))
    assert blocked(results) and results[0]["error_message"] == "policy: no rm"
    assert rig.last()["outcome"] == "deny"


def test_callbacks_after_the_last_rewrite_run_once(cb, rig, run):
    runs = {"before": 0, "after": 0}

    async def before(tool_name, tool_args, context=None):
        runs["before"] += 1

    async def rewriter(tool_name, tool_args, context=None):
        tool_args["command"] = "ls -la"

    async def after(tool_name, tool_args, context=None):  # a side effect: once is enough
        runs["after"] += 1

    for fn in (before, rewriter, after):
        cb.register_callback("pre_tool_call", fn)
    tool_args = {"command": "echo hi"}
    results = run(cb.on_pre_tool_call("agent_run_shell_command", tool_args))
    assert not blocked(results) and tool_args == {"command": "ls -la"}
    assert runs == {"before": 2, "after": 1}


def test_a_deny_after_a_rewrite_stands(cb, rig, run):
    looks = []

    async def flipping(tool_name, tool_args, context=None):  # allows its first look only
        looks.append(tool_args["command"])
        return {"blocked": True, "error_message": "flipping: no"} if len(looks) > 1 else None

    async def rewriter(tool_name, tool_args, context=None):
        tool_args["command"] = "ls -la"

    for fn in (flipping, rewriter, stamper):
        cb.register_callback("pre_tool_call", fn)
    results = run(cb.on_pre_tool_call("agent_run_shell_command", {"command": "echo hi"}))
    assert blocked(results) and blocked(results)[0]["error_message"] == "flipping: no"
    assert looks == ["echo hi", "ls -la"] and rig.last()["outcome"] == "deny"


def _count_handoffs(monkeypatch):
    from failsecure import guard

    taken = [0]
    take = guard._pool.take

    def counted():
        taken[0] += 1
        return take()

    monkeypatch.setattr(guard._pool, "take", counted)
    return taken


def _sync_gates(n, deny_last=False):
    seen = []

    def gate(i):
        def callback(tool_name, tool_args, context=None):
            seen.append(i)
            return {"blocked": True, "error_message": "last says no"} if deny_last and i == n - 1 else None

        return callback

    return [gate(i) for i in range(n)], seen


def test_sync_callbacks_settle_in_one_hand_off(cb, rig, run, monkeypatch):
    # pass 1 of three sync callbacks is one hand-off, as one callback is
    counts = []
    for n in (1, 3):
        cb.clear_callbacks("pre_tool_call")
        gates, seen = _sync_gates(n)
        for fn in gates:
            cb.register_callback("pre_tool_call", fn)
        taken = _count_handoffs(monkeypatch)
        results = run(cb.on_pre_tool_call("agent_run_shell_command", {"command": "echo hi"}))
        assert not blocked(results) and seen == list(range(n))
        assert rig.last()["outcome"] in ("allow", "abstain") and rig.last()["failure"] is None
        counts.append(taken[0])
    assert counts[0] == counts[1] == 1, counts


def test_a_deny_of_the_last_batched_sync_callback_stands(cb, rig, run, monkeypatch):
    counts = []
    for n in (1, 3):
        cb.clear_callbacks("pre_tool_call")
        gates, seen = _sync_gates(n, deny_last=True)
        for fn in gates:
            cb.register_callback("pre_tool_call", fn)
        taken = _count_handoffs(monkeypatch)
        results = run(cb.on_pre_tool_call("agent_run_shell_command", {"command": "echo hi"}))
        assert blocked(results) and results[0]["error_message"] == "last says no" and seen == list(range(n))
        assert rig.last()["outcome"] == "deny"
        counts.append(taken[0])
    assert counts[0] == counts[1] == 1, counts
