"""Deadlines and the loop: an async gating callback that blocks code-puppy's event loop
(a synchronous sleep or lock inside ``async def``) past its deadline and then answers
"no objection" must be a timeout, on every phase and through a real agent run: upstream
awaits it on the loop, so nothing can cancel it while it blocks, and its late answer
arrives as if on time. A ContextVar a callback sets reaches the tool as upstream (a sync
callback runs on failsecure's worker when a deadline applies)."""

import contextvars
import time

import pytest

SHELL_ARGS = (None, "echo hi", None, 60)


def shell(cb, run):
    return run(cb.on_run_shell_command(*SHELL_ARGS))


def pre_tool(cb, run):
    return run(cb.on_pre_tool_call("agent_run_shell_command", {"command": "echo hi"}))


def file_permission(cb, run):
    async def go():
        return await cb.on_file_permission_async(None, "x.txt", "write", None, None, None)

    return run(go())


DISPATCH = {"run_shell_command": shell, "pre_tool_call": pre_tool, "file_permission": file_permission}


def denied(phase, results):
    if phase == "file_permission":
        return any(r is False for r in results)
    return any(isinstance(r, dict) and r.get("blocked") for r in results)


@pytest.mark.parametrize("phase", sorted(DISPATCH))
def test_an_async_callback_blocking_the_loop_past_its_deadline_times_out(cb, rig, run, phase):
    async def guard(*args, **kwargs):
        time.sleep(0.8)  # blocks the loop: nothing can cancel it before it answers
        return True if phase == "file_permission" else None

    cb.register_callback(phase, guard)
    results = DISPATCH[phase](cb, run)
    assert denied(phase, results)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


@pytest.mark.parametrize("phase", sorted(DISPATCH))
def test_an_async_callback_blocking_the_loop_briefly_is_in_time(cb, rig, run, phase):
    async def guard(*args, **kwargs):
        time.sleep(0.02)
        return True if phase == "file_permission" else None

    cb.register_callback(phase, guard)
    results = DISPATCH[phase](cb, run)
    assert not denied(phase, results)
    assert rig.last()["failure"] is None


# ---------------------------------------------------------------- through an agent run


def _agent(seen):
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    turn = [0]

    def model(messages, info):
        turn[0] += 1
        if turn[0] == 1:
            return ModelResponse(parts=[ToolCallPart("marker_tool", {"command": "harmless"})])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def marker_tool(command: str) -> str:
        seen.append((command, _VAR.get()))
        return "ran"

    return agent


_VAR = contextvars.ContextVar("app_request_tag", default=None)


@pytest.mark.parametrize("block", [0.8, 0.02], ids=["late", "in-time"])
def test_an_agent_run_with_a_loop_blocking_pre_tool_callback(cb, rig, run, block):
    async def guard(tool_name, tool_args, context=None):
        time.sleep(block)
        return None

    cb.register_callback("pre_tool_call", guard)
    seen: list = []
    run(_agent(seen).run("go"))
    event = rig.last()
    if block > 0.3:
        assert seen == [] and (event["outcome"], event["failure"]) == ("deny", "timeout")
    else:
        assert [c for c, _ in seen] == ["harmless"] and event["failure"] is None


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_callbacks_context_variable_reaches_the_tool_as_upstream(cb, rig, run, adapter, kind):
    if kind == "sync":
        def tag(tool_name, tool_args, context=None):
            _VAR.set("tagged")
    else:
        async def tag(tool_name, tool_args, context=None):
            _VAR.set("tagged")

    cb.register_callback("pre_tool_call", tag)
    seen: list = []
    contextvars.Context().run(run, _agent(seen).run("go"))
    adapter.unpatch()
    upstream: list = []
    try:
        contextvars.Context().run(run, _agent(upstream).run("go"))
    finally:
        adapter.patch()
    assert upstream == [("harmless", "tagged")]  # upstream: set in the tool's own context
    assert seen == upstream
