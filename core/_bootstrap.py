"""Drop-in activation, run from ``failsecure-auto.pth`` at interpreter start.

It must cost almost nothing and never raise: it imports nothing beyond what the
interpreter has already loaded, and only installs a finder that watches the trigger
module of each built-in adapter. When one of those modules has finished executing, the
adapter is imported and patches its framework. (wrapt's own post-import hooks would
import all of wrapt, ~100 ms here, on every interpreter start.)
``FAILSECURE_AUTO=0`` turns it off and says so on stderr.
"""

import os
import sys

_OFF = ("0", "false", "no", "off")


class _Loader:
    """Runs the real loader, then the activation hook."""

    def __init__(self, loader, finder, name):
        self._loader, self._finder, self._name = loader, finder, name

    def __getattr__(self, attr):
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        self._finder.fire(self._name)


class Finder:
    """A meta-path finder that only ever answers for watched module names."""

    def __init__(self):
        self.watch = {}  # module name -> adapter name
        self._busy = set()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.watch or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.discard(fullname)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, self, fullname)
        return spec

    def fire(self, module_name):
        adapter = self.watch.get(module_name)
        if adapter is None:
            return
        try:
            from failsecure import activation

            activation.activate(adapter)
        except BaseException as exc:  # never break the user's import
            sys.stderr.write(f"failsecure: could not activate {adapter} ({type(exc).__name__})\n")

    def invalidate_caches(self):
        pass


finder = None


def enable(extra=None):
    """Install the finder (once) and watch every built-in adapter's trigger module."""
    global finder
    if finder is None:
        finder = Finder()
    from failsecure.adapters import BUILTIN

    for name, (trigger, _) in BUILTIN.items():
        finder.watch[trigger] = name
    for trigger, name in (extra or {}).items():
        finder.watch[trigger] = name
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)
    return finder


def disable():
    if finder is not None and finder in sys.meta_path:
        sys.meta_path.remove(finder)


def run():
    try:
        if os.environ.get("FAILSECURE_AUTO", "1").strip().lower() in _OFF:
            sys.stderr.write("failsecure: drop-in activation is off (FAILSECURE_AUTO=0)\n")
            return
        enable()
    except BaseException:
        pass
