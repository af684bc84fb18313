"""Fixtures for the claude-agent-sdk adapter tests: the real pinned SDK and its bundled
Claude Code CLI, offline against a scripted Messages API on 127.0.0.1 (``sdk_rig``).

Also the conformance kit's ``failsecure_harness`` fixture (``ClaudeSDKHarness``): every
case is one SDK session (one CLI process) whose scripted model makes one Bash call.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Optional

import pytest

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("failsecure_claude_sdk_rig", _HERE / "sdk_rig.py")
sdk_rig = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = sdk_rig
_spec.loader.exec_module(sdk_rig)

import failsecure  # noqa: E402
from failsecure import activation, policy  # noqa: E402
from failsecure.testing import Harness, Ran, Seen  # noqa: E402
from failsecure.testing import AuditRig  # noqa: E402

failsecure.install()
import claude_agent_sdk._internal.query  # noqa: E402,F401  (the trigger module)
from claude_agent_sdk import HookMatcher, PermissionResultAllow, PermissionResultDeny  # noqa: E402

DEADLINE = 0.3
SECRET = sdk_rig.SECRET


@pytest.fixture(scope="session")
def adapter():
    a = activation.get("claude-agent-sdk")
    a.patch()
    assert a.state == "patched", a.refused_reason
    return a


class Run:
    """What one offline session did."""

    def __init__(self, api: "sdk_rig.ScriptedAPI", work: Path, messages: list, error: Optional[BaseException]):
        self.api, self.work, self.messages, self.error = api, work, messages, error

    def ran(self, marker: str) -> bool:
        return (self.work / marker).exists()

    @property
    def tool_results(self) -> list:
        return self.api.model.tool_results()

    @property
    def result(self):
        """The session's last ResultMessage (None if it ended without one)."""
        found = [m for m in self.messages if type(m).__name__ == "ResultMessage"]
        return found[-1] if found else None

    @property
    def told(self) -> str:
        parts = []
        for block in self.tool_results:
            content = block.get("content")
            parts.append(content if isinstance(content, str) else json.dumps(content))
        return "\n".join(parts)


class Rig(AuditRig):
    """Per test: a work dir, a throwaway HOME, a failsecure config with an audit file."""

    def __init__(self, path: Path, monkeypatch):
        super().__init__(path, monkeypatch, deadline=DEADLINE)
        self.home = path / "home"

    def touch(self, marker: str) -> str:
        return "run: touch %s" % (self.dir / marker)

    def run(self, *prompts: str, hooks: Optional[list] = None, can_use_tool=None, allowed=("Bash",), events: Optional[dict] = None,
            stderr: Optional[list] = None, **kwargs) -> Run:
        """One SDK session, one turn per prompt. ``hooks``: PreToolUse HookMatchers;
        ``events``: HookMatchers of other events; ``stderr``: collects the CLI's stderr."""
        api = sdk_rig.ScriptedAPI()
        options = dict(kwargs)
        if hooks is not None:
            options.setdefault("hooks", {}).setdefault("PreToolUse", list(hooks))
        for event, matchers in (events or {}).items():
            options.setdefault("hooks", {})[event] = list(matchers)
        if can_use_tool is not None:
            options["can_use_tool"] = can_use_tool
        if stderr is not None:
            options["stderr"] = stderr.append
        opts = sdk_rig.options(api, str(self.home), str(self.dir), allowed_tools=list(allowed), **options)
        error = None
        messages: list = []
        try:
            messages = asyncio.run(sdk_rig.run_prompts(opts, list(prompts)))
        except Exception as exc:  # the test decides whether a failed session is expected
            error = exc
        finally:
            api.close()
        return Run(api, self.dir, messages, error)


@pytest.fixture
def rig(tmp_path, monkeypatch, adapter):
    r = Rig(tmp_path, monkeypatch)
    r.config()
    yield r
    monkeypatch.delenv("FAILSECURE_CONFIG", raising=False)
    policy.reload()


named = sdk_rig.named


# ---------------------------------------------------------------- the conformance kit

_RECORDER = """#!/bin/sh
printf '%%s\\n' "$(basename "$0")${1:+ $*}" >> %s
"""


class ClaudeSDKHarness(Harness):
    framework = "claude-agent-sdk"
    modes = ("async",)
    async_gates = True
    has_ask = True

    def __init__(self, work: Path):
        self.work = work
        self.matchers: list = []
        self.ran_file = work / "ran.txt"
        self.bin = work / "bin"
        self.bin.mkdir(exist_ok=True)
        for word in ("harmless", "forbidden"):
            script = self.bin / word
            script.write_text(_RECORDER % self.ran_file)
            script.chmod(0o755)

    # gates
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
                # blocking work in a callback belongs in a thread, as the SDK docs say
                return await asyncio.to_thread(behave, seen_of(input_data))

        named(gate, f"conformance_{name.replace(' ', '_').replace('-', '_')}")
        self.matchers.append(HookMatcher(matcher="Bash", hooks=[gate]))
        return activation.get(self.framework).callable_id(gate)

    def reset(self):
        self.matchers = []

    # answers
    def allow(self, seen):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}

    def abstain(self, seen):
        return {}

    def deny(self, seen):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "conformance gate denied"}}

    def ask(self, seen):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                       "permissionDecisionReason": "conformance gate asks"}}

    def junk(self):
        return [
            ("None", None),
            ("a string", "deny"),
            ("wrong-case decision", {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "Deny"}}),
            ("unknown decision", {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "maybe"}}),
            ("wrong hookEventName", {"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}}),
            ("legacy decision junk", {"decision": "Block"}),
            ("async answer", {"async_": True}),
        ]

    def rewrite(self, seen, arguments):
        updated = dict(seen.native or {}, command=arguments["command"])
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": updated}}

    # the call
    def options(self) -> dict:
        """The session's options beside the rig's own (each gate kind says how its gates go in)."""
        return {"hooks": {"PreToolUse": list(self.matchers)} if self.matchers else None}

    def run(self, arguments, mode):
        home = self.work / "home"
        api = sdk_rig.ScriptedAPI()
        opts = sdk_rig.options(api, str(home), str(self.work), **self.options())
        opts.env["PATH"] = f"{self.bin}:/usr/bin:/bin"
        self.ran_file.unlink(missing_ok=True)
        try:
            asyncio.run(sdk_rig.run_prompts(opts, ["run: " + arguments["command"]], timeout=60))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # upstream: a callback's SystemExit ends the session
            told = type(exc).__name__
        else:
            told = ""
        finally:
            api.close()
        results = api.model.tool_results()
        told = "\n".join([told] + [str(b.get("content")) for b in results])
        if not self.ran_file.exists():
            return Ran(False, None, told)
        line = self.ran_file.read_text().splitlines()[0]
        return Ran(True, {"command": line}, told)


    def bypass(self, arguments, mode):
        """Inside the session's run, an in-process tool (``mcp__kit__wrapper_tool``, which
        the gates' ``Bash`` matcher does not select: the CLI runs it by its permission
        rules) calls another in-process tool's handler directly: a path the CLI never
        sees."""
        home = self.work / "home"
        api = sdk_rig.ToolCallAPI()
        ran_file = self.ran_file

        def record(command):
            with open(ran_file, "a") as out:
                out.write(command + "\n")

        server, _ = sdk_rig.kit_server([], record)
        hooks = {"PreToolUse": list(self.matchers)} if self.matchers else None
        opts = sdk_rig.options(api, str(home), str(self.work), hooks=hooks, mcp_servers={"kit": server},
                               allowed_tools=["Bash"] + sdk_rig.KIT_TOOLS)
        opts.env.update(sdk_rig.IN_PROCESS_ENV)
        self.ran_file.unlink(missing_ok=True)
        told = ""
        try:
            asyncio.run(sdk_rig.run_prompts(opts, [sdk_rig.call_line(sdk_rig.KIT_TOOLS[1], arguments)], timeout=60))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            told = type(exc).__name__
        finally:
            api.close()
        told = "\n".join([told] + [str(b.get("content")) for b in api.model.tool_results()])
        if not self.ran_file.exists():
            return Ran(False, None, told)
        return Ran(True, {"command": self.ran_file.read_text().splitlines()[0]}, told)


@pytest.fixture
def failsecure_harness(tmp_path, adapter):
    work = Path(tempfile.mkdtemp(prefix="fs-sdk-kit-", dir=tmp_path))
    return ClaudeSDKHarness(work)


PERM = "PermissionRequest"


class PermissionRequestHarness(ClaudeSDKHarness):
    """``PermissionRequest`` callbacks: each case one session of the bundled CLI whose scripted
    model makes one Bash call on the permission (ask) path, with a ``can_use_tool`` that
    allows everything beside them (the host the CLI races them against)."""

    kind = PERM
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

        named(gate, f"permission_{name.replace(' ', '_').replace('-', '_')}")
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

    def options(self) -> dict:
        async def host(tool_name, input_data, context):  # the person at the prompt says yes
            return PermissionResultAllow()

        return {"hooks": {PERM: list(self.matchers)} if self.matchers else None, "allowed_tools": [], "can_use_tool": host}


class CanUseToolHarness(ClaudeSDKHarness):
    """``can_use_tool`` (the permission callback the CLI asks on the permission path, no
    hooks): a session has one, so the cases with two gates are n/a. It has no "no
    opinion" answer: ``abstain`` is its allow. It may wait for a person, so it has no
    default deadline (as upstream): the kit bounds it with a per-hook ``timeout``."""

    kind = "can_use_tool"
    has_ask = False
    interactive = True  # it may wait for a person: no default deadline, the kit gives it its own

    def add_gate(self, name, behave, *, is_async=False):
        from failsecure.testing import NotSupported

        if self.matchers:
            raise NotSupported("one can_use_tool per session")

        def seen_of(tool_name, tool_input):
            command = tool_input.get("command") if isinstance(tool_input, dict) else None
            return Seen(tool_name, {"command": command}, native=tool_input)

        if is_async:

            async def gate(tool_name, tool_input, context):
                return await behave(seen_of(tool_name, tool_input))

        else:

            async def gate(tool_name, tool_input, context):
                return await asyncio.to_thread(behave, seen_of(tool_name, tool_input))

        named(gate, f"permission_cb_{name.replace(' ', '_').replace('-', '_')}")
        self.matchers.append(gate)
        return activation.get(self.framework).callable_id(gate)

    def allow(self, seen):
        return PermissionResultAllow()

    def abstain(self, seen):
        return PermissionResultAllow()

    def deny(self, seen):
        return PermissionResultDeny(message="conformance gate denied")

    def junk(self):
        return [("None", None), ("a string", "allow"), ("a dict", {"behavior": "allow"}), ("True", True),
                ("non-dict updated_input", PermissionResultAllow(updated_input="x"))]

    def rewrite(self, seen, arguments):
        return PermissionResultAllow(updated_input=dict(seen.native or {}, command=arguments["command"]))

    def options(self) -> dict:
        async def allow_all(tool_name, input_data, context):  # no gate: the person says yes
            return PermissionResultAllow()

        return {"allowed_tools": [], "can_use_tool": self.matchers[0] if self.matchers else allow_all}


class PromptToolHarness(CanUseToolHarness):
    """``permission_prompt_tool_name``: an in-process SDK MCP tool the CLI asks instead of a
    person when no rule allows the call (exclusive with ``can_use_tool``, one per session:
    the cases with two gates are n/a). Its answer is a text content holding
    ``{"behavior": "allow" | "deny", ...}``; like ``can_use_tool`` it has no "no opinion"
    answer (``abstain`` is its allow) and no default deadline."""

    kind = "permission_prompt_tool"

    def add_gate(self, name, behave, *, is_async=False):
        from claude_agent_sdk import create_sdk_mcp_server, tool

        from failsecure.testing import NotSupported

        if self.matchers:
            raise NotSupported("one permission prompt tool per session")

        def seen_of(args):
            tool_input = args.get("input") if isinstance(args, dict) else None
            command = tool_input.get("command") if isinstance(tool_input, dict) else None
            return Seen(args.get("tool_name") if isinstance(args, dict) else None, {"command": command}, native=tool_input)

        if is_async:

            async def answer_of(args):
                return await behave(seen_of(args))

        else:

            async def answer_of(args):
                return await asyncio.to_thread(behave, seen_of(args))

        async def handler(args):
            answer = await answer_of(args)
            if isinstance(answer, dict) and "behavior" in answer:
                return {"content": [{"type": "text", "text": json.dumps(answer)}]}
            return answer

        named(handler, f"prompt_{name.replace(' ', '_').replace('-', '_')}")
        self.matchers.append(create_sdk_mcp_server("perm", tools=[tool("approve", "Permission prompt.", {"tool_name": str, "input": dict})(handler)]))
        return f"{self.framework}:{handler.__module__}.{handler.__name__}"

    def allow(self, seen):
        return {"behavior": "allow", "updatedInput": dict(seen.native or {})}

    def abstain(self, seen):
        return self.allow(seen)

    def deny(self, seen):
        return {"behavior": "deny", "message": "conformance gate denied"}

    def junk(self):
        return [("None", None), ("text", {"content": [{"type": "text", "text": "yes please"}]}),
                ("unknown behavior", {"behavior": "maybe"}),
                ("non-dict updatedInput", {"behavior": "allow", "updatedInput": "x"})]

    def rewrite(self, seen, arguments):
        return {"behavior": "allow", "updatedInput": dict(seen.native or {}, command=arguments["command"])}

    def options(self) -> dict:
        if not self.matchers:  # no gate: the person says yes
            return super().options()
        return {"allowed_tools": [], "mcp_servers": {"perm": self.matchers[0]}, "permission_prompt_tool_name": "mcp__perm__approve"}


@pytest.fixture
def failsecure_harness_PermissionRequest(tmp_path, adapter):
    return PermissionRequestHarness(Path(tempfile.mkdtemp(prefix="fs-sdk-perm-", dir=tmp_path)))


@pytest.fixture
def failsecure_harness_can_use_tool(tmp_path, adapter):
    return CanUseToolHarness(Path(tempfile.mkdtemp(prefix="fs-sdk-cut-", dir=tmp_path)))


@pytest.fixture
def failsecure_harness_permission_prompt_tool(tmp_path, adapter):
    return PromptToolHarness(Path(tempfile.mkdtemp(prefix="fs-sdk-ppt-", dir=tmp_path)))
