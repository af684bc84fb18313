"""`hook install` / `hook uninstall`: rewrite a host's settings file so every gating
command hook runs under the runner, and restore it exactly.

Rare and interactive: imports whatever it likes. Named ``wrap_settings`` /
``unwrap_settings`` so they are never mistaken for ``failsecure.install()`` (the
in-process activation).
"""

import os
import sys

from failsecure.failures import CRASHED, MISSING, failure_reason
from failsecure.hookid import command_id, command_name
from failsecure.runner.decision import hook_id_for
from failsecure.runner.protocols import GATING_EVENTS, PROTOCOLS, gating_events

TYPE_CHECKING = False  # not typing's: the annotations below are for mypy only
if TYPE_CHECKING:
    from typing import Any

__all__ = (
    "HOSTS", "InstallError", "WrapReport", "UnwrapReport", "wrap_settings", "unwrap_settings", "launch_argv",
    "runner_path", "prelude", "host_shell", "trusted_options",
)

HEADROOM = 5.0  # seconds the host's own timeout exceeds the runner's
DEFAULT_RUNNER_TIMEOUT = 30.0
CLAUDE_ON_FAILURE_MIN = (2, 1, 332)  # first CLI measured to honour "onFailure": "block"
# Oldest CLI measured (end to end, tests/command_hooks/claude_code/test_project_launch.py
# and test_exec_form_install.py, on 2.1.257 from claude-agent-sdk 0.2.150 and on 2.1.332)
# to spawn an exec-form hook (`"args": [...]`) directly, not through the
# CLAUDE_CODE_SHELL_PREFIX a project's settings `env` can set. `hook install` writes a
# Claude Code shell-form hook as `{"command": "/bin/sh", "args": ["-c", <prelude>]}`
# for such a CLI: the same prelude, run by /bin/sh itself.
CLAUDE_EXEC_FORM_MIN = (2, 1, 257)
EXEC_SHELL = "/bin/sh"
_ABSENT = {"__failsecure_absent__": True}
_RECORD_FLAG = "--record"


class InstallError(Exception):
    """A settings file or host that `hook install` refuses to touch."""


class _Host:
    def __init__(self, name, protocol, events, timeout_key, timeout_unit, flat, shell="sh", failure_policy=None,
                 default_timeout=None):
        self.name = name
        self.protocol = protocol
        self.events = events  # lower-cased gating event keys under "hooks" (runner_protocols.GATING_EVENTS)
        self.timeout_key = timeout_key  # key the host reads its own timeout from
        self.timeout_unit = timeout_unit  # 1 (seconds) or 1000 (milliseconds)
        self.flat = flat  # entries are handlers themselves ({command, ...})
        # the shell the host runs a hook's command with: "sh" (/bin/sh), "bash" (bash
        # from PATH), "user" ($SHELL, bash/zsh/sh): resolved to an absolute path when
        # `hook install` runs, never left to the hook's environment
        self.shell = shell
        # the host's own per-hook failure policy field: (key, {value: "allow"|"deny"})
        self.failure_policy = failure_policy
        self.default_timeout = default_timeout  # seconds the host allows a hook that sets none


HOSTS = {
    "claude": _Host("claude", "claude", gating_events("claude"), "timeout", 1, False, shell="user", default_timeout=600),
    "gemini": _Host("gemini", "gemini", gating_events("gemini"), "timeout", 1000, False, shell="bash", default_timeout=60),
    "codex": _Host("codex", "codex", gating_events("codex"), "timeout", 1, False, shell="user", default_timeout=600),
    "kiro": _Host(
        "kiro", "kiro", gating_events("kiro"), None, 1, True,
        failure_policy=("on_error", {"fail_open": "allow", "fail_closed": "deny"}),
    ),
    "pool": _Host(
        "pool", "claude", gating_events("pool"), "timeout_ms", 1000, True,
        failure_policy=("failure_policy", {"allow": "allow", "deny": "deny"}),
    ),
}
assert set(HOSTS) == set(GATING_EVENTS)

# Where each host keeps its USER-level settings (relative to the real home): a host's
# own per-hook failure policy is honoured only from these (a project file never opens a gate).
USER_SETTINGS = {
    "claude": (".claude/settings.json",),
    "gemini": (".gemini/settings.json",),
    "codex": (".codex/hooks.json",),
    "kiro": (".kiro",),
    "pool": (".pool", ".config/pool"),
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
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "command.py")


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
    return [python, "-I", "-S", "-c", _BOOT, os.path.dirname(os.path.dirname(runner))]


def _precompile(runner):
    """Best effort: cache the runner's bytecode now (the launch imports it)."""
    try:
        import importlib.util
        import py_compile

        package = os.path.dirname(runner)
        names = ["__init__.py", "command.py", "_fastjson.py", "policy.py", "failures.py", "hookid.py", "verdict.py", "reduce.py", "audit.py"]
        names += [os.path.join("runner", "%s.py" % name) for name in ("__init__", "protocols", "process", "decision", "cli", "config")]
        for name in names:
            source = os.path.join(package, name)
            if os.path.exists(source) and not os.path.exists(importlib.util.cache_from_source(source)):
                py_compile.compile(source, doraise=False, quiet=2)
    except Exception:  # noqa: BLE001 - a byte-compile that fails only costs the first run's start-up time
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
    return command_id(command_name(command))


def _shell_deny_lines(proto, reason):
    import shlex

    out, err, _code = proto.deny(reason, "PreToolUse")
    parts = []
    if out:
        parts.append("printf '%%s\\n' %s" % shlex.quote(out.decode().rstrip("\n")))
    parts.append("printf '%%s\\n' %s >&2" % shlex.quote(err.decode().rstrip("\n")))
    return "; ".join(parts)


def _prelude_head(python, runner, quote=None):
    """The exact start of every shell-form command `hook install` writes, up to and
    including `run --protocol`: how an installed hook is recognised."""
    import shlex

    quote = quote or shlex.quote
    launch = ['"$R"'] + ['"$F"' if arg == runner else quote(arg) for arg in launch_argv(python, runner)[1:]]
    return (
        "R=%s; F=%s; " % (quote(python), quote(runner))
        + 'if [ -x "$R" ] && [ -f "$F" ]; then '
        # stderr is held back so that a crashing runner's traceback never reaches the host
        + "{ e=$("
        + " ".join(launch)
        + " run --protocol"
    )


_LEGACY_SHELL = '"${BASH:-/bin/sh}"'  # what the previous `hook install` wrote (the environment chose)
_OPTION_NAMES = ("--config", "--config-home", "--cache-home", "--on-error")


def _exec_quote(text):
    """shlex.quote, with no `${` left in the result: Claude Code substitutes
    `${CLAUDE_PROJECT_DIR}` (and plugin roots) textually into each element of an
    exec-form hook's args, which would put an unquoted path into the prelude. Inside a
    single-quoted word `$''{` is the same two characters to sh, and no placeholder."""
    import shlex

    return shlex.quote(text).replace("${", "$''{")


# What Gemini CLI 0.61.0 (HookRunner.expandCommand) replaces TEXTUALLY in a hook's
# command before the shell runs it, each by a shell-quoted word: in the prelude that word
# would land inside the single-quoted original and close its quote (a project folder
# with a space broke the launch; one named `a); exit 0; (b` swallowed the runner's deny).
# The prelude writes each `$` before them as `$''` (the same character to sh, inside a
# quoted word) and the runner expands them in the original as Gemini would
# (protocols.GeminiProtocol.hook_argv).
GEMINI_EXPANDED = ("GEMINI_PROJECT_DIR", "GEMINI_CWD", "GEMINI_PLANS_DIR", "GEMINI_SESSION_ID", "CLAUDE_PROJECT_DIR")


def _gemini_protect(line):
    """`line` with every `$NAME` Gemini expands (GEMINI_EXPANDED) written `$''NAME`:
    valid where every such `$` is inside a single-quoted word (all text the prelude
    takes from the user is, through shlex.quote)."""
    import re

    return re.sub(r"\$(?=%s)" % "|".join(GEMINI_EXPANDED), "$''", line)


def _gemini_unprotected(line):
    """True when Gemini CLI would expand something in this launch line."""
    return isinstance(line, str) and any("$" + name in line for name in GEMINI_EXPANDED)


def prelude(python, runner, protocol, hook_id, timeout, record, command, *, shell="/bin/sh", options=(), _legacy=False,
            exec_form=False, _unprotected=False):
    """The sh command that runs `command` under the runner and denies if the runner is
    missing or crashes. Every path in it is absolute and chosen now: `shell` runs the
    original command, `options` (pairs for --config, --config-home, --cache-home,
    --on-error) are the runner's trusted inputs; nothing comes from the hook's environment.
    `exec_form`: the text goes into an exec-form hook's args (Claude Code), so no quoted
    word carries a `${` placeholder the host would substitute (``_exec_quote``).
    Gemini: no `$NAME` Gemini CLI expands textually (GEMINI_EXPANDED) is left in it
    (`_unprotected`: as written before that, to recognise such an install)."""
    import shlex

    if protocol == "gemini" and not _unprotected:
        return _gemini_protect(
            prelude(python, runner, protocol, hook_id, timeout, record, command, shell=shell, options=options,
                    _legacy=_legacy, exec_form=exec_form, _unprotected=True)
        )
    quote = _exec_quote if exec_form else shlex.quote
    proto = PROTOCOLS[protocol]
    hid = hook_id_for(hook_id, [])
    extra = "".join(" %s %s" % (name, quote(value)) for name, value in options)
    call = "%s %s --timeout %s --hook-id %s%s %s %s -- %s -c %s" % (
        _prelude_head(python, runner, quote),
        protocol,
        _format_number(timeout),
        quote(hid[len("command:") :]),
        extra,
        _RECORD_FLAG,
        record,
        _LEGACY_SHELL if _legacy else quote(shell),
        quote(command),
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


_SHELL_NAMES = ("sh", "bash", "dash", "ash", "ksh", "mksh", "zsh")


def host_shell(spec, handler=None, environ=None):
    """The absolute shell the host would run this hook's command with, chosen now
    (install time, the user's own environment): the runner runs the original command
    with it, so no variable of the hook's environment picks the program."""
    import shutil

    environ = os.environ if environ is None else environ
    kind = spec.shell
    if handler is not None and handler.get("shell") == "bash" and kind == "sh":
        kind = "bash"
    if kind == "user":
        user = environ.get("SHELL") or ""
        if os.path.isabs(user) and os.path.basename(user) in _SHELL_NAMES and os.access(user, os.X_OK):
            return user
        kind = "sh"
    if kind == "bash":
        found = shutil.which("bash", path=environ.get("PATH") or os.defpath)
        if found and os.path.isabs(found):
            return found
    return "/bin/sh"


def trusted_path(environ=None):
    """The installing user's PATH, its absolute entries only (the record carries it): at
    run time they come first on the hook's PATH, before anything the hook's environment
    adds (a host builds it from the project's settings: a cloned repository's `env` could
    put its own `sh` or `python3` first and run it as the user's guard)."""
    environ = os.environ if environ is None else environ
    found = []
    for part in (environ.get("PATH") or "").split(":"):
        if os.path.isabs(part) and part not in found:
            found.append(part)
    return found


def trusted_steering(environ=None):
    """The installing user's values of the variables that steer an interpreter before a
    guard's code runs (process.STEERING; the record carries them): at run time the hook
    gets these, not what a project's settings `env` set."""
    from failsecure.runner.process import STEERING

    environ = os.environ if environ is None else environ
    found = {}
    for name in sorted(STEERING):
        value = environ.get(name)
        if not isinstance(value, str):
            continue
        if name in _PATH_LISTS:
            # a relative entry ("", ".", "src") is the project's directory at run time
            value = ":".join(part for part in value.split(":") if os.path.isabs(part))
            if not value:
                continue
        found[name] = value
    return found


#: the STEERING variables that are lists of directories
_PATH_LISTS = frozenset({"PYTHONPATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "DYLD_FRAMEWORK_PATH", "NODE_PATH",
                         "PERL5LIB", "PERLLIB", "RUBYLIB", "CLASSPATH"})


def trusted_options(environ=None):
    """The runner's trusted inputs as launch-line options: what $FAILSECURE_CONFIG,
    $XDG_CONFIG_HOME and $XDG_CACHE_HOME are now (the user running `hook install`), as
    absolute paths; at run time the runner reads none of them from its environment."""
    environ = os.environ if environ is None else environ
    options = []
    for name, variable in (("--config", "FAILSECURE_CONFIG"), ("--config-home", "XDG_CONFIG_HOME"), ("--cache-home", "XDG_CACHE_HOME")):
        value = environ.get(variable)
        if value and os.path.isabs(value):
            options.append((name, os.path.abspath(value)))
    return options


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


# what shlex.quote writes (and _exec_quote: a `$''{` join)
_QUOTED = r"(?:'[^']*'(?:(?:\"'\")?'[^']*')*|[^\s;'\"$`\\]+)"


class _Launch:
    """failsecure's own launch line in a handler, parsed."""

    __slots__ = ("token", "legacy", "exec_form", "exec_shell", "python", "runner", "protocol", "timeout", "hook_id", "options",
                 "shell", "original")
    token: "Any"
    exec_shell: "Any"  # the prelude as an exec-form hook: {"command": exec_shell, "args": ["-c", prelude]}
    legacy: "Any"
    exec_form: "Any"
    python: "Any"
    runner: "Any"
    protocol: "Any"
    timeout: "Any"
    hook_id: "Any"
    options: "Any"
    shell: "Any"
    original: "Any"

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))

    def regenerate(self, original=None):
        """-> what `hook install` writes for these fields (with `original` as the
        wrapped command): {key: value} of the handler's command (and args)."""
        original = self.original if original is None else original
        if self.exec_form:
            opts = [word for pair in self.options for word in pair]
            args = launch_argv(self.python, self.runner)[1:] + [
                "run", "--protocol", self.protocol, "--timeout", self.timeout, "--hook-id", self.hook_id,
            ] + opts + [_RECORD_FLAG, self.token, "--"] + list(original)
            return {"command": self.python, "args": args}
        line = prelude(
            self.python, self.runner, self.protocol, self.hook_id, float(self.timeout), self.token, original,
            shell=self.shell or "/bin/sh", options=self.options, _legacy=self.legacy, exec_form=bool(self.exec_shell),
        )
        if self.exec_shell:
            return {"command": self.exec_shell, "args": ["-c", line]}
        return {"command": line}


def _parse_options(words):
    """[--name value ...] -> list of (name, value) pairs, or None if anything else."""
    if len(words) % 2:
        return None
    pairs = []
    for i in range(0, len(words), 2):
        if words[i] not in _OPTION_NAMES:
            return None
        pairs.append((words[i], words[i + 1]))
    return pairs


def _launch_of(handler):
    """-> _Launch when `handler` is failsecure's own launch line (what `hook install`
    writes, this release's or the previous one's, recognised by its exact prefix), else
    None. A hook whose own arguments merely contain `--record` or `run --protocol` is
    not wrapped."""
    command = handler.get("command")
    if not isinstance(command, str):
        return None
    args = handler.get("args")
    if (
        isinstance(args, list) and len(args) == 2 and args[0] == "-c" and isinstance(args[1], str)
        and os.path.isabs(command) and os.path.basename(command) in _SHELL_NAMES
    ):
        # the prelude in exec form (Claude Code): the shell spawned directly, no prefix
        launch = _launch_of_line(args[1], exec_form=True)
        if launch is not None and not launch.legacy:
            launch.exec_shell = command
            return launch
        return None
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
        if rest[0] != "run" or rest[1] != "--protocol" or rest[2] not in PROTOCOLS or rest[3] != "--timeout" or rest[5] != "--hook-id":
            return None
        try:
            record_at = rest.index(_RECORD_FLAG, 7)
        except ValueError:
            return None
        options = _parse_options(rest[7:record_at])
        if options is None or len(rest) < record_at + 3 or rest[record_at + 2] != "--":
            return None
        return _Launch(
            token=rest[record_at + 1], legacy=False, exec_form=True, python=command, runner=runner, protocol=rest[2],
            timeout=rest[4], hook_id=rest[6], options=options, shell=None, original=rest[record_at + 3 :],
        )
    return _launch_of_line(command)


def _launch_of_line(command, exec_form=False):
    """The shell-form launch line (the prelude) `command` -> _Launch, or None."""
    import re
    import shlex

    match = re.match(r"R=(%s); F=(%s); " % (_QUOTED, _QUOTED), command)
    if match is None:
        return None
    try:
        python, runner = shlex.split(match.group(1))[0], shlex.split(match.group(2))[0]
    except (ValueError, IndexError):
        return None
    head = _prelude_head(python, runner, _exec_quote if exec_form else None)
    if not command.startswith(head):
        head = _gemini_protect(head)  # a Gemini launch line (paths naming $GEMINI_...)
        if not command.startswith(head):
            return None
    tail = re.match(
        r" (%s) --timeout ([0-9.e+-]+) --hook-id (%s)((?: --[a-z-]+ %s)*) %s ([A-Za-z0-9_-]+) -- "
        r"(\"\$\{BASH:-/bin/sh\}\"|%s) -c (%s) 2>&1 "
        % ("|".join(PROTOCOLS), _QUOTED, _QUOTED, _RECORD_FLAG, _QUOTED, _QUOTED),
        command[len(head) :],
    )
    if tail is None:
        return None
    try:
        hook_id = shlex.split(tail.group(3))[0]
        options = _parse_options(shlex.split(tail.group(4)))
        legacy = tail.group(6) == _LEGACY_SHELL
        shell = None if legacy else shlex.split(tail.group(6))[0]
        original = shlex.split(tail.group(7))[0]
    except (ValueError, IndexError):
        return None
    if options is None:
        return None
    return _Launch(
        token=tail.group(5), legacy=legacy, exec_form=False, python=python, runner=runner, protocol=tail.group(1),
        timeout=tail.group(2), hook_id=hook_id, options=options, shell=shell, original=original,
    )


def _is_wrapped(handler):
    return _launch_of(handler) is not None


def _record_of(handler):
    import json

    launch = _launch_of(handler)
    token = launch.token if launch is not None else ""
    try:
        record = json.loads(_b64decode(token).decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise InstallError("a wrapped hook carries a damaged --record; restore it by hand") from None
    if not isinstance(record, dict) or not isinstance(record.get("keys"), dict):
        raise InstallError("a wrapped hook carries a damaged --record; restore it by hand")
    return record


def _as_installed(handler, launch, record):
    """-> {key: True} for each key install changed that is still exactly as install
    left it (False: the user edited it since, or deleted it)."""
    keys = record["keys"]
    exact = {}
    original = keys.get("command")
    if launch.exec_form:
        original = [original] + list(keys.get("args") or []) if isinstance(original, str) else None
    wrote = dict(record.get("wrote") or {})
    try:
        wrote.update(launch.regenerate(original) if original is not None else {})
    except Exception:  # noqa: BLE001 - a launch line that cannot be regenerated: the recorded keys are restored as written
        pass
    if launch.protocol == "gemini" and _gemini_unprotected(handler.get("command")) and not launch.exec_form:
        try:  # written before the prelude protected what Gemini expands: as that install wrote it
            wrote["command"] = prelude(
                launch.python, launch.runner, launch.protocol, launch.hook_id, float(launch.timeout), launch.token,
                original, shell=launch.shell or "/bin/sh", options=launch.options, _legacy=launch.legacy, _unprotected=True,
            )
        except Exception:  # noqa: BLE001 - as above
            pass
    for key in keys:
        if key in ("command", "args"):
            same = original is not None and all(handler.get(k, _ABSENT) == wrote.get(k) for k in ("command", "args") if k in wrote)
        elif key in wrote:
            same = handler.get(key, _ABSENT) == wrote[key]
        elif key == "onFailure":  # a record of the previous release: install wrote "block"
            same = handler.get(key) == "block"
        else:  # a timeout in a record of the previous release: either unit
            value = handler.get(key, _ABSENT)
            seconds = float(launch.timeout)
            same = value in (_host_number(seconds + HEADROOM, 1), _host_number(seconds + HEADROOM, 1000))
        exact[key] = same
    return exact


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


_FAIL_CLOSED_TYPES = {"claude": ("http", "mcp_tool")}  # non-command handlers that honour onFailure


_ALREADY = "already runs under failsecure"


def _left_alone_why(event, handler, spec):
    """-> why `hook install` leaves this handler as it is, or None to wrap it."""
    if event.lower() not in spec.events:
        return "%s does not gate a tool call" % event
    if handler.get("type", "command") != "command":
        return "type %r is not a command hook" % (handler.get("type"),)
    if not isinstance(handler.get("command"), str):
        return "no command"
    if handler.get("async") is True or handler.get("asyncRewake") is True:
        return "NOT GATING: runs in the background (async), the host never waits for its answer"
    launch = _launch_of(handler)
    if launch is not None and not launch.legacy:
        return _ALREADY
    if handler.get("shell") == "powershell":
        return "a PowerShell hook (the fail-closed prelude is POSIX sh): wrap it by hand"
    return None


def _handler_id(handler):
    launch = _launch_of(handler)
    if launch is not None:
        return "command:" + launch.hook_id
    command = handler.get("command")
    if not isinstance(command, str):
        return "-"
    if isinstance(handler.get("args"), list):
        return "command:" + _derive_hook_id([command] + [str(a) for a in handler["args"]])
    return "command:" + _derive_hook_id(command)


def _is_user_level(path, host, home=None):
    """True when `path` is one of the host's user-level settings files (under the real
    home, not a project's): the only place a host's own failure policy is honoured from."""
    from failsecure.runner.config import real_home

    home = home or real_home()
    if not home:
        return False
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return False
    for where in USER_SETTINGS.get(host, ()):
        base = os.path.realpath(os.path.join(home, where))
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return True
    return False


def _declared_on_error(handler, spec, trusted_file):
    """The host's own failure policy field of this hook, as the runner's --on-error:
    only from a trusted (user-level) settings file."""
    if spec.failure_policy is None or not trusted_file:
        return None
    key, values = spec.failure_policy
    value = handler.get(key)
    return values.get(value) if isinstance(value, str) else None


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
    """Replace the file's content atomically. A symlinked settings file stays a symlink:
    the write goes to its target (in the target's directory)."""
    import tempfile

    path = os.path.realpath(path)
    directory = os.path.dirname(path)
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


def _in_shell_form(handler):
    """True when `handler` is this release's own prelude written as a shell-form command."""
    launch = _launch_of(handler)
    return launch is not None and not launch.legacy and not launch.exec_form and not launch.exec_shell


def _upgrade_legacy(handler, edited="under the previous launch line and edited since: uninstall or fix it by hand"):
    """A handler under the previous release's launch line (the environment chose its
    shell and its config), or under this release's in shell form where exec form can
    now be written: back to its original, when it is exactly as that install left it,
    so it is wrapped anew. -> None, or why it stays as it is."""
    launch = _launch_of(handler)
    record = _record_of(handler)
    exact = _as_installed(handler, launch, record)
    if not all(exact.values()):
        return edited
    _restore_keys(handler, record["keys"])
    return None


def _restore_keys(handler, keys):
    for key, value in keys.items():
        if value == _ABSENT:
            handler.pop(key, None)
        else:
            handler[key] = value


def wrap_settings(path, host, *, python=None, runner=None, timeout=None, on_failure="auto", claude_bin=None, environ=None,
                  codex_bin=None, codex_trust="auto"):
    """Wrap every gating command hook in `path` under the runner. -> WrapReport.

    Idempotent (hooks already under failsecure's own launch line are left alone; ones
    under the previous release's line are upgraded); everything else in the file is
    preserved; the file is replaced atomically (through a symlink, to its target).
    `environ`: the installing user's environment (default: this process's), read for
    the host's shell and the runner's trusted config options. Codex: the hooks the
    user trusted stay trusted (CodexTrust), or nothing is changed.
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
    exec_shell = False  # write a shell-form hook in exec form (the prelude run by /bin/sh, no prefix)
    if host == "claude":
        version = claude_cli_version(claude_bin)
        if on_failure == "block":
            block = True
        elif on_failure == "auto":
            block = version is not None and version >= CLAUDE_ON_FAILURE_MIN
        exec_shell = version is not None and version >= CLAUDE_EXEC_FORM_MIN
    trusted_file = _is_user_level(path, host)
    base_options = trusted_options(environ)
    base_path = trusted_path(environ)
    base_steering = trusted_steering(environ)
    report = WrapReport(path)
    changed = False
    for where, event, handler in list(_all_handlers(document)):
        why = _left_alone_why(event, handler, spec)
        if why is None and _launch_of(handler) is not None:  # the previous launch line
            why = _upgrade_legacy(handler)
        elif why == _ALREADY and host == "gemini" and _gemini_unprotected(handler.get("command")):
            # this release's prelude written before it protected what Gemini expands
            # textually ($GEMINI_PROJECT_DIR, ...): a project folder's name could end it
            try:
                why = _upgrade_legacy(handler, "written before Gemini's $GEMINI_PROJECT_DIR was protected and edited since: "
                                               "uninstall and install again, or fix it by hand")
            except InstallError:
                why = _ALREADY + " (its --record is damaged, so it is not rewritten)"
        elif why == _ALREADY and exec_shell and _in_shell_form(handler):
            # this release's prelude in shell form (an earlier install, or a CLI without
            # exec form then): Claude Code launches it through CLAUDE_CODE_SHELL_PREFIX
            try:
                why = _upgrade_legacy(handler, "in shell form and edited since install: uninstall and install again, or fix it by hand")
            except InstallError:  # a damaged --record: left as it is, as before exec form
                why = _ALREADY + " (in shell form; its --record is damaged, so it is not rewritten in exec form)"
        if why is not None:
            kind = handler.get("type")
            if (
                block
                and event.lower() in spec.events
                and kind in _FAIL_CLOSED_TYPES.get(host, ())
                and handler.get("onFailure") != "block"
                and not handler.get("async")
            ):
                # not a command the runner can run: the host's own fail-closed switch
                handler["onFailure"] = "block"
                changed = True
                report.left.append(WrapEntry(_handler_id(handler), where, "type %r: set the host's onFailure: block" % (kind,)))
                continue
            report.left.append(WrapEntry(_handler_id(handler), where, why))
            continue
        command = handler["command"]
        exec_form = isinstance(handler.get("args"), list)
        to_exec_shell = exec_shell and not exec_form
        touched = ["command"]
        if exec_form or to_exec_shell:
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
        original_timeout = handler.get(timeout_key) if timeout_key else None
        if isinstance(original_timeout, float) and original_timeout == float("inf"):
            # valid JSON (1e999; JSON.parse reads Infinity), but no deadline can be written for it
            raise InstallError("%s: the %r of %s is not a finite number; set a number of %s"
                               % (path, timeout_key, where, "milliseconds" if unit == 1000 else "seconds"))
        if isinstance(original_timeout, (int, float)) and not isinstance(original_timeout, bool) and original_timeout > 0:
            runner_timeout = float(original_timeout) / unit
        else:
            runner_timeout = float(timeout or DEFAULT_RUNNER_TIMEOUT)
        wrote = {}
        if timeout_key:
            wrote[timeout_key] = _host_number(runner_timeout + HEADROOM, unit)
        if "onFailure" in touched:
            wrote["onFailure"] = "block"
        if host == "gemini":
            previous_env = handler.get("env")
            wrote["env"] = gemini_pinned_env(previous_env if isinstance(previous_env, dict) else None, environ)
        record = {"keys": {key: handler.get(key, _ABSENT) for key in touched}, "wrote": wrote}
        if base_path:
            record["path"] = base_path  # the user's PATH first on the hook's (process.hook_environment)
        record["env"] = base_steering  # the user's interpreter-steering variables (process.STEERING)
        if timeout_key:
            # where the runner reads the host's own timeout at run time (host_capped)
            record["host"] = {"settings": os.path.abspath(path), "key": timeout_key, "unit": unit,
                              "default": spec.default_timeout}
        token = _b64encode(json.dumps(record, separators=(",", ":")).encode("utf-8"))
        hook_id = _derive_hook_id(command if not exec_form else [command] + [str(a) for a in handler["args"]])
        options = list(base_options)
        declared = _declared_on_error(handler, spec, trusted_file)
        if declared:
            options.append(("--on-error", declared))
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
            ] + [word for pair in options for word in pair] + [
                _RECORD_FLAG,
                token,
                "--",
                command,
            ] + [str(arg) for arg in record["keys"]["args"]]
        else:
            line = prelude(
                python, runner, spec.protocol, hook_id, runner_timeout, token, command,
                shell=host_shell(spec, handler, environ), options=options, exec_form=to_exec_shell,
            )
            if to_exec_shell:
                handler["command"] = EXEC_SHELL
                handler["args"] = ["-c", line]
            else:
                handler["command"] = line
        handler.update(wrote)
        changed = True
        note = "wrapped" if not declared else "wrapped (its own failure policy: %s on failure)" % declared
        report.wrapped.append(WrapEntry("command:" + hook_id, where, note))
    if changed:
        trust = CodexTrust(path, codex_bin, codex_trust) if host == "codex" and report.wrapped else None
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
    launch = _launch_of(handler)
    return launch.protocol if launch is not None else None


class UnwrapReport(int):
    """`hook uninstall`'s result: the number of hooks restored (an int, as before),
    and `kept`: (where, hook id, keys) left as they are because the user changed them
    after install."""

    kept: list

    def lines(self):
        return ["  kept         %s  %s: edited since install (%s), left as it is" % (where, hook, ", ".join(keys)) for where, hook, keys in self.kept]


def unwrap_settings(path, *, codex_bin=None, codex_trust="auto", notes=None):
    """Restore every hook `wrap_settings` wrapped in `path`. -> UnwrapReport (the
    number restored). Only what is still exactly as install left it is restored: a key
    the user edited (or deleted) after install keeps the user's version, and a command
    the user edited stays as it is (still under the runner), reported in `kept`. Codex
    hooks the user trusted stay trusted (their lines go to `notes`)."""
    text, document = _read_document(path)
    restored = 0
    kept = []
    changed = False
    codex = False
    for where, _event, handler in list(_all_handlers(document)):
        launch = _launch_of(handler)
        if launch is None:
            continue
        codex = codex or _launch_protocol(handler) == "codex"
        record = _record_of(handler)
        exact = _as_installed(handler, launch, record)
        edited = [key for key, same in exact.items() if not same]
        command_edited = any(key in ("command", "args") and not exact[key] for key in exact)
        if command_edited:
            kept.append((where, _handler_id(handler), edited))
            continue
        _restore_keys(handler, {key: value for key, value in record["keys"].items() if exact[key]})
        changed = True
        restored += 1
        if edited:
            kept.append((where, _handler_id(handler), edited))
    if changed:
        trust = CodexTrust(path, codex_bin, codex_trust) if codex else None
        if trust is not None:
            trust.read_before()
        _write_atomic(path, _render(document, text))
        if trust is not None:
            trust.keep(text)
            if notes is not None:
                notes.extend(trust.lines())
    report = UnwrapReport(restored)
    report.kept = kept
    return report


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
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())  # type: ignore[union-attr]  # stdin=PIPE
        proc.stdin.flush()  # type: ignore[union-attr]
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]  # stdout=PIPE
        deadline = time.monotonic() + _APP_SERVER_TIMEOUT
        buffer = b""
        while 2 not in replies and time.monotonic() < deadline:
            if not selector.select(max(deadline - time.monotonic(), 0.01)):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)  # type: ignore[union-attr]
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
