"""The adapter SDK's shared pieces: ``IdCache`` (the one bounded cache keyed by an
object's identity) and ``Adapter.run_probe`` (the one way a ``_probe`` leaves a running
event loop)."""

import asyncio
import contextvars
import threading

import pytest

from failsecure.adapter import Adapter, IdCache


class Hostile:
    """Looked up by identity: its own __eq__ / __hash__ never run."""

    def __eq__(self, other):
        raise AssertionError("__eq__ ran")

    def __hash__(self):
        raise AssertionError("__hash__ ran")


def test_an_entry_is_found_for_that_very_object_only():
    cache = IdCache()
    a, b = Hostile(), Hostile()
    assert cache.put(a, "A") == "A"
    assert cache.get(a) == "A" and cache.get(b) is None and cache.get(b, False) is False
    cache.pop(a)
    assert cache.get(a) is None and len(cache) == 0


def test_the_cache_is_bounded():
    cache = IdCache(limit=3)
    kept = [object() for _ in range(10)]
    for i, obj in enumerate(kept):
        cache.put(obj, i)
        assert len(cache) <= 4
    assert cache.get(kept[-1]) == 9  # the newest entry is always there
    cache.clear()
    assert len(cache) == 0


def test_callable_ids_use_it():
    class Toy(Adapter):
        name = "toy"

        def _patch(self):
            pass

        def to_verdict(self, native):
            return native

        def _probe(self, gate):
            return False

    toy = Toy()

    def fn():
        pass

    assert toy.callable_id(fn) == toy.callable_id(fn) == f"toy:{fn.__module__}.{fn.__qualname__}"
    assert isinstance(toy._callable_ids, IdCache) and len(toy._callable_ids) == 1


probe_var = contextvars.ContextVar("probe_var", default="unset")


def test_without_a_loop_the_probe_runs_here():
    here = threading.get_ident()
    assert Adapter.run_probe(lambda: threading.get_ident()) == here


def test_inside_a_loop_the_probe_runs_on_a_thread_in_a_copy_of_this_context():
    here = threading.get_ident()

    async def main():
        probe_var.set("self-test config")
        return Adapter.run_probe(lambda: (asyncio.run(asyncio.sleep(0)), threading.get_ident(), probe_var.get()))

    _, where, seen = asyncio.run(main())
    assert where != here and seen == "self-test config"


def test_inside_a_loop_what_the_probe_raised_is_raised_here():
    def probe():
        raise KeyError("x")

    async def main():
        return Adapter.run_probe(probe)

    with pytest.raises(KeyError):
        asyncio.run(main())


def test_inside_a_loop_a_probe_that_does_not_end_answers_the_default():
    release = threading.Event()

    async def main():
        return Adapter.run_probe(lambda: release.wait(5), default="no answer", wait=0.05)

    try:
        assert asyncio.run(main()) == "no answer"
    finally:
        release.set()
