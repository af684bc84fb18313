"""Offline rig for the claude-agent-sdk adapter tests.

The real Claude Code CLI bundled in the claude-agent-sdk wheel, started by the SDK
itself, talks to a scripted Anthropic Messages API served on 127.0.0.1. The scripted
model answers each prompt ``run: <command>`` with one Bash tool call running that
command, and every later turn (the one carrying the tool_result) with plain text. Whether
a marker file exists afterwards tells whether the PreToolUse gates let the tool run;
the tool_result the CLI sent back carries what the model was told.

No LLM, no network beyond loopback: proxies point at a closed loopback port, a dummy
key, a throwaway HOME, telemetry and updates off.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any

def _load_fake_api():
    """The scripted Messages API shared with the Claude Code end-to-end tests."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "command_hooks" / "claude_code" / "fake_messages_api.py"
    spec = importlib.util.spec_from_file_location("failsecure_fake_messages_api", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fake_messages_api = _load_fake_api()

SECRET = "sk-tool-argument-secret-77"


class ScriptedModel:
    def __init__(self) -> None:
        self.requests: list = []
        self.lock = threading.Lock()
        self.counter = 0
        self.issued: set = set()

    def tool_results(self) -> list:
        with self.lock:
            requests = list(self.requests)
        found = []
        for body in requests:
            for message in body.get("messages", []):
                content = message.get("content")
                if isinstance(content, list):
                    for block in content:
                        if isinstance(block, dict) and block.get("type") == "tool_result":
                            found.append(block)
        return found

    def answer(self, body: dict) -> tuple:
        messages = body.get("messages", [])
        last = messages[-1] if messages else {}
        content = last.get("content")
        texts = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        tools = [t.get("name") for t in body.get("tools", [])]
        for text in texts:
            for line in text.splitlines():
                if not line.startswith("run: ") or "Bash" not in tools:
                    continue
                command = line[len("run: "):]
                with self.lock:
                    # each prompt gets one tool call (the CLI may repeat the prompt
                    # text beside later tool results)
                    if command in self.issued:
                        continue
                    self.issued.add(command)
                    self.counter += 1
                    tool_id = "toolu_sdk_%d" % self.counter
                return [{"type": "tool_use", "id": tool_id, "name": "Bash",
                         "input": {"command": command, "description": "scripted"}}], "tool_use"
        return [{"type": "text", "text": "done"}], "end_turn"


class ScriptedAPI:
    """The scripted Messages API on 127.0.0.1 (start/stop)."""

    def __init__(self) -> None:
        self.model = ScriptedModel()
        self.server, self.url = fake_messages_api.serve(self.model)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def bundled_cli() -> str:
    import claude_agent_sdk

    path = os.path.join(os.path.dirname(claude_agent_sdk.__file__), "_bundled", "claude")
    if not os.access(path, os.X_OK):
        raise RuntimeError("the claude-agent-sdk wheel ships no bundled CLI at %s" % path)
    return path


def offline_env(api_url: str, home: str) -> dict:
    """The environment the CLI gets (ClaudeAgentOptions.env overrides the inherited one)."""
    dead = "http://127.0.0.1:%d" % closed_port()
    return {
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "sk-ant-dummy-offline",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "HTTP_PROXY": dead,
        "HTTPS_PROXY": dead,
        "http_proxy": dead,
        "https_proxy": dead,
        "ALL_PROXY": dead,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def options(api: ScriptedAPI, home: str, cwd: str, **kwargs: Any):
    """ClaudeAgentOptions for one offline run: Bash allowed, the bundled CLI."""
    from claude_agent_sdk import ClaudeAgentOptions

    os.makedirs(os.path.join(home, ".claude"), exist_ok=True)
    kwargs.setdefault("allowed_tools", ["Bash"])
    return ClaudeAgentOptions(
        cwd=cwd,
        env=offline_env(api.url, home),
        model="claude-sonnet-4-5",
        max_turns=4,
        setting_sources=[],
        **kwargs,
    )


async def run_prompts(opts, prompts: list, timeout: float = 90.0) -> list:
    """One SDK session (one CLI process), one turn per prompt; returns every message."""
    import asyncio

    from claude_agent_sdk import ClaudeSDKClient

    messages: list = []

    async def session():
        async with ClaudeSDKClient(options=opts) as client:
            for prompt in prompts:
                await client.query(prompt)
                async for message in client.receive_response():
                    messages.append(message)

    await asyncio.wait_for(session(), timeout)
    return messages


# ---------------------------------------------------------------- the dispatcher, no CLI


class CaptureTransport:
    """The narrowest transport a Query needs to answer control requests."""

    def __init__(self) -> None:
        self.written: list = []

    async def write(self, data: str) -> None:
        self.written.append(json.loads(data))


def cli_matches(matcher: Any, tool: str) -> bool:
    """The CLI's matcher rule for the tests' simple matchers (None, '*', names)."""
    return matcher in (None, "", "*") or tool in str(matcher).split("|")


async def dispatch(hooks: dict, tool: str = "Bash", tool_input: Any = None, call_id: str = "toolu_unit_1",
                   can_use_tool: Any = None, prepare: bool = True) -> tuple:
    """What the CLI does for one tool call, on a real ``Query``: initialize's callback
    registration (through the patched ``initialize`` preparation when failsecure is
    active), then one ``hook_callback`` control request per selected PreToolUse
    callback, sent concurrently, answered by the real ``_handle_control_request``.
    Returns (query, [answer of each request])."""
    import asyncio

    from claude_agent_sdk._internal.query import Query

    transport = CaptureTransport()
    query = Query(transport=transport, is_streaming_mode=True, hooks=hooks, can_use_tool=can_use_tool)
    if prepare:
        from failsecure import activation

        adapter = activation.get("claude-agent-sdk")
        if adapter.state == "patched":
            adapter._prepare(query)
    selected = []
    for event, matchers in query.hooks.items():
        for matcher in matchers:
            for cb in matcher.get("hooks", []):
                callback_id = "hook_%d" % query.next_callback_id
                query.next_callback_id += 1
                query.hook_callbacks[callback_id] = cb
                if event == "PreToolUse" and cli_matches(matcher.get("matcher"), tool):
                    selected.append(callback_id)
    tool_input = {"command": "true"} if tool_input is None else tool_input
    requests = []
    for index, callback_id in enumerate(selected):
        requests.append({"type": "control_request", "request_id": "req_%d" % index, "request": {
            "subtype": "hook_callback", "callback_id": callback_id, "tool_use_id": call_id,
            "input": {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": json.loads(json.dumps(tool_input)),
                      "session_id": "unit", "transcript_path": "", "cwd": "", "tool_use_id": call_id}}})
    await asyncio.gather(*(query._handle_control_request(r) for r in requests))
    by_id = {a["response"]["request_id"]: a["response"] for a in transport.written}
    return query, [by_id.get("req_%d" % i) for i in range(len(requests))]


async def permission(query: Any, tool: str = "Bash", tool_input: Any = None, call_id: str = "toolu_unit_1") -> dict:
    """One ``can_use_tool`` control request through the real ``_handle_control_request``."""
    transport = query.transport
    before = len(transport.written)
    await query._handle_control_request({"type": "control_request", "request_id": "req_perm", "request": {
        "subtype": "can_use_tool", "tool_name": tool, "input": tool_input if tool_input is not None else {"command": "true"},
        "permission_suggestions": [], "tool_use_id": call_id}})
    return transport.written[before]["response"]


def decision_of(answer: dict) -> Any:
    """The permissionDecision a hook answer gives the CLI (None: none; 'error': an error)."""
    if answer is None or answer.get("subtype") != "success":
        return "error"
    specific = (answer.get("response") or {}).get("hookSpecificOutput") or {}
    return specific.get("permissionDecision")


def named(fn, name: str):
    """Give a callback its own hook id (``claude-agent-sdk:<module>.<name>``)."""
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def build(hooks: dict, can_use_tool: Any = None, prepare: bool = True):
    """A real ``Query`` with its callbacks registered as ``initialize`` registers them
    (through the patched preparation when failsecure is active). Returns (query,
    {event: [(callback id, matcher)]})."""
    from claude_agent_sdk._internal.query import Query

    query = Query(transport=CaptureTransport(), is_streaming_mode=True, hooks=hooks, can_use_tool=can_use_tool)
    if prepare:
        from failsecure import activation

        adapter = activation.get("claude-agent-sdk")
        if adapter.state == "patched":
            adapter._prepare(query)
    ids: dict = {}
    for event, matchers in query.hooks.items():
        for matcher in matchers:
            for cb in matcher.get("hooks", []):
                callback_id = "hook_%d" % query.next_callback_id
                query.next_callback_id += 1
                query.hook_callbacks[callback_id] = cb
                ids.setdefault(event, []).append((callback_id, matcher.get("matcher")))
    return query, ids


def hook_request(request_id: str, callback_id: str, event: str, tool: str, tool_input: Any, call_id: str) -> dict:
    data = {"hook_event_name": event, "tool_name": tool, "tool_input": json.loads(json.dumps(tool_input)),
            "session_id": "unit", "transcript_path": "", "cwd": "", "permission_mode": "default", "tool_use_id": call_id}
    if event == "PermissionRequest":
        data["permission_suggestions"] = []
    return {"type": "control_request", "request_id": request_id, "request": {
        "subtype": "hook_callback", "callback_id": callback_id, "tool_use_id": call_id, "input": data}}


def permission_request(tool: str, tool_input: Any, call_id: str) -> dict:
    return {"type": "control_request", "request_id": "req_perm", "request": {
        "subtype": "can_use_tool", "tool_name": tool, "input": json.loads(json.dumps(tool_input)),
        "permission_suggestions": [], "tool_use_id": call_id}}


async def ask_path(hooks: dict, can_use_tool: Any = None, tool: str = "Bash", tool_input: Any = None,
                   call_id: str = "toolu_unit_1", prepare: bool = True) -> tuple:
    """What the CLI does on the permission (ask) path of one tool call: every selected
    ``PermissionRequest`` callback's ``hook_callback`` request and the ``can_use_tool``
    request, sent at once (the CLI takes whichever decides first), answered by the real
    ``_handle_control_request``. Returns (query, [PermissionRequest answers], the
    can_use_tool answer or None)."""
    import asyncio

    query, ids = build(hooks, can_use_tool, prepare)
    tool_input = {"command": "true"} if tool_input is None else tool_input
    requests = [hook_request("req_%d" % n, cid, "PermissionRequest", tool, tool_input, call_id)
                for n, (cid, matcher) in enumerate(ids.get("PermissionRequest", [])) if cli_matches(matcher, tool)]
    if can_use_tool is not None:
        requests.append(permission_request(tool, tool_input, call_id))
    await asyncio.gather(*(query._handle_control_request(r) for r in requests))
    by_id = {a["response"]["request_id"]: a["response"] for a in query.transport.written}
    hooks_answers = [by_id.get(r["request_id"]) for r in requests if r["request_id"] != "req_perm"]
    return query, hooks_answers, by_id.get("req_perm")


def permission_decision_of(answer: dict) -> Any:
    """The behavior a PermissionRequest hook answer gives the CLI (None: no decision)."""
    if answer is None or answer.get("subtype") != "success":
        return "error"
    specific = (answer.get("response") or {}).get("hookSpecificOutput") or {}
    return (specific.get("decision") or {}).get("behavior")


# ---------------------------------------------------------------- in-process tools (the tool boundary)


class ToolCallModel(ScriptedModel):
    """Answers each prompt line ``call: <tool> <json arguments>`` with one call of that
    tool (when the CLI offers it), every later turn with plain text."""

    def answer(self, body: dict) -> tuple:
        messages = body.get("messages", [])
        last = messages[-1] if messages else {}
        content = last.get("content")
        texts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"] if isinstance(content, list) else []
        tools = [t.get("name") for t in body.get("tools", [])]
        for text in texts:
            for line in text.splitlines():
                if not line.startswith("call: "):
                    continue
                name, _, arguments = line[len("call: "):].partition(" ")
                if name not in tools:
                    continue
                with self.lock:
                    if line in self.issued:
                        continue
                    self.issued.add(line)
                    self.counter += 1
                    tool_id = "toolu_sdk_%d" % self.counter
                return [{"type": "tool_use", "id": tool_id, "name": name, "input": json.loads(arguments)}], "tool_use"
        return [{"type": "text", "text": "done"}], "end_turn"


class ToolCallAPI(ScriptedAPI):
    def __init__(self) -> None:
        self.model = ToolCallModel()
        self.server, self.url = fake_messages_api.serve(self.model)


def kit_server(ran: list, record=None):
    """An in-process SDK MCP server ``kit``: ``kit_tool`` records the command it runs
    with; ``wrapper_tool`` runs ``kit_tool`` by calling its handler directly (a path the
    CLI never sees). Returns (the server config, kit_tool)."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    @tool("kit_tool", "Runs a command.", {"command": str})
    async def kit_tool(args):
        ran.append(args["command"])
        if record is not None:
            record(args["command"])
        return {"content": [{"type": "text", "text": "ran"}]}

    @tool("wrapper_tool", "Runs a command through kit_tool.", {"command": str})
    async def wrapper_tool(args):
        return await kit_tool.handler({"command": args["command"]})

    return create_sdk_mcp_server("kit", tools=[kit_tool, wrapper_tool]), kit_tool


KIT_TOOLS = ["mcp__kit__kit_tool", "mcp__kit__wrapper_tool"]
#: the CLI offers MCP tools to the model at once (not deferred behind its ToolSearch)
IN_PROCESS_ENV = {"ENABLE_TOOL_SEARCH": "false"}


def call_line(tool: str, arguments: dict) -> str:
    return "call: %s %s" % (tool, json.dumps(arguments))
