"""A scripted Anthropic Messages API for the bundled Claude Code CLI, served on 127.0.0.1:
the HTTP side only. ``model`` supplies the turns: ``lock``, ``requests`` (every request
body is appended) and ``answer(body) -> (content blocks, stop reason)``. Used by the
Claude Code end-to-end tests and the claude-agent-sdk adapter tests."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def handler(model):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _json(self, obj, status=200):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            self._json({"data": [], "has_more": False})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                self._json({"input_tokens": 10})
                return
            with model.lock:
                model.requests.append(body)
            blocks, stop = model.answer(body)
            name = body.get("model", "claude-sonnet-4-5")
            usage = {"input_tokens": 10, "output_tokens": 5}
            if not body.get("stream"):
                self._json({"id": "msg_scripted", "type": "message", "role": "assistant", "model": name, "content": blocks,
                            "stop_reason": stop, "stop_sequence": None, "usage": usage})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()

            def event(kind, data):
                self.wfile.write(("event: %s\ndata: %s\n\n" % (kind, json.dumps(data))).encode())

            event("message_start", {"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant",
                  "model": name, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})
            for index, block in enumerate(blocks):
                if block["type"] == "tool_use":
                    start = dict(block, input={})
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                else:
                    start = {"type": "text", "text": ""}
                    delta = {"type": "text_delta", "text": block["text"]}
                event("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
                event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                event("content_block_stop", {"type": "content_block_stop", "index": index})
            event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}})
            event("message_stop", {"type": "message_stop"})
            self.wfile.flush()
            self.close_connection = True

    return Handler


def serve(model):
    """Start the API for ``model`` on a free loopback port: (server, base url)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(model))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1]
