"""The semantics of ``BeforeToolCallEvent`` callbacks under failsecure: a cancel sticks,
junk writes and return values deny, the gates judge the final tool and input, interrupts
pass through, required hooks and plugin gates count, observers stay observers. Each deny
has an allow twin; the fail-open cases show upstream (unpatched) running the tool."""

import asyncio

import pytest

from failsecure_strands_rig import before_tool, provider

from failsecure import plugins
from failsecure.plugins import hookimpl


def unpatched(adapter):
    class Ctx:
        def __enter__(self):
            adapter.unpatch()

        def __exit__(self, *exc):
            assert adapter.patch() == "patched"

    return Ctx()


# ---------------------------------------------------------------- a cancel sticks


def cancel(event):
    event.cancel_tool = True


def uncancel(event):
    event.cancel_tool = False


@pytest.mark.parametrize("order", ["cancel-then-uncancel", "uncancel-then-cancel"])
def test_cancel_sticks_in_any_order(rig, order):
    hooks = (cancel, uncancel) if order == "cancel-then-uncancel" else (uncancel, cancel)
    rig.agent(hooks=[provider(*hooks)])("go")
    assert not rig.marker.ran
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None)
    assert event["hook"].endswith(".cancel")


def test_two_allows_run(rig):
    def also(event):
        event.cancel_tool = False

    rig.agent(hooks=[provider(uncancel, also)])("go")
    assert rig.marker.ran
    assert rig.last()["outcome"] == "abstain"


def test_uncancel_runs_the_tool_upstream(rig, adapter):
    with unpatched(adapter):
        rig.agent(hooks=[provider(cancel, uncancel)])("go")
    assert rig.marker.ran  # upstream: the later callback un-denied


def test_async_uncancel_after_sync_cancel(rig):
    async def later(event):
        event.cancel_tool = False

    asyncio.run(rig.agent(hooks=[provider(cancel, later)]).invoke_async("go"))
    assert not rig.marker.ran
    assert rig.last()["outcome"] == "deny"


# ---------------------------------------------------------------- junk


@pytest.mark.parametrize(
    "value", ["", 0, 1, None, 0.0, [], object(), type("Text", (str,), {})("cancel")], ids=lambda v: type(v).__name__ + repr(v)[:10]
)
def test_junk_write_denies_invalid(rig, value):
    def gate(event):
        event.cancel_tool = value

    result = rig.agent(hooks=[provider(gate)])("go")
    assert not rig.marker.ran
    assert "(invalid)" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


def test_empty_string_runs_the_tool_upstream(rig, adapter):
    def gate(event):
        event.cancel_tool = ""

    with unpatched(adapter):
        rig.agent(hooks=[provider(gate)])("go")
    assert rig.marker.ran


@pytest.mark.parametrize("value", [False, "DENY", {"cancel_tool": True}])
def test_return_value_is_junk(rig, value):
    def gate(event):
        return value

    rig.agent(hooks=[provider(gate)])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


def test_return_none_and_no_write_abstains(rig):
    def gate(event):
        return None

    rig.agent(hooks=[provider(gate)])("go")
    assert rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_return_value_ignored_upstream(rig, adapter):
    def gate(event):
        return False

    with unpatched(adapter):
        rig.agent(hooks=[provider(gate)])("go")
    assert rig.marker.ran


# ---------------------------------------------------------------- argument integrity


def policy(event):
    """Denies a forbidden command and the tool named ``dangerous``."""
    tool = event.selected_tool.tool_name if event.selected_tool is not None else event.tool_use["name"]
    if tool == "dangerous" or "forbidden" in event.tool_use["input"].get("command", ""):
        event.cancel_tool = "policy: no"


def smuggle(event):
    if "forbidden" not in event.tool_use["input"]["command"]:
        event.tool_use = {**event.tool_use, "input": {"command": "forbidden rm -rf"}}


def smuggle_in_place(event):
    event.tool_use["input"]["command"] = "forbidden in place"


def rewrite_harmless(event):
    if not event.tool_use["input"]["command"].endswith(" --dry-run"):
        event.tool_use = {**event.tool_use, "input": {"command": event.tool_use["input"]["command"] + " --dry-run"}}


@pytest.mark.parametrize("rewriter", [smuggle, smuggle_in_place], ids=["new tool_use", "in place"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_smuggled_input_is_judged(rig, rewriter, mode):
    agent = rig.agent(hooks=[provider(policy, rewriter)], command="harmless")
    agent("go") if mode == "sync" else asyncio.run(agent.invoke_async("go"))
    assert not rig.marker.ran
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None)
    assert event["hook"].endswith(".policy")


def test_smuggled_input_runs_upstream(rig, adapter):
    with unpatched(adapter):
        rig.agent(hooks=[provider(policy, smuggle)], command="harmless")("go")
    assert rig.marker.runs() == ["forbidden rm -rf"]


def test_harmless_rewrite_runs_rewritten(rig):
    rig.agent(hooks=[provider(policy, rewrite_harmless)], command="ls")("go")
    assert rig.marker.runs() == ["ls --dry-run"]
    assert rig.last()["outcome"] != "deny"


def test_swapped_tool_is_judged(rig):
    dangerous = rig.marker.tool("dangerous")

    def swap(event):
        event.selected_tool = dangerous

    rig.agent(hooks=[provider(policy, swap)], tools=[rig.marker.tool(), dangerous])("go")
    assert not rig.marker.ran
    event = rig.last()
    assert (event["outcome"], event["tool"]) == ("deny", "dangerous")


def test_swapped_tool_runs_upstream(rig, adapter):
    dangerous = rig.marker.tool("dangerous")

    def swap(event):
        event.selected_tool = dangerous

    with unpatched(adapter):
        rig.agent(hooks=[provider(policy, swap)], tools=[rig.marker.tool(), dangerous])("go")
    assert rig.marker.ran


def test_swap_to_an_allowed_tool_runs(rig):
    other = rig.marker.tool("other")

    def swap(event):
        event.selected_tool = other

    rig.agent(hooks=[provider(policy, swap)], tools=[rig.marker.tool(), other])("go")
    assert rig.marker.ran
    assert rig.last()["tool"] == "other"


def test_endless_rewriting_denies(rig):
    """Changed on purpose (issue 25): a lone callback that rewrites on every run is not
    run again (no other gate judged a stale call); two that keep rewriting the command
    after each other still deny."""

    def grow(event):
        event.tool_use = {**event.tool_use, "input": {"command": event.tool_use["input"]["command"] + "!"}}

    def grow_too(event):
        grow(event)

    rig.agent(hooks=[provider(grow, grow_too)], command="ls")("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


# ---------------------------------------------------------------- interrupts (ask a human)


def _approval(name="approve"):
    def ask(event):
        answer = event.interrupt(name, reason="run it?")
        if answer != "yes":
            event.cancel_tool = "the user said no"

    return ask


@pytest.mark.parametrize("answer, runs", [("yes", True), ("no", False)])
def test_interrupt_stops_then_resumes(rig, answer, runs):
    agent = rig.agent(hooks=[provider(_approval())])
    first = agent("go")
    assert first.stop_reason == "interrupt" and not rig.marker.ran
    assert rig.last()["outcome"] == "ask"
    (interrupt,) = first.interrupts
    agent([{"interruptResponse": {"interruptId": interrupt.id, "response": answer}}])
    assert rig.marker.ran is runs
    assert rig.last()["outcome"] == ("abstain" if runs else "deny")


def test_deny_outranks_interrupt(rig):
    result = rig.agent(hooks=[provider(_approval(), cancel)])("go")
    assert result.stop_reason != "interrupt"
    assert not rig.marker.ran
    assert rig.last()["outcome"] == "deny"


def test_same_interrupt_name_twice_denies(rig):
    """Upstream raises ValueError out of the run; failsecure denies the later one as junk."""
    result = rig.agent(hooks=[provider(_approval("same"), _approval("same"))])("go")
    assert result.stop_reason != "interrupt" and not rig.marker.ran
    assert "(invalid)" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


def test_two_interrupt_names_stop_together(rig):
    result = rig.agent(hooks=[provider(_approval("one"), _approval("two"))])("go")
    assert result.stop_reason == "interrupt" and not rig.marker.ran
    assert sorted(i.name for i in result.interrupts) == ["one", "two"]


# ---------------------------------------------------------------- config, required, plugins


def test_required_gate_missing_denies(rig):
    rig.config(top='required = ["strands:absent.gate"]')
    result = rig.agent(hooks=[provider(uncancel)])("go")
    assert not rig.marker.ran
    assert "missing" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "missing")


def test_required_gate_present_runs(rig, adapter):
    rig.config(top=f'required = ["{adapter.callable_id(uncancel)}"]')
    rig.agent(hooks=[provider(uncancel)])("go")
    assert rig.marker.ran


def test_on_error_allow_is_honoured(rig, adapter):
    def flaky(event):
        raise RuntimeError("x")

    rig.config(tables=f'[hooks."{adapter.callable_id(flaky)}"]\non_error = "allow"')
    rig.agent(hooks=[provider(flaky)])("go")
    assert rig.marker.ran
    assert rig.last()["outcome"] == "abstain"
    assert (rig.outcome_of(".flaky")["failure"], rig.outcome_of(".flaky")["exception_type"]) == ("raised", "RuntimeError")


class _PluginGate:
    def __init__(self, kind):
        self.kind = kind

    @hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        if self.kind == "raise":
            raise RuntimeError("plugin down")
        assert call.framework == "strands" and call.tool == "run_command"
        if "forbidden" in call.arguments.get("command", ""):
            return Verdict(action=Action.DENY, reason="plugin: forbidden")
        return Verdict(action=Action.ALLOW)


@pytest.mark.parametrize("kind, command, runs, failure", [
    ("raise", "ls", False, "raised"),
    ("policy", "forbidden", False, None),
    ("policy", "ls", True, None),
])
def test_plugin_gate_is_consulted(rig, kind, command, runs, failure):
    gate = _PluginGate(kind)
    plugins.register(gate, name="strands-test")
    try:
        rig.agent(hooks=[provider(uncancel)], command=command)("go")
    finally:
        plugins.unregister(gate)
    assert rig.marker.ran is runs
    assert rig.last()["failure"] == failure


def test_plugin_gate_sees_the_final_arguments(rig):
    gate = _PluginGate("policy")
    plugins.register(gate, name="strands-test")
    try:
        rig.agent(hooks=[provider(smuggle)], command="ls")("go")
    finally:
        plugins.unregister(gate)
    assert not rig.marker.ran


# ---------------------------------------------------------------- observers


def test_after_tool_call_is_an_observer(rig):
    from strands.hooks import AfterToolCallEvent

    seen = []

    def after(event):
        seen.append(event.result["status"])

    rig.agent(hooks=[provider(after, event=AfterToolCallEvent)])("go")
    assert rig.marker.ran and seen == ["success"]
    assert [e["outcome"] for e in rig.events()] == ["abstain"]  # the before-tool decision only


def test_after_tool_call_raising_stays_upstream(rig):
    from strands.hooks import AfterToolCallEvent

    def after(event):
        raise ValueError("after")

    with pytest.raises(Exception, match="after"):  # upstream: the run fails after the tool ran
        rig.agent(hooks=[provider(after, event=AfterToolCallEvent)])("go")
    assert rig.marker.ran


# ---------------------------------------------------------------- the sync registry path


def test_sync_invoke_callbacks_is_gated(adapter):
    from strands.hooks import HookRegistry

    registry = HookRegistry()
    registry.add_callback(before_tool(), cancel)
    registry.add_callback(before_tool(), uncancel)
    event = before_tool()(agent=None, selected_tool=None, tool_use={"toolUseId": "t", "name": "x", "input": {}}, invocation_state={})
    out, interrupts = registry.invoke_callbacks(event)
    assert out is event and interrupts == [] and event.cancel_tool == "tool cancelled by user"
    adapter.unpatch()
    try:
        event = before_tool()(agent=None, selected_tool=None, tool_use={"toolUseId": "t", "name": "x", "input": {}}, invocation_state={})
        registry.invoke_callbacks(event)
        assert event.cancel_tool is False  # upstream: the later callback won
    finally:
        assert adapter.patch() == "patched"


def test_invalid_config_denies(rig):
    (rig.dir / "bad.toml").write_text('on_error = "maybe"\n')
    rig._monkeypatch.setenv("FAILSECURE_CONFIG", str(rig.dir / "bad.toml"))
    from failsecure import policy

    assert policy.reload().error
    result = rig.agent(hooks=[provider(uncancel)])("go")
    assert not rig.marker.ran
    assert "failsecure:config" in str(result) and "(invalid)" in str(result)
