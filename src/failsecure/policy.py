"""Policy: the configuration model, its loader and the trust model.

Trusted sources, full effect, layered (a later one overrides an earlier one key by
key): ``/etc/failsecure/config.toml``, the user's ``$XDG_CONFIG_HOME/failsecure/config.toml``
(``~/.config/...``), ``$FAILSECURE_CONFIG``. Project sources (``failsecure.toml`` or
``[tool.failsecure]`` in ``pyproject.toml``, searched from the working directory upward)
come from a repository the user may not have written: they may only make things
stricter. What would loosen is ignored with one stderr line naming the file and key,
unless the user trusted that exact file (``failsecure config trust FILE``: its path and
content hash are recorded; any edit drops the trust). The merge is monotone.

Which files are trusted is decided by ``TRUST_VARIABLES`` (``FAILSECURE_CONFIG``,
``XDG_CONFIG_HOME``, ``HOME``) as the process STARTED (``trusted_environment()``): a
``.env`` loaded into ``os.environ`` later cannot widen trust. A failsecure process hands
what it trusts to its children (``TRUSTED_ENV``, checked on Linux against the exporting
ancestor's exec-time environment), so a child started after a ``.env`` was loaded does
not trust the project's values either. Trusted code in the process may choose them
explicitly with ``set_trusted_environment()``.

A config that fails validation is a hard, clear error naming the file and the key; until
it is fixed, ``Config.error`` is set and every gated call denies.

Stdlib only, and ``tomllib`` is imported only when a file exists: the command-hook runner
loads this module on the critical path of every tool call, where importing pydantic
(~100 ms on the reference machine) would cost more than the whole runner budget.
"""

from __future__ import annotations

import errno
import os
import sys
from _thread import TIMEOUT_MAX as _TIMEOUT_MAX  # a builtin module: no import cost

from . import _bootstrap  # os and sys only

TYPE_CHECKING = False  # not typing's (an import on the runner's critical path)
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Default deadline per gate call, in seconds. Long enough for a policy server on the
#: network or a slow interpreter start, short enough that a hung gate cannot stall an
#: agent for minutes. A hook waiting for a human (interactive) gets no default deadline.
DEFAULT_TIMEOUT = 30.0

ON_ERROR = ("deny", "allow")
ROLES = ("gate", "observer")
#: a tool that runs inside an agent run without a decision (docs/ungoverned.md): denied
#: whenever a gate is in force ("deny"), or allowed and audited ("audit")
UNGOVERNED = ("deny", "audit")
_TOP = ("on_error", "timeout", "required", "audit", "hooks", "ungoverned")
#: the table of the frameworks' own settings (``[frameworks."<name>"]``); its keys are the
#: adapters' ``settings`` in ``failsecure.adapters.ADAPTERS``
_FRAMEWORKS = "frameworks"
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

    def to_dict(self) -> dict:
        """Every field, as plain JSON (the one schema: the runner's cache, ``config show --json``)."""
        return {name: getattr(self, name) for name in HookPolicy.__slots__}

    @classmethod
    def from_dict(cls, data: dict) -> "HookPolicy":
        return cls(**{name: data[name] for name in cls.__slots__})


class Config:
    __slots__ = ("on_error", "timeout", "required", "audit_path", "hooks", "error", "source", "_resolved",
                 "origins", "ignored", "sources", "audit_otel", "ungoverned", "frameworks")

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
        ungoverned: str = "deny",
        frameworks: dict | None = None,
    ):
        self.on_error = on_error
        self.timeout = timeout
        self.required = tuple(required)
        self.audit_path = audit_path
        #: ``[audit] otel``: send each decision to OpenTelemetry (the ``failsecure[otel]`` extra)
        self.audit_otel = audit_otel
        #: ``ungoverned``: "deny" (a gate is in force) or "audit" (trusted config only)
        self.ungoverned = ungoverned
        self.hooks = hooks or {}
        #: ``[frameworks."<name>"]``: framework -> {setting: value}, only the values a file
        #: set (``setting`` gives the default of the others)
        self.frameworks = {name: dict(own) for name, own in (frameworks or {}).items()}
        self.error = error
        self.source = source
        self._resolved: dict = {}
        #: setting ("timeout", "hooks.<id>.role", ...) -> the file it came from
        self.origins: dict = {}
        #: "<file>: <key> = <value>" lines a project file tried and was not allowed
        self.ignored: list = []
        #: every file read, in order
        self.sources: list = []

    #: the fields ``to_dict``/``from_dict`` carry (what decides a call; ``origins``,
    #: ``ignored`` and ``sources`` only explain it)
    FIELDS = ("on_error", "timeout", "required", "audit_path", "audit_otel", "ungoverned", "hooks", "frameworks",
              "error", "source")

    def to_dict(self) -> dict:
        """The config as plain JSON, every field that decides a call (the one schema: the
        runner's per-user cache and ``failsecure config show --json`` both use it)."""
        out = {name: getattr(self, name) for name in Config.FIELDS}
        out["required"] = list(self.required)
        out["hooks"] = {hook_id: own.to_dict() for hook_id, own in self.hooks.items()}
        out["frameworks"] = {name: dict(own) for name, own in self.frameworks.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Config":
        """``to_dict``'s inverse; a missing or unknown field raises (a stale record is not a config)."""
        if set(data) != set(cls.FIELDS):
            raise ValueError("not a failsecure config record")
        fields = dict(data)
        fields["hooks"] = {hook_id: HookPolicy.from_dict(own) for hook_id, own in data["hooks"].items()}
        return cls(**fields)

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

    def role_for(self, hook_id: str, strict: bool | None) -> str:
        """What a hook is, ``"gate"`` or ``"observer"``: its own ``role`` in the config;
        else what the framework says of it (``strict``: its failure stops the tool call,
        as LangChain's ``raise_error``); a hook the framework says nothing readable of
        (``None``) is a gate: judged, never waved through."""
        own = self.hooks.get(hook_id)
        role = own.role if own is not None else None
        if role is None:
            return "observer" if strict is False else "gate"
        return "observer" if role == "observer" else "gate"

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

    def setting(self, framework: str, name: str) -> str:
        """One of a framework's own settings (``[frameworks."<framework>"] <name>``): the
        value the config set, else the default the adapter's metadata declares."""
        own = self.frameworks.get(framework)
        if own is not None and name in own:
            return own[name]
        return _framework_settings(framework)[name][0]

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


def _framework_settings(framework: str) -> dict:
    """The settings a framework's adapter declares (setting -> values, the loosest first)."""
    from .adapters import ADAPTERS  # metadata only: it imports nothing

    meta = ADAPTERS.get(framework)
    return meta.settings if meta is not None else {}


def _frameworks(where: str, data: dict) -> dict:
    """``[frameworks."<name>"]``: each framework's own settings, validated against what
    its adapter declares (an unknown framework, setting or value is a ConfigError)."""
    out = {}
    for framework, raw in _table(where, _FRAMEWORKS, data).items():
        key = f'{_FRAMEWORKS}."{framework}"'
        known = _framework_settings(framework)
        if not known:
            from .adapters import ADAPTERS

            with_settings = [name for name, meta in ADAPTERS.items() if meta.settings]
            raise ConfigError(f"{where}: unknown key '{key}' (frameworks with settings: {', '.join(with_settings)})"[:300])
        raw = _table(where, key, raw)
        _unknown(where, key + ".", raw, tuple(known))
        if raw:
            out[framework] = {name: _choice(where, f"{key}.{name}", value, known[name]) for name, value in raw.items()}
    return out


def validate(data: dict, where: str = "<config>") -> Config:
    """Validate one parsed TOML table as a whole config (trusted). Raises ConfigError."""
    config = Config(source=where)
    _apply(config, layer(data, where), where, trusted=True)
    config.sources = [where]
    return config


def layer(data: dict, where: str = "<config>") -> dict:
    """Validate a parsed TOML table into the settings it sets explicitly:
    ``{"on_error", "timeout", "required", "audit_path", "audit_otel", "hooks": {id: {key: value}},
    "frameworks": {name: {setting: value}}}``.
    Raises ConfigError naming the file and key."""
    data = _table(where, "failsecure", data)
    _unknown(where, "", {key: None for key in data if key != _FRAMEWORKS}, _TOP)
    on_error = _choice(where, "on_error", data.get("on_error", "deny"), ON_ERROR)
    ungoverned = _choice(where, "ungoverned", data.get("ungoverned", "deny"), UNGOVERNED)
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
    if "ungoverned" in data:
        out["ungoverned"] = ungoverned
    if required:
        out["required"] = tuple(required)
    if audit_path is not None:
        out["audit_path"] = audit_path
    if audit_otel is not None:
        out["audit_otel"] = audit_otel
    if _FRAMEWORKS in data:
        frameworks = _frameworks(where, data[_FRAMEWORKS])
        if frameworks:
            out["frameworks"] = frameworks
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

    for key in ("on_error", "timeout", "audit_path", "audit_otel", "ungoverned"):
        if key not in settings:
            continue
        value = settings[key]
        current = getattr(config, key)
        if trusted:
            ok = True
        elif key in ("on_error", "ungoverned"):
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
    for framework, own in settings.get("frameworks", {}).items():
        values = _framework_settings(framework)
        for key, value in own.items():
            name = f'{_FRAMEWORKS}."{framework}".{key}'
            current = config.setting(framework, key)
            # trusted: full effect; a project file may only move to a later (stricter) value
            if trusted or values[key].index(value) > values[key].index(current):
                config.frameworks.setdefault(framework, {})[key] = value
                config.origins[name] = where
            elif value != current:
                ignore(name, value)
    config._resolved = {}




# ---------------------------------------------------------------- the trusted environment

#: The environment variables the trust model reads: which file is ``$FAILSECURE_CONFIG``
#: and where the user's directory (config file, trust store) is. Their values come from
#: the environment the process started with, never from ``os.environ`` as it is later:
#: an application that loads the working directory's ``.env`` (python-dotenv's
#: ``load_dotenv()``) would otherwise let a cloned repository name its own file as the
#: trusted config, move the user's directory into itself or ship a forged trust store.
#: (``USERPROFILE`` is the home directory on Windows only.)
TRUST_VARIABLES = ("FAILSECURE_CONFIG", "XDG_CONFIG_HOME", "HOME", "USERPROFILE")


def _normal(values) -> dict:
    """The trust variables of a mapping: set and non-empty only (empty = unset, as
    always), a relative ``FAILSECURE_CONFIG`` made absolute against the working directory
    of now."""
    out = {}
    for name in TRUST_VARIABLES:
        value = values.get(name)
        if isinstance(value, str) and value:
            out[name] = value
    named = out.get("FAILSECURE_CONFIG")
    if named is not None and not os.path.isabs(named):
        try:
            out["FAILSECURE_CONFIG"] = os.path.join(os.getcwd(), named)
        except OSError:
            pass
    return out


def _from_proc() -> "dict | None":
    """The trust variables (and ``TRUSTED_ENV``) of the exec-time environment block
    (Linux), or None when it cannot be read or no longer looks like one (setproctitle may
    write the process title over it)."""
    if "setproctitle" in sys.modules:
        return None
    return _bootstrap.read_block("/proc/self/environ")


def _start_environment() -> tuple[dict, str]:
    """(the trust variables of the environment the process started with, where they
    were read). The drop-in's snapshot at interpreter start when it ran (``.pth``, before
    any application code, also with ``FAILSECURE_AUTO=0``); else the exec-time environment
    from ``/proc/self/environ`` (``python -S``, ``pip install --target``, zipapps on
    Linux); else ``os.environ`` at this module's first import. In each, what a failsecure
    parent handed down (``TRUSTED_ENV``) is preferred to the variables themselves."""
    snapshot = _bootstrap.start_environment
    if isinstance(snapshot, dict):
        return _normal(snapshot), _bootstrap.start_origin
    exec_time = _from_proc()
    found, where = (exec_time, "/proc/self/environ") if exec_time is not None else \
        (os.environ, "os.environ at the first import of failsecure.policy")
    claim = found.get(TRUSTED_ENV)
    if claim is not None:
        env, where = _bootstrap.inherited(claim)
        env = _normal(env)
    else:
        env = _normal(found)
    _bootstrap.export(env)  # the drop-in did not hand it to children at start: now
    return env, where


TRUSTED_ENV = _bootstrap.TRUSTED_ENV
_start, _start_origin = _start_environment()
#: what trusted code chose with ``set_trusted_environment`` (None: the start environment)
_chosen: Mapping[str, str] | None = None


def _env() -> Mapping[str, str]:
    chosen = _chosen
    if chosen is None:
        return _start
    if chosen is os.environ:
        return _normal(os.environ)
    return chosen


def trusted_environment() -> dict:
    """The trust variables in force (``TRUST_VARIABLES`` that are set, as a new dict):
    the environment the process started with, or what ``set_trusted_environment`` chose."""
    return dict(_env())


def trusted_environment_origin() -> str:
    """Where ``trusted_environment()`` comes from, for ``doctor`` and error reports."""
    if _chosen is None:
        return _start_origin
    return "os.environ (set in-process)" if _chosen is os.environ else "set in-process"


def set_trusted_environment(mapping=None):
    """Choose the environment the trust model reads, from trusted code (Python in the
    process is trusted; a ``.env`` cannot set a Python attribute, only variables).

    ``mapping``: the variables to use (only ``TRUST_VARIABLES`` are read; absent or empty
    = unset; a relative ``FAILSECURE_CONFIG`` is made absolute now), copied; ``os.environ``
    itself: follow the live environment (what a test suite, which is trusted code, may
    want), also in the children: nothing is handed down, they start with the live
    environment as their own; None: back to the environment the process started with.
    With a mapping or None, children are handed the start environment (``TRUSTED_ENV``:
    a child can check it against this process's exec-time environment, not a mapping), so
    a ``.env`` loaded after the choice does not reach them. The process's config is
    re-read at the next gated call. Returns the previous choice, to restore it::

        previous = policy.set_trusted_environment({"FAILSECURE_CONFIG": path})
        try: ...
        finally: policy.set_trusted_environment(previous)
    """
    global _chosen, _current
    previous = _chosen
    if mapping is None or mapping is os.environ:
        _chosen = mapping
    else:
        _chosen = _normal(mapping)
    if _chosen is os.environ:  # the live environment is trusted, in this process and its children
        os.environ.pop(TRUSTED_ENV, None)
    else:  # children get what this process started with: what a child can check (a mapping cannot be)
        _bootstrap.export(_start)
    _current = None
    return previous


# ---------------------------------------------------------------- loading

PROJECT_FILE = "failsecure.toml"


def _home() -> "str | None":
    """The user's home directory: the trusted ``HOME`` (``USERPROFILE`` on Windows) when
    it is an absolute path, else the password database's; None when there is none (a
    relative one would point into the working directory)."""
    home = _env().get("USERPROFILE" if os.name == "nt" else "HOME")
    if home and os.path.isabs(home):
        return home
    try:
        import pwd

        home = pwd.getpwuid(os.getuid()).pw_dir
    except Exception:  # noqa: BLE001 - no pwd module (Windows), no entry for this uid: no home
        return None
    return home if home and os.path.isabs(home) else None


def _user_dir() -> "str | None":
    """``$XDG_CONFIG_HOME/failsecure`` (an absolute ``XDG_CONFIG_HOME`` only, as the XDG
    spec says), else ``~/.config/failsecure``; None without a home directory."""
    base = _env().get("XDG_CONFIG_HOME")
    if not base or not os.path.isabs(base):
        home = _home()
        if home is None:
            return None
        base = os.path.join(home, ".config")
    return os.path.join(base, "failsecure")


def trusted_paths() -> list[str]:
    """The trusted config files that exist, lowest precedence first."""
    paths = ["/etc/failsecure/config.toml"]
    user = _user_dir()
    if user is not None:
        paths.append(os.path.join(user, "config.toml"))
    found = [p for p in paths if os.path.isfile(p)]
    env = _env().get("FAILSECURE_CONFIG")
    if env:
        found.append(env)  # named explicitly: an unreadable one is an error
    return found


def project_path() -> tuple[str | None, bool]:
    """(path, is_pyproject) of the project config, searched from the working directory
    upward; (None, False) when there is none. A ``pyproject.toml`` counts only when it
    has a ``[tool.failsecure]`` table; one that cannot be read or parsed counts too (its
    load is an error: every gated call denies, as for any invalid config). A file
    another user can write is passed over (``_candidate``)."""
    return _project()[:2]


def _project() -> "tuple[str | None, bool, bytes | str | None]":
    """``project_path()`` and the file's bytes as they were checked (``_candidate``), or
    the name of the error that kept it from being read."""
    try:
        here = os.getcwd()
    except OSError:
        return None, False, None
    while True:
        for name, is_pyproject in ((PROJECT_FILE, False), ("pyproject.toml", True)):
            candidate = os.path.join(here, name)
            state, raw = _candidate(candidate)
            if state == _ABSENT or (is_pyproject and isinstance(raw, bytes) and not _bytes_have_table(raw, candidate)):
                continue
            if state == _FOREIGN:
                if not is_pyproject or _has_table(candidate):
                    _report_foreign(candidate)
                continue
            return candidate, is_pyproject, raw
        parent = os.path.dirname(here)
        if parent == here:
            return None, False, None
        here = parent


#: foreign project files already reported on stderr (once per path and process)
_foreign_reported: set = set()
#: what a candidate of the project search is (``_candidate``)
_ABSENT, _FOREIGN, _OURS = 0, 1, 2
_OPEN_EXTRA = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)  # never wait on a FIFO, never take a tty


def _candidate(path: str) -> "tuple[int, bytes | str | None]":
    """(what ``path`` is, its bytes) for the project search. A project file counts only
    when no other user can have written it: every symlink on the way to it (each hop of a
    chain: whoever owns a link can repoint it) and the file itself are owned by this user
    or root, and the file is not writable by everyone. A ``pyproject.toml`` another user
    left in a shared parent directory (``/tmp``) could otherwise make every gated call of
    this user deny (an invalid file) or hold its tools to that user's rules.

    The file is opened once, after its chain was checked, without following a link
    (``O_NOFOLLOW``), its owner is checked on that descriptor (``fstat``) and its bytes
    are read from it: whoever owns the directory cannot swap another file in between the
    check and the read. ``(_ABSENT, None)``: not there, or no regular file;
    ``(_FOREIGN, None)``; ``(_OURS, bytes)``; ``(_OURS, error name)`` when it cannot be
    read (its load reports the error: fail closed). No ownership on this platform: every
    file counts."""
    if not os.path.isfile(path):
        return _ABSENT, None
    getuid = getattr(os, "getuid", None)
    try:
        if getuid is None:
            st, raw = _read_regular(path, follow=True)
            return (_OURS, raw) if raw is not None else (_ABSENT, None)
        me = getuid()
        real = _resolve(path, me)
        if real is None:
            return _FOREIGN, None
        st, raw = _read_regular(real, follow=False)
    except OSError as exc:
        if exc.errno == errno.ELOOP and getuid is not None:
            return _FOREIGN, None  # the checked file became a link since: not the one checked
        return _OURS, type(exc).__name__
    if raw is None:
        return _ABSENT, None
    if st.st_uid not in (me, 0) or st.st_mode & 0o002:
        return _FOREIGN, None
    return _OURS, raw


def _resolve(path: str, me: int) -> "str | None":
    """The absolute ``path`` with every symlink on the way followed by hand; None when a
    link is owned by neither this user nor root. Raises OSError (a vanished entry, a loop)."""
    done, todo, hops = os.sep, path.split(os.sep)[::-1], 0
    while todo:
        name = todo.pop()
        if name in ("", "."):
            continue
        if name == "..":
            done = os.path.dirname(done)
            continue
        here = os.path.join(done, name)
        st = os.lstat(here)
        if not _is_link(st):
            done = here
            continue
        if st.st_uid not in (me, 0):
            return None
        hops += 1
        if hops > 40:
            raise OSError(errno.ELOOP, "too many levels of symbolic links")
        target = os.readlink(here)
        if target.startswith(os.sep):
            done = os.sep
        todo.extend(target.split(os.sep)[::-1])
    return done


def _read_regular(path: str, follow: bool):
    """(fstat, bytes) of the file at ``path``, both from one descriptor; (fstat, None)
    when it is no regular file (nothing read). Raises OSError."""
    extra = _OPEN_EXTRA | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    with open(path, "rb", opener=lambda name, flags: os.open(name, flags | extra)) as fh:
        st = os.fstat(fh.fileno())
        if (st.st_mode & 0o170000) != 0o100000:
            return st, None
        return st, fh.read()


def _report_foreign(path: str) -> None:
    """Name a passed-over project file once on stderr, without its content."""
    if path in _foreign_reported:
        return
    _foreign_reported.add(path)
    err = sys.stderr
    if err is not None:
        try:
            err.write(f"failsecure: ignoring the project config {path}: another user can write it "
                      "(it is not owned by you or root, or it is writable by everyone)\n")
        except Exception:  # noqa: BLE001 - stderr closed or broken: the config is still ignored
            pass


def _is_link(st) -> bool:
    return (st.st_mode & 0o170000) == 0o120000  # a symlink's own mode is always 0777


_BARE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_WS = b" \t"
NO, MAYBE, HEADER = 0, 1, 2  # what the bytes say about a [tool.failsecure] table


def _back(raw: bytes, i: int, word: bytes) -> int:
    """The index just before ``word`` (bare or quoted) that ends at ``raw[i]`` after
    blanks; -2 when it is not there."""
    while i >= 0 and raw[i] in _WS:
        i -= 1
    n = len(word)
    if i >= 0 and raw[i] in b"\"'":
        first = i - n - 1  # the opening quote
        if first < 0 or raw[first] != raw[i] or raw[first + 1:i] != word:
            return -2
        return first - 1
    first = i - n + 1
    if first < 0 or raw[first:i + 1] != word or (first > 0 and raw[first - 1] in _BARE):
        return -2
    return first - 1


def _tool_array(raw: bytes) -> bool:
    """``[[tool]]`` or ``[[tool.failsecure]]`` somewhere: then ``[tool.failsecure]``
    (``[tool.failsecure.x]``) extends its last element, and no table is defined."""
    at = raw.find(b"[[")
    while at >= 0:
        i = at + 2
        while i < len(raw) and raw[i] in _WS:
            i += 1
        name = raw[i:i + 6]
        if name[:4] == b"tool" or name in (b'"tool"', b"'tool'"):
            i += 4 if name[:4] == b"tool" else 6
            while i < len(raw) and raw[i] in _WS:
                i += 1
            if raw[i:i + 1] == b"]":
                return True
            close = raw.find(b"]", i)
            if raw[i:i + 1] == b"." and b"failsecure" in raw[i:close if close >= 0 else len(raw)]:
                return True  # [[tool.failsecure]]: conservative for any array under it
        at = raw.find(b"[[", at + 2)
    return False


def _table_in_bytes(raw: bytes) -> int:
    """What the bytes say, without importing tomllib (~25 ms, on the command-hook runner's
    critical path): NO when ``raw`` certainly defines no ``tool.failsecure`` key, HEADER
    when it has a table header ``[tool.failsecure]`` (``[tool.failsecure.hooks."x"]``,
    quoted, spaced) on a line of its own in a file without multi-line strings (then it
    has the table or is not valid TOML: either way it is the project config), MAYBE
    otherwise (parse it). The key ``failsecure`` (bare, or quoted without escapes) must
    appear right after a dot (``tool.failsecure.x = 1``) or right before ``=`` or a dot
    (``failsecure = {...}`` under ``[tool]``, inline tables); a dependency such as
    ``"failsecure>=0.1"`` or ``["failsecure"]`` is none of these. A key spelled with
    escapes (``"fail\\u0073ecure"``) makes it MAYBE."""
    if b"\\u" in raw or b"\\U" in raw:
        return MAYBE
    found = NO
    plain = b'"""' not in raw and b"\'\'\'" not in raw and not _tool_array(raw)
    start = raw.find(b"failsecure")
    while start >= 0:
        end = start + 10
        before = raw[start - 1] if start else None
        if before is not None and before in b"\"'" and raw[end:end + 1] == bytes((before,)):
            start, end = start - 1, end + 1  # a quoted key "failsecure" / 'failsecure'
        elif (before is not None and before in _BARE) or (end < len(raw) and raw[end] in _BARE):
            start = raw.find(b"failsecure", end)
            continue  # part of a longer name: not the key
        i = start - 1
        while i >= 0 and raw[i] in _WS:
            i -= 1
        j = end
        while j < len(raw) and raw[j] in _WS:
            j += 1
        after = raw[j] if j < len(raw) else None
        if i >= 0 and raw[i] == 0x2E:  # "." before: tool.failsecure, [tool.failsecure]
            if plain and after in (0x5D, 0x2E):  # "]" or "." after: maybe a header
                k = _back(raw, i - 1, b"tool")
                while k >= 0 and raw[k] in _WS:
                    k -= 1
                if k >= 0 and raw[k] == 0x5B and (k == 0 or raw[k - 1] != 0x5B):  # "[" but not "[["
                    k -= 1
                    while k >= 0 and raw[k] in _WS:
                        k -= 1
                    if k < 0 or raw[k] == 0x0A:  # at the start of a line
                        return HEADER
            found = MAYBE
        elif after == 0x2E or (after == 0x3D and raw[j + 1:j + 2] != b"="):  # "." or "=" (not "==") after
            found = MAYBE
        start = raw.find(b"failsecure", end)
    return found


def _pyproject_table(raw: bytes, path: str):
    """The ``tool.failsecure`` value of a pyproject's bytes, None when there is none.
    Raises ConfigError when the file is not valid TOML (or not UTF-8)."""
    if _table_in_bytes(raw) == NO:
        return None  # no [tool.failsecure], without importing tomllib
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    tool = data.get("tool")
    return tool.get("failsecure") if isinstance(tool, dict) else None


def _has_table(path: str) -> bool:
    """The pyproject has a ``tool.failsecure`` key, or cannot be read or parsed (fail
    closed: its load reports the error and every gated call denies)."""
    try:
        raw = _read_regular(path, follow=True)[1]
    except OSError:
        return True  # unreadable: loading it reports the error
    return raw is not None and _bytes_have_table(raw, path)


def _bytes_have_table(raw: bytes, path: str) -> bool:
    try:
        said = _table_in_bytes(raw)
        if said != MAYBE:
            return said == HEADER
        return _pyproject_table(raw, path) is not None
    except Exception:  # noqa: BLE001 - invalid or too deep for the parser: loading it reports the error
        return True  # invalid (or too deep for the parser): loading it reports the error


def find() -> tuple[str | None, bool]:
    """(path, is_pyproject) of the file that decides most: ``$FAILSECURE_CONFIG``, else
    the project file, else the user's or the system's file; (None, False) for defaults."""
    env = _env().get("FAILSECURE_CONFIG")
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
    return raw, _parse(raw, path, is_pyproject)


def _parse(raw: bytes, path: str, is_pyproject: bool) -> "dict | None":
    if is_pyproject:
        return _pyproject_table(raw, path)
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None


# ---------------------------------------------------------------- trust of project files


def trust_store() -> "str | None":
    """The user's record of trusted project files; None without a home directory."""
    user = _user_dir()
    return None if user is None else os.path.join(user, "trusted")


def _digest(raw: bytes) -> str:
    import hashlib

    return hashlib.sha256(raw).hexdigest()


def is_trusted(path: str, raw: bytes) -> bool:
    """The user trusted this exact file with this exact content."""
    store = trust_store()
    if store is None:
        return False
    path = os.path.abspath(path)
    if _breaks_lines(path):
        return False  # such a path cannot have been stored as one entry
    # a store another user can write (not owned by this user or root, writable by
    # everyone, a foreign link on the way) could trust any file for this user: not read
    state, stored = _candidate(store)
    if state != _OURS or not isinstance(stored, bytes):
        return False
    lines = stored.decode("utf-8").split("\n")  # a corrupt store is an error (fail closed), as before
    entry = f"{_digest(raw)} {path}"
    return entry in lines


def _breaks_lines(path: str) -> bool:
    """A path with a line break in it (any that ``str.splitlines`` knows) would write a
    second, forged entry into the line-oriented trust store."""
    return len(("x" + path).splitlines()) != 1 or "\n" in path or "\r" in path


def trust(path: str) -> str:
    """Record ``path`` (as it is now) as trusted. Returns the stored entry."""
    path = os.path.abspath(path)
    if _breaks_lines(path):
        raise ValueError("a path with a line break in it cannot be trusted")
    with open(path, "rb") as fh:
        raw = fh.read()
    store = trust_store()
    if store is None:
        raise OSError(errno.ENOENT, "no home directory for the trust store")
    os.makedirs(os.path.dirname(store), mode=0o700, exist_ok=True)
    try:
        with open(store, encoding="utf-8") as fh:
            lines = [line for line in fh.read().split("\n") if line and not line.endswith(" " + path)]
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


def _read_trusted(path: str, named: bool) -> "dict | None":
    """A trusted file's settings, read only when no other user can have written it: the
    file is not writable by everyone and (``named`` False: the user's or the system's
    file, found by its place, not named by the user) every symlink on the way and the
    file itself are owned by this user or root. Trusted files have full effect, so one
    another user can write would hand that user the loosening a project file is denied
    (``on_error = "allow"``, observers, no deadline): it is an error, not a source (every
    gated call denies until it is fixed), like ssh's refusal of a config others can
    write. Read from the descriptor that was checked. Raises ConfigError."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # no ownership on this platform
        return _read(path, False)[1]
    me = getuid()
    try:
        real = _resolve(os.path.abspath(path), me)
        if real is None:
            if named:
                real = os.path.realpath(path)
            else:
                raise ConfigError(f"{path}: another user can write this file (a symlink on the way to it is "
                                  "not owned by you or root); it is not read")
        st, raw = _read_regular(real, follow=False)
    except ConfigError:
        raise
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file ({type(exc).__name__})") from None
    if raw is None:
        raise ConfigError(f"{path}: not a regular file")
    if st.st_mode & 0o002 or (not named and st.st_uid not in (me, 0)):
        raise ConfigError(f"{path}: another user can write this file (it is not owned by you or root, or it is "
                          "writable by everyone); it is not read")
    return _parse(raw, path, False)


def load() -> Config:
    """Load, validate and merge every source in force. Raises ConfigError."""
    config = Config()
    named = _env().get("FAILSECURE_CONFIG")
    for path in trusted_paths():
        data = _read_trusted(path, named is not None and path == named)
        if data is not None:
            _apply(config, layer(data, path), path, trusted=True)
        config.sources.append(path)
    project, is_pyproject, raw = _project()
    if project is not None and not any(_same_file(project, t) for t in config.sources):
        if not isinstance(raw, bytes):  # read from the descriptor whose owner was checked
            raise ConfigError(f"{project}: cannot read the file ({raw})")
        data = _parse(raw, project, is_pyproject)
        if data is not None:
            settings = layer(data, project)
            full = is_trusted(project, raw) if _loosens(config, settings, project) else False
            _apply(config, settings, project, trusted=full)
            config.sources.append(project)
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
    probe.ungoverned = config.ungoverned
    probe.hooks = {k: HookPolicy(v.on_error, v.timeout, v.role) for k, v in config.hooks.items()}
    probe.frameworks = {name: dict(own) for name, own in config.frameworks.items()}
    _apply(probe, settings, path, trusted=False)
    return bool(probe.ignored)


def load_light() -> Config:
    """Load, never raise: an invalid config comes back as a Config whose ``error`` is set."""
    try:
        return load()
    except ConfigError as exc:
        return Config(error=str(exc), source=find()[0])
    except Exception as exc:  # noqa: BLE001 - an unexpected loader failure still denies
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
