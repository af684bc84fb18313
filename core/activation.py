"""Activation: explicit ``install()`` / ``uninstall()``, and the adapter registry the
drop-in bootstrap and native plugin entry points call into. All idempotent."""

from __future__ import annotations

import importlib
import sys
import threading

from .adapter import Adapter

_lock = threading.RLock()
_adapters: dict[str, Adapter] = {}
_extra: dict[str, type] = {}  # adapters contributed by plugins: name -> class


def _class(name: str) -> type:
    if name in _extra:
        return _extra[name]
    from failsecure.adapters import BUILTIN

    module, _, attr = BUILTIN[name][1].partition(":")
    return getattr(importlib.import_module(module), attr)


def names() -> list[str]:
    from failsecure.adapters import BUILTIN

    return list(BUILTIN) + [n for n in _extra if n not in BUILTIN]


def get(name: str) -> Adapter:
    """The one adapter instance for a framework."""
    with _lock:
        adapter = _adapters.get(name)
        if adapter is None:
            adapter = _adapters[name] = _class(name)()
        return adapter


def activate(name: str) -> str:
    """Patch one framework now (its trigger module is imported). Returns the state."""
    return get(name).patch()


def _load_plugin_adapters() -> dict[str, str]:
    triggers = {}
    try:
        from . import plugins

        for cls in plugins.adapter_classes():
            if isinstance(cls, type) and issubclass(cls, Adapter) and cls.name and cls.modules:
                _extra.setdefault(cls.name, cls)
                triggers[cls.modules[0]] = cls.name
    except Exception as exc:
        print(f"failsecure: adapter plugins could not be loaded ({type(exc).__name__})", file=sys.stderr)
    return triggers


def install() -> dict[str, str]:
    """Activate failsecure for every supported framework: patch those already imported,
    and patch the others as soon as they are imported. Returns {framework: state}."""
    from . import _bootstrap

    with _lock:
        extra = _load_plugin_adapters()
        finder = _bootstrap.enable(extra)
        states = {}
        for trigger, name in list(finder.watch.items()):
            if trigger in sys.modules:
                states[name] = activate(name)
            else:
                states[name] = get(name).state if name in _adapters else "waiting"
        return states


def uninstall() -> None:
    """Undo every patch and stop watching imports."""
    from . import _bootstrap

    with _lock:
        _bootstrap.disable()
        for adapter in _adapters.values():
            adapter.unpatch()
