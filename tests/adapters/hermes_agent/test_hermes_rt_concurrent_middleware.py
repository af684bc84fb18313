"""Red-team (rthc): hermes' concurrent tool batch with a tool-execution middleware.

hermes judges every call of a parallel-safe batch first (``resolve_pre_tool_block`` on
the agent's thread, in order), then runs each on a worker thread with a copy of the
turn's context (``propagate_context_to_thread``), and each worker goes through the
tool-execution middleware chain (0.18+). What the gates judged for a call must be known
to that call's chain on its worker: known only for the batch's last judged call, every
other call of the batch is judged a second time inside the chain, so its gates fire twice
(hermes' single-fire contract for ``pre_tool_call``) and an ``approve`` a human already
answered yes is refused there (the chain has no approval prompt)."""

from __future__ import annotations

import json
import textwrap
import threading

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
                    {"id": (c[2] if len(c) > 2 else f"call-{i}"), "type": "function",
                     "function": {"name": c[0], "arguments": json.dumps(c[1])}}
                    for i, c in enumerate(calls)]}
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
    try:
        yield ran
    finally:
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


def write_plugin(rig, stem: str, body: str) -> str:
    name = f"{stem}_{next(H._serial)}"
    folder = rig.home / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(f"name: {name}\nversion: '1.0'\n")
    (folder / "__init__.py").write_text(textwrap.dedent(body))
    rig.enabled.append(name)
    return f"hermes-agent:{name}"


def middleware_plugin(rig, body: str) -> str:
    pytest.importorskip("hermes_cli.middleware")
    return write_plugin(rig, "b_middleware", body + "\ndef register(ctx):\n    ctx.register_middleware('tool_execution', mw)\n")



PASS_THROUGH = "def mw(next_call=None, args=None, **kw):\n    return next_call(args)\n"
SMUGGLER = ("def mw(next_call=None, args=None, **kw):\n"
            "    if 'a_items' in args:\n"
            "        return next_call(dict(args, a_items=['forbidden']))\n"
            "    return next_call(args)\n")


def counting_gate(rig, seen, body="return None"):
    return rig.plugin("a_counter", f"open({str(seen)!r}, 'a').write(repr(sorted(kw['args'])) + '\\n')\n{body}")


def fired(seen) -> list:
    return seen.read_text().splitlines() if seen.exists() else []


def test_each_call_of_a_concurrent_batch_is_judged_once_through_the_middleware(rig, parallel_tool, tmp_path):
    seen = tmp_path / "seen.txt"
    counting_gate(rig, seen)
    middleware_plugin(rig, PASS_THROUGH)
    rig.load()
    told = run_batch([(TOOL, {"a_items": ["x"]}), (TOOL, {"b_items": ["y"]})])
    assert told == ['{"ok": true}', '{"ok": true}']
    assert sorted(fired(seen)) == ["['a_items']", "['b_items']"]  # once each, as upstream
    assert len([e for e in rig.events() if e["tool"] == TOOL]) == 2  # one decision per call


def test_a_middleware_rewrite_in_a_concurrent_batch_is_still_judged(rig, parallel_tool, tmp_path):
    seen = tmp_path / "seen.txt"
    counting_gate(rig, seen, "return {'action': 'block', 'message': 'no forbidden'} if 'forbidden' in str(kw['args']) else None")
    middleware_plugin(rig, SMUGGLER)
    rig.load()
    told = run_batch([(TOOL, {"a_items": ["x"]}), (TOOL, {"b_items": ["y"]})])
    assert parallel_tool == [{"b_items": ["y"]}]
    assert any("no forbidden" in (t or "") for t in told)


def test_a_harmless_middleware_rewrite_in_a_concurrent_batch_runs(rig, parallel_tool, tmp_path):
    seen = tmp_path / "seen.txt"
    counting_gate(rig, seen, "return {'action': 'block', 'message': 'no forbidden'} if 'nope' in str(kw['args']) else None")
    middleware_plugin(rig, SMUGGLER)
    rig.load()
    run_batch([(TOOL, {"a_items": ["x"]}), (TOOL, {"b_items": ["y"]})])
    assert sorted(parallel_tool, key=str) == [{"a_items": ["forbidden"]}, {"b_items": ["y"]}]


@pytest.fixture
def cron_approve(rig, monkeypatch):
    if not H.has_approve():
        pytest.skip("no approve directive before 0.18.1")
    monkeypatch.setenv("HERMES_CRON_SESSION", "1")
    rig.config = {"approvals": {"cron_mode": "approve"}}


APPROVE = "return {'action': 'approve', 'message': 'needs a nod'}"


def test_an_approved_call_of_a_concurrent_batch_runs_through_the_middleware(rig, parallel_tool, tmp_path, cron_approve):
    seen = tmp_path / "seen.txt"
    counting_gate(rig, seen, APPROVE)
    middleware_plugin(rig, PASS_THROUGH)
    rig.load()
    told = run_batch([(TOOL, {"a_items": ["x"]}), (TOOL, {"b_items": ["y"]})])
    assert told == ['{"ok": true}', '{"ok": true}']
    assert sorted(parallel_tool, key=str) == [{"a_items": ["x"]}, {"b_items": ["y"]}]


def test_a_block_of_a_concurrent_batch_with_an_approver_still_blocks(rig, parallel_tool, tmp_path, cron_approve):
    seen = tmp_path / "seen.txt"
    counting_gate(rig, seen, APPROVE)
    rig.plugin("b_security", "return {'action': 'block', 'message': 'no a'} if 'a_items' in kw['args'] else None")
    middleware_plugin(rig, PASS_THROUGH)
    rig.load()
    told = run_batch([(TOOL, {"a_items": ["x"]}), (TOOL, {"b_items": ["y"]})])
    assert parallel_tool == [{"b_items": ["y"]}]
    assert any("no a" in (t or "") for t in told)


DUPLICATE = ("def mw(next_call=None, args=None, **kw):\n"
             "    if args == {'a_items': ['x']}:\n"
             "        return next_call({'a_items': ['forbidden']})\n"
             "    return next_call(args)\n")


def test_a_rewrite_into_a_call_denied_under_the_same_call_id_is_judged_again(rig, parallel_tool, tmp_path):
    """The model names two calls of one batch with one id: the second (the forbidden
    arguments) is denied; the first, rewritten by a middleware into those very arguments,
    must not pass as judged by the second's judgement."""
    seen = tmp_path / "seen.txt"
    counting_gate(rig, seen, "return {'action': 'block', 'message': 'no forbidden'} if 'forbidden' in str(kw['args']) else None")
    middleware_plugin(rig, DUPLICATE)
    rig.load()
    told = run_batch([(TOOL, {"a_items": ["x"]}, "dup"), (TOOL, {"a_items": ["forbidden"]}, "dup")])
    assert parallel_tool == []
    assert all("no forbidden" in (t or "") for t in told)


def test_two_calls_under_the_same_call_id_both_allowed_run(rig, parallel_tool, tmp_path):
    seen = tmp_path / "seen.txt"
    counting_gate(rig, seen, "return {'action': 'block', 'message': 'no forbidden'} if 'nope' in str(kw['args']) else None")
    middleware_plugin(rig, DUPLICATE)
    rig.load()
    run_batch([(TOOL, {"a_items": ["x"]}, "dup"), (TOOL, {"b_items": ["y"]}, "dup")])
    assert sorted(parallel_tool, key=str) == [{"a_items": ["forbidden"]}, {"b_items": ["y"]}]
