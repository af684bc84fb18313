"""The CLI reads a hook matcher that is not a list of names as a JavaScript regular
expression; failsecure re-implements that rule in Python (``_matches``), and uses it to
decide whether ``can_use_tool`` must wait for the ``PermissionRequest`` callbacks (the
CLI races them and takes the first answer that decides). A matcher valid in JavaScript
that Python's ``re`` rejects or reads otherwise (a named group ``(?<n>...)``, ``[^]``,
an identity escape ``\\h``) never matched under failsecure: the permission callback did
not wait, its fast allow won the race and the PermissionRequest callback's deny (or
crash) was lost, as upstream. The other way round, Python-only syntax (``(?i)``, ``\\Z``,
``(?P<n>...)``) that JavaScript rejects or reads otherwise selected a callback the CLI
never asks: failsecure ran it beside the ones the CLI asked and its deny denied a call
upstream runs (a false deny).
"""

from __future__ import annotations

import asyncio
import sys

import pytest

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py
SECRET, named = sdk_rig.SECRET, sdk_rig.named

from claude_agent_sdk import HookMatcher, PermissionResultAllow  # noqa: E402

import failsecure  # noqa: E402

PERM = "PermissionRequest"
JS_ONLY = ["(?<t>Bash)", "B[^]*", "Bas\\h"]


def _permission_hook():
    async def perm_gate(input_data, tool_use_id, context):
        command = input_data["tool_input"]["command"]
        await asyncio.sleep(0.1)  # slower than the permission callback, within the deadline
        if command.endswith("/raise"):
            raise RuntimeError("permission hook failed on " + SECRET)
        if command.endswith("/deny"):
            return {"hookSpecificOutput": {"hookEventName": PERM, "decision": {"behavior": "deny", "message": "no"}}}
        return {}

    return named(perm_gate, "perm_gate")


async def _allow_everything(tool_name, input_data, context):
    return PermissionResultAllow()


def _run(rig, matcher, *markers):
    return rig.run(*(rig.touch(m) for m in markers), allowed=(), can_use_tool=named(_allow_everything, "allow_everything"),
                   events={PERM: [HookMatcher(matcher=matcher, hooks=[_permission_hook()])]})


@pytest.mark.parametrize("matcher", JS_ONLY)
def test_a_javascript_only_matcher_still_makes_can_use_tool_wait_for_the_permission_hooks(rig, matcher):
    run = _run(rig, matcher, "raise", "deny", "ok")
    assert run.error is None, run.error
    outcomes = [(e["outcome"], e["failure"]) for e in rig.events() if (e["hook"] or "").endswith(".perm_gate")]
    assert [m for m in ("raise", "deny", "ok") if run.ran(m)] == ["ok"], outcomes
    assert ("deny", "raised") in outcomes and ("deny", None) in outcomes


@pytest.mark.parametrize("matcher", ["(?<t>Read)", "R[^]*"])
def test_allow_twin_a_javascript_only_matcher_for_another_tool_selects_nothing(rig, matcher):
    run = _run(rig, matcher, "raise", "deny", "ok")
    assert run.error is None, run.error
    assert [m for m in ("raise", "deny", "ok") if run.ran(m)] == ["raise", "deny", "ok"]
    assert not [e for e in rig.events() if (e["hook"] or "").endswith(".perm_gate")]


def test_upstream_twin_the_fast_allow_wins_over_the_permission_hooks(rig, adapter):
    failsecure.uninstall()
    try:
        run = _run(rig, "(?<t>Bash)", "raise", "deny", "ok")
    finally:
        failsecure.install()
        assert adapter.state == "patched"
    assert run.ran("raise") and run.ran("deny") and run.ran("ok")


async def _allow(input_data, tool_use_id, context):
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}


async def _deny(input_data, tool_use_id, context):
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}}


@pytest.mark.parametrize("matcher", ["(?i)bash", "Bash\\Z", "(?P<t>Bash)"])
def test_a_python_only_matcher_selects_nothing_as_in_the_cli(rig, matcher):
    """Python-only syntax is a SyntaxError (or another reading) in JavaScript: the CLI never
    asks that callback, so failsecure must not run it beside the ones the CLI asks."""
    run = rig.run(rig.touch("ran"), hooks=[HookMatcher(matcher="Bash", hooks=[named(_allow, "allow_bash")]),
                                           HookMatcher(matcher=matcher, hooks=[named(_deny, "deny_python")])])
    assert run.error is None, run.error
    assert run.ran("ran")
    assert [(e["outcome"], e["failure"]) for e in rig.events()][-1:] == [("allow", None)]


def test_deny_twin_the_same_callback_under_a_matcher_both_read_denies(rig):
    run = rig.run(rig.touch("ran"), hooks=[HookMatcher(matcher="Bash", hooks=[named(_allow, "allow_bash")]),
                                           HookMatcher(matcher="^Ba.h$", hooks=[named(_deny, "deny_python")])])
    assert run.error is None, run.error
    assert not run.ran("ran")
    assert rig.last()["outcome"] == "deny" and rig.last()["hook"].endswith(".deny_python")


# new RegExp(matcher).test(tool), measured with node (V8); None: a SyntaxError there
JS_TABLE = [
    ("(?<t>Bash)", True), ("B[^]*", True), ("Bas\\h", True), ("(?i)bash", None), ("Bash\\Z", False), ("(?P<t>Bash)", None),
    ("^Bash$", True), ("Ba(sh", None), ("*Bash", None), ("a**", None), ("B??ash", True), ("[]Bash", False),
    ("(?<n>B)\\k<n>", False), ("B\\u0061sh", True), ("B{", False), ("Ba{1,}sh", True), ("(?<!x)Bash", True),
]


@pytest.mark.parametrize("matcher,expected", JS_TABLE)
def test_the_matcher_rule_reads_a_regular_expression_as_javascript_does(matcher, expected):
    from failsecure.adapters.claude_sdk import _matches

    assert _matches(matcher, "Bash") is bool(expected)


def test_a_lookbehind_python_cannot_run_selects_every_tool():
    """Valid JavaScript (a lookbehind of any length) that Python's re cannot compile: it is
    read as selecting (fail closed), not as selecting nothing."""
    from failsecure.adapters.claude_sdk import _matches

    assert _matches("(?<=B.*)ash", "Bash") and _matches("(?<=B.*)ash", "Read")
