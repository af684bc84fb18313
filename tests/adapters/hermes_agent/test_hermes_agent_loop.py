"""The real ``AIAgent`` tool loop (sequential and concurrent paths), and one full agent
run against a scripted model served on 127.0.0.1 (no LLM)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

import failsecure_hermes_rig as H

PATHS = ["_execute_tool_calls_sequential", "_execute_tool_calls_concurrent"]


def _agent(base_url: str, **kwargs):
    import run_agent

    return run_agent.AIAgent(
        base_url=base_url, api_key="x", provider="custom", model="scripted", quiet_mode=True,
        skip_memory=True, skip_context_files=True, enabled_toolsets=[H.TOOLSET], **kwargs,
    )


@pytest.fixture(scope="module")
def agent(_session_rig):
    return _agent("http://127.0.0.1:9/v1")  # never contacted: the tool loop is driven directly


def _assistant(*call_ids):
    calls = [SimpleNamespace(id=c, type="function", function=SimpleNamespace(name=H.TOOL, arguments='{"path": "/etc/secret-payload"}')) for c in call_ids]
    return SimpleNamespace(content="", tool_calls=calls)


def _run(agent, rig, path):
    messages: list = []
    rig.ran.clear()
    getattr(agent, path)(_assistant("call-a", "call-b"), messages, "task-1")
    return [m["content"] for m in messages if m.get("role") == "tool"]


@pytest.mark.parametrize("path", PATHS)
def test_crashing_guard_blocks_in_the_tool_loop(agent, rig, path):
    hook = rig.plugin("guard", "raise RuntimeError('secret-payload')")
    rig.load()
    results = _run(agent, rig, path)
    assert not rig.ran
    assert [json.loads(r) for r in results] == [{"error": H.fail_closed(hook, "raised")}] * 2
    events = [e for e in rig.events() if e["tool"] == H.TOOL]
    assert len(events) == 2
    # 0.13.0's agent loop does not pass tool_call_id to the hook; later releases do
    assert {e["call_id"] for e in events} in ({"call-a", "call-b"}, {None})
    assert {(e["hook"], e["failure"], e["exception_type"]) for e in events} == {(hook, "raised", "RuntimeError")}


@pytest.mark.parametrize("path", PATHS)
def test_allow_twin_tool_loop_runs(agent, rig, path):
    rig.plugin("guard", "return None")
    rig.load()
    results = _run(agent, rig, path)
    assert len(rig.ran) == 2
    assert [json.loads(r) for r in results] == [{"ok": True}] * 2


@pytest.mark.parametrize("path", PATHS)
def test_block_after_approve_blocks_in_the_tool_loop(agent, rig, path):
    if not H.has_approve():
        pytest.skip("no approve directive before 0.18.1")
    rig.plugin("approver", "return {'action': 'approve', 'message': 'ok by me'}")
    rig.plugin("security", "return {'action': 'block', 'message': 'security says no'}")
    rig.load()
    results = _run(agent, rig, path)
    assert not rig.ran
    assert [json.loads(r) for r in results] == [{"error": "security says no"}] * 2


# ---------------------------------------------------------------- a full run, scripted model


class _ScriptedModel(BaseHTTPRequestHandler):
    """OpenAI-compatible chat completions: first a tool call, then a final answer."""

    calls: list

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(404)
        self.end_headers()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self.send_response(404)
            self.end_headers()
            return
        self.calls.append(body)
        if len(self.calls) == 1:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": "call-e2e", "type": "function", "function": {"name": H.TOOL, "arguments": "{}"}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "done"}
            finish = "stop"
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for choice in ({"index": 0, "delta": message, "finish_reason": None}, {"index": 0, "delta": {}, "finish_reason": finish}):
                chunk = {"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "scripted", "choices": [choice]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            return
        for call in message.get("tool_calls") or []:
            call.pop("index", None)
        out = json.dumps({"id": "s", "object": "chat.completion", "created": 0, "model": "scripted",
                          "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                          "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


@pytest.fixture
def scripted_model():
    handler = type("Handler", (_ScriptedModel,), {"calls": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler.calls
    server.shutdown()
    server.server_close()


def _conversation(rig, url):
    rig.ran.clear()
    agent = _agent(url, max_iterations=4)
    result = agent.run_conversation("probe the file, please")
    tools = [m for m in result["messages"] if m.get("role") == "tool"]
    return result, tools


def test_full_run_crashing_guard_is_told_to_the_model(rig, scripted_model):
    url, calls = scripted_model
    hook = rig.plugin("guard", "raise RuntimeError('secret-payload')")
    rig.load()
    result, tools = _conversation(rig, url)
    assert not rig.ran
    assert result["final_response"] == "done"
    assert [json.loads(t["content"]) for t in tools] == [{"error": H.fail_closed(hook, "raised")}]
    # the model's next request carries the deny as the tool result, nothing of the exception
    sent = [m for m in calls[-1]["messages"] if m.get("role") == "tool"]
    assert H.fail_closed(hook, "raised") in sent[0]["content"] and "secret-payload" not in json.dumps(calls[-1])
    assert (rig.last()["hook"], rig.last()["failure"]) == (hook, "raised")
    assert rig.last()["call_id"] in ("call-e2e", None)  # None: 0.13.0 does not pass tool_call_id


def test_full_run_allow_twin(rig, scripted_model):
    url, _ = scripted_model
    rig.plugin("guard", "return None")
    rig.load()
    result, tools = _conversation(rig, url)
    assert rig.ran and result["final_response"] == "done"
    assert [json.loads(t["content"]) for t in tools] == [{"ok": True}]
