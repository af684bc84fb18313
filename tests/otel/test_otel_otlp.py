"""End to end: the OTLP/HTTP exporters send to a receiver on 127.0.0.1 that decodes the
protobuf requests (opentelemetry-proto), as a collector would."""

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otel_helpers import CANARY, Toy, allow, deny_raised

from failsecure import otel


class Receiver:
    """A minimal OTLP/HTTP receiver: keeps the raw bodies of /v1/logs and /v1/traces."""

    def __init__(self):
        self.bodies: dict = {"/v1/logs": [], "/v1/traces": []}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.bodies.setdefault(self.path, []).append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def logs(self):
        out = []
        for body in self.bodies["/v1/logs"]:
            request = ExportLogsServiceRequest()
            request.ParseFromString(body)
            for resource_logs in request.resource_logs:
                for scope_logs in resource_logs.scope_logs:
                    out += [(scope_logs.scope.name, record) for record in scope_logs.log_records]
        return out

    def spans(self):
        out = []
        for body in self.bodies["/v1/traces"]:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    out += list(scope_spans.spans)
        return out

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def _attrs(key_values):
    return {kv.key: _value(kv.value) for kv in key_values}


@pytest.fixture
def receiver(monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    got = Receiver()
    yield got
    got.close()


def test_decisions_arrive_at_an_otlp_receiver_inside_the_agent_trace(receiver, register_sink):
    resource = Resource.create({"service.name": "agent-under-test"})
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=receiver.url + "/v1/logs", timeout=5)))
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.url + "/v1/traces", timeout=5)))
    tracer = tracer_provider.get_tracer("agent")
    sink = register_sink(otel.Sink(logger_provider=logger_provider), "otlp")
    toy = Toy()
    try:
        with tracer.start_as_current_span("agent.tool_call.deny") as deny_span:
            assert deny_raised(toy, call_id="call-deny").denied
        with tracer.start_as_current_span("agent.tool_call.allow"):
            assert not allow(toy, call_id="call-allow").denied
        assert sink.flush(5.0)
        assert logger_provider.force_flush(10_000) and tracer_provider.force_flush(10_000)
    finally:
        logger_provider.shutdown()
        tracer_provider.shutdown()

    raw = b"".join(receiver.bodies["/v1/logs"] + receiver.bodies["/v1/traces"])
    assert raw and CANARY.encode() not in raw and b"could not parse" not in raw and b"rm -rf" not in raw

    records = {_attrs(r.attributes)["failsecure.call_id"]: (scope, r) for scope, r in receiver.logs()}
    assert set(records) == {"call-deny", "call-allow"}
    scope, deny = records["call-deny"]
    attrs = _attrs(deny.attributes)
    assert scope == otel.SCOPE and deny.event_name == otel.EVENT_NAME
    assert deny.body.string_value == "failsecure decision deny" and deny.severity_text == "WARN"
    assert attrs["failsecure.outcome"] == "deny" and attrs["failsecure.failure"] == "raised"
    assert attrs["failsecure.exception_type"] == "RuntimeError" and attrs["failsecure.hook"] == "toy:leaky"
    assert attrs["failsecure.tool"] == "shell" and attrs["gen_ai.tool.name"] == "shell"
    assert attrs["failsecure.framework"] == "toy" and attrs["failsecure.outcomes.hook"] == ["toy:leaky"]
    assert attrs["failsecure.outcomes.failure"] == ["raised"]
    context = deny_span.get_span_context()
    assert deny.trace_id == context.trace_id.to_bytes(16, "big") and deny.span_id == context.span_id.to_bytes(8, "big")
    _, allowed = records["call-allow"]
    assert _attrs(allowed.attributes)["failsecure.outcome"] == "allow" and allowed.severity_text == "INFO"
    assert "failsecure.failure" not in _attrs(allowed.attributes)

    spans = {span.name: span for span in receiver.spans()}
    [event] = spans["agent.tool_call.deny"].events
    assert event.name == otel.EVENT_NAME and _attrs(event.attributes) == attrs
    [event] = spans["agent.tool_call.allow"].events
    assert _attrs(event.attributes)["failsecure.outcome"] == "allow"


def test_an_unreachable_collector_does_not_delay_or_flip_decisions(register_sink):
    import socket
    import time

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"http://127.0.0.1:{port}/v1/logs", timeout=1)))
    sink = register_sink(otel.Sink(logger_provider=logger_provider), "unreachable")
    toy = Toy()
    try:
        start = time.perf_counter()
        for i in range(20):
            assert deny_raised(toy, call_id=f"d{i}").denied
            assert not allow(toy, call_id=f"a{i}").denied
        assert (time.perf_counter() - start) / 40 < 0.25
        assert sink.flush(5.0)
    finally:
        logger_provider.shutdown()
