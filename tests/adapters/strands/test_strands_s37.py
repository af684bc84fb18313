"""Session 37 red team (issue 26 variants on Strands): an ``InterruptException`` that
carries no ``Interrupt`` is junk, not "no opinion"; an intervention handler's own
``before_tool_call`` (an instance attribute too) decides how it is awaited; a tool run
that raised does not give its call id back for another tool to run on. Each deny asserts
its failure category and has an allow twin; the fail-open cases show upstream."""

import asyncio

import pytest

from failsecure_strands_rig import provider

SECRET = "s3cr3t-s37-do-not-leak"


def unpatched(adapter):
    class Ctx:
        def __enter__(self):
            adapter.unpatch()

        def __exit__(self, *exc):
            assert adapter.patch() == "patched"

    return Ctx()


# ---------------------------------------------------------------- a junk interrupt


class _NotAnInterrupt:
    name = "approve"  # looks like an interrupt to a name check, is none
    id = "forged"


_JUNK_INTERRUPTS = {"none": lambda: None, "text": lambda: SECRET, "lookalike": _NotAnInterrupt}


def _raising_junk(kind, is_async):
    from strands.interrupt import InterruptException

    if is_async:

        async def gate(event):
            raise InterruptException(_JUNK_INTERRUPTS[kind]())

    else:

        def gate(event):
            raise InterruptException(_JUNK_INTERRUPTS[kind]())

    return gate


@pytest.mark.parametrize("kind", sorted(_JUNK_INTERRUPTS))
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_junk_interrupt_denies_invalid(rig, kind, is_async):
    result = rig.agent(hooks=[provider(_raising_junk(kind, is_async))])("go")
    assert not rig.marker.ran
    assert "(invalid)" in str(result) and SECRET not in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")
    assert rig.outcome_of(".gate")["failure"] == "invalid"


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_real_interrupt_raised_by_hand_asks(rig, is_async):
    """The twin: an InterruptException carrying a real Interrupt stops the run for a human."""
    from strands.interrupt import Interrupt, InterruptException

    def make(event):
        return InterruptException(Interrupt(id=f"by-hand:{event.tool_use['toolUseId']}", name="approve", reason="ok?"))

    if is_async:

        async def gate(event):
            raise make(event)

    else:

        def gate(event):
            raise make(event)

    result = rig.agent(hooks=[provider(gate)])("go")
    assert result.stop_reason == "interrupt" and not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("ask", None)


def test_junk_interrupt_from_a_handler_denies_invalid(rig):
    from strands.interrupt import InterruptException
    from strands.interventions import InterventionHandler

    class Junky(InterventionHandler):
        name = "junky"

        def before_tool_call(self, event, **kwargs):
            raise InterruptException(None)

    rig.agent(interventions=[Junky()])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


def test_junk_interrupt_ends_the_run_upstream(rig, adapter):
    with unpatched(adapter):
        with pytest.raises(Exception):
            rig.agent(hooks=[provider(_raising_junk("none", False))])("go")
    assert not rig.marker.ran  # upstream fails closed (the run ends with an AttributeError)


# ---------------------------------------------------------------- the handler's own method


def _instance_handler(is_async, answer):
    from strands.interventions import InterventionHandler, Proceed

    class Patched(InterventionHandler):
        name = "patched"

        def before_tool_call(self, event, **kwargs):  # the class's: replaced on the instance
            return Proceed()

    handler = Patched()
    if is_async:

        async def before_tool_call(event, **kwargs):
            await asyncio.sleep(0)
            return answer()

    else:

        def before_tool_call(event, **kwargs):
            return answer()

    handler.before_tool_call = before_tool_call  # upstream calls getattr(handler, "before_tool_call")
    return handler


def _proceed():
    from strands.interventions import Proceed

    return Proceed()


def _deny():
    from strands.interventions import Deny

    return Deny(reason="instance says no")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_instance_handler_method_proceeds_and_runs(rig, is_async):
    rig.agent(interventions=[_instance_handler(is_async, _proceed)])("go")
    assert rig.marker.ran
    assert rig.last()["outcome"] == "allow"


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_instance_handler_method_deny_stands(rig, is_async):
    result = rig.agent(interventions=[_instance_handler(is_async, _deny)])("go")
    assert not rig.marker.ran and "DENIED: instance says no" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


def test_instance_async_handler_method_runs_upstream(rig, adapter):
    with unpatched(adapter):
        rig.agent(interventions=[_instance_handler(True, _proceed)])("go")
    assert rig.marker.ran


def test_instance_async_handler_method_hang_denies_timeout(rig, release):
    async def hang():
        await asyncio.sleep(30)

    from strands.interventions import InterventionHandler, Proceed

    class Patched(InterventionHandler):
        name = "patched"

        def before_tool_call(self, event, **kwargs):
            return Proceed()

    handler = Patched()

    async def before_tool_call(event, **kwargs):
        await hang()

    handler.before_tool_call = before_tool_call
    rig.agent(interventions=[handler])("go")
    assert not rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")
