"""hermes' tool-execution middleware (0.18+) holds the call between the ``pre_tool_call``
gates and the tool, and decides whether the tool runs (it may answer without calling
``next_call``). A middleware that holds the call past its deadline and then hands it on
is a late answer: a timeout, the tool does not run (issue #26's hanging-wrapper class,
the LangChain ``wrap_tool_call`` variant, on hermes). The allow twin: a middleware that
hands the call on within its deadline runs the tool; a slow tool after it is not the
middleware's time."""

from __future__ import annotations

import textwrap

import failsecure_hermes_rig as H
import pytest


def middleware_plugin(rig, stem: str, body: str) -> str:
    pytest.importorskip("hermes_cli.middleware")
    name = f"{stem}_{next(H._serial)}"
    folder = rig.home / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(f"name: {name}\nversion: '1.0'\n")
    (folder / "__init__.py").write_text(textwrap.dedent(body) + "\ndef register(ctx):\n    ctx.register_middleware('tool_execution', mw)\n")
    rig.enabled.append(name)
    return name


SLOW = """
import time

def mw(next_call=None, args=None, **kw):
    time.sleep({delay})
    return next_call(args)
"""

INNER_SLOW = """
import time

def mw(next_call=None, args=None, **kw):
    result = next_call(args)
    time.sleep({delay})  # after the tool ran: not holding the call before it
    return result
"""


def test_a_middleware_past_its_deadline_then_handing_on_is_a_timeout(rig):
    rig.failsecure(timeout=0.4)
    middleware_plugin(rig, "slow", SLOW.format(delay=0.9))
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert not out["ran"]
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", "timeout")
    assert event["hook"].startswith("hermes-agent:middleware:")
    assert "failed closed (timeout)" in out["result"]["error"]


def test_the_second_of_two_middlewares_past_its_deadline_is_named(rig):
    rig.failsecure(timeout=0.4)
    middleware_plugin(rig, "a_quick", "def mw(next_call=None, args=None, **kw):\n    return next_call(args)\n")
    middleware_plugin(rig, "b_slow", SLOW.format(delay=0.9))
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert not out["ran"]
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_allow_twin_a_middleware_within_its_deadline_runs(rig):
    rig.failsecure(timeout=0.4)
    middleware_plugin(rig, "quick", SLOW.format(delay=0.05))
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert out["ran"] and rig.ran[-1] == {"path": "/srv/ok"}


def test_allow_twin_time_after_the_tool_is_not_the_middlewares_hold(rig):
    rig.failsecure(timeout=0.4)
    middleware_plugin(rig, "after", INNER_SLOW.format(delay=0.6))
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert out["ran"] and rig.ran[-1] == {"path": "/srv/ok"}


def test_allow_twin_a_per_hook_timeout_of_zero_lets_it_wait(rig):
    rig.failsecure(timeout=0.4)
    middleware_plugin(rig, "patient", SLOW.format(delay=0.6))
    rig.load()
    assert not rig.call({"path": "/srv/ok"})["ran"]
    hook = rig.last()["hook"]
    rig.failsecure(f'[hooks."{hook}"]\ntimeout = 0\n', timeout=0.4)
    out = rig.call({"path": "/srv/ok"})
    assert out["ran"] and rig.ran[-1] == {"path": "/srv/ok"}
