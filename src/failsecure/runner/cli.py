"""The runner's command line.

``hook run`` is parsed by hand (``parse_run_args``: argparse costs ~10 ms of imports on
the hot path); ``add_hook_commands`` is the one argparse function for
``hook run|install|uninstall`` (its ``run`` hands every word to ``parse_run_args``).
"""

import os
import sys

from failsecure.runner.protocols import PROTOCOLS, universal_deny

_USAGE = (
    "usage: failsecure hook run --protocol {claude,gemini,codex,kiro} "
    "[--timeout S] [--hook-id ID] [--config FILE] [--config-home DIR] [--cache-home DIR] "
    "[--on-error allow|deny] -- CMD [ARGS...]"
)
# Options only the launch line sets: the trusted inputs `hook install` chose (absolute paths).
_PATH_OPTIONS = ("--config", "--config-home", "--cache-home")
_OPTIONS = ("--protocol", "--timeout", "--hook-id", "--record", "--on-error") + _PATH_OPTIONS


class RunArgs:
    """`hook run`'s command line, parsed."""

    __slots__ = ("protocol", "timeout", "hook_id", "argv", "config", "config_home", "cache_home", "on_error", "record")

    def __init__(self):
        self.protocol = self.timeout = self.hook_id = None
        self.config = self.config_home = self.cache_home = self.on_error = self.record = None
        self.argv = []

    def __iter__(self):  # (protocol, timeout, hook_id, argv), as before
        return iter((self.protocol, self.timeout, self.hook_id, self.argv))


def parse_run_args(args):
    """-> RunArgs (unpacks as (protocol, timeout, hook_id, argv)); raises ValueError on a usage error."""
    parsed = RunArgs()
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
        if name not in _OPTIONS:
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
        elif name in _PATH_OPTIONS:
            if not value.startswith("/"):
                raise ValueError("%s must be an absolute path" % name)
            setattr(parsed, name[2:].replace("-", "_"), value)
        elif name == "--on-error":
            if value not in ("allow", "deny"):
                raise ValueError("--on-error must be allow or deny")
            parsed.on_error = value
        else:  # --record carries the original settings for `hook uninstall`
            parsed.record = value
        index += 1
    if protocol not in PROTOCOLS:
        raise ValueError("--protocol must be one of " + ", ".join(sorted(PROTOCOLS)))
    parsed.protocol, parsed.timeout, parsed.hook_id, parsed.argv = protocol, timeout, hook_id, argv
    return parsed


_SHELLS = ("sh", "bash", "dash", "ash", "ksh", "mksh", "zsh", "yash", "posh")


def _system_shell(path):
    """True when `path` is a shell installed by the system: a known shell's name after
    symlinks, owned by root and writable by nobody else (a project cannot plant one)."""
    try:
        real = os.path.realpath(path)
        if os.path.basename(real) not in _SHELLS:
            return False
        st = os.stat(real)
    except (OSError, ValueError):
        return False
    return st.st_uid == 0 and not st.st_mode & 0o022


def legacy_argv(parsed, environ=os.environ):
    """The previous `hook install` wrote ``-- "${BASH:-/bin/sh}" -c '<original>'``: the
    program running the hook came from the hook's environment, which hosts build from
    the project's settings. For such a line (a --record, and argv[0] is what $BASH
    holds), anything but a system shell is replaced by /bin/sh, the line's own default."""
    argv = parsed.argv
    if parsed.record is None or len(argv) != 3 or argv[1] != "-c":
        return argv
    bash = environ.get("BASH")
    if bash is None or argv[0] != bash or _system_shell(bash):
        return argv
    return ["/bin/sh"] + argv[1:]


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
    proto = PROTOCOLS.get(protocol) if protocol is not None else None
    out, err, code = proto.deny(reason, None) if proto is not None else universal_deny(reason)
    from failsecure.runner.process import emit

    emit(1, 2, out, err)
    return code


def _run_from_args(args):
    try:
        parsed = parse_run_args(args)
    except _Help:
        os.write(1, (_USAGE + "\n").encode())
        return 0
    except ValueError as exc:
        return _usage_deny(args, exc)
    if not parsed.argv:
        return _usage_deny(args, "no command")
    from failsecure.runner import decision as decision
    from failsecure.runner.config import Trusted

    decision.last_words = True  # a process of its own: terminating it must deny
    trusted = Trusted(parsed.config, parsed.config_home, parsed.cache_home)
    return decision.run(
        parsed.protocol, legacy_argv(parsed), parsed.timeout, parsed.hook_id, trusted=trusted, on_error=parsed.on_error,
        record=parsed.record,
    )


def _cmd_run(args):
    return _run_from_args(list(args.args))


def _cmd_install(args):
    from failsecure.runner import settings as settings

    try:
        report = settings.wrap_settings(
            args.file,
            args.host,
            python=args.python,
            runner=args.runner,
            timeout=args.timeout,
            on_failure=args.on_failure,
            claude_bin=args.claude_bin,
            codex_bin=args.codex_bin,
            codex_trust=args.codex_trust,
        )
    except settings.InstallError as exc:
        sys.stderr.write("failsecure: error: %s\n" % exc)
        return 1
    if report.wrapped:
        print("failsecure: %s: wrapped %d hook(s), left %d alone" % (args.file, len(report.wrapped), len(report.left)))
    else:
        print("failsecure: %s: nothing to wrap (no unwrapped %s gating command hooks), left %d alone" % (args.file, args.host, len(report.left)))
    for line in report.lines():
        print(line)
    return 0


def _cmd_uninstall(args):
    from failsecure.runner import settings as settings

    notes: list[str] = []
    try:
        restored = settings.unwrap_settings(args.file, codex_bin=args.codex_bin, codex_trust=args.codex_trust, notes=notes)
    except settings.InstallError as exc:
        sys.stderr.write("failsecure: error: %s\n" % exc)
        return 1
    print("failsecure: %s: restored %d hook(s)" % (args.file, restored))
    for line in list(getattr(restored, "lines", lambda: [])()) + notes:
        print(line)
    return 0


def _add_codex_options(parser):
    parser.add_argument("--codex-bin", default=None, help="Codex CLI used to keep hook trust (default: $FAILSECURE_CODEX_BIN, codex on PATH)")
    parser.add_argument(
        "--codex-trust", default="auto", choices=("auto", "manual"),
        help="Codex: keep the hooks the user trusted trusted (auto), or leave the review to the user (manual)",
    )


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

    from failsecure.runner.settings import HOSTS

    hook = subparsers.add_parser("hook", help="run or install fail-closed command hooks")
    commands = hook.add_subparsers(dest="hook_command", metavar="{run,install,uninstall}")
    commands.required = True

    # `hook run` has one parser, parse_run_args (the hot path cannot afford argparse):
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
    _add_codex_options(install_parser)
    install_parser.add_argument("file")
    install_parser.set_defaults(func=_cmd_install)

    uninstall_parser = commands.add_parser("uninstall", help="restore the hooks `hook install` wrapped")
    _add_codex_options(uninstall_parser)
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
    from failsecure.runner.process import ensure_std_fds

    ensure_std_fds()
    args = sys.argv[1:] if args is None else list(args)
    if sys.stderr is None and args[:1] != ["run"]:
        sys.stderr = sys.__stderr__  # the launch line silences tracebacks of `run` only
    try:
        code = main(args)
    except BaseException:
        if args[:1] != ["run"]:
            raise
        code = _usage_deny(args[1:], "internal error")  # never a silent exit on the hot path
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed stdout at exit: the answer is in the exit code
        pass
    os._exit(code)


