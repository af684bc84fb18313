"""``integrity.changed_paths``: the paths (dict keys and list indexes) at which two
pictures of a call differ, each the deepest container item both have that differs;
``[()]`` (the whole call) for what cannot be told apart finer. The settling rule's stamps
(docs/integrity.md) are decided on these paths: a path too coarse makes a stamp a
rewrite, a path too fine (or a missing one) lets a rewrite pass for a stamp."""

import pytest

from failsecure import integrity
from failsecure.integrity import CHANGED, changed_paths, fingerprint

OBJ = object()


def paths(before, after, **kw):
    return sorted(changed_paths(fingerprint(before), fingerprint(after), **kw), key=repr)


@pytest.mark.parametrize("before, after, expected", [
    ({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2]}, []),
    ({"a": 1}, {"a": 2}, [("a",)]),
    ({"a": 1, "b": 2}, {"a": 1, "b": 3}, [("b",)]),
    ({"a": 1}, {"a": 1, "b": 2}, [("b",)]),  # a key added
    ({"a": 1, "b": 2}, {"a": 1}, [("b",)]),  # a key removed
    ({"a": [1, 2, 3]}, {"a": [1, 5, 3]}, [("a", 1)]),  # a list item, by index
    ({"a": [1, 2, 3]}, {"a": [9, 2, 8]}, [("a", 0), ("a", 2)]),
    ({"a": (1, 2)}, {"a": (1, 3)}, [("a", 1)]),  # a tuple item
    ({"a": [1, 2]}, {"a": [1, 2, 3]}, [("a",)]),  # another length: the whole list
    ({"a": [1, 2]}, {"a": (1, 2)}, [("a",)]),  # another kind of container
    ({"a": {"b": [0, {"c": 1}]}}, {"a": {"b": [0, {"c": 2}]}}, [("a", "b", 1, "c")]),
    ({"a": [{"x": 1}, {"x": 2}]}, {"a": [{"x": 1}, {"x": 3}]}, [("a", 1, "x")]),
    ({"a": 1, "b": {"c": 1}}, {"a": 2, "b": {"c": 2}}, [("a",), ("b", "c")]),
    ({"a": {"b": 1}}, {"a": 5}, [("a",)]),  # a container replaced by a plain value
    ({"a": True}, {"a": 1}, [("a",)]),
    ({1: "x", "1": "y"}, {1: "x", "1": "z"}, [("1",)]),  # keys by type and value
    ({1: "x", "1": "y"}, {1: "z", "1": "y"}, [(1,)]),
    ([1, [2, 3]], [1, [2, 4]], [(1, 1)]),  # a list call
    ((1, 2), (1, 3), [(1,)]),
    ({OBJ: 1, "a": 1}, {OBJ: 1, "a": 2}, [()]),  # a key that is not plain: keys cannot be matched
    ({"a": {OBJ: 1, "b": 1}}, {"a": {OBJ: 1, "b": 2}}, [("a",)]),
])
def test_the_deepest_differing_items(before, after, expected):
    assert paths(before, after) == expected


def test_what_is_not_a_container_is_the_whole_call():
    assert changed_paths(1, 1) == [] and changed_paths("x", "x") == []
    assert changed_paths(1, 2) == [()]
    assert changed_paths(fingerprint({"a": 1}), 5) == [()]
    assert changed_paths(5, fingerprint({"a": 1})) == [()]
    assert changed_paths(("id", 1, OBJ), ("id", 1, OBJ)) == []  # an atom's picture: a tuple, no container
    assert changed_paths(("id", 1, OBJ), ("id", 2, OBJ)) == [()]
    assert changed_paths(fingerprint({"a": 1}), ("id", 1, OBJ)) == [()]
    assert changed_paths(("id", 1, OBJ), fingerprint({"a": 1})) == [()]
    assert changed_paths((), ()) == [] and changed_paths((), fingerprint([1])) == [()]
    assert changed_paths(fingerprint([1]), ()) == [()]


def test_what_cannot_be_pictured_differs_from_everything():
    pic = fingerprint({"a": 1})
    for before, after in ((CHANGED, pic), (pic, CHANGED), (CHANGED, CHANGED), (CHANGED, 1), (1, CHANGED)):
        assert changed_paths(before, after) == [()]


def test_the_budget_bounds_the_tokens_compared():
    """Each look at a value counts its tokens in both pictures; past ``budget`` the
    difference is the whole call."""
    before, after = fingerprint([1, 2]), fingerprint([1, 3])  # 3 tokens each
    # the root (3 + 3), then its items (1 + 1 each): 10 tokens in all
    assert changed_paths(before, after, budget=10) == [(1,)]
    assert changed_paths(before, after, budget=9) == [()]
    assert changed_paths(before, after, budget=6) == [()]
    big_a = fingerprint({"k": list(range(100)), "x": 1})
    big_b = fingerprint({"k": list(range(100)), "x": 2})
    assert changed_paths(big_a, big_b) == [("x",)]
    assert changed_paths(big_a, big_b, budget=len(big_a) + len(big_b)) == [()]  # the root alone fills it


def test_present_finds_a_path_only_where_the_picture_has_it():
    pic = fingerprint({"a": {"b": [1, {"c": 2}]}, 1: "x"})
    assert integrity._present(pic, ())
    assert integrity._present(pic, ("a",)) and integrity._present(pic, ("a", "b", 1, "c"))
    assert integrity._present(pic, (1,))
    assert not integrity._present(pic, (True,))  # keys by type too
    assert not integrity._present(pic, ("z",))
    assert not integrity._present(pic, ("a", "b", 5))
    assert not integrity._present(pic, ("a", "b", 0, "c"))  # through a plain value
    assert not integrity._present(5, ("a",)) and not integrity._present((), ("a",))
    assert not integrity._present(("id", 1, OBJ), ("a",))
