"""A tool's ``require_confirmation`` predicate is an approval gate: it decides whether a
human is asked before the tool runs. Upstream runs it with no deadline, reads falsy junk
(``None``, ``0``, ``""``) as "run it" and crashes the run when it raises. Under failsecure
it runs under the guard: a raise, a hang past the deadline or an answer that is not a
bool denies the call in the adapter's deny shape (the model is told the hook and the
failure the audit records, not ADK's fixed "rejected" text); ``True`` still asks a human
and ``False`` still runs the tool.

Every deny asserts the audited failure category and has an allow twin; ``mode`` runs each
through ``Runner.run`` and ``Runner.run_async``."""

from __future__ import annotations

import asyncio

import pytest

SECRET = "sk-adk-confirm-4711"
ASKED = {"error": "This tool call requires confirmation, please approve or reject."}


def hook_of(fn) -> str:
    return f"google-adk:{fn.__module__}.{fn.__qualname__}"


def told_deny(fn, category: str) -> dict:
    """The deny the model is told: the hook and the failure category the audit records."""
    return {"error": f"failsecure: hook '{hook_of(fn)}' failed closed ({category})"}


def denied_as(rig, fn, category: str, exception_type=None) -> None:
    event = rig.last()
    assert event["outcome"] == "deny", event
    o = rig.outcome_of(fn.__qualname__, event)
    assert o["hook"] == hook_of(fn)
    assert (o["failure"], o["exception_type"]) == (category, exception_type)
    assert SECRET not in rig.audit_path.read_text()


# ---------------------------------------------------------------- allow twins


def test_a_predicate_that_answers_false_runs_the_tool(rig, mode):
    seen = []

    def needs_confirmation(command: str) -> bool:
        seen.append(command)
        return False

    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation)
    assert out.error is None, out.error
    assert rig.ran and out.response == {"ok": True}
    assert seen and set(seen) == {"harmless"}


def test_an_async_predicate_inside_its_deadline_runs_the_tool(rig, mode):
    async def needs_confirmation(command: str) -> bool:
        await asyncio.sleep(0.05)
        return False

    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation)
    assert out.error is None, out.error
    assert rig.ran and out.response == {"ok": True}


def test_a_predicate_that_answers_true_still_asks_a_human(rig, mode):
    def needs_confirmation(command: str) -> bool:
        return True

    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation)
    assert not rig.ran
    assert out.response == ASKED  # upstream's own pause: nothing failed, nothing denied


def test_a_static_confirmation_flag_is_upstreams(rig, mode):
    out = rig.run({"command": "harmless"}, mode, confirm=True)
    assert not rig.ran and out.response == ASKED


# ---------------------------------------------------------------- failures deny


@pytest.mark.parametrize("exc_type", [RuntimeError, SystemExit])
def test_a_raising_predicate_denies(rig, mode, exc_type):
    def needs_confirmation(command: str) -> bool:
        raise exc_type(SECRET)

    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation)
    assert not rig.ran and out.error is None  # upstream: the run crashes with the text
    assert out.response == told_deny(needs_confirmation, "raised")
    denied_as(rig, needs_confirmation, "raised", exc_type.__name__)
    assert SECRET not in out.told()


@pytest.mark.parametrize("answer", [None, 0, "", "yes", [], {"confirm": False}], ids=repr)
def test_a_predicate_answering_junk_denies(rig, mode, answer):
    def needs_confirmation(command: str):
        return answer

    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation)
    assert not rig.ran  # upstream runs the tool for the falsy ones
    assert out.response == told_deny(needs_confirmation, "invalid")
    denied_as(rig, needs_confirmation, "invalid")


def test_an_async_predicate_past_its_deadline_denies(rig, mode):
    async def needs_confirmation(command: str) -> bool:
        await asyncio.sleep(2)
        return False

    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation)
    assert not rig.ran  # upstream waits, then runs the tool
    assert out.response == told_deny(needs_confirmation, "timeout")
    denied_as(rig, needs_confirmation, "timeout")


def test_a_predicate_set_as_observer_does_not_deny(rig, mode):
    def needs_confirmation(command: str):
        raise RuntimeError(SECRET)

    rig.config(f'[hooks."{hook_of(needs_confirmation)}"]\nrole = "observer"\n')
    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation)
    assert rig.ran and out.response == {"ok": True}
    assert rig.outcome_of(needs_confirmation.__qualname__)["failure"] == "raised"


# ---------------------------------------------------------------- required


def test_a_required_predicate_that_is_there_runs_the_tool(rig, mode):
    def needs_confirmation(command: str) -> bool:
        return False

    rig.config(top=f'required = ["{hook_of(needs_confirmation)}"]')
    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation)
    assert out.error is None, out.error
    assert rig.ran and out.response == {"ok": True}  # it is asked after the before-tool stage


def test_a_required_predicate_that_is_not_there_denies(rig, mode):
    def needs_confirmation(command: str) -> bool:
        return False

    rig.config(top=f'required = ["{hook_of(needs_confirmation)}"]')
    out = rig.run({"command": "harmless"}, mode, confirm=True)  # a static flag: no predicate
    assert not rig.ran
    assert rig.outcome_of(needs_confirmation.__qualname__)["failure"] == "missing"
