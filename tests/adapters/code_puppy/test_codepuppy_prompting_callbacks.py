"""Which code-puppy callbacks wait for a person on a terminal (``_asks_person``).

- Hook ids collide: two lambdas of one module are both ``<module>.<lambda>``; when one
  asks a person, the other (a plain policy that hangs) lost its deadline with it.
- A decorator: a ``functools.wraps`` wrapper that asks a person before the policy it wraps
  was read as the policy alone (the scan replaced it by ``__wrapped__``), so a real prompt
  was a timeout on a terminal.
- A closure: a callback built by a factory around code-puppy's prompt function (a free
  variable, not a name the code loads) was read as asking nobody.
"""

import asyncio
import functools

import pytest

SHELL_ARGS = (None, "echo hi", None, 60)


def blocked(results):
    return [r for r in results if isinstance(r, dict) and r.get("blocked")]


def shell(cb, run):
    return run(cb.on_run_shell_command(*SHELL_ARGS))


def _prompt():
    from code_puppy.tools import common

    return common


def _slow_person(monkeypatch, answer=(True, None)):
    """code-puppy's approval prompt answered after 0.6 s (past the 0.3 s deadline)."""
    common = _prompt()
    asked = []

    async def get_user_approval_async(*args, **kwargs):
        asked.append(1)
        await asyncio.sleep(0.6)
        return answer

    get_user_approval_async.__module__ = common.__name__
    monkeypatch.setattr(common, "get_user_approval_async", get_user_approval_async)
    return asked


# ---------------------------------------------------------------- colliding hook ids

async def _nothing_after(awaitable):
    await awaitable


_asking_lambda = lambda *a, **k: _nothing_after(_prompt().get_user_approval_async("t", "c"))  # noqa: E731
_hanging_lambda = lambda *a, **k: _nothing_after(asyncio.sleep(0.6))  # noqa: E731


def test_a_hanging_lambda_keeps_its_deadline_beside_an_asking_lambda(cb, rig, run, tty, monkeypatch):
    """Both lambdas are ``code-puppy:<this module>.<lambda>``: the hung policy one asks nobody."""
    _slow_person(monkeypatch)
    cb.register_callback("run_shell_command", _hanging_lambda)
    tty()
    # alone it is a timeout (the twin below shows the asking one alone is waited for)
    assert len(blocked(shell(cb, run))) == 1
    assert rig.last()["failure"] == "timeout"
    cb.register_callback("run_shell_command", _asking_lambda)
    results = shell(cb, run)
    # the hung one is a timeout; the asking one shares its id, so its deadline with it
    # (the ids are what the deadline is chosen by: the stricter wins)
    assert len(blocked(results)) >= 1
    assert "timeout" in [o.get("failure") for o in rig.last()["outcomes"]], rig.last()


def test_an_asking_lambda_alone_is_waited_for(cb, rig, run, tty, monkeypatch):
    asked = _slow_person(monkeypatch)
    cb.register_callback("run_shell_command", _asking_lambda)
    tty()
    assert blocked(shell(cb, run)) == []
    assert asked == [1] and rig.last()["failure"] is None


# ---------------------------------------------------------------- decorators and closures


def _confirm_first(policy):
    """A decorator that asks the person before the policy it wraps."""

    @functools.wraps(policy)
    async def asking(*args, **kwargs):
        ok, _ = await _prompt().get_user_approval_async("Run it?", "content")
        return await policy(*args, **kwargs) if ok else {"blocked": True, "error_message": "rejected"}

    return asking


def _logged(policy):
    """A decorator that asks nobody."""

    @functools.wraps(policy)
    async def logging(*args, **kwargs):
        return await policy(*args, **kwargs)

    return logging


async def _plain_policy(*args, **kwargs):
    return None


async def _hanging_policy(*args, **kwargs):
    await asyncio.sleep(0.6)


def test_a_decorator_that_asks_a_person_is_waited_for(cb, rig, run, tty, monkeypatch):
    asked = _slow_person(monkeypatch)
    cb.register_callback("run_shell_command", _confirm_first(_plain_policy))
    tty()
    assert blocked(shell(cb, run)) == []
    assert asked == [1] and (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_a_decorated_hanging_policy_keeps_its_deadline(cb, rig, run, tty):
    cb.register_callback("run_shell_command", _logged(_hanging_policy))
    tty()
    assert len(blocked(shell(cb, run))) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def _gate_asking_through(ask):
    async def gate(*args, **kwargs):
        ok, _ = await ask("Run it?", "content")
        return None if ok else {"blocked": True, "error_message": "rejected"}

    return gate


def _gate_checking_with(check):
    async def gate(*args, **kwargs):
        await check()

    return gate


def test_a_closure_over_the_approval_prompt_is_waited_for(cb, rig, run, tty, monkeypatch):
    asked = _slow_person(monkeypatch)
    cb.register_callback("run_shell_command", _gate_asking_through(_prompt().get_user_approval_async))
    tty()
    assert blocked(shell(cb, run)) == []
    assert asked == [1] and (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_a_closure_over_a_hanging_check_keeps_its_deadline(cb, rig, run, tty):
    cb.register_callback("run_shell_command", _gate_checking_with(lambda: asyncio.sleep(0.6)))
    tty()
    assert len(blocked(shell(cb, run))) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


# ---------------------------------------------------------------- no deadline: a sync callback's coroutine


async def _blocks(*args, **kwargs):
    return {"blocked": True, "error_message": "no"}


def _sync_returning_none(*args, **kwargs):
    """A plain function handing back a coroutine: upstream's async loop awaits it."""
    return _plain_policy()


def _sync_returning_block(*args, **kwargs):
    return _blocks()


@pytest.mark.parametrize("phase", ["run_shell_command", "pre_tool_call"])
def test_without_a_deadline_a_sync_callbacks_coroutine_is_awaited(cb, rig, run, phase):
    """``timeout = 0`` (no deadline): the callbacks run inline; the coroutine a sync one
    hands back is awaited as upstream's loop does (with a deadline it already is), not
    judged invalid."""
    rig.config(timeout=0)
    cb.register_callback(phase, _sync_returning_none)
    if phase == "run_shell_command":
        results = shell(cb, run)
    else:
        results = run(cb.on_pre_tool_call("agent_run_shell_command", {"command": "echo hi"}))
    assert results == [None]
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_without_a_deadline_a_sync_callbacks_coroutine_that_blocks_blocks(cb, rig, run):
    rig.config(timeout=0)
    cb.register_callback("run_shell_command", _sync_returning_block)
    results = shell(cb, run)
    assert len(blocked(results)) == 1 and blocked(results)[0]["error_message"] == "no"
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)
