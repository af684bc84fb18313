"""Core benchmarks: the guard's added cost per hook call, and the drop-in bootstrap's
cost at interpreter start. Medians of repeated runs, printed side by side with ratios.

    tox -e bench-core          (or: python benchmarks/bench_core.py in a venv with the wheel)

Targets: guard <= 3 us added without a deadline, <= 25 us with one (sync hook); the
three sync gates of one tool call with deadlines <= 2x this machine's bare thread
hand-off (one lock round trip, measured in the same run);
.pth bootstrap <= 3 ms added at start-up; ``import failsecure`` <= 15 ms.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import sysconfig
import time

from failsecure import guard
from failsecure.verdict import ABSTAIN, Invalid


def validate(result):
    if result is None:
        return ABSTAIN
    raise Invalid()


def hook(tool_name, args):
    return None


def per_call_us(fn, n=20000, repeat=15):
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(samples)


def _idle_gap(spins: int) -> None:
    """Plain Python work between two hand-offs (a framework's own dispatch, say), so the
    worker has gone idle again, as it has between two tool calls of a real run."""
    x = 0
    for i in range(spins):
        x += i


def handoff_floor_us(n=3000, repeat=7, gap=300):
    """This machine's floor for any deadlined sync call: one lock round trip to a waiting
    thread and back (a wake each way), with no failsecure code in it; only the round trip
    is timed, ``gap`` spins of plain work between two (0: back to back). The median of
    ``repeat`` runs of ``n``.

    The thread that answers is the guard's own idle worker (the one the next gated call
    would get), running a bare echo loop: a thread's placement (same CPU as the caller or
    the other one, an idle CPU to wake) moves this figure by 3x on a shared machine, so
    the floor is measured on the thread the gates really run on."""
    import _thread

    ping, pong = _thread.allocate_lock(), _thread.allocate_lock()
    ping.acquire()
    pong.acquire()

    def echo():
        for _ in range(n * repeat):
            ping.acquire()
            pong.release()

    worker = guard._pool.take()
    assert worker is not None
    job = guard._Job([(echo, (), {})])
    guard._pool.start(worker, job)
    clock = time.perf_counter
    samples = []
    try:
        for _ in range(repeat):
            total = 0.0
            for _ in range(n):
                if gap:
                    _idle_gap(gap)
                t = clock()
                ping.release()
                pong.acquire(True, 5)
                total += clock() - t
            samples.append(total / n * 1e6)
    finally:
        worker.done.acquire()
        guard._pool.release(worker)
    return statistics.median(samples)


def per_batch_us(fn, n=3000, repeat=7, gap=300):
    """Like ``handoff_floor_us``, timing ``fn()`` instead of the bare round trip."""
    clock = time.perf_counter
    samples = []
    for _ in range(repeat):
        total = 0.0
        for _ in range(n):
            if gap:
                _idle_gap(gap)
            t = clock()
            fn()
            total += clock() - t
        samples.append(total / n * 1e6)
    return statistics.median(samples)


GOAL = 2.0  # the deadline path of all the sync gates of one tool call, in bare hand-offs


def bench_guard(rounds=7):
    args = ("shell", {"command": "ls"})
    direct = per_call_us(lambda: validate(hook(*args)))
    guarded = per_call_us(lambda: guard.call("bench:h", hook, args, validate=validate))
    deadlined = per_call_us(lambda: guard.call("bench:h", hook, args, validate=validate, timeout=5.0), n=3000)
    print("guard per hook call (median us)")
    print(f"  {'direct':<22}{direct:8.2f}")
    print(f"  {'guarded, no deadline':<22}{guarded:8.2f}   +{guarded - direct:.2f} us  x{guarded / direct:.2f}   target +3 us")
    print(f"  {'guarded, deadline':<22}{deadlined:8.2f}   +{deadlined - direct:.2f} us  x{deadlined / direct:.2f}   target +25 us")
    # the gates of one tool call: three sync gates with deadlines (one call_each, as the
    # adapters' hook_calls) against the same three inline, the floor measured in between
    kwargs = {"tool_name": "shell", "args": {"command": "ls"}}
    batch = [(f"bench:g{i}", hook, (), kwargs, validate, 30.0) for i in range(3)]
    inline = [c[:5] + (None,) for c in batch]
    floors, deadline_us, inline_us = [], [], []
    for _ in range(rounds):
        floors.append(handoff_floor_us(n=2000, repeat=1))
        deadline_us.append(per_batch_us(lambda: guard.call_each(batch), n=2000, repeat=1))
        inline_us.append(per_batch_us(lambda: guard.call_each(inline), n=2000, repeat=1))
    floor = statistics.median(floors)
    added = statistics.median(deadline_us) - statistics.median(inline_us)
    print(f"  {'(thread hand-off floor)':<22}{floor:8.2f}   one bare lock round trip to the guard's idle worker")
    print(f"  {'3 gates, deadlines':<22}{statistics.median(deadline_us):8.2f}   +{added:.2f} us over inline = "
          f"x{added / floor:.2f} the floor   goal x{GOAL:.1f}: {'OK' if added <= GOAL * floor else 'OVER'}")


def start_ms(argv, env, n=25):
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, env=env, check=True)
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def bench_startup():
    pth = os.path.join(sysconfig.get_paths()["purelib"], "failsecure-auto.pth")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAILSECURE") and k != "PYTHONDONTWRITEBYTECODE"}
    py = [sys.executable]
    print("interpreter start-up (median ms, same venv)")
    if not os.path.exists(pth):
        print("  failsecure-auto.pth is not installed here (editable install?): skipped")
        return
    # as pip does at install time (tox-uv does not): start-up reads bytecode, not source
    import compileall

    compileall.compile_dir(os.path.dirname(pth), quiet=2)
    start_ms(py + ["-c", "pass"], env, n=3)  # warm the caches
    with_pth = start_ms(py + ["-c", "pass"], env)
    hidden = pth + ".bench-off"
    os.rename(pth, hidden)
    try:
        without = start_ms(py + ["-c", "pass"], env)
        imported = start_ms(py + ["-c", "import failsecure"], env)
        types = start_ms(py + ["-c", "import failsecure; failsecure.Verdict"], env, n=10)
    finally:
        os.rename(hidden, pth)
    print(f"  {'python -c pass':<34}{without:8.1f}")
    print(f"  {'  + .pth bootstrap':<34}{with_pth:8.1f}   +{with_pth - without:.1f} ms  x{with_pth / without:.2f}   target +3 ms")
    print(f"  {'  + import failsecure':<34}{imported:8.1f}   +{imported - without:.1f} ms   target +15 ms")
    print(f"  {'  + failsecure.Verdict':<34}{types:8.1f}   +{types - without:.1f} ms   (first decision only)")


if __name__ == "__main__":
    bench_guard()
    bench_startup()
