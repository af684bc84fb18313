"""Tool callbacks that decide whether a call runs, beyond ``needs_approval``:
``ComputerTool.on_safety_check`` (acknowledges a computer call's pending safety checks),
``HostedMCPTool.on_approval_request`` and the ``on_approval`` of shell / apply-patch /
custom tools (answer an approval without a human). Upstream reads truthy junk as an
acknowledgement, waits for a hang and crashes the run with a raising callback's text.
Under failsecure each is a gate: a raise, a hang or an answer of the wrong shape is the
SDK's own no. A real agent run with a real ``ComputerTool``; every deny asserts the
failure and has an allow twin."""

from __future__ import annotations

import asyncio
import json

import pytest

import failsecure

MODES = ["sync", "async"]
SECRET = "SECRET-safety-4711"


def hook_of(fn):
    return f"openai-agents:{fn.__module__}.{fn.__qualname__}"


def computer_model():
    """Asks for one click with one pending safety check, then answers ``done``."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseComputerToolCall, ResponseOutputMessage, ResponseOutputText
    from openai.types.responses.response_computer_tool_call import PendingSafetyCheck

    class ComputerModel(Model):
        async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, *args, **kwargs):
            items = input if isinstance(input, list) else []
            if any((i.get("type") if isinstance(i, dict) else getattr(i, "type", None)) == "computer_call_output" for i in items):
                message = ResponseOutputMessage(
                    id="msg_c", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
                )
                return ModelResponse(output=[message], usage=Usage(), response_id=None)
            call = ResponseComputerToolCall(
                id="cu_1", call_id="call_c1", type="computer_call", status="completed",
                action={"type": "click", "x": 1, "y": 2, "button": "left"},
                pending_safety_checks=[PendingSafetyCheck(id="sc_1", code="malicious_instructions", message="check")],
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    return ComputerModel()


def make_computer(marker):
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

        async def click(self, x, y, button):
            with open(marker, "a") as fh:
                fh.write(json.dumps({"click": [x, y]}) + "\n")

        async def double_click(self, x, y): ...
        async def scroll(self, x, y, scroll_x, scroll_y): ...
        async def type(self, text): ...
        async def wait(self): ...
        async def move(self, x, y): ...
        async def keypress(self, keys): ...
        async def drag(self, path): ...

    return MarkerComputer()


def run_computer(rig, on_safety_check, mode):
    from agents import Agent, ComputerTool, RunConfig, Runner

    marker = rig.dir / "computer.jsonl"
    tool = ComputerTool(computer=make_computer(marker), on_safety_check=on_safety_check)
    agent = Agent(name="computer", instructions="click", tools=[tool], model=computer_model())
    config = RunConfig(tracing_disabled=True)
    error = None
    try:
        if mode == "sync":
            Runner.run_sync(agent, "go", run_config=config, max_turns=3)
        else:
            asyncio.run(Runner.run(agent, "go", run_config=config, max_turns=3))
    except Exception as exc:  # the SDK's own no (a UserError) ends the run
        error = exc
    return marker.exists(), error


@pytest.mark.parametrize("mode", MODES)
def test_an_acknowledged_safety_check_runs_the_action(rig, mode):
    seen = []

    def on_safety_check(data):
        seen.append(data.safety_check.code)
        return True

    ran, error = run_computer(rig, on_safety_check, mode)
    assert error is None and ran and seen == ["malicious_instructions"]


@pytest.mark.parametrize("mode", MODES)
def test_a_refused_safety_check_stops_the_action_as_upstream(rig, mode):
    async def on_safety_check(data):
        return False

    ran, error = run_computer(rig, on_safety_check, mode)
    assert not ran and "not acknowledged" in str(error)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer", ["yes", 1, [True], {"ok": True}], ids=repr)
def test_truthy_junk_does_not_acknowledge(rig, mode, answer):
    def on_safety_check(data):
        return answer

    ran, error = run_computer(rig, on_safety_check, mode)
    assert not ran  # upstream: truthy junk acknowledges and the action runs
    from agents.exceptions import UserError

    # the SDK's own no (a UserError ending the run), told the reason the audit records
    assert isinstance(error, UserError) and f"'{hook_of(on_safety_check)}'" in str(error) and "(invalid)" in str(error)
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", "invalid", hook_of(on_safety_check))


@pytest.mark.parametrize("mode", MODES)
def test_a_raising_safety_check_denies_without_its_text(rig, mode):
    def on_safety_check(data):
        raise RuntimeError(SECRET)

    ran, error = run_computer(rig, on_safety_check, mode)
    assert not ran and SECRET not in str(error)  # upstream: the run crashes with the text
    assert "(raised)" in str(error)
    event = rig.last()
    assert (event["failure"], event["exception_type"]) == ("raised", "RuntimeError")
    assert SECRET not in rig.audit_path.read_text()


@pytest.mark.parametrize("mode", MODES)
def test_a_hanging_safety_check_denies_at_its_deadline(rig, mode):
    async def on_safety_check(data):
        await asyncio.sleep(3)
        return True

    ran, error = run_computer(rig, on_safety_check, mode)
    assert not ran and rig.last()["failure"] == "timeout"  # upstream: waits, then runs
    assert "(timeout)" in str(error)


def test_truthy_junk_acknowledges_upstream(rig, adapter):
    def on_safety_check(data):
        return "yes"

    failsecure.uninstall()
    try:
        ran, error = run_computer(rig, on_safety_check, "sync")
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    assert ran and error is None


# ---------------------------------------------------------------- on_approval callbacks (the SDK's dispatcher)


def approval_status(on_approval, approved=None):
    """The SDK's own ``resolve_approval_status`` for one shell call, with ``on_approval``."""
    from agents import Agent
    from agents.run_context import RunContextWrapper
    from agents.run_internal import tool_execution

    wrapper = RunContextWrapper(context=None)
    raw = {"type": "shell_call", "call_id": "call_s1", "id": "sh_1", "action": {"commands": ["ls"]}, "status": "completed"}
    return asyncio.run(
        tool_execution.resolve_approval_status(
            tool_name="shell", call_id="call_s1", raw_item=raw, agent=Agent(name="a"),
            context_wrapper=wrapper, on_approval=on_approval,
        )
    )[0]


def test_an_on_approval_answer_passes_through(rig):
    assert approval_status(lambda ctx, item: {"approve": True}) is True
    assert approval_status(lambda ctx, item: {"approve": False, "reason": "no"}) is False


@pytest.mark.parametrize("answer", [{"approve": "yes"}, {"approve": 1}, "approve", None], ids=repr)
def test_an_on_approval_answering_junk_rejects(rig, answer):
    def on_approval(ctx, item):
        return answer

    assert approval_status(on_approval) is False  # upstream: no decision, a human is asked
    event = rig.last()
    assert (event["failure"], event["hook"]) == ("invalid", hook_of(on_approval))


def test_a_raising_on_approval_rejects(rig):
    def on_approval(ctx, item):
        raise RuntimeError(SECRET)

    assert approval_status(on_approval) is False  # upstream: the exception ends the run
    assert rig.last()["failure"] == "raised" and SECRET not in rig.audit_path.read_text()


# ---------------------------------------------------------------- needs_approval of a custom tool (no guardrail path)


def run_custom(rig, needs_approval, mode, on_approval=None):
    """One real run with a custom tool whose call the model makes; returns (what ran,
    the interruptions, what the model was told)."""
    from agents import Agent
    from agents.tool import CustomTool
    from openai.types.responses import ResponseCustomToolCall

    marker = rig.dir / "custom.jsonl"

    async def invoke(ctx, tool_input):
        with open(marker, "a") as fh:
            fh.write(tool_input + "\n")
        return "ran"

    def first():
        return [ResponseCustomToolCall(type="custom_tool_call", call_id="call_u1", name="run_custom",
                                       input='{"command": "ls"}', id="ct_1")]

    from failsecure_oa_rig import item_model, run

    tool = CustomTool(name="run_custom", description="run", on_invoke_tool=invoke, needs_approval=needs_approval,
                      on_approval=on_approval)
    model = item_model(first)
    result = run(Agent(name="custom", instructions="run", tools=[tool], model=model), mode, max_turns=3)
    ran = marker.read_text().splitlines() if marker.exists() else []
    return ran, result.interruptions, model.told.get("call_u1")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("failure", ["raised", "invalid", "timeout"])
def test_a_failed_needs_approval_of_a_custom_tool_rejects_without_asking(rig, mode, failure):
    async def needs(ctx, params, call_id):
        if failure == "raised":
            raise RuntimeError(SECRET)
        if failure == "timeout":
            await asyncio.sleep(3)
        return None

    ran, interruptions, told = run_custom(rig, needs, mode)
    assert ran == [] and interruptions == []  # before: an approval request for a check that failed
    assert f"'{hook_of(needs)}'" in told and f"({failure})" in told and SECRET not in told
    event = [e for e in rig.events() if e["hook"] == hook_of(needs) or e.get("failure")][-1]
    assert (event["outcome"], event["failure"]) == ("deny", failure)


@pytest.mark.parametrize("mode", MODES)
def test_a_custom_tool_needing_no_approval_runs(rig, mode):
    async def needs(ctx, params, call_id):
        return False

    ran, interruptions, told = run_custom(rig, needs, mode)
    assert ran == ['{"command": "ls"}'] and interruptions == []


@pytest.mark.parametrize("mode", MODES)
def test_a_custom_tool_needing_approval_asks(rig, mode):
    def needs(ctx, params, call_id):
        return True

    ran, interruptions, told = run_custom(rig, needs, mode)
    assert ran == [] and [i.tool_name for i in interruptions] == ["run_custom"]


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_needs_approval_is_not_put_to_on_approval(rig, mode):
    """The failed check is rejected; an ``on_approval`` that would approve is not asked."""
    asked = []

    def needs(ctx, params, call_id):
        raise RuntimeError(SECRET)

    def on_approval(ctx, item):
        asked.append(item)
        return {"approve": True}

    ran, interruptions, told = run_custom(rig, needs, mode, on_approval=on_approval)
    assert ran == [] and asked == [] and "(raised)" in told
