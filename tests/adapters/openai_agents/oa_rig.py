"""Rig for the openai-agents adapter tests: the real pinned SDK, a scripted model of our
own (a ``Model`` subclass: no LLM, no network) and a real ``function_tool`` whose side
effect (a marker file) proves whether it ran. Tracing is off and the API key is a dummy,
so nothing leaves the process.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-not-used")
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

from pathlib import Path  # noqa: E402
from typing import Any, Callable, Optional  # noqa: E402

TOOL = "run_command"
CALL_ID = "call_failsecure_1"


def _item_type(item: Any) -> Optional[str]:
    if isinstance(item, dict):
        return item.get("type")
    return getattr(item, "type", None)


def _item_get(item: Any, key: str) -> Any:
    if isinstance(item, dict):
        return item.get(key)
    return getattr(item, key, None)


def make_model(arguments: dict, calls: int = 1):
    """A scripted model: asks for ``calls`` calls of ``run_command`` with ``arguments`` (one
    turn), then, once the tool outputs are in its input, answers ``done``. What the model
    was told for each call is kept in ``model.told``."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class ScriptedModel(Model):
        def __init__(self) -> None:
            self.told: dict = {}
            self.turns = 0

        async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, *args, **kwargs):
            self.turns += 1
            outputs = [i for i in (input if isinstance(input, list) else []) if _item_type(i) == "function_call_output"]
            for item in outputs:
                self.told[_item_get(item, "call_id")] = _item_get(item, "output")
            if outputs:
                message = ResponseOutputMessage(
                    id="msg_failsecure", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
                )
                return ModelResponse(output=[message], usage=Usage(), response_id=None)
            out = [
                ResponseFunctionToolCall(
                    type="function_call", call_id=f"{CALL_ID}" if n == 0 else f"{CALL_ID}_{n}", name=TOOL,
                    arguments=json.dumps(arguments), id=f"fc_{n}", status="completed",
                )
                for n in range(calls)
            ]
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        async def stream_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, *args, **kwargs):
            """The same answer as one ``response.completed`` event (``Runner.run_streamed``)."""
            from openai.types.responses import Response, ResponseCompletedEvent

            answer = await self.get_response(system_instructions, input, model_settings, tools, output_schema, handoffs, tracing)
            response = Response(
                id="resp_failsecure", created_at=0, model="scripted", object="response", output=answer.output,
                parallel_tool_calls=False, tool_choice="auto", tools=[],
            )
            yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=0)

    return ScriptedModel()


class Tool:
    """The real tool: appends the command it ran with to a marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def runs(self) -> list:
        if not self.marker.exists():
            return []
        return [json.loads(line) for line in self.marker.read_text().splitlines() if line.strip()]

    def build(self, guardrails: list = (), needs_approval: Any = False):
        from agents import function_tool

        marker = self.marker

        def run_command(command: str) -> str:
            """Run a command (test tool: writes a marker file)."""
            with open(marker, "a") as fh:
                fh.write(json.dumps({"command": command}) + "\n")
            return f"ran {command}"

        tool = function_tool(run_command, needs_approval=needs_approval)
        tool.tool_input_guardrails = list(guardrails)
        return tool


def agent_with(tool, model):
    from agents import Agent

    return Agent(name="failsecure-test", instructions="use the tool", tools=[tool], model=model)


def run(agent, mode: str = "sync", state=None, max_turns: int = 4, **config_kwargs):
    """One real agent run: ``Runner.run_sync`` (sync) or ``Runner.run`` (async);
    ``config_kwargs`` go to the ``RunConfig``."""
    import asyncio

    from agents import RunConfig, Runner

    config = RunConfig(tracing_disabled=True, **config_kwargs)
    what = state if state is not None else "go"
    if mode == "sync":
        return Runner.run_sync(agent, what, run_config=config, max_turns=max_turns)
    return asyncio.run(Runner.run(agent, what, run_config=config, max_turns=max_turns))


def guardrail(fn: Callable, name: Optional[str] = None):
    from agents import ToolInputGuardrail

    return ToolInputGuardrail(guardrail_function=fn, name=name)


def named(fn: Callable, qualname: str) -> Callable:
    fn.__name__ = qualname
    fn.__qualname__ = qualname
    return fn


def item_model(first: Callable[[], list]):
    """A scripted model whose first turn answers the items ``first()`` builds (a
    computer call, a custom tool call, a hosted MCP approval request...); once the input
    holds an answer to one of them (an item whose type ends in ``_output`` or
    ``_response``), it answers ``done``. What each call was told (``output``, or the
    whole answer item) is kept in ``model.told`` by call id; ``model.answers`` keeps
    every such input item."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class ItemModel(Model):
        def __init__(self) -> None:
            self.told: dict = {}
            self.answers: list = []

        async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, *args, **kwargs):
            items = input if isinstance(input, list) else []
            answers = [i for i in items if str(_item_type(i) or "").endswith(("_output", "_response"))]
            for item in answers:
                self.answers.append(item)
                key = _item_get(item, "call_id") or _item_get(item, "approval_request_id")
                self.told[key] = _item_get(item, "output")
            if answers:
                message = ResponseOutputMessage(
                    id="msg_failsecure", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
                )
                return ModelResponse(output=[message], usage=Usage(), response_id=None)
            return ModelResponse(output=first(), usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    return ItemModel()


def wrapper_tool(inner, name: str = TOOL, caught: Optional[list] = None):
    """A function tool (named ``name``, as the model calls it) whose body invokes
    ``inner``'s ``on_invoke_tool`` with its own tool context: a path to ``inner`` that
    its guardrails and approval never see (third-party "toolkit" wrappers do this). The
    text of an exception the inner call raised goes to ``caught`` (what the wrapper, the
    caller, was told), then the wrapper fails with it."""
    from agents import RunContextWrapper, function_tool

    async def wrapper(ctx: RunContextWrapper, command: str) -> str:
        """Run a command through another tool."""
        try:
            return str(await inner.on_invoke_tool(ctx, json.dumps({"command": command})))
        except Exception as exc:
            if caught is not None:
                caught.append(str(exc))
            raise

    wrapper.__annotations__ = {"ctx": RunContextWrapper, "command": str, "return": str}
    named(wrapper, name)
    return function_tool(wrapper)


# ---------------------------------------------------------------- realtime

def hook_of(fn):
    return f"openai-agents:{fn.__module__}.{fn.__qualname__}"


class Transport:
    """A realtime model with no connection: what the session sends is recorded."""

    def __new__(cls):
        from agents.realtime.model import RealtimeModel

        class _Model(RealtimeModel):
            def __init__(self):
                self.sent = []

            async def connect(self, options):
                pass

            def add_listener(self, listener):
                pass

            def remove_listener(self, listener):
                pass

            async def send_event(self, event):
                self.sent.append(event)

            async def close(self):
                pass

        return _Model()
