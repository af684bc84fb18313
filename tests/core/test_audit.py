import json
import logging
import subprocess
import sys
import threading

from core_helpers import validate
from failsecure import audit, guard, policy
from failsecure.adapter import Adapter
from failsecure.verdict import Failure

CANARY = "CANARY-7f3e9a-SECRET"


class Toy(Adapter):
    name = "toy"
    distribution = "failsecure-toy-not-installed"

    def to_verdict(self, native):
        return validate(native)

    def _patch(self):
        pass

    def _probe(self, gate):
        return False


def test_canary_never_reaches_message_log_or_file(write_config, tmp_path, caplog):
    write_config('[audit]\npath = "audit.jsonl"\n')
    toy = Toy()
    caplog.set_level(logging.DEBUG, logger="failsecure")

    def leaky(command):
        raise RuntimeError(f"could not parse {command}")

    outcome = toy.hook_call("toy:leaky", leaky, command=f"rm -rf / # {CANARY}")
    decision = toy.decide("shell", [outcome], call_id="c1", arguments={"command": CANARY})
    assert decision.denied and decision.primary.failure is Failure.RAISED
    assert audit.flush(10.0)
    text = (tmp_path / "audit.jsonl").read_text()
    assert CANARY not in (decision.reason or "")
    assert CANARY not in repr(decision)
    assert CANARY not in text
    assert all(CANARY not in (r.getMessage() + repr(r.__dict__)) for r in caplog.records)
    event = json.loads(text)
    assert event["exception_type"] == "RuntimeError" and event["failure"] == "raised"
    assert {"ts", "framework", "framework_version", "hook", "tool", "outcome", "failure", "exception_type", "elapsed_ms", "call_id"} <= set(event)
    assert event["framework"] == "toy" and event["tool"] == "shell" and event["call_id"] == "c1"
    assert event["outcome"] == "deny" and event["hook"] == "toy:leaky"


def test_allow_event_twin(write_config, tmp_path):
    write_config('[audit]\npath = "audit.jsonl"\n')
    toy = Toy()
    decision = toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")], call_id="c2")
    assert not decision.denied
    assert audit.flush(10.0)
    event = json.loads((tmp_path / "audit.jsonl").read_text())
    assert event["outcome"] == "allow" and event["failure"] is None and event["hook"] == "toy:ok"
    assert event["outcomes"] == [{"hook": "toy:ok", "outcome": "allow", "failure": None, "exception_type": None, "elapsed_ms": event["outcomes"][0]["elapsed_ms"]}]


def _write_many(path, tag, n):
    for i in range(n):
        audit.write_jsonl(path, {"tag": tag, "i": i, "pad": "x" * 2000})


def test_jsonl_is_safe_across_threads_and_processes(tmp_path):
    path = str(tmp_path / "a.jsonl")
    threads = [threading.Thread(target=_write_many, args=(path, f"t{k}", 50)) for k in range(4)]
    code = (
        "import json, sys; from failsecure import audit\n"
        "for i in range(50): audit.write_jsonl(sys.argv[1], {'tag': sys.argv[2], 'i': i, 'pad': 'x' * 2000})"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, path, f"p{k}"]) for k in range(2)]
    for w in threads:
        w.start()
    for w in threads:
        w.join()
    assert all(p.wait(timeout=60) == 0 for p in procs)
    lines = open(path).read().splitlines()
    assert len(lines) == 300
    assert all(json.loads(line)["pad"] == "x" * 2000 for line in lines)


def test_unwritable_audit_file_does_not_flip_the_decision(write_config, tmp_path, capsys):
    write_config(f'[audit]\npath = "{tmp_path}/no/such/dir/a.jsonl"\n')
    toy = Toy()
    assert not toy.decide("t", [toy.hook_call("toy:ok", lambda: "allow")]).denied
    assert toy.decide("t", [toy.hook_call("toy:no", lambda: "deny")]).denied
    audit.flush(10.0)
    assert "cannot write the audit file" in capsys.readouterr().err


def test_failure_events_log_at_warning(caplog):
    toy = Toy()
    caplog.set_level(logging.INFO, logger="failsecure")
    toy.decide("t", [guard.call("toy:x", lambda: 1 / 0, validate=validate)])
    toy.decide("t", [guard.call("toy:y", lambda: "allow", validate=validate)])
    levels = [(r.levelno, r.failsecure["hook"]) for r in caplog.records if hasattr(r, "failsecure")]
    assert levels == [(logging.WARNING, "toy:x"), (logging.INFO, "toy:y")]
    assert policy.current().error is None
