"""A real ADK agent run with no model service: a scripted ``BaseLlm`` answers one function
call for a real ``FunctionTool`` (its side effect: a marker file), then text, through
``InMemoryRunner`` (``run`` or ``run_async``). No credentials, no network."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, AsyncGenerator, Optional

# telemetry and .env loading off before ADK is imported
os.environ["OTEL_SDK_DISABLED"] = "true"
os.environ["ADK_DISABLE_LOAD_DOTENV"] = "1"
os.environ["GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY"] = "false"
os.environ["ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"] = "false"
os.environ["ADK_SUPPRESS_EXPERIMENTAL_FEATURE_WARNINGS"] = "1"
for _var in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_GENAI_USE_VERTEXAI"):
    os.environ.pop(_var, None)

TOOL = "run_command"
APP = "failsecure-adk"
USER = "tester"


def _imports():
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import InMemoryRunner
    from google.adk.tools.function_tool import FunctionTool
    from google.genai import types

    return LlmAgent, BaseLlm, LlmResponse, BasePlugin, InMemoryRunner, FunctionTool, types


_model_class = None


def model_class():
    """A BaseLlm that calls ``run_command`` with its ``call_args`` once, then says done."""
    global _model_class
    if _model_class is not None:
        return _model_class
    _, BaseLlm, LlmResponse, _, _, _, types = _imports()

    class ScriptedLlm(BaseLlm):
        model: str = "scripted"
        call_args: dict = {}
        call_name: str = TOOL

        async def generate_content_async(self, llm_request, stream: bool = False) -> AsyncGenerator:
            answered = any(
                part.function_response is not None
                for content in (llm_request.contents or ())[-1:]
                for part in (content.parts or ())
            )
            if answered:
                content = types.Content(role="model", parts=[types.Part(text="done")])
            else:
                call = types.FunctionCall(name=self.call_name, args=dict(self.call_args), id="call-1")
                content = types.Content(role="model", parts=[types.Part(function_call=call)])
            yield LlmResponse(content=content)

    _model_class = ScriptedLlm
    return ScriptedLlm


class Outcome:
    """What one run did: whether the tool ran, its arguments, the function responses."""

    def __init__(self) -> None:
        self.ran: list[dict] = []
        self.responses: list[dict] = []
        self.asked: list[dict] = []  # the confirmations ADK asked a human for
        self.error: Optional[BaseException] = None

    @property
    def response(self) -> Optional[dict]:
        return self.responses[-1] if self.responses else None

    def told(self) -> str:
        parts = [repr(r) for r in self.responses]
        if self.error is not None:
            parts.append(f"{type(self.error).__name__}: {self.error}")
        return "\n".join(parts)


def make_tool(marker: Path, outcome: Outcome, confirm: Any = None, tool_class: Any = None):
    """``run_command`` as a ``FunctionTool`` (``tool_class``: a subclass of it, one that
    overrides ``check_require_confirmation`` say)."""
    _, _, _, _, _, FunctionTool, _ = _imports()
    FunctionTool = tool_class or FunctionTool

    def run_command(command: str) -> dict:
        """Run a command (the test tool: writes a marker file)."""
        marker.write_text(command)
        outcome.ran.append({"command": command})
        return {"ok": True}

    if confirm is None:
        return FunctionTool(run_command)
    return FunctionTool(run_command, require_confirmation=confirm)


def run_agent(
    marker: Path,
    arguments: dict,
    mode: str = "async",
    before: Any = None,
    plugins: Optional[list] = None,
    after: Any = None,
    raise_errors: bool = False,
    confirm: Any = None,
    resume: Optional[dict] = None,
    on_resume: Any = None,
    call: str = TOOL,
    wrapper: bool = False,
    tool_class: Any = None,
    tool_factory: Any = None,
) -> Outcome:
    """One real agent run: the model calls ``run_command(**arguments)`` once. ``resume``:
    when ADK asks for a confirmation, the human's answer (``{"confirmed": True}``) is sent
    in a second turn of the same session and the run resumes (``on_resume(agent)`` is called
    between the two turns). ``call``: the tool the model calls; ``wrapper``: the agent also
    has ``smuggle``, a wrapper tool that runs ``run_command`` through its inner
    ``run_async`` (a path ADK's before-tool stages never see for ``run_command``);
    ``tool_factory(marker, outcome, confirm)``: the tool itself (another signature)."""
    LlmAgent, _, _, _, InMemoryRunner, _, types = _imports()
    outcome = Outcome()
    kwargs = {}
    if before is not None:
        kwargs["before_tool_callback"] = before
    if after is not None:
        kwargs["after_tool_callback"] = after
    tool = (tool_factory or (lambda m, o, c: make_tool(m, o, c, tool_class)))(marker, outcome, confirm)
    tools = [tool]
    if wrapper:
        tools.append(wrapper_tool(tool))
    agent = LlmAgent(
        name="gated",
        model=model_class()(call_args=dict(arguments), call_name=call),
        instruction="Call the tool.",
        tools=tools,
        **kwargs,
    )
    runner = InMemoryRunner(agent=agent, app_name=APP, plugins=list(plugins or []))
    message = types.Content(role="user", parts=[types.Part(text="go")])

    def collect(event) -> None:
        for response in event.get_function_responses() or ():
            outcome.responses.append(dict(response.response or {}))

    async def session():
        return await runner.session_service.create_session(app_name=APP, user_id=USER)

    async def run_async():
        s = await session()
        async for event in runner.run_async(user_id=USER, session_id=s.id, new_message=message):
            collect(event)

    messages = [message]
    asked: list = []

    def collect_asks(event) -> None:
        collect(event)
        for call in event.get_function_calls() or ():
            if call.name == "adk_request_confirmation":
                asked.append(call.id)
                outcome.asked.append(dict(call.args or {}))

    def resume_message():
        """The human's answer to the confirmation ADK asked for (None: nothing asked)."""
        if resume is None or not asked:
            return None
        answer = types.FunctionResponse(name="adk_request_confirmation", id=asked[-1], response=dict(resume))
        return types.Content(role="user", parts=[types.Part(function_response=answer)])

    async def run_async_resumed():
        s = await session()
        for turn in range(2):
            new = messages[0] if turn == 0 else resume_message()
            if new is None:
                return
            async for event in runner.run_async(user_id=USER, session_id=s.id, new_message=new):
                collect_asks(event)
            if turn == 0 and on_resume is not None:
                on_resume(agent)

    try:
        if mode == "sync":
            s = asyncio.run(session())
            for turn in range(2):
                new = messages[0] if turn == 0 else resume_message()
                if new is None:
                    break
                for event in runner.run(user_id=USER, session_id=s.id, new_message=new):
                    collect_asks(event)
                if turn == 0 and on_resume is not None:
                    on_resume(agent)
        else:
            asyncio.run(run_async_resumed())
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # upstream crashes the run on a raising callback
        if raise_errors:
            raise
        outcome.error = exc
    return outcome


WRAPPER = "smuggle"


def wrapper_tool(inner):
    """A third-party style wrapper tool: runs ``inner`` through its ``run_async`` with its
    own tool context."""
    _, _, _, _, _, FunctionTool, _ = _imports()

    async def smuggle(command: str, tool_context) -> dict:
        """Run a command through another tool."""
        return await inner.run_async(args={"command": command}, tool_context=tool_context)

    return FunctionTool(smuggle)


def plugin(name: str, callback):
    """A runner plugin whose ``before_tool_callback`` is ``callback(tool, tool_args,
    tool_context)`` (a coroutine function, as ADK requires)."""
    _, _, _, BasePlugin, _, _, _ = _imports()

    class GatePlugin(BasePlugin):
        async def before_tool_callback(self, *, tool, tool_args, tool_context):
            return await callback(tool, tool_args, tool_context)

    GatePlugin.__qualname__ = GatePlugin.__name__ = f"GatePlugin_{name}"
    return GatePlugin(name=name)


def confirming_class(name: str, check, base: Any = None):
    """A tool class (a ``FunctionTool`` subclass, or ``base``) whose own
    ``check_require_confirmation(self, args, tool_context)`` is ``check`` (a coroutine
    function, as ADK awaits it), named ``<name>.check_require_confirmation``."""
    _, _, _, _, _, FunctionTool, _ = _imports()
    check.__name__ = "check_require_confirmation"
    check.__qualname__ = f"{name}.check_require_confirmation"
    return type(name, (base or FunctionTool,), {"check_require_confirmation": check, "__qualname__": name,
                                                 "__module__": __name__})


def named(fn, name: str):
    """Give a callback its own name (its hook id is ``google-adk:<module>.<qualname>``)."""
    fn.__name__ = fn.__qualname__ = name
    return fn
