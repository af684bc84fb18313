"""End-to-end rig: the real Claude Code CLI bundled in the claude-agent-sdk wheel,
driven offline against a scripted Anthropic Messages API served on 127.0.0.1.

The scripted model answers the first turn with one Bash tool call that creates a
marker file, and every later turn with plain text. Whether the marker exists
afterwards tells whether the PreToolUse hook let the tool run; the tool_result
the CLI sends back on the second turn carries the deny reason the model saw.
No LLM, no network beyond loopback (proxies point at a closed loopback port).
"""

import os
import socket
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_messages_api  # noqa: E402

SECRET = "sk-tool-argument-secret-77"


class ScriptedModel:
    def __init__(self, marker):
        self.marker = marker
        self.secret = SECRET
        self.requests = []
        self.lock = threading.Lock()

    def tool_results(self):
        with self.lock:
            requests = list(self.requests)
        found = []
        for body in requests:
            for message in body.get("messages", []):
                content = message.get("content")
                if isinstance(content, list):
                    for block in content:
                        if isinstance(block, dict) and block.get("type") == "tool_result":
                            found.append(block)
        return found

    def answer(self, body):
        messages = body.get("messages", [])
        has_result = any(
            isinstance(m.get("content"), list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in m["content"])
            for m in messages
        )
        tools = [t.get("name") for t in body.get("tools", [])]
        if "Bash" in tools and not has_result:
            command = "touch %s && echo %s" % (self.marker, SECRET)
            return [{"type": "tool_use", "id": "toolu_e2e_1", "name": "Bash", "input": {"command": command, "description": "make marker"}}], "tool_use"
        return [{"type": "text", "text": "done"}], "end_turn"


@pytest.fixture
def scripted_api(tmp_path):
    model = ScriptedModel(str(tmp_path / "marker"))
    server, model.url = fake_messages_api.serve(model)
    yield model
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def claude_cli():
    import claude_agent_sdk

    path = os.path.join(os.path.dirname(claude_agent_sdk.__file__), "_bundled", "claude")
    if not os.access(path, os.X_OK):
        pytest.fail("the claude-agent-sdk wheel ships no bundled CLI at %s" % path)
    return path


def _closed_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def claude_home(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (tmp_path / "project").mkdir()
    return home


@pytest.fixture
def run_claude(tmp_path, scripted_api, claude_cli, claude_home):
    """run_claude() -> CompletedProcess of one `claude -p` turn with the user settings in HOME."""
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "%s"\n' % audit)
    dead = "http://127.0.0.1:%d" % _closed_port()

    def run():
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(claude_home),
            "ANTHROPIC_BASE_URL": scripted_api.url,
            "ANTHROPIC_API_KEY": "sk-ant-dummy-offline",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "HTTP_PROXY": dead,
            "HTTPS_PROXY": dead,
            "NO_PROXY": "127.0.0.1,localhost",
            # the runner reads no config variable from the hook's environment: the
            # config is on the launch line (`hook install` ran with FAILSECURE_CONFIG set)
        }
        env.update(run.extra_env)
        return subprocess.run(
            [claude_cli, "-p", "make the marker", "--allowedTools", "Bash", "--output-format", "json", "--model", "claude-sonnet-4-5"],
            cwd=str(tmp_path / "project"),
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
        )

    run.audit = audit
    run.config = config
    run.extra_env = {}
    run.project = tmp_path / "project"
    run.settings = claude_home / ".claude" / "settings.json"
    return run
