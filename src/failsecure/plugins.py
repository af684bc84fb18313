"""Extension points, carried by pluggy: hookspecs in one module (``failsecure.hookspecs``),
third-party plugins found through one entry-point group (``failsecure``).

- ``failsecure_pre_tool_call(call)``: a cross-framework gate, consulted by every adapter,
  each implementation called on its own under the same fail-closed guard as the
  framework's hooks, with hook id ``plugin:<plugin name>``.
- ``failsecure_audit(event)``: an audit sink; a sink that raises is reported on stderr
  and never changes a decision.
- ``failsecure_adapters()``: adapter classes contributed by other packages.
"""

from __future__ import annotations

import inspect
import os
import threading
from typing import Any, Optional

import pluggy

from . import hookspecs
from .report import problem, type_name
from .verdict import Action, Invalid, Verdict

ENTRY_POINT_GROUP = "failsecure"
hookimpl = pluggy.HookimplMarker("failsecure")

_lock = threading.RLock()
_loading: Optional[int] = None  # the thread loading the entry points now
_pm: Optional[pluggy.PluginManager] = None
#: plugins named by an entry point that failed to load: (name, why: an exception type or
#: a short reason, never exception text); published with the manager, all at once
load_failures: list[tuple[str, str]] = []
#: entry-point names whose object is already registered under another name: name -> that name
aliases: dict[str, str] = {}
#: (manager, {entry-point name: the plugin registered under it}, the failures at load)
_declared: tuple = (None, {}, [])
_HOOKS = tuple(name for name in vars(hookspecs) if name.startswith("failsecure_"))


def manager() -> pluggy.PluginManager:
    """The plugin manager, created (and entry points loaded) on first use, once: threads
    making their first decision at the same time wait for the one load. A decision made
    from inside a plugin's own import (same thread) raises instead of loading again."""
    global _pm, _loading, load_failures, aliases, _declared
    pm = _pm
    if pm is not None:
        return pm
    with _lock:
        if _pm is None:
            me = threading.get_ident()
            if _loading == me:
                raise RuntimeError("failsecure plugins are still loading")
            _loading = me
            try:
                pm, failures, named, loaded = _load_entry_points()
            finally:
                _loading = None
            load_failures, aliases, _declared = failures, named, (pm, loaded, list(failures))
            _pm = pm
        return _pm


def _after_fork() -> None:
    """A fork while another thread held the lock (loading plugins) must not leave the
    child's first decision waiting forever: the child gets a fresh lock (and loads the
    plugins itself, since the parent's half-done load was never published)."""
    global _lock, _loading
    _lock = threading.RLock()
    _loading = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _origin(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return str(getattr(dist, "name", None) or "an unknown distribution")


def _load_entry_points() -> tuple[pluggy.PluginManager, list[tuple[str, str]], dict[str, str], dict[str, Any]]:
    """Every declared plugin is registered, or reported as failed (then every gated call
    denies with failure ``missing``, hook id ``plugin:<name>``). Nothing a plugin raises
    while it is imported escapes (``BaseException`` included): a ``KeyboardInterrupt``
    stops the load and is raised again bare (the user's Ctrl-C still stops the program;
    nothing is kept, the next decision loads the plugins again)."""
    from importlib.metadata import entry_points

    pm = pluggy.PluginManager("failsecure")
    pm.add_hookspecs(hookspecs)
    failures: list[tuple[str, str]] = []
    named: dict[str, str] = {}
    loaded: dict[str, Any] = {}
    declared: dict[str, list] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        declared.setdefault(ep.name, []).append(ep)

    def failed(name: str, why: str) -> None:
        failures.append((name, why))
        _failed(name, why)

    for name, eps in declared.items():
        if len({ep.value for ep in eps}) > 1:  # one name, two plugins: neither may pass for the other
            failed(name, "declared with different targets by " + ", ".join(sorted({_origin(ep) for ep in eps})))
            continue
        registered = None
        try:
            plugin = eps[0].load()
            already = pm.get_name(plugin)
            if already is not None:  # one module under two names: registered once
                named[name] = already
                problem(f"failsecure: plugin '{name}' is the same object as plugin '{already}'; "
                        f"registered once, as '{already}' (its gate's hook id is plugin:{already})")
                continue
            pm.register(plugin, name=name)
            registered = plugin
            why = _unusable(pm, plugin)
            if why is None:
                _check(pm, plugin)
        except pluggy.PluginValidationError:
            why = "a misspelled hook"
        except KeyboardInterrupt:
            problem(f"failsecure: loading plugin '{name}' was interrupted (KeyboardInterrupt); "
                    "plugins load again at the next gated call")
            raise KeyboardInterrupt from None
        except BaseException as exc:  # noqa: BLE001 - SystemExit, GeneratorExit, a BaseException of its own: a failed load
            why = type_name(exc)
        if why is not None:
            if registered is not None:
                try:
                    pm.unregister(registered)
                except BaseException:  # noqa: BLE001 - undoing a failed load: the load is reported failed either way
                    pass
            failed(name, why)
        else:
            loaded[name] = registered
    return pm, failures, named, loaded


def _unusable(pm: pluggy.PluginManager, plugin: Any) -> Optional[str]:
    """Why a registered entry-point plugin contributes less than it declares, or None:
    nothing at all (the entry point names a function, or no ``@hookimpl`` is failsecure's),
    or a ``failsecure_*`` hook function pluggy does not see (unmarked, or marked with
    another pluggy project's marker): the gate would silently never run."""
    for attr in dir(plugin):
        if attr in _HOOKS and callable(getattr(plugin, attr, None)) and pm.parse_hookimpl_opts(plugin, attr) is None:
            return f"{attr} is not marked with failsecure's @hookimpl"
    if not pm.get_hookcallers(plugin):
        if inspect.isroutine(plugin):
            return "the entry point names a function, not the module or object holding the @hookimpl functions"
        return "no @hookimpl function of failsecure's"
    return None


def _failed(name: str, why: str) -> None:
    """A declared plugin that did not load is a gate that is missing: every gated call
    denies (failure ``missing``, hook id ``plugin:<name>``) until it loads."""
    problem(f"failsecure: plugin '{name}' failed to load ({why}); every gated tool call is denied until it loads")


def _check(pm: pluggy.PluginManager, plugin: Any) -> None:
    """A ``failsecure_*`` function that matches no hookspec (a typo) is an error at load:
    it would otherwise register silently and never be called."""
    for attr in dir(plugin):
        if attr.startswith("failsecure_") and callable(getattr(plugin, attr, None)) and not hasattr(hookspecs, attr):
            raise pluggy.PluginValidationError(plugin, f"unknown hook '{attr}' in plugin {pm.get_name(plugin)!r}")
    pm.check_pending()


def missing() -> list[str]:
    """Hook ids of the declared plugins that failed to load."""
    return [f"plugin:{name}" for name, _ in load_failures]


def register(plugin: Any, name: Optional[str] = None) -> str:
    """Register a plugin; a ``failsecure_*`` hook that matches no hookspec, one not
    marked with ``hookimpl``, or a plugin with no hook at all raises
    ``pluggy.PluginValidationError`` (and the plugin is not registered)."""
    pm = manager()
    registered = pm.register(plugin, name=name)
    try:
        why = _unusable(pm, plugin)
        if why is not None:
            raise pluggy.PluginValidationError(plugin, f"plugin {registered!r}: {why}")
        _check(pm, plugin)
    except BaseException:  # re-raised: a plugin that failed its checks leaves nothing registered
        pm.unregister(plugin)
        raise
    return registered or ""


def unregister(plugin: Any = None, name: Optional[str] = None) -> Any:
    return manager().unregister(plugin, name=name)


def gates() -> list[tuple[str, Any]]:
    """(hook id, callable) of every ``failsecure_pre_tool_call`` implementation. Each
    callable runs that one plugin's implementation through pluggy's own hook calling
    (argument checks, hook wrappers) and returns its answer (None when it had none)."""
    if _pm is None and not _has_entry_points():
        return []
    return _callers(manager(), "failsecure_pre_tool_call")


_cache: dict = {}


def _impls(pm: pluggy.PluginManager, hook: str) -> list:
    """The hook's implementations: pluggy's own list, read and never changed (no copy per
    decision), or its ``get_hookimpls()`` where a release keeps them otherwise."""
    caller = getattr(pm.hook, hook)
    impls = getattr(caller, "_hookimpls", None)
    return impls if type(impls) is list else caller.get_hookimpls()


def _callers(pm: pluggy.PluginManager, hook: str) -> list[tuple[str, Any]]:
    live = _impls(pm, hook)
    cached = _cache.get(hook)
    # pluggy makes a new HookImpl per registration and compares them by identity; the
    # cache holds them, so a new one can never pass for an old one
    if cached is not None and cached[1] is pm and cached[0] == live:
        return cached[2]
    impls = list(live)  # the callers and the cache are made from one copy
    callers = []
    plain = [impl for impl in impls if not (impl.wrapper or impl.hookwrapper)]
    for impl in plain:  # a plugin's wrappers wrap every gate; they are no gate themselves
        others = [other.plugin for other in plain if other.plugin is not impl.plugin]
        callers.append((f"plugin:{impl.plugin_name}", _one(pm.subset_hook_caller(hook, remove_plugins=others))))
    if hook == "failsecure_pre_tool_call":
        _vanished(pm)
    _cache[hook] = (impls, pm, callers)
    return callers


def _vanished(pm: pluggy.PluginManager) -> None:
    """A declared plugin that loaded and was unregistered since (by another plugin, or
    its name given to another object) is missing too, for as long as it is gone. Checked
    whenever the set of gates changes."""
    global load_failures
    owner, loaded, at_load = _declared
    if owner is not pm:
        return
    gone = [(name, "unregistered after it loaded") for name, plugin in loaded.items() if pm.get_plugin(name) is not plugin]
    now = at_load + gone
    if now != load_failures:
        for name, why in gone:
            if (name, why) not in load_failures:
                _failed(name, why)
        load_failures = now


def _one(caller: Any) -> Any:
    def call_one(**kwargs):
        results = caller(**kwargs)
        return results[0] if results else None

    return call_one


_entry_points_seen: Optional[bool] = None


def _has_entry_points() -> bool:
    """Whether any distribution declares a failsecure plugin: scanned once per process
    (under the lock, so a burst of first decisions does not scan once each)."""
    global _entry_points_seen
    if _entry_points_seen is None:
        with _lock:
            if _entry_points_seen is None:
                from importlib.metadata import entry_points

                _entry_points_seen = bool(entry_points(group=ENTRY_POINT_GROUP))
    return _entry_points_seen


def to_verdict(result: Any) -> Verdict:
    """Validator for a plugin gate's answer: a Verdict, or None for no opinion."""
    if result is None:
        return Verdict(action=Action.ABSTAIN)
    if type(result) is not Verdict:
        raise Invalid()
    return result


def has_audit_sinks() -> bool:
    return _pm is not None and bool(_impls(_pm, "failsecure_audit"))


def audit(event: dict) -> None:
    if _pm is None:
        return
    for hook_id, sink in _callers(_pm, "failsecure_audit"):
        try:
            sink(event=dict(event))
        except Exception as exc:  # noqa: BLE001 - a plugin sink's own exception: reported by name, not an internal error
            problem(f"failsecure: audit sink '{hook_id[7:]}' raised {type_name(exc)}")


def adapter_classes() -> list[type]:
    classes: list[type] = []
    for result in manager().hook.failsecure_adapters():
        classes.extend(result or ())
    return classes
