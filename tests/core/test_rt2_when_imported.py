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


def test_a_thread_waiting_on_the_import_gets_the_module_after_the_callback(tmp_path, monkeypatch):
    """Thread A imports the module (which asks for itself, then takes a while); thread B
    imports it meanwhile and waits on its import lock: B must get the module only once
    the callback ran (never the unpatched module), and neither import hangs."""
    import threading

    (tmp_path / "fs_rt2_slow.py").write_text(
        "import sys, time\n"
        "from failsecure import _bootstrap\n"
        "box = sys.modules['fs_rt2_seen']\n"
        "_bootstrap.when_imported('fs_rt2_slow', lambda m: (time.sleep(0.2), box['ran'].append(m.LATER)))\n"
        "box['started'].set()\n"
        "time.sleep(0.3)\n"
        "LATER = 5\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    box = {"ran": [], "started": threading.Event(), "b_saw": None}
    monkeypatch.setitem(sys.modules, "fs_rt2_seen", box)

    def a():
        import fs_rt2_slow  # noqa: F401

    def b():
        box["started"].wait(5)
        import fs_rt2_slow

        box["b_saw"] = list(box["ran"]), fs_rt2_slow.LATER

    try:
        threads = [threading.Thread(target=a), threading.Thread(target=b)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert not any(thread.is_alive() for thread in threads), "an import hung"
        assert box["b_saw"] == ([5], 5)
        assert box["ran"] == [5]
    finally:
        _cleanup("fs_rt2_slow")


def test_a_module_that_replaces_its_spec_runs_the_callback(tmp_path, monkeypatch):
    """The module sets another ``__spec__`` while executing: the import still ends on the
    spec it began with, and the callback must run on the module."""
    (tmp_path / "fs_rt2_respec.py").write_text(
        "import sys, importlib.machinery\n"
        "from failsecure import _bootstrap\n"
        "box = sys.modules['fs_rt2_seen']\n"
        "_bootstrap.when_imported('fs_rt2_respec', lambda m: box['ran'].append(m.LATER))\n"
        "__spec__ = importlib.machinery.ModuleSpec(__name__, None)\n"
        "LATER = 6\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    box = {"ran": []}
    monkeypatch.setitem(sys.modules, "fs_rt2_seen", box)
    try:
        import fs_rt2_respec  # noqa: F401

        assert box["ran"] == [6]
    finally:
        _cleanup("fs_rt2_respec")
