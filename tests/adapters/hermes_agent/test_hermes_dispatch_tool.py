"""``PluginContext.dispatch_tool`` (a plugin slash command calling a tool directly) never
consults the ``pre_tool_call`` hooks upstream; under failsecure it passes the same gates."""

from __future__ import annotations

import json

import failsecure_hermes_rig as H


def _context():
    from hermes_cli.plugins import PluginContext, PluginManifest, get_plugin_manager

    return PluginContext(PluginManifest(name="slash-plugin"), get_plugin_manager())


def test_direct_dispatch_is_denied_by_a_failing_gate(rig):
    hook = rig.plugin("guard", "raise RuntimeError('secret-payload')")
    rig.load()
    rig.register_tool()
    out = json.loads(_context().dispatch_tool(H.TOOL, {"path": "/etc/secret-payload"}))
    assert rig.ran == []
    assert out == {"error": f"failsecure: hook '{hook}' failed closed (raised)"}
    event = rig.last()
    assert (event["hook"], event["failure"], event["exception_type"]) == (hook, "raised", "RuntimeError")


def test_direct_dispatch_is_denied_by_a_block(rig):
    rig.plugin("guard", "return {'action': 'block', 'message': 'not from slash commands'}")
    rig.load()
    rig.register_tool()
    out = json.loads(_context().dispatch_tool(H.TOOL, {}))
    assert rig.ran == [] and out == {"error": "not from slash commands"}


def test_direct_dispatch_runs_when_the_gates_allow(rig):
    rig.plugin("guard", "return None")
    rig.load()
    rig.register_tool()
    out = json.loads(_context().dispatch_tool(H.TOOL, {"x": 1}))
    assert rig.ran == [{"x": 1}] and out == {"ok": True}
    assert rig.last()["outcome"] == "abstain"
