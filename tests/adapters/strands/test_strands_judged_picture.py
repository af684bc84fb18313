"""What an allowed call's grant remembers as judged is the settling's last picture of the
call, taken right after the last gate: a rewrite after it (here while the decision is
being made, by a gate abandoned at its deadline under ``on_error = "allow"``) is no
call the gates judged, so the executor's terminal judges it again before it runs. An
intervention handler another handler appends during the dispatch (upstream iterates
the live list) is a gate of the same call. A callback swapped for another one is
named and run as the new one (the per-callback cache keeps its object: no id reuse).
Each deny asserts its branch and has an allow twin."""

import gc
import threading

import pytest
from failsecure_strands_rig import provider

from failsecure import plugins
from failsecure.plugins import hookimpl


def _policy(event):
    if "forbidden" in event.tool_use["input"].get("command", ""):
        event.cancel_tool = "policy: forbidden"


class _Late:
    """A gate that hangs past its deadline on its first run, then rewrites the command in
    place (while the decision is being made: ``_Trigger`` lets it go and waits for it)."""

    def __init__(self, to):
        self.to, self.runs = to, 0
        self.go, self.done = threading.Event(), threading.Event()

        def late_gate(event):
            self.runs += 1
            if self.runs == 1:
                self.go.wait(5)
                event.tool_use["input"]["command"] = self.to
                self.done.set()

        self.gate = late_gate


class _Trigger:
    """A failsecure plugin gate (asked after the callbacks settled, before the grant):
    releases the abandoned gate and waits until its rewrite landed."""

    def __init__(self, late):
        self.late = late

    @hookimpl
    def failsecure_pre_tool_call(self, call):
        self.late.go.set()
        assert self.late.done.wait(5)


def _run_late(rig, adapter, to):
    late = _Late(to)
    rig.config(tables=f'[hooks."{adapter.callable_id(late.gate)}"]\non_error = "allow"')
    trigger = _Trigger(late)
    plugins.register(trigger, name="strands-late-trigger")
    try:
        rig.agent(hooks=[provider(_policy, late.gate)], command="echo hi")("go")
    finally:
        plugins.unregister(trigger)
        late.go.set()
    return late


def test_a_rewrite_after_the_last_settling_is_judged_again_and_denied(rig, adapter):
    late = _run_late(rig, adapter, "forbidden")
    assert not rig.marker.ran
    events = rig.events()
    first = [e for e in events if e.get("outcomes") and any(o["hook"].endswith("late_gate") for o in e["outcomes"])][0]
    assert first["outcome"] != "deny"  # the first decision allowed: the late gate's timeout is on_error = "allow"
    assert [o["failure"] for o in first["outcomes"] if o["hook"].endswith("late_gate")] == ["timeout"]
    assert rig.last()["outcome"] == "deny"  # the terminal judged the rewritten call again
    assert rig.outcome_of("._policy")["outcome"] == "deny"
    assert late.runs == 2


def test_a_harmless_rewrite_after_the_last_settling_is_judged_again_and_runs(rig, adapter):
    late = _run_late(rig, adapter, "echo rewritten")
    assert rig.marker.runs() == ["echo rewritten"]
    assert rig.last()["outcome"] != "deny"
    assert late.runs == 2  # judged again by every gate before it ran


# ---------------------------------------------------------------- handlers appended mid-dispatch


def _appending(registry_of, added):
    """An InterventionHandler that appends ``added`` to its registry's handlers once."""
    from strands.interventions import InterventionHandler, Proceed

    def before_tool_call(self, event, **kwargs):
        handlers = registry_of(event)._handlers
        if added not in handlers:
            handlers.append(added)
        return Proceed()

    cls = type("Appending", (InterventionHandler,), {"name": property(lambda self: "appending"),
                                                     "before_tool_call": before_tool_call, "__module__": __name__})
    return cls()


def _answering(answer, label):
    from strands.interventions import InterventionHandler

    def before_tool_call(self, event, **kwargs):
        return answer()

    cls = type(label, (InterventionHandler,), {"name": property(lambda self: label.lower()),
                                               "before_tool_call": before_tool_call, "__module__": __name__})
    return cls()


def _registry(event):
    return event.agent._intervention_registry


def _deny():
    from strands.interventions import Deny

    return Deny(reason="added: no")


def _proceed():
    from strands.interventions import Proceed

    return Proceed()


def test_a_handler_appended_during_the_dispatch_that_denies_denies(rig):
    pytest.importorskip("strands.interventions")
    added = _answering(_deny, "AddedDeny")
    rig.agent(interventions=[_appending(_registry, added)])("go")
    assert not rig.marker.ran
    assert rig.last()["outcome"] == "deny"
    assert rig.outcome_of("AddedDeny.before_tool_call")["outcome"] == "deny"


def test_a_handler_appended_during_the_dispatch_that_proceeds_runs(rig):
    pytest.importorskip("strands.interventions")
    added = _answering(_proceed, "AddedProceed")
    rig.agent(interventions=[_appending(_registry, added)])("go")
    assert rig.marker.ran
    assert rig.last()["outcome"] != "deny"
    assert rig.outcome_of("AddedProceed.before_tool_call")["failure"] is None


# ---------------------------------------------------------------- a swapped callback


def test_a_callback_swapped_for_another_is_named_and_run_as_the_new_one(rig):
    for _ in range(3):  # the first callback, cached, then dropped
        def first(event):
            pass

        rig.agent(hooks=[provider(first)])("go")
    del first
    gc.collect()

    async def second(event):
        event.cancel_tool = "second: no"

    rig.agent(hooks=[provider(second)])("go")
    assert rig.marker.runs() == ["echo hi"] * 3
    assert rig.last()["outcome"] == "deny"
    assert rig.outcome_of(".second")["outcome"] == "deny"


def test_a_callback_swapped_for_another_that_passes_runs(rig):
    def first(event):
        event.cancel_tool = "first: no"

    rig.agent(hooks=[provider(first)])("go")
    assert not rig.marker.ran
    del first
    gc.collect()

    async def second(event):
        pass

    rig.agent(hooks=[provider(second)])("go")
    assert rig.marker.runs() == ["echo hi"]
    assert rig.outcome_of(".second")["failure"] is None
