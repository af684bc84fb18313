"""A HITL review stops the run and asks a person about a call; the run resumes from its
checkpoint with the person's answer. A checkpoint edited in between (``update_state``
replacing the model message's call) resumes with the answer applied to a call the person
never saw: upstream runs it. The answer is about the call shown; a call that changed
since is denied (only the reviewer's own edit runs).

Every deny asserts the audited outcome and has an allow twin; the upstream twin shows
the pinned release running the changed call."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from failsecure_langchain_rig import TOOL, script, tool_messages

MODES = ("sync", "async")


def etc_only(request):
    return "/etc" in request.tool_call["args"]["command"]


def configs():
    kinds = {"when": ({"allowed_decisions": ["approve", "edit", "reject"], "when": etc_only}, {}),
             "always": (True, {})}
    if "interrupt_mode" in inspect.signature(HumanInTheLoopMiddleware.__init__).parameters:
        kinds["per_call"] = ({"allowed_decisions": ["approve", "edit", "reject"], "when": etc_only},
                             {"interrupt_mode": "per_call"})
    return kinds


KINDS = list(configs())


def review(rig, mode, kind, thread, tamper, decision):
    config_of, extra = configs()[kind]
    hitl = HumanInTheLoopMiddleware(interrupt_on={TOOL: config_of}, **extra)
    agent = create_agent(script({"command": "cat /etc/hosts"}), tools=[rig.marker.tool(mode == "async")],
                         middleware=[hitl], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": thread}}

    def go(state):
        if mode == "sync":
            return agent.invoke(state, config=config)
        return asyncio.run(agent.ainvoke(state, config=config))

    assert "__interrupt__" in go({"messages": [{"role": "user", "content": "go"}]})
    if tamper is not None:
        state = agent.get_state(config)
        last = [m for m in state.values["messages"] if isinstance(m, AIMessage)][-1]
        changed = last.model_copy(update={"tool_calls": [{**last.tool_calls[0], "args": {"command": tamper}}]})
        agent.update_state(config, {"messages": [changed]}, as_node="model")
    answer = decision if kind == "per_call" else {"decisions": [decision]}
    return go(Command(resume=answer))


APPROVE = {"type": "approve"}


# per_call: its question is asked inside the tools node; an ``update_state`` there starts
# that node again (a new question), so the changed-checkpoint case is the batched review's
BATCHED = [k for k in KINDS if k != "per_call"]


@pytest.mark.parametrize("kind", BATCHED)
@pytest.mark.parametrize("mode", MODES)
def test_a_call_changed_in_the_checkpoint_before_the_answer_is_denied(rig, mode, kind):
    result = review(rig, mode, kind, f"ck-{mode}-{kind}", "cat /etc/shadow", APPROVE)
    assert not rig.marker.ran  # upstream: the approval of /etc/hosts runs /etc/shadow
    message = tool_messages(result)[-1]
    assert message.status == "error" and "HumanInTheLoopMiddleware" in message.content
    event = rig.last()
    assert event["outcome"] == "deny" and "HumanInTheLoopMiddleware" in event["hook"]
    assert "shadow" not in rig.audit_path.read_text()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_the_approved_call_as_shown_runs(rig, mode, kind):
    """Allow twin: nothing changed in between."""
    review(rig, mode, kind, f"ck-ok-{mode}-{kind}", None, APPROVE)
    assert rig.marker.calls == [{"command": "cat /etc/hosts"}]


@pytest.mark.parametrize("mode", MODES)
def test_a_checkpoint_rewritten_to_the_same_call_runs(rig, mode):
    """Allow twin: the checkpoint is written again with the very call shown."""
    review(rig, mode, "when", f"ck-same-{mode}", "cat /etc/hosts", APPROVE)
    assert rig.marker.calls == [{"command": "cat /etc/hosts"}]


@pytest.mark.parametrize("kind", ["when"])
def test_the_reviewers_edit_runs_though_the_checkpoint_changed(rig, kind):
    """The reviewer's edit replaces the call: it is the person's own call, it runs."""
    edit = {"type": "edit", "edited_action": {"name": TOOL, "args": {"command": "cat /etc/hostname"}}}
    review(rig, "sync", kind, f"ck-edit-{kind}", "cat /etc/shadow", edit)
    assert rig.marker.calls == [{"command": "cat /etc/hostname"}]


def test_a_call_changed_in_the_checkpoint_runs_upstream(rig, upstream):
    with upstream:
        review(rig, "sync", "when", "ck-up", "cat /etc/shadow", APPROVE)
    assert rig.marker.calls == [{"command": "cat /etc/shadow"}]
