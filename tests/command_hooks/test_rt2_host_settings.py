"""Red-team of the runner reading the host's settings as the host does.

- strip-json-comments (Gemini CLI 0.61.0's settings loader) blanks a comment's non-white
  characters only (/\\S/): a no-break space (or another JavaScript white space) in a
  comment is left in the text, which JSON.parse then refuses; Gemini ignores the file.
  The runner blanked every character but CR/LF, and read a file Gemini cannot.
- One copy of the wrapped hook with an integer timeout of 309..4300 digits (an int to
  CPython, too large for a float) made the whole clock read fail (OverflowError), so the
  other copy's shorter clock was lost and the runner answered after it.
"""

import json
import sys
import time

import pytest
from cmdhook_helpers import expected_deny, hook_id, payload_for

from failsecure.failures import failure_reason
from failsecure.runner import protocols
from failsecure.runner import settings as settings

HOST_SECONDS = 2.0


@pytest.mark.parametrize("space", ["\u00a0", "\u2028", "\ufeff", "\v", "\f"])
def test_a_comment_holding_javascript_white_space_is_a_file_gemini_cannot_read(space):
    with pytest.raises(ValueError):
        protocols._settings_document('{"hooks": {} // lowered%s by hand\n}' % space)


@pytest.mark.parametrize("char", [" ", "\t", "x", "\x1c", "\u00e9"])
def test_the_twin_a_comment_of_other_characters_is_blanked(char):
    assert protocols._settings_document('{"hooks": {} // lowered%s by hand\n, "a": 1}' % char) == {"hooks": {}, "a": 1}


def _run_as_gemini(command):
    import subprocess

    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", command], input=payload_for("gemini"), capture_output=True, timeout=30)
    return proc, time.monotonic() - start


def _two_copies(tmp_path, hook_command, first_timeout_literal, second_ms):
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "%s"\n' % audit)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [
        {"type": "command", "command": hook_command, "timeout": 5000}]}]}}, indent=2))
    settings.wrap_settings(str(path), "gemini", python=sys.executable,
                           environ={"PATH": "/usr/bin:/bin", "FAILSECURE_CONFIG": str(config)})
    document = json.loads(path.read_text())
    first = document["hooks"]["BeforeTool"][0]
    second = json.loads(json.dumps(first))
    second["matcher"] = "write_file|run_shell_command"
    second["hooks"][0]["timeout"] = second_ms
    first["hooks"][0]["timeout"] = "@FIRST@"
    document["hooks"]["BeforeTool"].append(second)
    path.write_text(json.dumps(document, indent=2).replace('"@FIRST@"', first_timeout_literal))
    return first["hooks"][0]["command"], audit


@pytest.mark.parametrize("literal", ["1" + "0" * 400, "1" * 5000, "1e400"])
def test_a_copy_with_a_huge_timeout_keeps_the_other_copys_clock(tmp_path, literal):
    command, audit = _two_copies(tmp_path, "sleep 30", literal, int(HOST_SECONDS * 1000))
    proc, elapsed = _run_as_gemini(command)
    assert (proc.stdout.decode(), proc.stderr.decode(), proc.returncode) == expected_deny(
        "gemini", failure_reason(hook_id("sleep 30"), "timeout"))
    assert elapsed < HOST_SECONDS, "the runner answered after the copy's %.1f s clock: %.2f s" % (HOST_SECONDS, elapsed)
    events = [(e["outcome"], e["failure"]) for e in map(json.loads, audit.read_text().splitlines())]
    assert events == [("deny", "timeout")]


def test_the_twin_a_quick_allow_under_the_same_copies_runs(tmp_path):
    command, audit = _two_copies(tmp_path, "cat >/dev/null; echo '{\"decision\":\"allow\"}'", "1" + "0" * 400,
                                 int(HOST_SECONDS * 1000))
    proc, _ = _run_as_gemini(command)
    assert (proc.stdout, proc.stderr, proc.returncode) == (b'{"decision":"allow"}\n', b"", 0)


# ---------------------------------------------------------------- a BOM-prefixed Claude Code settings file

def _claude_settings(tmp_path, hook_command, bom):
    """Claude Code 2.1.332 reads a settings file after a UTF-8 byte-order mark (measured,
    tests/command_hooks/claude_code/test_project_settings_reading.py): the user lowers the
    wrapped hook's timeout to 2 s in a file an editor saved with a BOM."""
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "%s"\n' % audit)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": hook_command, "timeout": 5}]}]}}, indent=2))
    settings.wrap_settings(str(path), "claude", python=sys.executable,
                           environ={"PATH": "/usr/bin:/bin", "FAILSECURE_CONFIG": str(config)})
    document = json.loads(path.read_text())
    handler = document["hooks"]["PreToolUse"][0]["hooks"][0]
    handler["timeout"] = int(HOST_SECONDS)
    path.write_text(("\ufeff" if bom else "") + json.dumps(document, indent=2), encoding="utf-8")
    return handler["command"], audit


def _run_as_claude(command):
    import subprocess

    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", command], input=payload_for("claude"), capture_output=True, timeout=30)
    return proc, time.monotonic() - start


@pytest.mark.parametrize("bom", [False, True])
def test_a_bom_prefixed_claude_settings_file_still_gives_the_hosts_lowered_clock(tmp_path, bom):
    command, audit = _claude_settings(tmp_path, "sleep 30", bom)
    proc, elapsed = _run_as_claude(command)
    assert (proc.stdout.decode(), proc.stderr.decode(), proc.returncode) == expected_deny(
        "claude", failure_reason(hook_id("sleep 30"), "timeout"))
    assert elapsed < HOST_SECONDS, "the runner answered after the host's %.1f s clock: %.2f s" % (HOST_SECONDS, elapsed)


def test_the_twin_a_bom_prefixed_claude_settings_file_leaves_a_quick_allow_alone(tmp_path):
    answer = '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'
    command, audit = _claude_settings(tmp_path, "cat >/dev/null; echo '%s'" % answer, True)
    proc, _ = _run_as_claude(command)
    assert (proc.stdout, proc.stderr, proc.returncode) == (answer.encode() + b"\n", b"", 0)
