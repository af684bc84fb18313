"""Command-hook runner benchmark: what the runner adds to every tool call.

Runs a trivial hook directly and under the runner, alternating the two so that
both see the same machine state, and prints medians side by side with the ratio
and the milliseconds added. Also measures the full installed command (the sh
prelude `hook install` writes, through `sh -c`, as a host runs it) against the
host running the bare hook through `sh -c`, and the runner with an audit file.

    tox -e bench-command          (or: python benchmarks/bench_command.py [-n N])

Target: the runner adds <= 30 ms (median) over running the hook directly.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import Run  # benchmarks/ is on sys.path

from failsecure.runner import settings as command

TARGET_MS = 30.0
PAYLOAD = json.dumps(
    {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la"},
        "tool_use_id": "toolu_bench",
    }
).encode()


def once_ms(argv, env, cwd):
    started = time.perf_counter()
    proc = subprocess.run(argv, input=PAYLOAD, capture_output=True, env=env, cwd=cwd)
    elapsed = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise SystemExit("benchmark command failed (%d): %s\n%s" % (proc.returncode, argv, proc.stderr.decode()[-500:]))
    return elapsed


def side_by_side(label, base, other, env, cwd, n):
    for _ in range(3):  # warm caches
        once_ms(base, env, cwd)
        once_ms(other, env, cwd)
    a, b = [], []
    for _ in range(n):
        a.append(once_ms(base, env, cwd))
        b.append(once_ms(other, env, cwd))
    ma, mb = statistics.median(a), statistics.median(b)
    added = mb - ma
    print(f"{label}")
    print(f"  {'direct':<34}{ma:8.1f} ms")
    print(f"  {'under failsecure':<34}{mb:8.1f} ms   x{mb / ma:5.2f}   +{added:.1f} ms")
    return {"direct_ms": ma, "runner_ms": mb, "added_ms": added, "ratio": mb / ma, "runs": n}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=40, help="runs per side (median)")
    args = parser.parse_args(argv)

    run = Run("command")
    runner = command.runner_path()
    # As pip does at install time (uv does not by default): the runner loads bytecode.
    compileall.compile_dir(os.path.dirname(runner), quiet=2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAILSECURE") and k != "PYTHONDONTWRITEBYTECODE"}
    python = sys.executable
    hook = ["/bin/true"]
    launch = command.launch_argv(python, runner)
    print("runner: %s\nlaunch: %s\n" % (runner, " ".join(launch[:4]) + " ..."))

    results = {}
    with tempfile.TemporaryDirectory() as cwd:  # no failsecure.toml / pyproject.toml here
        results["runner"] = side_by_side(
            "hook /bin/true, runner with the default config (median of %d)" % args.n,
            hook,
            launch + ["run", "--protocol", "claude", "--timeout", "5", "--hook-id", "bench", "--"] + hook,
            env,
            cwd,
            args.n,
        )
        print()
        results["script"] = side_by_side(
            "same, runner started as a script (python -I -S command.py)",
            hook,
            [python, "-I", "-S", runner, "run", "--protocol", "claude", "--timeout", "5", "--"] + hook,
            env,
            cwd,
            args.n,
        )
        print()
        installed = command.prelude(python, runner, "claude", "bench", 5.0, "bench", "/bin/true")
        results["installed"] = side_by_side(
            "as a host runs it: sh -c '/bin/true' vs sh -c '<installed prelude>'",
            ["/bin/sh", "-c", "/bin/true"],
            ["/bin/sh", "-c", installed],
            env,
            cwd,
            args.n,
        )
        print()
        config = os.path.join(cwd, "failsecure.toml")
        with open(config, "w") as fh:
            fh.write('[audit]\npath = "%s"\n' % os.path.join(cwd, "audit.jsonl"))
        results["audited"] = side_by_side(
            "runner with a config file and an audit file (tomllib + one JSON line)",
            hook,
            # the trusted config is a launch-line option (the runner reads no FAILSECURE_CONFIG)
            launch + ["run", "--protocol", "claude", "--timeout", "5", "--hook-id", "bench", "--config", config, "--"] + hook,
            env,
            cwd,
            args.n,
        )
    print()
    added = results["runner"]["added_ms"]
    verdict = "ok" if added <= TARGET_MS else "OVER TARGET"
    print(f"runner start-up added: {added:.1f} ms (target <= {TARGET_MS:.0f} ms): {verdict}")
    run["runner"] = results
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
