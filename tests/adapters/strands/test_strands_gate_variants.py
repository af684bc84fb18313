"""Variants of the Strands gate kinds (issue 26): an ``InterruptException`` that
carries no ``Interrupt`` is junk, not "no opinion"; an intervention handler's own
``before_tool_call`` (an instance attribute too) decides how it is awaited; a tool run
that raised does not give its call id back for another tool to run on. Each deny asserts
its failure category and has an allow twin; the fail-open cases show upstream."""

import asyncio

import pytest

from failsecure_strands_rig import batch_provider, provider
from failsecure_strands_rig import stream_wrapper as rig_stream_wrapper

SECRET = "s3cr3t-s37-do-not-leak"


def unpatched(adapter):
    class Ctx:
        def __enter__(self):
            adapter.unpatch()

        def __exit__(self, *exc):
            assert adapter.patch() == "patched"

    return Ctx()


# ---------------------------------------------------------------- a junk interrupt


class _NotAnInterrupt:
    name = "approve"  # looks like an interrupt to a name check, is none
    id = "forged"


_JUNK_INTERRUPTS = {"none": lambda: None, "text": lambda: SECRET, "lookalike": _NotAnInterrupt}


def _raising_junk(kind, is_async):
    from strands.interrupt import InterruptException

    if is_async:

        async def gate(event):
            raise InterruptException(_JUNK_INTERRUPTS[kind]())

    else:

        def gate(event):
            raise InterruptException(_JUNK_INTERRUPTS[kind]())

    return gate


@pytest.mark.parametrize("kind", sorted(_JUNK_INTERRUPTS))
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_junk_interrupt_denies_invalid(rig, kind, is_async):
    result = rig.agent(hooks=[provider(_raising_junk(kind, is_async))])("go")
    assert not rig.marker.ran
    assert "(invalid)" in str(result) and SECRET not in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")
    assert rig.outcome_of(".gate")["failure"] == "invalid"


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_real_interrupt_raised_by_hand_asks(rig, is_async):
    """The twin: an InterruptException carrying a real Interrupt stops the run for a human."""
    from strands.interrupt import Interrupt, InterruptException

    def make(event):
        return InterruptException(Interrupt(id=f"by-hand:{event.tool_use['toolUseId']}", name="approve", reason="ok?"))

    if is_async:

        async def gate(event):
            raise make(event)

    else:

        def gate(event):
            raise make(event)

    result = rig.agent(hooks=[provider(gate)])("go")
    assert result.stop_reason == "interrupt" and not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("ask", None)


def test_junk_interrupt_from_a_handler_denies_invalid(rig):
    from strands.interrupt import InterruptException
    from strands.interventions import InterventionHandler

    class Junky(InterventionHandler):
        name = "junky"

        def before_tool_call(self, event, **kwargs):
            raise InterruptException(None)

    rig.agent(interventions=[Junky()])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


def test_junk_interrupt_ends_the_run_upstream(rig, adapter):
    with unpatched(adapter):
        with pytest.raises(Exception):
            rig.agent(hooks=[provider(_raising_junk("none", False))])("go")
    assert not rig.marker.ran  # upstream fails closed (the run ends with an AttributeError)


# ---------------------------------------------------------------- the handler's own method


def _instance_handler(is_async, answer):
    from strands.interventions import InterventionHandler, Proceed

    class Patched(InterventionHandler):
        name = "patched"

        def before_tool_call(self, event, **kwargs):  # the class's: replaced on the instance
            return Proceed()

    handler = Patched()
    if is_async:

        async def before_tool_call(event, **kwargs):
            await asyncio.sleep(0)
            return answer()

    else:

        def before_tool_call(event, **kwargs):
            return answer()

    handler.before_tool_call = before_tool_call  # upstream calls getattr(handler, "before_tool_call")
    return handler


def _proceed():
    from strands.interventions import Proceed

    return Proceed()


def _deny():
    from strands.interventions import Deny

    return Deny(reason="instance says no")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_instance_handler_method_proceeds_and_runs(rig, is_async):
    rig.agent(interventions=[_instance_handler(is_async, _proceed)])("go")
    assert rig.marker.ran
    assert rig.last()["outcome"] == "allow"


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_instance_handler_method_deny_stands(rig, is_async):
    result = rig.agent(interventions=[_instance_handler(is_async, _deny)])("go")
    assert not rig.marker.ran and "DENIED: instance says no" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


def test_instance_async_handler_method_runs_upstream(rig, adapter):
    with unpatched(adapter):
        rig.agent(interventions=[_instance_handler(True, _proceed)])("go")
    assert rig.marker.ran


def test_instance_async_handler_method_hang_denies_timeout(rig, release):
    async def hang():
        await asyncio.sleep(30)

    from strands.interventions import InterventionHandler, Proceed

    class Patched(InterventionHandler):
        name = "patched"

        def before_tool_call(self, event, **kwargs):
            return Proceed()

    handler = Patched()

    async def before_tool_call(event, **kwargs):
        await hang()

    handler.before_tool_call = before_tool_call
    rig.agent(interventions=[handler])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


# ---------------------------------------------------------------- the boundary: a raised run's call id


def _flaky_tool(failures):
    """A tool class of its own whose ``stream`` raises its first ``failures`` times (Strands'
    terminal turns that into an error result; nothing re-runs the stream unjudged)."""
    from strands.types.tools import AgentTool

    class Flaky(AgentTool):
        runs = 0

        @property
        def tool_name(self):
            return "flaky"

        @property
        def tool_spec(self):
            schema = {"type": "object", "properties": {"command": {"type": "string"}}}
            return {"name": "flaky", "description": "flaky", "inputSchema": {"json": schema}}

        @property
        def tool_type(self):
            return "python"

        async def stream(self, tool_use, invocation_state, **kwargs):
            type(self).runs += 1
            if type(self).runs <= failures:
                raise RuntimeError("flaky broke")
            yield {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": "flaky ran"}]}

    return Flaky()


def _dispatch_and_dangerous(marker):
    """A dispatcher tool (runs another tool's ``stream`` under a call id it is given) and a
    tool the policy denies."""
    from strands import tool

    @tool
    def dangerous(command: str) -> str:
        """Dangerous.

        Args:
            command: c
        """
        (marker.dir / "run-dangerous").write_text(command)
        return "dangerous ran"

    @tool
    async def dispatch(name: str, use_id: str, command: str, agent=None) -> str:
        """Dispatch.

        Args:
            name: n
            use_id: u
            command: c
        """
        events = [e async for e in agent.tool_registry.registry[name].stream(
            {"toolUseId": use_id, "name": name, "input": {"command": command}}, {"agent": agent})]
        return f"dispatched {events[-1]}"

    return dispatch, dangerous


def _no_dangerous(event):
    if event.tool_use["name"] == "dangerous":
        event.cancel_tool = "policy: no dangerous"


def test_a_raised_run_s_call_id_runs_no_other_tool(rig):
    dispatch, dangerous = _dispatch_and_dangerous(rig.marker)
    calls = [("flaky", {"command": "echo"}), ("dispatch", {"name": "dangerous", "use_id": "call-0", "command": "echo"})]
    rig.agent(calls=calls, tools=[dispatch, dangerous, _flaky_tool(1)], hooks=[provider(_no_dangerous)], executor="sequential")("go")
    assert not rig.marker.ran  # the dangerous tool did not run on flaky's judged call id
    ungoverned = [e for e in rig.events() if e["failure"] == "ungoverned"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned] == [("dangerous", "deny")]


def test_a_raised_tool_retried_by_a_hook_is_judged_and_runs(rig):
    """The twin: the framework's own re-run of a call whose stream raised (an
    AfterToolCallEvent retry) goes through the gates again and runs."""
    from strands.hooks import AfterToolCallEvent, HookProvider

    judged = []

    def gate(event):
        judged.append(event.tool_use["toolUseId"])

    def retry_once(event):
        if len(judged) == 1:
            event.retry = True

    class Hooks(HookProvider):
        def register_hooks(self, registry, **kwargs):
            from failsecure_strands_rig import before_tool

            registry.add_callback(before_tool(), gate)
            registry.add_callback(AfterToolCallEvent, retry_once)

    flaky = _flaky_tool(1)
    result = rig.agent(calls=[("flaky", {"command": "echo"})], tools=[flaky], hooks=[Hooks()])("go")
    assert type(flaky).runs == 2 and judged == ["call-0", "call-0"]
    assert "flaky ran" in str(result)
    assert not [e for e in rig.events() if e["failure"] == "ungoverned"]


# ---------------------------------------------------------------- a renamed call retried


def _renames_follow():
    import strands.tools.executors._executor as executor

    return hasattr(executor, "_lookup_tool")  # 1.6x: a renamed call runs the tool of the new name


def _rename_then_retry(rig, once_only):
    """Round 1: a callback renames run_command -> other; an AfterToolCallEvent hook asks for
    one retry. Round 2 starts from the renamed tool use with the executor's first tool
    selected: Strands 1.6x runs ``other`` again. The policy names the tool it judges."""
    from strands import tool
    from strands.hooks import AfterToolCallEvent, HookProvider

    from failsecure_strands_rig import before_tool

    marker = rig.marker

    @tool
    def other(command: str) -> str:
        """Other.

        Args:
            command: c
        """
        index = len(list(marker.dir.glob("run-*")))
        (marker.dir / f"run-{index}").write_text("other " + command)
        return "other ran"

    judged = []

    def rename(event):
        if event.tool_use["name"] == "run_command":
            event.tool_use["name"] = "other"

    def policy(event):
        name = event.selected_tool.tool_name if event.selected_tool is not None else None
        judged.append(name)
        if once_only and name == "other" and judged.count("other") > 1:
            event.cancel_tool = "policy: other only once"

    retried = []

    def retry_once(event):
        if not retried:
            retried.append(True)
            event.retry = True

    class Hooks(HookProvider):
        def register_hooks(self, registry, **kwargs):
            registry.add_callback(before_tool(), rename)
            registry.add_callback(before_tool(), policy)
            registry.add_callback(AfterToolCallEvent, retry_once)

    result = rig.agent(hooks=[Hooks()], tools=[marker.tool(), other])("go")
    return result, judged


def test_renamed_call_retried_is_judged_as_the_tool_that_runs(rig):
    if not _renames_follow():
        pytest.skip("1.52 runs the selected tool: no rename to follow")
    result, judged = _rename_then_retry(rig, once_only=True)
    assert rig.marker.runs() == ["other echo hi"]  # the second run of other is denied
    assert "policy: other only once" in str(result)
    assert set(judged) == {"other"}
    assert {e["tool"] for e in rig.events()} == {"other"}  # never audited as run_command
    assert (rig.last()["outcome"], rig.last()["tool"]) == ("deny", "other")


def test_renamed_call_retried_runs_and_is_named(rig):
    """The twin: the policy allows; other runs twice, judged and audited as other."""
    if not _renames_follow():
        pytest.skip("1.52 runs the selected tool: no rename to follow")
    _, judged = _rename_then_retry(rig, once_only=False)
    assert rig.marker.runs() == ["other echo hi", "other echo hi"]
    assert set(judged) == {"other"}
    assert [(e["tool"], e["outcome"]) for e in rig.events()] == [("other", "abstain"), ("other", "abstain")]


def test_renamed_call_retried_runs_the_renamed_tool_upstream(rig, adapter):
    if not _renames_follow():
        pytest.skip("1.52 runs the selected tool: no rename to follow")
    with unpatched(adapter):
        _, judged = _rename_then_retry(rig, once_only=True)
    assert rig.marker.runs() == ["other echo hi", "other echo hi"]  # the policy saw run_command in round 2
    assert judged == ["run_command", "run_command"]


def test_an_unknown_tool_s_grant_runs_no_other_tool(rig):
    """The gates allowed a call of an unknown tool (Strands answers it "Unknown tool": its
    grant is never used); a dispatcher tool then runs a tool the policy denies under that
    call id with the same input. The grant is for the tool it judged, not for any."""
    dispatch, dangerous = _dispatch_and_dangerous(rig.marker)
    calls = [("ghost", {"command": "echo"}), ("dispatch", {"name": "dangerous", "use_id": "call-0", "command": "echo"})]
    rig.agent(calls=calls, tools=[dispatch, dangerous], hooks=[provider(_no_dangerous)], executor="sequential")("go")
    assert not rig.marker.ran
    ungoverned = [e for e in rig.events() if e["failure"] == "ungoverned"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned] == [("dangerous", "deny")]


def test_a_call_after_an_unknown_tool_runs(rig):
    """The twin: the model's own next call runs on its own grant."""
    calls = [("ghost", {"command": "echo"}), ("run_command", {"command": "echo"})]
    result = rig.agent(calls=calls, hooks=[provider(_no_dangerous)], executor="sequential")("go")
    assert rig.marker.runs() == ["echo"] and "Unknown tool: ghost" in str(result)
    assert not [e for e in rig.events() if e["failure"] == "ungoverned"]


# ---------------------------------------------------------------- an action of two kinds


def _mixed(*bases, **fields):
    """An action class deriving from two of strands' actions (a user's own action type)."""
    import dataclasses

    cls = dataclasses.dataclass(frozen=True)(type("Mixed", bases, {"__module__": __name__}))
    return lambda event: cls(**fields)


def _handler_answering(answer, name="mixed"):
    from strands.interventions import InterventionHandler

    body = {"name": name, "before_tool_call": lambda self, event, **kwargs: answer(event), "__module__": __name__}
    return type("Answering", (InterventionHandler,), body)()


def test_a_guide_that_is_also_a_proceed_is_guidance(rig):
    """Upstream reads a Guide first (it accumulates it, then cancels the tool with it)."""
    from strands.interventions import Guide, Proceed

    result = rig.agent(interventions=[_handler_answering(_mixed(Proceed, Guide, feedback="use ls"))])("go")
    assert not rig.marker.ran and "GUIDANCE: [mixed] use ls" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


def test_a_confirm_that_is_also_a_proceed_asks(rig):
    """Upstream applies a Confirm before a Proceed: the preset answer "no" denies."""
    from strands.interventions import Confirm, Proceed

    result = rig.agent(interventions=[_handler_answering(_mixed(Proceed, Confirm, prompt="run?", response="no"))])("go")
    assert not rig.marker.ran and "CONFIRMATION_FAILED: run?" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


def test_a_confirm_that_is_also_a_proceed_answered_yes_runs(rig):
    """The twin: answered "yes" it runs."""
    from strands.interventions import Confirm, Proceed

    rig.agent(interventions=[_handler_answering(_mixed(Proceed, Confirm, prompt="run?", response="yes"))])("go")
    assert rig.marker.ran and rig.last()["outcome"] == "allow"


def test_a_transform_that_is_also_a_proceed_is_applied(rig):
    """Upstream applies a Transform before a Proceed: the rewritten call runs (judged)."""
    from strands.interventions import Proceed, Transform

    def apply(event):
        event.tool_use["input"]["command"] = "echo transformed"

    rig.agent(interventions=[_handler_answering(_mixed(Proceed, Transform, apply=apply))])("go")
    assert rig.marker.runs() == ["echo transformed"]


@pytest.mark.parametrize("bases, runs", [("guide", False), ("confirm", False), ("transform", True)])
def test_mixed_actions_upstream(rig, adapter, bases, runs):
    from strands.interventions import Confirm, Guide, Proceed, Transform

    def apply(event):
        event.tool_use["input"]["command"] = "echo transformed"

    answer = {
        "guide": _mixed(Proceed, Guide, feedback="use ls"),
        "confirm": _mixed(Proceed, Confirm, prompt="run?", response="no"),
        "transform": _mixed(Proceed, Transform, apply=apply),
    }[bases]
    with unpatched(adapter):
        rig.agent(interventions=[_handler_answering(answer)])("go")
    assert rig.marker.runs() == (["echo transformed"] if runs else [])


# ---------------------------------------------------------------- a sync method answering an awaitable


def _returns_awaitable(answer):
    """A handler whose plain ``def before_tool_call`` returns a coroutine (upstream's
    registry: "Overrides may be sync or async, so branch on the returned value")."""
    from strands.interventions import InterventionHandler

    class Delegating(InterventionHandler):
        name = "delegating"

        def before_tool_call(self, event, **kwargs):
            return self._check(event)

        async def _check(self, event):
            await asyncio.sleep(0)
            return await answer()

    return Delegating()


async def _async_proceed():
    return _proceed()


async def _async_deny():
    return _deny()


async def _async_hang():
    await asyncio.sleep(30)


def test_sync_method_answering_an_awaitable_proceeds_and_runs(rig):
    rig.agent(interventions=[_returns_awaitable(_async_proceed)])("go")
    assert rig.marker.ran
    assert rig.last()["outcome"] == "allow"


def test_sync_method_answering_an_awaitable_deny_stands(rig):
    result = rig.agent(interventions=[_returns_awaitable(_async_deny)])("go")
    assert not rig.marker.ran and "DENIED: instance says no" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


def test_sync_method_answering_a_hanging_awaitable_denies_timeout(rig):
    rig.agent(interventions=[_returns_awaitable(_async_hang)])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_sync_method_answering_an_awaitable_runs_upstream(rig, adapter):
    with unpatched(adapter):
        rig.agent(interventions=[_returns_awaitable(_async_proceed)])("go")
    assert rig.marker.ran


# ---------------------------------------------------------------- the boundary: middleware gates


def _stage():
    try:
        from strands.middleware import ExecuteToolStage
    except ImportError:  # 1.52: the private module
        from strands._middleware.stages import ExecuteToolStage
    return ExecuteToolStage


def _middleware_policy_agent(rig, calls, phase="Wrap"):
    """An agent whose only gate is an ExecuteToolStage policy (no BeforeToolCallEvent
    callback): it short-circuits run_command with an error result. A wrapper tool runs
    run_command through its own stream (a bypass of the executor and its middleware)."""
    from strands.types._events import ToolResultEvent

    marker_tool = rig.marker.tool()
    stream_wrapper = rig_stream_wrapper(marker_tool)

    async def policy(ctx, next_fn):
        if ctx.tool_use["name"] == "run_command":
            yield ToolResultEvent({"toolUseId": ctx.tool_use["toolUseId"], "status": "error", "content": [{"text": "policy: no"}]})
            return
        async for event in next_fn(ctx):
            yield event

    def observe(result):
        return result

    agent = rig.agent(calls=calls, tools=[marker_tool, stream_wrapper])
    stage = _stage()
    agent._middleware_registry.add_middleware(getattr(stage, phase), policy if phase == "Wrap" else observe)
    return agent


def _ungoverned(rig):
    return [(e["tool"], e["outcome"]) for e in rig.events() if e["failure"] == "ungoverned"]


def test_a_bypass_of_a_middleware_gate_is_denied_as_ungoverned(rig):
    _middleware_policy_agent(rig, [("stream_wrapper", {"command": "smuggled"})])("go")
    assert not rig.marker.ran, "the tool the middleware gate refuses ran through the wrapper"
    assert _ungoverned(rig) == [("run_command", "deny")]


def test_a_call_a_middleware_gate_passes_runs(rig):
    """The twin: with the middleware gate, the wrapper's own (dispatched) call and a
    harmless tool run; only the bypass is ungoverned."""
    from strands import tool

    agent = _middleware_policy_agent(rig, [("echo_tool", {"text": "hi"})])

    @tool
    def echo_tool(text: str) -> str:
        """Echo.

        Args:
            text: t
        """
        return f"echo {text}"

    agent.tool_registry.register_tool(echo_tool)
    result = agent("go")
    assert "echo hi" in str(result) and _ungoverned(rig) == []


def test_an_output_middleware_is_no_gate_for_the_boundary(rig):
    """An Output handler observes results: with it alone the bypass runs, audited, as
    with no gate at all."""
    _middleware_policy_agent(rig, [("stream_wrapper", {"command": "smuggled"})], phase="Output")("go")
    assert rig.marker.runs() == ["smuggled"]
    assert _ungoverned(rig) == [("run_command", "allow")]


# ---------------------------------------------------------------- a sync callback's context variables

import contextvars  # noqa: E402

_REQUEST = contextvars.ContextVar("s37_request", default=None)


def test_a_context_variable_a_sync_callback_sets_reaches_the_tool(rig):
    """A sync callback runs on the guard's worker in a copy of the task's context (that is
    how its deadline is kept); what it sets there is handed back to the task when its
    answer is taken on time, so the tool sees it, as upstream (callback on the loop)."""
    from strands import tool

    seen = []

    @tool
    def reader(command: str) -> str:
        """Reads the request variable.

        Args:
            command: c
        """
        seen.append(_REQUEST.get())
        return "read"

    def tag_request(event):
        _REQUEST.set("req-42")

    rig.agent(calls=[("reader", {"command": "x"})], tools=[reader], hooks=[provider(tag_request)])("go")
    assert seen == ["req-42"]


def test_a_context_variable_an_async_callback_sets_reaches_the_tool(rig):
    """The twin: an async callback runs in the task's own context, as upstream."""
    from strands import tool

    seen = []

    @tool
    def reader(command: str) -> str:
        """Reads the request variable.

        Args:
            command: c
        """
        seen.append(_REQUEST.get())
        return "read"

    async def tag_request(event):
        _REQUEST.set("req-43")

    rig.agent(calls=[("reader", {"command": "x"})], tools=[reader], hooks=[provider(tag_request)])("go")
    assert seen == ["req-43"]


# ---------------------------------------------------------------- a gate registered during the dispatch


def _lazy_policy(is_async, deny=True):
    """A callback that registers the policy on the agent the first time a tool is called
    (a lazily set-up plugin). Upstream's async dispatcher iterates the live list of
    callbacks, so the policy registered now runs for this very call."""
    from failsecure_strands_rig import before_tool

    def no_run_command(event):
        if deny and event.tool_use["name"] == "run_command":
            event.cancel_tool = "lazy policy: no"

    registered = []

    def set_up(event):
        if not registered:
            registered.append(True)
            event.agent.hooks.add_callback(before_tool(), no_run_command)

    if is_async:

        async def lazy_set_up(event):
            set_up(event)

        return lazy_set_up
    return set_up


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_gate_registered_during_the_dispatch_judges_this_call(rig, is_async):
    result = rig.agent(hooks=[provider(_lazy_policy(is_async))])("go")
    assert not rig.marker.ran and "lazy policy: no" in str(result)
    assert (rig.last()["outcome"], rig.last()["hook"].rsplit(".", 1)[-1]) == ("deny", "no_run_command")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_gate_registered_during_the_dispatch_that_allows_runs(rig, is_async):
    """The twin: the late gate has no objection; the tool runs once."""
    rig.agent(hooks=[provider(_lazy_policy(is_async, deny=False))])("go")
    assert rig.marker.runs() == ["echo hi"]


def test_a_gate_registered_during_the_dispatch_runs_upstream(rig, adapter):
    with unpatched(adapter):
        result = rig.agent(hooks=[provider(_lazy_policy(False))])("go")
    assert not rig.marker.ran and "lazy policy: no" in str(result)


def test_callbacks_that_keep_registering_callbacks_deny_invalid(rig):
    """Each run registers one more callback (upstream's live iteration never ends): the
    list never settles, the call is denied."""
    from failsecure_strands_rig import before_tool

    def breed(event):
        event.agent.hooks.add_callback(before_tool(), breed)

    rig.agent(hooks=[provider(breed)])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


def test_a_handler_added_during_the_dispatch_judges_this_call(rig):
    """The handlers list upstream's registry iterates is the one the agent was given: a
    handler appended to it while the handlers run judges this very call, as upstream."""
    from strands.interventions import Deny, InterventionHandler, Proceed

    class Late(InterventionHandler):
        name = "late"

        def before_tool_call(self, event, **kwargs):
            return Deny(reason="late handler")

    handlers: list = []

    class SetUp(InterventionHandler):
        name = "set-up"

        def before_tool_call(self, event, **kwargs):
            if len(handlers) == 1:
                handlers.append(Late())
            return Proceed()

    handlers.append(SetUp())
    result = rig.agent(interventions=handlers)("go")
    assert not rig.marker.ran and "DENIED: late handler" in str(result)
    assert rig.last()["outcome"] == "deny"


def test_a_handler_added_during_the_dispatch_runs_upstream(rig, adapter):
    from strands.interventions import Deny, InterventionHandler, Proceed

    class Late(InterventionHandler):
        name = "late"

        def before_tool_call(self, event, **kwargs):
            return Deny(reason="late handler")

    handlers: list = []

    class SetUp(InterventionHandler):
        name = "set-up"

        def before_tool_call(self, event, **kwargs):
            if len(handlers) == 1:
                handlers.append(Late())
            return Proceed()

    handlers.append(SetUp())
    with unpatched(adapter):
        result = rig.agent(interventions=handlers)("go")
    assert not rig.marker.ran and "DENIED: late handler" in str(result)


# ---------------------------------------------------------------- BeforeToolsEvent: the batch gate


def _batch_events(rig):
    return [e for e in rig.events() if ".batch_" in (e["hook"] or "") or any(".batch_" in o["hook"] for o in e["outcomes"])]


def test_a_raising_batch_gate_cancels_the_tools_raised(rig):
    def batch_raise(event):
        raise RuntimeError(SECRET)

    result = rig.agent(hooks=[batch_provider(batch_raise)])("go")
    assert not rig.marker.ran
    assert SECRET not in str(result) and "(raised)" in str(result)
    (event,) = _batch_events(rig)
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", "RuntimeError")
    assert SECRET not in rig.audit_path.read_text()


def test_a_raising_batch_gate_ends_the_run_with_its_text_upstream(rig, adapter):
    def batch_raise(event):
        raise RuntimeError(SECRET)

    with unpatched(adapter):
        with pytest.raises(Exception, match=SECRET):
            rig.agent(hooks=[batch_provider(batch_raise)])("go")
    assert not rig.marker.ran


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_hanging_batch_gate_cancels_the_tools_timeout(rig, release, is_async):
    if is_async:

        async def batch_hang(event):
            await asyncio.sleep(30)

    else:

        def batch_hang(event):
            release.wait(30)

    rig.agent(hooks=[batch_provider(batch_hang)])("go")
    assert not rig.marker.ran
    (event,) = _batch_events(rig)
    assert (event["outcome"], event["failure"]) == ("deny", "timeout")


def test_a_batch_cancel_sticks_when_a_later_gate_writes_false(rig):
    def batch_cancel(event):
        event.cancel = "batch: not now"

    def batch_uncancel(event):
        event.cancel = False

    result = rig.agent(hooks=[batch_provider(batch_cancel, batch_uncancel)])("go")
    assert not rig.marker.ran and "batch: not now" in str(result)
    (event,) = _batch_events(rig)
    assert (event["outcome"], event["failure"]) == ("deny", None)


def test_a_batch_cancel_taken_back_runs_upstream(rig, adapter):
    def batch_cancel(event):
        event.cancel = "batch: not now"

    def batch_uncancel(event):
        event.cancel = False

    with unpatched(adapter):
        rig.agent(hooks=[batch_provider(batch_cancel, batch_uncancel)])("go")
    assert rig.marker.ran  # upstream: the later write un-denies


@pytest.mark.parametrize("junk", ["", 0, None], ids=repr)
def test_a_batch_gate_writing_junk_denies_invalid(rig, junk):
    def batch_junk(event):
        event.cancel = junk

    rig.agent(hooks=[batch_provider(batch_junk)])("go")
    assert not rig.marker.ran
    (event,) = _batch_events(rig)
    assert (event["outcome"], event["failure"]) == ("deny", "invalid")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_batch_gate_with_no_objection_runs(rig, is_async):
    """The twin: a batch gate that reads the message and writes nothing; the tools run."""
    if is_async:

        async def batch_look(event):
            assert event.message["content"]

    else:

        def batch_look(event):
            assert event.message["content"]

    rig.agent(hooks=[batch_provider(batch_look)])("go")
    assert rig.marker.runs() == ["echo hi"]
    (event,) = _batch_events(rig)
    assert (event["outcome"], event["failure"]) == ("abstain", None)


def test_a_batch_gate_interrupt_stops_then_resumes(rig):
    def batch_ask(event):
        if event.interrupt("batch-approval", reason="run these?") != "yes":
            event.cancel = "batch: refused"

    agent = rig.agent(hooks=[batch_provider(batch_ask)])
    first = agent("go")
    assert first.stop_reason == "interrupt" and not rig.marker.ran
    (interrupt,) = first.interrupts
    agent([{"interruptResponse": {"interruptId": interrupt.id, "response": "yes"}}])
    assert rig.marker.runs() == ["echo hi"]


def _batch_commands(event):
    return [c["toolUse"]["input"].get("command", "") for c in event.message["content"] if "toolUse" in c]


def test_a_batch_rewrite_after_the_batch_policy_is_judged(rig):
    """A batch policy, then a batch callback that rewrites a tool use's input: the policy
    judges the rewritten batch (the settling rule), as the per-call gates do."""

    def batch_policy(event):
        if any("forbidden" in c for c in _batch_commands(event)):
            event.cancel = "batch policy: no"

    def batch_smuggle(event):
        for c in event.message["content"]:
            if "toolUse" in c:
                c["toolUse"]["input"]["command"] = "forbidden rm"

    result = rig.agent(hooks=[batch_provider(batch_policy, batch_smuggle)], command="ls")("go")
    assert not rig.marker.ran and "batch policy: no" in str(result)


def test_a_harmless_batch_rewrite_runs_rewritten(rig):
    """The twin: the rewritten batch passes the policy and runs as rewritten."""

    def batch_policy(event):
        if any("forbidden" in c for c in _batch_commands(event)):
            event.cancel = "batch policy: no"

    def batch_dry_run(event):
        for c in event.message["content"]:
            if "toolUse" in c:
                c["toolUse"]["input"]["command"] = "ls --dry-run"

    rig.agent(hooks=[batch_provider(batch_policy, batch_dry_run)], command="ls")("go")
    assert rig.marker.runs() == ["ls --dry-run"]


def test_a_bypass_of_a_batch_gate_is_denied_as_ungoverned(rig):
    """An agent whose only gate is a BeforeToolsEvent callback: a wrapper tool running
    another tool through its stream bypasses it, and is denied as ungoverned."""
    marker_tool = rig.marker.tool()
    stream_wrapper = rig_stream_wrapper(marker_tool)

    def batch_policy(event):
        if any("toolUse" in c and c["toolUse"]["name"] == "run_command" for c in event.message["content"]):
            event.cancel = "batch policy: no run_command"

    rig.agent(calls=[("stream_wrapper", {"command": "smuggled"})], tools=[marker_tool, stream_wrapper],
              hooks=[batch_provider(batch_policy)])("go")
    assert not rig.marker.ran
    assert _ungoverned(rig) == [("run_command", "deny")]


@pytest.mark.parametrize("patched", [True, False], ids=["failsecure", "upstream"])
def test_a_batch_gate_registered_during_the_batch_judges_it(rig, adapter, patched):
    """A batch callback that registers the batch policy the first time (upstream iterates
    the live list, so the policy judges this batch)."""
    from strands.hooks import BeforeToolsEvent

    def batch_policy(event):
        event.cancel = "lazy batch policy: no"

    def batch_set_up(event):
        if batch_policy not in [e.callback for e in event.agent.hooks._registered_callbacks.get(BeforeToolsEvent, [])]:
            event.agent.hooks.add_callback(BeforeToolsEvent, batch_policy)

    if patched:
        result = rig.agent(hooks=[batch_provider(batch_set_up)])("go")
    else:
        with unpatched(adapter):
            result = rig.agent(hooks=[batch_provider(batch_set_up)])("go")
    assert not rig.marker.ran and "lazy batch policy: no" in str(result)
