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

import sys
import threading
from typing import Any, Optional

import pluggy

from . import hookspecs
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
            pm.register(ep.load(), name=ep.name)
        except Exception as exc:
            # a gate that cannot load is missing: it denies when it is listed in `required`
            load_failures.append((ep.name, type(exc).__name__))
            print(f"failsecure: plugin '{ep.name}' failed to load ({type(exc).__name__})", file=sys.stderr)


def register(plugin: Any, name: Optional[str] = None) -> str:
    return manager().register(plugin, name=name)


def unregister(plugin: Any = None, name: Optional[str] = None) -> Any:
    return manager().unregister(plugin, name=name)


def gates() -> list[tuple[str, Any]]:
    """(hook id, function) of every ``failsecure_pre_tool_call`` implementation."""
    if _pm is None and not _has_entry_points():
        return []
    caller = manager().hook.failsecure_pre_tool_call
    return [(f"plugin:{impl.plugin_name}", impl.function) for impl in caller.get_hookimpls()]


_entry_points_seen: Optional[bool] = None


def _has_entry_points() -> bool:
    global _entry_points_seen
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
    for impl in _pm.hook.failsecure_audit.get_hookimpls():
        try:
            impl.function(event=dict(event))
        except Exception as exc:
            print(f"failsecure: audit sink '{impl.plugin_name}' raised {type(exc).__name__}", file=sys.stderr)


def adapter_classes() -> list[type]:
    classes: list[type] = []
    for result in manager().hook.failsecure_adapters():
        classes.extend(result or ())
    return classes
