"""langchain: the cost failsecure adds to one gated tool call.

One strict callback handler (``raise_error = True``, answers ``None``: a gate that lets
the call through) and one observer handler (a no-op tracer), passed in the run config.
Measured unpatched and patched in the same process, interleaved rounds, medians, the
ratio and the microseconds added:

- ``CallbackManager.on_tool_start`` (the callback dispatcher alone, what a tool calls
  before its body);
- ``tool.invoke`` of a trivial ``StructuredTool``, and of one that reads a 4 KiB file (the
  realistic tool);
- a whole ``create_agent`` run (``agent.invoke``): a scripted chat model asks for the
  tool once, the ToolNode runs it, the model answers.
- the same two through ``ainvoke``.

Medians, and the best round of each side (steadier when the machine is busy). Default
config (30 s deadline per gate: one thread hand-off per tool call) and
``timeout = 0`` (no deadline: the gate runs inline); no audit file.

    tox -e bench-langchain          (or: python benchmarks/bench_langchain.py [ROUNDS])
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time

import interleave  # noqa: E402  (benchmarks/ is on sys.path)
from common import Run, read_small, small_file, trust_environment, versions  # noqa: E402


def setup() -> None:
    work = tempfile.mkdtemp(prefix="failsecure-bench-langchain-")
    os.chdir(work)
    # a trusted config ($FAILSECURE_CONFIG): a project file may not loosen the deadline
    os.environ["FAILSECURE_CONFIG"] = os.path.join(work, "bench-config.toml")
    trust_environment()  # the bench is trusted code (common.trust_environment)


def build():
    from langchain.agents import create_agent
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool

    class Gate(BaseCallbackHandler):
        raise_error = True

        def on_tool_start(self, serialized, input_str, **kwargs):
            if (kwargs.get("inputs") or {}).get("command") == "never":
                raise PermissionError("no")

    class Tracer(BaseCallbackHandler):
        def on_tool_start(self, serialized, input_str, **kwargs):
            return None

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

    def echo(command: str) -> str:
        """Echo the command."""
        return command

    tool = StructuredTool.from_function(echo)
    call = AIMessage(content="", tool_calls=[{"name": "echo", "args": {"command": "ls"}, "id": "c1", "type": "tool_call"}])
    model = Scripted(messages=itertools.cycle([call, AIMessage(content="done")]))
    agent = create_agent(model, tools=[tool])
    config = {"callbacks": [Gate(), Tracer()]}
    return tool, agent, config, config["callbacks"]


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 9
    setup()
    report = Run("langchain", versions("langchain", "langchain-core", "langgraph"))

    import failsecure

    failsecure.install()
    import langchain_core.callbacks.manager  # noqa: F401  (patched on import)

    from failsecure import activation, policy

    adapter = activation.get("langchain")
    tool, agent, config, handlers = build()
    state = {"messages": [{"role": "user", "content": "go"}]}
    from langchain_core.callbacks import CallbackManager

    manager = CallbackManager(handlers=handlers)
    serialized = {"name": "echo", "description": "Echo the command."}

    def dispatch(n):
        t = time.perf_counter()
        for _ in range(n):
            manager.on_tool_start(serialized, "{'command': 'ls'}", inputs={"command": "ls"}, tool_call_id="c1")
        return (time.perf_counter() - t) / n * 1e6

    from langchain_core.tools import StructuredTool

    notes = small_file()

    def read_notes(path: str) -> str:
        """Read a file."""
        return read_small(path)

    reader = StructuredTool.from_function(read_notes)

    def read(n):
        t = time.perf_counter()
        for _ in range(n):
            reader.invoke({"path": notes}, config=config)
        return (time.perf_counter() - t) / n * 1e6

    def direct(n):
        t = time.perf_counter()
        for _ in range(n):
            tool.invoke({"command": "ls"}, config=config)
        return (time.perf_counter() - t) / n * 1e6

    def run(n):
        t = time.perf_counter()
        for _ in range(n):
            agent.invoke(state, config=config)
        return (time.perf_counter() - t) / n * 1e6

    def adirect(n):
        async def go():
            t = time.perf_counter()
            for _ in range(n):
                await tool.ainvoke({"command": "ls"}, config=config)
            return (time.perf_counter() - t) / n * 1e6

        return asyncio.run(go())

    def arun(n):
        async def go():
            t = time.perf_counter()
            for _ in range(n):
                await agent.ainvoke(state, config=config)
            return (time.perf_counter() - t) / n * 1e6

        return asyncio.run(go())

    up = report.data["upstream"]
    print(
        f"langchain {up['langchain']}, langchain-core {up['langchain-core']}, "
        f"langgraph {up['langgraph']}: one strict gate + one observer handler; "
        f"{rounds} interleaved rounds, medians (us per call)"
    )
    cases = [
        ("CallbackManager.on_tool_start", dispatch, 2000),
        ("tool.invoke", direct, 400),
        ("tool.invoke, reading a 4 KiB file", read, 400),
        ("tool.ainvoke", adirect, 400),
        ("create_agent invoke (1 tool call)", run, 40),
        ("create_agent ainvoke (1 tool call)", arun, 40),
    ]
    configs = [("default config (30 s deadline per gate)", ""), ("timeout = 0 (no deadline)", "timeout = 0\n")]
    measured: dict = {}  # (timeout = 0?, case) -> (unpatched, patched)
    floors: list = []
    for config_label, text in configs:
        with open(os.environ["FAILSECURE_CONFIG"], "w") as fh:
            fh.write(text)
        policy.reload()
        print(f"  {config_label}")
        for label, fn, n in cases:
            assert adapter.patch() == "patched"
            try:  # sanity: patched really gates
                tool.invoke({"command": "never"}, config=config)
                raise AssertionError("not gated")
            except Exception as exc:  # noqa: BLE001
                assert type(exc).__name__ == "ToolCallDenied", exc
            floored = floors if fn is direct and not text else None
            unpatched, patched = interleave.rounds(adapter, fn, n, rounds, floors=floored)
            measured[(bool(text), fn)] = (unpatched, patched)
            u, p = statistics.median(unpatched), statistics.median(patched)
            bu, bp = min(unpatched), min(patched)  # the best round: steadier on a busy machine
            print(f"    {label:<36} unpatched {u:9.1f}  patched {p:9.1f}  +{p - u:7.1f} us  x{p / u:.3f}"
                  f"   (best rounds: {bu:.1f} / {bp:.1f}, +{bp - bu:.1f} us)")
    report.adapter("langchain", "1 strict sync handler + 1 observer", "tool.invoke (the tool runs)",
                noop=measured[(False, direct)], file=measured[(False, read)], floors=floors,
                inline=measured[(True, direct)], rounds=rounds)
    report.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
