import os

import pytest

from failsecure import policy


def test_defaults_without_any_file():
    c = policy.current()
    assert c.error is None and c.source is None
    assert c.on_error == "deny" and c.timeout == policy.DEFAULT_TIMEOUT == 30.0
    assert c.hook("x:y").role == "gate" and c.timeout_for("x:y") == 30.0


def test_full_config(write_config, tmp_path):
    c = write_config(
        """
on_error = "deny"
timeout = 2.5
required = ["hermes-agent:guard", "plugin:corp", "code-puppy:x"]
[audit]
path = "audit.jsonl"
[hooks."hermes-agent:trace"]
role = "observer"
[hooks."hermes-agent:slow"]
timeout = 0
on_error = "allow"
"""
    )
    assert c.error is None
    assert c.timeout_for("hermes-agent:other") == 2.5
    assert c.timeout_for("hermes-agent:slow") is None  # 0 = none
    assert c.hook("hermes-agent:slow").on_error == "allow"
    assert c.hook("hermes-agent:trace").role == "observer"
    assert c.required_for("hermes-agent") == ("hermes-agent:guard", "plugin:corp")
    assert c.audit_path == str(tmp_path / "audit.jsonl")  # relative to the config file


def test_interactive_hooks_get_no_default_deadline(write_config):
    c = write_config('timeout = 5\n[hooks."a:asks"]\ntimeout = 120\n')
    assert c.timeout_for("a:other", interactive=True) is None
    assert c.timeout_for("a:other", interactive=False) == 5.0
    assert c.timeout_for("a:asks", interactive=True) == 120.0  # an explicit per-hook deadline holds


def test_found_in_cwd_then_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname="x"\n[tool.failsecure]\ntimeout = 7\n')
    assert policy.reload().timeout == 7.0
    (tmp_path / "failsecure.toml").write_text("timeout = 3\n")
    assert policy.reload().timeout == 3.0


def test_pyproject_without_table_is_defaults(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname="x"\n')
    c = policy.reload()
    assert c.error is None and c.timeout == 30.0


@pytest.mark.parametrize(
    "text, names",
    [
        ("timeot = 3\n", "timeot"),
        ('timeout = "3"\n', "timeout"),
        ("timeout = -1\n", "timeout"),
        ("timeout = true\n", "timeout"),
        ('on_error = "ignore"\n', "on_error"),
        ('required = "x:y"\n', "required"),
        ('required = ["guard"]\n', "required[0]"),
        ("[audit]\npath = 3\n", "audit.path"),
        ("[audit]\nfile = 'x'\n", "audit.file"),
        ('[hooks."a:b"]\nrole = "watcher"\n', 'hooks."a:b".role'),
        ('[hooks."a:b"]\nfail = 1\n', 'hooks."a:b".fail'),
        ("timeout = \n", "not valid TOML"),
    ],
)
def test_bad_config_is_a_clear_error_that_denies(write_config, tmp_path, text, names, capsys):
    c = write_config(text)
    assert c.error is not None
    assert str(tmp_path / "failsecure.toml") in c.error and names in c.error
    assert "every gated tool call is denied" in capsys.readouterr().err
    with pytest.raises(policy.ConfigError):
        policy.load()


def test_unreadable_config_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "nope.toml"))
    c = policy.reload()
    assert c.error and "cannot read" in c.error and "nope.toml" in c.error


def test_config_is_cached_until_reload(write_config, tmp_path):
    write_config("timeout = 1\n")
    (tmp_path / "failsecure.toml").write_text("timeout = 2\n")
    assert policy.current().timeout == 1.0
    assert policy.reload().timeout == 2.0


def test_policy_module_does_not_import_pydantic():
    import subprocess
    import sys

    code = "import sys, failsecure.policy as p; p.load_light(); print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "FAILSECURE_AUTO": "0"})
    assert out.stdout.strip() == "False"


def test_a_hooks_role_is_the_configs_else_what_the_framework_says(write_config):
    c = write_config('[hooks."a:watch"]\nrole = "observer"\n[hooks."a:judge"]\nrole = "gate"\n[hooks."a:slow"]\ntimeout = 1\n')
    assert c.role_for("a:watch", True) == "observer"  # the config says
    assert c.role_for("a:judge", False) == "gate"
    assert c.role_for("a:slow", False) == "observer"  # no role of its own: the framework's mark
    assert c.role_for("a:slow", True) == "gate"
    assert c.role_for("a:other", None) == "gate"  # unreadable: judged
    assert c.role_for("a:other", False) == "observer"
