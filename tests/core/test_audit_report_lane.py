"""Red team: the log lane keeps a blocking application handler off the tool call's
thread for decision records, but ``report.problem`` (said for every ungoverned call, a
framework's own failure at a gate, an internal error) still logged to the same
``failsecure`` logger synchronously: a handler that blocks held the denied call."""

import logging
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "core"))

from test_audit import Toy  # noqa: E402

from failsecure import audit, boundary  # noqa: E402


class Blocking(logging.Handler):
    def __init__(self):
        super().__init__()
        self.release = threading.Event()
        self.seen = []

    def emit(self, record):
        self.release.wait(30)  # a pipe nobody reads, a contended lock
        self.seen.append(record.getMessage())


def bounded(fn):
    box = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()
    thread.join(10)  # no timing assertion: only a call held by the handler exceeds it
    return box[0] if box else "held"


def with_handler(fn):
    logger = logging.getLogger("failsecure")
    handler, level = Blocking(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        return fn(), handler
    finally:
        handler.release.set()
        audit.flush(10.0)
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_an_ungoverned_deny_is_not_held_by_a_blocking_log_handler(write_config):
    write_config("")
    toy = Toy()
    got, handler = with_handler(lambda: bounded(lambda: boundary.ungoverned(toy, "shell", "c1", "boundary", True)))
    assert got != "held", "the denied call waited on the application's log handler"
    assert got.denied
    assert any("ran without a decision" in m for m in handler.seen)  # still logged, off the call's thread


def test_twin_an_ungoverned_allow_is_not_held_either(write_config):
    write_config('ungoverned = "audit"\n')
    toy = Toy()
    got, handler = with_handler(lambda: bounded(lambda: boundary.ungoverned(toy, "shell", "c2", "boundary", False)))
    assert got != "held" and not got.denied
    assert any("ran without a decision" in m for m in handler.seen)
