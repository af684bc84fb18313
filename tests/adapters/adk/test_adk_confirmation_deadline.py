"""A plain ``def`` confirmation predicate (ADK calls it on the loop, from the async
``check_require_confirmation``) that holds the loop past its deadline and then answers
``False`` ("run it"): the answer came after the deadline, a timeout, however the loop
was held (a tool class's own method doing the same: ``test_adk_confirmation_override.py``).
Allow twin: the same predicate inside its deadline runs the tool."""

from __future__ import annotations

import time

import pytest

DEADLINE = 0.3  # the rig's (conftest.DEADLINE)


def hook_of(fn) -> str:
    return f"google-adk:{fn.__module__}.{fn.__qualname__}"


@pytest.mark.parametrize("held, ran", [(DEADLINE * 3, False), (DEADLINE / 6, True)], ids=["past", "inside"])
def test_a_sync_predicate_holding_the_loop(rig, mode, held, ran):
    def needs_confirmation(command: str) -> bool:
        time.sleep(held)
        return False

    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation)
    assert out.error is None, out.error
    assert rig.ran is ran
    if ran:
        assert out.response == {"ok": True}
        return
    assert out.response == {"error": f"failsecure: hook '{hook_of(needs_confirmation)}' failed closed (timeout)"}
    event = rig.last()
    assert event["outcome"] == "deny"
    assert rig.outcome_of(needs_confirmation.__qualname__, event)["failure"] == "timeout"
