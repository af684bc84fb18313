"""Drop-in activation, run from ``failsecure-auto.pth`` at interpreter start.

It must cost almost nothing and never raise: it imports nothing beyond what the
interpreter has already loaded, and only installs a finder that watches the trigger
module of each built-in adapter. When one of those modules has finished executing, the
adapter is imported and patches its framework. A trigger module imported before the
finder was installed (an earlier ``.pth``, ``sitecustomize``) is patched at once.
The finder stays the module's loader, so ``importlib.reload`` of a patched module
patches it again, and so does a fresh import (the module removed from ``sys.modules`` and
imported again): once an adapter is active, the other modules it patches are watched too. If the adapter of a framework cannot load at all, the framework's
import is refused: its tools must not run without their gates.
(wrapt's own post-import hooks would import all of wrapt, ~100 ms here, on every
interpreter start.) ``FAILSECURE_AUTO=0`` turns it off and says so on stderr; a drop-in
that cannot start says so on stderr too.
"""

import os
import sys

_OFF = ("0", "false", "no", "off")


class _Loader:
    """Runs the real loader, then the activation hook (on first import and on reload)."""

    def __init__(self, loader, finder, name):
        self._loader, self._finder, self._name = loader, finder, name

    def __getattr__(self, attr):
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        self._finder.fire(self._name)


class Finder:
    """A meta-path finder that only ever answers for watched module names."""

    def __init__(self):
        self.watch = {}  # trigger module name -> adapter name
        self.patched = {}  # another module an active adapter patched -> adapter name
        self.callbacks = {}  # module name -> [callable(module)], see when_imported
        self._busy = set()

    def find_spec(self, fullname, path=None, target=None):
        if (fullname not in self.watch and fullname not in self.patched and fullname not in self.callbacks) or fullname in self._busy:
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
        """Activate the adapter of a trigger module that has just executed. Raises
        ImportError (the framework's import fails) when the adapter cannot load."""
        for callback in list(self.callbacks.get(module_name, ())):
            try:
                callback(sys.modules[module_name])
            except BaseException as exc:  # never break the user's import
                _say(f"failsecure: a post-import step for {module_name} failed ({type(exc).__name__})")
        adapter = self.watch.get(module_name)
        if adapter is None:
            adapter = self.patched.get(module_name)
            if adapter is not None:
                self._again(adapter, module_name)
            return
        try:
            from failsecure import activation
        except BaseException as exc:
            _say(f"failsecure: cannot load failsecure to guard {adapter} ({type(exc).__name__}); refusing to import {module_name}")
            raise ImportError(f"failsecure cannot guard {adapter}; set FAILSECURE_AUTO=0 to run it unguarded") from None
        try:
            activation.activate(adapter)
        except activation.AdapterLoadError:
            raise ImportError(
                f"failsecure: the {adapter} adapter cannot load, so {module_name} is not imported "
                "(its tools would run without their gates); set FAILSECURE_AUTO=0 to run it unguarded"
            ) from None
        except BaseException as exc:  # patch() never raises; anything else is ours
            _say(f"failsecure: could not activate {adapter} ({type(exc).__name__})")

    def _again(self, adapter, module_name):
        """A module an active adapter patched executed again (reload, fresh import): the
        adapter patches the new objects, unless its trigger module is itself still being
        imported (its own activation follows when it has executed)."""
        for trigger, name in self.watch.items():
            if name == adapter:
                module = sys.modules.get(trigger)
                if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
                    return
        try:
            from failsecure import activation

            activation.activate(adapter)
        except BaseException as exc:  # the adapter was active: this import is not refused
            _say(f"failsecure: could not patch {module_name} again for {adapter} ({type(exc).__name__})")

    def invalidate_caches(self):
        pass


finder = None


def _say(message):
    try:
        sys.stderr.write(message + "\n")
    except BaseException:
        pass


def enable(extra=None):
    """Install the finder (once) and watch every built-in adapter's trigger module."""
    global finder
    if finder is None:
        finder = Finder()
    from failsecure.adapters import BUILTIN

    for name, entry in BUILTIN.items():
        finder.watch[entry[0]] = name
    for trigger, name in (extra or {}).items():
        finder.watch[trigger] = name
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)
    return finder


def when_imported(module_name, callback):
    """Call ``callback(module)`` once ``module_name`` has been imported (now, if it is
    already): the one import-hook mechanism adapters use for modules other than their
    trigger. Works with the drop-in off too (the finder is installed for it)."""
    module = sys.modules.get(module_name)
    if module is not None:
        callback(module)
        return
    global finder
    if finder is None:
        finder = Finder()
    finder.callbacks.setdefault(module_name, []).append(callback)
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)


def disable():
    if finder is not None and finder in sys.meta_path:
        sys.meta_path.remove(finder)


def already_imported():
    """Watched trigger modules imported before the finder was installed."""
    if finder is None:
        return []
    return [m for m in finder.watch if m in sys.modules]


_started = False

#: The variables failsecure.policy's trust model reads (policy.TRUST_VARIABLES), as they
#: were when the interpreter started, before any application code could load a ``.env``
#: into os.environ; None when the drop-in did not run at start (the policy then reads
#: /proc/self/environ). A relative FAILSECURE_CONFIG is kept absolute against the
#: working directory of the start.
start_environment = None
TRUST_VARIABLES = ("FAILSECURE_CONFIG", "XDG_CONFIG_HOME", "HOME", "USERPROFILE")


def _snapshot():
    """Take ``start_environment``, only while ``site`` processes the ``.pth`` files at
    interpreter start (a later ``site.addsitedir()`` or ``site.main()`` is not the start)."""
    global start_environment
    site = sys.modules.get("site")
    if start_environment is not None or getattr(getattr(site, "__spec__", None), "_initializing", False) is not True:
        return
    env = {}
    for name in TRUST_VARIABLES:
        value = os.environ.get(name)
        if value is not None:
            env[name] = value
    named = env.get("FAILSECURE_CONFIG")
    if named and not os.path.isabs(named):
        env["FAILSECURE_CONFIG"] = os.path.join(os.getcwd(), named)
    start_environment = env


def run():
    """The drop-in (once per process: a venv's lib64 -> lib link makes ``site`` read the
    ``.pth`` twice)."""
    global _started
    if _started:
        return
    _started = True
    try:
        _snapshot()  # also with FAILSECURE_AUTO=0: the trust model needs it either way
    except BaseException:
        pass  # policy falls back to /proc/self/environ
    try:
        if os.environ.get("FAILSECURE_AUTO", "1").strip().lower() in _OFF:
            _say("failsecure: drop-in activation is off (FAILSECURE_AUTO=0)")
            return
        enable()
        if already_imported():
            from failsecure import activation

            activation.install()
    except BaseException as exc:
        _say(f"failsecure: the drop-in could not start ({type(exc).__name__}); frameworks are not guarded until failsecure.install() runs")
