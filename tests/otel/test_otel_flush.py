"""A flush of the application's provider includes every decision made before it, and
``[audit] otel`` works beside ``[audit] path``; the tool call never waits on either."""

import json
import os
import subprocess
import sys
import threading
import time

from otel_helpers import CANARY, Toy, allow, deny_raised
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)

from failsecure import audit, otel
from failsecure.verdict import Failure


class SlowExporter(InMemoryLogRecordExporter):
    """The first export takes a while (a collector slow to answer), later ones do not."""

    def __init__(self, first=0.3):
        super().__init__()
        self.first = first
        self.calls = 0

    def export(self, batch):
        self.calls += 1
        if self.calls == 1:
            time.sleep(self.first)
        return super().export(batch)


def _outcomes(exporter):
    return [(dict(r.log_record.attributes)["failsecure.call_id"], dict(r.log_record.attributes)["failsecure.outcome"])
            for r in exporter.get_finished_logs()]


def test_force_flush_right_after_the_call_includes_its_decision(register_sink):
    exporter = SlowExporter()
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))  # the record is exported in emit()
    register_sink(otel.Sink(logger_provider=provider, span_events=False), "slow")
    toy = Toy()
    denied = deny_raised(toy, call_id="c-deny")
    allowed = allow(toy, call_id="c-allow")
    assert denied.denied and denied.primary.failure is Failure.RAISED
    assert not allowed.denied
    assert provider.force_flush(10000)  # what a test or a serverless handler does after the tool call
    assert _outcomes(exporter) == [("c-deny", "deny"), ("c-allow", "allow")]


def test_a_batching_provider_gets_the_record_on_the_calls_thread(register_sink):
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter, schedule_delay_millis=60000))
    sink = register_sink(otel.Sink(logger_provider=provider, span_events=False), "batching")
    toy = Toy()
    assert deny_raised(toy, call_id="c-deny").denied
    assert sink.pending() == 0  # emitted at once: the batch processor's on_emit is an in-memory append
    assert not allow(toy, call_id="c-allow").denied
    assert sink.pending() == 0
    assert provider.force_flush(10000)
    assert _outcomes(exporter) == [("c-deny", "deny"), ("c-allow", "allow")]
    provider.shutdown()


class HangingExporter:
    def __init__(self):
        self.release = threading.Event()

    def export(self, batch):
        self.release.wait(60)
        return LogRecordExportResult.SUCCESS

    def shutdown(self):
        self.release.set()

    def force_flush(self, timeout_millis=0):
        return True


def test_force_flush_with_a_hanging_exporter_keeps_its_own_timeout(register_sink):
    exporter = HangingExporter()
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    sink = register_sink(otel.Sink(logger_provider=provider, span_events=False), "hanging-flush")
    toy = Toy()
    try:
        assert deny_raised(toy, call_id="d1").denied and not allow(toy, call_id="a1").denied
        returned = []
        flusher = threading.Thread(target=lambda: returned.append(provider.force_flush(200)), daemon=True)
        flusher.start()
        flusher.join(30)
        assert returned, "force_flush did not return"  # bounded by the timeout it was given
        assert sink.pending() >= 1  # the worker is still stuck in the first export
    finally:
        exporter.release.set()
    assert sink.flush(10.0)


def test_the_global_provider_flush_includes_the_config_enabled_sinks_decisions(write_config, otel_globals):
    write_config("[audit]\notel = true\n")
    toy = Toy()
    assert deny_raised(toy, call_id="g-deny").denied
    assert not allow(toy, call_id="g-allow").denied
    otel_globals.logger_provider.force_flush(10000)
    got = [dict(r.log_record.attributes)["failsecure.call_id"] for r in otel_globals.logs.get_finished_logs()]
    assert got == ["g-deny", "g-allow"]


BOTH = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from opentelemetry._logs import set_logger_provider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
exporter = InMemoryLogRecordExporter()
provider = LoggerProvider()
provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
set_logger_provider(provider)
from otel_helpers import Toy, allow, deny_raised
toy = Toy()
assert deny_raised(toy, call_id="c-deny").denied
assert not allow(toy, call_id="c-allow").denied
provider.force_flush(10000)
records = [dict(r.log_record.attributes) for r in exporter.get_finished_logs()]
print(json.dumps([(a["failsecure.call_id"], a["failsecure.outcome"]) for a in records]))
"""


def _run_both(tmp_path, config_text):
    config = tmp_path / "failsecure.toml"
    config.write_text(config_text)
    env = dict(os.environ, FAILSECURE_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    done = subprocess.run([sys.executable, "-c", BOTH, os.path.dirname(__file__)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_otel_and_an_audit_path_both_receive_every_decision(tmp_path):
    """A fresh process: the OpenTelemetry sink is registered although the file listens too."""
    records, err = _run_both(tmp_path, '[audit]\npath = "audit.jsonl"\notel = true\n')
    assert records == [["c-deny", "deny"], ["c-allow", "allow"]]
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(e["call_id"], e["outcome"], e["failure"]) for e in lines] == [("c-deny", "deny", "raised"), ("c-allow", "allow", None)]
    assert CANARY not in err and CANARY not in (tmp_path / "audit.jsonl").read_text()


def test_an_audit_path_alone_sends_nothing_to_otel(tmp_path):
    """The twin: otel off, the file gets the decisions and OpenTelemetry none."""
    records, _ = _run_both(tmp_path, '[audit]\npath = "audit.jsonl"\n')
    assert records == []
    assert len((tmp_path / "audit.jsonl").read_text().splitlines()) == 2


def test_audit_flush_includes_the_otel_sinks(write_config, otel_globals):
    write_config("[audit]\notel = true\n")
    assert deny_raised(Toy(), call_id="f-deny").denied
    assert audit.flush(10.0)
    assert [dict(r.log_record.attributes)["failsecure.call_id"] for r in otel_globals.logs.get_finished_logs()] == ["f-deny"]
