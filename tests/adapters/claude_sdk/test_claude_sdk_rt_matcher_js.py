"""The matcher rule read as JavaScript (``_js_regex``) still disagreed with the CLI's
``new RegExp(matcher).test(tool)`` in the direction that selects less than the CLI: a
back reference to a group that did not take part (JavaScript: the empty string; Python's
``re``: no match), the tool name read as code points rather than UTF-16 code units (an
astral character is two of them in JavaScript), ``\\s`` (JavaScript's is Unicode's white
space), ``.`` (JavaScript's excludes \\r, \\u2028, \\u2029) and Annex B's ``[\\c_]``. A
PermissionRequest callback under such a matcher was not waited for: can_use_tool's fast
allow won the CLI's race over its deny.
"""

from __future__ import annotations

import asyncio
import sys

import pytest

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py

SECRET, named = sdk_rig.SECRET, sdk_rig.named

from claude_agent_sdk import HookMatcher, PermissionResultAllow  # noqa: E402

PERM = "PermissionRequest"


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

# (matcher, tool, new RegExp(matcher).test(tool)), measured with node v20 (V8)
JS_TABLE = [
    ("(?:(mcp)|Bash)\\1", "Bash", True), ("(?:(x)?B)*\\1ash", "Bash", True), ("(?<n>x)?Bash\\k<n>", "Bash", True),
    ("(?:(mcp)|Read)\\1", "Bash", False), ("B(a)\\1", "Baa", True), ("B(a)\\1", "Bab", False),
    ("^..$", "mcp😀"[3:], True), ("\\uD83D", "mcp__😀", True), ("mcp__.{2}$", "mcp__😀", True), ("^mcp__.$", "mcp__😀", False),
    ("Bash\\s", "Bash\u00a0", True), ("Bash[\\s]", "Bash\u3000", True), ("^mcp__.*\\S$", "mcp__a\u00a0", False),
    ("^Bash.$", "Bash\r", False), ("[\\c_]", "\x1f", True), ("[\\c1]", "c", False), ("[\\c1]", "\x11", True),
]


@pytest.mark.parametrize("matcher,tool,expected", JS_TABLE)
def test_the_matcher_rule_agrees_with_the_clis_regexp(matcher, tool, expected):
    from failsecure.adapters.claude_sdk import _matches

    assert _matches(matcher, tool) is expected


@pytest.mark.parametrize("matcher", ["(?:(mcp)|Bash)\\1", "(?<n>x)?Bash\\k<n>"])
def test_a_back_reference_matcher_makes_can_use_tool_wait_for_the_permission_hooks(rig, matcher):
    run = _run(rig, matcher, "raise", "deny", "ok")
    assert run.error is None, run.error
    outcomes = [(e["outcome"], e["failure"]) for e in rig.events() if (e["hook"] or "").endswith(".perm_gate")]
    assert [m for m in ("raise", "deny", "ok") if run.ran(m)] == ["ok"], outcomes
    assert ("deny", "raised") in outcomes and ("deny", None) in outcomes


def test_allow_twin_a_back_reference_matcher_for_another_tool_selects_nothing(rig):
    run = _run(rig, "(?:(mcp)|Read)\\1", "raise", "deny", "ok")
    assert run.error is None, run.error
    assert [m for m in ("raise", "deny", "ok") if run.ran(m)] == ["raise", "deny", "ok"]
    assert not [e for e in rig.events() if (e["hook"] or "").endswith(".perm_gate")]


def test_a_class_python_warns_about_is_read_without_raising_under_warnings_as_errors():
    """``[!--]`` (a range ending at ``-``) makes Python's re warn of a future set difference:
    a host running with warnings as errors had the matcher rule raise."""
    import warnings

    from failsecure.adapters.claude_sdk import _JS_REGEXES, _matches

    _JS_REGEXES.pop("[!--]", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _matches("[!--]", "-") is True and _matches("[!--]", "Bash") is False  # node: true, false
