"""``ApprovalRequiredToolset`` calls its ``approval_required_func`` on the event loop
(``call_tool`` is a coroutine that calls the predicate inline), so a predicate may ask for
the loop (``asyncio.get_running_loop()``). failsecure runs it on its worker for the deadline
and lends it the loop there: a legitimate predicate is not denied for a thread it never
asked for (issue #26's worker-thread class). The deny twin: the deadline still holds."""

import asyncio
import threading

import pytest
from failsecure_pai_rig import hook_id, make_model, run_agent

MODES = ("sync", "async")


def _approval_agent(rig, predicate):
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    toolset = ApprovalRequiredToolset(FunctionToolset([run_command]), approval_required_func=predicate)
    return Agent(make_model([{"command": "harmless"}]), toolsets=[toolset], output_type=[str, DeferredToolRequests])


_seen: list = []


def _pred_needs_loop(ctx, tool_def, tool_args):
    _seen.append(asyncio.get_running_loop())
    return False


_release = threading.Event()


def _pred_needs_loop_then_hangs(ctx, tool_def, tool_args):
    asyncio.get_running_loop()
    _release.wait(10)
    return False


@pytest.mark.parametrize("mode", MODES)
def test_an_approval_predicate_finds_the_running_loop(rig, mode):
    _seen.clear()
    output, exc = run_agent(_approval_agent(rig, _pred_needs_loop), mode)
    assert exc is None and rig.ran() == ["harmless"] and "ran harmless" in output
    assert len(_seen) == 1 and isinstance(_seen[0], asyncio.AbstractEventLoop)
    assert (rig.outcome_of("_pred_needs_loop")["outcome"], rig.outcome_of("_pred_needs_loop")["failure"]) == ("allow", None)


@pytest.mark.parametrize("mode", MODES)
def test_an_approval_predicate_with_the_loop_still_times_out(rig, mode):
    _release.clear()
    try:
        output, exc = run_agent(_approval_agent(rig, _pred_needs_loop_then_hangs), mode)
    finally:
        _release.set()
    assert rig.ran() == []
    assert exc is None and f"hook '{hook_id(_pred_needs_loop_then_hangs)}' failed closed (timeout)" in output
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", "timeout")
