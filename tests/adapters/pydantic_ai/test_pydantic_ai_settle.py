"""The settling rule through pydantic-ai's real ``before_tool_execute`` hooks (issue
25): a hook that stamps a fresh value into the arguments each time it runs is not
denied; a hook after the last rewrite runs once; a deny after a rewrite stands."""

from __future__ import annotations

import itertools

import pytest

from failsecure_pai_rig import hooks_with, make_model, run_agent

MODES = ("sync", "async")
_fresh = itertools.count()


def agent_with(marker, *gates, command="harmless"):
    from pydantic_ai import Agent

    agent = Agent(make_model([{"command": command}]), capabilities=[hooks_with(*gates)])

    @agent.tool_plain
    def run_command(command: str, idempotency_key: str = "") -> str:
        marker.record(command + (" [key]" if idempotency_key else ""))
        return f"ran {command}"

    return agent


def stamper(ctx, *, call, tool_def, args):  # an idempotency key, fresh on every run
    return {**args, "idempotency_key": f"k-{next(_fresh)}"}


def policy(ctx, *, call, tool_def, args):
    from pydantic_ai.exceptions import ToolFailed

    if "forbidden" in str(args.get("command")):
        raise ToolFailed("policy: forbidden command")
    return args


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", ["stamper-last", "stamper-first"])
def test_a_stamping_hook_is_not_denied(rig, mode, order):
    seen = []

    def watching(ctx, *, call, tool_def, args):
        seen.append(dict(args))
        return policy(ctx, call=call, tool_def=tool_def, args=args)

    pair = (watching, stamper) if order == "stamper-last" else (stamper, watching)
    output, exc = run_agent(agent_with(rig.marker, *pair), mode)
    assert exc is None and rig.ran() == ["harmless [key]"]
    assert rig.last()["outcome"] == "allow" and rig.last()["failure"] is None
    assert "idempotency_key" in seen[-1]


@pytest.mark.parametrize("mode", MODES)
def test_a_stamped_call_the_policy_denies_is_denied(rig, mode):
    output, exc = run_agent(agent_with(rig.marker, policy, stamper, command="forbidden rm"), mode)
    assert exc is None and rig.ran() == [] and "policy: forbidden command" in output


@pytest.mark.parametrize("mode", MODES)
def test_hooks_after_the_last_rewrite_run_once(rig, mode):
    runs = {"before": 0, "after": 0}

    def before(ctx, *, call, tool_def, args):
        runs["before"] += 1
        return args

    def rewriter(ctx, *, call, tool_def, args):
        return {**args, "command": "harmless rewritten"}

    def after(ctx, *, call, tool_def, args):  # a side effect: once is enough
        runs["after"] += 1
        return args

    output, exc = run_agent(agent_with(rig.marker, before, rewriter, after), mode)
    assert exc is None and rig.ran() == ["harmless rewritten"]
    assert runs == {"before": 2, "after": 1}


@pytest.mark.parametrize("mode", MODES)
def test_a_deny_after_a_rewrite_stands(rig, mode):
    from pydantic_ai.exceptions import ToolFailed

    looks = []

    def flipping(ctx, *, call, tool_def, args):  # allows its first look only
        looks.append(args["command"])
        if len(looks) > 1:
            raise ToolFailed("flipping: no")
        return args

    def rewriter(ctx, *, call, tool_def, args):
        return {**args, "command": "harmless rewritten"}

    output, exc = run_agent(agent_with(rig.marker, flipping, rewriter, stamper), mode)
    assert exc is None and rig.ran() == [] and "flipping: no" in output
    assert looks == ["harmless", "harmless rewritten"]

