"""Fuzzing the command runner: random answers, exit codes, signals, slow and partial
writers, JSON that parses but has the wrong shape.

The runner runs as a host starts it (the launch line `hook install` writes, a real
subprocess, the payload on stdin); ``host_rules`` judges its answer by the host's own
rules. The properties:

- the host runs the tool only if the hook printed an answer every release of the host
  honours as allow / no opinion (``host_rules.valid_answer``) and exited 0; then the
  runner passes the hook's bytes on unchanged (no false deny);
- every other hook is a block, in the host's deny shape, and a failing hook's stderr
  never reaches the host;
- after a timeout, and after the hook exited, nothing of the hook's process group is
  left.

Bounded for a loaded 2-core machine: small ``max_examples``, sleeps well under 1 s.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from cmdhook_helpers import SECRET, payload_for
from host_rules import ABSTAIN, ALLOW, ASK, BLOCK, DENY, EVENT, RUN, STDOUT_CAP, host_verdict, valid_answer
from hypothesis import HealthCheck, given, settings, strategies as st

from failsecure.runner import settings as runner_install

PROTOCOLS = ("claude", "gemini", "codex", "kiro")
HOOK_SECRET = "ghp-fuzz-stderr-secret-9001"
SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Runner:
    """The runner as installed, with its own config and audit file."""

    def __init__(self, root):
        self.root = root
        self.audit = os.path.join(root, "audit.jsonl")
        self.config = os.path.join(root, "failsecure.toml")
        with open(self.config, "w") as fh:
            fh.write('[audit]\npath = "%s"\n' % self.audit)
        self.env = {k: v for k, v in os.environ.items() if k not in ("FAILSECURE_CONFIG", "XDG_CACHE_HOME")}
        self.trusted = ["--config", self.config, "--cache-home", os.path.join(root, "cache")]
        self.launch = runner_install.launch_argv(sys.executable, runner_install.runner_path())

    def path(self, name):
        return os.path.join(self.root, name)

    def write(self, name, data):
        path = self.path(name)
        with open(path, "wb") as fh:
            fh.write(data)
        return path

    def run(self, protocol, argv, timeout):
        if os.path.exists(self.audit):
            os.unlink(self.audit)
        line = self.launch + ["run", "--protocol", protocol, "--timeout", repr(timeout), "--hook-id", "guard"] + self.trusted + ["--"] + argv
        proc = subprocess.run(line, input=payload_for(protocol), capture_output=True, env=self.env, timeout=30)
        events = []
        if os.path.exists(self.audit):
            with open(self.audit) as fh:
                events = [json.loads(line) for line in fh if line.strip()]
        return proc.stdout, proc.stderr, proc.returncode, events


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    return Runner(str(tmp_path_factory.mktemp("fuzz")))


# ---------------------------------------------------------------- strategies

_VALID = {
    "claude": [
        ({"decision": "approve"}, ALLOW),
        ({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}, ALLOW),
        ({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer"}}, ABSTAIN),
        ({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}, ASK),
        ({"suppressOutput": True, "systemMessage": "ok"}, ABSTAIN),
        ({}, ABSTAIN),
        ({"decision": "block", "reason": "no"}, DENY),
        ({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}, DENY),
        ({"continue": False, "stopReason": "stop"}, DENY),
    ],
    "gemini": [
        ({"decision": "allow"}, ALLOW),
        ({"decision": "ask"}, ASK),
        ({"systemMessage": "ok"}, ABSTAIN),
        ({"decision": "allow", "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"command": "ls"}}}, ALLOW),
        ({"decision": "deny", "reason": "no"}, DENY),
        ({"decision": "block"}, DENY),
        ({"continue": False}, DENY),
    ],
    "codex": [
        ({"decision": "approve"}, ALLOW),
        ({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}, ALLOW),
        # Codex cannot ask (it runs the tool on "ask"): on a host that cannot ask, ask is a deny
        ({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}, DENY),
        ({}, ABSTAIN),
        ({"decision": "block", "reason": "no"}, DENY),
        ({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}}, DENY),
    ],
    "kiro": [({}, ABSTAIN)],
}

_WORDS = ["allow", "deny", "ask", "defer", "approve", "block", "Deny", "ALLOW", "PreToolUse", "BeforeTool", "PostToolUse", "", "yes"]
_TOP_KEYS = ["continue", "suppressOutput", "stopReason", "decision", "reason", "systemMessage", "hookSpecificOutput", "async", "verdict", "Decision"]
_SPECIFIC_KEYS = ["hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext", "tool_input", "extra"]

_scalars = st.one_of(
    st.sampled_from(_WORDS), st.booleans(), st.none(), st.integers(-3, 3), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)
)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_WORDS), inner, max_size=3), max_leaves=6)
_specific = st.lists(st.tuples(st.sampled_from(_SPECIFIC_KEYS), _values), max_size=4)


def _object_text(pairs):
    """A JSON object written pair by pair (duplicate keys included)."""
    return "{" + ",".join("%s:%s" % (json.dumps(k), v if isinstance(v, _Raw) else json.dumps(v)) for k, v in pairs) + "}"


class _Raw(str):
    """Already-encoded JSON."""


_top_pairs = st.lists(
    st.tuples(
        st.sampled_from(_TOP_KEYS),
        st.one_of(_values, _specific.map(lambda pairs: _Raw(_object_text(pairs)))),
    ),
    max_size=4,
)
_ws = st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\ufeff", max_size=3)


@st.composite
def answers(draw, protocol):
    """stdout bytes of a hook: valid answers, near-valid JSON, junk, and sizes around the cap."""
    kind = draw(st.sampled_from(["valid", "valid", "near", "near", "padded", "blank", "truncated", "binary", "text", "big"]))
    if kind == "valid":
        obj, _ = draw(st.sampled_from(_VALID[protocol]))
        return (json.dumps(obj) + draw(st.sampled_from(["", "\n"]))).encode()
    if kind == "near":
        return _object_text(draw(_top_pairs)).encode()
    if kind == "padded":
        obj, _ = draw(st.sampled_from(_VALID[protocol]))
        return (draw(_ws) + json.dumps(obj) + draw(_ws)).encode()
    if kind == "blank":
        return draw(_ws).encode()
    if kind == "truncated":
        text = json.dumps(draw(st.sampled_from(_VALID[protocol]))[0]).encode()
        return text[: draw(st.integers(0, max(len(text) - 1, 0)))]
    if kind == "binary":
        return draw(st.binary(max_size=200))
    if kind == "text":
        return draw(st.text(max_size=60)).encode()
    unit = draw(st.sampled_from([b" ", b"x", b"\n", b'{"decision":"approve"}']))
    size = draw(st.sampled_from([STDOUT_CAP - 1, STDOUT_CAP, STDOUT_CAP + 1, 2 * STDOUT_CAP]))
    return (unit * (size // len(unit) + 1))[:size]


exit_codes = st.one_of(st.just(0), st.just(0), st.just(2), st.integers(0, 255))


def _is_deny_shape(protocol, out, err, code):
    from failsecure.runner.protocols import PROTOCOLS as WIRE

    if code != 2 or not err.strip():
        return False
    reason = err.decode("utf-8").rstrip("\n")
    return (out, err, code) == WIRE[protocol].deny(reason, EVENT[protocol])


def check(protocol, hook_out, hook_err, hook_code, result, timed_out=False):
    """The properties, for a hook that wrote hook_out / hook_err and exited hook_code
    (None: killed by a signal or hung)."""
    out, err, code, events = result
    verdict = host_verdict(protocol, out, err, code)
    meaning = valid_answer(protocol, hook_out) if hook_code == 0 and not timed_out else None
    if meaning in (ALLOW, ABSTAIN, ASK):
        # the hook's own answer: passed on unchanged, never turned into a deny
        assert (out, err, code) == (hook_out, hook_err, 0), "a valid %s was not passed on" % meaning
        assert verdict == (ASK if meaning == ASK else RUN)
        return
    assert verdict == BLOCK, "the host would run the tool: hook exit %s, stdout %r" % (hook_code, hook_out[:200])
    assert _is_deny_shape(protocol, out, err, code), (out[:200], err[:200], code)
    assert SECRET.encode() not in out + err
    if hook_code != 2:  # only an exit-2 hook's stderr is its reason
        assert HOOK_SECRET.encode() not in out + err
    assert len(events) == 1 and events[0]["outcome"] == "deny", events
    if timed_out:
        assert events[0]["failure"] == "timeout"
    elif hook_code is None:
        assert events[0]["failure"] == "crashed"


# ---------------------------------------------------------------- answers and exit codes

ANSWER_HOOK = 'cat >/dev/null; cat "$1"; cat "$2" >&2; exit "$3"'


@settings(max_examples=70, **SETTINGS)
@given(data=st.data(), protocol=st.sampled_from(PROTOCOLS), stderr=st.text(max_size=40), code=exit_codes)
def test_random_answers_are_an_allow_only_when_the_host_would_honour_one(runner, data, protocol, stderr, code):
    stdout = data.draw(answers(protocol), label="stdout")
    hook_err = (stderr + " " + HOOK_SECRET).encode()
    argv = ["/bin/sh", "-c", ANSWER_HOOK, "hook", runner.write("out", stdout), runner.write("err", hook_err), str(code)]
    result = runner.run(protocol, argv, timeout=10)
    check(protocol, stdout, hook_err, code, result)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_valid_answer_of_the_fuzzer_is_honoured(runner, protocol):
    # the strategies' own twin: each valid answer through the same hook, exit 0
    for obj, meaning in _VALID[protocol]:
        stdout = (json.dumps(obj) + "\n").encode()
        assert valid_answer(protocol, stdout) == meaning
        argv = ["/bin/sh", "-c", ANSWER_HOOK, "hook", runner.write("out", stdout), runner.write("err", b"note\n"), "0"]
        out, err, code, events = result = runner.run(protocol, argv, timeout=10)
        check(protocol, stdout, b"note\n", 0, result)
        want = {ALLOW: RUN, ABSTAIN: RUN, ASK: ASK, DENY: BLOCK}[meaning]
        assert host_verdict(protocol, out, err, code) == want


# ---------------------------------------------------------------- found by fuzzing

# Unfinished JSON: the runner (-I -S, `json` never imported) got a SystemError from the
# C scanner instead of a ValueError and denied as "raised", without the event's deny
# shape or an audit event. Deep nesting: a RecursionError, the same path. Blank but not
# JSON whitespace (form feed, no-break space, U+001C): passed on as "no opinion", though
# Codex fails open on it as a failed hook.
FOUND = [b"{", b'{"decision"', b'{"decision":"approve",', b'"unterminated', b"[" * 100000, b"\x0c", b"\xc2\xa0\n", b"\x1c"]


@pytest.mark.parametrize("protocol", ("claude", "gemini", "codex"))
@pytest.mark.parametrize("stdout", FOUND, ids=["brace", "key", "comma", "string", "nested", "formfeed", "nbsp", "fs"])
def test_found_by_fuzzing_unparseable_answers_are_invalid(runner, protocol, stdout):
    argv = ["/bin/sh", "-c", ANSWER_HOOK, "hook", runner.write("out", stdout), runner.write("err", b""), "0"]
    result = runner.run(protocol, argv, timeout=10)
    check(protocol, stdout, b"", 0, result)
    assert result[3][0]["failure"] == "invalid"


@pytest.mark.parametrize("code,outcome,failure", [(1, "deny", "crashed"), (0, "abstain", None)])
def test_found_by_fuzzing_a_truncated_payload_is_unparseable_not_a_crash(runner, code, outcome, failure):
    # as for any payload that is not JSON: the call gates, the hook decides (twins)
    line = runner.launch + ["run", "--protocol", "claude", "--timeout", "10", "--hook-id", "guard"] + runner.trusted + ["--", "/bin/sh", "-c", "cat >/dev/null; exit %d" % code]
    if os.path.exists(runner.audit):
        os.unlink(runner.audit)
    payload = payload_for("claude")[:30]
    proc = subprocess.run(line, input=payload, capture_output=True, env=runner.env, timeout=30)
    with open(runner.audit) as fh:
        [event] = [json.loads(text) for text in fh if text.strip()]
    assert (event["outcome"], event["failure"]) == (outcome, failure)
    assert proc.returncode == (2 if code else 0)


def test_fastjson_raises_value_error_without_the_json_module():
    # the root of the first finding, in the runner's own interpreter setup (-I -S)
    script = (
        "import sys; sys.path.append(sys.argv[1]); from failsecure._fastjson import loads\n"
        "for text in ('{', '{\"a\"', '\"abc', '[' * 100000, '[1,'):\n"
        "    try: loads(text)\n"
        "    except ValueError: pass\n"
        "    else: raise SystemExit('parsed %r' % text)\n"
        "assert 'json' not in sys.modules\n"
        "print('ok')\n"
    )
    site = os.path.dirname(os.path.dirname(runner_install.runner_path()))
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", script, site], capture_output=True, timeout=30)
    assert (proc.stdout, proc.stderr, proc.returncode) == (b"ok\n", b"", 0)


# ---------------------------------------------------------------- signals

SIGNALS = ("SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGSEGV", "SIGABRT", "SIGPIPE", "SIGUSR1", "SIGQUIT", "SIGALRM")
SIGNAL_HOOK = (
    "import os, signal, sys\n"
    "sys.stdin.buffer.read()\n"
    "os.write(1, open(sys.argv[1], 'rb').read())\n"
    "os.write(2, sys.argv[3].encode())\n"
    "sig = getattr(signal, sys.argv[2])\n"
    "signal.signal(sig, signal.SIG_DFL)\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])\n"
    "os.kill(os.getpid(), sig)\n"
    "os._exit(0)\n"
)


@settings(max_examples=20, **SETTINGS)
@given(data=st.data(), protocol=st.sampled_from(PROTOCOLS), signame=st.sampled_from(SIGNALS))
def test_a_hook_killed_by_a_signal_is_a_deny_whatever_it_printed(runner, data, protocol, signame):
    obj, _ = data.draw(st.sampled_from(_VALID[protocol]), label="answer")  # even a valid allow
    stdout = json.dumps(obj).encode()
    argv = [sys.executable, "-I", "-S", "-c", SIGNAL_HOOK, runner.write("out", stdout), signame, HOOK_SECRET]
    result = runner.run(protocol, argv, timeout=10)
    check(protocol, stdout, HOOK_SECRET.encode(), None, result)


# ---------------------------------------------------------------- slow and partial writers

WRITER_HOOK = (
    "import os, sys, time, json\n"
    "sys.stdin.buffer.read()\n"
    "plan = json.load(open(sys.argv[1]))\n"
    "for chunk, pause in plan['chunks']:\n"
    "    os.write(1, chunk.encode('latin-1'))\n"
    "    time.sleep(pause)\n"
    "if plan['hang']:\n"
    "    time.sleep(30)\n"
    "os._exit(plan['code'])\n"
)


def _group_alive(pgid):
    """Pids of live (non-zombie) processes in process group pgid."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            found.append(int(name))
    return found


def assert_group_gone(pgid):
    deadline = time.monotonic() + 3
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            pytest.fail("the hook's process group %d outlived the runner: %r" % (pgid, _group_alive(pgid)))
        time.sleep(0.02)


def _run_with_pid(runner, protocol, argv, timeout):
    """Run the runner on argv behind a shell that writes its pid (the hook's process
    group: the runner starts every hook in a session of its own) and execs argv."""
    pidfile = runner.path("hook.pid")
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    script = 'echo $$ >"$0"; exec "$@"'
    return runner.run(protocol, ["/bin/sh", "-c", script, pidfile] + argv, timeout), pidfile


def _read_pid(pidfile):
    with open(pidfile) as fh:
        return int(fh.read())


@st.composite
def writer_plans(draw, protocol):
    stdout = draw(answers(protocol).filter(lambda b: len(b) < 4096))
    cuts = sorted(draw(st.lists(st.integers(0, len(stdout)), max_size=4)))
    pieces = [stdout[a:b] for a, b in zip([0] + cuts, cuts + [len(stdout)])]
    hang = draw(st.integers(0, 5)) == 0
    chunks = [(p.decode("latin-1"), draw(st.sampled_from([0, 0, 0.01, 0.03, 0.06]))) for p in pieces]
    return stdout, {"chunks": chunks, "hang": hang, "code": draw(st.sampled_from([0, 0, 0, 1, 2]))}


@settings(max_examples=25, **SETTINGS)
@given(data=st.data(), protocol=st.sampled_from(PROTOCOLS))
def test_slow_and_partial_writers(runner, data, protocol):
    stdout, plan = data.draw(writer_plans(protocol), label="plan")
    runner.write("plan.json", json.dumps(plan).encode())
    timeout = 0.6 if plan["hang"] else 8.0
    argv = [sys.executable, "-I", "-S", "-c", WRITER_HOOK, runner.path("plan.json")]
    result, pidfile = _run_with_pid(runner, protocol, argv, timeout)
    check(protocol, stdout, b"", None if plan["hang"] else plan["code"], result, timed_out=plan["hang"])
    assert_group_gone(_read_pid(pidfile))


# ---------------------------------------------------------------- nothing left behind

FAMILY_HOOK = r"""
cat >/dev/null
n=0
while [ "$n" -lt "$1" ]; do
  if [ "$3" = 1 ]; then
    ( trap '' TERM HUP INT; ( trap '' TERM HUP INT; sleep 30 ) & sleep 30 ) &
  else
    ( trap '' TERM HUP INT; sleep 30 ) >/dev/null 2>&1 &
  fi
  n=$((n + 1))
done
printf '%s' "$4"
[ "$2" = hang ] && sleep 30
exit 0
"""


@settings(max_examples=10, **SETTINGS)
@given(
    protocol=st.sampled_from(PROTOCOLS),
    children=st.integers(0, 3),
    leader=st.sampled_from(["hang", "hang", "exit"]),
    holds_pipes=st.sampled_from(["0", "1"]),
)
def test_no_process_of_the_hook_group_is_left_behind(runner, protocol, children, leader, holds_pipes):
    answer = "" if protocol == "kiro" else json.dumps(_VALID[protocol][0][0])
    argv = ["/bin/sh", "-c", FAMILY_HOOK, "hook", str(children), leader, holds_pipes, answer]
    started = time.monotonic()
    result, pidfile = _run_with_pid(runner, protocol, argv, 0.5)
    assert time.monotonic() - started < 5  # a child holding the pipes never stretches the call
    pgid = _read_pid(pidfile)
    assert_group_gone(pgid)
    if leader == "hang":
        check(protocol, b"", b"", None, result, timed_out=True)
    else:
        check(protocol, answer.encode(), b"", 0, result)


def test_group_check_sees_a_live_group():
    # the twin of assert_group_gone: a live group is found
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 30 & sleep 30"], start_new_session=True)
    try:
        deadline = time.monotonic() + 3
        while len(_group_alive(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(_group_alive(proc.pid)) >= 2
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert_group_gone(proc.pid)


def test_valid_answer_is_strict():
    assert valid_answer("claude", b"\x0c") is None
    assert valid_answer("claude", b" \n") == ABSTAIN
    assert valid_answer("codex", b'{"decision":"approve","additionalContext":"x"}') is None
    assert valid_answer("gemini", b'{"decision": NaN}') is None
    assert valid_answer("kiro", b"\xff") is None and valid_answer("kiro", b"anything") == ABSTAIN
    assert valid_answer("claude", b"x" * (STDOUT_CAP + 1)) is None
