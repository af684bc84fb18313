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

    def run(self, arguments, mode):
        import asyncio

        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import FunctionModel

        told: list = []

        def model(messages, info):
            for part in messages[-1].parts:
                if isinstance(part, ToolReturnPart):
                    told.append(str(part.content))
                    return ModelResponse(parts=[TextPart("done")])
                if type(part).__name__ == "RetryPromptPart":
                    told.append(str(part.content))
                    return ModelResponse(parts=[TextPart("done")])
            return ModelResponse(parts=[ToolCallPart("kit_tool", dict(arguments))])

        agent = Agent(FunctionModel(model))
        self.ran = []
        ran = self.ran

        @agent.tool_plain
        def kit_tool(command: str) -> str:
            ran.append({"command": command})
            return "ran"

        if mode == "sync":
            agent.run_sync("go")
        else:
            asyncio.run(agent.run("go"))
        return Ran(ran=bool(ran), arguments=ran[-1] if ran else None, told="\n".join(told))


@pytest.fixture
def failsecure_harness(loaded_plugins, registry, rig):
    return CodePuppyHarness(registry)
