"""The conformance kit's fault matrix for the gate kinds beyond the ``PreToolUse``
callback the kit's own harness registers (conftest.py): ``PermissionRequest`` callbacks,
each case one session of the bundled CLI whose scripted model makes one Bash call on the
permission (ask) path, with a ``can_use_tool`` that allows everything beside them (the
host the CLI races them against). Asserted for the failsecure column; the rows are added
to the kit's results (and its ``--failsecure-matrix-out`` file) as
``<version> PermissionRequest``. The upstream behaviour of this gate kind is shown by the
upstream twins in test_claude_sdk_e2e_gates.py."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import pytest

sdk_rig = sys.modules["failsecure_claude_sdk_rig"]  # loaded by conftest.py
conftest = sys.modules[[n for n in sys.modules if n.endswith("claude_sdk.conftest")][0]]

from claude_agent_sdk import HookMatcher, PermissionResultAllow  # noqa: E402
from failsecure import activation  # noqa: E402
from failsecure.testing import matrix as conformance
from failsecure.testing import Ran, Seen  # noqa: E402

PERM = "PermissionRequest"


class PermissionRequestHarness(conftest.ClaudeSDKHarness):
    has_ask = False  # a PermissionRequest hook allows or denies; "no decision" leaves it to the host

    def add_gate(self, name, behave, *, is_async=False):
        def seen_of(input_data):
            tool_input = input_data.get("tool_input") if isinstance(input_data, dict) else None
            command = tool_input.get("command") if isinstance(tool_input, dict) else None
            return Seen(input_data.get("tool_name"), {"command": command}, native=tool_input)

        if is_async:

            async def gate(input_data, tool_use_id, context):
                return await behave(seen_of(input_data))

        else:

            async def gate(input_data, tool_use_id, context):
                return await asyncio.to_thread(behave, seen_of(input_data))

        sdk_rig.named(gate, f"permission_{name.replace(' ', '_').replace('-', '_')}")
        self.matchers.append(HookMatcher(matcher="Bash", hooks=[gate]))
        return activation.get(self.framework).callable_id(gate)

    def allow(self, seen):
        return {"hookSpecificOutput": {"hookEventName": PERM, "decision": {"behavior": "allow"}}}

    def abstain(self, seen):
        return {}

    def deny(self, seen):
        return {"hookSpecificOutput": {"hookEventName": PERM, "decision": {"behavior": "deny", "message": "conformance gate denied"}}}

    def junk(self):
        return [
            ("None", None),
            ("a string", "deny"),
            ("wrong-case behavior", {"hookSpecificOutput": {"hookEventName": PERM, "decision": {"behavior": "Deny"}}}),
            ("decision not a dict", {"hookSpecificOutput": {"hookEventName": PERM, "decision": "allow"}}),
            ("PreToolUse shape", {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}),
            ("non-dict updatedInput", {"hookSpecificOutput": {"hookEventName": PERM, "decision": {"behavior": "allow", "updatedInput": "x"}}}),
            ("async answer", {"async_": True}),
        ]

    def rewrite(self, seen, arguments):
        updated = dict(seen.native or {}, command=arguments["command"])
        return {"hookSpecificOutput": {"hookEventName": PERM, "decision": {"behavior": "allow", "updatedInput": updated}}}

    def run(self, arguments, mode):
        home = self.work / "home"
        api = sdk_rig.ScriptedAPI()

        async def host(tool_name, input_data, context):  # the person at the prompt says yes
            return PermissionResultAllow()

        hooks = {PERM: list(self.matchers)} if self.matchers else None
        opts = sdk_rig.options(api, str(home), str(self.work), hooks=hooks, allowed_tools=[], can_use_tool=host)
        opts.env["PATH"] = f"{self.bin}:/usr/bin:/bin"
        self.ran_file.unlink(missing_ok=True)
        try:
            asyncio.run(sdk_rig.run_prompts(opts, ["run: " + arguments["command"]], timeout=60))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            told = type(exc).__name__
        else:
            told = ""
        finally:
            api.close()
        told = "\n".join([told] + [str(b.get("content")) for b in api.model.tool_results()])
        if not self.ran_file.exists():
            return Ran(False, None, told)
        line = self.ran_file.read_text().splitlines()[0]
        return Ran(True, {"command": line}, told)


def _names():
    harness = PermissionRequestHarness(Path(tempfile.mkdtemp(prefix="fs-sdk-names-")))
    return [case.name for case in conformance.cases(harness)]


@pytest.mark.parametrize("index", range(len(_names())), ids=_names())
def test_permission_request_fault_matrix(index, tmp_path, adapter):
    harness = PermissionRequestHarness(Path(tempfile.mkdtemp(prefix="fs-sdk-perm-", dir=tmp_path)))
    case = conformance.cases(harness)[index]
    status, detail = conformance.run_case(harness, case, "async", "failsecure", tmp_path)
    key = (harness.framework, f"{adapter.version} {PERM}", "failsecure")
    conformance.RESULTS.setdefault(key, {})[(case.name, "async")] = (status, detail)
    if status == "n/a":
        pytest.skip(f"{case.name}: n/a ({detail})")
    assert status == "pass", f"{case.name}: {status}: {detail}"
