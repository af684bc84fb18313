"""Activation, unpatch, upstream's fail-open twins, the cross-framework gate, approvals
(``ApprovalRequired`` and ``handle_deferred_tool_calls``) and doctor's self-test."""

import threading

import pytest

from failsecure import activation, plugins
from failsecure.verdict import Action, Verdict
from failsecure_pai_rig import hook_id, hooks_with, make_agent, run_agent


def _allow(ctx, *, call, tool_def, args):
    return args


# ---------------------------------------------------------------- activation


def test_registered_on_the_trigger_module():
    from failsecure.adapters import BUILTIN

    assert BUILTIN["pydantic-ai"][:2] == ("pydantic_ai.capabilities.hooks", "failsecure.adapters.pydantic_ai:PydanticAIAdapter")


def test_patched_in_range(adapter):
    assert adapter.state == "patched" and adapter.in_range() and adapter.intact()
    assert adapter.status()["version"] in adapter.tested


def test_unpatch_restores_upstream_exactly(adapter, unpatched):
    from pydantic_ai.capabilities import hooks

    import wrapt

    assert not isinstance(hooks.Hooks.__dict__["before_tool_execute"], wrapt.FunctionWrapper)
    assert not isinstance(hooks.Hooks.__dict__["handle_deferred_tool_calls"], wrapt.FunctionWrapper)
    assert hooks.Hooks.before_tool_execute.__module__ == "pydantic_ai.capabilities.hooks"


def test_patched_keeps_the_method_shape(adapter):
    import inspect

    from pydantic_ai.capabilities import Hooks

    assert Hooks.__dict__["before_tool_execute"].__wrapped__ is not None
    assert inspect.signature(Hooks.before_tool_execute).parameters.keys() >= {"ctx", "call", "tool_def", "args"}


# ---------------------------------------------------------------- upstream fails open (the twins)


def test_upstream_has_no_default_deadline(rig, release, unpatched):
    """Unpatched: a hook that takes 0.6 s (twice failsecure's deadline) is waited for and
    the tool runs; patched (the next test) the same hook denies with ``timeout``."""

    def slow(ctx, *, call, tool_def, args):
        release.wait(0.6)
        return args

    output, exc = run_agent(rig.agent(slow))
    assert exc is None and rig.ran() == ["harmless"]


def test_patched_twin_slow_hook_denies(rig, release):
    def slow(ctx, *, call, tool_def, args):
        release.wait(0.6)
        return args

    run_agent(rig.agent(slow))
    assert rig.ran() == [] and rig.last()["failure"] == "timeout"


def test_upstream_lets_a_later_hook_smuggle_arguments(rig, unpatched):
    from pydantic_ai.exceptions import ToolFailed

    def policy(ctx, *, call, tool_def, args):
        if "forbidden" in args["command"]:
            raise ToolFailed("forbidden")
        return args

    def smuggler(ctx, *, call, tool_def, args):
        return {"command": "forbidden"}

    run_agent(rig.agent(policy, smuggler))
    assert rig.ran() == ["forbidden"]  # upstream: the gate never saw the final arguments


def test_upstream_leaks_a_raising_hooks_message(rig, unpatched):
    def raising(ctx, *, call, tool_def, args):
        raise RuntimeError("sk-upstream-secret")

    output, exc = run_agent(rig.agent(raising))
    assert rig.ran() == [] and exc is not None and "sk-upstream-secret" in str(exc)


# ---------------------------------------------------------------- the cross-framework gate


class _Gate:
    def __init__(self, kind):
        self.kind = kind
        self.seen = []

    @plugins.hookimpl
    def failsecure_pre_tool_call(self, call):
        self.seen.append((call.framework, call.tool, dict(call.arguments)))
        if self.kind == "raise":
            raise RuntimeError("plugin secret")
        if self.kind == "ask":
            return Verdict(action=Action.ASK)
        if "forbidden" in str(call.arguments.get("command")):
            return Verdict(action=Action.DENY, reason="plugin: forbidden")
        return Verdict(action=Action.ALLOW)


@pytest.fixture
def plugin_gate():
    registered = []

    def add(kind):
        gate = _Gate(kind)
        plugins.register(gate, name=f"pai-test-{kind}")
        registered.append(gate)
        return gate

    yield add
    for gate in registered:
        plugins.unregister(gate)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_plugin_gate_sees_the_final_arguments(rig, plugin_gate, mode):
    gate = plugin_gate("policy")

    def rewriter(ctx, *, call, tool_def, args):
        return {"command": "forbidden"}

    output, exc = run_agent(rig.agent(rewriter), mode)
    assert rig.ran() == [] and exc is None
    assert gate.seen[-1] == ("pydantic-ai", "run_command", {"command": "forbidden"})
    event = rig.last()
    assert event["framework"] == "pydantic-ai" and event["hook"] == "plugin:pai-test-policy"


def test_plugin_gate_allows_twin(rig, plugin_gate):
    plugin_gate("policy")
    output, exc = run_agent(rig.agent(_allow))
    assert exc is None and rig.ran() == ["harmless"]


def test_plugin_gate_that_raises_denies(rig, plugin_gate):
    plugin_gate("raise")
    output, exc = run_agent(rig.agent(_allow))
    assert rig.ran() == [] and "plugin secret" not in (output or "")
    event = rig.last()
    assert (event["failure"], event["exception_type"]) == ("raised", "RuntimeError")


# ---------------------------------------------------------------- approvals


def _deferred_agent(rig, *gates, handler=None):
    from pydantic_ai import DeferredToolRequests
    from pydantic_ai.capabilities import Hooks

    hooks = hooks_with(*gates) if gates else Hooks()
    if handler is not None:
        hooks.on.deferred_tool_calls(handler)
    return make_agent(rig.marker, [{"command": "harmless"}], [hooks], output_type=[str, DeferredToolRequests])


def test_a_plugin_ask_requires_approval(rig, plugin_gate):
    from pydantic_ai import DeferredToolRequests

    plugin_gate("ask")
    output, exc = run_agent(_deferred_agent(rig, _allow))
    assert exc is None and isinstance(output, DeferredToolRequests)
    assert [c.tool_name for c in output.approvals] == ["run_command"] and rig.ran() == []
    assert rig.last()["outcome"] == "ask"


def test_a_plugin_ask_runs_once_approved(rig, plugin_gate):
    """The approver answers the ask: the call runs (the ask is satisfied)."""
    from pydantic_ai import DeferredToolResults

    plugin_gate("ask")

    def approver(ctx, *, requests):
        return DeferredToolResults(approvals={c.tool_call_id: True for c in requests.approvals})

    output, exc = run_agent(_deferred_agent(rig, _allow, handler=approver))
    assert exc is None and rig.ran() == ["harmless"]


def test_a_hooks_own_approval_required_is_kept(rig):
    from pydantic_ai import DeferredToolRequests
    from pydantic_ai.exceptions import ApprovalRequired

    def asking(ctx, *, call, tool_def, args):
        if not ctx.tool_call_approved:
            raise ApprovalRequired()
        return args

    output, exc = run_agent(_deferred_agent(rig, asking))
    assert exc is None and isinstance(output, DeferredToolRequests) and rig.ran() == []


def test_ask_then_deny_denies(rig):
    from pydantic_ai.exceptions import ApprovalRequired, ToolFailed

    def asking(ctx, *, call, tool_def, args):
        raise ApprovalRequired()

    def denying(ctx, *, call, tool_def, args):
        raise ToolFailed("no")

    output, exc = run_agent(_deferred_agent(rig, asking, denying))
    assert exc is None and output == "told: no" and rig.ran() == []


@pytest.mark.parametrize("kind", ["raise", "junk", "hang"])
def test_a_failing_approver_denies_the_call(rig, release, kind):
    """A failed approver decides: the call it was asked about is denied with the audited
    category (the model is told), not left for someone else to approve."""
    from pydantic_ai.exceptions import ApprovalRequired

    def asking(ctx, *, call, tool_def, args):
        if not ctx.tool_call_approved:
            raise ApprovalRequired()
        return args

    def approver(ctx, *, requests):
        if kind == "raise":
            raise RuntimeError("approver secret")
        if kind == "hang":
            release.wait(2)
        return "approved"

    if kind == "hang":  # an approval handler has no default deadline (it may ask a person): the user's
        rig.config(tables=f'[hooks."{hook_id(approver)}"]\ntimeout = 0.3\n')
    output, exc = run_agent(_deferred_agent(rig, asking, handler=approver))
    failure = {"raise": "raised", "junk": "invalid", "hang": "timeout"}[kind]
    assert exc is None and rig.ran() == []
    assert f"hook '{hook_id(approver)}' failed closed ({failure})" in output and "secret" not in output
    event = [e for e in rig.events() if e["hook"] == hook_id(approver)][-1]
    assert (event["tool"], event["outcome"], event["failure"], event["call_id"]) == ("run_command", "deny", failure, "call-0")


def test_a_valid_approver_approves_twin(rig):
    from pydantic_ai import DeferredToolResults
    from pydantic_ai.exceptions import ApprovalRequired

    def asking(ctx, *, call, tool_def, args):
        if not ctx.tool_call_approved:
            raise ApprovalRequired()
        return args

    def approver(ctx, *, requests):
        return DeferredToolResults(approvals={c.tool_call_id: True for c in requests.approvals})

    output, exc = run_agent(_deferred_agent(rig, asking, handler=approver))
    assert exc is None and rig.ran() == ["harmless"]


# ---------------------------------------------------------------- doctor


def test_self_test(adapter, rig):
    checks = adapter.self_test()
    assert [c.ok for c in checks] == [True, True, True, True], checks


def test_self_test_from_a_running_loop(adapter, rig):
    import asyncio

    async def inside():
        return adapter.self_test()

    checks = asyncio.run(inside())
    assert all(c.ok for c in checks), checks


def test_code_puppy_style_hooks_are_untouched(rig):
    """A framework built on pydantic-ai registering only model-request hooks (code-puppy)
    sees no decision and no audit for its tool calls."""
    from pydantic_ai.capabilities import Hooks

    async def transform(ctx, *, request_context, handler):
        return await handler(request_context)

    agent = make_agent(rig.marker, [{"command": "harmless"}], [Hooks(model_request=transform)])
    output, exc = run_agent(agent)
    assert exc is None and rig.ran() == ["harmless"] and rig.events() == []
    assert threading.active_count() < 64
