"""What a grant remembers of the judged arguments (``boundary.picture``, docs/ungoverned.md
"Cost"): plain JSON-like values are pictured by a fast path that runs no code of the
arguments' objects, anything else by ``integrity.fingerprint``. Either way two pictures are
equal exactly when the fingerprints are (plain values by type and value: ``True`` is not
``1``, ``1.0`` is not ``1``, a list is not a tuple; other objects by identity), a picture
is taken when it is made (a later change of the arguments is other arguments), and a call
too deep or too large for the fast path is still pictured."""

import sys

import pytest

from failsecure import boundary, integrity


class Hostile:
    """An argument whose own code must never run while it is pictured or compared."""

    calls: list = []

    def __eq__(self, other):
        Hostile.calls.append("eq")
        return True

    def __hash__(self):
        Hostile.calls.append("hash")
        return 0

    def __iter__(self):
        Hostile.calls.append("iter")
        return iter(())


class Text(str):
    pass


SHARED = object()
NAN1, NAN2 = float("nan"), float("nan")

# (a, b, equal?): each pair as a tool call's arguments
PAIRS = [
    # flat dicts (the common case)
    ({"command": "ls", "n": 1, "x": None}, {"command": "ls", "n": 1, "x": None}, True),
    ({"command": "ls"}, {"command": "rm"}, False),
    ({"command": "ls"}, {"cmd": "ls"}, False),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, False),  # the order the arguments come in is part of the call
    ({"n": 1}, {"n": True}, False),
    ({"n": 1}, {"n": 1.0}, False),
    ({"n": None}, {"n": 0}, False),
    ({"n": 1.5}, {"n": 1.5}, True),
    ({"n": NAN1}, {"n": NAN2}, True),  # NaN equals itself here, as in the fingerprint
    ({"n": 0.0}, {"n": -0.0}, False),
    ({"n": True}, {"n": True}, True),
    ({"b": b"x"}, {"b": b"x"}, True),
    ({"b": b"x"}, {"b": "x"}, False),
    ({"s": Text("x")}, {"s": "x"}, False),
    # keys that are not str
    ({1: "a"}, {1: "a"}, True),
    ({1: "a"}, {True: "a"}, False),
    ({1: "a"}, {"1": "a"}, False),
    ({1: [2]}, {True: [2]}, False),
    ({"a": {1: "x"}}, {"a": {1: "x"}}, True),
    # nested containers (the fast path below the flat dict)
    ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 2}}, True),
    ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}}, False),
    ({"a": {"b": 1}}, {"a": {"c": 1}}, False),
    ({"a": 1, "b": [1]}, {"a": 2, "b": [1]}, False),
    ({"a": 1, "b": [1]}, {"c": 1, "b": [1]}, False),
    ({"a": [1, "x", None]}, {"a": [1, "x", None]}, True),
    ({"a": [1, "x", None]}, {"a": [1, "x", 2]}, False),
    ({"a": [1, "x", None]}, {"a": (1, "x", None)}, False),
    ({"a": [True]}, {"a": [1]}, False),
    ({"a": [1.0]}, {"a": [1]}, False),
    ({"a": [0.0]}, {"a": [-0.0]}, False),
    ({"a": {"b": True}}, {"a": {"b": 1}}, False),
    ({"a": {"b": [True, 2.5]}}, {"a": {"b": [True, 2.5]}}, True),
    ({"a": {"b": 1}}, {"a": ["b", 1]}, False),
    ({"a": []}, {"a": ()}, False),
    ({"a": {}}, {"a": []}, False),
    ({"a": [[1]]}, {"a": [[2]]}, False),
    # objects: by identity, never by their own __eq__
    ({"a": SHARED}, {"a": SHARED}, True),
    ({"a": object()}, {"a": object()}, False),
    ({"a": [SHARED]}, {"a": [SHARED]}, True),
    ({"a": [object()]}, {"a": [object()]}, False),
    ({"a": {"b": object()}}, {"a": {"b": object()}}, False),
    ({"a": {1, 2}}, {"a": {1, 2}}, False),
    ({"a": {1, 2}}, {"a": (1, 2)}, False),
    ({"a": Hostile()}, {"a": Hostile()}, False),
    ({"a": [Hostile()]}, {"a": [Hostile()]}, False),
    # arguments that are not a dict
    ("ls", "ls", True),
    ("ls", "rm", False),
    (5, 5, True),
    (5, True, False),
    (None, None, True),
    (None, 0, False),
    (2.5, 2.5, True),
    (["a", 1], ["a", 1], True),
    (["a", 1], ("a", 1), False),
    (["a", 1], {"a": 1}, False),
    ([["a"], {"b": 2}], [["a"], {"b": 2}], True),
    ([["a"], {"b": 2}], [["a"], {"b": 3}], False),
    ([], (), False),
    (SHARED, SHARED, True),
    (object(), object(), False),
    ({1, 2}, {1, 2}, False),
    # too large for the fast path (integrity.fingerprint pictures it)
    ({f"k{i}": i for i in range(600)}, {f"k{i}": i for i in range(600)}, True),
    ({f"k{i}": i for i in range(600)}, {f"k{i}": i + (i == 599) for i in range(600)}, False),
    ({"rows": [{"n": i} for i in range(600)]}, {"rows": [{"n": i} for i in range(600)]}, True),
    ({"rows": [{"n": i} for i in range(600)]}, {"rows": [{"n": i + (i == 599)} for i in range(600)]}, False),
]


@pytest.mark.parametrize("a, b, equal", PAIRS, ids=[f"{i}-{'eq' if e else 'ne'}" for i, (_, _, e) in enumerate(PAIRS)])
def test_pictures_are_equal_exactly_when_the_fingerprints_are(a, b, equal):
    Hostile.calls = []
    assert (integrity.fingerprint(a) == integrity.fingerprint(b)) is equal  # the reference
    pa, pb = boundary.picture(a), boundary.picture(b)
    assert (pa == pb) is equal
    assert pa == boundary.picture(a)  # the same arguments, pictured again
    assert pa is not integrity.CHANGED and pb is not integrity.CHANGED
    assert Hostile.calls == []  # no code of the arguments ran


def test_a_picture_is_taken_when_it_is_made():
    """A grant remembers the judged arguments as they were: the same objects changed in
    place afterwards are other arguments (the picture holds no container of the call)."""
    nested = {"a": {"b": [1, 2]}, "c": (3, [4])}
    flat = {"command": "ls"}
    items = [{"x": 1}, [2]]
    for value, change in ((nested, lambda: nested["a"]["b"].append(3)),
                          (nested, lambda: nested["c"][1].append(5)),
                          (flat, lambda: flat.update(command="rm -rf /")),
                          (items, lambda: items[0].update(x=2)),
                          (items, lambda: items[1].append(3))):
        before = boundary.picture(value)
        change()
        assert boundary.picture(value) != before


def test_a_deep_call_is_pictured_without_a_recursion_error():
    """The fast path stops after ``_FAST_LIMIT`` containers; deeper than that the iterative
    fingerprint pictures the call, so no nesting depth makes the picture raise."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(3000)  # room for the test's own frames (and a mutation tool's trampolines)
    try:
        def deep(leaf):
            value = [leaf]
            for _ in range(5000):
                value = [value]
            return {"a": value}

        assert boundary.picture(deep(1)) == boundary.picture(deep(1))
        assert boundary.picture(deep(1)) != boundary.picture(deep(2))
    finally:
        sys.setrecursionlimit(limit)



def test_plain_values_are_pictured_without_the_fingerprint(monkeypatch):
    """docs/ungoverned.md, "Cost": plain JSON-like arguments (exact dict, list, tuple, str,
    int, float, bool, None) are pictured by the fast path, in about a microsecond, up to
    ``_FAST_LIMIT`` containers; anything else, or more, by ``integrity.fingerprint``."""
    handed = []
    real = integrity.fingerprint

    def counting(value, *args):
        handed.append(value)
        return real(value, *args)

    monkeypatch.setattr(integrity, "fingerprint", counting)
    plain = [
        {"command": "ls", "n": 1, "flag": True, "ratio": 0.5, "none": None},
        {"a": {"b": {"c": [1, 2.5, None, True]}}, "d": [{"e": "f"}, ("g", None)]},
        {"rows": [[i, str(i)] for i in range(10)]},
        ["ls", ["-l", None], {"x": 1}],
        ("ls", 1),
        [None, None],
        "ls",
        7,
        True,
        1.5,
    ]
    for value in plain:
        boundary.picture(value)
    assert handed == []
    limit = boundary._FAST_LIMIT
    at_limit = {"rows": [[i] for i in range(limit - 2)]}  # the dict, its list and theirs: exactly the limit
    boundary.picture(at_limit)
    assert handed == []
    over = {"rows": [[i] for i in range(limit - 1)]}
    boundary.picture(over)
    assert handed == [over]
    others = [{"a": b"x"}, {1: "a"}, {"a": [object()]}, [Text("x")], {"a": {1, 2}}]
    for value in others:
        handed.clear()
        boundary.picture(value)
        assert handed == [value]
