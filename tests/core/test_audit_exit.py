"""Red team: the audit's lanes at the interpreter's exit.

The exit flush (``audit.EXIT_FLUSH``) is registered with ``atexit`` when the first lane
starts, so it runs before every exit handler the application registered earlier (atexit is
last in, first out). A tool call decided in such a handler (an agent's final step, a
cleanup tool) has its log record queued on the log lane after the flush: the daemon
thread is stopped by the interpreter's finalization before it hands the record on, and
the record is lost (before the log lane, the stdlib logger was synchronous: never lost).
The same holds for the file lane's line.
"""

import json
import os
import subprocess
import sys

EXITING = r"""
import atexit, logging, sys, time
sys.path.insert(0, sys.argv[1])
from test_audit import Toy

out = sys.argv[2]

class Slow(logging.Handler):
    def emit(self, record):
        time.sleep(0.05)  # an application handler that takes its time (a network log sink)
        with open(out, "a") as f:
            f.write(record.failsecure["call_id"] + "\n")

logger = logging.getLogger("failsecure")
logger.addHandler(Slow())
logger.setLevel(logging.INFO)

toy = Toy()

def last_steps():  # registered before failsecure's first decision: runs after its exit flush
    for i in range(5):
        assert not toy.decide("shell", [toy.hook_call("toy:g", lambda: "allow")], call_id=f"late{i}").denied

atexit.register(last_steps)
assert not toy.decide("shell", [toy.hook_call("toy:g", lambda: "allow")], call_id="first").denied
print("decided")
"""


def test_a_decision_in_an_earlier_exit_handler_is_still_logged_and_written(tmp_path):
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "audit.jsonl"\n')
    env = dict(os.environ, FAILSECURE_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    core = os.path.join(os.path.dirname(os.path.dirname(__file__)), "core")
    done = subprocess.run([sys.executable, "-c", EXITING, core, str(tmp_path / "log.txt")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "decided" in done.stdout, done.stderr
    want = ["first"] + [f"late{i}" for i in range(5)]
    assert (tmp_path / "log.txt").read_text().split() == want
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [e["call_id"] for e in lines] == want


def test_twin_decisions_before_exit_are_logged_and_written(tmp_path):
    """The allow twin: decisions made before the exit flush are all there (no exit handler)."""
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "audit.jsonl"\n')
    env = dict(os.environ, FAILSECURE_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    core = os.path.join(os.path.dirname(os.path.dirname(__file__)), "core")
    code = EXITING.replace("atexit.register(last_steps)", "last_steps()")
    done = subprocess.run([sys.executable, "-c", code, core, str(tmp_path / "log.txt")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "decided" in done.stdout, done.stderr
    assert (tmp_path / "log.txt").read_text().split() == [f"late{i}" for i in range(5)] + ["first"]


STUCK = r"""
import atexit, logging, os, sys, threading
sys.path.insert(0, sys.argv[1])
from test_audit import Toy

out = sys.argv[2]
never = threading.Event()

class Stuck(logging.Handler):
    def emit(self, record):
        never.wait()  # a handler stuck for good (a pipe nobody reads), holding its lock

logging.getLogger("failsecure").addHandler(Stuck())
logging.getLogger("failsecure").setLevel(logging.INFO)
toy = Toy()

def last_step():
    decision = toy.decide("shell", [toy.hook_call("toy:g", lambda: "allow")], call_id="late")
    with open(out, "w") as f:
        f.write("decided " + decision.action.value)
    os._exit(0)  # logging's own shutdown would wait on the stuck handler's lock for good

atexit.register(last_step)
assert not toy.decide("shell", [toy.hook_call("toy:g", lambda: "allow")], call_id="first").denied
"""


def test_a_stuck_handler_never_holds_a_decision_made_after_the_exit_flush(tmp_path):
    config = tmp_path / "failsecure.toml"
    config.write_text("")
    env = dict(os.environ, FAILSECURE_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    core = os.path.join(os.path.dirname(os.path.dirname(__file__)), "core")
    try:
        subprocess.run([sys.executable, "-c", STUCK, core, str(tmp_path / "out.txt")],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pass
    assert (tmp_path / "out.txt").exists(), "the decision waited on the stuck log handler"
    assert (tmp_path / "out.txt").read_text() == "decided allow"
