"""Activation, unpatch, refusal (lockdown), required hooks, config errors, plugin gates,
after-tool-call observers and the self-test, through the real crewai."""

from __future__ import annotations

import importlib

import failsecure
import pytest
from crewai.hooks import register_after_tool_call_hook, register_before_tool_call_hook

from failsecure import activation, plugins
from failsecure.adapters.crewai import CrewAIAdapter

tool_hooks = importlib.import_module("crewai.hooks.tool_hooks")
dispatch = importlib.import_module("crewai.hooks.dispatch")


def raising(context):
    raise RuntimeError("x")


def test_activated_by_install(adapter):
    assert activation.get("crewai") is adapter
    assert adapter.state == "patched" and adapter.in_range()
    assert type(vars(tool_hooks)["dispatch"]).__name__ == "FunctionWrapper"


def test_upstream_fails_open_when_uninstalled(rig, adapter):
    register_before_tool_call_hook(raising)
    original = vars(tool_hooks)["dispatch"].__wrapped__
    failsecure.uninstall()
    try:
        assert vars(tool_hooks)["dispatch"] is original  # upstream exactly
        assert vars(tool_hooks)["dispatch"] is dispatch.dispatch
        run = rig.run()
    finally:
        failsecure.install()
    assert run.ran  # upstream swallowed the exception and ran the tool
    assert adapter.state == "patched"
    denied = rig.run()  # and patched again: denied
    assert not denied.ran and rig.last()["failure"] == "raised"


def test_unpatch_restores_upstream(adapter):
    wrapped = vars(tool_hooks)["dispatch"]
    adapter.unpatch()
    try:
        assert vars(tool_hooks)["dispatch"] is wrapped.__wrapped__
        assert adapter.state == "unpatched"
    finally:
        adapter.patch()
    assert adapter.state == "patched"


def test_a_missing_patch_target_refuses_and_denies(rig, adapter, capsys):
    """A release whose ``run_before_tool_call_hooks`` loops over the hooks itself (as
    before 1.15.3) does not go through ``tool_hooks.dispatch``: the adapter refuses, and
    its lockdown makes the gated calls deny."""
    tool_utils = importlib.import_module("crewai.utilities.tool_utils")

    def run_before_tool_call_hooks(context):  # the shape of a release without the dispatcher
        for hook in tool_hooks.get_before_tool_call_hooks():
            try:
                if hook(context) is False:
                    return True
            except Exception:
                pass
        return False

    register_before_tool_call_hook(lambda context: None)
    adapter.unpatch()
    fresh = CrewAIAdapter()
    monkeypatch = pytest.MonkeyPatch()
    try:
        monkeypatch.setattr(tool_hooks, "run_before_tool_call_hooks", run_before_tool_call_hooks)
        monkeypatch.setattr(tool_utils, "run_before_tool_call_hooks", run_before_tool_call_hooks)
        assert fresh.patch() == "refused"
        assert "run_before_tool_call_hooks" in fresh.refused_reason
        assert "cannot patch crewai" in capsys.readouterr().err
        assert tool_hooks.get_before_tool_call_hooks()[0].__name__ == "failsecure_refused"
        assert tool_hooks.run_before_tool_call_hooks is not run_before_tool_call_hooks
        for native in (False, True):
            run = rig.run(native=native)
            assert not run.ran
            event = rig.last()
            assert event["outcome"] == "deny" and event["failure"] == "missing" and event["hook"] == "crewai:failsecure"
        # the registry's own deny comes first: a release that loops itself blocks too
        assert run_before_tool_call_hooks(tool_hooks.ToolCallHookContext("marker_tool", {}, None)) is True
    finally:
        fresh.unpatch()
        monkeypatch.undo()
        adapter.patch()
    assert adapter.state == "patched"
    assert not any(getattr(h, "__name__", "") == "failsecure_refused" for h in tool_hooks.get_before_tool_call_hooks())
    assert tool_hooks.run_before_tool_call_hooks.__module__ == "crewai.hooks.tool_hooks"
    assert tool_utils.run_before_tool_call_hooks is tool_hooks.run_before_tool_call_hooks
    assert rig.run().ran  # lockdown lifted


def test_a_required_hook_that_is_missing_denies(rig):
    rig.config(top='required = ["crewai:nowhere.gate"]')
    register_before_tool_call_hook(lambda context: None)
    run = rig.run()
    assert not run.ran
    event = rig.last()
    assert event["failure"] == "missing" and event["hook"] == "crewai:nowhere.gate"
    assert "failsecure: hook 'crewai:nowhere.gate' is missing" in run.told


def required_gate(context):
    return None


def test_a_required_hook_that_is_present_allows(rig):
    rig.config(top=f'required = ["{rig.hook_id(required_gate)}"]')
    register_before_tool_call_hook(required_gate)
    assert rig.run().ran


def test_a_required_hook_with_no_hooks_at_all_denies(rig):
    rig.config(top='required = ["crewai:nowhere.gate"]')
    assert not rig.run().ran


def test_a_bad_config_denies(rig, monkeypatch):
    path = rig.dir / "bad.toml"
    path.write_text('on_error = "maybe"\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(path))
    from failsecure import policy

    assert policy.reload().error
    run = rig.run()
    assert not run.ran
    assert "failsecure:config" in run.told


class RaisingPlugin:
    @plugins.hookimpl
    def failsecure_pre_tool_call(self, call):
        raise RuntimeError("x")


class AllowingPlugin:
    @plugins.hookimpl
    def failsecure_pre_tool_call(self, call):
        assert call.framework == "crewai" and call.tool == "marker_tool"
        assert call.arguments == {"command": "harmless"}
        return None


@pytest.mark.parametrize("plugin,denied", [(RaisingPlugin(), True), (AllowingPlugin(), False)])
def test_the_cross_framework_gate_is_consulted(rig, plugin, denied):
    plugins.register(plugin, name="crewai-test")
    try:
        run = rig.run()
    finally:
        plugins.unregister(plugin)
    assert run.ran is not denied
    if denied:
        assert rig.last()["hook"] == "plugin:crewai-test" and rig.last()["failure"] == "raised"


def test_after_hooks_are_observers_untouched(rig):
    seen = []

    def observer(context):
        seen.append(context.tool_result)
        return "rewritten by the after hook"

    register_after_tool_call_hook(observer)
    run = rig.run()
    assert run.ran and seen and seen[0].startswith("ran ")
    assert "rewritten by the after hook" in run.told


def test_an_after_hook_sees_crewai_block_text_on_a_deny(rig):
    seen = []
    register_before_tool_call_hook(raising)
    register_after_tool_call_hook(lambda context: seen.append(context.tool_result))
    run = rig.run()
    assert not run.ran
    assert seen == ["Tool execution blocked by hook. Tool: marker_tool"]  # what upstream shows it
    assert "failed closed (raised)" in run.told  # the model is told why


def test_self_test(adapter):
    checks = adapter.self_test()
    assert [c.ok for c in checks] == [True] * 4, checks


def test_hook_ids_look_through_crewai_wrappers(adapter):
    from crewai.hooks.wrappers import BeforeToolCallHookMethod

    class MyCrew:
        def gate(self, context):
            return None

    method = BeforeToolCallHookMethod(MyCrew.gate)
    bound = method.__get__(MyCrew(), MyCrew)
    assert adapter.hook_name(bound) == f"crewai:{__name__}.test_hook_ids_look_through_crewai_wrappers.<locals>.MyCrew.gate"


def test_doctor_lists_the_registered_before_tool_call_hooks(adapter):
    from failsecure import cli, policy

    def listed_gate(context):
        return None

    hook_id = f"crewai:{__name__}.test_doctor_lists_the_registered_before_tool_call_hooks.<locals>.listed_gate"
    assert hook_id not in adapter.inventory()
    register_before_tool_call_hook(listed_gate)
    try:
        assert hook_id in adapter.inventory()
        config = policy.current()
        row = next(r for r in cli._gate_rows(adapter, config) if r["hook"] == hook_id)
        assert (row["role"], row["on_error"], row["timeout"]) == ("gate", config.on_error, config.timeout_for(hook_id))
    finally:
        tool_hooks.unregister_before_tool_call_hook(listed_gate)
    assert hook_id not in adapter.inventory()
