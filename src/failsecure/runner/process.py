"""Process supervision: run one hook command under a deadline, in its own session.

The payload goes to the hook's stdin; stdout and stderr are read through capped pipes;
on the deadline (or once the hook exited) the whole process group is SIGKILLed, so no
grandchild outlives the call. If the host terminates the runner, the runner's last
words are the protocol's deny (set by ``failsecure.runner.decision``), after the hook's
group is killed.

Imports only ``os``, ``time`` and, when used, ``select`` / ``_signal`` (hot path).
"""

import os
import time

TYPE_CHECKING = False  # not typing's: importing typing costs every hook run
if TYPE_CHECKING:
    from typing import Any

PAYLOAD_CAP = 32 * 1024 * 1024  # bytes read from the host's stdin
STDOUT_CAP = 1024 * 1024  # a hook answer larger than this is INVALID
STDERR_CAP = 64 * 1024  # stderr kept (the rest is drained and dropped)
DRAIN_GRACE = 0.2  # seconds to read the pipes after the hook exited
_SIGPIPE = 13
_SIGXFSZ = 25
_SIGKILL = 9


# Variables that change what a shell runs before (or instead of) its command: a
# project's settings can put them in the hook's environment, and the runner starts the
# hook through a shell (`<shell> -c '<original>'`). BASH_ENV / ENV are sourced first,
# SHELLOPTS=noexec runs nothing (exit 0), BASH_FUNC_x%% replaces a builtin, PS4 with
# xtrace runs code. The runner never hands them on.
SHELL_STARTUP = frozenset({"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "BASH_XTRACEFD", "PROMPT_COMMAND"})


# Variables that decide what an interpreter or the loader runs before a guard's own code
# (a `sitecustomize` on PYTHONPATH, a preloaded library, NODE_OPTIONS' --require...). A
# host builds the hook's environment from the project's settings, so `hook install`
# records the installing user's values and the runner gives the hook those.
STEERING = frozenset({
    "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONUSERBASE", "PYTHONEXECUTABLE",
    "PYTHONPYCACHEPREFIX", "PYTHONPLATLIBDIR", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH",
    "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "DYLD_FRAMEWORK_PATH",
    "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
})


def hook_environment(environ=None, trusted_path=None, steering=None):
    """The environment a hook is started with: the runner's own, without SHELL_STARTUP
    variables and exported bash functions. ``trusted_path``: the installing user's PATH
    entries (the launch line's record): they come first on the hook's PATH, then the
    environment's own absolute entries (a relative one, "" or ".", is the project's
    directory), so a program the original command names by name is found where the user's
    PATH finds it, not where a project's settings `env` put its own first. ``steering``:
    the installing user's values of the STEERING variables (the record's): the hook gets
    exactly those (an unset one is removed)."""
    environ = os.environ if environ is None else environ
    env = {
        k: v for k, v in environ.items() if k not in SHELL_STARTUP and not k.startswith("BASH_FUNC_")
    }
    if trusted_path:
        parts = [p for p in trusted_path if type(p) is str and p.startswith("/") and ":" not in p]
        if parts:
            for part in (env.get("PATH") or "").split(":"):
                if part.startswith("/") and part not in parts:
                    parts.append(part)
            env["PATH"] = ":".join(parts)
    if isinstance(steering, dict):
        for name in STEERING:
            env.pop(name, None)
        env.update({k: v for k, v in steering.items() if k in STEERING and type(v) is str})
    return env


def ensure_std_fds():
    # A closed 0/1/2 would let a pipe land on it and confuse the dup2 plan.
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def read_payload(fd, deadline):
    """Read the host's stdin up to PAYLOAD_CAP -> (bytes, ok)."""
    import select

    chunks: list[bytes] = []
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


class Result:
    __slots__ = ("spawn_errno", "timed_out", "oversized", "status", "stdout", "stderr", "stderr_cut", "elapsed_ms")

    def __init__(self):
        self.spawn_errno = None
        self.timed_out = False
        self.oversized = False
        self.stderr_cut = False  # stderr went past the cap: what was kept is its start only
        self.status = None  # exit code, negative for a signal
        self.stdout = b""
        self.stderr = b""
        self.elapsed_ms = 0.0


def _kill_group(pgid):
    try:
        os.killpg(pgid, _SIGKILL)
    except OSError:
        pass


# Signals a host (or a user) sends to stop the runner. Each one gets the runner's last
# words: the hook's process group is killed and the host is told the protocol's deny.
_TERMINATING = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGALRM", "SIGUSR1", "SIGUSR2")


class _LastWords:
    """What the runner says if it is terminated before it answered."""

    __slots__ = ("pgid", "done", "dying", "say", "signals")
    say: "Any"  # () -> exit code, once armed

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
        except BaseException:  # noqa: BLE001 - the last words could not be said: exit 2, which every host reads as a deny
            code = 2
    os._exit(code)


def arm_last_words(say):
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


def execute(argv, payload, timeout, env=None, stderr_cap=STDERR_CAP):
    """Run argv with payload on stdin in a new session under a deadline -> Result.

    The one implementation of running a command hook: the runner's, and the command
    hooks code-puppy and hermes-agent run themselves (their adapters call this). A hook
    that answered and exited is judged by its answer even when a background process it
    left keeps the pipes open (its group is killed, the pipes drained for DRAIN_GRACE).
    `stderr_cap`: bytes of stderr kept (the rest is drained and dropped, and
    ``stderr_cut`` says so): more for a host that reads its answer there (Gemini CLI)."""
    import select

    result = Result()
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
            os.environ if env is None else env,
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
    readers: dict[int, Any] = {out_r: [], err_r: []}  # a fd's chunks, then their join
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
        # in steps of at most a day: poll(2) takes its milliseconds as a C int, and a
        # valid deadline may be far longer (policy.MAX_TIMEOUT)
        for fd, _event in poller.poll(min(int(remaining * 1000) + 1, 86_400_000)):
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
                elif sizes[fd] - len(data) < stderr_cap:
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
            result.stderr = data[:stderr_cap]
    if in_w >= 0:
        os.close(in_w)
    if pidfd >= 0:
        os.close(pidfd)
    result.stderr_cut = sizes[err_r] > stderr_cap
    result.stderr = result.stderr[:stderr_cap]
    result.elapsed_ms = (time.monotonic() - start) * 1000.0
    return result


def emit(out_fd, err_fd, stdout, stderr):
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
