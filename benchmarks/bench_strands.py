"""Strands Agents: the cost failsecure adds to one gated tool call.

Three trivial ``BeforeToolCallEvent`` callbacks (sync, no opinion, like a typical policy
hook that lets the call through) registered through Strands' real ``HookRegistry``;
``await registry.invoke_callbacks_async(BeforeToolCallEvent(...))`` (what the tool
executor awaits before every tool) measured unpatched and patched in the same process,
interleaved rounds, medians, the ratio and the microseconds added; the same followed by a
realistic tool's body (reading a 4 KiB file). For scale, the same
with one whole agent turn: ``Agent.invoke_async`` with a scripted model that asks for one
``@tool`` and then answers (no network). Default config (30 s deadline per gate) and
``timeout = 0``; no audit file.

    tox -e bench-strands          (or: python benchmarks/bench_strands.py [ROUNDS])
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time

from common import Run, read_small, small_file, trust_environment, versions  # noqa: E402
from interleave import arounds, row  # noqa: E402  (benchmarks/ is on sys.path)

GATES = 3

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "failsecure-bench")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "failsecure-bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")


def setup() -> None:
    home = tempfile.mkdtemp(prefix="failsecure-bench-strands-")
    os.environ["HOME"] = home
    for var in ("XDG_CONFIG_HOME",):
        os.environ.pop(var, None)
    cwd = tempfile.mkdtemp(prefix="failsecure-bench-cwd-")
    os.chdir(cwd)
    # the config the bench writes is trusted (FAILSECURE_CONFIG), so `timeout = 0` applies
    os.environ["FAILSECURE_CONFIG"] = os.path.join(cwd, "bench.toml")
    trust_environment()  # the bench is trusted code (common.trust_environment)


def make_gate(i: int):
    def gate(event):
        if event.tool_use["input"].get("command") == "never":
            event.cancel_tool = "no"

    gate.__name__ = gate.__qualname__ = f"bench_gate_{i}"
    return gate


def scripted_model():
    from strands.models.model import Model

    class Scripted(Model):
        def update_config(self, **kw):
            pass

        def get_config(self):
            return {}

        async def structured_output(self, *a, **k):
            raise NotImplementedError
            yield  # pragma: no cover

        async def stream(self, messages, *args, **kwargs):
            yield {"messageStart": {"role": "assistant"}}
            last = messages[-1]["content"] if messages else []
            if any("toolResult" in block for block in last):
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": "done"}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
                return
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "c1", "name": "echo"}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"command": "ls"})}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}

    return Scripted()


async def measure(rounds: int, run: Run) -> None:
    from strands import Agent, tool
    from strands.hooks import BeforeToolCallEvent, HookRegistry

    from failsecure import activation, policy

    adapter = activation.get("strands")
    registry = HookRegistry()
    for i in range(GATES):
        registry.add_callback(BeforeToolCallEvent, make_gate(i))

    def event(command="ls"):
        return BeforeToolCallEvent(agent=None, selected_tool=None, tool_use={"toolUseId": "c1", "name": "echo", "input": {"command": command}}, invocation_state={})

    @tool
    def echo(command: str) -> str:
        """Echo.

        Args:
            command: text
        """
        return command

    class Gates:
        def register_hooks(self, reg, **kwargs):
            for i in range(GATES):
                reg.add_callback(BeforeToolCallEvent, make_gate(i))

    async def dispatch(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            await registry.invoke_callbacks_async(event())
        return (time.perf_counter() - t) / n * 1e6

    notes = small_file()

    async def dispatch_read(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            e = event()
            await registry.invoke_callbacks_async(e)
            assert not e.cancel_tool
            read_small(notes)
        return (time.perf_counter() - t) / n * 1e6

    async def agent_turn(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            agent = Agent(model=scripted_model(), tools=[echo], hooks=[Gates()], callback_handler=None)
            result = await agent.invoke_async("go")
        assert str(result).strip() == "done", result
        return (time.perf_counter() - t) / n * 1e6

    cases = [("before-tool dispatch (3 gates)", dispatch, 2000), ("  + tool reading a 4 KiB file", dispatch_read, 2000),
             ("whole agent turn (1 tool call)", agent_turn, 20)]
    measured: dict = {}  # (timeout = 0?, case) -> (unpatched, patched)
    floors: list = []
    configs = [("default config (30 s deadline per gate)", ""), ("timeout = 0 (no deadline)", "timeout = 0\n")]
    for config_label, config in configs:
        with open(os.environ["FAILSECURE_CONFIG"], "w") as fh:
            fh.write(config)
        policy.reload()
        print(f"  {config_label}")
        for label, fn, n in cases:
            # sanity: patched really gates (a cancel sticks; junk denies)
            assert adapter.patch() == "patched"
            denied = event("never")
            await registry.invoke_callbacks_async(denied)
            assert denied.cancel_tool == "no"
            floored = floors if fn is dispatch and not config else None
            measured[(bool(config), fn)] = got = await arounds(adapter, fn, n, rounds, floors=floored)
            print(row(label, *got, width=32))
    run.adapter("strands", f"{GATES} sync BeforeToolCallEvent callbacks", "HookRegistry.invoke_callbacks_async, then the tool body",
                noop=measured[(False, dispatch)], file=measured[(False, dispatch_read)], floors=floors,
                inline=measured[(True, dispatch)], rounds=rounds)


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 9
    setup()
    run = Run("strands", versions("strands-agents"))

    import failsecure

    failsecure.install()
    import strands.hooks  # noqa: F401  (patched on import)

    print(f"strands-agents {run.data['upstream']['strands-agents']}: {GATES} trivial BeforeToolCallEvent callbacks; "
          f"median us per call, {rounds} interleaved rounds")
    asyncio.run(measure(rounds, run))
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
