"""A trusted config file (the user's ``$XDG_CONFIG_HOME/failsecure/config.toml``, the
system's, ``$FAILSECURE_CONFIG``) has full effect, so one another user can write would
hand that user what a project file is refused: ``on_error = "allow"``, observers, no
deadline. Such a file is an error (every gated call denies, the file is named, nothing of
its content shown), as ssh refuses a config others can write; the trust store of project
files likewise is not read when another user can write it. Twins: the user's own file
(group-writable included) keeps its full effect."""

import os

import pytest

from failsecure import policy
from failsecure.reduce import reduce
from failsecure.verdict import Action, Failure, Outcome

FOREIGN = 65534  # nobody
needs_chown = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="chown to another user needs root")
LOOSE = 'on_error = "allow"\n# secret-content\n'


def _user_file(tmp_path, text=LOOSE):
    user = tmp_path / "xdg" / "failsecure"
    user.mkdir(parents=True, exist_ok=True)
    path = user / "config.toml"
    path.write_text(text)
    path.chmod(0o644)
    return path


def _failed_gate(config):
    return reduce([Outcome(hook="fw:g", failure=Failure.RAISED)], config)


def test_a_world_writable_user_config_is_an_error_and_denies(tmp_path):
    path = _user_file(tmp_path)
    path.chmod(0o666)
    config = policy.reload()
    assert config.error and config.error.startswith(str(path)) and "another user can write" in config.error
    assert "secret-content" not in config.error and config.on_error == "deny"


def test_the_users_own_config_keeps_its_full_effect(tmp_path):
    path = _user_file(tmp_path)
    path.chmod(0o664)  # group-writable: still the user's
    config = policy.reload()
    assert config.error is None and config.on_error == "allow"
    assert _failed_gate(config).action is Action.ABSTAIN


@needs_chown
def test_a_user_config_another_user_owns_is_an_error(tmp_path):
    path = _user_file(tmp_path)
    os.chown(path, FOREIGN, FOREIGN)
    config = policy.reload()
    assert config.error and "another user can write" in config.error and config.on_error == "deny"


@needs_chown
def test_a_user_config_linked_through_a_foreign_symlink_is_an_error(tmp_path):
    mine = tmp_path / "elsewhere.toml"
    mine.write_text(LOOSE)
    user = tmp_path / "xdg" / "failsecure"
    user.mkdir(parents=True)
    link = user / "config.toml"
    link.symlink_to(mine)
    os.lchown(link, FOREIGN, FOREIGN)  # whoever owns a link can repoint it
    config = policy.reload()
    assert config.error and "symlink" in config.error and config.on_error == "deny"


def test_the_users_own_symlink_to_a_dotfiles_config_is_followed(tmp_path):
    mine = tmp_path / "dotfiles" / "failsecure.toml"
    mine.parent.mkdir()
    mine.write_text(LOOSE)
    user = tmp_path / "xdg" / "failsecure"
    user.mkdir(parents=True)
    (user / "config.toml").symlink_to(mine)
    config = policy.reload()
    assert config.error is None and config.on_error == "allow"


def test_a_world_writable_named_config_is_an_error(tmp_path, monkeypatch):
    path = tmp_path / "named.toml"
    path.write_text(LOOSE)
    path.chmod(0o666)
    monkeypatch.setenv("FAILSECURE_CONFIG", str(path))
    config = policy.reload()
    assert config.error and "another user can write" in config.error
    path.chmod(0o644)  # the twin
    config = policy.reload()
    assert config.error is None and config.on_error == "allow"


@needs_chown
def test_a_named_config_owned_by_another_account_is_the_users_choice(tmp_path, monkeypatch):
    # $FAILSECURE_CONFIG names its file: a team's file owned by a service account is trusted
    path = tmp_path / "team.toml"
    path.write_text(LOOSE)
    os.chown(path, FOREIGN, FOREIGN)
    monkeypatch.setenv("FAILSECURE_CONFIG", str(path))
    config = policy.reload()
    assert config.error is None and config.on_error == "allow"


def _trusted_project(tmp_path):
    project = tmp_path / "failsecure.toml"
    project.write_text('on_error = "allow"\n')
    policy.trust(str(project))
    return project, tmp_path / "xdg" / "failsecure" / "trusted"


def test_a_world_writable_trust_store_trusts_nothing(tmp_path):
    project, store = _trusted_project(tmp_path)
    assert policy.reload().on_error == "allow"  # the twin: the user's own store
    store.chmod(0o666)
    config = policy.reload()
    assert config.error is None and config.on_error == "deny"
    assert _failed_gate(config).action is Action.DENY


@needs_chown
def test_a_trust_store_another_user_owns_trusts_nothing(tmp_path):
    project, store = _trusted_project(tmp_path)
    os.chown(store, FOREIGN, FOREIGN)
    assert policy.reload().on_error == "deny"
