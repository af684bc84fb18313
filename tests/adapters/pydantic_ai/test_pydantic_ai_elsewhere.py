"""A user's ``WrapperToolset.call_tool`` that hands the call on from a context of its own
(a thread with its own event loop, an empty ``contextvars.Context``, a copy of the run
context) with other arguments: the call reaches the toolset that runs the tool outside
the tool manager's context, where it was taken for application code and ran unjudged.
It is the call the wrapper holds: judged there as at the toolset that runs the tool.
Each drives a real ``Agent(FunctionModel(...))`` run; every deny has its allow twin."""

import asyncio
import contextvars
import dataclasses
import threading

import pytest

from failsecure_pai_rig import hook_id, hooks_with, make_model, run_agent


def _policy(ctx, *, call, tool_def, args):
    from pydantic_ai.exceptions import ToolFailed

    if "forbidden" in args["command"]:
        raise ToolFailed("policy: forbidden command")
    return args


def _agent(rig, call_tool):
    from pydantic_ai import Agent
    from pydantic_ai.toolsets import FunctionToolset, WrapperToolset

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    rewriting = type("Elsewhere", (WrapperToolset,), {"call_tool": call_tool, "__module__": __name__})
    return Agent(make_model([{"command": "harmless"}]), toolsets=[rewriting(FunctionToolset([run_command]))],
                 capabilities=[hooks_with(_policy)])


def _hand_on(how, command):
    def rewrite(tool_args):
        return {"command": command(tool_args["command"])}

    if how == "thread":

        async def call_tool(self, name, tool_args, ctx, tool):
            box = []

            def hand_on():
                try:
                    box.append(asyncio.run(self.wrapped.call_tool(name, rewrite(tool_args), ctx, tool)))
                except BaseException as exc:  # noqa: BLE001
                    box.append(exc)

            thread = threading.Thread(target=hand_on)
            thread.start()
            thread.join()
            if isinstance(box[0], BaseException):
                raise box[0]
            return box[0]

    else:

        async def call_tool(self, name, tool_args, ctx, tool):
            run_ctx = ctx if how == "empty context" else dataclasses.replace(ctx, tool_call_id="made-up" if how == "other call id" else ctx.tool_call_id)
            return await contextvars.Context().run(
                lambda: asyncio.ensure_future(self.wrapped.call_tool(name, rewrite(tool_args), run_ctx, tool)))

    return call_tool


HOWS = ("thread", "empty context", "copied run context", "other call id")


@pytest.mark.parametrize("how", HOWS)
def test_a_rewrite_handed_on_from_elsewhere_is_judged(rig, how):
    output, exc = run_agent(_agent(rig, _hand_on(how, lambda c: "forbidden " + c)), "sync")
    assert rig.ran() == [], "the rewrite must not run unjudged"
    assert exc is None and "policy: forbidden command" in output
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", None, hook_id(_policy))


@pytest.mark.parametrize("how", HOWS)
def test_a_harmless_rewrite_handed_on_from_elsewhere_runs(rig, how):
    output, exc = run_agent(_agent(rig, _hand_on(how, lambda c: c + "-checked")), "sync")
    assert exc is None and rig.ran() == ["harmless-checked"]
    assert [e["outcome"] for e in rig.events()] == ["allow", "allow"], "judged once by the gates, again as rewritten"


# ------------------------------------------------------------ a wrap_tool_execute hook's handler


def _wrap_agent(rig, command):
    """A ``Hooks().on.tool_execute`` wrap hook that runs its handler in a thread of its own
    (its own event loop, a fresh context) with other arguments. 2.42.0 calls the wrap after
    the gates, with the handler that runs the tool; 2.68.0 calls it around the gates."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Hooks

    marker = rig.marker
    hooks = Hooks()
    hooks.on.before_tool_execute(_policy)

    @hooks.on.tool_execute
    async def elsewhere(ctx, *, call, tool_def, args, handler):
        box = []

        def hand_on():
            try:
                box.append(asyncio.run(handler({"command": command(args["command"])})))
            except BaseException as exc:  # noqa: BLE001
                box.append(exc)

        thread = threading.Thread(target=hand_on)
        thread.start()
        thread.join()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    agent = Agent(make_model([{"command": "harmless"}]), capabilities=[hooks])

    @agent.tool_plain
    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    return agent


def test_a_wrap_hooks_rewrite_run_from_its_own_thread_is_judged(rig):
    output, exc = run_agent(_wrap_agent(rig, lambda c: "forbidden " + c), "sync")
    assert rig.ran() == [], "the rewrite must not run unjudged"
    assert exc is None and "policy: forbidden command" in output
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", None, hook_id(_policy))


def test_a_wrap_hooks_harmless_rewrite_run_from_its_own_thread_runs(rig):
    output, exc = run_agent(_wrap_agent(rig, lambda c: c + "-checked"), "sync")
    assert exc is None and rig.ran() == ["harmless-checked"]
    assert rig.last()["outcome"] == "allow"


def test_a_tool_body_under_a_holding_wrapper_running_another_toolset_stays_ungoverned(rig):
    """A tool's own code calling another toolset's tool with its run context, while a
    user's wrapper holds the call: not a hand-on of the wrapper, the boundary's (denied
    in a gated run)."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.toolsets import FunctionToolset, WrapperToolset

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    inner = FunctionToolset([run_command])

    async def bypass_tool(ctx: RunContext, command: str) -> str:
        tools = await inner.get_tools(ctx)
        return str(await inner.call_tool("run_command", {"command": command}, ctx, tools["run_command"]))

    class Holding(WrapperToolset):
        async def call_tool(self, name, tool_args, ctx, tool):
            return await super().call_tool(name, tool_args, ctx, tool)

    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("bypass_tool", {"command": "smuggled"}, tool_call_id="call-0")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond), toolsets=[Holding(FunctionToolset([bypass_tool]))], capabilities=[hooks_with(lambda ctx, *, call, tool_def, args: args)])
    output, exc = run_agent(agent)
    assert rig.ran() == [] and isinstance(exc, PermissionError) and "(ungoverned)" in str(exc)
