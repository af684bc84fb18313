"""Activation: what is patched, that unpatch restores upstream exactly, the refused
adapter's lockdown, the doctor self-test, and ``onFailure: "block"`` on the wire."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py

import failsecure  # noqa: E402
from claude_agent_sdk._internal import query as query_module  # noqa: E402
from failsecure.adapters.claude_sdk import ClaudeSDKAdapter  # noqa: E402


def test_the_trigger_module_activates_the_adapter(adapter):
    from failsecure import adapters

    assert adapters.BUILTIN["claude-agent-sdk"][0] == "claude_agent_sdk._internal.query"
    assert adapter.modules[0] == "claude_agent_sdk._internal.query"
    assert type(query_module.Query.__dict__["initialize"]).__name__ == "FunctionWrapper"


def test_unpatch_restores_upstream_exactly(adapter):
    wrapped = {attr: query_module.Query.__dict__[attr] for attr in ("initialize", "_send_control_request")}
    originals = {attr: getattr(w, "__wrapped__", w) for attr, w in wrapped.items()}
    failsecure.uninstall()
    try:
        for attr, original in originals.items():
            assert query_module.Query.__dict__[attr] is original
    finally:
        failsecure.install()
    assert adapter.state == "patched"


def test_the_self_test_passes(adapter):
    checks = adapter.self_test()
    assert [c.ok for c in checks] == [True] * 4, checks


def test_a_release_without_the_targets_is_refused_and_locked_down(adapter, monkeypatch, rig):
    """A Query whose dispatcher no longer reads the hooks: refused loudly, and a session
    with PreToolUse callbacks does not start."""
    failsecure.uninstall()
    fresh = ClaudeSDKAdapter()
    original = query_module.Query.__dict__["_handle_control_request"]

    async def moved(self, request):  # reads neither hook_callbacks nor can_use_tool
        return None

    monkeypatch.setattr(query_module.Query, "_handle_control_request", moved)
    try:
        assert fresh.patch() == "refused"
        assert "_handle_control_request" in fresh.refused_reason

        async def cb(input_data, tool_use_id, context):
            return {}

        query = query_module.Query(transport=sdk_rig.CaptureTransport(), is_streaming_mode=True,
                                   hooks={"PreToolUse": [{"matcher": None, "hooks": [cb]}]})
        with pytest.raises(RuntimeError, match="claude-agent-sdk:failsecure"):
            asyncio.run(query.initialize())
        assert rig.last()["failure"] == "missing"
    finally:
        fresh.unpatch()
        monkeypatch.setattr(query_module.Query, "_handle_control_request", original)
        failsecure.install()
    assert "initialize" in query_module.Query.__dict__ and adapter.state == "patched"


def _initialize_request(hooks):
    """The initialize request the patched SDK writes to the CLI (no CLI answers it)."""
    transport = sdk_rig.CaptureTransport()
    query = query_module.Query(transport=transport, is_streaming_mode=True, hooks=hooks, initialize_timeout=0.05)
    with pytest.raises(Exception):
        asyncio.run(query.initialize())
    return transport.written[0]["request"]


@pytest.mark.skipif(not ClaudeSDKAdapter()._targets() or "on_failure" not in json.dumps(
    [f.name for f in __import__("dataclasses").fields(__import__("claude_agent_sdk").HookMatcher)]),
    reason="HookMatcher.on_failure is new in 0.2.177")
def test_every_pretooluse_matcher_is_sent_with_onfailure_block(adapter, rig):
    async def cb(input_data, tool_use_id, context):
        return {}

    request = _initialize_request({
        "PreToolUse": [{"matcher": "Bash", "hooks": [cb]}, {"matcher": None, "hooks": [cb], "on_failure": "continue"}],
        "PostToolUse": [{"matcher": None, "hooks": [cb]}],
    })
    assert [m.get("onFailure") for m in request["hooks"]["PreToolUse"]] == ["block", "block"]
    assert "onFailure" not in request["hooks"]["PostToolUse"][0]


def test_upstream_twin_sends_no_onfailure(adapter, rig):
    async def cb(input_data, tool_use_id, context):
        return {}

    failsecure.uninstall()
    try:
        request = _initialize_request({"PreToolUse": [{"matcher": "Bash", "hooks": [cb]}]})
    finally:
        failsecure.install()
    assert "onFailure" not in request["hooks"]["PreToolUse"][0]
