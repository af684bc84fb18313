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
import failsecure_adk_rig as adk_rig

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


# ---------------------------------------------------------------- the resume (inventory row 10)
#
# A predicate that answers True pauses the call; the human's ``ToolConfirmation`` comes
# back in the next turn and ADK re-executes the call from the session's history: the
# before-tool stages run again, ADK checks the predicate while it validates the
# confirmation, then asks it again where it answers the call. What runs then must be the
# call every gate judged and the human confirmed; a deny on the way stands.

CONFIRMED = {"confirmed": True}
REJECTED = {"confirmed": False}


def answers(*values):
    """A predicate that answers ``values`` in turn (an exception class is raised), then
    repeats the last one."""
    seen = []

    def needs_confirmation(command: str):
        value = values[min(len(seen), len(values) - 1)]
        seen.append(command)
        if isinstance(value, type) and issubclass(value, BaseException):
            raise value(SECRET)
        return value

    needs_confirmation.seen = seen
    return needs_confirmation


def test_a_confirmed_call_runs_on_resume(rig, mode):
    predicate = answers(True)
    out = rig.run({"command": "harmless"}, mode, confirm=predicate, resume=CONFIRMED)
    assert out.error is None, out.error
    assert out.asked and out.asked[0]["originalFunctionCall"]["args"] == {"command": "harmless"}
    assert rig.ran and out.ran == [{"command": "harmless"}] and out.response == {"ok": True}
    assert all(e["outcome"] != "deny" for e in rig.events())


def test_a_rejected_call_does_not_run_on_resume(rig, mode):
    out = rig.run({"command": "harmless"}, mode, confirm=answers(True), resume=REJECTED)
    assert not rig.ran and out.response == {"error": "This tool call is rejected."}


def test_a_rejection_stands_when_the_predicate_answers_false_on_resume(rig, mode):
    out = rig.run({"command": "harmless"}, mode, confirm=answers(True, False), resume=REJECTED)
    assert not rig.ran  # upstream: False lets the rejected call run
    assert out.response == {"error": "This tool call is rejected."}


def test_a_confirmed_call_whose_predicate_answers_false_on_resume_runs(rig, mode):
    out = rig.run({"command": "harmless"}, mode, confirm=answers(True, False), resume=CONFIRMED)
    assert rig.ran and out.response == {"ok": True}


@pytest.mark.parametrize("exc_type", [RuntimeError, SystemExit])
def test_a_predicate_that_raises_on_resume_denies(rig, mode, exc_type):
    predicate = answers(True, exc_type)
    out = rig.run({"command": "harmless"}, mode, confirm=predicate, resume=CONFIRMED)
    assert not rig.ran
    assert out.response == told_deny(predicate, "raised")
    denied_as(rig, predicate, "raised", exc_type.__name__)
    assert SECRET not in out.told()


def test_a_deny_while_adk_checks_the_confirmation_stands_when_the_predicate_then_allows(rig, mode):
    """ADK asks the predicate twice on resume (validating the confirmation, then where it
    answers the call): a failure in the first ask is a deny the second does not undo."""
    predicate = answers(True, RuntimeError, False)
    out = rig.run({"command": "harmless"}, mode, confirm=predicate, resume=CONFIRMED)
    assert not rig.ran, ("the call ran after its deny was audited", predicate.seen, out.responses)
    assert out.response == told_deny(predicate, "raised")
    denied = [e for e in rig.events() if e["outcome"] == "deny"]
    assert denied and all(rig.outcome_of(predicate.__qualname__, e)["failure"] == "raised" for e in denied)


def test_a_predicate_that_answers_junk_on_resume_denies(rig, mode):
    predicate = answers(True, None)
    out = rig.run({"command": "harmless"}, mode, confirm=predicate, resume=CONFIRMED)
    assert not rig.ran  # upstream: None lets the call run
    assert out.response == told_deny(predicate, "invalid")
    denied_as(rig, predicate, "invalid")


def test_a_predicate_that_hangs_on_resume_denies(rig, mode):
    calls = []

    async def needs_confirmation(command: str) -> bool:
        calls.append(command)
        if len(calls) > 1:
            await asyncio.sleep(2)
        return True

    out = rig.run({"command": "harmless"}, mode, confirm=needs_confirmation, resume=CONFIRMED)
    assert not rig.ran
    assert out.response == told_deny(needs_confirmation, "timeout")
    denied_as(rig, needs_confirmation, "timeout")


def _plugin(name, decide):
    async def callback(tool, tool_args, tool_context):
        return decide(tool_args)

    return adk_rig.plugin(name, callback)


def test_a_plugin_that_denies_on_resume_denies(rig, mode):
    state = {"resumed": False}
    gate = _plugin("policy", lambda args: {"error": "no"} if state["resumed"] else None)
    out = rig.run({"command": "harmless"}, mode, confirm=answers(True), resume=CONFIRMED, plugins=[gate],
                  on_resume=lambda agent: state.update(resumed=True))
    assert not rig.ran and out.response == {"error": "no"}


def test_a_plugin_that_allows_on_resume_runs(rig, mode):
    gate = _plugin("policy", lambda args: None)
    out = rig.run({"command": "harmless"}, mode, confirm=answers(True), resume=CONFIRMED, plugins=[gate])
    assert rig.ran and out.response == {"ok": True}


def _rewriter(new_command):
    def decide(args):
        args["command"] = new_command()
        return None

    return _plugin("rewriter", decide)


def test_arguments_rewritten_otherwise_on_resume_are_not_the_confirmed_call(rig, mode):
    """A before-tool callback that rewrites the arguments on resume makes the tool run
    with arguments nobody confirmed: denied as an argument change (integrity)."""
    state = {"resumed": False}
    gate = _rewriter(lambda: "harmless but other" if state["resumed"] else "harmless")
    out = rig.run({"command": "harmless"}, mode, confirm=answers(True), resume=CONFIRMED, plugins=[gate],
                  on_resume=lambda agent: state.update(resumed=True))
    assert not rig.ran, "a call nobody confirmed ran"
    assert out.response == {"error": "failsecure: hook 'google-adk:arguments' failed closed (invalid)"}
    event = rig.last()
    assert event["outcome"] == "deny"
    assert rig.outcome_of("arguments", event)["failure"] == "invalid"


def test_arguments_rewritten_alike_on_every_pass_run_on_resume(rig, mode):
    gate = _rewriter(lambda: "harmless normalised")
    out = rig.run({"command": "harmless"}, mode, confirm=answers(True), resume=CONFIRMED, plugins=[gate])
    assert rig.ran and out.ran == [{"command": "harmless normalised"}]


def test_a_static_confirmation_runs_on_resume(rig, mode):
    out = rig.run({"command": "harmless"}, mode, confirm=True, resume=CONFIRMED)
    assert rig.ran and out.response == {"ok": True}


def test_a_static_confirmation_with_arguments_rewritten_on_resume_denies(rig, mode):
    state = {"resumed": False}
    gate = _rewriter(lambda: "harmless but other" if state["resumed"] else "harmless")
    out = rig.run({"command": "harmless"}, mode, confirm=True, resume=CONFIRMED, plugins=[gate],
                  on_resume=lambda agent: state.update(resumed=True))
    assert not rig.ran
    assert out.response == {"error": "failsecure: hook 'google-adk:arguments' failed closed (invalid)"}


def test_another_tool_of_the_same_name_on_resume_is_not_the_confirmed_call(rig, mode, tmp_path):
    """The agent's tools are resolved afresh on resume: a tool of the paused call's name
    that is another tool is not what the human confirmed."""
    from google.adk.tools.function_tool import FunctionTool

    other = tmp_path / "other"

    def run_command(command: str) -> dict:
        """Another tool under the paused call's name."""
        other.write_text(command)
        return {"ok": "other"}

    def swap(agent):
        agent.tools = [FunctionTool(run_command, require_confirmation=answers(True))]

    out = rig.run({"command": "harmless"}, mode, confirm=answers(True), resume=CONFIRMED, on_resume=swap)
    assert not other.exists() and not rig.ran
    assert out.response == {"error": "failsecure: hook 'google-adk:arguments' failed closed (invalid)"}


def test_a_callback_stamping_a_key_of_its_own_on_every_pass_runs_on_resume(rig, mode):
    """A fresh value in a key the model's call does not have (a request id) is a stamp,
    not another call: the confirmed call runs."""
    stamps = iter(range(100))

    def decide(args):
        args["request_id"] = f"req-{next(stamps)}"
        return None

    out = rig.run({"command": "harmless"}, mode, confirm=answers(True), resume=CONFIRMED, plugins=[_plugin("stamper", decide)])
    assert rig.ran and out.response == {"ok": True}, out.response
