"""What every bench shares: this machine's thread hand-off floor, the realistic tool (a
small file read), and the JSON figures that ``bench_report.py`` turns into the one table.

A bench keeps its figures in a ``Run`` and writes them to
``$FAILSECURE_BENCH_OUT/bench-<name>.json`` (tox sets it to ``{work_dir}/bench-results``;
``<name>`` as in the tox env ``bench-<name>``); without that variable it writes nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import statistics
import tempfile
import time

GOAL = 2.0  # the deadline path of all the sync gates of one tool call, in bare hand-offs
FILE_BYTES = 4096  # the realistic tool reads a file this big


def _idle_gap(spins: int) -> None:
    """Plain Python work between two hand-offs (a framework's own dispatch, say), so the
    worker has gone idle again, as it has between two tool calls of a real run."""
    x = 0
    for i in range(spins):
        x += i


@contextlib.contextmanager
def _echo_worker(rounds: int):
    """The guard's own idle worker (the one the next gated call would get) running a bare
    echo loop of ``rounds`` round trips, no failsecure code in it: yields (ping, pong);
    release ping, and the worker releases pong (setting ``ended``, as the guard's worker
    does, for a polling caller)."""
    import _thread

    from failsecure import guard

    ping, pong = _thread.allocate_lock(), _thread.allocate_lock()
    ping.acquire()
    pong.acquire()
    ended = bytearray(1)

    def echo():
        for _ in range(rounds):
            ping.acquire()
            ended[0] = 1
            pong.release()

    worker = guard._pool.take()
    assert worker is not None
    guard._pool.start(worker, guard._Job([("bench:echo", echo, (), None, None, None)]))
    try:
        yield ping, pong, ended
    finally:
        worker.done.acquire()
        guard._pool.release(worker)


def handoff_floor_us(n: int = 3000, repeat: int = 7, gap: int = 300, poll: bool = False) -> float:
    """This machine's floor for any deadlined sync call: one lock round trip to a waiting
    thread and back (a wake each way), with no failsecure code in it; only the round trip
    is timed, ``gap`` spins of plain work between two (0: back to back). The median of
    ``repeat`` runs of ``n``.

    The thread that answers is the guard's own idle worker (the one the next gated call
    would get), running a bare echo loop: a thread's placement (same CPU as the caller or
    the other one, an idle CPU to wake) moves this figure by 3x on a shared machine, so
    the floor is measured on the thread the gates really run on.

    ``poll``: the caller polls for the answer for up to ``guard.SPIN`` before it sleeps,
    as the guard's callers do (not the floor: shown beside it)."""
    import types

    from failsecure.guard import _spin

    clock = time.perf_counter
    samples = []
    with _echo_worker(n * repeat) as (ping, pong, ended):
        echo = types.SimpleNamespace(done=pong, ended=ended)  # what _spin reads of a worker
        for _ in range(repeat):
            total = 0.0
            for _ in range(n):
                if gap:
                    _idle_gap(gap)
                ended[0] = 0
                t = clock()
                ping.release()
                if not poll or _spin(echo, -1.0) != -2.0:  # type: ignore[arg-type]
                    pong.acquire(True, 5)
                total += clock() - t
            samples.append(total / n * 1e6)
    return statistics.median(samples)


def after_handoff_us(path: str, n: int = 2000, rounds: int = 9, gap: int = 300) -> tuple[float, float]:
    """(µs of the realistic tool's body alone, µs of the same body right after a bare
    hand-off round trip): how much slower the caller's own work runs once it has slept
    for a hand-off, on this machine. Only the body is timed in both; interleaved rounds,
    medians. On a machine whose idle CPU is slow to come back (a VM's vCPU) everything
    that follows a hand-off, framework and tool code included, pays this."""
    clock = time.perf_counter
    alone, after = [], []
    with _echo_worker(n * rounds) as (ping, pong, _):

        def timed(handoff: bool) -> float:
            total = 0.0
            for _ in range(n):
                _idle_gap(gap)
                if handoff:
                    ping.release()
                    pong.acquire(True, 5)
                t = clock()
                read_small(path)
                total += clock() - t
            return total / n * 1e6

        for _ in range(rounds):
            alone.append(timed(False))
            after.append(timed(True))
    return statistics.median(alone), statistics.median(after)


def trust_environment() -> None:
    """A bench is trusted code: the config, HOME and XDG_CONFIG_HOME it sets in os.environ
    are the trusted environment (failsecure's trust model otherwise reads the environment
    the process started with, never later os.environ changes)."""
    from failsecure import policy

    policy.set_trusted_environment(os.environ)


def small_file() -> str:
    """A file of ``FILE_BYTES`` bytes of text lines in a fresh temp dir: what the
    realistic tool reads."""
    path = os.path.join(tempfile.mkdtemp(prefix="failsecure-bench-file-"), "notes.txt")
    line = "the quick brown fox jumps over the lazy dog, line %05d\n"
    with open(path, "w") as fh:
        written = 0
        i = 0
        while written < FILE_BYTES:
            text = line % i
            fh.write(text[: FILE_BYTES - written])
            written += len(text)
            i += 1
    return path


def read_small(path: str) -> str:
    """The realistic tool's body: read the small file whole."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert len(text) == FILE_BYTES
    return text


def spread(values: list) -> dict:
    """A figure measured once per round, as the report shows it: the median, the middle
    half of the rounds (quartiles) and the lowest and highest round."""
    values = sorted(values)
    if len(values) > 1:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
    return {"median": statistics.median(values), "q1": q1, "q3": q3, "low": values[0], "high": values[-1],
            "rounds": len(values)}


def floor_spread(floors: list) -> dict:
    """``spread`` of the hand-off floor over a run's rounds, and the placements it saw:
    the rounds within 1.5x of the lowest one (the worker on the caller's CPU, a round
    trip with no idle CPU to wake) and the rest (the worker on the other CPU)."""
    row = spread(floors)
    near = [f for f in floors if f <= 1.5 * row["low"]]
    far = [f for f in floors if f > 1.5 * row["low"]]
    row["same_cpu"] = {"rounds": len(near), "median": statistics.median(near)} if near else None
    row["other_cpu"] = {"rounds": len(far), "median": statistics.median(far)} if far else None
    return row


def added_spread(unpatched: list, patched: list) -> dict:
    """``spread`` of the added cost of each round (patched minus unpatched of the same
    round: the two ran back to back, on the same machine state)."""
    return spread([p - u for u, p in zip(unpatched, patched)])


def show_spreads(added: dict, floor: dict) -> str:
    """One line: the added cost's own spread, the floor's, and the ratio to the median floor."""
    placements = ", ".join(f"{where} {p['median']:.1f} us in {p['rounds']}" for where, p in
                           (("same CPU", floor["same_cpu"]), ("other CPU", floor["other_cpu"])) if p)
    return (f"added per round: median {added['median']:+.1f} us, middle half {added['q1']:+.1f}..{added['q3']:+.1f}, "
            f"all {added['low']:+.1f}..{added['high']:+.1f}; floor per round: median {floor['median']:.1f} us, "
            f"{floor['low']:.1f}..{floor['high']:.1f} ({placements}); added / median floor "
            f"x{added['median'] / floor['median']:.2f} (middle half x{added['q1'] / floor['median']:.2f}.."
            f"x{added['q3'] / floor['median']:.2f})")


def versions(*dists: str) -> dict:
    import importlib.metadata

    return {d: importlib.metadata.version(d) for d in dists}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).astimezone().isoformat(timespec="seconds")


class Run:
    """One bench's figures: the load average and time at its start and end, Python, the
    upstream releases; ``write`` adds the end and writes the JSON."""

    def __init__(self, name: str, upstream: dict | None = None) -> None:
        self.data: dict = {
            "bench": name,
            "started": _now(),
            "load_start": list(os.getloadavg()),
            "python": platform.python_version(),
            "upstream": upstream or {},
        }

    def __setitem__(self, key: str, value) -> None:
        self.data[key] = value

    def adapter(self, adapter: str, gates: str, path: str, noop: tuple, file: tuple, floors: list,
                inline: tuple | None = None, na: str | None = None, rounds: int = 0) -> dict:
        """The row of an adapter: ``noop`` and ``file`` are the (unpatched, patched) per-call
        figures of the default config's interleaved rounds, ``floors`` the hand-off floor
        measured in the same rounds, ``inline`` the no-op tool under ``timeout = 0`` (gates
        inline), ``na`` why the adapter has no deadline path of its own (async gates)."""
        u, p = statistics.median(noop[0]), statistics.median(noop[1])
        fu, fp = statistics.median(file[0]), statistics.median(file[1])
        floor = statistics.median(floors)
        added, floor_rounds = added_spread(noop[0], noop[1]), floor_spread(floors)
        row = {
            "adapter": adapter, "gates": gates, "path": path, "rounds": rounds,
            "noop": {"unpatched_us": u, "patched_us": p, "added_us": p - u, "added_rounds": added},
            "file": {"unpatched_us": fu, "patched_us": fp, "ratio": fp / fu, "bytes": FILE_BYTES},
            "floor_us": floor, "floor_rounds": floor_rounds,
        }
        if inline is not None:
            iu, ip = statistics.median(inline[0]), statistics.median(inline[1])
            row["inline"] = {"unpatched_us": iu, "patched_us": ip, "added_us": ip - iu}
        if na:
            row["deadline"] = {"na": na}
        else:
            row["deadline"] = {"added_us": p - u, "ratio": (p - u) / floor, "goal": GOAL,
                               "ratio_q1": added["q1"] / floor, "ratio_q3": added["q3"] / floor}
            if inline is not None:
                share = (p - u) - row["inline"]["added_us"]
                row["deadline"].update(deadlines_us=share, deadlines_ratio=share / floor)
        self.data["row"] = row
        print("  " + show_spreads(added, floor_rounds))
        print(f"  table row: no-op tool +{p - u:.1f} us, small file read x{fp / fu:.3f}, hand-off floor "
              f"{floor:.1f} us, deadline path " + (f"n/a ({na})" if na else f"x{(p - u) / floor:.2f} the floor"))
        return row

    def boundary(self, path: str, outside: list, inside: list) -> dict:
        """The tool boundary's row: the patched dispatch ``path`` outside any agent run and
        inside one (``interleave.inside_run``), medians and the middle half of the rounds'
        own difference."""
        o, i = statistics.median(outside), statistics.median(inside)
        row = {"path": path, "outside_us": o, "inside_us": i, "added_us": i - o, "added_rounds": added_spread(outside, inside)}
        self.data["boundary"] = row
        print(f"  tool boundary ({path}): outside a run {o:.2f} us, inside one {i:.2f} us: {i - o:+.2f} us per call "
              f"(rounds {row['added_rounds']['q1']:+.2f} to {row['added_rounds']['q3']:+.2f})")
        return row

    def write(self) -> str | None:
        self.data["ended"] = _now()
        self.data["load_end"] = list(os.getloadavg())
        folder = os.environ.get("FAILSECURE_BENCH_OUT")
        if not folder:
            return None
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "bench-%s.json" % self.data["bench"])  # the tox env's name
        with open(path + ".tmp", "w") as fh:
            json.dump(self.data, fh, indent=1)
        os.replace(path + ".tmp", path)
        print(f"figures written to {path}")
        return path
