"""A ``before_tool_execute`` hook's ask (``ApprovalRequired``) stands when a later hook
rewrites the arguments: upstream stops the hooks at the ask and the call waits for a
person (``DeferredToolRequests``); under failsecure the hooks after it still run (a later
deny wins), and the asking hook judges the rewritten call again, but its allow of that
call does not undo its ask. Twins: the person's approval on resume runs the rewritten
call; a hook that asks about nothing lets it run; upstream defers it as well."""

from __future__ import annotations

import pytest
from failsecure_pai_rig import _run_result, hooks_with, make_model

MODES = ("sync", "async")


def _agent(rig, *gates):
    from pydantic_ai import Agent, DeferredToolRequests

    agent = Agent(make_model([{"command": "harmless"}]), capabilities=[hooks_with(*gates)],
                  output_type=[str, DeferredToolRequests])
    marker = rig.marker

    @agent.tool_plain
    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    return agent


def _asker(looks):
    def asker(ctx, *, call, tool_def, args):  # asks about the model's own command
        from pydantic_ai.exceptions import ApprovalRequired

        looks.append(args["command"])
        if args["command"] == "harmless" and not ctx.tool_call_approved:
            raise ApprovalRequired()
        return args

    return asker


def rewriter(ctx, *, call, tool_def, args):
    return {**args, "command": "harmless rewritten"}


@pytest.mark.parametrize("mode", MODES)
def test_an_ask_before_a_rewrite_still_asks(rig, mode):
    from pydantic_ai import DeferredToolRequests

    looks: list = []
    result, exc = _run_result(_agent(rig, _asker(looks), rewriter), mode)
    assert exc is None and rig.ran() == [], "the call ran without the approval the hook asked for"
    assert isinstance(result.output, DeferredToolRequests)
    assert [c.tool_call_id for c in result.output.approvals] == ["call-0"]
    (event,) = rig.events()
    assert (event["outcome"], event["failure"]) == ("ask", None)
    assert looks == ["harmless", "harmless rewritten"]  # it judged the rewritten call too


def test_the_persons_approval_runs_the_rewritten_call(rig):
    from pydantic_ai import DeferredToolResults

    agent = _agent(rig, _asker([]), rewriter)
    result, exc = _run_result(agent)
    approvals = {c.tool_call_id: True for c in result.output.approvals}
    resumed, exc = _run_result(agent, message_history=result.all_messages(),
                               deferred_tool_results=DeferredToolResults(approvals=approvals))
    assert exc is None and rig.ran() == ["harmless rewritten"]


@pytest.mark.parametrize("mode", MODES)
def test_a_hook_that_asks_about_nothing_lets_the_rewritten_call_run(rig, mode):
    def quiet(ctx, *, call, tool_def, args):
        return args

    result, exc = _run_result(_agent(rig, quiet, rewriter), mode)
    assert exc is None and rig.ran() == ["harmless rewritten"]


def test_upstream_defers_the_call_at_the_ask(rig, unpatched):
    from pydantic_ai import DeferredToolRequests

    looks: list = []
    result, exc = _run_result(_agent(rig, _asker(looks), rewriter))
    assert exc is None and rig.ran() == [] and isinstance(result.output, DeferredToolRequests)
    assert looks == ["harmless"]
