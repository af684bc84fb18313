"""End-to-end rig: the real Gemini CLI (npm @google/gemini-cli 0.61.0), driven offline
against a scripted Gemini API served on 127.0.0.1.

The CLI comes from the CI cache prefix (`.ci/run` installs it there once per run:
`tools/host_cli.sh gemini`, which the tox env runs) or from $FAILSECURE_GEMINI_BIN. The
scripted model answers the first turn with one `run_shell_command` call that creates
a marker file and every later turn with "done"; whether the marker exists afterwards
tells whether the BeforeTool hook let the tool run. API-key auth (a dummy key), the
base URL and the HTTP(S) proxies all point at the fake, which records anything that
tries to leave the machine. `--yolo` approves every tool call, so the hook is the only
gate; the project folder is trusted the way a user trusts it (trustedFolders.json).
"""

import json
import os
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_gemini_api  # noqa: E402
from gemini_rig import PINNED  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SECRET = "sk-tool-argument-secret-61"


class ScriptedModel:
    def __init__(self, marker):
        self.marker = marker
        self.secret = SECRET
        self.requests = []
        self.outside = []
        self.lock = threading.Lock()

    def function_responses(self):
        with self.lock:
            requests = list(self.requests)
        found = []
        for body in requests:
            for content in body.get("contents", []):
                for part in content.get("parts", []):
                    if isinstance(part, dict) and "functionResponse" in part:
                        found.append(part["functionResponse"])
        return found

    def answer(self, body):
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                if isinstance(part, dict) and "functionResponse" in part:
                    return [{"text": "done"}]
        command = "touch %s && echo %s" % (self.marker, SECRET)
        return [{"functionCall": {"name": "run_shell_command", "args": {"command": command}}}]


@pytest.fixture(scope="session")
def gemini_cli():
    path = os.environ.get("FAILSECURE_GEMINI_BIN") or os.path.join(REPO, ".ci-cache", "gemini", "node_modules", ".bin", "gemini")
    if not os.access(path, os.X_OK):
        # its tox env installs it (a missing CLI there is a failure); elsewhere the suite skips it
        missing = pytest.fail if os.environ.get("TOX_ENV_NAME") == "gemini-cli" else pytest.skip
        missing("no Gemini CLI at %s (%s): run `tools/host_cli.sh gemini`" % (path, PINNED))
    return path


@pytest.fixture
def scripted_api(tmp_path):
    model = ScriptedModel(str(tmp_path / "marker"))
    server, model.url = fake_gemini_api.serve(model)
    yield model
    server.shutdown()
    server.server_close()
    assert model.outside == [], "the CLI tried to leave the machine"


@pytest.fixture
def gemini_env(tmp_path, scripted_api):
    """The user's environment: a fresh HOME, the user's failsecure config (with an audit
    file) in XDG_CONFIG_HOME, the project folder trusted."""
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    project = tmp_path / "project"
    project.mkdir()
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    xdg = tmp_path / "xdg"
    (xdg / "failsecure").mkdir(parents=True)
    audit = tmp_path / "audit.jsonl"
    (xdg / "failsecure" / "config.toml").write_text('[audit]\npath = "%s"\n' % audit)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(xdg),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "GEMINI_API_KEY": "dummy-offline-key",
        "GOOGLE_GEMINI_BASE_URL": scripted_api.url,
        "HTTPS_PROXY": scripted_api.url,
        "HTTP_PROXY": scripted_api.url,
        "NO_PROXY": "127.0.0.1,localhost",
        "LANG": "C.UTF-8",
    }
    return {"env": env, "home": home, "project": project, "audit": audit, "settings": home / ".gemini" / "settings.json"}


@pytest.fixture
def run_gemini(gemini_cli, gemini_env):
    """run_gemini() -> CompletedProcess of one headless `gemini -p` turn."""

    def run(timeout=120):
        return subprocess.run(
            [gemini_cli, "-p", "make the marker", "--yolo", "--output-format", "stream-json"],
            cwd=str(gemini_env["project"]),
            env=gemini_env["env"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )

    run.audit = gemini_env["audit"]
    run.settings = gemini_env["settings"]
    run.project = gemini_env["project"]
    run.env = gemini_env["env"]
    return run
