"""The Strands batch gate and the gates registered during the dispatch or the run.
Each deny asserts its failure category and has an allow twin; the upstream twins show
what Strands itself does."""

import pytest

from failsecure_strands_rig import batch_provider, before_tool, provider, stream_wrapper


def unpatched(adapter):
    class Ctx:
        def __enter__(self):
            adapter.unpatch()

        def __exit__(self, *exc):
            assert adapter.patch() == "patched"

    return Ctx()


def _event_kind(batch):
    if batch:
        from strands.hooks import BeforeToolsEvent

        return BeforeToolsEvent
    return before_tool()


def _per_event_set_up(batch, deny):
    """A callback that registers a fresh one-shot callback each time it runs (a per-event
    helper: upstream runs it once per event, the list growing by one each event). The
    one-shot one cancels when ``deny``."""
    kind = _event_kind(batch)
    field = "cancel" if batch else "cancel_tool"

    def set_up(event):
        def one_shot(ev):
            if deny:
                setattr(ev, field, "one-shot: no")

        event.agent.hooks.add_callback(kind, one_shot)

    return batch_provider(set_up) if batch else provider(set_up)


def _set_up_events(rig):
    return [e for e in rig.events() if any(".set_up" in o["hook"] or ".set_up_policy" in o["hook"] for o in e["outcomes"])]


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_callback_registering_a_callback_each_run_runs(rig, batch):
    """Upstream runs the set-up once and the one-shot once for this event: a list that
    changed once is no list that keeps growing (the already-run set-up is not run again,
    so it does not register again)."""
    agent = rig.agent(hooks=[_per_event_set_up(batch, deny=False)])
    agent("go")
    assert rig.marker.runs() == ["echo hi"]
    (event,) = _set_up_events(rig)
    assert (event["outcome"], event["failure"]) == ("abstain", None)


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_callback_registered_each_run_that_cancels_denies(rig, batch):
    """The deny twin: the one-shot registered mid-dispatch cancels, and judges this call."""
    result = rig.agent(hooks=[_per_event_set_up(batch, deny=True)])("go")
    assert not rig.marker.ran and "one-shot: no" in str(result)
    (event,) = _set_up_events(rig)
    assert (event["outcome"], event["failure"]) == ("deny", None)


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_callback_registering_a_callback_each_run_runs_upstream(rig, adapter, batch):
    with unpatched(adapter):
        rig.agent(hooks=[_per_event_set_up(batch, deny=False)])("go")
    assert rig.marker.runs() == ["echo hi"]


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_chain_of_callbacks_registering_callbacks_denies_invalid(rig, batch):
    """Each newly registered callback registers another: the list never settles (invalid)."""
    kind = _event_kind(batch)

    def chain(event):
        event.agent.hooks.add_callback(kind, chain_next())

    def chain_next():
        def link(event):
            event.agent.hooks.add_callback(kind, chain_next())

        return link

    rig.agent(hooks=[batch_provider(chain) if batch else provider(chain)])("go")
    assert not rig.marker.ran
    (event,) = rig.events()
    assert (event["outcome"], event["failure"]) == ("deny", "invalid")


def _policy_setting_up_a_rewriter(batch, command):
    """The policy registers a callback the first time it runs (a lazily set-up plugin);
    that callback rewrites the command to ``command``: the policy, which ran already,
    judges the rewritten call (the settling rule across the relisting)."""
    kind = _event_kind(batch)
    registered = []

    def rewrite(event):
        uses = [c["toolUse"] for c in event.message["content"] if "toolUse" in c] if batch else [event.tool_use]
        for use in uses:
            use["input"]["command"] = command

    def set_up_policy(event):
        uses = [c["toolUse"] for c in event.message["content"] if "toolUse" in c] if batch else [event.tool_use]
        if any("forbidden" in use["input"].get("command", "") for use in uses):
            setattr(event, "cancel" if batch else "cancel_tool", "policy: forbidden")
        if not registered:
            registered.append(True)
            event.agent.hooks.add_callback(kind, rewrite)

    return batch_provider(set_up_policy) if batch else provider(set_up_policy)


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_rewrite_by_a_callback_registered_mid_dispatch_is_judged(rig, batch):
    result = rig.agent(hooks=[_policy_setting_up_a_rewriter(batch, "forbidden rm")], command="ls")("go")
    assert not rig.marker.ran and "policy: forbidden" in str(result)
    (event,) = _set_up_events(rig)
    assert (event["outcome"], event["failure"]) == ("deny", None)


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_harmless_rewrite_by_a_callback_registered_mid_dispatch_runs(rig, batch):
    rig.agent(hooks=[_policy_setting_up_a_rewriter(batch, "ls --dry-run")], command="ls")("go")
    assert rig.marker.runs() == ["ls --dry-run"]


# ---------------------------------------------------------------- the boundary: a gate registered during the run


def _lazy_gate_provider(batch, allow=False):
    """A hook provider that registers its policy the first time the run starts (a lazily
    set-up plugin): at the run's entry the agent has no gate yet."""
    import strands.hooks as hooks

    def batch_policy(event):
        if not allow and any("toolUse" in c and c["toolUse"]["name"] == "run_command" for c in event.message["content"]):
            event.cancel = "batch policy: no run_command"

    def call_policy(event):
        if not allow and event.tool_use["name"] == "run_command":
            event.cancel_tool = "policy: no run_command"

    done = []

    def lazy(event):
        if not done:
            done.append(True)
            if batch:
                event.agent.hooks.add_callback(hooks.BeforeToolsEvent, batch_policy)
            else:
                event.agent.hooks.add_callback(hooks.BeforeToolCallEvent, call_policy)

    class Lazy(hooks.HookProvider):
        def register_hooks(self, registry, **kwargs):
            registry.add_callback(hooks.BeforeInvocationEvent, lazy)

    return Lazy()


def _ungoverned(rig):
    return [(e["tool"], e["outcome"]) for e in rig.events() if e["failure"] == "ungoverned"]


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_bypass_of_a_gate_registered_during_the_run_is_denied_as_ungoverned(rig, batch):
    """The gate registered at BeforeInvocationEvent is in force once it gates a call: a
    wrapper tool running another tool's stream bypasses it and is denied as ungoverned
    (it was allowed: the run's entry had seen no gate)."""
    marker_tool = rig.marker.tool()
    rig.agent(calls=[("stream_wrapper", {"command": "smuggled"})], tools=[marker_tool, stream_wrapper(marker_tool)],
              hooks=[_lazy_gate_provider(batch)])("go")
    assert not rig.marker.ran
    assert _ungoverned(rig) == [("run_command", "deny")]


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_call_a_gate_registered_during_the_run_passes_runs(rig, batch):
    """The twin: the lazily registered gate has no objection; the tool the model called
    runs through the executor (no ungoverned call)."""
    rig.agent(hooks=[_lazy_gate_provider(batch, allow=True)])("go")
    assert rig.marker.runs() == ["echo hi"]
    assert _ungoverned(rig) == []


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_gate_registered_during_the_run_denies_the_executor_s_call(rig, batch):
    """The gate registered during the run judges the model's own call."""
    result = rig.agent(hooks=[_lazy_gate_provider(batch)])("go")
    assert not rig.marker.ran and "no run_command" in str(result)


def _asking_gate_setting_up_a_rewriter(batch):
    """A gate that asks a human and, the first time, registers a callback that rewrites
    the command (harmless): the gate asks again on the rewritten call, one interrupt."""
    kind = _event_kind(batch)
    registered = []

    def rewrite(event):
        uses = [c["toolUse"] for c in event.message["content"] if "toolUse" in c] if batch else [event.tool_use]
        for use in uses:
            use["input"]["command"] = "ls --dry-run"

    def set_up_ask(event):
        if not registered:
            registered.append(True)
            event.agent.hooks.add_callback(kind, rewrite)
        if event.interrupt("approve", reason="run it?") != "yes":
            setattr(event, "cancel" if batch else "cancel_tool", "refused")

    return batch_provider(set_up_ask) if batch else provider(set_up_ask)


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_an_asking_gate_that_judges_a_rewrite_again_asks_once(rig, batch):
    agent = rig.agent(hooks=[_asking_gate_setting_up_a_rewriter(batch)], command="ls")
    first = agent("go")
    assert first.stop_reason == "interrupt" and not rig.marker.ran
    (interrupt,) = first.interrupts
    agent([{"interruptResponse": {"interruptId": interrupt.id, "response": "yes"}}])
    assert rig.marker.runs() == ["ls --dry-run"]


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_an_asking_gate_that_judges_a_rewrite_again_refused_denies(rig, batch):
    agent = rig.agent(hooks=[_asking_gate_setting_up_a_rewriter(batch)], command="ls")
    (interrupt,) = agent("go").interrupts
    result = agent([{"interruptResponse": {"interruptId": interrupt.id, "response": "no"}}])
    assert not rig.marker.ran and "refused" in str(result)


def _stage():
    try:
        from strands.middleware import ExecuteToolStage
    except ImportError:  # 1.52: the private module
        from strands._middleware.stages import ExecuteToolStage
    return ExecuteToolStage


def _lazy_middleware_provider(allow=False):
    """A hook provider that adds its ExecuteToolStage Wrap policy the first time the run
    starts: at the run's entry the agent has no gate yet."""
    import strands.hooks as hooks
    from strands.types._events import ToolResultEvent

    async def policy(ctx, next_fn):
        if not allow and ctx.tool_use["name"] == "run_command":
            yield ToolResultEvent({"toolUseId": ctx.tool_use["toolUseId"], "status": "error", "content": [{"text": "policy: no"}]})
            return
        async for event in next_fn(ctx):
            yield event

    done = []

    def lazy(event):
        if not done:
            done.append(True)
            event.agent._middleware_registry.add_middleware(_stage().Wrap, policy)

    class Lazy(hooks.HookProvider):
        def register_hooks(self, registry, **kwargs):
            registry.add_callback(hooks.BeforeInvocationEvent, lazy)

    return Lazy()


def test_a_bypass_of_a_middleware_gate_added_during_the_run_is_denied_as_ungoverned(rig):
    marker_tool = rig.marker.tool()
    rig.agent(calls=[("stream_wrapper", {"command": "smuggled"})], tools=[marker_tool, stream_wrapper(marker_tool)],
              hooks=[_lazy_middleware_provider()])("go")
    assert not rig.marker.ran
    assert _ungoverned(rig) == [("run_command", "deny")]


def test_a_call_a_middleware_gate_added_during_the_run_passes_runs(rig):
    rig.agent(hooks=[_lazy_middleware_provider(allow=True)])("go")
    assert rig.marker.runs() == ["echo hi"]
    assert _ungoverned(rig) == []


def _swapping_set_up(batch, deny):
    """A callback that replaces its helper each time it runs (removes the one it added
    before, adds a fresh one): the list's length stays, its content changes."""
    kind = _event_kind(batch)
    field = "cancel" if batch else "cancel_tool"
    added: list = []

    def set_up(event):
        entries = event.agent.hooks._registered_callbacks.get(kind, [])
        entries[:] = [e for e in entries if not any(e.callback is a for a in added)]

        def one_shot(ev):
            if deny:
                setattr(ev, field, "swapped helper: no")

        added.append(one_shot)
        event.agent.hooks.add_callback(kind, one_shot)

    return batch_provider(set_up) if batch else provider(set_up)


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_callback_swapping_its_helper_each_run_runs(rig, batch):
    agent = rig.agent(hooks=[_swapping_set_up(batch, deny=False)], calls=[("run_command", {"command": "a"})])
    agent("go")
    assert rig.marker.runs() == ["a"]
    (event,) = _set_up_events(rig)
    assert (event["outcome"], event["failure"]) == ("abstain", None)


@pytest.mark.parametrize("batch", [False, True], ids=["per-call", "batch"])
def test_a_callback_swapping_in_a_denying_helper_denies(rig, batch):
    result = rig.agent(hooks=[_swapping_set_up(batch, deny=True)])("go")
    assert not rig.marker.ran and "swapped helper: no" in str(result)


# ---------------------------------------------------------------- held attacks, kept as regressions

import asyncio  # noqa: E402


def _batch_events(rig):
    return [e for e in rig.events() if ".batch_" in (e["hook"] or "") or any(".batch_" in o["hook"] for o in e["outcomes"])]


class _StrSub(str):
    pass


class _Truthy:
    def __bool__(self):
        return True


@pytest.mark.parametrize("junk", [_StrSub("x"), b"no", _Truthy(), 1, ["x"]], ids=["str-subclass", "bytes", "truthy", "one", "list"])
def test_a_batch_gate_writing_truthy_junk_denies_invalid(rig, junk):
    """Upstream cancels on any truthy ``cancel`` (a ``str`` subclass's text reaching the
    model): junk, denied invalid, with failsecure's text."""

    def batch_junk(event):
        event.cancel = junk

    rig.agent(hooks=[batch_provider(batch_junk)])("go")
    assert not rig.marker.ran
    (event,) = _batch_events(rig)
    assert (event["outcome"], event["failure"]) == ("deny", "invalid")


@pytest.mark.parametrize("junk", [None, "s3cr3t-s38"], ids=["none", "text"])
def test_a_batch_gate_raising_a_junk_interrupt_denies_invalid(rig, junk):
    from strands.interrupt import InterruptException

    def batch_junk(event):
        raise InterruptException(junk)

    result = rig.agent(hooks=[batch_provider(batch_junk)])("go")
    assert not rig.marker.ran and "s3cr3t-s38" not in str(result)
    (event,) = _batch_events(rig)
    assert (event["outcome"], event["failure"]) == ("deny", "invalid")


class _Awaitable:
    """An awaitable that is no coroutine (``__await__`` only)."""

    def __init__(self, value, hang=False):
        self.value, self.hang = value, hang

    def __await__(self):
        if self.hang:
            yield from asyncio.sleep(30).__await__()
        yield from asyncio.sleep(0).__await__()
        return self.value


def _answering(make):
    from strands.interventions import InterventionHandler

    class Answering(InterventionHandler):
        name = "answering"

        def before_tool_call(self, event, **kwargs):
            return make()

    return Answering()


def _future(value):
    future = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


@pytest.mark.parametrize("kind", ["await-object", "future"])
def test_a_sync_handler_answering_a_non_coroutine_awaitable_proceeds_and_runs(rig, kind):
    from strands.interventions import Proceed

    rig.agent(interventions=[_answering(lambda: _Awaitable(Proceed()) if kind == "await-object" else _future(Proceed()))])("go")
    assert rig.marker.ran
    assert rig.last()["outcome"] == "allow"


@pytest.mark.parametrize("kind", ["await-object", "future"])
def test_a_sync_handler_answering_a_non_coroutine_awaitable_deny_stands(rig, kind):
    from strands.interventions import Deny

    rig.agent(interventions=[_answering(lambda: _Awaitable(Deny(reason="no")) if kind == "await-object" else _future(Deny(reason="no")))])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


@pytest.mark.parametrize("kind", ["await-object", "pending-future"])
def test_a_sync_handler_answering_a_hanging_non_coroutine_awaitable_denies_timeout(rig, kind):
    rig.agent(interventions=[_answering(lambda: _Awaitable(None, hang=True) if kind == "await-object"
                                        else asyncio.get_running_loop().create_future())])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")
