"""Argument integrity: the gates judge the arguments the tool really runs with.

Where a framework lets a hook rewrite the arguments (or swap the tool) after another
hook approved them, the adapter hands the core its gates one by one (``settle`` /
``asettle``: a list of steps, each running one gate on the call as it is now) and how
to read the current call; the core runs them under the settling rule
(docs/integrity.md):

- pass 1 runs every gate in order, picturing the call before and after each one;
- a deny (or a failure the config counts as a deny) in any pass ends it, and stands:
  nothing is re-run after it (with ``finish_pass`` the rest of that pass still runs, for
  a framework that runs and audits every gate of a round);
- a change made by a gate is a new version of the call; the gate that made it has
  judged it (its own output). After a pass, only the gates whose last judgement was of
  an older version are run again, in order (the gates that ran before the last change);
  a gate that judged the current version is never run again (no side effect twice);
- in a re-run, a change confined to paths (dict keys, list indexes of the picture) that
  this same gate alone wrote in its earlier runs (added or refreshed: a field the call
  arrived with too) is a stamp (an idempotency key, a timestamp, a counter): it is taken back
  (the call keeps the stamp value every other gate judged; a fresh value nobody judged
  could be anything) and makes no other gate judge again. Where the call cannot be put
  back in place (not a plain dict or list changed in place), such a change is a
  rewrite. In a re-run, a gate handed the very call an earlier pass ended with that
  makes the very change it made from that call then is a repeat: in that pass the gates
  after it took its change back to this call, so where its change leads is already
  judged; the change is taken back as a stamp is (a tool renamed by one gate and renamed
  back by another runs, as upstream runs it, once every gate judged it). Any other
  change is a rewrite, and the gates that judged an older version judge again;
- after ``MAX_ROUNDS`` passes with a gate still behind, the call is unsettled: denied
  (``invalid``). Two gates fighting over one field are denied, never silently resolved.

What is compared is a ``fingerprint`` of the call: a flat tuple of tokens, containers
(exact dict, list, tuple) by content at any depth (iterative, cycle-safe, bounded by
``BUDGET`` tokens: a call larger than that cannot be pictured and reads as changed at
every look), plain values by type and value (``True`` is not ``1``), any other object by
identity (the picture holds the object, so a new object cannot take a freed one's address
and pass for it). Building and comparing pictures runs none of the hook's code (no
``__eq__``, ``__hash__``, ``__deepcopy__``), so a hostile object cannot hang the caller.
``snapshot`` copies plain containers (other objects are kept, by reference) and ``same``
compares by fingerprint: neither runs the hook's code, neither ever raises.

``until_stable`` / ``auntil_stable`` (whole rounds until a round changes nothing) remain
for a dispatcher whose gates run concurrently on one input and cannot be split per gate:
each round is handed a copy of the call its gates judge, and a round that changed that
copy in place (gates run in order) never settles. A round that only stamps is taken back
there too (given ``origin``), or is a rewrite when it cannot be put back.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Awaitable, Callable, Optional, Sequence, Union

from .verdict import Action, Failure, Outcome

#: passes of gates before a call that keeps being rewritten is denied
MAX_ROUNDS = 3

#: the most tokens a picture may hold; a larger call reads as changed (unpicturable)
BUDGET = 1_000_000

_CHANGED = object()
_NOTHING = object()
CHANGED = _CHANGED  # what a fingerprint returns for a value it cannot picture


_PLAIN = (str, int, bytes, type(None))  # bool is pictured with its type: True == 1
_OPEN: dict = {dict: "D", list: "L", tuple: "T"}
_ITEMS = dict.items


def fingerprint(value: Any, budget: int = BUDGET) -> Any:
    """An immutable picture of ``value`` built only from builtin types (comparing two
    pictures runs no code of the hook's objects): containers by content at any depth,
    others by identity. ``CHANGED`` when the picture would exceed ``budget`` tokens."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is bool:
        return ("b", value)
    if kind is float:
        return ("f", value.hex())  # NaN equals itself here
    if kind is dict or kind is list or kind is tuple:
        try:
            if budget >= _QUICK_TOKENS:
                out: list = []
                if _quick(value, out, _QUICK_DEPTH) and len(out) <= _QUICK_TOKENS:
                    return tuple(out)
            return _stream(value, budget)
        except BaseException:  # noqa: BLE001 - a container resized by another thread, memory: pictured as changed
            return _CHANGED
    # Same id while both pictures hold their object: the same object, and the tuple
    # comparison stops at the id or at the identity check, never calling the object's __eq__.
    return ("id", id(value), value)


#: a container this shallow and small is pictured by ``_quick`` (a tool call's arguments,
#: mostly): the very tokens ``_stream`` makes, without its bookkeeping; a deeper one, a
#: cycle (it never ends) or a larger one goes to ``_stream``
_QUICK_DEPTH = 12
_QUICK_TOKENS = 256


def _quick(value: Any, out: list, depth: int) -> bool:
    """Append ``value``'s tokens (a dict, list or tuple) to ``out`` as ``_stream`` would;
    False when it is deeper than ``depth`` or longer than ``_QUICK_TOKENS``."""
    kind = type(value)
    append = out.append
    append((_OPEN[kind], len(value)))
    plain = _PLAIN
    for v in chain.from_iterable(_ITEMS(value)) if kind is dict else value:
        k = type(v)
        if k in plain:
            append(v)
        elif k is bool:
            append(("b", v))
        elif k is float:
            append(("f", v.hex()))
        elif k is dict or k is list or k is tuple:
            if depth <= 0 or not _quick(v, out, depth - 1):
                return False
        else:
            append(("id", id(v), v))
    return len(out) <= _QUICK_TOKENS


def _stream(root: Any, budget: int) -> Any:
    """The flat token tuple of a container: ``(kind, n)`` opens a container of n items
    (a dict's as key, value, key, value...), ``("c", k)`` is a reference to the
    container k levels up (a cycle), every other token is one plain value or atom."""
    plain, opened = _PLAIN, _OPEN
    out: list = [(opened[type(root)], len(root))]
    append = out.append
    on_path = {id(root): 0}
    memo: dict = {}  # id -> (start, end): a container already pictured (a shared one)
    # frames: [iterator, id, start, cyclic]
    stack: list = [[iter(chain.from_iterable(_ITEMS(root))) if type(root) is dict else iter(root), id(root), 0, False]]
    while stack:
        frame = stack[-1]
        for v in frame[0]:
            kind = type(v)
            if kind in plain:
                append(v)
            elif kind is bool:
                append(("b", v))
            elif kind is float:
                append(("f", v.hex()))
            elif kind is dict or kind is list or kind is tuple:
                i = id(v)
                level = on_path.get(i)
                if level is not None:
                    append(("c", len(stack) - level))
                    for f in stack:
                        f[3] = True  # a picture with a cycle in it is not reused elsewhere
                    continue
                span = memo.get(i)
                if span is not None:
                    out.extend(out[span[0]:span[1]])
                    if len(out) > budget:
                        return _CHANGED
                    continue
                on_path[i] = len(stack)
                start = len(out)
                append((opened[kind], len(v)))
                stack.append([iter(chain.from_iterable(_ITEMS(v))) if kind is dict else iter(v), i, start, False])
                break
            else:
                append(("id", id(v), v))
            if len(out) > budget:
                return _CHANGED
        else:
            stack.pop()
            del on_path[frame[1]]
            if not frame[3]:
                memo[frame[1]] = (frame[2], len(out))
            continue
        if len(out) > budget:
            return _CHANGED
    return tuple(out)


def _container(token: Any) -> bool:
    return type(token) is tuple and len(token) == 2 and token[0] in ("D", "L", "T")


def _ends(s: tuple) -> list:
    """``ends[i]``: the index after the value that starts at token ``i``."""
    ends = [0] * len(s)
    stack: list = []  # [start, items still to read]
    for i, t in enumerate(s):
        if _container(t):
            count = t[1] * 2 if t[0] == "D" else t[1]
            if count:
                stack.append([i, count])
                continue
        ends[i] = i + 1
        while stack:
            stack[-1][1] -= 1
            if stack[-1][1]:
                break
            ends[stack.pop()[0]] = i + 1
    return ends


def _children(s: tuple, ends: list, i: int) -> list:
    """(key, index of the value) of each item of the container at ``i``; a dict key is
    its plain value, or None when it is not plain (then keys cannot be matched)."""
    kind, n = s[i]
    found, j = [], i + 1
    if kind == "D":
        for _ in range(n):
            key = s[j] if ends[j] == j + 1 and type(s[j]) in _PLAIN else _CHANGED
            j = ends[j]
            found.append((key, j))
            j = ends[j]
    else:
        for k in range(n):
            found.append((k, j))
            j = ends[j]
    return found


def changed_paths(before: Any, after: Any, budget: int = BUDGET) -> list:
    """The paths (tuples of dict keys and list indexes) at which two pictures differ:
    each the deepest container item both have that differs. ``[()]`` (the whole call)
    for what cannot be told apart finer."""
    if before is _CHANGED or after is _CHANGED or type(before) is not tuple or type(after) is not tuple:
        return [] if before is not _CHANGED and after is not _CHANGED and before == after else [()]
    if not before or not _container(before[0]) or not after or not _container(after[0]):
        return [] if before == after else [()]
    ea, eb = _ends(before), _ends(after)
    out: list = []
    work: list = [(0, 0, ())]
    steps = 0
    while work:
        i, j, path = work.pop()
        steps += (ea[i] - i) + (eb[j] - j)
        if steps > budget:
            return [()]
        if before[i:ea[i]] == after[j:eb[j]]:
            continue
        x, y = before[i], after[j]
        if _container(x) and _container(y) and x[0] == y[0]:
            if x[0] != "D" and x[1] == y[1]:
                for (k, u), (_, v) in zip(_children(before, ea, i), _children(after, eb, j)):
                    work.append((u, v, path + (k,)))
                continue
            if x[0] == "D":
                mine, theirs = _children(before, ea, i), _children(after, eb, j)
                keys = [k for k, _ in mine] + [k for k, _ in theirs]
                if _CHANGED not in keys and len(set(keys[:len(mine)])) == len(mine) and len(set(keys[len(mine):])) == len(theirs):
                    a, b = dict(mine), dict(theirs)
                    for k in a.keys() | b.keys():
                        if k in a and k in b:
                            work.append((a[k], b[k], path + (k,)))
                        else:
                            out.append(path + (k,))
                    continue
        out.append(path)
    return out


def _present(picture: Any, path: tuple) -> bool:
    """Whether ``path`` leads to a value in ``picture``."""
    if not path:
        return True
    if type(picture) is not tuple or not picture or not _container(picture[0]):
        return False
    ends, i = _ends(picture), 0
    for key in path:
        if not _container(picture[i]):
            return False
        for k, j in _children(picture, ends, i):
            if k == key and type(k) is type(key):
                i = j
                break
        else:
            return False
    return True


def snapshot(value: Any, budget: Optional[int] = None) -> Any:
    """A copy of what a gate saw: exact dicts, lists and tuples copied at any depth,
    every other object kept (by reference: no ``__deepcopy__`` or other code of it
    runs). ``CHANGED`` beyond ``budget`` containers (default ``BUDGET``) or for a cycle
    through a tuple. Other cycles and shared containers are copied as such."""
    kind = type(value)
    if kind not in _OPEN:
        return value
    try:
        if kind is dict and (budget is None or budget >= 1):
            # the common case, a flat dict (no container among its values): one container
            # to copy, and ``dict`` copies it as ``_copy`` would, keys and order included.
            # The copy is made first and its own values are scanned (by identity: no code
            # of them runs), so a value rewritten during the scan (another thread) cannot
            # slip a container into the copy by reference.
            copied = dict(value)
            for x in copied.values():
                k = type(x)
                if k is dict or k is list or k is tuple:
                    break
            else:
                return copied
        return _copy(value, BUDGET if budget is None else budget)
    except BaseException:  # noqa: BLE001 - a hostile or racing object cannot be copied: marked changed
        return _CHANGED


def _copy(root: Any, budget: int) -> Any:
    """Post-order, without recursion: a dict or list copy exists before its items are
    copied (a cycle through it resolves); a tuple is built once its items are (a cycle
    through a tuple cannot be copied: ``CHANGED``)."""
    made: dict = {}  # id -> the copy (cycles, shared containers)
    keep = []  # the originals stay alive while their ids are keys
    pending: set = set()  # tuples being copied (their ancestors in the walk)
    work = [(root, False)]
    count = 0
    while work:
        v, expanded = work.pop()
        i = id(v)
        kind = type(v)
        if not expanded:
            if i in made:
                continue
            count += 1
            if count > budget:
                return _CHANGED
            keep.append(v)
            if kind is tuple:
                pending.add(i)
            else:
                made[i] = {} if kind is dict else []
            work.append((v, True))
            for child in (v.values() if kind is dict else v):
                if type(child) in _OPEN and id(child) not in made:
                    if id(child) in pending:
                        return _CHANGED
                    work.append((child, False))
            continue
        if kind is dict:
            copy_ = made[i]
            for k, x in _ITEMS(v):
                copy_[k] = made[id(x)] if type(x) in _OPEN else x
        elif kind is list:
            made[i].extend([made[id(x)] if type(x) in _OPEN else x for x in v])
        else:
            made[i] = tuple([made[id(x)] if type(x) in _OPEN else x for x in v])
            pending.discard(i)
    return made[id(root)]


def same(before: Any, after: Any) -> bool:
    """True only when ``after`` provably equals ``before`` (a snapshot or a picture):
    compared by fingerprint, so no code of the hook's objects runs."""
    if before is _CHANGED or after is _CHANGED:
        return False
    a, b = fingerprint(before), fingerprint(after)
    if a is _CHANGED or b is _CHANGED:
        return False
    try:
        return bool(a == b)
    except BaseException:  # noqa: BLE001 - a hostile __eq__: not equal, so the call is judged again
        return False


def _denied(outcomes: list[Outcome]) -> bool:
    for o in outcomes:
        if o.failure is not None or (o.verdict is not None and o.verdict.action is Action.DENY):
            return True
    return False


def unsettled(hook: str) -> Outcome:
    """The outcome when the call was still being rewritten after ``MAX_ROUNDS``."""
    return Outcome(hook=hook, failure=Failure.INVALID)


# ---------------------------------------------------------------- per gate

Step = Callable[[], Union[Outcome, list]]


class _Rule:
    """The settling rule's bookkeeping for one call (see the module docstring)."""

    __slots__ = ("n", "current", "take", "fail_closed", "stamp_root", "latest", "judged", "version",
                 "written", "pic", "passes", "watch", "config", "saved", "save", "history", "ends", "asked")

    def __init__(self, n: int, current: Callable[[], Any], picture: Optional[Callable[[Any], Any]], fail_closed, stamp_root: tuple,
                 save: Optional[Callable[[Any], Any]] = None):
        self.n = n
        self.current = current
        self.take = picture or fingerprint
        self.fail_closed = fail_closed
        self.stamp_root = tuple(stamp_root)
        self.latest: list = [None] * n
        #: per gate: its ask of an earlier pass (an ask in any pass stands, as a deny does:
        #: a later rewrite does not turn it into the allow the gate gave the new call)
        self.asked: list = [None] * n
        self.judged = [0] * n
        self.version = 0
        self.written: list = [[] for _ in range(n)]
        self.passes = 1
        self.config: Any = None
        # one gate: nothing can have judged a stale call, nothing is re-run, no picture
        self.watch = n > 1
        self.pic = self.take(current()) if self.watch else None
        self.saved: Any = None  # before a re-run gate: how to put the call back as it is
        self.save = save or _put_back
        self.history: list = [[] for _ in range(n)]  # per gate: (picture in, picture out, pass) of its changes
        self.ends: dict = {}  # pass -> the picture of the call at its end

    def before(self) -> None:
        """A gate is about to run again: keep how to put the call back as every gate
        judged it, so that a stamp or a repeat this run writes can be taken back (see
        ``_keep``)."""
        self.saved = None
        if self.passes < 2 or not self.watch:
            return
        try:
            self.saved = self.save(self.current())
        except BaseException:  # noqa: BLE001 - the framework's own save hook: no saved copy, no restore
            self.saved = None

    def _keep(self, before: Any) -> bool:
        """Take a re-run's stamp or repeat back: the call runs with the value every other
        gate judged (a fresh value the others never saw could be anything: a default the
        policy would refuse). Only where the call can be put back (a plain dict or list
        changed in place, or the adapter's own ``save``) and reads as it did before the
        gate ran; elsewhere the change is a rewrite."""
        restore, self.saved = self.saved, None
        if restore is None:
            return False
        try:
            done = restore(self.current()) is True
        except BaseException:  # noqa: BLE001 - the framework's own restore hook: not restored
            done = False
        now = self.take(self.current())
        self.pic = now
        return done and now is not _CHANGED and _equal(now, before)

    def done(self, i: int, outs: Any, after: Any = _NOTHING) -> bool:
        """Gate ``i`` answered ``outs``: book its change; True when the pass must end
        (a deny that stands). ``after``: the picture of the call right after the gate
        (taken where it ran, see ``settle``'s ``first``); default: taken now."""
        if type(outs) is not list:
            outs = [outs]
        self.latest[i] = outs
        if self.asked[i] is None:
            for o in outs:
                if o.failure is None and o.verdict is not None and o.verdict.action is Action.ASK:
                    self.asked[i] = o
                    break
        if self.watch:
            if after is _NOTHING:
                after = self.take(self.current())
            before, self.pic = self.pic, after
            if before is _CHANGED or after is _CHANGED or not _equal(before, after):
                paths = changed_paths(before, after)
                again = self.passes > 1 and (self._stamp(i, paths) or self._repeat(i, before, after))
                if not (again and self._keep(before)):
                    self.version += 1
                    self.written[i].extend(paths)
                self.history[i].append((before, after, self.passes))
        self.judged[i] = self.version
        return self._stops(outs)

    def replay(self, ran: list, finish_pass: bool) -> bool:
        """Book a pass already run: ``ran`` is ``(outcomes, picture after)`` per gate in
        order, as ``done`` would have booked them one by one; True on a deny that stands."""
        denied = False
        for i, (outs, after) in enumerate(ran):
            if self.done(i, outs, after):
                denied = True
                if not finish_pass:
                    break
        return denied

    def end_pass(self) -> None:
        if self.watch:
            self.ends[self.passes] = self.pic

    def _repeat(self, i: int, before: Any, after: Any) -> bool:
        """Gate ``i`` was handed the call an earlier pass ended with and changed it as it
        did from that same call in that pass (whose later gates brought it back)."""
        if before is _CHANGED or after is _CHANGED:
            return False
        for seen, made, p in self.history[i]:
            end = self.ends.get(p, _CHANGED)
            if p < self.passes and end is not _CHANGED and _equal(end, before) and _equal(seen, before) and _equal(made, after):
                return True
        return False

    def _stamp(self, i: int, paths: list) -> bool:
        """Every changed path lies under one this gate alone wrote before, inside the
        stampable part of the call (whether or not the call arrived with it: taken back,
        the value every other gate judged is what runs)."""
        root, depth = self.stamp_root, len(self.stamp_root)
        for p in paths:
            if len(p) <= depth or p[:depth] != root:
                return False
            owned = False
            for q in self.written[i]:
                if len(q) > depth and p[:len(q)] == q:
                    if not any(_overlap(q, r) for g, mine in enumerate(self.written) if g != i for r in mine):
                        owned = True
                        break
            if not owned:
                return False
        return True

    def _stops(self, outs: list) -> bool:
        for o in outs:
            if o.failure is not None or (o.verdict is not None and o.verdict.action is Action.DENY):
                if self.config is None:
                    from . import policy

                    self.config = policy.current()
                from .reduce import effective

                if effective(o, self.config, self.fail_closed) is Action.DENY:
                    return True
        return False

    def stale(self) -> list:
        """The gates whose last judgement was of an older version, in order."""
        version = self.version
        return [i for i in range(self.n) if self.judged[i] < version]

    def ended(self, end: Optional[list]) -> list:
        """``result()``, the picture the rule compared last appended to ``end`` (if given)."""
        if end is not None:
            end.append(self.pic if self.watch else _CHANGED)
        return self.result()

    def result(self) -> list:
        """Each gate's latest outcomes, and its ask of an earlier pass when its latest
        answer neither asks nor denies nor failed (the reducer ranks the ask over that)."""
        found: list = []
        for i, outs in enumerate(self.latest):
            if outs is not None:
                found += outs
                ask = self.asked[i]
                if ask is not None and ask not in outs and not any(
                        o.failure is not None or (o.verdict is not None and o.verdict.action in (Action.ASK, Action.DENY))
                        for o in outs):
                    found.append(ask)
        return found


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)  # pictures: builtin tokens, objects compared by identity
    except BaseException:  # noqa: BLE001 - a hostile __eq__ in a picture: not equal
        return False


def _overlap(p: tuple, q: tuple) -> bool:
    n = min(len(p), len(q))
    return p[:n] == q[:n]


def _put_back(live: Any) -> Optional[Callable[[Any], bool]]:
    """The default ``save``: a call that is a plain dict or list, put back in place."""
    if type(live) is not dict and type(live) is not list:
        return None
    copy = snapshot(live)
    if copy is _CHANGED:
        return None

    def restore(now: Any) -> bool:
        if now is not live:
            return False
        if type(live) is dict:
            live.clear()
            live.update(copy)
        else:
            live[:] = copy
        return True

    return restore


def settle(steps: Sequence[Step], current: Callable[[], Any], hook: str, picture: Optional[Callable[[Any], Any]] = None,
           *, fail_closed: Any = (), stamp_root: tuple = (), finish_pass: bool = False,
           save: Optional[Callable[[Any], Any]] = None, first: Optional[Callable[[Any, Any], list]] = None,
           end: Optional[list] = None) -> list[Outcome]:
    """Run the gate ``steps`` (each runs one gate on the call as ``current()`` reads it
    now and returns its Outcome or Outcomes) under the settling rule (module docstring).
    Returns each gate's latest outcomes in gate order, plus ``unsettled(hook)`` when the
    call never settled. ``picture``: how to picture the call (default ``fingerprint``;
    must never raise; ``CHANGED`` for what it cannot picture). ``stamp_root``: the path
    of the arguments inside the picture (stamps are accepted only below it).
    ``fail_closed``: hook ids whose failures deny whatever the config says.
    ``finish_pass``: a deny still ends the settling, but the gates after it in the same
    pass run first (for a framework that runs, and audits, every gate of a round).
    ``save``: given the call, how to put it back later (a callable answering True once it
    did, or None); default: a plain dict or list restored in place.
    ``first``: runs pass 1 at once instead of the steps (with ``finish_pass``: every gate
    of a pass runs anyway): given how to picture the call and its picture now, it returns per gate its
    outcomes and the picture of the call right after that gate, taken where it ran
    (``Adapter.settle_calls``: all the sync gates on one worker, one thread hand-off
    for the pass, instead of one per gate). Later passes run the steps.
    ``end``: a list the picture of the call as the gates left it is appended to (the one
    the rule compared last, so the caller need not picture the call again), ``CHANGED``
    where none was taken (one gate)."""
    if len(steps) == 1 and first is None:  # one gate: nothing can have judged a stale call
        outs = steps[0]()
        if end is not None:
            end.append(_CHANGED)
        return list(outs) if isinstance(outs, list) else [outs]
    rule = _Rule(len(steps), current, picture, fail_closed, stamp_root, save)
    order: Sequence[int] = range(len(steps))
    for n in range(1, MAX_ROUNDS + 1):
        rule.passes = n
        denied = False
        if n == 1 and first is not None:
            denied = rule.replay(first(rule.take, rule.pic), finish_pass)
        else:
            for i in order:
                rule.before()
                if rule.done(i, steps[i]()):
                    denied = True
                    if not finish_pass:
                        break
        rule.end_pass()
        order = rule.stale()
        if denied or not order:
            return rule.ended(end)
    return rule.ended(end) + [unsettled(hook)]


async def asettle(steps: Sequence[Callable[[], Awaitable[Any]]], current: Callable[[], Any], hook: str,
                  picture: Optional[Callable[[Any], Any]] = None, *, fail_closed: Any = (), stamp_root: tuple = (),
                  finish_pass: bool = False, save: Optional[Callable[[Any], Any]] = None,
                  first: Optional[Callable[[Any, Any], Awaitable[list]]] = None, end: Optional[list] = None) -> list[Outcome]:
    """``settle`` for async steps (``first``: a coroutine function)."""
    if len(steps) == 1 and first is None:  # one gate: nothing can have judged a stale call
        outs = await steps[0]()
        if end is not None:
            end.append(_CHANGED)
        return list(outs) if isinstance(outs, list) else [outs]
    rule = _Rule(len(steps), current, picture, fail_closed, stamp_root, save)
    order: Sequence[int] = range(len(steps))
    for n in range(1, MAX_ROUNDS + 1):
        rule.passes = n
        denied = False
        if n == 1 and first is not None:
            denied = rule.replay(await first(rule.take, rule.pic), finish_pass)
        else:
            for i in order:
                rule.before()
                if rule.done(i, await steps[i]()):
                    denied = True
                    if not finish_pass:
                        break
        rule.end_pass()
        order = rule.stale()
        if denied or not order:
            return rule.ended(end)
    return rule.ended(end) + [unsettled(hook)]


# ---------------------------------------------------------------- whole rounds


def until_stable(run_round: Callable[[Any], list[Outcome]], current: Callable[[], Any], hook: str,
                 picture: Optional[Callable[[Any], Any]] = None, *, origin: Any = _NOTHING,
                 restore: Optional[Callable[[Any], None]] = None) -> list[Outcome]:
    """Run ``run_round(call)`` until a round leaves the call unchanged. For a dispatcher
    whose gates run **concurrently**, all on one input, and that cannot run them one by
    one (``settle`` is the rule for gates that run in order): ``call`` is a copy of the
    call as the round starts (the live call when it cannot be copied), and every gate of
    the round is handed it (or its own copy of it); a gate's rewrite lands where
    ``current()`` reads, never on ``call``. A round settles the call when it denies, or
    when ``current()`` then reads as ``call`` did and ``call`` itself is unchanged: every
    gate of the round was handed the call that runs. A round that changed ``call`` in
    place ran its gates in order, each on the last one's output (a gate after the change
    judged another call than the ones before it): that never settles, so such a
    dispatcher's rounds are unsettled (denied, ``invalid``), never run on a call a gate
    did not judge. Returns the last round's outcomes; a round with a deny or a failure
    ends it at once (nothing more to judge). ``hook`` names the unsettled outcome added
    when rewriting never stops.
    ``picture``: how to picture the call (default: the module's ``fingerprint``; it
    must never raise; return ``CHANGED`` for what it cannot picture).
    ``origin``: the call as it arrived; given, a round whose change is confined to paths
    earlier rounds added (absent from ``origin``) is a stamp: it is taken back, so the
    call runs with the value every gate of that round judged, and settles the call.
    ``restore(value)`` puts a copy of the call as the round judged it back in place of
    ``current()``; without it only a plain dict or list changed in place can be put back,
    and a stamp that cannot be put back is a rewrite (rounds go on)."""
    rounds = _Rounds(current, picture, origin, restore)
    asked: dict = {}
    for _ in range(MAX_ROUNDS):
        outcomes = run_round(rounds.before())
        _book_asks(outcomes, asked)
        if rounds.settled(outcomes):
            return _with_asks(outcomes, asked)
    return _with_asks(outcomes, asked) + [unsettled(hook)]


async def auntil_stable(run_round: Callable[[Any], Awaitable[list[Outcome]]], current: Callable[[], Any], hook: str,
                        picture: Optional[Callable[[Any], Any]] = None, *, origin: Any = _NOTHING,
                        restore: Optional[Callable[[Any], None]] = None) -> list[Outcome]:
    """``until_stable`` for async rounds."""
    rounds = _Rounds(current, picture, origin, restore)
    asked: dict = {}
    for _ in range(MAX_ROUNDS):
        outcomes = await run_round(rounds.before())
        _book_asks(outcomes, asked)
        if rounds.settled(outcomes):
            return _with_asks(outcomes, asked)
    return _with_asks(outcomes, asked) + [unsettled(hook)]


def _asks(o: Outcome) -> bool:
    return o.failure is None and o.verdict is not None and o.verdict.action is Action.ASK


def _book_asks(outcomes: Any, asked: dict) -> None:
    """Book each hook's first ask of any round into ``asked``."""
    for o in outcomes if isinstance(outcomes, list) else ():
        if isinstance(o, Outcome) and _asks(o):
            asked.setdefault(o.hook, o)


def _with_asks(outcomes: list, asked: dict) -> list:
    """The last round's outcomes with the earlier ask of every hook whose answer in it
    neither asks nor denies nor failed: an ask in any round stands, as a deny does
    (``settle``'s rule)."""
    if not asked:
        return outcomes
    this: dict = {}
    for o in outcomes:
        this.setdefault(o.hook, []).append(o)
    kept = list(outcomes)
    for hook, ask in asked.items():
        mine = this.get(hook)
        if mine is not None and not any(
                _asks(o) or o.failure is not None or (o.verdict is not None and o.verdict.action is Action.DENY)
                for o in mine):
            kept.append(ask)
    return kept


class _Rounds:
    """Whole-round settling: a round settles the call when it denies, or when neither
    the call nor the input its gates were handed changed, or when it only stamps (and
    the stamp can be taken back)."""

    __slots__ = ("current", "take", "first", "restore", "pic", "saved", "given")

    def __init__(self, current: Callable[[], Any], picture: Optional[Callable[[Any], Any]], origin: Any,
                 restore: Optional[Callable[[Any], None]]):
        self.current, self.take, self.restore = current, picture or fingerprint, restore
        self.first = origin is not _NOTHING and self.take(origin)
        self.pic: Any = None
        self.saved: Any = None
        self.given: Any = None

    def before(self) -> Any:
        """Picture the call as the round starts; the copy of it the round's gates are handed."""
        live = self.current()
        self.pic = self.take(live)
        copy = snapshot(live)
        self.saved = (live, copy)
        self.given = live if copy is _CHANGED else copy
        return self.given

    def settled(self, outcomes: list) -> bool:
        if _denied(outcomes):
            return True
        before = self.pic
        if not _unchanged(before, self.take(self.given)):  # the round's input changed under its gates
            return False
        after = self.take(self.current())
        if _unchanged(before, after):
            return True
        return self.first is not False and _round_stamp(self.first, before, after) and self._take_back(before)

    def _take_back(self, before: Any) -> bool:
        """Put the call back as the round judged it; False (a rewrite) when it cannot be."""
        live, copy = self.saved
        if copy is _CHANGED:
            return False
        try:
            if self.restore is not None:
                self.restore(snapshot(copy))
            elif self.current() is live and type(live) is dict:
                live.clear()
                live.update(copy)
            elif self.current() is live and type(live) is list:
                live[:] = copy
            else:
                return False
        except BaseException:  # noqa: BLE001 - a hostile object refusing the restore: not restored
            return False
        return _unchanged(before, self.take(self.current()))


def _round_stamp(origin: Any, before: Any, after: Any) -> bool:
    """The change from ``before`` to ``after`` lies only under paths that earlier rounds
    added to ``origin`` (not the whole call)."""
    if origin is _CHANGED or before is _CHANGED or after is _CHANGED:
        return False
    added = [q for q in changed_paths(origin, before) if q and not _present(origin, q)]
    if not added:
        return False
    return all(any(p[:len(q)] == q for q in added) for p in changed_paths(before, after))


def _unchanged(before: Any, after: Any) -> bool:
    return before is not _CHANGED and after is not _CHANGED and _equal(before, after)
