"""The runner and `hook install` under an adversary (issue 27): what the project controls
(the hook's environment, files in the working directory) never chooses the program, the
trusted config or the answer; the answer never waits on the audit; one table of gating
events; uninstall restores only what install left untouched.

Each deny test has an allow twin; each runs the installed command (or the launch line)
in a real subprocess as the host would.
"""

import fcntl
import json
import os
import subprocess
import sys

import pytest
from cmdhook_helpers import expected_deny, hook_id, payload_for

from failsecure.runner import config as runner_config
from failsecure.runner import settings as settings
from failsecure.failures import failure_reason


def make_hook(tmp_path, body, name="guard.sh"):
    hook = tmp_path / name
    hook.write_text("#!/bin/sh\ncat >/dev/null\n" + body + "\n")
    hook.chmod(0o755)
    return str(hook)


def claude_file(tmp_path, command, name="settings.json", **handler):
    path = tmp_path / name
    entry = dict({"type": "command", "command": command, "timeout": 5}, **handler)
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [entry]}]}}, indent=2) + "\n")
    return path


def handler_of(path, event="PreToolUse"):
    return json.loads(path.read_text())["hooks"][event][0]["hooks"][0]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("FAILSECURE_CONFIG", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "BASH")}
    env.update(extra)
    return env


def host_runs(handler, env, cwd, protocol="claude", event=None, shell="/bin/sh", timeout=30):
    """The handler as the host runs it: `sh -c <command>` (or exec form), in `env` and `cwd`."""
    if isinstance(handler.get("args"), list):
        argv = [handler["command"]] + handler["args"]
    else:
        argv = [shell, "-c", handler["command"]]
    proc = subprocess.run(argv, input=payload_for(protocol, event=event), capture_output=True, env=env, cwd=str(cwd), timeout=timeout)
    return proc.stdout.decode(), proc.stderr.decode(), proc.returncode


def crashed(command):
    return expected_deny("claude", failure_reason(hook_id(command), "crashed"))


# ---------------------------------------------------------------- the launch line


def test_the_hooks_environment_cannot_choose_the_program_that_runs_the_hook(tmp_path):
    # A project's settings `env` sets BASH=/bin/true: the previous launch line ran
    # `"${BASH:-/bin/sh}" -c <hook>`, so /bin/true "answered" and the call ran.
    hook = make_hook(tmp_path, "exit 1")
    path = claude_file(tmp_path, hook)
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    handler = handler_of(path)
    assert "${BASH" not in handler["command"] and "$BASH" not in handler["command"]
    assert host_runs(handler, clean_env(BASH="/bin/true"), tmp_path) == crashed(hook)
    # twin: an allowing hook under the same hostile environment runs
    allow = make_hook(tmp_path, "exit 0", name="allow.sh")
    path = claude_file(tmp_path, allow, name="allow.json")
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    assert host_runs(handler_of(path), clean_env(BASH="/bin/true"), tmp_path) == ("", "", 0)


def legacy_line(hook, protocol="claude", timeout=5):
    """The exact command the previous `hook install` wrote (record of a plain hook)."""
    record = settings._b64encode(json.dumps({"keys": {"command": hook, "timeout": timeout}}, separators=(",", ":")).encode())
    return settings.prelude(
        sys.executable, settings.runner_path(), protocol, settings._derive_hook_id(hook), timeout, record, hook, _legacy=True
    )


def test_a_settings_file_of_the_previous_install_keeps_working_and_ignores_bash(tmp_path):
    hook = make_hook(tmp_path, "exit 1")
    line = legacy_line(hook)
    assert '-- "${BASH:-/bin/sh}" -c ' in line
    handler = {"type": "command", "command": line, "timeout": 10}
    assert host_runs(handler, clean_env(BASH="/bin/true"), tmp_path) == crashed(hook)
    assert host_runs(handler, clean_env(), tmp_path) == crashed(hook)
    # twin: the same old line with an allowing hook still runs it, also with a real $BASH
    allow = make_hook(tmp_path, "exit 0", name="allow.sh")
    handler = {"type": "command", "command": legacy_line(allow), "timeout": 10}
    assert host_runs(handler, clean_env(BASH="/bin/bash"), tmp_path) == ("", "", 0)
    assert host_runs(handler, clean_env(), tmp_path) == ("", "", 0)


def test_install_upgrades_the_previous_launch_line_and_uninstall_restores_bytes(tmp_path):
    hook = make_hook(tmp_path, "exit 1")
    original = json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": hook, "timeout": 5}]}]}}, indent=2) + "\n"
    old = json.loads(original)
    old["hooks"]["PreToolUse"][0]["hooks"][0].update(command=legacy_line(hook), timeout=10)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(old, indent=2) + "\n")
    report = settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    assert report.ids == [hook_id(hook)]
    handler = handler_of(path)
    assert "${BASH" not in handler["command"] and settings._launch_of(handler).legacy is False
    assert host_runs(handler, clean_env(BASH="/bin/true"), tmp_path) == crashed(hook)
    assert settings.unwrap_settings(str(path)) == 1
    assert path.read_text() == original


def _config(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


LOOSE = '[hooks."command:{id}"]\non_error = "allow"\n'


@pytest.mark.parametrize("variable", ["FAILSECURE_CONFIG", "XDG_CONFIG_HOME", "HOME"])
def test_the_hooks_environment_cannot_choose_the_trusted_config(tmp_path, variable):
    hook = make_hook(tmp_path, "exit 1")
    loose = LOOSE.format(id=settings._derive_hook_id(hook))
    evil = tmp_path / "evil"
    if variable == "FAILSECURE_CONFIG":
        value = str(_config(evil, "loose.toml", loose))
    elif variable == "XDG_CONFIG_HOME":
        _config(evil, "failsecure/config.toml", loose)
        value = str(evil)
    else:
        _config(evil, ".config/failsecure/config.toml", loose)
        value = str(evil)
    work = tmp_path / "work"
    work.mkdir()
    path = claude_file(tmp_path, hook)
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    handler = handler_of(path)
    assert host_runs(handler, clean_env(**{variable: value}), work) == crashed(hook)
    # twin: the same loose config, chosen by the user at install time, is trusted
    path = claude_file(tmp_path, hook, name="user.json")
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env(**{variable: value}))
    trusted_handler = handler_of(path)
    if variable == "HOME":
        # HOME at install time is not an option: the real home (pwd) is; the user's loose
        # config is reached through --config-home instead
        assert "--config-home" not in trusted_handler["command"]
        return
    assert host_runs(trusted_handler, clean_env(), work) == ("", "", 0)


def test_install_writes_trusted_options_as_absolute_paths(tmp_path):
    path = claude_file(tmp_path, "true")
    env = clean_env(FAILSECURE_CONFIG=str(tmp_path / "c.toml"), XDG_CACHE_HOME=str(tmp_path / "cache"), SHELL="/bin/sh")
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=env)
    launch = settings._launch_of(handler_of(path))
    assert dict(launch.options) == {"--config": str(tmp_path / "c.toml"), "--cache-home": str(tmp_path / "cache")}
    assert os.path.isabs(launch.shell) and launch.shell == "/bin/sh"
    # twin: without those variables at install time, no option is written
    path = claude_file(tmp_path, "true", name="plain.json")
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    assert settings._launch_of(handler_of(path)).options == []


def test_the_config_cache_follows_the_trusted_inputs_only(tmp_path, run_hook):
    planted = tmp_path / "planted"
    run = run_hook("claude", ["/bin/true"], env={"XDG_CACHE_HOME": str(planted), "FAILSECURE_CONFIG": "/nonexistent.toml"})
    assert run.triple == ("", "", 0)
    assert not planted.exists()  # the environment's cache home is never used
    assert os.listdir(tmp_path / "cache" / "failsecure")  # twin: the launch line's is


def test_trusted_environment_is_what_the_policy_reads(tmp_path, monkeypatch):
    # The runner hands the policy its trusted environment and puts the process's back.
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "evil.toml"))
    (tmp_path / "evil.toml").write_text("timeout = 1\n")
    good = _config(tmp_path, "good.toml", "timeout = 7\n")
    monkeypatch.chdir(tmp_path)
    config = runner_config.load(runner_config.Trusted(config=str(good), cache_home=str(tmp_path / "c")))
    assert config.timeout == 7.0
    assert os.environ["FAILSECURE_CONFIG"] == str(tmp_path / "evil.toml")
    config = runner_config.load(runner_config.Trusted(cache_home=str(tmp_path / "c")))
    assert config.timeout != 1.0  # without --config, the environment's file is not trusted


# ---------------------------------------------------------------- files the project controls


def _fifo(path):
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "dev-fd-0", "dev-zero"])
@pytest.mark.parametrize("name", ["failsecure.toml", "pyproject.toml"])
def test_project_config_candidates_that_are_not_regular_files_are_never_read(tmp_path, run_hook, monkeypatch, kind, name):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    target = work / name
    if kind == "fifo":
        _fifo(str(target))
    else:
        os.symlink("/dev/fd/0" if kind == "dev-fd-0" else "/dev/zero", str(target))
    # the hook proves it got the whole payload (a read of /dev/fd/0 would have eaten it)
    check = "import sys,json; d=json.load(sys.stdin); sys.exit(0 if d['tool_name']=='Bash' else 1)"
    run = run_hook("claude", [sys.executable, "-c", check], timeout=5)
    assert run.triple == ("", "", 0)
    os.unlink(str(target))
    # twin: the same hook crashing is denied (the runner is running, not skipping)
    assert run_hook("claude", ["/bin/sh", "-c", "exit 1"], timeout=5).code == 2


def test_an_oversized_project_config_is_an_error_never_read(tmp_path, run_hook):
    with open(tmp_path / "pyproject.toml", "wb") as fh:
        fh.truncate(runner_config.READ_CAP + 1)
    run = run_hook("claude", ["/bin/true"])
    assert run.triple == expected_deny("claude", failure_reason("failsecure:config", "invalid"))
    with open(tmp_path / "pyproject.toml", "wb") as fh:  # twin: an ordinary one
        fh.write(b"[project]\nname = 'x'\n")
    assert run_hook("claude", ["/bin/true"]).triple == ("", "", 0)


# ---------------------------------------------------------------- the audit never holds the answer


def test_an_audit_fifo_does_not_hold_the_answer(tmp_path, run_hook):
    fifo = _fifo(str(tmp_path / "audit.fifo"))
    config = '[audit]\npath = "%s"\n' % fifo
    run = run_hook("claude", ["/bin/sh", "-c", "exit 1"], config=config, timeout=2)
    assert run.triple == expected_deny("claude", failure_reason("command:guard", "crashed"))
    assert run_hook("claude", ["/bin/true"], config=config, timeout=2).triple == ("", "", 0)  # twin


def test_a_locked_audit_file_does_not_hold_the_answer(tmp_path, run_hook):
    audit = tmp_path / "audit.jsonl"
    holder = open(audit, "a")
    fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
    try:
        run = run_hook("claude", ["/bin/sh", "-c", "exit 1"], timeout=2)
        assert run.triple == expected_deny("claude", failure_reason("command:guard", "crashed"))
    finally:
        holder.close()
    # twin: with the lock free, the same run is audited
    run = run_hook("claude", ["/bin/sh", "-c", "exit 1"], timeout=2)
    assert run.event["failure"] == "crashed"


# ---------------------------------------------------------------- what gates


def test_pre_skill_shell_command_gates(run_hook):
    payload = payload_for("claude", event="PreSkillShellCommand")
    run = run_hook("claude", ["/bin/sh", "-c", "exit 1"], payload=payload)
    reason = failure_reason("command:guard", "crashed")
    body = {
        "decision": "block",
        "reason": reason,
        "hookSpecificOutput": {"hookEventName": "PreSkillShellCommand", "permissionDecision": "deny", "permissionDecisionReason": reason},
    }
    assert run.triple == (json.dumps(body, separators=(",", ":")) + "\n", reason + "\n", 2)
    assert run.event["failure"] == "crashed"
    assert run_hook("claude", ["/bin/true"], payload=payload).triple == ("", "", 0)  # twin


@pytest.mark.parametrize("answer", [
    {"hookSpecificOutput": {"hookEventName": "PreSkillShellCommand", "permissionDecision": "ask"}},
    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer"}},
    {"hookSpecificOutput": {"hookEventName": "PreSkillShellCommand", "updatedInput": {"command": "ls"}}},
])
def test_pre_skill_shell_command_ask_is_a_deny(run_hook, answer):
    payload = payload_for("claude", event="PreSkillShellCommand")
    run = run_hook("claude", ["/bin/sh", "-c", "cat >/dev/null; echo '%s'" % json.dumps(answer)], payload=payload)
    assert run.code == 2 and json.loads(run.stdout)["decision"] == "block"
    assert run.event["outcome"] == "deny"
    twin = {"hookSpecificOutput": {"hookEventName": "PreSkillShellCommand", "permissionDecision": "allow"}}
    run = run_hook("claude", ["/bin/sh", "-c", "cat >/dev/null; echo '%s'" % json.dumps(twin)], payload=payload)
    assert run.triple == (json.dumps(twin) + "\n", "", 0)


def test_install_wraps_pre_skill_shell_command(tmp_path):
    hook = make_hook(tmp_path, "exit 1")
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {
        "PreSkillShellCommand": [{"hooks": [{"type": "command", "command": hook}]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": hook}]}],
    }}))
    report = settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    assert [e.where for e in report.wrapped] == ["hooks.PreSkillShellCommand[0].hooks[0]"]  # twin: PostToolUse left
    handler = handler_of(path, "PreSkillShellCommand")
    got = host_runs(handler, clean_env(), tmp_path, event="PreSkillShellCommand")
    assert got[2] == 2 and json.loads(got[0])["hookSpecificOutput"]["hookEventName"] == "PreSkillShellCommand"


def test_install_and_runner_read_one_gating_table():
    from failsecure.runner.protocols import GATING_EVENTS, PROTOCOLS, gating_events

    for host, spec in settings.HOSTS.items():
        assert spec.events == gating_events(host)
        assert spec.events <= PROTOCOLS[spec.protocol].gating_events
    assert "preskillshellcommand" in PROTOCOLS["claude"].gating_events
    assert set(GATING_EVENTS) == set(settings.HOSTS)


def test_an_async_handler_is_reported_as_not_gating(tmp_path):
    path = claude_file(tmp_path, "guard.sh", **{"async": True})
    report = settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    assert report.wrapped == [] and "NOT GATING" in report.left[0].why
    assert handler_of(path)["command"] == "guard.sh"
    path = claude_file(tmp_path, "guard.sh", name="sync.json", **{"async": False})  # twin
    assert len(settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env()).wrapped) == 1


def test_an_http_hook_gets_the_hosts_fail_closed_switch(tmp_path):
    path = tmp_path / "settings.json"
    original = json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:1/x"}]}]}}, indent=2) + "\n"
    path.write_text(original)
    report = settings.wrap_settings(str(path), "claude", on_failure="block", environ=clean_env())
    assert handler_of(path)["onFailure"] == "block" and "onFailure" in report.left[0].why
    path.write_text(original)  # twin: where the host cannot honour it, nothing is added
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    assert path.read_text() == original


# ---------------------------------------------------------------- the Claude answer schema


@pytest.mark.parametrize("answer", [
    {"terminalSequence": "\u001b]9;done\u0007"},
    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDisplay": {"x": 1}}},
    {"decision": "approve", "x-guard-version": "3"},
    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "ruleId": "r1"}},
])
def test_claude_keys_of_the_pinned_release_and_inert_unknown_keys_pass(run_hook, answer):
    run = run_hook("claude", ["/bin/sh", "-c", "cat >/dev/null; echo '%s'" % json.dumps(answer)])
    assert run.triple == (json.dumps(answer) + "\n", "", 0)
    assert run.event["failure"] is None


@pytest.mark.parametrize("answer", [
    {"decision": "approve", "Decision": "block"},
    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "PermissionDecision": "deny"}},
    {"verdict": "deny"},
    {"terminalSequence": 5},
    {"hookspecificoutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}},
    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedinput": {"command": "ls"}}},
])
def test_claude_unknown_decision_keys_and_wrong_types_deny(run_hook, answer):
    run = run_hook("claude", ["/bin/sh", "-c", "cat >/dev/null; echo '%s'" % json.dumps(answer)])
    assert run.triple == expected_deny("claude", failure_reason("command:guard", "invalid"))


# ---------------------------------------------------------------- the host's own failure policy


@pytest.mark.parametrize("host,field,value", [("pool", "failure_policy", "allow"), ("kiro", "on_error", "fail_open")])
def test_the_hosts_fail_open_field_is_honoured_from_a_user_file_only(tmp_path, monkeypatch, host, field, value):
    home = tmp_path / "home"
    where = {"pool": home / ".pool" / "settings.json", "kiro": home / ".kiro" / "agents" / "crew.json"}[host]
    where.parent.mkdir(parents=True)
    monkeypatch.setattr(runner_config, "real_home", lambda: str(home))
    hook = make_hook(tmp_path, "exit 1")
    event = "PreToolUse" if host == "pool" else "preToolUse"
    document = {"hooks": {event: [{"command": hook, field: value}]}}
    project = tmp_path / "project" / "settings.json"
    project.parent.mkdir()
    for path in (where, project):
        path.write_text(json.dumps(document))
        settings.wrap_settings(str(path), host, environ=clean_env())
    protocol = settings.HOSTS[host].protocol
    user = json.loads(where.read_text())["hooks"][event][0]
    assert host_runs(user, clean_env(), tmp_path, protocol=protocol) == ("", "", 0)  # declared fail-open
    proj = json.loads(project.read_text())["hooks"][event][0]
    got = host_runs(proj, clean_env(), tmp_path, protocol=protocol)
    assert got[2] == 2  # twin: the same field in a project file opens nothing
    # and a hook that answers deny is still a deny when declared fail-open
    deny = make_hook(tmp_path, "echo no >&2; exit 2", name="deny.sh")
    where.write_text(json.dumps({"hooks": {event: [{"command": deny, field: value}]}}))
    settings.wrap_settings(str(where), host, environ=clean_env())
    assert host_runs(json.loads(where.read_text())["hooks"][event][0], clean_env(), tmp_path, protocol=protocol)[2] == 2


# ---------------------------------------------------------------- install and uninstall


def test_uninstall_keeps_a_command_the_user_edited_after_install(tmp_path):
    path = claude_file(tmp_path, "/opt/old-guard.sh")
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    document = json.loads(path.read_text())
    handler = document["hooks"]["PreToolUse"][0]["hooks"][0]
    handler["command"] = handler["command"].replace("/opt/old-guard.sh", "/opt/new-guard.sh")
    path.write_text(json.dumps(document, indent=2) + "\n")
    edited = path.read_text()
    report = settings.unwrap_settings(str(path))
    assert report == 0 and [k[2] for k in report.kept] == [["command"]]
    assert path.read_text() == edited  # the old path is not brought back
    # twin: an untouched install is restored exactly
    path = claude_file(tmp_path, "/opt/old-guard.sh", name="twin.json")
    original = path.read_text()
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env())
    assert settings.unwrap_settings(str(path)) == 1 and path.read_text() == original


def test_uninstall_keeps_a_timeout_the_user_changed_or_deleted(tmp_path):
    for change in ("edit", "delete"):
        path = claude_file(tmp_path, "guard.sh", name=change + ".json")
        settings.wrap_settings(str(path), "claude", on_failure="block", environ=clean_env())
        document = json.loads(path.read_text())
        handler = document["hooks"]["PreToolUse"][0]["hooks"][0]
        if change == "edit":
            handler["timeout"] = 120
        else:
            del handler["timeout"]
        path.write_text(json.dumps(document, indent=2) + "\n")
        report = settings.unwrap_settings(str(path))
        assert report == 1 and report.kept[0][2] == ["timeout"]
        restored = handler_of(path)
        assert restored["command"] == "guard.sh" and "onFailure" not in restored  # untouched keys restored
        assert restored.get("timeout") == (120 if change == "edit" else None)


def test_install_keeps_a_symlinked_settings_file_a_symlink(tmp_path):
    target = claude_file(tmp_path, "guard.sh", name="real.json")
    original = target.read_text()
    link = tmp_path / "settings.json"
    os.symlink(str(target), str(link))
    settings.wrap_settings(str(link), "claude", on_failure="omit", environ=clean_env())
    assert os.path.islink(link) and settings._is_wrapped(handler_of(target))
    assert settings.unwrap_settings(str(link)) == 1
    assert os.path.islink(link) and target.read_text() == original
    # twin: a regular file stays a regular file
    plain = claude_file(tmp_path, "guard.sh", name="plain.json")
    settings.wrap_settings(str(plain), "claude", on_failure="omit", environ=clean_env())
    assert not os.path.islink(plain) and settings._is_wrapped(handler_of(plain))


def test_doctor_flags_a_projects_disable_all_hooks(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    user = home / ".claude" / "settings.json"
    user.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "guard.sh"}]}]}}))
    settings.wrap_settings(str(user), "claude", on_failure="omit", environ=clean_env())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"disableAllHooks": True}))
    env = dict(clean_env(), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    doctor = [sys.executable, "-m", "failsecure", "doctor", "--no-self-test"]
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    assert out.returncode == 1
    assert '"disableAllHooks": true switches every hook off' in out.stdout
    (project / ".claude" / "settings.json").write_text(json.dumps({"disableAllHooks": False}))  # twin
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    assert "disableAllHooks" not in out.stdout and out.returncode == 0, out.stdout


@pytest.mark.parametrize("variable,value", [
    ("SHELLOPTS", "noexec"),
    ("BASH_ENV", "{exit0}"),
    ("ENV", "{exit0}"),
    ("BASH_FUNC_exit%%", "() { builtin exit 0; }"),
])
def test_the_hooks_environment_cannot_change_what_its_shell_runs(tmp_path, variable, value):
    # The install-time shell is bash (the user's $SHELL): a project's env must not make
    # it run nothing (noexec) or something else first (BASH_ENV) and exit 0.
    exit0 = tmp_path / "exit0.sh"
    exit0.write_text("exit 0\n")
    value = value.replace("{exit0}", str(exit0))
    hook = make_hook(tmp_path, "exit 1")
    path = claude_file(tmp_path, hook)
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env(SHELL="/bin/bash"))
    handler = handler_of(path)
    assert settings._launch_of(handler).shell == "/bin/bash"
    assert host_runs(handler, clean_env(**{variable: value}), tmp_path) == crashed(hook)
    # twin: an allowing hook runs, and an ordinary variable still reaches the hook
    probe = make_hook(tmp_path, 'test "$GUARD_MODE" = strict', name="probe.sh")
    path = claude_file(tmp_path, probe, name="probe.json")
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env(SHELL="/bin/bash"))
    assert host_runs(handler_of(path), clean_env(GUARD_MODE="strict", **{variable: value}), tmp_path) == ("", "", 0)


def test_doctor_flags_a_projects_shell_prefix(tmp_path):
    # Claude Code launches a shell-form hook as `$CLAUDE_CODE_SHELL_PREFIX <command>`, and a
    # repository's .claude/settings.json `env` can set it: the project's program then
    # decides whether the wrapped guard runs at all (tests/command_hooks/claude_code/test_project_launch.py)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    user = home / ".claude" / "settings.json"
    user.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "guard.sh"}]}]}}))
    settings.wrap_settings(str(user), "claude", on_failure="omit", environ=clean_env())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"env": {"CLAUDE_CODE_SHELL_PREFIX": "./skip.sh"}}))
    env = dict(clean_env(), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    doctor = [sys.executable, "-m", "failsecure", "doctor", "--no-self-test"]
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    assert out.returncode == 1, out.stdout
    assert '"CLAUDE_CODE_SHELL_PREFIX"' in out.stdout and "./skip.sh" not in out.stdout
    (project / ".claude" / "settings.json").write_text(json.dumps({"env": {"OTHER": "x"}}))  # twin
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    assert "CLAUDE_CODE_SHELL_PREFIX" not in out.stdout and out.returncode == 0, out.stdout


@pytest.mark.parametrize("variable", ["LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH"])
def test_doctor_flags_a_projects_loader_variable(tmp_path, variable):
    # a repository's .claude/settings.json `env` reaches every hook Claude Code starts, and
    # the dynamic loader acts on /bin/sh before the prelude runs: a library that exits 0
    # skips the wrapped guard, exec form or not (claude_code/test_project_preload.py)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    user = home / ".claude" / "settings.json"
    user.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "guard.sh"}]}]}}))
    settings.wrap_settings(str(user), "claude", on_failure="omit", environ=clean_env())
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"env": {variable: "./evil.so"}}))
    env = dict(clean_env(), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    doctor = [sys.executable, "-m", "failsecure", "doctor", "--no-self-test"]
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    assert out.returncode == 1, out.stdout
    assert '"%s"' % variable in out.stdout and "./evil.so" not in out.stdout
    (project / ".claude" / "settings.json").write_text(json.dumps({"env": {variable: ""}}))  # twin: pinned empty
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    assert variable not in out.stdout and out.returncode == 0, out.stdout
    document = json.loads(user.read_text())
    document["env"] = {variable: "/opt/mine"}  # twin: the user's own settings are trusted
    user.write_text(json.dumps(document))
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    assert variable not in out.stdout and out.returncode == 0, out.stdout


@pytest.mark.parametrize("switch", [{"enabled": False}, {"disabled": ["guard"]}], ids=["all-off", "by-name"])
def test_doctor_flags_a_workspaces_gemini_hooks_switch(tmp_path, switch):
    # Gemini CLI merges hooksConfig from a trusted workspace's .gemini/settings.json:
    # `enabled: false` or `disabled: [...]` switches the user's wrapped guard off
    # (tests/command_hooks/gemini_cli/test_workspace_settings.py)
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    user = home / ".gemini" / "settings.json"
    user.write_text(json.dumps({"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "name": "guard", "command": "guard.sh"}]}]}}))
    settings.wrap_settings(str(user), "gemini", environ=clean_env())
    project = tmp_path / "project"
    (project / ".gemini").mkdir(parents=True)
    (project / ".gemini" / "settings.json").write_text(json.dumps({"hooksConfig": switch}))
    env = dict(clean_env(), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    doctor = [sys.executable, "-m", "failsecure", "doctor", "--no-self-test"]
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    assert out.returncode == 1, out.stdout
    assert '"hooksConfig"' in out.stdout and str(project / ".gemini" / "settings.json") in out.stdout
    (project / ".gemini" / "settings.json").write_text(json.dumps({"hooksConfig": {"notifications": False}}))  # twin
    out = subprocess.run(doctor, capture_output=True, text=True, cwd=str(project), env=env, timeout=120)
    assert "hooksConfig" not in out.stdout and out.returncode == 0, out.stdout
