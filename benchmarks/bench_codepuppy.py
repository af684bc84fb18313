"""code-puppy: the cost failsecure adds to a ``run_shell_command`` dispatch.

Three trivial ``run_shell_command`` callbacks (async, no opinion, like the real
core-plugins guards) registered through code-puppy's real ``register_callback``;
``await callbacks.on_run_shell_command(...)`` measured unpatched and patched in the same
process, interleaved rounds, medians, the ratio and the microseconds added. For scale,
the same with one whole shell tool call (``command_runner.run_shell_command`` running
``true``: dispatch plus the subprocess). Default config (30 s deadline per gate) and
``timeout = 0``; no audit file. HOME is a throwaway dir, stdin is not read.

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


def setup() -> str:
    home = tempfile.mkdtemp(prefix="failsecure-bench-puppy-")
    os.environ["HOME"] = home
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "FAILSECURE_CONFIG"):
        os.environ.pop(var, None)
    cwd = tempfile.mkdtemp(prefix="failsecure-bench-cwd-")
    os.chdir(cwd)  # failsecure.toml is written here per configuration
    return cwd


def make_guard(i: int):
    async def guard(context, command, cwd=None, timeout=60):
        if command == "never":
            return {"blocked": True, "error_message": "no"}
        return None

    guard.__name__ = guard.__qualname__ = f"bench_guard_{i}"
    return guard


async def measure(rounds: int) -> float:
    from types import SimpleNamespace

    from code_puppy import callbacks
    from code_puppy.tools import command_runner

    from failsecure import activation, policy

    adapter = activation.get("code-puppy")
    for i in range(GUARDS):
        callbacks.register_callback("run_shell_command", make_guard(i))
    assert len(callbacks.get_callbacks("run_shell_command")) == GUARDS
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

    cases = [("on_run_shell_command dispatch", dispatch, 2000), ("whole shell tool call (`true`)", shell_tool, 10)]
    configs = [("default config (30 s deadline per gate)", ""), ("timeout = 0 (no deadline)", "timeout = 0\n")]
    worst = 0.0
    for config_label, config in configs:
        with open("failsecure.toml", "w") as fh:
            fh.write(config)
        policy.reload()
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
            unpatched, patched = [], []
            for _ in range(rounds):
                adapter.unpatch()
                unpatched.append(await fn(n))
                adapter.patch()
                patched.append(await fn(n))
            u, p = statistics.median(unpatched), statistics.median(patched)
            ratio = p / u
            if fn is dispatch:
                worst = max(worst, ratio)
            verdict = "OK" if ratio <= TARGET else "OVER"
            print(f"    {label:<32} unpatched {u:9.1f}  patched {p:9.1f}  +{p - u:7.1f} us  "
                  f"x{ratio:.3f}  (target x{TARGET:.2f}: {verdict})")
    return worst


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 9
    setup()
    import importlib.metadata

    import failsecure

    failsecure.install()
    import code_puppy.callbacks  # noqa: F401  (patched on import)

    print(f"code-puppy {importlib.metadata.version('code-puppy')}: {GUARDS} trivial run_shell_command callbacks; "
          f"median us per call, {rounds} interleaved rounds")
    worst = asyncio.run(measure(rounds))
    print(f"  worst dispatch ratio x{worst:.3f} (target x{TARGET:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
