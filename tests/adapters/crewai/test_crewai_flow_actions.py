"""A flow's declarative tool action (``do: {call: tool, ref: ...}``) runs its tool with
``self.tool.run(**args)`` and no before-tool-call hook upstream. Under failsecure the same
hooks judge it as an agent's tool call: a raise, a deny or junk blocks it (CrewAI's own
block text is the action's result), an allowing hook lets it run with the arguments the
hooks left. Every deny asserts the audited failure and has an allow twin."""

from __future__ import annotations

import json
import os

import pytest
from crewai.flow.flow import Flow
from crewai.flow.flow_definition import FlowToolActionDefinition
from crewai.flow.runtime._actions import ToolAction
from crewai.hooks import register_before_tool_call_hook
from crewai.tools import BaseTool

BLOCKED = "Tool execution blocked by hook. Tool: flow_marker."


class FlowMarkerTool(BaseTool):
    name: str = "flow_marker"
    description: str = "Appends its command to the marker file named by the environment."

    def _run(self, command: str) -> str:
        with open(os.environ["FAILSECURE_CREWAI_FLOW_MARKER"], "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return "ran"


class EmptyFlow(Flow):
    pass


@pytest.fixture
def action(rig, tmp_path, monkeypatch):
    marker = tmp_path / "flow-marker"
    monkeypatch.setenv("FAILSECURE_CREWAI_FLOW_MARKER", str(marker))
    definition = FlowToolActionDefinition(call="tool", ref=f"{__name__}:FlowMarkerTool", **{"with": {"command": "harmless"}})
    built = ToolAction(EmptyFlow(), definition)

    def calls():
        return [json.loads(line) for line in marker.read_text().splitlines()] if marker.exists() else []

    built.calls = calls
    return built


def test_an_allowing_hook_lets_the_flow_action_run(rig, action):
    seen = []

    def watching(context):
        seen.append((context.tool_name, dict(context.tool_input)))
        return None

    register_before_tool_call_hook(watching)
    assert action.run() == "ran"
    assert action.calls() == [{"command": "harmless"}]
    assert seen == [("flow_marker", {"command": "harmless"})]


def test_a_hook_rewrite_is_what_the_flow_action_runs(rig, action):
    def rewriting(context):
        context.tool_input["command"] = "rewritten"
        return None

    register_before_tool_call_hook(rewriting)
    action.run()
    assert action.calls() == [{"command": "rewritten"}]


@pytest.mark.parametrize("kind", ["raise", "false", "junk"])
def test_a_failing_or_denying_hook_blocks_the_flow_action(rig, action, kind):
    def gate(context):
        if kind == "raise":
            raise RuntimeError("SECRET-flow")
        return False if kind == "false" else "DENY"

    register_before_tool_call_hook(gate)
    result = action.run()
    assert action.calls() == []  # upstream: the tool runs, no hook is asked
    assert isinstance(result, str) and result.startswith(BLOCKED)
    event = rig.last()
    assert event["outcome"] == "deny" and event["hook"] == rig.hook_id(gate) and event["tool"] == "flow_marker"
    assert event["failure"] == {"raise": "raised", "false": None, "junk": "invalid"}[kind]
    assert "SECRET" not in result and "SECRET" not in rig.audit_path.read_text()


def test_upstream_runs_the_flow_action_without_asking(rig, tmp_path, monkeypatch):
    import failsecure

    def gate(context):
        return False

    register_before_tool_call_hook(gate)
    failsecure.uninstall()
    try:
        marker = tmp_path / "upstream-marker"
        monkeypatch.setenv("FAILSECURE_CREWAI_FLOW_MARKER", str(marker))
        definition = FlowToolActionDefinition(call="tool", ref=f"{__name__}:FlowMarkerTool", **{"with": {"command": "x"}})
        ToolAction(EmptyFlow(), definition).run()
        assert marker.exists()
    finally:
        failsecure.install()
