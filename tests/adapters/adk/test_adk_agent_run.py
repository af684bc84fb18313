"""End to end: a real LlmAgent, a scripted BaseLlm, a real FunctionTool (marker file),
InMemoryRunner ``run`` and ``run_async``, agent callbacks and a runner plugin."""

from __future__ import annotations

import asyncio
import threading

import failsecure_adk_rig as adk_rig
import pytest

import failsecure
from failsecure import activation


def test_allow_runs_the_tool(rig, mode):
    seen = []

    def agent_gate(tool, args, tool_context):
        seen.append(dict(args))
        return None

    async def plugin_gate(tool, tool_args, tool_context):
        return None

    out = rig.run({"command": "harmless"}, mode, before=agent_gate, plugins=[adk_rig.plugin("policy", plugin_gate)])
    assert out.error is None, out.error
    assert rig.ran and out.ran == [{"command": "harmless"}]
    assert seen == [{"command": "harmless"}]  # the agent callback ran once, not twice
    event = rig.last()
    assert event["outcome"] == "allow" or event["outcome"] == "abstain"
    hooks = [o["hook"] for o in event["outcomes"]]
    assert hooks == ["google-adk:plugin:policy", f"google-adk:{agent_gate.__module__}.{agent_gate.__qualname__}"]


def test_raising_agent_callback_denies(rig, mode):
    def agent_gate(tool, args, tool_context):
        raise RuntimeError("secret-in-exception")

    out = rig.run({"command": "harmless secret-arg"}, mode, before=agent_gate)
    assert not rig.ran
    assert out.error is None
    assert out.response == {"error": f"failsecure: hook 'google-adk:{agent_gate.__module__}.{agent_gate.__qualname__}' failed closed (raised)"}
    o = rig.outcome_of(agent_gate.__qualname__)
    assert (o["failure"], o["exception_type"]) == ("raised", "RuntimeError")
    text = rig.audit_path.read_text()
    assert "secret" not in text
