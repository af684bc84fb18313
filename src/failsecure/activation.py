"""Activation: explicit ``install()`` / ``uninstall()``, and the adapter registry the
drop-in bootstrap and native plugin entry points call into. All idempotent.

An adapter that cannot even be loaded (its module fails to import, its class fails to
build) is replaced by an ``Unloadable`` stand-in: refused from the start, reported by
``doctor``, and the import of its framework is refused by the drop-in, so the
framework's tools cannot run without their gates.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import threading
from typing import Any

from .adapter import Adapter
from .report import internal_error, problem, type_name

_lock = threading.RLock()
_here = threading.local()  # the adapters this thread is patching now
_adapters: dict[str, Adapter] = {}
_extra: dict[str, type] = {}  # adapters contributed by plugins: name -> class


def _after_fork() -> None:
    """A fork while another thread was installing must not leave the child's own
    ``install()`` (or a framework import the drop-in activates) waiting forever."""
    global _lock
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class AdapterLoadError(ImportError):
    """The adapter of a framework cannot load: the framework is refused."""


class Unloadable(Adapter):
    """Stands in for an adapter that failed to load: refused, every decision denies."""

    def __init__(self, name: str, distribution: str, trigger: str, error: str) -> None:
        self.name = name  # type: ignore[misc]
        self.distribution = distribution  # type: ignore[misc]
        self.modules = (trigger,)  # type: ignore[misc]
        super().__init__()
        self.state = "refused"
        self.refused_reason = f"the failsecure adapter failed to load ({error})"

    def patch(self) -> str:
        return self.state

    def unpatch(self) -> None:
        pass

    def _patch(self) -> None:  # pragma: no cover - never patched
        raise AdapterLoadError(self.refused_reason)

    def to_verdict(self, native):  # pragma: no cover - nothing to translate
        raise AdapterLoadError(self.refused_reason)

    def _probe(self, gate) -> bool:  # pragma: no cover
        raise AdapterLoadError(self.refused_reason)


def _builtin() -> dict:
    from failsecure.adapters import BUILTIN

    return BUILTIN


def _build(name: str) -> Adapter:
    make: Any
    if name in _extra:
        cls: Any = _extra[name]
        trigger, distribution = cls.modules[0], cls.distribution
        make = cls
    else:
        entry = _builtin()[name]
        trigger, target, distribution = entry[0], entry[1], entry[2] if len(entry) > 2 else name
        module, _, attr = target.partition(":")

        def make():
            return getattr(importlib.import_module(module), attr)()

    try:
        return make()
    except Exception as exc:  # noqa: BLE001 - an adapter module that cannot import: recorded as Unloadable, which denies its calls
        return Unloadable(name, distribution, trigger, type_name(exc))


def names() -> list[str]:
    builtin = _builtin()
    return list(builtin) + [n for n in _extra if n not in builtin]


def get(name: str) -> Adapter:
    """The one adapter instance for a framework."""
    with _lock:
        adapter = _adapters.get(name)
        if adapter is None:
            adapter = _adapters[name] = _build(name)
        return adapter


def activate(name: str) -> str:
    """Patch one framework now (its trigger module is imported). Returns the state.
    Raises ``AdapterLoadError`` when the adapter cannot load (the caller refuses the
    framework's import)."""
    adapter = get(name)
    if isinstance(adapter, Unloadable):
        problem(f"failsecure: {adapter.refused_reason}; {name} is refused: its tools cannot run unguarded")
        raise AdapterLoadError(adapter.refused_reason)
    busy = _here.__dict__.setdefault("names", set())
    if name in busy:  # an import the adapter's own patching made: that patching is not done
        return adapter.state
    busy.add(name)
    try:
        state = adapter.patch()
    finally:
        busy.discard(name)
    if state == "patched":  # a reload or a fresh import of any module it patched patches again
        from . import _bootstrap

        finder = _bootstrap.finder
        if finder is not None:
            for module in adapter.modules[1:]:
                if isinstance(module, str) and module not in finder.watch:
                    finder.patched.setdefault(module, name)
    return state


def _load_plugin_adapters() -> dict[str, str]:
    triggers: dict[str, str] = {}
    with internal_error("failsecure: adapter plugins could not be loaded ({type})"):
        from . import plugins

        for cls in plugins.adapter_classes():
            if not (isinstance(cls, type) and issubclass(cls, Adapter) and cls.name and cls.modules):
                problem(f"failsecure: a plugin contributed {type_name(cls)}, which is not a complete Adapter class; ignored")
                continue
            if inspect.isabstract(cls):
                missing = ", ".join(sorted(cls.__abstractmethods__))
                problem(f"failsecure: adapter {cls.name} does not implement {missing}; {cls.name} is refused")
            _extra.setdefault(cls.name, cls)
            triggers[cls.modules[0]] = cls.name
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
                try:
                    states[name] = activate(name)
                except AdapterLoadError:
                    states[name] = "refused"
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
