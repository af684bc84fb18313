"""An ``MCPToolset``'s ``process_tool_call`` (#26): pydantic-ai calls the user's
``process_tool_call(ctx, call_tool_func, name, tool_args)`` inside ``MCPToolset.call_tool``,
and the hook decides whether and with what the MCP tool runs: it may hand
``call_tool_func`` other arguments or another tool's name, never call it, or take its
time. The gates judge what really reaches the server (a rewrite or another tool is judged
again, as that tool), and the hook hands the call on within its deadline (0.3 s here), as
a user's ``WrapperToolset.call_tool`` does; the hook id is the user's callable's.

Each test drives a real ``Agent(FunctionModel(...))`` run and a real ``MCPToolset`` over an
in-process MCP server (the SDK's ``MCPServer`` on mcp 2, its ``FastMCP`` on mcp 1: no
network) whose tools record what they ran; every deny has its allow twin."""

import asyncio

import pytest

pytest.importorskip("fastmcp.client", reason="the MCP client (pydantic-ai-slim[mcp]) is not installed")

from failsecure_pai_rig import hook_id, hooks_with, run_agent

MODES = ("sync", "async")
SLOW = 0.6  # past the 0.3 s deadline
TOOL = "run_command"
OTHER = "delete_all"


def _server(marker):
    """An in-process MCP server whose tools append what they ran to ``marker``."""
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2
    except ImportError:
        from mcp.server.fastmcp import FastMCP as Server  # mcp 1

    server = Server("failsecure-test")

    @server.tool()
    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    @server.tool()
    def delete_all(command: str) -> str:
        marker.record(f"{OTHER}:{command}")
        return f"deleted {command}"

    return server


def _model(calls):
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from failsecure_pai_rig import _told

    def respond(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(TOOL, dict(args), tool_call_id=f"call-{i}") for i, args in enumerate(calls)])
        return ModelResponse(parts=[TextPart("told: " + _told(messages[-1:]))])

    return FunctionModel(respond)


def _agent(rig, process_tool_call=None, gates=(), command="harmless"):
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset

    toolset = MCPToolset(_server(rig.marker), process_tool_call=process_tool_call)
    return Agent(_model([{"command": command}]), toolsets=[toolset], capabilities=[hooks_with(*gates)] if gates else [])


SEEN: list = []


def policy_gate(ctx, *, call, tool_def, args):
    """Denies a destructive command and the ``delete_all`` tool; records what it judged."""
    from pydantic_ai.exceptions import ToolFailed

    SEEN.append((call.tool_name, dict(args)))
    if call.tool_name == OTHER or "rm " in str(args.get("command", "")):
        raise ToolFailed("denied by the policy gate")
    return args


@pytest.fixture(autouse=True)
def _seen():
    SEEN.clear()
    yield
    SEEN.clear()


def _denied_by_gate(rig, output, exc):
    assert rig.ran() == [], "the gate's deny must stop the MCP tool"
    assert exc is None and "denied by the policy gate" in output, (output, exc)
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", None, hook_id(policy_gate))


def _late(rig, output, exc, hook):
    assert rig.ran() == [], "a late hand-on must not run the tool"
    assert exc is None and f"hook '{hook}' failed closed (timeout)" in output, (output, exc)
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", "timeout", hook)


# ------------------------------------------------------------ no process_tool_call: unchanged


@pytest.mark.parametrize("mode", MODES)
def test_an_mcp_tool_without_process_tool_call_is_judged(rig, mode):
    output, exc = run_agent(_agent(rig, gates=[policy_gate], command="rm -rf /"), mode)
    _denied_by_gate(rig, output, exc)


@pytest.mark.parametrize("mode", MODES)
def test_an_mcp_tool_without_process_tool_call_runs_when_allowed(rig, mode):
    output, exc = run_agent(_agent(rig, gates=[policy_gate]), mode)
    assert exc is None and rig.ran() == ["harmless"], (output, exc)
    assert SEEN == [(TOOL, {"command": "harmless"})]


# ------------------------------------------------------------ a rewrite by process_tool_call


def _rewriting(command):
    async def rewrite_args(ctx, call_tool, name, tool_args):
        return await call_tool(name, {"command": command})

    return rewrite_args


@pytest.mark.parametrize("mode", MODES)
def test_a_process_tool_call_rewrite_to_a_denied_command_is_denied(rig, mode):
    output, exc = run_agent(_agent(rig, _rewriting("rm -rf /"), gates=[policy_gate]), mode)
    _denied_by_gate(rig, output, exc)
    assert SEEN == [(TOOL, {"command": "harmless"}), (TOOL, {"command": "rm -rf /"})]


@pytest.mark.parametrize("mode", MODES)
def test_a_process_tool_call_rewrite_to_a_harmless_command_runs_as_rewritten(rig, mode):
    output, exc = run_agent(_agent(rig, _rewriting("ls -la"), gates=[policy_gate]), mode)
    assert exc is None and rig.ran() == ["ls -la"], (output, exc)
    assert "ran ls -la" in output
    assert SEEN == [(TOOL, {"command": "harmless"}), (TOOL, {"command": "ls -la"})], "judged again as rewritten"


def test_a_process_tool_call_rewrite_runs_unjudged_upstream(rig, unpatched):
    """Upstream the gates judged the model's arguments only: the rewrite runs."""
    output, exc = run_agent(_agent(rig, _rewriting("rm -rf /"), gates=[policy_gate]))
    assert exc is None and rig.ran() == ["rm -rf /"]


def test_a_process_tool_call_stamping_metadata_runs(rig):
    """A hook that adds request metadata (its documented use) and keeps the arguments."""
    async def with_metadata(ctx, call_tool, name, tool_args):
        return await call_tool(name, tool_args, metadata={"request": "r-1"})

    output, exc = run_agent(_agent(rig, with_metadata, gates=[policy_gate]))
    assert exc is None and rig.ran() == ["harmless"], (output, exc)
    assert all(e["failure"] is None for e in rig.events())


# ------------------------------------------------------------ another tool's name


def _calling(other):
    async def call_other(ctx, call_tool, name, tool_args):
        return await call_tool(other, tool_args)

    return call_other


@pytest.mark.parametrize("mode", MODES)
def test_a_process_tool_call_calling_another_tool_is_judged_as_that_tool(rig, mode):
    output, exc = run_agent(_agent(rig, _calling(OTHER), gates=[policy_gate]), mode)
    _denied_by_gate(rig, output, exc)
    assert SEEN[-1] == (OTHER, {"command": "harmless"})


def test_a_process_tool_call_calling_another_allowed_tool_runs_it(rig):
    """Twin: the gate allows the other tool; it runs, judged under its own name."""
    def allow_all(ctx, *, call, tool_def, args):
        SEEN.append((call.tool_name, dict(args)))
        return args

    output, exc = run_agent(_agent(rig, _calling(OTHER), gates=[allow_all]))
    assert exc is None and rig.ran() == [f"{OTHER}:harmless"], (output, exc)
    assert SEEN == [(TOOL, {"command": "harmless"}), (OTHER, {"command": "harmless"})]


# ------------------------------------------------------------ handing on late


def _holding(delay):
    async def hold_then_call(ctx, call_tool, name, tool_args):
        await asyncio.sleep(delay)
        return await call_tool(name, tool_args)

    return hold_then_call


@pytest.mark.parametrize("mode", MODES)
def test_a_process_tool_call_handing_on_late_is_a_timeout(rig, mode):
    hook = _holding(SLOW)
    output, exc = run_agent(_agent(rig, hook, gates=[policy_gate]), mode)
    _late(rig, output, exc, hook_id(hook))


@pytest.mark.parametrize("mode", MODES)
def test_a_process_tool_call_handing_on_in_time_runs_the_tool(rig, mode):
    output, exc = run_agent(_agent(rig, _holding(0), gates=[policy_gate]), mode)
    assert exc is None and rig.ran() == ["harmless"], (output, exc)
    assert all(e["failure"] is None for e in rig.events())


def test_a_process_tool_call_handing_on_late_without_a_gate_is_a_timeout(rig):
    """As a user's toolset wrapper: the hand-on has its deadline with no gate registered."""
    hook = _holding(SLOW)
    output, exc = run_agent(_agent(rig, hook))
    _late(rig, output, exc, hook_id(hook))


def test_a_process_tool_call_handing_on_in_time_without_a_gate_runs_the_tool(rig):
    output, exc = run_agent(_agent(rig, _holding(0)))
    assert exc is None and rig.ran() == ["harmless"], (output, exc)
    assert all(e["failure"] is None for e in rig.events())


def test_a_process_tool_call_handing_on_from_a_task_of_its_own_is_judged(rig):
    """A task the hook starts carries the call's context: its rewrite is judged (and its
    twin, the call as the model made it, runs)."""
    def hand_on_in_a_task(command):
        async def in_a_task(ctx, call_tool, name, tool_args):
            return await asyncio.create_task(call_tool(name, {"command": command}))

        return in_a_task

    output, exc = run_agent(_agent(rig, hand_on_in_a_task("rm -rf /"), gates=[policy_gate]))
    _denied_by_gate(rig, output, exc)
    output, exc = run_agent(_agent(rig, hand_on_in_a_task("harmless"), gates=[policy_gate]))
    assert exc is None and rig.ran() == ["harmless"], (output, exc)


def test_a_per_hook_timeout_lets_a_slow_process_tool_call_hand_on(rig):
    hook = _holding(SLOW)
    rig.config(f'[hooks."{hook_id(hook)}"]\ntimeout = 5\n')
    output, exc = run_agent(_agent(rig, hook, gates=[policy_gate]))
    assert exc is None and rig.ran() == ["harmless"], (output, exc)


def test_a_late_process_tool_call_swallowing_its_timeout_is_still_denied(rig):
    """It catches the deny of its late hand-on and answers something else: the deny stands."""
    async def swallow(ctx, call_tool, name, tool_args):
        await asyncio.sleep(SLOW)
        try:
            return await call_tool(name, tool_args)
        except Exception:
            return "all fine"

    output, exc = run_agent(_agent(rig, swallow, gates=[policy_gate]))
    _late(rig, output, exc, hook_id(swallow))
    assert "all fine" not in output


def test_a_late_process_tool_call_runs_the_tool_upstream(rig, unpatched):
    output, exc = run_agent(_agent(rig, _holding(SLOW), gates=[policy_gate]))
    assert exc is None and rig.ran() == ["harmless"]


# ------------------------------------------------------------ raising, not calling


class HookBroke(RuntimeError):
    pass


async def raising(ctx, call_tool, name, tool_args):
    raise HookBroke("secret-token-123")


@pytest.mark.parametrize("mode", MODES)
def test_a_raising_process_tool_call_ends_the_run_as_upstream(rig, mode):
    """Upstream the exception ends the run (the hook is the user's code on the tool's path,
    not a gate): the same with failsecure, and the tool did not run."""
    output, exc = run_agent(_agent(rig, raising, gates=[policy_gate]), mode)
    assert isinstance(exc, HookBroke) and rig.ran() == []
    assert all("secret-token-123" not in str(e) for e in rig.events())


def test_a_raising_process_tool_call_ends_the_run_upstream(rig, unpatched):
    output, exc = run_agent(_agent(rig, raising, gates=[policy_gate]))
    assert isinstance(exc, HookBroke) and rig.ran() == []


@pytest.mark.parametrize("mode", MODES)
def test_a_process_tool_call_that_never_calls_the_tool_answers_for_it(rig, mode):
    """Upstream's behaviour: the hook's answer is the result, the tool did not run, nothing
    is denied (nothing ran unjudged)."""
    async def answer_itself(ctx, call_tool, name, tool_args):
        return "cached answer"

    output, exc = run_agent(_agent(rig, answer_itself, gates=[policy_gate]), mode)
    assert exc is None and rig.ran() == [] and "cached answer" in output, (output, exc)
    assert [e["outcome"] for e in rig.events()] == ["allow"]


def test_a_process_tool_call_calling_the_tool_twice_after_a_failure_runs_it_again(rig):
    """A retry policy (a documented use): the first try raised, the second runs judged."""
    async def retry(ctx, call_tool, name, tool_args):
        try:
            return await call_tool("no_such_tool", tool_args)
        except Exception:
            return await call_tool(name, tool_args)

    output, exc = run_agent(_agent(rig, retry, gates=[policy_gate]))
    assert exc is None and rig.ran() == ["harmless"], (output, exc)
