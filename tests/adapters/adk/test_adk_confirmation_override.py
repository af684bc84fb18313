"""A tool class's own ``check_require_confirmation`` (inventory row 5) is an approval gate,
like the ``require_confirmation`` predicate: ADK asks it before the tool runs (2.13:
``apply_confirmation_gate``, after the before-tool stages; every release:
``FunctionTool.run_async``, for a FunctionTool subclass) and again when a confirmation
comes back. Upstream runs it with no deadline, crashes the run when it raises and reads
junk as "run it" (2.13: anything but ``True``; 2.7.1: anything falsy). Under failsecure
it runs under the guard: a raise, a hang past the deadline, a late answer or an answer
that is not a bool denies the call in the adapter's deny shape, the deny the audit
records; ``True`` still asks a human and ``False`` still runs the tool.

Every deny asserts the audited failure category and has an allow twin; ``mode`` runs each
through ``Runner.run`` and ``Runner.run_async``."""

from __future__ import annotations

import asyncio
import time

import failsecure_adk_rig as adk_rig
import pytest

import failsecure
from failsecure import activation
from failsecure.adapters import adk

SECRET = "sk-adk-override-9021"
ASKED = {"error": "This tool call requires confirmation, please approve or reject."}
CONFIRMED = {"confirmed": True}
REJECTED = {"confirmed": False}


def _version() -> tuple:
    from importlib.metadata import version

    return tuple(int(p) for p in version("google-adk").split(".")[:2])


def confirming(*values, name="ShellTool", delay=None):
    """A FunctionTool subclass whose ``check_require_confirmation`` answers ``values`` in
    turn (an exception class is raised), then repeats the last one; ``delay``: seconds it
    sleeps first (awaiting)."""
    seen = []

    async def check(self, args, tool_context):
        value = values[min(len(seen), len(values) - 1)]
        seen.append(dict(args))
        if delay:
            await asyncio.sleep(delay)
        if isinstance(value, type) and issubclass(value, BaseException):
            raise value(SECRET)
        return value

    cls = adk_rig.confirming_class(name, check)
    cls.seen = seen
    return cls


def hook_of(cls) -> str:
    method = vars(cls)["check_require_confirmation"]
    method = getattr(method, "__wrapped__", method)
    return f"google-adk:{method.__module__}.{method.__qualname__}"


def told_deny(cls, category: str) -> dict:
    """The deny the model is told: the hook and the failure category the audit records."""
    return {"error": f"failsecure: hook '{hook_of(cls)}' failed closed ({category})"}


def denied_as(rig, cls, category: str, exception_type=None) -> None:
    event = rig.last()
    assert event["outcome"] == "deny", event
    o = rig.outcome_of(f"{cls.__qualname__}.check_require_confirmation", event)
    assert o["hook"] == hook_of(cls)
    assert (o["failure"], o["exception_type"]) == (category, exception_type)
    assert SECRET not in rig.audit_path.read_text()


# ---------------------------------------------------------------- allow twins


def test_an_override_that_answers_false_runs_the_tool(rig, mode):
    tool_class = confirming(False)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert out.error is None, out.error
    assert rig.ran and out.response == {"ok": True}
    assert tool_class.seen and all(s == {"command": "harmless"} for s in tool_class.seen)
    assert all(e["outcome"] != "deny" for e in rig.events())


def test_an_override_inside_its_deadline_runs_the_tool(rig, mode):
    out = rig.run({"command": "harmless"}, mode, tool_class=confirming(False, delay=0.05))
    assert out.error is None, out.error
    assert rig.ran and out.response == {"ok": True}


def test_an_override_that_answers_true_still_asks_a_human(rig, mode):
    out = rig.run({"command": "harmless"}, mode, tool_class=confirming(True))
    assert not rig.ran
    assert out.response == ASKED  # upstream's own pause: nothing failed, nothing denied
    assert out.asked and out.asked[0]["originalFunctionCall"]["args"] == {"command": "harmless"}


def test_the_override_is_asked_once_per_call(rig, mode):
    """2.13 asks it in apply_confirmation_gate and again in FunctionTool.run_async: the
    method runs once, the second ask gets the same answer."""
    tool_class = confirming(False)
    rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert rig.ran and len(tool_class.seen) == 1


# ---------------------------------------------------------------- failures deny


@pytest.mark.parametrize("exc_type", [RuntimeError, SystemExit])
def test_a_raising_override_denies(rig, mode, exc_type):
    tool_class = confirming(exc_type)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert not rig.ran and out.error is None  # upstream: the run crashes with the text
    assert out.response == told_deny(tool_class, "raised")
    denied_as(rig, tool_class, "raised", exc_type.__name__)
    assert SECRET not in out.told()


@pytest.mark.parametrize("answer", [None, 0, 1, "", "yes", [], {"confirm": False}], ids=repr)
def test_an_override_answering_junk_denies(rig, mode, answer):
    tool_class = confirming(answer)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert not rig.ran  # upstream runs the tool for junk (2.13: all of it; 2.7.1: the falsy ones)
    assert out.response == told_deny(tool_class, "invalid")
    denied_as(rig, tool_class, "invalid")


def test_an_override_past_its_deadline_denies(rig, mode):
    tool_class = confirming(False, delay=2)
    started = time.monotonic()
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert not rig.ran  # upstream waits, then runs the tool
    assert out.response == told_deny(tool_class, "timeout")
    denied_as(rig, tool_class, "timeout")
    assert time.monotonic() - started < 1.9


def test_an_override_that_answers_after_its_deadline_is_a_timeout(rig, mode):
    """It holds the loop (no await) past the deadline, then answers False: a late answer."""

    async def check(self, args, tool_context):
        time.sleep(0.6)
        return False

    tool_class = adk_rig.confirming_class("LateTool", check)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert not rig.ran
    assert out.response == told_deny(tool_class, "timeout")
    denied_as(rig, tool_class, "timeout")


def test_an_override_set_as_observer_does_not_deny(rig, mode):
    tool_class = confirming(RuntimeError)
    rig.config(f'[hooks."{hook_of(tool_class)}"]\nrole = "observer"\n')
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert rig.ran and out.response == {"ok": True}
    assert rig.outcome_of("ShellTool.check_require_confirmation")["failure"] == "raised"


# ---------------------------------------------------------------- required, precedence


def test_a_required_override_that_is_there_runs_the_tool(rig, mode):
    tool_class = confirming(False)
    rig.config(top=f'required = ["{hook_of(tool_class)}"]')
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert out.error is None, out.error
    assert rig.ran and out.response == {"ok": True}  # asked after the before-tool stages: counted as there


def test_a_required_override_that_is_not_there_denies(rig, mode):
    tool_class = confirming(False)
    rig.config(top=f'required = ["{hook_of(tool_class)}"]')
    out = rig.run({"command": "harmless"}, mode)  # a plain FunctionTool: no override
    assert not rig.ran
    assert rig.outcome_of("ShellTool.check_require_confirmation")["failure"] == "missing"


def _plugin(name, decide):
    async def callback(tool, tool_args, tool_context):
        return decide(tool_args)

    return adk_rig.plugin(name, callback)


def test_a_plugin_that_allows_does_not_outrank_a_raising_override(rig, mode):
    tool_class = confirming(RuntimeError)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class, plugins=[_plugin("policy", lambda a: None)])
    assert not rig.ran and out.response == told_deny(tool_class, "raised")
    denied_as(rig, tool_class, "raised", "RuntimeError")


def test_a_plugin_that_allows_and_an_override_that_answers_false_run(rig, mode):
    out = rig.run({"command": "harmless"}, mode, tool_class=confirming(False), plugins=[_plugin("policy", lambda a: None)])
    assert rig.ran and out.response == {"ok": True}


def test_a_plugin_deny_stands_whatever_the_override_answers(rig, mode):
    tool_class = confirming(False)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class,
                  plugins=[_plugin("policy", lambda a: {"error": "no"})])
    assert not rig.ran and out.response == {"error": "no"}
    assert tool_class.seen == []  # the call was answered before ADK asks for a confirmation


# ---------------------------------------------------------------- the resume


def test_a_confirmed_call_runs_on_resume(rig, mode):
    tool_class = confirming(True)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class, resume=CONFIRMED)
    assert out.error is None, out.error
    assert rig.ran and out.ran == [{"command": "harmless"}] and out.response == {"ok": True}
    assert all(e["outcome"] != "deny" for e in rig.events())


def test_a_rejected_call_does_not_run_on_resume(rig, mode):
    out = rig.run({"command": "harmless"}, mode, tool_class=confirming(True), resume=REJECTED)
    assert not rig.ran and out.response == {"error": "This tool call is rejected."}


@pytest.mark.parametrize("exc_type", [RuntimeError, SystemExit])
def test_an_override_that_raises_on_resume_denies(rig, mode, exc_type):
    """ADK asks it while it validates the confirmation: a failure there is a deny that
    stands for the re-executed call."""
    tool_class = confirming(True, exc_type, False)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class, resume=CONFIRMED)
    assert not rig.ran, ("the call ran after its deny was audited", tool_class.seen, out.responses)
    assert out.response == told_deny(tool_class, "raised")
    denied = [e for e in rig.events() if e["outcome"] == "deny"]
    assert denied and all(
        rig.outcome_of("ShellTool.check_require_confirmation", e)["failure"] == "raised" for e in denied
    )
    assert SECRET not in out.told()


def test_an_override_that_answers_junk_on_resume_denies(rig, mode):
    tool_class = confirming(True, None)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class, resume=CONFIRMED)
    assert not rig.ran
    assert out.response == told_deny(tool_class, "invalid")
    denied_as(rig, tool_class, "invalid")


# ---------------------------------------------------------------- a BaseTool subclass


def base_tool_class(*values, name="RawShell"):
    """A BaseTool subclass (not a FunctionTool) with its own ``run_async`` and
    ``check_require_confirmation``; its run_async does not ask the method itself."""
    from google.adk.tools.base_tool import BaseTool
    from google.genai import types

    seen = []

    class Raw(BaseTool):
        def __init__(self, func):
            super().__init__(name=func.__name__, description="Run a command")
            self._func = func

        def _get_declaration(self):
            return types.FunctionDeclaration(
                name=self.name, description=self.description,
                parameters=types.Schema(type=types.Type.OBJECT,
                                        properties={"command": types.Schema(type=types.Type.STRING)}),
            )

        async def run_async(self, *, args, tool_context):
            return self._func(**args)

    async def check(self, args, tool_context):
        value = values[min(len(seen), len(values) - 1)]
        seen.append(dict(args))
        if isinstance(value, type) and issubclass(value, BaseException):
            raise value(SECRET)
        return value

    cls = adk_rig.confirming_class(name, check, base=Raw)
    cls.seen = seen
    return cls


needs_gate = pytest.mark.skipif(_version() < (2, 8), reason="2.7.1 does not ask a BaseTool's own method before it runs")


@needs_gate
def test_a_base_tool_override_that_answers_false_runs(rig, mode):
    tool_class = base_tool_class(False)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert out.error is None, out.error
    assert rig.ran and out.response == {"ok": True} and len(tool_class.seen) == 1


@needs_gate
def test_a_base_tool_override_that_raises_denies(rig, mode):
    tool_class = base_tool_class(RuntimeError)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert not rig.ran and out.error is None
    assert out.response == told_deny(tool_class, "raised")
    denied_as(rig, tool_class, "raised", "RuntimeError")


@needs_gate
def test_a_base_tool_override_answering_junk_denies(rig, mode):
    tool_class = base_tool_class("yes")
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert not rig.ran  # upstream (2.13): anything but True runs the tool
    assert out.response == told_deny(tool_class, "invalid")
    denied_as(rig, tool_class, "invalid")


@pytest.mark.skipif(_version() >= (2, 8), reason="2.8+ asks it in apply_confirmation_gate")
def test_a_base_tool_override_adk_never_asks_is_left_as_upstream(rig, mode):
    """2.7.1 asks a tool's ``check_require_confirmation`` only in FunctionTool's and
    McpTool's run_async: a BaseTool subclass whose run_async does not ask it runs as
    upstream runs it (failsecure does not ask what ADK never asks)."""
    tool_class = base_tool_class(RuntimeError)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class)
    assert rig.ran and out.response == {"ok": True} and tool_class.seen == []


# ---------------------------------------------------------------- patching


def test_overrides_are_guarded_and_uninstall_restores_them(rig, mode):
    tool_class = confirming(RuntimeError)
    original = vars(tool_class)["check_require_confirmation"].__wrapped__
    assert type(vars(tool_class)["check_require_confirmation"]).__name__ == "FunctionWrapper"
    a = activation.get("google-adk")
    failsecure.uninstall()
    try:
        assert vars(tool_class)["check_require_confirmation"] is original
        # upstream: the raise crashes the run (2.7.1's Runner.run only logs it), the tool does not run
        rig.run({"command": "harmless"}, mode, tool_class=tool_class)
        assert not rig.ran and not rig.events()
        later = confirming(RuntimeError, name="LaterTool")  # defined while unpatched
        assert vars(later)["check_require_confirmation"] is not None
        assert not hasattr(vars(later)["check_require_confirmation"], "__wrapped__")
    finally:
        failsecure.install()
    assert a.state == "patched"
    assert type(vars(later)["check_require_confirmation"]).__name__ == "FunctionWrapper"  # found at install
    out = rig.run({"command": "harmless"}, mode, tool_class=later)
    assert not rig.ran and out.response == told_deny(later, "raised")
    assert adk.CONFIRM == "check_require_confirmation"


def _super_calling(predicate_answer):
    seen = []

    async def check(self, args, tool_context):
        seen.append(dict(args))
        from google.adk.tools.function_tool import FunctionTool

        return await FunctionTool.check_require_confirmation(self, args, tool_context)

    def needs_confirmation(command: str):
        if isinstance(predicate_answer, type):
            raise predicate_answer(SECRET)
        return predicate_answer

    cls = adk_rig.confirming_class("SuperTool", check)
    cls.seen = seen
    return cls, needs_confirmation


def test_an_override_that_asks_the_predicate_through_super_runs_on_false(rig, mode):
    tool_class, predicate = _super_calling(False)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class, confirm=predicate)
    assert out.error is None, out.error
    assert rig.ran and out.response == {"ok": True} and len(tool_class.seen) == 1


def test_a_predicate_failing_inside_an_override_denies_as_a_rejection(rig, mode):
    """The predicate's failure is audited under its own hook; the call is answered as ADK
    answers a rejected confirmation (docs: known limits)."""
    tool_class, predicate = _super_calling(RuntimeError)
    out = rig.run({"command": "harmless"}, mode, tool_class=tool_class, confirm=predicate)
    assert not rig.ran
    assert out.response == {"error": "This tool call is rejected."}
    denied = [e for e in rig.events() if e["outcome"] == "deny"]
    assert denied and rig.outcome_of("needs_confirmation", denied[0])["failure"] == "raised"
    assert SECRET not in out.told() and SECRET not in rig.audit_path.read_text()


# ---------------------------------------------------------------- the tool boundary


def _ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def test_a_wrapper_tool_is_denied_when_the_only_gate_is_an_override(rig, mode):
    """The override is a gate of the agent's tools: a wrapper that runs the tool through
    its inner run_async, past the confirmation, is ungoverned and denied."""
    tool_class = confirming(True)  # the tool always wants a human
    rig.run({"command": "smuggled"}, mode, tool_class=tool_class, call=adk_rig.WRAPPER, wrapper=True)
    assert not rig.ran, "the confirmed tool ran through the wrapper"
    assert [(e["tool"], e["outcome"]) for e in _ungoverned(rig)] == [(adk_rig.TOOL, "deny")]


def test_the_same_wrapper_with_no_override_runs_and_is_audited(rig, mode):
    rig.run({"command": "smuggled"}, mode, call=adk_rig.WRAPPER, wrapper=True)
    assert rig.ran
    assert [(e["tool"], e["outcome"]) for e in _ungoverned(rig)] == [(adk_rig.TOOL, "allow")]
