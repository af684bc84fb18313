"""A failing, hanging or missing exporter never changes a decision nor blocks the tool call."""

import subprocess
import sys
import threading
import time

from otel_helpers import Toy, allow, deny_raised
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogRecordExportResult, SimpleLogRecordProcessor

from failsecure import audit, otel
from failsecure.verdict import Failure

#: what one decision may cost with a hanging exporter behind it (the audit path itself is
#: microseconds: this is a bound for slow CI machines, far below the exporter's hang)
BOUND = 0.25


class HangingExporter:
    def __init__(self):
        self.release = threading.Event()
        self.calls = 0

    def export(self, batch):
        self.calls += 1
        self.release.wait(30)
        return LogRecordExportResult.SUCCESS

    def shutdown(self):
        self.release.set()

    def force_flush(self, timeout_millis=0):
        return True


class RaisingLogger:
    def emit(self, *args, **kwargs):
        raise ConnectionError("collector at 10.0.0.1 refused: token=abc")  # text never reported


class RaisingProvider:
    def get_logger(self, *args, **kwargs):
        return RaisingLogger()


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def test_a_hanging_exporter_does_not_delay_decisions(register_sink, capsys):
    exporter = HangingExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))  # synchronous: the worst case
    sink = register_sink(otel.Sink(logger_provider=provider, queue_size=4), "hanging")
    toy = Toy()
    try:
        timings = []
        for i in range(12):
            denied, took = _timed(lambda i=i: deny_raised(toy, call_id=f"d{i}"))
            allowed, took2 = _timed(lambda i=i: allow(toy, call_id=f"a{i}"))
            assert denied.denied and denied.primary.failure is Failure.RAISED
            assert not allowed.denied
            timings += [took, took2]
        assert max(timings) < BOUND, timings
        assert exporter.calls == 1  # the worker is stuck in the first export
        assert sink.pending() == 4  # the queue is bounded
        assert audit.failures["otel"] == 24 - 1 - 4  # every dropped record is counted
        err = capsys.readouterr().err
        assert err.count("audit sink 'otel' failed (queue full") == 1  # said once
        assert not sink.flush(0.05)  # a bounded wait, not a hang
    finally:
        exporter.release.set()
    assert sink.flush(10.0)


def test_a_raising_provider_is_counted_and_reported_once(register_sink, capsys):
    sink = register_sink(otel.Sink(logger_provider=RaisingProvider()), "raising")
    toy = Toy()
    for i in range(3):
        decision = deny_raised(toy, call_id=f"d{i}")
        assert decision.denied and decision.primary.failure is Failure.RAISED
        assert not allow(toy, call_id=f"a{i}").denied  # the allow twin stays an allow
    assert sink.flush(5.0)
    assert audit.failures["otel"] == 6
    err = capsys.readouterr().err
    assert err.count("audit sink 'otel' failed (ConnectionError)") == 1
    assert "10.0.0.1" not in err and "token" not in err


def test_a_raising_exporter_does_not_flip_a_decision(register_sink):
    class RaisingExporter:
        def export(self, batch):
            raise OSError("disk full")

        def shutdown(self):
            pass

    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(RaisingExporter()))
    sink = register_sink(otel.Sink(logger_provider=provider), "raising-exporter")
    toy = Toy()
    assert deny_raised(toy).denied
    assert not allow(toy).denied
    assert sink.flush(5.0)


def test_a_span_that_raises_is_counted_not_raised(register_sink, monkeypatch, capsys):
    class BadSpan:
        def is_recording(self):
            return True

        def add_event(self, *args, **kwargs):
            raise ValueError("no")

    monkeypatch.setattr(otel._trace, "get_current_span", lambda ctx=None: BadSpan())
    sink = register_sink(otel.Sink(logger_provider=LoggerProvider()), "bad-span")
    toy = Toy()
    assert deny_raised(toy).denied and not allow(toy).denied
    assert sink.flush(5.0)
    assert audit.failures["otel"] == 2
    assert capsys.readouterr().err.count("span event: ValueError") == 1


MISSING = r"""
import sys
sys.modules["opentelemetry"] = None  # the extra is not installed
sys.path.insert(0, sys.argv[1])
from otel_helpers import Toy, allow, deny_raised
from failsecure import audit
toy = Toy()
for i in range(3):
    assert deny_raised(toy).denied
    assert not allow(toy).denied
print("decisions ok", audit._otel_state)
"""


def test_the_extra_missing_is_said_once_and_decisions_stand(tmp_path):
    config = tmp_path / "failsecure.toml"
    config.write_text("[audit]\notel = true\n")
    import os

    env = dict(os.environ, FAILSECURE_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    here = os.path.dirname(__file__)
    done = subprocess.run([sys.executable, "-c", MISSING, here], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "decisions ok False" in done.stdout
    line = f"failsecure: [audit] otel = true in {config}, but the OpenTelemetry extra is not installed"
    assert done.stderr.count(line) == 1, done.stderr
    assert "pip install 'failsecure[otel]'" in done.stderr


NO_PROVIDER = r"""
import sys
sys.path.insert(0, sys.argv[1])
from otel_helpers import Toy, deny_raised
from failsecure import otel
assert deny_raised(Toy()).denied
assert deny_raised(Toy()).denied
assert otel.sink().flush(5.0)
print("ok")
"""


def test_no_logger_provider_is_said_once(tmp_path):
    config = tmp_path / "failsecure.toml"
    config.write_text("[audit]\notel = true\n")
    import os

    env = dict(os.environ, FAILSECURE_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    env.pop("OTEL_PYTHON_LOGGER_PROVIDER", None)
    done = subprocess.run([sys.executable, "-c", NO_PROVIDER, os.path.dirname(__file__)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr
    assert done.stderr.count("this process has no OpenTelemetry LoggerProvider yet") == 1, done.stderr
