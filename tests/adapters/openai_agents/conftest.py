"""Fixtures for the openai-agents adapter tests: the real pinned SDK, a scripted model, a
real tool with a marker file; every test gets a config with a short deadline and an audit
file. Tracing is off and the API key a dummy (nothing leaves the process)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
from pathlib import Path

import pytest

from failsecure.testing import AuditRig

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("failsecure_oa_rig", _HERE / "oa_rig.py")
oa_rig = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = oa_rig
_spec.loader.exec_module(oa_rig)  # sets OPENAI_AGENTS_DISABLE_TRACING and a dummy key

import failsecure  # noqa: E402

failsecure.install()
import agents  # noqa: E402,F401  (imports the trigger module: patched on import)
from agents import set_tracing_disabled  # noqa: E402

set_tracing_disabled(True)

from failsecure import activation, policy  # noqa: E402
from failsecure.testing import Harness, NotSupported, Ran, Seen  # noqa: E402

DEADLINE = 0.3


@pytest.fixture(scope="session")
def adapter():
    a = activation.get("openai-agents")
    assert a.state == "patched", a.refused_reason
    return a


@pytest.fixture(scope="session")
def rigmod():
    return oa_rig


class Rig(AuditRig):
    def __init__(self, path: Path, monkeypatch):
        super().__init__(path, monkeypatch, DEADLINE)
        self.tool = oa_rig.Tool(path / "marker.jsonl")
        self.release = threading.Event()  # hanging gates wait on it; set at teardown

    # one agent run through the real Runner
    def run(self, guardrails=(), arguments=None, mode="sync", needs_approval=False, calls=1, **config_kwargs):
        self.model = oa_rig.make_model(arguments or {"command": "harmless"}, calls=calls)
        self.agent = oa_rig.agent_with(self.tool.build(list(guardrails), needs_approval=needs_approval), self.model)
        self.config_kwargs = config_kwargs
        return oa_rig.run(self.agent, mode, **config_kwargs)

    def resume(self, state, mode="sync"):
        return oa_rig.run(self.agent, mode, state=state, **getattr(self, "config_kwargs", {}))

    def told(self, call_id: str = oa_rig.CALL_ID):
        return self.model.told.get(call_id)


@pytest.fixture
def rig(tmp_path, monkeypatch, adapter):
    monkeypatch.chdir(tmp_path)
    r = Rig(tmp_path, monkeypatch)
    r.config()
    yield r
    r.release.set()
    adapter.failure_behavior = "reject_content"
    monkeypatch.delenv("FAILSECURE_CONFIG", raising=False)
    policy.reload()


# ---------------------------------------------------------------- the conformance kit


class OpenAIAgentsHarness(Harness):
    """Gates are tool input guardrails of the one tool; a call is one real agent run
    (``Runner.run_sync`` / ``Runner.run``) with the scripted model."""

    framework = "openai-agents"
    modes = ("sync", "async")
    async_gates = True
    has_ask = False  # a tool input guardrail has no "ask" answer (needs_approval does: tested apart)

    def __init__(self, work: Path):
        self.work = work
        self.gates: list = []
        self.count = 0

    def add_gate(self, name, behave, *, is_async=False):
        def seen_of(data):
            try:
                arguments = json.loads(data.context.tool_arguments)
            except Exception:
                arguments = {}
            return Seen(tool=data.context.tool_name, arguments=dict(arguments) if isinstance(arguments, dict) else {}, native=data)

        if is_async:
            async def gate(data):
                return await behave(seen_of(data))
        else:
            def gate(data):
                return behave(seen_of(data))

        oa_rig.named(gate, f"kit_{name}")
        self.gates.append(oa_rig.guardrail(gate))
        return activation.get("openai-agents").callable_id(gate)

    def reset(self):
        self.gates = []

    def allow(self, seen):
        from agents import ToolGuardrailFunctionOutput

        return ToolGuardrailFunctionOutput.allow()

    def abstain(self, seen):
        return self.allow(seen)  # a guardrail has no "no opinion" besides allow

    def deny(self, seen):
        from agents import ToolGuardrailFunctionOutput

        return ToolGuardrailFunctionOutput.reject_content("kit: denied")

    def junk(self):
        from agents import ToolGuardrailFunctionOutput

        return [
            ("None", None),
            ("unknown behavior type 'deny'", ToolGuardrailFunctionOutput(output_info=None, behavior={"type": "deny"})),
            ("behavior typo 'alow'", ToolGuardrailFunctionOutput(output_info=None, behavior={"type": "alow"})),
            ("reject without message", ToolGuardrailFunctionOutput(output_info=None, behavior={"type": "reject_content"})),
            ("behavior not a dict", ToolGuardrailFunctionOutput(output_info=None, behavior="allow")),
            ("plain dict", {"type": "allow"}),
            ("True", True),
            ("string", "allow"),
        ]

    def rewrite(self, seen, arguments):
        data = seen.native
        text = json.dumps(arguments)
        data.context.tool_call.arguments = text
        data.context.tool_arguments = text
        return self.allow(seen)

    def run(self, arguments, mode):
        self.count += 1
        tool = oa_rig.Tool(self.work / f"marker-{self.count}.jsonl")
        model = oa_rig.make_model(arguments)
        agent = oa_rig.agent_with(tool.build(self.gates), model)
        try:
            oa_rig.run(agent, mode)
            told = model.told.get(oa_rig.CALL_ID) or ""
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a tripwire, or upstream's crash on a raising guardrail
            told = type(exc).__name__
        runs = tool.runs()
        return Ran(ran=bool(runs), arguments=runs[-1] if runs else None, told=str(told))


@pytest.fixture
def failsecure_harness(tmp_path):
    return OpenAIAgentsHarness(tmp_path)


class NeedsApprovalHarness(OpenAIAgentsHarness):
    """The gate is the tool's ``needs_approval`` callable (one per tool): ``True`` asks a
    human (an approval interruption, left unanswered), ``False`` lets the call run. It
    has no deny and cannot rewrite; a failed one denies (the rejection the model is told,
    no interruption)."""

    kind = "needs_approval"
    has_ask = True

    def __init__(self, work: Path):
        super().__init__(work)
        self.needs: list = []
        self.unsupported: list = []

    def add_gate(self, name, behave, *, is_async=False):
        if self.needs:
            raise NotSupported("a tool has one needs_approval setting")
        harness = self

        def seen_of(params):
            return Seen(tool=oa_rig.TOOL, arguments=dict(params) if isinstance(params, dict) else {}, native=params)

        def judged(answer_of):
            try:
                return answer_of()
            except NotSupported as exc:
                harness.unsupported.append(exc)
                raise

        if is_async:
            async def needs(ctx, params, call_id):
                return await judged(lambda: behave(seen_of(params)))
        else:
            def needs(ctx, params, call_id):
                return judged(lambda: behave(seen_of(params)))

        oa_rig.named(needs, f"kit_needs_{name}")
        self.needs.append(needs)
        return activation.get("openai-agents").callable_id(needs)

    def reset(self):
        super().reset()
        self.needs = []
        self.unsupported = []

    def allow(self, seen):
        return False

    def abstain(self, seen):
        return False

    def ask(self, seen):
        return True

    def deny(self, seen):
        raise NotSupported("needs_approval cannot deny (its strongest answer asks a human)")

    def junk(self):
        return [("None", None), ("string 'yes'", "yes"), ("1", 1), ("0", 0), ("list", []), ("dict", {"approve": False})]

    def rewrite(self, seen, arguments):
        raise NotSupported("needs_approval cannot rewrite")

    def run(self, arguments, mode):
        self.count += 1
        tool = oa_rig.Tool(self.work / f"marker-{self.count}.jsonl")
        model = oa_rig.make_model(arguments)
        agent = oa_rig.agent_with(tool.build([], needs_approval=self.needs[0] if self.needs else False), model)
        asked = False
        try:
            result = oa_rig.run(agent, mode)
            asked = bool(result.interruptions)
            told = model.told.get(oa_rig.CALL_ID) or ""
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # upstream's crash on a raising setting
            told = type(exc).__name__
        if self.unsupported:
            raise self.unsupported[0]
        runs = tool.runs()
        return Ran(ran=bool(runs), arguments=runs[-1] if runs else None, told=str(told), asked=asked)


@pytest.fixture
def failsecure_harness_needs_approval(tmp_path):
    return NeedsApprovalHarness(tmp_path)


# ---------------------------------------------------------------- a plugin gate that asks


class AskingPlugin:
    """A cross-framework gate that asks a human for the command ``sensitive``."""

    @failsecure.hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        if (call.arguments or {}).get("command") == "sensitive":
            return Verdict(action=Action.ASK, reason="ask a human")
        return None


@pytest.fixture
def asking_plugin():
    from failsecure import plugins

    p = AskingPlugin()
    plugins.register(p, name="oa-test-ask")
    yield p
    plugins.unregister(p)


class MCPApprovalHarness(NeedsApprovalHarness):
    """The gate is an MCP server's ``require_approval`` callable, turned into the tool's
    ``needs_approval`` by the SDK's own conversion (``_get_needs_approval_for_tool`` of a
    real ``MCPServerStdio``, never started). The policy is shown the tool, not the
    arguments (the SDK passes it none)."""

    kind = "MCP require_approval"

    def add_gate(self, name, behave, *, is_async=False):
        if self.needs:
            raise NotSupported("a server has one require_approval policy")
        from agents import Agent
        from agents.mcp import MCPServerStdio
        from mcp.types import Tool as MCPTool

        harness = self

        def judged(answer_of):
            try:
                return answer_of()
            except NotSupported as exc:
                harness.unsupported.append(exc)
                raise

        if is_async:
            async def policy(run_context, agent, tool):
                return await judged(lambda: behave(Seen(tool=tool.name, arguments={}, native=tool)))
        else:
            def policy(run_context, agent, tool):
                return judged(lambda: behave(Seen(tool=tool.name, arguments={}, native=tool)))

        oa_rig.named(policy, f"kit_mcp_{name}")
        server = MCPServerStdio(params={"command": "true"}, require_approval=policy, name="kit-server")
        schema = {"type": "object", "properties": {"command": {"type": "string"}}}
        self.needs.append(server._get_needs_approval_for_tool(MCPTool(name=oa_rig.TOOL, inputSchema=schema), Agent(name="owner")))
        return activation.get("openai-agents").callable_id(policy)

    def run(self, arguments, mode):
        from failsecure.testing import FORBIDDEN

        if FORBIDDEN in json.dumps(arguments):
            # the cases that judge the arguments (the kit's policy, the plugin gate's):
            # this policy is never shown them (the plugin row is the needs_approval kind's)
            raise NotSupported("require_approval is not shown the arguments")
        return super().run(arguments, mode)


@pytest.fixture
def failsecure_harness_mcp_require_approval(tmp_path):
    return MCPApprovalHarness(tmp_path)
