"""A scripted OpenAI Responses API for the real Codex CLI, served on 127.0.0.1: the
HTTP side only.

``model`` supplies the turns: ``lock``, ``requests`` (every request body is appended)
and ``answer(body) -> list of output items`` (a ``function_call`` or a ``message``).
Answers are streamed as the Responses API's server-sent events. The server is also
the CLI's HTTP(S) proxy: a ``CONNECT`` or an absolute-URI request is refused with 403
and recorded in ``model.outside``, so anything that tries to leave the machine shows
up in the test.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def handler(model):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status, data, kind="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _outside(self):
            with model.lock:
                model.outside.append("%s %s" % (self.command, self.path))
            self._send(403, b"offline")

        def do_CONNECT(self):
            self._outside()

        def do_GET(self):
            if not self.path.startswith("/"):
                return self._outside()
            self._send(200, json.dumps({"object": "list", "data": [], "models": []}).encode())

        def do_POST(self):
            if not self.path.startswith("/"):
                return self._outside()
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            if not self.path.endswith("/responses"):
                return self._send(404, b"{}")
            with model.lock:
                model.requests.append(body)
                number = len(model.requests)
            items = model.answer(body)
            rid = "resp_scripted_%d" % number
            usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                     "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
            chunks = []

            def event(kind, data):
                data = dict(data, type=kind)
                chunks.append(("event: %s\ndata: %s\n\n" % (kind, json.dumps(data))).encode())

            event("response.created", {"response": {"id": rid, "object": "response", "status": "in_progress", "output": []}})
            for index, item in enumerate(items):
                event("response.output_item.added", {"output_index": index, "item": dict(item, status="in_progress")})
                event("response.output_item.done", {"output_index": index, "item": item})
            event("response.completed", {"response": {"id": rid, "object": "response", "status": "completed",
                                                      "output": items, "usage": usage}})
            self._send(200, b"".join(chunks), "text/event-stream")

    return Handler


def serve(model):
    """Start the API for ``model`` on a free loopback port: (server, base url)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(model))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1]
