"""Red-team reproducer for the hermes-agent tool boundary (issue 29), in a real
``AIAgent.run_conversation``: a call the gates allowed and then denied (hermes'
tool-execution middleware changed its arguments, the gates denied the change) never
ran; the grant its first decision made must not be left for a wrapper tool to run the
tool on."""

from __future__ import annotations

import json

import failsecure_hermes_rig as H
import pytest

POLICY = """
def hook(**kw):
    if 'forbidden' in str(kw.get('args', {}).get('path', '')):
        return {'action': 'block', 'message': 'policy: forbidden path'}
    return None

def register(ctx):
    ctx.register_hook('pre_tool_call', hook)
"""

# rewrites the probe tool's path (only when hermes' own dispatch runs it)
MIDDLEWARE = """
def mw(next_call=None, args=None, tool_name=None, **kw):
    if tool_name == {tool!r}:
        return next_call(dict(args, path={new!r}))
    return next_call(args)

def register(ctx):
    ctx.register_middleware('tool_execution', mw)
"""


def scripted(steps):
    """An OpenAI-compatible server on 127.0.0.1 whose n-th answer calls ``steps[n]``
    ((tool, arguments)); then it says done. Non-streaming and streaming."""
    import threading
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
            n = len(answered)
            answered.append(1)
            if n < len(steps):
                tool, arguments = steps[n]
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"index": 0, "id": f"call-{n}", "type": "function",
                     "function": {"name": tool, "arguments": json.dumps(arguments)}}]}
                finish = "tool_calls"
            else:
                message, finish = {"role": "assistant", "content": "done"}, "stop"
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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop():
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}/v1", stop


def run(steps) -> list:
    import run_agent

    url, stop = scripted(steps)
    try:
        agent = run_agent.AIAgent(base_url=url, api_key="x", provider="custom", model="scripted", quiet_mode=True,
                                  skip_memory=True, skip_context_files=True, enabled_toolsets=[H.TOOLSET], max_iterations=6)
        result = agent.run_conversation("probe the file, please")
    finally:
        stop()
    return [m.get("content") for m in result["messages"] if m.get("role") == "tool"]


def plugin(rig, stem, body):
    name = f"{stem}_{next(H._serial)}"
    folder = rig.home / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(f"name: {name}\nversion: '1.0'\n")
    (folder / "__init__.py").write_text(body)
    rig.enabled.append(name)


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned"]


OK = {"path": "/srv/ok"}


def test_a_call_the_gates_denied_after_a_middleware_change_leaves_no_grant(rig):
    pytest.importorskip("hermes_cli.middleware")
    plugin(rig, "a_policy", POLICY)
    plugin(rig, "b_middleware", MIDDLEWARE.format(tool=H.TOOL, new="/srv/forbidden"))
    rig.load()
    told = run([(H.TOOL, OK), (H.WRAPPER, OK)])
    assert "policy: forbidden path" in told[0]
    assert rig.ran == [], "the wrapper ran the probe tool on the denied call's grant"
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(H.TOOL, "deny")]


def test_a_middleware_change_the_gates_allow_runs_once(rig):
    """Allow twin: the change is allowed; the tool runs once, with the changed arguments."""
    pytest.importorskip("hermes_cli.middleware")
    plugin(rig, "a_policy", POLICY)
    plugin(rig, "b_middleware", MIDDLEWARE.format(tool=H.TOOL, new="/srv/also-ok"))
    rig.load()
    told = run([(H.TOOL, OK)])
    assert rig.ran == [{"path": "/srv/also-ok"}], (told, [(e["tool"], e["outcome"], e["failure"], e["hook"]) for e in rig.events()])
    assert ungoverned(rig) == []
