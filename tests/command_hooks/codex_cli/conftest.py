"""End-to-end rig: the real Codex CLI (npm @openai/codex 0.169.0, its native binary from
@openai/codex-linux-x64), driven offline against a scripted Responses API on 127.0.0.1.

The CLI comes from the CI cache prefix (`.ci/run` installs it there once per run) or
from $FAILSECURE_CODEX_BIN. A custom model provider in $CODEX_HOME/config.toml points
at the fake; the scripted model answers the first turn with one `exec_command` call
that creates a marker file and "done" once the call's output comes back. The HTTP(S)
proxies point at the fake too, which records anything that tries to leave the machine.
`approval_policy = "never"` with no sandbox: the PreToolUse hook is the only gate.

Codex runs a hook only when the user trusted its current hash; the rig trusts the
user's original hooks the way the /hooks review does (`trust_hooks`), asking the real
binary for the hashes.
"""

import glob
import json
import os
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_responses_api  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SECRET = "sk-tool-argument-secret-169"

CONFIG = """model = "gpt-5.1-codex"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[features]
plugins = false
apps = false

[analytics]
enabled = false

[model_providers.scripted]
name = "scripted Responses API"
base_url = "%s/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
"""


class ScriptedModel:
    def __init__(self, marker):
        self.marker = marker
        self.secret = SECRET
        self.requests = []
        self.outside = []
        self.lock = threading.Lock()

    def call_outputs(self):
        with self.lock:
            requests = list(self.requests)
        return [item for body in requests for item in body.get("input", []) if isinstance(item, dict) and item.get("type") == "function_call_output"]

    def answer(self, body):
        if any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in body.get("input", [])):
            return [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": "done", "annotations": []}]}]
        tools = [t.get("name") for t in body.get("tools", [])]
        command = "touch %s && echo %s" % (self.marker, SECRET)
        if "exec_command" in tools:
            name, args = "exec_command", {"cmd": command}
        elif "shell_command" in tools:
            name, args = "shell_command", {"command": command}
        else:
            name, args = "shell", {"command": ["bash", "-lc", command]}
        return [{"type": "function_call", "id": "fc_1", "call_id": "call_e2e_1", "name": name, "arguments": json.dumps(args), "status": "completed"}]


@pytest.fixture(scope="session")
def codex_cli():
    path = os.environ.get("FAILSECURE_CODEX_BIN")
    if not path:
        native = glob.glob(os.path.join(REPO, ".ci-cache", "codex", "node_modules", "@openai", "codex-linux-*", "vendor", "*", "bin", "codex"))
        path = native[0] if native else os.path.join(REPO, ".ci-cache", "codex", "node_modules", ".bin", "codex")
    if not os.access(path, os.X_OK):
        # its tox env installs it (a missing CLI there is a failure); elsewhere the suite skips it
        missing = pytest.fail if os.environ.get("TOX_ENV_NAME") == "codex-cli" else pytest.skip
        missing("no Codex CLI at %s: run `tools/host_cli.sh codex`" % path)
    return path


@pytest.fixture
def scripted_api(tmp_path):
    model = ScriptedModel(str(tmp_path / "marker"))
    server, model.url = fake_responses_api.serve(model)
    yield model
    server.shutdown()
    server.server_close()
    assert model.outside == [], "the CLI tried to leave the machine"


@pytest.fixture
def run_codex(tmp_path, scripted_api, codex_cli):
    """run_codex() -> CompletedProcess of one `codex exec` turn, hooks in $CODEX_HOME/hooks.json."""
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    project = tmp_path / "project"
    project.mkdir()
    (codex_home / "config.toml").write_text(CONFIG % scripted_api.url)
    xdg = tmp_path / "xdg"
    (xdg / "failsecure").mkdir(parents=True)
    audit = tmp_path / "audit.jsonl"
    (xdg / "failsecure" / "config.toml").write_text('[audit]\npath = "%s"\n' % audit)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "XDG_CONFIG_HOME": str(xdg),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "SHELL": "/bin/bash",
        "SCRIPTED_API_KEY": "dummy-offline-key",
        "HTTPS_PROXY": scripted_api.url,
        "HTTP_PROXY": scripted_api.url,
        "ALL_PROXY": scripted_api.url,
        "NO_PROXY": "127.0.0.1,localhost",
        "LANG": "C.UTF-8",
    }

    def run(timeout=120):
        return subprocess.run(
            [codex_cli, "exec", "--skip-git-repo-check", "--color", "never", "make the marker"],
            cwd=str(project), env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
        )

    run.audit = audit
    run.hooks = codex_home / "hooks.json"
    run.config = codex_home / "config.toml"
    run.project = project
    run.env = env
    run.cli = codex_cli
    return run

