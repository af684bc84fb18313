"""Activation, unpatch, refusal and doctor's self-test for the Strands adapter."""

import os
import subprocess
import sys
import textwrap

from failsecure_strands_rig import provider


def test_patched_on_the_trigger_module(adapter):
    from strands.hooks.registry import HookRegistry

    assert adapter.state == "patched"
    assert type(HookRegistry.__dict__["invoke_callbacks_async"]).__name__ == "FunctionWrapper"


def test_unpatch_restores_upstream_exactly(adapter):
    from strands.hooks.registry import HookRegistry

    adapter.unpatch()
    try:
        for attr in ("invoke_callbacks_async", "invoke_callbacks"):
            original = HookRegistry.__dict__[attr]
            assert type(original).__name__ == "function" and original.__module__ == "strands.hooks.registry"
    finally:
        assert adapter.patch() == "patched"


def test_self_test_passes(adapter):
    checks = adapter.self_test()
    assert [c.ok for c in checks] == [True] * 4, checks
    assert [c.name for c in checks] == ["raising gate", "hanging gate", "junk gate", "allowing gate"]


def test_refused_adapter_cancels_every_tool_call(rig, adapter):
    def allow(event):
        event.cancel_tool = False

    adapter.unpatch()
    adapter.refuse("test: targets not found")
    try:
        result = rig.agent(hooks=[provider(allow)])("go")
        assert not rig.marker.ran
        assert "strands:failsecure" in str(result) and "missing" in str(result)
        assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "missing")
    finally:
        adapter.unpatch()
        assert adapter.patch() == "patched"
    rig.agent(hooks=[provider(allow)])("go")  # the allow twin, patched again
    assert rig.marker.ran


def test_drop_in_activates_on_import(tmp_path):
    """A fresh interpreter with FAILSECURE_AUTO=1: importing strands patches it (through the
    .pth bootstrap of the installed wheel, or ``failsecure.install()`` in a source checkout)."""
    code = textwrap.dedent(
        """
        import failsecure, sys
        from failsecure import activation
        if "failsecure._bootstrap" not in sys.modules:
            failsecure.install()
        import strands
        print(activation.get("strands").state)
        """
    )
    env = dict(os.environ, FAILSECURE_AUTO="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "patched", out.stderr
