"""Two variants of issue #26's classes on code-puppy's real dispatchers.

- The worker thread: code-puppy's async loop (``_trigger_callbacks``) calls a sync callback
  on its event loop, so the callback may ask for it (``asyncio.get_running_loop()``).
  failsecure runs it on its worker for the deadline and lends it the loop there: a
  legitimate callback is not denied for a thread it never asked for. The deny twin: the
  deadline still holds with the loop lent.
- The terminal: with stdin a TTY, the default deadline is dropped only for a callback that
  asks a person (code-puppy's approval prompt, ``get_user_approval[_async]``, in its own
  code or a function of its module it calls); a hung policy callback that asks nobody is
  still a timeout, terminal or not.
"""

import asyncio
import threading

import pytest

SHELL_ARGS = (None, "echo hi", None, 60)


def shell(cb, run):
    return run(cb.on_run_shell_command(*SHELL_ARGS))


def pre_tool(cb, run):
    return run(cb.on_pre_tool_call("agent_run_shell_command", {"command": "echo hi"}))


DISPATCH = {"run_shell_command": shell, "pre_tool_call": pre_tool}
PHASES = sorted(DISPATCH)


def blocked(results):
    return [r for r in results if isinstance(r, dict) and r.get("blocked")]


# ---------------------------------------------------------------- the running loop


@pytest.mark.parametrize("phase", PHASES)
def test_a_sync_callback_finds_the_running_loop(cb, rig, run, phase):
    seen = []

    def guard(*args, **kwargs):
        seen.append(asyncio.get_running_loop())
        return None

    cb.register_callback(phase, guard)
    assert DISPATCH[phase](cb, run) == [None]
    assert len(seen) == 1 and isinstance(seen[0], asyncio.AbstractEventLoop)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


@pytest.mark.parametrize("phase", PHASES)
def test_a_sync_callback_with_the_loop_still_times_out(cb, rig, run, phase):
    release = threading.Event()

    def guard(*args, **kwargs):
        asyncio.get_running_loop()
        release.wait(10)

    cb.register_callback(phase, guard)
    try:
        results = DISPATCH[phase](cb, run)
    finally:
        release.set()
    assert len(blocked(results)) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_the_loop_is_not_left_on_the_worker(cb, rig, run):
    def guard(*args, **kwargs):
        asyncio.get_running_loop()

    cb.register_callback("run_shell_command", guard)
    shell(cb, run)
    from failsecure import guard as core

    seen = []

    def probe():
        try:
            asyncio.get_running_loop()
            seen.append("loop")
        except RuntimeError:
            seen.append("none")

    core.call("probe", probe, (), {}, validate=lambda r: None, timeout=5)
    assert seen == ["none"]


@pytest.mark.parametrize("dispatch", ["sync", "async"])
def test_a_sync_file_permission_callback_finds_the_running_loop(cb, rig, run, dispatch):
    """``on_file_permission`` (the sync dispatcher) reached from inside a running loop, and
    ``on_file_permission_async``: upstream calls the callback in the loop's thread."""
    seen = []

    def guard(*args, **kwargs):
        seen.append(asyncio.get_running_loop())
        return True

    cb.register_callback("file_permission", guard)

    async def inside():
        if dispatch == "sync":
            return cb.on_file_permission(None, "/tmp/x", "write")
        return await cb.on_file_permission_async(None, "/tmp/x", "write")

    assert run(inside()) == [True]
    assert len(seen) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("allow", None)


def test_a_sync_file_permission_callback_without_a_loop_has_none(cb, rig):
    """The twin: the sync dispatcher with no running loop lends none (as upstream)."""
    seen = []

    def guard(*args, **kwargs):
        try:
            asyncio.get_running_loop()
            seen.append("loop")
        except RuntimeError:
            seen.append("none")
        return False

    cb.register_callback("file_permission", guard)
    assert cb.on_file_permission(None, "/tmp/x", "write") == [False]
    assert seen == ["none"] and rig.last()["outcome"] == "deny"


# ---------------------------------------------------------------- the terminal


@pytest.mark.parametrize("phase", PHASES)
def test_a_terminal_keeps_the_deadline_of_a_callback_that_asks_nobody(cb, rig, run, tty, phase):
    async def guard(*args, **kwargs):
        await asyncio.sleep(0.6)  # past the 0.3 s deadline; it asks nobody: a hung policy

    cb.register_callback(phase, guard)
    tty()
    results = DISPATCH[phase](cb, run)
    assert len(blocked(results)) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


async def _asks_a_person(*args, **kwargs):
    from code_puppy.tools.common import get_user_approval_async

    await asyncio.sleep(0.6)  # the person takes their time (the prompt itself is not driven)
    if False:  # pragma: no cover - names the prompt, as the core-plugins guards do
        await get_user_approval_async("title", "content")
    return None


@pytest.mark.parametrize("phase", PHASES)
def test_a_terminal_waits_for_a_callback_that_asks_a_person(cb, rig, run, tty, phase):
    """The allow twin: a callback that asks through code-puppy's prompt gets no default deadline."""
    cb.register_callback(phase, _asks_a_person)
    tty()
    assert DISPATCH[phase](cb, run) == [None]
    assert rig.last()["failure"] is None


def _slow_approval(monkeypatch, answer=(True, None)):
    """code-puppy's own approval prompt, answered by a person who takes 0.6 s (past the
    0.3 s deadline); the callbacks under test are the real core-plugins ones."""
    from code_puppy.tools import common

    asked = []

    async def get_user_approval_async(*args, **kwargs):
        asked.append(kwargs.get("title") or (args[0] if args else None))
        await asyncio.sleep(0.6)
        return answer

    monkeypatch.setattr(common, "get_user_approval_async", get_user_approval_async)
    return asked


def common_prompt():
    from code_puppy.tools import common

    return common.get_user_approval_async


def test_a_terminal_waits_for_the_destructive_guard_asking_through_its_helper(cb, rig, run, tty, monkeypatch):
    """The real ``destructive_command_guard`` asks in ``_prompt_user_approval``, a function
    of its own module: a slow approval is no timeout on a terminal."""
    guard = pytest.importorskip("code_puppy_core_plugins.destructive_command_guard.register_callbacks")
    asked = _slow_approval(monkeypatch)
    cb.register_callback("run_shell_command", guard.destructive_command_guard_callback)
    tty()
    assert run(cb.on_run_shell_command(None, "rm -rf /", None, 60)) == [None]
    assert len(asked) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_the_destructive_guard_rejected_after_a_slow_answer_blocks(cb, rig, run, tty, monkeypatch):
    """Its deny twin: the person rejects after 0.6 s; the guard's own block stands."""
    guard = pytest.importorskip("code_puppy_core_plugins.destructive_command_guard.register_callbacks")
    _slow_approval(monkeypatch, (False, None))
    cb.register_callback("run_shell_command", guard.destructive_command_guard_callback)
    tty()
    results = run(cb.on_run_shell_command(None, "rm -rf /", None, 60))
    assert len(blocked(results)) == 1 and "rejected" in blocked(results)[0]["error_message"]
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


@pytest.mark.parametrize("dispatch", ["sync", "async"])
def test_a_terminal_waits_for_the_file_permission_prompt(cb, rig, run, tty, monkeypatch, dispatch):
    """The real file-permission handler asks two functions down its module
    (``prompt_for_file_permission_async`` -> ``get_user_approval_async``)."""
    handler = pytest.importorskip("code_puppy_core_plugins.file_permission_handler.register_callbacks")
    asked = _slow_approval(monkeypatch)
    monkeypatch.setattr(handler, "get_user_approval_async", common_prompt())  # imported by name there
    monkeypatch.setattr(handler, "get_yolo_mode", lambda: False)  # the prompt is shown
    cb.register_callback("file_permission", handler.handle_file_permission_async)
    tty()
    if dispatch == "sync":
        assert cb.on_file_permission(None, "/tmp/x", "write") == [True]
    else:
        assert run(cb.on_file_permission_async(None, "/tmp/x", "write")) == [True]
    assert len(asked) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("allow", None)


@pytest.mark.parametrize("dispatch", ["sync", "async"])
def test_a_terminal_keeps_the_deadline_of_a_plain_file_permission_callback(cb, rig, run, tty, dispatch):
    """Its deny twin: a file_permission callback that asks nobody and hangs is a timeout."""
    import time

    def guard(*args, **kwargs):
        time.sleep(0.6)
        return True

    cb.register_callback("file_permission", guard)
    tty()
    if dispatch == "sync":
        assert cb.on_file_permission(None, "/tmp/x", "write") == [False]
    else:
        assert run(cb.on_file_permission_async(None, "/tmp/x", "write")) == [False]
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_a_terminal_waits_for_a_callback_that_calls_input(cb, rig, run, tty, monkeypatch):
    import builtins
    import time

    def slow_input(prompt=""):
        time.sleep(0.6)
        return "y"

    def guard(*args, **kwargs):
        return None if input("run it? ") == "y" else {"blocked": True}

    monkeypatch.setattr(builtins, "input", slow_input)
    cb.register_callback("run_shell_command", guard)
    tty()
    assert shell(cb, run) == [None]
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_an_attribute_named_input_is_not_a_person(cb, rig, run, tty):
    """Its deny twin: ``something.input`` is not the builtin; the hung callback times out."""
    import time
    import types

    holder = types.SimpleNamespace(input=lambda: time.sleep(0.6))

    def guard(*args, **kwargs):
        holder.input()

    cb.register_callback("run_shell_command", guard)
    tty()
    assert len(blocked(shell(cb, run))) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_asking_without_anyone_to_answer_keeps_the_deadline(cb, rig, run):
    """No terminal, no approval backend: a callback that would ask still has its deadline
    (code-puppy's prompt denies on its own there)."""
    cb.register_callback("run_shell_command", _asks_a_person)
    assert len(blocked(shell(cb, run))) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


class _Asker:
    async def __call__(self, *args, **kwargs):
        return await self._ask()

    async def _ask(self):
        from code_puppy.tools.common import get_user_approval_async

        await asyncio.sleep(0.6)
        if False:  # pragma: no cover - names the prompt
            await get_user_approval_async("title", "content")


class _Plain:
    async def __call__(self, *args, **kwargs):
        return await self._wait()

    async def _wait(self):
        await asyncio.sleep(0.6)


def test_a_terminal_waits_for_a_method_that_asks_through_its_own_class(cb, rig, run, tty):
    """A bound method (upstream's register_callback needs a ``__name__``) asking in another
    method of its class."""
    cb.register_callback("run_shell_command", _Asker().__call__)
    tty()
    assert shell(cb, run) == [None]
    assert rig.last()["failure"] is None


def test_a_terminal_keeps_the_deadline_of_a_plain_method(cb, rig, run, tty):
    cb.register_callback("run_shell_command", _Plain().__call__)
    tty()
    assert len(blocked(shell(cb, run))) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def _acp_dispatch(cb, run, monkeypatch, option):
    """core-plugins' real ACP shell gate (``acp.permissions._on_run_shell_command``) with
    its approval backend installed and no terminal; the editor client (the other end of
    the connection, not code-puppy) answers its permission dialog after 0.6 s."""
    import types

    permissions = pytest.importorskip("code_puppy_core_plugins.acp.permissions")
    from code_puppy.tools import common
    from code_puppy_core_plugins.acp import state

    class Client:
        async def request_permission(self, **kwargs):
            await asyncio.sleep(0.6)
            return types.SimpleNamespace(outcome=types.SimpleNamespace(outcome="selected", option_id=option))

    monkeypatch.setattr(common, "get_approval_backend", lambda: permissions._approval_backend)
    monkeypatch.setattr("code_puppy.config.get_yolo_mode", lambda: False)
    cb.register_callback("run_shell_command", permissions._on_run_shell_command)

    async def in_a_run():
        state.set_connection(Client(), asyncio.get_running_loop())
        state.begin_run("session-1")
        try:
            return await cb.on_run_shell_command(*SHELL_ARGS)
        finally:
            state.end_run()
            state.set_connection(None, None)

    return run(in_a_run())


def test_an_editor_client_is_waited_for_over_acp(cb, rig, run, monkeypatch):
    assert _acp_dispatch(cb, run, monkeypatch, "allow_once") == [None]
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_an_editor_client_rejecting_over_acp_blocks(cb, rig, run, monkeypatch):
    """Its deny twin: the client rejects after 0.6 s; the ACP gate's own block stands."""
    results = _acp_dispatch(cb, run, monkeypatch, "reject_once")
    assert len(blocked(results)) == 1 and blocked(results)[0]["error_message"] == "Command rejected in the client"
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)
