"""The config loader and its trust model, pinned value by value: which file wins, which
origin is reported, which key a project file may not set (and the stderr line saying
so), the exact validation errors, the trust store, and ``policy.using``.

Written for the mutants of core/policy.py that survived `tox -e mutation` (see
docs/mutation.md); each test states behaviour the docs promise (docs/configuration.md).
"""

import builtins
import contextvars
import hashlib
import math
import os
import stat
import sys
import threading

import pytest

from failsecure import policy
from failsecure.policy import DEFAULT_TIMEOUT, Config, ConfigError, HookPolicy


# ---------------------------------------------------------------- helpers


def user_config(tmp_path, text):
    """Write the user's (trusted) config under $XDG_CONFIG_HOME (set by conftest)."""
    path = tmp_path / "xdg" / "failsecure" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def env_config(tmp_path, monkeypatch, text, name="trusted.toml"):
    """Write a $FAILSECURE_CONFIG file (trusted, overrides the user's)."""
    path = tmp_path / name
    path.write_text(text)
    monkeypatch.setenv("FAILSECURE_CONFIG", str(path))
    return str(path)


def project(tmp_path, text, name="failsecure.toml"):
    """Write a project file in the working directory (untrusted unless `trust`ed)."""
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def ignoring_line(where, setting):
    return (
        f"failsecure: ignoring {setting} in {where}: a project config may only make things stricter "
        f"(trust this file with `failsecure config trust {where}`)\n"
    )


def config_error(text, where="f.toml"):
    with pytest.raises(ConfigError) as info:
        policy.layer(text, where)
    return str(info.value)


# ---------------------------------------------------------------- the model


def test_hook_policy_defaults_and_repr():
    p = HookPolicy()
    assert (p.on_error, p.timeout, p.role) == ("deny", None, "gate")
    assert p.interactive_timeout is None
    assert repr(p) == "HookPolicy(on_error='deny', timeout=None, role='gate', interactive_timeout=None)"
    q = HookPolicy("allow", 2.5, "observer", 60.0)
    assert repr(q) == "HookPolicy(on_error='allow', timeout=2.5, role='observer', interactive_timeout=60.0)"


def test_config_defaults_and_repr():
    c = Config()
    assert (c.on_error, c.timeout, c.required, c.audit_path, c.audit_otel) == ("deny", 30.0, (), None, False)
    assert (c.hooks, c.error, c.source, c.origins, c.ignored, c.sources) == ({}, None, None, {}, [], [])
    assert repr(c) == "Config(source=None, error=None)"
    assert repr(Config(error="bad", source="/x.toml")) == "Config(source='/x.toml', error='bad')"


def test_config_keeps_the_hooks_and_required_it_is_given():
    own = HookPolicy(on_error="allow", timeout=3.0, role="observer")
    c = Config(on_error="allow", timeout=4.0, required=["fw:a"], audit_path="/a", hooks={"fw:x": own}, audit_otel=True)
    assert c.hooks == {"fw:x": own} and c.required == ("fw:a",) and type(c.required) is tuple
    assert (c.on_error, c.timeout, c.audit_path, c.audit_otel) == ("allow", 4.0, "/a", True)
    assert c.hook("fw:x").role == "observer" and c.hook("fw:x").on_error == "allow"
    assert c.timeout_for("fw:x") == 3.0 and c.timeout_for("fw:other") == 4.0


def test_hook_resolution_against_the_global_defaults():
    c = Config(on_error="allow", hooks={
        "fw:unset": HookPolicy(on_error=None, timeout=None, role=None),
        "fw:deny": HookPolicy(on_error="deny", timeout=0.0, role="observer"),
    })
    unset = c.hook("fw:unset")
    assert (unset.on_error, unset.timeout, unset.role) == ("allow", None, "gate")  # the global on_error
    own = c.hook("fw:deny")
    assert (own.on_error, own.timeout, own.role) == ("deny", 0.0, "observer")
    absent = c.hook("fw:absent")
    assert (absent.on_error, absent.timeout, absent.role) == ("allow", None, "gate")
    assert c.hook("fw:deny") is own and c.hook("fw:absent") is absent  # resolved once


def test_timeout_for_each_case():
    c = Config(timeout=5.0, hooks={
        "fw:none": HookPolicy(None, 0.0, None),
        "fw:own": HookPolicy(None, 7.0, None),
    })
    assert c.timeout_for("fw:other") == 5.0  # not interactive by default
    assert c.timeout_for("fw:other", interactive=True) is None
    assert c.timeout_for("fw:own") == 7.0 and c.timeout_for("fw:own", True) == 7.0
    assert c.timeout_for("fw:none") is None and c.timeout_for("fw:none", True) is None  # 0 = none
    assert Config(timeout=0.0).timeout_for("fw:x") is None


def test_required_for_one_framework_and_the_plugins():
    c = Config(required=("fw:a", "other:b", "plugin:corp", "fw:c:d", "fwx:e", "fw2:f"))
    assert c.required_for("fw") == ("fw:a", "plugin:corp", "fw:c:d")
    assert c.required_for("other") == ("other:b", "plugin:corp")
    assert c.required_for("none") == ("plugin:corp",)


# ---------------------------------------------------------------- validation


def test_layer_returns_only_what_the_file_sets():
    assert policy.layer({}) == {"hooks": {}}
    assert policy.layer({"required": []}) == {"hooks": {}}
    assert policy.layer({"on_error": "deny", "timeout": 30}) == {"hooks": {}, "on_error": "deny", "timeout": 30.0}
    assert policy.layer({"audit": {"otel": False}}) == {"hooks": {}, "audit_otel": False}
    full = policy.layer({
        "on_error": "allow", "timeout": 0, "required": ["fw:a", "plugin:p"],
        "audit": {"path": "/var/a.jsonl", "otel": True},
        "hooks": {"fw:x": {"on_error": "allow", "timeout": 2, "role": "observer"}, "fw:y": {"role": "gate"}, "fw:z": {}},
    })
    assert full == {
        "hooks": {"fw:x": {"on_error": "allow", "timeout": 2.0, "role": "observer"}, "fw:y": {"role": "gate"}, "fw:z": {}},
        "on_error": "allow", "timeout": 0.0, "required": ("fw:a", "plugin:p"),
        "audit_path": "/var/a.jsonl", "audit_otel": True,
    }
    assert type(full["timeout"]) is float and type(full["hooks"]["fw:x"]["timeout"]) is float


def test_layer_audit_path_relative_to_the_file(tmp_path):
    assert policy.layer({"audit": {"path": "a.jsonl"}})["audit_path"] == "a.jsonl"  # no file: as given
    assert policy.layer({"audit": {"path": "a.jsonl"}}, "/srv/app/c.toml")["audit_path"] == "/srv/app/a.jsonl"
    assert policy.layer({"audit": {"path": "/abs/a.jsonl"}}, "/srv/app/c.toml")["audit_path"] == "/abs/a.jsonl"
    assert policy.layer({"audit": {"path": "a.jsonl"}}, "sub/c.toml")["audit_path"] == str(tmp_path / "sub" / "a.jsonl")


def test_validate_is_a_whole_trusted_config():
    c = policy.validate({"on_error": "allow", "timeout": 3, "hooks": {"fw:x": {"role": "observer"}}})
    assert (c.source, c.sources, c.error) == ("<config>", ["<config>"], None)
    assert c.on_error == "allow" and c.timeout == 3.0 and c.hook("fw:x").role == "observer"
    assert c.origins == {"on_error": "<config>", "timeout": "<config>", 'hooks."fw:x".role': "<config>"}
    assert not c.ignored
    d = policy.validate({}, "/etc/x.toml")
    assert (d.source, d.sources, d.origins, d.timeout) == ("/etc/x.toml", ["/etc/x.toml"], {}, 30.0)
    with pytest.raises(ConfigError, match="^/etc/x.toml: unknown key 'x'"):
        policy.validate({"x": 1}, "/etc/x.toml")


@pytest.mark.parametrize(
    "data, message",
    [
        ([], "f.toml: 'failsecure' must be a table, got list"),
        ({"timeot": 3}, "f.toml: unknown key 'timeot' (known: on_error, timeout, required, audit, hooks, ungoverned)"),
        ({"timeout": "3"}, "f.toml: 'timeout' must be a number of seconds, got str"),
        ({"timeout": True}, "f.toml: 'timeout' must be a number of seconds, got bool"),
        ({"timeout": None}, "f.toml: 'timeout' must be a number of seconds, got NoneType"),
        ({"timeout": -1}, "f.toml: 'timeout' must be a finite number >= 0"),
        ({"timeout": -0.5}, "f.toml: 'timeout' must be a finite number >= 0"),
        ({"timeout": math.inf}, "f.toml: 'timeout' must be a finite number >= 0"),
        ({"timeout": -math.inf}, "f.toml: 'timeout' must be a finite number >= 0"),
        ({"timeout": math.nan}, "f.toml: 'timeout' must be a finite number >= 0"),
        ({"on_error": "ignore"}, "f.toml: 'on_error' must be 'deny' or 'allow', got 'ignore'"),
        ({"on_error": 1}, "f.toml: 'on_error' must be 'deny' or 'allow', got 1"),
        ({"on_error": ["deny"]}, "f.toml: 'on_error' must be 'deny' or 'allow', got ['deny']"),
        ({"required": "fw:x"}, "f.toml: 'required' must be a list of hook ids"),
        ({"required": ["fw:x", "guard"]}, "f.toml: 'required[1]' must be a hook id '<framework>:<hook>' or 'plugin:<name>'"),
        ({"required": [3]}, "f.toml: 'required[0]' must be a hook id '<framework>:<hook>' or 'plugin:<name>'"),
        ({"required": ["fw:"]}, "f.toml: 'required[0]' must be a hook id '<framework>:<hook>' or 'plugin:<name>'"),
        ({"required": ["plugin:"]}, "f.toml: 'required[0]' must be a hook id '<framework>:<hook>' or 'plugin:<name>'"),
        ({"audit": "a.jsonl"}, "f.toml: 'audit' must be a table, got str"),
        ({"audit": {"file": "x"}}, "f.toml: unknown key 'audit.file' (known: path, otel)"),
        ({"audit": {"path": 3}}, "f.toml: 'audit.path' must be a non-empty string"),
        ({"audit": {"path": ""}}, "f.toml: 'audit.path' must be a non-empty string"),
        ({"audit": {"otel": "yes"}}, "f.toml: 'audit.otel' must be true or false, got str"),
        ({"audit": {"otel": 1}}, "f.toml: 'audit.otel' must be true or false, got int"),
        ({"hooks": ["fw:x"]}, "f.toml: 'hooks' must be a table, got list"),
        ({"hooks": {"fw:x": 3}}, "f.toml: 'hooks.\"fw:x\"' must be a table, got int"),
        ({"hooks": {"fw:x": {"fail": 1}}}, "f.toml: unknown key 'hooks.\"fw:x\".fail' (known: on_error, timeout, role)"),
        ({"hooks": {"fw:x": {"on_error": "no"}}}, "f.toml: 'hooks.\"fw:x\".on_error' must be 'deny' or 'allow', got 'no'"),
        ({"hooks": {"fw:x": {"timeout": "1"}}}, "f.toml: 'hooks.\"fw:x\".timeout' must be a number of seconds, got str"),
        ({"hooks": {"fw:x": {"timeout": -2}}}, "f.toml: 'hooks.\"fw:x\".timeout' must be a finite number >= 0"),
        ({"hooks": {"fw:x": {"role": "watcher"}}}, "f.toml: 'hooks.\"fw:x\".role' must be 'gate' or 'observer', got 'watcher'"),
    ],
)
def test_invalid_values_are_rejected_with_the_exact_message(data, message):
    assert config_error(data) == message


def test_an_unknown_key_is_rejected_before_the_values_are_checked():
    assert config_error({"timeout": "x", "zzz": 1}) == (
        "f.toml: unknown key 'zzz' (known: on_error, timeout, required, audit, hooks, ungoverned)"
    )


def test_a_long_bad_value_is_cut_to_300_characters():
    message = config_error({"on_error": "x" * 400})
    assert len(message) == 300
    assert message.startswith("f.toml: 'on_error' must be 'deny' or 'allow', got 'xxx")


@pytest.mark.parametrize("value", [0, 0.0, 0.5, 1, 2.5, 1e9])
def test_valid_timeouts_are_floats(value):
    got = policy.layer({"timeout": value, "hooks": {"fw:x": {"timeout": value}}})
    assert got["timeout"] == float(value) and type(got["timeout"]) is float
    assert got["hooks"]["fw:x"]["timeout"] == float(value)


@pytest.mark.parametrize("rid", ["fw:x", "plugin:corp", "fw:a:b", "fw::x", "code-puppy:a.b.c"])
def test_valid_required_ids(rid):
    assert policy.layer({"required": [rid]})["required"] == (rid,)


# ---------------------------------------------------------------- merging: trusted files


def test_trusted_layers_override_key_by_key_with_origins(tmp_path, monkeypatch):
    user = user_config(tmp_path, 'on_error = "allow"\ntimeout = 10\n[hooks."fw:x"]\nrole = "observer"\ntimeout = 4\n')
    env = env_config(tmp_path, monkeypatch, 'timeout = 20\n[hooks."fw:x"]\ntimeout = 6\n')
    c = policy.reload()
    assert (c.on_error, c.timeout) == ("allow", 20.0)
    assert c.hook("fw:x").role == "observer" and c.timeout_for("fw:x") == 6.0
    assert c.origins == {"on_error": user, "timeout": env, 'hooks."fw:x".role': user, 'hooks."fw:x".timeout': env}
    assert c.sources == [user, env] and c.source == env and not c.ignored


def test_a_trusted_file_can_loosen_what_an_earlier_one_set(tmp_path, monkeypatch):
    user_config(tmp_path, 'timeout = 5\n[audit]\notel = true\npath = "/a/u.jsonl"\n')
    env = env_config(tmp_path, monkeypatch, 'timeout = 0\n[audit]\notel = false\npath = "e.jsonl"\n')
    c = policy.reload()
    assert c.timeout == 0.0 and c.timeout_for("fw:x") is None
    assert c.audit_otel is False and c.audit_path == str(tmp_path / "e.jsonl")
    assert c.origins == {"timeout": env, "audit_otel": env, "audit_path": env}


def test_a_trusted_file_repeating_the_default_is_the_origin(tmp_path):
    user = user_config(tmp_path, 'on_error = "deny"\ntimeout = 30\n')
    c = policy.reload()
    assert c.origins == {"on_error": user, "timeout": user}


def test_the_user_config_defaults_to_home_dot_config(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = tmp_path / "home" / ".config" / "failsecure" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("timeout = 9\n")
    c = policy.reload()
    assert c.timeout == 9.0 and c.sources == [str(path)] and c.origins == {"timeout": str(path)}
    assert policy.trust_store() == str(tmp_path / "home" / ".config" / "failsecure" / "trusted")


def test_an_empty_xdg_config_home_means_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert policy.trust_store() == str(tmp_path / "home" / ".config" / "failsecure" / "trusted")


def test_trusted_paths_system_then_user_then_env(tmp_path, monkeypatch):
    assert policy.trusted_paths() == []
    user = user_config(tmp_path, "")
    real = os.path.isfile
    seen = []

    def isfile(p):
        seen.append(p)
        return p == "/etc/failsecure/config.toml" or real(p)

    monkeypatch.setattr(os.path, "isfile", isfile)
    assert policy.trusted_paths() == ["/etc/failsecure/config.toml", user]
    assert seen == ["/etc/failsecure/config.toml", user]
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "missing.toml"))  # named: listed even if absent
    assert policy.trusted_paths() == ["/etc/failsecure/config.toml", user, str(tmp_path / "missing.toml")]
    monkeypatch.setenv("FAILSECURE_CONFIG", "")
    assert policy.trusted_paths() == ["/etc/failsecure/config.toml", user]


# ---------------------------------------------------------------- merging: project files


def test_project_on_error_allow_is_ignored_with_one_stderr_line(tmp_path, capsys):
    path = project(tmp_path, 'on_error = "allow"\n')
    c = policy.reload()
    assert c.on_error == "deny" and c.ignored == [(path, 'on_error = "allow"')]
    assert "on_error" not in c.origins and c.sources == [path] and c.source == path
    assert capsys.readouterr().err == ignoring_line(path, 'on_error = "allow"')


def test_project_settings_that_change_nothing_are_neither_ignored_nor_origins(tmp_path, capsys):
    path = project(tmp_path, 'on_error = "deny"\ntimeout = 30\n[hooks."fw:x"]\non_error = "deny"\n[audit]\notel = false\n')
    c = policy.reload()
    assert c.ignored == [] and capsys.readouterr().err == ""
    assert c.origins == {'hooks."fw:x".on_error': path}  # a hook's own on_error is new
    assert (c.on_error, c.timeout, c.audit_otel) == ("deny", 30.0, False)
    assert c.sources == [path] and c.source == path


def test_project_on_error_deny_over_a_trusted_allow(tmp_path, monkeypatch):
    env = env_config(tmp_path, monkeypatch, 'on_error = "allow"\n')
    path = project(tmp_path, 'on_error = "deny"\n')
    c = policy.reload()
    assert c.on_error == "deny" and c.origins == {"on_error": path} and not c.ignored
    assert c.sources == [env, path] and c.source == path


def test_project_timeouts_ignored_lines(tmp_path, monkeypatch, capsys):
    path = project(tmp_path, 'timeout = 120\n[hooks."fw:x"]\ntimeout = 0\n[hooks."fw:y"]\ntimeout = 60\n')
    c = policy.reload()
    assert c.timeout == 30.0 and c.timeout_for("fw:x") == 30.0 and c.timeout_for("fw:y") == 30.0
    # 60 s is looser than the global 30 s, but stricter than none while fw:y waits for a human
    assert c.timeout_for("fw:y", interactive=True) == 60.0 and c.timeout_for("fw:x", interactive=True) is None
    waiting = 'hooks."fw:y".timeout = 60.0 for calls not waiting for a human'
    assert c.ignored == [(path, "timeout = 120.0"), (path, 'hooks."fw:x".timeout = 0.0'), (path, waiting)]
    assert capsys.readouterr().err == (
        ignoring_line(path, "timeout = 120.0")
        + ignoring_line(path, 'hooks."fw:x".timeout = 0.0')
        + ignoring_line(path, waiting)
    )
    assert c.origins == {'hooks."fw:y".timeout (waiting for a human)': path}


def test_project_shorter_timeouts_apply(tmp_path, monkeypatch):
    env = env_config(tmp_path, monkeypatch, 'timeout = 10\n[hooks."fw:x"]\ntimeout = 8\n')
    path = project(tmp_path, (
        'timeout = 9.5\n[hooks."fw:x"]\ntimeout = 7.9\n[hooks."fw:y"]\ntimeout = 9\n'
        '[hooks."fw:z"]\ntimeout = 9.9\n'  # shorter than the trusted 10, not than this file's own 9.5
    ))
    c = policy.reload()
    assert c.timeout == 9.5 and c.timeout_for("fw:x") == 7.9 and c.timeout_for("fw:y") == 9.0
    assert c.timeout_for("fw:z") == 9.5 and c.timeout_for("fw:z", interactive=True) == 9.9
    assert c.origins == {"timeout": path, 'hooks."fw:x".timeout': path, 'hooks."fw:y".timeout': path,
                         'hooks."fw:z".timeout (waiting for a human)': path}
    assert c.ignored == [(path, 'hooks."fw:z".timeout = 9.9 for calls not waiting for a human')]
    assert c.sources == [env, path]


def test_project_hook_timeout_is_judged_against_the_hooks_own(tmp_path, monkeypatch):
    # the hook's own trusted deadline (8), not the global one (10), is what must be beaten
    env = env_config(tmp_path, monkeypatch, 'timeout = 10\n[hooks."fw:x"]\ntimeout = 8\n')
    path = project(tmp_path, '[hooks."fw:x"]\ntimeout = 9\n')
    c = policy.reload()
    assert c.timeout_for("fw:x") == 8.0 and c.origins == {"timeout": env, 'hooks."fw:x".timeout': env}
    assert c.ignored == [(path, 'hooks."fw:x".timeout = 9.0')]


def test_project_timeout_equal_to_the_trusted_one_keeps_the_trusted_origin(tmp_path, monkeypatch):
    env = env_config(tmp_path, monkeypatch, 'timeout = 10\n[hooks."fw:x"]\ntimeout = 8\n')
    project(tmp_path, 'timeout = 10\n[hooks."fw:x"]\ntimeout = 8\n')
    c = policy.reload()
    assert c.timeout == 10.0 and c.timeout_for("fw:x") == 8.0 and not c.ignored
    assert c.origins == {"timeout": env, 'hooks."fw:x".timeout': env}


def test_project_cannot_set_a_deadline_when_the_trusted_one_is_none(tmp_path, monkeypatch):
    # a trusted "no deadline" (0) is beaten by any positive project deadline
    env_config(tmp_path, monkeypatch, 'timeout = 0\n[hooks."fw:x"]\ntimeout = 0\n')
    path = project(tmp_path, 'timeout = 50\n[hooks."fw:x"]\ntimeout = 40\n')
    c = policy.reload()
    assert c.timeout == 50.0 and c.timeout_for("fw:x") == 40.0 and not c.ignored
    assert c.origins["timeout"] == path and c.origins['hooks."fw:x".timeout'] == path


def test_project_repeating_a_trusted_no_deadline_is_no_change(tmp_path, monkeypatch, capsys):
    env = env_config(tmp_path, monkeypatch, '[hooks."fw:x"]\ntimeout = 0\n')
    project(tmp_path, '[hooks."fw:x"]\ntimeout = 0\n')
    c = policy.reload()
    assert c.timeout_for("fw:x") is None and c.ignored == [] and capsys.readouterr().err == ""
    assert c.origins == {'hooks."fw:x".timeout': env}


def test_project_audit_settings(tmp_path, monkeypatch, capsys):
    path = project(tmp_path, '[audit]\npath = "here.jsonl"\notel = true\n')
    c = policy.reload()
    assert c.audit_path is None and c.audit_otel is True
    assert c.ignored == [(path, f'audit.path = "{tmp_path / "here.jsonl"}"')]
    assert c.origins == {"audit_otel": path}
    assert capsys.readouterr().err == ignoring_line(path, f'audit.path = "{tmp_path / "here.jsonl"}"')


def test_project_cannot_switch_the_trusted_otel_off(tmp_path, monkeypatch, capsys):
    env = env_config(tmp_path, monkeypatch, '[audit]\notel = true\npath = "/a/t.jsonl"\n')
    path = project(tmp_path, '[audit]\notel = false\npath = "/a/t.jsonl"\n')
    c = policy.reload()
    assert c.audit_otel is True and c.audit_path == "/a/t.jsonl"
    assert c.ignored == [(path, "audit.otel = false")]  # the same path is no change
    assert c.origins == {"audit_otel": env, "audit_path": env}
    assert capsys.readouterr().err == ignoring_line(path, "audit.otel = false")


def test_project_otel_on_when_trusted_already_on_changes_no_origin(tmp_path, monkeypatch):
    env = env_config(tmp_path, monkeypatch, '[audit]\notel = true\n')
    project(tmp_path, '[audit]\notel = true\n')
    c = policy.reload()
    assert c.audit_otel is True and c.origins == {"audit_otel": env} and not c.ignored


def test_project_hook_settings(tmp_path, monkeypatch, capsys):
    env = env_config(tmp_path, monkeypatch, 'on_error = "allow"\n[hooks."fw:obs"]\nrole = "observer"\n')
    path = project(tmp_path, (
        '[hooks."fw:a"]\non_error = "allow"\n'  # the global is already allow: no change, not ignored
        '[hooks."fw:b"]\nrole = "observer"\n'  # a gate made an observer: ignored
        '[hooks."fw:obs"]\nrole = "observer"\n'  # already an observer: no change
        '[hooks."fw:c"]\non_error = "deny"\nrole = "gate"\n'
    ))
    c = policy.reload()
    assert c.ignored == [(path, 'hooks."fw:b".role = "observer"')]
    assert capsys.readouterr().err == ignoring_line(path, 'hooks."fw:b".role = "observer"')
    assert c.hook("fw:a").on_error == "allow" and c.hook("fw:a").role == "gate"
    assert c.hooks["fw:a"].on_error is None  # it takes the global one, not a value of its own
    assert c.hooks["fw:a"].role is None and c.hooks["fw:a"].timeout is None  # `config show --json`: unset
    assert c.hook("fw:b").role == "gate" and c.hook("fw:b").on_error == "allow"
    assert c.hook("fw:obs").role == "observer"
    assert c.hook("fw:c").on_error == "deny" and c.hook("fw:c").role == "gate"
    assert c.origins == {
        "on_error": env, 'hooks."fw:obs".role': env,
        'hooks."fw:c".on_error': path, 'hooks."fw:c".role': path,
    }


def test_project_hook_on_error_allow_ignored_when_the_global_denies(tmp_path, capsys):
    path = project(tmp_path, '[hooks."fw:a"]\non_error = "allow"\n')
    c = policy.reload()
    assert c.hook("fw:a").on_error == "deny" and c.ignored == [(path, 'hooks."fw:a".on_error = "allow"')]
    assert capsys.readouterr().err == ignoring_line(path, 'hooks."fw:a".on_error = "allow"')


def test_project_cannot_loosen_a_trusted_hook_on_error(tmp_path, monkeypatch):
    # trusted: global allow, but this hook denies; the project cannot make it allow again
    env_config(tmp_path, monkeypatch, 'on_error = "allow"\n[hooks."fw:a"]\non_error = "deny"\n')
    path = project(tmp_path, '[hooks."fw:a"]\non_error = "allow"\n')
    c = policy.reload()
    assert c.hook("fw:a").on_error == "deny" and c.ignored == [(path, 'hooks."fw:a".on_error = "allow"')]
    policy.trust(path)  # the allow twin: trusted, it has full effect
    c = policy.reload()
    assert c.hook("fw:a").on_error == "allow" and not c.ignored and c.origins['hooks."fw:a".on_error'] == path


def test_a_trusted_project_file_may_lengthen_only_a_hook_deadline(tmp_path, monkeypatch):
    # 8 is shorter than the global 10 but longer than the hook's own 5: it loosens
    env_config(tmp_path, monkeypatch, 'timeout = 10\n[hooks."fw:x"]\ntimeout = 5\n')
    path = project(tmp_path, '[hooks."fw:x"]\ntimeout = 8\n')
    c = policy.reload()
    assert c.timeout_for("fw:x") == 5.0 and c.ignored == [(path, 'hooks."fw:x".timeout = 8.0')]
    policy.trust(path)
    c = policy.reload()
    assert c.timeout_for("fw:x") == 8.0 and not c.ignored and c.origins['hooks."fw:x".timeout'] == path


def test_trusted_hook_keeps_the_global_on_error_when_it_sets_none(tmp_path, monkeypatch):
    env_config(tmp_path, monkeypatch, 'on_error = "allow"\n[hooks."fw:x"]\nrole = "observer"\ntimeout = 3\n')
    c = policy.reload()
    assert c.hooks["fw:x"].on_error is None and c.hook("fw:x").on_error == "allow"
    assert c.hook("fw:x").role == "observer" and c.timeout_for("fw:x") == 3.0


def test_project_required_adds_only_new_ids_in_order(tmp_path, monkeypatch):
    env = env_config(tmp_path, monkeypatch, 'required = ["fw:a", "fw:b"]\n')
    project(tmp_path, 'required = ["fw:b", "fw:a"]\n')
    c = policy.reload()
    assert c.required == ("fw:a", "fw:b") and c.origins == {"required": env}
    path = project(tmp_path, 'required = ["fw:b", "fw:c", "plugin:p", "fw:c"]\n')
    c = policy.reload()
    assert c.required == ("fw:a", "fw:b", "fw:c", "plugin:p", "fw:c")
    assert c.origins == {"required": path} and not c.ignored


def test_project_required_alone_from_the_defaults(tmp_path):
    path = project(tmp_path, 'required = ["fw:a"]\n')
    c = policy.reload()
    assert c.required == ("fw:a",) and c.origins == {"required": path}
    assert c.required_for("fw") == ("fw:a",)


# ---------------------------------------------------------------- trusted project files


def test_trusting_a_project_file_gives_full_effect_with_origins(tmp_path, capsys):
    path = project(tmp_path, 'on_error = "allow"\ntimeout = 0\n[audit]\npath = "a.jsonl"\n[hooks."fw:g"]\nrole = "observer"\n')
    policy.trust(path)
    capsys.readouterr()
    c = policy.reload()
    assert (c.on_error, c.timeout, c.audit_path) == ("allow", 0.0, str(tmp_path / "a.jsonl"))
    assert c.hook("fw:g").role == "observer" and not c.ignored and capsys.readouterr().err == ""
    assert c.origins == {"on_error": path, "timeout": path, "audit_path": path, 'hooks."fw:g".role': path}


def test_a_trusted_project_file_may_lengthen_a_trusted_timeout(tmp_path, monkeypatch):
    env_config(tmp_path, monkeypatch, 'timeout = 10\n[hooks."fw:x"]\ntimeout = 5\n')
    path = project(tmp_path, 'timeout = 20\n[hooks."fw:x"]\ntimeout = 15\n')
    assert policy.reload().timeout == 10.0  # untrusted: ignored
    policy.trust(path)
    c = policy.reload()
    assert c.timeout == 20.0 and c.timeout_for("fw:x") == 15.0 and not c.ignored
    assert c.origins == {"timeout": path, 'hooks."fw:x".timeout': path}


def test_a_trusted_project_file_may_switch_otel_off(tmp_path, monkeypatch):
    env_config(tmp_path, monkeypatch, '[audit]\notel = true\n')
    path = project(tmp_path, '[audit]\notel = false\n')
    assert policy.reload().audit_otel is True
    policy.trust(path)
    c = policy.reload()
    assert c.audit_otel is False and c.origins == {"audit_otel": path} and not c.ignored


def test_a_trusted_project_file_that_loosens_nothing_is_merged_as_a_project_file(tmp_path, monkeypatch):
    # trust only matters when the file would loosen: otherwise what equals the trusted
    # values keeps the trusted origin
    env = env_config(tmp_path, monkeypatch, (
        'on_error = "allow"\ntimeout = 10\n[audit]\notel = true\n'
        '[hooks."fw:o"]\nrole = "observer"\non_error = "allow"\ntimeout = 4\n'
    ))
    path = project(tmp_path, (
        'on_error = "allow"\ntimeout = 10\n[audit]\notel = true\n'
        '[hooks."fw:o"]\nrole = "observer"\non_error = "allow"\ntimeout = 4\n'
    ))
    policy.trust(path)
    c = policy.reload()
    assert c.origins == {
        "on_error": env, "timeout": env, "audit_otel": env,
        'hooks."fw:o".role': env, 'hooks."fw:o".on_error': env, 'hooks."fw:o".timeout': env,
    }
    assert not c.ignored and c.sources == [env, path]


def test_a_trusted_project_file_repeating_the_defaults_sets_no_origin(tmp_path):
    path = project(tmp_path, 'on_error = "deny"\ntimeout = 30\n[audit]\notel = false\n')
    policy.trust(path)
    c = policy.reload()
    assert (c.on_error, c.timeout, c.audit_otel) == ("deny", 30.0, False)
    assert c.origins == {} and not c.ignored and c.sources == [path]


def test_a_trusted_project_file_with_a_hook_on_error_equal_to_the_global(tmp_path, monkeypatch):
    env = env_config(tmp_path, monkeypatch, 'on_error = "allow"\n')
    path = project(tmp_path, '[hooks."fw:a"]\non_error = "allow"\n')
    policy.trust(path)
    c = policy.reload()
    assert c.hook("fw:a").on_error == "allow" and c.hooks["fw:a"].on_error is None
    assert c.origins == {"on_error": env} and not c.ignored


def test_trust_store_entry_is_the_sha256_and_the_absolute_path(tmp_path):
    path = project(tmp_path, 'on_error = "allow"\n')
    digest = hashlib.sha256(b'on_error = "allow"\n').hexdigest()
    entry = policy.trust("failsecure.toml")  # relative: stored absolute
    assert entry == f"{digest} {path}"
    store = tmp_path / "xdg" / "failsecure" / "trusted"
    assert policy.trust_store() == str(store)
    assert store.read_text() == entry + "\n"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    assert sorted(os.listdir(store.parent)) == ["trusted"]  # no temporary file left behind
    assert policy.is_trusted("failsecure.toml", b'on_error = "allow"\n')
    assert policy.is_trusted(path, b'on_error = "allow"\n')
    assert not policy.is_trusted(path, b'on_error = "allow"\n# edited\n')
    assert not policy.is_trusted(str(tmp_path / "other.toml"), b'on_error = "allow"\n')


def test_is_trusted_without_a_store(tmp_path):
    path = project(tmp_path, "")
    assert not os.path.exists(policy.trust_store())
    assert policy.is_trusted(path, b"") is False


def test_trusting_again_replaces_the_entry_and_keeps_the_others(tmp_path):
    a = project(tmp_path, "timeout = 1\n")
    (tmp_path / "b").mkdir()
    b = project(tmp_path / "b", "timeout = 2\n")
    first = policy.trust(a)
    second = policy.trust(b)
    store = tmp_path / "xdg" / "failsecure" / "trusted"
    assert store.read_text() == f"{first}\n{second}\n"
    project(tmp_path, "timeout = 3\n")
    third = policy.trust(a)
    assert third != first and store.read_text() == f"{second}\n{third}\n"
    assert policy.is_trusted(a, b"timeout = 3\n") and not policy.is_trusted(a, b"timeout = 1\n")
    assert policy.is_trusted(b, b"timeout = 2\n")


def test_trust_drops_blank_lines_and_keeps_a_path_that_only_shares_a_suffix(tmp_path):
    path = project(tmp_path, "")
    store = tmp_path / "xdg" / "failsecure" / "trusted"
    store.parent.mkdir(parents=True)
    other = f"{'0' * 64} /elsewhere/x{path}"  # ends with the path, not with " " + path
    store.write_text(f"\n{other}\n\n")
    entry = policy.trust(path)
    assert store.read_text() == f"{other}\n{entry}\n"


def test_trust_of_a_missing_file_raises_and_writes_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        policy.trust(str(tmp_path / "missing.toml"))
    assert not os.path.exists(policy.trust_store())


def test_an_unreadable_trust_store_still_fails_closed(tmp_path):
    # a corrupt store is not a reason to apply a loosening project file
    path = project(tmp_path, 'on_error = "allow"\n')
    store = tmp_path / "xdg" / "failsecure" / "trusted"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"\xff\xfe not utf-8\n")
    c = policy.load_light()
    assert c.error == "failsecure: configuration could not be loaded (UnicodeDecodeError)"
    assert c.source is None and c.on_error == "deny"
    with pytest.raises(UnicodeDecodeError):
        policy.load()
    # a project file that only tightens never reads the store
    project(tmp_path, 'on_error = "deny"\ntimeout = 3\n')
    c = policy.load_light()
    assert c.error is None and c.timeout == 3.0 and c.source == path


# ---------------------------------------------------------------- finding the files


def test_project_path_and_find(tmp_path, monkeypatch):
    assert policy.project_path() == (None, False) and policy.find() == (None, False)
    user = user_config(tmp_path, "timeout = 1\n")
    assert policy.find() == (user, False)
    (tmp_path / "pyproject.toml").write_text("[tool.failsecure]\ntimeout = 2\n")
    assert policy.project_path() == (str(tmp_path / "pyproject.toml"), True)
    assert policy.find() == (str(tmp_path / "pyproject.toml"), True)
    fs = project(tmp_path, "timeout = 3\n")
    assert policy.project_path() == (fs, False) and policy.find() == (fs, False)
    env = env_config(tmp_path, monkeypatch, "timeout = 4\n")
    assert policy.find() == (env, False)


def test_a_pyproject_without_the_table_is_passed_over_upward(tmp_path, monkeypatch):
    fs = project(tmp_path, "timeout = 3\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[project]\nname = "x"\n')
    monkeypatch.chdir(sub)
    assert policy.project_path() == (fs, False)
    c = policy.reload()
    assert c.timeout == 3.0 and c.sources == [fs]


def test_a_pyproject_naming_failsecure_elsewhere_is_no_config(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "failsecure-demo"\n[tool.other]\nx = 1\n')
    # the word alone is no [tool.failsecure] table: passed over (issue 25; it used to stop the search)
    assert policy.project_path() == (None, False)
    c = policy.reload()
    assert c.error is None and c.sources == [] and c.source is None and c.timeout == 30.0
    path.write_text('tool = "failsecure"\n')  # not a table
    c = policy.reload()
    assert c.error is None and c.sources == [] and c.source is None


def test_a_pyproject_with_the_table_is_a_project_file(tmp_path, capsys):
    path = str(tmp_path / "pyproject.toml")
    (tmp_path / "pyproject.toml").write_text('[tool.failsecure]\non_error = "allow"\ntimeout = 2\n')
    c = policy.reload()
    assert c.timeout == 2.0 and c.on_error == "deny" and c.sources == [path] and c.source == path
    assert c.ignored == [(path, 'on_error = "allow"')]


def test_an_invalid_pyproject_is_an_error_naming_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.failsecure]\ntimeout = \n")
    c = policy.reload()
    assert c.error.startswith(f"{tmp_path / 'pyproject.toml'}: not valid TOML (")
    assert c.source == str(tmp_path / "pyproject.toml")


def test_an_unreadable_pyproject_is_an_error_not_skipped(tmp_path, monkeypatch):
    path = str(tmp_path / "pyproject.toml")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    real_open = builtins.open

    def deny_read(file, *args, **kwargs):
        if file == path:
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", deny_read)
    assert policy.project_path() == (path, True)
    c = policy.load_light()
    assert c.error == f"{path}: cannot read the file (PermissionError)" and c.source == path


def test_no_project_file_when_the_working_directory_is_gone(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert policy.project_path() == (None, False)
    user = user_config(tmp_path, "timeout = 6\n")
    c = policy.load()
    assert c.timeout == 6.0 and c.sources == [user]


def test_errors_name_the_file(tmp_path, monkeypatch):
    missing = str(tmp_path / "nope.toml")
    monkeypatch.setenv("FAILSECURE_CONFIG", missing)
    c = policy.load_light()
    assert c.error == f"{missing}: cannot read the file (FileNotFoundError)" and c.source == missing
    env = env_config(tmp_path, monkeypatch, "")
    (tmp_path / "trusted.toml").write_bytes(b'on_error = "\xff"\n')
    c = policy.load_light()
    assert c.error.startswith(f"{env}: not valid TOML (") and c.source == env
    with pytest.raises(ConfigError):
        policy.load()


def test_invalid_project_file_error_and_source(tmp_path):
    path = project(tmp_path, "timeout = -1\n")
    c = policy.load_light()
    assert c.error == f"{path}: 'timeout' must be a finite number >= 0" and c.source == path
    assert (c.on_error, c.sources) == ("deny", [])


def test_same_file(tmp_path):
    a = project(tmp_path, "")
    os.symlink(a, tmp_path / "link.toml")
    assert policy._same_file(a, str(tmp_path / "link.toml")) is True
    assert policy._same_file(a, project(tmp_path, "", name="other.toml")) is False
    assert policy._same_file(a, str(tmp_path / "gone.toml")) is False  # a file that is gone is not it


def test_a_project_file_that_is_also_the_env_config_is_read_once(tmp_path, monkeypatch):
    path = project(tmp_path, 'required = ["fw:a"]\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", path)
    c = policy.reload()
    assert c.sources == [path] and c.required == ("fw:a",) and c.origins == {"required": path}


# ---------------------------------------------------------------- stderr, current() and using


def test_invalid_config_line_on_stderr(tmp_path, capsys):
    path = project(tmp_path, "timeot = 1\n")
    policy.reload()
    assert capsys.readouterr().err == (
        "failsecure: invalid configuration, every gated tool call is denied: "
        f"{path}: unknown key 'timeot' (known: on_error, timeout, required, audit, hooks, ungoverned)\n"
    )


def test_no_stderr_no_crash(tmp_path, monkeypatch):
    project(tmp_path, 'on_error = "allow"\n')
    monkeypatch.setattr(sys, "stderr", None)
    c = policy.reload()
    assert c.on_error == "deny" and c.ignored


def test_defaults_are_quiet(capsys):
    c = policy.reload()
    assert c.error is None and c.ignored == [] and capsys.readouterr().err == ""


def test_current_is_loaded_once_and_announced_once(tmp_path, capsys):
    path = project(tmp_path, 'on_error = "allow"\n')
    first = policy.reload()
    assert policy.current() is first and policy.current() is first
    assert capsys.readouterr().err == ignoring_line(path, 'on_error = "allow"')


def test_using_overrides_current_in_this_context_only(tmp_path):
    process = policy.reload()
    mine = policy.validate({"timeout": 1})
    inner = policy.validate({"timeout": 2})
    seen = {}
    with policy.using(mine) as got:
        assert got is mine and policy.current() is mine
        assert policy.reload() is mine  # reload re-reads the process's config, the override still wins
        with policy.using(inner):
            assert policy.current() is inner
        assert policy.current() is mine
        t = threading.Thread(target=lambda: seen.setdefault("thread", policy.current()))
        t.start()
        t.join()
        seen["copy"] = contextvars.copy_context().run(policy.current)
    assert seen["copy"] is mine  # a copied context (the guard's workers) keeps it
    assert seen["thread"] is not mine and seen["thread"].timeout == DEFAULT_TIMEOUT
    assert policy.current() is not mine and policy.current().timeout == process.timeout


def test_using_restores_after_an_exception():
    mine = policy.validate({"timeout": 1})
    before = policy.current()
    with pytest.raises(RuntimeError):
        with policy.using(mine):
            raise RuntimeError("x")
    assert policy.current() is before


def test_a_hook_policy_record_has_every_field():
    own = HookPolicy(on_error="allow", timeout=2.0, role="observer", interactive_timeout=30.0)
    assert own.to_dict() == {"on_error": "allow", "timeout": 2.0, "role": "observer", "interactive_timeout": 30.0}
    again = HookPolicy.from_dict(own.to_dict())
    assert repr(again) == repr(own)


def test_a_config_record_round_trips_its_hooks():
    config = policy.validate({"hooks": {"fw:x": {"timeout": 2, "role": "observer"}}})
    again = Config.from_dict(config.to_dict())
    assert again.hook("fw:x").timeout == 2 and again.hook("fw:x").role == "observer"
    assert again.to_dict() == config.to_dict()


def test_a_stale_config_record_is_refused_by_name():
    record = Config().to_dict()
    del record["frameworks"]
    with pytest.raises(ValueError) as info:
        Config.from_dict(record)
    assert str(info.value) == "not a failsecure config record"


def test_an_invalid_ungoverned_is_named_with_its_file():
    with pytest.raises(ConfigError) as info:
        policy.layer({"ungoverned": "maybe"}, "f.toml")
    assert str(info.value) == "f.toml: 'ungoverned' must be 'deny' or 'audit', got 'maybe'"
