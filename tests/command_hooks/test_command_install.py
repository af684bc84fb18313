"""`failsecure hook install` / `hook uninstall`: rewrite host settings files.

What is checked: only gating (PreToolUse / BeforeTool) command hooks are
wrapped, everything else in the file is preserved, install is idempotent,
uninstall restores the original bytes, host timeouts end above the runner's
(Gemini and Pool in milliseconds), and the installed command itself denies when
the hook fails, when the runner is missing and when the runner crashes, each
with an allow twin, run through the host's shell exactly as the host would.
"""

import json
import os
import subprocess
import sys

import pytest
from cmdhook_helpers import expected_deny, hook_id, payload_for, wrap

from failsecure.runner import settings as settings
from failsecure.failures import failure_reason

CLAUDE_SETTINGS = {
    "model": "sonnet",
    "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
    "env": {"NAME": "caf\u00e9"},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "HOOK", "timeout": 5}]},
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "HOOK"}, {"type": "prompt", "prompt": "check"}]},
        ],
        "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "logger posted"}]}],
    },
}

GEMINI_SETTINGS = {
    "general": {"vimMode": True},
    "hooks": {
        "BeforeTool": [
            {"matcher": "run_shell_command", "sequential": True, "hooks": [{"type": "command", "name": "guard", "command": "HOOK", "timeout": 5000}]},
            {"matcher": "write_file", "hooks": [{"type": "command", "command": "HOOK"}]},
        ],
        "AfterTool": [{"hooks": [{"type": "command", "command": "logger after"}]}],
    },
}

CODEX_HOOKS = {
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "HOOK", "timeout": 5, "statusMessage": "checking"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "logger stop", "timeout": 30}]}],
    }
}

POOL_SETTINGS = {
    "hooks": {
        "PreToolUse": [{"command": "HOOK", "timeout_ms": 500, "failure_policy": "deny"}],
        "PostToolUse": [{"command": "logger post"}],
    }
}

KIRO_AGENT = {
    "name": "crew",
    "hooks": {
        "preToolUse": [{"matcher": "execute_bash", "command": "HOOK", "timeout_ms": 5000}],
        "agentSpawn": [{"command": "logger spawn"}],
    },
}

HOSTS = {
    # host: (document, [(path to the gating handlers)], timeout key, unit)
    "claude": (CLAUDE_SETTINGS, "timeout", 1),
    "gemini": (GEMINI_SETTINGS, "timeout", 1000),
    "codex": (CODEX_HOOKS, "timeout", 1),
    "pool": (POOL_SETTINGS, "timeout_ms", 1000),
    "kiro": (KIRO_AGENT, "timeout_ms", 1000),
}

PROTOCOL = {"claude": "claude", "gemini": "gemini", "codex": "codex", "pool": "claude", "kiro": "kiro"}


def gating_handlers(host, document):
    hooks = document["hooks"]
    if host == "claude" or host == "codex":
        return [h for group in hooks["PreToolUse"] for h in group["hooks"] if h.get("type") == "command"]
    if host == "gemini":
        return [h for group in hooks["BeforeTool"] for h in group["hooks"]]
    if host == "pool":
        return hooks["PreToolUse"]
    return hooks["preToolUse"]


def write_settings(tmp_path, host, hook_command, indent=2, name="settings.json"):
    document = json.loads(json.dumps(HOSTS[host][0]).replace('"HOOK"', json.dumps(hook_command)))
    path = tmp_path / name
    text = json.dumps(document, indent=indent, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return path, text


def make_hook(tmp_path, body, name="guard.sh"):
    hook = tmp_path / name
    hook.write_text("#!/bin/sh\ncat >/dev/null\n" + body + "\n")
    hook.chmod(0o755)
    return str(hook)


def run_installed(handler, protocol, shell="/bin/sh", event=None):
    """Run one installed handler exactly as its host does (shell form through a shell)."""
    payload = payload_for(protocol, event=event)
    if isinstance(handler.get("args"), list):
        argv = [handler["command"]] + handler["args"]
    else:
        argv = [shell, "-c", handler["command"]]
    proc = subprocess.run(argv, input=payload, capture_output=True, timeout=30)
    return proc.stdout.decode(), proc.stderr.decode(), proc.returncode


def deny_for(host, reason):
    protocol = PROTOCOL[host]
    return expected_deny(protocol, reason, "BeforeTool" if protocol == "gemini" else "PreToolUse")


# ---------------------------------------------------------------- rewrite, idempotence, exact restore


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("indent", [2, 4, "\t"])
def test_install_wraps_only_gating_hooks_and_uninstall_restores_bytes(tmp_path, host, indent):
    path, original = write_settings(tmp_path, host, "$HOME/bin/guard.sh --strict", indent=indent)
    wrapped = wrap(str(path), host, on_failure="block")
    handlers = gating_handlers(host, json.loads(path.read_text()))
    assert wrapped == [hook_id("$HOME/bin/guard.sh --strict")] * len(handlers)
    for handler in handlers:
        assert " run --protocol %s " % PROTOCOL[host] in handler["command"]
        assert sys.executable in handler["command"] and " -I -S " in handler["command"]
    after = json.loads(path.read_text())
    before = json.loads(original)
    # everything but the gating handlers is untouched
    for key in before:
        if key != "hooks":
            assert after[key] == before[key]
    for event in before["hooks"]:
        if event.lower() not in ("pretooluse", "beforetool"):
            assert after["hooks"][event] == before["hooks"][event]
    # idempotent: the second install changes nothing, not even a byte
    once = path.read_bytes()
    assert wrap(str(path), host, on_failure="block") == []
    assert path.read_bytes() == once
    # exact restore
    assert settings.unwrap_settings(str(path)) == len(handlers)
    assert path.read_text(encoding="utf-8") == original
    assert settings.unwrap_settings(str(path)) == 0
    assert path.read_text(encoding="utf-8") == original
    assert sorted(os.listdir(tmp_path)) == ["settings.json"]  # no temp file left behind


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_host_timeout_is_above_the_runner_timeout(tmp_path, host):
    path, _ = write_settings(tmp_path, host, "guard")
    wrap(str(path), host, on_failure="omit")
    _doc, key, unit = HOSTS[host]
    original = gating_handlers(host, json.loads(json.dumps(HOSTS[host][0])))
    for before, handler in zip(original, gating_handlers(host, json.loads(path.read_text())), strict=True):
        runner_timeout = float(handler["command"].split(" --timeout ")[1].split(" ")[0])
        if key in before:
            assert runner_timeout == before[key] / unit  # the user's budget goes to the runner
        else:
            assert runner_timeout == settings.DEFAULT_RUNNER_TIMEOUT
        assert handler[key] == (runner_timeout + settings.HEADROOM) * unit
        assert isinstance(handler[key], int)


def test_gemini_timeouts_are_milliseconds(tmp_path):
    path, _ = write_settings(tmp_path, "gemini", "guard")
    wrap(str(path), "gemini")
    first = json.loads(path.read_text())["hooks"]["BeforeTool"][0]["hooks"][0]
    assert " --timeout 5 " in first["command"] and first["timeout"] == 10000


def test_claude_on_failure_block_only_when_asked_or_supported(tmp_path):
    path, original = write_settings(tmp_path, "claude", "guard")
    wrap(str(path), "claude", on_failure="block")
    assert all(h["onFailure"] == "block" for h in gating_handlers("claude", json.loads(path.read_text())))
    settings.unwrap_settings(str(path))
    assert path.read_text() == original
    wrap(str(path), "claude", on_failure="omit")
    assert all("onFailure" not in h for h in gating_handlers("claude", json.loads(path.read_text())))


def test_claude_auto_without_a_cli_omits_on_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("FAILSECURE_CLAUDE_BIN", raising=False)
    path, _ = write_settings(tmp_path, "claude", "guard")
    wrap(str(path), "claude")
    assert all("onFailure" not in h for h in gating_handlers("claude", json.loads(path.read_text())))


def test_existing_on_failure_is_restored(tmp_path):
    path = tmp_path / "settings.json"
    original = json.dumps(
        {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "g", "onFailure": "continue", "timeout": 3}]}]}},
        indent=2,
    )
    path.write_text(original)
    wrap(str(path), "claude", on_failure="block")
    handler = json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert handler["onFailure"] == "block" and handler["timeout"] == 8
    settings.unwrap_settings(str(path))
    assert path.read_text() == original


def test_claude_exec_form_is_wrapped_without_a_shell(tmp_path):
    hook = make_hook(tmp_path, 'test "$1" = ok || exit 1')
    path = tmp_path / "settings.json"
    original = json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook, "args": ["ok"]}]}]}}, indent=2)
    path.write_text(original)
    wrap(str(path), "claude", on_failure="omit")
    handler = json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert handler["command"] == sys.executable and handler["onFailure"] == "block"
    assert handler["args"][-2:] == [hook, "ok"]
    assert run_installed(handler, "claude") == ("", "", 0)
    handler["args"][-1] = "not-ok"
    assert run_installed(handler, "claude") == expected_deny("claude", failure_reason(hook_id([hook, "ok"]), "crashed"))
    settings.unwrap_settings(str(path))
    assert path.read_text() == original


def test_compact_file_stays_compact(tmp_path):
    path = tmp_path / "hooks.json"
    original = '{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"g"}]}]}}'
    path.write_text(original)
    wrap(str(path), "codex")
    assert "\n" not in path.read_text()
    settings.unwrap_settings(str(path))
    assert path.read_text() == original


def test_nothing_to_wrap_leaves_the_file_alone(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"model": "x"}\n')
    before = os.stat(path).st_mtime_ns
    assert wrap(str(path), "claude") == []
    assert os.stat(path).st_mtime_ns == before


def test_file_mode_is_kept(tmp_path):
    path, _ = write_settings(tmp_path, "claude", "guard")
    path.chmod(0o640)
    wrap(str(path), "claude", on_failure="omit")
    assert (os.stat(path).st_mode & 0o777) == 0o640


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "content,message",
    [
        ("{ not json", "not valid JSON"),
        ("[1, 2]", "top level is not a JSON object"),
        ("hooks:\n  PreToolUse: []\n", "not valid JSON"),
    ],
)
def test_refuses_a_file_it_cannot_parse_and_leaves_it_untouched(tmp_path, content, message):
    path = tmp_path / "settings.json"
    path.write_text(content)
    with pytest.raises(settings.InstallError, match=message):
        wrap(str(path), "claude")
    assert path.read_text() == content
    assert os.listdir(tmp_path) == ["settings.json"]


def test_refuses_an_unknown_host_and_a_missing_file(tmp_path):
    path, original = write_settings(tmp_path, "claude", "guard")
    with pytest.raises(settings.InstallError, match="unknown host 'cursor'"):
        wrap(str(path), "cursor")
    assert path.read_text() == original
    with pytest.raises(settings.InstallError, match="no such file"):
        wrap(str(tmp_path / "absent.json"), "claude")


def test_refuses_a_relative_interpreter(tmp_path):
    path, original = write_settings(tmp_path, "claude", "guard")
    with pytest.raises(settings.InstallError, match="absolute"):
        wrap(str(path), "claude", python="python3")
    assert path.read_text() == original


def test_cli_install_and_uninstall(tmp_path):
    path, original = write_settings(tmp_path, "gemini", "guard")
    cli = [sys.executable, "-m", "failsecure", "hook"]
    proc = subprocess.run(cli + ["install", "--host", "gemini", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "wrapped 2 hook(s)" in proc.stdout
    proc = subprocess.run(cli + ["uninstall", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "restored 2 hook(s)" in proc.stdout
    assert path.read_text() == original
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    proc = subprocess.run(cli + ["install", "--host", "gemini", str(bad)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.startswith("failsecure: error: ") and "not valid JSON" in proc.stderr
    proc = subprocess.run(cli + ["install", "--host", "nope", str(bad)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


# ---------------------------------------------------------------- the installed command, run as the host runs it


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("shell", ["/bin/sh", "/bin/bash"])
def test_installed_command_denies_a_crashing_hook_with_twin(tmp_path, host, shell):
    for body, expect in (("exit 1", "crash"), ("exit 0", "allow")):
        hook = make_hook(tmp_path, body)
        path, _ = write_settings(tmp_path, host, hook)
        settings.unwrap_settings(str(path))
        wrap(str(path), host, on_failure="omit")
        handler = gating_handlers(host, json.loads(path.read_text()))[0]
        got = run_installed(handler, PROTOCOL[host], shell=shell)
        if expect == "crash":
            assert got == deny_for(host, failure_reason(hook_id(hook), "crashed"))
        else:
            assert got == ("", "", 0)


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_installed_command_denies_when_the_hook_is_missing(tmp_path, host):
    path, _ = write_settings(tmp_path, host, str(tmp_path / "gone.sh"))
    wrap(str(path), host, on_failure="omit")
    handler = gating_handlers(host, json.loads(path.read_text()))[0]
    assert run_installed(handler, PROTOCOL[host]) == deny_for(host, failure_reason(hook_id(str(tmp_path / "gone.sh")), "missing"))


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_installed_command_denies_when_the_runner_is_missing(tmp_path, host):
    hook = make_hook(tmp_path, "exit 0")
    package = tmp_path / "site" / "failsecure"
    package.mkdir(parents=True)
    runner = package / "command.py"
    runner.write_text("")  # stands in for an installed runner
    path, _ = write_settings(tmp_path, host, hook)
    wrap(str(path), host, runner=str(runner), on_failure="omit")
    handler = gating_handlers(host, json.loads(path.read_text()))[0]
    runner.unlink()  # the package was uninstalled or moved
    assert run_installed(handler, PROTOCOL[host]) == deny_for(host, failure_reason(hook_id(hook), "missing"))
    # twin: the same install with the interpreter and runner in place runs the hook
    settings.unwrap_settings(str(path))
    wrap(str(path), host, on_failure="omit")
    handler = gating_handlers(host, json.loads(path.read_text()))[0]
    assert run_installed(handler, PROTOCOL[host]) == ("", "", 0)


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_installed_command_denies_when_the_interpreter_is_missing(tmp_path, host):
    hook = make_hook(tmp_path, "exit 0")
    path, _ = write_settings(tmp_path, host, hook)
    wrap(str(path), host, python=str(tmp_path / "venv" / "bin" / "python"), on_failure="omit")
    handler = gating_handlers(host, json.loads(path.read_text()))[0]
    assert run_installed(handler, PROTOCOL[host]) == deny_for(host, failure_reason(hook_id(hook), "missing"))


@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("runner_exit", [1, 120, 137])
def test_installed_command_denies_when_the_runner_crashes(tmp_path, host, runner_exit):
    hook = make_hook(tmp_path, "exit 0")
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'Traceback (most recent call last)' >&2\nexit %d\n" % runner_exit)
    broken.chmod(0o755)
    path, _ = write_settings(tmp_path, host, hook)
    wrap(str(path), host, python=str(broken), on_failure="omit")
    handler = gating_handlers(host, json.loads(path.read_text()))[0]
    assert run_installed(handler, PROTOCOL[host]) == deny_for(host, failure_reason(hook_id(hook), "crashed"))


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_installed_command_keeps_the_hooks_shell_semantics(tmp_path, host):
    # The original command is a shell string: pipes, variables and quotes keep working.
    marker = tmp_path / "seen"
    original = "read -r line; printf '%%s' \"$line\" | grep -q '\"tool_name\"' && echo \"$HOME\" > %s" % marker
    path, _ = write_settings(tmp_path, host, original)
    wrap(str(path), host, on_failure="omit")
    handler = gating_handlers(host, json.loads(path.read_text()))[0]
    assert run_installed(handler, PROTOCOL[host], shell="/bin/bash") == ("", "", 0)
    assert marker.read_text().strip() == os.environ["HOME"]
