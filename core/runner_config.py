"""The runner's config, cached between calls.

Every tool call starts a new runner process; parsing an unchanged TOML config each
time costs the ``tomllib`` import (~25 ms on the reference machine), most of what a
config file adds. So the runner keeps what ``failsecure.policy.load_light()`` made of the
config as JSON (read with ``failsecure._fastjson``, which the runner imports anyway),
keyed by the stat (path, size, mtime, inode, ctime) and the bytes of every file the
policy read (reading a small file costs microseconds; importing tomllib milliseconds).

- Stored per user: ``$XDG_CACHE_HOME/failsecure`` (default ``~/.cache/failsecure``),
  directory 0700 owned by the user, file 0600, written atomically (temp + rename).
  A directory or file with other owners or looser modes is never read.
- A changed, added or removed config file changes the key: the next call loads and
  validates it (an invalid config denies at once, as without the cache).
- Anything unexpected (no HOME, a read-only disk, a damaged cache) falls back to
  loading the config directly: the cache can cost a call time, never its decision.

Which files decide the config: ``policy.sources()`` (a list of paths) when the policy
offers it, else every candidate of the trust model (the system and user files,
``$FAILSECURE_CONFIG``, the trust store, the project file found from the working
directory upward), whose absence is part of the key too.
"""

import os

from failsecure._fastjson import dumps, loads

FORMAT = 1
_CONTENT_CAP = 256 * 1024  # a larger config file is loaded directly, never cached
_POLICY_FIELDS = ("on_error", "timeout", "role")


def load():
    """-> the policy's Config for this call (from the cache when nothing changed)."""
    from failsecure import policy

    try:
        key = _key(policy)
        path = _cache_path(key)
    except Exception:
        return policy.load_light()
    if path is not None:
        cached = _read(path, key)
        if cached is not None:
            try:
                return _config_from(policy, cached)
            except Exception:
                pass
    config = policy.load_light()
    if path is not None and key is not None:
        try:
            _write(path, key, _config_to(config))
        except Exception:
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
        if user_dir is not None:
            candidates.append(os.path.join(user_dir(), "config.toml"))
        candidates += list(policy.trusted_paths())
        if hasattr(policy, "trust_store"):
            candidates.append(policy.trust_store())
        candidates.append(policy.project_path()[0])
        candidates.append(os.path.abspath("failsecure.toml"))
        candidates.append(os.path.abspath("pyproject.toml"))
    else:
        env = os.environ.get("FAILSECURE_CONFIG")
        candidates = [env] if env else [os.path.abspath("failsecure.toml"), os.path.abspath("pyproject.toml")]
        candidates.append(policy.find()[0])
    for path in candidates:
        if path and os.path.abspath(path) not in paths:
            paths.append(os.path.abspath(path))
    return paths


def _key(policy):
    """-> a JSON-able key: each source with its stat, or None when nothing to cache."""
    entries = []
    for path in _sources(policy):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            entries.append([path, None])
            continue
        try:
            st = os.fstat(fd)
            if st.st_size > _CONTENT_CAP:
                raise OSError("config file too large to cache")
            # The bytes too: two edits within one timestamp tick keep size and mtime.
            content = os.read(fd, _CONTENT_CAP + 1).decode("latin-1")
        finally:
            os.close(fd)
        entries.append([path, [st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev, st.st_ctime_ns, content]])
    if all(stat is None for _path, stat in entries):
        return None  # no config file: defaults cost nothing to build
    return [FORMAT, os.environ.get("FAILSECURE_CONFIG") or "", entries]


def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):
        home = os.environ.get("HOME")
        if not home or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "failsecure")


def _cache_path(key):
    if key is None:
        return None
    directory = _cache_dir()
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


def _config_to(config):
    """Config -> plain JSON (the fields the runner reads; an error is kept as an error)."""
    hooks = {}
    for hook_id, own in (getattr(config, "hooks", None) or {}).items():
        hooks[hook_id] = {name: getattr(own, name, None) for name in _POLICY_FIELDS}
    return {
        "on_error": config.on_error,
        "timeout": config.timeout,
        "required": list(config.required),
        "audit_path": config.audit_path,
        "hooks": hooks,
        "error": config.error,
        "source": config.source,
    }


def _config_from(policy, data):
    hooks = {}
    for hook_id, own in data["hooks"].items():
        hooks[hook_id] = policy.HookPolicy(own["on_error"], own["timeout"], own["role"])
    return policy.Config(
        on_error=data["on_error"],
        timeout=data["timeout"],
        required=tuple(data["required"]),
        audit_path=data["audit_path"],
        hooks=hooks,
        error=data["error"],
        source=data["source"],
    )
