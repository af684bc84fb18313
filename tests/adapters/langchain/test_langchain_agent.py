"""End to end: ``create_agent`` with a scripted chat model and a real tool (a marker
file), ``invoke`` and ``ainvoke``, sync and async tools; callbacks in the run config,
``HumanInTheLoopMiddleware`` and ``wrap_tool_call`` middleware."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langgraph.checkpoint.memory import InMemorySaver

from failsecure_langchain_rig import TOOL, handler, hook_id, tool_messages

MODES = ("sync", "async")
#: (run mode, async tool): an async-only tool cannot run under a sync invoke
RUNS = [("sync", False), ("async", False), ("async", True)]


def raising(*args, **kwargs):
    raise RuntimeError("SECRET-token-123")


# -------------------------------------------------------------------- callback gates


@pytest.mark.parametrize("mode,is_async_tool", RUNS)
def test_agent_run_strict_gate_raising_denies_with_a_tool_message(rig, mode, is_async_tool):
    result = rig.run_agent([handler("Strict", raising)], mode=mode, is_async_tool=is_async_tool)
    assert not rig.marker.ran
    [message] = tool_messages(result)
    assert message.status == "error"
    assert message.content == f"failsecure: hook '{hook_id('Strict')}' failed closed (raised)"
    assert message.tool_call_id == "call_1"
    assert result["messages"][-1].content == "done"  # the model saw the deny and answered
    outcome = rig.outcome_of(hook_id("Strict"))
    assert (outcome["failure"], outcome["exception_type"]) == ("raised", "RuntimeError")
    assert rig.last()["call_id"] == "call_1" and rig.last()["tool"] == TOOL
    assert "SECRET" not in rig.audit_path.read_text() and "SECRET" not in str(result)


@pytest.mark.parametrize("mode,is_async_tool", RUNS)
def test_agent_run_strict_gate_allowing_runs_the_tool(rig, mode, is_async_tool):
    seen = []
    result = rig.run_agent(
        [handler("Strict", lambda s, i, **k: seen.append(k["inputs"]))], mode=mode, is_async_tool=is_async_tool
    )
    assert rig.marker.ran and seen == [{"command": "harmless"}]
    [message] = tool_messages(result)
    assert message.status == "success" and message.content == "wrote harmless"


@pytest.mark.parametrize("mode", MODES)
def test_agent_run_hanging_gate_denies_at_the_deadline(rig, mode):
    result = rig.run_agent([handler("Hangs", lambda *a, **k: rig.release.wait(5))], mode=mode)
    assert not rig.marker.ran
    assert tool_messages(result)[0].content == f"failsecure: hook '{hook_id('Hangs')}' failed closed (timeout)"
    assert rig.outcome_of(hook_id("Hangs"))["failure"] == "timeout"


@pytest.mark.parametrize("mode", MODES)
def test_agent_run_tracer_error_never_blocks_the_tool(rig, mode):
    result = rig.run_agent([handler("Tracer", raising, strict=False)], mode=mode)
    assert rig.marker.ran
    assert tool_messages(result)[0].status == "success"


@pytest.mark.parametrize("mode", MODES)
def test_agent_run_upstream_fails_open_when_unpatched(rig, upstream, mode):
    def not_implemented(*args, **kwargs):
        raise NotImplementedError

    with upstream:
        rig.run_agent([handler("Strict", not_implemented)], mode=mode)
        assert rig.marker.ran
    rig.marker.reset()
    result = rig.run_agent([handler("Strict", not_implemented)], mode=mode)
    assert not rig.marker.ran and tool_messages(result)[0].status == "error"
    assert rig.outcome_of(hook_id("Strict"))["exception_type"] == "NotImplementedError"


# -------------------------------------------------------------------- HITL `when`


def hitl(when, **kwargs):
    return HumanInTheLoopMiddleware(
        interrupt_on={TOOL: {"allowed_decisions": ["approve", "reject"], "when": when}}, **kwargs
    )


def run_hitl(rig, when, mode, **kwargs):
    return rig.run_agent(mode=mode, middleware=[hitl(when, **kwargs)], checkpointer=InMemorySaver())


def _has_per_call_mode() -> bool:
    import inspect

    return "interrupt_mode" in inspect.signature(HumanInTheLoopMiddleware.__init__).parameters


def denied_by_the_predicate(rig, result, failure, exception_type=None):
    """A failed ``when`` denied the call: nobody was asked, the tool did not run, the
    model was told the deny the audit recorded (the predicate's hook id and the failure)."""
    assert "__interrupt__" not in result and not rig.marker.ran
    [message] = tool_messages(result)
    event = rig.last()
    assert event["outcome"] == "deny" and event["failure"] == failure
    assert event["hook"].endswith(".when")
    if exception_type is not None:
        assert event["exception_type"] == exception_type
    assert message.status == "error"
    assert message.content == f"failsecure: hook '{event['hook']}' failed closed ({failure})"
    assert "SECRET" not in rig.audit_path.read_text() and "SECRET" not in str(result)
    assert [e["outcome"] for e in rig.events()] == ["deny"]  # one decision for the call


@pytest.mark.skipif(not _has_per_call_mode(), reason="no interrupt_mode in this langchain release")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value", [None, True, False, "boom"], ids=["none", "true", "false", "raises"])
def test_when_predicate_in_per_call_mode(rig, mode, value):
    """``interrupt_mode="per_call"`` asks from ``wrap_tool_call`` (its own ``when`` call):
    ``True`` asks, ``False`` runs, a junk or raising predicate denies without asking."""

    def when(request):
        if value == "boom":
            raise KeyError("SECRET")
        return value

    result = run_hitl(rig, when, mode, interrupt_mode="per_call")
    if value is False:
        assert "__interrupt__" not in result and rig.marker.ran
    elif value is True:
        assert "__interrupt__" in result and not rig.marker.ran
    else:
        denied_by_the_predicate(rig, result, "raised" if value == "boom" else "invalid")


def answers(value):
    def when(request):
        return value

    return when


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("value", [None, "yes", 0, 1], ids=["none", "string", "zero", "one"])
def test_when_predicate_answering_junk_denies(rig, mode, value):
    denied_by_the_predicate(rig, run_hitl(rig, answers(value), mode), "invalid")


@pytest.mark.parametrize("mode", MODES)
def test_when_predicate_raising_denies(rig, mode):
    def when(request):
        raise KeyError("SECRET")

    denied_by_the_predicate(rig, run_hitl(rig, when, mode), "raised", "KeyError")


@pytest.mark.parametrize("mode", MODES)
def test_when_predicate_hanging_denies(rig, mode):
    def when(request):
        return rig.release.wait(5)

    denied_by_the_predicate(rig, run_hitl(rig, when, mode), "timeout")


@pytest.mark.parametrize("mode", MODES)
def test_when_predicate_true_asks_false_skips(rig, mode):
    result = run_hitl(rig, answers(True), mode)
    assert "__interrupt__" in result and not rig.marker.ran
    result = run_hitl(rig, answers(False), mode)
    assert "__interrupt__" not in result and rig.marker.ran


def test_when_predicate_none_skips_the_review_upstream(rig, upstream):
    with upstream:
        result = run_hitl(rig, answers(None), "sync")
        assert "__interrupt__" not in result and rig.marker.ran


def test_when_predicate_raising_ends_the_run_upstream(rig, upstream):
    def when(request):
        raise KeyError("SECRET")

    with upstream, pytest.raises(KeyError):
        run_hitl(rig, when, "sync")
    assert not rig.marker.ran


def test_a_true_predicate_then_an_approval_runs(rig):
    """The predicate runs again on resume; an approved call then runs (the allow twin of
    the failed predicate below)."""
    from langgraph.types import Command

    agent = rig.agent(middleware=[hitl(answers(True))], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    result = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config=config)
    assert "__interrupt__" in result and not rig.marker.ran
    agent.invoke(Command(resume=_approve(result)), config=config)
    assert rig.marker.ran


@pytest.mark.parametrize("answer", ["raises", "junk"])
def test_a_failed_predicate_is_never_put_to_a_human(rig, answer):
    """A failed predicate is not a review a person could approve (not told it failed):
    the call is denied at once, as the audit says."""

    def when(request):
        if answer == "raises":
            raise KeyError("SECRET")
        return None

    agent = rig.agent(middleware=[hitl(when)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    result = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config=config)
    denied_by_the_predicate(rig, result, "raised" if answer == "raises" else "invalid")


def _approve(result):
    value = result["__interrupt__"][0].value
    if isinstance(value, dict) and "action_requests" in value:  # interrupt_mode "batch"
        return {"decisions": [{"type": "approve"}]}
    return {"type": "approve"}


# -------------------------------------------------------------------- wrap_tool_call


class Raises(AgentMiddleware):
    def wrap_tool_call(self, request, handler):
        raise RuntimeError("SECRET")

    async def awrap_tool_call(self, request, handler):
        raise RuntimeError("SECRET")


class Hangs(AgentMiddleware):
    def __init__(self, release):
        super().__init__()
        self.release = release

    def wrap_tool_call(self, request, handler):
        self.release.wait(5)
        return handler(request)

    async def awrap_tool_call(self, request, handler):
        await asyncio.sleep(2)
        return await handler(request)


class PassesSlowTool(AgentMiddleware):
    """Hands the call on at once; the tool itself takes longer than the deadline."""

    def wrap_tool_call(self, request, handler):
        time.sleep(0.01)
        return handler(request)

    async def awrap_tool_call(self, request, handler):
        await asyncio.sleep(0.01)
        return await handler(request)


MW = "test_langchain_agent"


@pytest.mark.parametrize("mode", MODES)
def test_middleware_raising_is_denied_and_audited(rig, mode):
    # a raising middleware is a gate that failed: the model is told the deny (never the
    # exception's text) and the run goes on, as for a hanging one
    result = rig.run_agent(mode=mode, middleware=[Raises()])
    assert not rig.marker.ran
    [message] = tool_messages(result)
    assert message.status == "error" and message.content.endswith("failed closed (raised)")
    assert "SECRET" not in str(message.content)
    event = rig.last()
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", "RuntimeError")
    method = "wrap_tool_call" if mode == "sync" else "awrap_tool_call"
    assert event["hook"].endswith(f"Raises.{method}")
    assert "SECRET" not in rig.audit_path.read_text()


@pytest.mark.parametrize("mode", MODES)
def test_middleware_hanging_is_denied_at_the_deadline(rig, mode):
    result = rig.run_agent(mode=mode, middleware=[Hangs(rig.release)])
    assert not rig.marker.ran
    [message] = tool_messages(result)
    assert message.status == "error" and message.content.endswith("failed closed (timeout)")
    assert rig.last()["failure"] == "timeout"
    rig.release.set()
    time.sleep(0.05)
    assert not rig.marker.ran  # the abandoned middleware cannot run the tool later


@pytest.mark.parametrize("mode", MODES)
def test_middleware_deadline_does_not_count_the_tool(rig, mode, monkeypatch):
    """The deadline bounds the middleware's own time, not the tool's."""
    real = rig.marker._write

    def slow_write(command):
        time.sleep(0.5)
        return real(command)

    monkeypatch.setattr(rig.marker, "_write", slow_write)
    result = rig.run_agent(mode=mode, middleware=[PassesSlowTool()])
    assert rig.marker.ran and tool_messages(result)[0].status == "success"


@pytest.mark.parametrize("mode", MODES)
def test_middleware_and_strict_gate_together(rig, mode):
    """The callback gate runs inside the middleware onion, on the final call; its deny
    reaches the middleware as the ToolMessage."""
    seen = []

    class Rewrites(AgentMiddleware):
        def wrap_tool_call(self, request, handler):
            call = {**request.tool_call, "args": {"command": "forbidden"}}
            result = handler(request.override(tool_call=call))
            seen.append(result.status)
            return result

        async def awrap_tool_call(self, request, handler):
            call = {**request.tool_call, "args": {"command": "forbidden"}}
            result = await handler(request.override(tool_call=call))
            seen.append(result.status)
            return result

    def policy(serialized, input_str, **kwargs):
        if kwargs["inputs"]["command"] == "forbidden":
            raise PermissionError

    result = rig.run_agent([handler("Policy", policy)], mode=mode, middleware=[Rewrites()])
    assert not rig.marker.ran and seen == ["error"]
    assert tool_messages(result)[0].status == "error"


def test_middleware_hang_has_no_deadline_upstream(rig, upstream):
    """The regression twin: unpatched, a middleware that holds the call 0.6 s (past the
    0.3 s deadline) is waited for and the tool runs."""
    timer = threading.Timer(0.6, rig.release.set)
    with upstream:
        timer.start()
        result = rig.run_agent(middleware=[Hangs(rig.release)])
        assert rig.marker.ran and tool_messages(result)[0].status == "success"


# ---------------------------------------------------------------- after the handler: upstream's


class ToolBroke(Exception):
    pass


class AfterTheTool(AgentMiddleware):
    """Hands the call on (the tool runs), then fails in its own post-processing."""

    def wrap_tool_call(self, request, handler):
        handler(request)
        raise KeyError("post-processing")


def test_a_tool_error_a_middleware_re_raises_stays_upstreams(rig, upstream):
    # upstream's own ToolErrorMiddleware (only aon_error set) re-raises the tool's error on
    # the sync path as `RuntimeError from <error>`: the tool ran; it is no gate's failure
    from langchain.agents import create_agent
    from langchain.agents.middleware.tool_error import ToolErrorMiddleware
    from langchain_core.tools import StructuredTool

    from failsecure_langchain_rig import script

    ran = []

    def write_marker(command: str) -> str:
        """Fails after its side effect."""
        ran.append(command)
        raise ToolBroke("tool-internal-detail")

    async def aon_error(exc, request):
        return "the tool failed"

    def run():
        agent = create_agent(script({"command": "rm"}), tools=[StructuredTool.from_function(write_marker, name=TOOL)],
                             middleware=[ToolErrorMiddleware(aon_error=aon_error)])
        return agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config={"configurable": {"thread_id": "t"}})

    with upstream:
        with pytest.raises(RuntimeError) as was:
            run()
    assert isinstance(was.value.__cause__, ToolBroke) and ran == ["rm"]
    ran.clear()
    before = len(rig.events())
    with pytest.raises(RuntimeError) as got:
        run()
    assert isinstance(got.value.__cause__, ToolBroke) and ran == ["rm"]  # as upstream
    assert not any(e.get("outcome") == "deny" for e in rig.events()[before:])


def test_a_middleware_failing_after_the_tool_ran_stays_upstreams(rig, upstream):
    with upstream:
        with pytest.raises(KeyError):
            rig.run_agent(middleware=[AfterTheTool()])
    assert rig.marker.ran
    rig.marker.reset()
    with pytest.raises(KeyError):  # the tool ran: not a deny, and not told as one
        rig.run_agent(middleware=[AfterTheTool()])
    assert rig.marker.ran
