"""Callback handlers on a direct tool call (``tool.invoke`` / ``tool.ainvoke``) through
the real ``langchain_core.callbacks.manager`` dispatcher: strict handlers are gates,
the others observers."""

from __future__ import annotations

import asyncio
import threading

import pytest

from failsecure_langchain_rig import handler, hook_id

MODES = ("sync", "async")


def boom(exc_type):
    def on_start(*args, **kwargs):
        raise exc_type("SECRET-token-123")

    return on_start


def quiet(*args, **kwargs):
    return None


def assert_denied(rig, exc, name, failure, exception_type=None):
    assert exc is not None and type(exc).__name__ == "ToolCallDenied", exc
    assert not rig.marker.ran
    assert str(exc) == f"failsecure: hook '{hook_id(name)}' failed closed ({failure})"
    event = rig.last()
    assert event["outcome"] == "deny" and event["framework"] == "langchain"
    outcome = rig.outcome_of(hook_id(name), event)
    assert outcome["failure"] == failure
    assert outcome["exception_type"] == exception_type
    assert "SECRET" not in str(exc) and "SECRET" not in rig.audit_path.read_text()
    assert "harmless" not in rig.audit_path.read_text()  # no tool arguments in the audit


def assert_ran(rig, exc):
    assert exc is None, exc
    assert rig.marker.ran


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("exc_type", [RuntimeError, NotImplementedError, SystemExit, KeyError])
def test_strict_handler_that_raises_denies(rig, mode, exc_type):
    _, exc = rig.invoke([handler("Strict", boom(exc_type))], mode=mode)
    assert_denied(rig, exc, "Strict", "raised", exc_type.__name__)


@pytest.mark.parametrize("mode", MODES)
def test_strict_handler_that_answers_nothing_allows(rig, mode):
    result, exc = rig.invoke([handler("Strict", quiet)], mode=mode)
    assert_ran(rig, exc)
    assert result == "wrote harmless"
    assert rig.last()["outcome"] == "abstain"


@pytest.mark.parametrize("is_async_tool", [False, True])
def test_async_strict_handler_on_sync_tool_raising_denies(rig, is_async_tool):
    async def on_start(*args, **kwargs):
        await asyncio.sleep(0)
        raise RuntimeError("SECRET")

    _, exc = rig.invoke([handler("AStrict", on_start, is_async=True)], mode="sync", is_async_tool=is_async_tool)
    assert_denied(rig, exc, "AStrict", "raised", "RuntimeError")


def test_async_strict_handler_on_sync_tool_allowing_runs(rig):
    seen = []

    async def on_start(serialized, input_str, **kwargs):
        await asyncio.sleep(0)
        seen.append(kwargs["inputs"])

    _, exc = rig.invoke([handler("AStrict", on_start, is_async=True)], mode="sync")
    assert_ran(rig, exc)
    assert seen == [{"command": "harmless"}]


def test_async_strict_handler_on_sync_tool_inside_a_running_loop(rig):
    """A sync tool called from a coroutine: the async gate still runs to its end."""

    async def on_start(*args, **kwargs):
        raise RuntimeError("SECRET")

    tool = rig.marker.tool()

    async def main():
        try:
            tool.invoke({"command": "harmless"}, config={"callbacks": [handler("AStrict", on_start, is_async=True)]})
        except Exception as exc:  # noqa: BLE001
            return exc

    exc = asyncio.run(main())
    assert_denied(rig, exc, "AStrict", "raised", "RuntimeError")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("is_async", [False, True])
def test_hanging_gate_denies_at_the_deadline(rig, mode, is_async):
    if is_async:
        async def on_start(*args, **kwargs):
            await asyncio.sleep(2)
    else:
        def on_start(*args, **kwargs):
            rig.release.wait(5)

    _, exc = rig.invoke([handler("Hangs", on_start, is_async=is_async)], mode=mode)
    assert_denied(rig, exc, "Hangs", "timeout")
    assert rig.outcome_of(hook_id("Hangs"))["elapsed_ms"] < 1500


@pytest.mark.parametrize("mode", MODES)
def test_slow_gate_inside_the_deadline_allows(rig, mode):
    def on_start(*args, **kwargs):
        threading.Event().wait(0.05)

    _, exc = rig.invoke([handler("Slow", on_start)], mode=mode)
    assert_ran(rig, exc)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("junk", ["DENY", False, True, 0, {"allow": False}])
def test_gate_answering_junk_denies(rig, mode, junk):
    _, exc = rig.invoke([handler("Junk", lambda *a, **k: junk)], mode=mode)
    assert_denied(rig, exc, "Junk", "invalid")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("exc_type", [RuntimeError, NotImplementedError])
def test_observer_errors_are_swallowed_and_the_tool_runs(rig, mode, exc_type):
    """A tracer bug never blocks tools: upstream behaviour stays."""
    events = []

    def on_end(self, output, **kwargs):
        events.append("end")

    tracer = handler("Tracer", boom(exc_type), strict=False, on_tool_end=on_end)
    _, exc = rig.invoke([tracer], mode=mode)
    assert_ran(rig, exc)
    assert events == ["end"]
    assert rig.last()["outcome"] == "abstain"
    assert rig.last()["outcomes"] == []  # an observer is not a gate


@pytest.mark.parametrize("mode", MODES)
def test_observer_sees_the_start_and_the_denial(rig, mode):
    events = []

    def on_start(serialized, input_str, **kwargs):
        events.append(("start", kwargs["run_id"]))

    def on_error(self, error, **kwargs):
        events.append(("error", kwargs["run_id"], type(error).__name__, str(error)))

    tracer = handler("Tracer", on_start, strict=False, on_tool_error=on_error)
    _, exc = rig.invoke([tracer, handler("Strict", boom(RuntimeError))], mode=mode)
    assert_denied(rig, exc, "Strict", "raised", "RuntimeError")
    assert [e[0] for e in events] == ["start", "error"]
    assert events[0][1] == events[1][1]
    assert events[1][2:] == ("ToolCallDenied", str(exc))


@pytest.mark.parametrize("mode", MODES)
def test_config_role_gate_turns_an_observer_into_a_gate(rig, mode):
    rig.config(f'[hooks."{hook_id("Tracer")}"]\nrole = "gate"\n')
    _, exc = rig.invoke([handler("Tracer", boom(RuntimeError), strict=False)], mode=mode)
    assert_denied(rig, exc, "Tracer", "raised", "RuntimeError")


@pytest.mark.parametrize("mode", MODES)
def test_config_role_gate_on_a_quiet_observer_allows(rig, mode):
    rig.config(f'[hooks."{hook_id("Tracer")}"]\nrole = "gate"\n')
    _, exc = rig.invoke([handler("Tracer", quiet, strict=False)], mode=mode)
    assert_ran(rig, exc)
    assert rig.outcome_of(hook_id("Tracer"))["outcome"] == "abstain"


@pytest.mark.parametrize("mode", MODES)
def test_config_role_observer_turns_a_strict_handler_into_an_observer(rig, mode):
    rig.config(f'[hooks."{hook_id("Strict")}"]\nrole = "observer"\n')
    _, exc = rig.invoke([handler("Strict", boom(RuntimeError))], mode=mode)
    assert_ran(rig, exc)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", ["deny-first", "deny-last"])
def test_a_deny_outranks_any_allow_in_any_order(rig, mode, order):
    gates = [handler("Quiet", quiet), handler("Strict", boom(PermissionError))]
    if order == "deny-first":
        gates.reverse()
    _, exc = rig.invoke(gates, mode=mode)
    assert_denied(rig, exc, "Strict", "raised", "PermissionError")
    assert rig.outcome_of(hook_id("Quiet"))["failure"] is None  # every gate was consulted


@pytest.mark.parametrize("mode", MODES)
def test_required_gate_missing_denies(rig, mode):
    rig.config(top=f'required = ["{hook_id("Policy")}"]')
    _, exc = rig.invoke([handler("Other", quiet)], mode=mode)
    assert exc is not None and not rig.marker.ran
    assert str(exc) == f"failsecure: hook '{hook_id('Policy')}' is missing"
    assert rig.outcome_of(hook_id("Policy"))["failure"] == "missing"


@pytest.mark.parametrize("mode", MODES)
def test_required_gate_present_allows(rig, mode):
    rig.config(top=f'required = ["{hook_id("Policy")}"]')
    _, exc = rig.invoke([handler("Policy", quiet)], mode=mode)
    assert_ran(rig, exc)


@pytest.mark.parametrize("mode", MODES)
def test_ignore_agent_handler_is_not_consulted(rig, mode):
    """``ignore_agent = True`` keeps its upstream meaning: no tool events."""
    _, exc = rig.invoke([handler("Ignoring", boom(RuntimeError), ignore_agent=True)], mode=mode)
    assert_ran(rig, exc)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("smuggled", ["forbidden", "harmless-extra"])
def test_gates_judge_the_inputs_after_a_rewrite(rig, mode, smuggled):
    """A handler mutating the shared inputs after the policy gate approved them: the
    round runs again, the policy sees the final inputs."""
    from langchain_core.tools import StructuredTool

    ran = []

    def write_paths(paths: list[str]) -> str:
        """Write paths."""
        ran.append(list(paths))
        return "ok"

    tool = StructuredTool.from_function(write_paths)

    def policy_gate(serialized, input_str, **kwargs):
        if "forbidden" in kwargs["inputs"]["paths"]:
            raise PermissionError("forbidden path")

    def rewriter(serialized, input_str, **kwargs):
        paths = kwargs["inputs"]["paths"]
        if smuggled not in paths:
            paths.append(smuggled)

    callbacks = [handler("Policy", policy_gate), handler("Rewriter", rewriter)]
    config = {"callbacks": callbacks}
    try:
        if mode == "sync":
            tool.invoke({"paths": ["a"]}, config=config)
        else:
            asyncio.run(tool.ainvoke({"paths": ["a"]}, config=config))
        exc = None
    except Exception as e:  # noqa: BLE001
        exc = e
    if smuggled == "forbidden":
        assert type(exc).__name__ == "ToolCallDenied" and not ran
        assert rig.outcome_of(hook_id("Policy"))["exception_type"] == "PermissionError"
    else:
        assert exc is None and ran == [["a", "harmless-extra"]]


@pytest.mark.parametrize("mode", MODES)
def test_upstream_fails_open_when_unpatched(rig, upstream, mode):
    """The regression twin: without failsecure, a strict handler raising
    NotImplementedError, and an async strict handler on a sync tool, are swallowed."""

    async def araises(*args, **kwargs):
        raise RuntimeError("x")

    with upstream:
        _, exc = rig.invoke([handler("Strict", boom(NotImplementedError))], mode=mode)
        assert exc is None and rig.marker.ran
        rig.marker.reset()
        if mode == "sync":
            _, exc = rig.invoke([handler("AStrict", araises, is_async=True)], mode=mode)
            assert exc is None and rig.marker.ran
            rig.marker.reset()
    _, exc = rig.invoke([handler("Strict", boom(NotImplementedError))], mode=mode)
    assert_denied(rig, exc, "Strict", "raised", "NotImplementedError")


def test_a_failsecure_plugin_gate_is_consulted(rig):
    from failsecure import Action, Verdict, hookimpl
    from failsecure import plugins as fs_plugins

    calls = []

    class Gate:
        @hookimpl
        def failsecure_pre_tool_call(self, call):
            calls.append((call.framework, call.tool))
            if call.arguments.get("command") == "forbidden":
                return Verdict(action=Action.DENY, reason="plugin says no")
            return None

    fs_plugins.register(Gate(), name="langchain_test_gate")
    try:
        _, exc = rig.invoke([], command="forbidden")
        assert exc is not None and not rig.marker.ran and str(exc) == "plugin says no"
        assert rig.last()["hook"] == "plugin:langchain_test_gate"
        _, exc = rig.invoke([], command="harmless")
        assert_ran(rig, exc)
    finally:
        fs_plugins.unregister(name="langchain_test_gate")
    assert calls == [("langchain", "write_marker")] * 2


@pytest.mark.parametrize("mode", MODES)
def test_arguments_that_cannot_be_copied_or_compared_still_run(rig, mode):
    """An argument object with no equality and no deepcopy (a lock) is not "rewritten"."""
    from langchain_core.tools import StructuredTool

    ran = []

    class Client:
        def __deepcopy__(self, memo):
            raise TypeError("no copies")

    def use(client: object, name: str) -> str:
        """Use the client."""
        ran.append(name)
        return "ok"

    tool = StructuredTool.from_function(use)
    config = {"callbacks": [handler("Strict", quiet)]}
    args = {"client": Client(), "name": "x"}
    if mode == "sync":
        tool.invoke(args, config=config)
    else:
        asyncio.run(tool.ainvoke(args, config=config))
    assert ran == ["x"]


@pytest.mark.parametrize("mode", MODES)
def test_a_hook_table_without_role_keeps_an_observer_an_observer(rig, mode):
    rig.config(f'[hooks."{hook_id("Tracer")}"]\ntimeout = 0.2\n')
    _, exc = rig.invoke([handler("Tracer", boom(RuntimeError), strict=False)], mode=mode)
    assert_ran(rig, exc)


def test_a_project_config_cannot_demote_a_gate(rig, monkeypatch):
    """``role = "observer"`` in an untrusted ./failsecure.toml is ignored: still a gate."""
    rig.dir.joinpath("failsecure.toml").write_text(f'[hooks."{hook_id("Strict")}"]\nrole = "observer"\n')
    from failsecure import policy

    policy.reload()
    _, exc = rig.invoke([handler("Strict", boom(RuntimeError))])
    assert_denied(rig, exc, "Strict", "raised", "RuntimeError")
