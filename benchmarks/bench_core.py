"""Core benchmarks: the guard's added cost per hook call, and the drop-in bootstrap's
cost at interpreter start. Medians of repeated runs, printed side by side with ratios.

    tox -e bench-core          (or: python benchmarks/bench_core.py in a venv with the wheel)

Targets: guard <= 3 us added without a deadline, <= 25 us with one (sync hook);
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


def handoff_floor_us(n=3000, repeat=7):
    """This machine's floor for any deadlined sync call: one lock ping-pong between two
    threads (a wake each way), with no failsecure code at all."""
    import _thread

    ping, pong = _thread.allocate_lock(), _thread.allocate_lock()
    ping.acquire()
    pong.acquire()

    def echo():
        while True:
            ping.acquire()
            pong.release()

    _thread.start_new_thread(echo, ())
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            ping.release()
            pong.acquire(True, 5)
        samples.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(samples)


def bench_guard():
    args = ("shell", {"command": "ls"})
    direct = per_call_us(lambda: validate(hook(*args)))
    guarded = per_call_us(lambda: guard.call("bench:h", hook, args, validate=validate))
    deadlined = per_call_us(lambda: guard.call("bench:h", hook, args, validate=validate, timeout=5.0), n=3000)
    print("guard per hook call (median us)")
    print(f"  {'direct':<22}{direct:8.2f}")
    print(f"  {'guarded, no deadline':<22}{guarded:8.2f}   +{guarded - direct:.2f} us  x{guarded / direct:.2f}   target +3 us")
    print(f"  {'guarded, deadline':<22}{deadlined:8.2f}   +{deadlined - direct:.2f} us  x{deadlined / direct:.2f}   target +25 us")
    floor = handoff_floor_us()
    print(f"  {'(thread hand-off floor)':<22}{floor:8.2f}   guard deadline path = x{deadlined / floor:.2f} the bare hand-off")


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
    print(f"  {'  + failsecure.Verdict (pydantic)':<34}{types:8.1f}   +{types - without:.1f} ms   (first decision only)")


if __name__ == "__main__":
    bench_guard()
    bench_startup()
