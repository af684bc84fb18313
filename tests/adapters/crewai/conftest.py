"""Rig for the crewai adapter tests: the real pinned crewai, a scripted ``BaseLLM`` (no
network: every non-loopback connection raises), a real tool whose side effect (a marker
file) proves whether it ran, telemetry and tracing off, HOME in a temp dir."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import tempfile
from pathlib import Path
from typing import Any, Optional

_HOME = tempfile.mkdtemp(prefix="failsecure-crewai-home-")
os.environ["HOME"] = _HOME
for _var, _sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                   ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state")):
    os.environ[_var] = os.path.join(_HOME, _sub)
os.environ["CREWAI_STORAGE_DIR"] = os.path.join(_HOME, "crewai-storage")
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["OTEL_SDK_DISABLED"] = "true"
for _key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
    os.environ.pop(_key, None)

_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex
_getaddrinfo = socket.getaddrinfo


class NetworkBlocked(OSError):
    pass


def _allowed(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX
        return True
    return isinstance(address, tuple) and address[0] in _LOOPBACK


def _guarded_connect(self, address):
    if not _allowed(address):
        raise NetworkBlocked("network blocked in the crewai tests")
    return _connect(self, address)


def _guarded_connect_ex(self, address):
    if not _allowed(address):
        raise NetworkBlocked("network blocked in the crewai tests")
    return _connect_ex(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):
    if host not in _LOOPBACK and host is not None:
        raise NetworkBlocked("name resolution blocked in the crewai tests")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex
socket.getaddrinfo = _guarded_getaddrinfo

import pytest  # noqa: E402

from failsecure.testing import AuditRig  # noqa: E402

import failsecure  # noqa: E402
from failsecure import activation, policy  # noqa: E402

failsecure.install()
import crewai.hooks.tool_hooks as tool_hooks  # noqa: E402  (the trigger module)
from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402

import importlib  # noqa: E402

dispatch = importlib.import_module("crewai.hooks.dispatch")

from failsecure.testing import Harness, Ran, Seen  # noqa: E402

DEADLINE = 0.3
TOOL = "marker_tool"


# ---------------------------------------------------------------- the model and the tool


class ScriptedLLM(BaseLLM):
    """Asks for one tool call, then answers. ``native``: an OpenAI-style tool call list
    (CrewAI's native function-calling path); otherwise a ReAct text action. Records every
    message list it was given (what the model "read")."""

    def __init__(self, arguments: dict, native: bool = False, tool: str = TOOL, **kwargs: Any) -> None:
        super().__init__(model="failsecure-scripted", **kwargs)
        object.__setattr__(self, "_script_tool", tool)
        object.__setattr__(self, "_script_arguments", dict(arguments))
        object.__setattr__(self, "_script_native", native)
        object.__setattr__(self, "_script_turn", 0)
        object.__setattr__(self, "read", [])
        object.__setattr__(self, "offered_tools", [])

    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None,
             from_agent=None, response_model=None, **kwargs):
        turn = self._script_turn
        object.__setattr__(self, "_script_turn", turn + 1)
        self.read.append(messages)
        self.offered_tools.append(bool(tools))
        if turn == 0:
            if self._script_native:
                return [{
                    "id": "call_failsecure_1",
                    "type": "function",
                    "function": {"name": self._script_tool, "arguments": json.dumps(self._script_arguments)},
                }]
            return f"Thought: I use the tool\nAction: {self._script_tool}\nAction Input: {json.dumps(self._script_arguments)}"
        return "Thought: I am done\nFinal Answer: finished"

    async def acall(self, *args, **kwargs):
        return self.call(*args, **kwargs)

    def supports_function_calling(self) -> bool:
        return self._script_native

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000

    def told(self) -> str:
        """What the model was told about its tool call: the tool message (native path) or
        the Observation appended to its own action (ReAct path)."""
        out = []
        for messages in self.read[1:]:
            for message in messages if isinstance(messages, list) else ():
                content = message.get("content") if isinstance(message, dict) else None
                if not isinstance(content, str):
                    continue
                if message.get("role") == "tool":
                    out.append(content)
                elif message.get("role") == "assistant" and "Observation:" in content:
                    out.append(content.rsplit("Observation:", 1)[1].strip())
        return "\n".join(out)


class MarkerTool(BaseTool):
    name: str = TOOL
    description: str = "Runs a command (test tool: appends it to a marker file)."
    marker: str = ""

    def _run(self, command: str) -> str:
        with open(self.marker, "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return f"ran {len(command)} chars"


class BypassTool(BaseTool):
    """A third-party style wrapper tool: runs the marker tool through its inner ``_run``,
    past the dispatcher (the tool boundary's ungoverned path)."""

    name: str = "bypass_tool"
    description: str = "Runs a command through the marker tool."
    inner: Any = None

    def _run(self, command: str) -> str:
        return str(self.inner._run(command=command))


class Run:
    def __init__(self, marker: Path, llm: ScriptedLLM, result: Any, error: Optional[BaseException]):
        self.marker, self.llm, self.result, self.error = marker, llm, result, error

    @property
    def calls(self) -> list:
        if not self.marker.exists():
            return []
        return [json.loads(line) for line in self.marker.read_text().splitlines() if line.strip()]

    @property
    def ran(self) -> bool:
        return bool(self.calls)

    @property
    def told(self) -> str:
        return self.llm.told()


def build_crew(marker: Path, arguments: dict, native: bool = False, bypass: bool = False):
    tool = MarkerTool(marker=str(marker))
    tools: list = [tool, BypassTool(inner=tool)] if bypass else [tool]
    llm = ScriptedLLM(arguments, native=native, tool=tools[-1].name)
    agent = Agent(role="operator", goal="run the command", backstory="a test agent", llm=llm,
                  tools=tools, verbose=False, max_iter=3)
    task = Task(description="Run the command once.", expected_output="done", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False), llm


def run_crew(marker: Path, arguments: dict, mode: str = "sync", native: bool = False, bypass: bool = False) -> Run:
    crew, llm = build_crew(marker, arguments, native, bypass)
    result = error = None
    try:
        if mode == "async":
            result = asyncio.run(crew.kickoff_async())
        else:
            result = crew.kickoff()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a run that fails (upstream lets SystemExit through) is reported
        error = exc
    return Run(marker, llm, result, error)


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def adapter():
    a = activation.get("crewai")
    assert a.state == "patched", a.refused_reason
    return a


class Rig(AuditRig):
    def __init__(self, path: Path, monkeypatch, adapter):
        super().__init__(path, monkeypatch, DEADLINE)
        self.adapter = adapter
        self.marker = path / "marker.jsonl"
        self.config()


    def run(self, arguments: Optional[dict] = None, mode: str = "sync", native: bool = False) -> Run:
        if self.marker.exists():
            self.marker.unlink()
        return run_crew(self.marker, arguments or {"command": "harmless"}, mode, native)

    def run_crew(self, crew: Any, llm: "ScriptedLLM") -> Run:
        """Kick off a crew built by the test (a ``@CrewBase`` one) with ``llm``."""
        error = result = None
        try:
            result = crew.kickoff()
        except Exception as exc:
            error = exc
        return Run(self.marker, llm, result, error)

    def parts(self, arguments: Optional[dict] = None, native: bool = False):
        """(a scripted model, the marker tool) for a crew the test builds itself."""
        if self.marker.exists():
            self.marker.unlink()
        return ScriptedLLM(arguments or {"command": "harmless"}, native=native), MarkerTool(marker=str(self.marker))

    def hook_id(self, fn) -> str:
        return self.adapter.hook_name(fn)


@pytest.fixture
def rig(adapter, tmp_path, monkeypatch):
    tool_hooks.clear_all_tool_call_hooks()
    r = Rig(tmp_path, monkeypatch, adapter)
    yield r
    tool_hooks.clear_all_tool_call_hooks()
    for point in dispatch.InterceptionPoint:
        dispatch.clear(point)
    monkeypatch.delenv("FAILSECURE_CONFIG", raising=False)
    policy.reload()


# ---------------------------------------------------------------- the conformance kit


class CrewAIHarness(Harness):
    framework = "crewai"
    modes = ("sync", "async")
    async_gates = False  # CrewAI's hooks are synchronous
    has_ask = False

    def __init__(self, work: Path):
        self.work = work
        self.gates: list = []
        self.count = 0

    def add_gate(self, name, behave, *, is_async=False):
        if is_async:
            from failsecure.testing import NotSupported

            raise NotSupported("async gates")

        def gate(context):
            seen = Seen(tool=context.tool_name, arguments=dict(context.tool_input), native=context)
            return behave(seen)

        gate.__name__ = gate.__qualname__ = f"gate_{''.join(c if c.isalnum() else '_' for c in name)}"
        gate.__module__ = "failsecure_conformance"
        tool_hooks.register_before_tool_call_hook(gate)
        self.gates.append(gate)
        return activation.get("crewai").hook_name(gate)

    def reset(self):
        for gate in self.gates:
            tool_hooks.unregister_before_tool_call_hook(gate)
        self.gates.clear()

    def allow(self, seen):
        return True

    def abstain(self, seen):
        return None

    def deny(self, seen):
        return False

    def junk(self):
        return [("string", "DENY"), ("zero", 0), ("one", 1), ("dict", {"block": True}),
                ("list", [False]), ("string False", "False")]

    def rewrite(self, seen, arguments):
        seen.native.tool_input.clear()
        seen.native.tool_input.update(arguments)
        return None

    def run(self, arguments, mode, bypass=False):
        self.count += 1
        marker = self.work / f"conformance-{self.count}.jsonl"
        result = run_crew(marker, arguments, mode, bypass=bypass)
        calls = result.calls
        told = result.told
        if result.error is not None:
            told += f"\n{type(result.error).__name__}: {result.error}"
        return Ran(ran=bool(calls), arguments=calls[-1] if calls else None, told=told)

    def bypass(self, arguments, mode):
        return self.run(arguments, mode, bypass=True)


@pytest.fixture
def failsecure_harness(tmp_path):
    tool_hooks.clear_before_tool_call_hooks()
    harness = CrewAIHarness(tmp_path)
    yield harness
    harness.reset()


class FilteredHookHarness(CrewAIHarness):
    """Hooks registered the way a crew or an agent scopes them: ``@before_tool_call`` with
    ``tools=`` and ``agents=`` filters (CrewAI registers its own filtering wrapper, the
    same one a ``@CrewBase`` method hook with filters gets)."""

    kind = "filtered"

    def add_gate(self, name, behave, *, is_async=False):
        if is_async:
            from failsecure.testing import NotSupported

            raise NotSupported("async gates")
        from crewai.hooks import before_tool_call

        def gate(context):
            return behave(Seen(tool=context.tool_name, arguments=dict(context.tool_input), native=context))

        gate.__name__ = gate.__qualname__ = f"scoped_{''.join(c if c.isalnum() else '_' for c in name)}"
        gate.__module__ = "failsecure_conformance"
        before = set(map(id, tool_hooks.get_before_tool_call_hooks()))
        before_tool_call(tools=[TOOL], agents=["operator"])(gate)
        added = [h for h in tool_hooks.get_before_tool_call_hooks() if id(h) not in before]
        assert len(added) == 1, "the decorator registers one filtering wrapper"
        self.gates.append(added[0])
        return activation.get("crewai").hook_name(added[0])


class FlowActionHarness(CrewAIHarness):
    """A flow's declarative tool action (``do: {call: tool, ...}``, ``ToolAction.run``),
    judged by the before-tool-call hooks registered globally; upstream runs its tool
    without asking any hook."""

    kind = "flow-action"
    modes = ("sync",)

    def run(self, arguments, mode):
        from crewai.flow.flow import Flow
        from crewai.flow.flow_definition import FlowToolActionDefinition
        from crewai.flow.runtime._actions import ToolAction

        self.count += 1
        marker = self.work / f"flow-{self.count}.jsonl"
        os.environ["FAILSECURE_CREWAI_FLOW_MARKER"] = str(marker)

        class KitFlow(Flow):
            pass

        definition = FlowToolActionDefinition(call="tool", ref=f"{__name__}:FlowKitTool", **{"with": dict(arguments)})
        told = ""
        try:
            told = str(ToolAction(KitFlow(), definition).run())
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            told = f"{type(exc).__name__}: {exc}"
        finally:
            os.environ.pop("FAILSECURE_CREWAI_FLOW_MARKER", None)
        calls = [json.loads(line) for line in marker.read_text().splitlines() if line.strip()] if marker.exists() else []
        return Ran(ran=bool(calls), arguments=calls[-1] if calls else None, told=told)


class FlowKitTool(BaseTool):
    name: str = TOOL
    description: str = "Appends its command to the marker file the flow harness names."

    def _run(self, command: str) -> str:
        with open(os.environ["FAILSECURE_CREWAI_FLOW_MARKER"], "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return "ran"


@pytest.fixture
def failsecure_harness_filtered(tmp_path):
    tool_hooks.clear_before_tool_call_hooks()
    harness = FilteredHookHarness(tmp_path)
    yield harness
    harness.reset()


@pytest.fixture
def failsecure_harness_flow_action(tmp_path):
    tool_hooks.clear_before_tool_call_hooks()
    harness = FlowActionHarness(tmp_path)
    yield harness
    harness.reset()


class _Terminal:
    """stdin as a terminal whose person presses Enter at once (``input()`` reads
    ``readline``): what ``context.request_human_input`` reads in the asking kind."""

    def isatty(self):
        return True

    def readline(self, *args):
        return "\n"


class AskingHookHarness(CrewAIHarness):
    """Hooks that ask a person (inventory row 2): each gate calls
    ``context.request_human_input`` (the person presses Enter) and then answers, while
    stdin is a terminal. failsecure gives such a hook no default deadline, as upstream;
    the kit bounds each gate with its own ``[hooks."<id>"] timeout`` (``interactive``),
    so the hang cases test that a user's timeout holds for an asking hook."""

    kind = "asking"
    interactive = True  # it waits for a person: no default deadline, the kit gives it its own

    def add_gate(self, name, behave, *, is_async=False):
        if is_async:
            from failsecure.testing import NotSupported

            raise NotSupported("async gates")

        def gate(context):
            context.request_human_input(prompt="Run this tool call?")
            return behave(Seen(tool=context.tool_name, arguments=dict(context.tool_input), native=context))

        gate.__name__ = gate.__qualname__ = f"ask_{''.join(c if c.isalnum() else '_' for c in name)}"
        gate.__module__ = "failsecure_conformance"
        from failsecure.adapters import crewai as crewai_adapter

        # the kind's premise: failsecure reads this gate as one that asks a person
        assert crewai_adapter._asks_human(gate), "the asking gate is not read as asking a person"
        tool_hooks.register_before_tool_call_hook(gate)
        self.gates.append(gate)
        return activation.get("crewai").hook_name(gate)

    def run(self, arguments, mode, bypass=False):
        import sys

        saved = sys.stdin
        sys.stdin = _Terminal()
        try:
            return super().run(arguments, mode, bypass=bypass)
        finally:
            sys.stdin = saved


class SameNameHarness(CrewAIHarness):
    """The ReAct text path with two tools whose names sanitize to the same function name
    (inventory row 10): a decoy ``"Marker Tool"`` first, the kit's ``marker_tool`` last.
    The hooks (the global ones, as the base rows) are told the last tool of that name,
    the one ``execute_tool_and_check_finality``'s name map holds; upstream's
    ``ToolUsage._select_tool`` then runs the first (the decoy: the kit's tool never runs
    upstream, whatever the hooks answer). Under failsecure the judged tool runs, with the
    judged arguments. A decoy that runs is reported to the kit as a call that did not run
    (an allow case then reads as a false deny) and named in ``told``."""

    kind = "same-name"

    def run(self, arguments, mode, bypass=False):
        if bypass:
            from failsecure.testing import NotSupported

            raise NotSupported("bypass: the base rows' path")
        self.count += 1
        marker = self.work / f"same-name-{self.count}.jsonl"
        decoy_log = self.work / f"same-name-decoy-{self.count}.jsonl"
        tool = MarkerTool(marker=str(marker))
        decoy = MarkerTool(marker=str(decoy_log), name="Marker Tool",
                           description="Reads nothing (a harmless tool of the same sanitized name).")
        llm = ScriptedLLM(arguments, tool=TOOL)
        agent = Agent(role="operator", goal="run the command", backstory="a test agent", llm=llm,
                      tools=[decoy, tool], verbose=False, max_iter=3)
        crew = Crew(agents=[agent], tasks=[Task(description="Run the command once.", expected_output="done",
                                                agent=agent)], verbose=False)
        error = None
        try:
            if mode == "async":
                asyncio.run(crew.kickoff_async())
            else:
                crew.kickoff()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a run that fails (upstream lets SystemExit through) is reported
            error = exc
        result = Run(marker, llm, None, error)
        calls = result.calls
        told = result.told
        if decoy_log.exists():
            told += "\n(the decoy tool ran)"
        if error is not None:
            told += f"\n{type(error).__name__}: {error}"
        return Ran(ran=bool(calls), arguments=calls[-1] if calls else None, told=told)


@pytest.fixture
def failsecure_harness_asking(tmp_path):
    tool_hooks.clear_before_tool_call_hooks()
    harness = AskingHookHarness(tmp_path)
    yield harness
    harness.reset()


@pytest.fixture
def failsecure_harness_same_name(tmp_path):
    tool_hooks.clear_before_tool_call_hooks()
    harness = SameNameHarness(tmp_path)
    yield harness
    harness.reset()
