"""The adapter base: every framework adapter has this one shape.

An adapter declares the distribution it adapts, the versions it supports, the releases
that already fail closed upstream and the modules it patches; it implements
``_patch``/``_unpatch``, the native -> Verdict mapping (``to_verdict``) and ``self_test``.
It translates; the core decides (``decide``: plugin gates, required hooks, config errors,
the reducer, the audit event).

A patch that cannot apply must never leave the gate silently open: ``patch()`` marks the
adapter refused, logs loudly, calls ``_lockdown()``, and from then on every ``decide``
of that adapter denies.
"""

from __future__ import annotations

import abc
import contextvars
import logging
import os
import sys
import threading
import types
import weakref
from time import perf_counter
from typing import Any, Callable, ClassVar, Iterable, Optional

from . import audit, guard, hookid, policy
from . import boundary as _boundary
from . import reduce as _reduce
from .report import internal, internal_error, problem, type_name
from .verdict import Action, Decision, Failure, Outcome, Verdict

_DENY = Verdict(action=Action.DENY)

_A_DENY, _A_ASK = Action.DENY, Action.ASK  # read once: an Enum member lookup costs a microsecond

#: held while a new tool class gets its boundary (``wrap_subclasses``)
_bounding = threading.RLock()

#: raised at a framework's innermost tool call for an ungoverned call that is denied
Ungoverned = _boundary.Ungoverned

#: share of a host's own deadline for a hook's answer that failsecure's deadline may use
#: (``ahook_call(_host=...)``): the answer must reach the host before it stops waiting (a
#: host that reads its own timeout as "no decision" would run the tool)
HOST_DEADLINE_SHARE = 0.8


def _shape(fn: Any) -> str:
    """"agen", "async", "gen" or "sync": what calling ``fn`` gives."""
    import inspect

    if inspect.isasyncgenfunction(fn):
        return "agen"
    if inspect.iscoroutinefunction(fn):
        return "async"
    if inspect.isgeneratorfunction(fn):
        return "gen"
    return "sync"


def _async_cm(fn: Any) -> bool:
    """``fn`` is an ``@contextlib.asynccontextmanager`` function (a plain function over an
    async generator function)."""
    import inspect

    fn = getattr(fn, "__func__", fn)
    inner = getattr(fn, "__wrapped__", None)
    return inner is not None and inspect.isasyncgenfunction(inner) and not inspect.isasyncgenfunction(fn)


class _ScopedAsyncCM:
    """The async context manager a run entry point returned, with the run scope entered
    for its ``async with`` body (in the context that enters it)."""

    __slots__ = ("_cm", "_enter", "_scope")

    def __init__(self, cm: Any, enter: Callable[[], Any]) -> None:
        self._cm, self._enter, self._scope = cm, enter, None

    async def __aenter__(self) -> Any:
        scope = self._enter()
        try:
            value = await self._cm.__aenter__()
        except BaseException:
            scope.__exit__()
            raise
        self._scope = scope
        return value

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._cm.__aexit__(*exc)
        finally:
            scope, self._scope = self._scope, None
            if scope is not None:
                scope.__exit__()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cm, name)


_ABSENT = object()

log = logging.getLogger("failsecure")
log.addHandler(logging.NullHandler())  # a library: silent unless the application configures logging


class _Capture:
    """Decisions made while the self-test runs (any thread; doctor runs nothing else)."""

    decisions: Optional[list] = None


_capture = _Capture()

#: every adapter instance, for the fork hook below
_instances: "weakref.WeakSet[Adapter]" = weakref.WeakSet()


def _after_fork() -> None:
    """In a forked child only the forking thread exists: an adapter lock another thread
    held at the fork (a patch under way, a late import patched) would stay held for
    ever, and the child's next patch would hang. The child's adapters get fresh locks."""
    for adapter in list(_instances):
        adapter._lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


_plugins_module: Any = None


def _plugins() -> Any:
    """``failsecure.plugins`` (imported on the first decision: it imports pluggy). Never
    the half-executed module another thread is importing: ``sys.modules`` holds it from
    the start of its import, the import statement waits for the module's import lock."""
    global _plugins_module
    module = _plugins_module
    if module is None:
        from . import plugins as module

        _plugins_module = module
    return module


def _superseded(owner: Any) -> bool:
    """``owner`` (a module, or a class) is no longer what its name gives: ``sys.modules``
    holds another module under the module's name (it was removed and imported afresh), or
    the class's module holds another class of the same qualified name (a reload or a
    fresh import defined it again). Unknown (no such name now, a local class): False."""
    try:
        if isinstance(owner, types.ModuleType):
            current = sys.modules.get(owner.__name__)
            return current is not None and current is not owner
        if isinstance(owner, type):
            qualname = type.__dict__["__qualname__"].__get__(owner)
            found: Any = sys.modules.get(type.__dict__["__module__"].__get__(owner))
            for part in qualname.split("."):
                if found is None or part == "<locals>":
                    return False
                found = vars(found).get(part)
            # only a class defined again under the same name: a proxy or an alias put
            # there on purpose is not a new definition (it would be patched twice)
            return isinstance(found, type) and found is not owner and type.__dict__["__qualname__"].__get__(found) == qualname
    except Exception:  # noqa: BLE001 - reading a hostile or half-built module: not superseded
        return False
    return False


#: the deadline the self-test's hanging gate gets, whatever the config says
SELF_TEST_TIMEOUT = 0.25


_PROBE_NAMES = {"raise": "raising", "hang": "hanging", "junk": "junk", "abstain": "allowing"}


def _refusal(exc: BaseException) -> str:
    """The reason a refusal names: a PatchError's own text (failsecure's words), else
    the exception's type only (its text may carry anything)."""
    return f"PatchError: {exc}" if type(exc) is PatchError else type_name(exc)


class _SelfTestConfig(policy.Config):
    """Defaults, with a short deadline for every hook, interactive ones included."""

    def timeout_for(self, hook_id: str, interactive: bool = False) -> float:
        return SELF_TEST_TIMEOUT


class PatchError(Exception):
    """A patch target is not where the adapter expects it (an unknown release)."""


def _waits(interactive: Any, hook_id: str) -> bool:
    """``_interactive`` of the ``hook_call*`` helpers for one hook: a bool (every hook of
    the call alike), or the set of hook ids that may be waiting for a person (an adapter
    that tells a prompting hook from a plain policy one)."""
    return interactive if type(interactive) is bool else hook_id in interactive


class IdCache:
    """What an adapter worked out once about one object (a hook's id, a callback's shape),
    keyed by the object's identity: no code of the object runs to look it up (no
    ``__hash__``/``__eq__``). The entry keeps the object, so its ``id`` is never reused
    while the entry lives; past ``limit`` entries the cache starts again empty (bounded:
    a framework that makes callables per call cannot grow it)."""

    __slots__ = ("_entries", "limit")

    def __init__(self, limit: int = 4096) -> None:
        self._entries: dict[int, tuple[Any, Any]] = {}
        self.limit = limit

    def get(self, obj: Any, default: Any = None) -> Any:
        """The value stored for this very object, else ``default``."""
        known = self._entries.get(id(obj))
        if known is not None and known[0] is obj:
            return known[1]
        return default

    def put(self, obj: Any, value: Any) -> Any:
        """Store ``value`` for ``obj``; returns it."""
        entries = self._entries
        if len(entries) > self.limit:
            entries.clear()
        entries[id(obj)] = (obj, value)
        return value

    def pop(self, obj: Any) -> None:
        """Forget ``obj`` (whichever object now has its id: the entry is gone either way)."""
        self._entries.pop(id(obj), None)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


#: how long ``Adapter.run_probe`` waits for a probe on a thread of its own, in seconds
PROBE_WAIT = 30.0


class Check:
    """One line of an adapter's self-test, shown by ``failsecure doctor``."""

    __slots__ = ("name", "ok", "detail")

    def __init__(self, name: str, ok: bool, detail: str = ""):
        self.name, self.ok, self.detail = name, bool(ok), detail

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}

    def __repr__(self) -> str:
        return f"Check({self.name!r}, ok={self.ok}, {self.detail!r})"


class Adapter(abc.ABC):
    """Subclasses implement ``_patch``, ``to_verdict`` and ``_probe`` (checked when the
    class is instantiated, i.e. when it is registered, not when a tool is called)."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        from .adapters import ADAPTERS

        meta = ADAPTERS.get(cls.__dict__.get("name", ""))
        if meta is not None and cls.__module__ == meta.target.partition(":")[0]:
            cls.distribution, cls.supported, cls.tested = meta.distribution, meta.supported, meta.tested

    #: framework id: hook-id prefix and the audit ``framework`` field
    name: ClassVar[str] = ""
    #: the PyPI distribution adapted; a built-in adapter's three come from its entry in
    #: ``failsecure.adapters.ADAPTERS`` (the one source)
    distribution: ClassVar[str] = ""
    #: PEP 440 specifier of the releases this adapter is tested against
    supported: ClassVar[str] = ""
    #: the pinned releases in the tox matrix
    tested: ClassVar[tuple] = ()
    #: PEP 440 specifier of releases that already fail closed upstream ("" = none)
    fail_closed_upstream: ClassVar[str] = ""
    #: modules patched; modules[0] is the activation trigger
    modules: ClassVar[tuple] = ()
    #: the framework can ask a human before a tool runs: an ASK decision is rendered
    #: natively. When False the core turns ASK into a deny (and words the reason). Where
    #: only some releases can ask, the patch says what it saw in ``ask_api``.
    supports_ask: ClassVar[bool] = False

    def __init__(self) -> None:
        self.state = "unpatched"  # | "patched" | "refused" | "native"
        self.refused_reason: Optional[str] = None
        #: what the patch saw of the patched release's way to ask a human (None: every
        #: release of the class's ``supports_ask`` has one); the core reads ``can_ask``
        self.ask_api: Optional[bool] = None
        self._lock = threading.RLock()
        _instances.add(self)
        self._version: Optional[str] = None
        self._framework_text: Optional[tuple] = None  # (version, "<name> <version>")
        self._callable_ids = IdCache()  # callable -> hook id
        self._everywhere: list = []  # (package, attr, wrapped, original) of wrap_everywhere
        self._replaced: list[tuple[Any, str, Any, bool, Any]] = []  # (owner, attr, original, own attr)
        # patches of objects a fresh import replaced since (and wrap_everywhere's call-site
        # copies): left in place for code that still holds them, undone by unpatch
        self._kept: list[tuple[Any, str, Any, bool, Any]] = []
        self._kept_everywhere: list = []
        self._bind_table: tuple = ()  # bind_classes: (module, class name, ...) entries, and the bind
        self._bind: Callable[[tuple, type], None] = lambda entry, cls: None
        self._bound: set = set()  # (module, class name) of the table given to the bind
        self._bind_watched: set = set()  # modules whose import runs bind_loaded
        self._bind_lock = threading.RLock()  # held only while binding (no import under it)

    # ------------------------------------------------------------ to implement

    @abc.abstractmethod
    def _patch(self) -> None:
        """Patch the framework's dispatcher (``wrap``/``replace``); raise ``PatchError``
        before changing anything when a target is not where expected."""

    def _unpatch(self) -> None:
        """The adapter's own clean-up; ``unpatch`` undoes every ``replace``/``wrap`` after it."""

    def _lockdown(self) -> None:
        """Best effort, when ``_patch`` failed: make the framework's gated calls deny."""

    def upstream_fail_closed(self) -> bool:
        """True when the installed release already fails closed on its own."""
        if not self.fail_closed_upstream or self.version is None:
            return False
        return self._in(self.fail_closed_upstream)

    @abc.abstractmethod
    def to_verdict(self, native: Any) -> Verdict:
        """The framework's native answer -> Verdict; raise ``Invalid`` for junk."""

    # ------------------------------------------------------------ provided

    @property
    def version(self) -> Optional[str]:
        if self._version is None:
            try:
                from importlib.metadata import version

                self._version = version(self.distribution)
            except Exception:  # noqa: BLE001 - broken distribution metadata: the version is unknown (None), not an error
                return None
        return self._version

    def _framework(self) -> str:
        """``<name> <version>`` (or the name alone), for a reason's wording."""
        version = self.version
        framework = self._framework_text
        if framework is None or framework[0] != version:
            framework = self._framework_text = (version, f"{self.name} {version}" if version else self.name)
        return framework[1]

    def _in(self, spec: str) -> bool:
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version

        try:
            return SpecifierSet(spec).contains(Version(self.version or ""))
        except InvalidVersion:
            return False

    def in_range(self) -> bool:
        return self.version is not None and (not self.supported or self._in(self.supported))

    def patch(self) -> str:
        """Patch the framework. Idempotent; never raises; returns the state. A patch that
        was lost (its module reloaded, an attribute put back by someone else) is noticed
        here and applied again."""
        with self._lock:
            if self.state == "patched" and not self.intact():
                problem(f"failsecure: the {self.name} patch was lost (a module reloaded or imported afresh?); patching it again")
                self._forget_lost()
                self.state = "unpatched"
            if self.state in ("patched", "native", "refused"):
                return self.state
            try:
                if self.upstream_fail_closed():
                    self.state = "native"
                    log.info("failsecure: %s %s already fails closed; not wrapped", self.name, self.version)
                    return self.state
                if not self.in_range():
                    problem(f"failsecure: {self.name} {self.version} is an untested release (supported {self.supported})", level=30)
                self._patch()
                self.state = "patched"
            except Exception as exc:  # noqa: BLE001 - any failure to patch refuses the adapter (loud, and every call denies)
                self.refuse(_refusal(exc))
            return self.state

    def patch_late(self, patch: Callable, *args: Any) -> None:
        """``patch(*args)`` for a module imported after this adapter patched (from a
        ``when_imported`` hook): any failure refuses the adapter, as in ``patch()``."""
        try:
            patch(*args)
        except Exception as exc:  # noqa: BLE001 - any failure to patch a late module refuses the adapter (loud, and every call denies)
            self.refuse(_refusal(exc))

    def intact(self) -> bool:
        """Every attribute this adapter replaced still holds what it put there, on the
        objects the program now gets: a module removed from ``sys.modules`` and imported
        afresh (or a class a reload defined again) is a new, unpatched object."""
        for owner, attr, _, _, new in self._replaced:
            try:
                if vars(owner).get(attr, _ABSENT) is not new or _superseded(owner):
                    return False
            except Exception:  # noqa: BLE001 - a hostile owner: the patch counts as lost, and is applied again
                return False
        return True

    def _forget_lost(self) -> None:
        """After a lost patch: put back what is still ours, leave what was replaced since
        (a reloaded module's fresh functions), then the adapter's own clean-up. Patches
        of objects a fresh import superseded, and the wrapped copies call sites imported
        by name, stay: code still holding them keeps its gates (``unpatch`` undoes them)."""
        kept = []
        for entry in reversed(self._replaced):
            owner, attr, original, own, new = entry
            try:
                if _superseded(owner):
                    kept.append(entry)
                elif vars(owner).get(attr, _ABSENT) is new:
                    if own:
                        setattr(owner, attr, original)
                    else:
                        delattr(owner, attr)
            except Exception:  # noqa: BLE001 - best-effort undo of one lost patch; the clean-up below is reported
                pass
        self._replaced.clear()
        held = (self._kept + kept[::-1], self._kept_everywhere + self._everywhere)
        self._kept, self._kept_everywhere, self._everywhere = [], [], []
        self._bind_table, self._bound = (), set()
        try:
            with internal_error(f"failsecure: {self.name} clean-up after a lost patch raised {{type}}"):
                self._unpatch()
        finally:
            self._kept, self._kept_everywhere = held[0] + self._kept, held[1] + self._kept_everywhere

    def refuse(self, reason: str) -> None:
        """Mark the adapter refused: loud, and every decision of it denies from now on."""
        self.state = "refused"
        self.refused_reason = reason
        problem(f"failsecure: cannot patch {self.name} {self.version} ({reason}); its gated tool calls are denied")
        with internal_error(
            f"failsecure: the {self.name} lockdown failed ({{type}}); its tools may run unguarded: "
            f"uninstall {self.distribution} or fix the failsecure installation"
        ):
            self._lockdown()

    def unpatch(self) -> None:
        """Undo the patch, or a refused adapter's lockdown. Idempotent."""
        with self._lock:
            if self.state in ("patched", "refused"):
                self._bind_table, self._bound = (), set()
                self._unpatch()
                self.restore()  # whatever replace/wrap did, the adapter's own _unpatch or not
            self.state = "unpatched"
            self.refused_reason = None

    # ------------------------------------------------------------ patching helpers

    def replace(self, owner: Any, attr: str, new: Any) -> Any:
        """Set ``owner.attr = new``, remembering the original for ``restore``. Returns the
        original (looked up through ``getattr``)."""
        own = attr in vars(owner)
        original = vars(owner)[attr] if own else getattr(owner, attr, None)
        setattr(owner, attr, new)
        self._replaced.append((owner, attr, original, own, vars(owner).get(attr, new)))
        return original

    def wrap(self, owner: Any, attr: str, wrapper: Callable) -> None:
        """Wrap ``owner.attr`` with a wrapt wrapper ``wrapper(wrapped, instance, args,
        kwargs)``; the wrapped function keeps its signature, hash and equality."""
        import wrapt

        original = vars(owner)[attr] if attr in vars(owner) else getattr(owner, attr)
        if isinstance(owner, type) and isinstance(original, (staticmethod, classmethod)):
            raise PatchError(f"{owner.__name__}.{attr} is a {type(original).__name__}")
        self.replace(owner, attr, wrapt.FunctionWrapper(original, wrapper))

    def bind_classes(self, table: tuple, bind: Callable[[tuple, type], None]) -> None:
        """Give each entry ``(module, class name, ...)`` of ``table`` to ``bind(entry, cls)``
        once: now where the module is loaded and the class is a class, otherwise when one
        of the modules is imported (one still being imported is done when it has finished)
        or ``bind_loaded`` is called. From ``_patch``; ``unpatch`` ends it, a new patch
        starts it again."""
        self._bind_table, self._bind, self._bound = table, bind, set()
        self.bind_loaded()
        for module in dict.fromkeys(entry[0] for entry in table):
            if module not in self._bind_watched:
                self._bind_watched.add(module)
                when_imported(module, lambda _module: self.bind_loaded())

    def bind_loaded(self) -> None:
        """The entries of ``bind_classes`` whose class has loaded since (cheap once all are)."""
        table = self._bind_table
        if len(self._bound) == len(table):
            return
        with self._bind_lock:
            for entry in table:
                key = entry[:2]
                module = sys.modules.get(entry[0])
                cls = getattr(module, entry[1], None) if module is not None else None
                if key in self._bound or not isinstance(cls, type) or self._bind_table is not table:
                    continue
                self._bound.add(key)
                self._bind(entry, cls)

    def bindings(self, original: Any, package: str) -> list:
        """Every loaded module of ``package`` (the package and its submodules) that holds
        ``original`` under its own name: the call sites that imported it by name."""
        name = getattr(original, "__name__", None)
        found: list = []
        if not isinstance(name, str):
            return found
        for mod_name, module in list(sys.modules.items()):
            if module is None or not (mod_name == package or mod_name.startswith(package + ".")):
                continue
            try:
                if vars(module).get(name) is original:
                    found.append(module)
            except Exception:  # noqa: BLE001 - a module whose namespace cannot be read binds nothing of ours
                continue
        return found

    def wrap_everywhere(self, owner: Any, attr: str, wrapper: Callable, package: str) -> None:
        """``wrap`` ``owner.attr`` and put the same wrapped function in every module of
        ``package`` that imported it by name. ``restore`` also puts the original back in
        modules that imported the wrapped one while the patch was on."""
        original = vars(owner)[attr]
        self.wrap(owner, attr, wrapper)
        new = vars(owner)[attr]
        for module in self.bindings(original, package):
            if module is not owner:
                self.replace(module, attr, new)
        self._everywhere.append((package, attr, new, original))

    def restore(self) -> None:
        """Undo every ``replace``/``wrap``, last first."""
        everywhere, self._everywhere, self._kept_everywhere = self._kept_everywhere + self._everywhere, [], []
        for package, attr, new, original in reversed(everywhere):
            for module in self.bindings(new, package):
                try:
                    setattr(module, attr, original)
                except Exception:  # noqa: BLE001 - best-effort undo of one binding; the rest are still undone
                    pass
        self._replaced[:0], self._kept = self._kept, []
        while self._replaced:
            owner, attr, original, own, _ = self._replaced.pop()
            if own:
                setattr(owner, attr, original)
            else:
                try:
                    delattr(owner, attr)
                except AttributeError:
                    pass

    # ------------------------------------------------------------ self-test

    #: what a junk answer looks like natively (the self-test's junk gate returns it)
    self_test_junk: ClassVar[Any] = "DENY"

    @abc.abstractmethod
    def _probe(self, gate: Callable) -> bool:
        """Run ``gate`` as the only pre-tool gate through the framework's real dispatcher
        and return True when the framework would deny the tool call. ``gate`` accepts
        any arguments. Each adapter implements it; ``self_test`` does the rest."""

    @staticmethod
    def run_probe(probe: Callable[[], Any], default: Any = None, wait: float = PROBE_WAIT) -> Any:
        """``probe()`` for ``_probe``, which drives the framework's dispatcher (often with
        ``asyncio.run``): here when no event loop runs in this thread, else on a thread of
        its own that runs in a copy of this context (the self-test's config is set in
        it). Its answer, what it raised (raised here), or ``default`` when it did not end
        within ``wait`` seconds."""
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return probe()
        box: dict = {}
        context = contextvars.copy_context()

        def run() -> None:
            try:
                box["answer"] = context.run(probe)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, raised there
                box["error"] = exc

        thread = threading.Thread(target=run, name="failsecure-probe", daemon=True)
        thread.start()
        thread.join(wait)
        if "error" in box:
            raise box["error"]
        return box.get("answer", default)

    def self_test(self) -> list[Check]:
        """The fault matrix's self-test rows (``failsecure.testing.matrix.SELF_TEST``: a
        raising, a hanging and a junk gate, and a gate with no opinion as their twin), each
        the only gate of one call through the framework's real dispatcher: each must be
        denied for the row's failure category, without the secret the raising gate
        carries in its message, or run."""
        if self.state != "patched":
            return [Check("patched", False, f"state {self.state}")]
        from .testing.matrix import SECRET, self_test_cases

        release = threading.Event()

        def gate_for(case: Any) -> Callable:
            kind = case.gates[0][1]

            def gate(*args, **kwargs):
                if kind == "raise":
                    raise RuntimeError(f"gate failed on {SECRET}")
                if kind == "hang":
                    release.wait(10)
                elif kind == "junk":
                    return case.junk
                return None  # "abstain": no opinion

            gate.__name__ = gate.__qualname__ = _PROBE_NAMES.get(kind, kind)  # what a hook id names it by
            return gate

        checks = []
        scope = policy.using(_SelfTestConfig())  # this context only: real calls elsewhere keep theirs
        scope.__enter__()
        try:
            for label, case in self_test_cases(self.self_test_junk):
                seen: list[Decision] = []
                _capture.decisions = seen
                try:
                    denied = self._probe(gate_for(case))
                except Exception as exc:  # noqa: BLE001 - a probe's failure is the self-test's failed check, not an internal error
                    checks.append(Check(label, False, f"the probe raised {type(exc).__name__}"))
                    continue
                finally:
                    _capture.decisions = None
                decision = seen[-1] if seen else None
                failures = {o.failure for o in decision.outcomes} if decision is not None else set()
                if case.expect == "run":
                    ok = not denied and decision is not None and not decision.denied
                    detail = "allowed" if ok else f"denied={denied}, decision={decision.action.value if decision else None}"
                else:
                    reason = (decision.reason or "") if decision is not None else ""
                    ok = denied and decision is not None and decision.denied and Failure(case.failure) in failures
                    if not ok:
                        detail = f"denied={denied}, failures={sorted(f.value for f in failures if f)}"
                    elif SECRET in reason:
                        ok, detail = False, "the deny reason carries the gate's exception text"
                    else:
                        detail = reason
                checks.append(Check(label, ok, detail or ""))
        finally:
            release.set()
            scope.__exit__(None, None, None)
        return checks

    # ------------------------------------------------------------ guarded calls

    def hook_id(self, name: str) -> str:
        return f"{self.name}:{name}"

    def setting(self, name: str) -> str:
        """One of this framework's own settings in the config in force
        (``[frameworks."<name>"]``, declared in its ``ADAPTERS`` entry): what the trusted
        config set (a project file only tightens), else the declared default."""
        return policy.current().setting(self.name, name)

    def callable_id(self, fn: Any) -> str:
        """The hook id of a Python callable: ``<framework>:<module>.<qualname>``. Never
        raises and never calls the object's own ``__str__``/``__repr__``. Cached per
        callable object (the cache keeps the object, so its ``id`` is never reused)."""
        known = self._callable_ids.get(fn)
        if known is not None:
            return known
        return self._callable_ids.put(fn, self.hook_id(hookid.callable_name(fn)))

    def hook_call(self, hook_id: str, fn: Callable, *args, _validate=None, _interactive=False, **kwargs) -> Outcome:
        timeout = policy.current().timeout_for(hook_id, _waits(_interactive, hook_id))
        return guard.call(hook_id, fn, args, kwargs, validate=_validate or self.to_verdict, timeout=timeout)

    def hook_calls(self, calls: list, _interactive: bool | frozenset = False) -> list[Outcome]:
        """The sync hooks of one tool call, in order, each under the guard with its own
        deadline: ``calls`` is a list of ``(hook_id, fn, args, kwargs, validate or None)``.
        Hooks with deadlines share one thread hand-off instead of one each."""
        config = policy.current()
        return guard.call_each(
            [(h, fn, a, k, v or self.to_verdict, config.timeout_for(h, _waits(_interactive, h))) for h, fn, a, k, v in calls]
        )

    async def ahook_calls(self, calls: list, _interactive: bool | frozenset = False) -> list[Outcome]:
        """``hook_calls`` from an async dispatcher, in order: a coroutine hook is awaited on
        the loop within its deadline; each run of consecutive sync hooks is one thread
        hand-off (``guard.acall_each``), each hook with its own deadline, without holding
        the loop beyond ``guard.LOOP_GRACE``; a coroutine a sync hook returns is awaited
        within its deadline."""
        config = policy.current()
        outcomes: list[Outcome] = []
        run: list = []
        for h, fn, a, k, v in calls:
            validate, timeout = v or self.to_verdict, config.timeout_for(h, _waits(_interactive, h))
            if not guard.is_async(fn):
                run.append((h, fn, a, k, validate, timeout))
                continue
            if run:
                outcomes += await guard.acall_each(run)
                run = []
            outcomes.append(await guard.acall(h, fn, a or (), k, validate=validate, timeout=timeout))
        if run:
            outcomes += await guard.acall_each(run)
        return outcomes

    def settle_calls(self, calls: list, current: Callable[[], Any], hook: str, steps: Optional[list] = None,
                     _interactive: bool | frozenset = False, **rule: Any) -> list[Outcome]:
        """``settle`` for gates that run in order, every one of a pass (``finish_pass``):
        ``calls`` is one entry per gate, a ``hook_calls`` tuple or an Outcome (a gate
        already judged: it runs nothing). Pass 1 is one ``hook_calls`` batch, one thread
        hand-off for all its sync gates instead of one per gate: each gate's picture of
        the call is taken on the worker right after it. The passes after it (a gate
        rewrote the call) run ``steps`` (default: each gate's own ``hook_calls``)."""
        if len(calls) < 2 or not rule.get("finish_pass"):
            return settle(steps or _one_by_one(self.hook_calls, calls, _interactive), current, hook, **rule)

        def first(take: Callable[[Any], Any], start: Any) -> list:
            seen, batch = _pictured(calls, current, take)
            return _ran(calls, self.hook_calls(batch, _interactive), seen, start)

        return settle(steps or _one_by_one(self.hook_calls, calls, _interactive), current, hook, first=first, **rule)

    async def asettle_calls(self, calls: list, current: Callable[[], Any], hook: str, steps: Optional[list] = None,
                            _interactive: bool | frozenset = False, hold_loop: bool = False,
                            caused: Optional[Callable[[int], list]] = None, **rule: Any) -> list[Outcome]:
        """``settle_calls`` from an async dispatcher: pass 1 is one ``ahook_calls`` (each
        run of consecutive sync gates one hand-off, coroutine gates awaited on the loop,
        each pictured right after it ends). ``hold_loop``: each run of sync gates holds
        the loop while it runs (``hook_calls``), as a dispatcher that calls them on the
        loop itself does. ``caused(i)``: outcomes booked in pass 1 ahead of entry ``i``'s
        own (what that gate caused, read once the pass ran), as its step would."""
        if len(calls) < 2 or not rule.get("finish_pass"):
            return await asettle(steps or _aone_by_one(self.ahook_calls, calls, _interactive), current, hook, **rule)

        async def first(take: Callable[[Any], Any], start: Any) -> list:
            seen, batch = _pictured(calls, current, take, not hold_loop)
            if not hold_loop:
                return _ran(calls, await self.ahook_calls(batch, _interactive), seen, start, caused)
            outcomes: list = []
            run: list = []
            for c in batch:
                if not guard.is_async(c[1]):
                    run.append(c)
                    continue
                if run:
                    outcomes += self.hook_calls(run, _interactive)
                    run = []
                outcomes += await self.ahook_calls([c], _interactive)
            if run:
                outcomes += self.hook_calls(run, _interactive)
            return _ran(calls, outcomes, seen, start, caused)

        return await asettle(steps or _aone_by_one(self.ahook_calls, calls, _interactive), current, hook, first=first, **rule)

    async def ahook_call(self, hook_id: str, fn: Callable, *args, _validate=None, _interactive=False, _within=None,
                         _host=None, **kwargs) -> Outcome:
        """``_within``: the deadline the framework itself holds for this call (seconds
        left before the host stops waiting for the answer); the shorter of it and the
        configured one applies, and none left is a timeout at once. ``_host``: (the
        host's own deadline for the answer, in seconds; ``time.perf_counter()`` when its
        request came): failsecure's deadline ends at ``HOST_DEADLINE_SHARE`` of it, so
        the answer reaches the host before it gives up."""
        if _host is not None:
            limit, since = _host
            left = limit * HOST_DEADLINE_SHARE - (perf_counter() - since)
            _within = left if _within is None else min(_within, left)
        timeout = policy.current().timeout_for(hook_id, _waits(_interactive, hook_id))
        if _within is not None:
            if _within <= 0:
                return Outcome(hook=hook_id, failure=Failure.TIMEOUT)
            timeout = min(timeout, _within) if timeout else _within
        return await guard.acall(hook_id, fn, args, kwargs, validate=_validate or self.to_verdict, timeout=timeout)

    # ------------------------------------------------------------ deciding

    def _fixed(self, config: policy.Config) -> list[Outcome]:
        """Outcomes that deny before any hook is consulted: a refused adapter, a bad config."""
        fixed = []
        if self.state == "refused":
            fixed.append(Outcome(hook=f"{self.name}:failsecure", failure=Failure.MISSING))
        if config.error:
            fixed.append(Outcome(hook="failsecure:config", failure=Failure.INVALID))
        return fixed

    def _finish(self, config, outcomes: list[Outcome], tool, call_id, fail_closed=(), required=None) -> Decision:
        ask = self.can_ask()
        decision = _reduce.reduce(
            outcomes, config, config.required_for(self.name) if required is None else required, ask=ask,
            framework="" if ask else self._framework(), fail_closed=fail_closed,
        )
        if _capture.decisions is not None:
            _capture.decisions.append(decision)
        try:
            failed = decision.primary is not None and decision.primary.failure is not None
            if audit.listening(config.audit_path, failed, getattr(config, "audit_otel", False)):
                event = audit.decision_event(decision, framework=self.name, framework_version=self.version, tool=tool, call_id=call_id)
                audit.emit(event, config.audit_path)
        except Exception as exc:  # noqa: BLE001 - audit must never flip or lose a decision
            internal(exc, "failsecure: audit failed ({type})")
        return decision

    def failed(self, exc: BaseException, tool=None, call_id=None, hook: str = "failsecure:internal") -> Decision:
        """The Decision when failsecure itself (the core, or an adapter's translation)
        raised while gating a call: a deny, audited; never raises. Framework call sites
        swallow exceptions from their pre-tool hooks and run the tool."""
        tool = tool if isinstance(tool, str) else None
        call_id = call_id if isinstance(call_id, str) and call_id else None
        outcome = Outcome(hook=hook, failure=Failure.RAISED, exception_type=type_name(exc))
        if hook == "failsecure:internal":  # failsecure's own failure
            internal(exc, f"failsecure: {hook} raised {{type}} while gating a {self.name} tool call; denied")
        else:  # the framework's own code at that gating point raised: judged like a gate's exception, said as before
            problem(f"failsecure: {hook} raised {type_name(exc)} while gating a {self.name} tool call; denied")
        try:
            return self._finish(policy.current(), [outcome], tool, call_id)
        except Exception:  # noqa: BLE001 - the audit of a failure already reported: the deny stands without it
            return _reduce.reduce([outcome])

    def _start(self, tool, outcomes, arguments, call_id) -> tuple[policy.Config, list[Outcome], Any]:
        """(config, outcomes so far, the plugin gates to call) for one decision."""
        config = policy.current()
        found = list(outcomes)
        if config.error or self.state == "refused":
            found = self._fixed(config) + found
        plugins = _plugins()
        gates = plugins.gates()  # first: it loads the declared plugins
        if plugins.load_failures:  # a declared plugin gate that did not load is missing
            found += [Outcome(hook=h, failure=Failure.MISSING) for h in plugins.missing()]
        if not gates:
            return config, found, ()
        from . import integrity
        from .hookspecs import ToolCall

        # A plugin gate judges the call after the framework's gates did: it is shown a
        # copy (plain containers copied, no code of the arguments' objects run), so
        # what it does to what it is shown cannot change what runs.
        shown = integrity.snapshot(arguments)
        if shown is integrity.CHANGED:  # too big, or a cycle through a tuple: not shown, denied
            found.append(Outcome(hook="failsecure:arguments", failure=Failure.INVALID))
            shown = None
        kwargs = {"call": ToolCall(self.name, tool, shown, call_id)}
        return config, found, [(h, fn, (), kwargs, plugins.to_verdict, config.timeout_for(h)) for h, fn in gates]

    def decide(
        self, tool: Optional[str], outcomes: Iterable[Outcome], *, call_id=None, arguments=None, fail_closed=(), later=()
    ) -> Decision:
        """Reduce the framework's hook outcomes with the plugin gates, required hooks,
        config and patch state into one Decision, and audit it. ``fail_closed``: hook ids
        that opted into the framework's own fail-closed mode (their failures deny even
        under ``on_error = "allow"``). ``later``: hook ids of the gates this call is
        registered with that the framework asks at a later decision point
        (``decide_stage``: a confirmation or approval predicate); they are there, so a
        ``required`` naming one is met. Never raises."""
        try:
            config, found, gates = self._start(tool, outcomes, arguments, call_id)
            if gates:
                found += guard.call_each(gates)
            return self._finish(config, found, tool, call_id, fail_closed, required=self._required(config, later))
        except Exception as exc:  # noqa: BLE001 - failsecure's own failure while deciding: reported by failed(), which denies
            return self.failed(exc, tool, call_id)

    async def adecide(
        self, tool: Optional[str], outcomes: Iterable[Outcome], *, call_id=None, arguments=None, fail_closed=(), later=()
    ) -> Decision:
        """``decide`` for async dispatchers: plugin gates may be coroutines. Never raises
        (except the caller's own cancellation)."""
        try:
            config, found, gates = self._start(tool, outcomes, arguments, call_id)
            for hook_id, fn, args, kwargs, validate, timeout in gates:
                found.append(await guard.acall(hook_id, fn, args, kwargs, validate=validate, timeout=timeout))
            return self._finish(config, found, tool, call_id, fail_closed, required=self._required(config, later))
        except Exception as exc:  # noqa: BLE001 - failsecure's own failure while deciding: reported by failed(), which denies
            return self.failed(exc, tool, call_id)

    def _required(self, config, later) -> Optional[list]:
        """The required hook ids this decision checks: all but those asked later."""
        if not later:
            return None
        required = config.required_for(self.name)
        if not required:
            return None
        asked = set(later)
        return [r for r in required if r not in asked]

    @staticmethod
    def role(hook_id: str, strict: Optional[bool], config: Optional[policy.Config] = None) -> str:
        """``"gate"`` or ``"observer"`` for a hook the framework runs with every tool call:
        the adapter says what it saw (``strict``: the framework's own "my failure stops
        the call" mark; ``None``: unreadable), the config in force says what it means
        (``Config.role_for``)."""
        return (config or policy.current()).role_for(hook_id, strict)

    def would_deny(self, hook_id: str, failed: bool) -> bool:
        """Whether a deny answer (``failed=False``) or a failure (``failed=True``) of this
        hook would deny the call under the config in force: an observer's never does, a
        failure of an ``on_error = "allow"`` hook does not. For frameworks that stop a
        round at the first block: a hook whose block does not count must not stop it."""
        outcome = Outcome(hook=hook_id, failure=Failure.RAISED) if failed else Outcome(hook=hook_id, verdict=_DENY)
        return _reduce.effective(outcome, policy.current()) is Action.DENY

    def decide_stage(self, tool: Optional[str], outcomes: Iterable[Outcome], *, call_id=None, fail_closed=()) -> Decision:
        """A later decision point of a tool call whose gates were already decided (an
        approval or confirmation predicate the framework asks after its before-tool
        hooks): these outcomes with the config and the patch state, reduced and audited.
        The plugin gates and the required hooks belong to the call's first decision and
        are not consulted again. Never raises."""
        try:
            config = policy.current()
            found = list(outcomes)
            if config.error or self.state == "refused":
                found = self._fixed(config) + found
            return self._finish(config, found, tool, call_id, fail_closed, required=())
        except Exception as exc:  # noqa: BLE001 - failsecure's own failure while deciding: reported by failed(), which denies
            return self.failed(exc, tool, call_id)

    async def adecide_stage(self, tool: Optional[str], outcomes: Iterable[Outcome], *, call_id=None, fail_closed=()) -> Decision:
        """``decide_stage`` from an async dispatcher (it awaits nothing: the outcomes are in)."""
        return self.decide_stage(tool, outcomes, call_id=call_id, fail_closed=fail_closed)

    def can_ask(self) -> bool:
        """An ASK decision is rendered natively: the adapter can render one
        (``supports_ask``) and the patched release has the API for it (``ask_api`` is not
        False). Otherwise the core turns ASK into a deny."""
        return bool(self.supports_ask) and self.ask_api is not False

    def must_decide(self) -> bool:
        """A tool call with no gate of the framework's own still needs a decision: a
        failsecure plugin gate is registered (or declared and failed to load), a hook of
        this framework is ``required``, the config is broken, or the adapter refused. The
        core says so; an adapter asks before it takes upstream's ungated path."""
        try:
            plugins = _plugins()
            config = policy.current()
            return bool(config.error or self.state == "refused" or config.required_for(self.name)
                        or plugins.gates() or plugins.load_failures)
        except Exception:  # noqa: BLE001 - cannot tell (a broken config or plugin): decide, fail closed
            return True

    def requires_own(self) -> bool:
        """A hook of this framework itself (not a plugin gate) is ``required``: a dispatch
        point with none of the framework's hooks for the call still decides (the missing
        hook denies there)."""
        prefix = self.name + ":"
        return any(r.startswith(prefix) for r in policy.current().required_for(self.name))

    # ------------------------------------------------------------ the tool boundary
    # (issue 29, docs/ungoverned.md) An adapter wraps its framework's run entry points
    # (``wrap_run``) and the innermost tool execution (``wrap_boundary``;
    # ``wrap_subclasses`` where every tool class has its own), and calls ``granted``
    # where a decision allows a call. The core keeps the ledger, decides and audits
    # (``failsecure.boundary``).

    def user_gates(self) -> bool:
        """A gate of this framework is registered now (what an ungoverned call would
        bypass); default: ``inventory()`` is not empty."""
        return bool(self.inventory())

    def granted(self, decision: Decision, tool: Optional[str], call_id: Optional[str], arguments: Any,
                also: tuple = (), approved: bool = False) -> None:
        """Where ``decision`` allows a call: it may run once, with the judged ``arguments``
        (``also``: the same arguments as the framework itself normalises them before the
        tool runs); a deny or an ask takes back an earlier grant of the call id
        (``approved``: the framework's own approval prompt answered the ask yes, so an
        ask grants like an allow). Call it with the arguments as they are after every
        gate. Never raises."""
        try:
            action = decision.verdict.action
            if action is _A_DENY or (action is _A_ASK and not approved):
                _boundary.revoke(call_id)
                return
            _boundary.grant(tool, call_id, arguments, also)
        except Exception as exc:  # noqa: BLE001 - failsecure's own failure: reported; no grant, so the call is ungoverned (fail closed)
            internal(exc, f"failsecure: the {self.name} grant failed ({{type}})")

    def ungrant(self, tool: Optional[str], arguments: Any) -> None:
        """A later decision point of a call that an earlier one granted by tool and
        arguments (no call id) denied it: that grant goes (one of ``tool`` accepting
        ``arguments``), so no other path runs the tool on it. Only for a call this adapter
        knows it granted. Never raises."""
        try:
            _boundary.revoke_args(tool, arguments)
        except Exception as exc:  # noqa: BLE001 - failsecure's own failure: reported (the grant may stay)
            internal(exc, f"failsecure: the {self.name} grant was not taken back ({{type}})")

    @staticmethod
    def in_run() -> bool:
        """This code runs inside an agent run (a context-variable read)."""
        return _boundary.current() is not None

    @staticmethod
    def executing() -> bool:
        """A tool's execution that the boundary let run is under way in this context (this
        code is the tool's own, or what it calls)."""
        return _boundary.inside() is not None

    def mark_gated(self) -> None:
        """A gate of this framework is in force for the rest of the run this code is in
        (its ungoverned calls are denied); no-op outside a run."""
        run = _boundary.current()
        if run is not None:
            run.gated[self.name] = True

    def run_scope(self) -> "_boundary.run_scope":
        """``with self.run_scope():`` around a run entry point's body (``wrap_run`` does it)."""
        return _boundary.run_scope()

    def at_boundary(self, tool: Optional[str], call_id: Optional[str], arguments: Any, *, key: Any = None,
                    where: Optional[str] = None, gated: Optional[bool] = None) -> tuple:
        """At the innermost tool call: ``(None, token)`` to run it (``leave(token)`` after
        it ran), or ``(Decision, None)``: an ungoverned call, denied. Never raises."""
        try:
            return _boundary.check(self, tool, call_id, arguments, key, where, gated)
        except Exception as exc:  # noqa: BLE001 - never raises into the tool call: a failure is a deny, audited
            return self.failed(exc, tool, call_id, hook=f"{self.name}:{where or 'boundary'}"), None

    @staticmethod
    def leave(token: Any, failed: bool = False) -> None:
        """After the execution ``at_boundary`` let run (``failed``: it raised)."""
        _boundary.leave(token, failed)

    def wrap_run(self, owner: Any, attr: str, gated: Optional[Callable[[Any], bool]] = None,
                 gated_call: Optional[Callable[[Any, tuple, dict], bool]] = None) -> None:
        """Make ``owner.attr`` (a sync, async, generator or async-generator method, or an
        ``@asynccontextmanager`` one: its ``async with`` body) a run entry point: its body
        runs inside a run scope (a generator's: each step of it). ``gated(instance)``: the
        entering object has a gate of this framework registered (its run's ungoverned
        calls are then denied); ``gated_call(instance, args, kwargs)``: the same, told
        from the call (a gate passed in the run's arguments)."""
        adapter = self
        shape = _shape(vars(owner)[attr] if attr in vars(owner) else getattr(owner, attr))

        def enter(instance: Any, args: tuple, kwargs: dict) -> Any:
            scope = _boundary.run_scope()
            run = scope.__enter__()
            if (gated is not None or gated_call is not None) and not run.gated.get(adapter.name):
                try:
                    if (gated is not None and gated(instance)) or (gated_call is not None and gated_call(instance, args, kwargs)):
                        run.gated[adapter.name] = True
                except Exception:  # noqa: BLE001 - the framework's own object: cannot tell, fail closed
                    run.gated[adapter.name] = True
            return scope

        if shape == "agen":
            def wrapper(wrapped, instance, args, kwargs):
                async def run_gen():
                    scope = enter(instance, args, kwargs)
                    try:
                        async for item in wrapped(*args, **kwargs):
                            yield item
                    finally:
                        scope.__exit__()
                return run_gen()
        elif shape == "async":
            def wrapper(wrapped, instance, args, kwargs):
                async def run_coro():
                    scope = enter(instance, args, kwargs)
                    try:
                        return await wrapped(*args, **kwargs)
                    finally:
                        scope.__exit__()
                return run_coro()
        elif _async_cm(vars(owner)[attr] if attr in vars(owner) else getattr(owner, attr)):
            # an ``@asynccontextmanager`` method: the run is the ``async with`` body
            def wrapper(wrapped, instance, args, kwargs):
                return _ScopedAsyncCM(wrapped(*args, **kwargs), lambda: enter(instance, args, kwargs))
        elif shape == "gen":
            # a sync generator's body runs in its consumer's context: the run is entered
            # for each step only, so the consumer's own code between items is outside it
            def wrapper(wrapped, instance, args, kwargs):
                def run_gen():
                    scope = enter(instance, args, kwargs)
                    try:
                        run = _boundary.current()
                        inner = wrapped(*args, **kwargs)
                    finally:
                        scope.__exit__()
                    try:
                        while True:
                            with _boundary.run_scope(run):
                                try:
                                    item = next(inner)
                                except StopIteration:
                                    return
                            yield item
                    finally:
                        inner.close()
                return run_gen()
        else:
            def wrapper(wrapped, instance, args, kwargs):
                scope = enter(instance, args, kwargs)
                try:
                    return wrapped(*args, **kwargs)
                finally:
                    scope.__exit__()
        self.wrap(owner, attr, wrapper)

    def wrap_boundary(self, owner: Any, attr: str, read: Callable[[Any, tuple, dict], Any], where: Optional[str] = None,
                      give_back: bool = True) -> None:
        """Make ``owner.attr`` (sync, async or async generator) an innermost tool call.
        ``read(instance, args, kwargs)`` -> ``(tool, call_id, arguments, key, gated)``, or
        None when this is no tool execution to check. An ungoverned call that is denied
        raises ``Ungoverned`` (its text the Decision's reason) instead of running.
        ``give_back``: an execution that raised gives its grant back (the framework itself
        re-runs a judged call that raised); False where every re-run is dispatched, and so
        judged, again (a grant given back there is only left for another path to use)."""
        adapter = self
        shape = _shape(vars(owner)[attr])
        where = where or f"{getattr(owner, '__qualname__', owner)}.{attr}"

        def enter(instance: Any, args: tuple, kwargs: dict) -> Any:
            if _boundary.current() is None:  # outside any run: the fast way out
                return None
            try:
                found = read(instance, args, kwargs)
            except Exception:  # noqa: BLE001 - the tool's own attributes: cannot read them, so it matches no grant
                found = (None, None, CHANGED, None, None)
            if found is None:
                return None
            tool, call_id, arguments, key, gated = found
            denied, token = adapter.at_boundary(tool, call_id, arguments, key=key, where=where, gated=gated)
            if denied is not None:
                raise _boundary.Ungoverned(denied)
            return token

        if shape == "agen":
            def wrapper(wrapped, instance, args, kwargs):
                async def run_gen():
                    token = enter(instance, args, kwargs)
                    if token is None:
                        async for item in wrapped(*args, **kwargs):
                            yield item
                        return
                    key = _boundary.inside()
                    grant, token.grant = token.grant, None
                    _boundary.leave(token)  # the tool's own code runs inside; what it yields, outside
                    inner = wrapped(*args, **kwargs)
                    try:
                        while True:
                            step = _boundary.enter_inside(key)
                            try:
                                item = await inner.__anext__()
                            except StopAsyncIteration:
                                return
                            except BaseException:
                                step.run, step.grant = token.run, grant
                                _boundary.leave(step, failed=give_back)
                                step = None
                                raise
                            finally:
                                _boundary.leave(step)
                            grant = None  # it ran: the grant is spent
                            yield item
                    finally:
                        await inner.aclose()
                return run_gen()
        elif shape == "async":
            def wrapper(wrapped, instance, args, kwargs):
                async def run_coro():
                    token = enter(instance, args, kwargs)
                    try:
                        result = await wrapped(*args, **kwargs)
                    except BaseException:
                        _boundary.leave(token, failed=give_back)
                        raise
                    _boundary.leave(token)
                    return result
                return run_coro()
        else:
            def wrapper(wrapped, instance, args, kwargs):
                token = enter(instance, args, kwargs)
                try:
                    result = wrapped(*args, **kwargs)
                except BaseException:
                    _boundary.leave(token, failed=give_back)
                    raise
                _boundary.leave(token)
                return result
        self.wrap(owner, attr, wrapper)
        try:
            vars(owner)[attr]._self_failsecure_boundary = True
        except Exception:  # noqa: BLE001 - only a marker for doctor; the wrapper is in place either way
            pass

    def wrap_subclasses(self, base: type, attrs: tuple, read: Callable[[Any, tuple, dict], Any],
                        base_attrs: Optional[tuple] = None, give_back: bool = True) -> None:
        """``wrap_boundary`` on ``attrs`` of ``base`` and of every subclass that defines its
        own (the tool classes a framework and its users write), those defined later too
        (through ``base.__init_subclass__``). An abstract method is left alone.
        ``base_attrs``: those of ``attrs`` wrapped on ``base`` itself (default: all; a
        base's default that only hands on to another of them, and that the framework
        compares by identity, stays as it is); ``give_back``: as for ``wrap_boundary``."""
        adapter = self

        def bound(cls: type) -> None:
            for attr in (attrs if cls is not base or base_attrs is None else base_attrs):
                value = vars(cls).get(attr)
                if value is None or not callable(value) or getattr(value, "__isabstractmethod__", False):
                    continue
                if getattr(value, "_self_failsecure_boundary", False):
                    continue
                adapter.wrap_boundary(cls, attr, read, where=f"{cls.__qualname__}.{attr}", give_back=give_back)

        self.each_subclass(base, bound)

    def each_subclass(self, base: type, visit: Callable[[type], None]) -> None:
        """``visit(cls)`` for ``base`` and every subclass of it now, and for each subclass
        defined later while the adapter is patched (through ``base.__init_subclass__``,
        restored by ``unpatch``): the classes a framework and its users write."""
        adapter = self
        pending = [base]
        while pending:
            cls = pending.pop()
            visit(cls)
            pending += type.__subclasses__(cls)
        own = vars(base).get("__init_subclass__")
        original = own.__func__ if isinstance(own, classmethod) else None

        def __init_subclass__(cls, **kwargs):
            if original is not None:
                original(cls, **kwargs)
            else:
                super(base, cls).__init_subclass__(**kwargs)  # type: ignore[arg-type]  # base: a class, read at patch time
            if adapter.state != "patched":
                return
            try:
                with _bounding:
                    visit(cls)
            except Exception as exc:  # noqa: BLE001 - failsecure's own failure: reported; other classes keep theirs
                internal(exc, f"failsecure: {adapter.name}: a class's boundary was not set ({{type}})")

        self.replace(base, "__init_subclass__", classmethod(__init_subclass__))

    def inventory(self) -> list[str]:
        """The hook ids of the gates registered with the framework now (for ``doctor``).
        Adapters override it; the default knows none."""
        return []

    def status(self) -> dict:
        return {
            "patch_lost": self.state == "patched" and not self.intact(),
            "framework": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "supported": self.supported,
            "tested": list(self.tested),
            "in_range": self.in_range(),
            "state": self.state,
            "refused_reason": self.refused_reason,
            "fail_closed_upstream": self.upstream_fail_closed() if self.version else None,
        }


# ====================================================================== the adapter SDK
# An adapter module imports from the core only this module (``Adapter``, ``PatchError``,
# ``Check`` and the names below) and the result types (``failsecure.verdict``); ruff's
# banned-api rule in src/failsecure/adapters/ruff.toml holds every adapter to it.

from .boundary import Later  # noqa: E402  (a normalised form of the judged arguments, made only when needed)
from .failures import INVALID, process_failure  # noqa: E402  (failure categories; a command hook's exit)
from .guard import _awaitable as awaitable  # noqa: E402  (an answer that is an awaitable, told without running code of it)
from .guard import _close_awaitable as close_awaitable  # noqa: E402  (an awaitable closed unrun; never raises)
from .guard import is_async  # noqa: E402  (a hook Adapter.ahook_calls awaits on the loop, not one of a sync batch)
from .hookid import callable_name, command_name, nonempty_str, plain_str  # noqa: E402  (hook ids; a str-or-None of a framework value)
from .integrity import (  # noqa: E402  (argument integrity: docs/integrity.md)
    CHANGED,
    asettle,
    auntil_stable,
    fingerprint,
    same,
    settle,
    snapshot,
    unsettled,
    until_stable,
)
from .reduce import RANK, ask_unsupported  # noqa: E402  (what outranks what; the deny text of an ASK a framework cannot render)


def on_loop(loop: Any, fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with ``loop`` as this thread's running loop: a sync gate the
    framework calls on its event loop may ask for it (``asyncio.get_running_loop()``), and
    failsecure runs it on its worker for the deadline while the loop's own thread waits.
    The thread's own running loop (none, on a worker) is put back after."""
    events = sys.modules.get("asyncio.events")  # imported: the loop came from it
    get_loop = getattr(events, "_get_running_loop", None)
    set_loop = getattr(events, "_set_running_loop", None)
    if get_loop is None or set_loop is None:
        return fn(*args, **kwargs)
    previous = get_loop()
    set_loop(loop)
    try:
        return fn(*args, **kwargs)
    finally:
        set_loop(previous)


__all__ = (
    "Adapter", "Check", "IdCache", "Later", "PatchError", "Ungoverned",
    "CHANGED", "INVALID", "RANK", "activate", "adapter", "ask_unsupported", "asettle", "auntil_stable", "awaitable",
    "callable_name", "close_awaitable",
    "command_name", "current_config", "fingerprint", "internal", "internal_error", "is_async", "names_in_code", "nonempty_str", "on_loop", "past_deadline", "plain_str", "plugin_gates", "problem", "process_failure", "run_command", "same",
    "settle", "snapshot", "type_name", "unsettled", "until_stable", "when_imported",
)


def _one_by_one(run: Callable, calls: list, interactive: bool | frozenset) -> list:
    """The settling steps of ``calls``: each gate its own ``hook_calls``."""
    return [(lambda c=c: c) if isinstance(c, Outcome) else (lambda c=c: run([c], interactive)) for c in calls]


def _aone_by_one(run: Callable, calls: list, interactive: bool | frozenset) -> list:
    async def given(c: Outcome) -> Outcome:
        return c

    return [(lambda c=c: given(c)) if isinstance(c, Outcome) else (lambda c=c: run([c], interactive)) for c in calls]


_UNSEEN = object()


def _pictured(calls: list, current: Callable[[], Any], take: Callable[[Any], Any], loop: bool = False) -> tuple:
    """The gates of ``calls`` (no Outcome) with each ``fn`` wrapped to picture the call
    right after it, where it runs -> (the pictures per entry, the batch). ``loop``: the
    batch is ``ahook_calls``'s, where a sync gate that answers an awaitable has it run
    after the batch: its picture then reads as changed (the gates before it judge again)."""
    seen: list = [_UNSEEN] * len(calls)
    batch: list = []
    for i, c in enumerate(calls):
        if not isinstance(c, Outcome):
            h, fn, a, k, v = c
            wrapped = _apictured(fn, i, seen, current, take) if guard.is_async(fn) else _spictured(fn, i, seen, current, take, loop)
            batch.append((h, wrapped, a, k, v))
    return seen, batch


def _spictured(fn: Callable, i: int, seen: list, current: Callable[[], Any], take: Callable[[Any], Any], loop: bool) -> Callable:
    def gate(*args: Any, **kwargs: Any) -> Any:
        answer: Any = None
        try:
            answer = fn(*args, **kwargs)
            return answer
        finally:
            seen[i] = CHANGED if loop and guard._awaitable(answer) else take(current())

    return gate


def _apictured(fn: Callable, i: int, seen: list, current: Callable[[], Any], take: Callable[[Any], Any]) -> Callable:
    async def gate(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        finally:
            seen[i] = take(current())

    return gate


def _ran(calls: list, outcomes: list, seen: list, start: Any, caused: Optional[Callable[[int], list]] = None) -> list:
    """``(outcomes, picture after)`` per entry of ``calls`` for ``_Rule.replay``. A gate
    with no picture of its own (abandoned at its deadline, refused by the bounds) and an
    Outcome entry read as the call did after the entry before (``start`` for the first).
    ``caused(i)``: outcomes booked ahead of gate ``i``'s own."""
    ran: list = []
    at = 0
    last = start
    for i, c in enumerate(calls):
        if isinstance(c, Outcome):
            ran.append(([c], last))
            continue
        if seen[i] is not _UNSEEN:
            last = seen[i]
        ran.append(([*caused(i), outcomes[at]] if caused else [outcomes[at]], last))
        at += 1
    return ran


#: how many code objects one ``names_in_code`` scan reads at most (its helpers included)
_SCAN_LIMIT = 64
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def _closed_over(fn: Any) -> list:
    """The functions ``fn`` closes over (a factory's or a decorator's argument): their
    code is ``fn``'s too."""
    found = []
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, types.FunctionType):
            found.append(value)
    return found


def names_in_code(callback: Any, names: frozenset, builtin: tuple = ()) -> bool:
    """``callback``'s code names one of ``names`` (an attribute or a global it loads, or a
    function it closes over by that name), or loads one of the ``builtin`` functions by
    its builtin name: read in its own code, its nested functions', a ``functools.wraps``
    wrapper's and what it wraps, the functions it closes over, and the functions (and
    methods of its own class) of its own module it names. From the code objects only: none
    of its code runs. What a hook asks a person through, for an adapter whose framework
    waits for a person only there. May raise (a callable's own attributes)."""
    import builtins as _builtins
    import dis
    import functools

    fn, owner = callback, None
    wrappers: list = []  # a functools.wraps wrapper's own code is read too
    for _ in range(8):  # a bound method, functools.partial, functools.wraps wrappers
        if isinstance(fn, types.MethodType):
            owner, fn = type(fn.__self__), fn.__func__
        elif isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, types.FunctionType) and isinstance(vars(fn).get("__wrapped__"), types.FunctionType):
            wrappers.append(fn)
            fn = vars(fn)["__wrapped__"]
        else:
            break
    if not isinstance(fn, types.FunctionType):  # a callable object: its class's __call__
        owner = type(fn)
        fn = next((vars(k)["__call__"] for k in owner.__mro__ if "__call__" in vars(k)), None)
        if not isinstance(fn, types.FunctionType):
            return False
    module = fn.__module__
    pending = [(f.__code__, f.__globals__) for f in (*wrappers, fn)]
    for f in (*wrappers, fn):
        for value in _closed_over(f):
            if value.__name__ in names:
                return True
            pending.append((value.__code__, value.__globals__))
    seen: set = set()
    while pending and len(seen) < _SCAN_LIMIT:
        code, namespace = pending.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        loaded = code.co_names
        if not names.isdisjoint(loaded):
            return True
        for name in builtin:
            if name in loaded and namespace.get(name, getattr(_builtins, name)) is getattr(_builtins, name) and any(
                ins.opname in _GLOBAL_LOADS and ins.argval == name for ins in dis.get_instructions(code)
            ):
                return True
        pending += [(c, namespace) for c in code.co_consts if isinstance(c, types.CodeType)]
        for name in loaded:  # the functions of its own module (and class) it may call
            helper = namespace.get(name)
            if helper is None and owner is not None:
                helper = next((vars(k)[name] for k in owner.__mro__ if name in vars(k)), None)
                if isinstance(helper, (staticmethod, classmethod)):
                    helper = helper.__func__
            if isinstance(helper, types.FunctionType) and helper.__module__ == module:
                pending.append((helper.__code__, helper.__globals__))
    return False


def when_imported(module: str, callback) -> None:
    """Run ``callback(module)`` once ``module`` is imported (at once if it is): a second
    module an adapter patches when it loads. The drop-in's finder runs it; there is no
    second import-hook mechanism."""
    from . import _bootstrap

    _bootstrap.when_imported(module, callback)


def past_deadline(hook_id: str, since: float, until: Optional[float] = None) -> bool:
    """A hook handed the call at ``since`` passed it on (at ``until``, default now) later
    than its deadline in the config in force (none set: never late): its hand-on is a
    late answer, a timeout, whatever the tool did meanwhile."""
    limit = policy.current().timeout_for(hook_id)
    if not limit:
        return False
    return (perf_counter() if until is None else until) - since > limit


def current_config():
    """The config in force (``policy.Config``): read it, never change it."""
    return policy.current()


def plugin_gates() -> bool:
    """A failsecure plugin gate is registered (the only reader of a decision's arguments)."""
    return bool(_plugins().gates())


def run_command(argv, stdin: bytes, timeout: float, env=None):
    """Run one hook command under the runner's process supervision (new session, deadline,
    group kill, capped pipes): ``failsecure.runner.process.execute``."""
    from .runner import process

    return process.execute(argv, stdin, timeout, env)


def activate(name: str):
    """Activate one adapter by name (a framework's own plugin mechanism loading failsecure)."""
    from . import activation

    return activation.activate(name)


def adapter(name: str) -> "Adapter":
    """The adapter registered under ``name``."""
    from . import activation

    return activation.get(name)


