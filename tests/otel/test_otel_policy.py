"""``[audit] otel``: a bool; trusted files set it; a project file may switch it on, never off."""

import pytest

from failsecure import policy


def test_otel_must_be_a_bool():
    with pytest.raises(policy.ConfigError, match="'audit.otel' must be true or false"):
        policy.validate({"audit": {"otel": "yes"}}, "/etc/x.toml")
    assert policy.validate({"audit": {"otel": True}}).audit_otel is True
    assert policy.validate({}).audit_otel is False


def test_unknown_audit_key_still_refused():
    with pytest.raises(policy.ConfigError, match="unknown key 'audit.otle'"):
        policy.validate({"audit": {"otle": True}})


def test_project_file_may_switch_otel_on(tmp_path):
    (tmp_path / "failsecure.toml").write_text("[audit]\notel = true\n")
    config = policy.reload()
    assert config.audit_otel is True and not config.ignored
    assert config.origins["audit_otel"].endswith("failsecure.toml")


def test_project_file_cannot_switch_off_what_a_trusted_file_enabled(tmp_path, monkeypatch):
    trusted = tmp_path / "trusted.toml"
    trusted.write_text("[audit]\notel = true\n")
    monkeypatch.setenv("FAILSECURE_CONFIG", str(trusted))
    (tmp_path / "failsecure.toml").write_text("[audit]\notel = false\n")
    config = policy.reload()
    assert config.audit_otel is True
    assert [setting for _, setting in config.ignored] == ["audit.otel = false"]


def test_trusted_project_file_may_switch_it_off(tmp_path, monkeypatch):
    trusted = tmp_path / "trusted.toml"
    trusted.write_text("[audit]\notel = true\n")
    monkeypatch.setenv("FAILSECURE_CONFIG", str(trusted))
    project = tmp_path / "failsecure.toml"
    project.write_text("[audit]\notel = false\n")
    policy.trust(str(project))
    config = policy.reload()
    assert config.audit_otel is False and not config.ignored


def test_a_later_trusted_file_overrides(tmp_path, monkeypatch):
    user = tmp_path / "xdg" / "failsecure"
    user.mkdir(parents=True)
    (user / "config.toml").write_text("[audit]\notel = true\n")
    env = tmp_path / "env.toml"
    env.write_text("[audit]\notel = false\n")
    monkeypatch.setenv("FAILSECURE_CONFIG", str(env))
    assert policy.reload().audit_otel is False


def test_project_false_with_nothing_enabled_says_nothing(tmp_path):
    (tmp_path / "failsecure.toml").write_text("[audit]\notel = false\n")
    config = policy.reload()
    assert config.audit_otel is False and not config.ignored
