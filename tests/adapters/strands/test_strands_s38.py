"""Session 38 red team of the Strands batch gate and the gates registered mid-dispatch.
Each deny asserts its failure category and has an allow twin; the upstream twins show
what Strands itself does."""

import pytest

from failsecure_strands_rig import before_tool, provider


def unpatched(adapter):
    class Ctx:
        def __enter__(self):
            adapter.unpatch()

        def __exit__(self, *exc):
            assert adapter.patch() == "patched"

    return Ctx()


def _batch_provider(*callbacks):
    from strands.hooks import BeforeToolsEvent, HookProvider

    class Batch(HookProvider):
        def register_hooks(self, registry, **kwargs):
            for cb in callbacks:
                registry.add_callback(BeforeToolsEvent, cb)

    return Batch()


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

    return _batch_provider(set_up) if batch else provider(set_up)


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

    rig.agent(hooks=[_batch_provider(chain) if batch else provider(chain)])("go")
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

    return _batch_provider(set_up_policy) if batch else provider(set_up_policy)


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
