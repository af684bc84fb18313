"""Red-team (rt40): the boundary's judged Later form under hermes' concurrent tool batch.

hermes runs a batch of parallel-safe tool calls on worker threads after judging them all
(``agent/tool_executor.py``). A call the agent loop judged with arguments hermes then
coerces by the tool's schema ("x" -> ["x"]) is matched at the registry by the grant's
Later form, made on the first execution that looks. While one worker makes a grant's
form (hermes' ``coerce_tool_args``, which logs through the host's logging handlers),
another worker looking for its own grant must wait for that form, not skip it: skipped,
its own judged call reads as ungoverned and is denied (upstream runs it)."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest

import failsecure_hermes_rig as H

TOOL = "ha_get_state"  # in hermes' parallel-safe set: a batch of it runs on worker threads
SCHEMA = {"name": TOOL, "description": "probe", "parameters": {"type": "object", "properties": {
    "a_items": {"type": "array", "items": {"type": "string"}},
    "b_items": {"type": "array", "items": {"type": "string"}}}}}


def batch_model(calls):
    """An OpenAI-compatible server whose first answer is one message calling every
    ``(tool, arguments)`` of ``calls`` (a batch), then done."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answered: list = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self.send_response(404)
                self.end_headers()
                return
            answered.append(1)
            if len(answered) == 1:
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call-{i}", "type": "function", "function": {"name": t, "arguments": json.dumps(a)}}
                    for i, (t, a) in enumerate(calls)]}
                finish = "tool_calls"
            else:
                message, finish = {"role": "assistant", "content": "done"}, "stop"
            if body.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                delta = dict(message, tool_calls=[dict(c, index=i) for i, c in enumerate(message.get("tool_calls") or [])] or None)
                if delta["tool_calls"] is None:
                    del delta["tool_calls"]
                for choice in ({"index": 0, "delta": delta, "finish_reason": None}, {"index": 0, "delta": {}, "finish_reason": finish}):
                    chunk = {"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "scripted", "choices": [choice]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                return
            out = json.dumps({"id": "s", "object": "chat.completion", "created": 0, "model": "scripted",
                              "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop():
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}/v1", stop


class SlowShipper(logging.Handler):
    """A host's log shipper that is slow now and then: the first record about ``a_items``
    (the worker's own coercion) and the second one (the form made at the registry) take
    a while; ``b_items`` records go at once. So the ``b`` worker reaches the registry
    first and makes the ``a`` call's form while the ``a`` worker arrives."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.a = 0

    def handle(self, record):  # ships each record on the thread that logs it, without a handler-wide lock
        self.emit(record)
        return True

    def emit(self, record):
        if "a_items" in (record.args or ()):
            self.a += 1
            time.sleep(0.3 if self.a == 1 else 0.8)


@pytest.fixture
def parallel_tool(rig):
    from tools.registry import registry

    saved = registry.get_entry(TOOL)  # hermes' own tool of that name: put back after
    ran: list = []
    lock = threading.Lock()

    def handler(args, **kwargs):
        with lock:
            ran.append(dict(args))
        return json.dumps({"ok": True})

    import inspect

    extra = {"override": True} if "override" in inspect.signature(registry.register).parameters else {}
    if saved is not None and not extra:  # before 0.18: a name is replaced in place
        with registry._lock:
            registry._tools.pop(TOOL, None)
    registry.register(name=TOOL, toolset=H.TOOLSET, schema=SCHEMA, handler=handler, **extra)
    shipper = SlowShipper()
    logger = logging.getLogger("model_tools")
    level = logger.level
    logger.addHandler(shipper)
    logger.setLevel(logging.INFO)
    try:
        yield ran
    finally:
        logger.removeHandler(shipper)
        logger.setLevel(level)
        with registry._lock:
            if saved is not None:
                registry._tools[TOOL] = saved
            else:
                registry._tools.pop(TOOL, None)


def run_batch(calls):
    import run_agent

    url, stop = batch_model(calls)
    try:
        agent = run_agent.AIAgent(base_url=url, api_key="x", provider="custom", model="scripted", quiet_mode=True,
                                  skip_memory=True, skip_context_files=True, enabled_toolsets=[H.TOOLSET], max_iterations=4)
        result = agent.run_conversation("look both up, please")
    finally:
        stop()
    return [m.get("content") for m in result["messages"] if m.get("role") == "tool"]


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


def test_concurrent_coerced_calls_each_run_on_their_grant(rig, parallel_tool):
    rig.plugin("guard", "return None")
    rig.load()
    told = run_batch([(TOOL, {"a_items": "x"}), (TOOL, {"b_items": "y"})])
    assert told == ['{"ok": true}', '{"ok": true}']
    assert sorted(parallel_tool, key=str) == [{"a_items": ["x"]}, {"b_items": ["y"]}]
    assert ungoverned(rig) == []


def test_concurrent_coerced_calls_a_denied_one_still_never_runs(rig, parallel_tool):
    rig.plugin("guard", "return {'action': 'block', 'message': 'no a'} if 'a_items' in kw['args'] else None")
    rig.load()
    told = run_batch([(TOOL, {"a_items": "x"}), (TOOL, {"b_items": "y"})])
    assert parallel_tool == [{"b_items": ["y"]}]
    assert any("no a" in (t or "") for t in told)
    assert ungoverned(rig) == []
