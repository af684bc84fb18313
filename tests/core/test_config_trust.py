"""Config trust: a project file (from a repository the user may not have written) may
only make things stricter; trusted sources have full effect; `config trust` binds a
project file's trust to its content."""

import json
import os
import subprocess
import sys

from failsecure import policy
from failsecure.reduce import reduce
from failsecure.verdict import Action, Failure, Outcome, Verdict


def deny(hook):
    return Outcome(hook=hook, verdict=Verdict(Action.DENY, "no"))


def test_project_cannot_turn_a_gate_into_an_observer(tmp_path, capsys):
    (tmp_path / "failsecure.toml").write_text('[hooks."fw:guard"]\nrole = "observer"\n')
    config = policy.reload()
    assert config.hook("fw:guard").role == "gate"
    assert reduce([deny("fw:guard")], config).action is Action.DENY
    err = capsys.readouterr().err
    assert 'ignoring hooks."fw:guard".role = "observer"' in err and str(tmp_path / "failsecure.toml") in err


def test_trusted_file_can_make_an_observer(tmp_path, monkeypatch):
    (tmp_path / "trusted.toml").write_text('[hooks."fw:guard"]\nrole = "observer"\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "trusted.toml"))
    config = policy.reload()
    assert config.hook("fw:guard").role == "observer"
    assert reduce([deny("fw:guard")], config).action is Action.ABSTAIN


def test_user_config_is_trusted(tmp_path):
    user = tmp_path / "xdg" / "failsecure"
    user.mkdir(parents=True)
    (user / "config.toml").write_text('on_error = "allow"\n')
    config = policy.reload()
    assert config.on_error == "allow" and config.origins["on_error"] == str(user / "config.toml")
    failed = Outcome(hook="fw:g", failure=Failure.RAISED)
    assert reduce([failed], config).action is Action.ABSTAIN


def test_project_on_error_allow_ignored_deny_applies(tmp_path, monkeypatch):
    (tmp_path / "failsecure.toml").write_text('on_error = "allow"\n')
    failed = Outcome(hook="fw:g", failure=Failure.RAISED)
    assert reduce([failed], policy.reload()).action is Action.DENY
    (tmp_path / "trusted.toml").write_text('on_error = "allow"\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "trusted.toml"))
    (tmp_path / "failsecure.toml").write_text('on_error = "deny"\n')
    config = policy.reload()
    assert config.on_error == "deny" and reduce([failed], config).action is Action.DENY
    (tmp_path / "failsecure.toml").unlink()
    assert reduce([failed], policy.reload()).action is Action.ABSTAIN  # the allow twin


def test_project_timeout_only_shorter(tmp_path):
    project = tmp_path / "failsecure.toml"
    project.write_text("timeout = 5\n")
    assert policy.reload().timeout_for("fw:x") == 5.0
    project.write_text("timeout = 120\n")
    assert policy.reload().timeout_for("fw:x") == 30.0
    project.write_text("timeout = 0\n")
    assert policy.reload().timeout_for("fw:x") == 30.0
    project.write_text('[hooks."fw:x"]\ntimeout = 0\n')
    assert policy.reload().timeout_for("fw:x") == 30.0
    project.write_text('[hooks."fw:x"]\ntimeout = 2\n')
    assert policy.reload().timeout_for("fw:x") == 2.0


def test_project_hook_on_error_allow_ignored(tmp_path):
    (tmp_path / "failsecure.toml").write_text('[hooks."fw:x"]\non_error = "allow"\n')
    config = policy.reload()
    assert config.hook("fw:x").on_error == "deny" and config.ignored


def test_project_audit_path_ignored(tmp_path, monkeypatch):
    (tmp_path / "failsecure.toml").write_text('[audit]\npath = "/tmp/elsewhere.jsonl"\n')
    config = policy.reload()
    assert config.audit_path is None and config.ignored
    (tmp_path / "trusted.toml").write_text('[audit]\npath = "a.jsonl"\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "trusted.toml"))
    assert policy.reload().audit_path == str(tmp_path / "a.jsonl")


def test_project_required_adds_to_trusted(tmp_path, monkeypatch):
    (tmp_path / "trusted.toml").write_text('required = ["fw:a"]\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "trusted.toml"))
    (tmp_path / "failsecure.toml").write_text('required = ["fw:b"]\n')
    config = policy.reload()
    assert config.required == ("fw:a", "fw:b") and not config.ignored
    assert reduce([], config, config.required_for("fw")).action is Action.DENY


def test_project_can_turn_a_trusted_observer_back_into_a_gate(tmp_path, monkeypatch):
    (tmp_path / "trusted.toml").write_text('[hooks."fw:guard"]\nrole = "observer"\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "trusted.toml"))
    (tmp_path / "failsecure.toml").write_text('[hooks."fw:guard"]\nrole = "gate"\n')
    assert reduce([deny("fw:guard")], policy.reload()).action is Action.DENY


def test_project_file_found_from_a_subdirectory(tmp_path, monkeypatch):
    (tmp_path / "failsecure.toml").write_text("timeout = 4\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert policy.reload().timeout == 4.0


def test_trusting_a_project_file_gives_full_effect_until_edited(tmp_path):
    project = tmp_path / "failsecure.toml"
    project.write_text('[hooks."fw:guard"]\nrole = "observer"\n')
    assert policy.reload().hook("fw:guard").role == "gate"
    policy.trust(str(project))
    config = policy.reload()
    assert config.hook("fw:guard").role == "observer" and not config.ignored
    project.write_text('[hooks."fw:guard"]\nrole = "observer"\n# edited\n')
    assert policy.reload().hook("fw:guard").role == "gate"  # any edit drops the trust


def test_invalid_project_file_is_an_error(tmp_path):
    (tmp_path / "failsecure.toml").write_text("timeot = 1\n")
    config = policy.reload()
    assert config.error and "timeot" in config.error and str(tmp_path) in config.error


def cli(*args, cwd, env):
    return subprocess.run([sys.executable, "-m", "failsecure", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


def test_config_show_and_trust_commands(tmp_path):
    import os

    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "FAILSECURE_AUTO": "0"}
    env.pop("FAILSECURE_CONFIG", None)
    project = tmp_path / "failsecure.toml"
    project.write_text('timeout = 5\n[hooks."fw:guard"]\nrole = "observer"\n')
    shown = cli("config", "show", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert f"timeout = 5.0  ({project})" in shown.stdout
    assert f'ignored: hooks."fw:guard".role = "observer"  ({project};' in shown.stdout
    assert "on_error = deny  (default)" in shown.stdout
    trusted = cli("config", "trust", str(project), cwd=tmp_path, env=env)
    assert trusted.returncode == 0, trusted.stderr
    shown = cli("config", "show", cwd=tmp_path, env=env)
    assert f'hooks."fw:guard".role = observer  ({project})' in shown.stdout and "ignored" not in shown.stdout


def test_a_project_file_named_by_failsecure_config_is_trusted(tmp_path, monkeypatch, capsys):
    (tmp_path / "failsecure.toml").write_text('on_error = "allow"\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "failsecure.toml"))
    config = policy.reload()
    assert config.on_error == "allow" and not config.ignored and config.sources == [str(tmp_path / "failsecure.toml")]
    assert "ignoring" not in capsys.readouterr().err


def test_project_deadline_for_a_hook_waiting_for_a_human(tmp_path, capsys):
    # a hook waiting for a human gets no deadline by default: a project file's per-hook
    # deadline for it is stricter than none, even when it is looser than the global one;
    # for the hook's other calls the global deadline still holds
    project = tmp_path / "failsecure.toml"
    project.write_text('[hooks."fw:asks"]\ntimeout = 300\n')
    config = policy.reload()
    assert config.timeout_for("fw:asks", interactive=True) == 300.0
    assert config.timeout_for("fw:asks") == 30.0  # not loosened
    assert config.timeout_for("fw:other", interactive=True) is None  # only that hook
    assert config.ignored == [(str(project), 'hooks."fw:asks".timeout = 300.0 for calls not waiting for a human')]
    assert 'hooks."fw:asks".timeout = 300.0 for calls not waiting for a human' in capsys.readouterr().err
    # a stricter one applies to every call of the hook, nothing ignored
    project.write_text('[hooks."fw:asks"]\ntimeout = 10\n')
    config = policy.reload()
    assert config.timeout_for("fw:asks", interactive=True) == 10.0 and config.timeout_for("fw:asks") == 10.0
    assert config.ignored == []
    # "none" is looser than any deadline: ignored, interactive calls keep no deadline
    project.write_text('[hooks."fw:asks"]\ntimeout = 0\n')
    config = policy.reload()
    assert config.timeout_for("fw:asks", interactive=True) is None and config.timeout_for("fw:asks") == 30.0


def test_a_trusted_per_hook_deadline_outranks_a_projects_interactive_one(tmp_path, monkeypatch):
    (tmp_path / "trusted.toml").write_text('[hooks."fw:asks"]\ntimeout = 600\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "trusted.toml"))
    (tmp_path / "failsecure.toml").write_text('[hooks."fw:asks"]\ntimeout = 900\n')
    config = policy.reload()  # 900 loosens the trusted 600 for every call: ignored
    assert config.timeout_for("fw:asks", interactive=True) == 600.0 and config.timeout_for("fw:asks") == 600.0
    assert config.ignored and config.hook("fw:asks").interactive_timeout is None


def test_config_show_names_the_deadline_while_waiting_for_a_human(tmp_path, capsys):
    (tmp_path / "failsecure.toml").write_text('[hooks."fw:asks"]\ntimeout = 300\n')
    from failsecure import cli

    assert cli.main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert 'hooks."fw:asks".timeout = 300.0 while it waits for a human' in out


def test_a_hooks_other_settings_still_apply_after_its_deadline_for_a_human(tmp_path, monkeypatch):
    # the timeout kept for interactive calls does not end the hook's table: a later key
    # (role = "gate" over a trusted observer) still applies
    (tmp_path / "trusted.toml").write_text('[hooks."fw:y"]\nrole = "observer"\n')
    monkeypatch.setenv("FAILSECURE_CONFIG", str(tmp_path / "trusted.toml"))
    (tmp_path / "failsecure.toml").write_text('[hooks."fw:y"]\ntimeout = 60\nrole = "gate"\n')
    config = policy.reload()
    assert config.timeout_for("fw:y", interactive=True) == 60.0
    assert config.hook("fw:y").role == "gate" and reduce([deny("fw:y")], config).action is Action.DENY


# ---------------------------------------------------------------- the upward search (issue 25)
# A pyproject.toml counts as the project config only when it has a [tool.failsecure]
# table: one that merely names failsecure (a dependency, a script) used to stop the search
# and hide the project file further up, whose tightening was lost.

import pytest  # noqa: E402

from failsecure.verdict import Action as _Action  # noqa: E402

NAMES_FAILSECURE = [
    '[project]\nname = "app"\ndependencies = ["failsecure>=0.1", "failsecure[otel]", "failsecure==0.1.0"]\n',
    '[project]\nname = "failsecure-demo"\ndescription = "guarded by failsecure"\n',
    '[project.optional-dependencies]\nsafe = [\n  "failsecure",\n]\n',
    '[project.scripts]\nfailsecure = "failsecure.cli:main"\n',  # a key named failsecure, not under tool
    '[tool.poetry.dependencies]\nfailsecure = "^0.1"\n',
    '[tool.other]\nnote = "see tool.failsecure"\n',
    'tool = "failsecure"\n',
]


@pytest.mark.parametrize("text", NAMES_FAILSECURE)
def test_a_pyproject_that_only_names_failsecure_does_not_hide_the_project_file_above(tmp_path, monkeypatch, text):
    (tmp_path / "failsecure.toml").write_text('timeout = 4\nrequired = ["fw:must"]\n')
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text(text)
    monkeypatch.chdir(sub)
    assert policy.project_path() == (str(tmp_path / "failsecure.toml"), False)
    config = policy.reload()
    assert config.timeout == 4.0 and config.required == ("fw:must",) and config.error is None
    decision = reduce([Outcome(hook="fw:other", verdict=Verdict(_Action.ALLOW))], config, config.required_for("fw"))
    assert decision.action is _Action.DENY
    assert decision.primary.hook == "fw:must" and decision.primary.failure is Failure.MISSING  # the tightening applies


TABLES = [
    "[tool.failsecure]\ntimeout = 2\n",
    '[tool."failsecure"]\ntimeout = 2\n',
    "[ tool . failsecure ]\ntimeout = 2\n",
    "[tool]\nfailsecure = { timeout = 2 }\n",
    "[tool]\n'failsecure'.timeout = 2\n",
    "tool.failsecure.timeout = 2\n",
    "tool = { failsecure = { timeout = 2 } }\n",
    '[tool.failsecure.hooks."fw:x"]\ntimeout = 2\n',
    '[project]\ndependencies = ["failsecure"]\n[tool."fail\\u0073ecure"]\ntimeout = 2\n',  # an escaped key
    '[tool."fail\\u0073ecure"]\ntimeout = 2\n',  # an escaped key, the word nowhere
]


@pytest.mark.parametrize("text", TABLES)
def test_a_pyproject_with_the_table_is_the_project_file(tmp_path, monkeypatch, text):
    # the allow twin: a real [tool.failsecure] table, however spelled, is the nearest project file
    (tmp_path / "failsecure.toml").write_text("timeout = 4\n")
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text(text)
    monkeypatch.chdir(sub)
    assert policy.project_path() == (str(sub / "pyproject.toml"), True)
    config = policy.reload()
    assert config.error is None and config.sources == [str(sub / "pyproject.toml")]
    assert config.timeout_for("fw:x") == 2.0


@pytest.mark.parametrize("text", [
    "[tool.failsecure]\ntimeout = \n",  # not TOML
    '[project]\ndependencies = ["failsecure"\n[tool.failsecure]\ntimeout = 2\n',  # not TOML
    "[tool]\nfailsecure = 3\n",  # not a table
    b"[tool.failsecure]\ntimeout = 2\n# \xff\n",  # not UTF-8
])
def test_an_invalid_pyproject_that_may_hold_the_table_stops_the_search_and_denies(tmp_path, monkeypatch, text):
    # fail closed: it cannot be told apart from a broken config, so it is one
    (tmp_path / "failsecure.toml").write_text("timeout = 4\n")
    sub = tmp_path / "pkg"
    sub.mkdir()
    path = sub / "pyproject.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    monkeypatch.chdir(sub)
    assert policy.project_path() == (str(path), True)
    config = policy.reload()
    assert config.error and config.error.startswith(str(path))
    from failsecure.adapter import Adapter

    class Toy(Adapter):
        name = "toy"

        def _patch(self):
            pass

        def _probe(self, gate):
            return True

        def to_verdict(self, result):
            return Verdict(_Action.ALLOW)

    decision = Toy().decide("tool", [Outcome(hook="toy:gate", verdict=Verdict(_Action.ALLOW))])
    assert decision.action is _Action.DENY
    assert decision.primary.hook == "failsecure:config" and decision.primary.failure is Failure.INVALID


def test_an_unreadable_pyproject_on_the_way_stops_the_search_and_denies(tmp_path, monkeypatch):
    import builtins

    (tmp_path / "failsecure.toml").write_text("timeout = 4\n")
    sub = tmp_path / "pkg"
    sub.mkdir()
    path = sub / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n')
    real_open = builtins.open

    def deny_read(file, *args, **kwargs):
        if file == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", deny_read)
    monkeypatch.chdir(sub)
    assert policy.project_path() == (str(path), True)
    assert policy.reload().error == f"{path}: cannot read the file (PermissionError)"


@pytest.mark.parametrize("text, table, parsed", [
    (NAMES_FAILSECURE[0] + NAMES_FAILSECURE[2], False, False),  # a dependency: passed over, not parsed
    ('[project]\ndependencies = ["failsecure"]\n[tool.failsecure]\ntimeout = 2\n', True, False),  # a header
    ('[tool.failsecure.hooks."fw:x"]\ntimeout = 2\n[[tool.mypy.overrides]]\nx = 1\n', True, False),
    ("tool.failsecure.timeout = 2\n", True, True),  # unusual spellings are parsed
    ('[tool.failsecure]\ntimeout = 2\nnote = """x"""\n', True, True),
    ("[[tool]]\n[tool.failsecure]\ntimeout = 2\n", False, True),  # extends the array's element: no table
])
def test_the_runner_pays_no_tomllib_import_for_the_usual_pyprojects(tmp_path, text, table, parsed):
    # the command-hook runner searches on every tool call (its config cache spares the
    # parse, not the search): a project that depends on failsecure, or configures it with
    # a [tool.failsecure] header, must not pay the tomllib import (~25 ms) for the search
    import os

    (tmp_path / "pyproject.toml").write_text(text)
    code = "import sys\nfrom failsecure import policy\nprint(policy.project_path()[0] is not None, 'tomllib' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAILSECURE")}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(policy.__file__))
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(table), str(parsed)]


def test_the_byte_check_agrees_with_tomllib():
    # soundness of the fast paths, over generated TOML: whenever tomllib finds
    # tool.failsecure the bytes did not say NO (so the pyproject is parsed); whenever the
    # bytes say HEADER (stop without parsing) tomllib finds the table or rejects the file
    import tomllib

    from hypothesis import given, settings
    from hypothesis import strategies as st

    segment = st.sampled_from(["tool", "failsecure", "x", "failsecure-x", "project"])
    ws = st.sampled_from(["", " ", "\t"])

    @st.composite
    def key(draw):
        parts = draw(st.lists(segment, min_size=1, max_size=3))
        quoted = [draw(st.sampled_from(["{}", '"{}"', "'{}'"])).format(p) for p in parts]
        return (draw(ws) + "." + draw(ws)).join(quoted)

    value = st.sampled_from(['1', '"failsecure"', '["failsecure>=1", "failsecure"]', "{}", "{ failsecure = 1 }",
                             "{ timeout = 2 }", '"failsecure==1"', '"""\n[tool.failsecure]\n"""', "[\n[tool.failsecure]\n]"])

    @st.composite
    def line(draw):
        kind = draw(st.sampled_from(["header", "pair", "array-header", "comment"]))
        if kind == "header":
            return draw(ws) + "[" + draw(ws) + draw(key()) + draw(ws) + "]" + draw(st.sampled_from(["", " # c"]))
        if kind == "array-header":
            return "[[" + draw(key()) + "]]"
        if kind == "comment":
            return "# [tool.failsecure]"
        return draw(key()) + draw(ws) + "=" + draw(ws) + draw(value)

    @settings(max_examples=600, deadline=None)
    @given(st.lists(line(), min_size=1, max_size=5), st.sampled_from(["\n", "\r\n"]))
    def check(lines, newline):
        text = newline.join(lines) + newline
        said = policy._table_in_bytes(text.encode())
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return
        tool = data.get("tool")
        has = isinstance(tool, dict) and "failsecure" in tool
        if has:
            assert said != policy.NO, text
        if said == policy.HEADER:
            assert has and isinstance(tool["failsecure"], dict), text

    check()


@pytest.mark.parametrize("brk", ["\n", "\r", "\x85", "\u2028"], ids=["lf", "cr", "nel", "ls"])
def test_a_path_with_a_line_break_cannot_forge_a_trust_entry(tmp_path, monkeypatch, brk):
    """``config trust`` on a file whose directory name carries a line break and a forged
    entry must not make another file trusted: such a path is refused, and never matched."""
    from failsecure import policy

    home = tmp_path / "home"
    home.mkdir()
    victim = tmp_path / "victim" / "failsecure.toml"
    victim.parent.mkdir()
    victim.write_text('on_error = "allow"\n')
    digest = policy._digest(victim.read_bytes())
    odd = tmp_path / f"x{brk}{digest} {victim}{brk}y"
    odd.mkdir(parents=True)
    bait = odd / "failsecure.toml"
    bait.write_text("timeout = 5\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    with pytest.raises(ValueError):
        policy.trust(str(bait))
    assert not policy.is_trusted(str(victim), victim.read_bytes())
    assert not policy.is_trusted(str(bait), bait.read_bytes())


def test_a_plain_path_is_trusted_and_matched(tmp_path, monkeypatch):
    """The allow twin: an ordinary path is stored and matched."""
    from failsecure import policy

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    plain = tmp_path / "proj" / "failsecure.toml"
    plain.parent.mkdir()
    plain.write_text('on_error = "allow"\n')
    policy.trust(str(plain))
    assert policy.is_trusted(str(plain), plain.read_bytes())


@pytest.mark.parametrize(
    "command,secret",
    [
        ("API_TOKEN='tok_live 9f8e7d6c5b4a' ./hooks/check.sh", "9f8e7d6c5b4a"),
        ('PASS="hunter2 s3cr3t" /usr/bin/hook', "s3cr3t"),
        ("A='x y' B=\"p q\" python3 /opt/gate.py --token z", "q"),
    ],
)
def test_a_quoted_assignment_never_becomes_the_hook_id(command, secret):
    """The hook id of a shell command names its executable: a quoted ``VAR='a b'`` in
    front is one shell word (an assignment), so no part of its value becomes the id."""
    from failsecure.hookid import command_name

    name = command_name(command)
    assert secret not in name.split("#")[0]
    assert name.split("#")[0] in ("check.sh", "hook", "python3")


def test_a_plain_command_keeps_its_hook_id():
    """The allow twin: an unquoted command keeps the id it always had."""
    from failsecure.hookid import command_name

    assert command_name("/usr/local/bin/guard.sh --strict").startswith("guard.sh#")
    assert command_name("FOO=1 python3 /opt/gate.py").startswith("python3#")


# ---------------------------------------------------------------- a project file another user can write

FOREIGN = 65534  # nobody
needs_chown = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="chown to another user needs root")
INVALID = "timeout = \n# secret-content\n"


def shared(tmp_path, monkeypatch, text, name="failsecure.toml"):
    """A file in a shared parent directory (``/tmp``) and a repository below it, the cwd."""
    parent = tmp_path / "shared"
    repo = parent / "repo"
    repo.mkdir(parents=True)
    path = parent / name
    path.write_text(text)
    monkeypatch.chdir(repo)
    return path


@needs_chown
@pytest.mark.parametrize("name,text", [("failsecure.toml", INVALID), ("pyproject.toml", "[tool.failsecure]\n" + INVALID)])
def test_a_project_file_another_user_owns_is_not_this_users_project(tmp_path, monkeypatch, capsys, name, text):
    path = shared(tmp_path, monkeypatch, text, name)
    os.chown(path, FOREIGN, FOREIGN)
    assert policy.project_path() == (None, False)
    config = policy.reload()
    assert config.error is None and str(path) not in config.sources
    assert toy_decision(config).action is _Action.ALLOW  # not a denial of service by another user
    err = capsys.readouterr().err
    assert f"ignoring the project config {path}" in err and "secret-content" not in err
    policy.reload()
    policy.project_path()
    assert "ignoring the project config" not in capsys.readouterr().err  # reported once


@pytest.mark.parametrize("name,text", [("failsecure.toml", INVALID), ("pyproject.toml", "[tool.failsecure]\n" + INVALID)])
def test_an_invalid_project_file_of_this_user_still_denies(tmp_path, monkeypatch, name, text):
    # the twin: the same file, owned by the user, is the project config and fails closed
    path = shared(tmp_path, monkeypatch, text, name)
    assert policy.project_path() == (str(path), name == "pyproject.toml")
    config = policy.reload()
    assert config.error and config.error.startswith(str(path))
    decision = toy_decision(config)
    assert decision.action is _Action.DENY and decision.primary.failure is Failure.INVALID


@needs_chown
def test_the_search_goes_on_past_a_foreign_file_to_the_users_own(tmp_path, monkeypatch):
    (tmp_path / "failsecure.toml").write_text('required = ["fw:must"]\n')
    path = shared(tmp_path, monkeypatch, INVALID)
    os.chown(path, FOREIGN, FOREIGN)
    assert policy.project_path() == (str(tmp_path / "failsecure.toml"), False)
    config = policy.reload()
    assert config.error is None and config.required == ("fw:must",)  # the user's tightening applies


def test_a_world_writable_project_file_is_not_read(tmp_path, monkeypatch, capsys):
    path = shared(tmp_path, monkeypatch, INVALID)
    path.chmod(0o666)
    config = policy.reload()
    assert config.error is None and toy_decision(config).action is _Action.ALLOW
    assert f"ignoring the project config {path}" in capsys.readouterr().err
    path.chmod(0o664)  # the twin: group-writable (a shared checkout) is still the project's
    config = policy.reload()
    assert config.error and toy_decision(config).primary.failure is Failure.INVALID


@needs_chown
def test_a_foreign_symlink_to_a_users_file_is_not_read(tmp_path, monkeypatch):
    mine = tmp_path / "notes.txt"
    mine.write_text(INVALID)
    path = shared(tmp_path, monkeypatch, "")
    path.unlink()
    path.symlink_to(mine)
    os.lchown(path, FOREIGN, FOREIGN)
    assert policy.project_path() == (None, False) and policy.reload().error is None
    os.lchown(path, 0, 0)  # the twin: the user's own link is followed
    assert policy.project_path() == (str(path), False) and policy.reload().error


def toy_decision(config):
    from failsecure.adapter import Adapter

    class Toy(Adapter):
        name = "toy"

        def _patch(self):
            pass

        def _probe(self, gate):
            return True

        def to_verdict(self, result):
            return Verdict(_Action.ALLOW)

    with policy.using(config):
        return Toy().decide("t", [Outcome(hook="toy:g", verdict=Verdict(_Action.ALLOW))])


@needs_chown
def test_a_foreign_link_anywhere_in_a_symlink_chain_is_not_the_users(tmp_path, monkeypatch, capsys):
    # repo/failsecure.toml (the user's link) -> shared/hop (another user's link) -> a root
    # file: the owner of the hop can repoint it at any file root or the user owns (here an
    # invalid one: every call would deny)
    real = tmp_path / "root_owned.txt"
    real.write_text(INVALID)
    (tmp_path / "shared").mkdir()
    hop = tmp_path / "shared" / "hop"
    hop.symlink_to(real)
    os.lchown(hop, FOREIGN, FOREIGN)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "failsecure.toml").symlink_to(hop)
    monkeypatch.chdir(repo)
    assert policy.project_path() == (None, False)
    config = policy.reload()
    assert config.error is None and toy_decision(config).action is _Action.ALLOW
    assert f"ignoring the project config {repo / 'failsecure.toml'}" in capsys.readouterr().err
    # a foreign directory link on the way is a hop too
    (repo / "failsecure.toml").unlink()
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "real.toml").write_text(INVALID)
    (tmp_path / "shared" / "dirlink").symlink_to(tmp_path / "dir")
    os.lchown(tmp_path / "shared" / "dirlink", FOREIGN, FOREIGN)
    (repo / "failsecure.toml").symlink_to(tmp_path / "shared" / "dirlink" / "real.toml")
    assert policy.project_path() == (None, False)


@needs_chown
def test_the_users_own_symlink_chain_is_followed(tmp_path, monkeypatch):
    # the twin: the same chain of the user's (and root's) own links is the project config
    real = tmp_path / "root_owned.txt"
    real.write_text(INVALID)
    (tmp_path / "shared").mkdir()
    hop = tmp_path / "shared" / "hop"
    hop.symlink_to(os.path.relpath(real, hop.parent))  # relative targets resolve from the link
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "failsecure.toml").symlink_to(hop)
    monkeypatch.chdir(repo)
    assert policy.project_path() == (str(repo / "failsecure.toml"), False)
    config = policy.reload()
    assert config.error and config.error.startswith(str(repo / "failsecure.toml"))
    assert toy_decision(config).primary.failure is Failure.INVALID


SWAP = """
import json, os, sys
from failsecure import policy
mine, theirs, home = sys.argv[1:4]
policy.set_trusted_environment({"HOME": home})
swapped = []

def window(event, args):
    # the directory's owner renames his file over the user's right before it is opened,
    # after every check made by path (what he may do at any time, made deterministic)
    if event == "open" and args and args[0] == mine and not swapped and sys.argv[4] == "swap":
        swapped.append(True)
        os.rename(theirs, mine)

sys.addaudithook(window)
config = policy.reload()
print(json.dumps({"error": config.error, "sources": config.sources, "swapped": bool(swapped),
                  "owner": os.stat(mine).st_uid}))
"""


@needs_chown
@pytest.mark.parametrize("swap", ["swap", "no-swap"])
def test_a_file_swapped_in_after_the_check_is_not_read(tmp_path, swap):
    # shared/ belongs to another user; the user's own shared/failsecure.toml is checked,
    # then its owner swaps his (invalid) file in: what is read is what was checked
    shared = tmp_path / "shared"
    repo = shared / "repo"
    repo.mkdir(parents=True)
    (tmp_path / "home").mkdir()
    os.chown(shared, FOREIGN, FOREIGN)
    mine = shared / "failsecure.toml"
    mine.write_text("timeout = 5\n")
    theirs = shared / ".x"
    theirs.write_text(INVALID)
    os.chown(theirs, FOREIGN, FOREIGN)
    done = subprocess.run([sys.executable, "-c", SWAP, str(mine), str(theirs), str(tmp_path / "home"), swap],
                          cwd=repo, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["error"] is None, got  # a file another user wrote never decides this user's calls
    if swap == "swap":
        assert got["swapped"] and got["owner"] == FOREIGN and str(mine) not in got["sources"], got
        assert "secret-content" not in done.stderr
    else:  # the twin: the user's own file in that directory is read
        assert not got["swapped"] and str(mine) in got["sources"], got


def test_trust_refuses_a_path_with_a_line_break_by_name(tmp_path):
    odd = tmp_path / "a\nb"
    odd.mkdir()
    (odd / "failsecure.toml").write_text("timeout = 5\n")
    with pytest.raises(ValueError) as info:
        policy.trust(str(odd / "failsecure.toml"))
    assert str(info.value) == "a path with a line break in it cannot be trusted"


def test_trust_without_a_home_is_a_missing_file_error(tmp_path, monkeypatch):
    import errno

    monkeypatch.setattr(policy, "trust_store", lambda: None)
    project = tmp_path / "failsecure.toml"
    project.write_text("timeout = 5\n")
    with pytest.raises(OSError) as info:
        policy.trust(str(project))
    assert info.value.errno == errno.ENOENT and info.value.strerror == "no home directory for the trust store"


def test_a_project_file_that_repeats_what_is_in_force_does_not_loosen():
    # nothing of it would be ignored, so the trust store is not even asked
    config = policy.Config(ungoverned="audit", on_error="allow")
    assert policy._loosens(config, {"ungoverned": "audit", "on_error": "allow"}, "p.toml") is False
    assert policy._loosens(policy.Config(), {"ungoverned": "audit"}, "p.toml") is True  # the twin


def test_a_foreign_project_file_is_named_once_with_the_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(policy, "_foreign_reported", set())
    path = str(tmp_path / "failsecure.toml")
    policy._report_foreign(path)
    policy._report_foreign(path)
    assert capsys.readouterr().err == (f"failsecure: ignoring the project config {path}: another user can write it "
                                       "(it is not owned by you or root, or it is writable by everyone)\n")


def test_a_project_file_may_put_ungoverned_back_to_deny():
    config = policy.Config(ungoverned="audit")
    policy._apply(config, {"ungoverned": "deny", "hooks": {}}, "p.toml", trusted=False)
    assert config.ungoverned == "deny" and config.origins == {"ungoverned": "p.toml"} and config.ignored == []
    config = policy.Config()  # the twin: it may not loosen it
    policy._apply(config, {"ungoverned": "audit", "hooks": {}}, "p.toml", trusted=False)
    assert config.ungoverned == "deny" and config.ignored == [("p.toml", 'ungoverned = "audit"')]


def test_apply_takes_a_layer_without_hooks():
    config = policy.Config()
    policy._apply(config, {"timeout": 2.0}, "t.toml", trusted=True)
    assert config.timeout == 2.0 and config.hooks == {}


@needs_chown
def test_a_foreign_project_file_does_not_hide_the_pyproject_beside_it(tmp_path, monkeypatch, capsys):
    path = shared(tmp_path, monkeypatch, INVALID)
    os.chown(path, FOREIGN, FOREIGN)
    mine = path.parent / "pyproject.toml"
    mine.write_text("[tool.failsecure]\ntimeout = 2\n")
    assert policy.project_path() == (str(mine), True)
    os.remove(mine)  # the twin: without it, nothing
    assert policy.project_path() == (None, False)
