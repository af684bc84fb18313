"""Required guards: a guard listed in ``required`` that failed to import, is not enabled,
or was switched off by safe mode makes every gated call deny, naming the guard."""

from __future__ import annotations

import pytest

import failsecure_hermes_rig as H


def _require(rig, *hook_ids):
    rig.failsecure("required = [%s]\n" % ", ".join(f'"{h}"' for h in hook_ids))


def _missing(hook_id):
    return f"failsecure: hook '{hook_id}' is missing"


def test_required_guard_that_failed_to_import_denies(rig):
    hook = rig.plugin("guard", "return None", module_prefix="import failsecure_no_such_module_xyz")
    _require(rig, hook)
    rig.load()
    out = rig.call()
    assert not out["ran"]
    assert out["result"] == {"error": _missing(hook)}
    event = rig.last()
    assert (event["hook"], event["outcome"], event["failure"]) == (hook, "deny", "missing")


def test_required_guard_not_enabled_denies(rig):
    hook = rig.plugin("guard", "return None", enable=False)
    _require(rig, hook)
    rig.load()
    out = rig.call()
    assert not out["ran"] and out["result"] == {"error": _missing(hook)}


def test_required_guard_that_registers_nothing_denies(rig):
    hook = rig.plugin("guard", None)
    _require(rig, hook)
    rig.load()
    assert rig.call()["result"] == {"error": _missing(hook)}


def test_required_guard_present_runs(rig):
    """Allow twin: the same required guard, loaded, with no opinion."""
    hook = rig.plugin("guard", "return None")
    _require(rig, hook)
    rig.load()
    out = rig.call()
    assert out["ran"]
    assert rig.last()["outcome"] == "abstain"


def test_required_shell_hook_missing_denies_and_present_runs(rig):
    command = rig.script("exit 0")
    from failsecure.hookid import command_name

    hook = f"hermes-agent:shell:{command_name(command)}"
    _require(rig, hook)
    rig.load()
    assert rig.call()["result"] == {"error": _missing(hook)}
    rig.shell_hook(command)
    rig.load()
    assert rig.call()["ran"]


def test_required_of_another_framework_is_not_enforced_here(rig):
    rig.failsecure('required = ["code-puppy:some_guard"]\n')
    rig.load()
    assert rig.call()["ran"]


def test_safe_mode_switches_off_a_required_guard(rig, monkeypatch):
    if not H.has_safe_mode():
        pytest.skip("this hermes-agent release has no safe mode")
    hook = rig.plugin("guard", "return None")
    _require(rig, hook)
    monkeypatch.setenv("HERMES_SAFE_MODE", "1")
    rig.load()
    out = rig.call()
    assert not out["ran"] and out["result"] == {"error": _missing(hook)}
    monkeypatch.delenv("HERMES_SAFE_MODE")
    rig.load()
    assert rig.call()["ran"]


def test_safe_mode_without_required_runs_unguarded(rig, monkeypatch):
    """Documented: without ``required`` failsecure cannot know a guard was meant to run."""
    if not H.has_safe_mode():
        pytest.skip("this hermes-agent release has no safe mode")
    rig.plugin("guard", "raise RuntimeError('x')")
    monkeypatch.setenv("HERMES_SAFE_MODE", "1")
    rig.load()
    assert rig.call()["ran"]
