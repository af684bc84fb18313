"""Issue 26: every point where Strands user code decides whether or with what a tool runs
is a gate under the contract. Intervention handlers are gates each; a renamed tool use is
judged and named as the tool that runs; ExecuteToolStage middleware that replaces the tool
use after the gates is judged again; a sync callback finds the dispatching event loop.
Each deny asserts its failure category and has an allow twin; the fail-open cases show
upstream (unpatched) running the tool."""

import asyncio
import threading

import pytest

from failsecure_strands_rig import provider

from failsecure import plugins
from failsecure.plugins import hookimpl

SECRET = "s3cr3t-token-do-not-leak"


def unpatched(adapter):
    class Ctx:
        def __enter__(self):
            adapter.unpatch()

        def __exit__(self, *exc):
            assert adapter.patch() == "patched"

    return Ctx()


# ---------------------------------------------------------------- interventions


def _handler(answer, on_error="throw", name="policy", is_async=False):
    """An InterventionHandler whose ``before_tool_call`` answers ``answer(event)``."""
    from strands.interventions import InterventionHandler

    if is_async:

        async def before_tool_call(self, event, **kwargs):
            return answer(event)

    else:

        def before_tool_call(self, event, **kwargs):
            return answer(event)

    body = {
        "name": property(lambda self: name),
        "on_error": property(lambda self: on_error),
        "before_tool_call": before_tool_call,
        "__module__": __name__,
    }
    return type("AsyncHandler" if is_async else "Handler", (InterventionHandler,), body)()


def _raise(event):
    raise RuntimeError(SECRET)


def _proceed(event):
    from strands.interventions import Proceed

    return Proceed()


def _deny(event):
    from strands.interventions import Deny

    return Deny(reason="not on my watch")


def _handler_id(handler):
    return f"strands:{type(handler).__module__}.{type(handler).__qualname__}.before_tool_call"


@pytest.mark.parametrize("on_error", ["proceed", "deny", "throw"])
def test_intervention_raise_denies_raised(rig, on_error):
    handler = _handler(_raise, on_error=on_error)
    result = rig.agent(interventions=[handler])("go")
    assert not rig.marker.ran
    assert SECRET not in str(result)
    outcome = rig.outcome_of(".before_tool_call")
    assert (outcome["hook"], outcome["failure"], outcome["exception_type"]) == (_handler_id(handler), "raised", "RuntimeError")
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "raised")
    assert SECRET not in rig.audit_path.read_text()


def test_intervention_proceed_runs(rig):
    handler = _handler(_proceed)
    rig.agent(interventions=[handler])("go")
    assert rig.marker.ran
    assert rig.outcome_of(".before_tool_call")["hook"] == _handler_id(handler), rig.last()
    assert rig.last()["outcome"] == "allow"


def test_intervention_raise_proceed_runs_upstream(rig, adapter):
    with unpatched(adapter):
        rig.agent(interventions=[_handler(_raise, on_error="proceed")])("go")
    assert rig.marker.ran  # upstream fails open


def test_intervention_raise_deny_tells_the_model_upstream(rig, adapter):
    with unpatched(adapter):
        result = rig.agent(interventions=[_handler(_raise, on_error="deny")])("go")
    assert not rig.marker.ran and SECRET in str(result)  # upstream: the exception text reaches the model


class _NotAnAction:
    type = "deny"  # looks like an action to upstream's log line, is none of them


@pytest.mark.parametrize("answer", ["DENY", True, 0, {"type": "deny"}, _NotAnAction()], ids=repr)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_intervention_non_action_denies_invalid(rig, answer, is_async):
    rig.agent(interventions=[_handler(lambda event: answer, is_async=is_async)])("go")
    assert not rig.marker.ran
    assert rig.outcome_of(".before_tool_call")["failure"] == "invalid"
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


def test_intervention_non_action_runs_upstream(rig, adapter):
    with unpatched(adapter):
        rig.agent(interventions=[_handler(lambda event: _NotAnAction())])("go")
    assert rig.marker.ran  # upstream: a warning in the log, the tool runs


def test_intervention_none_denies_invalid(rig):
    result = rig.agent(interventions=[_handler(lambda event: None)])("go")
    assert not rig.marker.ran and "(invalid)" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


def test_intervention_sync_hang_denies_timeout(rig, release):
    def hang(event):
        release.wait(30)
        from strands.interventions import Proceed

        return Proceed()

    rig.agent(interventions=[_handler(hang)])("go")
    assert not rig.marker.ran
    assert rig.outcome_of(".before_tool_call")["failure"] == "timeout"
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_intervention_async_hang_denies_timeout(rig):
    async def hang(self, event, **kwargs):
        await asyncio.sleep(30)

    handler = _handler(_proceed, is_async=True)
    type(handler).before_tool_call = hang
    rig.agent(interventions=[handler])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_intervention_deny_action_and_hook_per_handler(rig):
    first, second = _handler(_proceed, name="first"), _handler(_deny, name="second")
    result = rig.agent(interventions=[first, second])("go")
    assert not rig.marker.ran
    assert "DENIED: not on my watch" in str(result)
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None)
    assert event["hook"] == _handler_id(second)
    assert sorted(o["hook"] for o in event["outcomes"]) == sorted([_handler_id(first), _handler_id(second)])


def test_intervention_on_error_allow_config_is_honoured(rig):
    handler = _handler(_raise, on_error="proceed")
    rig.config(tables=f'[hooks."{_handler_id(handler)}"]\non_error = "allow"')
    rig.agent(interventions=[handler])("go")
    assert rig.marker.ran
    assert rig.outcome_of(".before_tool_call")["failure"] == "raised"


@pytest.mark.parametrize("response, runs", [("yes", True), ("no", False)])
def test_intervention_confirm_with_response(rig, response, runs):
    from strands.interventions import Confirm

    rig.agent(interventions=[_handler(lambda event: Confirm(prompt="run?", response=response))])("go")
    assert rig.marker.ran is runs
    assert rig.last()["outcome"] == ("allow" if runs else "deny")


@pytest.mark.parametrize("answer, runs", [("yes", True), ("no", False)])
def test_intervention_confirm_interrupts_then_resumes(rig, answer, runs):
    from strands.interventions import Confirm

    agent = rig.agent(interventions=[_handler(lambda event: Confirm(prompt="run?"))])
    first = agent("go")
    assert first.stop_reason == "interrupt" and not rig.marker.ran
    assert rig.last()["outcome"] == "ask"
    (interrupt,) = first.interrupts
    agent([{"interruptResponse": {"interruptId": interrupt.id, "response": answer}}])
    assert rig.marker.ran is runs


def test_intervention_confirm_evaluate_junk_denies(rig):
    from strands.interventions import Confirm

    rig.agent(interventions=[_handler(lambda event: Confirm(prompt="run?", response="yes", evaluate=lambda r: "ok"))])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


def test_intervention_transform_is_judged(rig):
    from strands.interventions import Transform

    def smuggle(event):
        def apply(e):
            e.tool_use = {**e.tool_use, "input": {"command": "forbidden rm -rf"}}

        return Transform(apply=apply) if "forbidden" not in event.tool_use["input"]["command"] else Transform()

    def policy(event):
        if "forbidden" in event.tool_use["input"]["command"]:
            event.cancel_tool = "policy: no"

    rig.agent(hooks=[provider(policy)], interventions=[_handler(smuggle)], command="ls")("go")
    assert not rig.marker.ran
    assert rig.last()["hook"].endswith(".policy")


# ---------------------------------------------------------------- a renamed tool use


def _dangerous_policy(event):
    tool = event.selected_tool.tool_name if event.selected_tool is not None else event.tool_use["name"]
    if tool == "dangerous":
        event.cancel_tool = "policy: no"


def _rename(to):
    def rename(event):
        event.tool_use["name"] = to

    return rename


class _NamePlugin:
    def __init__(self):
        self.seen = []

    @hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        self.seen.append(call.tool)
        if call.tool == "dangerous":
            return Verdict(action=Action.DENY, reason="plugin: no")
        return Verdict(action=Action.ALLOW)


def _renames_follow():
    import strands.tools.executors._executor as executor

    return hasattr(executor, "_lookup_tool")  # 1.6x: a renamed call runs the tool of the new name


def test_rename_to_a_denied_tool_is_judged(rig):
    dangerous = rig.marker.tool("dangerous")
    gate = _NamePlugin()
    plugins.register(gate, name="strands-rename")
    try:
        rig.agent(hooks=[provider(_rename("dangerous"), _dangerous_policy)], tools=[rig.marker.tool(), dangerous])("go")
    finally:
        plugins.unregister(gate)
    if _renames_follow():
        assert not rig.marker.ran
        assert (rig.last()["outcome"], rig.last()["tool"]) == ("deny", "dangerous")
        assert gate.seen == ["dangerous"]
    else:  # 1.52 runs the tool it selected before the rename
        assert rig.marker.ran and rig.last()["tool"] == "run_command"


def test_rename_away_from_a_denied_tool_runs(rig):
    """The allow twin: the model asks for ``dangerous``, a callback renames it to the safe
    tool; Strands 1.6x runs the safe one, so it must not be denied."""
    dangerous = rig.marker.tool("dangerous")
    gate = _NamePlugin()
    plugins.register(gate, name="strands-rename")
    try:
        rig.agent(
            calls=[("dangerous", {"command": "ls"})],
            hooks=[provider(_rename("run_command"), _dangerous_policy)],
            tools=[rig.marker.tool(), dangerous],
        )("go")
    finally:
        plugins.unregister(gate)
    if _renames_follow():
        assert rig.marker.ran, rig.events()
        assert (rig.last()["outcome"], rig.last()["tool"]) == ("allow", "run_command")
        assert gate.seen == ["run_command"]
    else:
        assert not rig.marker.ran and rig.last()["tool"] == "dangerous"


def test_rename_runs_the_renamed_tool_upstream(rig, adapter):
    if not _renames_follow():
        pytest.skip("1.52 runs the selected tool, whatever the name")
    dangerous = rig.marker.tool("dangerous")
    with unpatched(adapter):
        rig.agent(hooks=[provider(_rename("dangerous"), _dangerous_policy)], tools=[rig.marker.tool(), dangerous])("go")
    assert rig.marker.ran  # the policy saw selected_tool = run_command


# ---------------------------------------------------------------- ExecuteToolStage middleware


def _add_input_middleware(agent, handler):
    try:
        from strands.middleware import ExecuteToolStage
    except ImportError:  # 1.52: the private module
        from strands._middleware.stages import ExecuteToolStage
    agent._middleware_registry.add_middleware(ExecuteToolStage.Input, handler)


def _with_input(ctx, command):
    import dataclasses

    return dataclasses.replace(ctx, tool_use={**ctx.tool_use, "input": {"command": command}})


def _forbid(event):
    if "forbidden" in event.tool_use["input"].get("command", ""):
        event.cancel_tool = "policy: no"


def test_middleware_rewrite_is_judged(rig):
    agent = rig.agent(hooks=[provider(_forbid)], command="ls")
    _add_input_middleware(agent, lambda ctx: _with_input(ctx, "forbidden rm -rf"))
    result = agent("go")
    assert not rig.marker.ran
    assert "policy: no" in str(result)
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None)
    assert event["hook"].endswith("._forbid")


def test_middleware_harmless_rewrite_runs_rewritten(rig):
    agent = rig.agent(hooks=[provider(_forbid)], command="ls")
    _add_input_middleware(agent, lambda ctx: _with_input(ctx, "ls --dry-run"))
    agent("go")
    assert rig.marker.runs() == ["ls --dry-run"]
    assert rig.last()["outcome"] != "deny"


def test_middleware_unchanged_is_not_judged_again(rig):
    calls = []

    def count(event):
        calls.append(1)

    agent = rig.agent(hooks=[provider(count)], command="ls")
    _add_input_middleware(agent, lambda ctx: ctx)
    agent("go")
    assert rig.marker.ran and len(calls) == 1


def test_middleware_tool_swap_is_judged(rig):
    dangerous = rig.marker.tool("dangerous")
    import dataclasses

    agent = rig.agent(hooks=[provider(_dangerous_policy)], tools=[rig.marker.tool(), dangerous])
    _add_input_middleware(agent, lambda ctx: dataclasses.replace(ctx, tool=dangerous))
    agent("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["tool"]) == ("deny", "dangerous")


def test_middleware_tool_swap_to_a_harmless_tool_runs_judged(rig):
    """Allow twin: the middleware swaps the call to another tool the policy allows; that
    tool runs, and the audit names the tool that ran."""
    harmless = rig.marker.tool("harmless")
    import dataclasses

    agent = rig.agent(hooks=[provider(_dangerous_policy)], tools=[rig.marker.tool(), harmless], command="ls")
    _add_input_middleware(agent, lambda ctx: dataclasses.replace(ctx, tool=harmless))
    agent("go")
    assert rig.marker.runs() == ["ls"]
    assert rig.last()["outcome"] in ("allow", "abstain") and rig.last()["tool"] == "harmless"


def _add_wrap_middleware(agent, handler):
    try:
        from strands.middleware import ExecuteToolStage
    except ImportError:  # 1.52: the private module
        from strands._middleware.stages import ExecuteToolStage
    agent._middleware_registry.add_middleware(ExecuteToolStage.Wrap, handler)


async def _passes(ctx, next_fn):
    async for event in next_fn(ctx):
        yield event


def _raising_input(ctx):
    raise RuntimeError(SECRET)


def test_middleware_raise_denies_raised(rig):
    agent = rig.agent(command="ls")
    _add_input_middleware(agent, _raising_input)
    result = agent("go")
    assert not rig.marker.ran
    assert SECRET not in str(result) and "(raised)" in str(result)
    event = rig.last()
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", "RuntimeError")
    assert event["hook"].endswith("._raising_input")


def test_middleware_passing_on_runs(rig):
    agent = rig.agent(command="ls")
    _add_wrap_middleware(agent, _passes)
    _add_input_middleware(agent, lambda ctx: ctx)
    agent("go")
    assert rig.marker.runs() == ["ls"]


def test_middleware_raise_leaks_upstream(rig, adapter):
    with unpatched(adapter):
        agent = rig.agent(command="ls")
        _add_input_middleware(agent, _raising_input)
        try:
            told = str(agent("go"))
        except RuntimeError as exc:
            told = str(exc)
    assert not rig.marker.ran and SECRET in told


def test_middleware_async_hang_denies_timeout(rig):
    async def hanging(ctx, next_fn):
        await asyncio.sleep(5)
        async for event in next_fn(ctx):
            yield event

    agent = rig.agent(command="ls")
    _add_wrap_middleware(agent, hanging)
    assert "(timeout)" in str(agent("go"))
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_middleware_blocking_past_its_deadline_denies_timeout(rig, release):
    def blocking(ctx):
        release.wait(1.0)  # the loop is held past the deadline, then it answers
        return ctx

    agent = rig.agent(command="ls")
    _add_input_middleware(agent, blocking)
    agent("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_middleware_slow_tool_is_not_the_middleware_s_time(rig):
    """The deadline holds until the middleware proceeds; the tool's own time is not its."""
    from strands import tool

    ran = []

    @tool
    async def run_command(command: str) -> str:
        """Runs a command.

        Args:
            command: the command line
        """
        await asyncio.sleep(0.6)  # twice the deadline
        ran.append(command)
        return "done"

    agent = rig.agent(command="ls", tools=[run_command])
    _add_wrap_middleware(agent, _passes)
    agent("go")
    assert ran == ["ls"]


def test_middleware_sync_input_hang_denies_timeout(rig, release):
    """A sync Input handler that never answers: its deadline holds (it runs off the loop)."""
    def hanging(ctx):
        release.wait(30)
        return ctx

    agent = rig.agent(command="ls")
    _add_input_middleware(agent, hanging)
    agent("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_middleware_sync_input_finds_the_loop_and_runs(rig):
    seen = []

    def reads_loop(ctx):
        seen.append(asyncio.get_running_loop())
        return ctx

    agent = rig.agent(command="ls")
    _add_input_middleware(agent, reads_loop)
    agent("go")
    assert rig.marker.runs() == ["ls"] and seen


def test_middleware_sync_input_interrupt_stops_for_a_human(rig):
    def asks(ctx):
        ctx.interrupt("approve-ls", reason="ok?")
        return ctx

    agent = rig.agent(command="ls")
    _add_input_middleware(agent, asks)
    result = agent("go")
    assert not rig.marker.ran
    assert result.stop_reason == "interrupt"
    assert [i.name for i in result.interrupts] == ["approve-ls"]


def test_middleware_junk_context_denies_invalid(rig):
    agent = rig.agent(command="ls")
    _add_input_middleware(agent, lambda ctx: None)
    agent("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


async def _forbid_middleware(ctx, next_fn):
    from strands.tools.executors._executor import ToolResultEvent

    if "forbidden" in ctx.tool_use["input"].get("command", ""):
        yield ToolResultEvent({"toolUseId": ctx.tool_use["toolUseId"], "status": "error", "content": [{"text": "policy: no"}]})
        return
    async for event in next_fn(ctx):
        yield event


def _wrap_rewriting(command):
    async def rewriting(ctx, next_fn):
        async for event in next_fn(_with_input(ctx, command)):
            yield event

    return rewriting


def test_middleware_rewrite_inside_a_policy_middleware_is_judged(rig):
    """Two Wrap middleware, the policy outside: the rewriter's call is judged by the policy again."""
    agent = rig.agent(command="ls")
    _add_wrap_middleware(agent, _forbid_middleware)
    _add_wrap_middleware(agent, _wrap_rewriting("forbidden rm -rf"))
    agent("go")
    assert not rig.marker.ran
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None)
    assert event["hook"].endswith("._forbid_middleware")


def test_middleware_harmless_rewrite_inside_a_policy_middleware_runs(rig):
    agent = rig.agent(command="ls")
    _add_wrap_middleware(agent, _forbid_middleware)
    _add_wrap_middleware(agent, _wrap_rewriting("ls --dry-run"))
    agent("go")
    assert rig.marker.runs() == ["ls --dry-run"]


def test_required_middleware_is_met_when_registered(rig):
    rig.config(top=f'required = ["strands:{__name__}._forbid_middleware"]')
    agent = rig.agent(command="ls")
    _add_wrap_middleware(agent, _forbid_middleware)
    agent("go")
    assert rig.marker.runs() == ["ls"]


def test_required_middleware_missing_denies(rig):
    rig.config(top=f'required = ["strands:{__name__}._forbid_middleware"]')
    rig.agent(command="ls")("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "missing")


def test_middleware_rewrite_runs_upstream(rig, adapter):
    with unpatched(adapter):
        agent = rig.agent(hooks=[provider(_forbid)], command="ls")
        _add_input_middleware(agent, lambda ctx: _with_input(ctx, "forbidden rm -rf"))
        agent("go")
    assert rig.marker.runs() == ["forbidden rm -rf"]


# ---------------------------------------------------------------- the running loop


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_sync_callback_finds_the_running_loop(rig, mode):
    seen = []

    def needs_loop(event):
        loop = asyncio.get_running_loop()
        seen.append(loop)
        event.cancel_tool = False

    async def main():
        result = await rig.agent(hooks=[provider(needs_loop)]).invoke_async("go")
        return asyncio.get_running_loop(), result

    if mode == "async":
        loop, _ = asyncio.run(main())
        assert seen == [loop]
    else:
        rig.agent(hooks=[provider(needs_loop)])("go")
        assert len(seen) == 1
    assert rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)  # False over False: no opinion


def test_sync_intervention_handler_finds_the_running_loop(rig):
    def needs_loop(event):
        asyncio.get_running_loop()
        return _proceed(event)

    rig.agent(interventions=[_handler(needs_loop)])("go")
    assert rig.marker.ran and rig.last()["outcome"] == "allow"


def test_sync_callback_without_loop_still_times_out(rig, release):
    """The deny twin: the loop is lent, the deadline still holds."""

    def hang(event):
        asyncio.get_running_loop()
        release.wait(30)

    rig.agent(hooks=[provider(hang)])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_running_loop_is_not_left_on_the_worker(rig):
    seen = []

    def needs_loop(event):
        asyncio.get_running_loop()

    rig.agent(hooks=[provider(needs_loop)])("go")
    from failsecure import guard

    def probe():
        try:
            asyncio.get_running_loop()
            seen.append("loop")
        except RuntimeError:
            seen.append("none")

    guard.call("probe", probe, (), {}, validate=lambda r: None, timeout=5)
    assert seen == ["none"]
    assert threading.current_thread() is threading.main_thread()


def test_rename_and_back_runs_the_model_tool(rig):
    """A name renamed to ``dangerous`` and back runs the model's tool, as upstream does:
    the pass ends with the call as it arrived, judged by the policy, and the renamer's
    re-run repeats the change the later callback took back (the settling rule's repeat),
    so it is neither a fight (unsettled) nor denied for the intermediate name."""
    dangerous = rig.marker.tool("dangerous")
    rig.agent(
        hooks=[provider(_rename("dangerous"), _rename("run_command"), _dangerous_policy)],
        tools=[rig.marker.tool(), dangerous],
    )("go")
    assert rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["tool"]) == ("abstain", "run_command")


def test_one_rename_that_the_policy_allows_runs_the_renamed_tool(rig):
    """The allow twin: a single rename to an allowed tool settles and runs that tool."""
    other = rig.marker.tool("other")
    rig.agent(hooks=[provider(_rename("other"), _dangerous_policy)], tools=[rig.marker.tool(), other])("go")
    assert rig.marker.ran


def test_rename_to_a_denied_tool_in_async_callback_is_judged(rig):
    dangerous = rig.marker.tool("dangerous")

    async def rename(event):
        event.tool_use["name"] = "dangerous"

    asyncio.run(rig.agent(hooks=[provider(rename, _dangerous_policy)], tools=[rig.marker.tool(), dangerous]).invoke_async("go"))
    if _renames_follow():
        assert not rig.marker.ran
        assert (rig.last()["outcome"], rig.last()["failure"], rig.last()["tool"]) == ("deny", None, "dangerous")
    else:
        assert rig.marker.ran


# ---------------------------------------------------------------- direct tool calls


@pytest.mark.parametrize("command, runs", [("ls", True), ("forbidden rm -rf", False)])
def test_direct_tool_call_is_gated(rig, command, runs):
    agent = rig.agent(hooks=[provider(_forbid)])
    agent.tool.run_command(command=command)
    assert rig.marker.ran is runs
    assert rig.last()["outcome"] == ("abstain" if runs else "deny")


def test_direct_tool_call_middleware_rewrite_is_judged(rig):
    agent = rig.agent(hooks=[provider(_forbid)])
    _add_input_middleware(agent, lambda ctx: _with_input(ctx, "forbidden rm -rf"))
    agent.tool.run_command(command="ls")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


@pytest.mark.parametrize("executor", ["concurrent", "sequential"])
def test_two_calls_middleware_rewrites_one(rig, executor):
    """Two calls in one turn, the middleware rewrites only the second: the first runs
    as judged, the second is judged again and denied."""
    def rewrite(ctx):
        return _with_input(ctx, "forbidden rm -rf") if ctx.tool_use["toolUseId"] == "call-1" else ctx

    agent = rig.agent(
        calls=[("run_command", {"command": "ls"}), ("run_command", {"command": "pwd"})],
        hooks=[provider(_forbid)],
        executor=executor,
    )
    _add_input_middleware(agent, rewrite)
    agent("go")
    assert rig.marker.runs() == ["ls"]
