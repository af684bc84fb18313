"""What the Codex CLI tests share beside their fixtures (conftest.py puts this folder on sys.path)."""

import json
import subprocess
import sys
import threading

PINNED = "codex-cli 0.169.0"


def hook_states(run_codex):
    """{key: hooks/list entry} of the hooks the real Codex sees, for the hooks file: the
    rig's own app-server client (JSON lines over stdio), independent of failsecure's."""
    messages = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "rig", "version": "1"}}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(run_codex.project)]}},
    ]
    proc = subprocess.Popen([run_codex.cli, "app-server"], cwd=str(run_codex.project), env=run_codex.env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        timer = threading.Timer(60, proc.kill)
        timer.start()
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("id") == 2:
                break
        timer.cancel()
    finally:
        proc.kill()
        proc.wait()
    hooks = [hook for entry in message["result"]["data"] for hook in entry["hooks"]]
    return {h["key"]: h for h in hooks if h.get("sourcePath") == str(run_codex.hooks)}


def trust_hooks(run_codex):
    """Trust every hook of the hooks file as it is now, the way Codex's /hooks review does."""
    import re

    text = run_codex.config.read_text()
    for key, hook in sorted(hook_states(run_codex).items()):
        header = '[hooks.state."%s"]\n' % key
        entry = header + 'trusted_hash = "%s"\n' % hook["currentHash"]
        if header in text:
            text = re.sub(re.escape(header) + r'trusted_hash = "[^"]*"\n', lambda _m: entry, text)
        else:
            text += "\n" + entry
    run_codex.config.write_text(text)
