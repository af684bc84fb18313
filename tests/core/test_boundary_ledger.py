"""The tool boundary's ledger and its ungoverned decision, driven through the core's own
API (``failsecure.boundary``, docs/ungoverned.md): grants by call id and by tool and
arguments, the normalised forms a grant also accepts, ``revoke`` / ``revoke_args``, the
``MAX_GRANTS`` trim, ``leave`` giving a grant back, the marker of the execution under
way, and what an ungoverned call is told and audited (failure ``ungoverned``, the hook id
``<framework>:<where>``, no arguments)."""

import json
import logging

import pytest
from test_boundary import Toy

from failsecure import audit, boundary, failures
from failsecure.adapter import Ungoverned
from failsecure.verdict import Action, Decision, Verdict

CANARY = "canary-9f3e1"


@pytest.fixture(autouse=True)
def nothing_left_inside():
    """Every execution a test let run has left (no marker leaks into the next test)."""
    assert boundary.inside() is None
    yield
    assert boundary.inside() is None


@pytest.fixture
def gated():
    return Toy(gates=["toy:gate"])


def execute(adapter, tool, arguments, call_id=None, failed=False, key=None):
    """One execution at the boundary: "ran" or "denied"."""
    denied, token = boundary.check(adapter, tool, call_id, arguments, key, "Tool.run")
    if denied is not None:
        return "denied"
    boundary.leave(token, failed=failed)
    return "ran"


# ---------------------------------------------------------------- grants


def test_a_grant_outside_a_run_is_nothing(gated):
    boundary.grant("shell", None, {"c": 1})
    boundary.grant("shell", "c1", {"c": 1})
    boundary.revoke("c1")  # no-op outside a run
    boundary.revoke_args("shell", {"c": 1})
    with boundary.run_scope():
        assert execute(gated, "shell", {"c": 1}) == "denied"
        assert execute(gated, "shell", {"c": 1}, "c1") == "denied"


def test_a_plain_normalised_form_is_accepted_once(gated):
    with boundary.run_scope():
        boundary.grant("shell", None, {"n": "5"}, also=({"n": 5},))
        assert execute(gated, "shell", {"n": 5}) == "ran"
        assert execute(gated, "shell", {"n": "5"}) == "denied"  # one grant, one execution
        boundary.grant("shell", None, {"n": "5"}, also=({"n": 5},))
        assert execute(gated, "shell", {"n": 6}) == "denied"
        assert execute(gated, "shell", None) == "denied"
        assert execute(gated, "shell", {"n": "5"}) == "ran"
        boundary.grant("shell", "c1", {"n": "5"}, also=({"n": 5},))
        assert execute(gated, "shell", {"n": 5}, "c1") == "ran"


def test_a_later_form_is_made_once_and_remembered(gated):
    made = []

    def make():
        made.append(1)
        return {"n": 5}

    with boundary.run_scope():
        boundary.grant("shell", None, {"n": "5"}, also=(boundary.Later(make),))
        assert execute(gated, "shell", {"n": 6}) == "denied"  # made now: no match
        assert execute(gated, "shell", {"n": 5}) == "ran"  # the form made before matches
        assert made == [1]


def test_a_judged_later_form_works_on_a_copy_of_what_was_judged(gated):
    """``Later(make, *bound, judged=True)``: the core hands ``make`` a copy of the judged
    arguments; plain ones are rebuilt from the grant's picture (equal in content, type
    and order), so a change to the caller's object after the grant is not in it."""
    seen = []

    def coerce(kind, judged):
        seen.append((kind, judged))
        return {**judged, "n": int(judged["n"])}

    judged = {"n": "5", "f": 1.5, "b": True, "nested": {"l": [1, None, ("t", -0.0)]}}
    expected = {"n": "5", "f": 1.5, "b": True, "nested": {"l": [1, None, ("t", -0.0)]}}
    with boundary.run_scope():
        boundary.grant("shell", None, judged, also=(boundary.Later(coerce, "schema", judged=True),))
        judged["n"] = "6"  # after the grant: not what was judged
        assert execute(gated, "shell", {**expected, "n": 6}) == "denied"  # made now, from the judged copy
        assert execute(gated, "shell", {**expected, "n": 5}) == "ran"
    assert len(seen) == 1 and seen[0][0] == "schema"
    copy = seen[0][1]
    assert copy == {**expected, "n": "5"} and list(copy) == list(expected)
    assert type(copy["b"]) is bool and type(copy["f"]) is float and type(copy["nested"]["l"][2]) is tuple
    assert copy is not judged and copy["nested"] is not judged["nested"]


def test_a_judged_later_form_of_arguments_no_picture_holds_uses_a_snapshot(gated):
    """Arguments that are not plain values (an object among them) are copied at the grant
    (``integrity.snapshot``): the form is made from that copy, not the live object."""

    class Opaque:
        pass

    marker = Opaque()
    seen = []

    def coerce(judged):
        seen.append(judged)
        return {"o": judged["o"], "n": int(judged["n"])}

    judged = {"o": marker, "n": "5"}
    with boundary.run_scope():
        boundary.grant("shell", None, judged, also=(boundary.Later(coerce, judged=True),))
        judged["n"] = "7"
        assert execute(gated, "shell", {"o": marker, "n": 7}) == "denied"
        assert execute(gated, "shell", {"o": marker, "n": 5}) == "ran"
    assert seen[0] == {"o": marker, "n": "5"} and seen[0] is not judged


def test_a_later_form_that_raised_matches_no_call(gated):
    def failing():
        raise RuntimeError(CANARY)

    with boundary.run_scope():
        boundary.grant("shell", None, {"n": "5"}, also=(boundary.Later(failing),))
        assert execute(gated, "shell", None) == "denied"
        assert execute(gated, "shell", None) == "denied"
        assert execute(gated, "shell", {"n": "5"}) == "ran"


def test_a_grant_taken_while_a_later_form_was_made_is_not_used_twice(gated):
    """A Later's ``make`` is the framework's code: while it runs another execution (here:
    from inside it, deterministically) may take the very grant being matched. The grant
    stays spent: the execution that asked for the later form is ungoverned."""
    inner = []

    def make():
        inner.append(execute(gated, "shell", {"n": "5"}))  # the judged form takes the grant
        return {"n": 5}

    with boundary.run_scope():
        boundary.grant("shell", None, {"n": "5"}, also=(boundary.Later(make),))
        assert execute(gated, "shell", {"n": 5}) == "denied"
        assert inner == ["ran"]


def test_a_later_form_another_thread_is_making_is_waited_for(gated):
    """Two executions of one tool on two threads of the run (a concurrent tool batch),
    each judged with arguments the framework normalises: while thread B makes grant A's
    form (no match for B), thread A, whose grant that is, waits for the form instead of
    skipping it, and runs. Neither grant is used twice."""
    import contextvars
    import threading

    making, release = threading.Event(), threading.Event()

    def slow(kind, judged):
        if "a" in judged:
            making.set()
            release.wait(5)
        return {k: int(v) for k, v in judged.items()}

    results: dict = {}
    with boundary.run_scope():
        boundary.grant("shell", None, {"a": "1"}, also=(boundary.Later(slow, "schema", judged=True),))
        boundary.grant("shell", None, {"b": "2"}, also=(boundary.Later(slow, "schema", judged=True),))
        b = threading.Thread(target=contextvars.copy_context().run, args=(lambda: results.__setitem__("b", execute(gated, "shell", {"b": 2})),))
        b.start()
        assert making.wait(5)  # B is making A's form
        a = threading.Thread(target=contextvars.copy_context().run, args=(lambda: results.__setitem__("a", execute(gated, "shell", {"a": 1})),))
        a.start()
        a.join(0.2)
        release.set()
        a.join(5)
        b.join(5)
        assert results == {"a": "ran", "b": "ran"}
        assert execute(gated, "shell", {"a": 1}) == "denied" and execute(gated, "shell", {"b": 2}) == "denied"


def test_a_later_form_its_own_make_asks_for_again_matches_nothing(gated):
    """The same thread asking for a form while making it (its make running the tool)
    gets no form (no wait on itself); the outer execution then matches the form."""
    inner = []

    def make(kind, judged):
        inner.append(execute(gated, "shell", {"n": 5}))
        return {"n": int(judged["n"])}

    with boundary.run_scope():
        boundary.grant("shell", None, {"n": "5"}, also=(boundary.Later(make, "schema", judged=True),))
        assert execute(gated, "shell", {"n": 5}) == "ran"
        assert inner == ["denied"]


def test_a_later_decision_replaces_a_call_ids_grant(gated):
    with boundary.run_scope():
        boundary.grant("shell", "c1", {"c": 1})
        boundary.grant("shell", "c1", {"c": 2})
        assert execute(gated, "shell", {"c": 1}, "c1") == "denied"
        assert execute(gated, "shell", {"c": 2}, "c1") == "ran"


# ---------------------------------------------------------------- taking grants back


def test_revoke_takes_a_call_ids_grant_back(gated):
    with boundary.run_scope():
        boundary.revoke("never-granted")  # nothing to take back: no error
        boundary.revoke(None)
        boundary.grant("shell", "c1", {"c": 1})
        boundary.grant("shell", "c2", {"c": 1})
        boundary.revoke("c1")
        assert execute(gated, "shell", {"c": 1}, "c1") == "denied"
        assert execute(gated, "shell", {"c": 1}, "c2") == "ran"


def test_revoke_args_takes_one_matching_grant_of_the_tool(gated):
    with boundary.run_scope():
        boundary.revoke_args("shell", {"c": 1})  # no grant of the tool: nothing to do
        boundary.grant("shell", None, {"c": 2})
        boundary.grant("shell", None, {"c": 1})
        boundary.grant("shell", None, {"c": 1})
        boundary.grant("other", None, {"c": 1})
        boundary.revoke_args("shell", {"c": 1})
        boundary.revoke_args("shell", {"c": 3})  # accepted by none: nothing goes
        assert execute(gated, "shell", {"c": 1}) == "ran"  # one of the two is left
        assert execute(gated, "shell", {"c": 1}) == "denied"
        assert execute(gated, "shell", {"c": 2}) == "ran"
        assert execute(gated, "other", {"c": 1}) == "ran"


def test_revoke_args_by_a_normalised_form(gated):
    with boundary.run_scope():
        boundary.grant("shell", None, {"n": "5"}, also=(boundary.Later(lambda: {"n": 5}),))
        boundary.grant("shell", None, {"n": "7"})
        boundary.revoke_args("shell", {"n": 5})
        assert execute(gated, "shell", {"n": "5"}) == "denied"
        assert execute(gated, "shell", {"n": "7"}) == "ran"


# ---------------------------------------------------------------- MAX_GRANTS


def test_a_run_keeps_the_newest_grants_per_tool(gated):
    n = boundary.MAX_GRANTS
    with boundary.run_scope():
        for i in range(n):
            boundary.grant("shell", None, {"i": i})
        assert execute(gated, "shell", {"i": 0}) == "ran"  # exactly MAX_GRANTS are kept
        boundary.grant("shell", None, {"i": 0})
        boundary.grant("shell", None, {"i": n})  # one more: the oldest goes
        assert execute(gated, "shell", {"i": 1}) == "denied"
        assert execute(gated, "shell", {"i": 2}) == "ran"
        assert execute(gated, "shell", {"i": n}) == "ran"
        assert execute(gated, "shell", {"i": 0}) == "ran"


def test_a_run_keeps_the_newest_call_ids_and_tools(gated):
    n = boundary.MAX_GRANTS
    with boundary.run_scope():
        for i in range(n + 1):
            boundary.grant(f"tool{i}", None, {"i": i})
        for i in range(n + 1):
            boundary.grant("shell", f"c{i}", {"i": i})
        assert execute(gated, "shell", {"i": 0}, "c0") == "denied"
        assert execute(gated, "tool0", {"i": 0}) == "denied"
        for i in (1, n):
            assert execute(gated, "shell", {"i": i}, f"c{i}") == "ran"
            assert execute(gated, f"tool{i}", {"i": i}) == "ran"


# ---------------------------------------------------------------- leave


def test_a_raised_execution_by_call_id_gives_its_grant_back(gated):
    with boundary.run_scope():
        boundary.grant("shell", "c1", {"c": 1})
        assert execute(gated, "shell", {"c": 1}, "c1", failed=True) == "ran"
        assert execute(gated, "shell", {"c": 1}, "c1") == "ran"  # the framework's retry
        assert execute(gated, "shell", {"c": 1}, "c1") == "denied"


def test_a_grant_given_back_never_replaces_a_later_decision(gated):
    with boundary.run_scope():
        boundary.grant("shell", "c1", {"c": 1})
        denied, token = boundary.check(gated, "shell", "c1", {"c": 1})
        assert denied is None
        boundary.grant("shell", "c1", {"c": 2})  # decided again while it ran
        boundary.leave(token, failed=True)
        assert execute(gated, "shell", {"c": 1}, "c1") == "denied"
        assert execute(gated, "shell", {"c": 2}, "c1") == "ran"


def test_a_grant_given_back_is_the_retrys_own(gated):
    """The grant an execution that raised gives back is the first one its retry takes:
    another grant accepting the same arguments (plus a normalised form) stays for its own
    call."""
    with boundary.run_scope():
        boundary.grant("shell", None, {"n": "5"})
        denied, token = boundary.check(gated, "shell", None, {"n": "5"})
        assert denied is None
        boundary.grant("shell", None, {"n": "5"}, also=({"n": 5},))  # another call, decided meanwhile
        boundary.leave(token, failed=True)
        assert execute(gated, "shell", {"n": "5"}) == "ran"  # the retry
        assert execute(gated, "shell", {"n": 5}) == "ran"  # the other call, as normalised


def test_a_grant_is_given_back_after_its_tools_grants_were_trimmed(gated):
    with boundary.run_scope():
        boundary.grant("shell", None, {"c": 1})
        denied, token = boundary.check(gated, "shell", None, {"c": 1})
        assert denied is None
        for i in range(boundary.MAX_GRANTS):
            boundary.grant(f"tool{i}", None, {})  # the oldest tool's list goes
        boundary.leave(token, failed=True)
        assert execute(gated, "shell", {"c": 1}) == "ran"


def test_the_execution_under_way_is_marked_until_it_leaves(gated):
    assert boundary.inside() is None
    token = boundary.enter_inside(("toy", "shell", True))
    assert boundary.inside() == ("toy", "shell", True)
    boundary.leave(token)
    assert boundary.inside() is None
    boundary.leave(None)  # nothing let run: nothing to do
    with boundary.run_scope():
        boundary.grant("shell", None, {"c": 1})
        denied, token = boundary.check(gated, "shell", None, {"c": 1}, key="K")
        assert boundary.inside() == ("toy", "K", True)
        assert execute(gated, "shell", {"c": 2}, key="K") == "ran"  # its own execution, further in
        assert execute(gated, "shell", {"c": 2}, key="other") == "denied"
        boundary.leave(token)
        assert boundary.inside() is None


# ---------------------------------------------------------------- enforced


class Bare:
    """An adapter as ``check`` and ``ungoverned`` see one (its name, version and rule)."""

    def __init__(self, name="bare", version="1.2.3", gates=False, decide=False):
        self.name, self.version, self._gates, self._decide = name, version, gates, decide

    def user_gates(self):
        if isinstance(self._gates, Exception):
            raise self._gates
        return self._gates

    def must_decide(self):
        if isinstance(self._decide, Exception):
            raise self._decide
        return self._decide


def test_a_broken_config_denies_even_with_the_audit_setting(write_config):
    config = write_config('ungoverned = "audit"\non_error = "sometimes"\n')
    assert config.error
    assert boundary.enforced(Bare(gates=False, decide=False))


def test_an_adapter_that_cannot_tell_its_gates_denies():
    assert boundary.enforced(Bare(gates=RuntimeError(CANARY), decide=False))
    assert not boundary.enforced(Bare(gates=False, decide=False))  # allow twin
    assert boundary.enforced(Bare(gates=False, decide=True))


def test_what_the_adapter_knows_of_its_gates_outranks_asking_it():
    assert not boundary.enforced(Bare(gates=True), gated=False)
    assert boundary.enforced(Bare(gates=False), gated=True)


# ---------------------------------------------------------------- the ungoverned decision


def audited(tmp_path):
    audit.flush(5)
    path = tmp_path / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def audit_file(write_config, tmp_path):
    write_config(f'[audit]\npath = "{tmp_path / "audit.jsonl"}"\n')
    return tmp_path


@pytest.fixture
def quiet_logging(monkeypatch):
    """No log handler listens (pytest's own taken off): the audit file is the only sink."""
    for name in (None, "failsecure"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "handlers", [h for h in logger.handlers if isinstance(h, logging.NullHandler)])


@pytest.mark.parametrize("deny", [True, False], ids=["denied", "allowed"])
def test_an_ungoverned_call_is_told_and_audited_without_its_arguments(audit_file, quiet_logging, deny):
    adapter = Bare(name="bare", version="1.2.3", gates=deny)
    decision = boundary.ungoverned(adapter, "shell", "c1", "Tool.run", None)
    hook = "bare:Tool.run"
    reason = failures.failure_reason(hook, failures.UNGOVERNED)
    assert decision.action is (Action.DENY if deny else Action.ALLOW)
    assert decision.reason == reason and "ungoverned" in reason and hook in reason
    assert decision.primary.hook == hook and decision.primary.failure.value == "ungoverned"
    assert decision.outcomes == decision.deciding == (decision.primary,)
    assert decision.counted(decision.primary) is decision.action
    if deny:
        assert str(Ungoverned(decision)) == reason
    [event] = [e for e in audited(audit_file) if e["failure"] == "ungoverned"]
    assert event["hook"] == hook and event["framework"] == "bare" and event["framework_version"] == "1.2.3"
    assert event["tool"] == "shell" and event["call_id"] == "c1"
    assert event["outcome"] == ("deny" if deny else "allow")
    assert [o["hook"] for o in event["outcomes"]] == [hook]


def test_an_ungoverned_call_is_audited_to_a_warning_log_alone(caplog):
    caplog.set_level(logging.WARNING, logger="failsecure")
    decision = boundary.ungoverned(Bare(name="logonly", gates=True), "shell", None, "Tool.run", None)
    audit.flush(5)
    events = [r for r in caplog.records if hasattr(r, "failsecure") and r.failsecure["hook"] == "logonly:Tool.run"]
    assert decision.denied and [(r.levelno, r.failsecure["failure"]) for r in events] == [(logging.WARNING, "ungoverned")]
    said = [r for r in caplog.records if r.getMessage() == "failsecure: a logonly tool ran without a decision at "
            "logonly:Tool.run (denied)"]
    assert [r.levelno for r in said] == [logging.WARNING]
    boundary.ungoverned(Bare(name="logonly", gates=False), "shell", None, "Tool.run", None)
    audit.flush(5)
    assert [r.levelno for r in caplog.records if r.getMessage() == "failsecure: a logonly tool ran without a decision "
            "at logonly:Tool.run (allowed, audited)"] == [logging.WARNING]


def test_the_hook_id_defaults(audit_file, quiet_logging):
    class Nameless:
        def user_gates(self):
            return True

        def must_decide(self):
            return False

    first = boundary.ungoverned(Nameless(), "shell", None, None, None)
    second = boundary.ungoverned(Bare(name="bare", version=None), "shell", None, None, None)
    assert first.primary.hook == "failsecure:boundary" and first.denied
    assert second.primary.hook == "bare:boundary"
    events = [e for e in audited(audit_file) if e["failure"] == "ungoverned"]
    assert [(e["framework"], e["hook"], e["framework_version"]) for e in events] == [
        ("failsecure", "failsecure:boundary", None), ("bare", "bare:boundary", None)]


def test_a_rule_that_cannot_be_read_denies(audit_file, quiet_logging):
    decision = boundary.ungoverned(Bare(decide=RuntimeError(CANARY)), "shell", None, "Tool.run", None)
    assert decision.denied and decision.primary.failure.value == "ungoverned"
    [event] = [e for e in audited(audit_file) if e["failure"] == "ungoverned"]
    assert event["outcome"] == "deny" and CANARY not in json.dumps(event)


def test_a_failed_audit_is_said_by_type_and_never_flips_the_decision(audit_file, caplog):
    class VersionUnreadable(Exception):
        pass

    class Broken(Bare):
        @property
        def version(self):
            raise VersionUnreadable(CANARY)

        @version.setter
        def version(self, value):
            pass

    caplog.set_level(logging.ERROR, logger="failsecure")
    decision = boundary.ungoverned(Broken(gates=True), "shell", None, "Tool.run", None)
    audit.flush(5)
    assert decision.denied
    said = [r.getMessage() for r in caplog.records]
    assert "failsecure: audit failed (VersionUnreadable)" in said and not any(CANARY in m for m in said)


def test_ungoverned_calls_are_counted_per_framework(monkeypatch):
    monkeypatch.setattr(boundary, "seen", {})
    for _ in range(2):
        boundary.ungoverned(Bare(name="counted"), "shell", None, None, None)
    assert boundary.seen == {"counted": 2}


def test_the_gated_flag_given_to_the_decision_is_used():
    assert boundary.ungoverned(Bare(gates=False), "shell", None, None, True).denied
    assert not boundary.ungoverned(Bare(gates=True), "shell", None, None, False).denied


def test_ungoverned_is_raised_with_the_decisions_reason():
    decision = Decision(Verdict(Action.DENY, reason="failsecure: told"))
    error = Ungoverned(decision)
    assert str(error) == "failsecure: told" and error.decision is decision
    quiet = Ungoverned(Decision(Verdict(Action.ALLOW)))
    assert str(quiet) == "failsecure: ungoverned tool call denied"


# ---------------------------------------------------------------- check


def test_a_run_entered_inside_a_run_is_the_same_run(gated):
    scope = boundary.run_scope()
    with scope as outer:
        boundary.grant("shell", None, {"c": 1})
        with boundary.run_scope() as inner:
            assert inner is outer and boundary.current() is outer
            assert execute(gated, "shell", {"c": 1}) == "ran"  # the outer run's grant
        assert boundary.current() is outer  # leaving the inner scope leaves the run as it was
    assert boundary.current() is None
    scope.__exit__(None, None, None)  # a second exit (a generator closed twice) never raises
    assert boundary.current() is None


def test_an_execution_is_its_own_only_for_its_own_tool(gated):
    """The tool key defaults to the tool's name: inside a granted execution of one tool,
    another tool's execution is judged (ungoverned), the same tool's is part of it."""
    with boundary.run_scope():
        boundary.grant("shell", None, {"c": 1})
        denied, token = boundary.check(gated, "shell", None, {"c": 1})
        assert denied is None
        assert execute(gated, "other", {"c": 1}) == "denied"
        assert execute(gated, "shell", {"c": 1}) == "ran"
        boundary.leave(token)


def test_the_own_execution_spends_no_other_grant(gated):
    with boundary.run_scope():
        boundary.grant("shell", None, {"c": 1})
        boundary.grant("shell", None, {"c": 1})  # a second call, judged too
        denied, token = boundary.check(gated, "shell", None, {"c": 1})
        assert execute(gated, "shell", {"c": 1}) == "ran"  # its own execution, further in
        boundary.leave(token)
        assert execute(gated, "shell", {"c": 1}) == "ran"  # the second call's grant is still there
        assert execute(gated, "shell", {"c": 1}) == "denied"


def test_an_own_execution_of_an_ungoverned_call_is_judged_once(audit_file, quiet_logging, monkeypatch):
    monkeypatch.setattr(boundary, "seen", {})
    bare = Bare(name="bare", gates=False)
    with boundary.run_scope():
        denied, token = boundary.check(bare, "shell", None, {"c": 1}, where="Tool.run")
        assert denied is None and boundary.inside() == ("bare", "shell", False)
        assert execute(bare, "shell", {"c": 1}) == "ran"  # its own execution: part of the same call
        boundary.leave(token)
    assert boundary.seen == {"bare": 1}
    assert len([e for e in audited(audit_file) if e["failure"] == "ungoverned"]) == 1


@pytest.mark.parametrize("ids", [(None, None), ("o1", "i1")], ids=["by-arguments", "by-call-id"])
def test_another_adapters_granted_execution_spends_this_adapters_grant(ids):
    """Two adapters' boundaries around one tool call (code-puppy's over pydantic-ai's): the
    inner boundary lets the outer's granted execution on, and its own grant for that call
    (by its own call id, or by tool and arguments) is spent with it."""
    outer_id, inner_id = ids
    outer, inner = Bare(name="outer", gates=True), Bare(name="inner", gates=True)
    with boundary.run_scope():
        boundary.grant("shell", outer_id, {"c": 1})  # each adapter's dispatcher granted the call
        boundary.grant("shell", inner_id, {"c": 1})
        denied, token = boundary.check(outer, "shell", outer_id, {"c": 1})
        assert denied is None
        assert execute(inner, "shell", {"c": 1}, inner_id) == "ran"
        boundary.leave(token)
        assert execute(inner, "shell", {"c": 1}, inner_id) == "denied"  # nothing left for a second run


def test_what_the_adapter_or_the_run_knows_of_its_gates_decides(gated):
    def decided(adapter, **kw):
        denied, token = boundary.check(adapter, "shell", None, {}, **kw)
        boundary.leave(token)
        return "denied" if denied is not None else "ran"

    with boundary.run_scope() as run:
        assert decided(Bare(gates=True), gated=False) == "ran"  # the adapter knows
        assert decided(Bare(gates=False), gated=True) == "denied"
        assert decided(Bare(gates=False)) == "ran"
        run.gated["bare"] = True  # a gate registered with what entered the run
        assert decided(Bare(gates=False)) == "denied"
        assert decided(Bare(name="other", gates=False)) == "ran"


def test_the_ungoverned_call_is_audited_with_its_call_id(audit_file, quiet_logging):
    with boundary.run_scope():
        denied, _ = boundary.check(Bare(gates=True), "shell", "c9", {"secret": CANARY}, where="Tool.run")
    assert denied.denied
    [event] = [e for e in audited(audit_file) if e["failure"] == "ungoverned"]
    assert event["call_id"] == "c9" and event["hook"] == "bare:Tool.run" and CANARY not in json.dumps(event)
