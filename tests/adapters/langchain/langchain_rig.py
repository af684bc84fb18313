"""Rig for the langchain adapter tests (loaded by conftest.py as ``failsecure_langchain_rig``): the real pinned langchain, langchain-core and
langgraph, a scripted chat model (no LLM, no network) and a real tool whose side effect
(a marker file) proves whether it ran."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import failsecure

failsecure.install()
import langchain_core.callbacks.manager  # noqa: E402,F401  (the trigger module)
from langchain.agents import create_agent  # noqa: E402
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402

from failsecure.testing import Harness, NotSupported, Ran, Seen  # noqa: E402
from failsecure.testing import AuditRig  # noqa: E402

DEADLINE = 0.3
TOOL = "write_marker"


class ScriptedChat(GenericFakeChatModel):
    """A chat model that answers from a script; tools binding is a no-op."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChat":
        return self


def script(args: dict, tool: str = TOOL, call_id: str = "call_1") -> ScriptedChat:
    return ScriptedChat(
        messages=iter(
            [
                AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": call_id, "type": "tool_call"}]),
                AIMessage(content="done"),
            ]
        )
    )


class Marker:
    """The real tool: writes a marker file, records what it ran with."""

    def __init__(self, path: Path):
        self.path = path
        self.calls: list = []

    def _write(self, command: str) -> str:
        self.calls.append({"command": command})
        with open(self.path, "a") as fh:
            fh.write(command + "\n")
        return f"wrote {command}"

    @property
    def ran(self) -> bool:
        return self.path.exists()

    def tool(self, is_async: bool = False) -> StructuredTool:
        def write_marker(command: str) -> str:
            """Write the command to the marker file."""
            return self._write(command)

        async def awrite_marker(command: str) -> str:
            """Write the command to the marker file."""
            await asyncio.sleep(0)
            return self._write(command)

        if is_async:
            return StructuredTool.from_function(coroutine=awrite_marker, name=TOOL, description="Write the marker.")
        return StructuredTool.from_function(write_marker, name=TOOL)

    def reset(self) -> None:
        self.calls.clear()
        if self.path.exists():
            self.path.unlink()


def handler(name: str, on_start, *, strict: bool = True, is_async: bool = False, **attrs) -> BaseCallbackHandler:
    """A callback handler whose class is named ``name`` (its hook id is
    ``langchain:<this module>.<name>``), ``raise_error = strict``."""
    if is_async:
        async def on_tool_start(self, *args, **kwargs):
            result = on_start(*args, **kwargs)
            if asyncio.iscoroutine(result):
                result = await result
            return result

        base = AsyncCallbackHandler
    else:
        def on_tool_start(self, *args, **kwargs):
            return on_start(*args, **kwargs)

        base = BaseCallbackHandler
    cls = type(name, (base,), {"raise_error": strict, "on_tool_start": on_tool_start, "__module__": __name__, **attrs})
    cls.__qualname__ = name
    return cls()


def hook_id(name: str) -> str:
    return f"langchain:{__name__}.{name}"


class Rig(AuditRig):
    config_file = "trusted-config.toml"  # $FAILSECURE_CONFIG, not a project file

    def __init__(self, path: Path, monkeypatch):
        super().__init__(path, monkeypatch, deadline=DEADLINE)
        self.marker = Marker(path / "marker.txt")
        self.release = threading.Event()

    def outcome_of(self, hook: str, event: dict | None = None) -> dict:
        """The audited outcome of the hook whose id is exactly ``hook``."""
        event = event or self.last()
        found = [o for o in event["outcomes"] if o["hook"] == hook]
        assert len(found) == 1, event["outcomes"]
        return found[0]

    # ---------------------------------------------------------------- runs

    def invoke(self, callbacks=(), mode: str = "sync", command: str = "harmless", is_async_tool: bool = False):
        """A direct tool call: ``tool.invoke`` / ``tool.ainvoke``. Returns (result, exception)."""
        tool = self.marker.tool(is_async_tool)
        config = {"callbacks": list(callbacks)}
        try:
            if mode == "sync":
                return tool.invoke({"command": command}, config=config), None
            return asyncio.run(tool.ainvoke({"command": command}, config=config)), None
        except Exception as exc:  # noqa: BLE001
            return None, exc

    def agent(self, args=None, middleware=(), is_async_tool: bool = False, **kwargs):
        return create_agent(
            script(args or {"command": "harmless"}),
            tools=[self.marker.tool(is_async_tool)],
            middleware=list(middleware),
            **kwargs,
        )

    def run_agent(self, callbacks=(), mode: str = "sync", args=None, middleware=(), is_async_tool=False, **kwargs):
        """One agent run: ``invoke`` / ``ainvoke``. Returns the final state."""
        agent = self.agent(args, middleware, is_async_tool, **kwargs)
        config = {"callbacks": list(callbacks), "configurable": {"thread_id": "t1"}}
        state = {"messages": [{"role": "user", "content": "go"}]}
        if mode == "sync":
            return agent.invoke(state, config=config)
        return asyncio.run(agent.ainvoke(state, config=config))


def tool_messages(result: dict) -> list:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


# -------------------------------------------------------------------- conformance kit


class LangChainHarness(Harness):
    """The kit's gates are strict callback handlers (``raise_error = True``) passed in
    the run config of a real ``create_agent`` run; the tool writes a marker file."""

    framework = "langchain"
    modes = ("sync", "async")
    async_gates = True
    has_ask = False

    def __init__(self, path: Path):
        self.marker = Marker(path / "kit-marker.txt")
        self.handlers: list = []
        self.unsupported: list = []  # NotSupported raised inside a gate during a run

    def add_gate(self, name, behave, *, is_async=False):
        def on_start(serialized, input_str, **kwargs):
            inputs = kwargs.get("inputs")
            seen = Seen(tool=(serialized or {}).get("name"), arguments=dict(inputs or {}), native=kwargs)
            try:
                result = behave(seen)
                if asyncio.iscoroutine(result):
                    return self._unsupported_async(result)
                return result
            except NotSupported as exc:
                self.unsupported.append(exc)
                raise

        clean = "".join(c if c.isalnum() else "_" for c in name)
        gate = handler(f"KitGate_{clean}", on_start, is_async=is_async)
        self.handlers.append(gate)
        return hook_id(type(gate).__qualname__)

    async def _unsupported_async(self, coro):
        try:
            return await coro
        except NotSupported as exc:
            self.unsupported.append(exc)
            raise

    def reset(self):
        self.handlers.clear()
        self.unsupported.clear()
        self.marker.reset()

    def allow(self, seen):
        return None

    def deny(self, seen):
        raise PermissionError("denied by the kit's policy gate")

    def junk(self):
        return [("string", "DENY"), ("false", False), ("true", True), ("dict", {"allow": False}), ("zero", 0)]

    def rewrite(self, seen, arguments):
        raise NotSupported("rewrite")

    def run(self, arguments, mode):
        ran = self._run(arguments, mode)
        if self.unsupported:
            raise self.unsupported[0]
        return ran

    def _run(self, arguments, mode):
        self.marker.reset()
        agent = create_agent(script(arguments), tools=[self.marker.tool(mode == "async")])
        config = {"callbacks": list(self.handlers)}
        state = {"messages": [{"role": "user", "content": "go"}]}
        try:
            if mode == "sync":
                result = agent.invoke(state, config=config)
            else:
                result = asyncio.run(agent.ainvoke(state, config=config))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001  (upstream lets a gate's SystemExit end the run)
            return Ran(ran=self.marker.ran, arguments=self.marker.calls[-1] if self.marker.calls else None, told=str(exc))
        told = " ".join(str(m.content) for m in tool_messages(result))
        return Ran(ran=self.marker.ran, arguments=self.marker.calls[-1] if self.marker.calls else None, told=told)


