"""Activation, exact unpatch, the refused adapter's lockdown, and doctor's self-test."""

import inspect
import subprocess
import sys

import pytest

import failsecure
from failsecure.adapters import BUILTIN
from failsecure.adapters.openai_agents import OpenAIAgentsAdapter

TARGETS = (
    ("agents.run_internal.tool_execution", "_execute_tool_input_guardrails"),
    ("agents.run_internal.tool_execution", "function_needs_approval"),
    ("agents.run_internal.turn_resolution", "function_needs_approval"),
    ("agents.util._approvals", "evaluate_needs_approval_setting"),
    ("agents.run_internal.turn_resolution", "evaluate_needs_approval_setting"),
    ("agents.run_internal.tool_actions", "evaluate_needs_approval_setting"),
)


def _current():
    return {(m, a): vars(sys.modules[m])[a] for m, a in TARGETS}


def test_trigger_module_is_the_dispatcher():
    trigger, target, distribution = BUILTIN["openai-agents"]
    assert distribution == "openai-agents"
    assert trigger == "agents.run_internal.tool_execution" == OpenAIAgentsAdapter.modules[0]
    assert target == "failsecure.adapters.openai_agents:OpenAIAgentsAdapter"


def test_every_binding_is_wrapped_and_unpatch_restores_exactly(adapter):
    import wrapt

    patched = _current()
    assert all(isinstance(fn, wrapt.FunctionWrapper) for fn in patched.values())
    originals = {key: fn.__wrapped__ for key, fn in patched.items()}
    adapter.unpatch()
    try:
        restored = _current()
        assert restored == originals
        assert all(inspect.iscoroutinefunction(fn) for fn in restored.values())
        assert not any(isinstance(fn, wrapt.FunctionWrapper) for fn in restored.values())
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"


def test_fresh_interpreter_patches_on_import_and_uninstalls():
    code = (
        "import failsecure; failsecure.install()\n"
        "import agents\n"
        "from failsecure import activation\n"
        "a = activation.get('openai-agents'); print(a.state)\n"
        "from agents.run_internal import tool_execution as te\n"
        "failsecure.uninstall(); print(type(te._execute_tool_input_guardrails).__name__, a.state)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "OPENAI_AGENTS_DISABLE_TRACING": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["patched", "function", "unpatched"]


@pytest.fixture
def refused(adapter):
    """A fresh adapter refused because a patch target is not a coroutine function."""
    from agents.run_internal import tool_execution

    adapter.unpatch()
    original = tool_execution.function_needs_approval
    tool_execution.function_needs_approval = lambda *a: True
    try:
        fresh = OpenAIAgentsAdapter()
        assert fresh.patch() == "refused"
    finally:
        tool_execution.function_needs_approval = original
    yield fresh
    fresh.unpatch()
    failsecure.install()
    assert adapter.patch() == "patched"


def test_refused_adapter_denies(rig, refused):
    assert "function_needs_approval" in refused.refused_reason
    result = rig.run()
    assert [i.tool_name for i in result.interruptions] == ["run_command"]  # every approval is asked
    state = result.to_state()
    state.approve(result.interruptions[0])
    rig.resume(state)
    assert rig.tool.runs() == []  # and the guardrail loop rejects
    assert rig.told() == "failsecure: hook 'openai-agents:failsecure' is missing"
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "missing")


def test_refused_unpatch_lifts_the_lockdown(rig, refused):
    refused.unpatch()
    result = rig.run()
    assert result.interruptions == [] and rig.tool.runs() == [{"command": "harmless"}]


def test_doctor_self_test(adapter):
    checks = adapter.self_test()
    assert [c.name for c in checks] == ["raising gate", "hanging gate", "junk gate", "allowing gate"]
    assert all(c.ok for c in checks), checks
    assert "(timeout)" in checks[1].detail
