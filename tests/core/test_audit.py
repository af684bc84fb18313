import json
import logging
import os
import subprocess
import sys
import threading

import pytest
from core_helpers import validate

from failsecure import audit, guard, plugins, policy
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
    assert audit.flush(10.0)  # the records reach the handlers on the log lane
    levels = [(r.levelno, r.failsecure["hook"]) for r in caplog.records if hasattr(r, "failsecure")]
    assert levels == [(logging.WARNING, "toy:x"), (logging.INFO, "toy:y")]
    assert policy.current().error is None


# ---------------------------------------------------------------- sinks off the tool call's thread
#
# Each decision below is made on a thread of its own, joined with a generous bound: before
# the sinks left the tool call's thread, a stuck sink held the call (and the test) forever.

STUCK = 10.0  # seconds a decision may take here before it counts as held by a sink


@pytest.fixture(autouse=True)
def audit_counters():
    audit.failures.clear()
    audit.dropped.clear()
    yield
    audit.flush(10.0)
    audit.failures.clear()
    audit.dropped.clear()


def _decide_off_thread(toy, hook, answer, call_id, config=None):
    """(decision or None when it did not return within STUCK seconds)."""
    found = []

    def run():
        if config is not None:
            with policy.using(config):
                found.append(toy.decide("shell", [toy.hook_call(hook, lambda: answer)], call_id=call_id, arguments={"c": CANARY}))
        else:
            found.append(toy.decide("shell", [toy.hook_call(hook, lambda: answer)], call_id=call_id, arguments={"c": CANARY}))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(STUCK)
    return found[0] if found else None


class HangingSink:
    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.events = []

    @plugins.hookimpl
    def failsecure_audit(self, event):
        self.entered.set()
        self.release.wait(60)
        self.events.append(event)


@pytest.fixture
def hanging_sink():
    sink = HangingSink()
    plugins.register(sink, name="hanging-sink")
    yield sink
    sink.release.set()
    audit.flush(10.0)
    plugins.unregister(sink)


def test_a_hanging_plugin_sink_does_not_hold_the_call(hanging_sink, write_config, tmp_path):
    write_config('[audit]\npath = "audit.jsonl"\n')
    toy = Toy()
    denied = _decide_off_thread(toy, "toy:no", "deny", "c-deny")
    allowed = _decide_off_thread(toy, "toy:ok", "allow", "c-allow")
    assert denied is not None and denied.denied and denied.primary.hook == "toy:no" and denied.primary.failure is None
    assert allowed is not None and not allowed.denied and allowed.primary.hook == "toy:ok"
    assert hanging_sink.entered.wait(STUCK)  # the sink got the first event, on the writer thread
    assert not audit.flush(0.05)  # a bounded wait, not a hang: the sink still holds its event
    # the file is its own lane: a hanging plugin sink does not hold it back
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(e["call_id"], e["outcome"]) for e in lines] == [("c-deny", "deny"), ("c-allow", "allow")]
    hanging_sink.release.set()
    assert audit.flush(STUCK)
    assert [(e["call_id"], e["outcome"]) for e in hanging_sink.events] == [("c-deny", "deny"), ("c-allow", "allow")]


def test_plugin_sinks_see_the_tool_calls_context(write_config):
    """The sinks run on the writer thread, in a copy of the tool call's context."""
    seen = []

    class ContextSink:
        @plugins.hookimpl
        def failsecure_audit(self, event):
            seen.append((event["call_id"], policy.current().timeout, threading.current_thread() is threading.main_thread()))

    sink = ContextSink()
    plugins.register(sink, name="context-sink")
    try:
        toy = Toy()
        with policy.using(policy.Config(timeout=7.0)):
            assert toy.decide("shell", [toy.hook_call("toy:no", lambda: "deny")], call_id="c1").denied
            assert not toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")], call_id="c2").denied
        assert audit.flush(STUCK)
    finally:
        plugins.unregister(sink)
    assert seen == [("c1", 7.0, False), ("c2", 7.0, False)]


def test_a_fifo_without_a_reader_does_not_hold_the_call(tmp_path, capsys):
    fifo = tmp_path / "audit.fifo"
    os.mkfifo(fifo)
    config = policy.Config(audit_path=str(fifo))
    toy = Toy()
    denied = _decide_off_thread(toy, "toy:no", "deny", "c-deny", config)
    allowed = _decide_off_thread(toy, "toy:ok", "allow", "c-allow", config)
    assert denied is not None and denied.denied and denied.primary.hook == "toy:no"
    assert allowed is not None and not allowed.denied
    assert audit.flush(STUCK)
    assert audit.dropped.get("file") == 2 and audit.status()["dropped"]["file"] == 2
    err = capsys.readouterr().err
    assert err.count(f"cannot write the audit file {fifo} (OSError ENXIO: a FIFO with no reader)") == 1, err
    assert CANARY not in err


def test_a_fifo_with_a_reader_gets_whole_lines(tmp_path):
    """The allow twin of the FIFO case: a reader is there, the lines arrive whole."""
    fifo = tmp_path / "audit.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        config = policy.Config(audit_path=str(fifo))
        toy = Toy()
        assert _decide_off_thread(toy, "toy:no", "deny", "c-deny", config).denied
        assert not _decide_off_thread(toy, "toy:ok", "allow", "c-allow", config).denied
        assert audit.flush(STUCK)
        lines = [json.loads(line) for line in os.read(reader, 1 << 16).decode().splitlines()]
    finally:
        os.close(reader)
    assert [(e["call_id"], e["outcome"]) for e in lines] == [("c-deny", "deny"), ("c-allow", "allow")]
    assert not audit.dropped


HOLD_LOCK = (
    "import fcntl, sys\n"
    "f = open(sys.argv[1], 'a')\n"
    "fcntl.flock(f, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_another_process_holding_the_file_lock_does_not_hold_the_call(write_config, tmp_path):
    write_config('[audit]\npath = "audit.jsonl"\n')
    path = tmp_path / "audit.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        toy = Toy()
        denied = _decide_off_thread(toy, "toy:no", "deny", "c-deny")
        allowed = _decide_off_thread(toy, "toy:ok", "allow", "c-allow")
        assert denied is not None and denied.denied and denied.primary.hook == "toy:no"
        assert allowed is not None and not allowed.denied
    finally:
        holder.stdin.close()
        holder.wait(30)
    assert audit.flush(STUCK)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["call_id"], e["outcome"]) for e in lines] == [("c-deny", "deny"), ("c-allow", "allow")]
    assert not audit.dropped


def test_events_land_complete_and_in_order(write_config, tmp_path):
    write_config('[audit]\npath = "audit.jsonl"\n')
    toy = Toy()

    def calls(tag):
        for i in range(50):
            answer = "deny" if i % 3 == 0 else "allow"
            decision = toy.decide("shell", [toy.hook_call("toy:g", lambda a=answer: a)], call_id=f"{tag}-{i}")
            assert decision.denied is (answer == "deny")

    threads = [threading.Thread(target=calls, args=(f"t{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    calls("main")
    for t in threads:
        t.join()
    assert audit.flush(STUCK)
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert len(lines) == 250
    for tag in ("main", "t0", "t1", "t2", "t3"):
        mine = [e for e in lines if e["call_id"].startswith(tag + "-")]
        assert [e["call_id"] for e in mine] == [f"{tag}-{i}" for i in range(50)]  # each thread's own order
        assert [e["outcome"] for e in mine] == ["deny" if i % 3 == 0 else "allow" for i in range(50)]


def test_a_full_queue_drops_counts_and_says_so_once(hanging_sink, monkeypatch, capsys):
    monkeypatch.setattr(audit, "QUEUE_SIZE", 3)
    toy = Toy()
    assert toy.decide("shell", [toy.hook_call("toy:no", lambda: "deny")], call_id="c0", arguments={"c": CANARY}).denied
    assert hanging_sink.entered.wait(STUCK)  # the writer holds c0 in the sink; the queue is empty
    for i in range(1, 10):
        answer = "deny" if i % 2 else "allow"
        decision = _decide_off_thread(toy, "toy:g", answer, f"c{i}")
        assert decision is not None and decision.denied is (answer == "deny")
    assert audit.dropped == {"plugins": 6} and audit.failures == {"plugins": 6}
    err = capsys.readouterr().err
    assert err.count("the audit plugins queue is full") == 1, err
    assert CANARY not in err and "c7" not in err
    hanging_sink.release.set()
    assert audit.flush(STUCK)
    assert [e["call_id"] for e in hanging_sink.events] == ["c0", "c1", "c2", "c3"]


EXITING = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from test_audit import Toy
from failsecure import plugins

class SlowSink:
    @plugins.hookimpl
    def failsecure_audit(self, event):
        time.sleep(0.02)
        with open(sys.argv[2], "a") as f:
            f.write(event["call_id"] + "\n")

plugins.register(SlowSink(), name="slow")
toy = Toy()
for i in range(20):
    answer = "deny" if i % 2 else "allow"
    assert toy.decide("shell", [toy.hook_call("toy:g", lambda a=answer: a)], call_id=f"c{i}").denied is (answer == "deny")
print("decided")
"""


def test_the_interpreters_exit_writes_what_is_queued(tmp_path):
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "audit.jsonl"\n')
    env = dict(os.environ, FAILSECURE_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    done = subprocess.run([sys.executable, "-c", EXITING, os.path.dirname(__file__), str(tmp_path / "sink.txt")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "decided" in done.stdout, done.stderr
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [e["call_id"] for e in lines] == [f"c{i}" for i in range(20)]
    assert (tmp_path / "sink.txt").read_text().split() == [f"c{i}" for i in range(20)]


FORKING = r"""
import os, sys, threading, time
sys.path.insert(0, sys.argv[1])
from test_audit import Toy
from failsecure import audit, policy

fifo, good = sys.argv[2], sys.argv[3]
os.mkfifo(fifo)
reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader that never reads
writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
try:
    while True:
        os.write(writer, b"x" * 4096)  # the pipe is full: the next write blocks
except BlockingIOError:
    pass
toy = Toy()

def stuck():
    with policy.using(policy.Config(audit_path=fifo)):
        toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")], call_id="stuck")

threading.Thread(target=stuck, daemon=True).start()
end = time.monotonic() + 20
while not audit._file_lock.locked():  # a thread holds the audit file's lock, stuck in write()
    assert time.monotonic() < end, "the lock was never taken"
    time.sleep(0.005)
time.sleep(0.05)
pid = os.fork()
if pid == 0:
    with policy.using(policy.Config(audit_path=good)):
        denied = toy.decide("shell", [toy.hook_call("toy:no", lambda: "deny")], call_id="child-deny").denied
        allowed = not toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")], call_id="child-allow").denied
    getattr(audit, "flush", lambda timeout: None)(10.0)
    text = open(good).read() if os.path.exists(good) else ""
    os._exit(0 if denied and allowed and "child-deny" in text and "child-allow" in text and "stuck" not in text else 3)
end = time.monotonic() + 20
while True:
    waited, status = os.waitpid(pid, os.WNOHANG)
    if waited:
        print("child", os.waitstatus_to_exitcode(status), flush=True)
        break
    if time.monotonic() > end:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("child hung", flush=True)
        break
    time.sleep(0.02)
os._exit(0)
"""


def test_a_fork_while_a_thread_holds_the_audit_lock_does_not_hang_the_child(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    env.pop("FAILSECURE_CONFIG", None)
    done = subprocess.run([sys.executable, "-c", FORKING, os.path.dirname(__file__), str(tmp_path / "a.fifo"), str(tmp_path / "child.jsonl")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "child 0", (done.stdout, done.stderr)


class _BlockingHandler(logging.Handler):
    """An application log handler stuck on its output (a pipe nobody reads)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.entered = threading.Event()
        self.release = threading.Event()
        self.seen = []

    def emit(self, record):
        self.entered.set()
        self.release.wait(60)
        self.seen.append((record.failsecure["call_id"], record.threadName, policy.current().timeout))


@pytest.fixture
def blocking_handler():
    handler = _BlockingHandler()
    logger = logging.getLogger("failsecure")
    saved = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    handler.release.set()
    audit.flush(10.0)
    logger.removeHandler(handler)
    logger.setLevel(saved)


def test_a_blocking_log_handler_does_not_hold_the_call(blocking_handler):
    toy = Toy()
    denied = _decide_off_thread(toy, "toy:no", "deny", "c-deny")
    allowed = _decide_off_thread(toy, "toy:ok", "allow", "c-allow")
    assert denied is not None and denied.denied and denied.primary.hook == "toy:no"
    assert allowed is not None and not allowed.denied
    assert blocking_handler.entered.wait(STUCK)  # the handler got the first record, off the call's thread
    assert not audit.flush(0.05)
    blocking_handler.release.set()
    assert audit.flush(STUCK)
    assert [c for c, _, _ in blocking_handler.seen] == ["c-deny", "c-allow"]
    # each record is the call's: made on the deciding thread, handled in its context
    assert all(name != "failsecure-audit-log" for _, name, _ in blocking_handler.seen)


def test_log_records_are_handled_in_the_calls_context(blocking_handler):
    blocking_handler.release.set()
    toy = Toy()
    with policy.using(policy.Config(timeout=7.0)):
        assert toy.decide("shell", [toy.hook_call("toy:no", lambda: "deny")], call_id="c1").denied
    assert not toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")], call_id="c2").denied
    assert audit.flush(STUCK)
    assert [(c, t) for c, _, t in blocking_handler.seen] == [("c1", 7.0), ("c2", policy.current().timeout)]
    assert {name for _, name, _ in blocking_handler.seen} == {threading.current_thread().name}


def test_a_raising_log_handler_is_counted_and_flips_nothing(blocking_handler):
    class Raising(logging.Handler):
        def emit(self, record):
            raise RuntimeError(f"handler broke on {CANARY}")

    blocking_handler.release.set()
    raising = Raising(logging.INFO)
    logger = logging.getLogger("failsecure")
    logger.addHandler(raising)
    try:
        toy = Toy()
        assert not toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")], call_id="c1").denied
        assert toy.decide("shell", [toy.hook_call("toy:no", lambda: "deny")], call_id="c2").denied
        assert audit.flush(STUCK)
    finally:
        logger.removeHandler(raising)
    assert [c for c, _, _ in blocking_handler.seen] == ["c1", "c2"]
