"""Policy: the configuration model and its loader.

Found at ``$FAILSECURE_CONFIG``, else ``./failsecure.toml``, else ``[tool.failsecure]`` in
``./pyproject.toml``; defaults otherwise. A config that fails validation is a hard, clear
error naming the file and the key; until it is fixed, ``Config.error`` is set and every
gated call denies.

Stdlib only, and ``tomllib`` is imported only when a file exists: the command-hook runner
loads this module on the critical path of every tool call, where importing pydantic
(~100 ms on the reference machine) would cost more than the whole runner budget.
"""

from __future__ import annotations

import os
import sys

#: Default deadline per gate call, in seconds. Long enough for a policy server on the
#: network or a slow interpreter start, short enough that a hung gate cannot stall an
#: agent for minutes. A hook waiting for a human (interactive) gets no default deadline.
DEFAULT_TIMEOUT = 30.0

ON_ERROR = ("deny", "allow")
ROLES = ("gate", "observer")
_TOP = ("on_error", "timeout", "required", "audit", "hooks")
_HOOK = ("on_error", "timeout", "role")
_AUDIT = ("path",)


class ConfigError(Exception):
    """The configuration is invalid. The message names the file and the key."""


class HookPolicy:
    __slots__ = ("on_error", "timeout", "role")

    def __init__(self, on_error: str = "deny", timeout: float | None = None, role: str = "gate"):
        self.on_error = on_error
        self.timeout = timeout  # None: not set for this hook
        self.role = role

    def __repr__(self) -> str:
        return f"HookPolicy(on_error={self.on_error!r}, timeout={self.timeout!r}, role={self.role!r})"


class Config:
    __slots__ = ("on_error", "timeout", "required", "audit_path", "hooks", "error", "source", "_resolved")

    def __init__(
        self,
        on_error: str = "deny",
        timeout: float = DEFAULT_TIMEOUT,
        required: tuple = (),
        audit_path: str | None = None,
        hooks: dict | None = None,
        error: str | None = None,
        source: str | None = None,
    ):
        self.on_error = on_error
        self.timeout = timeout
        self.required = tuple(required)
        self.audit_path = audit_path
        self.hooks = hooks or {}
        self.error = error
        self.source = source
        self._resolved: dict = {}

    def hook(self, hook_id: str) -> HookPolicy:
        """The policy of one hook, resolved against the global defaults."""
        got = self._resolved.get(hook_id)
        if got is None:
            own = self.hooks.get(hook_id)
            got = HookPolicy(
                on_error=(own.on_error if own and own.on_error else self.on_error),
                timeout=own.timeout if own else None,
                role=own.role if own else "gate",
            )
            self._resolved[hook_id] = got
        return got

    def timeout_for(self, hook_id: str, interactive: bool = False) -> float | None:
        """Deadline in seconds for one call of a hook, or None for no deadline.

        A per-hook ``timeout`` always applies (0 = none). Otherwise a hook that is
        waiting for a human gets no deadline, and every other hook the global one."""
        own = self.hook(hook_id).timeout
        if own is not None:
            return own or None
        if interactive:
            return None
        return self.timeout or None

    def required_for(self, framework: str) -> tuple:
        """The required hook ids one adapter enforces: its own and the plugin gates."""
        return tuple(r for r in self.required if r.split(":", 1)[0] in (framework, "plugin"))

    def __repr__(self) -> str:
        return f"Config(source={self.source!r}, error={self.error!r})"


# ---------------------------------------------------------------- validation


def _number(where: str, key: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: '{key}' must be a number of seconds, got {type(value).__name__}")
    if value != value or value < 0 or value == float("inf"):
        raise ConfigError(f"{where}: '{key}' must be a finite number >= 0")
    return float(value)


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
    """Validate a parsed TOML table. Raises ConfigError naming the key."""
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
    hooks = {}
    for hook_id, raw in _table(where, "hooks", data.get("hooks", {})).items():
        key = f'hooks."{hook_id}"'
        raw = _table(where, key, raw)
        _unknown(where, key + ".", raw, _HOOK)
        hooks[hook_id] = HookPolicy(
            on_error=_choice(where, key + ".on_error", raw["on_error"], ON_ERROR) if "on_error" in raw else None,
            timeout=_number(where, key + ".timeout", raw["timeout"]) if "timeout" in raw else None,
            role=_choice(where, key + ".role", raw.get("role", "gate"), ROLES),
        )
    if audit_path is not None and where != "<config>" and not os.path.isabs(audit_path):
        audit_path = os.path.join(os.path.dirname(os.path.abspath(where)), audit_path)
    return Config(on_error, timeout, tuple(required), audit_path, hooks, source=where)


# ---------------------------------------------------------------- loading


def find() -> tuple[str | None, bool]:
    """(path, is_pyproject) of the config in force, or (None, False) for defaults."""
    env = os.environ.get("FAILSECURE_CONFIG")
    if env:
        return env, False
    if os.path.isfile("failsecure.toml"):
        return os.path.abspath("failsecure.toml"), False
    if os.path.isfile("pyproject.toml"):
        return os.path.abspath("pyproject.toml"), True
    return None, False


def load() -> Config:
    """Load and validate the config in force. Raises ConfigError."""
    path, is_pyproject = find()
    if path is None:
        return Config()
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file ({type(exc).__name__})") from None
    if is_pyproject and b"failsecure" not in raw:
        return Config()  # no [tool.failsecure]: defaults, without importing tomllib (~25 ms)
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    if is_pyproject:
        data = data.get("tool", {}).get("failsecure") if isinstance(data.get("tool"), dict) else None
        if data is None:
            return Config()
    return validate(data, path)


def load_light() -> Config:
    """Load, never raise: an invalid config comes back as a Config whose ``error`` is set."""
    try:
        return load()
    except ConfigError as exc:
        return Config(error=str(exc), source=find()[0])
    except Exception as exc:  # an unexpected loader failure still denies
        return Config(error=f"failsecure: configuration could not be loaded ({type(exc).__name__})")


_current: Config | None = None


def current() -> Config:
    """The config in force, loaded once per process (``reload()`` re-reads it)."""
    global _current
    if _current is None:
        _current = load_light()
        if _current.error:
            print(f"failsecure: invalid configuration, every gated tool call is denied: {_current.error}", file=sys.stderr)
    return _current


def reload() -> Config:
    global _current
    _current = None
    return current()
