"""An ``async`` plugin or agent ``before_tool_callback`` that blocks the event loop past
its deadline (``time.sleep`` inside ``async def``: the deadline's timer cannot fire
until it gives the loop back) and then answers "no opinion": the answer came after the
deadline, a timeout deny, audited as such. Allow twin: the same callback blocking the
loop well inside its deadline runs the tool. ``mode``: ``Runner.run`` and ``run_async``."""

from __future__ import annotations

import time

import failsecure_adk_rig as adk_rig
import pytest

DEADLINE = 0.3  # the rig's (conftest.DEADLINE)


def hook_of(fn) -> str:
    return f"google-adk:{fn.__module__}.{fn.__qualname__}"


@pytest.mark.parametrize("held, ran", [(DEADLINE * 3, False), (DEADLINE / 6, True)], ids=["past", "inside"])
def test_a_plugin_callback_blocking_the_loop(rig, mode, held, ran):
    async def callback(tool, tool_args, tool_context):
        time.sleep(held)
        return None

    out = rig.run({"command": "harmless"}, mode, plugins=[adk_rig.plugin("blocking", callback)])
    assert out.error is None, out.error
    assert rig.ran is ran
    if ran:
        assert out.response == {"ok": True}
        return
    assert out.response == {"error": "failsecure: hook 'google-adk:plugin:blocking' failed closed (timeout)"}
    event = rig.last()
    assert event["outcome"] == "deny"
    assert rig.outcome_of("plugin:blocking", event)["failure"] == "timeout"


@pytest.mark.parametrize("held, ran", [(DEADLINE * 3, False), (DEADLINE / 6, True)], ids=["past", "inside"])
def test_an_async_agent_callback_blocking_the_loop(rig, mode, held, ran):
    async def blocking_gate(tool, args, tool_context):
        time.sleep(held)
        return None

    out = rig.run({"command": "harmless"}, mode, before=blocking_gate)
    assert out.error is None, out.error
    assert rig.ran is ran
    if ran:
        assert out.response == {"ok": True}
        return
    assert out.response == {"error": f"failsecure: hook '{hook_of(blocking_gate)}' failed closed (timeout)"}
    event = rig.last()
    assert event["outcome"] == "deny"
    assert rig.outcome_of(blocking_gate.__qualname__, event)["failure"] == "timeout"
