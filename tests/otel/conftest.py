import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from opentelemetry import trace  # noqa: E402
from opentelemetry._logs import set_logger_provider  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from failsecure import audit, otel, plugins, policy  # noqa: E402


class Globals:
    """The process's OpenTelemetry providers (set once: the API allows one each), with
    in-memory exporters the tests read and clear."""

    def __init__(self):
        self.logs = InMemoryLogRecordExporter()
        self.spans = InMemorySpanExporter()
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        set_logger_provider(self.logger_provider)
        trace.set_tracer_provider(self.tracer_provider)
        self.tracer = self.tracer_provider.get_tracer("agent")

    def clear(self):
        self.logs.clear()
        self.spans.clear()

    def records(self):
        """The log records that reached the global provider, once failsecure's queue drained."""
        sink = otel.sink()
        if sink is not None:
            assert sink.flush(5.0)
        return [r.log_record for r in self.logs.get_finished_logs()]


_globals = None


@pytest.fixture
def otel_globals():
    global _globals
    if _globals is None:
        _globals = Globals()
    _globals.clear()
    yield _globals
    _globals.clear()


@pytest.fixture(autouse=True)
def clean_config(tmp_path, monkeypatch):
    """Every test starts from defaults, in an empty cwd, with no audit failures counted."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FAILSECURE_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    policy.reload()
    audit.failures.clear()
    yield
    policy.reload()
    audit.failures.clear()


@pytest.fixture
def write_config(tmp_path, monkeypatch):
    def write(text, name="failsecure.toml"):
        path = tmp_path / name
        path.write_text(text)
        monkeypatch.setenv("FAILSECURE_CONFIG", str(path))
        return policy.reload()

    return write


@pytest.fixture
def register_sink():
    """Register sinks by hand for one test; unregistered after it."""
    registered = []

    def register(sink, name):
        plugins.register(sink, name=name)
        registered.append(sink)
        return sink

    yield register
    for sink in registered:
        plugins.unregister(sink)
