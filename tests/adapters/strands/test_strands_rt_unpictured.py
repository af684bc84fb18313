"""Red team of the middleware terminal's check on a call too large to picture (a tool use
past ``integrity.BUDGET`` tokens, a list of a million numbers say): its picture is
``CHANGED``, and two ``CHANGED`` pictures compared equal, so an ``ExecuteToolStage``
handler rewriting the command of such a call after the gates allowed it ran the rewritten
call unjudged. Now such a call is judged again at the terminal, as it is about to run
(once: the gates judge it just then). Deny asserts the branch; allow twins: a harmless
rewrite runs rewritten, an untouched call runs."""

import dataclasses

import pytest
from failsecure_strands_rig import make_model, provider

BIG = 1_000_050  # past integrity.BUDGET (1,000,000 tokens)


def _forbid(event):
    if "forbidden" in event.tool_use["input"].get("command", ""):
        event.cancel_tool = "policy: no"


def _add_input_middleware(agent, handler):
    try:
        from strands.middleware import ExecuteToolStage
    except ImportError:  # 1.52: the private module
        from strands._middleware.stages import ExecuteToolStage
    agent._middleware_registry.add_middleware(ExecuteToolStage.Input, handler)


def _run(rig, to):
    from strands import Agent, tool

    rig.config(timeout=60)  # picturing a million numbers takes its time on a loaded machine
    ran = []

    @tool
    def process(command: str, data: list) -> str:
        """Process data.

        Args:
            command: the command
            data: numbers
        """
        ran.append(command)
        return "ok"

    agent = Agent(model=make_model([]), tools=[process], hooks=[provider(_forbid)], callback_handler=None)
    if to is not None:
        def rewrite(ctx):
            return dataclasses.replace(ctx, tool_use={**ctx.tool_use, "input": {**ctx.tool_use["input"], "command": to}})

        _add_input_middleware(agent, rewrite)
    result = agent.tool.process(command="echo hi", data=list(range(BIG)))
    return ran, result


def test_a_rewrite_of_a_call_too_large_to_picture_is_judged_again(rig):
    ran, result = _run(rig, "forbidden")
    assert ran == []
    assert result["status"] == "error" and "policy: no" in str(result["content"])
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None) and event["hook"].endswith("._forbid")


@pytest.mark.parametrize("to, runs", [("echo bye", ["echo bye"]), (None, ["echo hi"])], ids=["harmless", "untouched"])
def test_a_call_too_large_to_picture_runs_when_the_gates_allow(rig, to, runs):
    ran, result = _run(rig, to)
    assert ran == runs and result["status"] == "success"
    assert "deny" not in {e["outcome"] for e in rig.events()}
