"""End to end: a real LlmAgent, a scripted BaseLlm, a real FunctionTool (marker file),
InMemoryRunner ``run`` and ``run_async``, agent callbacks and runner plugins.

Every deny asserts the audited failure category (and exception type) and has an allow
twin; ``mode`` runs each through ``Runner.run`` (sync) and ``Runner.run_async``."""

from __future__ import annotations

import asyncio
import threading

import failsecure_adk_rig as adk_rig
import pytest

from failsecure.testing import HostileDict

SECRET = "sk-adk-secret-4711"


def hook_of(fn) -> str:
    return f"google-adk:{fn.__module__}.{fn.__qualname__}"


def failed_closed(hook: str, category: str) -> dict:
    return {"error": f"failsecure: hook '{hook}' failed closed ({category})"}


def assert_no_secret(rig, out):
    assert SECRET not in rig.audit_path.read_text()
    assert SECRET not in repr(out.responses)


# ---------------------------------------------------------------- allow twins


def test_allow_runs_the_tool_once_per_callback(rig, mode):
    seen = []

    def agent_gate(tool, args, tool_context):
        seen.append(dict(args))
        return None

    async def plugin_gate(tool, tool_args, tool_context):
        seen.append(("plugin", dict(tool_args)))
        return None

    out = rig.run({"command": "harmless"}, mode, before=agent_gate, plugins=[adk_rig.plugin("policy", plugin_gate)])
    assert out.error is None, out.error
    assert rig.ran and out.ran == [{"command": "harmless"}]
    assert out.response == {"ok": True}
    assert seen == [("plugin", {"command": "harmless"}), {"command": "harmless"}]  # each once, plugins first
    event = rig.last()
    assert event["outcome"] in ("allow", "abstain") and event["framework"] == "google-adk"
    assert [o["hook"] for o in event["outcomes"]] == ["google-adk:plugin:policy", hook_of(agent_gate)]


def test_no_callbacks_at_all_runs(rig, mode):
    out = rig.run({"command": "harmless"}, mode)
    assert out.error is None and rig.ran


# ---------------------------------------------------------------- raising gates


def _raiser(exc_type):
    def raising_gate(tool, args, tool_context):
        raise exc_type(SECRET)

    return adk_rig.named(raising_gate, f"raising_{exc_type.__name__}")


@pytest.mark.parametrize("exc_type", [RuntimeError, SystemExit, ValueError])
def test_raising_agent_callback_denies(rig, mode, exc_type):
    gate = _raiser(exc_type)
    out = rig.run({"command": f"harmless {SECRET}"}, mode, before=gate)
    assert not rig.ran and out.error is None
    assert out.response == failed_closed(hook_of(gate), "raised")
    o = rig.outcome_of(gate.__qualname__)
    assert (o["failure"], o["exception_type"]) == ("raised", exc_type.__name__)
    assert rig.last()["outcome"] == "deny"
    assert_no_secret(rig, out)


@pytest.mark.parametrize("exc_type", [RuntimeError, SystemExit])
def test_raising_plugin_denies(rig, mode, exc_type):
    async def callback(tool, tool_args, tool_context):
        raise exc_type(SECRET)

    out = rig.run({"command": "harmless"}, mode, plugins=[adk_rig.plugin("boom", callback)])
    assert not rig.ran and out.error is None  # upstream: the run crashes with RuntimeError
    assert out.response == failed_closed("google-adk:plugin:boom", "raised")
    o = rig.outcome_of("plugin:boom")
    assert (o["failure"], o["exception_type"]) == ("raised", exc_type.__name__)
    assert_no_secret(rig, out)


# ---------------------------------------------------------------- hanging gates


@pytest.fixture
def release():
    event = threading.Event()
    yield event
    event.set()


def test_hanging_sync_agent_callback_denies(rig, mode, release):
    def hanging_gate(tool, args, tool_context):
        release.wait(2)
        return None

    out = rig.run({"command": "harmless"}, mode, before=hanging_gate)
    release.set()
    assert not rig.ran
    assert out.response == failed_closed(hook_of(hanging_gate), "timeout")
    o = rig.outcome_of("hanging_gate")
    assert o["failure"] == "timeout" and o["elapsed_ms"] < 1500


def test_hanging_async_agent_callback_denies(rig, mode):
    async def hanging_gate(tool, args, tool_context):
        await asyncio.sleep(2)

    out = rig.run({"command": "harmless"}, mode, before=hanging_gate)
    assert not rig.ran
    assert out.response == failed_closed(hook_of(hanging_gate), "timeout")
    assert rig.outcome_of("hanging_gate")["failure"] == "timeout"


def test_hanging_plugin_denies(rig, mode):
    async def callback(tool, tool_args, tool_context):
        await asyncio.sleep(2)

    out = rig.run({"command": "harmless"}, mode, plugins=[adk_rig.plugin("slow", callback)])
    assert not rig.ran
    assert out.response == failed_closed("google-adk:plugin:slow", "timeout")
    assert rig.outcome_of("plugin:slow")["failure"] == "timeout"


def test_slow_gate_inside_its_deadline_allows(rig, mode):
    async def callback(tool, tool_args, tool_context):
        await asyncio.sleep(0.05)

    def slow_gate(tool, args, tool_context):
        threading.Event().wait(0.05)

    out = rig.run({"command": "harmless"}, mode, before=slow_gate, plugins=[adk_rig.plugin("slowish", callback)])
    assert rig.ran and out.response == {"ok": True}


# ---------------------------------------------------------------- junk answers


class Hostile:
    def __bool__(self):
        raise RuntimeError("hostile")

    def __eq__(self, other):
        raise RuntimeError("hostile")

    __hash__ = None


JUNK = {
    "string": "DENY",
    "false": False,
    "true": True,
    "list": [{"error": "x"}],
    "object": object(),
    "hostile": Hostile(),
    "hostile-mapping": HostileDict(error="x"),
    "non-string key": {1: "x"},
}


@pytest.mark.parametrize("label", sorted(JUNK))
def test_junk_agent_answer_denies(rig, mode, label):
    def junk_gate(tool, args, tool_context):
        return JUNK[label]

    out = rig.run({"command": "harmless"}, mode, before=junk_gate)
    assert not rig.ran
    assert out.response == failed_closed(hook_of(junk_gate), "invalid")
    assert rig.outcome_of("junk_gate")["failure"] == "invalid"


@pytest.mark.parametrize("label", ["string", "false", "hostile-mapping"])
def test_junk_plugin_answer_denies(rig, mode, label):
    async def callback(tool, tool_args, tool_context):
        return JUNK[label]

    out = rig.run({"command": "harmless"}, mode, plugins=[adk_rig.plugin("junky", callback)])
    assert not rig.ran
    assert out.response == failed_closed("google-adk:plugin:junky", "invalid")
    assert rig.outcome_of("plugin:junky")["failure"] == "invalid"


# ---------------------------------------------------------------- ADK's own answers


def test_a_gates_own_dict_is_the_result_untouched(rig, mode):
    answer = {"status": "refused by policy", "code": 7}

    def policy_gate(tool, args, tool_context):
        return answer

    out = rig.run({"command": "harmless"}, mode, before=policy_gate)
    assert not rig.ran
    assert out.response == answer
    event = rig.last()
    assert event["outcome"] == "deny" and rig.outcome_of("policy_gate")["failure"] is None


def test_a_plugins_own_dict_is_the_result_untouched(rig, mode):
    async def callback(tool, tool_args, tool_context):
        return {"result": "cached"}

    out = rig.run({"command": "harmless"}, mode, plugins=[adk_rig.plugin("cache", callback)])
    assert not rig.ran and out.response == {"result": "cached"}


# ---------------------------------------------------------------- precedence


def _deny_gate(tool, args, tool_context):
    return {"error": "no"}


def _allow_gate(tool, args, tool_context):
    return None


@pytest.mark.parametrize("order", ["deny-first", "allow-first"])
def test_deny_in_an_agent_list_wins_in_any_order(rig, mode, order):
    raising = _raiser(RuntimeError)
    gates = [_allow_gate, raising] if order == "allow-first" else [raising, _allow_gate]
    out = rig.run({"command": "harmless"}, mode, before=gates)
    assert not rig.ran
    assert out.response == failed_closed(hook_of(raising), "raised")
    assert rig.outcome_of(raising.__qualname__)["exception_type"] == "RuntimeError"
    assert len(rig.last()["outcomes"]) == 2  # every gate was asked


def test_agent_deny_after_plugin_answer_still_counts(rig, mode):
    """Upstream: a plugin's answer hides every agent callback. A raising agent callback
    behind an allowing plugin denies."""
    async def callback(tool, tool_args, tool_context):
        return None

    raising = _raiser(RuntimeError)
    out = rig.run({"command": "harmless"}, mode, before=[raising], plugins=[adk_rig.plugin("ok", callback)])
    assert not rig.ran
    assert out.response == failed_closed(hook_of(raising), "raised")


def test_two_plugins_failure_behind_an_answer_denies(rig, mode):
    """Upstream: the first plugin's dict hides a later plugin; a later plugin's failure
    still denies, with its own category."""
    async def answers(tool, tool_args, tool_context):
        return {"result": "early"}

    async def hangs(tool, tool_args, tool_context):
        await asyncio.sleep(2)

    rig.run({"command": "harmless"}, mode, plugins=[adk_rig.plugin("first", answers), adk_rig.plugin("second", hangs)])
    assert not rig.ran
    assert rig.outcome_of("plugin:second")["failure"] == "timeout"
    assert rig.last()["outcome"] == "deny"


# ---------------------------------------------------------------- argument integrity


def _policy_plugin():
    async def callback(tool, tool_args, tool_context):
        return {"error": "forbidden"} if "forbidden" in str(tool_args.get("command")) else None

    return adk_rig.plugin("policy", callback)


def test_rewrite_smuggling_forbidden_past_the_plugin_is_denied(rig, mode):
    def smuggler(tool, args, tool_context):
        args["command"] = "forbidden"
        return None

    out = rig.run({"command": "harmless"}, mode, before=smuggler, plugins=[_policy_plugin()])
    assert not rig.ran and out.ran == []
    assert out.response == {"error": "forbidden"}  # the plugin judged the final arguments
    assert rig.last()["outcome"] == "deny"


def test_harmless_rewrite_runs_with_the_rewritten_arguments(rig, mode):
    def normaliser(tool, args, tool_context):
        args["command"] = args["command"].strip().lower()
        return None

    out = rig.run({"command": "  HARMLESS  "}, mode, before=normaliser, plugins=[_policy_plugin()])
    assert out.ran == [{"command": "harmless"}]
    assert rig.last()["outcome"] in ("allow", "abstain")


def test_rewrite_that_never_settles_denies(rig, mode):
    """Changed on purpose (issue 25): a lone callback that rewrites on every run is not
    run again (no other gate judged a stale call); two that keep rewriting the command
    after each other still deny."""

    def counter(tool, args, tool_context):
        args["command"] = args["command"] + "!"
        return None

    def counter_too(tool, args, tool_context):
        return counter(tool, args, tool_context)

    out = rig.run({"command": "harmless"}, mode, before=[counter, counter_too])
    assert not rig.ran
    assert out.response == failed_closed("google-adk:arguments", "invalid")
    assert rig.outcome_of("google-adk:arguments")["failure"] == "invalid"


# ---------------------------------------------------------------- observers


def test_after_tool_callback_is_an_observer(rig, mode):
    seen = []

    def after(tool, args, tool_context, tool_response):
        seen.append(dict(tool_response))
        return None

    out = rig.run({"command": "harmless"}, mode, after=after)
    assert rig.ran and seen == [{"ok": True}] and out.response == {"ok": True}


def test_a_gate_set_as_observer_does_not_deny(rig, mode):
    raising = _raiser(RuntimeError)
    rig.config(f'[hooks."{hook_of(raising)}"]\nrole = "observer"\n')
    out = rig.run({"command": "harmless"}, mode, before=raising)
    assert rig.ran and out.response == {"ok": True}
    assert rig.outcome_of(raising.__qualname__)["failure"] == "raised"


# ---------------------------------------------------------------- required, plugins of failsecure


def test_missing_required_gate_denies(rig, mode):
    rig.config(top='required = ["google-adk:plugin:policy"]')
    out = rig.run({"command": "harmless"}, mode, before=_allow_gate)
    assert not rig.ran
    assert out.response == {"error": "failsecure: hook 'google-adk:plugin:policy' is missing"}
    assert rig.outcome_of("plugin:policy")["failure"] == "missing"


def test_required_gate_present_runs(rig, mode):
    rig.config(top='required = ["google-adk:plugin:policy"]')
    out = rig.run({"command": "harmless"}, mode, plugins=[_policy_plugin()])
    assert rig.ran and out.response == {"ok": True}


import pluggy  # noqa: E402

_mark = pluggy.HookimplMarker("failsecure")


class CrossGate:
    def __init__(self, kind):
        self.kind = kind
        self.seen = []

    @_mark
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        self.seen.append(dict(call.arguments))
        if self.kind == "raise":
            raise RuntimeError(SECRET)
        if "forbidden" in str(call.arguments.get("command")):
            return Verdict(action=Action.DENY, reason="cross gate: forbidden")
        return Verdict(action=Action.ALLOW)


@pytest.fixture
def cross_gate():
    from failsecure import plugins

    registered = []

    def register(kind):
        gate = CrossGate(kind)
        plugins.register(gate, name="cross")
        registered.append(gate)
        return gate

    yield register
    for gate in registered:
        plugins.unregister(gate)


def test_cross_framework_gate_raising_denies(rig, mode, cross_gate):
    cross_gate("raise")
    out = rig.run({"command": "harmless"}, mode)
    assert not rig.ran
    assert out.response == failed_closed("plugin:cross", "raised")
    o = rig.outcome_of("plugin:cross")
    assert (o["failure"], o["exception_type"]) == ("raised", "RuntimeError")


def test_cross_framework_gate_judges_the_final_arguments(rig, mode, cross_gate):
    gate = cross_gate("policy")

    def smuggler(tool, args, tool_context):
        args["command"] = "forbidden"

    out = rig.run({"command": "harmless"}, mode, before=smuggler)
    assert not rig.ran
    assert out.response == {"error": "cross gate: forbidden"}
    assert gate.seen == [{"command": "forbidden"}]
    rig.run({"command": "harmless"}, mode)
    assert rig.ran  # the allow twin
