"""The runner's config cache: an unchanged config is not parsed again (no tomllib), a
changed or invalid one takes effect on the very next call, and the cache is private
to the user (0700 directory, 0600 file, written atomically, never read when looser)."""

import json
import os
import stat
import subprocess
import sys

import pytest
from cmdhook_helpers import expected_deny

from failsecure.runner import config as runner_config, settings as runner_settings
from failsecure.failures import failure_reason

PROBE = (
    "import sys;sys.path.append(sys.argv[1]);from failsecure.runner import config as runner_config;"
    "c=runner_config.load(runner_config.Trusted(config=sys.argv[2], cache_home=sys.argv[3]));"
    "print(repr(['tomllib' in sys.modules, c.error is None, c.timeout, c.audit_path, "
    "{k: (v.on_error, v.timeout, v.role) for k, v in c.hooks.items()}]))"
)


@pytest.fixture
def env(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    config = tmp_path / "failsecure.toml"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("FAILSECURE_CONFIG", str(config))
    return {"cache": cache / "failsecure", "config": config, "tmp": tmp_path}


def probe(env):
    """One runner-like process (python -I -S) loading the config -> what it saw."""
    site = os.path.dirname(os.path.dirname(runner_settings.runner_path()))
    # the trusted inputs as the launch line gives them (FAILSECURE_CONFIG / XDG_CACHE_HOME of
    # the environment are read by nobody)
    trusted = [str(env["config"]), str(env["cache"].parent)]
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", PROBE, site] + trusted, capture_output=True, text=True, timeout=30, env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout)  # noqa: S307 (our own repr)


FULL_PROBE = (
    "import sys,json;sys.path.append(sys.argv[1]);from failsecure.runner import config as runner_config;"
    "c=runner_config.load(runner_config.Trusted(config=sys.argv[2], cache_home=sys.argv[3]));"
    "print(json.dumps(['tomllib' in sys.modules, c.to_dict()]))"
)


def test_the_cached_config_is_the_whole_config(env):
    # every field that decides a call survives the cache (it once dropped audit.otel and a
    # project's deadline for hooks that wait for a human)
    env["config"].write_text('timeout = 7\nrequired = ["command:g"]\n[audit]\notel = true\n[hooks."command:g"]\nrole = "observer"\n')
    project = env["tmp"] / "project"
    project.mkdir()
    (project / "failsecure.toml").write_text('[hooks."command:asks"]\ntimeout = 300\n')
    site = os.path.dirname(os.path.dirname(runner_settings.runner_path()))
    argv = [sys.executable, "-I", "-S", "-c", FULL_PROBE, site, str(env["config"]), str(env["cache"].parent)]

    def load():
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=os.environ.copy(), cwd=project)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    parsed, cached = load(), load()
    assert (parsed[0], cached[0]) == (True, False)  # the second came from the cache
    assert parsed[1]["audit_otel"] is True and parsed[1]["hooks"]["command:asks"]["interactive_timeout"] == 300.0
    assert cached[1] == parsed[1]


def test_unchanged_config_is_not_parsed_again(env):
    env["config"].write_text('timeout = 7\n[hooks."command:g"]\nrole = "observer"\n')
    first = probe(env)
    assert first == [True, True, 7.0, None, {"command:g": (None, None, "observer")}]
    second = probe(env)
    assert second == [False] + first[1:]  # same config, no tomllib import


def test_a_changed_config_takes_effect_at_once(env):
    env["config"].write_text("timeout = 7\n")
    assert probe(env)[2] == 7.0
    env["config"].write_text("timeout = 8\n")  # same size, likely the same mtime tick
    got = probe(env)
    assert got[0] is True and got[2] == 8.0
    assert probe(env)[:3] == [False, True, 8.0]


def test_an_invalid_config_takes_effect_at_once(env):
    env["config"].write_text("on_error = 'deny'\n")
    assert probe(env)[1] is True
    probe(env)  # cached
    env["config"].write_text("on_error = 'maybe'\n")
    assert probe(env)[1] is False  # the error, at once
    env["config"].write_text("on_error = 'deny'\n")  # twin: fixed, at once
    assert probe(env)[1] is True


def test_a_removed_config_takes_effect_at_once(env):
    env["config"].write_text("timeout = 9\n")
    probe(env)
    env["config"].unlink()
    assert probe(env)[1] is False  # $FAILSECURE_CONFIG names a file that is gone: an error, at once
    env["config"].write_text("timeout = 9\n")  # twin: back
    assert probe(env)[1:3] == [True, 9.0]


def test_the_cache_is_private_and_atomic(env):
    env["config"].write_text("timeout = 7\n")
    probe(env)
    directory = env["cache"]
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    [name] = os.listdir(directory)  # no temp file left behind
    path = directory / name
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    record = json.loads(path.read_text())
    assert record["config"]["timeout"] == 7.0
    # a cache file anyone else could have written is never read
    os.chmod(path, 0o644)
    assert probe(env)[0] is True
    assert stat.S_IMODE(os.stat(directory / name).st_mode) == 0o600  # rewritten privately
    # a cache whose key does not match is never used
    record = json.loads((directory / name).read_text())
    record["config"]["timeout"] = 99.0
    [entry] = [e for e in record["key"][2] if e[0] == str(env["config"])]
    entry[1][5] = "timeout = 99\n"
    (directory / name).write_text(json.dumps(record))
    os.chmod(directory / name, 0o600)
    assert probe(env)[:3] == [True, True, 7.0]


def test_a_loose_cache_directory_is_never_used(env):
    env["config"].write_text("timeout = 7\n")
    env["cache"].mkdir(parents=True)
    os.chmod(env["cache"], 0o777)
    assert probe(env)[0] is True
    assert probe(env)[0] is True  # still parsing: nothing cached in a shared directory
    assert os.listdir(env["cache"]) == []
    os.chmod(env["cache"], 0o700)  # twin: a private directory caches
    probe(env)
    assert probe(env)[0] is False


def test_without_a_home_the_runner_still_loads_the_config(env, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME")
    env["config"].write_text("timeout = 7\n")
    monkeypatch.setattr(runner_config, "real_home", lambda: None)
    assert runner_config.load(runner_config.Trusted(config=str(env["config"]))).timeout == 7.0


def test_runner_with_a_cached_config_denies_on_a_broken_config_edit(run_hook, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ok = 'timeout = 5\n[audit]\npath = "%s"\n' % (tmp_path / "audit.jsonl")
    assert run_hook("codex", ["/bin/true"], config=ok, env={"XDG_CACHE_HOME": str(tmp_path / "cache")}).triple == ("", "", 0)
    assert run_hook("codex", ["/bin/true"], config=ok, env={"XDG_CACHE_HOME": str(tmp_path / "cache")}).triple == ("", "", 0)
    broken = run_hook("codex", ["/bin/true"], config="timeout = 'x'\n", env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert broken.triple == expected_deny("codex", failure_reason("failsecure:config", "invalid"))
