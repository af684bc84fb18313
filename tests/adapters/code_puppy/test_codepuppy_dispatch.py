"""Dispatcher level: code-puppy's real ``on_*`` dispatchers of the three gating phases,
each fault with the failure category from the audit file, each deny with an allow twin."""

import asyncio
import inspect
import time

import pytest
from importlib.metadata import version
from packaging.version import Version

PUPPY = Version(version("code-puppy"))
SHELL_ARGS = (None, "echo hi", None, 60)


# ---------------------------------------------------------------- helpers


def shell(cb, run):
    return run(cb.on_run_shell_command(*SHELL_ARGS))


def pre_tool(cb, run):
    return run(cb.on_pre_tool_call("agent_run_shell_command", {"command": "echo hi"}))


DISPATCH = {"run_shell_command": shell, "pre_tool_call": pre_tool}
BLOCKING = sorted(DISPATCH)


def hook_of(fn):
    return f"code-puppy:{fn.__module__}.{fn.__qualname__}"


def blocked(results):
    return [r for r in results if isinstance(r, dict) and r.get("blocked")]


class Hostile:
    def __bool__(self):
        raise RuntimeError("hostile __bool__")

    def __eq__(self, other):
        raise RuntimeError("hostile __eq__")

    __hash__ = object.__hash__

    def get(self, *a):
        raise RuntimeError("hostile get")

    def __str__(self):
        raise RuntimeError("hostile __str__")


class HostileDict(dict):
    def get(self, *a):
        raise RuntimeError("hostile get")


# ---------------------------------------------------------------- faults on the blocked-dict phases


@pytest.mark.parametrize("phase", BLOCKING)
@pytest.mark.parametrize("exc", [RuntimeError, SystemExit, ValueError])
def test_raising_callback_denies(cb, rig, run, phase, exc):
    async def guard(*args, **kwargs):
        raise exc("boom: secret-token-123")

    cb.register_callback(phase, guard)
    results = DISPATCH[phase](cb, run)
    assert len(blocked(results)) == 1
    message = blocked(results)[0]["error_message"]
    assert "test_codepuppy_dispatch.test_raising_callback_denies.<locals>.guard" in message
    assert "(raised)" in message and "secret-token-123" not in message and "boom" not in message
    event = rig.last()
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", exc.__name__)
    assert event["tool"] == "agent_run_shell_command"


@pytest.mark.parametrize("phase", BLOCKING)
def test_allowing_callback_twin(cb, rig, run, phase):
    async def guard(*args, **kwargs):
        return None

    cb.register_callback(phase, guard)
    assert DISPATCH[phase](cb, run) == [None]
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("abstain", None)
    assert rig.outcome_of(".guard", event)["outcome"] == "abstain"


@pytest.mark.parametrize("phase", BLOCKING)
def test_sync_raising_callback_denies(cb, rig, run, phase):
    def guard(*args, **kwargs):
        raise KeyError("x")

    cb.register_callback(phase, guard)
    assert blocked(DISPATCH[phase](cb, run))
    assert (rig.last()["failure"], rig.last()["exception_type"]) == ("raised", "KeyError")


@pytest.mark.parametrize("phase", BLOCKING)
def test_async_hang_times_out(cb, rig, run, phase):
    async def guard(*args, **kwargs):
        await asyncio.sleep(3)
        raise RuntimeError("late")

    cb.register_callback(phase, guard)
    start = time.monotonic()
    results = DISPATCH[phase](cb, run)
    assert time.monotonic() - start < 2
    assert "(timeout)" in blocked(results)[0]["error_message"]
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


@pytest.mark.parametrize("phase", BLOCKING)
def test_sync_hang_times_out(cb, rig, run, phase):
    def guard(*args, **kwargs):
        time.sleep(1.5)

    cb.register_callback(phase, guard)
    start = time.monotonic()
    assert blocked(DISPATCH[phase](cb, run))
    assert time.monotonic() - start < 1.2
    assert rig.last()["failure"] == "timeout"


@pytest.mark.parametrize("phase", BLOCKING)
def test_slow_but_in_time_twin(cb, rig, run, phase):
    async def guard(*args, **kwargs):
        await asyncio.sleep(0.05)

    cb.register_callback(phase, guard)
    assert DISPATCH[phase](cb, run) == [None]
    assert rig.last()["failure"] is None


JUNK = {
    "string DENY": "DENY",
    "False": False,
    "True": True,
    "typo block": {"block": True},
    "list": ["blocked"],
    "blocked not bool": {"blocked": "yes"},
    "dict subclass": HostileDict(blocked=True),
    "hostile object": Hostile(),
    "non-str rewrite": {"rewrite": 42},
    "non-str key": {1: True},
}


@pytest.mark.parametrize("phase", BLOCKING)
@pytest.mark.parametrize("answer", list(JUNK.values()), ids=list(JUNK))
def test_junk_answer_denies(cb, rig, run, phase, answer):
    async def guard(*args, **kwargs):
        return answer

    cb.register_callback(phase, guard)
    results = DISPATCH[phase](cb, run)
    assert "(invalid)" in blocked(results)[0]["error_message"]
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


VALID = {
    "none": (None, [None]),
    "empty dict": ({}, [None]),
    "blocked False": ({"blocked": False}, [{"blocked": False}]),
    "context_message": ({"context_message": "ctx"}, [{"context_message": "ctx"}]),
    "rewrite": ({"rewrite": "echo bye", "rewrite_reason": "r"}, [{"rewrite": "echo bye", "rewrite_reason": "r"}]),
}


@pytest.mark.parametrize("phase", BLOCKING)
@pytest.mark.parametrize("answer,expected", list(VALID.values()), ids=list(VALID))
def test_valid_answer_keeps_upstream_meaning(cb, rig, run, phase, answer, expected):
    async def guard(*args, **kwargs):
        return answer

    cb.register_callback(phase, guard)
    assert DISPATCH[phase](cb, run) == expected
    assert rig.last()["outcome"] in ("allow", "abstain")


@pytest.mark.parametrize("phase", BLOCKING)
def test_own_block_keeps_its_message(cb, rig, run, phase):
    async def guard(*args, **kwargs):
        return {"blocked": True, "error_message": "not today", "reasoning": "policy"}

    cb.register_callback(phase, guard)
    assert DISPATCH[phase](cb, run) == [{"blocked": True, "error_message": "not today", "reasoning": "policy"}]
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None)


@pytest.mark.parametrize("phase", BLOCKING)
@pytest.mark.parametrize("reason,shown", [(123, "123"), (Hostile(), "Tool execution blocked by hook"), (None, None)])
def test_non_string_reason_still_blocks(cb, rig, run, phase, reason, shown):
    async def guard(*args, **kwargs):
        return {"blocked": True, "reason": reason}

    cb.register_callback(phase, guard)
    (block,) = blocked(DISPATCH[phase](cb, run))
    assert block["reason"] == shown and (shown is None or type(block["reason"]) is str)
    assert rig.last()["outcome"] == "deny"


@pytest.mark.parametrize("phase", BLOCKING)
@pytest.mark.parametrize("order", ["deny first", "allow first"])
def test_deny_outranks_allow_in_any_order(cb, rig, run, phase, order):
    async def allowing(*args, **kwargs):
        return {"blocked": False, "context_message": "fine"}

    async def raising(*args, **kwargs):
        raise RuntimeError

    pair = [raising, allowing] if order == "deny first" else [allowing, raising]
    for fn in pair:
        cb.register_callback(phase, fn)
    results = DISPATCH[phase](cb, run)
    assert results == blocked(results) and len(results) == 1
    assert rig.outcome_of(".allowing")["outcome"] == "allow"
    assert rig.outcome_of(".raising")["failure"] == "raised"


def test_only_gating_phases_are_wrapped(cb, rig, run):
    """A raising callback on a non-gating phase keeps upstream's isolation (None)."""

    async def observer(*args, **kwargs):
        raise RuntimeError

    cb.register_callback("run_shell_command_output", observer)
    try:
        assert run(cb.on_run_shell_command_output(None, "echo", {})) == [None]
    finally:
        cb.unregister_callback("run_shell_command_output", observer)
    assert rig.events() == []


# ---------------------------------------------------------------- file_permission


def test_file_permission_raising_sync_denies(cb, rig):
    def guard(*args, **kwargs):
        raise OSError("disk")

    cb.register_callback("file_permission", guard)
    assert cb.on_file_permission(None, "/tmp/x", "write") == [False]
    event = rig.last()
    assert (event["outcome"], event["failure"], event["exception_type"], event["tool"]) == ("deny", "raised", "OSError", "file_permission")


def test_file_permission_raising_async_denies(cb, rig, run):
    async def guard(*args, **kwargs):
        raise OSError("disk")

    cb.register_callback("file_permission", guard)
    assert run(cb.on_file_permission_async(None, "/tmp/x", "write")) == [False]
    assert rig.last()["failure"] == "raised"


@pytest.mark.parametrize("answer", ["no", 0, 1, {"blocked": True}, Hostile()], ids=["str", "0", "1", "dict", "hostile"])
def test_file_permission_junk_denies(cb, rig, run, answer):
    def guard(*args, **kwargs):
        return answer

    cb.register_callback("file_permission", guard)
    assert cb.on_file_permission(None, "/tmp/x", "write") == [False]
    assert rig.last()["failure"] == "invalid"


@pytest.mark.parametrize("answer", [True, None, False])
def test_file_permission_valid_answers(cb, rig, run, answer):
    async def guard(*args, **kwargs):
        return answer

    cb.register_callback("file_permission", guard)
    assert run(cb.on_file_permission_async(None, "/tmp/x", "write")) == [answer]
    assert cb.on_file_permission(None, "/tmp/x", "write") == [answer]  # no running loop: asyncio.run
    assert rig.last()["failure"] is None


def test_async_callback_from_running_loop_in_sync_trigger_denies(cb, rig, run):
    """Upstream closes the coroutine and records None (the write happens)."""

    async def guard(*args, **kwargs):
        return True

    cb.register_callback("file_permission", guard)

    async def inside_a_loop():
        return cb.on_file_permission(None, "/tmp/x", "write")

    assert run(inside_a_loop()) == [False]
    assert (rig.last()["failure"], rig.last()["outcome"]) == ("invalid", "deny")
    # the allow twin: the same callback, sync trigger without a running loop
    assert cb.on_file_permission(None, "/tmp/x", "write") == [True]
    assert rig.last()["outcome"] == "allow"


def test_file_permission_hang_times_out(cb, rig):
    def guard(*args, **kwargs):
        time.sleep(1.5)
        return True

    cb.register_callback("file_permission", guard)
    start = time.monotonic()
    assert cb.on_file_permission(None, "/tmp/x", "write") == [False]
    assert time.monotonic() - start < 1.2
    assert rig.last()["failure"] == "timeout"


# ---------------------------------------------------------------- registry semantics kept


def test_callbacks_are_never_replaced(cb, rig, run):
    async def guard(*args, **kwargs):
        raise RuntimeError

    cb.register_callback("run_shell_command", guard)
    assert cb.get_callbacks("run_shell_command")[0] is guard
    assert blocked(shell(cb, run))
    assert cb.unregister_callback("run_shell_command", guard) is True
    assert shell(cb, run) == []  # nothing registered: nothing objects (allow twin)
    assert rig.last()["outcome"] == "abstain"


def test_wrappers_keep_signatures(cb, adapter):
    for name in ("_trigger_callbacks", "_trigger_callbacks_sync"):
        fn = getattr(cb, name)
        assert inspect.signature(fn) == inspect.signature(fn.__wrapped__)
        assert fn.__name__ == name
    params = inspect.signature(cb.register_callback).parameters
    assert ("fail_closed" in params) == (PUPPY >= Version("0.0.734"))


def test_disabled_plugins_stay_filtered(cb, rig, run, monkeypatch):
    async def guard(*args, **kwargs):
        raise RuntimeError

    cb.register_callback("run_shell_command", guard)
    cb._callback_owners[guard] = "some_plugin"
    monkeypatch.setattr(cb, "_get_disabled_plugins", lambda: {"some_plugin"})
    assert shell(cb, run) == []
    assert rig.last()["outcomes"] == []
    # the twin: the plugin enabled again, its raising callback denies
    monkeypatch.setattr(cb, "_get_disabled_plugins", lambda: set())
    assert blocked(shell(cb, run))
    assert rig.last()["failure"] == "raised"


@pytest.mark.skipif(PUPPY < Version("0.0.734"), reason="register_callback(fail_closed=) is 0.0.734+")
@pytest.mark.parametrize("opted_in", [True, False])
def test_upstream_fail_closed_opt_in_outranks_on_error_allow(cb, rig, run, opted_in):
    async def guard(*args, **kwargs):
        raise RuntimeError

    hook = hook_of(guard)
    rig.config(f'[hooks."{hook}"]\non_error = "allow"\n')
    cb.register_callback("run_shell_command", guard, fail_closed=opted_in)
    results = shell(cb, run)
    if opted_in:  # the author declared a security check: the config cannot reopen it
        assert "(raised)" in blocked(results)[0]["error_message"]
        assert (rig.last()["outcome"], rig.last()["failure"], rig.last()["exception_type"]) == ("deny", "raised", "RuntimeError")
    else:  # the twin: on_error = "allow" tolerates the failure
        assert results == [None]
        assert (rig.last()["outcome"], rig.outcome_of(".guard")["failure"]) == ("abstain", "raised")


def test_required_callback_missing_denies(cb, rig, run):
    async def guard(*args, **kwargs):
        return None

    hook = hook_of(guard)
    rig.config(top=f'required = ["{hook}"]')
    results = shell(cb, run)
    assert "is missing" in blocked(results)[0]["error_message"]
    assert (rig.last()["failure"], rig.last()["hook"]) == ("missing", hook)
    cb.register_callback("run_shell_command", guard)  # the twin: present and allowing
    assert shell(cb, run) == [None]
    assert rig.last()["outcome"] == "abstain"


def test_observer_role_is_never_deciding(cb, rig, run):
    async def guard(*args, **kwargs):
        return {"blocked": True, "error_message": "observer says no"}

    hook = hook_of(guard)
    rig.config(f'[hooks."{hook}"]\nrole = "observer"\n')
    cb.register_callback("run_shell_command", guard)
    assert shell(cb, run) == [None]
    rig.config("")  # the twin: as a gate it blocks
    assert blocked(shell(cb, run))


# ---------------------------------------------------------------- humans on a TTY


async def _prompting_guard(*args, **kwargs):
    """A guard that asks the user through code-puppy's approval prompt (only a callback that
    asks a person waits for one without the default deadline); the person takes 0.6 s."""
    from code_puppy.tools.common import get_user_approval_async

    await asyncio.sleep(0.6)  # past the 0.3 s default deadline: a human answering
    if False:  # pragma: no cover - names the prompt, as the core-plugins guards do
        await get_user_approval_async("title", "content")


def test_tty_call_gets_no_default_deadline(cb, rig, run, tty):
    guard = _prompting_guard

    cb.register_callback("run_shell_command", guard)
    tty()
    assert shell(cb, run) == [None]
    assert rig.last()["failure"] is None


def test_non_tty_call_gets_the_default_deadline(cb, rig, run):
    async def guard(*args, **kwargs):
        await asyncio.sleep(0.6)

    cb.register_callback("run_shell_command", guard)
    assert blocked(shell(cb, run))
    assert rig.last()["failure"] == "timeout"


def test_tty_call_keeps_a_per_hook_deadline(cb, rig, run, tty):
    guard = _prompting_guard

    hook = hook_of(guard)
    rig.config(f'[hooks."{hook}"]\ntimeout = 0.2\n', timeout=0)
    cb.register_callback("run_shell_command", guard)
    tty()
    assert blocked(shell(cb, run))
    assert rig.last()["failure"] == "timeout"


def test_approval_backend_counts_as_interactive(cb, rig, run, monkeypatch):
    from code_puppy.tools import common

    guard = _prompting_guard

    cb.register_callback("run_shell_command", guard)
    monkeypatch.setattr(common, "get_approval_backend", lambda: object())
    assert shell(cb, run) == [None]
    assert rig.last()["failure"] is None


def test_approval_backend_keeps_the_deadline_of_a_guard_that_asks_nobody(cb, rig, run, monkeypatch):
    """The deny twin: an approval backend answers prompts; a guard that asks none and
    hangs is a timeout."""
    from code_puppy.tools import common

    async def guard(*args, **kwargs):
        await asyncio.sleep(0.6)

    cb.register_callback("run_shell_command", guard)
    monkeypatch.setattr(common, "get_approval_backend", lambda: object())
    assert blocked(shell(cb, run))
    assert rig.last()["failure"] == "timeout"


# ---------------------------------------------------------------- a handled call (tool_result)


def _handled(results, expected):
    """Upstream's own reading of the blocks (the helper exists from 0.0.9xx)."""
    try:
        from code_puppy._pydantic_tool_helpers import _handled_result_for_blocks
    except ImportError:
        return True
    return _handled_result_for_blocks(results) == expected


def test_handled_tool_result_keeps_working(cb, rig, run):
    async def handler(*args, **kwargs):
        return {"blocked": True, "tool_result": "answered in the editor"}

    cb.register_callback("pre_tool_call", handler)
    results = pre_tool(cb, run)
    assert results == [{"blocked": True, "tool_result": "answered in the editor"}]
    assert _handled(results, "answered in the editor")


def test_handled_tool_result_does_not_hide_a_failure(cb, rig, run):
    async def handler(*args, **kwargs):
        return {"blocked": True, "tool_result": "answered in the editor"}

    async def raising(*args, **kwargs):
        raise RuntimeError

    cb.register_callback("pre_tool_call", handler)
    cb.register_callback("pre_tool_call", raising)
    results = pre_tool(cb, run)
    assert len(blocked(results)) == 2
    assert _handled(results, None)  # an ordinary deny: the failure is not answered for
    assert rig.outcome_of(".raising")["failure"] == "raised"


@pytest.mark.parametrize("new, denied", [("rm -rf /", True), ("ls -la", False)])
def test_tool_args_mutated_after_approval_are_judged_again(cb, rig, run, new, denied):
    """A later pre_tool_call callback mutating tool_args in place: the gates see the
    arguments the tool will get (a smuggled forbidden one is blocked, a harmless one runs)."""

    async def policy(tool_name, tool_args, context=None):
        if "rm -rf" in str(tool_args.get("command", "")):
            return {"blocked": True, "error_message": "policy: no rm"}
        return None

    async def mutator(tool_name, tool_args, context=None):
        tool_args["command"] = new
        return None

    cb.register_callback("pre_tool_call", policy)
    cb.register_callback("pre_tool_call", mutator)
    tool_args = {"command": "echo hi"}
    results = run(cb.on_pre_tool_call("agent_run_shell_command", tool_args))
    assert tool_args == {"command": new}
    if denied:
        assert blocked(results) and results[0]["error_message"] == "policy: no rm"
        assert rig.last()["outcome"] == "deny"
    else:
        assert not any(isinstance(r, dict) and r.get("blocked") for r in results)
        assert rig.last()["outcome"] in ("allow", "abstain")
