"""Fixtures for the google-adk adapter tests: the real pinned google-adk, a scripted
BaseLlm, InMemoryRunner; no credentials, no network, telemetry off."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("failsecure_adk_rig", _HERE / "adk_rig.py")
adk_rig = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = adk_rig
_spec.loader.exec_module(adk_rig)  # sets the telemetry switches before ADK is imported

import failsecure  # noqa: E402
from failsecure import activation, policy  # noqa: E402
from failsecure.testing import Harness, NotSupported, Ran, Seen  # noqa: E402
from failsecure.testing import AuditRig  # noqa: E402

failsecure.install()
import google.adk.plugins.plugin_manager  # noqa: E402,F401  (the trigger module)
import google.adk.runners  # noqa: E402,F401

DEADLINE = 0.3


@pytest.fixture(scope="session")
def adapter():
    a = activation.get("google-adk")
    assert a.state == "patched", a.refused_reason
    return a


class Rig(AuditRig):
    config_file = "trusted-config.toml"

    def __init__(self, path: Path, monkeypatch):
        super().__init__(path, monkeypatch, deadline=DEADLINE)
        self.marker = path / "marker"

    def run(self, arguments: dict | None = None, mode: str = "async", **kwargs):
        if self.marker.exists():
            self.marker.unlink()
        return adk_rig.run_agent(self.marker, dict(arguments or {"command": "harmless"}), mode, **kwargs)

    @property
    def ran(self) -> bool:
        return self.marker.exists()


@pytest.fixture
def rig(tmp_path, monkeypatch, adapter):
    monkeypatch.chdir(tmp_path)
    r = Rig(tmp_path, monkeypatch)
    r.config()
    yield r
    monkeypatch.delenv("FAILSECURE_CONFIG", raising=False)
    policy.reload()


@pytest.fixture(params=["sync", "async"])
def mode(request):
    return request.param


class ADKHarness(Harness):
    """The kit's gates on a real ADK agent run: the first gate is a runner plugin
    (``BasePlugin.before_tool_callback``), every later one an agent
    ``before_tool_callback`` (ADK runs the plugins first, so a plugin approves before an
    agent callback can rewrite)."""

    framework = "google-adk"
    modes = ("sync", "async")
    async_gates = True

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.plugins: list = []
        self.callbacks: list = []
        self.count = 0

    def add_gate(self, name, behave, *, is_async=False):
        if not self.plugins and not self.callbacks:
            return self.plugin_gate(name, behave, is_async)
        return self.agent_gate(name, behave, is_async)

    def label(self, name):
        self.count += 1
        return f"{name}_{self.count}"

    @staticmethod
    def seen(tool, args):
        return Seen(getattr(tool, "name", None), dict(args), native=args)

    def plugin_gate(self, name, behave, is_async):
        """A runner plugin's ``before_tool_callback`` (ADK requires a coroutine)."""
        label, seen = self.label(name), self.seen

        async def callback(tool, tool_args, tool_context):
            if is_async:
                return await behave(seen(tool, tool_args))
            # a sync gate in a plugin: off the event loop, as a plugin author would
            return await asyncio.to_thread(behave, seen(tool, tool_args))

        self.plugins.append(adk_rig.plugin(f"gate-{label}", callback))
        return f"google-adk:plugin:gate-{label}"

    def agent_gate(self, name, behave, is_async):
        """One of the agent's ``before_tool_callback`` list (sync or async)."""
        label, seen = self.label(name), self.seen
        if is_async:

            async def gate(tool, args, tool_context):
                return await behave(seen(tool, args))

        else:

            def gate(tool, args, tool_context):
                return behave(seen(tool, args))

        adk_rig.named(gate, f"gate_{label}")
        self.callbacks.append(gate)
        return f"google-adk:{gate.__module__}.gate_{label}"

    def reset(self):
        self.plugins, self.callbacks = [], []

    def allow(self, seen):
        return None

    def deny(self, seen):
        return {"error": "denied by the conformance gate"}

    def junk(self):
        return [
            ("a string", "DENY"),
            ("False", False),
            ("True", True),
            ("a list", [{"error": "x"}]),
            ("an object", object()),
            ("a dict with a non-string key", {1: "x"}),
        ]

    def rewrite(self, seen, arguments):
        seen.native.clear()
        seen.native.update(arguments)
        return None

    def run(self, arguments, mode):
        marker = self.workdir / "kit-marker"
        if marker.exists():
            marker.unlink()
        before = list(self.callbacks) or None
        outcome = adk_rig.run_agent(marker, arguments, mode, before=before, plugins=list(self.plugins))
        return Ran(ran=marker.exists(), arguments=outcome.ran[-1] if outcome.ran else None, told=outcome.told())


    def bypass(self, arguments, mode):
        """The model calls ``smuggle``, a wrapper tool that runs the marker tool through
        its inner ``run_async``: ADK's before-tool stages judge ``smuggle`` only."""
        marker = self.workdir / "kit-marker"
        if marker.exists():
            marker.unlink()
        before = list(self.callbacks) or None
        outcome = adk_rig.run_agent(marker, arguments, mode, before=before, plugins=list(self.plugins),
                                    call=adk_rig.WRAPPER, wrapper=True)
        return Ran(ran=marker.exists(), arguments=outcome.ran[-1] if outcome.ran else None, told=outcome.told())


@pytest.fixture
def failsecure_harness(tmp_path):
    return ADKHarness(tmp_path)


class PluginHarness(ADKHarness):
    """Every gate a runner plugin (``BasePlugin.before_tool_callback``), inventory row 1."""

    kind = "plugin"

    def add_gate(self, name, behave, *, is_async=False):
        return self.plugin_gate(name, behave, is_async)


class AgentCallbackHarness(ADKHarness):
    """Every gate one of the agent's ``before_tool_callback`` list, no plugin (inventory
    row 2: the agent stage reached without a plugin before it)."""

    kind = "agent"

    def add_gate(self, name, behave, *, is_async=False):
        return self.agent_gate(name, behave, is_async)


class ConfirmationHarness(ADKHarness):
    """The tool's ``require_confirmation`` predicate (inventory row 3), the one gate of a
    ``FunctionTool(run_command, require_confirmation=predicate)``. Its answers: ``False``
    runs the tool (the kit's allow and "no opinion": no confirmation needed); ``True`` asks
    a human (the predicate's only way to stop a call: the kit's deny and ask; the run has
    no human, so the call is held and the model is told ADK's confirmation request).
    ``None`` is junk (upstream reads it as "run it"). No rewrite, one predicate per tool."""

    kind = "require_confirmation"
    has_ask = True

    def __init__(self, workdir):
        super().__init__(workdir)
        self.predicate = None

    def add_gate(self, name, behave, *, is_async=False):
        if self.predicate is not None:
            raise NotSupported("one require_confirmation predicate per tool")
        label = self.label(name)

        def seen(command):
            return Seen(adk_rig.TOOL, {"command": command})

        if is_async:

            async def predicate(command: str):
                return await behave(seen(command))

        else:

            def predicate(command: str):
                return behave(seen(command))

        adk_rig.named(predicate, f"confirm_{label}")
        self.predicate = predicate
        return f"google-adk:{predicate.__module__}.confirm_{label}"

    def reset(self):
        super().reset()
        self.predicate = None

    def allow(self, seen):
        return False

    def abstain(self, seen):
        return False

    def deny(self, seen):
        return True

    def ask(self, seen):
        return True

    def junk(self):
        return [("None", None), ("0", 0), ("an empty string", ""), ("a string", "no"), ("an object", object())]

    def rewrite(self, seen, arguments):
        raise NotSupported("a confirmation predicate cannot rewrite")

    def run(self, arguments, mode):
        marker = self.workdir / "kit-marker"
        if marker.exists():
            marker.unlink()
        outcome = adk_rig.run_agent(marker, arguments, mode, confirm=self.predicate)
        return Ran(ran=marker.exists(), arguments=outcome.ran[-1] if outcome.ran else None, told=outcome.told())


class OverrideHarness(ConfirmationHarness):
    """A tool class's own ``check_require_confirmation`` (inventory row 5): the one gate of
    a ``FunctionTool`` subclass that overrides the method (ADK asks it in 2.13's
    ``apply_confirmation_gate`` and, in every release, in ``FunctionTool.run_async``). Its
    answers are the predicate's (``False`` runs, ``True`` asks a human, anything else is
    junk). ADK awaits the method, so it is a coroutine function; a sync gate of the kit
    runs off the loop in it (``asyncio.to_thread``), as a tool author would."""

    kind = "check_require_confirmation"

    def __init__(self, workdir):
        super().__init__(workdir)
        self.tool_class = None

    def add_gate(self, name, behave, *, is_async=False):
        if self.tool_class is not None:
            raise NotSupported("one check_require_confirmation per tool class")
        label = self.label(name)

        async def check(self, args, tool_context):
            seen = Seen(getattr(self, "name", None), dict(args))
            if is_async:
                return await behave(seen)
            return await asyncio.to_thread(behave, seen)

        self.tool_class = adk_rig.confirming_class(f"Confirming_{label}", check)
        return f"google-adk:{check.__module__}.{check.__qualname__}"

    def reset(self):
        super().reset()
        self.tool_class = None

    def run(self, arguments, mode):
        marker = self.workdir / "kit-marker"
        if marker.exists():
            marker.unlink()
        outcome = adk_rig.run_agent(marker, arguments, mode, tool_class=self.tool_class)
        return Ran(ran=marker.exists(), arguments=outcome.ran[-1] if outcome.ran else None, told=outcome.told())


@pytest.fixture
def failsecure_harness_check_require_confirmation(tmp_path):
    return OverrideHarness(tmp_path)


@pytest.fixture
def failsecure_harness_plugin(tmp_path):
    return PluginHarness(tmp_path)


@pytest.fixture
def failsecure_harness_agent(tmp_path):
    return AgentCallbackHarness(tmp_path)


@pytest.fixture
def failsecure_harness_require_confirmation(tmp_path):
    return ConfirmationHarness(tmp_path)


class ResumeHarness(ADKHarness):
    """The resume of a paused call (inventory row 10): a tool with a static
    ``require_confirmation=True``, the human confirms, ADK re-executes the call in the
    next turn. The kit's gates are the main harness's (a runner plugin first, agent
    callbacks after) and answer None while the call is paused; what they decide is what
    they answer on the resumed pass."""

    kind = "resume"

    def __init__(self, workdir):
        super().__init__(workdir)
        self.resumed = False
        self.rewrote = False

    def add_gate(self, name, behave, *, is_async=False):
        harness = self
        if is_async:

            async def on_resume(seen):
                return await behave(seen) if harness.resumed else None

        else:

            def on_resume(seen):
                return behave(seen) if harness.resumed else None

        return super().add_gate(name, on_resume, is_async=is_async)

    def rewrite(self, seen, arguments):
        # the kit's rewriter would rewrite on the resumed pass only: by the contract not the
        # confirmed call, denied (test_adk_confirmation.py holds both a rewrite on resume
        # only and one alike on every pass); the row is n/a here
        self.rewrote = True
        return None

    def reset(self):
        super().reset()
        self.resumed = False
        self.rewrote = False

    def run(self, arguments, mode):
        marker = self.workdir / "kit-marker"
        if marker.exists():
            marker.unlink()
        self.resumed = False
        before = list(self.callbacks) or None

        def resume(agent):
            self.resumed = True

        outcome = adk_rig.run_agent(marker, arguments, mode, before=before, plugins=list(self.plugins), confirm=True,
                                    resume={"confirmed": True}, on_resume=resume)
        if self.rewrote:
            raise NotSupported("a rewrite on the resumed pass only is not the confirmed call (test_adk_confirmation.py)")
        return Ran(ran=marker.exists(), arguments=outcome.ran[-1] if outcome.ran else None, told=outcome.told())


@pytest.fixture
def failsecure_harness_resume(tmp_path):
    return ResumeHarness(tmp_path)
