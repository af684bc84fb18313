"""Test rig for the hermes-agent adapter: a throwaway HERMES_HOME with real plugins, real
shell-hook scripts and a fake tool in the real registry, driven through the real
dispatch paths of the pinned release. No LLM, no network but 127.0.0.1.

Used in-process by conftest.py (loaded by path) and as a script for the scenarios that
need a fresh interpreter (hermes freezes yolo mode at import; drop-in activation):
``python hermes_rig.py SPEC.json`` prints one JSON line with the result.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import stat
import sys
import tempfile
import textwrap
from pathlib import Path

TOOL = "fs_probe"
TOOLSET = "fs_test"
_serial = itertools.count(1)


def isolate(home: str | None = None, *, clean_env: bool = True) -> str:
    """Point hermes at a throwaway home. Must run before anything of hermes is imported.
    ``clean_env`` drops the hermes mode variables (a scenario sets them on purpose)."""
    sys.dont_write_bytecode = True
    home = home or tempfile.mkdtemp(prefix="failsecure-hermes-")
    os.environ["HERMES_HOME"] = home
    if clean_env:
        for var in ("HERMES_YOLO_MODE", "HERMES_SAFE_MODE", "HERMES_ENABLE_PROJECT_PLUGINS", "HERMES_INTERACTIVE"):
            os.environ.pop(var, None)
    return home


class Rig:
    """One hermes setup: plugins, shell hooks, config.yaml, the failsecure config."""

    def __init__(self, home: str, work: Path):
        self.home = Path(home)
        self.work = Path(work)
        self.enabled: list[str] = []
        self.shell: list[dict] = []
        self.config: dict = {}
        self.audit_path = self.work / "audit.jsonl"
        self.ran: list[dict] = []
        self.reset()

    # ------------------------------------------------------------ setup

    def reset(self) -> None:
        shutil.rmtree(self.home / "plugins", ignore_errors=True)
        (self.home / "plugins").mkdir(parents=True, exist_ok=True)
        for name in ("config.yaml", "shell-hooks-allowlist.json"):
            (self.home / name).unlink(missing_ok=True)
        self.enabled, self.shell, self.config = [], [], {}
        self.ran.clear()
        self.failsecure()

    def failsecure(self, extra: str = "", *, timeout: float = 2) -> None:
        """Write the failsecure config (audit file always on) and reload it."""
        path = self.work / "failsecure.toml"
        path.write_text(f'timeout = {timeout}\n{textwrap.dedent(extra)}\n[audit]\npath = "{self.audit_path}"\n')
        os.environ["FAILSECURE_CONFIG"] = str(path)
        from failsecure import policy

        # the rig is trusted code: it chooses the trusted environment (a later os.environ
        # change alone is not read; in a fresh interpreter no conftest chooses it)
        policy.set_trusted_environment(dict(policy.trusted_environment(), FAILSECURE_CONFIG=str(path)))
        policy.reload()

    def plugin(self, stem: str, hook: str | None, *, enable: bool = True, module_prefix: str = "") -> str:
        """A user plugin whose ``pre_tool_call`` is ``def hook(**kw): <hook>``.
        Returns its failsecure hook id. ``hook=None`` registers nothing."""
        name = f"{stem}_{next(_serial)}"
        folder = self.home / "plugins" / name
        folder.mkdir(parents=True)
        (folder / "plugin.yaml").write_text(f"name: {name}\nversion: '1.0'\n")
        body = "def register(ctx):\n    pass\n"
        if hook is not None:
            body = (
                textwrap.dedent(module_prefix)
                + "\ndef hook(**kw):\n"
                + textwrap.indent(textwrap.dedent(hook).strip("\n"), "    ")
                + "\n\ndef register(ctx):\n    ctx.register_hook('pre_tool_call', hook)\n"
            )
        else:
            body = textwrap.dedent(module_prefix) + "\n" + body
        (folder / "__init__.py").write_text(body)
        if enable:
            self.enabled.append(name)
        return f"hermes-agent:{name}"

    def script(self, body: str, *, executable: bool = True) -> str:
        """A shell-hook script; returns its path."""
        path = self.work / f"hook_{next(_serial)}.sh"
        path.write_text("#!/bin/sh\n" + textwrap.dedent(body).strip("\n") + "\n")
        if executable:
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return str(path)

    def shell_hook(self, command: str, *, timeout: int = 5, matcher: str | None = None) -> str:
        entry = {"command": command, "timeout": timeout}
        if matcher:
            entry["matcher"] = matcher
        self.shell.append(entry)
        from failsecure.hookid import command_name

        return f"hermes-agent:shell:{command_name(command.strip())}"

    def load(self) -> None:
        """Write config.yaml and (re)load plugins and shell hooks the way hermes does."""
        import yaml

        config = {"plugins": {"enabled": list(self.enabled)}, "hooks_auto_accept": True}
        if self.shell:
            config["hooks"] = {"pre_tool_call": list(self.shell)}
        config.update(self.config)
        (self.home / "config.yaml").write_text(yaml.safe_dump(config))
        from hermes_cli.plugins import discover_plugins

        discover_plugins(force=True)
        from agent import shell_hooks
        from hermes_cli.config import load_config

        shell_hooks.reset_for_tests()
        shell_hooks.register_from_config(load_config(), accept_hooks=True)

    # ------------------------------------------------------------ the tool

    def register_tool(self) -> None:
        from tools.registry import registry

        ran = self.ran

        def handler(args, **kwargs):
            ran.append(dict(args) if isinstance(args, dict) else {})
            return json.dumps({"ok": True})

        schema = {"name": TOOL, "description": "failsecure probe", "parameters": {"type": "object", "properties": {}}}
        registry.register(name=TOOL, toolset=TOOLSET, schema=schema, handler=handler)

    def call(self, args: dict | None = None, call_id: str = "call-1") -> dict:
        """One tool call through ``model_tools.handle_function_call``."""
        import model_tools

        self.ran.clear()
        raw = model_tools.handle_function_call(TOOL, dict(args or {"path": "/etc/secret-payload"}), task_id="task-1", tool_call_id=call_id, session_id="session-1")
        return {"result": json.loads(raw), "ran": bool(self.ran)}

    @property
    def audit_path(self):
        return self._audit_path

    @audit_path.setter
    def audit_path(self, value):
        from failsecure.testing import AuditFile

        self._audit_path = AuditFile(value)  # reading it waits for what was emitted before

    def events(self) -> list[dict]:
        if not self.audit_path.exists():
            return []
        return [json.loads(line) for line in self.audit_path.read_text().splitlines() if line.strip()]

    def last(self) -> dict:
        events = self.events()
        assert events, "no audit event was written"
        return events[-1]


# ---------------------------------------------------------------- a full agent run

WRAPPER = "fs_smuggle"  # a wrapper tool: runs the probe tool through the registry itself


def register_wrapper() -> None:
    """A third-party style wrapper tool whose handler runs the probe tool through
    ``registry.dispatch`` itself: hermes' ``pre_tool_call`` judges the wrapper only."""
    from tools.registry import registry

    def handler(args, **kwargs):
        return registry.dispatch(TOOL, dict(args) if isinstance(args, dict) else {})

    schema = {"name": WRAPPER, "description": "runs the probe", "parameters": {"type": "object", "properties": {}}}
    registry.register(name=WRAPPER, toolset=TOOLSET, schema=schema, handler=handler)


def scripted_model(tool: str, arguments: dict):
    """An OpenAI-compatible chat-completions server on 127.0.0.1: its first answer calls
    ``tool`` with ``arguments``, every later one says done. -> (base url, stop())."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    calls: list = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(404)
            self.end_headers()

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self.send_response(404)
                self.end_headers()
                return
            calls.append(body)
            if len(calls) == 1:
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"index": 0, "id": "call-run", "type": "function",
                     "function": {"name": tool, "arguments": json.dumps(arguments)}}]}
                finish = "tool_calls"
            else:
                message, finish = {"role": "assistant", "content": "done"}, "stop"
            if body.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for choice in ({"index": 0, "delta": message, "finish_reason": None}, {"index": 0, "delta": {}, "finish_reason": finish}):
                    chunk = {"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "scripted", "choices": [choice]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                return
            for call in message.get("tool_calls") or []:
                call.pop("index", None)
            out = json.dumps({"id": "s", "object": "chat.completion", "created": 0, "model": "scripted",
                              "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}/v1", stop


def agent_run(tool: str, arguments: dict) -> list:
    """One real ``AIAgent.run_conversation`` whose model calls ``tool(**arguments)`` once;
    -> the tool results the model was sent."""
    import run_agent

    url, stop = scripted_model(tool, arguments)
    try:
        agent = run_agent.AIAgent(base_url=url, api_key="x", provider="custom", model="scripted", quiet_mode=True,
                                  skip_memory=True, skip_context_files=True, enabled_toolsets=[TOOLSET], max_iterations=4)
        result = agent.run_conversation("probe the file, please")
    finally:
        stop()
    return [m.get("content") for m in result["messages"] if m.get("role") == "tool"]


# ---------------------------------------------------------------- shared by the tests


def fail_closed(hook_id: str, category: str) -> str:
    from failsecure.failures import failure_reason

    return failure_reason(hook_id, category)


def has_approve() -> bool:
    """0.18.1+: the approve directive and resolve_pre_tool_block."""
    import hermes_cli.plugins as plugins

    return callable(getattr(plugins, "resolve_pre_tool_block", None))


def has_safe_mode() -> bool:
    import hermes_cli.plugins as plugins

    return "HERMES_SAFE_MODE" in Path(plugins.__file__).read_text()


# ---------------------------------------------------------------- script mode


def run_spec(spec: dict) -> dict:
    """Build a rig from a JSON spec in a fresh interpreter and make one call."""
    home = isolate(spec.get("home"), clean_env=False)
    work = Path(spec["work"])
    if spec.get("install", True):
        import failsecure

        failsecure.install()
    rig = Rig(home, work)
    if spec.get("failsecure") or spec.get("timeout"):
        rig.failsecure(spec.get("failsecure", ""), timeout=spec.get("timeout", 2))
    rig.enabled.extend(spec.get("enable", []))
    for p in spec.get("plugins", []):
        rig.plugin(p["stem"], p.get("hook"), enable=p.get("enable", True))
    for command in spec.get("shell", []):
        rig.shell_hook(command)
    if spec.get("break"):  # simulate an unknown release: the patch targets are gone
        import hermes_cli.plugins as plugins

        for attr in spec["break"]:
            if hasattr(plugins, attr):
                delattr(plugins, attr)
    if spec.get("install_after_break"):
        import failsecure

        failsecure.install()
    import model_tools  # noqa: F401  (discovers plugins, like hermes does)

    rig.register_tool()
    rig.load()
    out = rig.call()
    from failsecure import activation

    out["state"] = activation.get("hermes-agent").state
    out["events"] = rig.events()
    return out


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        result = run_spec(json.load(fh))
    sys.stdout.write("FAILSECURE-RESULT " + json.dumps(result) + "\n")
