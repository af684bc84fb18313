"""A plugin gate's ASK about a call of a namespaced function tool (``tool_namespace``,
the model's call carrying the namespace): the SDK keys the human's approval by the
tool's qualified name / lookup key, not its bare name. The guardrail path must find that
approval: an approved call runs (never a false deny), a rejected one does not."""

from __future__ import annotations

import json

import pytest

MODES = ["sync", "async"]
NAMESPACE = "ops"


def namespaced_model(arguments):
    """The scripted model, its call carrying the tool's namespace."""
    from failsecure_oa_rig import CALL_ID, TOOL, make_model
    from openai.types.responses import ResponseFunctionToolCall

    model = make_model(arguments)
    scripted = type(model).get_response

    async def get_response(self, *args, **kwargs):
        answer = await scripted(self, *args, **kwargs)
        answer.output = [
            ResponseFunctionToolCall(type="function_call", call_id=CALL_ID, name=TOOL, namespace=NAMESPACE,
                                     arguments=json.dumps(arguments), id="fc_ns", status="completed")
            if getattr(item, "type", None) == "function_call" else item
            for item in answer.output
        ]
        return answer

    type(model).get_response = get_response
    return model


def run_namespaced(rig, arguments, mode, state=None):
    from agents import tool_namespace
    from failsecure_oa_rig import agent_with, run

    if state is None:
        rig.model = namespaced_model(arguments)
        (tool,) = tool_namespace(name=NAMESPACE, description="operations", tools=[rig.tool.build()])
        rig.agent = agent_with(tool, rig.model)
    return run(rig.agent, mode, state=state)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("approve", [True, False], ids=["approved", "rejected"])
def test_a_human_answer_to_a_plugin_ask_about_a_namespaced_tool_is_found(rig, asking_plugin, mode, approve):
    result = run_namespaced(rig, {"command": "sensitive"}, mode)
    assert rig.tool.runs() == [] and len(result.interruptions) == 1
    assert rig.events()[0]["outcome"] == "ask"
    state = result.to_state()
    (state.approve if approve else state.reject)(result.interruptions[0])
    run_namespaced(rig, None, mode, state=state)
    assert rig.tool.runs() == ([{"command": "sensitive"}] if approve else [])
    if approve:
        assert rig.told() == "ran sensitive"
    else:
        assert rig.told() != "ran sensitive"


@pytest.mark.parametrize("mode", MODES)
def test_a_namespaced_tool_no_plugin_ask_runs(rig, asking_plugin, mode):
    """Twin: a call the plugin gate does not ask about runs without an interruption."""
    result = run_namespaced(rig, {"command": "plain"}, mode)
    assert result.interruptions == [] and rig.tool.runs() == [{"command": "plain"}]
