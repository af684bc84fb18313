"""Block outranks approve from any source, whatever the registration order (the seed:
hermes' "first valid directive wins"); among approves the first wins with its rule_key;
yolo cannot turn a block into a run (one fresh interpreter per approval mode)."""

from __future__ import annotations

import pytest

import failsecure_hermes_rig as H

APPROVE = "return {'action': 'approve', 'message': 'earlier plugin approves', 'rule_key': 'k-first'}"
BLOCK = "return {'action': 'block', 'message': 'later security plugin blocks'}"


@pytest.fixture
def approve_release():
    if not H.has_approve():
        pytest.skip("this hermes-agent release has no approve directive (block-only API)")


def _directive(tool_args=None):
    from hermes_cli import plugins

    details = plugins._get_pre_tool_call_directive_details(H.TOOL, tool_args or {}, tool_call_id="call-1")
    return details.action, details.message, details.rule_key


def test_block_after_approve_wins(rig, approve_release):
    rig.plugin("approver", APPROVE)
    blocker = rig.plugin("security", BLOCK)
    rig.load()
    assert _directive() == ("block", "later security plugin blocks", None)
    out = rig.call()
    assert not out["ran"] and out["result"] == {"error": "later security plugin blocks"}
    assert (rig.last()["hook"], rig.last()["outcome"]) == (blocker, "deny")


def test_block_before_approve_wins(rig, approve_release):
    rig.plugin("security", BLOCK)
    rig.plugin("approver", APPROVE)
    rig.load()
    assert _directive() == ("block", "later security plugin blocks", None)


def test_shell_block_after_python_approve_wins(rig, approve_release):
    rig.plugin("approver", APPROVE)
    hook = rig.shell_hook(rig.script("""echo '{"action": "block", "message": "shell veto"}'"""))
    rig.load()
    assert _directive() == ("block", "shell veto", None)
    assert rig.last()["hook"] == hook


def test_crash_after_approve_wins(rig, approve_release):
    rig.plugin("approver", APPROVE)
    crash = rig.plugin("security", "raise RuntimeError('x')")
    rig.load()
    assert _directive() == ("block", H.fail_closed(crash, "raised"), None)


def test_first_approve_wins_with_its_rule_key(rig, approve_release):
    rig.plugin("first", APPROVE)
    rig.plugin("second", "return {'action': 'approve', 'message': 'second', 'rule_key': 'k-second'}")
    rig.plugin("quiet", "return None")
    rig.load()
    assert _directive() == ("approve", "earlier plugin approves", "k-first")
    assert rig.last()["outcome"] == "ask"


def test_approve_outranks_no_directive(rig, approve_release):
    rig.plugin("quiet", "return None")
    rig.plugin("approver", "return {'action': 'approve'}")
    rig.load()
    assert _directive() == ("approve", None, None)


def test_message_less_block_alone_denies(rig):
    """A gate that meant to block and forgot the message: junk, so it fails closed."""
    hook = rig.plugin("forgetful", "return {'action': 'block'}")
    rig.load()
    out = rig.call()
    assert not out["ran"] and out["result"] == {"error": H.fail_closed(hook, "invalid")}


def test_message_less_block_falls_through_to_approve_when_allowed(rig, approve_release):
    """With ``on_error = "allow"`` for that hook it is dropped, and it does not swallow a
    later approve (the upstream fix's rule)."""
    hook = rig.plugin("forgetful", "return {'action': 'block'}")
    rig.plugin("approver", APPROVE)
    rig.failsecure(f'[hooks."{hook}"]\non_error = "allow"\n')
    rig.load()
    assert _directive() == ("approve", "earlier plugin approves", "k-first")


def test_message_less_block_denies_over_approve_by_default(rig, approve_release):
    hook = rig.plugin("forgetful", "return {'action': 'block'}")
    rig.plugin("approver", APPROVE)
    rig.load()
    assert _directive() == ("block", H.fail_closed(hook, "invalid"), None)


def test_approve_on_block_only_release_fails_closed(rig):
    if H.has_approve():
        pytest.skip("approve is a valid directive from 0.18.1")
    hook = rig.plugin("approver", APPROVE)
    rig.load()
    out = rig.call()
    assert not out["ran"] and out["result"] == {"error": H.fail_closed(hook, "invalid")}


def test_approve_without_a_human_is_blocked_by_hermes(rig, approve_release):
    """Not yolo, no TTY, no gateway: hermes' own approval gate blocks (unchanged)."""
    rig.plugin("approver", APPROVE)
    rig.load()
    out = rig.call()
    assert not out["ran"]
    assert out["result"]["error"].startswith("BLOCKED:")


# ---------------------------------------------------------------- yolo (fresh interpreters)

YOLO = {"HERMES_YOLO_MODE": "1"}


def test_yolo_approve_only_runs(run_fresh, approve_release):
    out = run_fresh({"plugins": [{"stem": "approver", "hook": APPROVE}]}, env=YOLO)
    assert out["ran"] and out["result"] == {"ok": True}
    assert out["events"][-1]["outcome"] == "ask"


def test_yolo_cannot_run_a_block_after_approve(run_fresh, approve_release):
    out = run_fresh({"plugins": [{"stem": "approver", "hook": APPROVE}, {"stem": "security", "hook": BLOCK}]}, env=YOLO)
    assert not out["ran"] and out["result"] == {"error": "later security plugin blocks"}


def test_yolo_cannot_run_a_crashing_guard_after_approve(run_fresh, approve_release):
    out = run_fresh({"plugins": [{"stem": "approver", "hook": APPROVE}, {"stem": "security", "hook": "raise RuntimeError('x')"}]}, env=YOLO)
    assert not out["ran"]
    event = out["events"][-1]
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", "RuntimeError")
    assert out["result"] == {"error": H.fail_closed(event["hook"], "raised")}


# ---------------------------------------------------------------- auto-approve read at call time (in-process)


@pytest.fixture
def session_yolo(approve_release):
    from tools import approval

    token = approval.set_current_session_key("failsecure-yolo-session")
    approval.enable_session_yolo("failsecure-yolo-session")
    yield
    approval.disable_session_yolo("failsecure-yolo-session")
    approval.reset_current_session_key(token)


@pytest.fixture
def cron_approve(approve_release, rig, monkeypatch):
    monkeypatch.setenv("HERMES_CRON_SESSION", "1")
    rig.config = {"approvals": {"cron_mode": "approve"}}


@pytest.mark.parametrize("mode", ["session_yolo", "cron_approve"])
def test_auto_approve_runs_an_approve_only(rig, mode, request):
    request.getfixturevalue(mode)
    rig.plugin("approver", APPROVE)
    rig.load()
    assert rig.call()["ran"]


@pytest.mark.parametrize("mode", ["session_yolo", "cron_approve"])
def test_auto_approve_cannot_run_a_block_or_a_failure(rig, mode, request):
    request.getfixturevalue(mode)
    rig.plugin("approver", APPROVE)
    rig.plugin("security", BLOCK)
    shell = rig.shell_hook(rig.script("exit 1"))
    rig.load()
    out = rig.call()
    assert not out["ran"] and out["result"] == {"error": "later security plugin blocks"}
    outcomes = {o["hook"]: (o["outcome"], o["failure"]) for o in rig.last()["outcomes"]}
    assert outcomes[shell] == ("abstain", "crashed")
