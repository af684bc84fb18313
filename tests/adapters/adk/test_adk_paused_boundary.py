"""A call the confirmation gate held for a human is not a call the gates allowed to run.

From 2.8 ADK asks every tool's ``check_require_confirmation`` in
``apply_confirmation_gate``, after the before-tool stages allowed the call, and answers
the call "requires confirmation" instead of running it: the gate holds for a tool whose
own ``run_async`` does not check (ADK's own words). The before-tool stages' allow granted
the call at the tool boundary; a code path that then runs the held call's tool itself
(an ``after_tool_callback`` that retries a tool whose answer reads as an error, a wrapper)
must not find that grant: the human has not confirmed it. Under failsecure the hold takes
the grant back, so such a run is ungoverned (denied); the human's confirmation on resume
still runs the call (allow twin)."""

from __future__ import annotations

import importlib.util

import failsecure_adk_rig as adk_rig
import pytest

TOOL = adk_rig.TOOL
HELD = {"error": "This tool call requires confirmation, please approve or reject."}

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("google.adk.tools._confirmation_utils") is None,
    reason="ADK asks a plain tool class's check_require_confirmation before run_async from 2.8 only",
)


def held_tool_factory(marker, outcome, confirm, answer=True):
    """``run_command`` as a plain ``BaseTool`` subclass whose confirmation ADK's gate asks
    (``answer``: True, it always wants a human; an exception: it raises) and whose
    ``run_async`` does not check it itself."""
    from google.adk.tools.base_tool import BaseTool
    from google.genai import types

    class HeldTool(BaseTool):
        def _get_declaration(self):
            return types.FunctionDeclaration(name=self.name, description=self.description)

        async def check_require_confirmation(self, args, tool_context):
            if isinstance(answer, BaseException):
                raise answer
            return answer

        async def run_async(self, *, args, tool_context):
            marker.write_text(str(args.get("command")))
            outcome.ran.append(dict(args))
            return {"ok": True}

    return HeldTool(name=TOOL, description="Run a command (the test tool: writes a marker file).")


def allow_all():
    async def callback(tool, tool_args, tool_context):
        return None

    return adk_rig.plugin("allow", callback)


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def test_an_after_tool_callback_retrying_a_held_call_is_ungoverned(rig, mode):
    seen: list = []

    async def retry_on_error(tool, args, tool_context, tool_response):
        if isinstance(tool_response, dict) and "error" in tool_response and not seen:
            try:
                return await tool.run_async(args=args, tool_context=tool_context)
            except PermissionError as exc:
                seen.append(type(exc).__name__)
        return None

    out = rig.run({"command": "unconfirmed"}, mode, plugins=[allow_all()], after=retry_on_error,
                  tool_factory=held_tool_factory)
    assert out.ran == [] and not rig.ran, "the held call ran without the human's confirmation"
    assert seen == ["Ungoverned"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_an_after_tool_callback_retrying_a_call_its_confirmation_denied_is_ungoverned(rig, mode):
    """The tool class's confirmation raised: failsecure denied the call there; a retry
    of it must not run it on the before-tool stages' allow."""
    seen: list = []

    async def retry_on_error(tool, args, tool_context, tool_response):
        if isinstance(tool_response, dict) and "error" in tool_response and not seen:
            try:
                return await tool.run_async(args=args, tool_context=tool_context)
            except PermissionError as exc:
                seen.append(type(exc).__name__)
        return None

    def factory(marker, outcome, confirm):
        return held_tool_factory(marker, outcome, confirm, answer=RuntimeError("sk-held-4711"))

    out = rig.run({"command": "denied"}, mode, plugins=[allow_all()], after=retry_on_error, tool_factory=factory)
    assert out.ran == [] and not rig.ran, "the denied call ran on a retry"
    assert seen == ["Ungoverned"]
    denied = [e for e in rig.events() if e["outcome"] == "deny"]
    assert [o["failure"] for o in denied[0]["outcomes"]] == ["raised"]
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]
    assert "sk-held-4711" not in rig.audit_path.read_text() and "sk-held-4711" not in out.told()


def test_a_held_call_is_asked_and_runs_once_confirmed(rig, mode):
    out = rig.run({"command": "confirmed"}, mode, plugins=[allow_all()], resume={"confirmed": True},
                  tool_factory=held_tool_factory)
    assert out.error is None, out.error
    assert HELD in out.responses
    assert out.ran == [{"command": "confirmed"}] and out.response == {"ok": True}
    assert ungoverned(rig) == []


def test_a_held_call_rejected_on_resume_does_not_run(rig, mode):
    out = rig.run({"command": "rejected"}, mode, plugins=[allow_all()], resume={"confirmed": False},
                  tool_factory=held_tool_factory)
    assert out.ran == [] and not rig.ran
    assert out.response == {"error": "This tool call is rejected."}
