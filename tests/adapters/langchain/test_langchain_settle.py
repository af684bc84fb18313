"""The settling rule through langchain-core's real callback dispatcher (issue 25): a
strict handler that stamps a fresh value into the inputs each time it runs is not
denied; a gate after the last rewrite runs once; a deny after a rewrite stands; two
gates fighting over one field are denied. The handlers are shown a shallow copy of the
tool input (upstream filters it), so what reaches the tool is an in-place change of a
nested container: that is what these hooks do."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from failsecure_langchain_rig import handler, hook_id

MODES = ("sync", "async")
_fresh = itertools.count()


def invoke(callbacks, inputs, mode):
    from langchain_core.tools import StructuredTool

    ran = []

    def run_command(argv: list[str], meta: dict) -> str:
        """Run a command."""
        ran.append({"command": argv[0], "idempotency_key": meta.get("idempotency_key", "")})
        return "ok"

    tool = StructuredTool.from_function(run_command)
    config = {"callbacks": callbacks}
    try:
        if mode == "sync":
            tool.invoke(inputs, config=config)
        else:
            asyncio.run(tool.ainvoke(inputs, config=config))
        return ran, None
    except Exception as exc:  # noqa: BLE001
        return ran, exc


def call(command):
    return {"argv": [command], "meta": {}}


def stamper(serialized, input_str, **kwargs):  # an idempotency key, fresh on every run
    kwargs["inputs"]["meta"]["idempotency_key"] = f"k-{next(_fresh)}"


def policy(serialized, input_str, **kwargs):
    if "forbidden" in kwargs["inputs"]["argv"][0]:
        raise PermissionError("forbidden command")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", ["stamper-last", "stamper-first"])
def test_a_stamping_gate_is_not_denied(rig, mode, order):
    seen = []

    def watching(serialized, input_str, **kwargs):
        seen.append(dict(kwargs["inputs"]["meta"]))
        policy(serialized, input_str, **kwargs)

    pair = [handler("Policy", watching), handler("Stamper", stamper)]
    ran, exc = invoke(pair if order == "stamper-last" else pair[::-1], call("harmless"), mode)
    assert exc is None and len(ran) == 1 and ran[0]["command"] == "harmless"
    assert ran[0]["idempotency_key"].startswith("k-")
    assert "idempotency_key" in seen[-1]  # the policy judged the stamped inputs
    assert rig.last()["failure"] is None


@pytest.mark.parametrize("mode", MODES)
def test_a_stamped_call_the_policy_denies_is_denied(rig, mode):
    ran, exc = invoke([handler("Policy", policy), handler("Stamper", stamper)], call("forbidden rm"), mode)
    assert type(exc).__name__ == "ToolCallDenied" and not ran
    assert rig.outcome_of(hook_id("Policy"))["exception_type"] == "PermissionError"


@pytest.mark.parametrize("mode", MODES)
def test_gates_after_the_last_rewrite_run_once(rig, mode):
    runs = {"before": 0, "after": 0}

    def before(serialized, input_str, **kwargs):
        runs["before"] += 1

    def rewriter(serialized, input_str, **kwargs):
        kwargs["inputs"]["argv"][0] = "harmless rewritten"

    def after(serialized, input_str, **kwargs):  # a side effect: once is enough
        runs["after"] += 1

    ran, exc = invoke([handler("Before", before), handler("Rewriter", rewriter), handler("After", after)], call("harmless"), mode)
    assert exc is None and [r["command"] for r in ran] == ["harmless rewritten"]
    assert runs == {"before": 2, "after": 1}


@pytest.mark.parametrize("mode", MODES)
def test_a_deny_after_a_rewrite_stands(rig, mode):
    looks = []

    def flipping(serialized, input_str, **kwargs):  # allows its first look only
        looks.append(kwargs["inputs"]["argv"][0])
        if len(looks) > 1:
            raise PermissionError("second look")

    def rewriter(serialized, input_str, **kwargs):
        kwargs["inputs"]["argv"][0] = "harmless rewritten"

    callbacks = [handler("Flipping", flipping), handler("Rewriter", rewriter), handler("Stamper", stamper)]
    ran, exc = invoke(callbacks, call("harmless"), mode)
    assert type(exc).__name__ == "ToolCallDenied" and not ran
    assert looks == ["harmless", "harmless rewritten"]
    assert rig.outcome_of(hook_id("Flipping"))["exception_type"] == "PermissionError"


@pytest.mark.parametrize("mode", MODES)
def test_two_gates_fighting_over_one_field_are_denied(rig, mode):
    def one(serialized, input_str, **kwargs):
        kwargs["inputs"]["argv"][0] = "harmless one"

    def two(serialized, input_str, **kwargs):
        kwargs["inputs"]["argv"][0] = "harmless two"

    ran, exc = invoke([handler("One", one), handler("Two", two)], call("harmless"), mode)
    assert type(exc).__name__ == "ToolCallDenied" and not ran
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", "invalid", "langchain:on_tool_start")
    # twin: two gates that agree settle
    ran, exc = invoke([handler("One", one), handler("Again", one)], call("harmless"), mode)
    assert exc is None and [r["command"] for r in ran] == ["harmless one"]
