"""claude-agent-sdk: the cost failsecure adds to one gated tool call in the SDK.

One PreToolUse hook callback (async, allows) registered on a real ``Query`` the way
``initialize`` registers it (through the patched set-up when failsecure is active); the
CLI's ``hook_callback`` control request for one tool call answered by the SDK's real
``Query._handle_control_request`` into a capturing transport. Unpatched and patched in
the same process, interleaved rounds, medians, the ratio and the microseconds added.
Each request has its own ``tool_use_id`` (failsecure decides once per tool call). The
same followed by a realistic tool's body (reading a 4 KiB file), as the CLI would run the
tool once allowed. Default
config (30 s deadline per gate) and ``timeout = 0``; no audit file.

For scale: one whole Bash tool call through the bundled CLI costs hundreds of
milliseconds (the model round trip alone is two HTTP requests).

    tox -e bench-claude-sdk          (or: python benchmarks/bench_claude_sdk.py [ROUNDS])
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

from common import Run, handoff_floor_us, read_small, small_file, trust_environment, versions  # benchmarks/ is on sys.path

N = 2000


class Transport:
    def __init__(self) -> None:
        self.last = None

    async def write(self, data: str) -> None:
        self.last = data


async def allow(input_data, tool_use_id, context):
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}


def session(patched: bool):
    """A Query with the callback registered; returns (query, callback id, transport)."""
    from claude_agent_sdk._internal.query import Query

    from failsecure import activation

    transport = Transport()
    query = Query(transport=transport, is_streaming_mode=True, hooks={"PreToolUse": [{"matcher": "Bash", "hooks": [allow]}]})
    if patched:
        activation.get("claude-agent-sdk")._prepare(query)  # what the patched initialize does first
    for matcher in query.hooks["PreToolUse"]:
        for cb in matcher["hooks"]:
            query.hook_callbacks["hook_%d" % query.next_callback_id] = cb
            query.next_callback_id += 1
    return query, "hook_0", transport


async def measure(rounds: int, run: Run) -> list:
    from failsecure import activation, policy

    adapter = activation.get("claude-agent-sdk")
    serial = [0]

    def request(callback_id: str) -> dict:
        serial[0] += 1
        call_id = "toolu_bench_%d" % serial[0]
        return {"type": "control_request", "request_id": "req_%d" % serial[0], "request": {
            "subtype": "hook_callback", "callback_id": callback_id, "tool_use_id": call_id,
            "input": {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls -la"},
                      "session_id": "bench", "transcript_path": "", "cwd": "", "tool_use_id": call_id}}}

    notes = small_file()

    def noop() -> None:
        pass

    def read() -> None:
        read_small(notes)

    async def one_call(patched: bool, n: int, tool=noop) -> float:
        query, callback_id, transport = session(patched)
        requests = [request(callback_id) for _ in range(n)]
        t = time.perf_counter()
        for r in requests:
            await query._handle_control_request(r)
            tool()
        elapsed = (time.perf_counter() - t) / n * 1e6
        answer = json.loads(transport.last)["response"]
        assert answer["subtype"] == "success" and answer["response"]["hookSpecificOutput"]["permissionDecision"] == "allow"
        return elapsed

    results = []
    measured: dict = {}  # (timeout = 0?, tool) -> (unpatched, patched)
    floors: list = []
    for label, config in (("default config (30 s deadline per gate)", ""), ("timeout = 0 (no deadline)", "timeout = 0\n")):
        with open("failsecure.toml", "w") as fh:
            fh.write(config)
        os.environ["FAILSECURE_CONFIG"] = os.path.abspath("failsecure.toml")
        trust_environment()  # the bench is trusted code (common.trust_environment)
        policy.reload()
        assert adapter.state == "patched"
        print(f"  {label}")
        for tool, what in ((noop, "hook_callback request -> answer"), (read, "  + tool reading a 4 KiB file")):
            for _ in range(2):  # warm-up, both modes
                await one_call(False, N, tool)
                await one_call(True, N, tool)
            unpatched, patched = [], []
            for _ in range(rounds):
                unpatched.append(await one_call(False, N, tool))
                patched.append(await one_call(True, N, tool))
                if tool is noop and not config:
                    floors.append(handoff_floor_us(n=N, repeat=1))
            measured[(bool(config), tool)] = (unpatched, patched)
            u, p = statistics.median(unpatched), statistics.median(patched)
            results.append((label, u, p))
            print(f"    {what:<34} unpatched {u:8.1f} us  patched {p:8.1f} us  +{p - u:7.1f} us  x{p / u:.2f}")
    run.adapter("claude-agent-sdk", "1 async PreToolUse callback", "Query._handle_control_request (hook_callback), then the tool body",
                noop=measured[(False, noop)], file=measured[(False, read)], floors=floors,
                inline=measured[(True, noop)], rounds=rounds,
                na="the SDK's hook callbacks are coroutines: run on the loop, no thread hand-off")
    return results


def main(argv: list) -> int:
    rounds = int(argv[0]) if argv else 9
    os.chdir(tempfile.mkdtemp(prefix="failsecure-bench-sdk-"))
    run = Run("claude-sdk", versions("claude-agent-sdk"))
    import failsecure

    failsecure.install()
    import claude_agent_sdk._internal.query  # noqa: F401  (patched on import)

    print(f"claude-agent-sdk {run.data['upstream']['claude-agent-sdk']}: one allowing PreToolUse callback, "
          f"{rounds} interleaved rounds of {N} tool calls, medians per call")
    asyncio.run(measure(rounds, run))
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
