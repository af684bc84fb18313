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

import _thread  # loaded by the interpreter's own import system at start
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
            except BaseException as exc:  # noqa: BLE001 - a post-import step must never break the user's import
                _say(f"failsecure: a post-import step for {module_name} failed ({type(exc).__name__})")
        adapter = self.watch.get(module_name)
        if adapter is None:
            adapter = self.patched.get(module_name)
            if adapter is not None:
                self._again(adapter, module_name)
            return
        try:
            from failsecure import activation
        except BaseException as exc:  # noqa: BLE001 - whatever stops failsecure loading refuses the import, never lets it through
            _say(f"failsecure: cannot load failsecure to guard {adapter} ({type(exc).__name__}); refusing to import {module_name}")
            raise ImportError(f"failsecure cannot guard {adapter}; set FAILSECURE_AUTO=0 to run it unguarded") from None
        try:
            activation.activate(adapter)
        except activation.AdapterLoadError:
            raise ImportError(
                f"failsecure: the {adapter} adapter cannot load, so {module_name} is not imported "
                "(its tools would run without their gates); set FAILSECURE_AUTO=0 to run it unguarded"
            ) from None
        except BaseException as exc:  # noqa: BLE001 - patch() never raises; anything else is ours and must not break the import
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
        except BaseException as exc:  # noqa: BLE001 - the adapter was active: this import is not refused
            _say(f"failsecure: could not patch {module_name} again for {adapter} ({type(exc).__name__})")

    def invalidate_caches(self):
        pass


finder = None


def _say(message):
    """The drop-in's report: stderr only, since it runs where failsecure itself (and its
    ``report``) may not import."""
    try:
        sys.stderr.write(message + "\n")
    except BaseException:  # noqa: BLE001 - stderr closed or broken: the message is lost, the import goes on
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
        if not _when_executed(module, callback):
            callback(module)
        return
    global finder
    if finder is None:
        finder = Finder()
    finder.callbacks.setdefault(module_name, []).append(callback)
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)


#: ModuleSpec class -> its subclass that tells when a module's import has ended
_READY_SPECS: dict = {}
#: held while a deferral is checked and recorded, and while an ended import takes its
#: callbacks (another thread asking between the check and the record must not lose one);
#: never while a callback runs
_READY_LOCK = _thread.allocate_lock()


def _when_executed(module, callback):
    """A module still executing (it is in ``sys.modules`` while its own imports run: a
    framework module whose import imported the trigger): ``callback(module)`` once its
    code has run to the end, not now (its functions below the import are not defined
    yet). The import machinery ends every import with ``spec._initializing = False``;
    the module's spec tells it then. True when deferred; False (call it now) when the
    module is not executing or its spec cannot be told."""
    spec = getattr(module, "__spec__", None)
    if spec is None or getattr(spec, "_initializing", False) is not True:
        return False
    try:
        with _READY_LOCK:
            if getattr(spec, "_initializing", False) is not True:
                return False  # ended since the check above (another thread's import)
            pending = spec.__dict__.get("_failsecure_ready")
            if pending is None:
                base = type(spec)
                ready = _READY_SPECS.get(base)
                if ready is None:

                    def __setattr__(self, name, value, _base=base):
                        _base.__setattr__(self, name, value)
                        if name == "_initializing" and value is False:
                            _executed(self, _base)

                    ready = _READY_SPECS[base] = type(base.__name__, (base,), {"__setattr__": __setattr__, "__slots__": ()})
                spec.__dict__["_failsecure_ready"] = pending = []
                spec.__class__ = ready
            pending.append(callback)
            return True
    except BaseException:  # noqa: BLE001 - a spec that cannot be told (another class, no __dict__): the callback runs now, as before
        return False


def _executed(spec, base):
    """The import of ``spec``'s module has ended: its deferred callbacks are asked for
    again by name, as ``when_imported`` would be now. The module imported: they run on it
    (or on what it put in its place in ``sys.modules``, as the finder's ``fire`` gives).
    A failed import left none: they wait for the next import of the name (a caller that
    caught a transient error and imports again gets the module patched)."""
    with _READY_LOCK:
        callbacks = spec.__dict__.pop("_failsecure_ready", None) or ()
        try:
            spec.__class__ = base
        except BaseException:  # noqa: BLE001 - keeps the subclass: it only calls the base's __setattr__ from now on
            pass
    for callback in callbacks:
        try:
            when_imported(spec.name, callback)
        except BaseException as exc:  # noqa: BLE001 - a post-import step must never break the user's import
            _say(f"failsecure: a post-import step for {spec.name} failed ({type(exc).__name__})")


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
#: working directory of the start. In a child of a failsecure process, the parent's
#: trusted values (``TRUSTED_ENV``, see ``inherited``).
start_environment = None
start_origin = "interpreter start"
TRUST_VARIABLES = ("FAILSECURE_CONFIG", "XDG_CONFIG_HOME", "HOME", "USERPROFILE")

#: What a failsecure process hands its children: ``<pid>;NAME=<len>:<value>;...``, the
#: trust variables it trusts, exported into os.environ at its start. A child prefers it
#: to its own trust variables: an application that loads the project's ``.env`` after
#: its start and then starts a child (a sub-agent, ``failsecure hook run``) would
#: otherwise hand the child the project's values as the child's *start* environment.
#: Set at start, it cannot be replaced by ``load_dotenv()`` (override=False); a value a
#: ``.env`` forges (override=True) must name a live proper ancestor whose exec-time
#: environment holds the same values, checked back to the process that started with them
#: as its own variables (Linux, ``_verified``).
TRUSTED_ENV = "FAILSECURE_TRUSTED_ENV"
_reported: list = []


def encode(pid, env):
    return str(pid) + "".join(f";{k}={len(env[k])}:{env[k]}" for k in TRUST_VARIABLES if env.get(k))


def _number(text):
    """The int of a short run of ASCII digits, else None (``str.isdigit`` is true for
    ``'²'``, which ``int`` refuses; a very long run is no pid or length either)."""
    return int(text) if 0 < len(text) <= 19 and text.isascii() and text.isdigit() else None


def decode(text):
    """(pid, {name: value}) from ``encode``'s text; None for anything else."""
    if type(text) is not str:
        return None
    head, sep, rest = text.partition(";")
    pid = _number(head)
    if pid is None or (sep and not rest):
        return None
    out, i = {}, 0
    while i < len(rest):
        eq = rest.find("=", i)
        colon = rest.find(":", eq + 1) if eq > 0 else -1
        name = rest[i:eq]
        size = _number(rest[eq + 1:colon]) if colon >= 0 else None
        if size is None or name not in TRUST_VARIABLES or name in out:
            return None
        i = colon + 1 + size
        out[name] = rest[colon + 1:i]
        if len(out[name]) != size or not out[name] or (i < len(rest) and rest[i] != ";") or i == len(rest) - 1:
            return None
        i += 1
    return pid, out


def read_block(path):
    """The trust variables and ``TRUSTED_ENV`` of an exec-time environment block
    (``/proc/<pid>/environ``), or None when it cannot be read or no longer looks like one
    (setproctitle may write the process title over it)."""
    try:
        with open(path, "rb") as fh:
            block = fh.read()
    except OSError:
        return None
    if not block:
        return {}
    equals = block.find(b"=", 0, block.find(b"\0"))
    if not block.endswith(b"\0") or b"\0\0" in block or equals <= 0 or b" " in block[:equals]:
        return None  # written over (a title, zero padding): not KEY=VALUE entries any more
    block = b"\0" + block
    found = {}
    for name in TRUST_VARIABLES + (TRUSTED_ENV,):
        at = block.find(b"\0" + name.encode() + b"=")  # the first one wins, as in os.environ
        if at >= 0:
            at += len(name) + 2
            found[name] = os.fsdecode(block[at:block.index(b"\0", at)])
    return found


def _ancestors(pid):
    """The proper ancestors of ``pid``, nearest first (never ``pid`` itself)."""
    out = []
    while len(out) < 256 and pid > 1:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                pid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if pid <= 0:
            break
        out.append(pid)
    return out


def _verified(text, below, depth=0):
    """The values ``text`` (a ``TRUSTED_ENV``) hands down, when it names a proper
    ancestor of process ``below`` whose exec-time environment holds them: as its own
    trust variables, exactly (a relative FAILSECURE_CONFIG is not the absolute path its
    exporter made of it), or as a ``TRUSTED_ENV`` of its own that is verified the same way
    against *its* ancestors. Else None. A value naming ``below`` itself is circular: a
    ``.env`` loaded before ``below`` started put it into ``below``'s own block."""
    parsed = decode(text)
    if parsed is None or depth > 64:
        return None
    pid, values = parsed
    if pid not in _ancestors(below):
        return None
    block = read_block(f"/proc/{pid}/environ")
    if block is None:
        return None
    if TRUSTED_ENV in block:
        theirs = _verified(block[TRUSTED_ENV], pid, depth + 1)
        return values if theirs == values else None
    own = {name: block[name] for name in TRUST_VARIABLES if block.get(name)}
    return values if own == values else None


def inherited(text):
    """(the trusted values, where they came from) for a ``TRUSTED_ENV`` found in this
    process's start environment. On Linux the value must name a live proper ancestor
    whose exec-time environment holds the same values (``_verified``), else nothing is
    inherited and nothing of this environment is trusted either (``{}``: the system file
    and the password database's home only), said once on stderr. Without ``/proc`` the
    value cannot be checked and is taken as it is."""
    parsed = decode(text)
    if parsed is not None:
        pid, values = parsed
        if not os.path.isdir("/proc/self"):
            return values, f"inherited from process {pid} (not verifiable here)"
        if _verified(text, os.getpid()) is not None:
            return values, f"inherited from process {pid}"
    if not _reported:
        _reported.append(True)
        _say(f"failsecure: {TRUSTED_ENV} does not name a failsecure process this one descends from; "
             "no trust variable of this environment is trusted (system config and the account's home only)")
    return {}, f"refused ({TRUSTED_ENV} could not be verified)"


def export(env):
    """Hand ``env`` (the trusted values) to the children of this process."""
    try:
        os.environ[TRUSTED_ENV] = encode(os.getpid(), env)
    except BaseException:  # noqa: BLE001 - no environment to export to: policy falls back to /proc
        pass


def _snapshot():
    """Take ``start_environment``, only while ``site`` processes the ``.pth`` files at
    interpreter start (a later ``site.addsitedir()`` or ``site.main()`` is not the start),
    and export it to this process's children."""
    global start_environment, start_origin
    site = sys.modules.get("site")
    if start_environment is not None or getattr(getattr(site, "__spec__", None), "_initializing", False) is not True:
        return
    claim = os.environ.get(TRUSTED_ENV)
    if claim is not None:
        env, start_origin = inherited(claim)
    else:
        env = {}
        for name in TRUST_VARIABLES:
            value = os.environ.get(name)
            if value:
                env[name] = value
        named = env.get("FAILSECURE_CONFIG")
        if named and not os.path.isabs(named):
            env["FAILSECURE_CONFIG"] = os.path.join(os.getcwd(), named)
    start_environment = env
    export(env)


def run():
    """The drop-in (once per process: a venv's lib64 -> lib link makes ``site`` read the
    ``.pth`` twice)."""
    global _started
    if _started:
        return
    _started = True
    try:
        _snapshot()  # also with FAILSECURE_AUTO=0: the trust model needs it either way
    except BaseException:  # noqa: BLE001 - at interpreter start: policy falls back to /proc/self/environ
        pass  # policy falls back to /proc/self/environ
    try:
        if os.environ.get("FAILSECURE_AUTO", "1").strip().lower() in _OFF:
            _say("failsecure: drop-in activation is off (FAILSECURE_AUTO=0)")
            return
        enable()
        if already_imported():
            from failsecure import activation

            activation.install()
    except BaseException as exc:  # noqa: BLE001 - at interpreter start: say it, never stop the interpreter
        _say(f"failsecure: the drop-in could not start ({type(exc).__name__}); frameworks are not guarded until failsecure.install() runs")
