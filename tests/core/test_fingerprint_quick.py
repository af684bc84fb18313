"""``integrity.fingerprint``'s quick path (small, shallow containers) makes the very
tokens of the general walker (``_stream``): pictures taken either way compare equal, and
``changed_paths`` reads them alike. Deep, large or cyclic values take the general walker."""

from hypothesis import given, settings
from hypothesis import strategies as st

from failsecure import integrity

_OBJ = object()

atoms = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5),
                  st.binary(max_size=3), st.just(_OBJ))
values = st.recursive(
    atoms,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(st.one_of(st.text(max_size=3), st.integers(), st.booleans()), inner, max_size=4)),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(values, max_size=5), st.dictionaries(st.text(max_size=4), values, max_size=5), st.tuples(values, values)))
def test_quick_pictures_are_the_general_walkers(value):
    assert integrity.fingerprint(value) == integrity._stream(value, integrity.BUDGET)


def test_a_shared_container_is_pictured_as_the_walker_pictures_it():
    shared = {"k": [1, 2.5, True]}
    value = {"a": shared, "b": shared, "c": (shared, [shared])}
    assert integrity.fingerprint(value) == integrity._stream(value, integrity.BUDGET)


def test_deep_large_and_cyclic_values_take_the_general_walker():
    deep: list = []
    at = deep
    for _ in range(integrity._QUICK_DEPTH + 5):
        at.append([])
        at = at[0]
    assert integrity.fingerprint(deep) == integrity._stream(deep, integrity.BUDGET)
    large = {str(i): [i, float(i)] for i in range(integrity._QUICK_TOKENS)}
    assert integrity.fingerprint(large) == integrity._stream(large, integrity.BUDGET)
    cyclic: dict = {"a": 1}
    cyclic["self"] = cyclic
    picture = integrity.fingerprint(cyclic)
    assert picture == integrity._stream(cyclic, integrity.BUDGET) and ("c", 1) in picture
    # a budget below the quick path's: the general walker says the value cannot be pictured
    assert integrity.fingerprint([1, 2, 3], budget=2) is integrity.CHANGED


def test_a_change_reads_as_the_same_path_either_way():
    before = {"command": "ls", "env": {"A": "1"}}
    after = {"command": "ls", "env": {"A": "2"}}
    quick = integrity.changed_paths(integrity.fingerprint(before), integrity.fingerprint(after))
    walked = integrity.changed_paths(integrity._stream(before, integrity.BUDGET), integrity._stream(after, integrity.BUDGET))
    assert quick == walked == [("env", "A")]
    # twin: no change, no path
    assert integrity.changed_paths(integrity.fingerprint(before), integrity.fingerprint(dict(before))) == []
