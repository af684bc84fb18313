"""Fixtures for the command-hook runner tests: run the runner the way a host does.

The runner is started with the launch line `failsecure hook install` writes
(absolute interpreter, -I -S) in a real subprocess, with the payload on stdin;
every test sees the exact stdout, stderr and exit code the host would see, and
the audit event the runner wrote.
"""

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from cmdhook_helpers import payload_for  # noqa: E402

from failsecure.runner import settings as settings# noqa: E402

class Run:
    def __init__(self, proc, audit_path):
        self.stdout = proc.stdout.decode()
        self.stderr = proc.stderr.decode()
        self.code = proc.returncode
        self.audit_path = audit_path

    @property
    def triple(self):
        return self.stdout, self.stderr, self.code

    @property
    def events(self):
        if not os.path.exists(self.audit_path):
            return []
        with open(self.audit_path) as fh:
            return [json.loads(line) for line in fh if line.strip()]

    @property
    def event(self):
        events = self.events
        assert len(events) == 1, events
        return events[0]


@pytest.fixture
def config_file(tmp_path):
    audit = tmp_path / "audit.jsonl"
    path = tmp_path / "failsecure.toml"
    path.write_text('[audit]\npath = "%s"\n' % audit)
    return path


@pytest.fixture
def run_hook(tmp_path, config_file, monkeypatch):
    """run_hook(protocol, argv, timeout=..., payload=..., config=...) -> Run."""
    monkeypatch.chdir(tmp_path)

    def run(protocol, argv, *, timeout=2, hook_id="guard", payload=None, config=None, extra_args=(), env=None):
        if config is not None:
            config_file.write_text(config)
        audit_path = str(tmp_path / "audit.jsonl")
        if os.path.exists(audit_path):
            os.unlink(audit_path)
        line = settings.launch_argv(sys.executable, settings.runner_path()) + ["run", "--protocol", protocol]
        if timeout is not None:
            line += ["--timeout", str(timeout)]
        if hook_id is not None:
            line += ["--hook-id", hook_id]
        # the trusted inputs come from the launch line (what `hook install` writes), never the environment
        line += ["--config", str(config_file), "--cache-home", str(tmp_path / "cache")]
        line += list(extra_args) + ["--"] + list(argv)
        full_env = {k: v for k, v in os.environ.items() if k not in ("FAILSECURE_CONFIG", "XDG_CACHE_HOME")}
        full_env.update(env or {})
        proc = subprocess.run(
            line,
            input=payload_for(protocol) if payload is None else payload,
            capture_output=True,
            env=full_env,
            timeout=30,
        )
        return Run(proc, audit_path)

    return run
