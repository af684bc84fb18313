"""google-adk: the cost failsecure adds to one gated tool call.

One runner plugin (async ``before_tool_callback``) and two agent ``before_tool_callback``s
(one sync, one async), all answering ``None`` (proceed). Measured unpatched and patched in
the same process, interleaved rounds, medians, the ratio and the microseconds added:

- the before-tool stages of one call exactly as ADK's ``_caller`` runs them
  (``PluginManager.run_before_tool_callback``, then the agent's
  ``canonical_before_tool_callbacks`` through ADK's own ``_run_callbacks``), on a real
  ``ToolContext`` of a real ``InvocationContext``; the same followed by a realistic tool's
  body (reading a 4 KiB file);
- for scale, one whole agent run (``InMemoryRunner.run_async``: a scripted ``BaseLlm``
  calls one ``FunctionTool``, then answers text).

Default config (30 s deadline per gate: a sync callback is run on failsecure's worker
thread) and ``timeout = 0``; no audit file. No network, telemetry off.

    tox -e bench-adk          (or: python benchmarks/bench_adk.py [ROUNDS])
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time

os.environ["OTEL_SDK_DISABLED"] = "true"
os.environ["ADK_DISABLE_LOAD_DOTENV"] = "1"
os.environ["GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY"] = "false"
os.environ["ADK_SUPPRESS_EXPERIMENTAL_FEATURE_WARNINGS"] = "1"
os.environ.pop("FAILSECURE_CONFIG", None)


from common import Run, read_small, small_file, trust_environment, versions  # noqa: E402
from interleave import arounds, row  # noqa: E402  (benchmarks/ is on sys.path)


def sync_gate(tool, args, tool_context):
    return None if args.get("command") != "never" else {"error": "no"}


async def async_gate(tool, args, tool_context):
    return None if args.get("command") != "never" else {"error": "no"}


def build():
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.tools.function_tool import FunctionTool
    from google.genai import types

    class Plugin(BasePlugin):
        async def before_tool_callback(self, *, tool, tool_args, tool_context):
            return None

    class ScriptedLlm(BaseLlm):
        model: str = "scripted"

        async def generate_content_async(self, llm_request, stream=False):
            last = (llm_request.contents or [None])[-1]
            if last is not None and any(p.function_response is not None for p in last.parts or ()):
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))
            else:
                call = types.FunctionCall(name="run_command", args={"command": "ls"}, id="c1")
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))

    def run_command(command: str) -> dict:
        """The benchmark tool."""
        return {"ok": True}

    agent = LlmAgent(name="bench", model=ScriptedLlm(), tools=[FunctionTool(run_command)],
                     before_tool_callback=[sync_gate, async_gate])
    return agent, Plugin(name="bench-plugin"), types


async def measure(rounds: int, run: Run) -> None:
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.plugins.plugin_manager import PluginManager
    from google.adk.runners import InMemoryRunner
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.adk.tools.tool_context import ToolContext
    from google.adk.utils._callback_pipeline import _run_callbacks, _stop_on_non_none

    from failsecure import activation, policy

    adapter = activation.get("google-adk")
    agent, plugin, types = build()
    tool = agent.tools[0]
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="bench", user_id="u")
    manager = PluginManager(plugins=[plugin])
    invocation = InvocationContext(session_service=sessions, invocation_id="i", agent=agent, session=session,
                                   plugin_manager=manager)
    runner = InMemoryRunner(agent=agent, app_name="bench", plugins=[plugin])
    message = types.Content(role="user", parts=[types.Part(text="go")])

    async def stages_once(command: str):
        context = ToolContext(invocation_context=invocation, function_call_id="c1")
        args = {"command": command}
        answer = await manager.run_before_tool_callback(tool=tool, tool_args=args, tool_context=context)
        if answer is None:
            answer = await _run_callbacks(agent.canonical_before_tool_callbacks, _stop_on_non_none,
                                          tool=tool, args=args, tool_context=context)
        return answer

    async def stages(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            await stages_once("ls")
        return (time.perf_counter() - t) / n * 1e6

    notes = small_file()

    async def stages_read(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            assert await stages_once("ls") is None
            read_small(notes)
        return (time.perf_counter() - t) / n * 1e6

    async def whole_run(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            s = await runner.session_service.create_session(app_name="bench", user_id="u")
            async for _event in runner.run_async(user_id="u", session_id=s.id, new_message=message):
                pass
        return (time.perf_counter() - t) / n * 1e6

    cases = [("before-tool stages (1 plugin + 2 agent callbacks)", stages, 2000),
             ("  + tool reading a 4 KiB file", stages_read, 2000),
             ("whole agent run, one tool call", whole_run, 20)]
    measured: dict = {}  # (timeout = 0?, case) -> (unpatched, patched)
    floors: list = []
    configs = [("default config (30 s deadline per gate)", ""), ("timeout = 0 (no deadline)", "timeout = 0\n")]
    for config_label, config in configs:
        with open("bench-config.toml", "w") as fh:
            fh.write(config)
        os.environ["FAILSECURE_CONFIG"] = os.path.abspath("bench-config.toml")  # trusted: timeout = 0 applies
        trust_environment()  # the bench is trusted code (common.trust_environment)
        policy.reload()
        print(f"  {config_label}")
        for label, fn, n in cases:
            # sanity: patched really gates, unpatched is upstream's
            assert adapter.patch() == "patched"
            assert await stages_once("never") == {"error": "no"}
            floored = floors if fn is stages and not config else None
            got = await arounds(adapter, fn, n, rounds, warmup=max(1, n // 4), floors=floored)
            measured[(bool(config), fn)] = got
            print(row(label, *got, width=50))
    run.adapter("google-adk", "1 async plugin + 1 sync and 1 async agent callback",
                "PluginManager.run_before_tool_callback + the agent's callbacks, then the tool body",
                noop=measured[(False, stages)], file=measured[(False, stages_read)], floors=floors,
                inline=measured[(True, stages)], rounds=rounds)


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 9
    os.chdir(tempfile.mkdtemp(prefix="failsecure-bench-adk-"))  # the config file per configuration
    import logging

    run = Run("adk", versions("google-adk"))
    import failsecure

    failsecure.install()
    import google.adk.plugins.plugin_manager  # noqa: F401  (patched on import)

    logging.getLogger("google_adk").setLevel(logging.ERROR)
    print(f"google-adk {run.data['upstream']['google-adk']}: one gated tool call, median of {rounds} "
          f"interleaved rounds (microseconds per call)")
    asyncio.run(measure(rounds, run))
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
