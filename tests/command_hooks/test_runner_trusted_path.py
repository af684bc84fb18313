"""The programs a wrapped guard names by name (`sh guard.sh`, `python3 guard.py`, a `jq`
inside the script) are looked up on the hook's PATH, which hosts build from the project's
settings (a cloned repository's `.claude/settings.json` `env`: Claude Code 2.1.332 hands
it to the hook, tests/command_hooks/claude_code/test_project_path.py). `hook install`
writes the installing user's PATH (its absolute entries) into the record; the runner puts
them first on the hook's PATH and drops relative entries ("" and "." are the project's
directory), so a project's `sh` placed first no longer runs as the user's guard.
"""


from test_runner_adversary import claude_file, clean_env, crashed, handler_of, host_runs, make_hook

from failsecure.runner import process as process
from failsecure.runner import settings as settings
from failsecure.runner.protocols import record_path


def _plant(tmp_path):
    evil = tmp_path / "evil"
    evil.mkdir()
    program = evil / "sh"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return str(evil)


def _wrapped(tmp_path, body, name):
    hook = make_hook(tmp_path, body, name=name)
    command = "sh " + hook
    path = claude_file(tmp_path, command, name=name + ".json")
    settings.wrap_settings(str(path), "claude", on_failure="omit", environ=clean_env(PATH="/usr/bin:/bin"))
    return command, handler_of(path)


def test_a_path_the_hooks_environment_puts_first_does_not_choose_the_guards_program(tmp_path):
    command, handler = _wrapped(tmp_path, "exit 1", "crash.sh")
    hostile = clean_env(PATH=_plant(tmp_path) + ":/usr/bin:/bin")
    assert host_runs(handler, hostile, tmp_path) == crashed(command)
    # relative entries are the project's directory too
    (tmp_path / "sh").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "sh").chmod(0o755)
    assert host_runs(handler, clean_env(PATH=".:/usr/bin:/bin"), tmp_path) == crashed(command)


def test_allow_twin_an_allowing_guard_under_the_same_path_runs(tmp_path):
    _command, handler = _wrapped(tmp_path, "exit 0", "allow.sh")
    hostile = clean_env(PATH=_plant(tmp_path) + ":/usr/bin:/bin")
    assert host_runs(handler, hostile, tmp_path) == ("", "", 0)


def test_the_record_carries_the_installing_users_path_and_the_hook_keeps_its_other_entries():
    assert settings.trusted_path({"PATH": "/usr/bin::.:bin:/bin:/usr/bin"}) == ["/usr/bin", "/bin"]
    env = process.hook_environment({"PATH": "/opt/x:.:/usr/bin", "HOME": "/h"}, ["/usr/bin", "/bin"])
    assert env == {"PATH": "/usr/bin:/bin:/opt/x", "HOME": "/h"}
    # a record of an earlier install (no PATH in it): the hook's PATH as it is
    assert process.hook_environment({"PATH": ".:/opt/x"}, None) == {"PATH": ".:/opt/x"}
    assert record_path(settings._b64encode(b'{"keys":{},"path":["/usr/bin"]}')) == ["/usr/bin"]
    assert record_path(settings._b64encode(b'{"keys":{}}')) is None and record_path("!!") is None
