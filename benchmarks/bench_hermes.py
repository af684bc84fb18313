"""hermes-agent: the cost failsecure adds per tool call.

One tool call through the real ``model_tools.handle_function_call`` with three trivial
``pre_tool_call`` guards (real plugins in a throwaway HERMES_HOME, no opinion). Unpatched
and patched in the same process, interleaved rounds, medians and the ratio printed, for:

- a fake tool that returns at once (the worst case: the ratio is then the cost of the
  gate against hermes' ~25-40 us of dispatch, and the added microseconds are the number
  that matters), and
- a realistic tool: a registered tool that reads a small file (4 KiB, written at start),
- hermes' own ``read_file`` on a local file (a real tool),

under the default failsecure config (30 s deadline per gate: the gates run on the
guard's worker pool, one thread hand-off for all of them) and under ``timeout = 0`` (no
deadline: gates run inline). The configs are trusted files (``$FAILSECURE_CONFIG``): a
project ``failsecure.toml`` may not loosen the deadline. No audit file.

Beside each default-config row: this machine's floor for one thread hand-off (a bare lock
round trip with the worker idle between calls, measured in the same rounds) and the added
cost in hand-offs. Goal: the fake tool's added cost with deadlines <= 2x that floor.

    tox -e bench-hermes          (or: python benchmarks/bench_hermes.py [ROUNDS])

Target: patched / unpatched <= 1.05 for a real tool.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import sys
import tempfile
import time

GUARDS = 3
TARGET = 1.05

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import GOAL, Run, handoff_floor_us, read_small, small_file, trust_environment, versions  # noqa: E402
from interleave import inside_run  # noqa: E402  (benchmarks/ is on sys.path)


def setup_home() -> str:
    home = tempfile.mkdtemp(prefix="failsecure-bench-hermes-")
    os.environ["HERMES_HOME"] = home
    for var in ("HERMES_YOLO_MODE", "HERMES_SAFE_MODE", "FAILSECURE_CONFIG"):
        os.environ.pop(var, None)
    names = []
    for i in range(GUARDS):
        name = f"bench_guard_{i}"
        folder = os.path.join(home, "plugins", name)
        os.makedirs(folder)
        with open(os.path.join(folder, "plugin.yaml"), "w") as fh:
            fh.write(f"name: {name}\nversion: '1.0'\n")
        with open(os.path.join(folder, "__init__.py"), "w") as fh:
            fh.write(
                "def hook(tool_name=None, args=None, **kw):\n"
                "    if tool_name == 'never':\n"
                "        return {'action': 'block', 'message': 'no'}\n"
                "    return None\n\n"
                "def register(ctx):\n"
                "    ctx.register_hook('pre_tool_call', hook)\n"
            )
        names.append(name)
    with open(os.path.join(home, "config.yaml"), "w") as fh:
        fh.write("plugins:\n  enabled: [%s]\n" % ", ".join(names))
    return home


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 15
    home = setup_home()
    cwd = tempfile.mkdtemp(prefix="failsecure-bench-cwd-")
    os.chdir(cwd)  # failsecure.toml is written here per configuration

    import failsecure

    failsecure.install()
    import model_tools
    from hermes_cli import plugins
    from tools.registry import registry

    from failsecure import activation, policy

    adapter = activation.get("hermes-agent")
    plugins.discover_plugins(force=True)
    hooks = plugins.get_plugin_manager()._hooks.get("pre_tool_call", [])
    assert len(hooks) == GUARDS, f"expected {GUARDS} guards, got {len(hooks)}"

    registry.register(
        name="bench_probe", toolset="bench",
        schema={"name": "bench_probe", "description": "bench", "parameters": {"type": "object", "properties": {}}},
        handler=lambda args, **kw: '{"ok": true}',
    )
    notes = small_file()
    registry.register(
        name="bench_read", toolset="bench",
        schema={"name": "bench_read", "description": "bench", "parameters": {"type": "object", "properties": {}}},
        handler=lambda args, **kw: json.dumps({"text": read_small(args["path"])}),
    )
    big = os.path.join(cwd, "lines.txt")
    with open(big, "w") as fh:
        fh.writelines(f"line {i}\n" for i in range(20000))
    offsets = itertools.count(1)  # read_file blocks a 4th read of the same region

    def read_file_args():
        return {"path": big, "offset": next(offsets), "limit": 5}

    tools = [
        ("fake tool (returns at once)", "bench_probe", lambda: {"path": "/tmp/x"}, 300),
        ("tool reading a 4 KiB file", "bench_read", lambda: {"path": notes}, 300),
        ("hermes read_file, 5 lines", "read_file", read_file_args, 12),
    ]
    configs = [
        ("default config (30 s deadline per gate)", ""),
        ("timeout = 0 (no deadline, gates inline)", "timeout = 0\n"),
    ]

    def per_call_us(tool, make_args, n) -> float:
        calls = [make_args() for _ in range(n)]
        t = time.perf_counter()
        for args in calls:
            model_tools.handle_function_call(tool, args, task_id="t", tool_call_id="c", session_id="s")
        return (time.perf_counter() - t) / n * 1e6

    run = Run("hermes", versions("hermes-agent"))
    print(f"hermes-agent {run.data['upstream']['hermes-agent']}: one tool call through "
          f"handle_function_call, {GUARDS} trivial guards; median us per call, {rounds} interleaved rounds")
    worst = 0.0
    deadline_added: dict = {}
    floor_of: dict = {}
    measured: dict = {}  # (timeout = 0?, tool) -> (unpatched, patched)
    floor_rounds: list = []
    inline_added = 0.0
    config_file = os.path.join(home, "failsecure-bench.toml")
    os.environ["FAILSECURE_CONFIG"] = config_file  # trusted: may set timeout = 0
    trust_environment()  # the bench is trusted code (common.trust_environment)
    for config_label, config in configs:
        with open(config_file, "w") as fh:
            fh.write(config)
        policy.reload()
        assert policy.current().timeout_for("hermes-agent:bench_guard_0") == (None if config else 30.0)
        print(f"  {config_label}")
        for tool_label, tool, args, n in tools:
            # sanity: the tool really runs in both modes, and the patched mode really gates
            adapter.unpatch()
            assert "error" not in json.loads(model_tools.handle_function_call(tool, args()))
            assert adapter.patch() == "patched"
            got = json.loads(model_tools.handle_function_call(tool, args()))
            assert "error" not in got, got
            for _ in range(1):  # warm-up, both modes
                adapter.unpatch()
                per_call_us(tool, args, n)
                adapter.patch()
                per_call_us(tool, args, n)
            unpatched, patched, floors = [], [], []
            for _ in range(rounds):
                adapter.unpatch()
                unpatched.append(per_call_us(tool, args, n))
                adapter.patch()
                patched.append(per_call_us(tool, args, n))
                floors.append(handoff_floor_us(n=max(n, 300), repeat=1))
            assert adapter.state == "patched"
            measured[(bool(config), tool)] = (unpatched, patched)
            if not config and tool == "bench_probe":
                floor_rounds = floors
            u, p, f = statistics.median(unpatched), statistics.median(patched), statistics.median(floors)
            ratio = p / u
            worst = max(worst, ratio)
            verdict = "OK" if ratio <= TARGET else "OVER"
            print(f"    {tool_label:<30} unpatched {u:8.1f}  patched {p:8.1f}  +{p - u:6.1f} us  "
                  f"x{ratio:.3f}  (target x{TARGET:.2f}: {verdict})")
            if not config and tool == "bench_probe":
                deadline_added[tool] = p - u
                floor_of[tool] = f
                print(f"    {'':<30} hand-off floor {f:5.1f} us: added = x{(p - u) / f:.2f} the floor "
                      f"(goal x{GOAL:.1f}: {'OK' if p - u <= GOAL * f else 'OVER'})")
            if config and tool == "bench_probe":
                inline_added = p - u
                print(f"    {'':<30} hand-off floor {f:5.1f} us")
    added, floor = deadline_added["bench_probe"], floor_of["bench_probe"]
    print(f"  deadline path, fake tool: +{added:.1f} us added per call (3 gates), hand-off floor {floor:.1f} us: "
          f"x{added / floor:.2f} the floor (goal x{GOAL:.1f}: {'OK' if added <= GOAL * floor else 'OVER'}); "
          f"with no deadline +{inline_added:.1f} us, so the deadlines add {added - inline_added:+.1f} us "
          f"= x{(added - inline_added) / floor:.2f} the floor")
    run.adapter("hermes-agent", f"{GUARDS} sync pre_tool_call plugins", "model_tools.handle_function_call (the tool runs)",
                noop=measured[(False, "bench_probe")], file=measured[(False, "bench_read")], floors=floor_rounds,
                inline=measured[(True, "bench_probe")], rounds=rounds)
    # the tool boundary: the same call outside an agent run and inside one (config still
    # timeout = 0: the gates inline, so the hand-off's noise stays out of the difference)
    outside, inside = inside_run(lambda n: per_call_us("bench_probe", lambda: {"path": "/tmp/x"}, n), 300, rounds)
    run.boundary("handle_function_call, timeout = 0", outside, inside)
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
