"""code-puppy: the cost failsecure adds to a ``run_shell_command`` dispatch.

Three trivial ``run_shell_command`` callbacks (async, no opinion, like the real
core-plugins guards) registered through code-puppy's real ``register_callback``;
``await callbacks.on_run_shell_command(...)`` measured unpatched and patched in the same
process, interleaved rounds, medians, the ratio and the microseconds added. For scale,
the same with one whole shell tool call (``command_runner.run_shell_command`` running
``true``: dispatch plus the subprocess). Then the sync gates, which run on the guard's
worker pool under a deadline: three sync ``file_permission`` callbacks through the sync
loop (``on_file_permission``) and three sync ``pre_tool_call`` callbacks through the
async loop (``on_pre_tool_call``), and the latter followed by a realistic tool's body
(reading a 4 KiB file). Default config (30 s deadline per gate) and
``timeout = 0``, both trusted files (``$FAILSECURE_CONFIG``: a project file may not
loosen the deadline); no audit file. HOME is a throwaway dir, stdin is not read.

Beside each sync-gate row with deadlines: this machine's floor for one thread hand-off (a
bare lock round trip with the worker idle between calls, measured in the same rounds),
and the added cost in hand-offs. Goal: <= 2x that floor.

    tox -e bench-code-puppy          (or: python benchmarks/bench_codepuppy.py [ROUNDS])

Target: patched / unpatched <= 1.05.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time

GUARDS = 3
TARGET = 1.05

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import GOAL, Run, handoff_floor_us, read_small, small_file, trust_environment, versions  # noqa: E402


def setup() -> str:
    home = tempfile.mkdtemp(prefix="failsecure-bench-puppy-")
    os.environ["HOME"] = home
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "FAILSECURE_CONFIG"):
        os.environ.pop(var, None)
    cwd = tempfile.mkdtemp(prefix="failsecure-bench-cwd-")
    os.chdir(cwd)
    return cwd


def make_guard(i: int):
    async def guard(context, command, cwd=None, timeout=60):
        if command == "never":
            return {"blocked": True, "error_message": "no"}
        return None

    guard.__name__ = guard.__qualname__ = f"bench_guard_{i}"
    return guard


def make_sync_guards(i: int):
    def file_guard(context, file_path, operation, preview=None, message_group=None, operation_data=None):
        return False if file_path == "never" else True

    def tool_guard(tool_name, tool_args, context=None):
        if tool_name == "never":
            return {"blocked": True, "error_message": "no"}
        return None

    file_guard.__name__ = file_guard.__qualname__ = f"bench_file_guard_{i}"
    tool_guard.__name__ = tool_guard.__qualname__ = f"bench_tool_guard_{i}"
    return file_guard, tool_guard


async def measure(rounds: int, run: Run) -> float:
    from types import SimpleNamespace

    from code_puppy import callbacks
    from code_puppy.tools import command_runner

    from failsecure import activation, policy

    adapter = activation.get("code-puppy")
    for i in range(GUARDS):
        callbacks.register_callback("run_shell_command", make_guard(i))
        file_guard, tool_guard = make_sync_guards(i)
        callbacks.register_callback("file_permission", file_guard)
        callbacks.register_callback("pre_tool_call", tool_guard)
    assert len(callbacks.get_callbacks("run_shell_command")) == GUARDS
    assert len(callbacks.get_callbacks("file_permission")) == GUARDS
    ctx = SimpleNamespace(deps=None)

    async def dispatch(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            await callbacks.on_run_shell_command(None, "ls -la", None, 60)
        return (time.perf_counter() - t) / n * 1e6

    async def shell_tool(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            out = await command_runner.run_shell_command(ctx, "true", timeout=10)
        assert out.success, out
        return (time.perf_counter() - t) / n * 1e6

    async def file_permission(n: int) -> float:  # the sync loop, called from a running loop
        t = time.perf_counter()
        for _ in range(n):
            callbacks.on_file_permission(None, "a.txt", "write")
        return (time.perf_counter() - t) / n * 1e6

    async def pre_tool(n: int) -> float:  # the async loop with sync callbacks
        t = time.perf_counter()
        for _ in range(n):
            await callbacks.on_pre_tool_call("read_file", {"file_path": "a.txt"}, None)
        return (time.perf_counter() - t) / n * 1e6

    notes = small_file()

    async def pre_tool_read(n: int) -> float:  # the same, then a tool that reads a small file
        t = time.perf_counter()
        for _ in range(n):
            await callbacks.on_pre_tool_call("read_file", {"file_path": notes}, None)
            read_small(notes)
        return (time.perf_counter() - t) / n * 1e6

    cases = [
        ("on_run_shell_command dispatch", dispatch, 2000),
        ("whole shell tool call (`true`)", shell_tool, 10),
        ("on_file_permission, 3 sync gates", file_permission, 1000),
        ("on_pre_tool_call, 3 sync gates", pre_tool, 1000),
        ("  + tool reading a 4 KiB file", pre_tool_read, 1000),
    ]
    sync_gates = (file_permission, pre_tool)
    configs = [("default config (30 s deadline per gate)", ""), ("timeout = 0 (no deadline)", "timeout = 0\n")]
    config_file = os.path.join(os.environ["HOME"], "failsecure-bench.toml")
    os.environ["FAILSECURE_CONFIG"] = config_file  # trusted: may set timeout = 0
    trust_environment()  # the bench is trusted code (common.trust_environment)
    worst = 0.0
    added: dict = {}
    measured: dict = {}  # (timeout = 0?, case) -> (unpatched, patched, floors)
    for config_label, config in configs:
        with open(config_file, "w") as fh:
            fh.write(config)
        policy.reload()
        assert policy.current().timeout == (0 if config else 30)
        print(f"  {config_label}")
        for label, fn, n in cases:
            # sanity: patched really gates (a raising guard denies), unpatched is upstream's loop
            assert adapter.patch() == "patched"
            blocked = await callbacks.on_run_shell_command(None, "never", None, 60)
            assert blocked and blocked[0]["blocked"] is True
            for _ in range(2):  # warm-up, both modes
                adapter.unpatch()
                await fn(n)
                adapter.patch()
                await fn(n)
            unpatched, patched, floors = [], [], []
            for _ in range(rounds):
                adapter.unpatch()
                unpatched.append(await fn(n))
                adapter.patch()
                patched.append(await fn(n))
                if fn in sync_gates:
                    floors.append(handoff_floor_us(n=n, repeat=1))
            measured[(bool(config), fn)] = (unpatched, patched, floors)
            u, p = statistics.median(unpatched), statistics.median(patched)
            ratio = p / u
            if fn is dispatch:
                worst = max(worst, ratio)
            verdict = "OK" if ratio <= TARGET else "OVER"
            print(f"    {label:<34} unpatched {u:9.1f}  patched {p:9.1f}  +{p - u:7.1f} us  "
                  f"x{ratio:.3f}  (target x{TARGET:.2f}: {verdict})")
            if fn in sync_gates:
                f = statistics.median(floors)
                added[(label, bool(config))] = (p - u, f)
                if not config:
                    print(f"    {'':<34} hand-off floor {f:5.1f} us: added = x{(p - u) / f:.2f} the floor "
                          f"(goal x{GOAL:.1f}: {'OK' if p - u <= GOAL * f else 'OVER'})")
    for label in ("on_file_permission, 3 sync gates", "on_pre_tool_call, 3 sync gates"):
        (d, f), (i, _) = added[(label, False)], added[(label, True)]
        print(f"  deadline path, {label}: +{d:.1f} us added per call, hand-off floor {f:.1f} us: x{d / f:.2f} the floor "
              f"(goal x{GOAL:.1f}: {'OK' if d <= GOAL * f else 'OVER'}); with no deadline +{i:.1f} us, so the "
              f"deadlines add {d - i:+.1f} us = x{(d - i) / f:.2f} the floor")
    noop = measured[(False, pre_tool)]
    run.adapter("code-puppy", f"{GUARDS} sync pre_tool_call callbacks", "await callbacks.on_pre_tool_call, then the tool body",
                noop=noop[:2], file=measured[(False, pre_tool_read)][:2], floors=noop[2],
                inline=measured[(True, pre_tool)][:2], rounds=rounds)
    return worst


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 9
    setup()
    run = Run("code-puppy", versions("code-puppy", "code-puppy-core-plugins"))

    import failsecure

    failsecure.install()
    import code_puppy.callbacks  # noqa: F401  (patched on import)

    print(f"code-puppy {run.data['upstream']['code-puppy']}: {GUARDS} trivial run_shell_command callbacks; "
          f"median us per call, {rounds} interleaved rounds")
    worst = asyncio.run(measure(rounds, run))
    print(f"  worst dispatch ratio x{worst:.3f} (target x{TARGET:.2f})")
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
