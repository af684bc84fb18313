"""The runner's config, cached between calls.

Every tool call starts a new runner process; parsing an unchanged TOML config each
time costs the ``tomllib`` import (~25 ms on the reference machine), most of what a
config file adds. So the runner keeps what ``failsecure.policy.load_light()`` made of the
config as JSON (read with ``failsecure._fastjson``, which the runner imports anyway),
keyed by the stat (path, size, mtime, inode, ctime) and the bytes of every file the
policy read (reading a small file costs microseconds; importing tomllib milliseconds).

- Stored per user: ``<cache home>/failsecure``, the cache home being ``--cache-home``
  on the launch line (what ``$XDG_CACHE_HOME`` was when ``hook install`` ran) or
  ``~/.cache`` of the user's home in the password database, never a variable of the
  runner's own environment (a host builds it from the project's settings). Directory
  0700 owned by the user, file 0600, written atomically (temp + rename).
  A directory or file with other owners or looser modes is never read.
- A changed, added or removed config file changes the key: the next call loads and
  validates it (an invalid config denies at once, as without the cache).
- Anything unexpected (no HOME, a read-only disk, a damaged cache) falls back to
  loading the config directly: the cache can cost a call time, never its decision.

Which files decide the config: ``policy.sources()`` (a list of paths) when the policy
offers it, else every candidate of the trust model (the system and user files, the
launch line's ``--config``, the trust store, the project file found from the working
directory upward), whose absence is part of the key too.

**Trusted inputs** (``Trusted``): which config files are trusted is decided by the
launch line (``--config FILE``, ``--config-home DIR``: what ``$FAILSECURE_CONFIG`` and
``$XDG_CONFIG_HOME`` were when the user ran ``hook install``) and the user's real home
(``pwd``), never by ``FAILSECURE_CONFIG`` / ``XDG_CONFIG_HOME`` / ``HOME`` in the
runner's environment: hosts build that environment from the untrusted project's own
settings (a cloned repository's ``.claude/settings.json`` ``env``). The policy is handed
that environment through ``policy.set_trusted_environment`` when it offers it; until
then, the three variables are set to the trusted values around the load and put back.

**No read blocks before the deadline**: every config candidate is opened with
``O_NONBLOCK``, checked with ``fstat`` to be a regular file and read up to a cap. A
project candidate that is not a regular file (a FIFO, a device, ``/dev/fd/N``) is
never read (the policy skips it too); an explicit ``--config`` that is not one, or a
candidate over ``READ_CAP``, is a config error (deny) and never reaches the loader.
"""

import os

from failsecure._fastjson import dumps, loads

FORMAT = 4  # 4: the record is policy.Config.to_dict() with the frameworks' own settings (2 dropped audit_otel and interactive_timeout)
_CONTENT_CAP = 256 * 1024  # a larger config file is loaded directly, never cached
READ_CAP = 4 * 1024 * 1024  # a larger config candidate is an error, never read
_TRUST_VARS = ("FAILSECURE_CONFIG", "XDG_CONFIG_HOME", "HOME")


def real_home():
    """The user's home from the password database (not ``$HOME``), or None."""
    try:
        import pwd

        home = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):
        return None
    return home if home and os.path.isabs(home) else None


class Trusted:
    """The runner's trusted inputs: the launch line's options and the real home."""

    __slots__ = ("config", "config_home", "cache_home", "home")

    def __init__(self, config=None, config_home=None, cache_home=None, home=None):
        self.config = config  # an explicit trusted config file (FAILSECURE_CONFIG at install)
        self.config_home = config_home  # XDG_CONFIG_HOME at install
        self.cache_home = cache_home  # XDG_CACHE_HOME at install
        self.home = home if home is not None else real_home()

    def environment(self):
        """-> the trust model's environment (FAILSECURE_CONFIG, XDG_CONFIG_HOME, HOME)."""
        env = {}
        if self.home:
            env["HOME"] = self.home
        if self.config_home:
            env["XDG_CONFIG_HOME"] = self.config_home
        if self.config:
            env["FAILSECURE_CONFIG"] = self.config
        return env

    def cache_dir(self):
        base = self.cache_home
        if not base or not os.path.isabs(base):
            if not self.home:
                return None
            base = os.path.join(self.home, ".cache")
        return os.path.join(base, "failsecure")


class _TrustedEnvironment:
    """``with``: the policy reads the trusted environment, not the process's."""

    def __init__(self, policy, trusted):
        self.policy = policy
        self.env = trusted.environment()

    def __enter__(self):
        setter = getattr(self.policy, "set_trusted_environment", None)
        if callable(setter):
            self.saved = None
            self.previous = setter(self.env)  # the choice in force before, to put back
            return self
        # No policy API: set the three variables for the load, put them back after.
        self.saved = {name: os.environ.get(name) for name in _TRUST_VARS}
        for name in _TRUST_VARS:
            if name in self.env:
                os.environ[name] = self.env[name]
            else:
                os.environ.pop(name, None)
        return self

    def __exit__(self, *exc):
        if self.saved is None:
            self.policy.set_trusted_environment(self.previous)
            return
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class Unsafe(Exception):
    """A config candidate the runner will not read (not a regular file, too large)."""


def load(trusted=None):
    """-> the policy's Config for this call (from the cache when nothing changed).

    ``trusted``: the runner's trusted inputs (default: no launch-line options, the
    user's real home)."""
    from failsecure import policy

    if trusted is None:
        trusted = Trusted()
    with _TrustedEnvironment(policy, trusted):
        try:
            key = _key(policy, trusted)
            path = _cache_path(key, trusted)
        except Unsafe as exc:
            return policy.Config(error="failsecure: %s" % (exc,), source=None)
        except Exception:  # noqa: BLE001 - no safe cache path: the config is read without the cache
            return policy.load_light()
        if path is not None:
            cached = _read(path, key)
            if cached is not None:
                try:
                    return policy.Config.from_dict(cached)
                except Exception:  # noqa: BLE001 - a cache entry that does not load is read again from the config
                    pass
        config = policy.load_light()
        if path is not None and key is not None:
            try:
                _write(path, key, config.to_dict())
            except Exception:  # noqa: BLE001 - a cache that cannot be written: the next run reads the config again
                pass
        return config


def _sources(policy):
    """The files whose content (or absence) decides the config."""
    sources = getattr(policy, "sources", None)
    if callable(sources):
        return [os.path.abspath(p) for p in sources()]
    paths = []
    if hasattr(policy, "trusted_paths") and hasattr(policy, "project_path"):
        # the trust model: system and user files, $FAILSECURE_CONFIG, the trust store,
        # and the project file found from here upward (a nearer one changes the key)
        user_dir = getattr(policy, "_user_dir", None)
        candidates = ["/etc/failsecure/config.toml"]
        home_dir = user_dir() if user_dir is not None else None
        if home_dir:  # None: no home directory, so no user file
            candidates.append(os.path.join(home_dir, "config.toml"))
        candidates += list(policy.trusted_paths())
        if hasattr(policy, "trust_store"):
            candidates.append(policy.trust_store())
        candidates.append(policy.project_path()[0])
        candidates.append(os.path.abspath("failsecure.toml"))
        candidates.append(os.path.abspath("pyproject.toml"))
    else:
        env = os.environ.get("FAILSECURE_CONFIG")  # set from the trusted inputs by load()
        candidates = [env] if env else [os.path.abspath("failsecure.toml"), os.path.abspath("pyproject.toml")]
        candidates.append(policy.find()[0])
    for path in candidates:
        if path and os.path.abspath(path) not in paths:
            paths.append(os.path.abspath(path))
    return paths


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def _project_candidates():
    """Every project config candidate from the working directory upward (what the
    policy's search may open): checked before the policy reads any of them."""
    try:
        here = os.getcwd()
    except OSError:
        return []
    found = []
    while True:
        found.append(os.path.join(here, "failsecure.toml"))
        found.append(os.path.join(here, "pyproject.toml"))
        parent = os.path.dirname(here)
        if parent == here:
            return found
        here = parent


def _check_project_candidates(sources):
    """A regular project candidate over READ_CAP is an error (the loader would read it
    all); one that is not a regular file is skipped by the loader and never opened."""
    import stat as _stat

    for path in _project_candidates():
        if path in sources:
            continue  # read (safely) for the key
        try:
            st = os.stat(path)
        except OSError:
            continue
        if _stat.S_ISREG(st.st_mode) and st.st_size > READ_CAP:
            raise Unsafe("config candidate %s is over %d bytes" % (path, READ_CAP))


def _key(policy, trusted=None):
    """-> a JSON-able key: each source with its stat, or None when nothing to cache.
    Raises Unsafe for a candidate the loader must not read."""
    import stat as _stat

    entries = []
    explicit = trusted.config if trusted is not None else None
    sources = _sources(policy)
    _check_project_candidates(sources)
    for path in sources:
        try:
            fd = os.open(path, _OPEN_FLAGS)  # a FIFO or a device never blocks the open
        except FileNotFoundError:
            entries.append([path, None])
            continue
        try:
            st = os.fstat(fd)
            if not _stat.S_ISREG(st.st_mode):
                if explicit and os.path.abspath(explicit) == path:
                    raise Unsafe("--config %s is not a regular file" % (path,))
                entries.append([path, "not a regular file"])  # never read; the loader skips it
                continue
            if st.st_size > READ_CAP:
                raise Unsafe("config candidate %s is over %d bytes" % (path, READ_CAP))
            if st.st_size > _CONTENT_CAP:
                raise OSError("config file too large to cache")
            # The bytes too: two edits within one timestamp tick keep size and mtime.
            content = os.read(fd, _CONTENT_CAP + 1).decode("latin-1")
        finally:
            os.close(fd)
        entries.append([path, [st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev, st.st_ctime_ns, content]])
    if all(stat is None or isinstance(stat, str) for _path, stat in entries):
        return None  # no config file: defaults cost nothing to build
    env = trusted.environment() if trusted is not None else {}
    return [FORMAT, [env.get(name) or "" for name in _TRUST_VARS], entries]


def _cache_dir(trusted=None):
    return (trusted if trusted is not None else Trusted()).cache_dir()


def _cache_path(key, trusted=None):
    if key is None:
        return None
    directory = _cache_dir(trusted)
    if directory is None:
        return None
    # one file per (working directory, FAILSECURE_CONFIG): FNV-1a of the key's paths
    from failsecure.hookid import _digest

    name = "config-%s-%d.json" % (_digest(dumps([key[1], [p for p, _s in key[2]]])), os.getuid())
    return os.path.join(directory, name)


def _private(st, kind_dir):
    import stat as _stat

    if st.st_uid != os.getuid():
        return False
    if kind_dir:
        return _stat.S_ISDIR(st.st_mode) and (st.st_mode & 0o077) == 0
    return _stat.S_ISREG(st.st_mode) and (st.st_mode & 0o077) == 0


def _read(path, key):
    try:
        if not _private(os.stat(os.path.dirname(path)), True):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not _private(os.fstat(fd), False):
            return None
        data = os.read(fd, 1 << 20)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        record = loads(data)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("key") != key:
        return None
    config = record.get("config")
    return config if isinstance(config, dict) else None


def _write(path, key, config):
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        return
    if not _private(os.stat(directory), True):
        return
    data = (dumps({"key": key, "config": config}) + "\n").encode("utf-8")
    temp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, data)
        os.close(fd)
        fd = -1
        os.replace(temp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
