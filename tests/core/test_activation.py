import importlib
import json
import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from failsecure import _bootstrap, activation
from failsecure.adapter import Adapter
from failsecure.verdict import ABSTAIN

PTH = os.path.join(sysconfig.get_paths()["purelib"], "failsecure-auto.pth")


class ToyAdapter(Adapter):
    name = "toy-fw"
    distribution = "failsecure-toy"
    modules = ("fs_toy_fw",)
    calls = []

    def _patch(self):
        import fs_toy_fw

        ToyAdapter.calls.append(("patch", fs_toy_fw.READY))

    def _unpatch(self):
        ToyAdapter.calls.append(("unpatch", None))

    def to_verdict(self, native):
        return ABSTAIN

    def _probe(self, gate):
        return False


@pytest.fixture
def toy_framework(tmp_path, monkeypatch):
    (tmp_path / "fs_toy_fw.py").write_text("READY = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(activation._extra, "toy-fw", ToyAdapter)
    ToyAdapter.calls.clear()
    yield
    sys.modules.pop("fs_toy_fw", None)
    activation._adapters.pop("toy-fw", None)
    activation.uninstall()


def test_post_import_hook_patches_after_the_module_executed(toy_framework):
    _bootstrap.enable({"fs_toy_fw": "toy-fw"})
    assert ToyAdapter.calls == []
    import fs_toy_fw  # noqa: F401

    assert ToyAdapter.calls == [("patch", True)]
    assert fs_toy_fw.__loader__.__class__.__name__ != "_Loader"  # the real loader is restored
    assert activation.get("toy-fw").state == "patched"


def test_install_patches_already_imported_and_is_idempotent(toy_framework):
    import fs_toy_fw  # noqa: F401

    _bootstrap.enable({"fs_toy_fw": "toy-fw"})
    states = activation.install()
    activation.install()
    assert states["toy-fw"] == "patched" and ToyAdapter.calls == [("patch", True)]
    activation.uninstall()
    assert ToyAdapter.calls[-1] == ("unpatch", None)


def test_a_failing_activation_never_breaks_the_import(toy_framework, capsys, monkeypatch):
    def broken(name):
        raise RuntimeError("adapter bug")

    monkeypatch.setattr(activation, "activate", broken)
    _bootstrap.enable({"fs_toy_fw": "toy-fw"})
    import fs_toy_fw  # noqa: F401

    assert "could not activate toy-fw (RuntimeError)" in capsys.readouterr().err


def _python(code, **env):
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=60
    )


needs_pth = pytest.mark.skipif(
    not os.path.exists(PTH) and not os.environ.get("CI"), reason="drop-in .pth ships only in a built wheel"
)


@needs_pth
def test_wheel_ships_the_pth_bootstrap():
    assert os.path.exists(PTH), "the installed wheel must ship failsecure-auto.pth"


@needs_pth
def test_drop_in_installs_the_finder_at_start_and_stays_light():
    code = "import sys, failsecure._bootstrap as b; print(json.dumps([b.finder is not None and b.finder in sys.meta_path, sorted(m for m in ('pydantic','wrapt','pluggy','failsecure.guard') if m in sys.modules)]))"
    out = _python("import json; " + code, FAILSECURE_AUTO="1")
    assert json.loads(out.stdout) == [True, []], out.stderr
    assert out.stderr == ""


@needs_pth
def test_drop_in_off_says_so_on_stderr():
    out = _python("import sys, failsecure._bootstrap as b; print(b.finder is None)", FAILSECURE_AUTO="0")
    assert out.stdout.strip() == "True"
    assert "drop-in activation is off (FAILSECURE_AUTO=0)" in out.stderr


@needs_pth
def test_drop_in_patches_on_import_in_a_fresh_interpreter(tmp_path):
    # A framework whose patch target is not where the adapter expects: the drop-in path
    # activates the real built-in adapter on import, which must refuse loudly and deny.
    pkg = tmp_path / "code_puppy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "callbacks.py").write_text("# no dispatcher here\n")
    code = textwrap.dedent(
        """
        import code_puppy.callbacks
        from failsecure import activation
        a = activation.get("code-puppy")
        print(a.state)
        """
    )
    out = _python(code, FAILSECURE_AUTO="1", PYTHONPATH=str(tmp_path))
    assert out.stdout.strip() == "refused", out.stderr
    assert "cannot patch code-puppy" in out.stderr


# ---------------------------------------------------------------- activation holes


class WrappingToy(Adapter):
    """Wraps fs_toy_wrap.dispatch so a lost wrapper is observable."""

    name = "toy-wrap"
    distribution = "failsecure-toy"
    modules = ("fs_toy_wrap",)

    def _patch(self):
        import fs_toy_wrap

        self.wrap(fs_toy_wrap, "dispatch", lambda wrapped, instance, args, kwargs: "gated")

    def to_verdict(self, native):
        return ABSTAIN

    def _probe(self, gate):
        return False


@pytest.fixture
def wrap_framework(tmp_path, monkeypatch):
    (tmp_path / "fs_toy_wrap.py").write_text("def dispatch():\n    return 'ran'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(activation._extra, "toy-wrap", WrappingToy)
    yield
    activation.uninstall()
    sys.modules.pop("fs_toy_wrap", None)
    activation._adapters.pop("toy-wrap", None)


def test_reload_of_a_patched_module_patches_it_again(wrap_framework, capsys):
    import importlib

    _bootstrap.enable({"fs_toy_wrap": "toy-wrap"})
    import fs_toy_wrap

    assert fs_toy_wrap.dispatch() == "gated"
    importlib.reload(fs_toy_wrap)  # re-executes the module: fresh, unwrapped functions
    assert fs_toy_wrap.dispatch() == "gated"
    assert activation.get("toy-wrap").intact()
    assert "patch was lost" in capsys.readouterr().err
    activation.uninstall()
    assert fs_toy_wrap.dispatch() == "ran"  # the allow twin: upstream restored


def test_lost_patch_is_noticed_and_applied_again(wrap_framework):
    _bootstrap.enable({"fs_toy_wrap": "toy-wrap"})
    import fs_toy_wrap

    adapter = activation.get("toy-wrap")
    assert adapter.intact()
    fs_toy_wrap.dispatch = lambda: "ran"  # someone put the original back
    assert not adapter.intact()
    assert adapter.patch() == "patched" and fs_toy_wrap.dispatch() == "gated"


def test_drop_in_patches_a_framework_imported_before_it(wrap_framework, monkeypatch):
    import fs_toy_wrap

    from failsecure import adapters

    monkeypatch.setitem(adapters.BUILTIN, "toy-wrap", ("fs_toy_wrap", "x:y", "failsecure-toy"))
    monkeypatch.setattr(_bootstrap, "_started", False)
    assert fs_toy_wrap.dispatch() == "ran"
    _bootstrap.run()
    assert fs_toy_wrap.dispatch() == "gated"


def test_an_adapter_that_cannot_load_refuses_its_framework(tmp_path, monkeypatch, capsys):
    from failsecure import adapters

    (tmp_path / "fs_toy_broken.py").write_text("READY = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(adapters.BUILTIN, "toy-broken", ("fs_toy_broken", "failsecure.adapters.no_such_adapter:X", "failsecure-toy"))
    try:
        _bootstrap.enable()
        with pytest.raises(ImportError, match="cannot load"):
            import fs_toy_broken  # noqa: F401
        assert "fs_toy_broken" not in sys.modules
        adapter = activation.get("toy-broken")
        assert adapter.state == "refused" and "ModuleNotFoundError" in adapter.refused_reason
        assert adapter.decide("tool", []).denied
        assert "toy-broken is refused" in capsys.readouterr().err
    finally:
        activation.uninstall()
        activation._adapters.pop("toy-broken", None)
        sys.modules.pop("fs_toy_broken", None)
    import fs_toy_broken  # noqa: F401,F811  (the twin: without the watch, the import works)


def test_pth_line_says_when_the_drop_in_cannot_start():
    here = os.path.dirname(os.path.abspath(__file__))
    line = open(os.path.join(here, "..", "..", "failsecure-auto.pth")).read()
    code = "import sys; sys.modules['failsecure._bootstrap'] = None\n" + line
    out = _python(code, FAILSECURE_AUTO="1")
    assert out.returncode == 0 and "the drop-in could not start (ModuleNotFoundError)" in out.stderr
    ok = _python(line, FAILSECURE_AUTO="1")
    assert ok.returncode == 0 and "could not start" not in ok.stderr


def test_when_imported_runs_now_or_after_the_import(tmp_path, monkeypatch):
    (tmp_path / "fs_toy_later.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    try:
        _bootstrap.when_imported("fs_toy_later", lambda module: seen.append(module.VALUE))
        assert seen == []
        import fs_toy_later  # noqa: F401

        assert seen == [42]
        _bootstrap.when_imported("fs_toy_later", lambda module: seen.append(-module.VALUE))
        assert seen == [42, -42]  # already imported: at once
    finally:
        sys.modules.pop("fs_toy_later", None)
        if _bootstrap.finder is not None:
            _bootstrap.finder.callbacks.pop("fs_toy_later", None)


def test_when_imported_waits_for_a_module_still_executing(tmp_path, monkeypatch):
    """A module whose own import asks for it (its import imported a trigger, whose
    adapter asks for this module while it is still executing): the callback runs once
    its code has run to the end, seeing what it defines below that point; its spec is
    handed back as it was. A failed import runs no callback."""
    (tmp_path / "fs_toy_executing.py").write_text(
        "import sys\n"
        "from failsecure import _bootstrap\n"
        "seen = sys.modules['fs_toy_seen']\n"
        "_bootstrap.when_imported('fs_toy_executing', lambda m: seen.append(getattr(m, 'LATER', None)))\n"
        "seen.append('asked')\n"
        "LATER = 7\n"
    )
    (tmp_path / "fs_toy_failing.py").write_text(
        "import sys\n"
        "from failsecure import _bootstrap\n"
        "seen = sys.modules['fs_toy_seen']\n"
        "_bootstrap.when_imported('fs_toy_failing', lambda m: seen.append('ran'))\n"
        "raise RuntimeError('boom')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list = []
    monkeypatch.setitem(sys.modules, "fs_toy_seen", seen)
    try:
        import fs_toy_executing

        assert seen == ["asked", 7]  # after the module's last line, not at the ask
        assert type(fs_toy_executing.__spec__) is type(sys.modules["os"].__spec__)
        with pytest.raises(RuntimeError):
            import fs_toy_failing  # noqa: F401
        assert seen == ["asked", 7]
    finally:
        sys.modules.pop("fs_toy_executing", None)
        sys.modules.pop("fs_toy_failing", None)


# ---------------------------------------------------------------- a fresh import is patched too


class FreshToy(Adapter):
    """Patches a function and a class method of its trigger module, and a function of a
    second module; each wrapper marks the answer, so a double wrap shows."""

    name = "toy-fresh"
    distribution = "failsecure-toy"
    modules = ("fs_toy_fresh", "fs_toy_fresh_tools")

    def _patch(self):
        framework, tools = sys.modules["fs_toy_fresh"], importlib.import_module("fs_toy_fresh_tools")

        def gated(wrapped, instance, args, kwargs):
            return ("gated", wrapped(*args, **kwargs))

        self.wrap(framework, "dispatch", gated)
        self.wrap(framework.Runner, "run", gated)
        self.wrap(tools, "call_tool", gated)

    def to_verdict(self, native):
        return ABSTAIN

    def _probe(self, gate):
        return False


GATED = ("gated", "ran")


@pytest.fixture
def fresh_framework(tmp_path, monkeypatch):
    (tmp_path / "fs_toy_fresh.py").write_text(
        "import fs_toy_fresh_tools\n"
        "def dispatch():\n    return 'ran'\n"
        "class Runner:\n    def run(self):\n        return 'ran'\n"
    )
    (tmp_path / "fs_toy_fresh_tools.py").write_text("def call_tool():\n    return 'ran'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(activation._extra, "toy-fresh", FreshToy)
    _bootstrap.enable({"fs_toy_fresh": "toy-fresh"})
    yield
    activation.uninstall()
    for name in FreshToy.modules:
        sys.modules.pop(name, None)
        _bootstrap.finder.watch.pop(name, None)
        getattr(_bootstrap.finder, "patched", {}).pop(name, None)
    activation._adapters.pop("toy-fresh", None)


def _answers(framework, tools):
    return framework.dispatch(), framework.Runner().run(), tools.call_tool()


def test_a_fresh_import_of_a_patched_module_is_patched_too(fresh_framework, capsys):
    import fs_toy_fresh
    import fs_toy_fresh_tools

    old = fs_toy_fresh
    assert _answers(old, fs_toy_fresh_tools) == (GATED,) * 3
    del sys.modules["fs_toy_fresh"]
    fresh = importlib.import_module("fs_toy_fresh")  # a new module object: new, unwrapped functions
    assert fresh is not old
    assert _answers(fresh, fs_toy_fresh_tools) == (GATED,) * 3
    assert old.dispatch() == GATED and old.Runner().run() == GATED  # code holding the old module keeps its gates
    assert activation.get("toy-fresh").intact() and "patch was lost" in capsys.readouterr().err
    activation.uninstall()  # the allow twin: upstream restored everywhere
    assert _answers(fresh, fs_toy_fresh_tools) == ("ran",) * 3
    assert old.dispatch() == "ran" and old.Runner().run() == "ran"


def test_a_fresh_import_of_every_module_patches_each_once(fresh_framework):
    import fs_toy_fresh  # noqa: F401

    for name in FreshToy.modules:
        del sys.modules[name]
    fresh = importlib.import_module("fs_toy_fresh")  # imports a fresh fs_toy_fresh_tools first
    tools = sys.modules["fs_toy_fresh_tools"]
    assert _answers(fresh, tools) == (GATED,) * 3
    assert activation.get("toy-fresh").intact()


def test_a_fresh_import_of_another_patched_module_is_patched(fresh_framework):
    import fs_toy_fresh
    import fs_toy_fresh_tools

    old = fs_toy_fresh_tools
    del sys.modules["fs_toy_fresh_tools"]
    fresh = importlib.import_module("fs_toy_fresh_tools")  # not the trigger: watched once the adapter is active
    assert fresh is not old and fresh.call_tool() == GATED and old.call_tool() == GATED
    assert _answers(fs_toy_fresh, fresh) == (GATED,) * 3
    activation.uninstall()
    assert fresh.call_tool() == "ran" and old.call_tool() == "ran"


def test_a_reload_that_defines_a_patched_class_again_patches_the_new_class(fresh_framework):
    import fs_toy_fresh

    old_runner = fs_toy_fresh.Runner
    importlib.reload(fs_toy_fresh)
    assert fs_toy_fresh.Runner is not old_runner
    assert fs_toy_fresh.Runner().run() == GATED and old_runner().run() == GATED
    assert fs_toy_fresh.dispatch() == GATED and activation.get("toy-fresh").intact()


def test_an_untouched_patched_framework_stays_intact_and_is_patched_once(fresh_framework, capsys):
    """The twin: nothing imported afresh, nothing lost, no second patch."""
    import fs_toy_fresh
    import fs_toy_fresh_tools

    adapter = activation.get("toy-fresh")
    assert adapter.intact() and adapter.patch() == "patched" and activation.activate("toy-fresh") == "patched"
    assert _answers(fs_toy_fresh, fs_toy_fresh_tools) == (GATED,) * 3
    assert "patch was lost" not in capsys.readouterr().err
