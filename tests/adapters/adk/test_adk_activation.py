"""Activation, unpatch, upstream failing open when unpatched, refusal, doctor's self-test,
and the workflow ToolNode path (plugins only, as upstream)."""

from __future__ import annotations

import asyncio
import threading

import failsecure_adk_rig as adk_rig
import pytest

import failsecure
from failsecure import activation
from failsecure.adapters import adk


def _targets():
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.plugins.plugin_manager import PluginManager

    return PluginManager, LlmAgent


def test_patched_by_install_and_registered(adapter):
    from failsecure.adapters import BUILTIN

    assert BUILTIN["google-adk"][:2] == ("google.adk.plugins.plugin_manager", "failsecure.adapters.adk:ADKAdapter")
    assert adapter.state == "patched" and adapter.in_range()
    manager, agent = _targets()
    assert type(vars(manager)["run_before_tool_callback"]).__name__ == "FunctionWrapper"
    assert vars(agent)[adk.PROPERTY] is adapter._agent_property


def test_unpatch_restores_upstream_exactly_and_upstream_fails_open(rig, mode):
    manager, agent = _targets()
    patched_prop = vars(agent)[adk.PROPERTY]
    a = activation.get("google-adk")

    async def policy(tool, tool_args, tool_context):
        return {"error": "forbidden"} if "forbidden" in str(tool_args.get("command")) else None

    def smuggler(tool, args, tool_context):
        args["command"] = "forbidden"

    failsecure.uninstall()
    try:
        assert a.state == "unpatched"
        original_run = vars(manager)["run_before_tool_callback"]
        assert type(original_run).__name__ == "function" and original_run.__qualname__ == "PluginManager.run_before_tool_callback"
        assert type(vars(agent)[adk.PROPERTY]) is property and vars(agent)[adk.PROPERTY] is not patched_prop
        # upstream: the agent callback rewrites the arguments after the plugin approved them
        out = rig.run({"command": "harmless"}, mode, before=smuggler, plugins=[adk_rig.plugin("policy", policy)])
        assert out.ran == [{"command": "forbidden"}]
        # upstream: a junk answer is the tool's result, no deadline on a hanging callback
        release = threading.Event()
        threading.Timer(0.4, release.set).start()

        def hanging(tool, args, tool_context):
            release.wait(2)

        rig.run({"command": "harmless"}, mode, before=hanging)
        assert rig.ran
    finally:
        failsecure.install()
    assert a.state == "patched"
    out = rig.run({"command": "harmless"}, mode, before=smuggler, plugins=[adk_rig.plugin("policy", policy)])
    assert out.ran == [] and out.response == {"error": "forbidden"}


def test_self_test_through_the_real_dispatcher(adapter):
    checks = adapter.self_test()
    assert [c.name for c in checks] == ["raising gate", "hanging gate", "junk gate", "allowing gate"]
    assert all(c.ok for c in checks), checks
    assert "(raised)" in checks[0].detail and "(timeout)" in checks[1].detail and "(invalid)" in checks[2].detail


def test_refused_adapter_denies_every_tool_call(rig, mode, monkeypatch):
    """A patch target missing (an unknown release): loud refusal, every gated call denies."""
    failsecure.uninstall()
    fresh = adk.ADKAdapter()
    try:
        monkeypatch.setattr(adk, "PROPERTY", "no_such_property")
        assert fresh.patch() == "refused"
        assert "LlmAgent.no_such_property" in fresh.refused_reason
        monkeypatch.setattr(adk, "PROPERTY", "canonical_before_tool_callbacks")
        out = rig.run({"command": "harmless"}, mode)
        assert not rig.ran
        assert out.response == {"error": "failsecure: hook 'google-adk:failsecure' is missing"}
        assert rig.outcome_of("google-adk:failsecure")["failure"] == "missing"
    finally:
        fresh.unpatch()
        failsecure.install()
    manager, _ = _targets()
    assert type(vars(manager)["run_before_tool_callback"]).__name__ == "FunctionWrapper"
    rig.run({"command": "harmless"}, mode)
    assert rig.ran  # the allow twin, patched again


def _tool_node_run(rig, plugin):
    """A workflow whose only node is the tool (a ToolNode: no agent stage)."""
    node = pytest.importorskip("google.adk.workflow._tool_node")
    if not hasattr(getattr(node, "_ToolNode", None), adk.TOOL_NODE_CALLER):
        pytest.skip("this release's ToolNode runs no plugin callbacks")
    from google.adk.workflow import START, Workflow
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    outcome = adk_rig.Outcome()
    workflow = Workflow(name="wf", edges=[(START, adk_rig.make_tool(rig.marker, outcome))])
    runner = InMemoryRunner(agent=workflow, app_name=adk_rig.APP, plugins=[plugin])

    async def main():
        s = await runner.session_service.create_session(app_name=adk_rig.APP, user_id=adk_rig.USER)
        message = types.Content(role="user", parts=[types.Part(text="harmless")])
        async for _ in runner.run_async(user_id=adk_rig.USER, session_id=s.id, new_message=message):
            pass

    asyncio.run(main())
    return outcome


@pytest.mark.parametrize("kind", ["raise", "allow"])
def test_tool_node_plugin_gate(rig, monkeypatch, kind):
    seen = []
    original = adk._from_tool_node

    def spy():
        seen.append(original())
        return seen[-1]

    monkeypatch.setattr(adk, "_from_tool_node", spy)

    async def callback(tool, tool_args, tool_context):
        if kind == "raise":
            raise RuntimeError("boom")

    _tool_node_run(rig, adk_rig.plugin("node-gate", callback))
    assert seen == [True]
    if kind == "raise":
        assert not rig.ran
        o = rig.outcome_of("plugin:node-gate")
        assert (o["failure"], o["exception_type"]) == ("raised", "RuntimeError")
    else:
        assert rig.ran


def test_agent_stage_reached_without_the_plugin_stage_gates_on_its_own(rig):
    """A plugin stage failsecure did not run (a PluginManager subclass that overrides it):
    the agent stage gates the agent's callbacks itself; the allow twin runs them once."""
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.plugins.plugin_manager import PluginManager
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.adk.tools.tool_context import ToolContext

    calls = []

    def allowing(tool, args, tool_context):
        calls.append("allowing")

    def raising(tool, args, tool_context):
        raise RuntimeError("boom")

    async def stage(callbacks):
        agent = LlmAgent(name="direct", model=adk_rig.model_class()(), before_tool_callback=callbacks)
        sessions = InMemorySessionService()
        session = await sessions.create_session(app_name="a", user_id="u")
        invocation = InvocationContext(session_service=sessions, invocation_id="i", agent=agent, session=session,
                                       plugin_manager=PluginManager())
        context = ToolContext(invocation_context=invocation, function_call_id="c1")
        (gate,) = agent.canonical_before_tool_callbacks
        tool = adk_rig.make_tool(rig.marker, adk_rig.Outcome())
        return await gate(tool=tool, args={"command": "harmless"}, tool_context=context)

    assert asyncio.run(stage([allowing])) is None and calls == ["allowing"]
    answer = asyncio.run(stage([allowing, raising]))
    hook = f"google-adk:{raising.__module__}.{raising.__qualname__}"
    assert answer == {"error": f"failsecure: hook '{hook}' failed closed (raised)"}
    o = rig.outcome_of("raising")
    assert (o["failure"], o["exception_type"]) == ("raised", "RuntimeError")
