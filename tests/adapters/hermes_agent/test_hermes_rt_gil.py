"""Red-team (rthc): a deadline is a deadline for hermes' sync gates that hold the GIL.

A ``pre_tool_call`` plugin or a ``tool_execution`` middleware that runs a catastrophic
regex (C code holding the GIL: no other thread, the guard's waiting one included, runs
until it ends) past its deadline and then allows / hands the call on is late: a timeout,
however the waiting thread woke. Each deny has its allow twin (the same code on a short
input)."""

from __future__ import annotations

import re
import time

import pytest

import failsecure_hermes_rig as H

DEADLINE = 0.4


def regex_length() -> int:
    for length in range(18, 32):
        start = time.perf_counter()
        re.match(r"(a+)+$", "a" * length + "b")
        if time.perf_counter() - start > 3 * DEADLINE:
            return length
    return 32


@pytest.mark.parametrize("late", [True, False], ids=["late", "in-time"])
def test_a_plugin_holding_the_gil_past_its_deadline_is_a_timeout(rig, late):
    length = regex_length() if late else 5
    rig.failsecure(timeout=DEADLINE)
    hook = rig.plugin("gil", f"import re\nre.match(r'(a+)+$', 'a' * {length} + 'b')\nreturn None")
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    if late:
        assert not out["ran"]
        assert out["result"] == {"error": H.fail_closed(hook, "timeout")}
        assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")
    else:
        assert out["ran"]


@pytest.mark.parametrize("late", [True, False], ids=["late", "in-time"])
def test_a_middleware_holding_the_gil_past_its_deadline_is_a_timeout(rig, late):
    pytest.importorskip("hermes_cli.middleware")
    length = regex_length() if late else 5
    rig.failsecure(timeout=DEADLINE)
    name = f"gilmw_{next(H._serial)}"
    folder = rig.home / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(f"name: {name}\nversion: '1.0'\n")
    (folder / "__init__.py").write_text(
        "import re\n"
        "def mw(next_call=None, args=None, **kw):\n"
        f"    re.match(r'(a+)+$', 'a' * {length} + 'b')\n"
        "    return next_call(args)\n"
        "def register(ctx):\n    ctx.register_middleware('tool_execution', mw)\n")
    rig.enabled.append(name)
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    if late:
        assert not out["ran"]
        assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")
        assert rig.last()["hook"].startswith("hermes-agent:middleware:")
    else:
        assert out["ran"]
