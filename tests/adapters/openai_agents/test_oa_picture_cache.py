"""Red-team (rt40): openai-agents' picture cache (``_picture`` / ``_VIEWS``: one picture
per JSON text) under calls that share a text. Two parallel calls of one turn carry the
very same arguments text; a guardrail rewrites one of them (by call id) after the policy
judged both: the policy judges the rewritten one again, its deny stands for that call
only, and the other call, with the shared text, runs as judged. The cache never hands
one call's picture (or a rewritten one) to the other."""

import json

import pytest
from agents import ToolGuardrailFunctionOutput

from failsecure_oa_rig import CALL_ID, guardrail

MODES = ["sync", "async"]
SECOND = f"{CALL_ID}_1"


def arguments(data):
    return json.loads(data.context.tool_call.arguments)


def policy(data):
    if "forbidden" in arguments(data)["command"]:
        return ToolGuardrailFunctionOutput.reject_content("policy: forbidden")
    return ToolGuardrailFunctionOutput.allow()


def rewriting(to):
    def rewriter(data):
        if data.context.tool_call_id == SECOND and arguments(data)["command"] == "harmless":
            text = json.dumps({"command": to})
            data.context.tool_call.arguments = text
            data.context.tool_arguments = text
        return ToolGuardrailFunctionOutput.allow()

    return rewriter


@pytest.mark.parametrize("mode", MODES)
def test_a_rewrite_of_one_of_two_calls_sharing_a_text_is_judged_for_that_call(rig, mode):
    rig.run([guardrail(policy), guardrail(rewriting("forbidden rm"))], mode=mode, calls=2)
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert rig.model.told[SECOND] == "policy: forbidden"
    assert [e["outcome"] for e in rig.events() if e["call_id"] == SECOND][-1] == "deny"
    assert [e for e in rig.events() if e["failure"] == "ungoverned"] == []


@pytest.mark.parametrize("mode", MODES)
def test_an_allowed_rewrite_of_one_of_two_calls_sharing_a_text_runs(rig, mode):
    rig.run([guardrail(policy), guardrail(rewriting("harmless rewritten"))], mode=mode, calls=2)
    assert sorted(r["command"] for r in rig.tool.runs()) == ["harmless", "harmless rewritten"]
    assert [e for e in rig.events() if e["failure"] == "ungoverned"] == []


@pytest.mark.parametrize("mode", MODES)
def test_needs_approval_outcome_shared_by_calls_names_its_own_hook(rig, mode):
    def approval_policy(ctx, params, call_id):
        return False

    rig.run([guardrail(policy)], mode=mode, calls=2, needs_approval=approval_policy)
    assert len(rig.tool.runs()) == 2
    for event in rig.events():
        if event["call_id"] in (CALL_ID, SECOND) and event["outcomes"]:
            hooks = [o["hook"] for o in event["outcomes"]]
            assert all(h.startswith("openai-agents:") for h in hooks)


def test_gathered_runs_sharing_a_text_keep_their_own_decisions(rig):
    """Two runs at once (``asyncio.gather``), the same arguments text and call ids: one
    run's guardrail denies, the other's allows; each run's grant is its own."""
    import asyncio

    from agents import RunConfig, Runner

    import failsecure_oa_rig as R

    def deny_all(data):
        return ToolGuardrailFunctionOutput.reject_content("run a: no")

    def allow_all(data):
        return ToolGuardrailFunctionOutput.allow()

    model_a, model_b = R.make_model({"command": "harmless"}), R.make_model({"command": "harmless"})
    agent_a = R.agent_with(rig.tool.build([guardrail(deny_all)]), model_a)
    agent_b = R.agent_with(rig.tool.build([guardrail(allow_all)]), model_b)

    async def both():
        config = RunConfig(tracing_disabled=True)
        return await asyncio.gather(Runner.run(agent_a, "go", run_config=config), Runner.run(agent_b, "go", run_config=config))

    asyncio.run(both())
    assert rig.tool.runs() == [{"command": "harmless"}]
    assert model_a.told[CALL_ID] == "run a: no" and model_b.told[CALL_ID] == "ran harmless"
    assert [e for e in rig.events() if e["failure"] == "ungoverned"] == []
