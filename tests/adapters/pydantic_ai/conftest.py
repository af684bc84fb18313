"""Rig for the pydantic-ai adapter tests: the real pinned pydantic-ai-slim, an ``Agent``
driven by a ``FunctionModel`` (no LLM, no network), a real ``@agent.tool_plain`` that
writes a marker file, gates registered on a real ``Hooks`` capability, and a config with
a short deadline and an audit file per test.

Also the conformance kit's ``failsecure_harness`` fixture (``PydanticAIHarness``).
"""

import asyncio
import json
import os
import sys
import threading

import pytest

from failsecure.testing import AuditRig

import failsecure
from failsecure import activation, policy
from failsecure.testing import Harness, NotSupported, Ran, Seen

DEADLINE = 0.3
TOOL = "run_command"

# the test modules import the rig by this name (conftest is not importable by name under
# --import-mode=importlib)
sys.modules.setdefault("failsecure_pai_rig", sys.modules[__name__])


def hook_id(fn) -> str:
    return f"pydantic-ai:{fn.__module__}.{fn.__qualname__}"


@pytest.fixture(scope="session")
def adapter():
    failsecure.install()
    import pydantic_ai.capabilities.hooks  # noqa: F401  (the trigger module: patched on import)

    pai = activation.get("pydantic-ai")
    pai.patch()
    assert pai.state == "patched", pai.refused_reason
    return pai


# ---------------------------------------------------------------- the scripted agent


class Marker:
    """A file the tool appends each command it ran with to: proof that it ran."""

    def __init__(self, path):
        self.path = path

    def record(self, command: str) -> None:
        with open(self.path, "a") as fh:
            fh.write(json.dumps(command) + "\n")

    def runs(self) -> list:
        if not os.path.exists(self.path):
            return []
        with open(self.path) as fh:
            return [json.loads(line) for line in fh if line.strip()]


def _told(messages) -> str:
    """Every text the model was given back for its tool calls (results, failures, retries)."""
    from pydantic_ai.messages import ModelRequest

    texts = []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if getattr(part, "part_kind", "") in ("tool-return", "retry-prompt") or "tool" in getattr(part, "part_kind", ""):
                content = getattr(part, "content", "")
                texts.append(content if isinstance(content, str) else repr(content))
    return " | ".join(texts)


def make_model(calls):
    """A ``FunctionModel`` asking for ``calls`` (a list of argument dicts for ``run_command``)
    in its first turn, then answering with every tool result text it got."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(TOOL, dict(args), tool_call_id=f"call-{i}") for i, args in enumerate(calls)])
        return ModelResponse(parts=[TextPart("told: " + _told(messages[-1:]))])

    return FunctionModel(respond)


def make_agent(marker, calls, capabilities=(), **kwargs):
    from pydantic_ai import Agent

    agent = Agent(make_model(calls), capabilities=list(capabilities), **kwargs)

    @agent.tool_plain
    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    return agent


BYPASS_TOOL = "bypass_tool"


def bypass_agent(marker, arguments, capabilities=(), how="call_tool"):
    """An agent whose model calls ``bypass_tool`` with ``arguments``; the tool's body runs
    ``run_command`` of a function toolset of its own past the tool manager:
    ``how="call_tool"`` through that toolset's ``call_tool``, ``"twice"`` through the
    agent's own toolset's ``call_tool`` with the same call (a second execution)."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.toolsets import FunctionToolset

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    inner = FunctionToolset([run_command])

    def respond(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(BYPASS_TOOL, dict(arguments), tool_call_id="call-0")])
        return ModelResponse(parts=[TextPart("told: " + _told(messages[-1:]))])

    agent = Agent(FunctionModel(respond), capabilities=list(capabilities))

    @agent.tool
    async def bypass_tool(ctx: RunContext, command: str) -> str:
        tools = await inner.get_tools(ctx)
        return str(await inner.call_tool("run_command", {"command": command}, ctx, tools["run_command"]))

    return agent


def hooks_with(*gates, tools=None, timeout=None):
    """A real ``Hooks`` capability with ``gates`` registered on ``before_tool_execute``."""
    from pydantic_ai.capabilities import Hooks

    hooks = Hooks()
    for gate in gates:
        if tools is None and timeout is None:
            hooks.on.before_tool_execute(gate)
        else:
            hooks.on.before_tool_execute(tools=tools, timeout=timeout)(gate)
    return hooks


def _run_result(agent, mode: str = "sync", **kwargs):
    """(the run's result or None, exception or None)."""
    prompt = kwargs.pop("prompt", "go")
    try:
        if mode == "sync":
            return agent.run_sync(prompt, **kwargs), None
        return asyncio.run(agent.run(prompt, **kwargs)), None
    except Exception as exc:
        return None, exc


def run_agent(agent, mode: str = "sync", **kwargs):
    """(output text or None, exception or None)."""
    prompt = kwargs.pop("prompt", "go")
    try:
        if mode == "sync":
            result = agent.run_sync(prompt, **kwargs)
        else:
            result = asyncio.run(agent.run(prompt, **kwargs))
        return result.output, None
    except Exception as exc:
        return None, exc


# ---------------------------------------------------------------- config and audit


class Rig(AuditRig):
    def __init__(self, path, monkeypatch):
        super().__init__(path, monkeypatch, DEADLINE)
        self.marker = Marker(path / "marker.jsonl")

    def agent(self, *gates, calls=None, **kwargs):
        calls = calls if calls is not None else [{"command": "harmless"}]
        return make_agent(self.marker, calls, [hooks_with(*gates)] if gates else [], **kwargs)

    def ran(self) -> list:
        return self.marker.runs()


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


@pytest.fixture
def unpatched(adapter):
    """Upstream as released for the test, failsecure back afterwards."""
    failsecure.uninstall()
    assert adapter.state == "unpatched"
    yield adapter
    failsecure.install()
    adapter.patch()
    assert adapter.state == "patched"


# ---------------------------------------------------------------- conformance


class _Same:
    """The kit's allow / no opinion: the gate returns the arguments it was given."""


class _Deny:
    def __init__(self, reason):
        self.reason = reason


class _Ask:
    pass


class PydanticAIHarness(Harness):
    framework = "pydantic-ai"
    modes = ("sync", "async")
    async_gates = True
    has_ask = True  # ApprovalRequired

    def __init__(self, base):
        self.base = base
        self.gates: list = []

    def add_gate(self, name, behave, *, is_async=False):
        if is_async:

            async def gate(ctx, *, call, tool_def, args):
                return self.translate(await behave(self.seen(call, args)), args)

        else:

            def gate(ctx, *, call, tool_def, args):
                return self.translate(behave(self.seen(call, args)), args)

        gate.__name__ = gate.__qualname__ = f"gate_{name}"
        gate.__module__ = "conformance"
        self.gates.append(gate)
        return f"pydantic-ai:conformance.gate_{name}"

    @staticmethod
    def translate(answer, args):
        """A kit answer -> what a before-tool hook does: return the arguments, raise."""
        from pydantic_ai.exceptions import ApprovalRequired, ToolFailed

        if isinstance(answer, _Same):
            return args
        if isinstance(answer, _Deny):
            raise ToolFailed(answer.reason)
        if isinstance(answer, _Ask):
            raise ApprovalRequired()
        return answer

    @staticmethod
    def seen(call, args):
        return Seen(tool=call.tool_name, arguments=dict(args) if isinstance(args, dict) else {}, native=args)

    def reset(self):
        self.gates = []

    def allow(self, seen):
        return _Same()

    def abstain(self, seen):
        return _Same()

    def deny(self, seen):
        return _Deny("denied by the policy gate")

    def ask(self, seen):
        return _Ask()

    def junk(self):
        return [
            ("return value None", None),
            ("return value 'DENY'", "DENY"),
            ("return value False", False),
            ("return value list", ["command"]),
            ("dict with a non-string key", {1: "harmless"}),
        ]

    def rewrite(self, seen, arguments):
        return dict(arguments)

    def run(self, arguments, mode):
        marker = Marker(self.base / f"run-{os.urandom(4).hex()}")
        agent = self.agent(marker, dict(arguments))
        output, exc = run_agent(agent, mode)
        told = output if exc is None else f"{type(exc).__name__}: {exc}"
        runs = marker.runs()
        return Ran(ran=bool(runs), arguments={"command": runs[-1]} if runs else None, told=str(told))

    def agent(self, marker, arguments):
        return make_agent(marker, [arguments], [hooks_with(*self.gates)] if self.gates else [])

    def bypass(self, arguments, mode):
        """The model calls ``bypass_tool``, whose body runs ``run_command`` of another
        function toolset through that toolset's ``call_tool`` (past the tool manager)."""
        marker = Marker(self.base / f"run-{os.urandom(4).hex()}")
        output, exc = run_agent(bypass_agent(marker, dict(arguments), [hooks_with(*self.gates)] if self.gates else []), mode)
        told = output if exc is None else f"{type(exc).__name__}: {exc}"
        runs = marker.runs()
        return Ran(ran=bool(runs), arguments={"command": runs[-1]} if runs else None, told=str(told))

    def install(self):
        failsecure.install()
        import pydantic_ai.capabilities.hooks  # noqa: F401

        activation.get("pydantic-ai").patch()

    def uninstall(self):
        failsecure.uninstall()


@pytest.fixture
def failsecure_harness(tmp_path, adapter):
    return PydanticAIHarness(tmp_path)


def _marked_toolset(marker):
    from pydantic_ai.toolsets import FunctionToolset

    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    return FunctionToolset([run_command])


class CapabilityHarness(PydanticAIHarness):
    """Every gate an ``AbstractCapability`` subclass of its own with a ``before_tool_execute``
    method (inventory rows 2-3); the capabilities run in registration order. The method is
    a coroutine (pydantic-ai awaits it): a sync gate runs in a thread, as a capability
    author would run blocking code."""

    kind = "capability"

    def add_gate(self, name, behave, *, is_async=False):
        from pydantic_ai.capabilities import AbstractCapability

        harness = self

        class Gate(AbstractCapability):
            async def before_tool_execute(self, ctx, *, call, tool_def, args):
                seen = harness.seen(call, args)
                answer = await behave(seen) if is_async else await asyncio.to_thread(behave, seen)
                return harness.translate(answer, args)

        Gate.__name__ = Gate.__qualname__ = f"Gate_{name}"
        Gate.__module__ = "conformance"
        self.gates.append(Gate())
        return f"pydantic-ai:conformance.Gate_{name}.before_tool_execute"

    def agent(self, marker, arguments):
        return make_agent(marker, [arguments], list(self.gates))


class ApprovalPredicateHarness(PydanticAIHarness):
    """The ``ApprovalRequiredToolset(approval_required_func=...)`` predicate (inventory
    row 5), the one gate of the toolset that holds the tool. Its answers: ``False`` runs
    the tool (the kit's allow and "no opinion": approval not needed); ``True`` asks for
    approval (its only way to stop a call: the kit's deny and ask; the run ends with the
    call in ``DeferredToolRequests``). Falsy junk is junk (upstream reads it as "run
    it"). No rewrite, one predicate per toolset."""

    kind = "approval_required"

    def __init__(self, base):
        super().__init__(base)
        self.predicate = None

    def add_gate(self, name, behave, *, is_async=False):
        if self.predicate is not None:
            raise NotSupported("one approval predicate per toolset")

        def seen(tool_def, tool_args):
            return Seen(tool=tool_def.name, arguments=dict(tool_args) if isinstance(tool_args, dict) else {}, native=tool_args)

        if is_async:

            async def predicate(ctx, tool_def, tool_args):
                return await behave(seen(tool_def, tool_args))

        else:

            def predicate(ctx, tool_def, tool_args):
                return behave(seen(tool_def, tool_args))

        predicate.__name__ = predicate.__qualname__ = f"needs_approval_{name}"
        predicate.__module__ = "conformance"
        self.predicate = predicate
        return f"pydantic-ai:conformance.needs_approval_{name}"

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
        raise NotSupported("an approval predicate cannot rewrite")

    def agent(self, marker, arguments):
        from pydantic_ai import Agent, DeferredToolRequests
        from pydantic_ai.toolsets.approval_required import ApprovalRequiredToolset

        toolset = _marked_toolset(marker)
        if self.predicate is not None:
            toolset = ApprovalRequiredToolset(toolset, approval_required_func=self.predicate)
        return Agent(make_model([arguments]), toolsets=[toolset], output_type=[str, DeferredToolRequests])


class WrapperToolsetHarness(PydanticAIHarness):
    """The gates are ``Hooks`` hooks as in ``PydanticAIHarness``; a rewrite is made where a
    toolset wrapper makes it (inventory row 6): a ``WrapperToolset`` subclass whose
    ``call_tool`` hands the wrapped toolset other arguments, after the hooks judged the
    call."""

    kind = "wrapper_toolset"

    def __init__(self, base):
        super().__init__(base)
        self.pending = None

    def reset(self):
        super().reset()
        self.pending = None

    def rewrite(self, seen, arguments):
        self.pending = dict(arguments)
        return _Same()

    def agent(self, marker, arguments):
        from pydantic_ai import Agent
        from pydantic_ai.toolsets import WrapperToolset

        harness = self

        class Rewriting(WrapperToolset):
            async def call_tool(self, name, tool_args, ctx, tool):
                new = dict(harness.pending) if harness.pending is not None else tool_args
                return await super().call_tool(name, new, ctx, tool)

        capabilities = [hooks_with(*self.gates)] if self.gates else []
        return Agent(make_model([arguments]), toolsets=[Rewriting(_marked_toolset(marker))], capabilities=capabilities)


class WrapToolExecuteHarness(WrapperToolsetHarness):
    """The gates are ``Hooks`` hooks; a rewrite is made by a ``Hooks().on.tool_execute``
    wrap hook (``wrap_tool_execute``, inventory row 4) that hands its handler other
    arguments: 2.42.0 calls it after the before-tool hooks, 2.68.0 around them."""

    kind = "wrap_tool_execute"

    def add_gate(self, name, behave, *, is_async=False):
        import inspect

        from pydantic_ai.tool_manager import ToolManager

        # 2.68.0: the wrap is given a handler (``lifecycle``) that runs the before-tool gates,
        # then the tool; 2.42.0 runs the gates first, then the wrap around the tool alone
        around = "def lifecycle" in inspect.getsource(ToolManager._run_execute_hooks)
        if name == "rewriter" and around:
            # the kit's rewriting gate asks for a rewrite after the gates judged the call; this
            # release calls the wrap around the gates, so what it hands on is what they judge
            # (no rewrite after them to make; surfaces test_a_wrap_tool_execute_rewrite_is_judged)
            raise NotSupported("this release calls wrap_tool_execute around the before-tool gates")
        return super().add_gate(name, behave, is_async=is_async)

    def agent(self, marker, arguments):
        harness = self
        hooks = hooks_with(*self.gates)

        async def rewriting(ctx, *, call, tool_def, args, handler):
            new = dict(harness.pending) if harness.pending is not None else args
            return await handler(new)

        hooks.on.tool_execute(rewriting)
        return make_agent(marker, [arguments], [hooks])


def _approval_tool_agent(marker, arguments, capabilities):
    """The model calls ``run_command`` with ``arguments``; the tool requires approval
    (``requires_approval=True``: the call is deferred before any gate runs)."""
    from pydantic_ai import Agent, DeferredToolRequests

    agent = Agent(make_model([arguments]), capabilities=list(capabilities), output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    return agent


class _JunkApproval:
    """An approval handler's answer whose approval of the call is ``value`` (not a bool,
    ``ToolApproved`` or ``ToolDenied``)."""

    def __init__(self, value):
        self.value = value


class ApprovalHandlerHarness(PydanticAIHarness):
    """The gate is an approval handler: a ``Hooks().on.deferred_tool_calls`` handler
    (``handle_deferred_tool_calls``, inventory row 8), asked about a call of a tool with
    ``requires_approval=True``. Its answers: approve the call (the kit's allow and "no
    opinion": a handler that leaves the call to the caller is tested on its own),
    ``ToolDenied`` (deny), anything else is junk (``DeferredToolResults`` whose approval is
    no bool / ``ToolApproved`` / ``ToolDenied``, or no ``DeferredToolResults`` at all).
    Handlers are a chain (the first that answers a call decides it, as upstream): one
    handler per case. No ask, no rewrite (a handler's ``override_args``: the
    ``override_args`` kind and the surfaces tests)."""

    kind = "approval_handler"
    has_ask = False
    interactive = True  # it may wait for a person: no default deadline, the kit gives it its own

    def __init__(self, base):
        super().__init__(base)
        self.handler = None

    def add_gate(self, name, behave, *, is_async=False):
        if self.handler is not None:
            raise NotSupported("approval handlers are a chain: one handler per case")
        harness = self

        if is_async:

            async def handler(ctx, *, requests):
                return harness.answer(await behave(harness.seen_requests(requests)), requests)

        else:

            def handler(ctx, *, requests):
                return harness.answer(behave(harness.seen_requests(requests)), requests)

        handler.__name__ = handler.__qualname__ = f"approver_{name}"
        handler.__module__ = "conformance"
        self.handler = handler
        return f"pydantic-ai:conformance.approver_{name}"

    @staticmethod
    def seen_requests(requests):
        calls = list(requests.approvals)
        call = calls[0] if calls else None
        args = call.args_as_dict() if call is not None else {}
        return Seen(tool=call.tool_name if call is not None else None, arguments=dict(args), native=requests)

    @staticmethod
    def answer(native, requests):
        from pydantic_ai import DeferredToolResults
        from pydantic_ai.tools import ToolDenied

        ids = [c.tool_call_id for c in requests.approvals]
        if isinstance(native, _Same):
            return DeferredToolResults(approvals={i: True for i in ids})
        if isinstance(native, _Deny):
            return DeferredToolResults(approvals={i: ToolDenied(native.reason) for i in ids})
        if isinstance(native, _JunkApproval):
            return DeferredToolResults(approvals={i: native.value for i in ids})
        return native

    def reset(self):
        super().reset()
        self.handler = None

    def junk(self):
        return [
            ("an approval 'yes'", _JunkApproval("yes")),
            ("an approval None", _JunkApproval(None)),
            ("an approval 1", _JunkApproval(1)),
            ("True", True),
            ("a dict", {"approvals": "all"}),
        ]

    def rewrite(self, seen, arguments):
        raise NotSupported("one approval handler per case")

    def run(self, arguments, mode):
        from pydantic_ai import DeferredToolRequests
        from pydantic_ai.capabilities import Hooks

        marker = Marker(self.base / f"run-{os.urandom(4).hex()}")
        hooks = Hooks()
        if self.handler is not None:
            hooks.on.deferred_tool_calls(self.handler)
        output, exc = run_agent(_approval_tool_agent(marker, dict(arguments), [hooks]), mode)
        told = output if exc is None else f"{type(exc).__name__}: {exc}"
        runs = marker.runs()
        asked = isinstance(output, DeferredToolRequests)
        return Ran(ran=bool(runs), arguments={"command": runs[-1]} if runs else None, told=str(told), asked=asked)


class OverrideArgsHarness(PydanticAIHarness):
    """The gates are ``Hooks`` hooks (as the main harness); the arguments are a person's:
    the model calls a tool that requires approval with arguments of its own, the run ends
    in ``DeferredToolRequests``, and the run is resumed with
    ``ToolApproved(override_args=<the case's arguments>)`` (inventory row 10). The gates
    judge the override before the tool runs; an ask is met by the approval."""

    kind = "override_args"
    MODEL_ARGS = {"command": "what the model asked"}

    def run(self, arguments, mode):
        from pydantic_ai import DeferredToolRequests, DeferredToolResults
        from pydantic_ai.tools import ToolApproved

        marker = Marker(self.base / f"run-{os.urandom(4).hex()}")
        agent = _approval_tool_agent(marker, dict(self.MODEL_ARGS), [hooks_with(*self.gates)] if self.gates else [])
        first, exc = _run_result(agent, mode)
        if exc is not None or not isinstance(first.output, DeferredToolRequests):
            told = f"{type(exc).__name__}: {exc}" if exc is not None else str(first.output)
            return Ran(ran=bool(marker.runs()), told=f"the first run did not ask for approval: {told}")
        history = first.all_messages()
        first = first.output
        results = DeferredToolResults(approvals={c.tool_call_id: ToolApproved(override_args=dict(arguments)) for c in first.approvals})
        output, exc = run_agent(agent, mode, prompt=None, message_history=history, deferred_tool_results=results)
        told = output if exc is None else f"{type(exc).__name__}: {exc}"
        runs = marker.runs()
        return Ran(ran=bool(runs), arguments={"command": runs[-1]} if runs else None, told=str(told))


@pytest.fixture
def failsecure_harness_wrap_tool_execute(tmp_path, adapter):
    return WrapToolExecuteHarness(tmp_path)


@pytest.fixture
def failsecure_harness_approval_handler(tmp_path, adapter):
    return ApprovalHandlerHarness(tmp_path)


@pytest.fixture
def failsecure_harness_override_args(tmp_path, adapter):
    return OverrideArgsHarness(tmp_path)


@pytest.fixture
def failsecure_harness_capability(tmp_path, adapter):
    return CapabilityHarness(tmp_path)


@pytest.fixture
def failsecure_harness_approval_required(tmp_path, adapter):
    return ApprovalPredicateHarness(tmp_path)


@pytest.fixture
def failsecure_harness_wrapper_toolset(tmp_path, adapter):
    return WrapperToolsetHarness(tmp_path)


__all__ = ["NotSupported"]


def mcp_server(marker, other="delete_all"):
    """An in-process MCP server (mcp 2's ``MCPServer``, mcp 1's ``FastMCP``: no network)
    whose ``run_command`` tool records what it ran to ``marker``."""
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2
    except ImportError:
        from mcp.server.fastmcp import FastMCP as Server  # mcp 1

    server = Server("failsecure-conformance")

    @server.tool()
    def run_command(command: str) -> str:
        marker.record(command)
        return f"ran {command}"

    return server


class _HandOn:
    """A ``process_tool_call`` answer: hand ``call_tool_func`` this name and these arguments."""

    def __init__(self, name, args):
        self.name, self.args = name, args
