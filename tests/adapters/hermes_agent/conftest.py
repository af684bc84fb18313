"""Fixtures for the hermes-agent adapter tests (real pinned hermes-agent, no fakes of it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("failsecure_hermes_rig", _HERE / "hermes_rig.py")
rig_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = rig_module
_spec.loader.exec_module(rig_module)

# Before anything of hermes is imported: its home, then failsecure (idempotent with the
# drop-in .pth of the tox env, and what makes a plain venv behave the same).
_HOME = rig_module.isolate()
_WORK = Path(_HOME).parent / (Path(_HOME).name + "-work")
_WORK.mkdir(exist_ok=True)
os.environ["FAILSECURE_CONFIG"] = str(_WORK / "failsecure.toml")
(_WORK / "failsecure.toml").write_text("")

import failsecure  # noqa: E402

failsecure.install()
import model_tools  # noqa: E402,F401  (imports hermes_cli.plugins and discovers plugins)
from hermes_cli import plugins as hermes_plugins  # noqa: E402

from failsecure import activation  # noqa: E402

@pytest.fixture(scope="session")
def adapter():
    a = activation.get("hermes-agent")
    assert a.state == "patched", a.refused_reason
    return a


@pytest.fixture(scope="session")
def _session_rig(adapter):
    r = rig_module.Rig(_HOME, _WORK)
    r.register_tool()
    rig_module.register_wrapper()
    return r


@pytest.fixture
def rig(_session_rig, tmp_path):
    """A clean hermes setup per test; the audit file lives in the test's tmp dir."""
    r = _session_rig
    r.work = tmp_path
    r.audit_path = tmp_path / "audit.jsonl"
    r.reset()
    yield r
    r.reset()
    r.load()
    hermes_plugins.clear_thread_tool_whitelist()


@pytest.fixture
def run_fresh(tmp_path):
    """Run one scenario in a fresh interpreter (frozen-at-import hermes state)."""

    def run(spec: dict, env: dict | None = None, timeout: float = 120) -> dict:
        work = tmp_path / f"fresh-{len(list(tmp_path.iterdir()))}"
        work.mkdir()
        spec = dict(spec, work=str(work), home=str(work / "home"))
        (work / "home").mkdir()
        spec_path = work / "spec.json"
        spec_path.write_text(json.dumps(spec))
        child_env = dict(os.environ)
        child_env.pop("FAILSECURE_CONFIG", None)
        pkg_root = str(Path(failsecure.__file__).resolve().parent.parent)
        child_env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, child_env.get("PYTHONPATH")) if p)
        child_env.update(env or {})
        proc = subprocess.run(
            [sys.executable, str(_HERE / "hermes_rig.py"), str(spec_path)],
            capture_output=True, text=True, timeout=timeout, env=child_env, cwd=str(work),
        )
        for line in proc.stdout.splitlines():
            if line.startswith("FAILSECURE-RESULT "):
                out = json.loads(line[len("FAILSECURE-RESULT "):])
                out["stderr"] = proc.stderr
                return out
        raise AssertionError(f"scenario failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")

    return run


# ---------------------------------------------------------------- the conformance kit

from failsecure.testing import HostileAnswer, HostileDict, Harness, NotSupported, Ran, Seen  # noqa: E402

_KIT_GATES: dict = {}


class _KitGates:
    """The module the kit's plugins call back into (by name, from hermes' plugin dir)."""

    @staticmethod
    def call(name: str, kw: dict):
        args = kw.get("args")
        seen = Seen(tool=kw.get("tool_name"), arguments=dict(args) if isinstance(args, dict) else {}, native=kw)
        return _KIT_GATES[name](seen)


sys.modules["failsecure_hermes_kit_gates"] = _KitGates  # type: ignore[assignment]


class HermesHarness(Harness):
    """hermes' real ``pre_tool_call`` plugins, loaded by hermes from its plugin folder,
    through ``model_tools.handle_function_call`` with a registered tool."""

    framework = "hermes-agent"
    modes = ("sync",)

    def __init__(self, rig):
        self.rig = rig
        self.has_ask = rig_module.has_approve()

    def add_gate(self, name, behave, *, is_async=False):
        hook = self.rig.plugin(f"kit_{name}", None)
        plugin = hook.split(":", 1)[1]
        _KIT_GATES[plugin] = behave
        (self.rig.home / "plugins" / plugin / "__init__.py").write_text(
            "import sys\n"
            "def hook(**kw):\n"
            f"    return sys.modules['failsecure_hermes_kit_gates'].call({plugin!r}, kw)\n"
            "def register(ctx):\n"
            "    ctx.register_hook('pre_tool_call', hook)\n"
        )
        return hook

    def reset(self):
        _KIT_GATES.clear()
        self.rig.reset()

    def allow(self, seen):
        return None  # hermes has no explicit allow: no directive

    def deny(self, seen):
        return {"action": "block", "message": "conformance gate: denied"}

    def ask(self, seen):
        return {"action": "approve", "message": "conformance gate asks"}

    def junk(self):
        return [
            ("a string", "block"),
            ("unknown action", {"action": "deny", "message": "no"}),
            ("block without message", {"action": "block"}),
            ("non-string message", {"action": "block", "message": 42}),
            ("claude-style decision", {"decision": "block", "reason": "no"}),
            ("hostile dict", HostileDict(action="block", message="no")),
            ("hostile object", HostileAnswer()),
        ]

    def rewrite(self, seen, arguments):
        args = seen.native["args"]
        args.clear()
        args.update(arguments)
        return None

    def run(self, arguments, mode):
        self.rig.load()
        out = self.rig.call(dict(arguments))
        return Ran(ran=out["ran"], arguments=self.rig.ran[-1] if self.rig.ran else None, told=json.dumps(out["result"]))

    def bypass(self, arguments, mode):
        """A real ``AIAgent.run_conversation`` whose model calls the wrapper tool, whose
        handler runs the probe tool through ``registry.dispatch`` itself."""
        self.rig.load()
        self.rig.ran.clear()
        told = rig_module.agent_run(rig_module.WRAPPER, dict(arguments))
        return Ran(ran=bool(self.rig.ran), arguments=self.rig.ran[-1] if self.rig.ran else None, told="\n".join(map(str, told)))


@pytest.fixture
def failsecure_harness(rig):
    return HermesHarness(rig)


from failsecure.testing.command import CommandBridge  # noqa: E402


class ShellHookHarness(HermesHarness):
    """Every gate a shell hook (``hooks: pre_tool_call: [{command, timeout}]`` in
    config.yaml, accepted), a real process hermes spawns with its own payload on stdin;
    the process answers what the kit's gate returns (``failsecure.testing.command``).
    Native answers: nothing (no opinion), ``{"action": "block", "message": ...}`` on
    stdout (deny). A shell hook has no approve, cannot rewrite the arguments, cannot
    raise a Python exception (those rows n/a; its crash, signal and missing-binary
    failures are test_hermes_shell_hooks.py)."""

    kind = "shell"
    deadline = 0.7  # each gate is a process: room for it to start on a busy machine

    def __init__(self, rig, workdir):
        super().__init__(rig)
        self.has_ask = False
        self.bridge = CommandBridge(workdir, self._seen)

    @staticmethod
    def _seen(payload):
        payload = payload if isinstance(payload, dict) else {}
        args = payload.get("tool_input")
        return Seen(tool=payload.get("tool_name"), arguments=dict(args) if isinstance(args, dict) else {}, native=payload)

    def add_gate(self, name, behave, *, is_async=False):
        return self.rig.shell_hook(self.bridge.command(f"{name}_{len(self.bridge.behaviours)}", behave), timeout=5)

    def reset(self):
        self.bridge.reset()
        super().reset()

    def allow(self, seen):
        return None

    def junk(self):
        return [
            ("invalid JSON", "not json {"),
            ("a JSON array", ["block"]),
            ("an empty object", {}),
            ("unknown action", {"action": "deny", "message": "no"}),
            ("approve (no shell form)", {"action": "approve", "message": "asks"}),
        ]

    def rewrite(self, seen, arguments):
        raise NotSupported("a shell hook cannot rewrite the arguments")

    def run(self, arguments, mode):
        ran = super().run(arguments, mode)
        self.bridge.check()
        return ran


@pytest.fixture
def failsecure_harness_shell(rig, tmp_path):
    harness = ShellHookHarness(rig, tmp_path)
    yield harness
    harness.bridge.close()
