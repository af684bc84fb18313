"""A framework's own settings (``[frameworks."<name>"]``, docs/configuration.md): declared in
the adapter's metadata, validated like every other key, merged under the trust model (a
trusted file sets any value, a project file only a stricter one), read with
``Config.setting`` / ``Adapter.setting``."""

import pytest

from failsecure import policy
from failsecure.adapters import ADAPTERS
from failsecure.policy import Config, ConfigError

SETTING = 'frameworks."openai-agents".failure_behavior'


def env_config(tmp_path, monkeypatch, text):
    path = tmp_path / "trusted.toml"
    path.write_text(text)
    monkeypatch.setenv("FAILSECURE_CONFIG", str(path))
    return str(path)


def project(tmp_path, text):
    path = tmp_path / "failsecure.toml"
    path.write_text(text)
    return str(path)


def config_error(data):
    with pytest.raises(ConfigError) as info:
        policy.layer(data, "f.toml")
    return str(info.value)


def test_the_default_is_the_first_declared_value():
    assert ADAPTERS["openai-agents"].settings["failure_behavior"] == ("reject_content", "raise_exception")
    assert Config().setting("openai-agents", "failure_behavior") == "reject_content"
    assert policy.layer({}) == {"hooks": {}}  # nothing set, nothing in the layer


def test_a_valid_value_is_in_the_layer():
    data = {"frameworks": {"openai-agents": {"failure_behavior": "raise_exception"}}}
    assert policy.layer(data)["frameworks"] == {"openai-agents": {"failure_behavior": "raise_exception"}}
    assert policy.validate(data).setting("openai-agents", "failure_behavior") == "raise_exception"


@pytest.mark.parametrize(
    "data, message",
    [
        ({"frameworks": {"openai-agents": {"failure_behavior": "deny"}}},
         "f.toml: '" + SETTING + "' must be 'reject_content' or 'raise_exception', got 'deny'"),
        ({"frameworks": {"openai-agents": {"failure_behavior": 1}}},
         "f.toml: '" + SETTING + "' must be 'reject_content' or 'raise_exception', got 1"),
        ({"frameworks": {"openai-agents": {"failure": "raise_exception"}}},
         "f.toml: unknown key 'frameworks.\"openai-agents\".failure' (known: failure_behavior)"),
        ({"frameworks": {"langchain": {}}},
         "f.toml: unknown key 'frameworks.\"langchain\"' (frameworks with settings: openai-agents)"),
        ({"frameworks": {"openai-agents": "raise_exception"}},
         "f.toml: 'frameworks.\"openai-agents\"' must be a table, got str"),
        ({"frameworks": []}, "f.toml: 'frameworks' must be a table, got list"),
    ],
)
def test_a_bad_setting_is_a_config_error(data, message):
    assert config_error(data) == message


def test_an_invalid_setting_in_a_file_denies_every_gated_call(tmp_path, monkeypatch):
    env_config(tmp_path, monkeypatch, '[frameworks."openai-agents"]\nfailure_behavior = "stop"\n')
    c = policy.reload()
    assert c.error and SETTING in c.error


def test_a_trusted_file_sets_either_value(tmp_path, monkeypatch):
    env = env_config(tmp_path, monkeypatch, '[frameworks."openai-agents"]\nfailure_behavior = "raise_exception"\n')
    c = policy.reload()
    assert c.setting("openai-agents", "failure_behavior") == "raise_exception" and c.origins == {SETTING: env}
    env = env_config(tmp_path, monkeypatch, '[frameworks."openai-agents"]\nfailure_behavior = "reject_content"\n')
    c = policy.reload()
    assert c.setting("openai-agents", "failure_behavior") == "reject_content" and c.origins == {SETTING: env}


def test_a_project_file_may_make_it_stricter(tmp_path, capsys):
    path = project(tmp_path, '[frameworks."openai-agents"]\nfailure_behavior = "raise_exception"\n')
    c = policy.reload()
    assert c.setting("openai-agents", "failure_behavior") == "raise_exception"
    assert c.origins == {SETTING: path} and c.ignored == [] and capsys.readouterr().err == ""


def test_a_project_file_may_not_undo_a_trusted_raise_exception(tmp_path, monkeypatch, capsys):
    env = env_config(tmp_path, monkeypatch, '[frameworks."openai-agents"]\nfailure_behavior = "raise_exception"\n')
    path = project(tmp_path, '[frameworks."openai-agents"]\nfailure_behavior = "reject_content"\n')
    c = policy.reload()
    assert c.setting("openai-agents", "failure_behavior") == "raise_exception" and c.origins == {SETTING: env}
    assert c.ignored == [(path, SETTING + ' = "reject_content"')]
    assert capsys.readouterr().err.startswith(f'failsecure: ignoring {SETTING} = "reject_content" in {path}: ')


def test_a_project_file_repeating_the_value_in_force_changes_nothing(tmp_path, capsys):
    project(tmp_path, '[frameworks."openai-agents"]\nfailure_behavior = "reject_content"\n')
    c = policy.reload()
    assert c.setting("openai-agents", "failure_behavior") == "reject_content"
    assert c.origins == {} and c.ignored == [] and capsys.readouterr().err == ""


def test_a_trusted_project_file_may_loosen(tmp_path, monkeypatch):
    env_config(tmp_path, monkeypatch, '[frameworks."openai-agents"]\nfailure_behavior = "raise_exception"\n')
    path = project(tmp_path, '[frameworks."openai-agents"]\nfailure_behavior = "reject_content"\n')
    policy.trust(path)
    c = policy.reload()
    assert c.setting("openai-agents", "failure_behavior") == "reject_content" and c.origins == {SETTING: path}


def test_the_setting_survives_the_one_schema():
    c = policy.validate({"frameworks": {"openai-agents": {"failure_behavior": "raise_exception"}}})
    again = Config.from_dict(c.to_dict())
    assert again.frameworks == {"openai-agents": {"failure_behavior": "raise_exception"}}
    assert again.setting("openai-agents", "failure_behavior") == "raise_exception"


def test_an_unknown_framework_lists_every_framework_with_settings(monkeypatch):
    data = {"frameworks": {"no-such-framework": {}}}
    assert config_error(data) == ("f.toml: unknown key 'frameworks.\"no-such-framework\"' "
                                  "(frameworks with settings: openai-agents)")
    monkeypatch.setitem(ADAPTERS, "zz-second", ADAPTERS["openai-agents"])
    assert config_error(data).endswith("(frameworks with settings: openai-agents, zz-second)")


def test_the_unknown_framework_message_is_cut_at_300_characters():
    with pytest.raises(ConfigError) as info:
        policy.layer({"frameworks": {"no-such-framework": {}}}, "f" * 400)
    assert str(info.value) == ("f" * 400)[:300]
