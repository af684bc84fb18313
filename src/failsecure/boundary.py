"""The tool boundary (issue 29, docs/ungoverned.md): a tool that runs inside an agent run
without a decision of failsecure for that very call is *ungoverned*.

Three pieces, all per run context (``contextvars``: a thread or task that copied the
context of a run is in it, a fresh thread is not):

- the run marker: an adapter wraps its framework's run entry points (an agent's
  run/invoke/kickoff, their async and streaming forms) in ``run_scope``; a run entered
  inside a run is the same run;
- the ledger: where a decision allows a call, ``grant`` records it for the one execution
  it judged, keyed by the framework's call id where it has one (the judged arguments'
  fingerprint must match too), else by tool name and the judged arguments' fingerprint;
- the boundary: the framework's innermost tool execution asks ``check``. Outside any
  run: nothing to do (application code calling a tool directly). Inside the execution
  of the same tool (a tool's ``run`` calling its own ``_run``): part of that execution.
  Otherwise a grant that matches is consumed (one execution per grant); none is an
  ungoverned call: audited with ``failure = "ungoverned"``, and denied whenever a gate
  is in force (``enforced``) unless the trusted config says ``ungoverned = "audit"``.

Cost per tool call: a context-variable read, one fingerprint of the arguments and one
dict operation at the grant, the same at the boundary (docs/ungoverned.md has numbers).
"""

from __future__ import annotations

import contextvars
import threading
from time import monotonic
from typing import Any, Optional

from . import audit, failures, integrity, policy
from .report import problem, type_name
from .verdict import Action, Decision, Failure, Outcome, Verdict

#: grants one run keeps at most; beyond it the oldest go (a grant never consumed: a
#: cached result, a call the framework dropped after its gates allowed it)
MAX_GRANTS = 4096

_CHANGED = integrity.CHANGED
_SCALARS = (str, int, type(None))
_FAST_LIMIT = 512  # items a fast picture holds at most (larger: integrity.fingerprint)


def _fast(value: Any, budget: list) -> Any:
    """The picture of plain JSON-like values (exact builtin types only: no code of the
    arguments' objects runs) in about a microsecond; None when ``value`` holds anything
    else or too much (then ``integrity.fingerprint`` pictures it)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is bool:
        return ("b", value)
    if kind is float:
        return ("f", value.hex())
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if kind is dict:
        out: list = ["d"]
        append = out.append
        for k, v in value.items():
            if type(k) is not str:
                return None
            append(k)
            if type(v) in _SCALARS:  # the common case, without a call
                append(v)
                continue
            pv = _fast(v, budget)
            if pv is None:
                return None
            append(pv)
        return tuple(out)
    if kind is list or kind is tuple:
        items: list = ["l" if kind is list else "t"]
        for v in value:
            pv = v if type(v) in _SCALARS else _fast(v, budget)
            if pv is None and v is not None:
                return None
            items.append(pv)
        return tuple(items)
    return None


def picture(value: Any) -> Any:
    """What a grant remembers of the judged arguments and an execution is matched by:
    equal only for equal plain content (others by identity); ``CHANGED`` matches nothing."""
    if type(value) is dict and len(value) < _FAST_LIMIT:  # the common case: a flat dict of plain values
        out: list = ["d"]
        append = out.append
        scalars = _SCALARS
        for k, v in value.items():
            if type(k) is not str or type(v) not in scalars:
                break
            append(k)
            append(v)
        else:
            return ("p", tuple(out))
    fast = _fast(value, [_FAST_LIMIT])
    if fast is not None:
        return ("p", fast)
    return integrity.fingerprint(value)


class Run:
    """One agent run's ledger: call id -> fingerprint, (tool, fingerprint) -> count."""

    __slots__ = ("by_id", "by_args", "gated")

    def __init__(self) -> None:
        self.by_id: dict = {}
        self.by_args: dict = {}  # tool -> list of the fingerprints each grant accepts
        #: framework -> a gate of it was registered with what entered the run
        self.gated: dict = {}

    def _trim(self) -> None:
        while len(self.by_id) > MAX_GRANTS:
            del self.by_id[next(iter(self.by_id))]
        while len(self.by_args) > MAX_GRANTS:
            del self.by_args[next(iter(self.by_args))]


_run: "contextvars.ContextVar[Optional[Run]]" = contextvars.ContextVar("failsecure_run", default=None)
#: the tool (its key) whose own execution is under way in this context
_inside: "contextvars.ContextVar[Any]" = contextvars.ContextVar("failsecure_inside", default=None)

#: ungoverned calls seen in this process, per framework (``failsecure doctor``)
seen: dict = {}


def current() -> Optional[Run]:
    """The run this context is in (None: not inside an agent run)."""
    return _run.get()


class run_scope:
    """``with run_scope():`` — the code inside is an agent run (a run inside a run is the
    same run). ``run``: enter that run (a generator's next step). Reentrant per context;
    ``__exit__`` never raises."""

    __slots__ = ("_token", "_given")

    def __init__(self, run: Optional[Run] = None) -> None:
        self._given = run

    def __enter__(self) -> Run:
        run = _run.get()
        if run is not None:
            self._token = None
            return run
        run = self._given or Run()
        self._token = _run.set(run)
        return run

    def __exit__(self, *exc: Any) -> None:
        token = self._token
        if token is not None:
            self._token = None
            try:
                _run.reset(token)
            except ValueError:  # exited in another context (a generator closed elsewhere)
                pass


class Later:
    """A form of the judged arguments (the framework's own normalisation of them) that is
    made only when an execution matches none of its grant's other forms. Made once, by
    one thread: another thread of the run that looks at it meanwhile (a concurrent tool
    batch) waits for it, up to the gates' deadline, rather than skip it (skipped, its
    own judged call would read as ungoverned); a raise matches nothing.

    ``Later(make)``: ``make()`` returns the form (the caller keeps the copy it works on).
    ``Later(make, *bound, judged=True)``: ``make(*bound, judged)`` returns it, ``judged``
    a copy of the arguments the grant judged that the core makes: rebuilt from the
    grant's own picture when they are plain values (nothing copied at the grant, the
    common case), else a snapshot taken at the grant. A Later is one grant's."""

    __slots__ = ("_make", "_seen", "_bound", "_source", "_maker")

    def __init__(self, make: Any, *bound: Any, judged: bool = False) -> None:
        self._make, self._seen = make, _NOT_YET
        self._maker: Optional[int] = None  # the thread making the form
        self._bound = bound if judged else None
        self._source: Any = _NOT_YET

    def _bind(self, first: Any, arguments: Any) -> None:
        """At the grant (``judged=True`` only): where the copy of the judged arguments
        will come from."""
        if type(first) is tuple and len(first) == 2 and first[0] == "p":
            self._source = first  # the fast picture holds all of them: rebuilt on a miss
        else:
            self._source = ("s", integrity.snapshot(arguments))

    def picture(self) -> Any:
        seen = self._seen
        if seen is not _NOT_YET:
            return seen
        with _MAKING:
            make = self._make
            if make is not None:
                self._make, self._maker = None, threading.get_ident()
        if make is None:  # being made right now: its form, once made (it may be this call's own grant)
            return self._made_elsewhere()
        seen = _CHANGED
        try:
            if self._bound is None:
                made = make()
            else:
                source = self._source
                if source is _NOT_YET:  # never granted: nothing it could be a form of
                    made = _CHANGED
                elif source[0] == "p":
                    made = make(*self._bound, _plain(source[1]))
                elif source[1] is _CHANGED:  # the judged arguments could not be copied
                    made = _CHANGED
                else:
                    made = make(*self._bound, source[1])
            seen = _CHANGED if made is _CHANGED else picture(made)
        except Exception:  # noqa: BLE001 - the framework's own helper failed: no second form, the judged one stands
            seen = _CHANGED
        finally:  # a BaseException out of make: no form (CHANGED), and nobody waits for one
            with _MAKING:
                self._seen, self._source = seen, None
                _MAKING.notify_all()
        return seen

    def _made_elsewhere(self) -> Any:
        """Another thread of the run makes this form: wait for it (a skipped form is a
        judged call denied as ungoverned) up to the gates' deadline; made by this very
        thread (its ``make`` looking again): no form."""
        if self._maker == threading.get_ident():
            return _CHANGED
        try:
            limit = float(policy.current().timeout or _MAKE_WAIT)
        except Exception:  # noqa: BLE001 - the config cannot be read: the default bound
            limit = _MAKE_WAIT
        end = monotonic() + limit
        with _MAKING:
            while self._seen is _NOT_YET:
                left = end - monotonic()
                if left <= 0:
                    return _CHANGED  # a form that is not made in time matches nothing
                _MAKING.wait(left)
            return self._seen


#: one condition for every Later: claimed and finished under it, so one thread makes a
#: form and the others of the run wait for it (only on a miss: a form made on demand)
_MAKING = threading.Condition(threading.Lock())
_MAKE_WAIT = 5.0  # seconds a thread waits for a form another thread makes (no timeout configured)


def _plain(fast: Any) -> Any:
    """The plain values a fast picture (``_fast``) was made of, as new objects (equal in
    content, type and order)."""
    if type(fast) is not tuple:
        return fast  # str, int, None
    tag = fast[0]
    if tag == "d":
        items = iter(fast[1:])
        return {k: _plain(v) for k, v in zip(items, items)}
    if tag == "l":
        return [_plain(v) for v in fast[1:]]
    if tag == "t":
        return tuple(_plain(v) for v in fast[1:])
    if tag == "b":
        return fast[1]
    if tag == "f":
        return float.fromhex(fast[1])
    raise ValueError("not a fast picture")


_NOT_YET = object()


def _accepts(pictures: tuple, seen: Any) -> bool:
    """A grant's forms accept the execution's picture ``seen``: a plain form at once, a
    ``Later`` one made now."""
    if seen in pictures:  # a Later never equals a picture (identity comparison)
        return True
    for p in pictures:
        if type(p) is Later:
            made = p.picture()
            if made is not _CHANGED and made == seen:
                return True
    return False


def _fingerprints(arguments: Any, also: tuple) -> tuple:
    """The pictures a grant with normalised forms ``also`` accepts (``grant`` pictures the
    judged arguments alone itself)."""
    first = picture(arguments)
    pictures = [first] if first is not _CHANGED else []
    for other in also:
        if type(other) is Later:
            if other._bound is not None:
                other._bind(first, arguments)
            pictures.append(other)
        else:
            p = picture(other)
            if p is not _CHANGED:
                pictures.append(p)
    return tuple(pictures)


def grant(tool: Optional[str], call_id: Optional[str], arguments: Any, also: tuple = ()) -> None:
    """A decision allowed this call: it may run once, with ``arguments`` (or one of the
    forms in ``also``: the framework's own normalisation of the judged arguments). No-op
    outside a run."""
    run = _run.get()
    if run is None:
        return
    if also:
        pictures = _fingerprints(arguments, also)
    else:
        one = picture(arguments)
        pictures = (one,) if one is not _CHANGED else ()
    if call_id is not None:
        run.by_id[call_id] = pictures  # one call id is one call: a later decision replaces
        if len(run.by_id) > MAX_GRANTS:
            run._trim()
        return
    grants = run.by_args.get(tool)
    if grants is None:
        grants = run.by_args[tool] = []
        if len(run.by_args) > MAX_GRANTS:
            run._trim()
    grants.append(pictures)
    if len(grants) > MAX_GRANTS:
        del grants[0]


def revoke(call_id: Optional[str]) -> None:
    """The call of this id was denied after all (a later decision point)."""
    run = _run.get()
    if run is not None and call_id is not None:
        run.by_id.pop(call_id, None)


def revoke_args(tool: Optional[str], arguments: Any) -> None:
    """A call granted by tool and arguments was denied after all (a later decision point
    of the same call): one grant of ``tool`` that accepts ``arguments`` goes."""
    run = _run.get()
    if run is None:
        return
    grants = run.by_args.get(tool)
    if not grants:
        return
    seen = picture(arguments)
    for pictures in list(grants):
        if _accepts(pictures, seen) and _take(grants, pictures):
            return


def _consume(run: Run, tool: Optional[str], call_id: Optional[str], arguments: Any) -> Optional[tuple]:
    """Take the grant this execution matches: ``(tool, call id, its fingerprints)``."""
    seen = picture(arguments)
    if seen is _CHANGED:
        return None
    if call_id is not None:
        pictures = run.by_id.get(call_id)
        if pictures is not None and _accepts(pictures, seen):
            # a Later's make is the framework's code: another thread of the run may have
            # taken this grant (or a later decision replaced it) meanwhile
            if run.by_id.get(call_id) is not pictures:
                return None
            run.by_id.pop(call_id, None)
            return tool, call_id, pictures
        return None
    grants = run.by_args.get(tool)
    if grants:
        for i, pictures in enumerate(grants):
            if seen in pictures:
                del grants[i]
                return tool, None, pictures
        for pictures in list(grants):  # then the forms made only on a miss
            if _accepts(pictures, seen):
                # by identity, not by index: while a Later was made (the framework's code)
                # another thread of the run may have taken a grant of this list (this one:
                # then look on)
                if _take(grants, pictures):
                    return tool, None, pictures
    return None


def _take(grants: list, pictures: tuple) -> bool:
    """Remove this very grant from ``grants``; False when it is gone already."""
    for i, g in enumerate(grants):
        if g is pictures:
            del grants[i]
            return True
    return False


class _Token:
    """One execution under way: the marker to reset, and the grant it consumed (given
    back when the execution raised: the framework's own retry of the judged call)."""

    __slots__ = ("inside", "run", "grant")

    def __init__(self, inside: Any, run: Optional[Run], grant: Optional[tuple]) -> None:
        self.inside, self.run, self.grant = inside, run, grant


class Ungoverned(PermissionError):
    """Raised at a framework's innermost tool call for an ungoverned call that is denied:
    the tool does not run. Its text is the Decision's reason (no arguments in it)."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason or "failsecure: ungoverned tool call denied")
        self.decision = decision


def check(adapter: Any, tool: Optional[str], call_id: Optional[str], arguments: Any, key: Any = None,
          where: Optional[str] = None, gated: Optional[bool] = None) -> tuple:
    """The boundary for one execution: ``(None, token)`` to run it (``leave(token)`` after),
    ``(Decision, None)`` for an ungoverned call that is denied. ``key``: what identifies
    the tool for "its own execution" (default ``tool``); ``where``: the path, for the
    audit's hook id (``<framework>:<where>``); ``gated``: the adapter knows a gate of its
    framework is registered for this call (None: ask ``adapter.user_gates()``)."""
    run = _run.get()
    if run is None:
        return None, None
    owner = getattr(adapter, "name", None)
    key = tool if key is None else key
    inside = _inside.get()
    # the tool's own execution, one level further in: this adapter's, or one another
    # adapter's boundary around the same tool let run on a grant (code-puppy's over
    # pydantic-ai's); one that another adapter let run ungoverned (it had no gate) is
    # judged here again by this adapter's rule
    if inside is not None and inside[1] == key and (inside[0] == owner or inside[2]):
        if inside[0] != owner:  # another adapter's grant let it on: this one's grant for it is spent too
            _consume(run, tool, call_id, arguments)
        return None, None
    taken = _consume(run, tool, call_id, arguments)
    if taken is not None:
        return None, _Token(_inside.set((owner, key, True)), run, taken)
    if gated is None:
        gated = run.gated.get(owner) or None
    decision = ungoverned(adapter, tool, call_id, where, gated)
    if decision.denied:
        return decision, None
    return None, _Token(_inside.set((owner, key, False)), None, None)


def inside() -> Any:
    """The execution under way in this context: ``(adapter name, tool key, granted)``."""
    return _inside.get()


def enter_inside(key: Any) -> Any:
    return _Token(_inside.set(key), None, None)


def leave(token: Optional[_Token], failed: bool = False) -> None:
    """The execution ended. ``failed``: it raised; its grant is good again (a framework
    retries a tool call that raised with the judged arguments, as upstream does)."""
    if token is None:
        return
    try:
        _inside.reset(token.inside)
    except ValueError:  # reset in another context (a generator closed elsewhere)
        pass
    if failed and token.grant is not None and token.run is not None:
        tool, call_id, pictures = token.grant
        token.grant = None
        if call_id is not None:
            token.run.by_id.setdefault(call_id, pictures)
        else:
            token.run.by_args.setdefault(tool, []).insert(0, pictures)


def enforced(adapter: Any, gated: Optional[bool] = None) -> bool:
    """An ungoverned call of this framework is denied: a gate of the framework is
    registered, or the core's rule says a decision is needed (``must_decide``: a plugin
    gate, a ``required`` hook, a broken config, a refused adapter) — unless the trusted
    config says ``ungoverned = "audit"`` (a broken config still denies)."""
    config = policy.current()
    if config.error:
        return True
    if getattr(config, "ungoverned", "deny") == "audit":
        return False
    try:
        if gated is None:
            gated = bool(adapter.user_gates())
    except Exception:  # noqa: BLE001 - the adapter's or framework's code: cannot tell, fail closed
        gated = True
    return bool(gated) or adapter.must_decide()


def ungoverned(adapter: Any, tool: Optional[str], call_id: Optional[str], where: Optional[str], gated: Optional[bool]) -> Decision:
    """The Decision on one ungoverned call, audited; counted in ``seen``. Never raises."""
    name = getattr(adapter, "name", "") or "failsecure"
    hook = f"{name}:{where or 'boundary'}"
    seen[name] = seen.get(name, 0) + 1
    try:
        deny = enforced(adapter, gated)
    except Exception:  # noqa: BLE001 - the config or a plugin broke: cannot tell, fail closed
        deny = True
    outcome = Outcome(hook=hook, failure=Failure.UNGOVERNED)
    reason = failures.failure_reason(hook, failures.UNGOVERNED)
    decision = Decision(Verdict(action=Action.DENY if deny else Action.ALLOW, reason=reason), (outcome,), (outcome,),
                        (Action.DENY if deny else Action.ALLOW,))
    problem(f"failsecure: a {name} tool ran without a decision at {hook} ({'denied' if deny else 'allowed, audited'})", level=30)
    try:
        config = policy.current()
        if audit.listening(config.audit_path, True, getattr(config, "audit_otel", False)):
            version = getattr(adapter, "version", None)
            event = audit.decision_event(decision, framework=name, framework_version=version, tool=tool, call_id=call_id)
            audit.emit(event, config.audit_path)
    except Exception as exc:  # noqa: BLE001 - the audit never flips a decision (and says so)
        problem(f"failsecure: audit failed ({type_name(exc)})")
    return decision
