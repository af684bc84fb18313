"""The hand-on deadline of a user's ``WrapperToolset.call_tool``: its edges.

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


# ------------------------------------------------------------ a Hooks wrap_tool_execute entry: variants


def _hooks(fn):
    from pydantic_ai.capabilities import Hooks

    hooks = Hooks()
    hooks.on.tool_execute(fn)
    return hooks


def _capability_agent(rig, fn):
    from failsecure_pai_rig import make_agent

    return make_agent(rig.marker, [{"command": "harmless"}], [_hooks(fn)])


async def twice_late(ctx, *, call, tool_def, args, handler):
    first = await handler(args)
    await asyncio.sleep(SLOW)
    return (first, await handler({"command": "second"}))


async def twice_at_once(ctx, *, call, tool_def, args, handler):
    first = await handler(args)
    return (first, await handler({"command": "second"}))


def test_a_second_hand_on_late_is_a_timeout(rig):
    """The wrapper hands on in time, then again (other arguments) past its deadline: the
    second is late, its tool does not run."""
    output, exc = _run(_capability_agent(rig, twice_late))
    assert rig.ran() == ["harmless"], (output, exc)
    assert any(e["failure"] == "timeout" and e["hook"] == hook_id(twice_late) for e in rig.events()), rig.events()


def test_a_second_hand_on_at_once_runs_both(rig):
    output, exc = _run(_capability_agent(rig, twice_at_once))
    assert exc is None and rig.ran() == ["harmless", "second"], (output, exc)


async def swallows_lateness(ctx, *, call, tool_def, args, handler):
    await asyncio.sleep(SLOW)
    try:
        return await handler(args)
    except Exception:  # noqa: BLE001 - the wrapper tells the model a result of its own
        return "ran harmless (the wrapper says)"


async def swallows_nothing(ctx, *, call, tool_def, args, handler):
    try:
        return await handler(args)
    except Exception:  # noqa: BLE001
        return "ran harmless (the wrapper says)"


def test_a_wrapper_swallowing_its_timeout_does_not_tell_its_own_result(rig):
    """The audit records the late hand-on's deny: the model is told that deny, not the
    wrapper's made-up result (what the framework is told is the audited decision)."""
    output, exc = _run(_capability_agent(rig, swallows_lateness))
    assert rig.ran() == []
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")
    assert exc is None and "the wrapper says" not in output and "failed closed (timeout)" in output, output


def test_a_wrapper_with_a_try_handing_on_in_time_runs_the_tool(rig):
    output, exc = _run(_capability_agent(rig, swallows_nothing))
    assert exc is None and rig.ran() == ["harmless"], (output, exc)


async def wrap_async(ctx, *, call, tool_def, args, handler):
    await asyncio.sleep(wrap_async.delay)
    return await handler(args)


@pytest.mark.parametrize("entry", ["iter"])  # run_stream needs a streaming FunctionModel
def test_a_late_wrap_hook_is_a_timeout_in_a_stream_and_iter(rig, entry):
    from failsecure_pai_rig import make_agent

    wrap_async.delay = SLOW
    agent = make_agent(rig.marker, [{"command": "harmless"}], [_hooks(wrap_async)])

    async def go():
        if entry == "run_stream":
            async with agent.run_stream("go") as result:
                return await result.get_output()
        async with agent.iter("go") as run:
            async for _node in run:
                pass
            return run.result.output

    output = asyncio.run(go())
    assert rig.ran() == [] and "failed closed (timeout)" in output, output


@pytest.mark.parametrize("entry", ["iter"])  # run_stream needs a streaming FunctionModel
def test_an_in_time_wrap_hook_runs_in_a_stream_and_iter(rig, entry):
    from failsecure_pai_rig import make_agent

    wrap_async.delay = 0
    agent = make_agent(rig.marker, [{"command": "harmless"}], [_hooks(wrap_async)])

    async def go():
        if entry == "run_stream":
            async with agent.run_stream("go") as result:
                return await result.get_output()
        async with agent.iter("go") as run:
            async for _node in run:
                pass
            return run.result.output

    asyncio.run(go())
    assert rig.ran() == ["harmless"]


async def _swallowing(self, name, tool_args, ctx, tool):
    from pydantic_ai.toolsets import WrapperToolset

    await asyncio.sleep(SLOW)
    try:
        return await WrapperToolset.call_tool(self, name, tool_args, ctx, tool)
    except Exception:  # noqa: BLE001
        return "ran harmless (the wrapper says)"


async def _swallowing_in_time(self, name, tool_args, ctx, tool):
    from pydantic_ai.toolsets import WrapperToolset

    try:
        return await WrapperToolset.call_tool(self, name, tool_args, ctx, tool)
    except Exception:  # noqa: BLE001
        return "ran harmless (the wrapper says)"


def test_a_toolset_wrapper_swallowing_its_timeout_does_not_tell_its_own_result(rig):
    agent, holding = _agent(rig, _swallowing)
    output, exc = _run(agent)
    assert rig.ran() == []
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")
    assert exc is None and "the wrapper says" not in output and "failed closed (timeout)" in output, output


def test_a_toolset_wrapper_with_a_try_handing_on_in_time_runs_the_tool(rig):
    agent, _ = _agent(rig, _swallowing_in_time)
    output, exc = _run(agent)
    assert exc is None and rig.ran() == ["harmless"] and "the wrapper says" not in output, (output, exc)
