"""Activation (drop-in, explicit, the hermes plugin entry point), refusal when the patch
targets are missing, native fail-closed detection, and the doctor self-test."""

from __future__ import annotations

import glob
import importlib.metadata
import site
import sys
import types

import pytest

import failsecure_hermes_rig as H

CRASH = {"stem": "security", "hook": "raise RuntimeError('x')"}
QUIET = {"stem": "quiet", "hook": "return None"}
OFF = {"FAILSECURE_AUTO": "0"}


def _has_dropin() -> bool:
    dirs = site.getsitepackages() + [site.getusersitepackages()]
    return any(glob.glob(f"{d}/failsecure*.pth") for d in dirs)


def _has_hermes_entry_point() -> bool:
    return any(ep.name == "failsecure" for ep in importlib.metadata.entry_points(group="hermes_agent.plugins"))


def test_drop_in_patches_on_first_import(run_fresh):
    if not _has_dropin():
        pytest.skip("failsecure is not installed with its .pth here (tox installs it)")
    out = run_fresh({"install": False, "plugins": [CRASH]}, env={"FAILSECURE_AUTO": "1"})
    assert out["state"] == "patched"
    assert not out["ran"]
    assert (out["events"][-1]["failure"], out["events"][-1]["exception_type"]) == ("raised", "RuntimeError")


def test_drop_in_off_is_said_and_leaves_hermes_alone(run_fresh):
    out = run_fresh({"install": False, "plugins": [CRASH]}, env=OFF)
    assert out["state"] == "unpatched"
    assert out["ran"]  # upstream behaviour: the raising guard is logged and skipped
    if _has_dropin():
        assert "FAILSECURE_AUTO=0" in out["stderr"]


def test_explicit_install(run_fresh):
    out = run_fresh({"install": True, "plugins": [CRASH]}, env=OFF)
    assert out["state"] == "patched" and not out["ran"]


def test_hermes_plugin_entry_point_activates(run_fresh):
    if not _has_hermes_entry_point():
        pytest.skip("the hermes_agent.plugins entry point is not installed here")
    out = run_fresh({"install": False, "enable": ["failsecure"], "plugins": [CRASH]}, env=OFF)
    assert out["state"] == "patched"
    assert not out["ran"]
    event = out["events"][-1]
    # the guard registered before failsecure loaded is still named after its plugin
    assert event["hook"].startswith("hermes-agent:security_")
    assert (event["failure"], event["exception_type"]) == ("raised", "RuntimeError")


def test_hermes_plugin_not_enabled_is_not_loaded(run_fresh):
    out = run_fresh({"install": False, "plugins": [CRASH]}, env=OFF)
    assert out["state"] == "unpatched"


def test_missing_patch_targets_refuse_loudly_and_deny(run_fresh):
    out = run_fresh(
        {"install": False, "install_after_break": True, "plugins": [QUIET],
         "break": ["resolve_pre_tool_block", "get_pre_tool_call_block_message"]},
        env=OFF,
    )
    assert out["state"] == "refused"
    assert "cannot patch hermes-agent" in out["stderr"]
    assert not out["ran"]
    assert out["result"] == {"error": "failsecure: hook 'hermes-agent:failsecure' is missing"}
    event = out["events"][-1]
    assert (event["hook"], event["outcome"], event["failure"]) == ("hermes-agent:failsecure", "deny", "missing")


def test_refusal_twin_targets_present_runs(run_fresh):
    out = run_fresh({"install": False, "install_after_break": True, "plugins": [QUIET], "break": []}, env=OFF)
    assert out["state"] == "patched" and out["ran"]


def test_install_is_idempotent_and_wraps_once(adapter):
    import wrapt

    import failsecure
    from hermes_cli import plugins

    first = plugins.PluginManager.__dict__["invoke_hook"]
    assert isinstance(first, wrapt.FunctionWrapper)
    assert failsecure.install()["hermes-agent"] == "patched"
    assert plugins.PluginManager.__dict__["invoke_hook"] is first
    assert not isinstance(first.__wrapped__, wrapt.FunctionWrapper)


def test_unpatch_restores_upstream(adapter):
    from hermes_cli import plugins

    import wrapt

    wrapped = plugins.PluginManager.__dict__["invoke_hook"]
    adapter.unpatch()
    try:
        assert plugins.PluginManager.__dict__["invoke_hook"] is wrapped.__wrapped__
        entry = plugins.resolve_pre_tool_block if H.has_approve() else plugins.get_pre_tool_call_block_message
        assert not isinstance(entry, wrapt.FunctionWrapper)
    finally:
        assert adapter.patch() == "patched"


def test_native_fail_closed_release_is_detected_and_not_wrapped(monkeypatch):
    """A release shipping hermes main's plugins_dispatch (pre_tool_call fail-closed)."""
    from failsecure.adapters.hermes import HermesAdapter

    dispatch = types.ModuleType("hermes_cli.plugins_dispatch")
    dispatch._HOOK_TIMEOUT_FAIL_CLOSED_HOOKS = {"pre_tool_call", "pre_tts_synthesis"}
    monkeypatch.setitem(sys.modules, "hermes_cli.plugins_dispatch", dispatch)
    fresh = HermesAdapter()
    assert fresh.upstream_fail_closed()
    assert fresh.patch() == "native"
    assert fresh._replaced == []


def test_native_twin_dispatch_without_pre_tool_call_is_wrapped(monkeypatch):
    from failsecure.adapters.hermes import HermesAdapter

    dispatch = types.ModuleType("hermes_cli.plugins_dispatch")
    dispatch._HOOK_TIMEOUT_FAIL_CLOSED_HOOKS = {"pre_tts_synthesis"}
    monkeypatch.setitem(sys.modules, "hermes_cli.plugins_dispatch", dispatch)
    assert not HermesAdapter().upstream_fail_closed()


def test_released_versions_are_not_native(adapter):
    assert adapter.upstream_fail_closed() is False
    assert adapter.status()["fail_closed_upstream"] is False


def test_self_test_injects_into_the_real_dispatcher(adapter, rig):
    checks = adapter.self_test()
    assert [c.name for c in checks] == ["raising gate", "hanging gate", "junk gate", "allowing gate"]
    assert all(c.ok for c in checks), checks
    assert checks[0].detail == H.fail_closed("hermes-agent:self-test.raising", "raised")
    assert checks[1].detail == H.fail_closed("hermes-agent:self-test.hanging", "timeout")
    assert checks[2].detail == H.fail_closed("hermes-agent:self-test.junk", "invalid")
