"""crewai: the cost failsecure adds to one gated tool call.

One trivial before-tool-call hook (no opinion) registered with CrewAI's real
``register_before_tool_call_hook``; ``tool_hooks.run_before_tool_call_hooks(context)``
(what every CrewAI tool-call path asks before it runs a tool) measured unpatched and
patched in the same process, interleaved rounds, medians, the ratio and the
microseconds added, and the same followed by a realistic tool's body (reading a 4 KiB
file). For scale, the same with one whole ``Crew.kickoff()``: a scripted
``BaseLLM`` asks for one real tool call, then answers (no network). Default config
(30 s deadline per gate: one thread hand-off) and ``timeout = 0``; no audit file.
Telemetry off, HOME a throwaway dir.

Each dispatch hands a ``HookDispatchedEvent`` to CrewAI's event-bus thread, patched or
not. A dispatch is timed with that bus idle (flushed before it, untimed), as it is
between two tool calls of a real run; the back-to-back loop, where the bus thread's
handlers of one call compete with the next call for the GIL, is printed beside it.

    tox -e bench-crewai          (or: python benchmarks/bench_crewai.py [ROUNDS])
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import tempfile
import time

import interleave  # noqa: E402  (benchmarks/ is on sys.path)
from common import Run, read_small, small_file, trust_environment, versions  # noqa: E402


def setup() -> str:
    home = tempfile.mkdtemp(prefix="failsecure-bench-crewai-")
    os.environ["HOME"] = home
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "FAILSECURE_CONFIG"):
        os.environ.pop(var, None)
    os.environ["CREWAI_STORAGE_DIR"] = os.path.join(home, "crewai-storage")
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
    os.environ["CREWAI_DISABLE_TRACKING"] = "true"
    os.environ["CREWAI_TRACING_ENABLED"] = "false"
    os.environ["OTEL_SDK_DISABLED"] = "true"
    cwd = tempfile.mkdtemp(prefix="failsecure-bench-cwd-")
    os.chdir(cwd)  # failsecure.toml is written here per configuration
    return cwd


def bench_gate(context):
    if context.tool_input.get("command") == "never":
        return False
    return None


def crew_factory(marker: str):
    from crewai import Agent, Crew, Task
    from crewai.llms.base_llm import BaseLLM
    from crewai.tools import BaseTool

    class Scripted(BaseLLM):
        def __init__(self, **kw):
            super().__init__(model="failsecure-bench", **kw)
            object.__setattr__(self, "_turn", 0)

        def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None,
                 from_agent=None, response_model=None, **kw):
            turn = self._turn
            object.__setattr__(self, "_turn", turn + 1)
            if turn == 0:
                return 'Thought: run it\nAction: marker_tool\nAction Input: {"command": "ls"}'
            return "Thought: done\nFinal Answer: finished"

        def supports_function_calling(self):
            return False

        def get_context_window_size(self):
            return 100_000

    class MarkerTool(BaseTool):
        name: str = "marker_tool"
        description: str = "Runs a command (appends to a marker file)."

        def _run(self, command: str) -> str:
            with open(marker, "a") as fh:
                fh.write(command + "\n")
            return "ok"

    def make():
        agent = Agent(role="bench", goal="run", backstory="bench", llm=Scripted(), tools=[MarkerTool()], verbose=False)
        task = Task(description="Run the command once.", expected_output="done", agent=agent)
        return Crew(agents=[agent], tasks=[task], verbose=False)

    return make


def measure(rounds: int, report: Run) -> float:
    from failsecure import activation, policy

    tool_hooks = importlib.import_module("crewai.hooks.tool_hooks")
    adapter = activation.get("crewai")
    tool_hooks.register_before_tool_call_hook(bench_gate)
    ctx = tool_hooks.ToolCallHookContext(tool_name="marker_tool", tool_input={"command": "ls"}, tool=None)
    never = tool_hooks.ToolCallHookContext(tool_name="marker_tool", tool_input={"command": "never"}, tool=None)
    marker = os.path.abspath("marker.txt")
    make_crew = crew_factory(marker)

    from crewai.events.event_bus import crewai_event_bus

    clock = time.perf_counter

    # Every dispatch hands a HookDispatchedEvent to CrewAI's event-bus thread (patched or
    # not). Back to back, that thread's handlers for the previous call compete for the
    # GIL with the next call; in a real run an LLM turn lies between two tool calls and
    # the bus is idle. So each call is timed alone, the bus flushed (untimed) before it;
    # the back-to-back loop is printed beside it.
    def flushed(context, n: int, then=None) -> float:
        """µs per dispatch of ``context`` (and ``then()``, the tool's body), each timed alone
        with the bus flushed before it."""
        run, flush, total = tool_hooks.run_before_tool_call_hooks, crewai_event_bus.flush, 0.0
        for _ in range(n):
            flush()
            t = clock()
            if run(context):
                raise AssertionError("the allowed call was blocked")
            if then is not None:
                then()
            total += clock() - t
        return total / n * 1e6

    def dispatch(n: int) -> float:
        return flushed(ctx, n)

    def back_to_back(n: int) -> float:
        run = tool_hooks.run_before_tool_call_hooks
        t = clock()
        for _ in range(n):
            if run(ctx):
                raise AssertionError("the allowed call was blocked")
        return (clock() - t) / n * 1e6

    notes = small_file()
    read_ctx = tool_hooks.ToolCallHookContext(tool_name="read_file", tool_input={"path": notes}, tool=None)

    def dispatch_read(n: int) -> float:
        return flushed(read_ctx, n, lambda: read_small(notes))

    def kickoff(n: int) -> float:
        crews = [make_crew() for _ in range(n)]
        t = time.perf_counter()
        for crew in crews:
            crew.kickoff()
        return (time.perf_counter() - t) / n * 1e6

    cases = [("run_before_tool_call_hooks (1 hook)", dispatch, 2000),
             ("  the same, back to back", back_to_back, 2000),
             ("  + tool reading a 4 KiB file", dispatch_read, 2000),
             ("whole Crew.kickoff (1 tool call)", kickoff, 5)]
    configs = [("default config (30 s deadline per gate)", ""), ("timeout = 0 (no deadline)", "timeout = 0\n")]
    worst = 0.0
    measured: dict = {}  # (timeout = 0?, case) -> (unpatched, patched)
    floors: list = []
    for config_label, config in configs:
        with open("failsecure.toml", "w") as fh:
            fh.write(config)
        os.environ["FAILSECURE_CONFIG"] = os.path.abspath("failsecure.toml")
        trust_environment()  # the bench is trusted code (common.trust_environment)
        policy.reload()
        print(f"  {config_label}")
        for label, fn, n in cases:
            assert adapter.patch() == "patched"
            assert tool_hooks.run_before_tool_call_hooks(never) is True
            floored = floors if fn is dispatch and not config else None
            unpatched, patched = interleave.rounds(adapter, fn, n, rounds, floors=floored)
            measured[(bool(config), fn)] = (unpatched, patched)
            u, p = statistics.median(unpatched), statistics.median(patched)
            ratio = p / u
            if fn is dispatch:
                worst = max(worst, ratio)
            print(f"    {label:<38} unpatched {u:10.1f}  patched {p:10.1f}  +{p - u:8.1f} us  x{ratio:.3f}")
    with open(marker) as fh:
        assert fh.read().count("ls") > 0, "the tool never ran"
    report.adapter("crewai", "1 sync before-tool-call hook", "tool_hooks.run_before_tool_call_hooks, then the tool body",
                noop=measured[(False, dispatch)], file=measured[(False, dispatch_read)], floors=floors,
                inline=measured[(True, dispatch)], rounds=rounds)
    return worst


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 9
    setup()
    import importlib.metadata

    run = Run("crewai", versions("crewai"))
    import failsecure

    failsecure.install()
    importlib.import_module("crewai.hooks.tool_hooks")  # the trigger module: patched on import
    import logging

    logging.getLogger("crewai").setLevel(logging.ERROR)
    logging.getLogger("crewai.llms.base_llm").setLevel(logging.ERROR)
    print(f"crewai {importlib.metadata.version('crewai')}: one trivial before-tool-call hook; "
          f"median of {rounds} interleaved rounds, microseconds per call")
    measure(rounds, run)
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
