"""A sync before-tool callback runs where ADK runs it: on the loop. ADK calls a plain
``def`` callback (and a sync callable object or partial) on its event loop, so the callback
may ask for it (``asyncio.get_running_loop()``: to schedule work, to read loop state);
failsecure runs it on its worker thread for the deadline and lends it the loop there, so
a legitimate callback is not denied for a worker it never asked for. Each allow has its
deny twin (the deadline still holds with the loop lent)."""

from __future__ import annotations

import asyncio
import functools
import threading

import failsecure_adk_rig as adk_rig


def hook_of(fn) -> str:
    return f"google-adk:{fn.__module__}.{fn.__qualname__}"


def _needs_loop(seen):
    def needs_loop(tool, args, tool_context):
        seen.append(asyncio.get_running_loop())
        return None

    return needs_loop


def test_a_sync_agent_callback_finds_the_running_loop(rig, mode):
    seen: list = []
    gate = _needs_loop(seen)
    out = rig.run({"command": "harmless"}, mode, before=gate)
    assert out.error is None, out.error
    assert rig.ran and len(seen) == 1 and isinstance(seen[0], asyncio.AbstractEventLoop)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_a_sync_callable_object_finds_the_running_loop(rig, mode):
    seen: list = []

    class Gate:
        def __call__(self, tool, args, tool_context):
            seen.append(asyncio.get_running_loop())
            return None

    out = rig.run({"command": "harmless"}, mode, before=Gate())
    assert out.error is None, out.error
    assert rig.ran and len(seen) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_a_partial_finds_the_running_loop(rig, mode):
    seen: list = []

    def gate(marker, tool, args, tool_context):
        seen.append((marker, asyncio.get_running_loop()))
        return None

    out = rig.run({"command": "harmless"}, mode, before=functools.partial(gate, "p"))
    assert out.error is None, out.error
    assert rig.ran and len(seen) == 1
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


def test_a_plugin_callback_stays_on_the_loop(rig, mode):
    """The twin of the agent stage: a plugin's async callback runs on the loop, as ever."""
    seen: list = []

    async def plugin_gate(tool, tool_args, tool_context):
        seen.append(asyncio.get_running_loop())
        return None

    gate = _needs_loop(seen)
    out = rig.run({"command": "harmless"}, mode, before=gate, plugins=[adk_rig.plugin("policy", plugin_gate)])
    assert out.error is None, out.error
    assert rig.ran and len(seen) == 2 and seen[0] is seen[1]  # the same loop for both stages


def test_a_sync_callback_with_the_loop_still_times_out(rig, mode):
    """The deny twin: the loop is lent, the deadline still holds."""
    release = threading.Event()

    def hangs(tool, args, tool_context):
        asyncio.get_running_loop()
        release.wait(10)

    try:
        out = rig.run({"command": "harmless"}, mode, before=hangs)
    finally:
        release.set()
    assert not rig.ran and out.error is None
    assert out.response == {"error": f"failsecure: hook '{hook_of(hangs)}' failed closed (timeout)"}
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


def test_the_loop_is_not_left_on_the_worker(rig):
    seen: list = []
    rig.run({"command": "harmless"}, "async", before=_needs_loop([]))
    from failsecure import guard

    def probe():
        try:
            asyncio.get_running_loop()
            seen.append("loop")
        except RuntimeError:
            seen.append("none")

    guard.call("probe", probe, (), {}, validate=lambda r: None, timeout=5)
    assert seen == ["none"]
