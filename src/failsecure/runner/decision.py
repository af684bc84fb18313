"""The runner's decision: one hook's run becomes an ``Outcome``, and the decision is
``failsecure.reduce.reduce`` over it, with the config's policy for that hook: the same
core every adapter uses (on_error, observer role, a config that fails validation).

The runner only translates: the process result and the host's protocol into an
Outcome, the Decision back into the bytes and exit code the host reads. What it adds
is what only a command hook has: events that do not gate a tool call (advisory, the
hook's answer passes through), and the hook's own allow / ask / no-opinion bytes
passed on unchanged when the policy lets its answer stand.
"""

import os
import time

from failsecure.failures import CRASHED, INVALID, MISSING, RAISED, TIMEOUT, failure_reason, process_failure
from failsecure.reduce import effective, reduce
from failsecure.runner import process as process
from failsecure.runner.protocols import DENY, PROTOCOLS, Invalid
from failsecure.verdict import Action, Failure, Outcome, Verdict

CONFIG_HOOK = "failsecure:config"  # the hook id the core blames for an invalid config
REASON_CAP = 2000  # characters of a hook's own deny reason passed on
AUDIT_BOUND = 1.0  # seconds the audit append may take after the answer is out
# ... and never past the runner's deadline plus this: hosts read the answer at the exit,
# and the host's clock is at least protocols.HOST_MARGIN_MIN (0.5 s) beyond the deadline
AUDIT_PAST_DEADLINE = 0.25

# In-process callers (tests) run with the host's signals as they are; the `hook run`
# entry point sets this: it is a process of its own, and terminating it must deny.
last_words = False


def hook_id_for(hook_id, argv):
    """`command:<id>`: an explicit --hook-id as given, else derived from the command by
    failsecure.hookid (basename + hash: nothing of the arguments shows); either kept to
    the characters of a command hook's id (``hookid.command_id``)."""
    from failsecure.hookid import command_id, command_name

    if not hook_id:
        hook_id = command_name(list(argv)) if argv else "hook"
    hook_id = command_id(hook_id)
    return hook_id if hook_id.startswith("command:") else "command:" + hook_id


def load_config(trusted=None):
    """-> (config or None, error type name or None). Never raises."""
    try:
        from failsecure.runner.config import load

        config = load(trusted)
    except Exception as exc:  # noqa: BLE001 - a broken install or config: deny
        return None, type(exc).__name__
    if getattr(config, "error", None):
        return config, "ConfigError"
    return config, None


def load_config_bounded(trusted, until):
    """load_config, given until the monotonic time `until` -> (config, error) as
    load_config, or (None, None, False) past it (and the load is left to finish in its
    thread: the runner's process ends with its answer). The config is read and parsed
    before the hook starts, and a project's file decides how long that takes (a 4 MiB
    ``failsecure.toml`` parsed for seconds on a loaded machine): the answer must still
    come before the host's clock, which fails open. -> (config, error, loaded)."""
    import _thread

    box = []
    done = _thread.allocate_lock()
    done.acquire()

    def work():
        try:
            box.append(load_config(trusted))
        finally:
            done.release()

    try:
        _thread.start_new_thread(work, ())
    except RuntimeError:  # no thread to be had: load here, as before
        config, error = load_config(trusted)
        return config, error, True
    remaining = min(until - time.monotonic(), getattr(_thread, "TIMEOUT_MAX", 86_400.0), 86_400.0)
    if remaining > 0:
        done.acquire(True, remaining)
    else:
        done.acquire(False)
    if not box:
        return None, None, False
    config, error = box[0]
    return config, error, True


def _deadline_policy(config, hook_id):
    """-> (explicit per-hook timeout or None, the config's timeout for the hook or None)."""
    explicit = default = None
    if config is None:
        return explicit, default
    try:
        own = config.hook(hook_id).timeout
        if own:
            explicit = float(own)
        default = config.timeout_for(hook_id)
    except Exception:  # noqa: BLE001 - a per-hook timeout that cannot be read: the runner's own deadline stands
        pass
    return explicit, default


def _with_declared_on_error(config, hid, on_error):
    """The host's own per-hook failure policy (Pool ``failure_policy``, kiro_crew
    ``on_error``), carried by the launch line only when `hook install` read it from a
    trusted (user-level) settings file: the hook's on_error unless the config sets one."""
    if not on_error or config is None or getattr(config, "error", None):
        return config
    try:
        own = config.hooks.get(hid)
        if own is not None and own.on_error:
            return config  # the failsecure config says it explicitly
        from failsecure.policy import HookPolicy

        hooks = dict(config.hooks)
        hooks[hid] = HookPolicy(
            on_error,
            own.timeout if own is not None else None,
            own.role if own is not None else None,
            getattr(own, "interactive_timeout", None),
        )
        config.hooks = hooks
        config._resolved.pop(hid, None)
    except Exception:  # noqa: BLE001 - the config's own policy stands
        pass  # the config's own policy stands
    return config


def run(protocol, argv, timeout=None, hook_id=None, *, stdin_fd=0, stdout_fd=1, stderr_fd=2, trusted=None, on_error=None,
        record=None):
    """Run one hook under the contract and write the host's answer. -> exit code.

    ``trusted``: the runner's trusted inputs (``failsecure.runner.config.Trusted``: the
    launch line's config options and the user's real home); ``on_error``: the failure
    policy the launch line declares for this hook (see ``_with_declared_on_error``);
    ``record``: the --record token `hook install` wrote; it names the host settings
    file, whose current host timeout caps the deadline (runner_protocols.host_capped)."""
    proto = PROTOCOLS[protocol]
    hid = hook_id_for(hook_id, argv)
    start = time.monotonic()

    def deny_plainly(category, event=None):
        out, err, code = proto.deny(failure_reason(hid, category), event)
        process.emit(stdout_fd, stderr_fd, out, err)
        return code

    state = process.arm_last_words(lambda: deny_plainly(CRASHED)) if last_words else None
    try:
        return _run(proto, hid, argv, timeout, start, stdin_fd, stdout_fd, stderr_fd, state, trusted, on_error, record)
    except BaseException:  # noqa: BLE001 - the runner itself failed: deny, never say why
        if state is not None and state.done is not None:
            return state.done  # the answer is out already
        return deny_plainly(RAISED)


class _Call:
    """One run's context: who, for which host and event, and where the answer goes."""

    def __init__(self, proto, hid, start, config, stdout_fd, stderr_fd, state):
        self.proto = proto
        self.hid = hid
        self.start = start
        self.config = config
        self.stdout_fd = stdout_fd
        self.stderr_fd = stderr_fd
        self.state = state
        self.event = self.tool = self.call_id = None
        self.deadline = None  # the runner's deadline (monotonic), once known
        self.path = None  # the installing user's PATH entries (the record's), first on the hook's PATH
        self.steering = None  # the installing user's interpreter-steering variables (the record's)

    def elapsed(self):
        return (time.monotonic() - self.start) * 1000.0

    def answer(self, out, err, code, action, outcome):
        """Write the host's answer, then audit it (bounded, best effort). -> exit code.

        The answer never waits on the audit file: it is written first, and the audit
        append that follows opens without blocking (a FIFO or device is never
        written), takes the lock with LOCK_NB for at most AUDIT_BOUND seconds (never past the
        deadline plus AUDIT_PAST_DEADLINE), and is
        dropped past that, so the exit status the host waits for comes in bounded time."""
        if self.state is not None:
            self.state.done = code
        process.emit(self.stdout_fd, self.stderr_fd, out, err)
        audit_path = getattr(self.config, "audit_path", None) if outcome is not None else None
        if audit_path:
            try:
                from failsecure import audit

                entry = audit.outcome_fields(outcome)
                event = audit.event(
                    framework=self.proto.framework,
                    framework_version=None,
                    tool=self.tool,
                    call_id=self.call_id,
                    outcome=action,
                    primary=entry,
                    elapsed_ms=outcome.elapsed_ms,
                    outcomes=[entry],
                )
                from failsecure._fastjson import dumps

                bound = AUDIT_BOUND
                if self.deadline is not None:  # the exit the host waits for stays before its clock
                    bound = min(bound, max(0.0, self.deadline + AUDIT_PAST_DEADLINE - time.monotonic()))
                append_bounded(audit_path, (dumps(event) + "\n").encode("utf-8"), bound)
            except Exception:  # noqa: BLE001 - audit must never flip or lose the answer
                pass  # audit must never flip or lose the answer
        return code

    def decide(self, outcome, passthrough=(b"", b"")):
        """The core's decision on this gated call, in the host's protocol."""
        decision = reduce((outcome,), self.config)
        if decision.denied:
            out, err, code = self.proto.deny(decision.reason, self.event)
            return self.answer(out, err, code, "deny", outcome)
        if outcome.failure is None and effective(outcome, self.config) is outcome.action:
            # the hook's own allow / ask / no-opinion stands: its bytes, unchanged
            return self.answer(passthrough[0], passthrough[1], 0, decision.action.value, outcome)
        return self.answer(b"", b"", 0, decision.action.value, outcome)  # the policy silenced it

    def failed(self, category, elapsed=None):
        return self.decide(Outcome(self.hid, failure=Failure(category), elapsed_ms=self.elapsed() if elapsed is None else elapsed))


def append_bounded(path, data, bound):
    """Append `data` to the regular file `path` under an exclusive flock, never
    blocking: O_NONBLOCK open (a FIFO or device is refused by fstat), LOCK_NB retried
    until `bound` seconds passed. -> True when written."""
    import stat as _stat

    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return False
    try:
        if not _stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            import fcntl
        except ImportError:  # pragma: no cover
            fcntl = None  # type: ignore[assignment]
        if fcntl is not None:
            until = time.monotonic() + bound
            pause = 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= until:
                        return False
                    time.sleep(pause)
                    pause = min(pause * 2, 0.02)
                except OSError:
                    break  # no locking here (some file systems): write unlocked
        os.write(fd, data)
        return True
    finally:
        os.close(fd)


def _own_deny(hid, reason):
    reason = (reason or "").strip()[:REASON_CAP]
    try:
        reason.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (valid JSON: "\ud800"): shown as U+FFFD, still the hook's deny
        reason = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in reason)
    return Verdict(Action.DENY, reason or "failsecure: hook '%s' denied" % (hid,))


def _run(proto, hid, argv, timeout, start, stdin_fd, stdout_fd, stderr_fd, state=None, trusted=None, on_error=None, record=None):
    # The load gets until the launch line's deadline (the host's clock, as the settings
    # file says now, with its margin) plus AUDIT_PAST_DEADLINE; past that it is the
    # config's timeout, a deny, said before the host's clock runs out.
    host_cap = float("inf")
    if record:
        from failsecure.runner.protocols import host_capped

        host_cap = host_capped(host_cap, record, proto.host_default_timeout)  # the host's clock, as its settings say now
    launch = min(timeout if timeout is not None and timeout > 0 else proto.default_timeout, host_cap)
    config, config_error, loaded = load_config_bounded(trusted, start + launch + AUDIT_PAST_DEADLINE)
    if not loaded:
        return _config_late(proto, hid, start, stdin_fd, stdout_fd, stderr_fd, state)
    if config_error is None:
        config = _with_declared_on_error(config, hid, on_error)
    explicit, default = _deadline_policy(config, hid)
    if timeout is not None and timeout > 0:
        if explicit is not None and 0 < explicit < timeout:
            timeout = explicit
    else:
        timeout = explicit or default or proto.default_timeout
    timeout = min(timeout, host_cap)
    deadline = start + timeout

    raw, payload_ok = process.read_payload(stdin_fd, deadline)
    call = _Call(proto, hid, start, config, stdout_fd, stderr_fd, state)
    call.deadline = deadline
    if record:
        from failsecure.runner.protocols import record_path, record_steering

        call.path = record_path(record)
        call.steering = record_steering(record)
    if payload_ok:
        try:
            from failsecure._fastjson import loads

            payload = loads(raw)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            value = payload.get("hook_event_name")
            call.event = value if isinstance(value, str) else None
            value = payload.get("tool_name")
            call.tool = value if isinstance(value, str) else None
            value = payload.get("tool_use_id")
            call.call_id = value if isinstance(value, str) else None
    event = call.event
    gating = event is None or event.lower() in proto.gating_events
    if argv and payload_ok:
        argv = proto.hook_argv(argv, payload)  # as the host would run it (Gemini expands $GEMINI_PROJECT_DIR, ...)

    if config_error is not None:
        if gating:
            # As the core does: blame the config, category invalid; no audit path is trusted.
            call.config = None
            if state is not None:
                state.say = lambda: call.decide(Outcome(CONFIG_HOOK, failure=Failure.INVALID))
            return call.decide(Outcome(CONFIG_HOOK, failure=Failure.INVALID))
        config = call.config = None  # an advisory event: no policy, no audit path
    if not gating:
        return _advisory(call, argv, raw, payload_ok, deadline, state)

    if state is not None:  # terminated from here on: the hook crashed, as the policy says
        state.say = lambda: call.failed(CRASHED)
    if not payload_ok:
        return call.failed(INVALID if time.monotonic() < deadline else TIMEOUT)
    if not argv:
        return call.failed(MISSING)

    result = process.execute(argv, raw, max(deadline - time.monotonic(), 0.001), process.hook_environment(None, call.path, call.steering),
                             proto.stderr_cap or process.STDERR_CAP)
    category = _process_category(result)
    elapsed = result.elapsed_ms
    if category is not None:
        return call.failed(category, elapsed)
    if result.status == 2:
        reason = result.stderr.decode("utf-8", "replace")
        return call.decide(Outcome(hid, _own_deny(hid, reason), elapsed_ms=elapsed))
    try:
        action, reason = proto.judge_exit0(result.stdout, result.stderr, event, result.stderr_cut)
    except (Invalid, ValueError):
        return call.failed(INVALID, elapsed)
    if action == DENY:
        return call.decide(Outcome(hid, _own_deny(hid, reason), elapsed_ms=elapsed))
    return call.decide(Outcome(hid, Verdict(Action(action)), elapsed_ms=elapsed), (result.stdout, result.stderr))


def _config_late(proto, hid, start, stdin_fd, stdout_fd, stderr_fd, state):
    """The config was not loaded in time: the core's config failure (timeout), blamed on
    failsecure:config, for a gating event (its name read from what the host has already
    written, in at most 20 ms); an advisory event passes as no opinion. No audit: no
    trusted audit path is known."""
    call = _Call(proto, hid, start, None, stdout_fd, stderr_fd, state)
    raw, payload_ok = process.read_payload(stdin_fd, time.monotonic() + 0.02)
    if payload_ok:
        try:
            from failsecure._fastjson import loads

            payload = loads(raw)
        except ValueError:
            payload = None
        value = payload.get("hook_event_name") if isinstance(payload, dict) else None
        call.event = value if isinstance(value, str) else None
    if call.event is not None and call.event.lower() not in proto.gating_events:
        return call.answer(b"", b"", 0, "abstain", None)
    return call.decide(Outcome(CONFIG_HOOK, failure=Failure.TIMEOUT))


def _process_category(result):
    category = process_failure(result.spawn_errno is not None, result.timed_out, result.status)
    if result.oversized and category not in (MISSING, TIMEOUT):
        category = INVALID  # the runner killed it for answering too much
    return category


def _advisory(call, argv, raw, payload_ok, deadline, state):
    """An event that gates no tool call: a failure is "no opinion" (audited), and
    otherwise the host gets exactly what the hook said."""
    if state is not None:
        state.say = lambda: call.answer(b"", b"", 0, "abstain", Outcome(call.hid, failure=Failure.CRASHED, elapsed_ms=call.elapsed()))
    if not payload_ok or not argv:
        category = MISSING if payload_ok else (INVALID if time.monotonic() < deadline else TIMEOUT)
        return call.answer(b"", b"", 0, "abstain", Outcome(call.hid, failure=Failure(category), elapsed_ms=call.elapsed()))
    result = process.execute(argv, raw, max(deadline - time.monotonic(), 0.001), process.hook_environment(None, call.path, call.steering))
    category = _process_category(result)
    if category is not None:
        return call.answer(b"", b"", 0, "abstain", Outcome(call.hid, failure=Failure(category), elapsed_ms=result.elapsed_ms))
    action = Action.DENY if result.status == 2 else Action.ABSTAIN
    outcome = Outcome(call.hid, Verdict(action), elapsed_ms=result.elapsed_ms)
    return call.answer(result.stdout, result.stderr, result.status, action.value, outcome)

