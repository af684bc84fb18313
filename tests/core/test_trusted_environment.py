"""The trusted environment (issue 25): which config files are trusted is decided by
FAILSECURE_CONFIG, XDG_CONFIG_HOME and HOME as the process STARTED, never by later
os.environ changes (python-dotenv's load_dotenv() of an untrusted working directory's
.env). Each case runs in a fresh interpreter started with a known environment, in a
cloned "repository" that ships a .env; the allow twin sets the same variables before
start and is honoured.

The child decides one tool call the way every adapter does: a gate that raises and an
observer that says deny, under ``policy.current()``; what the config allows shows in the
decision (a failed gate under a trusted ``on_error = "allow"`` abstains; an observer never
denies), and a config the repository forged must not get that effect.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from failsecure import policy

PTH = os.path.join(sysconfig.get_paths()["purelib"], "failsecure-auto.pth")
needs_pth = pytest.mark.skipif(not os.path.exists(PTH), reason="the drop-in .pth ships only in an installed wheel")
linux = pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="/proc/self/environ is Linux's")

#: a loosening config: failed gates abstain, the observer never denies
LOOSE = 'on_error = "allow"\n[hooks."fw:watch"]\nrole = "observer"\n'

CHILD = textwrap.dedent(
    """
    import json, os, sys

    def load_dotenv(override=False):
        # python-dotenv's load_dotenv(): each KEY=VALUE of ./.env into os.environ
        try:
            import dotenv
        except ImportError:
            with open(".env") as fh:
                for line in fh:
                    key, _, value = line.strip().partition("=")
                    if key and (override or key not in os.environ):
                        os.environ[key] = value
            return "emulated"
        dotenv.load_dotenv(".env", override=override)
        return "python-dotenv"

    how = None
    if os.path.exists(".env"):
        how = load_dotenv(override=os.environ.get("DOTENV_OVERRIDE") == "1")
    if os.environ.get("CHDIR"):
        os.chdir(os.environ["CHDIR"])
    from failsecure import guard, policy
    from failsecure.reduce import reduce
    from failsecure.verdict import Action, Outcome, Verdict

    def gate():
        raise RuntimeError("boom")

    config = policy.current()
    raised = guard.call("fw:guard", gate, validate=lambda r: Verdict(Action.ALLOW))
    watch = Outcome(hook="fw:watch", verdict=Verdict(Action.DENY, "watch says no"))
    decision = reduce([raised, watch], config)
    primary = decision.primary
    print(json.dumps({
        "dotenv": how,
        "sources": config.sources,
        "on_error": config.on_error,
        "role": config.hook("fw:watch").role,
        "ignored": [s for _w, s in config.ignored],
        "error": config.error,
        "action": decision.action.value,
        "primary": primary.hook if primary else None,
        "failure": primary.failure.value if primary and primary.failure else None,
        "origin": getattr(policy, "trusted_environment_origin", lambda: None)(),
        "environ_config": os.environ.get("FAILSECURE_CONFIG"),
        "pid": os.getpid(),
    }))
    """
)


def base_env(tmp_path, **extra):
    """A clean start environment: no trust variable of the test process leaks in."""
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "HOME", "USERPROFILE") and not k.startswith("FAILSECURE")}
    env["HOME"] = str(tmp_path / "home")
    env["FAILSECURE_AUTO"] = "1"
    env.update({k: v for k, v in extra.items() if v is not None})
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
    return env


def child(cwd, env, *flags):
    script = cwd.parent / "child.py"
    script.write_text(CHILD)
    done = subprocess.run([sys.executable, *flags, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def repo(tmp_path):
    """A cloned repository (the untrusted working directory) and the user's home."""
    (tmp_path / "home").mkdir()
    path = tmp_path / "repo"
    path.mkdir()
    return path


def dotenv(repo, **values):
    (repo / ".env").write_text("".join(f"{k}={v}\n" for k, v in values.items()))


def assert_not_widened(got):
    # the forged config has no effect: the raising gate is a deny (failure "raised"),
    # not an abstention; the observer stays a gate
    assert got["on_error"] == "deny" and got["role"] == "gate", got
    assert got["action"] == "deny" and got["primary"] == "fw:guard" and got["failure"] == "raised", got


def assert_widened_by(got, path):
    # the user's loosening config applies: the failed gate abstains, the observer does not count
    assert got["on_error"] == "allow" and got["role"] == "observer", got
    assert got["action"] == "abstain" and got["failure"] is None and str(path) in got["sources"], got


# ---------------------------------------------------------------- FAILSECURE_CONFIG


def test_a_dotenv_cannot_name_the_trusted_config(tmp_path, repo):
    (repo / "evil.toml").write_text(LOOSE)
    dotenv(repo, FAILSECURE_CONFIG=repo / "evil.toml")
    got = child(repo, base_env(tmp_path))
    assert got["dotenv"] and got["environ_config"] == str(repo / "evil.toml")  # the .env was loaded
    assert str(repo / "evil.toml") not in got["sources"]
    assert_not_widened(got)


def test_failsecure_config_set_before_start_is_honoured(tmp_path, repo):
    user = tmp_path / "home" / "mine.toml"
    user.write_text(LOOSE)
    got = child(repo, base_env(tmp_path, FAILSECURE_CONFIG=str(user)))
    assert_widened_by(got, user)


def test_a_dotenv_with_override_cannot_replace_the_users_config(tmp_path, repo):
    # load_dotenv(override=True) replaces what the user set: the user's value stays trusted
    user = tmp_path / "home" / "mine.toml"
    user.write_text(LOOSE)
    (repo / "evil.toml").write_text('on_error = "allow"\n')
    dotenv(repo, FAILSECURE_CONFIG=repo / "evil.toml")
    got = child(repo, base_env(tmp_path, FAILSECURE_CONFIG=str(user), DOTENV_OVERRIDE="1"))
    assert got["environ_config"] == str(repo / "evil.toml")
    assert str(repo / "evil.toml") not in got["sources"]
    assert_widened_by(got, user)


@needs_pth  # only the drop-in sees the start directory; without it the first import resolves it
def test_a_relative_failsecure_config_is_relative_to_the_start_directory(tmp_path, repo):
    # the user started in their own directory with FAILSECURE_CONFIG=mine.toml; the app
    # then moves into the repository, which ships a mine.toml of its own
    (tmp_path / "home" / "mine.toml").write_text(LOOSE)
    (repo / "mine.toml").write_text('on_error = "deny"\n')
    got = child(tmp_path / "home", base_env(tmp_path, FAILSECURE_CONFIG="mine.toml", CHDIR=str(repo)))
    assert_widened_by(got, tmp_path / "home" / "mine.toml")
    assert str(repo / "mine.toml") not in got["sources"]


# ---------------------------------------------------------------- XDG_CONFIG_HOME and HOME


def test_a_dotenv_cannot_move_the_user_config_directory(tmp_path, repo):
    forged = repo / "cfg" / "failsecure"
    forged.mkdir(parents=True)
    (forged / "config.toml").write_text(LOOSE)
    dotenv(repo, XDG_CONFIG_HOME=repo / "cfg")
    got = child(repo, base_env(tmp_path))
    assert str(forged / "config.toml") not in got["sources"]
    assert_not_widened(got)


def test_xdg_config_home_set_before_start_is_honoured(tmp_path, repo):
    user = tmp_path / "xdg" / "failsecure"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(LOOSE)
    got = child(repo, base_env(tmp_path, XDG_CONFIG_HOME=str(tmp_path / "xdg")))
    assert_widened_by(got, user / "config.toml")


def test_a_dotenv_cannot_move_home(tmp_path, repo):
    forged = repo / "h" / ".config" / "failsecure"
    forged.mkdir(parents=True)
    (forged / "config.toml").write_text(LOOSE)
    dotenv(repo, HOME=repo / "h")
    got = child(repo, base_env(tmp_path, DOTENV_OVERRIDE="1"))  # HOME is always set: override it
    assert str(forged / "config.toml") not in got["sources"]
    assert_not_widened(got)


def test_home_set_before_start_is_honoured(tmp_path, repo):
    user = tmp_path / "home" / ".config" / "failsecure"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(LOOSE)
    got = child(repo, base_env(tmp_path))
    assert_widened_by(got, user / "config.toml")


# ---------------------------------------------------------------- the trust store


def forge_trust(store_dir, project):
    """A trust store naming ``project`` with its exact hash: what `config trust` writes."""
    import hashlib

    store_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(project.read_bytes()).hexdigest()
    (store_dir / "trusted").write_text(f"{digest} {project}\n")


def test_a_dotenv_cannot_ship_a_forged_trust_store(tmp_path, repo):
    project = repo / "failsecure.toml"
    project.write_text(LOOSE)
    forge_trust(repo / "cfg" / "failsecure", project)
    dotenv(repo, XDG_CONFIG_HOME=repo / "cfg")
    got = child(repo, base_env(tmp_path))
    assert str(project) in got["sources"]  # read, stricter only
    assert 'on_error = "allow"' in got["ignored"] and 'hooks."fw:watch".role = "observer"' in got["ignored"]
    assert_not_widened(got)


def test_the_users_own_trust_store_gives_full_effect(tmp_path, repo):
    project = repo / "failsecure.toml"
    project.write_text(LOOSE)
    forge_trust(tmp_path / "home" / ".config" / "failsecure", project)
    got = child(repo, base_env(tmp_path))
    assert got["ignored"] == []
    assert_widened_by(got, project)


# ---------------------------------------------------------------- where the start environment is read


@needs_pth
def test_the_drop_in_snapshots_the_start_environment_also_when_it_is_off(tmp_path, repo):
    (repo / "evil.toml").write_text(LOOSE)
    dotenv(repo, FAILSECURE_CONFIG=repo / "evil.toml")
    for auto in ("1", "0"):
        got = child(repo, base_env(tmp_path, FAILSECURE_AUTO=auto))
        assert got["origin"] == "interpreter start", got
        assert_not_widened(got)


@linux
def test_without_the_drop_in_the_exec_time_environment_is_read(tmp_path, repo):
    # python -S: no .pth runs; the package is found through PYTHONPATH (set before start)
    (repo / "evil.toml").write_text(LOOSE)
    dotenv(repo, FAILSECURE_CONFIG=repo / "evil.toml")
    purelib = os.path.dirname(os.path.dirname(policy.__file__))
    got = child(repo, base_env(tmp_path, PYTHONPATH=purelib), "-S")
    assert got["origin"] == "/proc/self/environ", got
    assert_not_widened(got)
    user = tmp_path / "home" / "mine.toml"  # the twin: set before start
    user.write_text(LOOSE)
    (repo / ".env").unlink()
    got = child(repo, base_env(tmp_path, PYTHONPATH=purelib, FAILSECURE_CONFIG=str(user)), "-S")
    assert got["origin"] == "/proc/self/environ"
    assert_widened_by(got, user)


@needs_pth
def test_a_late_site_main_is_not_the_start(tmp_path):
    # python -S, then the application changes os.environ and runs site.main(): the .pth runs
    # now, after the change; it must not take that for the start environment
    (tmp_path / "evil.toml").write_text(LOOSE)
    code = (
        "import os, json; os.environ['FAILSECURE_CONFIG'] = %r\n"
        "import site; site.main()\n"
        "import failsecure._bootstrap as b\n"
        "from failsecure import policy\n"
        "print(json.dumps([b.start_environment, policy.trusted_environment().get('FAILSECURE_CONFIG'),"
        " policy.trusted_environment_origin()]))" % str(tmp_path / "evil.toml")
    )
    done = subprocess.run([sys.executable, "-S", "-c", code], env=base_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    snapshot, named, origin = json.loads(done.stdout.strip().splitlines()[-1])
    assert snapshot is None and named is None and origin != "interpreter start"


def test_the_bootstrap_and_the_policy_name_the_same_variables():
    from failsecure import _bootstrap

    assert _bootstrap.TRUST_VARIABLES == policy.TRUST_VARIABLES


# ---------------------------------------------------------------- children of a process that loaded a .env

PARENT = textwrap.dedent(
    """
    import os, subprocess, sys
    if os.environ.get("PARENT_CHOOSES"):
        # trusted launcher code choosing its own config in-process (the documented API)
        from failsecure import policy
        policy.set_trusted_environment({"FAILSECURE_CONFIG": os.environ["PARENT_CHOOSES"]})
    if os.environ.get("PARENT_CHDIR"):  # started elsewhere, it works in the repository
        os.chdir(os.environ["PARENT_CHDIR"])
    # an agent application: loads the project's .env after its start, then starts a
    # child Python process (a sub-agent, `failsecure hook run`) with its os.environ
    with open(".env") as fh:
        for line in fh:
            key, _, value = line.strip().partition("=")
            if key and (os.environ.get("PARENT_OVERRIDE") == "1" or key not in os.environ):
                os.environ[key] = value
    if os.environ.get("PARENT_IMPORTS") == "1":
        from failsecure import policy
        policy.current()
    command = [sys.executable, *sys.argv[1:]]
    if os.environ.get("PARENT_VIA_SHELL") == "1":  # a shell tool: sh, started now, then the child
        command = ["sh", "-c", '"$0" "$@"; exit $?', *command]
    done = subprocess.run(command, capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    sys.exit(done.returncode)
    """
)


def parent(cwd, env, *flags, prefix=()):
    """CHILD started by PARENT (which loaded ./.env first); -> the child's report, stderr."""
    script, boss = cwd.parent / "child.py", cwd.parent / "parent.py"
    script.write_text(CHILD)
    boss.write_text(PARENT)
    done = subprocess.run([*prefix, sys.executable, *flags, str(boss), str(script)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@needs_pth
@pytest.mark.parametrize("imports", ["0", "1"])
def test_a_child_of_a_process_that_loaded_a_dotenv_does_not_trust_its_values(tmp_path, repo, imports):
    (repo / "evil.toml").write_text(LOOSE)
    dotenv(repo, FAILSECURE_CONFIG=repo / "evil.toml", XDG_CONFIG_HOME=repo)
    got, _ = parent(repo, base_env(tmp_path, PARENT_IMPORTS=imports))
    assert got["environ_config"] == str(repo / "evil.toml")  # the child started with the project's value
    assert str(repo / "evil.toml") not in got["sources"]
    assert_not_widened(got)
    assert got["origin"].startswith("inherited from process "), got


@needs_pth
def test_a_child_inherits_what_the_user_set_before_the_parent_started(tmp_path, repo):
    # the twin: the user's own FAILSECURE_CONFIG reaches the child through the parent
    user = tmp_path / "home" / "mine.toml"
    user.write_text(LOOSE)
    (repo / "evil.toml").write_text('on_error = "deny"\n')
    dotenv(repo, FAILSECURE_CONFIG=repo / "evil.toml")
    got, _ = parent(repo, base_env(tmp_path, FAILSECURE_CONFIG=str(user), PARENT_OVERRIDE="1"))
    assert got["environ_config"] == str(repo / "evil.toml")
    assert got["origin"].startswith("inherited from process ")
    assert_widened_by(got, user)


@needs_pth
@linux
def test_a_dotenv_that_forges_the_inherited_environment_is_refused(tmp_path, repo):
    # override=True replaces what the parent exported; the best a static file can name
    # is a pid it guesses (1: an ancestor of every process) or the variable bare
    (repo / "evil.toml").write_text(LOOSE)
    evil = str(repo / "evil.toml")
    for forged in (f"1;FAILSECURE_CONFIG={len(evil)}:{evil}", f"{os.getpid()};FAILSECURE_CONFIG={len(evil)}:{evil}", "junk"):
        dotenv(repo, FAILSECURE_CONFIG=evil, FAILSECURE_TRUSTED_ENV=forged)
        got, err = parent(repo, base_env(tmp_path, PARENT_OVERRIDE="1"))
        assert_not_widened(got)
        assert got["origin"].startswith("refused"), (forged, got)
        assert "FAILSECURE_TRUSTED_ENV does not name a failsecure process" in err and evil not in err


@needs_pth
@linux
def test_a_forged_inherited_environment_from_a_parent_without_failsecure_is_refused(tmp_path, repo):
    # the parent is no failsecure process (-S: no drop-in, and it never imports failsecure),
    # so nothing was exported before its .env set the variable
    (repo / "evil.toml").write_text(LOOSE)
    evil = str(repo / "evil.toml")
    dotenv(repo, FAILSECURE_CONFIG=evil, FAILSECURE_TRUSTED_ENV=f"1;FAILSECURE_CONFIG={len(evil)}:{evil}")
    got, _ = parent(repo, base_env(tmp_path), "-S")
    assert evil not in got["sources"]
    assert_not_widened(got)
    assert got["origin"].startswith("refused")
    # the twin: such a parent without the forged variable passes its start environment on
    user = tmp_path / "home" / "mine.toml"
    user.write_text(LOOSE)
    (repo / ".env").write_text("UNRELATED=1\n")
    got, _ = parent(repo, base_env(tmp_path, FAILSECURE_CONFIG=str(user)), "-S")
    assert got["origin"] == "interpreter start"
    assert_widened_by(got, user)


@needs_pth
@linux
def test_a_grandchild_inherits_through_a_verified_child(tmp_path, repo):
    user = tmp_path / "home" / "mine.toml"
    user.write_text(LOOSE)
    (repo / "evil.toml").write_text(LOOSE)
    dotenv(repo, FAILSECURE_CONFIG=repo / "evil.toml")
    middle = tmp_path / "middle.py"  # a failsecure process between the parent and the child
    middle.write_text("import subprocess, sys\nimport failsecure.policy\n"
                      "done = subprocess.run([sys.executable, sys.argv[1]], capture_output=True, text=True)\n"
                      "sys.stdout.write(done.stdout); sys.stderr.write(done.stderr); sys.exit(done.returncode)\n")
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "parent.py").write_text(PARENT)
    done = subprocess.run([sys.executable, str(tmp_path / "parent.py"), str(middle), str(tmp_path / "child.py")],
                          cwd=repo, env=base_env(tmp_path, FAILSECURE_CONFIG=str(user), PARENT_OVERRIDE="1"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["origin"].startswith("inherited from process ")
    assert_widened_by(got, user)


def _pid_namespaces():
    if not shutil.which("unshare") or not os.path.exists("/proc/self/environ"):
        return False
    done = subprocess.run([*PIDNS, "sh", "-c", "echo $$"], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip() == "1"


#: a container or sandbox (docker, podman, bwrap, unshare): a fresh pid namespace, where
#: the agent is pid 1 and the processes it starts get pids a static .env can guess
PIDNS = ("unshare", "--pid", "--fork", "--mount-proc")
needs_pidns = pytest.mark.skipif(not _pid_namespaces(), reason="needs a new pid namespace (unshare --pid, root)")


def field(name, value):
    return f";{name}={len(value)}:{value}"


@needs_pth
@needs_pidns
@pytest.mark.parametrize("via_shell", ["0", "1"], ids=["the-child-itself", "a-shell-started-after-the-load"])
def test_a_dotenv_naming_a_process_started_after_it_was_loaded_is_refused(tmp_path, repo, via_shell):
    # in a pid namespace the agent is pid 1 and the next process it starts pid 2: the
    # child itself, or the shell the child runs under. That process's exec-time block
    # holds the forged value itself (the .env was loaded before it started): checking the
    # value against it is circular
    (repo / "evil.toml").write_text(LOOSE)
    evil = str(repo / "evil.toml")
    dotenv(repo, FAILSECURE_TRUSTED_ENV="2" + field("FAILSECURE_CONFIG", evil))
    got, err = parent(repo, base_env(tmp_path, PARENT_OVERRIDE="1", PARENT_VIA_SHELL=via_shell), prefix=PIDNS)
    assert got["pid"] == (2 if via_shell == "0" else 3), got  # the guess named the child / its shell
    assert evil not in got["sources"] and got["origin"].startswith("refused"), got
    assert_not_widened(got)
    assert "FAILSECURE_TRUSTED_ENV does not name a failsecure process" in err and evil not in err


@needs_pth
@needs_pidns
@pytest.mark.parametrize("via_shell", ["0", "1"], ids=["direct", "through-a-shell"])
def test_in_a_pid_namespace_the_users_config_is_inherited(tmp_path, repo, via_shell):
    # the twin: what the agent (pid 1) started with reaches the child, also through a shell
    user = tmp_path / "home" / "mine.toml"
    user.write_text(LOOSE)
    dotenv(repo, FAILSECURE_CONFIG=repo / "evil.toml")
    got, _ = parent(repo, base_env(tmp_path, FAILSECURE_CONFIG=str(user), PARENT_OVERRIDE="1", PARENT_VIA_SHELL=via_shell),
                    prefix=PIDNS)
    assert got["origin"] == "inherited from process 1", got
    assert_widened_by(got, user)


@linux
def test_a_value_naming_this_process_itself_is_refused():
    # what this process's own exec-time block holds as its trust variables, named with
    # its own pid: an exec without a fork, or a .env loaded by the parent before this
    # process started; either way the block cannot vouch for itself
    from failsecure import _bootstrap

    block = _bootstrap.read_block("/proc/self/environ")
    if block is None or _bootstrap.TRUSTED_ENV in block:
        pytest.skip("this process's block holds no trust variables of its own")
    own = {name: block[name] for name in _bootstrap.TRUST_VARIABLES if block.get(name)}
    values, origin = _bootstrap.inherited(_bootstrap.encode(os.getpid(), own))
    assert values == {} and origin.startswith("refused"), origin
    # the twin: the same values named by a process whose block holds them are taken
    # (os.getppid(): the suite's parent, when its block holds no FAILSECURE_TRUSTED_ENV)
    parents = _bootstrap.read_block(f"/proc/{os.getppid()}/environ")
    if parents is None or _bootstrap.TRUSTED_ENV in parents:
        pytest.skip("the parent's block cannot be the twin here")
    theirs = {name: parents[name] for name in _bootstrap.TRUST_VARIABLES if parents.get(name)}
    values, origin = _bootstrap.inherited(_bootstrap.encode(os.getppid(), theirs))
    assert values == theirs and origin == f"inherited from process {os.getppid()}"


@needs_pth
@needs_pidns
def test_a_relative_failsecure_config_is_not_matched_by_its_ending(tmp_path, repo):
    # the user starts the agent in their home with FAILSECURE_CONFIG=failsecure.toml
    # (relative: ~/failsecure.toml); the agent works in the repository and loads its .env
    # (override=True), which names the agent (pid 1) and the repository's failsecure.toml:
    # it ends with the user's relative value, but it is not what the user started with
    home = tmp_path / "home"
    (home / "failsecure.toml").write_text('on_error = "deny"\n')
    (repo / "failsecure.toml").write_text(LOOSE)
    forged = "1" + field("FAILSECURE_CONFIG", str(repo / "failsecure.toml")) + field("HOME", str(home))
    dotenv(repo, FAILSECURE_TRUSTED_ENV=forged)
    script, boss = tmp_path / "child.py", tmp_path / "parent.py"
    script.write_text(CHILD)
    boss.write_text(PARENT)
    done = subprocess.run([*PIDNS, sys.executable, str(boss), str(script)], cwd=home, capture_output=True, text=True,
                          timeout=60, env=base_env(tmp_path, FAILSECURE_CONFIG="failsecure.toml", PARENT_OVERRIDE="1",
                                                   PARENT_CHDIR=str(repo)))
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["origin"].startswith("refused"), got
    assert str(repo / "failsecure.toml") in got["sources"]  # read as the project file: stricter only
    assert_not_widened(got)
    # the twin: the same user config named absolutely is inherited
    dotenv(repo, FAILSECURE_CONFIG=repo / "failsecure.toml")
    done = subprocess.run([*PIDNS, sys.executable, str(boss), str(script)], cwd=home, capture_output=True, text=True,
                          timeout=60, env=base_env(tmp_path, FAILSECURE_CONFIG=str(home / "failsecure.toml"),
                                                   PARENT_OVERRIDE="1", PARENT_CHDIR=str(repo)))
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["origin"] == "inherited from process 1" and str(home / "failsecure.toml") in got["sources"], got


def test_a_relative_failsecure_config_is_not_a_match_for_an_absolute_one(monkeypatch):
    from failsecure import _bootstrap

    block = {"FAILSECURE_CONFIG": "failsecure.toml", "HOME": "/home/u"}
    monkeypatch.setattr(_bootstrap, "read_block", lambda path: dict(block))
    monkeypatch.setattr(_bootstrap, "_ancestors", lambda pid: [7])
    for claimed in ("/srv/repo/failsecure.toml", "/home/u/failsecure.toml"):
        assert _bootstrap._verified("7" + field("FAILSECURE_CONFIG", claimed) + field("HOME", "/home/u"), 99) is None
    # the twins: exactly the block's values, and an absolute value that is the block's
    assert _bootstrap._verified("7" + field("FAILSECURE_CONFIG", "failsecure.toml") + field("HOME", "/home/u"), 99)
    block["FAILSECURE_CONFIG"] = "/home/u/failsecure.toml"
    assert _bootstrap._verified("7" + field("FAILSECURE_CONFIG", "/home/u/failsecure.toml") + field("HOME", "/home/u"), 99)


@needs_pth
def test_after_an_in_process_choice_a_child_does_not_trust_a_later_dotenv(tmp_path, repo):
    # trusted launcher code chooses its config in-process, then loads the project's .env
    # (plain load_dotenv(): FAILSECURE_CONFIG was never set, so the .env sets it); the
    # child keeps getting the start environment handed down, not the .env's value
    chosen = tmp_path / "home" / "agent.toml"
    chosen.write_text('on_error = "deny"\n')
    (repo / "evil.toml").write_text(LOOSE)
    dotenv(repo, FAILSECURE_CONFIG=repo / "evil.toml")
    got, _ = parent(repo, base_env(tmp_path, PARENT_CHOOSES=str(chosen)))
    assert got["environ_config"] == str(repo / "evil.toml")  # the child started with the project's value
    assert str(repo / "evil.toml") not in got["sources"] and got["origin"].startswith("inherited from process "), got
    assert_not_widened(got)
    # the twin: what the user set before the launcher started still reaches the child
    user = tmp_path / "home" / "mine.toml"
    user.write_text(LOOSE)
    got, _ = parent(repo, base_env(tmp_path, PARENT_CHOOSES=str(chosen), FAILSECURE_CONFIG=str(user)))
    assert got["origin"].startswith("inherited from process "), got
    assert_widened_by(got, user)


@pytest.mark.parametrize("junk", ["\u00b2", "1;HOME=\u00b2:/", "\u0661;HOME=2:/h", "1" * 5000, "1;HOME=" + "1" * 5000 + ":/"])
def test_junk_that_int_refuses_is_refused_not_raised(junk):
    # str.isdigit() is true for '²' and Arabic-Indic digits, which int() refuses; int()
    # also refuses more than 4300 digits
    from failsecure import _bootstrap

    assert _bootstrap.decode(junk) is None
    assert _bootstrap.decode("1;HOME=2:/h") == (1, {"HOME": "/h"})  # the twin: ASCII digits


def test_junk_in_a_childs_start_environment_is_refused_with_one_line(tmp_path, repo):
    user = tmp_path / "home" / "mine.toml"
    user.write_text(LOOSE)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    done = subprocess.run([sys.executable, str(script)], cwd=repo, capture_output=True, text=True, timeout=60,
                          env=base_env(tmp_path, FAILSECURE_CONFIG=str(user), FAILSECURE_TRUSTED_ENV="\u00b2"))
    assert done.returncode == 0, done.stderr[-400:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["origin"].startswith("refused") and str(user) not in got["sources"], got
    assert_not_widened(got)
    assert done.stderr.count("FAILSECURE_TRUSTED_ENV does not name") == 1 and "Traceback" not in done.stderr
    got = child(repo, base_env(tmp_path, FAILSECURE_CONFIG=str(user)))  # the twin: without the junk
    assert_widened_by(got, user)


@needs_pth
@pytest.mark.parametrize("auto", ["1", "0"])
def test_a_launcher_gives_a_child_its_own_config_by_removing_the_variable(tmp_path, repo, auto):
    # any interpreter of the venv exports FAILSECURE_TRUSTED_ENV at start, also with
    # FAILSECURE_AUTO=0: a task runner's FAILSECURE_CONFIG in env= alone is not what the
    # child trusts (the documented rule); removing the variable for the child is the way
    ci = tmp_path / "home" / "ci.toml"
    ci.write_text(LOOSE)
    script, runner = tmp_path / "child.py", tmp_path / "runner.py"
    script.write_text(CHILD)
    runner.write_text(
        "import os, subprocess, sys\n"
        f"env = dict(os.environ, FAILSECURE_CONFIG={str(ci)!r})\n"
        "if sys.argv[2] == 'remove':\n"
        "    env.pop('FAILSECURE_TRUSTED_ENV')\n"
        "done = subprocess.run([sys.executable, sys.argv[1]], env=env, capture_output=True, text=True)\n"
        "sys.stdout.write(done.stdout); sys.stderr.write(done.stderr); sys.exit(done.returncode)\n")
    for how in ("keep", "remove"):
        done = subprocess.run([sys.executable, str(runner), str(script), how], cwd=repo, capture_output=True, text=True,
                              env=base_env(tmp_path, FAILSECURE_AUTO=auto), timeout=60)
        assert done.returncode == 0, done.stderr
        got = json.loads(done.stdout.strip().splitlines()[-1])
        if how == "keep":
            assert got["origin"].startswith("inherited from process ") and str(ci) not in got["sources"], got
            assert_not_widened(got)
        else:
            assert got["origin"] == "interpreter start", got
            assert_widened_by(got, ci)


def test_the_inherited_environment_round_trips_and_junk_is_refused():
    from failsecure import _bootstrap

    values = {"FAILSECURE_CONFIG": "/a;b=c:3.toml", "HOME": "/h"}
    assert _bootstrap.decode(_bootstrap.encode(42, values)) == (42, values)
    assert _bootstrap.decode(_bootstrap.encode(42, {})) == (42, {})
    for junk in ("", "x", "42;", "42;HOME=1:/h", "42;PATH=1:/", "42;HOME=2:/h;", "42;HOME=2:/hX", "42;HOME=x:/h",
                 "42;HOME=2:/h;HOME=2:/h", "42;HOME=0:"):
        assert _bootstrap.decode(junk) is None, junk


def test_what_an_in_process_choice_hands_down(monkeypatch):
    # a mapping is this process's choice, which no child can check: children keep getting
    # the start environment; os.environ chosen (the live environment trusted) hands nothing
    # down, so children start with the live environment as their own
    policy.set_trusted_environment(None)
    from failsecure import _bootstrap

    start = (os.getpid(), policy.trusted_environment())
    assert _bootstrap.decode(os.environ[policy.TRUSTED_ENV]) == start
    policy.set_trusted_environment({"HOME": "/h"})
    assert _bootstrap.decode(os.environ[policy.TRUSTED_ENV]) == start
    policy.set_trusted_environment(os.environ)
    assert policy.TRUSTED_ENV not in os.environ
    policy.set_trusted_environment({"HOME": "/h"})  # from os.environ back to a mapping: handed down again
    assert _bootstrap.decode(os.environ[policy.TRUSTED_ENV]) == start
    policy.set_trusted_environment(None)
    assert _bootstrap.decode(os.environ[policy.TRUSTED_ENV]) == start


# ---------------------------------------------------------------- /proc/self/environ, unit


def fake_proc(monkeypatch, block):
    import builtins
    import io

    real = builtins.open

    def opener(file, *args, **kwargs):
        if file == "/proc/self/environ":
            return io.BytesIO(block)
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", opener)
    # a runner that loaded setproctitle (mutmut names its workers with it) would make the
    # policy pass the block over: these cases are about the block itself
    monkeypatch.delitem(sys.modules, "setproctitle", raising=False)


def test_proc_environ_first_entry_wins_and_only_trust_variables(monkeypatch):
    fake_proc(monkeypatch, b"PATH=/bin\0FAILSECURE_CONFIG=/a.toml\0HOME=/h\0FAILSECURE_CONFIG=/b.toml\0OTHER=x\0")
    assert policy._from_proc() == {"FAILSECURE_CONFIG": "/a.toml", "HOME": "/h"}


def test_proc_environ_overwritten_by_a_process_title_is_not_used(monkeypatch):
    for block in (b"python agent.py --serve\0\0\0\0", b"\0" * 64, b"python agent.py --serve", b"a.py --x=1\0HOME=/h\0"):
        fake_proc(monkeypatch, block)  # a title, setproctitle's zero padding, a title's tail
        assert policy._from_proc() is None, block
    fake_proc(monkeypatch, b"HOME=/h\0")
    assert policy._from_proc() == {"HOME": "/h"}  # the twins: a real block, an empty one
    fake_proc(monkeypatch, b"")
    assert policy._from_proc() == {}
    monkeypatch.setitem(sys.modules, "setproctitle", object())
    assert policy._from_proc() is None  # it may have written over the block


# ---------------------------------------------------------------- the in-process API


def test_the_start_environment_ignores_later_os_environ_changes(tmp_path, monkeypatch):
    # the suite's conftest trusts the live os.environ; back to the real rule here
    policy.set_trusted_environment(None)
    (tmp_path / "evil.toml").write_text(LOOSE)
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "evil.toml"))
    assert policy.trusted_environment().get("FAILSECURE_CONFIG") != str(tmp_path / "evil.toml")
    assert str(tmp_path / "evil.toml") not in policy.reload().sources


def test_set_trusted_environment_chooses_and_restores(tmp_path):
    (tmp_path / "mine.toml").write_text(LOOSE)
    home = str(tmp_path / "home")
    first = policy.set_trusted_environment({"FAILSECURE_CONFIG": "mine.toml", "PATH": "/x", "XDG_CONFIG_HOME": "", "HOME": home})
    assert first is os.environ  # what the suite's conftest chose
    # only the trust variables, empty = unset, a relative path made absolute now
    assert policy.trusted_environment() == {"FAILSECURE_CONFIG": str(tmp_path / "mine.toml"), "HOME": home}
    assert policy.trusted_environment_origin() == "set in-process"
    config = policy.current()  # re-read after the choice
    assert config.on_error == "allow" and config.sources == [str(tmp_path / "mine.toml")]
    chosen = policy.set_trusted_environment(None)
    assert chosen == {"FAILSECURE_CONFIG": str(tmp_path / "mine.toml"), "HOME": home}
    assert policy.trusted_environment_origin() in ("interpreter start", "/proc/self/environ",
                                                   "os.environ at the first import of failsecure.policy")
    assert str(tmp_path / "mine.toml") not in policy.current().sources
    policy.set_trusted_environment(chosen)
    assert policy.current().on_error == "allow"
    policy.set_trusted_environment(first)
    assert policy.trusted_environment_origin() == "os.environ (set in-process)"


def test_a_relative_xdg_config_home_or_home_is_not_the_users(tmp_path, monkeypatch):
    # relative: resolved against the working directory, i.e. the repository -> ignored
    (tmp_path / "cfg" / "failsecure").mkdir(parents=True)
    (tmp_path / "cfg" / "failsecure" / "config.toml").write_text(LOOSE)
    (tmp_path / "h" / ".config" / "failsecure").mkdir(parents=True)
    (tmp_path / "h" / ".config" / "failsecure" / "config.toml").write_text(LOOSE)
    import pwd

    class Entry:
        pw_dir = str(tmp_path / "pwd-home")  # the password database's home

    monkeypatch.setattr(pwd, "getpwuid", lambda uid: Entry)
    policy.set_trusted_environment({"XDG_CONFIG_HOME": "cfg", "HOME": "h"})
    assert policy.trust_store() == str(tmp_path / "pwd-home" / ".config" / "failsecure" / "trusted")
    assert policy.reload().on_error == "deny"
    # the twins: the same directories named absolutely are the user's
    policy.set_trusted_environment({"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert policy.reload().on_error == "allow"
    policy.set_trusted_environment({"HOME": str(tmp_path / "h")})
    assert policy.reload().on_error == "allow"


def test_no_home_at_all_means_no_user_config_and_no_trust_store(tmp_path, monkeypatch):
    import pwd

    def no_entry(uid):
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    (tmp_path / "~" / ".config" / "failsecure").mkdir(parents=True)  # what "~" unexpanded would name
    (tmp_path / "~" / ".config" / "failsecure" / "config.toml").write_text(LOOSE)
    policy.set_trusted_environment({})
    assert policy.trust_store() is None and policy.trusted_paths() == []
    assert policy.reload().on_error == "deny"
    project = tmp_path / "failsecure.toml"
    project.write_text(LOOSE)
    with pytest.raises(OSError):
        policy.trust(str(project))
    assert policy.reload().hook("fw:watch").role == "gate"
    policy.set_trusted_environment({"HOME": str(tmp_path / "~")})  # the twin: a home
    assert policy.reload().on_error == "allow"


def test_audit_rig_chooses_its_config_in_process_and_the_monkeypatch_undoes_it(tmp_path):
    # a user's suite has no conftest that trusts os.environ: the rig must choose its
    # config through the policy, not only os.environ
    from failsecure.testing import AuditRig

    policy.set_trusted_environment({"HOME": str(tmp_path / "home")})
    mp = pytest.MonkeyPatch()
    try:
        rig = AuditRig(tmp_path, mp, deadline=0.5)
        rig.config()
        config = policy.current()
        assert config.timeout == 0.5 and config.audit_path == str(tmp_path / "audit.jsonl")
        assert policy.trusted_environment()["FAILSECURE_CONFIG"] == str(tmp_path / "failsecure.toml")
    finally:
        mp.undo()
    assert policy.trusted_environment() == {"HOME": str(tmp_path / "home")}
    assert policy.trusted_paths() == []  # the rig's file is no longer $FAILSECURE_CONFIG
