"""Policy: the configuration model, its loader and the trust model.

Trusted sources, full effect, layered (a later one overrides an earlier one key by
key): ``/etc/failsecure/config.toml``, the user's ``$XDG_CONFIG_HOME/failsecure/config.toml``
(``~/.config/...``), ``$FAILSECURE_CONFIG``. Project sources (``failsecure.toml`` or
``[tool.failsecure]`` in ``pyproject.toml``, searched from the working directory upward)
come from a repository the user may not have written: they may only make things
stricter. What would loosen is ignored with one stderr line naming the file and key,
unless the user trusted that exact file (``failsecure config trust FILE``: its path and
content hash are recorded; any edit drops the trust). The merge is monotone.

A config that fails validation is a hard, clear error naming the file and the key; until
it is fixed, ``Config.error`` is set and every gated call denies.

Stdlib only, and ``tomllib`` is imported only when a file exists: the command-hook runner
loads this module on the critical path of every tool call, where importing pydantic
(~100 ms on the reference machine) would cost more than the whole runner budget.
"""

from __future__ import annotations

import os
import sys
from _thread import TIMEOUT_MAX as _TIMEOUT_MAX  # a builtin module: no import cost

#: Default deadline per gate call, in seconds. Long enough for a policy server on the
#: network or a slow interpreter start, short enough that a hung gate cannot stall an
#: agent for minutes. A hook waiting for a human (interactive) gets no default deadline.
DEFAULT_TIMEOUT = 30.0

ON_ERROR = ("deny", "allow")
ROLES = ("gate", "observer")
_TOP = ("on_error", "timeout", "required", "audit", "hooks")
_HOOK = ("on_error", "timeout", "role")
_AUDIT = ("path", "otel")


class ConfigError(Exception):
    """The configuration is invalid. The message names the file and the key."""


class HookPolicy:
    __slots__ = ("on_error", "timeout", "role", "interactive_timeout")

    def __init__(self, on_error: str | None = "deny", timeout: float | None = None, role: str | None = "gate",
                 interactive_timeout: float | None = None):
        self.on_error = on_error  # None: the global on_error
        self.timeout = timeout  # None: not set for this hook
        self.role = role  # None: a gate
        #: a project file's per-hook deadline that is looser than the global one: it
        #: applies only while the hook waits for a human (which otherwise gets none)
        self.interactive_timeout = interactive_timeout

    def __repr__(self) -> str:
        return (f"HookPolicy(on_error={self.on_error!r}, timeout={self.timeout!r}, role={self.role!r}, "
                f"interactive_timeout={self.interactive_timeout!r})")


class Config:
    __slots__ = ("on_error", "timeout", "required", "audit_path", "hooks", "error", "source", "_resolved",
                 "origins", "ignored", "sources", "audit_otel")

    def __init__(
        self,
        on_error: str = "deny",
        timeout: float = DEFAULT_TIMEOUT,
        required: tuple = (),
        audit_path: str | None = None,
        hooks: dict | None = None,
        error: str | None = None,
        source: str | None = None,
        audit_otel: bool = False,
    ):
        self.on_error = on_error
        self.timeout = timeout
        self.required = tuple(required)
        self.audit_path = audit_path
        #: ``[audit] otel``: send each decision to OpenTelemetry (the ``failsecure[otel]`` extra)
        self.audit_otel = audit_otel
        self.hooks = hooks or {}
        self.error = error
        self.source = source
        self._resolved: dict = {}
        #: setting ("timeout", "hooks.<id>.role", ...) -> the file it came from
        self.origins: dict = {}
        #: "<file>: <key> = <value>" lines a project file tried and was not allowed
        self.ignored: list = []
        #: every file read, in order
        self.sources: list = []

    def hook(self, hook_id: str) -> HookPolicy:
        """The policy of one hook, resolved against the global defaults."""
        got = self._resolved.get(hook_id)
        if got is None:
            own = self.hooks.get(hook_id)
            got = HookPolicy(
                on_error=(own.on_error if own and own.on_error else self.on_error),
                timeout=own.timeout if own else None,
                role=(own.role if own and own.role else "gate"),
                interactive_timeout=own.interactive_timeout if own else None,
            )
            self._resolved[hook_id] = got
        return got

    def timeout_for(self, hook_id: str, interactive: bool = False) -> float | None:
        """Deadline in seconds for one call of a hook, or None for no deadline.

        A per-hook ``timeout`` always applies (0 = none). Otherwise a hook that is
        waiting for a human gets no deadline (or the one a project file set for it,
        looser than the global one), and every other hook the global one."""
        hook = self.hook(hook_id)
        own = hook.timeout
        if own is not None:
            return own or None
        if interactive:
            return hook.interactive_timeout
        return self.timeout or None

    def required_for(self, framework: str) -> tuple:
        """The required hook ids one adapter enforces: its own and the plugin gates."""
        if not self.required:
            return ()
        return tuple(r for r in self.required if r.split(":", 1)[0] in (framework, "plugin"))

    def __repr__(self) -> str:
        return f"Config(source={self.source!r}, error={self.error!r})"


# ---------------------------------------------------------------- validation


#: The longest deadline kept, in seconds: ``threading.TIMEOUT_MAX`` (about 292 years
#: here), the longest a lock can be waited on. A longer one, valid in a config
#: (``timeout = 1e300``), means this: in effect no limit, never an error.
MAX_TIMEOUT = _TIMEOUT_MAX


def _number(where: str, key: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: '{key}' must be a number of seconds, got {type(value).__name__}")
    if value != value or value < 0 or value == float("inf"):
        raise ConfigError(f"{where}: '{key}' must be a finite number >= 0")
    return float(value) if value <= MAX_TIMEOUT else MAX_TIMEOUT


def _choice(where: str, key: str, value, choices) -> str:
    if value not in choices or not isinstance(value, str):
        allowed = " or ".join(repr(c) for c in choices)
        raise ConfigError(f"{where}: '{key}' must be {allowed}, got {value!r}"[:300])
    return value


def _table(where: str, key: str, value) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: '{key}' must be a table, got {type(value).__name__}")
    return value


def _unknown(where: str, prefix: str, data: dict, known) -> None:
    for key in data:
        if key not in known:
            raise ConfigError(f"{where}: unknown key '{prefix}{key}' (known: {', '.join(known)})")


def validate(data: dict, where: str = "<config>") -> Config:
    """Validate one parsed TOML table as a whole config (trusted). Raises ConfigError."""
    config = Config(source=where)
    _apply(config, layer(data, where), where, trusted=True)
    config.sources = [where]
    return config


def layer(data: dict, where: str = "<config>") -> dict:
    """Validate a parsed TOML table into the settings it sets explicitly:
    ``{"on_error", "timeout", "required", "audit_path", "audit_otel", "hooks": {id: {key: value}}}``.
    Raises ConfigError naming the file and key."""
    data = _table(where, "failsecure", data)
    _unknown(where, "", data, _TOP)
    on_error = _choice(where, "on_error", data.get("on_error", "deny"), ON_ERROR)
    timeout = _number(where, "timeout", data.get("timeout", DEFAULT_TIMEOUT))
    required = data.get("required", [])
    if not isinstance(required, list):
        raise ConfigError(f"{where}: 'required' must be a list of hook ids")
    for i, rid in enumerate(required):
        if not isinstance(rid, str) or ":" not in rid or not rid.split(":", 1)[1]:
            raise ConfigError(
                f"{where}: 'required[{i}]' must be a hook id '<framework>:<hook>' or 'plugin:<name>'"
            )
    audit = _table(where, "audit", data.get("audit", {}))
    _unknown(where, "audit.", audit, _AUDIT)
    audit_path = audit.get("path")
    if audit_path is not None and (not isinstance(audit_path, str) or not audit_path):
        raise ConfigError(f"{where}: 'audit.path' must be a non-empty string")
    audit_otel = audit.get("otel")
    if audit_otel is not None and not isinstance(audit_otel, bool):
        raise ConfigError(f"{where}: 'audit.otel' must be true or false, got {type(audit_otel).__name__}")
    hooks = {}
    for hook_id, raw in _table(where, "hooks", data.get("hooks", {})).items():
        key = f'hooks."{hook_id}"'
        raw = _table(where, key, raw)
        _unknown(where, key + ".", raw, _HOOK)
        own: dict = {}
        if "on_error" in raw:
            own["on_error"] = _choice(where, key + ".on_error", raw["on_error"], ON_ERROR)
        if "timeout" in raw:
            own["timeout"] = _number(where, key + ".timeout", raw["timeout"])
        if "role" in raw:
            own["role"] = _choice(where, key + ".role", raw["role"], ROLES)
        hooks[hook_id] = own
    if audit_path is not None and where != "<config>" and not os.path.isabs(audit_path):
        audit_path = os.path.join(os.path.dirname(os.path.abspath(where)), audit_path)
    out: dict = {"hooks": hooks}
    if "on_error" in data:
        out["on_error"] = on_error
    if "timeout" in data:
        out["timeout"] = timeout
    if required:
        out["required"] = tuple(required)
    if audit_path is not None:
        out["audit_path"] = audit_path
    if audit_otel is not None:
        out["audit_otel"] = audit_otel
    return out


# ---------------------------------------------------------------- merging


def _stricter_timeout(new: float, old: "float | None") -> bool:
    """A deadline is stricter when it exists and is shorter (0 = none, the loosest)."""
    if not new:
        return False
    return not old or new < old


def _apply(config: Config, settings: dict, where: str, trusted: bool) -> None:
    """Fold one file's settings into ``config``: a trusted file overrides; a project
    file only tightens, and what it cannot do is recorded in ``config.ignored``."""

    def ignore(key: str, value) -> None:
        shown = f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else value
        config.ignored.append((where, f"{key} = {shown}"))

    for key in ("on_error", "timeout", "audit_path", "audit_otel"):
        if key not in settings:
            continue
        value = settings[key]
        current = getattr(config, key)
        if trusted:
            ok = True
        elif key == "on_error":
            ok = value == "deny"
        elif key == "timeout":
            ok = _stricter_timeout(value, current)
        elif key == "audit_otel":
            ok = value is True  # more audit is stricter; switching it off is not
        else:
            ok = False  # an audit path from a repository: where decisions are written
        if ok:
            if value != current or trusted:
                setattr(config, key, value)
                config.origins[key] = where
        elif value != current:
            ignore({"audit_path": "audit.path", "audit_otel": "audit.otel"}.get(key, key), value)
    if settings.get("required"):
        added = [r for r in settings["required"] if r not in config.required]
        if added:
            config.required = config.required + tuple(added)
            config.origins["required"] = where
    for hook_id, own in settings.get("hooks", {}).items():
        policy = config.hooks.get(hook_id) or HookPolicy(on_error=None, timeout=None, role=None)
        for key, value in own.items():
            name = f'hooks."{hook_id}".{key}'
            if trusted:
                ok = True
            elif key == "on_error":
                ok = value == "deny"
            elif key == "timeout":
                effective = policy.timeout if policy.timeout is not None else config.timeout
                ok = _stricter_timeout(value, effective)
                if not ok and value and policy.timeout is None:
                    # looser than the deadline every call gets, but a deadline all the
                    # same while the hook waits for a human (no deadline by default)
                    if policy.interactive_timeout is None or value < policy.interactive_timeout:
                        policy.interactive_timeout = value
                        config.origins[name + " (waiting for a human)"] = where
                    if value != effective:
                        config.ignored.append((where, f"{name} = {value} for calls not waiting for a human"))
                    continue
            else:
                ok = value == "gate"
            if ok:
                setattr(policy, key, value)
                config.origins[name] = where
            else:
                current = getattr(policy, key)
                if key == "on_error":
                    current = current or config.on_error
                elif key == "role":
                    current = current or "gate"
                if value != current:
                    ignore(name, value)
        config.hooks[hook_id] = policy
    config._resolved = {}




# ---------------------------------------------------------------- loading

PROJECT_FILE = "failsecure.toml"


def _user_dir() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "failsecure")


def trusted_paths() -> list[str]:
    """The trusted config files that exist, lowest precedence first."""
    paths = ["/etc/failsecure/config.toml", os.path.join(_user_dir(), "config.toml")]
    found = [p for p in paths if os.path.isfile(p)]
    env = os.environ.get("FAILSECURE_CONFIG")
    if env:
        found.append(env)  # named explicitly: an unreadable one is an error
    return found


def project_path() -> tuple[str | None, bool]:
    """(path, is_pyproject) of the project config, searched from the working directory
    upward; (None, False) when there is none."""
    try:
        here = os.getcwd()
    except OSError:
        return None, False
    while True:
        candidate = os.path.join(here, PROJECT_FILE)
        if os.path.isfile(candidate):
            return candidate, False
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate) and _has_table(candidate):
            return candidate, True
        parent = os.path.dirname(here)
        if parent == here:
            return None, False
        here = parent


def _has_table(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return b"failsecure" in fh.read()
    except OSError:
        return True  # unreadable: loading it reports the error


def find() -> tuple[str | None, bool]:
    """(path, is_pyproject) of the file that decides most: ``$FAILSECURE_CONFIG``, else
    the project file, else the user's or the system's file; (None, False) for defaults."""
    env = os.environ.get("FAILSECURE_CONFIG")
    if env:
        return env, False
    project, is_pyproject = project_path()
    if project is not None:
        return project, is_pyproject
    trusted = trusted_paths()
    return (trusted[-1], False) if trusted else (None, False)


def _read(path: str, is_pyproject: bool) -> tuple[bytes, dict | None]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file ({type(exc).__name__})") from None
    if is_pyproject and b"failsecure" not in raw:
        return raw, None  # no [tool.failsecure], without importing tomllib (~25 ms)
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    if is_pyproject:
        tool = data.get("tool")
        table = tool.get("failsecure") if isinstance(tool, dict) else None
        return raw, table
    return raw, data


# ---------------------------------------------------------------- trust of project files


def trust_store() -> str:
    return os.path.join(_user_dir(), "trusted")


def _digest(raw: bytes) -> str:
    import hashlib

    return hashlib.sha256(raw).hexdigest()


def is_trusted(path: str, raw: bytes) -> bool:
    """The user trusted this exact file with this exact content."""
    try:
        with open(trust_store(), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return False
    entry = f"{_digest(raw)} {os.path.abspath(path)}"
    return entry in lines


def trust(path: str) -> str:
    """Record ``path`` (as it is now) as trusted. Returns the stored entry."""
    path = os.path.abspath(path)
    with open(path, "rb") as fh:
        raw = fh.read()
    store = trust_store()
    os.makedirs(os.path.dirname(store), mode=0o700, exist_ok=True)
    try:
        with open(store, encoding="utf-8") as fh:
            lines = [line for line in fh.read().splitlines() if line and not line.endswith(" " + path)]
    except OSError:
        lines = []
    entry = f"{_digest(raw)} {path}"
    lines.append(entry)
    tmp = f"{store}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    os.replace(tmp, store)
    return entry


# ---------------------------------------------------------------- the effective config


def load() -> Config:
    """Load, validate and merge every source in force. Raises ConfigError."""
    config = Config()
    for path in trusted_paths():
        _, data = _read(path, False)
        if data is not None:
            _apply(config, layer(data, path), path, trusted=True)
        config.sources.append(path)
    project, is_pyproject = project_path()
    if project is not None and not any(_same_file(project, t) for t in config.sources):
        path = project
        raw, data = _read(path, is_pyproject)
        if data is not None:
            settings = layer(data, path)
            full = is_trusted(path, raw) if _loosens(config, settings, path) else False
            _apply(config, settings, path, trusted=full)
            config.sources.append(path)
    config.source = config.sources[-1] if config.sources else None
    return config


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _loosens(config: Config, settings: dict, path: str) -> bool:
    probe = Config()
    probe.on_error, probe.timeout, probe.required = config.on_error, config.timeout, config.required
    probe.audit_otel = config.audit_otel
    probe.hooks = {k: HookPolicy(v.on_error, v.timeout, v.role) for k, v in config.hooks.items()}
    _apply(probe, settings, path, trusted=False)
    return bool(probe.ignored)


def load_light() -> Config:
    """Load, never raise: an invalid config comes back as a Config whose ``error`` is set."""
    try:
        return load()
    except ConfigError as exc:
        return Config(error=str(exc), source=find()[0])
    except Exception as exc:  # an unexpected loader failure still denies
        return Config(error=f"failsecure: configuration could not be loaded ({type(exc).__name__})")


def _announce(config: Config) -> None:
    err = sys.stderr
    if err is None:
        return
    if config.error:
        err.write(f"failsecure: invalid configuration, every gated tool call is denied: {config.error}\n")
    for where, setting in config.ignored:
        err.write(
            f"failsecure: ignoring {setting} in {where}: a project config may only make things stricter "
            f"(trust this file with `failsecure config trust {where}`)\n"
        )


_current: Config | None = None


def current() -> Config:
    """The config in force: the one ``using`` set for this context, else the process's
    (loaded once; ``reload()`` re-reads it)."""
    override = _override.get()
    if override is not None:
        return override
    global _current
    if _current is None:
        _current = load_light()
        _announce(_current)
    return _current


def reload() -> Config:
    global _current
    _current = None
    return current()


import contextvars as _contextvars  # noqa: E402  (cheap; kept after the hot code for clarity)

_override: "_contextvars.ContextVar[Config | None]" = _contextvars.ContextVar("failsecure_config", default=None)


class using:
    """``with policy.using(config):`` — ``current()`` returns ``config`` in this context
    (and in the guard's worker calls made from it), without touching the process's
    config that other threads use."""

    def __init__(self, config: Config):
        self.config = config

    def __enter__(self) -> Config:
        self._token = _override.set(self.config)
        return self.config

    def __exit__(self, *exc) -> None:
        _override.reset(self._token)
