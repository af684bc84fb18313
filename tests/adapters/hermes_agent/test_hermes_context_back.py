"""A Python ``pre_tool_call`` plugin runs under its deadline on the guard's worker;
upstream's ``invoke_hook`` calls it in ``handle_function_call``'s own context, and the
tool runs after it there, so a ContextVar it sets is seen by the tool. With failsecure
the change is handed back when the answer is taken on time (the tool sees it); a late
plugin's never reaches the tool (and the call is denied)."""

from __future__ import annotations

import contextvars
import json
import sys
import types

import failsecure_hermes_rig as H

MODULE = "fs_rt_hermes_ctx"
mod = sys.modules.setdefault(MODULE, types.ModuleType(MODULE))
if not hasattr(mod, "VAR"):
    mod.VAR = contextvars.ContextVar("fs_rt_hermes_var", default=None)
    mod.seen = []
TOOL = "fs_ctx_probe"


def _register():
    from tools.registry import registry

    def handler(args, **kwargs):
        mod.seen.append(mod.VAR.get())
        return json.dumps({"ok": True})

    schema = {"name": TOOL, "description": "reads a variable", "parameters": {"type": "object", "properties": {}}}
    registry.register(name=TOOL, toolset=H.TOOLSET, schema=schema, handler=handler)


def _call():
    import model_tools

    mod.seen.clear()
    raw = contextvars.Context().run(model_tools.handle_function_call, TOOL, {}, task_id="task-1", tool_call_id="c1", session_id="s1")
    return json.loads(raw)


def test_a_plugins_variable_reaches_the_tool_as_upstream(rig):
    _register()
    rig.failsecure(timeout=2)
    rig.plugin("sets", f"import sys; sys.modules['{MODULE}'].VAR.set('v'); return None")
    rig.load()
    out = _call()
    assert out == {"ok": True} and mod.seen == ["v"]
    assert rig.last()["outcome"] in ("allow", "abstain")


def test_a_late_plugins_variable_never_reaches_and_the_call_is_denied(rig):
    _register()
    rig.failsecure(timeout=0.2)
    hook = rig.plugin("late", f"import sys, time; sys.modules['{MODULE}'].VAR.set('late'); time.sleep(0.6); return None")
    rig.load()
    out = _call()
    assert out == {"error": H.fail_closed(hook, "timeout")} and mod.seen == []
    assert rig.last()["failure"] == "timeout"
