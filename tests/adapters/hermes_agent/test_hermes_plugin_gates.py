"""Python ``pre_tool_call`` plugins through ``model_tools.handle_function_call``: every
fail-open case of the upstream notes denies, naming the hook and the failure category,
and each has an allow twin."""

from __future__ import annotations

import pytest

import failsecure_hermes_rig as H

SECRET = "secret-payload"

# (case, hook body, failure category, exception type)
FAILING = [
    ("raises RuntimeError", "raise RuntimeError('secret-payload ' + str(kw.get('args')))", "raised", "RuntimeError"),
    ("raises KeyError", "return {}['secret-payload']", "raised", "KeyError"),
    ("raises SystemExit", "raise SystemExit(3)", "raised", "SystemExit"),
    ("returns a string", "return 'block'", "invalid", None),
    ("unknown action", "return {'action': 'deny', 'message': 'no'}", "invalid", None),
    ("block without message", "return {'action': 'block'}", "invalid", None),
    ("block with empty message", "return {'action': 'block', 'message': ''}", "invalid", None),
    ("non-string message", "return {'action': 'block', 'message': 42}", "invalid", None),
    ("claude-style decision", "return {'decision': 'block', 'reason': 'no'}", "invalid", None),
    ("hostile dict", "return Hostile(action='block', message='no')", "invalid", "ValueError"),
    ("hangs past the deadline", "import time; time.sleep(3)", "timeout", None),
]

HOSTILE = """
class Hostile(dict):
    def get(self, *args, **kwargs):
        raise ValueError('secret-payload')
"""


@pytest.mark.parametrize("case,body,category,exc_type", FAILING, ids=[c[0] for c in FAILING])
def test_failing_gate_denies_with_its_category(rig, case, body, category, exc_type):
    if case == "hangs past the deadline":
        rig.failsecure(timeout=0.3)
    hook = rig.plugin("guard", body, module_prefix=HOSTILE if "Hostile" in body else "")
    rig.load()
    out = rig.call()
    assert not out["ran"]
    assert out["result"] == {"error": H.fail_closed(hook, category)}
    assert SECRET not in str(out["result"])
    event = rig.last()
    assert (event["hook"], event["outcome"], event["failure"], event["exception_type"]) == (hook, "deny", category, exc_type)
    assert event["tool"] == H.TOOL and event["call_id"] == "call-1"
    assert SECRET not in rig.audit_path.read_text()


def test_async_gate_is_invalid(rig):
    hook = rig.plugin("guard", "return None", module_prefix="")
    # an async callback: hermes would append the coroutine and ignore it
    folder = rig.home / "plugins" / hook.split(":", 1)[1]
    (folder / "__init__.py").write_text(
        "async def hook(**kw):\n    return None\n\ndef register(ctx):\n    ctx.register_hook('pre_tool_call', hook)\n"
    )
    rig.load()
    out = rig.call()
    assert not out["ran"]
    assert out["result"] == {"error": H.fail_closed(hook, "invalid")}
    assert rig.last()["failure"] == "invalid"


def test_allow_twin_no_opinion_runs(rig):
    hook = rig.plugin("guard", "return None")
    rig.load()
    out = rig.call()
    assert out["ran"] and out["result"] == {"ok": True}
    event = rig.last()
    assert event["outcome"] == "abstain" and event["failure"] is None
    assert [o["hook"] for o in event["outcomes"]] == [hook]


def test_allow_twin_slow_gate_inside_deadline_runs(rig):
    rig.failsecure(timeout=2)
    rig.plugin("guard", "import time; time.sleep(0.05)")
    rig.load()
    assert rig.call()["ran"]


def test_real_block_keeps_its_own_message(rig):
    hook = rig.plugin("guard", "return {'action': 'block', 'message': 'writes are frozen'}")
    rig.load()
    out = rig.call()
    assert not out["ran"]
    assert out["result"] == {"error": "writes are frozen"}
    event = rig.last()
    assert (event["hook"], event["outcome"], event["failure"]) == (hook, "deny", None)


def test_crash_denies_beside_a_quiet_gate_and_all_hooks_are_audited(rig):
    crash = rig.plugin("crash", "raise RuntimeError('x')")
    allow = rig.plugin("allow", "return None")
    rig.load()
    out = rig.call()
    assert out["result"] == {"error": H.fail_closed(crash, "raised")}
    outcomes = {o["hook"]: (o["outcome"], o["failure"]) for o in rig.last()["outcomes"]}
    assert outcomes == {crash: ("abstain", "raised"), allow: ("abstain", None)}


def test_gate_sees_hermes_kwargs(rig):
    rig.plugin(
        "guard",
        """
        if kw.get('tool_name') == 'fs_probe' and kw.get('args', {}).get('path') == '/ok' and kw.get('tool_call_id') == 'call-1':
            return None
        return {'action': 'block', 'message': 'unexpected kwargs'}
        """,
    )
    rig.load()
    assert rig.call({"path": "/ok"})["ran"]
    assert not rig.call({"path": "/other"})["ran"]


def test_observer_failures_never_block(rig):
    observer = rig.plugin("tracer", "raise ConnectionError('collector down')")
    rig.failsecure(f'[hooks."{observer}"]\nrole = "observer"\n')
    rig.load()
    out = rig.call()
    assert out["ran"]
    event = rig.last()
    assert event["outcome"] == "abstain"
    assert event["outcomes"] == [
        {"hook": observer, "outcome": "abstain", "failure": "raised", "exception_type": "ConnectionError", "elapsed_ms": event["outcomes"][0]["elapsed_ms"]}
    ]


def test_observer_answers_are_ignored(rig):
    observer = rig.plugin("tracer", "return {'action': 'block', 'message': 'tracing says no'}")
    rig.failsecure(f'[hooks."{observer}"]\nrole = "observer"\n')
    rig.load()
    assert rig.call()["ran"]


def test_observer_twin_as_gate_denies(rig):
    tracer = rig.plugin("tracer", "raise ConnectionError('collector down')")
    rig.load()
    out = rig.call()
    assert not out["ran"]
    assert out["result"] == {"error": H.fail_closed(tracer, "raised")}


def test_on_error_allow_lets_a_failing_gate_abstain(rig):
    flaky = rig.plugin("flaky", "raise RuntimeError('x')")
    rig.failsecure(f'[hooks."{flaky}"]\non_error = "allow"\n')
    rig.load()
    assert rig.call()["ran"]
    assert rig.last()["outcomes"][0]["failure"] == "raised"


def test_invalid_failsecure_config_denies(rig):
    rig.plugin("guard", "return None")
    rig.failsecure('on_error = "maybe"')
    rig.load()
    out = rig.call()
    assert not out["ran"]
    assert out["result"] == {"error": "failsecure: hook 'failsecure:config' failed closed (invalid)"}


def test_aggregation_failure_is_a_block(rig):
    """hermes' own aggregator raising (here: a thread whitelist whose message format is
    broken) is swallowed by every call site upstream, and the tool runs."""
    from hermes_cli import plugins

    plugins.set_thread_tool_whitelist({"other_tool"}, deny_msg_fmt="{unknown_field}")
    rig.load()
    out = rig.call()
    assert not out["ran"]
    assert out["result"] == {"error": H.fail_closed("hermes-agent:pre_tool_call", "raised")}
    assert (rig.last()["failure"], rig.last()["exception_type"]) == ("raised", "KeyError")


def test_aggregation_twin_whitelisted_tool_runs(rig):
    from hermes_cli import plugins

    plugins.set_thread_tool_whitelist({H.TOOL}, deny_msg_fmt="{unknown_field}")
    rig.load()
    assert rig.call()["ran"]


def test_whitelist_block_stays_native(rig):
    from hermes_cli import plugins

    plugins.set_thread_tool_whitelist({"other_tool"})
    rig.load()
    out = rig.call()
    assert not out["ran"]
    assert "not in this thread's tool whitelist" in out["result"]["error"]


def test_cross_framework_gate_is_consulted(rig):
    from failsecure import Action, Verdict, hookimpl
    from failsecure import plugins as fs_plugins

    class Gate:
        @hookimpl
        def failsecure_pre_tool_call(self, call):
            if call.framework == "hermes-agent" and call.tool == H.TOOL and call.arguments.get("path") == "/etc/shadow":
                return Verdict(action=Action.DENY, reason="no shadow")
            return None

    fs_plugins.register(Gate(), name="hermes_test_gate")
    try:
        rig.plugin("guard", "return None")
        rig.load()
        assert rig.call({"path": "/tmp/x"})["ran"]
        out = rig.call({"path": "/etc/shadow"})
        assert not out["ran"] and out["result"] == {"error": "no shadow"}
        assert rig.last()["hook"] == "plugin:hermes_test_gate"
    finally:
        fs_plugins.unregister(name="hermes_test_gate")


def test_unpatched_twin_fails_open(rig, adapter):
    """The same raising gate with the adapter unpatched: hermes logs it and runs the tool."""
    rig.plugin("guard", "raise RuntimeError('x')")
    rig.load()
    adapter.unpatch()
    try:
        assert adapter.state == "unpatched"
        assert rig.call()["ran"]
    finally:
        assert adapter.patch() == "patched"
    assert not rig.call()["ran"]


@pytest.fixture
def plugin_gate():
    """Register a cross-framework failsecure gate answering ``answer(call)``."""
    from failsecure import hookimpl
    from failsecure import plugins as fs_plugins

    names = []

    def register(answer):
        class Gate:
            @hookimpl
            def failsecure_pre_tool_call(self, call):
                return answer(call)

        name = f"hermes_test_gate_{len(names)}"
        fs_plugins.register(Gate(), name=name)
        names.append(name)
        return f"plugin:{name}"

    yield register
    for name in names:
        fs_plugins.unregister(name=name)


def test_cross_framework_gate_that_raises_denies(rig, plugin_gate):
    def answer(call):
        raise LookupError("policy server down")

    hook = plugin_gate(answer)
    rig.load()
    out = rig.call()
    assert not out["ran"] and out["result"] == {"error": H.fail_closed(hook, "raised")}
    event = rig.last()
    assert (event["hook"], event["failure"], event["exception_type"]) == (hook, "raised", "LookupError")


def test_cross_framework_gate_junk_denies(rig, plugin_gate):
    hook = plugin_gate(lambda call: {"action": "allow"})  # not a failsecure Verdict
    rig.load()
    assert rig.call()["result"] == {"error": H.fail_closed(hook, "invalid")}


def test_cross_framework_gate_ask(rig, plugin_gate):
    """ask -> hermes' approve directive (0.18.1+); 0.13.0 has no approval gate: a block."""
    from hermes_cli import plugins

    from failsecure import Action, Verdict

    hook = plugin_gate(lambda call: Verdict(action=Action.ASK, reason="a human should look"))
    rig.plugin("quiet", "return None")
    rig.load()
    if H.has_approve():
        details = plugins._get_pre_tool_call_directive_details(H.TOOL, {}, tool_call_id="call-1")
        assert (details.action, details.message) == ("approve", "a human should look")
    else:
        out = rig.call()
        assert not out["ran"]
        assert out["result"] == {"error": f"failsecure: hook '{hook}' asked for approval, which hermes-agent 0.13.0 cannot do"}


def test_cross_framework_gate_allow_twin(rig, plugin_gate):
    plugin_gate(lambda call: None)
    rig.load()
    assert rig.call()["ran"]
