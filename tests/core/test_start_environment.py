"""Where the trusted start environment is read (``policy._start_environment``, run once at
the policy's import) and the user's home (``policy._home``), in-process.

test_trusted_environment.py proves each source in a fresh interpreter; there the policy
module is the installed copy, so these cases call the function itself with each source
faked: the drop-in's snapshot, the exec-time block, ``os.environ``, and what a failsecure
parent handed down (``TRUSTED_ENV``), each with the origin it reports and what it hands to
this process's children.
"""

import os
import pwd

import pytest

from failsecure import _bootstrap, policy


@pytest.fixture
def sources(monkeypatch):
    """No snapshot, no exec-time block, a clean os.environ; what is exported is recorded."""
    exported = []
    monkeypatch.setattr(_bootstrap, "start_environment", None)
    monkeypatch.setattr(policy, "_from_proc", lambda: None)
    monkeypatch.setattr(_bootstrap, "export", exported.append)
    for name in policy.TRUST_VARIABLES + (policy.TRUSTED_ENV,):
        monkeypatch.delenv(name, raising=False)
    return exported


def test_the_drop_ins_snapshot_comes_first(sources, monkeypatch):
    monkeypatch.setattr(_bootstrap, "start_environment", {"FAILSECURE_CONFIG": "/a.toml", "PATH": "/bin", "HOME": ""})
    monkeypatch.setattr(_bootstrap, "start_origin", "interpreter start")
    monkeypatch.setattr(policy, "_from_proc", lambda: {"HOME": "/proc-home"})
    monkeypatch.setenv("HOME", "/env-home")
    assert policy._start_environment() == ({"FAILSECURE_CONFIG": "/a.toml"}, "interpreter start")
    assert sources == []  # the drop-in exported it at start already


def test_without_the_snapshot_the_exec_time_block_is_read_and_handed_down(sources, monkeypatch):
    monkeypatch.setattr(policy, "_from_proc", lambda: {"HOME": "/proc-home"})
    monkeypatch.setenv("HOME", "/env-home")
    assert policy._start_environment() == ({"HOME": "/proc-home"}, "/proc/self/environ")
    assert sources == [{"HOME": "/proc-home"}]


def test_an_empty_exec_time_block_is_still_the_exec_time_block(sources, monkeypatch):
    monkeypatch.setattr(policy, "_from_proc", lambda: {})
    monkeypatch.setenv("HOME", "/env-home")
    assert policy._start_environment() == ({}, "/proc/self/environ")
    assert sources == [{}]


def test_without_either_os_environ_at_the_first_import_is_read(sources, monkeypatch):
    monkeypatch.setenv("HOME", "/env-home")
    monkeypatch.setenv("XDG_CONFIG_HOME", "")
    assert policy._start_environment() == ({"HOME": "/env-home"}, "os.environ at the first import of failsecure.policy")
    assert sources == [{"HOME": "/env-home"}]


def test_what_a_parent_handed_down_is_preferred_to_the_variables(sources, monkeypatch, tmp_path):
    claims = []

    def inherited(claim):
        claims.append(claim)
        return {"FAILSECURE_CONFIG": "mine.toml", "HOME": "/parent-home", "PATH": "/bin"}, "inherited from process 7"

    monkeypatch.setattr(_bootstrap, "inherited", inherited)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(policy, "_from_proc", lambda: {"HOME": "/proc-home", policy.TRUSTED_ENV: "7;claim"})
    want = {"FAILSECURE_CONFIG": os.path.join(str(tmp_path), "mine.toml"), "HOME": "/parent-home"}
    assert policy._start_environment() == (want, "inherited from process 7")
    assert claims == ["7;claim"] and sources == [want]


def test_a_relative_failsecure_config_is_made_absolute_against_the_start_directory(sources, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(policy, "_from_proc", lambda: {"FAILSECURE_CONFIG": "mine.toml"})
    want = {"FAILSECURE_CONFIG": os.path.join(str(tmp_path), "mine.toml")}
    assert policy._start_environment() == (want, "/proc/self/environ") and sources == [want]


# ---------------------------------------------------------------- the home directory


def entry(pw_dir):
    return lambda uid: type("pw", (), {"pw_dir": pw_dir})()


def test_home_is_the_trusted_home_when_absolute(monkeypatch):
    monkeypatch.setattr(pwd, "getpwuid", entry("/from-pwd"))
    policy.set_trusted_environment({"HOME": "/h", "USERPROFILE": "/u"})
    assert policy._home() == "/h"
    policy.set_trusted_environment({"HOME": "rel"})  # relative: the password database's
    assert policy._home() == "/from-pwd"


def test_home_on_windows_is_userprofile(monkeypatch):
    policy.set_trusted_environment({"HOME": "/h", "USERPROFILE": "/u"})
    with monkeypatch.context() as patch:  # only around the call: pathlib and pytest read os.name too
        patch.setattr(os, "name", "nt")
        home = policy._home()
    assert home == "/u"


def test_home_from_the_password_database_is_this_users(monkeypatch):
    uids = []

    def getpwuid(uid):
        uids.append(uid)
        return entry("/from-pwd")(uid)

    monkeypatch.setattr(pwd, "getpwuid", getpwuid)
    policy.set_trusted_environment({})
    assert policy._home() == "/from-pwd" and uids == [os.getuid()]


@pytest.mark.parametrize("pw_dir", ["", "relative/home"], ids=["empty", "relative"])
def test_a_password_database_home_that_is_not_absolute_is_none(monkeypatch, pw_dir):
    monkeypatch.setattr(pwd, "getpwuid", entry(pw_dir))
    policy.set_trusted_environment({})
    assert policy._home() is None
    monkeypatch.setattr(pwd, "getpwuid", entry("/abs"))  # the twin
    assert policy._home() == "/abs"


def test_choosing_os_environ_when_nothing_was_handed_down(monkeypatch):
    monkeypatch.delenv(policy.TRUSTED_ENV, raising=False)
    policy.set_trusted_environment(os.environ)
    assert policy.TRUSTED_ENV not in os.environ and policy.trusted_environment_origin() == "os.environ (set in-process)"
