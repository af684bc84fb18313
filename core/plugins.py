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

import threading
from typing import Any, Optional

import pluggy

from . import hookspecs
from .report import problem, type_name
from .verdict import Action, Invalid, Verdict

ENTRY_POINT_GROUP = "failsecure"
hookimpl = pluggy.HookimplMarker("failsecure")

_lock = threading.Lock()
_pm: Optional[pluggy.PluginManager] = None
#: plugins named by an entry point that failed to load: (name, exception type)
load_failures: list[tuple[str, str]] = []


def manager() -> pluggy.PluginManager:
    """The plugin manager, created (and entry points loaded) on first use."""
    global _pm
    if _pm is None:
        with _lock:
            if _pm is None:
                pm = pluggy.PluginManager("failsecure")
                pm.add_hookspecs(hookspecs)
                _load_entry_points(pm)
                _pm = pm
    return _pm


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
        except Exception as exc:
            _failed(ep.name, type_name(exc))
            continue
        try:
            _check(pm, plugin)
        except pluggy.PluginValidationError:
            pm.unregister(plugin)
            _failed(ep.name, "a misspelled hook")


def _failed(name: str, why: str) -> None:
    """A declared plugin that did not load is a gate that is missing: every gated call
    denies (failure ``missing``, hook id ``plugin:<name>``) until it loads."""
    load_failures.append((name, why))
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
    """Register a plugin; a ``failsecure_*`` hook that matches no hookspec raises
    ``pluggy.PluginValidationError`` (and the plugin is not registered)."""
    pm = manager()
    registered = pm.register(plugin, name=name)
    try:
        _check(pm, plugin)
    except pluggy.PluginValidationError:
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


def _callers(pm: pluggy.PluginManager, hook: str) -> list[tuple[str, Any]]:
    impls = getattr(pm.hook, hook).get_hookimpls()
    cached = _cache.get(hook)
    # pluggy makes a new HookImpl per registration and compares them by identity; the
    # cache holds them, so a new one can never pass for an old one
    if cached is not None and cached[1] is pm and cached[0] == impls:
        return cached[2]
    callers = []
    plain = [impl for impl in impls if not (impl.wrapper or impl.hookwrapper)]
    for impl in plain:  # a plugin's wrappers wrap every gate; they are no gate themselves
        others = [other.plugin for other in plain if other.plugin is not impl.plugin]
        callers.append((f"plugin:{impl.plugin_name}", _one(pm.subset_hook_caller(hook, remove_plugins=others))))
    _cache[hook] = (impls, pm, callers)
    return callers


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
    return _pm is not None and bool(_pm.hook.failsecure_audit.get_hookimpls())


def audit(event: dict) -> None:
    if _pm is None:
        return
    for hook_id, sink in _callers(_pm, "failsecure_audit"):
        try:
            sink(event=dict(event))
        except Exception as exc:
            problem(f"failsecure: audit sink '{hook_id[7:]}' raised {type_name(exc)}")


def adapter_classes() -> list[type]:
    classes: list[type] = []
    for result in manager().hook.failsecure_adapters():
        classes.extend(result or ())
    return classes
