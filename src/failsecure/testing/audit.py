"""Test support for adapters and dispatcher checks: a throwaway trusted config with a
short deadline and an audit file, and readers of what was audited.

    rig = AuditRig(tmp_path, monkeypatch, deadline=0.3)
    rig.config('[hooks."fw:slow"]\\ntimeout = 1\\n')
    ...
    assert rig.last()["failure"] == "timeout"
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Optional

#: seconds a reader of the audit file waits for the events emitted before to be written
FLUSH = 10.0


class AuditFile(type(pathlib.Path())):  # type: ignore[misc]
    """The audit file's path: reading it (``read_text``, ``read_bytes``, ``open``,
    ``exists``, ``stat``) first waits until every event emitted before was written
    (``failsecure.audit.flush``: the file is written off the tool call's thread)."""

    def _flushed(self) -> "AuditFile":
        from failsecure import audit

        audit.flush(FLUSH)
        return self

    def read_text(self, *args: Any, **kwargs: Any) -> str:
        return super(AuditFile, self._flushed()).read_text(*args, **kwargs)

    def read_bytes(self) -> bytes:
        return super(AuditFile, self._flushed()).read_bytes()

    def open(self, *args: Any, **kwargs: Any) -> Any:
        return super(AuditFile, self._flushed()).open(*args, **kwargs)

    def exists(self, *args: Any, **kwargs: Any) -> bool:
        return super(AuditFile, self._flushed()).exists(*args, **kwargs)

    def stat(self, *args: Any, **kwargs: Any) -> Any:
        return super(AuditFile, self._flushed()).stat(*args, **kwargs)


class AuditRig:
    """``dir``: the test's directory; ``audit_path``: the JSON-lines audit file there (an
    ``AuditFile``: reading it waits for what was emitted before); ``config_file``: the
    name of the trusted config written there."""

    config_file = "failsecure.toml"

    def __init__(self, path: Any, monkeypatch: Any, deadline: float = 0.3):
        self.dir = path
        self.audit_path = path / "audit.jsonl"
        self.deadline = deadline
        self._monkeypatch = monkeypatch

    @property
    def audit_path(self) -> AuditFile:
        return self._audit_path

    @audit_path.setter
    def audit_path(self, value: Any) -> None:
        self._audit_path = AuditFile(value)

    def config(self, tables: str = "", timeout: Optional[float] = None, top: str = "") -> None:
        """Write and load a trusted config (``$FAILSECURE_CONFIG``, chosen in-process as
        the trusted environment until the monkeypatch is undone): the deadline, the
        audit file, ``top`` (top-level keys) and ``tables`` (``[hooks."..."]`` ...)."""
        from failsecure import policy

        path = self.dir / self.config_file
        timeout = self.deadline if timeout is None else timeout
        path.write_text(f'timeout = {timeout}\n{top}\n[audit]\npath = "{self.audit_path}"\n{tables}\n')
        # trusted: chosen in-process (the trust model reads the environment the process
        # started with, not later os.environ changes), undone with the monkeypatch; and in
        # os.environ for the processes the test starts
        self._monkeypatch.setenv("FAILSECURE_CONFIG", str(path))
        if policy.trusted_environment().get("FAILSECURE_CONFIG") != str(path):
            chosen = dict(policy.trusted_environment(), FAILSECURE_CONFIG=str(path))
            self._monkeypatch.setattr(policy, "_chosen", chosen)
        loaded = policy.reload()
        assert loaded.error is None, loaded.error

    def events(self) -> list:
        """The events in the audit file, once every event emitted before was written
        (``failsecure.audit.flush``: the file is written off the tool call's thread)."""
        if not self.audit_path.exists():  # waits for the events emitted before
            return []
        return [json.loads(line) for line in self.audit_path.read_text().splitlines() if line.strip()]

    def last(self) -> dict:
        events = self.events()
        assert events, "no audit event was written"
        return events[-1]

    def outcome_of(self, hook_suffix: str, event: Optional[dict] = None) -> dict:
        """The audited outcome of the one hook whose id ends with ``hook_suffix``."""
        event = event or self.last()
        found = [o for o in event["outcomes"] if o["hook"].endswith(hook_suffix)]
        assert len(found) == 1, event["outcomes"]
        return found[0]
