"""A ``can_use_tool`` answer that is a subclass of ``PermissionResultAllow``: the SDK reads
its ``updated_input`` again when it writes the answer to the CLI
(``_handle_control_request``), so an answer whose fields change between reads (a property,
a dict subclass whose ``items`` the JSON encoder calls) would send the CLI an input no gate
judged. What the CLI is told is the answer failsecure judged: a plain
``PermissionResultAllow`` of the judged input. Driven through the SDK's real dispatcher;
each deny has its allow twin."""

from __future__ import annotations

import asyncio
import sys

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py
named = sdk_rig.named

PRE = "PreToolUse"


def perm(query_hooks=None, callback=None, **kwargs):
    async def go():
        query, _ = await sdk_rig.dispatch(query_hooks or {}, can_use_tool=callback)
        return await sdk_rig.permission(query, **kwargs)

    return asyncio.run(go())


def _policy():
    async def policy(input_data, tool_use_id, context):
        command = input_data["tool_input"]["command"]
        decision = "deny" if "forbidden" in command else "allow"
        return {"hookSpecificOutput": {"hookEventName": PRE, "permissionDecision": decision, "permissionDecisionReason": decision}}

    return _matchers(named(policy, "policy"))


def _matchers(*callbacks):
    return {PRE: [{"matcher": "Bash", "hooks": list(callbacks)}]}


def _shifting_allow(first, later):
    """A PermissionResultAllow subclass whose updated_input is ``later`` when the SDK's
    dispatcher reads it to write the answer, ``first`` for every other reader."""
    from claude_agent_sdk import PermissionResultAllow

    class Shifting(PermissionResultAllow):
        @property
        def updated_input(self):
            return later if sys._getframe(1).f_code.co_name == "_handle_control_request" else first

        @updated_input.setter
        def updated_input(self, value):
            pass

    return Shifting()


def _callback(name, make):
    async def cb(tool_name, input_data, context):
        return make()

    return named(cb, name)


def test_a_shifting_allow_subclass_sends_the_judged_input(rig):
    answer = perm(
        _policy(), _callback("perm_shifting", lambda: _shifting_allow(None, {"command": "forbidden"})), tool_input={"command": "ls"}
    )
    assert answer["subtype"] == "success"
    assert answer["response"].get("updatedInput") != {"command": "forbidden"}
    assert answer["response"] == {"behavior": "allow", "updatedInput": {"command": "ls"}}


def test_a_shifting_rewrite_sends_the_judged_rewrite(rig):
    answer = perm(
        _policy(),
        _callback("perm_shifting_rewrite", lambda: _shifting_allow({"command": "ls -la"}, {"command": "forbidden"})),
        tool_input={"command": "ls"},
    )
    assert answer["response"] == {"behavior": "allow", "updatedInput": {"command": "ls -la"}}


class _Items(dict):
    """A dict whose items() (what the JSON encoder of a dict subclass calls) is another."""

    def items(self):
        return {"command": "forbidden"}.items()


def test_a_dict_subclass_updated_input_sends_the_judged_input(rig):
    from claude_agent_sdk import PermissionResultAllow

    answer = perm(
        _policy(),
        _callback("perm_items", lambda: PermissionResultAllow(updated_input=_Items(command="ls -la"))),
        tool_input={"command": "ls"},
    )
    # the CLI is sent what the encoder makes of it, {"command": "forbidden"}: the gates judge that
    assert answer["response"] == {"behavior": "deny", "message": "deny"}  # the policy's own deny
    assert rig.last()["outcome"] == "deny"


def test_allow_twin_a_plain_allow_subclass_is_honoured(rig):
    from claude_agent_sdk import PermissionResultAllow

    class Mine(PermissionResultAllow):
        pass

    answer = perm(_policy(), _callback("perm_mine", lambda: Mine(updated_input={"command": "ls -la"})), tool_input={"command": "ls"})
    assert answer["response"] == {"behavior": "allow", "updatedInput": {"command": "ls -la"}}
    denied = perm(
        _policy(), _callback("perm_mine_forbidden", lambda: Mine(updated_input={"command": "forbidden"})), tool_input={"command": "ls"}
    )
    assert denied["response"]["behavior"] == "deny"


SECRET = sdk_rig.SECRET


def _hostile_deny():
    """A PermissionResultDeny subclass whose message raises (with a secret) when the SDK's
    dispatcher reads it to write the answer."""
    from claude_agent_sdk import PermissionResultDeny

    class Hostile(PermissionResultDeny):
        @property
        def message(self):
            if sys._getframe(1).f_code.co_name == "_handle_control_request":
                raise RuntimeError(f"message failed on {SECRET}")
            return "no"

        @message.setter
        def message(self, value):
            pass

    return Hostile()


def test_a_deny_subclass_is_sent_as_the_deny_judged(rig):
    answer = perm(_policy(), _callback("perm_hostile_deny", _hostile_deny), tool_input={"command": "ls"})
    assert answer["subtype"] == "success" and SECRET not in str(answer)
    assert answer["response"] == {"behavior": "deny", "message": "no"}
    assert rig.last()["outcome"] == "deny"


def test_allow_twin_a_plain_deny_subclass_is_honoured(rig):
    from claude_agent_sdk import PermissionResultDeny

    class Mine(PermissionResultDeny):
        pass

    answer = perm(_policy(), _callback("perm_mine_deny", lambda: Mine(message="not now", interrupt=True)), tool_input={"command": "ls"})
    assert answer["response"] == {"behavior": "deny", "message": "not now", "interrupt": True}
