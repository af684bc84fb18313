"""``integrity.fingerprint``'s general walker (a call deeper, larger or more cyclic than the
quick path takes): a cycle is a reference to the container so many levels up (relative to
where it is, so the same container met at two depths is pictured where it is each time),
and the picture is ``CHANGED`` exactly when it would exceed ``budget`` tokens."""

from failsecure import integrity
from failsecure.integrity import CHANGED, fingerprint


def test_a_cycle_is_pictured_where_it_is():
    """R = [A, [A]] with A = [R]: A's reference to R is one level further up the second
    time. R' is built alike, except that its second A refers to the list holding it, not
    to R': another structure, another picture."""
    root, a = [], []
    a.append(root)
    root.extend([a, [a]])
    other, a1, holder = [], [], []
    a2 = [holder]
    holder.append(a2)
    a1.append(other)
    other.extend([a1, holder])
    assert fingerprint(root) != fingerprint(other)
    assert fingerprint(root) == fingerprint(root)
    twin, b = [], []
    b.append(twin)
    twin.extend([b, [b]])
    assert fingerprint(root) == fingerprint(twin)  # the same structure, built again


def test_the_budget_is_a_count_of_tokens():
    flat = [1, 2, 3, 4]  # five tokens: the list's opening and its four items
    assert fingerprint(flat, budget=5) is not CHANGED
    assert fingerprint(flat, budget=4) is CHANGED
    nested = [[1, 2], 3]  # five tokens
    assert fingerprint(nested, budget=5) == fingerprint(nested)
    assert fingerprint(nested, budget=4) is CHANGED
    ending = [1, 2, []]  # four tokens, the last one a container's opening
    assert fingerprint(ending, budget=4) == fingerprint(ending)
    assert fingerprint(ending, budget=3) is CHANGED
    shared = [1, 2]
    twice = [shared, shared]  # seven tokens, the second copy of ``shared`` from the first
    assert fingerprint(twice, budget=7) == fingerprint([[1, 2], [1, 2]])
    assert fingerprint(twice, budget=6) is CHANGED
    assert fingerprint({"a": 1}, budget=3) is not CHANGED and fingerprint({"a": 1}, budget=2) is CHANGED
    assert integrity.BUDGET >= 1_000_000
