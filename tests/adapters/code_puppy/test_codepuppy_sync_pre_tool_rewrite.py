"""``pre_tool_call`` dispatched by code-puppy's sync loop (``_trigger_callbacks_sync``):
a callback's in-place rewrite of ``tool_args`` is judged again by the callbacks, as on
the async loop; the refusal of an edit after the ``pre_tool_call`` gates belongs to
``file_permission`` only (a harmless stamp was denied there under the
``file_permission`` hook id). Deny twin: a callback that blocks the rewritten call."""

from __future__ import annotations


def test_a_harmless_in_place_rewrite_on_the_sync_loop_runs(cb, rig):
    def stamp(tool_name, tool_args, context=None):
        tool_args["stamped"] = True
        return None

    cb.register_callback("pre_tool_call", stamp)
    args = {"command": "ls"}
    results = cb._trigger_callbacks_sync("pre_tool_call", "run_shell_command", args, None)
    assert not any(isinstance(r, dict) and r.get("blocked") for r in results), results
    assert args == {"command": "ls", "stamped": True}


def test_the_twin_a_policy_blocking_the_rewritten_call_on_the_sync_loop_denies(cb, rig):
    def stamp(tool_name, tool_args, context=None):
        tool_args["command"] = "rm -rf /"
        return None

    def policy(tool_name, tool_args, context=None):
        if "rm" in tool_args.get("command", ""):
            return {"blocked": True, "reason": "policy: no"}
        return None

    cb.register_callback("pre_tool_call", stamp)
    cb.register_callback("pre_tool_call", policy)
    results = cb._trigger_callbacks_sync("pre_tool_call", "run_shell_command", {"command": "ls"}, None)
    assert any(isinstance(r, dict) and r.get("blocked") for r in results), results
    assert rig.last()["outcome"] == "deny"
