"""A scripted Gemini API (generateContent / streamGenerateContent) for the real Gemini
CLI, served on 127.0.0.1: the HTTP side only.

``model`` supplies the turns: ``lock``, ``requests`` (every request body is appended)
and ``answer(body) -> list of parts``. JSON-mode requests (the CLI's model router and
its other side queries ask for ``responseMimeType: application/json``) get a small
object that satisfies the schema they send. The server is also the CLI's HTTP(S)
proxy: a ``CONNECT`` or an absolute-URI request is refused with 403 and recorded in
``model.outside``, so anything that tries to leave the machine shows up in the test.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def fill_schema(schema):
    """A minimal value that satisfies a (Gemini-style) JSON schema."""
    if not isinstance(schema, dict):
        return None
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: fill_schema(sub) for name, sub in props.items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    return "nothing to do"


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
            self._send(200, b"{}")

        def do_POST(self):
            if not self.path.startswith("/"):
                return self._outside()
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            config = body.get("generationConfig") or {}
            usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
            if "countTokens" in self.path:
                return self._send(200, json.dumps({"totalTokens": 10}).encode())
            if config.get("responseMimeType") == "application/json":
                schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
                parts = [{"text": json.dumps(fill_schema(schema))}]
            else:
                with model.lock:
                    model.requests.append(body)
                parts = model.answer(body)
            reply = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                     "usageMetadata": usage, "modelVersion": "gemini-2.5-flash"}
            if ":streamGenerateContent" not in self.path:
                return self._send(200, json.dumps(reply).encode())
            data = ("data: %s\r\n\r\n" % json.dumps(reply)).encode()
            self._send(200, data, "text/event-stream")

    return Handler


def serve(model):
    """Start the API for ``model`` on a free loopback port: (server, base url)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(model))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1]
