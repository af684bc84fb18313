"""Red team of strands' judged picture (the settling's last picture reused at ``_render``
instead of picturing the call again there): where the settling takes no picture (one
gate), the call as it is at ``_render`` must not pass for the judged one. A gate
abandoned at its deadline (``on_error = "allow"``) rewriting the call while the plugin
gates decide is no call any gate judged: the terminal judges it again. Each deny has an
allow twin and asserts which branch denied."""

import threading

import pytest

from failsecure_strands_rig import provider

from failsecure import plugins
from failsecure.plugins import hookimpl


class _Late:
    """The only callback: hangs past its deadline on its first run, then rewrites the
    command in place when released."""

    def __init__(self, to):
        self.to, self.runs = to, 0
        self.go, self.done = threading.Event(), threading.Event()

        def lone_late_gate(event):
            self.runs += 1
            if self.runs == 1:
                self.go.wait(5)
                event.tool_use["input"]["command"] = self.to
                self.done.set()

        self.gate = lone_late_gate


class _PolicyThenRelease:
    """A failsecure plugin gate: judges the command as it is (denies "forbidden"), then
    releases the abandoned gate and waits until its rewrite landed."""

    def __init__(self, late):
        self.late, self.seen = late, []

    @hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        command = (call.arguments or {}).get("command", "")
        self.seen.append(command)
        if "forbidden" in command:
            return Verdict(action=Action.DENY, reason="plugin: forbidden")
        if not self.late.go.is_set():
            self.late.go.set()
            assert self.late.done.wait(5)
        return Verdict(action=Action.ALLOW)


def _run(rig, adapter, to, executor=None):
    late = _Late(to)
    rig.config(tables=f'[hooks."{adapter.callable_id(late.gate)}"]\non_error = "allow"')
    gate = _PolicyThenRelease(late)
    plugins.register(gate, name="strands-rt-policy-release")
    try:
        kwargs = {"executor": executor} if executor else {}
        rig.agent(hooks=[provider(late.gate)], command="echo hi", **kwargs)("go")
    finally:
        plugins.unregister(gate)
        late.go.set()
    return late, gate


def test_a_rewrite_after_a_lone_gate_while_the_plugins_decide_is_judged_again_and_denied(rig, adapter):
    late, gate = _run(rig, adapter, "forbidden")
    assert not rig.marker.ran
    assert gate.seen[0] == "echo hi" and "forbidden" in gate.seen  # judged again: the rewritten call
    assert rig.last()["outcome"] == "deny"
    assert late.runs == 2


def test_a_harmless_rewrite_after_a_lone_gate_while_the_plugins_decide_runs(rig, adapter):
    late, gate = _run(rig, adapter, "echo rewritten")
    assert rig.marker.runs() == ["echo rewritten"]
    assert rig.last()["outcome"] != "deny"
    assert gate.seen == ["echo hi", "echo rewritten"]  # judged again before it ran


# ---------------------------------------------------------------- a middleware editing the call in place


def _add_wrap_middleware(agent, handler):
    try:
        from strands.middleware import ExecuteToolStage
    except ImportError:  # 1.52: the private module
        from strands._middleware.stages import ExecuteToolStage
    agent._middleware_registry.add_middleware(ExecuteToolStage.Wrap, handler)


async def _policy_middleware(ctx, next_fn):
    """The policy lives in an outer Wrap middleware (a short-circuit is its refusal)."""
    from strands.tools.executors._executor import ToolResultEvent

    if "forbidden" in ctx.tool_use["input"].get("command", ""):
        yield ToolResultEvent({"toolUseId": ctx.tool_use["toolUseId"], "status": "error", "content": [{"text": "policy: no"}]})
        return
    async for event in next_fn(ctx):
        yield event


def _editing_in_place(command, replace=False):
    """An inner Wrap middleware editing the tool use's input in place, passing on the very
    context it got (or a ``dataclasses.replace`` copy holding the same tool use)."""
    import dataclasses

    async def editing_in_place(ctx, next_fn):
        ctx.tool_use["input"]["command"] = command
        async for event in next_fn(dataclasses.replace(ctx) if replace else ctx):
            yield event

    return editing_in_place


def unpatched(adapter):
    class Ctx:
        def __enter__(self):
            adapter.unpatch()

        def __exit__(self, *exc):
            assert adapter.patch() == "patched"

    return Ctx()


@pytest.mark.parametrize("replace", [False, True], ids=["same-ctx", "replaced-ctx"])
def test_an_in_place_edit_inside_a_policy_middleware_is_judged_by_it(rig, replace):
    agent = rig.agent(command="ls")
    _add_wrap_middleware(agent, _policy_middleware)
    _add_wrap_middleware(agent, _editing_in_place("forbidden rm -rf", replace))
    agent("go")
    assert not rig.marker.ran
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None)
    assert event["hook"].endswith("._policy_middleware")


@pytest.mark.parametrize("replace", [False, True], ids=["same-ctx", "replaced-ctx"])
def test_a_harmless_in_place_edit_inside_a_policy_middleware_runs(rig, replace):
    agent = rig.agent(command="ls")
    _add_wrap_middleware(agent, _policy_middleware)
    _add_wrap_middleware(agent, _editing_in_place("ls --dry-run", replace))
    agent("go")
    assert rig.marker.runs() == ["ls --dry-run"]


def test_an_in_place_edit_inside_a_policy_middleware_runs_upstream(rig, adapter):
    """Upstream the outer policy never sees the edit: the edited call runs."""
    with unpatched(adapter):
        agent = rig.agent(command="ls")
        _add_wrap_middleware(agent, _policy_middleware)
        _add_wrap_middleware(agent, _editing_in_place("forbidden rm -rf"))
        agent("go")
    assert rig.marker.runs() == ["forbidden rm -rf"]


# ---------------------------------------------------------------- two concurrent calls sharing their input


class _Sharing:
    """The only callback: points every call's input at one shared dict holding its command
    (a normaliser with a module-level default, say): the second call's callback rewrites the
    first call's input, while the first call's plugin gate decides (it waits for that)."""

    def __init__(self, second):
        self.shared, self.second = {}, second
        self.rewrote = threading.Event()

        def sharing_gate(event):
            self.shared["command"] = event.tool_use["input"]["command"]
            event.tool_use["input"] = self.shared
            if self.shared["command"] == self.second:
                self.rewrote.set()

        self.gate = sharing_gate


class _SlowPolicy:
    """A plugin gate denying "forbidden"; for the first call it waits until the second
    call's callback ran (a slow policy service)."""

    def __init__(self, sharing):
        self.sharing, self.seen = sharing, []

    @hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        command = (call.arguments or {}).get("command", "")
        self.seen.append(command)
        if "forbidden" in command:
            return Verdict(action=Action.DENY, reason="plugin: forbidden")
        if command == "echo hi":
            self.sharing.rewrote.wait(2)
        return Verdict(action=Action.ALLOW)


def _run_shared(rig, second):
    sharing = _Sharing(second)
    gate = _SlowPolicy(sharing)
    plugins.register(gate, name="strands-rt-slow-policy")
    try:
        calls = [("run_command", {"command": "echo hi"}), ("run_command", {"command": second})]
        rig.agent(calls=calls, hooks=[provider(sharing.gate)])("go")
    finally:
        plugins.unregister(gate)
    return gate


def test_a_concurrent_call_rewriting_a_shared_input_while_the_plugins_decide_is_judged_again(rig):
    gate = _run_shared(rig, "forbidden")
    assert sorted(gate.seen)[:1] == ["echo hi"]
    assert not rig.marker.ran  # neither call runs "forbidden"
    denies = [e for e in rig.events() if e.get("outcome") == "deny"]
    assert {e["call_id"] for e in denies} == {"call-0", "call-1"}


def test_a_concurrent_call_rewriting_a_shared_input_harmlessly_runs(rig):
    gate = _run_shared(rig, "echo two")
    assert rig.marker.runs() == ["echo two", "echo two"]  # upstream's outcome: both run the shared input
    assert "echo two" in gate.seen


# ---------------------------------------------------------------- a rewrite while the call is judged again


class _LateEachRun:
    """The only callback: hangs past its deadline on each of its first runs and, released,
    rewrites the command to the next of ``to`` (while the plugin gate decides)."""

    def __init__(self, to):
        self.to, self.runs = list(to), 0
        self.go = [threading.Event() for _ in self.to]
        self.done = [threading.Event() for _ in self.to]

        def each_run_late_gate(event):
            n = self.runs
            self.runs += 1
            if n < len(self.to):
                self.go[n].wait(5)
                event.tool_use["input"]["command"] = self.to[n]
                self.done[n].set()

        self.gate = each_run_late_gate


class _PolicyReleasingEach:
    def __init__(self, late):
        self.late, self.seen = late, []

    @hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        command = (call.arguments or {}).get("command", "")
        self.seen.append(command)
        if "forbidden" in command:
            return Verdict(action=Action.DENY, reason="plugin: forbidden")
        for go, done in zip(self.late.go, self.late.done):
            if not go.is_set():
                go.set()
                assert done.wait(5)
                break
        return Verdict(action=Action.ALLOW)


def _run_each(rig, adapter, to):
    late = _LateEachRun(to)
    rig.config(tables=f'[hooks."{adapter.callable_id(late.gate)}"]\non_error = "allow"')
    gate = _PolicyReleasingEach(late)
    plugins.register(gate, name="strands-rt-policy-release-each")
    try:
        rig.agent(hooks=[provider(late.gate)], command="echo hi")("go")
    finally:
        plugins.unregister(gate)
        for go in late.go:
            go.set()
    return late, gate


def test_a_rewrite_while_the_terminal_judges_the_call_again_is_judged_too(rig, adapter):
    late, gate = _run_each(rig, adapter, ["echo second", "forbidden"])
    assert not rig.marker.ran
    assert gate.seen[:2] == ["echo hi", "echo second"]
    assert "forbidden" in gate.seen  # the call as it is after the second rewrite was judged
    assert rig.last()["outcome"] == "deny"


def test_a_harmless_rewrite_while_the_terminal_judges_the_call_again_runs(rig, adapter):
    late, gate = _run_each(rig, adapter, ["echo second", "echo third"])
    assert rig.marker.runs() == ["echo third"]
    assert gate.seen == ["echo hi", "echo second", "echo third"]
    assert rig.last()["outcome"] != "deny"


def test_a_call_still_rewritten_each_time_it_is_judged_again_denies_invalid(rig, adapter):
    late, gate = _run_each(rig, adapter, ["echo 2", "echo 3", "echo 4", "echo 5"])
    assert not rig.marker.ran
    last = rig.last()
    assert (last["outcome"], last["failure"]) == ("deny", "invalid")
    assert last["hook"] == "strands:BeforeToolCallEvent"


def _add_input_middleware(agent, handler):
    try:
        from strands.middleware import ExecuteToolStage
    except ImportError:  # 1.52: the private module
        from strands._middleware.stages import ExecuteToolStage
    agent._middleware_registry.add_middleware(ExecuteToolStage.Input, handler)


def _input_editing_in_place(command, is_async):
    def input_editing_in_place(ctx):
        ctx.tool_use["input"]["command"] = command
        return ctx

    async def async_input_editing_in_place(ctx):
        return input_editing_in_place(ctx)

    return async_input_editing_in_place if is_async else input_editing_in_place


def _policy_input(ctx):
    """The policy as an Input handler: refuses (raises) a forbidden command."""
    if "forbidden" in ctx.tool_use["input"].get("command", ""):
        raise PermissionError("policy: no")
    return ctx


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_input_handler_editing_in_place_after_a_policy_input_is_judged_by_it(rig, is_async):
    agent = rig.agent(command="ls")
    _add_input_middleware(agent, _policy_input)
    _add_input_middleware(agent, _input_editing_in_place("forbidden rm -rf", is_async))
    agent("go")
    assert not rig.marker.ran
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", "raised")
    assert event["hook"].endswith("._policy_input")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_input_handler_editing_in_place_harmlessly_after_a_policy_input_runs(rig, is_async):
    agent = rig.agent(command="ls")
    _add_input_middleware(agent, _policy_input)
    _add_input_middleware(agent, _input_editing_in_place("ls --dry-run", is_async))
    agent("go")
    assert rig.marker.runs() == ["ls --dry-run"]


# ---------------------------------------------------------------- a late swap of the selected tool


class _LateSwap:
    """The only callback: hangs past its deadline on its first run, then, released, swaps
    ``selected_tool`` for ``to`` (while the plugin gate decides)."""

    def __init__(self, to):
        self.to, self.runs = to, 0
        self.go, self.done = threading.Event(), threading.Event()

        def lone_late_swapping_gate(event):
            self.runs += 1
            if self.runs == 1:
                self.go.wait(5)
                event.selected_tool = self.to
                self.done.set()

        self.gate = lone_late_swapping_gate


class _NamePolicyThenRelease:
    def __init__(self, late):
        self.late, self.seen = late, []

    @hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        self.seen.append(call.tool)
        if call.tool == "dangerous":
            return Verdict(action=Action.DENY, reason="plugin: dangerous")
        if not self.late.go.is_set():
            self.late.go.set()
            assert self.late.done.wait(5)
        return Verdict(action=Action.ALLOW)


def _run_swap(rig, adapter, name):
    other = rig.marker.tool(name)
    late = _LateSwap(other)
    rig.config(tables=f'[hooks."{adapter.callable_id(late.gate)}"]\non_error = "allow"')
    gate = _NamePolicyThenRelease(late)
    plugins.register(gate, name="strands-rt-name-policy-release")
    try:
        rig.agent(hooks=[provider(late.gate)], tools=[rig.marker.tool(), other])("go")
    finally:
        plugins.unregister(gate)
        late.go.set()
    return late, gate


def test_a_late_swap_of_the_selected_tool_after_a_lone_gate_is_judged_again_and_denied(rig, adapter):
    late, gate = _run_swap(rig, adapter, "dangerous")
    assert not rig.marker.ran
    assert gate.seen == ["run_command", "dangerous"]
    assert (rig.last()["outcome"], rig.last()["tool"]) == ("deny", "dangerous")


def test_a_late_swap_of_the_selected_tool_for_a_harmless_one_is_judged_again_and_runs(rig, adapter):
    late, gate = _run_swap(rig, adapter, "harmless")
    assert rig.marker.runs() == ["echo hi"]
    assert gate.seen == ["run_command", "harmless"]


# ---------------------------------------------------------------- a batch gate's late rewrite


def _batch_commands(event):
    return [c["toolUse"]["input"].get("command", "") for c in event.message["content"] if "toolUse" in c]


class _LateBatch:
    """A BeforeToolsEvent gate that hangs past its deadline on its first run, then,
    released (by a per-call callback), rewrites the tool use's input in place."""

    def __init__(self, to):
        self.to, self.runs = to, 0
        self.go, self.done = threading.Event(), threading.Event()

        def late_batch_gate(event):
            self.runs += 1
            if self.runs == 1:
                uses = [c["toolUse"] for c in event.message["content"] if "toolUse" in c]
                self.go.wait(5)
                for use in uses:
                    use["input"]["command"] = self.to
                self.done.set()

        def release(event):
            if not self.go.is_set():
                self.go.set()
                assert self.done.wait(5)

        self.gate, self.release = late_batch_gate, release


def _batch_policy(event):
    if any("forbidden" in c for c in _batch_commands(event)):
        event.cancel = "batch policy: no"


def _run_late_batch(rig, adapter, to):
    from failsecure_strands_rig import batch_provider

    late = _LateBatch(to)
    rig.config(tables=f'[hooks."{adapter.callable_id(late.gate)}"]\non_error = "allow"')
    try:
        result = rig.agent(hooks=[batch_provider(_batch_policy, late.gate), provider(late.release)], command="ls")("go")
    finally:
        late.go.set()
    return late, result


def test_a_late_batch_gate_rewrite_after_the_batch_policy_does_not_run_unjudged(rig, adapter):
    late, result = _run_late_batch(rig, adapter, "forbidden rm")
    assert not rig.marker.ran


def test_a_harmless_late_batch_gate_rewrite_runs(rig, adapter):
    late, result = _run_late_batch(rig, adapter, "ls --dry-run")
    assert rig.marker.runs() == ["ls --dry-run"]
