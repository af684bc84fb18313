"""The sink with the SDK's in-memory exporters: log records, span events, the config switch."""

from otel_helpers import CANARY, Toy, allow, deny_raised
from opentelemetry._logs import SeverityNumber

from failsecure import audit, otel, plugins
from failsecure.verdict import Failure

DOCUMENTED = {
    "failsecure.framework", "failsecure.framework_version", "failsecure.hook", "failsecure.tool", "failsecure.outcome",
    "failsecure.failure", "failsecure.exception_type", "failsecure.elapsed_ms", "failsecure.call_id",
    "gen_ai.tool.name", "gen_ai.tool.call.id", "failsecure.outcomes.count", "failsecure.outcomes.hook",
    "failsecure.outcomes.outcome", "failsecure.outcomes.failure", "failsecure.outcomes.exception_type",
    "failsecure.outcomes.elapsed_ms",
}


def test_attributes_copy_documented_fields_only():
    event = audit.event(
        framework="toy", framework_version="1.0", tool="shell", call_id="c1", outcome="deny",
        primary=audit.entry("toy:a", "abstain", "raised", "KeyError", 0.5), elapsed_ms=0.5,
        outcomes=[audit.entry("toy:a", "abstain", "raised", "KeyError", 0.5), audit.entry("toy:b", "allow", None, None, 1)],
    )
    event["arguments"] = {"command": CANARY}  # a field the event never has: never copied
    event["stderr"] = CANARY
    attrs = otel.attributes(event)
    assert set(attrs) <= DOCUMENTED and CANARY not in repr(attrs)
    assert attrs["failsecure.outcome"] == "deny" and attrs["failsecure.failure"] == "raised"
    assert attrs["failsecure.exception_type"] == "KeyError" and attrs["gen_ai.tool.name"] == "shell"
    assert attrs["failsecure.outcomes.hook"] == ["toy:a", "toy:b"]
    assert attrs["failsecure.outcomes.failure"] == ["raised", ""]
    assert attrs["failsecure.outcomes.elapsed_ms"] == [0.5, 1.0]
    assert "failsecure.framework_version" in attrs and attrs["failsecure.outcomes.count"] == 2


def test_attributes_leave_out_absent_values():
    event = audit.event(framework="toy", framework_version=None, tool=None, call_id=None, outcome="allow",
                        primary=None, elapsed_ms=0.0, outcomes=[])
    attrs = otel.attributes(event)
    assert "failsecure.tool" not in attrs and "failsecure.hook" not in attrs and "failsecure.failure" not in attrs
    assert attrs["failsecure.outcome"] == "allow" and attrs["failsecure.outcomes.count"] == 0


def test_config_enabled_deny_is_a_log_record_and_a_span_event(write_config, otel_globals):
    write_config("[audit]\notel = true\n")
    toy = Toy()
    with otel_globals.tracer.start_as_current_span("agent.tool_call") as span:
        decision = deny_raised(toy)
        trace_id, span_id = span.get_span_context().trace_id, span.get_span_context().span_id
    assert decision.denied and decision.primary.failure is Failure.RAISED
    [record] = otel_globals.records()
    attrs = dict(record.attributes)
    assert record.event_name == otel.EVENT_NAME and record.body == "failsecure decision deny"
    assert record.severity_number is SeverityNumber.WARN
    assert attrs["failsecure.outcome"] == "deny" and attrs["failsecure.failure"] == "raised"
    assert attrs["failsecure.exception_type"] == "RuntimeError" and attrs["failsecure.hook"] == "toy:leaky"
    assert attrs["failsecure.call_id"] == "c-deny" and attrs["failsecure.tool"] == "shell"
    assert record.trace_id == trace_id and record.span_id == span_id  # inside the agent's trace
    [finished] = otel_globals.spans.get_finished_spans()
    [span_event] = [e for e in finished.events if e.name == otel.EVENT_NAME]
    assert dict(span_event.attributes) == attrs
    assert set(attrs) <= DOCUMENTED
    everything = repr(attrs) + repr(record.body) + repr(finished.to_json())
    assert CANARY not in everything and "could not parse" not in everything


def test_config_enabled_allow_twin(write_config, otel_globals):
    write_config("[audit]\notel = true\n")
    with otel_globals.tracer.start_as_current_span("agent.tool_call"):
        decision = allow(Toy())
    assert not decision.denied
    [record] = otel_globals.records()
    assert record.severity_number is SeverityNumber.INFO and record.body == "failsecure decision allow"
    attrs = dict(record.attributes)
    assert attrs["failsecure.outcome"] == "allow" and "failsecure.failure" not in attrs
    assert attrs["failsecure.outcomes.hook"] == ("toy:ok",) or list(attrs["failsecure.outcomes.hook"]) == ["toy:ok"]
    [finished] = otel_globals.spans.get_finished_spans()
    assert [e.name for e in finished.events] == [otel.EVENT_NAME]


def test_no_span_no_span_event_but_a_record(write_config, otel_globals):
    write_config("[audit]\notel = true\n")
    decision = deny_raised(Toy())
    assert decision.denied
    [record] = otel_globals.records()
    assert record.trace_id in (0, None) and dict(record.attributes)["failsecure.outcome"] == "deny"
    assert otel_globals.spans.get_finished_spans() == ()


def test_config_off_sends_nothing(write_config, otel_globals):
    write_config("[audit]\notel = true\n")
    deny_raised(Toy())  # the sink is registered now
    assert otel.sink() is not None and len(otel_globals.records()) == 1
    otel_globals.clear()
    write_config('[audit]\notel = false\n')
    with otel_globals.tracer.start_as_current_span("agent.tool_call"):
        assert deny_raised(Toy()).denied
    assert otel_globals.records() == []
    [finished] = otel_globals.spans.get_finished_spans()
    assert finished.events == ()


def test_listening_counts_the_otel_sink(write_config, otel_globals):
    write_config("[audit]\notel = true\n")
    assert audit.listening(None, False)
    assert any(name == otel.PLUGIN_NAME for name, _ in plugins.manager().list_name_plugin())


def test_a_sink_registered_by_hand_with_its_own_provider(register_sink, otel_globals):
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    sink = register_sink(otel.Sink(logger_provider=provider, span_events=False), "by-hand")
    with otel_globals.tracer.start_as_current_span("agent.tool_call"):
        assert deny_raised(Toy()).denied
        assert not allow(Toy()).denied
    assert sink.flush(5.0)
    outcomes = [dict(r.log_record.attributes)["failsecure.outcome"] for r in exporter.get_finished_logs()]
    assert outcomes == ["deny", "allow"]
    [finished] = otel_globals.spans.get_finished_spans()
    assert finished.events == ()  # span_events=False
    assert otel_globals.records() == []  # the global provider got nothing: config is off
