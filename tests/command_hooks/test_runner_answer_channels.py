"""Where each host reads an exit-0 hook's answer, and the runner reading it there too.

- A UTF-8 byte-order mark (EF BB BF) before the JSON on stdout: Claude Code 2.1.332 and
  Gemini CLI 0.61.0 parse the trimmed stdout (JavaScript's trim: marks, U+00A0, a form
  feed, ...), so a BOM deny blocks (measured, tests/command_hooks/claude_code/
  test_answer_encoding.py and gemini_cli/test_answer_channels.py); Codex CLI 0.169.0
  does not read past a mark (the tool runs: codex_cli/test_answer_encoding.py). So a
  padded allow is passed on where the host reads it and is `invalid` (a deny) where
  the host would lose it, as any unreadable answer.
- Gemini CLI parses `stdout.trim() || stderr.trim()`: with nothing on stdout, a JSON
  object on stderr is the hook's answer, so the runner judges and audits it as one.
  Claude Code and Codex read no answer from stderr on exit 0.

The runner runs as the host starts it (the launch line `hook install` writes, the
payload on stdin); every deny has its allow twin, every failure names its branch.
"""

import json
import os
import subprocess
import sys

import pytest
from cmdhook_helpers import expected_deny, payload_for

from failsecure.runner import settings as runner_install

BOM = b"\xef\xbb\xbf"
HOOK = 'cat >/dev/null; cat "$1"; cat "$2" >&2; exit 0'
EVENT = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}
ALLOW = {
    "claude": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
    "codex": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}},
    "gemini": {"decision": "allow"},
}
DENY = {
    "claude": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not today"}},
    "codex": {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not today"}},
    "gemini": {"decision": "deny", "reason": "not today"},
}


@pytest.fixture
def runner(tmp_path):
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "failsecure.toml"
    config.write_text('[audit]\npath = "%s"\n' % audit)
    env = {k: v for k, v in os.environ.items() if k not in ("FAILSECURE_CONFIG", "XDG_CACHE_HOME")}
    launch = runner_install.launch_argv(sys.executable, runner_install.runner_path())

    def run(protocol, stdout, stderr=b""):
        (tmp_path / "out").write_bytes(stdout)
        (tmp_path / "err").write_bytes(stderr)
        if audit.exists():
            audit.unlink()
        line = launch + ["run", "--protocol", protocol, "--timeout", "10", "--hook-id", "guard", "--config", str(config),
                         "--cache-home", str(tmp_path / "cache"), "--", "/bin/sh", "-c", HOOK, "hook", str(tmp_path / "out"), str(tmp_path / "err")]
        proc = subprocess.run(line, input=payload_for(protocol), capture_output=True, env=env, timeout=30)
        events = [json.loads(text) for text in audit.read_text().splitlines() if text.strip()] if audit.exists() else []
        assert len(events) == 1, events
        return (proc.stdout, proc.stderr, proc.returncode), (events[0]["outcome"], events[0]["failure"])

    return run


def answer(obj):
    return (json.dumps(obj) + "\n").encode()


def deny_of(protocol, reason):
    out, err, code = expected_deny(protocol, reason, EVENT[protocol])
    return out.encode(), err.encode(), code


# ---------------------------------------------------------------- a byte-order mark before the answer


@pytest.mark.parametrize("protocol", ["claude", "gemini"])
def test_a_bom_allow_is_passed_on_where_the_host_reads_it(runner, protocol):
    stdout = BOM + answer(ALLOW[protocol])
    assert runner(protocol, stdout, b"note\n") == ((stdout, b"note\n", 0), ("allow", None))


@pytest.mark.parametrize("protocol", ["claude", "gemini", "codex"])
def test_the_same_allow_without_a_bom_twin(runner, protocol):
    stdout = answer(ALLOW[protocol])
    assert runner(protocol, stdout) == ((stdout, b"", 0), ("allow", None))


@pytest.mark.parametrize("protocol", ["claude", "gemini"])
def test_a_bom_deny_is_the_hooks_deny_where_the_host_reads_it(runner, protocol):
    assert runner(protocol, BOM + answer(DENY[protocol])) == (deny_of(protocol, "not today"), ("deny", None))


def test_codex_loses_a_bom_answer_so_it_is_invalid(runner):
    # Codex 0.169.0 does not parse it: the allow would be lost and so would a deny
    wanted = deny_of("codex", "failsecure: hook 'command:guard' failed closed (invalid)")
    assert runner("codex", BOM + answer(ALLOW["codex"])) == (wanted, ("deny", "invalid"))
    assert runner("codex", BOM + answer(DENY["codex"])) == (wanted, ("deny", "invalid"))


PADDED = [(BOM + BOM, b""), (b"\xc2\xa0", b"\xc2\xa0\n"), (b"\x0c", b"\x0c"), (b" " + BOM, b"\xe2\x80\xa8")]


@pytest.mark.parametrize("protocol", ["claude", "gemini"])
@pytest.mark.parametrize("head,tail", PADDED, ids=["two-boms", "nbsp", "formfeed", "space-bom"])
def test_an_answer_padded_as_the_host_trims_is_read(runner, protocol, head, tail):
    stdout = head + answer(ALLOW[protocol]) + tail
    assert runner(protocol, stdout) == ((stdout, b"", 0), ("allow", None))
    assert runner(protocol, head + answer(DENY[protocol]) + tail) == (deny_of(protocol, "not today"), ("deny", None))


def test_codex_does_not_trim_so_a_padded_answer_is_invalid(runner):
    wanted = deny_of("codex", "failsecure: hook 'command:guard' failed closed (invalid)")
    assert runner("codex", b"\xc2\xa0" + answer(ALLOW["codex"])) == (wanted, ("deny", "invalid"))


@pytest.mark.parametrize("protocol", ["claude", "gemini"])
def test_padding_that_is_all_there_is_stays_junk(runner, protocol):
    # blank but not JSON white space is junk, as before (test_runner_fuzz FOUND)
    wanted = deny_of(protocol, "failsecure: hook 'command:guard' failed closed (invalid)")
    assert runner(protocol, b"\xc2\xa0\n") == (wanted, ("deny", "invalid"))
    assert runner(protocol, b"\x1c" + answer(ALLOW[protocol])) == (wanted, ("deny", "invalid"))  # not JavaScript white space


@pytest.mark.parametrize("protocol", ["claude", "gemini"])
def test_a_bom_opens_nothing(runner, protocol):
    # junk after the mark, an unknown decision after it
    wanted = deny_of(protocol, "failsecure: hook 'command:guard' failed closed (invalid)")
    for stdout in (BOM + b"not json\n", BOM + b'{"decision": "maybe"}\n'):
        assert runner(protocol, stdout) == (wanted, ("deny", "invalid")), stdout


@pytest.mark.parametrize("protocol", ["claude", "gemini"])
def test_a_bom_alone_is_an_empty_answer(runner, protocol):
    assert runner(protocol, BOM + b"\n") == ((BOM + b"\n", b"", 0), ("abstain", None))


# ---------------------------------------------------------------- Gemini reads stderr when stdout is empty


def test_gemini_a_deny_on_stderr_of_an_exit_0_hook_is_its_deny(runner):
    assert runner("gemini", b"", answer(DENY["gemini"])) == (deny_of("gemini", "not today"), ("deny", None))


def test_gemini_an_allow_on_stderr_is_passed_on_as_its_allow(runner):
    stderr = answer(ALLOW["gemini"])
    assert runner("gemini", b"\n", stderr) == ((b"\n", stderr, 0), ("allow", None))


def test_gemini_reads_stderr_as_the_host_does(runner):
    # padded as String.prototype.trim strips; a JSON string holding the object; a BOM
    stderr = b"\xc2\xa0 " + json.dumps(json.dumps(DENY["gemini"])).encode() + b"\n"
    assert runner("gemini", b"", stderr) == (deny_of("gemini", "not today"), ("deny", None))
    assert runner("gemini", b"", BOM + answer(DENY["gemini"])) == (deny_of("gemini", "not today"), ("deny", None))
    # an answer on stderr the host would not honour is invalid, as on stdout
    wanted = deny_of("gemini", "failsecure: hook 'command:guard' failed closed (invalid)")
    assert runner("gemini", b"", b'{"decision": "Deny"}\n') == (wanted, ("deny", "invalid"))


@pytest.mark.parametrize("stderr", [b"checking the command\n", b"[1, 2]\n", b"42\n", b'"just text"\n', b""],
                         ids=["text", "array", "number", "string", "empty"])
def test_gemini_stderr_that_is_no_answer_leaves_no_opinion(runner, stderr):
    # Gemini: plain text is "allow" with the text as a systemMessage; an array, a number
    # or an empty stderr carry no decision: no opinion, passed on unchanged
    assert runner("gemini", b"", stderr) == ((b"", stderr, 0), ("abstain", None))


def test_gemini_stdout_wins_over_stderr(runner):
    stdout = answer(ALLOW["gemini"])
    assert runner("gemini", stdout, answer(DENY["gemini"])) == ((stdout, answer(DENY["gemini"]), 0), ("allow", None))
    assert runner("gemini", answer(DENY["gemini"]), answer(ALLOW["gemini"]))[1] == ("deny", None)  # twin


@pytest.mark.parametrize("protocol", ["claude", "codex"])
def test_hosts_that_read_no_answer_on_stderr_are_not_given_one(runner, protocol):
    stderr = answer(DENY[protocol])
    assert runner(protocol, b"", stderr) == ((b"", stderr, 0), ("abstain", None))


def test_the_oracle_reads_a_bom_as_each_host_does():
    from host_rules import ABSTAIN, BLOCK, RUN, host_verdict, valid_answer
    from host_rules import ALLOW as MEANS_ALLOW

    assert valid_answer("claude", BOM + answer(ALLOW["claude"])) == MEANS_ALLOW
    assert valid_answer("gemini", BOM + b"{}") == ABSTAIN
    assert valid_answer("codex", BOM + answer(ALLOW["codex"])) is None
    assert host_verdict("claude", BOM + answer(DENY["claude"]), b"", 0) == BLOCK
    assert host_verdict("gemini", b"", answer(DENY["gemini"]), 0) == BLOCK
    assert host_verdict("gemini", b"", b"checking\n", 0) == RUN  # twin
    assert host_verdict("codex", BOM + answer(DENY["codex"]), b"", 0) == RUN


# ---------------------------------------------------------------- Gemini's stderr answer past the runner's stderr cap
# Gemini reads ALL of stderr (`stderr += data` until close) where the runner kept only
# the first STDERR_CAP (64 KiB) bytes: a JSON deny on stderr past that was judged on
# the cut text (blank, or a half object: no answer), audited abstain, and passed on cut,
# so Gemini saw no deny and the tool ran where the bare hook is blocked.

BIG = 70 * 1024


@pytest.mark.parametrize("shape", ["padded", "long-reason"])
def test_gemini_a_deny_on_stderr_past_the_stderr_cap_is_its_deny(runner, shape):
    if shape == "padded":
        stderr, reason = b" " * BIG + answer(DENY["gemini"]), "not today"
    else:
        stderr, reason = answer({"decision": "deny", "reason": "not today " + "x" * BIG}), None
    (out, err, code), audited = runner("gemini", b"", stderr)
    assert audited == ("deny", None) and code == 2
    assert b"not today" in out and b"not today" in err
    if reason is not None:
        assert (out, err, code) == deny_of("gemini", reason)


@pytest.mark.parametrize("shape", ["padded", "long-reason"])
def test_gemini_an_allow_on_stderr_past_the_stderr_cap_is_passed_on_whole_twin(runner, shape):
    if shape == "padded":
        stderr = b" " * BIG + answer(ALLOW["gemini"])
    else:
        stderr = answer({"decision": "allow", "systemMessage": "x" * BIG})
    assert runner("gemini", b"", stderr) == ((b"", stderr, 0), ("allow", None))


def test_gemini_plain_text_past_the_stderr_cap_leaves_no_opinion_twin(runner):
    stderr = b"log line\n" * (BIG // 9)
    (out, err, code), audited = runner("gemini", b"", stderr)
    assert (out, code, audited) == (b"", 0, ("abstain", None)) and stderr.startswith(err)


def test_gemini_a_stderr_answer_past_what_the_runner_reads_is_invalid(runner):
    # past the 1 MiB kept (an answer's size on stdout): what Gemini would read there is
    # unknown to the runner, so a stderr that could open a JSON answer is invalid
    wanted = deny_of("gemini", "failsecure: hook 'command:guard' failed closed (invalid)")
    for stderr in (b" " * (1 << 20) + answer(DENY["gemini"]), answer({"decision": "deny", "reason": "x" * (1 << 20)})):
        assert runner("gemini", b"", stderr) == (wanted, ("deny", "invalid"))


def test_gemini_plain_text_past_what_the_runner_reads_leaves_no_opinion_twin(runner):
    stderr = b"log line\n" * ((1 << 20) // 9 + 10)
    (out, err, code), audited = runner("gemini", b"", stderr)
    assert (out, code, audited) == (b"", 0, ("abstain", None)) and len(err) == 1 << 20 and stderr.startswith(err)


# ---------------------------------------------------------------- Gemini parses a JSON string on stdout once more
# HookRunner.executeCommandHook: `parsed = JSON.parse(text); if (typeof parsed ===
# "string") parsed = JSON.parse(parsed)` -- for stdout as for stderr. The runner did it
# on stderr only: a wrapped allow on stdout was a false deny, a wrapped deny audited
# invalid instead of the hook's deny.


def test_gemini_a_json_string_holding_a_deny_on_stdout_is_its_deny(runner):
    stdout = json.dumps(json.dumps(DENY["gemini"])).encode() + b"\n"
    assert runner("gemini", stdout) == (deny_of("gemini", "not today"), ("deny", None))


def test_gemini_a_json_string_holding_an_allow_on_stdout_is_passed_on_twin(runner):
    stdout = BOM + json.dumps(json.dumps(ALLOW["gemini"])).encode() + b"\n"
    assert runner("gemini", stdout) == ((stdout, b"", 0), ("allow", None))


@pytest.mark.parametrize("stdout", [b'"just text"\n', b'"\\"{}\\""\n', b'"{\\"decision\\": \\"Deny\\"}"\n', b'"{\\"a\\":1,\\"a\\":2}"'],
                         ids=["text", "twice-wrapped", "unknown-decision", "twice-a-key"])
def test_gemini_a_json_string_on_stdout_holding_no_valid_answer_is_invalid(runner, stdout):
    wanted = deny_of("gemini", "failsecure: hook 'command:guard' failed closed (invalid)")
    assert runner("gemini", stdout) == (wanted, ("deny", "invalid"))


@pytest.mark.parametrize("protocol", ["claude", "codex"])
def test_hosts_that_parse_once_find_no_answer_in_a_json_string(runner, protocol):
    # Claude Code treats stdout not starting with `{` as plain text, Codex rejects it
    wanted = deny_of(protocol, "failsecure: hook 'command:guard' failed closed (invalid)")
    assert runner(protocol, json.dumps(json.dumps(ALLOW[protocol])).encode()) == (wanted, ("deny", "invalid"))
