"""A wrapper the call is handed through on its way to the tool hands it on within its
deadline (#26's late-answer class, as hermes' tool-execution middleware): a
``wrap_tool_execute`` hook of a ``Hooks`` capability, a capability class's own
``wrap_tool_execute``, a user's ``WrapperToolset.call_tool``. Upstream a wrapper that calls
its handler (or the toolset it wraps) after any delay runs the tool; under failsecure a
hand-on later than the wrapper's deadline (0.3 s here) is a ``timeout``: the tool does not
run, the model is told the hook id and category. Each drives a real
``Agent(FunctionModel(...))`` run through ``run_sync`` / ``run``; every deny has its twin
(the same wrapper handing on at once runs the tool)."""

import asyncio
import time

import pytest

import failsecure
from failsecure_pai_rig import hook_id, hooks_with, make_agent, run_agent

MODES = ("sync", "async")
SLOW = 0.6  # past the 0.3 s deadline


def _late(rig, output, exc, hook):
    assert rig.ran() == [], "a late hand-on must not run the tool"
    assert exc is None and f"hook '{hook}' failed closed (timeout)" in output
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", "timeout", hook)


def _on_time(rig, output, exc):
    assert exc is None and rig.ran() == ["harmless"], output
    assert all(e["failure"] is None for e in rig.events())


# ------------------------------------------------------------ a Hooks wrap_tool_execute entry


async def wrap_async(ctx, *, call, tool_def, args, handler):
    await asyncio.sleep(wrap_async.delay)
    return await handler(args)


def wrap_sync(ctx, *, call, tool_def, args, handler):
    time.sleep(wrap_sync.delay)  # upstream runs a sync hook in a worker thread
    return handler(args)  # its coroutine, awaited by upstream after the hook returned


def _wrap_hooks(fn, delay):
    from pydantic_ai.capabilities import Hooks

    fn.delay = delay
    hooks = Hooks()
    hooks.on.tool_execute(fn)
    return hooks


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [wrap_async, wrap_sync], ids=["async", "sync"])
def test_a_wrap_tool_execute_hook_handing_on_late_is_a_timeout(rig, mode, fn):
    agent = make_agent(rig.marker, [{"command": "harmless"}], [_wrap_hooks(fn, SLOW)])
    output, exc = run_agent(agent, mode)
    _late(rig, output, exc, hook_id(fn))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [wrap_async, wrap_sync], ids=["async", "sync"])
def test_a_wrap_tool_execute_hook_handing_on_in_time_runs_the_tool(rig, mode, fn):
    agent = make_agent(rig.marker, [{"command": "harmless"}], [_wrap_hooks(fn, 0)])
    output, exc = run_agent(agent, mode)
    _on_time(rig, output, exc)


def test_a_wrap_tool_execute_hook_with_a_gate_handing_on_late_is_a_timeout(rig):
    """With a before-tool gate too (2.42.0 runs it before the wrap hook, 2.68.0 inside it)."""
    def allow(ctx, *, call, tool_def, args):
        return args

    hooks = _wrap_hooks(wrap_async, SLOW)
    agent = make_agent(rig.marker, [{"command": "harmless"}], [hooks, hooks_with(allow)])
    output, exc = run_agent(agent)
    _late(rig, output, exc, hook_id(wrap_async))


def test_a_per_hook_timeout_lets_a_slow_wrap_hook_hand_on(rig):
    """The user's config sets the wrap hook a looser deadline: its hand-on is in time."""
    rig.config(f'[hooks."{hook_id(wrap_async)}"]\ntimeout = 5\n')
    agent = make_agent(rig.marker, [{"command": "harmless"}], [_wrap_hooks(wrap_async, SLOW)])
    output, exc = run_agent(agent)
    _on_time(rig, output, exc)


def test_a_tolerated_late_hand_on_runs_the_tool(rig):
    """``on_error = "allow"`` for the wrap hook: its lateness is audited and tolerated."""
    rig.config(f'[hooks."{hook_id(wrap_async)}"]\non_error = "allow"\n')
    agent = make_agent(rig.marker, [{"command": "harmless"}], [_wrap_hooks(wrap_async, SLOW)])
    output, exc = run_agent(agent)
    assert exc is None and rig.ran() == ["harmless"]
    (event,) = rig.events()  # audited: the call abstains, the wrap hook's timeout tolerated
    assert event["outcome"] == "abstain"
    assert [(o["hook"], o["failure"]) for o in event["outcomes"]] == [(hook_id(wrap_async), "timeout")]


# ------------------------------------------------------------ a capability's own wrap_tool_execute


def _wrapping(delay):
    from pydantic_ai.capabilities import AbstractCapability

    class Holding(AbstractCapability):
        async def wrap_tool_execute(self, ctx, *, call, tool_def, args, handler):
            await asyncio.sleep(delay)
            return await handler(args)

    return Holding


def _capability_wrap_id(cls):
    return f"pydantic-ai:{cls.__module__}.{cls.__qualname__}.wrap_tool_execute"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "in-a-WrapperCapability"])
def test_a_capability_handing_on_late_is_a_timeout(rig, mode, wrapped):
    from pydantic_ai.capabilities import WrapperCapability

    cls = _wrapping(SLOW)
    capability = WrapperCapability(wrapped=cls()) if wrapped else cls()
    output, exc = run_agent(make_agent(rig.marker, [{"command": "harmless"}], [capability]), mode)
    _late(rig, output, exc, _capability_wrap_id(cls))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "in-a-WrapperCapability"])
def test_a_capability_handing_on_in_time_runs_the_tool(rig, mode, wrapped):
    from pydantic_ai.capabilities import WrapperCapability

    cls = _wrapping(0)
    capability = WrapperCapability(wrapped=cls()) if wrapped else cls()
    output, exc = run_agent(make_agent(rig.marker, [{"command": "harmless"}], [capability]), mode)
    _on_time(rig, output, exc)


# ------------------------------------------------------------ a user's WrapperToolset.call_tool


def _held_agent(rig, delays, how="super"):
    """``run_command`` in a FunctionToolset inside one user's ``WrapperToolset`` per entry of
    ``delays`` (the outermost first), each waiting its delay before handing the call on."""
    from pydantic_ai import Agent
    from pydantic_ai.toolsets import FunctionToolset, WrapperToolset

    from failsecure_pai_rig import make_model

    marker = rig.marker

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    classes = []
    toolset = FunctionToolset([run_command])
    for index, delay in reversed(list(enumerate(delays))):

        async def call_tool(self, name, tool_args, ctx, tool, _delay=delay):
            await asyncio.sleep(_delay)
            if how == "wrapped":
                return await self.wrapped.call_tool(name, tool_args, ctx, tool)
            return await WrapperToolset.call_tool(self, name, tool_args, ctx, tool)  # super()'s

        # named as it is created: the hook id is the class's name then
        holding = type(f"Holding{index}", (WrapperToolset,), {"call_tool": call_tool, "__module__": __name__})
        classes.insert(0, holding)
        toolset = holding(toolset)
    return Agent(make_model([{"command": "harmless"}]), toolsets=[toolset]), classes


def _toolset_id(cls):
    return f"pydantic-ai:{cls.__module__}.{cls.__qualname__}.call_tool"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["super", "wrapped"])
def test_a_toolset_wrapper_handing_on_late_is_a_timeout(rig, mode, how):
    agent, classes = _held_agent(rig, [SLOW], how)
    output, exc = run_agent(agent, mode)
    _late(rig, output, exc, _toolset_id(classes[0]))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["super", "wrapped"])
def test_a_toolset_wrapper_handing_on_in_time_runs_the_tool(rig, mode, how):
    agent, _ = _held_agent(rig, [0], how)
    output, exc = run_agent(agent, mode)
    _on_time(rig, output, exc)


@pytest.mark.parametrize("late", [0, 1])
def test_the_late_one_of_two_toolset_wrappers_is_named(rig, late):
    delays = [0, 0]
    delays[late] = SLOW
    agent, classes = _held_agent(rig, delays)
    output, exc = run_agent(agent)
    _late(rig, output, exc, _toolset_id(classes[late]))


def test_two_toolset_wrappers_each_in_time_run_the_tool(rig):
    """Twin: each wrapper within its deadline, together past it: each is timed by itself."""
    agent, _ = _held_agent(rig, [0.2, 0.2])
    output, exc = run_agent(agent)
    _on_time(rig, output, exc)


def test_a_late_toolset_wrapper_runs_the_tool_upstream(rig, adapter):
    failsecure.uninstall()
    try:
        agent, _ = _held_agent(rig, [SLOW])
        output, exc = run_agent(agent)
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    assert exc is None and rig.ran() == ["harmless"]
