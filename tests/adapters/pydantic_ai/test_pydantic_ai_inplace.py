"""Arguments changed in place where the pictures did not look: a tool whose parameter is a
pydantic model (or a dataclass, a set) gets validated arguments holding that object, and
a later hook or a toolset wrapper can change its fields in place; and a gate abandoned at
its deadline (tolerated by the trusted config) can still write into the arguments the
other gates judged. Each drives a real ``Agent(FunctionModel(...))`` run; every deny has
an allow twin."""

import asyncio
import dataclasses
import threading
import time

import pytest
from pydantic import BaseModel

from failsecure_pai_rig import hook_id, hooks_with, run_agent

MODES = ("sync", "async")


class Spec(BaseModel):
    command: str


@dataclasses.dataclass
class DSpec:
    command: str


def _model(tool, args):
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id="call-0")])
        last = messages[-1]
        return ModelResponse(parts=[TextPart("told: " + " | ".join(str(getattr(p, "content", "")) for p in last.parts))])

    return FunctionModel(respond)


def _spec_agent(rig, kind, capabilities=(), toolsets=None):
    """An agent whose tool ``run_spec`` takes ``spec`` (a pydantic model, a dataclass) and
    records ``spec.command``; or ``run_tags`` taking a set of strings."""
    from pydantic_ai import Agent
    from pydantic_ai.toolsets import FunctionToolset

    marker = rig.marker

    def run_spec(spec: Spec) -> str:
        marker.record(spec.command)
        return f"ran {spec.command}"

    def run_dspec(spec: DSpec) -> str:
        marker.record(spec.command)
        return f"ran {spec.command}"

    def run_tags(tags: set[str]) -> str:
        marker.record(",".join(sorted(tags)))
        return "ran"

    tool, args = {
        "model": (run_spec, {"spec": {"command": "harmless"}}),
        "dataclass": (run_dspec, {"spec": {"command": "harmless"}}),
        "set": (run_tags, {"tags": ["harmless"]}),
    }[kind]
    toolset = FunctionToolset([tool])
    if toolsets is not None:
        toolset = toolsets(toolset)
    return Agent(_model(tool.__name__, args), toolsets=[toolset], capabilities=list(capabilities))


def _text(args):
    if "tags" in args:
        return ",".join(sorted(args["tags"]))
    return args["spec"].command


def _policy(ctx, *, call, tool_def, args):
    from pydantic_ai.exceptions import ToolFailed

    if "forbidden" in _text(args):
        raise ToolFailed("policy: forbidden command")
    return args


def _smuggle_in_place(ctx, *, call, tool_def, args):
    """A later hook that changes the object's field in place and returns the same dict."""
    if "tags" in args:
        args["tags"].add("forbidden")
    elif "forbidden" not in args["spec"].command:
        args["spec"].command = "forbidden " + args["spec"].command
    return args


def _suffix_in_place(ctx, *, call, tool_def, args):
    if "tags" in args:
        args["tags"].add("checked")
    elif not args["spec"].command.endswith("-checked"):
        args["spec"].command += "-checked"
    return args


KINDS = ("model", "dataclass", "set")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_later_hooks_in_place_field_rewrite_is_judged(rig, mode, kind):
    agent = _spec_agent(rig, kind, [hooks_with(_policy, _smuggle_in_place)])
    output, exc = run_agent(agent, mode)
    assert rig.ran() == [], "the smuggled field must not run"
    assert exc is None and "policy: forbidden command" in output
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", None, hook_id(_policy))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_later_hooks_harmless_in_place_field_rewrite_runs(rig, mode, kind):
    agent = _spec_agent(rig, kind, [hooks_with(_policy, _suffix_in_place)])
    output, exc = run_agent(agent, mode)
    assert exc is None and rig.ran() == [{"model": "harmless-checked", "dataclass": "harmless-checked", "set": "checked,harmless"}[kind]]
    assert rig.last()["outcome"] == "allow"


def _wrapper(change):
    from pydantic_ai.toolsets import WrapperToolset

    class FieldWrapper(WrapperToolset):
        async def call_tool(self, name, tool_args, ctx, tool):
            change(tool_args)
            return await super().call_tool(name, tool_args, ctx, tool)

    return FieldWrapper


def _wrap_smuggle(tool_args):
    _smuggle_in_place(None, call=None, tool_def=None, args=tool_args)


def _wrap_suffix(tool_args):
    _suffix_in_place(None, call=None, tool_def=None, args=tool_args)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_toolset_wrappers_in_place_field_rewrite_is_judged(rig, mode, kind):
    agent = _spec_agent(rig, kind, [hooks_with(_policy)], toolsets=_wrapper(_wrap_smuggle))
    output, exc = run_agent(agent, mode)
    assert rig.ran() == [], "the field changed after the gates must not run unjudged"
    assert exc is None and "policy: forbidden command" in output
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", None, hook_id(_policy))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_toolset_wrappers_harmless_in_place_field_rewrite_runs(rig, mode, kind):
    agent = _spec_agent(rig, kind, [hooks_with(_policy)], toolsets=_wrapper(_wrap_suffix))
    output, exc = run_agent(agent, mode)
    assert exc is None and rig.ran() == [{"model": "harmless-checked", "dataclass": "harmless-checked", "set": "checked,harmless"}[kind]]
    assert rig.last()["outcome"] == "allow"


# ------------------------------------------------------------ a tolerated gate writing late


def _late_writer(release):
    """A sync hook the trusted config tolerates (``on_error = "allow"``): it outlives its
    0.3 s deadline (abandoned in pydantic-ai's worker thread), then writes into the
    arguments it was handed, after the policy judged them."""

    def late_writer(ctx, *, call, tool_def, args):
        release.wait(0.45)
        args["commands"].append("forbidden")
        return args

    return late_writer


def _late_agent(rig, gates, hooks_first):
    from pydantic_ai import Agent

    marker = rig.marker
    agent = Agent(_model("run_commands", {"commands": ["harmless"]}), capabilities=[hooks_with(*gates)])

    @agent.tool_plain
    async def run_commands(commands: list[str]) -> str:
        await asyncio.sleep(0.4)  # the tool's own work before it reads its arguments
        for command in commands:
            marker.record(command)
        return "ran " + ",".join(commands)

    return agent


async def _list_policy(ctx, *, call, tool_def, args):  # async: no worker thread to wait for on a loaded machine
    from pydantic_ai.exceptions import ToolFailed

    if any("forbidden" in c for c in args["commands"]):
        raise ToolFailed("policy: forbidden command")
    return args


@pytest.mark.parametrize("mode", MODES)
def test_a_tolerated_gate_writing_after_its_deadline_does_not_reach_the_tool(rig, mode):
    release = threading.Event()
    writer = _late_writer(release)
    rig.config(tables=f'[hooks."{hook_id(writer)}"]\non_error = "allow"\n')
    started = time.monotonic()
    output, exc = run_agent(_late_agent(rig, [writer, _list_policy], True), mode)
    release.set()
    assert exc is None and time.monotonic() - started < 5
    assert rig.ran() == ["harmless"], "the late write was judged by nobody: it must not run"
    assert rig.last()["outcome"] == "allow"


@pytest.mark.parametrize("mode", MODES)
def test_a_tolerated_gate_answering_late_without_writing_runs_the_tool(rig, mode):
    release = threading.Event()

    def late_reader(ctx, *, call, tool_def, args):
        release.wait(0.45)
        return args

    rig.config(tables=f'[hooks."{hook_id(late_reader)}"]\non_error = "allow"\n')
    output, exc = run_agent(_late_agent(rig, [late_reader, _list_policy], True), mode)
    release.set()
    assert exc is None and rig.ran() == ["harmless"]
    event = rig.last()
    assert event["outcome"] == "allow"
    assert rig.outcome_of("late_reader", event)["failure"] == "timeout"


# ------------------------------------------------------------ a plugin gate changing what it is shown


def _plugin(change):
    from failsecure import plugins

    class Changing:
        @plugins.hookimpl
        def failsecure_pre_tool_call(self, call):
            if call.arguments.get("spec") is not None and "forbidden" not in call.arguments["spec"].command:
                change(call.arguments["spec"])
            return None  # no opinion

    return Changing()


@pytest.mark.parametrize("mode", MODES)
def test_a_plugin_gate_changing_a_field_it_is_shown_is_judged(rig, mode):
    from failsecure import plugins

    plugin = _plugin(lambda spec: setattr(spec, "command", "forbidden " + spec.command))
    plugins.register(plugin, name="pai-inplace-plugin")
    try:
        output, exc = run_agent(_spec_agent(rig, "model", [hooks_with(_policy)]), mode)
    finally:
        plugins.unregister(plugin)
    assert rig.ran() == [], "a plugin gate is a gate, not a rewriter: its change must not run unjudged"
    assert exc is None and "policy: forbidden command" in output
    assert (rig.last()["outcome"], rig.last()["hook"]) == ("deny", hook_id(_policy))


@pytest.mark.parametrize("mode", MODES)
def test_a_plugin_gate_leaving_the_fields_runs_the_tool(rig, mode):
    from failsecure import plugins

    plugin = _plugin(lambda spec: None)
    plugins.register(plugin, name="pai-inplace-plugin")
    try:
        output, exc = run_agent(_spec_agent(rig, "model", [hooks_with(_policy)]), mode)
    finally:
        plugins.unregister(plugin)
    assert exc is None and rig.ran() == ["harmless"]
    assert [e["outcome"] for e in rig.events()] == ["allow"], "judged once"


@dataclasses.dataclass
class Batch:
    items: list[int]
    label: str = "batch"


def test_a_large_object_argument_with_two_gates_runs_once_judged(rig):
    """No false deny: the opened picture of a dataclass holding 20,000 values settles."""
    from pydantic_ai import Agent

    marker = rig.marker

    def keep(ctx, *, call, tool_def, args):
        return args

    def keep_too(ctx, *, call, tool_def, args):
        return args

    agent = Agent(_model("run_batch", {"batch": {"items": list(range(20_000))}}), capabilities=[hooks_with(keep, keep_too)])

    @agent.tool_plain
    def run_batch(batch: Batch) -> str:
        marker.record(f"{batch.label}:{len(batch.items)}")
        return "ran"

    output, exc = run_agent(agent)
    assert exc is None and rig.ran() == ["batch:20000"]
    assert [e["outcome"] for e in rig.events()] == ["allow"]


async def _slow_policy(ctx, *, call, tool_def, args):
    """Reads the arguments at once, then takes 0.2 s (a policy server) before it answers
    with the arguments it was handed."""
    from pydantic_ai.exceptions import ToolFailed

    forbidden = any("forbidden" in c for c in args["commands"])
    await asyncio.sleep(0.2)
    if forbidden:
        raise ToolFailed("policy: forbidden command")
    return args


def _plain_list_agent(rig, gates):
    from pydantic_ai import Agent

    marker = rig.marker
    agent = Agent(_model("run_commands", {"commands": ["harmless"]}), capabilities=[hooks_with(*gates)])

    @agent.tool_plain
    def run_commands(commands: list[str]) -> str:
        for command in commands:
            marker.record(command)
        return "ran " + ",".join(commands)

    return agent


@pytest.mark.parametrize("mode", MODES)
def test_a_tolerated_gate_writing_while_the_next_gate_judges_does_not_reach_the_tool(rig, mode):
    """The abandoned gate writes at 0.45 s, while the policy after it (handed the call at
    0.3 s, when the gate's deadline passed) is still deciding on what it read."""
    release = threading.Event()

    def writer(ctx, *, call, tool_def, args):
        release.wait(0.45)
        args["commands"].append("forbidden")
        return args

    rig.config(tables=f'[hooks."{hook_id(writer)}"]\non_error = "allow"\n')
    output, exc = run_agent(_plain_list_agent(rig, [writer, _slow_policy]), mode)
    release.set()
    assert exc is None
    assert rig.ran() == ["harmless"], "the late write was judged by nobody: it must not run"


@pytest.mark.parametrize("mode", MODES)
def test_a_tolerated_gate_late_without_writing_before_a_slow_policy_runs_the_tool(rig, mode):
    release = threading.Event()

    def reader(ctx, *, call, tool_def, args):
        release.wait(0.45)
        return args

    rig.config(tables=f'[hooks."{hook_id(reader)}"]\non_error = "allow"\n')
    output, exc = run_agent(_plain_list_agent(rig, [reader, _slow_policy]), mode)
    release.set()
    assert exc is None and rig.ran() == ["harmless"]
    assert rig.last()["outcome"] == "allow"
