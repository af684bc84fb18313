"""Red-team of ``when_imported`` deferring a module still executing: the callback must
not be lost when that import does not end with the module it asked for in place."""

import sys

from failsecure import _bootstrap


def _cleanup(*names):
    for name in names:
        sys.modules.pop(name, None)
        if _bootstrap.finder is not None:
            _bootstrap.finder.callbacks.pop(name, None)


def test_a_failed_import_retried_runs_the_deferred_callback(tmp_path, monkeypatch):
    """The module asked for itself while executing (its import imported a trigger) and
    then failed (a transient circular-import error, caught by the caller): the import
    tried again must still run the callback (it patches the framework), else the adapter
    stays 'patched' while the module's dispatcher runs unpatched."""
    (tmp_path / "fs_rt2_flaky.py").write_text(
        "import sys\n"
        "from failsecure import _bootstrap\n"
        "box = sys.modules['fs_rt2_seen']\n"
        "if not box['asked']:\n"
        "    box['asked'] = True\n"
        "    _bootstrap.when_imported('fs_rt2_flaky', lambda m: box['ran'].append(m.LATER))\n"
        "    raise ImportError('partially initialized')\n"
        "LATER = 7\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    box = {"asked": False, "ran": []}
    monkeypatch.setitem(sys.modules, "fs_rt2_seen", box)
    try:
        try:
            import fs_rt2_flaky  # noqa: F401
        except ImportError:
            pass
        assert box["ran"] == []  # the failed import ran nothing
        import fs_rt2_flaky  # noqa: F401,F811

        assert box["ran"] == [7]
    finally:
        _cleanup("fs_rt2_flaky")


def test_the_twin_a_module_imported_once_runs_it_once(tmp_path, monkeypatch):
    (tmp_path / "fs_rt2_once.py").write_text(
        "import sys\n"
        "from failsecure import _bootstrap\n"
        "box = sys.modules['fs_rt2_seen']\n"
        "_bootstrap.when_imported('fs_rt2_once', lambda m: box['ran'].append(m.LATER))\n"
        "LATER = 8\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    box = {"ran": []}
    monkeypatch.setitem(sys.modules, "fs_rt2_seen", box)
    try:
        import fs_rt2_once  # noqa: F401

        assert box["ran"] == [8]
        sys.modules.pop("fs_rt2_once")
        import fs_rt2_once  # noqa: F401,F811  (a fresh import asks again itself)

        assert box["ran"] == [8, 8]
    finally:
        _cleanup("fs_rt2_once")


def test_a_module_that_replaces_itself_in_sys_modules_runs_the_callback(tmp_path, monkeypatch):
    """A module that puts another object in its place in ``sys.modules`` (a lazy or
    proxy module, a common pattern): the import gives that object, and the callback
    (the finder's ``fire`` gives it the same) must still run, on it."""
    (tmp_path / "fs_rt2_proxy.py").write_text(
        "import sys, types\n"
        "from failsecure import _bootstrap\n"
        "box = sys.modules['fs_rt2_seen']\n"
        "_bootstrap.when_imported('fs_rt2_proxy', lambda m: box['ran'].append(getattr(m, 'LATER', None)))\n"
        "proxy = types.SimpleNamespace(LATER=9)\n"
        "sys.modules[__name__] = proxy\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    box = {"ran": []}
    monkeypatch.setitem(sys.modules, "fs_rt2_seen", box)
    try:
        import fs_rt2_proxy

        assert fs_rt2_proxy.LATER == 9
        assert box["ran"] == [9]
    finally:
        _cleanup("fs_rt2_proxy")
