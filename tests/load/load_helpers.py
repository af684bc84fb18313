"""Shared by the load tests and the process workload (``load_proc.py``): a framework-free
adapter, the gates (allowing, hanging, raising; sync and async), a sampler of the
process's threads and RSS, and the audit file's checks."""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time

from failsecure.adapter import Adapter
from failsecure.verdict import ABSTAIN, Action, Invalid, Verdict


class Load(Adapter):
    """The smallest adapter: no framework, decisions driven by the test."""

    name = "load"
    distribution = "pytest"  # any installed distribution
    modules = ("fs_load_framework",)

    def _patch(self):
        pass

    def to_verdict(self, native):
        if native is None:
            return ABSTAIN
        if type(native) is str and native in ("allow", "deny"):
            return Verdict(action=Action(native))
        raise Invalid()

    def _probe(self, gate):
        return self.decide("probe", [self.hook_call("load:probe", gate)]).denied


KINDS = ("allow", "hang", "raise")

#: how long an allowing gate works: long enough that the calls overlap (in flight
#: together), far below the deadline
WORK = 0.05


def mix(n: int, seed: int) -> list[str]:
    """``n`` gate kinds, 10 % hanging and 10 % raising, in a fixed shuffled order."""
    kinds = ["hang"] * (n // 10) + ["raise"] * (n // 10)
    kinds += ["allow"] * (n - len(kinds))
    random.Random(seed).shuffle(kinds)
    return kinds


class Gates:
    """The gates of one run. Hanging gates wait on ``release`` (set at teardown)."""

    def __init__(self):
        self.release = threading.Event()
        self.runs: list = []  # one item per allowing gate that ran (append is atomic)

    def sync(self, kind: str):
        release = self.release

        def allow(*args, **kwargs):
            self.runs.append(1)
            time.sleep(WORK)
            return "allow"

        def hang(*args, **kwargs):
            release.wait(60)
            return "allow"  # too late: already denied at its deadline

        def boom(*args, **kwargs):
            raise RuntimeError("gate failed")

        return {"allow": allow, "hang": hang, "raise": boom}[kind]

    def coro(self, kind: str):
        async def allow(*args, **kwargs):
            self.runs.append(1)
            await asyncio.sleep(WORK)
            return "allow"

        async def hang(*args, **kwargs):
            await asyncio.Event().wait()  # cancelled at its deadline

        async def boom(*args, **kwargs):
            await asyncio.sleep(0)
            raise RuntimeError("gate failed")

        return {"allow": allow, "hang": hang, "raise": boom}[kind]


class Call:
    """One gated tool call of a run: where it came from, its gate, its decision, when."""

    __slots__ = ("origin", "call_id", "kind", "decision", "start", "end")

    def __init__(self, origin, call_id, kind, decision, start, end):
        self.origin, self.call_id, self.kind = origin, call_id, kind
        self.decision, self.start, self.end = decision, start, end

    @property
    def seconds(self) -> float:
        return self.end - self.start


def decide_sync(adapter: Load, kind: str, fn, call_id: str) -> Call:
    """One tool call from a thread: the gate through ``hook_call``, then ``decide``."""
    start = time.perf_counter()
    outcome = adapter.hook_call(f"load:{kind}", fn, call_id)
    decision = adapter.decide("shell", [outcome], call_id=call_id)
    return Call("thread", call_id, kind, decision, start, time.perf_counter())


async def adecide_async(adapter: Load, kind: str, fn, call_id: str) -> Call:
    """One tool call from an asyncio task: a sync or coroutine gate through
    ``ahook_call``, then ``adecide``."""
    start = time.perf_counter()
    outcome = await adapter.ahook_call(f"load:{kind}", fn, call_id)
    decision = await adapter.adecide("shell", [outcome], call_id=call_id)
    origin = "task-async" if _is_coro(fn) else "task-sync"
    return Call(origin, call_id, kind, decision, start, time.perf_counter())


def _is_coro(fn) -> bool:
    return asyncio.iscoroutinefunction(fn)


def burst(adapter: Load, gates: Gates, threads: int, tasks: int, prefix: str = "", seed: int = 0) -> list[Call]:
    """``threads`` tool calls, one from each of as many threads, and ``tasks`` from as
    many asyncio tasks on one loop (half with a sync gate, half with a coroutine gate),
    all released at once; each side 10 % hanging, 10 % raising. -> every Call."""
    calls: list[Call] = []  # list.append is atomic
    go = threading.Event()
    thread_kinds, task_kinds = mix(threads, seed), mix(tasks, seed + 1)

    def caller(i: int) -> None:
        go.wait()
        kind = thread_kinds[i]
        calls.append(decide_sync(adapter, kind, gates.sync(kind), f"{prefix}t{i}"))

    async def all_tasks() -> None:
        def fn(i):
            kind = task_kinds[i]
            return kind, (gates.coro(kind) if i % 2 else gates.sync(kind))

        results = await asyncio.gather(*(adecide_async(adapter, *fn(i), f"{prefix}a{i}") for i in range(tasks)))
        calls.extend(results)

    def loop() -> None:
        go.wait()
        asyncio.run(all_tasks())

    started = [threading.Thread(target=caller, args=(i,), name="load-caller", daemon=True) for i in range(threads)]
    started.append(threading.Thread(target=loop, name="load-loop", daemon=True))
    for t in started:
        t.start()
    go.set()
    for t in started:
        t.join(60)
        assert not t.is_alive(), "a caller never got its decision"
    return calls


def in_flight(calls: list[Call]) -> int:
    """The most calls that were between their start and their decision at one time."""
    edges = sorted([(c.start, 1) for c in calls] + [(c.end, -1) for c in calls], key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def threads_and_rss() -> tuple[int, int]:
    """The process's OS threads and its RSS in KiB, from one read of /proc/self/stat
    (listing /proc/self/task costs a string per thread: with 1,000 threads it took the
    GIL ~0.6 ms a sample, a fifth of the time the burst's own threads had for it)."""
    with open("/proc/self/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return int(fields[17]), int(fields[21]) * _PAGE_KB  # num_threads, rss (pages)


def rss_kb() -> int:
    return threads_and_rss()[1]


def os_threads() -> int:
    return threads_and_rss()[0]


def guard_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "failsecure-guard")


class Sampler:
    """Samples the process's OS threads, the guard's worker threads and RSS every few
    milliseconds while in use; ``peak_*`` and ``base_*`` are what the figures quote."""

    def __init__(self, every: float = 0.003):
        self.every = every
        self.base_threads = os_threads()
        self.base_rss = rss_kb()
        self.peak_threads = self.base_threads
        self.peak_guard = guard_threads()
        self.peak_rss = self.base_rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-sampler", daemon=True)

    def sample(self) -> None:
        threads, rss = threads_and_rss()
        self.peak_threads = max(self.peak_threads, threads)
        self.peak_guard = max(self.peak_guard, guard_threads())
        self.peak_rss = max(self.peak_rss, rss)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sample()


def audit_lines(path) -> list[dict]:
    """Every line of the audit file, parsed: a torn or interleaved write fails here."""
    from failsecure import audit

    assert audit.flush(30.0), "the audit writer did not drain"  # written off the tool calls' threads
    raw = path.read_bytes()
    assert raw.endswith(b"\n"), "the audit file ends mid-line"
    events = []
    for number, line in enumerate(raw.split(b"\n")[:-1], 1):
        try:
            event = json.loads(line)
        except ValueError:
            raise AssertionError(f"audit line {number} is not one JSON object: {line[:200]!r}") from None
        assert isinstance(event, dict) and "call_id" in event, f"audit line {number}: {line[:200]!r}"
        events.append(event)
    return events


def quantile(values, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0
