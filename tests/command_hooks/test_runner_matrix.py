"""The command runner's fault matrix: every failure kind of a hook process, per host
protocol, judged by the host's own exit and output rules.

Each cell runs one hook behaviour twice, the way the host runs a command hook
(``/bin/sh -c COMMAND``, the payload on stdin, waiting for the pipes to close, killed at
the host's timeout):

- **upstream**: the hook's command itself, the host's timeout = the hook's;
- **failsecure**: the command line ``failsecure hook install`` writes for that hook (the
  ``sh`` prelude around the runner), the host's timeout = the runner's + the headroom
  ``hook install`` gives it.

``host_rules.host_verdict`` then says what the host does with what it got. Statuses are
the conformance kit's: ``pass``, ``escape`` (the host runs a tool the case must block),
``false deny`` (the host blocks a legitimate call), ``leak`` (a secret of the payload or
of the hook's stderr reaches what the host shows, or the audit), ``wrong branch`` (denied,
but the audit names another failure than the one injected). The failsecure column must
pass everywhere; the upstream column is recorded only.

The records go to ``$FAILSECURE_MATRIX_OUT`` in the kit's JSON format (framework
``command-runner:<protocol>``), for ``tox -e matrix``; the table is printed with the
kit's ``table()`` at the end of the run.
"""

import importlib.util
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pytest
from cmdhook_helpers import SECRET, payload_for
from host_rules import BLOCK, EVENT, RUN, host_verdict

import failsecure
from failsecure.testing import matrix as conformance
from failsecure.testing import plugin as kit_plugin
from failsecure.runner import settings as settings

_spec = importlib.util.spec_from_file_location("render_matrix", Path(__file__).resolve().parents[2] / "tools" / "render_matrix.py")
render_matrix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render_matrix)

PROTOCOLS = ("claude", "gemini", "codex", "kiro")
TIMEOUT = 2.0  # seconds: the hook's timeout (upstream: the host's; failsecure: the runner's)
HOOK_SECRET = "ghp-hook-stderr-secret-7331"  # what a crashing hook prints on stderr
MODE = "process"
COLUMNS = ("upstream", "failsecure")


# ---------------------------------------------------------------- the hook behaviours


def _json(obj):
    return json.dumps(obj, separators=(",", ":"))


def _say(obj):
    return "printf '%%s\\n' %s" % shlex.quote(_json(obj))


ALLOW = {
    "claude": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
    "codex": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
    "gemini": {"decision": "allow"},
}
DENY = {
    "claude": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "guard: no"}},
    "codex": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "guard: no"}},
    "gemini": {"decision": "deny", "reason": "guard: no"},
}
# A deny each host silently drops: Claude knows no decision "deny" (schema-invalid JSON
# is a non-blocking error); Gemini reads only `decision` (a Claude-style answer is "no
# decision"); Codex fails open on a key it does not support; kiro_crew ignores stdout.
WRONG_SHAPE = {
    "claude": {"decision": "deny", "reason": "guard: no"},
    "codex": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "additionalContext": "guard: no"}},
    "gemini": {"hookSpecificOutput": {"hookEventName": "BeforeTool", "permissionDecision": "deny"}},
    "kiro": {"decision": "block", "reason": "guard: no"},
}


def allow(protocol):
    return "cat >/dev/null" if protocol == "kiro" else "cat >/dev/null; " + _say(ALLOW[protocol])


def deny(protocol):
    if protocol == "kiro":  # kiro_crew: exit 2, stderr is the reason
        return "cat >/dev/null; echo 'guard: no' >&2; exit 2"
    return "cat >/dev/null; " + _say(DENY[protocol])


def daemon(answer):
    """The answer, then a daemon (its own session: out of the hook's process group) that
    keeps the hook's stdout and stderr open for 30 s. The hook exits once the daemon
    has escaped (before, the runner's kill of the group would take it along)."""

    def command(protocol, ctx):
        script = ctx.file("daemon.sh", 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 30\n')
        pidfile = shlex.quote(ctx.pidfile())
        return "(%s); s=$?; setsid /bin/sh %s %s & while [ ! -s %s ]; do sleep 0.01; done; exit $s" % (
            answer(protocol), shlex.quote(script), pidfile, pidfile,
        )

    return command


def not_executable(protocol, ctx):
    path = ctx.file("guard.sh", "#!/bin/sh\nexit 0\n", mode=0o644)
    return shlex.quote(path)


@dataclass
class Case:
    name: str
    command: Callable  # (protocol, ctx) -> the hook's command line
    expect: str = "deny"  # or "run"
    failure: Optional[str] = None  # the audit's failure category for a deny (None: the hook's own deny)
    run_on: tuple = ()  # protocols where the host's rules make this a legitimate call


def plain(line):
    return lambda protocol, ctx: line


CASES = [
    Case("valid allow", lambda p, ctx: allow(p), expect="run"),
    Case("valid deny (host shape)", lambda p, ctx: deny(p)),
    Case("exit 2 + stderr (Claude-style block)", plain("cat >/dev/null; echo 'guard: blocked' >&2; exit 2")),
    Case("exit 2, empty stderr", plain("cat >/dev/null; exit 2")),
    Case("exit 1", plain("cat >/dev/null; exit 1"), failure="crashed"),
    Case("exit 3", plain("cat >/dev/null; exit 3"), failure="crashed"),
    Case("killed by SIGKILL", plain("cat >/dev/null; kill -KILL $$"), failure="crashed"),
    Case("missing binary", plain("/nonexistent/failsecure-matrix-guard"), failure="missing"),
    Case("not executable", not_executable, failure="missing"),
    Case("timeout (hangs)", plain("cat >/dev/null; sleep 30"), failure="timeout"),
    Case("junk stdout", plain("cat >/dev/null; echo 'all good, go ahead'"), failure="invalid", run_on=("kiro",)),
    Case("JSON of the wrong shape", lambda p, ctx: "cat >/dev/null; " + _say(WRONG_SHAPE[p]), failure="invalid", run_on=("kiro",)),
    Case(
        "JSON of the wrong shape + exit 2",
        lambda p, ctx: "cat >/dev/null; %s; echo 'guard: no' >&2; exit 2" % _say(WRONG_SHAPE[p]),
    ),
    Case("partial write then hang", plain("cat >/dev/null; printf '{\"decision\":'; sleep 30"), failure="timeout"),
    Case("async: true then hang", plain("cat >/dev/null; echo '{\"async\":true}'; sleep 30"), failure="timeout"),
    Case("daemon keeps the pipe open (allow)", daemon(allow), expect="run"),
    Case("daemon keeps the pipe open (deny)", daemon(deny)),
    Case("huge stdout (4 MiB)", plain("cat >/dev/null; head -c 4194304 /dev/zero | tr '\\0' x"), failure="invalid"),
    Case(
        "secret in payload and stderr, exit 1",
        plain("cat >&2; echo 'Traceback: token=%s' >&2; exit 1" % HOOK_SECRET),
        failure="crashed",
    ),
]


class Ctx:
    """One cell's scratch directory, and the daemons it must reap."""

    def __init__(self, root):
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.pidfiles = []

    def file(self, name, text, mode=0o755):
        path = os.path.join(self.root, name)
        with open(path, "w") as fh:
            fh.write(text)
        os.chmod(path, mode)
        return path

    def pidfile(self):
        path = os.path.join(self.root, "daemon-%d.pid" % len(self.pidfiles))
        self.pidfiles.append(path)
        return path

    def reap(self):
        """Kill the daemons the hook left; -> False if one never started."""
        started = True
        for path in self.pidfiles:
            deadline = time.monotonic() + 3
            while not _read(path) and time.monotonic() < deadline:
                time.sleep(0.02)
            try:
                os.kill(int(_read(path)), signal.SIGKILL)
            except (OSError, ValueError):
                started = False
        return started


def _read(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return ""


# ---------------------------------------------------------------- the host


@dataclass
class Seen:
    stdout: bytes
    stderr: bytes
    code: Optional[int]
    timed_out: bool
    audit: str = ""


def host_runs(command, payload, host_timeout, env):
    """What a host does: `sh -c COMMAND`, the payload on stdin, wait for the pipes to
    close (Node's 'close'), kill at its own timeout."""
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(payload, timeout=host_timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        out, err, timed_out = b"", b"", True
        _killpg(proc.pid)
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass
    _killpg(proc.pid)
    return Seen(out, err, proc.returncode, timed_out)


def _killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def run_cell(protocol, case, column, root):
    ctx = Ctx(os.path.join(root, "%s-%s-%d" % (protocol, column, CASES.index(case))))
    command = case.command(protocol, ctx)
    audit = os.path.join(ctx.root, "audit.jsonl")
    config = ctx.file("failsecure.toml", '[audit]\npath = "%s"\n' % audit, mode=0o644)
    env = {k: v for k, v in os.environ.items() if k not in ("FAILSECURE_CONFIG", "XDG_CACHE_HOME")}
    options = [("--config", config), ("--cache-home", os.path.join(ctx.root, "cache"))]
    try:
        if column == "upstream":
            seen = host_runs(command, payload_for(protocol), TIMEOUT, env)
        else:
            line = settings.prelude(
                sys.executable, settings.runner_path(), protocol, "guard", TIMEOUT, "e30", command, options=options
            )
            seen = host_runs(line, payload_for(protocol), TIMEOUT + settings.HEADROOM, env)
            if os.path.exists(audit):
                with open(audit) as fh:
                    seen.audit = fh.read()
    finally:
        started = ctx.reap()
    if not started:
        return "wrong branch", "the hook's daemon never started"
    return judge(protocol, case, column, seen)


def judge(protocol, case, column, seen):
    """-> (status, detail) by the host's rules."""
    verdict = host_verdict(protocol, seen.stdout, seen.stderr, seen.code, seen.timed_out)
    how = "host timed out" if seen.timed_out else "exit %s" % seen.code
    expect = "run" if protocol in case.run_on else case.expect
    if expect == "run":
        if verdict != RUN:
            return "false deny", "%s: %s" % (verdict, how)
        return "pass", how
    if verdict != BLOCK:
        return "escape", "%s: %s" % (verdict, how)
    shown = (seen.stdout + seen.stderr).decode("utf-8", "replace")
    for secret in (SECRET, HOOK_SECRET):
        if secret in shown or secret in seen.audit:
            return "leak", "the secret reached what the host shows" + (" or the audit" if seen.audit else "")
    if column == "upstream":
        return "pass", "denied upstream"
    failure = None if protocol in case.run_on else case.failure
    events = [json.loads(line) for line in seen.audit.splitlines() if line.strip()]
    if len(events) != 1:
        return "wrong branch", "%d audit events" % len(events)
    event = events[0]
    if (event.get("outcome"), event.get("failure")) != ("deny", failure):
        return "wrong branch", "audited %s/%s, expected deny/%s" % (event.get("outcome"), event.get("failure"), failure)
    return "pass", how


# ---------------------------------------------------------------- the matrix, once per run

_lock = threading.Lock()
_matrix: dict = {}


def _version():
    try:
        return failsecure.__version__
    except Exception:
        return "?"


def write_records(results, path):
    records = [
        {"framework": f, "version": v, "column": c, "case": name, "mode": mode, "status": s, "detail": d}
        for (f, v, c), rows in sorted(results.items())
        for (name, mode), (s, d) in rows.items()
    ]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(records, fh, indent=1)
    return records


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """Every cell, run concurrently (most of the wall time is hooks hanging until a
    timeout): {(framework, version, column): {(case, mode): (status, detail)}}."""
    with _lock:
        if _matrix:
            return _matrix
        root = str(tmp_path_factory.mktemp("matrix"))
        cells = [(p, c, col) for p in PROTOCOLS for c in CASES for col in COLUMNS]
        with ThreadPoolExecutor(max_workers=8) as pool:
            outcomes = list(pool.map(lambda cell: run_cell(*cell, root), cells))
        version = _version()
        results: dict = {}
        for (protocol, case, column), outcome in zip(cells, outcomes):
            key = ("command-runner:" + protocol, version, column)
            results.setdefault(key, {})[(case.name, MODE)] = outcome
        _matrix.update(results)
        conformance.RESULTS.update(results)  # the kit's summary prints table() of these
        out = os.environ.get("FAILSECURE_MATRIX_OUT")
        if out:
            write_records(results, out)
        return _matrix


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_failsecure_column(matrix, protocol, case):
    status, detail = matrix[("command-runner:" + protocol, _version(), "failsecure")][(case.name, MODE)]
    assert status == "pass", "%s / %s through the runner: %s (%s)" % (protocol, case.name, status, detail)


def test_upstream_column_is_recorded_and_the_table_renders(matrix):
    upstream = {k: v for k, v in matrix.items() if k[2] == "upstream"}
    assert len(upstream) == len(PROTOCOLS)
    for rows in upstream.values():
        assert len(rows) == len(CASES)
        assert {s for s, _ in rows.values()} <= {"pass", "escape", "false deny", "leak"}
        # the oracle is not vacuous: the hook's own allow runs and its own deny blocks
        assert rows[("valid allow", MODE)][0] == "pass"
        assert rows[("valid deny (host shape)", MODE)][0] == "pass"
        assert rows[("timeout (hangs)", MODE)][0] == "escape"  # every host fails open on a timeout
    text = kit_plugin.table(matrix)  # printed by the kit at the end of the run
    assert text.count("\n") == len(CASES) + 1


def test_records_are_in_the_kits_format(matrix, tmp_path):
    path = tmp_path / "out" / "command-hooks.json"
    records = write_records(matrix, str(path))
    assert len(records) == len(PROTOCOLS) * len(CASES) * len(COLUMNS)
    assert json.loads(path.read_text()) == records
    assert {r["framework"] for r in records} == {"command-runner:" + p for p in PROTOCOLS}
    assert {r["column"] for r in records} == set(COLUMNS)
    assert {r["version"] for r in records} == {failsecure.__version__}
    rendered = render_matrix.render(records)
    for protocol in PROTOCOLS:
        assert "## command-runner:" + protocol in rendered


# ---------------------------------------------------------------- the oracle's twins


def test_judge_reports_every_status():
    deny_case = next(c for c in CASES if c.name == "exit 1")  # must deny, audited as crashed
    allow_case = next(c for c in CASES if c.name == "valid allow")
    blocked = Seen(b"", b"no\n", 2, False, audit=json.dumps({"outcome": "deny", "failure": "crashed"}))
    assert judge("codex", deny_case, "failsecure", blocked) == ("pass", "exit 2")
    assert judge("codex", deny_case, "failsecure", Seen(b"", b"", 0, False))[0] == "escape"
    assert judge("codex", deny_case, "failsecure", Seen(b"", b"", 2, False))[0] == "escape"  # exit 2, empty stderr
    assert judge("codex", deny_case, "failsecure", Seen(b"", b"", 2, True))[0] == "escape"  # the host killed it
    assert judge("codex", allow_case, "failsecure", blocked)[0] == "false deny"
    leaked = Seen(b"", ("no " + HOOK_SECRET).encode(), 2, False, audit=blocked.audit)
    assert judge("codex", deny_case, "failsecure", leaked)[0] == "leak"
    assert judge("codex", deny_case, "upstream", Seen(b"", SECRET.encode(), 2, False))[0] == "leak"
    other = Seen(b"", b"no\n", 2, False, audit=json.dumps({"outcome": "deny", "failure": "timeout"}))
    assert judge("codex", deny_case, "failsecure", other)[0] == "wrong branch"
    assert judge("codex", deny_case, "upstream", other) == ("pass", "denied upstream")



@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_host_rules_block_the_runners_own_deny(protocol):
    from failsecure.runner.protocols import PROTOCOLS as WIRE

    out, err, code = WIRE[protocol].deny("failsecure: no", EVENT[protocol])
    assert host_verdict(protocol, out, err, code) == BLOCK
    # twin: the same bytes with exit 0 (stdout only) block only where stdout carries it
    want = RUN if protocol in ("codex", "kiro") else BLOCK
    assert host_verdict(protocol, out, b"", 0) == want
    assert host_verdict(protocol, out, err, code, timed_out=True) == RUN
