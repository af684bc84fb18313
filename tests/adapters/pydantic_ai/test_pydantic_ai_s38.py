"""Red-team round s38 on the hand-on deadline of a user's ``WrapperToolset.call_tool``.

- An ``ApprovalRequiredToolset`` inside the user's wrapper: its approval predicate runs
  (under its own deadline) between the wrapper's hand-on and the toolset that runs the
  tool; its time was counted against the wrapper, which was then a ``timeout`` although it
  handed the call on at once.
- A wrapper that hands the call on late from a thread of its own (a fresh context).
Each drives a real ``Agent(FunctionModel(...))`` run; every deny has its twin.
"""

import asyncio
import threading
import time

import pytest

from failsecure_pai_rig import hook_id, make_model

SLOW = 0.6  # past the 0.3 s deadline


def _toolset_id(cls):
    return f"pydantic-ai:{cls.__module__}.{cls.__qualname__}.call_tool"


def _agent(rig, holding_call_tool, predicate=None):
    from pydantic_ai import Agent
    from pydantic_ai.toolsets import ApprovalRequiredToolset, FunctionToolset, WrapperToolset

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    toolset = FunctionToolset([run_command])
    if predicate is not None:
        toolset = ApprovalRequiredToolset(toolset, approval_required_func=predicate)
    holding = type("HoldingS38", (WrapperToolset,), {"call_tool": holding_call_tool, "__module__": __name__})
    return Agent(make_model([{"command": "harmless"}]), toolsets=[holding(toolset)]), holding


def _run(agent):
    try:
        return agent.run_sync("go").output, None
    except Exception as exc:  # noqa: BLE001
        return None, exc


def _slow_predicate(ctx, tool_def, tool_args):
    time.sleep(0.45)  # within its own (configured) deadline
    return False


def _quick_predicate(ctx, tool_def, tool_args):
    return False


async def _at_once(self, name, tool_args, ctx, tool):
    from pydantic_ai.toolsets import WrapperToolset

    return await WrapperToolset.call_tool(self, name, tool_args, ctx, tool)


async def _late(self, name, tool_args, ctx, tool):
    from pydantic_ai.toolsets import WrapperToolset

    await asyncio.sleep(SLOW)
    return await WrapperToolset.call_tool(self, name, tool_args, ctx, tool)


def test_a_slow_approval_predicate_inside_is_not_the_wrappers_lateness(rig):
    """The wrapper hands on at once; the predicate inside it takes 0.45 s within its own
    5 s deadline (the user's config): the tool runs, nothing failed."""
    rig.config(f'[hooks."{hook_id(_slow_predicate)}"]\ntimeout = 5\n')
    agent, _ = _agent(rig, _at_once, _slow_predicate)
    output, exc = _run(agent)
    assert exc is None and rig.ran() == ["harmless"], output
    assert all(e["failure"] is None for e in rig.events()), rig.events()


def test_a_late_wrapper_around_an_approval_predicate_is_a_timeout(rig):
    """Its deny twin: the wrapper itself is late; the predicate is quick."""
    agent, holding = _agent(rig, _late, _quick_predicate)
    output, exc = _run(agent)
    assert rig.ran() == [] and exc is None
    assert f"hook '{_toolset_id(holding)}' failed closed (timeout)" in output
    assert (rig.last()["outcome"], rig.last()["failure"], rig.last()["hook"]) == ("deny", "timeout", _toolset_id(holding))


def _in_a_thread(delay):
    async def call_tool(self, name, tool_args, ctx, tool):
        await asyncio.sleep(delay)
        box = []

        def hand_on():
            try:
                box.append(asyncio.run(self.wrapped.call_tool(name, tool_args, ctx, tool)))
            except BaseException as exc:  # noqa: BLE001
                box.append(exc)

        thread = threading.Thread(target=hand_on)
        thread.start()
        thread.join()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    return call_tool


def test_a_wrapper_handing_on_late_from_its_own_thread_is_a_timeout(rig):
    agent, holding = _agent(rig, _in_a_thread(SLOW))
    output, exc = _run(agent)
    assert rig.ran() == [], "a late hand-on must not run the tool"
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout"), rig.events()


def test_a_wrapper_handing_on_in_time_from_its_own_thread_runs_the_tool(rig):
    agent, _ = _agent(rig, _in_a_thread(0))
    output, exc = _run(agent)
    assert exc is None and rig.ran() == ["harmless"], (output, exc)
