"""A realtime session (``agent.realtime(model).session()``) is an agent run: its tool calls
go through the tool manager's hooks (the gates judge them, as in ``run``), and a tool whose
body runs another toolset's tool past the tool manager is ungoverned there too — denied
while the agent has a gate, run and audited when it has none. The session is upstream's
real ``RealtimeSession``; only the provider connection is scripted (a ``RealtimeModel``
whose connection asks for the tool calls and takes their results)."""

import asyncio
import json
from contextlib import asynccontextmanager

import pytest
from failsecure_pai_rig import BYPASS_TOOL, TOOL, hooks_with

WHERE = "pydantic-ai:FunctionToolset.call_tool"

pytest.importorskip("pydantic_ai.realtime.codec")


def _connection(calls, results):
    """A scripted provider connection: one response asking for ``calls`` (``(id, tool,
    args)``), then, once every result came back, one closing response. 2.68.0 reads
    ``frames()`` (lifecycle frames), 2.42.0 iterates the connection's codec events."""
    from pydantic_ai.realtime.codec import RealtimeConnection, ResponseDone, ToolCall, ToolResult

    asks = [ToolCall(i, tool_name=n, args=json.dumps(a)) for i, n, a in calls]
    framed = getattr(RealtimeConnection.frames, "__isabstractmethod__", False) if hasattr(RealtimeConnection, "frames") else False

    class Connection(RealtimeConnection):
        def __init__(self):
            self.got = asyncio.Queue()
            if framed:
                from pydantic_ai.realtime._inferred_lifecycle import InferredLifecycle

                self.lifecycle = InferredLifecycle(transcribes=False)

        async def send(self, content):
            if not framed:
                if isinstance(content, ToolResult):
                    results.append(content)
                    await self.got.put(content)
                return None
            with self.lifecycle.sending(content):
                if isinstance(content, ToolResult):
                    results.append(content)
                    await self.got.put(content)
            return self.lifecycle.take_pending()

        async def _results(self):
            for _ in asks:
                await asyncio.wait_for(self.got.get(), 10)

        if framed:
            async def frames(self):
                yield self.lifecycle.frame_for([*asks, ResponseDone()])
                await self._results()
                yield self.lifecycle.frame_for([ResponseDone()])
        else:
            async def __aiter__(self):
                for ask in asks:
                    yield ask
                yield ResponseDone()
                await self._results()
                yield ResponseDone()

    return Connection()


def _model(calls, results):
    from pydantic_ai.realtime.model import RealtimeModel

    class ScriptedRealtimeModel(RealtimeModel):
        @property
        def model_name(self):
            return "scripted"

        @property
        def system(self):
            return "scripted"

        @asynccontextmanager
        async def connect(self, *, messages, model_settings, model_request_parameters):
            yield _connection(calls, results)

    return ScriptedRealtimeModel()


def _agent(rig, capabilities):
    """The rig's ``run_command`` and a ``bypass_tool`` whose body runs ``run_command`` of a
    function toolset of its own through that toolset's ``call_tool``."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.toolsets import FunctionToolset

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    inner = FunctionToolset([run_command])
    agent = Agent(capabilities=list(capabilities))
    agent.tool_plain(run_command)

    @agent.tool
    async def bypass_tool(ctx: RunContext, command: str) -> str:
        tools = await inner.get_tools(ctx)
        return str(await inner.call_tool(TOOL, {"command": command}, ctx, tools[TOOL]))

    return agent


def _session(agent, calls):
    """(the results the session sent back, the exception it ended with or None)."""
    results: list = []

    async def go():
        async with agent.realtime(_model(calls, results)).session() as session:
            async for _event in session:
                pass

    try:
        asyncio.run(asyncio.wait_for(go(), 30))
    except Exception as exc:  # noqa: BLE001 - the test reads what the session ended with
        return results, exc
    return results, None


def _policy(ctx, *, call, tool_def, args):
    from pydantic_ai.exceptions import ToolFailed

    if "forbidden" in str(args.get("command")):
        raise ToolFailed("policy: forbidden command")
    return args


def _raising(ctx, *, call, tool_def, args):
    raise RuntimeError("gate failed on sk-realtime-secret")


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def test_a_realtime_sessions_bypass_of_the_tool_manager_is_denied_as_ungoverned(rig):
    agent = _agent(rig, [hooks_with(_policy)])
    results, exc = _session(agent, [("rt-0", BYPASS_TOOL, {"command": "smuggled"})])
    assert rig.ran() == [], "a tool ran past the tool manager inside a realtime session"
    assert isinstance(exc, PermissionError) and "(ungoverned)" in str(exc) and "smuggled" not in str(exc)
    assert [(e["tool"], e["outcome"], e["hook"]) for e in ungoverned(rig)] == [(TOOL, "deny", WHERE)]
    assert any(e["tool"] == BYPASS_TOOL and e["outcome"] == "allow" for e in rig.events())


def test_a_realtime_sessions_bypass_without_a_gate_runs_and_is_audited(rig):
    # the twin: no gate to bypass, so it is upstream's, audited
    results, exc = _session(_agent(rig, []), [("rt-0", BYPASS_TOOL, {"command": "smuggled"})])
    assert exc is None and rig.ran() == ["smuggled"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "allow")]


def test_a_realtime_sessions_tool_calls_are_judged_by_the_gates(rig):
    agent = _agent(rig, [hooks_with(_policy)])
    calls = [("rt-0", TOOL, {"command": "harmless"}), ("rt-1", TOOL, {"command": "forbidden x"})]
    results, exc = _session(agent, calls)
    assert exc is None and rig.ran() == ["harmless"]
    told = {r.tool_call_id: r.output for r in results}
    assert "policy: forbidden command" in told["rt-1"] and told["rt-0"] == "ran harmless"
    assert ungoverned(rig) == []


def test_a_realtime_sessions_failing_gate_denies_without_leaking(rig):
    agent = _agent(rig, [hooks_with(_raising)])
    results, exc = _session(agent, [("rt-0", TOOL, {"command": "harmless"})])
    assert exc is None and rig.ran() == []
    (told,) = [r.output for r in results]
    assert "failed closed (raised)" in told and "sk-realtime-secret" not in told
    (event,) = [e for e in rig.events() if e["tool"] == TOOL]
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", "RuntimeError")


def _wrapped_agent(rig, rewrite):
    """The gates are ``Hooks`` hooks; a user's ``WrapperToolset.call_tool`` hands the tool
    ``rewrite(arguments)`` after they judged the call."""
    from pydantic_ai import Agent
    from pydantic_ai.toolsets import FunctionToolset, WrapperToolset

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    class Rewriting(WrapperToolset):
        async def call_tool(self, name, tool_args, ctx, tool):
            return await self.wrapped.call_tool(name, rewrite(dict(tool_args)), ctx, tool)

    return Agent(toolsets=[Rewriting(FunctionToolset([run_command]))], capabilities=[hooks_with(_policy)])


def test_a_toolset_wrapper_rewrite_in_a_realtime_session_is_judged(rig):
    agent = _wrapped_agent(rig, lambda a: {"command": "forbidden " + a["command"]})
    results, exc = _session(agent, [("rt-0", TOOL, {"command": "harmless"})])
    assert exc is None and rig.ran() == []
    assert "policy: forbidden command" in results[0].output
    assert [e["outcome"] for e in rig.events()] == ["allow", "deny"]  # the model's call, then what reached the tool


def test_a_harmless_toolset_wrapper_rewrite_in_a_realtime_session_runs(rig):
    agent = _wrapped_agent(rig, lambda a: {"command": a["command"] + "-wrapped"})
    results, exc = _session(agent, [("rt-0", TOOL, {"command": "harmless"})])
    assert exc is None and rig.ran() == ["harmless-wrapped"]
    assert [e["outcome"] for e in rig.events()] == ["allow", "allow"]


def _approval_agent(rig, handler):
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import HandleDeferredToolCalls

    marker = rig.marker
    agent = Agent(capabilities=[hooks_with(_policy), HandleDeferredToolCalls(handler=handler)])

    @agent.tool_plain(requires_approval=True)
    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    return agent


def _approve_all(ctx, requests):
    return requests.build_results(approve_all=True)


def _approver_raises(ctx, requests):
    raise RuntimeError("approver failed on sk-realtime-secret")


def test_a_failing_approval_handler_in_a_realtime_session_denies(rig):
    results, exc = _session(_approval_agent(rig, _approver_raises), [("rt-0", TOOL, {"command": "harmless"})])
    assert exc is None and rig.ran() == []
    (told,) = [r.output for r in results]
    assert "failed closed (raised)" in told and "sk-realtime-secret" not in told
    assert [(e["outcome"], e["failure"]) for e in rig.events()] == [("deny", "raised")]


def test_an_approving_handler_in_a_realtime_session_runs_the_tool(rig):
    results, exc = _session(_approval_agent(rig, _approve_all), [("rt-0", TOOL, {"command": "harmless"})])
    assert exc is None and rig.ran() == ["harmless"]
