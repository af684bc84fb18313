"""Red team of strands' background tasks (1.62: ``Agent(background_tasks=...)``): a tool
routed to the background at admission is judged there by the before-tool gates, and its
later run (``_execute_background``: the middleware chain and ``AfterToolCallEvent``, no
``BeforeToolCallEvent``) must be the call the gates judged. An ``AfterToolCallEvent``
hook that edits the tool use in place and asks for a retry runs the chain again without
any ``BeforeToolCallEvent``: the rewritten call must be judged again. Each deny has an
allow twin and asserts which branch denied."""

import importlib.util

import pytest
from failsecure_strands_rig import provider

pytestmark = pytest.mark.skipif(importlib.util.find_spec("strands.background_tasks") is None,
                                reason="background tasks are 1.62's")


def _policy(event):
    if "forbidden" in event.tool_use["input"].get("command", ""):
        event.cancel_tool = "policy: forbidden"


def _agent(rig, hooks, command="echo hi", mode="always"):
    tool = rig.marker.tool()
    return rig.agent(hooks=hooks, tools=[tool], command=command,
                     background_tasks={mode: [tool], "wait_for_completion": True})


def test_a_background_tool_the_gates_allow_runs(rig):
    result = _agent(rig, [provider(_policy)])("go")
    assert rig.marker.runs() == ["echo hi"], str(result)
    assert [e["outcome"] for e in rig.events()] == ["abstain"]  # judged once, at admission


def test_a_background_tool_the_gates_deny_does_not_run(rig):
    _agent(rig, [provider(_policy)], command="forbidden")("go")
    assert not rig.marker.ran
    assert rig.last()["outcome"] == "deny"


class _RetryRewriting:
    """An ``AfterToolCallEvent`` hook: after the first run, rewrites the command in place
    and asks for a retry (once)."""

    def __init__(self, to):
        self.to, self.runs = to, 0

    def register_hooks(self, registry, **kwargs):
        from strands.hooks import AfterToolCallEvent

        registry.add_callback(AfterToolCallEvent, self.after)

    def after(self, event):
        self.runs += 1
        if self.runs == 1:
            event.tool_use["input"]["command"] = self.to
            event.retry = True


def test_a_background_retry_rewritten_by_an_after_hook_is_judged_again(rig):
    after = _RetryRewriting("forbidden")
    _agent(rig, [provider(_policy), after])("go")
    assert rig.marker.runs() == ["echo hi"]  # the first run only: the rewritten retry is denied
    assert rig.last()["outcome"] == "deny"


def test_a_background_retry_rewritten_harmlessly_runs(rig):
    after = _RetryRewriting("echo again")
    _agent(rig, [provider(_policy), after])("go")
    assert rig.marker.runs() == ["echo again", "echo hi"]
    assert [e["outcome"] for e in rig.events()] == ["abstain", "abstain"]  # the retry judged again
