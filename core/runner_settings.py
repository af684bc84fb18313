"""`hook install` / `hook uninstall`: rewrite a host's settings file so every gating
command hook runs under the runner, and restore it exactly.

Rare and interactive: imports whatever it likes. Named ``wrap_settings`` /
``unwrap_settings`` so they are never mistaken for ``failsecure.install()`` (the
in-process activation).
"""

import os
import sys

from failsecure.failures import CRASHED, MISSING, failure_reason
from failsecure.runner_decision import hook_id_for, sanitize_id
from failsecure.runner_protocols import PROTOCOLS

__all__ = ("HOSTS", "InstallError", "WrapReport", "wrap_settings", "unwrap_settings", "launch_argv", "runner_path", "prelude")

HEADROOM = 5.0  # seconds the host's own timeout exceeds the runner's
DEFAULT_RUNNER_TIMEOUT = 30.0
CLAUDE_ON_FAILURE_MIN = (2, 1, 332)  # first CLI measured to honour "onFailure": "block"
_ABSENT = {"__failsecure_absent__": True}
_RECORD_FLAG = "--record"


class InstallError(Exception):
    """A settings file or host that `hook install` refuses to touch."""


class _Host:
    def __init__(self, name, protocol, events, timeout_key, timeout_unit, flat, default_timeout=None):
        self.name = name
        self.protocol = protocol
        self.events = events  # lower-cased gating event keys under "hooks"
        self.timeout_key = timeout_key  # key the host reads its own timeout from
        self.timeout_unit = timeout_unit  # 1 (seconds) or 1000 (milliseconds)
        self.flat = flat  # entries are handlers themselves ({command, ...})
        self.default_timeout = default_timeout  # seconds the host allows a hook that sets none


HOSTS = {
    "claude": _Host("claude", "claude", ("pretooluse",), "timeout", 1, False, 600),
    "gemini": _Host("gemini", "gemini", ("beforetool",), "timeout", 1000, False, 60),
    "codex": _Host("codex", "codex", ("pretooluse",), "timeout", 1, False, 600),
    "kiro": _Host("kiro", "kiro", ("pretooluse",), None, 1, True),
    "pool": _Host("pool", "claude", ("pretooluse",), "timeout_ms", 1000, True),
}

# Gemini CLI copies a trusted workspace's `.env` into the environment its hooks inherit
# (every variable the CLI's own environment does not set), and runs each hook as
# `bash -c <command>` with `bash` looked up on that environment's PATH. Variables there
# decide what that shell does BEFORE the launch line runs: BASH_ENV is sourced,
# SHELLOPTS=noexec makes the shell run nothing and exit 0 (an allow), LD_PRELOAD loads
# a library into it. The hook's own `env` key is merged last by the host, so `hook
# install` pins these there: emptied, or (for what the user's own environment
# decides: PATH, the library path, which failsecure config and cache are trusted) the
# value of the environment `hook install` ran in. A value the user wrote in the hook's
# `env` themselves is kept.
GEMINI_EMPTIED = ("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "LD_PRELOAD", "LD_AUDIT")
GEMINI_FROM_INSTALL = ("PATH", "LD_LIBRARY_PATH", "FAILSECURE_CONFIG", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
_FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"


def gemini_pinned_env(user_env=None, environ=None):
    """The `env` a wrapped Gemini hook gets: the user's own entries, then the pins."""
    environ = os.environ if environ is None else environ
    pinned = dict(user_env) if isinstance(user_env, dict) else {}
    for name in GEMINI_EMPTIED:
        pinned.setdefault(name, "")
    for name in GEMINI_FROM_INSTALL:
        value = environ.get(name) or ""
        if name == "PATH":
            # only absolute entries: "" and "." would let the project's directory choose `bash`
            value = ":".join(part for part in value.split(":") if os.path.isabs(part)) or _FALLBACK_PATH
        elif value and not os.path.isabs(value):
            value = ""
        pinned.setdefault(name, value)
    return pinned


def runner_path():
    """The launcher installed settings files name: ``.../failsecure/command.py``."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "command.py")


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
        names = ["__init__.py", "command.py", "_fastjson.py", "policy.py", "failures.py", "hookid.py", "verdict.py", "reduce.py", "audit.py"]
        names += ["runner_%s.py" % name for name in ("protocols", "process", "decision", "cli", "config")]
        for name in names:
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

    return sanitize_id(command_name(command))


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
        self.trust = None  # CodexTrust for a Codex hooks file

    @property
    def ids(self):
        return [entry.hook for entry in self.wrapped]

    def lines(self):
        out = []
        for entry in self.wrapped:
            out.append("  wrapped      %s  %s" % (entry.where, entry.hook))
        for entry in self.left:
            out.append("  left alone   %s  %s: %s" % (entry.where, entry.hook, entry.why))
        if self.trust is not None:
            out.extend(self.trust.lines())
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


def wrap_settings(path, host, *, python=None, runner=None, timeout=None, on_failure="auto", claude_bin=None,
                  codex_bin=None, codex_trust="auto"):
    """Wrap every PreToolUse command hook in `path` under the runner. -> WrapReport.

    Idempotent (hooks already under failsecure's own launch line are left alone);
    everything else in the file is preserved; the file is replaced atomically. Codex:
    the hooks the user trusted stay trusted (CodexTrust), or nothing is changed.
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
        if host == "gemini":
            touched.append("env")
        record = {"keys": {key: handler.get(key, _ABSENT) for key in touched}}
        if timeout_key:
            # where the runner reads the host's own timeout at run time (host_capped)
            record["host"] = {"settings": os.path.abspath(path), "key": timeout_key, "unit": unit,
                              "default": spec.default_timeout}
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
        if host == "gemini":
            handler["env"] = gemini_pinned_env(record["keys"]["env"] if record["keys"]["env"] != _ABSENT else None)
        report.wrapped.append(WrapEntry("command:" + hook_id, where, "wrapped"))
    if report.wrapped:
        trust = CodexTrust(path, codex_bin, codex_trust) if host == "codex" else None
        if trust is not None:
            trust.read_before()
        _write_atomic(path, _render(document, text))
        if trust is not None:
            trust.keep(text)
            report.trust = trust
        _precompile(runner)
    return report


def _launch_protocol(handler):
    """The --protocol of failsecure's own launch line in `handler`."""
    import re

    if isinstance(handler.get("args"), list):
        args = handler["args"]
        return args[args.index("--protocol") + 1] if "--protocol" in args[:-1] else None
    match = re.search(r" run --protocol (\w+) --timeout ", handler.get("command") or "")
    return match.group(1) if match else None


def unwrap_settings(path, *, codex_bin=None, codex_trust="auto", notes=None):
    """Restore every hook `wrap_settings` wrapped in `path` exactly. -> number restored.
    Codex hooks the user trusted stay trusted (their lines go to `notes`)."""
    text, document = _read_document(path)
    any_host = _Host("any", "claude", (), None, 1, False)
    restored = 0
    codex = False
    for handler in list(_handlers(document, any_host, all_events=True)):
        if not _is_wrapped(handler):
            continue
        codex = codex or _launch_protocol(handler) == "codex"
        record = _record_of(handler)
        for key, value in record["keys"].items():
            if value == _ABSENT:
                handler.pop(key, None)
            else:
                handler[key] = value
        restored += 1
    if restored:
        trust = CodexTrust(path, codex_bin, codex_trust) if codex else None
        if trust is not None:
            trust.read_before()
        _write_atomic(path, _render(document, text))
        if trust is not None:
            trust.keep(text)
            if notes is not None:
                notes.extend(trust.lines())
    return restored


# ---------------------------------------------------------------- Codex hook trust
#
# Codex runs a user or project hook only when its current hash is recorded as trusted
# in $CODEX_HOME/config.toml (`[hooks.state."<hooks.json>:pre_tool_use:<i>:<j>"]
# trusted_hash = "sha256:..."`, what its /hooks review writes). A modified hook is
# skipped SILENTLY: `hook install` and `hook uninstall` change the hook, so a gate the
# user trusted would turn itself off. The hash is Codex's own business, so it is asked
# of the real binary (`codex app-server`, `hooks/list`); a hook the user trusted before
# the rewrite is trusted again for its rewritten form, one never trusted stays as it was
# (trust comes from the user). If that cannot be done, nothing is changed.

CODEX_TRUSTED = "trusted"
_APP_SERVER_TIMEOUT = 60.0


def codex_binary(codex_bin=None):
    """The Codex CLI used to read and keep hook trust: --codex-bin, $FAILSECURE_CODEX_BIN
    or `codex` on PATH; None when there is none."""
    import shutil

    binary = codex_bin or os.environ.get("FAILSECURE_CODEX_BIN") or shutil.which("codex")
    return binary or None


def _codex_cwd(path):
    """The directory Codex must start in to list the hooks of `path`: the project of a
    `<project>/.codex/hooks.json`, else the file's own directory."""
    directory = os.path.dirname(os.path.abspath(path))
    return os.path.dirname(directory) if os.path.basename(directory) == ".codex" else directory


def codex_hook_states(codex_bin, cwd, env=None):
    """Ask the real Codex which hooks it sees from `cwd` -> (codex home, {key: hook}),
    each hook the app server's `hooks/list` entry (`key`, `sourcePath`, `eventName`,
    `currentHash`, `trustStatus`, ...). Raises InstallError when Codex cannot be asked."""
    import json
    import selectors
    import subprocess
    import time

    try:
        proc = subprocess.Popen(
            [codex_bin, "app-server"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True, env=env,
        )
    except OSError as exc:
        raise InstallError("cannot start %s app-server to read Codex's hook trust (%s)" % (codex_bin, type(exc).__name__)) from None
    messages = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "failsecure", "version": "1"}}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [cwd]}},
    ]
    replies = {}
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        proc.stdin.flush()
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + _APP_SERVER_TIMEOUT
        buffer = b""
        while 2 not in replies and time.monotonic() < deadline:
            if not selector.select(max(deadline - time.monotonic(), 0.01)):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("id") in (1, 2):
                    replies[message["id"]] = message
    except OSError:
        pass
    finally:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.wait()
    listed = replies.get(2, {}).get("result")
    if not isinstance(listed, dict) or not isinstance(listed.get("data"), list):
        raise InstallError("%s app-server did not list the hooks (hooks/list), so their trust cannot be kept" % codex_bin)
    home = (replies.get(1, {}).get("result") or {}).get("codexHome")
    hooks = {}
    for entry in listed["data"]:
        for hook in entry.get("hooks") or ():
            if isinstance(hook, dict) and isinstance(hook.get("key"), str):
                hooks[hook["key"]] = hook
    return home, hooks


def _same_file(a, b):
    return isinstance(a, str) and isinstance(b, str) and os.path.realpath(a) == os.path.realpath(b)


def _toml_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def codex_set_trusted_hashes(config_text, hashes):
    """`config_text` with each `[hooks.state."<key>"] trusted_hash` set to hashes[key].
    -> (new text, keys whose table or trusted_hash line was not found). Only the value
    changes: every other byte stays."""
    import re

    lines = config_text.splitlines(keepends=True)
    missing = []
    for key, new_hash in hashes.items():
        header = re.compile(
            r"^[ \t]*\[[ \t]*hooks[ \t]*\.[ \t]*state[ \t]*\.[ \t]*(?:%s|%s)[ \t]*\][ \t]*(?:#.*)?$"
            % (re.escape(_toml_string(key)), re.escape("'" + key + "'"))
        )
        done = False
        for index, line in enumerate(lines):
            if not header.match(line.rstrip("\r\n")):
                continue
            for inner in range(index + 1, len(lines)):
                if re.match(r"^[ \t]*\[", lines[inner]):
                    break
                match = re.match(r"""^([ \t]*trusted_hash[ \t]*=[ \t]*)(?:"[^"\n]*"|'[^'\n]*')(.*)$""", lines[inner], re.S)
                if match:
                    lines[inner] = match.group(1) + _toml_string(new_hash) + match.group(2)
                    done = True
                    break
            break
        if not done:
            missing.append(key)
    return "".join(lines), missing


def _codex_config_path(home):
    home = home or os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return os.path.join(home, "config.toml")


def _codex_trust_recorded(path):
    """Without a Codex binary: does the user's config.toml record trust for a hook of `path`?"""
    try:
        with open(_codex_config_path(None), encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return False
    return any(_toml_string(p + ":")[:-1] in text or "'" + p + ":" in text for p in {os.path.abspath(path), os.path.realpath(path)})


class CodexTrust:
    """Keeps the trust the user gave a file's Codex hooks across a rewrite of that file."""

    def __init__(self, path, codex_bin=None, codex_trust="auto"):
        if codex_trust not in ("auto", "manual"):
            raise InstallError("--codex-trust must be auto or manual")
        self.path = path
        self.mode = codex_trust
        self.binary = codex_binary(codex_bin) if codex_trust == "auto" else None
        self.cwd = _codex_cwd(path)
        self.before = {}
        self.kept = []  # keys trusted again after the rewrite
        self.untrusted = []  # keys Codex will skip until the user reviews them
        self.manual = False  # trust was not checked: the user must review the hooks

    def _mine(self, hooks):
        return {k: h for k, h in hooks.items() if _same_file(h.get("sourcePath"), self.path)}

    def read_before(self):
        if self.mode == "manual":
            self.manual = True
            return
        if self.binary is None:
            if _codex_trust_recorded(self.path):
                raise InstallError(
                    "%s: Codex records trust for these hooks and skips a changed hook until it is trusted again, "
                    "but no Codex CLI was found to keep that trust: pass --codex-bin PATH (or put `codex` on PATH), "
                    "or --codex-trust manual and then review every hook of this file in codex (/hooks)" % self.path
                )
            self.manual = True
            return
        _home, hooks = codex_hook_states(self.binary, self.cwd)
        self.before = self._mine(hooks)

    def keep(self, original_text):
        """After the file was rewritten: trust again what was trusted before. On any
        failure the file goes back to `original_text` and InstallError says why."""
        if self.manual or self.binary is None:
            return
        config = None
        config_text = None
        try:
            home, hooks = codex_hook_states(self.binary, self.cwd)
            after = self._mine(hooks)
            hashes = {}
            for key, hook in after.items():
                was = self.before.get(key, {}).get("trustStatus")
                if hook.get("trustStatus") == CODEX_TRUSTED:
                    continue
                if was == CODEX_TRUSTED and isinstance(hook.get("currentHash"), str):
                    hashes[key] = hook["currentHash"]
                else:
                    self.untrusted.append(key)
            if hashes:
                config = _codex_config_path(home)
                with open(config, encoding="utf-8", newline="") as handle:
                    config_text = handle.read()
                text, missing = codex_set_trusted_hashes(config_text, hashes)
                if missing:
                    raise InstallError(
                        "%s: cannot find the trusted_hash of %s in %s (written in a form failsecure does not edit); "
                        "nothing was changed" % (self.path, ", ".join(missing), config)
                    )
                _write_atomic(config, text)
                _home, hooks = codex_hook_states(self.binary, self.cwd)
                now = self._mine(hooks)
                lost = [k for k in hashes if now.get(k, {}).get("trustStatus") != CODEX_TRUSTED]
                if lost:
                    raise InstallError("%s: Codex does not trust %s after the update; nothing was changed" % (self.path, ", ".join(lost)))
                self.kept = sorted(hashes)
        except BaseException:
            _write_atomic(self.path, original_text)
            if config_text is not None:
                _write_atomic(config, config_text)
            raise

    def lines(self):
        out = ["  kept trusted %s (Codex)" % key for key in self.kept]
        out += ["  NOT TRUSTED  %s: Codex skips this hook until you review it (codex, /hooks)" % key for key in self.untrusted]
        if self.manual:
            out.append("  Codex trust not checked: review this file's hooks in codex (/hooks), Codex skips a changed hook until then")
        return out
