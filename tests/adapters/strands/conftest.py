"""Rig for the Strands adapter tests: the real pinned strands-agents, a scripted ``Model``
subclass (nothing reaches AWS or any network), a real ``@tool`` that writes a marker file,
and a config with a short deadline and an audit file per test.

Also the conformance kit's ``failsecure_harness`` fixture (``StrandsHarness``).
"""

import asyncio
import dataclasses
import json
import os
import sys
import threading

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "failsecure-test")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "failsecure-test")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import pytest  # noqa: E402

from failsecure.testing import AuditRig  # noqa: E402

import failsecure  # noqa: E402
from failsecure import activation, policy  # noqa: E402
from failsecure.testing import Harness, NotSupported, Ran, Seen  # noqa: E402

DEADLINE = 0.3


@pytest.fixture(scope="session")
def adapter():
    failsecure.install()
    import strands.hooks  # noqa: F401  (the trigger module: patched on import)

    strands_adapter = activation.get("strands")
    assert strands_adapter.state == "patched", strands_adapter.refused_reason
    return strands_adapter


# ---------------------------------------------------------------- the scripted model


def _tool_result_texts(messages) -> list:
    texts = []
    for message in messages:
        for block in message.get("content", ()):
            result = block.get("toolResult") if isinstance(block, dict) else None
            if result:
                texts.append(" ".join(c.get("text", "") for c in result.get("content", ()) if isinstance(c, dict)))
    return texts


def make_model(calls):
    """A ``strands.models.Model`` that asks for ``calls`` (a list of ``(tool name, input)``)
    in its first turn, then answers with the text of every tool result it got."""
    from strands.models.model import Model

    class ScriptedModel(Model):
        def __init__(self):
            self.turns = 0

        def update_config(self, **model_config):
            pass

        def get_config(self):
            return {}

        async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
            raise NotImplementedError
            yield  # pragma: no cover

        async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
            self.turns += 1
            yield {"messageStart": {"role": "assistant"}}
            if self.turns == 1:
                for index, (name, tool_input) in enumerate(calls):
                    yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": f"call-{index}", "name": name}}}}
                    yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(tool_input)}}}}
                    yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "tool_use"}}
                return
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": " | ".join(_tool_result_texts(messages)) or "no tool result"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}

    return ScriptedModel()


# ---------------------------------------------------------------- the tool


class Marker:
    """The real tool's side effect: one file per run, holding the command it ran with."""

    def __init__(self, path):
        self.dir = path
        self.dir.mkdir(parents=True, exist_ok=True)

    def runs(self) -> list:
        return sorted(p.read_text() for p in self.dir.glob("run-*"))

    @property
    def ran(self) -> bool:
        return bool(self.runs())

    def tool(self, name="run_command"):
        from strands import tool

        folder = self.dir
        lock = threading.Lock()

        @tool(name=name)
        def run_command(command: str) -> str:
            """Run a command (writes a marker file).

            Args:
                command: the command line
            """
            with lock:
                index = len(list(folder.glob("run-*")))
                (folder / f"run-{index}").write_text(command)
            return f"ran {command}"

        return run_command


class Rig(AuditRig):
    def __init__(self, path, monkeypatch):
        super().__init__(path, monkeypatch, DEADLINE)
        self.marker = Marker(path / "marker")

    def agent(self, calls=None, hooks=(), executor="concurrent", tools=None, command="echo hi", **extra):
        """A real ``Agent`` with the scripted model and the marker tool; ``calls`` defaults
        to one ``run_command`` call with ``command``."""
        from strands import Agent
        from strands.tools.executors import ConcurrentToolExecutor, SequentialToolExecutor

        calls = calls if calls is not None else [("run_command", {"command": command})]
        return Agent(
            model=make_model(calls),
            tools=tools if tools is not None else [self.marker.tool()],
            hooks=list(hooks),
            callback_handler=None,
            tool_executor=ConcurrentToolExecutor() if executor == "concurrent" else SequentialToolExecutor(),
            **extra,
        )


@pytest.fixture
def rig(tmp_path, monkeypatch, adapter):
    monkeypatch.chdir(tmp_path)
    r = Rig(tmp_path, monkeypatch)
    r.config()
    yield r
    monkeypatch.delenv("FAILSECURE_CONFIG", raising=False)
    policy.reload()


@pytest.fixture
def release():
    """An Event a hanging gate waits on; set at teardown so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def text_of(result) -> str:
    """The final text an agent run answered with (the tool results it saw)."""
    return str(result)


def before_tool():
    from strands.hooks import BeforeToolCallEvent

    return BeforeToolCallEvent


def provider(*callbacks, event=None):
    """A HookProvider registering ``callbacks`` on ``BeforeToolCallEvent``, in order."""
    from strands.hooks import HookProvider

    event_type = event or before_tool()

    class Gates(HookProvider):
        def register_hooks(self, registry, **kwargs):
            for cb in callbacks:
                registry.add_callback(event_type, cb)

    return Gates()


def batch_provider(*callbacks):
    """A HookProvider registering ``callbacks`` on ``BeforeToolsEvent`` (fired once per
    batch of tool uses, before any of them: ``cancel`` cancels them all)."""
    from strands.hooks import BeforeToolsEvent

    return provider(*callbacks, event=BeforeToolsEvent)


def stream_wrapper(marker_tool):
    """A wrapper tool that runs ``marker_tool`` through its own stream: a bypass of the
    executor, its hooks and its middleware."""
    from strands import tool

    @tool
    async def stream_wrapper(command: str) -> str:
        """Runs a command through the marker tool's own stream.

        Args:
            command: the command line
        """
        last = None
        async for last in marker_tool.stream({"toolUseId": "inner", "name": "run_command", "input": {"command": command}}, {}):
            pass
        return str(last)

    return stream_wrapper


# ---------------------------------------------------------------- conformance


class StrandsHarness(Harness):
    framework = "strands"
    modes = ("sync", "async")
    async_gates = True
    has_ask = True  # ``event.interrupt(...)``: the run stops for a human's answer

    def __init__(self, base):
        self.base = base
        self.gates: list = []

    def add_gate(self, name, behave, *, is_async=False):
        def seen(event):
            tool_use = event.tool_use
            return Seen(tool=tool_use.get("name"), arguments=dict(tool_use.get("input") or {}), native=event)

        if is_async:

            async def gate(event):
                return await behave(seen(event))

        else:

            def gate(event):
                return behave(seen(event))

        gate.__name__ = gate.__qualname__ = f"gate_{name}"
        gate.__module__ = "conformance"
        self.gates.append(gate)
        return f"strands:conformance.gate_{name}"

    def reset(self):
        self.gates = []

    def allow(self, seen):
        seen.native.cancel_tool = False
        return None

    def deny(self, seen):
        seen.native.cancel_tool = "denied by the policy gate"
        return None

    def ask(self, seen):
        seen.native.interrupt(f"conformance-{os.urandom(4).hex()}", reason="approve?")
        return None

    def junk(self):
        return [
            ("return value 'DENY'", "DENY"),
            ("return value False", False),
            ("return value dict", {"cancel_tool": True}),
        ]

    def rewrite(self, seen, arguments):
        event = seen.native
        event.tool_use = {**event.tool_use, "input": dict(arguments)}
        return None

    def run(self, arguments, mode, bypass=False):
        marker = Marker(self.base / f"run-{os.urandom(4).hex()}")
        from strands import Agent, tool

        tools = [marker.tool()]
        if bypass:  # a wrapper tool that runs the marker tool through its own stream
            inner = tools[0]

            @tool
            async def bypass_tool(command: str) -> str:
                """Runs a command through the marker tool.

                Args:
                    command: the command line
                """
                last = None
                async for last in inner.stream({"toolUseId": "inner", "name": "run_command", "input": {"command": command}}, {}):
                    pass
                return str(last)

            tools.append(bypass_tool)
        agent = Agent(
            model=make_model([(tools[-1].tool_name, dict(arguments))]),
            tools=tools,
            hooks=[provider(*self.gates)] if self.gates else [],
            callback_handler=None,
        )
        try:
            result = agent("go") if mode == "sync" else asyncio.run(agent.invoke_async("go"))
            told = str(result)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # upstream lets a raising hook end the run (SystemExit too)
            try:
                told = f"{type(exc).__name__}: {exc}"
            except BaseException:
                told = "<an exception that cannot be shown>"
        runs = marker.runs()
        return Ran(ran=bool(runs), arguments={"command": runs[-1]} if runs else None, told=told)

    def bypass(self, arguments, mode):
        return self.run(arguments, mode, bypass=True)

    def install(self):
        failsecure.install()
        import strands.hooks  # noqa: F401

        activation.get("strands").patch()

    def uninstall(self):
        failsecure.uninstall()


@pytest.fixture
def failsecure_harness(tmp_path, adapter):
    return StrandsHarness(tmp_path)


class InterventionHarness(StrandsHarness):
    """Interventions handlers (``Agent(interventions=[...])``): each gate an
    ``InterventionHandler`` whose ``before_tool_call`` answers with an action (default
    ``on_error``: ``throw``)."""

    kind = "interventions"

    def add_gate(self, name, behave, *, is_async=False):
        from strands.interventions import InterventionHandler

        def seen(event):
            tool_use = event.tool_use
            return Seen(tool=tool_use.get("name"), arguments=dict(tool_use.get("input") or {}), native=event)

        if is_async:

            async def before_tool_call(handler, event, **kwargs):
                return await behave(seen(event))

        else:

            def before_tool_call(handler, event, **kwargs):
                return behave(seen(event))

        label = "".join(c if c.isalnum() else "_" for c in name)
        cls = type(f"Handler_{label}", (InterventionHandler,),
                   {"name": property(lambda handler: f"conformance-{label}"), "before_tool_call": before_tool_call,
                    "__module__": "conformance"})
        self.gates.append(cls())
        return f"strands:conformance.Handler_{label}.before_tool_call"

    def allow(self, seen):
        from strands.interventions import Proceed

        return Proceed()

    def abstain(self, seen):
        from strands.interventions import Proceed

        return Proceed()  # a handler has no "no opinion" beside proceeding

    def deny(self, seen):
        from strands.interventions import Deny

        return Deny(reason="denied by the policy gate")

    def ask(self, seen):
        from strands.interventions import Confirm

        return Confirm(prompt="approve?")

    def junk(self):
        return [("None", None), ("a string", "DENY"), ("False", False), ("a dict", {"type": "deny"})]

    def rewrite(self, seen, arguments):
        from strands.interventions import Transform

        def apply(event):
            event.tool_use = {**event.tool_use, "input": dict(arguments)}

        return Transform(apply=apply)

    def run(self, arguments, mode):
        marker = Marker(self.base / f"run-{os.urandom(4).hex()}")
        from strands import Agent

        agent = Agent(model=make_model([("run_command", dict(arguments))]), tools=[marker.tool()],
                      interventions=list(self.gates), callback_handler=None)
        return _drive(agent, marker, mode)


class RenameHarness(StrandsHarness):
    """``BeforeToolCallEvent`` callbacks that rewrite by renaming ``tool_use["name"]`` to
    another registered tool (with the new input): 1.62 runs the tool of the new name,
    1.52 the tool it selected; both write the same marker."""

    kind = "rename"

    def rewrite(self, seen, arguments):
        event = seen.native
        event.tool_use["name"] = "other_command"
        event.tool_use["input"] = dict(arguments)
        return None

    def run(self, arguments, mode):
        marker = Marker(self.base / f"run-{os.urandom(4).hex()}")
        from strands import Agent

        agent = Agent(model=make_model([("run_command", dict(arguments))]),
                      tools=[marker.tool(), marker.tool("other_command")],
                      hooks=[provider(*self.gates)] if self.gates else [], callback_handler=None)
        return _drive(agent, marker, mode)


def _drive(agent, marker, mode):
    try:
        result = agent("go") if mode == "sync" else asyncio.run(agent.invoke_async("go"))
        told = str(result)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # upstream lets a raising handler end the run
        try:
            told = f"{type(exc).__name__}: {exc}"
        except BaseException:
            told = "<an exception that cannot be shown>"
    runs = marker.runs()
    return Ran(ran=bool(runs), arguments={"command": runs[-1]} if runs else None, told=told)


@pytest.fixture
def failsecure_harness_interventions(tmp_path, adapter):
    return InterventionHarness(tmp_path)


@pytest.fixture
def failsecure_harness_rename(tmp_path, adapter):
    return RenameHarness(tmp_path)


__all__ = ["NotSupported"]

# the test modules import the helpers above by this name (the rootdir has other conftests)
sys.modules["failsecure_strands_rig"] = sys.modules[__name__]


def execute_tool_stage():
    """``ExecuteToolStage`` (1.6x ``strands.middleware``; 1.52 the private ``strands._middleware``)."""
    try:
        from strands.middleware import ExecuteToolStage
    except ImportError:
        from strands._middleware.stages import ExecuteToolStage
    return ExecuteToolStage


class MiddlewareHarness(StrandsHarness):
    """``ExecuteToolStage`` Wrap middleware: each gate a handler ``(ctx, next_fn)`` that
    proceeds (``next_fn(ctx)``: allow and no opinion), short-circuits with its own error
    result (deny), asks (``ctx.interrupt``), proceeds with a replaced tool use (rewrite) or
    with something that is no context (junk). They run after the ``BeforeToolCallEvent``
    callbacks (none here), in registration order, outermost first."""

    kind = "middleware"

    def add_gate(self, name, behave, *, is_async=False):
        def seen(ctx):
            tool_use = ctx.tool_use
            return Seen(tool=tool_use.get("name"), arguments=dict(tool_use.get("input") or {}), native=ctx)

        async def gate(ctx, next_fn):
            answer = await behave(seen(ctx)) if is_async else behave(seen(ctx))
            if isinstance(answer, tuple) and answer and answer[0] == "deny":
                from strands.tools.executors._executor import ToolResultEvent

                yield ToolResultEvent({"toolUseId": str(ctx.tool_use.get("toolUseId")), "status": "error",
                                       "content": [{"text": answer[1]}]})
                return
            if answer is None:
                answer = ctx
            elif isinstance(answer, tuple) and answer and answer[0] == "junk":
                answer = answer[1]
            elif isinstance(answer, tuple) and answer and answer[0] == "rewrite":
                answer = dataclasses.replace(ctx, tool_use={**ctx.tool_use, "input": dict(answer[1])})
            async for event in next_fn(answer):
                yield event

        label = "".join(c if c.isalnum() else "_" for c in name)
        gate.__name__ = gate.__qualname__ = f"middleware_{label}"
        gate.__module__ = "conformance"
        self.gates.append(gate)
        return f"strands:conformance.middleware_{label}"

    def allow(self, seen):
        return None

    def deny(self, seen):
        return ("deny", "denied by the policy gate")

    def ask(self, seen):
        seen.native.interrupt(f"conformance-{os.urandom(4).hex()}", reason="approve?")
        return None

    def junk(self):
        return [("next_fn(None)", ("junk", None)), ("next_fn('DENY')", ("junk", "DENY")),
                ("next_fn(a dict)", ("junk", {"tool_use": {}}))]

    def rewrite(self, seen, arguments):
        return ("rewrite", dict(arguments))

    def run(self, arguments, mode):
        marker = Marker(self.base / f"run-{os.urandom(4).hex()}")
        from strands import Agent

        agent = Agent(model=make_model([("run_command", dict(arguments))]), tools=[marker.tool()], callback_handler=None)
        stage = execute_tool_stage()
        for gate in self.gates:
            agent._middleware_registry.add_middleware(stage.Wrap, gate)
        return _drive(agent, marker, mode)


@pytest.fixture
def failsecure_harness_middleware(tmp_path, adapter):
    return MiddlewareHarness(tmp_path)


class BatchHarness(StrandsHarness):
    """``BeforeToolsEvent`` callbacks (the batch gate, fired once before a turn's tool uses):
    each gate sees the batch's one tool use; it denies with ``event.cancel`` (a text: the
    cancelled tools' error result), asks with ``event.interrupt(...)`` (the run stops for a
    human's answer), rewrites the tool use of the message in place (the executor reads the
    uses from the message after the event). The event has no "allow" field: allow is no
    opinion (``cancel`` left as it was)."""

    kind = "batch"

    def add_gate(self, name, behave, *, is_async=False):
        def seen(event):
            uses = [c["toolUse"] for c in event.message["content"] if isinstance(c, dict) and "toolUse" in c]
            use = uses[0] if uses else {}
            return Seen(tool=use.get("name"), arguments=dict(use.get("input") or {}), native=event)

        if is_async:

            async def gate(event):
                return await behave(seen(event))

        else:

            def gate(event):
                return behave(seen(event))

        label = "".join(c if c.isalnum() else "_" for c in name)
        gate.__name__ = gate.__qualname__ = f"batch_{label}"
        gate.__module__ = "conformance"
        self.gates.append(gate)
        return f"strands:conformance.batch_{label}"

    def allow(self, seen):
        return None

    def deny(self, seen):
        seen.native.cancel = "denied by the policy gate"
        return None

    def ask(self, seen):
        seen.native.interrupt(f"conformance-{os.urandom(4).hex()}", reason="run these?")
        return None

    def junk(self):
        return [
            ("return value 'DENY'", "DENY"),
            ("return value False", False),
            ("return value dict", {"cancel": True}),
        ]

    def rewrite(self, seen, arguments):
        for block in seen.native.message["content"]:
            if isinstance(block, dict) and "toolUse" in block:
                block["toolUse"]["input"] = dict(arguments)
        return None

    def run(self, arguments, mode):
        marker = Marker(self.base / f"run-{os.urandom(4).hex()}")
        from strands import Agent

        agent = Agent(model=make_model([("run_command", dict(arguments))]), tools=[marker.tool()],
                      hooks=[batch_provider(*self.gates)] if self.gates else [], callback_handler=None)
        return _drive(agent, marker, mode)


@pytest.fixture
def failsecure_harness_batch(tmp_path, adapter):
    return BatchHarness(tmp_path)
