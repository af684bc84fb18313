"""openai-agents: the cost failsecure adds to one gated function tool call.

One function tool with two trivial tool input guardrails (one sync, one async, both
``allow``) and a callable ``needs_approval`` answering ``False``. Measured unpatched and
patched in the same process, interleaved rounds, medians, the ratio and the microseconds
added:

- the SDK's guardrail loop (``_execute_tool_input_guardrails``) plus the approval
  evaluation (``function_needs_approval``) for one call: the dispatch failsecure wraps;
  the same followed by a realistic tool's body (reading a 4 KiB file);
- a whole agent run (``Runner.run``) with a scripted model (no network) making one tool
  call and then answering: what an application sees.

Default config (30 s deadline per gate) and ``timeout = 0``; no audit file; tracing off.

    tox -e bench-openai-agents          (or: python benchmarks/bench_openai_agents.py [ROUNDS])
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-not-used")
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"


from common import Run, read_small, small_file, trust_environment, versions  # noqa: E402
from interleave import arounds, row  # noqa: E402  (benchmarks/ is on sys.path)


def setup() -> None:
    os.environ.pop("FAILSECURE_CONFIG", None)
    os.chdir(tempfile.mkdtemp(prefix="failsecure-bench-oa-"))


def build():
    from agents import Agent, ToolGuardrailFunctionOutput, function_tool, tool_input_guardrail
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    @tool_input_guardrail
    def sync_guard(data):
        if "never" in data.context.tool_arguments:
            return ToolGuardrailFunctionOutput.reject_content("no")
        return ToolGuardrailFunctionOutput.allow()

    @tool_input_guardrail
    async def async_guard(data):
        return ToolGuardrailFunctionOutput.allow()

    def needs(ctx, params, call_id):
        return False

    def run_command(command: str) -> str:
        """Echo the command."""
        return command

    tool = function_tool(run_command, needs_approval=needs)
    tool.tool_input_guardrails = [sync_guard, async_guard]

    class Scripted(Model):
        async def get_response(self, system_instructions, input, *args, **kwargs):
            if any((i.get("type") if isinstance(i, dict) else getattr(i, "type", None)) == "function_call_output" for i in input if not isinstance(input, str)):
                msg = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                            content=[ResponseOutputText(type="output_text", text="done", annotations=[])])
                return ModelResponse(output=[msg], usage=Usage(), response_id=None)
            call = ResponseFunctionToolCall(type="function_call", call_id="c1", name="run_command",
                                            arguments=json.dumps({"command": "ls"}), id="fc", status="completed")
            return ModelResponse(output=[call], usage=Usage(), response_id=None)

        def stream_response(self, *a, **k):
            raise NotImplementedError

    agent = Agent(name="bench", tools=[tool], model=Scripted())
    return tool, agent


async def measure(rounds: int, run: Run) -> None:
    from agents import RunConfig, Runner
    from agents.run_context import RunContextWrapper
    from agents.run_internal import tool_execution
    from agents.tool_context import ToolContext
    from openai.types.responses import ResponseFunctionToolCall

    from failsecure import activation, policy

    adapter = activation.get("openai-agents")
    tool, agent = build()
    config = RunConfig(tracing_disabled=True)

    def call_of(command):
        return ResponseFunctionToolCall(type="function_call", call_id="c1", name="run_command",
                                        arguments=json.dumps({"command": command}), id="fc", status="completed")

    async def one_dispatch(command="ls"):
        call = call_of(command)
        wrapper = RunContextWrapper(context=None)
        needs = await tool_execution.function_needs_approval(tool, wrapper, call)
        ctx = ToolContext.from_agent_context(wrapper, "c1", tool_call=call, agent=agent)
        rejected = await tool_execution._execute_tool_input_guardrails(
            func_tool=tool, tool_context=ctx, agent=agent, tool_input_guardrail_results=[])
        return needs, rejected

    async def dispatch(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            await one_dispatch()
        return (time.perf_counter() - t) / n * 1e6

    notes = small_file()

    async def dispatch_read(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            await one_dispatch()
            read_small(notes)
        return (time.perf_counter() - t) / n * 1e6

    async def whole_run(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            result = await Runner.run(agent, "go", run_config=config)
        assert result.final_output == "done"
        return (time.perf_counter() - t) / n * 1e6

    cases = [("guardrails + approval dispatch", dispatch, 500), ("  + tool reading a 4 KiB file", dispatch_read, 500),
             ("whole Runner.run (1 tool call)", whole_run, 50)]
    measured: dict = {}  # (timeout = 0?, case) -> (unpatched, patched)
    floors: list = []
    configs = [("default config (30 s deadline per gate)", ""), ("timeout = 0 (no deadline)", "timeout = 0\n")]
    for config_label, text in configs:
        with open("bench.toml", "w") as fh:
            fh.write(text)
        os.environ["FAILSECURE_CONFIG"] = os.path.abspath("bench.toml")  # trusted: may loosen
        trust_environment()  # the bench is trusted code (common.trust_environment)
        policy.reload()
        print(f"  {config_label}")
        for label, fn, n in cases:
            assert adapter.patch() == "patched"
            _, rejected = await one_dispatch("never")
            assert rejected == "no", rejected  # sanity: the gates really run
            floored = floors if fn is dispatch and not text else None
            measured[(bool(text), fn)] = got = await arounds(adapter, fn, n, rounds, floors=floored)
            print(row(label, *got, width=34))
    run.adapter("openai-agents", "1 sync + 1 async tool input guardrail, needs_approval",
                "_execute_tool_input_guardrails + function_needs_approval, then the tool body",
                noop=measured[(False, dispatch)], file=measured[(False, dispatch_read)], floors=floors,
                inline=measured[(True, dispatch)], rounds=rounds)


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 9
    setup()
    run = Run("openai-agents", versions("openai-agents"))

    import failsecure

    failsecure.install()
    import agents  # noqa: F401  (patched on import)
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    print(f"openai-agents {run.data['upstream']['openai-agents']}: one function tool call, "
          f"2 tool input guardrails (sync + async) and a callable needs_approval; {rounds} rounds, medians (us per call)")
    asyncio.run(measure(rounds, run))
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
