"""Interleaved rounds, unpatched vs patched, in one process: what every adapter bench
measures. ``fn(n)`` runs ``n`` calls and returns microseconds per call. Given a
``floors`` list, each round also measures this machine's thread hand-off floor
(``common.handoff_floor_us``) into it, so the floor is of the same machine state."""

from __future__ import annotations

import statistics


def _floor(floors: list | None, n: int) -> None:
    if floors is not None:
        from common import handoff_floor_us

        floors.append(handoff_floor_us(n=max(n, 300), repeat=1))


def rounds(adapter, fn, n: int, count: int, warmup: int | None = None, floors: list | None = None) -> tuple[list, list]:
    """(unpatched, patched) per-call figures of ``count`` alternating rounds, after two
    warm-up rounds of each (``warmup`` calls, default ``n``). Leaves the adapter patched."""
    for _ in range(2):
        adapter.unpatch()
        fn(warmup or n)
        adapter.patch()
        fn(warmup or n)
    unpatched, patched = [], []
    for _ in range(count):
        adapter.unpatch()
        unpatched.append(fn(n))
        adapter.patch()
        patched.append(fn(n))
        _floor(floors, n)
    return unpatched, patched


async def arounds(adapter, fn, n: int, count: int, warmup: int | None = None,
                  floors: list | None = None) -> tuple[list, list]:
    """``rounds`` for ``async def fn(n)``."""
    for _ in range(2):
        adapter.unpatch()
        await fn(warmup or n)
        adapter.patch()
        await fn(warmup or n)
    unpatched, patched = [], []
    for _ in range(count):
        adapter.unpatch()
        unpatched.append(await fn(n))
        adapter.patch()
        patched.append(await fn(n))
        _floor(floors, n)
    return unpatched, patched


def row(label: str, unpatched: list, patched: list, width: int = 34) -> str:
    """The medians side by side: unpatched, patched, µs added, ratio."""
    u, p = statistics.median(unpatched), statistics.median(patched)
    return f"    {label:<{width}} unpatched {u:9.1f}  patched {p:9.1f}  +{p - u:7.1f} us  x{p / u:.3f}"


def inside_run(fn, n: int, count: int) -> tuple[list, list]:
    """(outside, inside) per-call figures of ``count`` alternating rounds of the patched
    dispatch, outside any agent run and inside one (``boundary.run_scope``, what the
    adapters' run entry points enter): the difference is the tool boundary's own work
    per call (the decision's grant, the innermost call's check, its end)."""
    from failsecure import boundary

    def inside(k: int) -> float:
        with boundary.run_scope():
            return fn(k)

    for _ in range(2):
        fn(n)
        inside(n)
    outside, within = [], []
    for _ in range(count):
        outside.append(fn(n))
        within.append(inside(n))
    return outside, within
