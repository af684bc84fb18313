"""Rig for the code-puppy adapter tests: the real pinned code-puppy and core-plugins.

HOME (and the XDG dirs) point at a temp dir before code-puppy is imported (it writes its
config there); stdin is never a TTY unless a test says so; every test gets a config with
a short deadline and an audit file, and a registry of gating callbacks of its own.
"""

import io
import json
import os
import sys
import tempfile

_HOME = tempfile.mkdtemp(prefix="failsecure-puppy-home-")
os.environ["HOME"] = _HOME
for _var, _sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                   ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state")):
    os.environ[_var] = os.path.join(_HOME, _sub)

import pytest  # noqa: E402

from failsecure.testing import AuditRig  # noqa: E402

import failsecure  # noqa: E402
from failsecure import activation, policy  # noqa: E402

GATING = ("pre_tool_call", "run_shell_command", "file_permission")
DEADLINE = 0.3


class NotATTY(io.StringIO):
    def isatty(self):
        return False


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(scope="session")
def adapter():
    failsecure.install()
    import code_puppy.callbacks  # noqa: F401  (the trigger module: patched on import)

    puppy = activation.get("code-puppy")
    assert puppy.state == "patched", puppy.refused_reason
    return puppy


@pytest.fixture(scope="session")
def cb(adapter):
    import code_puppy.callbacks as callbacks

    return callbacks


class Rig(AuditRig):
    def __init__(self, path, monkeypatch):
        super().__init__(path, monkeypatch, DEADLINE)


@pytest.fixture
def rig(tmp_path, monkeypatch, adapter):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", NotATTY())
    r = Rig(tmp_path, monkeypatch)
    r.config()
    yield r
    monkeypatch.delenv("FAILSECURE_CONFIG", raising=False)
    policy.reload()


@pytest.fixture(autouse=True)
def registry(request):
    """Each test starts with no callback on the gating phases; everything is restored."""
    if "cb" not in request.fixturenames and "rig" not in request.fixturenames:
        yield None
        return
    request.getfixturevalue("loaded_plugins")  # loaded once, before the first snapshot
    import code_puppy.callbacks as callbacks

    saved = {phase: list(lst) for phase, lst in callbacks._callbacks.items()}
    owners = dict(callbacks._callback_owners)
    fail_closed = set(getattr(callbacks, "_fail_closed_callbacks", ()))
    for phase in GATING:
        callbacks._callbacks[phase][:] = []
    yield callbacks
    for phase, lst in saved.items():
        callbacks._callbacks[phase][:] = lst
    callbacks._callback_owners.clear()
    callbacks._callback_owners.update(owners)
    if hasattr(callbacks, "_fail_closed_callbacks"):
        callbacks._fail_closed_callbacks.clear()
        callbacks._fail_closed_callbacks.update(fail_closed)


_PLUGIN_CALLBACKS: dict = {}


@pytest.fixture(scope="session")
def loaded_plugins(adapter):
    """What the CLI does at start: code-puppy's pre-tool patch, then every plugin
    (the real core-plugins, and failsecure's own entry point)."""
    from code_puppy import callbacks, plugins, pydantic_patches

    assert pydantic_patches.patch_tool_call_callbacks() is True
    plugins.load_plugin_callbacks()
    for phase in GATING:
        _PLUGIN_CALLBACKS[phase] = list(callbacks._callbacks[phase])
    return _PLUGIN_CALLBACKS


@pytest.fixture
def real_plugins(loaded_plugins, registry, rig):
    """The real plugins' gating callbacks, back in this test's registry."""
    for phase, lst in loaded_plugins.items():
        registry._callbacks[phase][:] = lst
    return registry


@pytest.fixture
def tty(monkeypatch):
    """Call to make stdin a TTY for the rest of the test."""
    return lambda: monkeypatch.setattr(sys, "stdin", FakeTTY())


@pytest.fixture
def run(adapter):
    """Run a coroutine to completion on a fresh loop."""
    import asyncio

    return asyncio.run


# ---------------------------------------------------------------- the conformance kit

from failsecure.testing import HostileAnswer, HostileDict, Harness, Ran, Seen  # noqa: E402


class CodePuppyHarness(Harness):
    """code-puppy's real ``pre_tool_call`` callbacks (``register_callback``) through a
    real pydantic-ai agent run with a scripted FunctionModel, code-puppy's pre-tool patch
    on pydantic-ai's tool execution, and a real tool that records its arguments."""

    framework = "code-puppy"
    modes = ("sync", "async")
    async_gates = True

    def __init__(self, callbacks):
        self.callbacks = callbacks
        self.ran: list = []

    def add_gate(self, name, behave, *, is_async=False):
        def seen_of(tool_name, tool_args):
            args = tool_args if isinstance(tool_args, dict) else {}
            return Seen(tool=tool_name, arguments=dict(args), native=tool_args)

        if is_async:
            async def gate(tool_name, tool_args, context=None):
                return await behave(seen_of(tool_name, tool_args))
        else:
            def gate(tool_name, tool_args, context=None):
                return behave(seen_of(tool_name, tool_args))
        gate.__qualname__ = f"kit.{name}"
        self.callbacks.register_callback("pre_tool_call", gate)
        return f"code-puppy:{gate.__module__}.kit.{name}"

    def reset(self):
        self.callbacks._callbacks["pre_tool_call"][:] = []

    def allow(self, seen):
        return {"blocked": False}

    def deny(self, seen):
        return {"blocked": True, "error_message": "conformance gate: denied"}

    def junk(self):
        return [
            ("a string", "DENY"),
            ("False", False),
            ("typo'd key", {"block": True}),
            ("a list", ["blocked"]),
            ("non-bool blocked", {"blocked": "yes"}),
            ("hostile dict", HostileDict(blocked=True)),
            ("hostile object", HostileAnswer()),
        ]

    def rewrite(self, seen, arguments):
        seen.native.clear()
        seen.native.update(arguments)
        return None

    def run(self, arguments, mode, bypass=False):
        import asyncio

        from pydantic_ai import Agent, RunContext
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import FunctionModel

        from failsecure.adapter import Ungoverned

        told: list = []
        called = "wrapper_tool" if bypass else "kit_tool"

        def model(messages, info):
            for part in messages[-1].parts:
                if isinstance(part, ToolReturnPart):
                    told.append(str(part.content))
                    return ModelResponse(parts=[TextPart("done")])
                if type(part).__name__ == "RetryPromptPart":
                    told.append(str(part.content))
                    return ModelResponse(parts=[TextPart("done")])
            return ModelResponse(parts=[ToolCallPart(called, dict(arguments))])

        agent = Agent(FunctionModel(model))
        self.ran = []
        ran = self.ran

        @agent.tool_plain
        def kit_tool(command: str) -> str:
            ran.append({"command": command})
            return "ran"

        @agent.tool
        async def wrapper_tool(ctx: RunContext, command: str) -> str:
            """A third-party style wrapper: runs the kit's tool through its toolset's
            ``call_tool``, past code-puppy's ``pre_tool_call`` dispatch."""
            toolset = agent._function_toolset
            tools = await toolset.get_tools(ctx)
            return str(await toolset.call_tool("kit_tool", {"command": command}, ctx, tools["kit_tool"]))

        try:
            if mode == "sync":
                agent.run_sync("go")
            else:
                asyncio.run(agent.run("go"))
        except Ungoverned as exc:  # the wrapper's inner call was denied: the run ends with it
            told.append(str(exc))
        return Ran(ran=bool(ran), arguments=ran[-1] if ran else None, told="\n".join(told))

    def bypass(self, arguments, mode):
        return self.run(arguments, mode, bypass=True)


@pytest.fixture
def failsecure_harness(loaded_plugins, registry, rig):
    return CodePuppyHarness(registry)


# ---------------------------------------------------------------- the other gate kinds

import shlex  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from failsecure.testing import NotSupported  # noqa: E402
from failsecure.testing.command import CommandBridge  # noqa: E402

_CTX = SimpleNamespace(deps=None)


class ShellCommandHarness(CodePuppyHarness):
    """Every gate a ``run_shell_command`` callback (``register_callback("run_shell_command",
    guard)``, ``guard(context, command, cwd, timeout)``), through code-puppy's real shell
    tool (``command_runner.run_shell_command``). The kit's ``command`` is what the shell
    command writes to the marker file (``printf %s <command> > marker``); the gate sees
    it back. Native answers: ``None``, ``{"blocked": False}``, ``{"blocked": True, ...}``,
    ``{"rewrite": <shell command>}``."""

    kind = "run_shell_command"
    modes = ("async",)

    def __init__(self, callbacks, workdir):
        super().__init__(callbacks)
        self.workdir = workdir
        self.marker = workdir / "kit-shell-marker"

    def shell(self, command: str) -> str:
        return f"printf %s {shlex.quote(command)} > {shlex.quote(str(self.marker))}"

    def kit_command(self, shell_command) -> str:
        try:
            words = shlex.split(shell_command) if isinstance(shell_command, str) else []
        except ValueError:
            words = []
        return words[2] if len(words) > 2 and words[:2] == ["printf", "%s"] else str(shell_command)

    def add_gate(self, name, behave, *, is_async=False):
        harness = self

        def seen_of(command):
            return Seen(tool="agent_run_shell_command", arguments={"command": harness.kit_command(command)}, native=command)

        if is_async:
            async def gate(context, command, cwd=None, timeout=60):
                return await behave(seen_of(command))
        else:
            def gate(context, command, cwd=None, timeout=60):
                return behave(seen_of(command))
        gate.__qualname__ = f"kit.shell_{name}"
        self.callbacks.register_callback("run_shell_command", gate)
        return f"code-puppy:{gate.__module__}.kit.shell_{name}"

    def reset(self):
        self.callbacks._callbacks["run_shell_command"][:] = []

    def rewrite(self, seen, arguments):
        return {"rewrite": self.shell(arguments["command"]), "rewrite_reason": "conformance rewrite"}

    def run(self, arguments, mode):
        import asyncio

        from code_puppy.tools import command_runner

        if self.marker.exists():
            self.marker.unlink()
        out = asyncio.run(command_runner.run_shell_command(_CTX, self.shell(arguments["command"]), cwd=str(self.workdir), timeout=10))
        ran = self.marker.exists()
        told = "\n".join(str(getattr(out, f, "") or "") for f in ("error", "stdout", "stderr", "user_feedback"))
        return Ran(ran=ran, arguments={"command": self.marker.read_text()} if ran else None, told=told)


@pytest.fixture
def failsecure_harness_run_shell_command(loaded_plugins, registry, rig, tmp_path):
    return ShellCommandHarness(registry, tmp_path)


class FilePermissionHarness(CodePuppyHarness):
    """Every gate a ``file_permission`` callback (``register_callback("file_permission",
    guard)``, ``guard(context, file_path, operation, preview, message_group,
    operation_data)``), through code-puppy's real file tool (``write_to_file`` in sync
    mode, ``write_to_file_async`` in async mode). The kit's ``command`` is the file's
    content and the last part of its name (``kit-<command>.txt``), so the gate judges it
    from the path it is shown. Native answers: ``True`` (approve), ``False`` (deny),
    ``None``; a permission cannot rewrite the write (n/a)."""

    kind = "file_permission"

    def __init__(self, callbacks, workdir):
        super().__init__(callbacks)
        self.workdir = workdir
        self.unsupported = None

    def add_gate(self, name, behave, *, is_async=False):
        from pathlib import Path

        def seen_of(file_path, operation):
            stem = Path(str(file_path)).name
            command = stem[len("kit-"):-len(".txt")] if stem.startswith("kit-") and stem.endswith(".txt") else stem
            return Seen(tool=FILE_TOOL, arguments={"command": command}, native=(file_path, operation))

        harness = self

        if is_async:
            async def gate(context, file_path, operation, *args, **kwargs):
                try:
                    return await behave(seen_of(file_path, operation))
                except NotSupported as exc:  # an answer this kind has not: the row is n/a
                    harness.unsupported = str(exc)
        else:
            def gate(context, file_path, operation, *args, **kwargs):
                try:
                    return behave(seen_of(file_path, operation))
                except NotSupported as exc:
                    harness.unsupported = str(exc)
        gate.__qualname__ = f"kit.permission_{name}"
        self.callbacks.register_callback("file_permission", gate)
        return f"code-puppy:{gate.__module__}.kit.permission_{name}"

    def reset(self):
        self.callbacks._callbacks["file_permission"][:] = []
        self.unsupported = None

    def allow(self, seen):
        return True

    def deny(self, seen):
        return False

    def junk(self):
        return [
            ("a string", "yes"),
            ("an int", 1),
            ("a dict", {"blocked": True}),
            ("a list", [True]),
            ("hostile object", HostileAnswer()),
        ]

    def rewrite(self, seen, arguments):
        raise NotSupported("a file permission cannot rewrite the write")

    def run(self, arguments, mode):
        import asyncio

        from code_puppy.tools import file_modifications as fm

        from failsecure import plugins as fs_plugins

        kit_plugin = fs_plugins.manager().get_plugin("conformance")
        if getattr(kit_plugin, "kind", None) == "policy":
            # the kit's plugin policy judges the call's `command`; a file_permission
            # dispatch shows plugin gates `file_path` and `operation` (docs), not it
            raise NotSupported("the kit's plugin policy reads `command`, a file permission has none")
        command = arguments["command"]
        target = self.workdir / f"kit-{command}.txt"
        if target.exists():
            target.unlink()
        if mode == "async":
            result = asyncio.run(fm.write_to_file_async(_CTX, str(target), command, False))
        else:
            result = fm.write_to_file(_CTX, str(target), command, False)
        ran = target.exists()
        told = str(result.get("message") or result.get("error") or "") if isinstance(result, dict) else str(result)
        if self.unsupported:
            raise NotSupported(self.unsupported)
        return Ran(ran=ran, arguments={"command": target.read_text()} if ran else None, told=told)


FILE_TOOL = "file_permission"


@pytest.fixture
def failsecure_harness_file_permission(loaded_plugins, registry, rig, tmp_path):
    return FilePermissionHarness(registry, tmp_path)


class CommandHookHarness(CodePuppyHarness):
    """Every gate a command hook of code-puppy's hook engine (``code_puppy.hook_engine``,
    run by core-plugins' ``claude_code_hooks`` from ``hooks.json``: ``{"PreToolUse":
    [{"matcher": "*", "hooks": [{"type": "command", "command": ...}]}]}``), a real process
    per gate with the engine's payload on stdin, through the same agent run as the
    default kind; the process answers what the kit's gate returns
    (``failsecure.testing.command``). Native answers: nothing (no opinion), ``{"decision":
    "block", "reason": ...}`` (deny). No rewrite, no Python raise, no async gate (n/a);
    the exit-status failures are test_codepuppy_command_hooks.py."""

    kind = "command_hook"
    deadline = 0.7  # each gate is a process: room for it to start on a busy machine
    async_gates = False

    def __init__(self, callbacks, workdir, monkeypatch):
        super().__init__(callbacks)
        self.monkeypatch = monkeypatch
        self.bridge = CommandBridge(workdir, self._seen)
        self.hooks: list = []

    @staticmethod
    def _seen(payload):
        payload = payload if isinstance(payload, dict) else {}
        args = payload.get("tool_input")
        return Seen(tool=payload.get("tool_name"), arguments=dict(args) if isinstance(args, dict) else {}, native=payload)

    def add_gate(self, name, behave, *, is_async=False):
        from failsecure.hookid import command_name

        command = self.bridge.command(f"{name}_{len(self.bridge.behaviours)}", behave)
        self.hooks.append({"type": "command", "command": command, "timeout": 5000})
        return f"code-puppy:command:{command_name(command)}"

    def reset(self):
        self.bridge.reset()
        self.hooks = []
        super().reset()

    def allow(self, seen):
        return None

    def deny(self, seen):
        return {"decision": "block", "reason": "conformance gate: denied"}

    def junk(self):
        return [
            ("broken JSON", "{ broken"),
            ("wrong-case value", {"decision": "Block", "reason": "no"}),
            ("unknown decision", {"decision": "deny", "reason": "no"}),
            ("trailing text", '{"decision": "block", "reason": "no"} and more'),
        ]

    def rewrite(self, seen, arguments):
        raise NotSupported("a command hook cannot rewrite the arguments")

    def run(self, arguments, mode):
        from code_puppy.hook_engine import HookEngine
        import code_puppy_core_plugins.claude_code_hooks.register_callbacks as hooks_plugin

        config = {"PreToolUse": [{"matcher": "*", "hooks": list(self.hooks)}]} if self.hooks else {}
        self.monkeypatch.setattr(hooks_plugin, "_hook_engine", HookEngine(config, strict_validation=False) if config else None)
        self.callbacks._callbacks["pre_tool_call"][:] = [hooks_plugin.on_pre_tool_call_hook]
        ran = super().run(arguments, mode)
        self.bridge.check()
        return ran


@pytest.fixture
def failsecure_harness_command_hook(loaded_plugins, registry, rig, tmp_path, monkeypatch):
    pytest.importorskip("code_puppy.hook_engine.executor")
    pytest.importorskip("code_puppy_core_plugins.claude_code_hooks.register_callbacks")
    harness = CommandHookHarness(registry, tmp_path, monkeypatch)
    yield harness
    harness.bridge.close()
