"""Tool input guardrails through real agent runs (``Runner.run_sync`` / ``Runner.run``)
with the scripted model and the real marker tool: each fault denies with its failure
category (and exception type) from the audit, each deny has an allow twin."""

import asyncio
import json
import threading
import time

import pytest
from agents import ToolGuardrailFunctionOutput, ToolInputGuardrailTripwireTriggered, tool_output_guardrail

import failsecure
from failsecure import policy as config_policy

MODES = ["sync", "async"]
SECRET = "sk-secret-token-77"


def hook_of(fn):
    return f"openai-agents:{fn.__module__}.{fn.__qualname__}"


def allow(data):
    return ToolGuardrailFunctionOutput.allow()


def check_denied(rig, fn, failure, exception_type=None):
    """The tool did not run, the model was told the hook id and category only, and the
    audit shows the branch."""
    assert rig.tool.runs() == []
    told = rig.told()
    assert told == f"failsecure: hook '{hook_of(fn)}' failed closed ({failure})"
    event = rig.last()
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", failure, exception_type)
    assert event["tool"] == "run_command" and event["framework"] == "openai-agents"
    assert SECRET not in rig.audit_path.read_text()


# ---------------------------------------------------------------- raising


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("exc", [RuntimeError, SystemExit, KeyError])
def test_raising_guardrail_rejects(rig, mode, exc):
    def guard(data):
        raise exc(f"boom {SECRET}")

    rig.run([rig_guardrail(guard)], {"command": f"x {SECRET}"}, mode)
    check_denied(rig, guard, "raised", exc.__name__)


@pytest.mark.parametrize("mode", MODES)
def test_raising_async_guardrail_rejects(rig, mode):
    async def guard(data):
        await asyncio.sleep(0)
        raise ValueError(SECRET)

    rig.run([rig_guardrail(guard)], mode=mode)
    check_denied(rig, guard, "raised", "ValueError")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("is_async", [False, True])
def test_allowing_guardrail_twin(rig, mode, is_async):
    if is_async:
        async def guard(data):
            return ToolGuardrailFunctionOutput.allow()
    else:
        guard = allow
    result = rig.run([rig_guardrail(guard)], mode=mode)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert rig.told() == "ran harmless" and result.final_output == "done"
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("allow", None)
    assert rig.outcome_of(guard.__qualname__)["outcome"] == "allow"
    # upstream's results list still gets the guardrail's output
    assert [r.output.behavior["type"] for r in result.tool_input_guardrail_results] == ["allow"]


# ---------------------------------------------------------------- hanging


@pytest.mark.parametrize("mode", MODES)
def test_hanging_sync_guardrail_times_out(rig, mode):
    release = rig.release

    def guard(data):
        release.wait(2)
        return ToolGuardrailFunctionOutput.allow()

    start = time.monotonic()
    rig.run([rig_guardrail(guard)], mode=mode)
    assert time.monotonic() - start < 1.95  # the gate hangs 2 s; its deadline is 0.3 s
    check_denied(rig, guard, "timeout")
    assert rig.outcome_of(guard.__qualname__)["elapsed_ms"] < 1000


@pytest.mark.parametrize("mode", MODES)
def test_hanging_async_guardrail_times_out(rig, mode):
    async def guard(data):
        await asyncio.sleep(2)
        return ToolGuardrailFunctionOutput.allow()

    start = time.monotonic()
    rig.run([rig_guardrail(guard)], mode=mode)
    assert time.monotonic() - start < 1.95  # the gate hangs 2 s; its deadline is 0.3 s
    check_denied(rig, guard, "timeout")
    assert rig.outcome_of(guard.__qualname__)["elapsed_ms"] < 1000


@pytest.mark.parametrize("mode", MODES)
def test_slow_but_in_time_twin(rig, mode):
    async def guard(data):
        await asyncio.sleep(0.05)
        return ToolGuardrailFunctionOutput.allow()

    def sync_guard(data):
        time.sleep(0.05)
        return ToolGuardrailFunctionOutput.allow()

    rig.run([rig_guardrail(guard), rig_guardrail(sync_guard)], mode=mode)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert rig.last()["outcome"] == "allow"


# ---------------------------------------------------------------- junk


class Hostile:
    def __getattr__(self, name):
        raise RuntimeError("hostile attribute")

    def __bool__(self):
        raise RuntimeError("hostile bool")


class HostileOutput(ToolGuardrailFunctionOutput):
    @property
    def behavior(self):  # type: ignore[override]
        raise RuntimeError("hostile behavior")

    @behavior.setter
    def behavior(self, value):
        pass


JUNK = {
    "None": lambda: None,
    "unknown type deny": lambda: ToolGuardrailFunctionOutput(output_info=None, behavior={"type": "deny"}),
    "typo alow": lambda: ToolGuardrailFunctionOutput(output_info=None, behavior={"type": "alow"}),
    "reject without message": lambda: ToolGuardrailFunctionOutput(output_info=None, behavior={"type": "reject_content"}),
    "reject non-str message": lambda: ToolGuardrailFunctionOutput(output_info=None, behavior={"type": "reject_content", "message": 5}),
    "behavior str": lambda: ToolGuardrailFunctionOutput(output_info=None, behavior="allow"),
    "behavior None": lambda: ToolGuardrailFunctionOutput(output_info=None, behavior=None),
    "plain dict": lambda: {"type": "allow"},
    "True": lambda: True,
    "string": lambda: "allow",
    "hostile object": Hostile,
    "hostile output subclass": lambda: HostileOutput(output_info=None),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(JUNK))
def test_junk_answer_rejects(rig, mode, name):
    answer = JUNK[name]()

    def guard(data):
        return answer

    rig.run([rig_guardrail(guard)], mode=mode)
    check_denied(rig, guard, "invalid")


# ---------------------------------------------------------------- valid answers keep their meaning


@pytest.mark.parametrize("mode", MODES)
def test_own_reject_keeps_its_message(rig, mode):
    def guard(data):
        return ToolGuardrailFunctionOutput.reject_content("not today")

    rig.run([rig_guardrail(guard)], mode=mode)
    assert rig.tool.runs() == [] and rig.told() == "not today"
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


@pytest.mark.parametrize("mode", MODES)
def test_own_raise_exception_halts_the_run(rig, mode):
    def guard(data):
        return ToolGuardrailFunctionOutput.raise_exception(output_info="why")

    with pytest.raises(ToolInputGuardrailTripwireTriggered) as info:
        rig.run([rig_guardrail(allow), rig_guardrail(guard)], mode=mode)
    assert info.value.output.output_info == "why" and info.value.guardrail.guardrail_function is guard
    assert rig.tool.runs() == []
    assert rig.last()["outcome"] == "deny"


RAISE_EXCEPTION = '[frameworks."openai-agents"]\nfailure_behavior = "raise_exception"\n'


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("told_by", ["config", "deprecated attribute"])
def test_failure_behavior_raise_exception(rig, adapter, mode, told_by):
    """The adapter can be told to stop the run on a guardrail failure instead: by the
    trusted config (docs/configuration.md), or by the deprecated attribute."""
    if told_by == "config":
        rig.config(RAISE_EXCEPTION)
    else:
        adapter.failure_behavior = "raise_exception"

    def guard(data):
        raise RuntimeError(SECRET)

    with pytest.raises(ToolInputGuardrailTripwireTriggered) as info:
        rig.run([rig_guardrail(guard)], mode=mode)
    assert info.value.output.output_info == {"failsecure": f"failsecure: hook '{hook_of(guard)}' failed closed (raised)"}
    assert rig.tool.runs() == []
    assert (rig.last()["failure"], rig.last()["exception_type"]) == ("raised", "RuntimeError")


@pytest.mark.parametrize("mode", MODES)
def test_the_config_says_raise_exception_allow_twin(rig, mode):
    rig.config(RAISE_EXCEPTION)
    rig.run([rig_guardrail(allow)], mode=mode)
    assert len(rig.tool.runs()) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("allow", None)


def test_a_project_file_cannot_undo_raise_exception(rig, adapter, monkeypatch):
    rig.config(RAISE_EXCEPTION)  # ./failsecure.toml, trusted ($FAILSECURE_CONFIG)
    checkout = rig.dir / "checkout"
    checkout.mkdir()
    (checkout / "failsecure.toml").write_text('[frameworks."openai-agents"]\nfailure_behavior = "reject_content"\n')
    monkeypatch.chdir(checkout)
    config = config_policy.reload()
    assert config.ignored == [(str(checkout / "failsecure.toml"), 'frameworks."openai-agents".failure_behavior = "reject_content"')]
    assert adapter.failure_behavior == "raise_exception"

    def guard(data):
        raise RuntimeError(SECRET)

    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        rig.run([rig_guardrail(guard)])
    assert rig.tool.runs() == [] and rig.last()["failure"] == "raised"


def test_the_deprecated_attribute_cannot_undo_the_config(rig, adapter):
    rig.config(RAISE_EXCEPTION)
    with pytest.warns(DeprecationWarning, match="frameworks"):
        adapter.failure_behavior = "reject_content"
    assert adapter.failure_behavior == "raise_exception"


# ---------------------------------------------------------------- several guardrails


def reject(data):
    return ToolGuardrailFunctionOutput.reject_content("rejected by policy")


def raising(data):
    raise RuntimeError("x")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", ["deny first", "deny last"])
@pytest.mark.parametrize("denier", [reject, raising], ids=["reject", "raise"])
def test_any_deny_wins_in_any_order(rig, mode, order, denier):
    pair = [denier, allow] if order == "deny first" else [allow, denier]
    rig.run([rig_guardrail(fn) for fn in pair], mode=mode)
    assert rig.tool.runs() == []
    event = rig.last()
    assert event["outcome"] == "deny"
    # every guardrail ran (upstream stops at the first reject)
    assert rig.outcome_of(".allow", event)["outcome"] == "allow"
    if denier is raising:
        assert (rig.outcome_of(".raising", event)["failure"], event["failure"]) == ("raised", "raised")


@pytest.mark.parametrize("mode", MODES)
def test_reject_then_raise_audits_both(rig, mode):
    rig.run([rig_guardrail(reject), rig_guardrail(raising)], mode=mode)
    assert rig.tool.runs() == []
    event = rig.last()
    assert rig.outcome_of(".reject", event)["outcome"] == "deny"
    assert rig.outcome_of(".raising", event)["failure"] == "raised"


# ---------------------------------------------------------------- required, plugin gates


@pytest.mark.parametrize("mode", MODES)
def test_missing_required_guardrail_denies(rig, mode):
    rig.config(top='required = ["openai-agents:policy.absent_guard"]')
    rig.run([rig_guardrail(allow)], mode=mode)
    assert rig.tool.runs() == []
    assert rig.told() == "failsecure: hook 'openai-agents:policy.absent_guard' is missing"
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "missing")


@pytest.mark.parametrize("mode", MODES)
def test_required_guardrail_present_twin(rig, mode):
    rig.config(top=f'required = ["{hook_of(allow)}"]')
    rig.run([rig_guardrail(allow)], mode=mode)
    assert rig.tool.runs() == [{"command": "harmless"}]


class PolicyPlugin:
    @failsecure.hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        if "forbidden" in str((call.arguments or {}).get("command")):
            return Verdict(action=Action.DENY, reason="plugin: forbidden")
        if "explode" in str((call.arguments or {}).get("command")):
            raise RuntimeError(SECRET)
        return Verdict(action=Action.ALLOW)


@pytest.fixture
def plugin():
    from failsecure import plugins

    p = PolicyPlugin()
    plugins.register(p, name="oa-test-policy")
    yield p
    plugins.unregister(p)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command,ran", [("forbidden", False), ("explode", False), ("harmless", True)])
def test_plugin_gate_is_consulted_without_guardrails(rig, plugin, mode, command, ran):
    rig.run([], {"command": command}, mode)
    assert bool(rig.tool.runs()) is ran
    assert not rig.last()["outcome"] == "deny" if ran else rig.last()["outcome"] == "deny"
    if command == "explode":
        assert rig.told() == "failsecure: hook 'plugin:oa-test-policy' failed closed (raised)"
    if command == "forbidden":
        assert rig.told() == "plugin: forbidden"


# ---------------------------------------------------------------- argument integrity


def rewriter(target):
    def rewrite(data):
        text = json.dumps({"command": target})
        data.context.tool_call.arguments = text
        data.context.tool_arguments = text
        return ToolGuardrailFunctionOutput.allow()

    return rewrite


def policy(data):
    if "forbidden" in data.context.tool_arguments:
        return ToolGuardrailFunctionOutput.reject_content("policy: forbidden")
    return ToolGuardrailFunctionOutput.allow()


@pytest.mark.parametrize("mode", MODES)
def test_rewrite_after_approval_is_judged_again(rig, mode):
    rig.run([rig_guardrail(policy), rig_guardrail(rewriter("forbidden"))], mode=mode)
    assert rig.tool.runs() == [] and rig.told() == "policy: forbidden"


@pytest.mark.parametrize("mode", MODES)
def test_harmless_rewrite_runs(rig, mode):
    rig.run([rig_guardrail(policy), rig_guardrail(rewriter("harmless rewritten"))], mode=mode)
    assert rig.tool.runs() == [{"command": "harmless rewritten"}]


@pytest.mark.parametrize("mode", MODES)
def test_call_rewrite_behind_the_gates_back_is_shown(rig, mode):
    """A guardrail that changes only the call (not ``tool_arguments``, which gates read):
    the next round shows the gates what will really run."""

    def sneaky(data):
        data.context.tool_call.arguments = json.dumps({"command": "forbidden"})
        return ToolGuardrailFunctionOutput.allow()

    rig.run([rig_guardrail(policy), rig_guardrail(sneaky)], mode=mode)
    assert rig.tool.runs() == []


def test_upstream_runs_the_smuggled_call(rig, adapter):
    adapter.unpatch()
    try:
        rig.run([rig_guardrail(policy), rig_guardrail(rewriter("forbidden"))])
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    assert rig.tool.runs() == [{"command": "forbidden"}]


def test_endless_rewriter_denies(rig):
    """Changed on purpose (issue 25): a lone guardrail that rewrites on every run is not
    run again (no other gate judged a stale call); two that keep rewriting the command
    after each other still deny."""
    counter = iter(range(100))

    def restless(data):
        text = json.dumps({"command": f"harmless {next(counter)}"})
        data.context.tool_call.arguments = text
        return ToolGuardrailFunctionOutput.allow()

    def restless_too(data):
        return restless(data)

    rig.run([rig_guardrail(restless), rig_guardrail(restless_too)])
    assert rig.tool.runs() == []
    assert rig.last()["failure"] == "invalid"


# ---------------------------------------------------------------- upstream, unpatched


@pytest.mark.parametrize("mode", MODES)
def test_unpatched_upstream_fails_open_on_unknown_behavior(rig, adapter, mode):
    def guard(data):
        return ToolGuardrailFunctionOutput(output_info=None, behavior={"type": "deny"})

    failsecure.uninstall()
    try:
        rig.run([rig_guardrail(guard)], mode=mode)
        assert rig.tool.runs() == [{"command": "harmless"}]  # upstream: "deny" reads as allow
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    rig.tool.marker.unlink()
    rig.run([rig_guardrail(guard)], mode=mode)
    check_denied(rig, guard, "invalid")


def test_unpatched_upstream_hangs_on_a_sync_guardrail(rig, adapter):
    def guard(data):
        time.sleep(0.6)  # upstream blocks the event loop for as long as it takes
        return ToolGuardrailFunctionOutput.allow()

    failsecure.uninstall()
    try:
        start = time.monotonic()
        rig.run([rig_guardrail(guard)])
        assert time.monotonic() - start >= 0.6 and rig.tool.runs()
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"


# ---------------------------------------------------------------- observers untouched


@pytest.mark.parametrize("mode", MODES)
def test_output_guardrails_untouched(rig, mode):
    seen = []

    @tool_output_guardrail
    def watcher(data):
        seen.append(data.output)
        return ToolGuardrailFunctionOutput.reject_content("output hidden")

    rig.model = None
    from failsecure_oa_rig import agent_with, make_model, run

    tool = rig.tool.build([rig_guardrail(allow)])
    tool.tool_output_guardrails = [watcher]
    model = make_model({"command": "harmless"})
    run(agent_with(tool, model), mode)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert seen == ["ran harmless"] and model.told["call_failsecure_1"] == "output hidden"


@pytest.mark.parametrize("mode", MODES)
def test_parallel_calls_each_judged(rig, mode):
    def guard(data):
        if data.context.tool_call_id == "call_failsecure_1_1":
            raise RuntimeError("second call only")
        return ToolGuardrailFunctionOutput.allow()

    rig.run([rig_guardrail(guard)], mode=mode, calls=2)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert rig.told("call_failsecure_1_1").endswith("failed closed (raised)")
    assert sorted(e["outcome"] for e in rig.events()) == ["allow", "deny"]


def rig_guardrail(fn):
    from failsecure_oa_rig import guardrail

    return guardrail(fn)
