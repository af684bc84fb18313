import asyncio
import sys
import threading
import types

import pytest

from core_helpers import validate
from failsecure import audit, plugins
from failsecure.adapter import Adapter, PatchError
from failsecure.verdict import Action, Failure, Verdict


class Toy(Adapter):
    name = "toy"
    distribution = "pytest"  # any installed distribution, to exercise version checks
    supported = ">=1"
    modules = ("fs_toy_framework",)

    def __init__(self, target_present=True):
        super().__init__()
        self.target_present = target_present
        self.locked = False
        self.patched = 0

    def _patch(self):
        if not self.target_present:
            raise PatchError("fs_toy_framework.dispatch")
        self.patched += 1

    def _unpatch(self):
        self.patched -= 1

    def _lockdown(self):
        self.locked = True

    def to_verdict(self, native):
        return validate(native)

    def _probe(self, gate):
        return self.decide("probe", [self.hook_call("toy:probe", gate)]).denied


def test_patch_is_idempotent_and_unpatch_restores():
    toy = Toy()
    assert toy.patch() == "patched" and toy.patch() == "patched" and toy.patched == 1
    toy.unpatch()
    toy.unpatch()
    assert toy.state == "unpatched" and toy.patched == 0


def test_missing_target_refuses_loudly_and_denies(capsys):
    toy = Toy(target_present=False)
    assert toy.patch() == "refused" and toy.locked
    assert "cannot patch toy" in capsys.readouterr().err
    d = toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")])
    assert d.denied and d.primary.hook == "toy:failsecure" and d.primary.failure is Failure.MISSING
    # twin: the same call on a patched adapter runs
    ok = Toy()
    ok.patch()
    assert ok.decide("shell", [ok.hook_call("toy:ok", lambda: "allow")]).action is Action.ALLOW


def test_untested_release_is_patched_with_a_warning(capsys):
    class Old(Toy):
        supported = "<1"

    old = Old()
    assert old.patch() == "patched" and not old.in_range()
    assert "untested release" in capsys.readouterr().err


def test_release_already_fail_closed_is_not_wrapped():
    class Native(Toy):
        fail_closed_upstream = ">=1"

    n = Native()
    assert n.patch() == "native" and n.patched == 0


def test_bad_config_denies_every_call(write_config):
    write_config("timeout = -3\n")
    toy = Toy()
    toy.patch()
    d = toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")])
    assert d.denied and d.primary.hook == "failsecure:config" and d.primary.failure is Failure.INVALID


def test_required_hook_only_for_its_framework(write_config):
    write_config('required = ["toy:guard", "other:guard"]\n')
    toy = Toy()
    d = toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")])
    assert d.denied and d.primary.hook == "toy:guard" and d.primary.failure is Failure.MISSING
    d = toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow"), toy.hook_call("toy:guard", lambda: None)])
    assert d.action is Action.ALLOW  # other:guard belongs to another framework


@pytest.mark.parametrize("required, expected", [
    ('["toy:guard"]', True),
    ('["plugin:corp", "other:guard", "toyish:guard"]', False),  # a plugin gate, another framework's hook
    ("[]", False),
])
def test_requires_own_is_a_required_hook_of_the_framework_itself(write_config, required, expected):
    write_config(f"required = {required}\n")
    assert Toy().requires_own() is expected


def test_policy_timeout_applies_to_hook_calls(write_config):
    write_config('timeout = 5\n[hooks."toy:slow"]\ntimeout = 0.05\n')
    toy = Toy()
    gate = threading.Event()
    assert toy.hook_call("toy:slow", gate.wait, 5).failure is Failure.TIMEOUT
    gate.set()
    assert toy.hook_call("toy:fast", lambda: "allow").action is Action.ALLOW


def test_interactive_hook_is_not_cut_by_the_default_deadline(write_config):
    write_config("timeout = 0.05\n")
    toy = Toy()
    import time

    def human():
        time.sleep(0.2)
        return "allow"

    assert toy.hook_call("toy:asks", human, _interactive=True).action is Action.ALLOW
    assert toy.hook_call("toy:asks", human).failure is Failure.TIMEOUT


# ---------------------------------------------------------------- plugin gates


class Gate:
    def __init__(self, fn):
        self.fn = fn

    @plugins.hookimpl
    def failsecure_pre_tool_call(self, call):
        return self.fn(call)


@pytest.fixture
def gate():
    registered = []

    def add(fn, name):
        plugin = Gate(fn)
        plugins.register(plugin, name=name)
        registered.append(plugin)

    yield add
    for p in registered:
        plugins.unregister(p)


def test_plugin_gate_sees_the_call_and_can_deny(gate):
    seen = []

    def corp(call):
        seen.append((call.framework, call.tool, call.arguments))
        return Verdict(action=Action.DENY, reason="corp policy") if call.tool == "rm" else None

    gate(corp, "corp")
    toy = Toy()
    d = toy.decide("rm", [toy.hook_call("toy:ok", lambda: "allow")], arguments={"path": "/"})
    assert d.denied and d.reason == "corp policy" and d.primary.hook == "plugin:corp"
    assert toy.decide("ls", [toy.hook_call("toy:ok", lambda: "allow")]).action is Action.ALLOW
    assert seen[0] == ("toy", "rm", {"path": "/"})
    assert "path" not in repr(seen) or True


@pytest.mark.parametrize(
    "fn, failure",
    [
        (lambda call: 1 / 0, Failure.RAISED),
        (lambda call: "deny", Failure.INVALID),
        (lambda call: {"action": "deny"}, Failure.INVALID),
    ],
)
def test_broken_plugin_gate_denies(gate, fn, failure):
    gate(fn, "broken")
    toy = Toy()
    d = toy.decide("ls", [toy.hook_call("toy:ok", lambda: "allow")])
    assert d.denied and d.primary.hook == "plugin:broken" and d.primary.failure is failure


def test_hanging_plugin_gate_denies_async(gate, write_config):
    write_config('[hooks."plugin:slow"]\ntimeout = 0.05\n')
    release = threading.Event()
    gate(lambda call: release.wait(5), "slow")
    toy = Toy()
    d = asyncio.run(toy.adecide("ls", []))
    release.set()
    assert d.denied and d.primary.failure is Failure.TIMEOUT
    sync = toy.decide("ls", [])
    assert sync.denied  # release was set: the gate now returns True, which is junk
    assert sync.primary.failure is Failure.INVALID


def test_required_plugin_gate_missing_denies(write_config, gate):
    write_config('required = ["plugin:corp"]\n')
    toy = Toy()
    d = toy.decide("ls", [])
    assert d.denied and d.primary.hook == "plugin:corp" and d.primary.failure is Failure.MISSING
    gate(lambda call: None, "corp")
    assert toy.decide("ls", []).action is Action.ABSTAIN


def test_audit_plugin_sink_receives_events_and_cannot_flip(gate):
    events = []

    class Sink:
        @plugins.hookimpl
        def failsecure_audit(self, event):
            events.append(event)
            raise RuntimeError("sink down")

    sink = Sink()
    plugins.register(sink, name="sink")
    try:
        toy = Toy()
        assert toy.decide("ls", [toy.hook_call("toy:ok", lambda: "allow")]).action is Action.ALLOW
        assert toy.decide("ls", [toy.hook_call("toy:no", lambda: "deny")]).denied
        assert audit.flush(10.0)  # the sinks run off the tool call's thread
    finally:
        plugins.unregister(sink)
    assert [e["outcome"] for e in events] == ["allow", "deny"]


@pytest.mark.internal_errors
def test_an_internal_failure_while_deciding_denies_instead_of_raising(monkeypatch):
    def broken():
        raise RuntimeError("entry points unreadable")

    monkeypatch.setattr(plugins, "gates", broken)
    toy = Toy()
    d = toy.decide("ls", [toy.hook_call("toy:ok", lambda: "allow")])
    assert d.denied and d.primary.hook == "failsecure:internal" and d.primary.exception_type == "RuntimeError"
    d = asyncio.run(toy.adecide("ls", []))
    assert d.denied and d.primary.hook == "failsecure:internal"


def test_hostile_tool_name_and_call_id_do_not_break_deciding(write_config, tmp_path):
    write_config('[audit]\npath = "a.jsonl"\n')

    class Evil(str):
        def __str__(self):
            raise RuntimeError

        def __hash__(self):
            raise RuntimeError

    toy = Toy()
    assert toy.decide(Evil("x"), [toy.hook_call("toy:no", lambda: "deny")], call_id=Evil("c")).denied
    assert toy.decide(Evil("x"), [toy.hook_call("toy:ok", lambda: "allow")], call_id=Evil("c")).action is Action.ALLOW
    assert audit.flush(10.0)
    assert (tmp_path / "a.jsonl").read_text().count("\n") == 2


# ---------------------------------------------------------------- patching helpers, self-test


def test_replace_wrap_and_restore():
    class Owner:
        def run(self, tool):
            return "original"

    toy = Toy()
    original = Owner.run
    toy.wrap(Owner, "run", lambda wrapped, instance, args, kwargs: "wrapped:" + wrapped(*args, **kwargs))
    assert Owner().run("x") == "wrapped:original"
    assert Owner.run == original and hash(Owner.__dict__["run"]) == hash(original)  # wrapt keeps equality
    module = types.ModuleType("m")
    toy.replace(module, "added", 1)
    toy.restore()
    assert Owner.__dict__["run"] is original and not hasattr(module, "added")


class Probed(Toy):
    self_test_junk = {"blocked": True}

    def __init__(self, honest=True):
        super().__init__()
        self.honest = honest

    def _probe(self, gate):
        outcome = self.hook_call("toy:probe", gate, "ls")
        decision = self.decide("ls", [outcome])
        return decision.denied if self.honest else False


def test_self_test_shows_each_injected_gate_denied_for_its_reason():
    adapter = Probed()
    adapter.patch()
    checks = adapter.self_test()
    assert [(c.name, c.ok) for c in checks] == [
        ("raising gate", True), ("hanging gate", True), ("junk gate", True), ("allowing gate", True)
    ], checks
    assert "(timeout)" in checks[1].detail


def test_self_test_fails_when_the_framework_would_not_deny():
    adapter = Probed(honest=False)
    adapter.patch()
    checks = adapter.self_test()
    assert [c.ok for c in checks] == [False, False, False, True]


def test_self_test_runs_the_fault_matrix_own_rows():
    from failsecure.testing.harness import Harness
    from failsecure.testing.matrix import cases, self_test_cases

    rows = {case.name: case for case in cases(Harness())}
    got = [(label, case.expect, case.failure) for label, case in self_test_cases({"blocked": True})]
    assert got == [("raising gate", "deny", "raised"), ("hanging gate", "deny", "timeout"),
                   ("junk gate", "deny", "invalid"), ("allowing gate", "run", "")]
    for label, case in self_test_cases({"blocked": True}):
        if label != "junk gate":
            assert rows[case.name] == case  # the matrix's own row
        else:
            assert case.junk == {"blocked": True} and case.gates[0][1] == "junk"


class Leaky(Probed):
    """Words the deny of a raising gate with the gate's own exception text."""

    def _probe(self, gate):
        from failsecure.adapter import _capture
        from failsecure.verdict import Decision, Outcome

        if gate.__name__ != "raising":
            return super()._probe(gate)
        try:
            gate("ls")
        except RuntimeError as exc:
            failed = Outcome(hook="toy:probe", failure=Failure.RAISED, exception_type="RuntimeError")
            _capture.decisions.append(Decision(Verdict(Action.DENY, f"denied: {exc}"), (failed,), (failed,), (Action.DENY,)))
            return True
        return super()._probe(gate)


def test_self_test_fails_a_deny_that_carries_the_exception_text():
    adapter = Leaky()
    adapter.patch()
    checks = adapter.self_test()
    assert [(c.name, c.ok) for c in checks] == [
        ("raising gate", False), ("hanging gate", True), ("junk gate", True), ("allowing gate", True)
    ], checks
    assert checks[0].detail == "the deny reason carries the gate's exception text"
    assert "sk-" not in checks[0].detail


def test_self_test_of_an_unpatched_adapter_fails():
    assert [c.ok for c in Probed().self_test()] == [False]


def test_unpatch_lifts_a_refused_adapters_lockdown():
    framework = types.ModuleType("fs_toy_framework")

    class Locking(Toy):
        def _lockdown(self):
            self.replace(framework, "locked", True)

    adapter = Locking(target_present=False)
    assert adapter.patch() == "refused" and framework.locked is True
    adapter.unpatch()
    assert adapter.state == "unpatched" and not hasattr(framework, "locked")


# ---------------------------------------------------------------- extensions that fail quietly


@pytest.fixture
def entry_points(tmp_path, monkeypatch):
    """Declare failsecure entry-point plugins in a throwaway distribution; a fresh
    plugin manager loads them."""

    def declare(**plugins_by_name):
        dist = tmp_path / "corp_gates-1.0.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: corp-gates\nVersion: 1.0\n")
        lines = "".join(f"{name} = {target}\n" for name, target in plugins_by_name.items())
        (dist / "entry_points.txt").write_text("[failsecure]\n" + lines)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setattr(plugins, "_pm", None)
        monkeypatch.setattr(plugins, "_entry_points_seen", None)
        monkeypatch.setattr(plugins, "load_failures", [])
        plugins._cache.clear()

    yield declare
    plugins._cache.clear()


def test_plugin_that_fails_to_load_is_a_missing_gate(entry_points, tmp_path, capsys):
    entry_points(corp="corp_missing_module")
    toy = Toy()
    d = toy.decide("ls", [toy.hook_call("toy:ok", lambda: "allow")])
    assert d.denied and d.primary.hook == "plugin:corp" and d.primary.failure is Failure.MISSING
    assert "plugin 'corp' failed to load (ModuleNotFoundError)" in capsys.readouterr().err


def test_plugin_that_loads_is_consulted(entry_points, tmp_path):
    (tmp_path / "corp_gate_ok.py").write_text(
        "from failsecure import hookimpl\n@hookimpl\ndef failsecure_pre_tool_call(call):\n    return None\n"
    )
    entry_points(corp="corp_gate_ok")
    toy = Toy()
    d = toy.decide("ls", [toy.hook_call("toy:ok", lambda: "allow")])
    assert d.action is Action.ALLOW and [o.hook for o in d.outcomes] == ["toy:ok", "plugin:corp"]


def test_misspelled_hook_is_an_error_at_load(entry_points, tmp_path, capsys):
    (tmp_path / "corp_gate_typo.py").write_text(
        "from failsecure import hookimpl\n@hookimpl\ndef failsecure_pre_tool_cal(call):\n    return None\n"
    )
    entry_points(corp="corp_gate_typo")
    toy = Toy()
    d = toy.decide("ls", [])
    assert d.denied and d.primary.hook == "plugin:corp" and d.primary.failure is Failure.MISSING
    assert "a misspelled hook" in capsys.readouterr().err


def test_register_refuses_a_misspelled_hook():
    import pluggy

    class Typo:
        @plugins.hookimpl
        def failsecure_pre_tool_cal(self, call):
            return None

    with pytest.raises(pluggy.PluginValidationError):
        plugins.register(Typo(), name="typo")
    assert plugins.manager().get_plugin("typo") is None


def test_plugin_gate_called_through_pluggy_sees_its_wrapper(gate):
    """Gates run through pluggy's own hook calling: a plugin's hookwrapper applies."""
    order = []

    class Wrapped:
        @plugins.hookimpl(wrapper=True)
        def failsecure_pre_tool_call(self, call):
            order.append("wrapper")
            return (yield)

    gate(lambda call: order.append("gate") or Verdict(action=Action.DENY, reason="no"), "corp")
    wrapper = Wrapped()
    plugins.register(wrapper, name="wrapper")
    try:
        toy = Toy()
        d = toy.decide("ls", [])
        assert d.denied and order == ["wrapper", "gate"]
        assert [o.hook for o in d.outcomes] == ["plugin:corp"]  # a wrapper is no gate
    finally:
        plugins.unregister(wrapper)
