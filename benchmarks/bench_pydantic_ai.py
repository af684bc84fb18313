"""pydantic-ai: the cost failsecure adds to one gated tool call.

One trivial ``before_tool_execute`` hook (returns the arguments it was given) on a real
``Hooks`` capability. Measured unpatched and patched in the same process, interleaved
rounds, medians, the ratio and the microseconds added:

- the dispatch alone: ``await hooks.before_tool_execute(ctx, call=..., tool_def=...,
  args=...)`` with the real ``RunContext``/``ToolCallPart``/``ToolDefinition`` captured from
  an agent run (an async hook, then a sync hook, which upstream runs in a worker thread);
  the async hook's dispatch followed by a realistic tool's body (reading a 4 KiB file);
- one whole agent run: ``Agent(FunctionModel(...)).run(...)`` calling one
  ``@agent.tool_plain`` once (model turn, tool call, model turn).

Default config (30 s deadline per gate) and ``timeout = 0``; no audit file.

    tox -e bench-pydantic-ai          (or: python benchmarks/bench_pydantic_ai.py [ROUNDS])
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time

from common import Run, read_small, small_file, trust_environment, versions  # noqa: E402
from interleave import arounds, row  # noqa: E402  (benchmarks/ is on sys.path)

TARGET = 1.05


def setup() -> None:
    os.environ.pop("FAILSECURE_CONFIG", None)
    os.chdir(tempfile.mkdtemp(prefix="failsecure-bench-pai-"))  # the config file per configuration


async def gate_async(ctx, *, call, tool_def, args):
    return args


def gate_sync(ctx, *, call, tool_def, args):
    return args


def make_agent(hooks):
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("run_command", {"command": "ls -la"})])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond), capabilities=[hooks])

    @agent.tool_plain
    def run_command(command: str) -> str:
        return command

    return agent


async def capture():
    """A real (ctx, call, tool_def, args) as the dispatcher passes them."""
    from pydantic_ai.capabilities import Hooks

    seen = {}
    hooks = Hooks()

    @hooks.on.before_tool_execute
    async def grab(ctx, *, call, tool_def, args):
        seen.update(ctx=ctx, call=call, tool_def=tool_def, args=args)
        return args

    await make_agent(hooks).run("go")
    return seen


async def measure(rounds: int, run: Run) -> None:
    from pydantic_ai.capabilities import Hooks

    from failsecure import activation, policy

    adapter = activation.get("pydantic-ai")
    real = await capture()

    def dispatcher(gate):
        hooks = Hooks()
        hooks.on.before_tool_execute(gate)

        async def dispatch(n: int) -> float:
            t = time.perf_counter()
            for _ in range(n):
                await hooks.before_tool_execute(real["ctx"], call=real["call"], tool_def=real["tool_def"], args=real["args"])
            return (time.perf_counter() - t) / n * 1e6

        return dispatch

    notes = small_file()

    def dispatcher_read(gate):
        dispatch = dispatcher(gate)

        async def dispatch_read(n: int) -> float:
            t = time.perf_counter()
            for _ in range(n):
                await dispatch(1)
                read_small(notes)
            return (time.perf_counter() - t) / n * 1e6

        return dispatch_read

    whole_agent = make_agent(Hooks(before_tool_execute=gate_async))

    async def whole(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            result = await whole_agent.run("go")
        assert result.output == "done"
        return (time.perf_counter() - t) / n * 1e6

    noop, read = dispatcher(gate_async), dispatcher_read(gate_async)
    cases = [
        ("dispatch, 1 async hook", noop, 2000),
        ("  + tool reading a 4 KiB file", read, 2000),
        ("dispatch, 1 sync hook (thread)", dispatcher(gate_sync), 500),
        ("whole agent run, 1 tool call", whole, 100),
    ]
    configs = [("default config (30 s deadline per gate)", ""), ("timeout = 0 (no deadline)", "timeout = 0\n")]
    measured: dict = {}  # (timeout = 0?, case) -> (unpatched, patched)
    floors: list = []
    for config_label, config in configs:
        with open("bench.toml", "w") as fh:
            fh.write(config)
        # trusted ($FAILSECURE_CONFIG): a project file may not loosen the deadline to 0
        os.environ["FAILSECURE_CONFIG"] = os.path.abspath("bench.toml")
        trust_environment()  # the bench is trusted code (common.trust_environment)
        policy.reload()
        print(f"  {config_label}")
        for label, fn, n in cases:
            assert adapter.patch() == "patched"
            floored = floors if fn is noop and not config else None
            measured[(bool(config), fn)] = got = await arounds(adapter, fn, n, rounds, floors=floored)
            print(row(label, *got, width=32))
    run.adapter("pydantic-ai", "1 async before_tool_execute hook", "Hooks.before_tool_execute, then the tool body",
                noop=measured[(False, noop)], file=measured[(False, read)], floors=floors,
                inline=measured[(True, noop)], rounds=rounds,
                na="failsecure awaits upstream's own hook dispatch on the loop (upstream runs a sync hook "
                   "in its own worker thread): no hand-off of failsecure's")


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 9
    setup()
    run = Run("pydantic-ai", versions("pydantic-ai-slim"))

    import failsecure

    failsecure.install()
    import pydantic_ai.capabilities.hooks  # noqa: F401  (patched on import)

    print(f"pydantic-ai-slim {run.data['upstream']['pydantic-ai-slim']}: one trivial before_tool_execute hook; "
          f"median us per call, {rounds} interleaved rounds")
    asyncio.run(measure(rounds, run))
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
