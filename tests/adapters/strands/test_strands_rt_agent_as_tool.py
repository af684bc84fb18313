"""Red team of strands' agents as tools (``Agent.as_tool()``): the parent's gates judge
the call of the sub-agent (its ``input``), and the sub-agent's own before-tool gates judge
the sub-agent's tool calls (its own ``ToolExecutor._stream``); a raising gate of the
sub-agent cancels the sub-agent's tool (``raised``) and the run goes on. A preserved
context (``preserve_context=True``) and ``delegate=True`` alike. Each deny has an allow
twin and asserts which branch denied."""

import pytest
from failsecure_strands_rig import make_model, provider


def _worker_gate_raising(event):
    raise RuntimeError("worker policy down")


def _worker_gate_quiet(event):
    return None


def _parent_policy(event):
    if "forbidden" in str(event.tool_use["input"].get("input", "")):
        event.cancel_tool = "parent policy: forbidden"


def _run(rig, worker_gate, request="do it", **as_tool):
    from strands import Agent

    worker = Agent(name="worker", model=make_model([("run_command", {"command": "echo hi"})]),
                   tools=[rig.marker.tool()], hooks=[provider(worker_gate)], callback_handler=None)
    tool = worker.as_tool(name="worker", description="the worker", **as_tool)
    parent = Agent(model=make_model([("worker", {"input": request})]), tools=[tool],
                   hooks=[provider(_parent_policy)], callback_handler=None)
    return parent("go")


AS_TOOL = [pytest.param({}, id="plain"), pytest.param({"preserve_context": True}, id="preserved")]


@pytest.mark.parametrize("as_tool", AS_TOOL)
def test_the_sub_agents_raising_gate_cancels_its_tool(rig, as_tool):
    _run(rig, _worker_gate_raising, **as_tool)
    assert not rig.marker.ran
    denies = [e for e in rig.events() if e["outcome"] == "deny"]
    assert [e["tool"] for e in denies] == ["run_command"]
    o = rig.outcome_of("_worker_gate_raising", denies[0])
    assert (o["failure"], o["exception_type"]) == ("raised", "RuntimeError")


@pytest.mark.parametrize("as_tool", AS_TOOL)
def test_the_sub_agents_quiet_gate_runs_its_tool(rig, as_tool):
    _run(rig, _worker_gate_quiet, **as_tool)
    assert rig.marker.runs() == ["echo hi"]
    assert "deny" not in {e["outcome"] for e in rig.events()}


def test_the_parents_gate_denying_the_sub_agent_call_runs_nothing(rig):
    _run(rig, _worker_gate_quiet, request="forbidden")
    assert not rig.marker.ran
    denies = [e for e in rig.events() if e["outcome"] == "deny"]
    assert [(e["tool"], e["hook"].rsplit(".", 1)[-1]) for e in denies] == [("worker", "_parent_policy")]
