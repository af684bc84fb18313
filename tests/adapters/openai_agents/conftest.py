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
    adapter._failure_behavior = None  # the deprecated attribute unset: the config decides
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


    def bypass(self, arguments, mode):
        """A wrapper function tool the model calls, whose body invokes the gated tool's
        ``on_invoke_tool`` itself: past the guardrail path, inside the run."""
        self.count += 1
        tool = oa_rig.Tool(self.work / f"marker-{self.count}.jsonl")
        inner = tool.build(self.gates)
        model = oa_rig.make_model(arguments)
        caught: list = []  # what the wrapper (the caller) was told: the Ungoverned text
        agent = oa_rig.agent_with(oa_rig.wrapper_tool(inner, caught=caught), model)
        try:
            oa_rig.run(agent, mode)
            told = model.told.get(oa_rig.CALL_ID) or ""
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            told = type(exc).__name__
        runs = tool.runs()
        return Ran(ran=bool(runs), arguments=runs[-1] if runs else None, told=" ".join([str(told), *caught]))


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


# ---------------------------------------------------------------- the other inventory items' kinds


def _approve_all_and_resume(agent, result, mode, **config_kwargs):
    """A human approves every pending approval and the run is resumed (the SDK's own
    ``to_state`` / ``approve`` / ``Runner.run(agent, state)``)."""
    state = result.to_state()
    for item in result.interruptions:
        state.approve(item)
    return oa_rig.run(agent, mode, state=state, **config_kwargs)


class PreApprovalHarness(OpenAIAgentsHarness):
    """Row 1/4 with ``ToolExecutionConfig(pre_approval_tool_input_guardrails=True)``: the
    tool needs approval (``needs_approval=True``), its input guardrails run before the
    approval interruption; a human approves every interruption and the run resumes (the
    guardrails run again before the tool)."""

    kind = "guardrails before approval"

    def run(self, arguments, mode):
        from agents.run_config import ToolExecutionConfig

        self.count += 1
        tool = oa_rig.Tool(self.work / f"marker-{self.count}.jsonl")
        model = oa_rig.make_model(arguments)
        agent = oa_rig.agent_with(tool.build(self.gates, needs_approval=True), model)
        config = {"tool_execution": ToolExecutionConfig(pre_approval_tool_input_guardrails=True)}
        from agents.exceptions import ModelBehaviorError

        told = []
        try:
            result = oa_rig.run(agent, mode, **config)
            if result.interruptions:
                result = _approve_all_and_resume(agent, result, mode, **config)
            told.append(model.told.get(oa_rig.CALL_ID) or "")
        except KeyboardInterrupt:
            raise
        except ModelBehaviorError:
            # the SDK's own refusal of a call a pre-approval guardrail rewrote (with
            # failsecure or without): the rewrite's run cannot be observed
            raise NotSupported("the SDK refuses a call rewritten before its approval") from None
        except BaseException as exc:  # a tripwire, or upstream's crash on a raising guardrail
            told.append(type(exc).__name__)
        runs = tool.runs()
        return Ran(ran=bool(runs), arguments=runs[-1] if runs else None, told=" ".join(str(t) for t in told))


@pytest.fixture
def failsecure_harness_pre_approval(tmp_path):
    return PreApprovalHarness(tmp_path)


DRAFT = {"command": "draft"}


class RewrittenAfterApprovalHarness(NeedsApprovalHarness):
    """Row 5: the model asks for ``draft``; the tool's ``needs_approval`` judges it (no
    approval needed), then a guardrail of the application rewrites the call into the
    case's arguments. The gate is the ``needs_approval`` callable as it judges the
    rewritten arguments (failsecure asks it again); the draft is always let through."""

    kind = "needs_approval of rewritten arguments"

    def add_gate(self, name, behave, *, is_async=False):
        if is_async:
            async def judged_final(seen):
                if seen.arguments == DRAFT:
                    return False  # the model's draft needs no approval
                return await behave(seen)
        else:
            def judged_final(seen):
                if seen.arguments == DRAFT:
                    return False  # the model's draft needs no approval
                return behave(seen)

        return super().add_gate(name, judged_final, is_async=is_async)

    def ask(self, seen):
        return True

    def run(self, arguments, mode):
        from agents import ToolGuardrailFunctionOutput

        final = json.dumps(arguments)

        def rewrite(data):
            data.context.tool_call.arguments = final
            return ToolGuardrailFunctionOutput.allow()

        oa_rig.named(rewrite, "kit_rewrite_after_approval")
        self.count += 1
        tool = oa_rig.Tool(self.work / f"marker-{self.count}.jsonl")
        model = oa_rig.make_model(DRAFT)
        agent = oa_rig.agent_with(
            tool.build([oa_rig.guardrail(rewrite)], needs_approval=self.needs[0] if self.needs else False), model
        )
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
        if not runs and not asked and not str(told).startswith("failsecure:") and _refuses_changed_invocation():
            # 0.21+: the SDK itself refuses to invoke a call whose arguments changed after
            # a callable needs_approval evaluated them (its tool error, with failsecure or
            # without): a run cannot be observed
            raise NotSupported("the SDK refuses a call rewritten after needs_approval evaluated it")
        return Ran(ran=bool(runs), arguments=runs[-1] if runs else None, told=str(told), asked=asked)


def _refuses_changed_invocation() -> bool:
    try:
        from agents._function_tool_arguments import FunctionToolApproval
    except ImportError:
        return False
    return callable(getattr(FunctionToolApproval, "check_invocation", None))


@pytest.fixture
def failsecure_harness_needs_approval_rewritten(tmp_path):
    return RewrittenAfterApprovalHarness(tmp_path)


class _OneCallbackHarness(Harness):
    """A gate kind that is one callback of one tool (a safety check, an approval
    callback): one per tool, no rewrite."""

    framework = "openai-agents"
    modes = ("sync", "async")
    async_gates = True
    has_ask = False
    prefix = "kit_cb"

    def __init__(self, work: Path):
        self.work = work
        self.callbacks: list = []
        self.count = 0

    def seen_of(self, native):
        raise NotImplementedError

    def add_gate(self, name, behave, *, is_async=False):
        if self.callbacks:
            raise NotSupported("a tool has one such callback")
        harness = self
        if is_async:
            async def callback(*args):
                return await behave(harness.seen_of(args[-1]))
        else:
            def callback(*args):
                return behave(harness.seen_of(args[-1]))

        oa_rig.named(callback, f"{self.prefix}_{name}")
        self.callbacks.append(callback)
        return activation.get("openai-agents").callable_id(callback)

    def reset(self):
        self.callbacks = []

    def rewrite(self, seen, arguments):
        raise NotSupported("the callback cannot rewrite the call")

    def _plugin_policy_case(self, arguments):
        """The kit's plugin policy reads a ``command`` argument: a call whose arguments
        have none cannot show it the forbidden command (the row is ``n/a``)."""
        from failsecure import plugins
        from failsecure.testing import FORBIDDEN

        if FORBIDDEN in json.dumps(arguments) and plugins.gates():
            raise NotSupported("this call's arguments have no 'command' for the kit's plugin policy")


def _computer(marker):
    from agents import AsyncComputer

    class MarkerComputer(AsyncComputer):
        @property
        def environment(self):
            return "linux"

        @property
        def dimensions(self):
            return (100, 100)

        async def screenshot(self):
            return "iVBORw0KGgo="

        async def type(self, text):
            with open(marker, "a") as fh:
                fh.write(json.dumps({"command": text}) + "\n")

        async def click(self, x, y, button): ...
        async def double_click(self, x, y): ...
        async def scroll(self, x, y, scroll_x, scroll_y): ...
        async def wait(self): ...
        async def move(self, x, y): ...
        async def keypress(self, keys): ...
        async def drag(self, path): ...

    return MarkerComputer()


class SafetyCheckHarness(_OneCallbackHarness):
    """Row 6: ``ComputerTool.on_safety_check``. The model asks the computer to type the
    case's command (a ``type`` action with one pending safety check); the computer writes
    what it typed to a marker file. ``True`` acknowledges (the action runs), ``False`` does
    not (the SDK's own ``UserError`` ends the run). What the run is told is the
    exception's text (failsecure's reason when a check failed)."""

    kind = "ComputerTool on_safety_check"
    prefix = "kit_safety"

    def seen_of(self, data):
        action = getattr(data.tool_call, "action", None)
        return Seen(tool="computer", arguments={"command": getattr(action, "text", None)}, native=data)

    def allow(self, seen):
        return True

    def abstain(self, seen):
        return True  # a safety check has no "no opinion": not objecting acknowledges

    def deny(self, seen):
        return False

    def junk(self):
        return [("None", None), ("string 'yes'", "yes"), ("1", 1), ("list", [True]), ("dict", {"ok": True})]

    def run(self, arguments, mode):
        from agents import Agent, ComputerTool
        from openai.types.responses import ResponseComputerToolCall
        from openai.types.responses.response_computer_tool_call import PendingSafetyCheck

        self._plugin_policy_case(arguments)
        self.count += 1
        marker = self.work / f"computer-{self.count}.jsonl"
        command = arguments.get("command", "")

        def first():
            return [ResponseComputerToolCall(
                id="cu_1", call_id="call_kit_c1", type="computer_call", status="completed",
                action={"type": "type", "text": command},
                pending_safety_checks=[PendingSafetyCheck(id="sc_1", code="malicious_instructions", message="check")],
            )]

        tool = ComputerTool(computer=_computer(marker), on_safety_check=self.callbacks[0] if self.callbacks else None)
        agent = Agent(name="computer", instructions="type", tools=[tool], model=oa_rig.item_model(first))
        told = ""
        try:
            oa_rig.run(agent, mode, max_turns=3)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the SDK's own no (a UserError), or upstream's crash
            from failsecure.report import type_name

            try:
                told = f"{type_name(exc)}: {exc}"
            except Exception:  # a hostile exception upstream: its type is what is told
                told = type_name(exc)
        runs = Tool(marker).runs()
        return Ran(ran=bool(runs), arguments=runs[-1] if runs else None, told=told)


Tool = oa_rig.Tool


@pytest.fixture
def failsecure_harness_on_safety_check(tmp_path):
    return SafetyCheckHarness(tmp_path)


class OnApprovalHarness(_OneCallbackHarness):
    """Row 7: a custom tool's ``on_approval`` (shell and apply-patch tools' go through the
    same ``resolve_approval_status``). The tool needs approval; the callback answers it:
    ``{"approve": True}`` runs the tool, ``{"approve": False, "reason": ...}`` is the SDK's
    rejection (the model is told the reason). The call's input is the case's arguments as
    JSON; the tool writes it to a marker file."""

    kind = "custom tool on_approval"
    prefix = "kit_on_approval"

    def seen_of(self, item):
        raw = item.raw_item
        text = raw.get("input") if isinstance(raw, dict) else getattr(raw, "input", None)
        try:
            arguments = json.loads(text)
        except Exception:
            arguments = {}
        return Seen(tool=item.tool_name, arguments=arguments if isinstance(arguments, dict) else {}, native=item)

    def allow(self, seen):
        return {"approve": True}

    def abstain(self, seen):
        return {"approve": True}  # None would leave the call to a human: not a decision

    def deny(self, seen):
        return {"approve": False, "reason": "kit: denied"}

    def junk(self):
        return [("None", None), ("approve 'yes'", {"approve": "yes"}), ("approve 1", {"approve": 1}),
                ("string", "approve"), ("reason not a str", {"approve": False, "reason": 5})]

    def run(self, arguments, mode):
        from agents import Agent
        from agents.tool import CustomTool
        from openai.types.responses import ResponseCustomToolCall

        self.count += 1
        marker = self.work / f"custom-{self.count}.jsonl"
        text = json.dumps(arguments)

        async def invoke(ctx, tool_input):
            with open(marker, "a") as fh:
                fh.write(tool_input + "\n")
            return "ran"

        def first():
            return [ResponseCustomToolCall(type="custom_tool_call", call_id="call_kit_u1", name="run_custom", input=text, id="ct_1")]

        tool = CustomTool(name="run_custom", description="run", on_invoke_tool=invoke, needs_approval=True,
                          on_approval=self.callbacks[0] if self.callbacks else None)
        model = oa_rig.item_model(first)
        agent = Agent(name="custom", instructions="run", tools=[tool], model=model)
        asked = False
        try:
            result = oa_rig.run(agent, mode, max_turns=3)
            asked = bool(result.interruptions)
            told = model.told.get("call_kit_u1") or ""
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # upstream's crash on a raising callback
            told = type(exc).__name__
        runs = Tool(marker).runs()
        return Ran(ran=bool(runs), arguments=runs[-1] if runs else None, told=str(told), asked=asked)


@pytest.fixture
def failsecure_harness_on_approval(tmp_path):
    return OnApprovalHarness(tmp_path)


class HostedMCPApprovalHarness(OnApprovalHarness):
    """Row 8: ``HostedMCPTool.on_approval_request``. The model's hosted MCP tool asks for
    approval of a call with the case's arguments (an ``mcp_approval_request`` item); the
    callback's answer goes back to the model as an ``mcp_approval_response``. The tool runs
    on the server when that answer approves: ``Ran.ran``. A no's reason is what the model
    is told."""

    kind = "HostedMCPTool on_approval_request"
    prefix = "kit_mcp_request"

    def seen_of(self, request):
        data = request.data
        try:
            arguments = json.loads(data.arguments)
        except Exception:
            arguments = {}
        return Seen(tool=data.name, arguments=arguments if isinstance(arguments, dict) else {}, native=request)

    def run(self, arguments, mode):
        from agents import Agent, HostedMCPTool
        from openai.types.responses.response_output_item import McpApprovalRequest

        self.count += 1
        text = json.dumps(arguments)

        def first():
            return [McpApprovalRequest(id="mcpr_kit_1", type="mcp_approval_request", name="run_command",
                                       arguments=text, server_label="kit")]

        tool = HostedMCPTool(
            tool_config={"type": "mcp", "server_label": "kit", "server_url": "http://127.0.0.1:9", "require_approval": "always"},
            on_approval_request=self.callbacks[0] if self.callbacks else None,
        )
        model = oa_rig.item_model(first)
        agent = Agent(name="hosted", instructions="run", tools=[tool], model=model)
        try:
            oa_rig.run(agent, mode, max_turns=3)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # upstream's crash on a raising callback
            return Ran(ran=False, told=type(exc).__name__)
        approved = [a for a in model.answers if oa_rig._item_get(a, "approve") is True]
        denied = [a for a in model.answers if oa_rig._item_get(a, "approve") is False]
        told = " ".join(str(oa_rig._item_get(a, "reason") or "") for a in denied)
        return Ran(ran=bool(approved), arguments=arguments if approved else None, told=told)


@pytest.fixture
def failsecure_harness_on_approval_request(tmp_path):
    return HostedMCPApprovalHarness(tmp_path)


# ---------------------------------------------------------------- row 10: the realtime session


def realtime_tool_call(marker: Path, guardrails=(), arguments=None, needs_approval=False, run_config=None):
    """One function tool call event through a real ``RealtimeSession``
    (``_handle_tool_call``, the handler of the model's tool call event; the realtime model
    is a stand-in transport that records what the session sends back). Returns (the
    output the model was told, or None; the exception the handler raised, or None; the
    call ids left to a human's approval)."""
    import asyncio

    from agents import function_tool
    from agents.realtime import RealtimeAgent
    from agents.realtime.model_events import RealtimeModelToolCallEvent
    from agents.realtime.session import RealtimeSession

    def run_command(command: str) -> str:
        """Run a command (test tool: writes a marker file)."""
        with open(marker, "a") as fh:
            fh.write(json.dumps({"command": command}) + "\n")
        return f"ran {command}"

    tool = function_tool(run_command, needs_approval=needs_approval)
    tool.tool_input_guardrails = list(guardrails)
    model = oa_rig.Transport()
    session = RealtimeSession(model, RealtimeAgent(name="rt", tools=[tool]), None, run_config=run_config)
    event = RealtimeModelToolCallEvent(name=oa_rig.TOOL, call_id="call_kit_rt1", arguments=json.dumps(arguments or {}))

    async def go():
        try:
            await session._handle_tool_call(event)
        except Exception as exc:  # noqa: BLE001 - upstream ends the tool call with a raising gate's exception
            return exc
        return None

    # on a thread of its own: a SystemExit out of upstream's handler leaves asyncio.run's
    # SIGINT handler installed in the thread that ran it (it breaks the next run there)
    box: dict = {}

    def thread():
        try:
            box["raised"] = asyncio.run(go())
        except BaseException as exc:  # noqa: BLE001 - upstream lets a SystemExit out: passed on
            box["escaped"] = exc

    worker = threading.Thread(target=thread, daemon=True)
    worker.start()
    worker.join()
    if "escaped" in box:
        raise box["escaped"]
    raised = box.get("raised")
    outputs = [getattr(e, "output", None) for e in model.sent if type(e).__name__ == "RealtimeModelSendToolOutput"]
    return (outputs[-1] if outputs else None), raised, list(session._pending_tool_calls)


def _realtime_ran(marker: Path, told, raised, asked) -> Ran:
    runs = Tool(marker).runs()
    text = str(told or "") if raised is None else type(raised).__name__
    return Ran(ran=bool(runs), arguments=runs[-1] if runs else None, told=text, asked=bool(asked))


class RealtimeGuardrailHarness(OpenAIAgentsHarness):
    """Row 10: tool input guardrails of a function tool in a realtime session
    (``RealtimeSession._run_tool_input_guardrails``, its own loop). A call is the model's
    tool call event handled by a real ``RealtimeSession``; what the model is told is the
    tool output the session sends back. The session is async only."""

    kind = "realtime guardrails"
    modes = ("async",)

    def add_gate(self, name, behave, *, is_async=False):
        # a row the harness cannot play (NotSupported raised inside a gate) is n/a, not
        # the gate's raise failsecure would deny
        harness = self
        self.__dict__.setdefault("unsupported", [])

        def judged(seen):
            try:
                return behave(seen)
            except NotSupported as exc:
                harness.unsupported.append(exc)
                raise

        if is_async:
            async def judged_async(seen):
                return await judged(seen)

            return super().add_gate(name, judged_async, is_async=True)
        return super().add_gate(name, judged, is_async=False)

    def reset(self):
        super().reset()
        self.unsupported = []

    def run(self, arguments, mode):
        self.count += 1
        marker = self.work / f"realtime-{self.count}.jsonl"
        result = realtime_tool_call(marker, self.gates, arguments)
        if self.unsupported:
            raise self.unsupported[0]
        return _realtime_ran(marker, *result)

    def rewrite(self, seen, arguments):
        # the realtime session builds the guardrails' ToolContext without the tool call and
        # invokes the tool with the event's own arguments: a guardrail has no way to
        # rewrite them (upstream or with failsecure)
        raise NotSupported("a realtime guardrail cannot rewrite the call")

    def bypass(self, arguments, mode):
        raise NotSupported("the realtime session's ungoverned path is the Runner kind's")


@pytest.fixture
def failsecure_harness_realtime_guardrails(tmp_path):
    return RealtimeGuardrailHarness(tmp_path)


class RealtimeNeedsApprovalHarness(NeedsApprovalHarness):
    """Row 10: the realtime ``needs_approval`` callable of a function tool
    (``RealtimeSession._function_needs_approval``). ``True`` leaves the call to a human
    (pending in the session: ``Ran.asked``), ``False`` runs it; a failure denies the call
    (the tool output the model is told, nobody asked)."""

    kind = "realtime needs_approval"
    modes = ("async",)

    def run(self, arguments, mode):
        self.count += 1
        marker = self.work / f"realtime-approval-{self.count}.jsonl"
        result = realtime_tool_call(marker, (), arguments, needs_approval=self.needs[0] if self.needs else False)
        if self.unsupported:
            raise self.unsupported[0]
        return _realtime_ran(marker, *result)


@pytest.fixture
def failsecure_harness_realtime_needs_approval(tmp_path):
    return RealtimeNeedsApprovalHarness(tmp_path)
