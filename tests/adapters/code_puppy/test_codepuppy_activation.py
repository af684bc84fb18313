"""Activation, each in a fresh interpreter: the drop-in post-import hook, the native
``code_puppy.plugins`` entry point, explicit install, all idempotent together; and a
release whose patch targets are missing, which is refused and denies."""

import glob
import os
import site
import subprocess
import sys
import sysconfig
import textwrap

import pytest

REPORT = textwrap.dedent(
    """
    import sys
    from failsecure import activation
    import code_puppy.callbacks as c
    a = activation.get("code-puppy")
    def kind(fn):
        return type(fn).__name__
    print("STATE", a.state)
    print("LAYERS", kind(c._trigger_callbacks), kind(getattr(c._trigger_callbacks, "__wrapped__", None)))
    """
)


def python(code, tmp_path, auto="1"):
    """Run code (a string, or a list of separately indented pieces) in a fresh interpreter."""
    pieces = [code] if isinstance(code, str) else code
    env = dict(os.environ, FAILSECURE_AUTO=auto)
    proc = subprocess.run(
        [sys.executable, "-c", "\n".join(textwrap.dedent(p) for p in pieces)],
        capture_output=True, text=True, timeout=240, env=env, stdin=subprocess.DEVNULL, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_drop_in_bootstrap_patches_on_import(rig, tmp_path):
    out = python(
        ["""
        import failsecure._bootstrap as b
        b.run()  # what failsecure-auto.pth runs at interpreter start
        import sys
        assert "failsecure.adapters.codepuppy" not in sys.modules
        """, REPORT],
        tmp_path,
    )
    assert "STATE patched" in out and "LAYERS FunctionWrapper function" in out


def _pth_installed() -> bool:
    dirs = set(site.getsitepackages() + [sysconfig.get_paths()["purelib"]])
    return any(glob.glob(os.path.join(d, "failsecure-auto.pth")) for d in dirs)


@pytest.mark.skipif(not _pth_installed(), reason="failsecure-auto.pth is not installed (editable install)")
def test_installed_pth_patches_with_no_code_change(rig, tmp_path):
    assert "STATE patched" in python(REPORT, tmp_path)
    assert "STATE unpatched" in python(REPORT, tmp_path, auto="0")  # the off switch (twin)


def test_native_entry_point_activates(rig, tmp_path):
    out = python(
        ["""
        import sys
        import code_puppy.callbacks as c
        assert type(c._trigger_callbacks).__name__ == "function"  # FAILSECURE_AUTO=0: nothing yet
        from code_puppy import plugins
        loaded = plugins.load_plugin_callbacks()
        print("LOADED", "failsecure" in loaded["builtin"])
        """, REPORT],
        tmp_path,
        auto="0",
    )
    assert "LOADED True" in out and "STATE patched" in out and "LAYERS FunctionWrapper function" in out


def test_all_three_together_are_idempotent_and_uninstall_restores(rig, tmp_path):
    out = python(
        ["""
        import asyncio
        import failsecure._bootstrap as b
        b.run()
        import failsecure
        failsecure.install(); failsecure.install()
        from code_puppy import plugins
        plugins.load_plugin_callbacks()
        from failsecure import activation
        activation.activate("code-puppy")
        """, REPORT, """
        async def guard(*args, **kwargs):
            raise RuntimeError
        c._callbacks["run_shell_command"][:] = [guard]
        print("PATCHED", asyncio.run(c.on_run_shell_command(None, "true", None, 60))[0]["blocked"])
        failsecure.uninstall()
        print("AFTER", a.state, type(c._trigger_callbacks).__name__, asyncio.run(c.on_run_shell_command(None, "true", None, 60)))
        """],
        tmp_path,
    )
    assert "STATE patched" in out and "LAYERS FunctionWrapper function" in out
    assert "PATCHED True" in out
    assert "AFTER unpatched function [None]" in out  # upstream's own (fail-open) loop is back


@pytest.mark.parametrize("release", ["unknown", "known"])
def test_missing_patch_target_is_refused_and_denies(rig, tmp_path, release):
    out = python(
        f"""
        import asyncio
        import code_puppy.callbacks as c
        if "{release}" == "unknown":
            del c._trigger_callbacks_sync  # a release where the loop moved
        import failsecure
        print("STATES", failsecure.install()["code-puppy"])
        print("SHELL", asyncio.run(c.on_run_shell_command(None, "true", None, 60)))
        print("FILE", c.on_file_permission(None, "/tmp/x", "write"))
        """,
        tmp_path,
        auto="0",
    )
    if release == "unknown":
        assert "STATES refused" in out
        assert "failsecure: hook 'code-puppy:failsecure' is missing" in out and "FILE [False]" in out
        event = rig.last()
        assert (event["outcome"], event["failure"], event["hook"]) == ("deny", "missing", "code-puppy:failsecure")
    else:
        assert "STATES patched" in out and "SHELL []" in out and "FILE []" in out
        assert rig.last()["outcome"] == "abstain"


def test_doctor_self_test_through_the_real_dispatcher(adapter, cb, rig):
    checks = adapter.self_test()
    assert [c.name for c in checks] == ["raising gate", "hanging gate", "junk gate", "allowing gate"]
    assert all(c.ok for c in checks), checks
    assert cb.get_callbacks("run_shell_command") == []  # the test's registry is back as it was
