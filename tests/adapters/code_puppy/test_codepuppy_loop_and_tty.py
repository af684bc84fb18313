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


@pytest.mark.xfail(
    strict=True,
    reason="on a TTY every gating callback loses the default deadline "
    "(adapters/codepuppy.py _interactive); narrowing it to callbacks that ask a person "
    "changes test_codepuppy_dispatch.py::test_tty_call_gets_no_default_deadline's assertion",
)
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
