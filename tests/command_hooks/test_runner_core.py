"""One core for every decision: the runner builds Outcomes and the core's reducer
decides; the launcher path installed settings files name keeps working; one parser for
`hook run` whether it comes through the launch line or the `failsecure` CLI."""

import json
import os
import shlex
import subprocess
import sys

import pytest
from cmdhook_helpers import expected_deny, payload_for

from failsecure.runner import config as runner_config, decision as runner_decision, settings as runner_settings
from failsecure.failures import failure_reason
from failsecure.verdict import Action, Decision, Failure, Outcome, Verdict

# The launch line `hook install` wrote before the runner was split into modules.
OLD_BOOT = (
    "import sys;sys.stderr=None;sys.path.append(sys.argv[1]);"
    "from failsecure.command import script_main;script_main(sys.argv[2:])"
)


def run_in_process(protocol, argv, tmp_path, payload=None):
    """runner_decision.run with real pipes in this process -> (stdout, stderr, code)."""
    stdin = tmp_path / "payload.json"
    stdin.write_bytes(payload_for(protocol) if payload is None else payload)
    out, err = tmp_path / "out", tmp_path / "err"
    with open(stdin, "rb") as i, open(out, "wb") as o, open(err, "wb") as e:
        code = runner_decision.run(
            protocol, argv, 5, "guard", stdin_fd=i.fileno(), stdout_fd=o.fileno(), stderr_fd=e.fileno(),
            trusted=runner_config.Trusted(config=str(tmp_path / "none.toml"), cache_home=str(tmp_path / "cache")),
        )
    return out.read_text(), err.read_text(), code


@pytest.fixture
def reduce_spy(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    seen = []
    real = runner_decision.reduce

    def spy(outcomes, config=None, required=(), **kw):
        outcomes = tuple(outcomes)
        seen.append(outcomes)
        return real(outcomes, config, required, **kw)

    monkeypatch.setattr(runner_decision, "reduce", spy)
    return seen


@pytest.mark.parametrize("protocol", ("claude", "gemini", "codex", "kiro"))
def test_a_failed_hook_is_an_outcome_the_core_reduces(reduce_spy, tmp_path, protocol):
    got = run_in_process(protocol, ["/bin/sh", "-c", "exit 1"], tmp_path)
    event = "BeforeTool" if protocol == "gemini" else "PreToolUse"
    assert got == expected_deny(protocol, failure_reason("command:guard", "crashed"), event)
    [[outcome]] = reduce_spy
    assert (outcome.hook, outcome.failure, outcome.verdict) == ("command:guard", Failure.CRASHED, None)


@pytest.mark.parametrize("protocol", ("claude", "gemini", "codex", "kiro"))
def test_an_answering_hook_is_an_outcome_the_core_reduces_twin(reduce_spy, tmp_path, protocol):
    got = run_in_process(protocol, ["/bin/sh", "-c", "exit 0"], tmp_path)
    assert got == ("", "", 0)
    [[outcome]] = reduce_spy
    assert (outcome.hook, outcome.failure, outcome.action) == ("command:guard", None, Action.ABSTAIN)


def test_the_cores_decision_is_what_the_host_is_told(monkeypatch, tmp_path):
    # Whatever the reducer decides is what the runner says: it holds no rule of its own.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")

    def deny_everything(outcomes, config=None, required=(), **kw):
        outcomes = tuple(outcomes)
        return Decision(Verdict(Action.DENY, "the core says no"), outcomes, outcomes)

    monkeypatch.setattr(runner_decision, "reduce", deny_everything)
    assert run_in_process("claude", ["/bin/true"], tmp_path) == expected_deny("claude", "the core says no")
    monkeypatch.undo()  # twin: the real reducer lets the same hook's no-opinion stand
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "none.toml"))
    assert run_in_process("claude", ["/bin/true"], tmp_path) == ("", "", 0)


def test_an_invalid_config_is_the_cores_config_outcome(reduce_spy, tmp_path):
    (tmp_path / "none.toml").write_text("on_error = 'maybe'\n")
    got = run_in_process("codex", ["/bin/true"], tmp_path)
    assert got == expected_deny("codex", failure_reason("failsecure:config", "invalid"))
    [[outcome]] = reduce_spy
    assert (outcome.hook, outcome.failure) == ("failsecure:config", Failure.INVALID)
    (tmp_path / "none.toml").write_text("on_error = 'deny'\n")  # twin
    assert run_in_process("codex", ["/bin/true"], tmp_path) == ("", "", 0)


def test_the_runner_keeps_no_rule_table_of_its_own():
    for name in ("_hook_policy", "_Invalid", "CRASHED_REASON", "advisory"):
        assert not hasattr(runner_decision, name)
    assert Outcome is runner_decision.Outcome


# ---------------------------------------------------------------- the launcher


@pytest.mark.parametrize("form", ["old-import-line", "script"])
def test_a_launch_line_from_before_the_split_still_runs(tmp_path, form):
    launcher = runner_settings.runner_path()
    assert os.path.basename(launcher) == "command.py"
    if form == "script":
        prefix = [sys.executable, "-I", "-S", launcher]
    else:
        site = os.path.dirname(os.path.dirname(launcher))
        prefix = [sys.executable, "-I", "-S", "-c", OLD_BOOT, site]
    deny = subprocess.run(prefix + ["run", "--protocol", "gemini", "--hook-id", "g", "--", "false"], input=payload_for("gemini"), capture_output=True, timeout=30)
    assert (deny.stdout.decode(), deny.stderr.decode(), deny.returncode) == expected_deny(
        "gemini", failure_reason("command:g", "crashed"), "BeforeTool"
    )
    allow = subprocess.run(prefix + ["run", "--protocol", "gemini", "--hook-id", "g", "--", "true"], input=payload_for("gemini"), capture_output=True, timeout=30)
    assert (allow.stdout, allow.stderr, allow.returncode) == (b"", b"", 0)


def test_install_still_writes_the_launch_line_of_the_previous_release(tmp_path):
    # Same launch line as before the split: old and new installs are one format,
    # recognised (not wrapped twice) and restored exactly.
    path = tmp_path / "settings.json"
    original = json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "exit 1", "timeout": 3}]}]}}, indent=2)
    path.write_text(original)
    runner_settings.wrap_settings(str(path), "claude", on_failure="omit")
    handler = json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert shlex.quote(OLD_BOOT) in handler["command"]
    assert runner_settings.wrap_settings(str(path), "claude", on_failure="omit").wrapped == []
    assert runner_settings.unwrap_settings(str(path)) == 1
    assert path.read_text() == original


def test_settings_functions_are_not_named_like_failsecure_install():
    assert not hasattr(runner_settings, "install") and not hasattr(runner_settings, "uninstall")
    assert callable(runner_settings.wrap_settings) and callable(runner_settings.unwrap_settings)


# ---------------------------------------------------------------- one parser for `hook run`


@pytest.mark.parametrize("entry", ["cli", "launcher"])
def test_hook_run_has_one_parser(entry):
    if entry == "cli":
        prefix = [sys.executable, "-m", "failsecure", "hook"]
    else:
        prefix = runner_settings.launch_argv(sys.executable, runner_settings.runner_path())
    bad = subprocess.run(prefix + ["run", "--protocol", "codex", "--bogus", "--", "true"], input=b"{}", capture_output=True, timeout=60)
    assert (bad.stdout, bad.returncode) == (b"", 2)
    assert bad.stderr == b"failsecure: hook runner usage error (unknown option --bogus)\n"
    good = subprocess.run(prefix + ["run", "--protocol", "codex", "--", "true"], input=b"{}", capture_output=True, timeout=60)
    assert (good.stdout, good.stderr, good.returncode) == (b"", b"", 0)
