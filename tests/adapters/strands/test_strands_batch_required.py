"""A ``required`` naming a user's ``BeforeToolsEvent`` callback (the batch gate): the batch
gates judge the turn's tool uses before each call's ``BeforeToolCallEvent`` decides, so a
batch gate that judged the call is there and a ``required`` naming it is met (found by the
conformance kit's ``batch`` kind: "required gate present" was denied ``missing``). One that
is not registered is still missing; one that cancels the batch still denies."""

from failsecure_strands_rig import batch_provider


def _allow_batch(event):
    return None


def _cancel_forbidden(event):
    if any("forbidden" in str(c.get("toolUse", {}).get("input")) for c in event.message["content"]):
        event.cancel = "forbidden batch"


def test_a_required_batch_gate_that_judged_the_call_is_met_and_runs(rig):
    rig.config(top=f'required = ["strands:{__name__}._allow_batch"]')
    rig.agent(hooks=[batch_provider(_allow_batch)], command="ls")("go")
    assert rig.marker.runs() == ["ls"]
    assert all(e["failure"] != "missing" for e in rig.events())


def test_a_required_batch_gate_not_registered_denies_missing(rig):
    rig.config(top=f'required = ["strands:{__name__}._cancel_forbidden"]')
    rig.agent(hooks=[batch_provider(_allow_batch)], command="ls")("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "missing")


def test_a_required_batch_gate_that_cancels_still_denies(rig):
    rig.config(top=f'required = ["strands:{__name__}._cancel_forbidden"]')
    rig.agent(hooks=[batch_provider(_cancel_forbidden)], command="forbidden rm")("go")
    assert not rig.marker.ran
    last = rig.last()
    assert (last["outcome"], last["hook"]) == ("deny", f"strands:{__name__}._cancel_forbidden")


def test_a_required_batch_gate_that_lets_a_harmless_batch_run_is_met(rig):
    rig.config(top=f'required = ["strands:{__name__}._cancel_forbidden"]')
    rig.agent(hooks=[batch_provider(_cancel_forbidden)], command="ls")("go")
    assert rig.marker.runs() == ["ls"]
