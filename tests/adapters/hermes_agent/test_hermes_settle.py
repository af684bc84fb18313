"""The settling rule through hermes-agent's real ``pre_tool_call`` dispatch (issue 25):
a plugin hook that stamps a fresh value into the arguments each time it runs is not
denied; a hook after the last rewrite runs once; a deny after a rewrite stands."""

from __future__ import annotations

STAMP = "import itertools\nFRESH = itertools.count()\n"
STAMPER = "kw['args']['idempotency_key'] = 'k-%d' % next(FRESH)"
POLICY = "if 'forbidden' in str(kw['args'].get('path')):\n    return {'action': 'block', 'message': 'policy: forbidden'}"


def counting(path):
    """A hook body appending one line per run to ``path`` (a side effect to count)."""
    return f"open({str(path)!r}, 'a').write(repr(kw['args'].get('path')) + '\\n')"


def test_a_stamping_hook_is_not_denied(rig):
    rig.plugin("policy", POLICY)
    rig.plugin("stamper", STAMPER, module_prefix=STAMP)
    rig.load()
    out = rig.call({"path": "/ok"})
    assert out["ran"] and out["result"] == {"ok": True}
    assert "idempotency_key" in rig.ran[-1]
    event = rig.last()
    assert event["outcome"] != "deny" and event["failure"] is None


def test_a_stamped_call_the_policy_denies_is_denied(rig):
    policy = rig.plugin("policy", POLICY)
    rig.plugin("stamper", STAMPER, module_prefix=STAMP)
    rig.load()
    out = rig.call({"path": "/forbidden"})
    assert not out["ran"] and out["result"] == {"error": "policy: forbidden"}
    assert (rig.last()["outcome"], rig.last()["hook"]) == ("deny", policy)


def test_hooks_after_the_last_rewrite_run_once(rig, tmp_path):
    before, after = tmp_path / "before.log", tmp_path / "after.log"
    # hermes loads plugins in name order: the stems keep the hooks in this order
    rig.plugin("g1_before", counting(before))
    rig.plugin("g2_rewriter", "kw['args']['path'] = '/ok/rewritten'")
    rig.plugin("g3_after", counting(after))
    rig.load()
    out = rig.call({"path": "/ok"})
    assert out["ran"]
    assert before.read_text().splitlines() == ["'/ok'", "'/ok/rewritten'"]
    assert after.read_text().splitlines() == ["'/ok/rewritten'"]


def test_a_deny_after_a_rewrite_stands(rig, tmp_path):
    looks = tmp_path / "looks.log"
    flipping = rig.plugin(
        "flipping",
        counting(looks) + f"\nif len(open({str(looks)!r}).read().splitlines()) > 1:\n"
        "    return {'action': 'block', 'message': 'flipping: no'}",
    )
    rig.plugin("rewriter", "kw['args']['path'] = '/ok/rewritten'")
    rig.plugin("stamper", STAMPER, module_prefix=STAMP)
    rig.load()
    out = rig.call({"path": "/ok"})
    assert not out["ran"] and out["result"] == {"error": "flipping: no"}
    assert (rig.last()["outcome"], rig.last()["hook"]) == ("deny", flipping)
    assert looks.read_text().splitlines() == ["'/ok'", "'/ok/rewritten'"]
