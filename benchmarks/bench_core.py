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

from common import (  # benchmarks/ is on sys.path
    GOAL,
    Run,
    _idle_gap,
    added_spread,
    after_handoff_us,
    floor_spread,
    handoff_floor_us,
    show_spreads,
    small_file,
)

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


def bench_guard(run, rounds=7):
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
    floors, polled, deadline_us, inline_us, cpu = [], [], [], [], {"floor": [], "deadline": [], "inline": []}

    def with_cpu(key: str, wall: list, measure) -> None:
        """One measurement of 2000 calls: its wall figure into ``wall``, the CPU time of all
        threads per call into ``cpu[key]``."""
        c = time.process_time()
        wall.append(measure())
        cpu[key].append((time.process_time() - c) / 2000 * 1e6)

    for _ in range(rounds):
        with_cpu("floor", floors, lambda: handoff_floor_us(n=2000, repeat=1))
        polled.append(handoff_floor_us(n=2000, repeat=1, poll=True))
        with_cpu("deadline", deadline_us, lambda: per_batch_us(lambda: guard.call_each(batch), n=2000, repeat=1))
        with_cpu("inline", inline_us, lambda: per_batch_us(lambda: guard.call_each(inline), n=2000, repeat=1))
    floor = statistics.median(floors)
    added = statistics.median(deadline_us) - statistics.median(inline_us)
    cpu_floor, cpu_deadline, cpu_inline = (statistics.median(cpu[k]) for k in ("floor", "deadline", "inline"))
    print(f"  {'(thread hand-off floor)':<22}{floor:8.2f}   one bare lock round trip to the guard's idle worker")
    how = "without the GIL (failsecure._spin)" if guard._cwait is not None else "in Python (failsecure._spin not built)"
    print(f"  {'(the same, polling)':<22}{statistics.median(polled):8.2f}   the caller polls {how} for up to "
          f"{guard.SPIN * 1e6:.0f} us before it sleeps, as the guard does")
    print(f"  {'3 gates, deadlines':<22}{statistics.median(deadline_us):8.2f}   +{added:.2f} us over inline = "
          f"x{added / floor:.2f} the floor   goal x{GOAL:.1f}: {'OK' if added <= GOAL * floor else 'OVER'}")
    print(f"  {'(CPU time, all threads)':<22}{cpu_deadline:8.2f}   per batch with deadlines: +{cpu_deadline - cpu_inline:.2f} us "
          f"over inline; a bare round trip with the idle gap {cpu_floor:.2f} us")
    spreads = added_spread(inline_us, deadline_us), floor_spread(floors)
    print(f"  {'(over the rounds)':<22}" + show_spreads(*spreads))
    alone, after = after_handoff_us(small_file())
    print(f"  {'(work after a hand-off)':<22}{after:8.2f}   the 4 KiB read: {alone:.2f} us alone, x{after / alone:.2f} "
          "right after a bare hand-off (the caller's CPU coming back from idle; no failsecure code)")
    run["guard"] = {
        "direct_us": direct, "no_deadline_added_us": guarded - direct, "deadline_added_us": deadlined - direct,
        "floor_us": floor, "three_gates_added_us": added, "three_gates_ratio": added / floor, "goal": GOAL,
        "added_rounds": spreads[0], "floor_rounds": spreads[1],
        "polled_floor_us": statistics.median(polled), "spin_us": guard.SPIN * 1e6, "compiled_poll": guard._cwait is not None,
        "cpu_three_gates_added_us": cpu_deadline - cpu_inline, "cpu_floor_us": cpu_floor,
        "read_alone_us": alone, "read_after_handoff_us": after,
    }


def bench_boundary(run, rounds=7):
    """The tool boundary's own pieces for one tool call inside an agent run: the
    decision's ``grant``, the innermost call's ``check`` (which consumes it) and ``leave``,
    for arguments of three plain values, by the framework's call id and by tool and
    arguments; and the same outside any run (one context-variable read each)."""
    from failsecure import boundary

    class Framework:
        name = "bench"

    adapter, arguments = Framework(), {"command": "ls -la", "cwd": "/tmp", "timeout": 30}

    def by_id():
        boundary.grant("shell", "call_1", arguments)
        _, token = boundary.check(adapter, "shell", "call_1", arguments)
        boundary.leave(token)

    def by_args():
        boundary.grant("shell", None, arguments)
        _, token = boundary.check(adapter, "shell", None, arguments)
        boundary.leave(token)

    outside = per_call_us(by_id, repeat=rounds)
    with boundary.run_scope():
        _, token = boundary.check(adapter, "shell", "unjudged", arguments)  # sanity: no grant, no run
        assert token is None
        inside_id = per_call_us(by_id, repeat=rounds)
        inside_args = per_call_us(by_args, repeat=rounds)
    print("tool boundary per tool call (median us): grant + check + leave")
    print(f"  {'outside a run':<22}{outside:8.2f}")
    print(f"  {'inside, by call id':<22}{inside_id:8.2f}   target 2 us: {'OK' if inside_id <= 2 else 'OVER'}")
    print(f"  {'inside, by arguments':<22}{inside_args:8.2f}   target 2 us: {'OK' if inside_args <= 2 else 'OVER'}")
    run["boundary_core"] = {"outside_us": outside, "by_id_us": inside_id, "by_args_us": inside_args, "goal_us": 2.0}


def once_ms(argv, env):
    t = time.perf_counter()
    subprocess.run(argv, env=env, check=True)
    return (time.perf_counter() - t) * 1000


def bench_startup(run, n=40):
    """Interleaved rounds: ``python -c pass`` with the drop-in's ``.pth`` and without it
    (the file renamed away for the moment), and ``import failsecure`` without it."""
    pth = os.path.join(sysconfig.get_paths()["purelib"], "failsecure-auto.pth")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAILSECURE") and k != "PYTHONDONTWRITEBYTECODE"}
    py = [sys.executable]
    print(f"interpreter start-up (median ms of {n} interleaved rounds, same venv)")
    if not os.path.exists(pth):
        print("  failsecure-auto.pth is not installed here (editable install?): skipped")
        return
    # as pip does at install time (tox-uv does not): start-up reads bytecode, not source
    import compileall

    compileall.compile_dir(os.path.dirname(pth), quiet=2)
    cases = {"pth": ["-c", "pass"], "bare": ["-c", "pass"], "import": ["-c", "import failsecure"],
             "types": ["-c", "import failsecure; failsecure.Verdict"]}
    samples: dict = {k: [] for k in cases}
    hidden = pth + ".bench-off"
    for i in range(n + 3):  # 3 rounds to warm the caches
        for key, argv in cases.items():
            if key != "pth":
                os.rename(pth, hidden)
            try:
                ms = once_ms(py + argv, env)
            finally:
                if key != "pth":
                    os.rename(hidden, pth)
            if i >= 3:
                samples[key].append(ms)
    with_pth, without, imported, types = (statistics.median(samples[k]) for k in ("pth", "bare", "import", "types"))
    print(f"  {'python -c pass':<34}{without:8.1f}")
    print(f"  {'  + .pth bootstrap':<34}{with_pth:8.1f}   +{with_pth - without:.1f} ms  x{with_pth / without:.2f}   target +3 ms")
    print(f"  {'  + import failsecure':<34}{imported:8.1f}   +{imported - without:.1f} ms  x{imported / without:.2f}   target +15 ms")
    print(f"  {'  + failsecure.Verdict':<34}{types:8.1f}   +{types - without:.1f} ms   (first decision only)")
    run["start"] = {
        "runs": n, "bare_ms": without, "pth_ms": with_pth, "import_ms": imported, "types_ms": types,
        "pth_added_ms": with_pth - without, "import_added_ms": imported - without, "types_added_ms": types - without,
    }


if __name__ == "__main__":
    result = Run("core")
    bench_guard(result)
    bench_boundary(result)
    bench_startup(result)
    result.write()
