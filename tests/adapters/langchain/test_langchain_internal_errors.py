"""failsecure's own failure while gating a tool call (issue 28, one internal-error idiom):
the call is denied and audited under ``failsecure:internal`` (not under the framework
hook's name, whose role a user's config may set), reported once as an internal error
with the exception's type only; nothing of the exception's text reaches the model, the
audit or stderr. Its twin: the same handler through the intact adapter allows."""

from __future__ import annotations

import asyncio

import pytest

from failsecure import report
from failsecure_langchain_rig import handler

SECRET = "sk-live-0123456789"


def allow(serialized, input_str, **kwargs):
    return None


def run(rig, mode):
    tool = rig.marker.tool(is_async=mode == "async")
    config = {"callbacks": [handler("Allowing", allow)]}
    try:
        if mode == "sync":
            tool.invoke({"command": "ls"}, config=config)
        else:
            asyncio.run(tool.ainvoke({"command": "ls"}, config=config))
    except Exception as exc:  # noqa: BLE001
        return exc
    return None


@pytest.mark.internal_errors
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_failsecure_failing_while_gating_denies_as_failsecure_internal(rig, adapter, monkeypatch, capfd, mode):
    def broken(*args, **kwargs):
        raise RuntimeError(SECRET)

    monkeypatch.setattr(adapter, "_gate_calls", broken)
    exc = run(rig, mode)
    assert not rig.marker.ran and exc is not None
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", "raised", "failsecure:internal")
    assert event.get("exception_type") == "RuntimeError"
    said = [e for e in report.INTERNAL_ERRORS if e.type == "RuntimeError"]
    assert said and all("failsecure:internal" in e.message and SECRET not in e.message for e in said)
    out, err = capfd.readouterr()
    assert SECRET not in str(exc) and SECRET not in out + err and SECRET not in rig.audit_path.read_text()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_intact_adapter_allows_the_same_call(rig, mode):
    assert run(rig, mode) is None
    assert rig.marker.ran
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("abstain", None, None)
    assert not report.INTERNAL_ERRORS
