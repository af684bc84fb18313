"""The settling rule through the SDK's real guardrail loop (issue 25): a guardrail that
stamps a fresh value into the arguments each time it runs is not denied; a guardrail
after the last rewrite runs once; a deny after a rewrite stands; a fight is denied."""

import itertools
import json

import pytest
from agents import ToolGuardrailFunctionOutput

MODES = ["sync", "async"]
_fresh = itertools.count()


def hook_of(fn):
    return f"openai-agents:{fn.__module__}.{fn.__qualname__}"


def guardrail(fn):
    from failsecure_oa_rig import guardrail as make

    return make(fn)


def arguments(data):
    return json.loads(data.context.tool_call.arguments)


def write(data, value):
    text = json.dumps(value)
    data.context.tool_call.arguments = text
    data.context.tool_arguments = text


def stamper(data):  # an idempotency key, fresh on every run
    write(data, dict(arguments(data), idempotency_key=f"k-{next(_fresh)}"))
    return ToolGuardrailFunctionOutput.allow()


def policy(data):
    if "forbidden" in arguments(data)["command"]:
        return ToolGuardrailFunctionOutput.reject_content("policy: forbidden")
    return ToolGuardrailFunctionOutput.allow()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", ["stamper-last", "stamper-first"])
def test_a_stamping_guardrail_is_not_denied(rig, mode, order):
    seen = []

    def watching_policy(data):
        seen.append(arguments(data))
        return policy(data)

    gates = [watching_policy, stamper] if order == "stamper-last" else [stamper, watching_policy]
    rig.run([guardrail(g) for g in gates], mode=mode)
    assert rig.tool.runs() == [{"command": "harmless"}]
    event = rig.last()
    assert event["outcome"] == "allow" and event["failure"] is None
    assert "idempotency_key" in seen[-1]  # the policy judged the stamped arguments


@pytest.mark.parametrize("mode", MODES)
def test_a_stamped_call_the_policy_denies_is_denied(rig, mode):
    rig.run([guardrail(policy), guardrail(stamper)], {"command": "forbidden rm"}, mode)
    assert rig.tool.runs() == [] and rig.told() == "policy: forbidden"
    assert rig.last()["hook"] == hook_of(policy)


@pytest.mark.parametrize("mode", MODES)
def test_guardrails_after_the_last_rewrite_run_once(rig, mode):
    runs = {"before": 0, "after": 0}

    def before(data):
        runs["before"] += 1
        return ToolGuardrailFunctionOutput.allow()

    def rewriter(data):
        if arguments(data)["command"] == "harmless":
            write(data, {"command": "harmless rewritten"})
        return ToolGuardrailFunctionOutput.allow()

    def after(data):  # a side effect: once is enough
        runs["after"] += 1
        return ToolGuardrailFunctionOutput.allow()

    rig.run([guardrail(before), guardrail(rewriter), guardrail(after)], mode=mode)
    assert rig.tool.runs() == [{"command": "harmless rewritten"}]
    assert runs == {"before": 2, "after": 1}


@pytest.mark.parametrize("mode", MODES)
def test_a_deny_after_a_rewrite_stands(rig, mode):
    looks = []

    def flipping(data):  # allows its first look, rejects the rewritten call
        looks.append(arguments(data)["command"])
        if len(looks) == 1:
            return ToolGuardrailFunctionOutput.allow()
        return ToolGuardrailFunctionOutput.reject_content("flipping: no")

    def rewriter(data):
        write(data, {"command": "harmless rewritten"})
        return ToolGuardrailFunctionOutput.allow()

    rig.run([guardrail(flipping), guardrail(rewriter), guardrail(stamper)], mode=mode)
    assert rig.tool.runs() == [] and rig.told() == "flipping: no"
    assert looks == ["harmless", "harmless rewritten"]
    assert rig.last()["hook"] == hook_of(flipping)


@pytest.mark.parametrize("mode", MODES)
def test_two_guardrails_fighting_over_one_field_are_denied(rig, mode):
    def one(data):
        write(data, {"command": "harmless one"})
        return ToolGuardrailFunctionOutput.allow()

    def two(data):
        write(data, {"command": "harmless two"})
        return ToolGuardrailFunctionOutput.allow()

    rig.run([guardrail(one), guardrail(two)], mode=mode)
    assert rig.tool.runs() == []
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", "invalid", "openai-agents:tool_input_guardrails")
    # twin: two guardrails that agree settle
    rig.run([guardrail(one), guardrail(one)], mode=mode)
    assert rig.tool.runs() == [{"command": "harmless one"}]
