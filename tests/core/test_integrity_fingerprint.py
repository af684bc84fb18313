"""Argument integrity: what a fingerprint tells apart and what it equates, that it looks
at any depth, ``same``/``snapshot`` on what cannot be pictured, and the rounds (sync and async)
when a gate rewrites the call once, every time, or denies."""

import asyncio
import gc

import pytest

from failsecure import integrity
from failsecure.verdict import Action, Failure, Outcome, Verdict

#: the old depth bound (containers below it were pictured by identity until issue 25)
LIMIT = 32


def allow(hook="t:h"):
    return Outcome(hook=hook, verdict=Verdict(Action.ALLOW))


def rounds_until_stable(args, rewrite):
    """Run rounds of one allowing gate whose round ``rewrite(args, n)`` may rewrite args;
    return (rounds run, outcomes)."""
    count = [0]

    def round_(call):
        count[0] += 1
        rewrite(args, count[0])
        return [allow()]

    outcomes = integrity.until_stable(round_, lambda: args, "t:args")
    return count[0], outcomes


# -- fingerprint: what it tells apart, what it equates -------------------------------


def test_an_in_place_rewrite_of_a_nested_list_is_a_rewrite():
    args = {"argv": ["ls"], "cwd": "/tmp"}
    n, outcomes = rounds_until_stable(args, lambda a, r: r == 1 and a["argv"].append("-la"))
    assert n == 2 and args["argv"] == ["ls", "-la"]
    assert [o.failure for o in outcomes] == [None]
    # twin: reading the nested list changes nothing
    n, outcomes = rounds_until_stable({"argv": ["ls"]}, lambda a, r: list(a["argv"]))
    assert n == 1 and [o.action for o in outcomes] == [Action.ALLOW]


def test_rewriting_one_item_of_a_list_or_tuple_is_a_rewrite():
    args = {"argv": ["cat", "/tmp/x"]}
    n, _ = rounds_until_stable(args, lambda a, r: r == 1 and a["argv"].__setitem__(1, "/etc/shadow"))
    assert n == 2
    args = {"pair": ("cat", "/tmp/x")}
    n, _ = rounds_until_stable(args, lambda a, r: r == 1 and a.__setitem__("pair", ("cat", "/etc/shadow")))
    assert n == 2
    listed = ["cat", "/tmp/x"]  # the call's arguments as a top-level list
    n, _ = rounds_until_stable(listed, lambda a, r: r == 1 and a.__setitem__(0, "rm"))
    assert n == 2 and listed == ["rm", "/tmp/x"]


def test_equal_plain_values_are_the_same_picture_and_different_ones_are_not():
    fp = integrity.fingerprint
    built = {"cmd": "".join(["l", "s"]), "n": 10**20 + 1, "raw": b"x", "on": True, "none": None, "t": 0.5}
    assert fp(built) == fp({"cmd": "ls", "n": 10**20 + 1, "raw": b"x", "on": True, "none": None, "t": 0.5})
    assert fp(float("nan")) == fp(float("nan"))
    assert fp(0.0) != fp(-0.0)
    assert fp({"n": 1}) != fp({"n": 1.0})
    assert fp({"a": 1}) != fp({"b": 1}) and fp({"a": 1}) != fp({"a": 2})
    assert fp([1, 2]) != fp([2, 1]) and fp([1]) != fp((1,)) and fp({"a": 1}) != fp([("a", 1)])


def test_swapping_a_key_for_an_object_that_claims_to_be_equal_is_a_rewrite():
    compared = []

    class Key:
        def __init__(self, name):
            self.name = name

        def __eq__(self, other):  # a hook's object that says it equals anything
            compared.append(self.name)
            return True

        def __hash__(self):
            return 1

    first, second = Key("first"), Key("second")  # both kept alive: no reuse of an address
    args = {first: "value"}

    def swap(a, r):
        if r == 1:
            a.clear()
            a[second] = "value"

    n, outcomes = rounds_until_stable(args, swap)
    assert n == 2 and [o.failure for o in outcomes] == [None]
    assert compared == []  # comparing two pictures runs none of the hook's code
    # twin: the same key object kept is no rewrite
    n, _ = rounds_until_stable({first: "value"}, lambda a, r: None)
    assert n == 1 and compared == []


def test_an_object_replaced_by_a_new_one_of_the_same_type_is_a_rewrite():
    """A picture holds the objects it pictured by identity: while it is kept, a freed
    argument's address cannot go to the object a gate put in its place."""

    class Client:
        __slots__ = ()

    args = {"client": Client()}
    address = id(args["client"])
    before = integrity.fingerprint(args)
    args["client"] = None  # the gate drops the original...
    gc.collect()
    fresh = [Client() for _ in range(2000)]  # ...and allocates look-alikes
    assert address not in {id(c) for c in fresh}
    args["client"] = fresh[0]
    assert not integrity.same(before, integrity.fingerprint(args))
    # twin: the same object pictured twice is the same picture
    assert integrity.same(integrity.fingerprint(args), integrity.fingerprint(args))


def test_a_bool_rewritten_to_an_int_is_a_rewrite():
    before = integrity.fingerprint({"force": True, "n": 1, "items": [False]})
    assert not integrity.same(before, integrity.fingerprint({"force": 1, "n": 1, "items": [False]}))
    assert not integrity.same(before, integrity.fingerprint({"force": True, "n": True, "items": [False]}))
    assert not integrity.same(before, integrity.fingerprint({"force": True, "n": 1, "items": [0]}))
    # twin: the same values are the same picture
    assert integrity.same(before, integrity.fingerprint({"force": True, "n": 1, "items": [False]}))


def _lists(levels):
    value = ["x"]
    for _ in range(levels - 1):
        value = [value]
    return value


def _dicts(levels, key):
    value = {key: 1}
    for _ in range(levels - 1):
        value = {"n": value}
    return value


def test_nested_lists_are_read_by_content_at_any_depth():
    """Changed on purpose (issue 25): below the old depth bound a container was pictured
    by identity, so an in-place rewrite there was not seen; now content at any depth."""
    fp = integrity.fingerprint
    assert fp(_lists(LIMIT)) == fp(_lists(LIMIT))
    assert fp(_lists(LIMIT + 1)) == fp(_lists(LIMIT + 1))
    assert fp(_lists(5000)) == fp(_lists(5000))  # deeper than the recursion limit
    deep = _lists(LIMIT + 8)
    before = fp(deep)
    inner = deep
    while type(inner[0]) is list:
        inner = inner[0]
    inner[0] = "rm -rf /"  # an in-place rewrite far below the old bound
    assert fp(deep) != before
    # twin: the same deep call read twice is the same picture
    assert fp(deep) == fp(deep)


def test_nested_dicts_and_their_keys_are_read_by_content_at_any_depth():
    fp = integrity.fingerprint
    key_a, key_b = tuple(["k"]), tuple(["k"])
    assert key_a == key_b and key_a is not key_b
    assert fp(_dicts(LIMIT - 1, key_a)) == fp(_dicts(LIMIT - 1, key_b))
    assert fp(_dicts(LIMIT, key_a)) == fp(_dicts(LIMIT, key_b))
    assert fp(_dicts(LIMIT + 1, "k")) == fp(_dicts(LIMIT + 1, "k"))
    assert fp(_dicts(LIMIT + 10, "k")) != fp(_dicts(LIMIT + 10, "j"))


def test_a_call_beyond_the_budget_is_unpicturable_and_shared_containers_cost_their_size():
    fp = integrity.fingerprint
    shared: list = []
    for _ in range(64):  # 2**64 paths through 64 lists: pictured by content it is too big
        shared = [shared, shared]
    assert fp(shared) is integrity.CHANGED
    assert not integrity.same(shared, shared)
    # twin: a shared container within the budget is pictured by content, at its size
    small: list = ["x"]
    for _ in range(8):
        small = [small, small]
    assert fp(small) == fp(integrity.snapshot(small)) and len(fp(small)) > 2**8


def test_self_referential_arguments_are_pictured_without_recursing_forever():
    args = {"cmd": "ls"}
    args["self"] = args
    items = ["ls"]
    items.append(items)
    args["items"] = items
    assert integrity.fingerprint(args) == integrity.fingerprint(args)
    n, outcomes = rounds_until_stable(args, lambda a, r: None)
    assert n == 1 and [o.failure for o in outcomes] == [None]
    # twin: a rewrite of a self-referential call is still seen
    n, _ = rounds_until_stable(args, lambda a, r: r == 1 and a.__setitem__("cmd", "rm"))
    assert n == 2


# -- same / snapshot ------------------------------------------------------------------


class _EqualsAnything:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class _TruthyNotBool:
    def __eq__(self, other):
        return ["not", "a", "bool"]

    __hash__ = object.__hash__


class _RaisingEq:
    def __eq__(self, other):
        raise RuntimeError("no equality")

    __hash__ = object.__hash__


def test_same_is_never_true_for_what_could_not_be_pictured():
    assert integrity.same(integrity.CHANGED, integrity.CHANGED) is False
    assert integrity.same(integrity.CHANGED, _EqualsAnything()) is False
    assert integrity.same(_EqualsAnything(), integrity.CHANGED) is False
    # changed on purpose (issue 25): ``same`` compares by fingerprint, so an object
    # that claims equality is never asked (its __eq__ is hook code); the same object is
    anything = _EqualsAnything()
    assert integrity.same(anything, _EqualsAnything()) is False
    assert integrity.same(anything, anything) is True


def test_same_wants_a_real_true_from_the_comparison():
    assert integrity.same(_TruthyNotBool(), object()) is False
    assert integrity.same(_RaisingEq(), object()) is False
    assert integrity.same({"a": [1]}, {"a": [1]}) is True
    assert integrity.same({"a": [1]}, {"a": [2]}) is False


def test_snapshot_is_a_deep_copy_of_what_the_gate_saw():
    args = {"argv": ["ls"], "env": {"HOME": "/root"}}
    seen = integrity.snapshot(args)
    assert seen == args and seen is not args and seen["argv"] is not args["argv"]
    assert integrity.same(seen, args) is True
    args["argv"].append("-la")  # a later hook rewrites in place
    args["env"]["HOME"] = "/tmp"
    assert seen == {"argv": ["ls"], "env": {"HOME": "/root"}}
    assert integrity.same(seen, args) is False


def test_a_flat_dict_snapshot_is_a_copy_with_the_same_items_in_order():
    """A dict with no container among its values (the common case) is copied in one step:
    a new dict, its keys in order, its values the same objects (none copied, none of their
    code run), and a later rewrite of the original does not reach it."""
    marker = object()
    args = {"b": "x", "a": 1, "c": marker, "d": None, "e": 2.5, "f": {1, 2}}
    seen = integrity.snapshot(args)
    assert seen is not args and list(seen) == list(args) and all(seen[k] is args[k] for k in args)
    args["a"] = 2
    assert seen["a"] == 1 and integrity.same(seen, args) is False
    assert integrity.snapshot({"a": 1}, budget=0) is integrity.CHANGED  # the budget still holds


def test_snapshot_runs_none_of_the_objects_code():
    """Changed on purpose (issue 25): a snapshot used to deep-copy (running an object's
    __deepcopy__, outside any deadline); now plain containers are copied and any other
    object is kept by reference, so none of its code runs."""
    ran = []

    class NoCopies:
        def __deepcopy__(self, memo):
            ran.append("deepcopy")
            raise RuntimeError("no copies")

        def __reduce_ex__(self, protocol):
            ran.append("reduce")
            raise RuntimeError("no copies")

    client = NoCopies()
    seen = integrity.snapshot({"client": client, "argv": ["ls"]})
    assert seen["client"] is client and ran == []
    assert integrity.same(seen, {"client": client, "argv": ["ls"]}) is True
    assert integrity.same(seen, {"client": NoCopies(), "argv": ["ls"]}) is False
    assert integrity.same(integrity.snapshot({"client": NoCopies()}), {"client": None}) is False
    cyclic: dict = {"n": [1, (2, [3])]}
    cyclic["self"] = cyclic
    copy = integrity.snapshot(cyclic)
    assert copy["self"] is copy and copy["n"] == [1, (2, [3])] and copy["n"][1][1] is not cyclic["n"][1][1]


def test_a_call_that_cannot_be_pictured_never_settles():
    rounds = []
    outcomes = integrity.until_stable(
        lambda call: rounds.append(1) or [allow("t:a"), allow("t:b")], lambda: {"x": 1}, "t:args",
        picture=lambda value: integrity.CHANGED,
    )
    assert len(rounds) == integrity.MAX_ROUNDS == 3
    assert [o.hook for o in outcomes] == ["t:a", "t:b", "t:args"]
    assert outcomes[-1].failure is Failure.INVALID and outcomes[-1].verdict is None
    # twin: the default picture settles the same call at once
    rounds.clear()
    outcomes = integrity.until_stable(lambda call: rounds.append(1) or [allow()], lambda: {"x": 1}, "t:args")
    assert len(rounds) == 1 and [o.failure for o in outcomes] == [None]


# -- rounds ---------------------------------------------------------------------------


def test_the_last_rounds_outcomes_are_returned():
    args = {"cmd": "ls"}
    n = [0]

    def round_(call):
        n[0] += 1
        if n[0] == 1:
            args["cmd"] = "rewritten"
        return [Outcome(hook=f"t:round{n[0]}", verdict=Verdict(Action.ALLOW))]

    outcomes = integrity.until_stable(round_, lambda: args, "t:args")
    assert n[0] == 2 and [o.hook for o in outcomes] == ["t:round2"]


def test_a_failure_ends_the_rounds_at_once_even_while_rewriting():
    args = {"n": 0}

    def round_(call):
        args["n"] += 1
        return [allow(), Outcome(hook="t:slow", failure=Failure.TIMEOUT)]

    outcomes = integrity.until_stable(round_, lambda: args, "t:args")
    assert args["n"] == 1 and [o.failure for o in outcomes] == [None, Failure.TIMEOUT]


def test_async_a_gate_that_rewrites_every_time_is_unsettled():
    args = {"n": 0}

    async def round_(call):
        args["n"] += 1
        return [allow("t:a")]

    outcomes = asyncio.run(integrity.auntil_stable(round_, lambda: args, "t:args"))
    assert args["n"] == integrity.MAX_ROUNDS
    assert [o.hook for o in outcomes] == ["t:a", "t:args"]
    assert outcomes[-1].failure is Failure.INVALID and outcomes[-1].action is Action.ABSTAIN


def test_async_a_rewrite_settles_and_a_deny_or_failure_ends_at_once():
    args = {"argv": ["ls"]}

    async def rewrite_once(call):
        if args["argv"] == ["ls"]:
            args["argv"].append("-la")
        return [allow()]

    outcomes = asyncio.run(integrity.auntil_stable(rewrite_once, lambda: args, "t:args"))
    assert args == {"argv": ["ls", "-la"]} and [o.failure for o in outcomes] == [None]

    for ending in (Outcome(hook="t:no", verdict=Verdict(Action.DENY, "no")), Outcome(hook="t:no", failure=Failure.RAISED)):
        calls = []

        async def rewrite_and_end(call, ending=ending):
            calls.append(1)
            args["argv"].append("x")
            return [ending]

        outcomes = asyncio.run(integrity.auntil_stable(rewrite_and_end, lambda: args, "t:args"))
        assert len(calls) == 1 and outcomes == [ending]


def test_async_a_call_that_cannot_be_pictured_never_settles():
    rounds = []

    async def round_(call):
        rounds.append(1)
        return [allow()]

    outcomes = asyncio.run(integrity.auntil_stable(round_, lambda: {}, "t:args", picture=lambda v: integrity.CHANGED))
    assert len(rounds) == integrity.MAX_ROUNDS and outcomes[-1].hook == "t:args"
    assert outcomes[-1].failure is Failure.INVALID


def test_a_dict_rewritten_while_it_is_snapshotted_shares_no_container_with_the_copy():
    """Red team: a value whose type's metaclass hashes (code that runs while the snapshot
    looks for containers among the values; a thread racing the snapshot is the same window)
    turns an already-scanned flat value into a dict. The snapshot must not then keep that
    dict by reference: a later in-place rewrite of it would reach what the gate judged
    (``same`` would say unchanged, and a plugin gate's copy would be the running call)."""
    args: dict = {}

    class Meta(type):
        def __hash__(cls):
            if args.get("b") == "x":
                args["b"] = {"cmd": "ls"}
            return type.__hash__(cls)

        def __eq__(cls, other):
            return cls is other

    class Trigger(metaclass=Meta):
        pass

    args.update(b="x", a=Trigger())
    seen = integrity.snapshot(args)
    assert seen is integrity.CHANGED or type(seen["b"]) is not dict or seen["b"] is not args["b"]
    if seen is not integrity.CHANGED and type(seen["b"]) is dict:
        args["b"]["cmd"] = "rm -rf /"
        assert integrity.same(seen, args) is False

    # the allow twin: a flat dict nobody rewrites is a copy, and a rewrite of it is seen
    plain = {"b": "x", "a": Trigger()}
    seen = integrity.snapshot(plain)
    assert seen is not plain and seen == plain
    plain["b"] = "y"
    assert integrity.same(seen, plain) is False
