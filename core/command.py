"""failsecure.command: the command-hook runner and the host protocols.

Agent hosts (Claude Code, Gemini CLI, Codex CLI, kiro_crew, poolside Pool) run a
configured shell command before a tool call and treat almost every failure of
that command (timeout, crash, missing binary, unparseable output) as "no
opinion", i.e. allow. The runner sits between the host and the real hook::

    /abs/python -I -S /abs/site-packages/failsecure/command.py \\
        run --protocol claude --timeout 5 --hook-id guard -- CMD ARGS...

It feeds the payload to CMD in a new process group, enforces a deadline (the
whole group is SIGKILLed), and maps every failure to a well-formed deny in the
host's own protocol. Exit 2 and explicit deny answers are normalised to the
host's deny shape; valid allow / ask / no-opinion answers pass unchanged.

Start-up is on the critical path of every tool call, so the ``run`` path imports
only ``os``, ``sys``, ``time``, ``select``, ``failsecure._fastjson`` (over the C
``_json``) and ``failsecure.policy``'s stdlib loader. ``hook install`` /
``hook uninstall`` (rare, interactive) may import whatever they like.
"""

import os
import sys
import time

if __name__ == "__main__":  # started as a script: make `failsecure` importable

    def _bootstrap():
        here = os.path.dirname(os.path.abspath(__file__))
        # Without -I the script directory is sys.path[0]; siblings must never
        # shadow anything, so drop it.
        while here in sys.path:
            sys.path.remove(here)
        if "failsecure" in sys.modules:
            return
        if os.path.basename(here) == "failsecure":
            parent = os.path.dirname(here)
            if parent not in sys.path:
                sys.path.append(parent)  # stdlib stays first
            return
        # Development layout (source dir not named "failsecure", editable
        # install whose finder -S does not load): load the package from here.
        external = sys.modules["_frozen_importlib_external"]
        bootstrap = sys.modules["_frozen_importlib"]
        spec = external.spec_from_file_location(
            "failsecure",
            os.path.join(here, "__init__.py"),
            submodule_search_locations=[here],
        )
        module = bootstrap.module_from_spec(spec)
        sys.modules["failsecure"] = module
        spec.loader.exec_module(module)

    _bootstrap()
    del _bootstrap

from failsecure._fastjson import dumps as _dumps
from failsecure._fastjson import loads as _loads
from failsecure.failures import CRASHED, INVALID, MISSING, RAISED, TIMEOUT, failure_reason, process_failure

__all__ = (
    "PROTOCOLS",
    "HOSTS",
    "InstallError",
    "run",
    "install",
    "uninstall",
    "add_hook_commands",
    "main",
)

PAYLOAD_CAP = 32 * 1024 * 1024  # bytes read from the host's stdin
STDOUT_CAP = 1024 * 1024  # a hook answer larger than this is INVALID
STDERR_CAP = 64 * 1024  # stderr kept (the rest is drained and dropped)
REASON_CAP = 2000  # characters of a hook's own deny reason passed on
DRAIN_GRACE = 0.2  # seconds to read the pipes after the hook exited
_SIGPIPE = 13
_SIGXFSZ = 25
_SIGKILL = 9


CONFIG_HOOK = "failsecure:config"  # the hook id the core blames for an invalid config


class _Invalid(Exception):
    """The hook answered something the host would not honour."""


# --------------------------------------------------------------------------
# Host protocols
# --------------------------------------------------------------------------


def _check_keys(obj, allowed, what):
    for key in obj:
        if key not in allowed:
            raise _Invalid("unknown key in %s" % what)


def _check_type(obj, key, kind):
    if key in obj and not isinstance(obj[key], kind):
        raise _Invalid("wrong type for %s" % key)


def _parse_answer(text):
    """stdout of an exit-0 hook -> dict, or None for an empty answer."""
    if not text.strip():
        return None
    try:
        obj = _loads(text)
    except ValueError:
        raise _Invalid("stdout is not JSON") from None
    if not isinstance(obj, dict):
        raise _Invalid("stdout is not a JSON object")
    return obj


class Protocol:
    """One host's wire protocol for a command hook."""

    name = ""
    framework = ""
    gating_events = frozenset()  # lower-cased hook_event_name values that gate a tool call
    default_timeout = 30.0  # seconds, used when neither --timeout nor config says otherwise

    def deny(self, reason, event):
        """-> (stdout bytes, stderr bytes, exit code) that make the host block."""
        raise NotImplementedError

    def judge(self, stdout, event):
        """Classify an exit-0 answer of a gating hook.

        -> (action, passthrough, reason) with action one of allow/ask/abstain/deny.
        passthrough=True means the hook's own bytes are forwarded unchanged.
        Raise _Invalid when the host would not honour the answer.
        """
        raise NotImplementedError


class ClaudeProtocol(Protocol):
    """Claude Code (also poolside Pool and Kiro CLI, which are Claude-compatible)."""

    name = "claude"
    framework = "claude-code"
    gating_events = frozenset({"pretooluse"})
    default_timeout = 30.0
    top_keys = frozenset(
        {"continue", "suppressOutput", "stopReason", "decision", "reason", "systemMessage", "hookSpecificOutput"}
    )
    specific_keys = frozenset(
        {"hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext"}
    )
    decisions = ("approve", "block")
    permission_decisions = ("allow", "deny", "ask", "defer")

    def deny(self, reason, event):
        answer = {"decision": "block", "reason": reason}
        if event == "PreToolUse":
            answer["hookSpecificOutput"] = {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        return (_dumps(answer) + "\n").encode(), (reason + "\n").encode(), 2

    def judge(self, stdout, event):
        obj = _parse_answer(stdout)
        if obj is None:
            return "abstain", True, None
        _check_keys(obj, self.top_keys, "answer")
        _check_type(obj, "continue", bool)
        _check_type(obj, "suppressOutput", bool)
        for key in ("stopReason", "reason", "systemMessage"):
            _check_type(obj, key, str)
        decision = obj.get("decision")
        if "decision" in obj and decision not in self.decisions:
            raise _Invalid("unknown decision")
        permission = None
        specific_reason = None
        if "hookSpecificOutput" in obj:
            specific = obj["hookSpecificOutput"]
            if not isinstance(specific, dict):
                raise _Invalid("hookSpecificOutput is not an object")
            _check_keys(specific, self.specific_keys, "hookSpecificOutput")
            if specific.get("hookEventName") != (event or "PreToolUse"):
                raise _Invalid("wrong hookEventName")
            permission = specific.get("permissionDecision")
            if "permissionDecision" in specific and permission not in self.permission_decisions:
                raise _Invalid("unknown permissionDecision")
            _check_type(specific, "permissionDecisionReason", str)
            _check_type(specific, "additionalContext", str)
            _check_type(specific, "updatedInput", dict)
            specific_reason = specific.get("permissionDecisionReason")
        if decision == "block" or permission == "deny":
            return "deny", False, specific_reason or obj.get("reason")
        if obj.get("continue") is False:
            # "stop": the tool does not run. Said in the canonical deny shape, never
            # passed on raw (Codex, for one, does not honour it).
            return "deny", False, obj.get("stopReason")
        if permission == "ask":
            return "ask", True, None
        if decision == "approve" or permission == "allow":
            return "allow", True, None
        return "abstain", True, None


class CodexProtocol(ClaudeProtocol):
    """Codex CLI: Claude-compatible wire types; a deny is exit 2 + non-empty stderr."""

    name = "codex"
    framework = "codex"
    specific_keys = frozenset({"hookEventName", "permissionDecision", "permissionDecisionReason"})
    permission_decisions = ("allow", "deny", "ask")

    def deny(self, reason, event):
        # JSON is read only on exit 0, and a JSON deny carrying a key Codex does
        # not support fails open: say it with exit 2 and stderr only.
        return b"", (reason + "\n").encode(), 2


class GeminiProtocol(Protocol):
    name = "gemini"
    framework = "gemini-cli"
    gating_events = frozenset({"beforetool"})
    default_timeout = 30.0
    top_keys = frozenset(
        {"decision", "reason", "continue", "stopReason", "suppressOutput", "systemMessage", "hookSpecificOutput"}
    )
    specific_keys = frozenset({"hookEventName", "tool_input", "additionalContext"})

    def deny(self, reason, event):
        answer = _dumps({"decision": "deny", "reason": reason})
        return (answer + "\n").encode(), (reason + "\n").encode(), 2

    def judge(self, stdout, event):
        obj = _parse_answer(stdout)
        if obj is None:
            return "abstain", True, None
        _check_keys(obj, self.top_keys, "answer")
        _check_type(obj, "continue", bool)
        _check_type(obj, "suppressOutput", bool)
        for key in ("stopReason", "reason", "systemMessage"):
            _check_type(obj, key, str)
        if "hookSpecificOutput" in obj:
            specific = obj["hookSpecificOutput"]
            if not isinstance(specific, dict):
                raise _Invalid("hookSpecificOutput is not an object")
            _check_keys(specific, self.specific_keys, "hookSpecificOutput")
            if "hookEventName" in specific and specific["hookEventName"] != (event or "BeforeTool"):
                raise _Invalid("wrong hookEventName")
            _check_type(specific, "tool_input", dict)
            _check_type(specific, "additionalContext", str)
        decision = obj.get("decision")
        if "decision" in obj and decision not in ("allow", "ask", "deny", "block"):
            raise _Invalid("unknown decision")
        if decision in ("deny", "block"):
            return "deny", False, obj.get("reason")
        if obj.get("continue") is False:
            return "deny", False, obj.get("stopReason")
        if decision == "ask":
            return "ask", True, None
        if decision == "allow":
            return "allow", True, None
        return "abstain", True, None


class KiroProtocol(Protocol):
    """kiro_crew script hooks: exit 2 blocks with stderr as the reason; stdout is not a verdict."""

    name = "kiro"
    framework = "kiro_crew"
    gating_events = frozenset({"pretooluse"})
    default_timeout = 30.0

    def deny(self, reason, event):
        return b"", (reason + "\n").encode(), 2

    def judge(self, stdout, event):
        return "abstain", True, None


PROTOCOLS = {p.name: p for p in (ClaudeProtocol(), GeminiProtocol(), CodexProtocol(), KiroProtocol())}


# --------------------------------------------------------------------------
# The runner
# --------------------------------------------------------------------------


def _ensure_std_fds():
    # A closed 0/1/2 would let a pipe land on it and confuse the dup2 plan.
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def _read_payload(fd, deadline):
    """Read the host's stdin up to PAYLOAD_CAP -> (bytes, ok)."""
    import select

    chunks = []
    size = 0
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), False
        if not poller.poll(int(remaining * 1000) + 1):
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:
            return b"".join(chunks), True
        if not data:
            return b"".join(chunks), True
        size += len(data)
        if size > PAYLOAD_CAP:
            return b"", False
        chunks.append(data)


class _Result:
    __slots__ = ("spawn_errno", "timed_out", "oversized", "status", "stdout", "stderr", "elapsed_ms")

    def __init__(self):
        self.spawn_errno = None
        self.timed_out = False
        self.oversized = False
        self.status = None  # exit code, negative for a signal
        self.stdout = b""
        self.stderr = b""
        self.elapsed_ms = 0.0


def _kill_group(pgid):
    try:
        os.killpg(pgid, _SIGKILL)
    except OSError:
        pass


_FORWARD_SIGNALS = False  # set by the `hook run` entry points (a process of its own)

# Signals a host (or a user) sends to stop the runner. Each one gets the runner's last
# words: the hook's process group is killed and the host is told the protocol's deny.
_TERMINATING = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGALRM", "SIGUSR1", "SIGUSR2")


class _LastWords:
    """What the runner says if it is terminated before it answered."""

    __slots__ = ("pgid", "done", "dying", "say", "signals")

    def __init__(self):
        self.pgid = None  # the hook's process group, once spawned
        self.done = None  # exit code, once the answer was written
        self.dying = False
        self.say = None  # () -> exit code: write the deny (and audit it)
        self.signals = ()


_last_words = None


def _terminated(signum, frame):
    state = _last_words
    if state is None or state.dying:
        return
    state.dying = True
    if state.pgid is not None:
        _kill_group(state.pgid)
    code = state.done
    if code is None:
        try:
            code = state.say()
        except BaseException:
            code = 2
    os._exit(code)


def _arm_last_words(say):
    """Install the termination handlers (main thread of a runner process only)."""
    global _last_words
    try:
        import _signal  # built in: no import cost
    except ImportError:  # pragma: no cover
        return None
    state = _LastWords()
    state.say = say
    signals = []
    for name in _TERMINATING:
        signum = getattr(_signal, name, None)
        if signum is None:
            continue
        try:
            _signal.signal(signum, _terminated)
        except (OSError, ValueError):  # not the main thread (in-process use)
            return None
        signals.append(signum)
    state.signals = tuple(signals)
    _last_words = state
    return state


def _block_signals(state):
    if state is None:
        return
    import _signal

    _signal.pthread_sigmask(_signal.SIG_BLOCK, state.signals)


def _unblock_signals(state):
    if state is None:
        return
    import _signal

    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, state.signals)


def execute(argv, payload, timeout):
    """Run argv with payload on stdin in a new session under a deadline -> _Result."""
    import select

    result = _Result()
    start = time.monotonic()
    deadline = start + timeout
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, in_r, 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
    ]
    # A termination signal between the spawn and the bookkeeping would leave the hook
    # running: hold them until the runner knows the hook's process group.
    state = _last_words
    _block_signals(state)
    try:
        pid = os.posix_spawnp(
            argv[0],
            argv,
            os.environ,
            file_actions=actions,
            setsid=True,
            setsigdef=(_SIGPIPE, _SIGXFSZ),
            setsigmask=(),  # the hook starts with no signal blocked
        )
    except OSError as exc:
        _unblock_signals(state)
        for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
            os.close(fd)
        result.spawn_errno = exc.errno or -1
        result.elapsed_ms = (time.monotonic() - start) * 1000.0
        return result
    if state is not None:
        state.pgid = pid
    _unblock_signals(state)
    os.close(in_r)
    os.close(out_w)
    os.close(err_w)

    poller = select.poll()
    readers = {out_r: [], err_r: []}
    sizes = {out_r: 0, err_r: 0}
    poller.register(out_r, select.POLLIN | select.POLLHUP | select.POLLERR)
    poller.register(err_r, select.POLLIN | select.POLLHUP | select.POLLERR)
    pending = memoryview(payload)
    if pending:
        os.set_blocking(in_w, False)
        poller.register(in_w, select.POLLOUT | select.POLLERR)
    else:
        os.close(in_w)
        in_w = -1
    try:
        pidfd = os.pidfd_open(pid)
        poller.register(pidfd, select.POLLIN)
    except (AttributeError, OSError):
        pidfd = -1
    exited = False
    drain_until = deadline
    while readers or (not exited and pidfd >= 0):
        now = time.monotonic()
        if exited and now >= drain_until:
            break  # the hook answered; something outside its group still holds a pipe
        remaining = min(deadline, drain_until) - now
        if remaining <= 0:
            result.timed_out = True
            break
        for fd, _event in poller.poll(int(remaining * 1000) + 1):
            if fd == in_w:
                try:
                    written = os.write(in_w, pending[:65536])
                except BlockingIOError:
                    continue
                except OSError:  # EPIPE: the hook closed its stdin; fine
                    written = len(pending)
                pending = pending[written:]
                if not pending:
                    poller.unregister(in_w)
                    os.close(in_w)
                    in_w = -1
            elif fd == pidfd:
                poller.unregister(pidfd)
                os.close(pidfd)
                pidfd = -1
                exited = True
                # Whatever the hook left behind in its group goes with it (and
                # releases the pipes it may still hold); what is already in the
                # pipes is read for at most DRAIN_GRACE more.
                _kill_group(pid)
                drain_until = min(deadline, time.monotonic() + DRAIN_GRACE)
            elif fd in readers:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    poller.unregister(fd)
                    os.close(fd)
                    readers[fd] = b"".join(readers[fd])
                    if fd == out_r:
                        result.stdout = readers.pop(fd)
                    else:
                        result.stderr = readers.pop(fd)
                    continue
                sizes[fd] += len(data)
                if fd == out_r:
                    if sizes[fd] > STDOUT_CAP:
                        result.oversized = True
                        break
                    readers[fd].append(data)
                elif sizes[fd] - len(data) < STDERR_CAP:
                    readers[fd].append(data)
        if result.oversized:
            break
    if not (result.timed_out or result.oversized or exited):
        # No pidfd (old kernel): the pipes are closed; wait for the exit under the
        # deadline without reaping, so the group id stays reserved for the kill below.
        while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.monotonic() >= deadline:
                result.timed_out = True
                break
            time.sleep(0.002)
    # The leader is not reaped yet, so its group id cannot have been reused.
    _block_signals(state)
    _kill_group(pid)
    _, status = os.waitpid(pid, 0)
    if state is not None:
        state.pgid = None  # reaped: the group id may be reused from here on
    _unblock_signals(state)
    result.status = os.waitstatus_to_exitcode(status)
    for fd in list(readers):
        os.close(fd)
        data = b"".join(readers[fd])
        if fd == out_r:
            result.stdout = data
        else:
            result.stderr = data[:STDERR_CAP]
    if in_w >= 0:
        os.close(in_w)
    if pidfd >= 0:
        os.close(pidfd)
    result.stderr = result.stderr[:STDERR_CAP]
    result.elapsed_ms = (time.monotonic() - start) * 1000.0
    return result


def _load_config():
    """-> (config or None, error type name or None). Never raises."""
    try:
        from failsecure import policy

        config = policy.load_light()
    except Exception as exc:  # a broken install or config: deny
        return None, type(exc).__name__
    if getattr(config, "error", None):
        return config, "ConfigError"
    return config, None


def _hook_policy(config, hook_id):
    """-> (on_error, role, explicit per-hook timeout or None, global timeout or None)."""
    on_error, role, explicit, default = "deny", "gate", None, None
    if config is None:
        return on_error, role, explicit, default
    try:
        resolved = config.hook(hook_id)
        on_error = getattr(resolved, "on_error", None) or on_error
        role = getattr(resolved, "role", None) or role
        own = (getattr(config, "hooks", None) or {}).get(hook_id)
        if own is not None and getattr(own, "timeout", None):
            explicit = float(own.timeout)
        default = config.timeout_for(hook_id)
    except Exception:
        pass
    return str(getattr(on_error, "value", on_error)), str(getattr(role, "value", role)), explicit, default


def _sanitize_id(text):
    out = []
    for ch in text:
        out.append(ch if (ch.isalnum() and ch.isascii()) or ch in "._:@+-/#" else "_")
    return "".join(out) or "hook"


def hook_id_for(hook_id, argv):
    """`command:<id>`: an explicit --hook-id as given, else derived from the command by
    failsecure.hookid (basename + hash: nothing of the arguments shows)."""
    if not hook_id:
        from failsecure.hookid import command_name

        hook_id = command_name(list(argv)) if argv else "hook"
    hook_id = _sanitize_id(hook_id)
    return hook_id if hook_id.startswith("command:") else "command:" + hook_id


def _emit(out_fd, err_fd, stdout, stderr):
    for fd, data in ((out_fd, stdout), (err_fd, stderr)):
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except InterruptedError:
                continue
            except OSError:
                break
            view = view[written:]


def run(protocol, argv, timeout=None, hook_id=None, *, stdin_fd=0, stdout_fd=1, stderr_fd=2):
    """Run one hook under the contract and write the host's answer. -> exit code."""
    proto = PROTOCOLS[protocol]
    hid = hook_id_for(hook_id, argv)
    start = time.monotonic()

    def deny_plainly(category, event=None):
        out, err, code = proto.deny(failure_reason(hid, category), event)
        _emit(stdout_fd, stderr_fd, out, err)
        return code

    state = _arm_last_words(lambda: deny_plainly(CRASHED)) if _FORWARD_SIGNALS else None
    try:
        return _run(proto, hid, argv, timeout, start, stdin_fd, stdout_fd, stderr_fd, state)
    except BaseException:  # the runner itself failed: deny, never say why
        if state is not None and state.done is not None:
            return state.done  # the answer is out already
        return deny_plainly(RAISED)


def _run(proto, hid, argv, timeout, start, stdin_fd, stdout_fd, stderr_fd, state=None):
    config, config_error = _load_config()
    on_error, role, explicit, default = _hook_policy(config, hid)
    if timeout is not None and timeout > 0:
        if explicit is not None and 0 < explicit < timeout:
            timeout = explicit
    else:
        timeout = explicit or default or proto.default_timeout
    deadline = start + timeout

    raw, payload_ok = _read_payload(stdin_fd, deadline)
    event = tool = call_id = None
    if payload_ok:
        try:
            payload = _loads(raw)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            value = payload.get("hook_event_name")
            event = value if isinstance(value, str) else None
            value = payload.get("tool_name")
            tool = value if isinstance(value, str) else None
            value = payload.get("tool_use_id")
            call_id = value if isinstance(value, str) else None
    gating = event is None or event.lower() in proto.gating_events
    advisory = not gating or on_error == "allow" or role == "observer"

    def answer(action, failure, out, err, code, verdict=None, elapsed=None, exc_type=None):
        if elapsed is None:
            elapsed = (time.monotonic() - start) * 1000.0
        if role == "observer":
            action, out, err, code = "abstain", b"", b"", 0
        audit_path = getattr(config, "audit_path", None) if config is not None else None
        if audit_path:
            try:
                from failsecure import audit

                entry = audit.entry(hid, verdict or "abstain", failure, exc_type, elapsed)  # a failure has no answer
                audit.write_jsonl(
                    audit_path,
                    audit.event(
                        framework=proto.framework,
                        framework_version=None,
                        tool=tool,
                        call_id=call_id,
                        outcome=action,
                        primary=entry,
                        elapsed_ms=elapsed,
                        outcomes=[entry],
                    ),
                )
            except Exception:
                pass  # audit must never flip or lose the answer
        if state is not None:
            state.done = code
        _emit(stdout_fd, stderr_fd, out, err)
        return code

    def failed(category, elapsed=None, exc_type=None):
        if advisory:
            return answer("abstain", category, b"", b"", 0, elapsed=elapsed, exc_type=exc_type)
        out, err, code = proto.deny(failure_reason(hid, category), event)
        return answer("deny", category, out, err, code, elapsed=elapsed, exc_type=exc_type)

    if state is not None:  # terminated from here on: the hook crashed, as policy says
        state.say = lambda: failed(CRASHED)
    if config_error is not None and gating and role != "observer":
        # As the core does: blame the config, category invalid. No audit path is trusted.
        out, err, code = proto.deny(failure_reason(CONFIG_HOOK, INVALID), event)
        if state is not None:
            state.done = code
        _emit(stdout_fd, stderr_fd, out, err)
        return code
    if not payload_ok:
        return failed(INVALID if time.monotonic() < deadline else TIMEOUT)
    if not argv:
        return failed(MISSING)

    result = execute(argv, raw, max(deadline - time.monotonic(), 0.001))
    elapsed = result.elapsed_ms
    status = result.status
    category = process_failure(result.spawn_errno is not None, result.timed_out, status)
    if result.oversized and category not in (MISSING, TIMEOUT):
        category = INVALID  # the runner killed it for answering too much
    if category is not None:
        return failed(category, elapsed)
    if not gating:  # advisory event: the host gets exactly what the hook said
        action = "deny" if status == 2 else "abstain"
        return answer(action, None, result.stdout, result.stderr, status, action, elapsed)
    if status == 2:
        reason = result.stderr.decode("utf-8", "replace").strip()[:REASON_CAP]
        reason = reason or "failsecure: hook '%s' denied" % (hid,)
        out, err, code = proto.deny(reason, event)
        return answer("deny", None, out, err, code, "deny", elapsed)
    try:
        text = result.stdout.decode("utf-8")
        action, passthrough, reason = proto.judge(text, event)
    except (_Invalid, ValueError):
        return failed(INVALID, elapsed)
    if passthrough:
        return answer(action, None, result.stdout, result.stderr, 0, action, elapsed)
    reason = (reason or "").strip()[:REASON_CAP] or "failsecure: hook '%s' denied" % (hid,)
    out, err, code = proto.deny(reason, event)
    return answer("deny", None, out, err, code, "deny", elapsed)


# --------------------------------------------------------------------------
# Argument parsing for the hot path (argparse costs ~10 ms of imports)
# --------------------------------------------------------------------------

_USAGE = (
    "usage: failsecure hook run --protocol {claude,gemini,codex,kiro} "
    "[--timeout S] [--hook-id ID] -- CMD [ARGS...]"
)


def _parse_run_args(args):
    """-> (protocol, timeout, hook_id, argv); raises ValueError on a usage error."""
    protocol = timeout = hook_id = None
    argv = []
    index = 0
    if list(args[:1]) in (["-h"], ["--help"]):
        raise _Help()
    while index < len(args):
        arg = args[index]
        if arg == "--":
            argv = list(args[index + 1 :])
            break
        if not arg.startswith("--"):
            argv = list(args[index:])
            break
        name, eq, value = arg.partition("=")
        if name not in ("--protocol", "--timeout", "--hook-id", "--record"):
            raise ValueError("unknown option " + name)
        if not eq:
            index += 1
            if index >= len(args):
                raise ValueError("option %s needs a value" % name)
            value = args[index]
        if name == "--protocol":
            protocol = value
        elif name == "--timeout":
            timeout = float(value)
            if not timeout > 0 or timeout != timeout or timeout == float("inf"):
                raise ValueError("--timeout must be a positive number of seconds")
        elif name == "--hook-id":
            hook_id = value
        # --record carries the original settings for `hook uninstall`; ignored here.
        index += 1
    if protocol not in PROTOCOLS:
        raise ValueError("--protocol must be one of " + ", ".join(sorted(PROTOCOLS)))
    return protocol, timeout, hook_id, argv


class _Help(Exception):
    pass


def _usage_deny(args, message):
    """A broken command line must not open the gate: the protocol's deny (when the
    protocol can be read), else a deny every host honours, exit 2."""
    reason = "failsecure: hook runner usage error (%s)" % (message,)
    protocol = None
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg.startswith("--protocol="):
            protocol = arg.partition("=")[2]
        elif arg == "--protocol" and index + 1 < len(args):
            protocol = args[index + 1]
    proto = PROTOCOLS.get(protocol)
    if proto is not None:
        out, err, code = proto.deny(reason, None)
    else:
        # claude reads decision "block", gemini its alias "block"; codex and kiro
        # ignore stdout on exit 2 and read stderr.
        out = (_dumps({"decision": "block", "reason": reason}) + "\n").encode()
        err, code = (reason + "\n").encode(), 2
    _emit(1, 2, out, err)
    return code


def _run_from_args(args):
    try:
        protocol, timeout, hook_id, argv = _parse_run_args(args)
    except _Help:
        os.write(1, (_USAGE + "\n").encode())
        return 0
    except ValueError as exc:
        return _usage_deny(args, exc)
    if not argv:
        return _usage_deny(args, "no command")
    global _FORWARD_SIGNALS
    _FORWARD_SIGNALS = True
    return run(protocol, argv, timeout, hook_id)


# --------------------------------------------------------------------------
# hook install / uninstall
# --------------------------------------------------------------------------

HEADROOM = 5.0  # seconds the host's own timeout exceeds the runner's
DEFAULT_RUNNER_TIMEOUT = 30.0
CLAUDE_ON_FAILURE_MIN = (2, 1, 332)  # first CLI measured to honour "onFailure": "block"
_ABSENT = {"__failsecure_absent__": True}
_RECORD_FLAG = "--record"


class InstallError(Exception):
    """A settings file or host that `hook install` refuses to touch."""


class _Host:
    def __init__(self, name, protocol, events, timeout_key, timeout_unit, flat):
        self.name = name
        self.protocol = protocol
        self.events = events  # lower-cased gating event keys under "hooks"
        self.timeout_key = timeout_key  # key the host reads its own timeout from
        self.timeout_unit = timeout_unit  # 1 (seconds) or 1000 (milliseconds)
        self.flat = flat  # entries are handlers themselves ({command, ...})


HOSTS = {
    "claude": _Host("claude", "claude", ("pretooluse",), "timeout", 1, False),
    "gemini": _Host("gemini", "gemini", ("beforetool",), "timeout", 1000, False),
    "codex": _Host("codex", "codex", ("pretooluse",), "timeout", 1, False),
    "kiro": _Host("kiro", "kiro", ("pretooluse",), None, 1, True),
    "pool": _Host("pool", "claude", ("pretooluse",), "timeout_ms", 1000, True),
}


def runner_path():
    return os.path.abspath(__file__)


# A script is compiled from source on every start (~12 ms for this module on a
# slow machine) while an imported module loads from its cached bytecode, so the
# launch line `hook install` writes imports the runner with -c. The package's
# parent directory goes to the END of sys.path: the stdlib always comes first.
_BOOT = (
    "import sys;sys.stderr=None;sys.path.append(sys.argv[1]);"
    "from failsecure.command import script_main;script_main(sys.argv[2:])"
)


def launch_argv(python, runner):
    """argv that starts the runner (`run --protocol ...` follows)."""
    package = os.path.dirname(runner)
    if os.path.basename(package) == "failsecure":
        return [python, "-I", "-S", "-c", _BOOT, os.path.dirname(package)]
    return [python, "-I", "-S", runner]  # development layout: run as a script


def _precompile(runner):
    """Best effort: cache the runner's bytecode now (the launch imports it)."""
    try:
        import importlib.util
        import py_compile

        package = os.path.dirname(runner)
        for name in ("__init__.py", "command.py", "_fastjson.py", "policy.py"):
            source = os.path.join(package, name)
            if os.path.exists(source) and not os.path.exists(importlib.util.cache_from_source(source)):
                py_compile.compile(source, doraise=False, quiet=2)
    except Exception:
        pass


def _b64encode(data):
    import binascii

    text = binascii.b2a_base64(data, newline=False).decode("ascii")
    return text.replace("+", "-").replace("/", "_").rstrip("=")


def _b64decode(text):
    import binascii

    text = text.replace("-", "+").replace("_", "/")
    return binascii.a2b_base64(text + "=" * (-len(text) % 4))


def _derive_hook_id(command):
    """The hook id `hook install` gives a command (without `command:`): the one place
    is failsecure.hookid, so a token on the command line never becomes an id."""
    from failsecure.hookid import command_name

    return _sanitize_id(command_name(command))


def _shell_deny_lines(proto, reason):
    import shlex

    out, err, _code = proto.deny(reason, "PreToolUse")
    parts = []
    if out:
        parts.append("printf '%%s\\n' %s" % shlex.quote(out.decode().rstrip("\n")))
    parts.append("printf '%%s\\n' %s >&2" % shlex.quote(err.decode().rstrip("\n")))
    return "; ".join(parts)


def _prelude_head(python, runner):
    """The exact start of every shell-form command `hook install` writes, up to and
    including `run --protocol`: how an installed hook is recognised."""
    import shlex

    launch = ['"$R"'] + ['"$F"' if arg == runner else shlex.quote(arg) for arg in launch_argv(python, runner)[1:]]
    return (
        "R=%s; F=%s; " % (shlex.quote(python), shlex.quote(runner))
        + 'if [ -x "$R" ] && [ -f "$F" ]; then '
        # stderr is held back so that a crashing runner's traceback never reaches the host
        + "{ e=$("
        + " ".join(launch)
        + " run --protocol"
    )


def prelude(python, runner, protocol, hook_id, timeout, record, command):
    """The sh command that runs `command` under the runner and denies if the runner is missing or crashes."""
    import shlex

    proto = PROTOCOLS[protocol]
    hid = hook_id_for(hook_id, [])
    call = '%s %s --timeout %s --hook-id %s %s %s -- "${BASH:-/bin/sh}" -c %s' % (
        _prelude_head(python, runner),
        protocol,
        _format_number(timeout),
        shlex.quote(hid[len("command:") :]),
        _RECORD_FLAG,
        record,
        shlex.quote(command),
    )
    return (
        call
        + ' 2>&1 1>&3 3>&-); s=$?; } 3>&1; if [ "$s" -eq 0 ] || [ "$s" -eq 2 ]; then '
        + '[ -z "$e" ] || printf \'%s\\n\' "$e" >&2; exit "$s"; fi; '
        + _shell_deny_lines(proto, failure_reason(hid, CRASHED))
        + "; else "
        + _shell_deny_lines(proto, failure_reason(hid, MISSING))
        + "; fi; exit 2"
    )


def _format_number(value):
    value = float(value)
    return str(int(value)) if value == int(value) else repr(value)


def _host_number(seconds, unit):
    value = seconds * unit
    import math

    return int(math.ceil(value))


def claude_cli_version(claude_bin=None):
    """(major, minor, patch) of the Claude Code CLI found, or None."""
    import re
    import shutil
    import subprocess

    binary = claude_bin or os.environ.get("FAILSECURE_CLAUDE_BIN") or shutil.which("claude")
    if not binary:
        return None
    try:
        proc = subprocess.run(
            [binary, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", proc.stdout or "")
    return tuple(int(part) for part in match.groups()) if match else None


_QUOTED = r"(?:'[^']*'(?:\"'\"'[^']*')*|[^\s;'\"$`\\]+)"  # what shlex.quote writes


def _launch_of(handler):
    """-> the record token when `handler` is failsecure's own launch line (what `hook
    install` writes, recognised by its exact prefix), else None. A hook whose own
    arguments merely contain `--record` or `run --protocol` is not wrapped."""
    import re
    import shlex

    command = handler.get("command")
    if not isinstance(command, str):
        return None
    args = handler.get("args")
    if isinstance(args, list):  # exec form: command = the interpreter, args = the launch
        if not os.path.isabs(command) or not all(isinstance(a, str) for a in args):
            return None
        if args[:3] == ["-I", "-S", "-c"] and len(args) > 4 and args[3] == _BOOT:
            runner = os.path.join(args[4], "failsecure", "command.py")
        elif args[:2] == ["-I", "-S"] and len(args) > 2:
            runner = args[2]
        else:
            return None
        launch = launch_argv(command, runner)[1:]
        rest = args[len(launch) :]
        if args[: len(launch)] != launch or len(rest) < 10:
            return None
        if (
            rest[0] != "run"
            or rest[1] != "--protocol"
            or rest[2] not in PROTOCOLS
            or rest[3] != "--timeout"
            or rest[5] != "--hook-id"
            or rest[7] != _RECORD_FLAG
            or rest[9] != "--"
        ):
            return None
        return rest[8]
    match = re.match(r"R=(%s); F=(%s); " % (_QUOTED, _QUOTED), command)
    if match is None:
        return None
    try:
        python, runner = shlex.split(match.group(1))[0], shlex.split(match.group(2))[0]
    except (ValueError, IndexError):
        return None
    head = _prelude_head(python, runner)
    if not command.startswith(head):
        return None
    tail = re.match(
        r" (?:%s) --timeout [0-9.e+-]+ --hook-id %s %s ([A-Za-z0-9_-]+) -- \"\$\{BASH:-/bin/sh\}\" -c "
        % ("|".join(PROTOCOLS), _QUOTED, _RECORD_FLAG),
        command[len(head) :],
    )
    return tail.group(1) if tail else None


def _is_wrapped(handler):
    return _launch_of(handler) is not None


def _record_of(handler):
    import json

    token = _launch_of(handler) or ""
    try:
        record = json.loads(_b64decode(token).decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise InstallError("a wrapped hook carries a damaged --record; restore it by hand") from None
    if not isinstance(record, dict) or not isinstance(record.get("keys"), dict):
        raise InstallError("a wrapped hook carries a damaged --record; restore it by hand")
    return record


def _handlers(document, host, all_events=False):
    """Yield every command handler dict under the host's gating event(s)."""
    for _where, event, handler in _all_handlers(document):
        if all_events or event.lower() in host.events:
            if isinstance(handler.get("command"), str):
                yield handler


def _all_handlers(document):
    """Yield (where, event, handler dict) for every hook handler in a settings document."""
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event, entries in hooks.items():
        if not isinstance(event, str) or not isinstance(entries, list):
            continue
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("hooks"), list):
                for j, handler in enumerate(entry["hooks"]):
                    if isinstance(handler, dict):
                        yield "hooks.%s[%d].hooks[%d]" % (event, i, j), event, handler
            else:
                yield "hooks.%s[%d]" % (event, i), event, entry


class WrapEntry:
    """One hook `hook install` looked at: its id, where it is in the file, and what was done."""

    __slots__ = ("hook", "where", "why")

    def __init__(self, hook, where, why):
        self.hook = hook
        self.where = where
        self.why = why

    def __repr__(self):
        return "WrapEntry(%r, %r, %r)" % (self.hook, self.where, self.why)


class WrapReport:
    """What `hook install` did to one settings file: every hook wrapped, every hook left alone (with why)."""

    def __init__(self, path):
        self.path = path
        self.wrapped = []
        self.left = []

    @property
    def ids(self):
        return [entry.hook for entry in self.wrapped]

    def lines(self):
        out = []
        for entry in self.wrapped:
            out.append("  wrapped      %s  %s" % (entry.where, entry.hook))
        for entry in self.left:
            out.append("  left alone   %s  %s: %s" % (entry.where, entry.hook, entry.why))
        return out


def _left_alone_why(event, handler, spec):
    """-> why `hook install` leaves this handler as it is, or None to wrap it."""
    if event.lower() not in spec.events:
        return "%s does not gate a tool call" % event
    if handler.get("type", "command") != "command":
        return "type %r is not a command hook" % (handler.get("type"),)
    if not isinstance(handler.get("command"), str):
        return "no command"
    if _is_wrapped(handler):
        return "already runs under failsecure"
    if handler.get("shell") == "powershell":
        return "a PowerShell hook (the fail-closed prelude is POSIX sh): wrap it by hand"
    return None


def _handler_id(handler):
    launch = _launch_of(handler)
    if launch is not None:
        words = handler["args"] if isinstance(handler.get("args"), list) else None
        import re
        import shlex

        if words is not None:
            return "command:" + words[words.index("--hook-id") + 1]
        match = re.search(r" --hook-id (%s) %s " % (_QUOTED, _RECORD_FLAG), handler["command"])
        return "command:" + shlex.split(match.group(1))[0] if match else "command:?"
    command = handler.get("command")
    if not isinstance(command, str):
        return "-"
    if isinstance(handler.get("args"), list):
        return "command:" + _derive_hook_id([command] + [str(a) for a in handler["args"]])
    return "command:" + _derive_hook_id(command)


def _read_document(path):
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise InstallError("%s: no such file" % path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError("%s: cannot read (%s)" % (path, type(exc).__name__)) from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise InstallError(
            "%s: not valid JSON (line %s); failsecure rewrites JSON settings files only"
            % (path, getattr(exc, "lineno", "?"))
        ) from None
    if not isinstance(document, dict):
        raise InstallError("%s: the top level is not a JSON object" % path)
    return text, document


def _render(document, original_text):
    import json

    indent = None
    lines = original_text.splitlines()
    if len(lines) > 1:
        second = lines[1]
        stripped = second.lstrip(" \t")
        prefix = second[: len(second) - len(stripped)]
        indent = prefix if prefix.startswith("\t") else (len(prefix) or 2)
    ascii_only = original_text.isascii() and "\\u" in original_text
    if indent is None:
        import re

        match = re.match(r'\s*\{\s*"(?:[^"\\]|\\.)*"(\s*):(\s*)', original_text)
        spaced = bool(match and match.group(2))
        separators = (", ", ": ") if spaced else (",", ":")
        text = json.dumps(document, ensure_ascii=ascii_only, separators=separators)
    else:
        text = json.dumps(document, ensure_ascii=ascii_only, indent=indent)
    if original_text.endswith("\n"):
        text += "\n"
    return text


def _write_atomic(path, text):
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = 0o600
    fd, temp = tempfile.mkstemp(prefix=".failsecure-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def install(path, host, **options):
    """Wrap every PreToolUse command hook in `path` under the runner. -> list of hook ids wrapped."""
    return wrap_settings(path, host, **options).ids


def wrap_settings(path, host, *, python=None, runner=None, timeout=None, on_failure="auto", claude_bin=None):
    """Wrap every PreToolUse command hook in `path` under the runner. -> WrapReport.

    Idempotent (hooks already under failsecure's own launch line are left alone);
    everything else in the file is preserved; the file is replaced atomically.
    """
    import json

    if host not in HOSTS:
        raise InstallError("unknown host %r (known: %s)" % (host, ", ".join(sorted(HOSTS))))
    spec = HOSTS[host]
    python = python or sys.executable
    runner = runner or runner_path()
    if not python or not os.path.isabs(python):
        raise InstallError("the interpreter must be an absolute path, got %r" % (python,))
    if not os.path.isabs(runner):
        raise InstallError("the runner must be an absolute path, got %r" % (runner,))
    if on_failure not in ("auto", "block", "omit"):
        raise InstallError("--on-failure must be auto, block or omit")
    text, document = _read_document(path)
    block = False
    if host == "claude":
        if on_failure == "block":
            block = True
        elif on_failure == "auto":
            version = claude_cli_version(claude_bin)
            block = version is not None and version >= CLAUDE_ON_FAILURE_MIN
    report = WrapReport(path)
    for where, event, handler in list(_all_handlers(document)):
        why = _left_alone_why(event, handler, spec)
        if why is not None:
            report.left.append(WrapEntry(_handler_id(handler), where, why))
            continue
        command = handler["command"]
        exec_form = isinstance(handler.get("args"), list)
        touched = ["command"]
        if exec_form:
            touched.append("args")
        timeout_key = spec.timeout_key
        if spec.name == "kiro":
            timeout_key = "timeout_ms" if "timeout_ms" in handler else ("timeout" if "timeout" in handler else None)
        unit = 1000 if timeout_key == "timeout_ms" else spec.timeout_unit
        if timeout_key:
            touched.append(timeout_key)
        if block or exec_form and host == "claude":
            touched.append("onFailure")
        record = {"keys": {key: handler.get(key, _ABSENT) for key in touched}}
        token = _b64encode(json.dumps(record, separators=(",", ":")).encode("utf-8"))
        original_timeout = handler.get(timeout_key) if timeout_key else None
        if isinstance(original_timeout, (int, float)) and not isinstance(original_timeout, bool) and original_timeout > 0:
            runner_timeout = float(original_timeout) / unit
        else:
            runner_timeout = float(timeout or DEFAULT_RUNNER_TIMEOUT)
        hook_id = _derive_hook_id(command if not exec_form else [command] + [str(a) for a in handler["args"]])
        if exec_form:
            launch = launch_argv(python, runner)
            handler["command"] = launch[0]
            handler["args"] = launch[1:] + [
                "run",
                "--protocol",
                spec.protocol,
                "--timeout",
                _format_number(runner_timeout),
                "--hook-id",
                hook_id,
                _RECORD_FLAG,
                token,
                "--",
                command,
            ] + [str(arg) for arg in record["keys"]["args"]]
        else:
            handler["command"] = prelude(python, runner, spec.protocol, hook_id, runner_timeout, token, command)
        if timeout_key:
            handler[timeout_key] = _host_number(runner_timeout + HEADROOM, unit)
        if "onFailure" in touched:
            handler["onFailure"] = "block"
        report.wrapped.append(WrapEntry("command:" + hook_id, where, "wrapped"))
    if report.wrapped:
        _write_atomic(path, _render(document, text))
        _precompile(runner)
    return report


def uninstall(path):
    """Restore every hook `install` wrapped in `path` exactly. -> number restored."""
    text, document = _read_document(path)
    any_host = _Host("any", "claude", (), None, 1, False)
    restored = 0
    for handler in list(_handlers(document, any_host, all_events=True)):
        if not _is_wrapped(handler):
            continue
        record = _record_of(handler)
        for key, value in record["keys"].items():
            if value == _ABSENT:
                handler.pop(key, None)
            else:
                handler[key] = value
        restored += 1
    if restored:
        _write_atomic(path, _render(document, text))
    return restored


# --------------------------------------------------------------------------
# argparse wiring (used by failsecure.cli and by the script's install path)
# --------------------------------------------------------------------------


def _cmd_run(args):
    return _run_from_args(list(args.args))


def _cmd_install(args):
    try:
        report = wrap_settings(
            args.file,
            args.host,
            python=args.python,
            runner=args.runner,
            timeout=args.timeout,
            on_failure=args.on_failure,
            claude_bin=args.claude_bin,
        )
    except InstallError as exc:
        sys.stderr.write("failsecure: error: %s\n" % exc)
        return 1
    if report.wrapped:
        print("failsecure: %s: wrapped %d hook(s), left %d alone" % (args.file, len(report.wrapped), len(report.left)))
    else:
        print("failsecure: %s: nothing to wrap (no unwrapped %s PreToolUse command hooks), left %d alone" % (args.file, args.host, len(report.left)))
    for line in report.lines():
        print(line)
    return 0


def _cmd_uninstall(args):
    try:
        restored = uninstall(args.file)
    except InstallError as exc:
        sys.stderr.write("failsecure: error: %s\n" % exc)
        return 1
    print("failsecure: %s: restored %d hook(s)" % (args.file, restored))
    return 0


def _positive_float(text):
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %r" % text) from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def add_hook_commands(subparsers):
    """Add `hook run|install|uninstall` to a CLI's subparsers; each sets func(args) -> exit code."""
    import argparse

    hook = subparsers.add_parser("hook", help="run or install fail-closed command hooks")
    commands = hook.add_subparsers(dest="hook_command", metavar="{run,install,uninstall}")
    commands.required = True

    # `hook run` has one parser, _parse_run_args (the hot path cannot afford argparse):
    # argparse hands it every word after `run` untouched.
    run_parser = commands.add_parser(
        "run", help="run one hook command under the fail-closed runner", usage=_USAGE[len("usage: ") :],
        add_help=False, prefix_chars="\x00",
    )
    run_parser.add_argument("args", nargs=argparse.REMAINDER, help="--protocol P [--timeout S] [--hook-id ID] -- CMD [ARGS...]")
    run_parser.set_defaults(func=_cmd_run)

    install_parser = commands.add_parser("install", help="rewrite a host settings file to use the runner")
    install_parser.add_argument("--host", required=True, choices=sorted(HOSTS))
    install_parser.add_argument("--python", default=None, help="absolute interpreter (default: this one)")
    install_parser.add_argument("--runner", default=None, help=argparse.SUPPRESS)
    install_parser.add_argument(
        "--timeout", type=_positive_float, default=None, help="runner timeout for hooks that set none (default 30)"
    )
    install_parser.add_argument(
        "--on-failure",
        default="auto",
        choices=("auto", "block", "omit"),
        help="Claude Code onFailure: block (auto: when the installed CLI supports it)",
    )
    install_parser.add_argument("--claude-bin", default=None, help="Claude Code CLI used to detect onFailure support")
    install_parser.add_argument("file")
    install_parser.set_defaults(func=_cmd_install)

    uninstall_parser = commands.add_parser("uninstall", help="restore the hooks `hook install` wrapped")
    uninstall_parser.add_argument("file")
    uninstall_parser.set_defaults(func=_cmd_uninstall)
    return hook


def main(args=None):
    """CLI entry: `run ...` (fast path, no argparse) or `install|uninstall ...`. -> exit code."""
    args = sys.argv[1:] if args is None else list(args)
    if args[:1] == ["hook"]:
        args = args[1:]
    if args[:1] == ["run"]:
        return _run_from_args(args[1:])
    import argparse

    parser = argparse.ArgumentParser(prog="failsecure")
    add_hook_commands(parser.add_subparsers(dest="command", required=True))
    namespace = parser.parse_args(["hook"] + args)
    return namespace.func(namespace)


def script_main(args=None):
    """Entry of the launch line `hook install` writes; exits the process without teardown."""
    _ensure_std_fds()
    args = sys.argv[1:] if args is None else list(args)
    if sys.stderr is None and args[:1] != ["run"]:
        sys.stderr = sys.__stderr__  # the launch line silences tracebacks of `run` only
    code = main(args)
    try:
        sys.stdout.flush()
    except Exception:
        pass
    os._exit(code)


if __name__ == "__main__":
    script_main()
