import json
import os
import subprocess
import sys
import sysconfig

import pytest


def doctor(*args, cwd, **env):
    return subprocess.run(
        [sys.executable, "-m", "failsecure", "doctor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
        timeout=120,
    )


def test_doctor_json_lists_every_builtin_framework(tmp_path):
    out = doctor("--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    names = {r["framework"] for r in report["frameworks"]}
    assert {"hermes-agent", "code-puppy"} <= names
    for row in report["frameworks"]:
        assert {"version", "supported", "state", "in_range", "fail_closed_upstream"} <= set(row)
    assert report["config"]["error"] is None and report["config"]["timeout"] == 30.0


def test_doctor_reports_a_bad_config_and_fails(tmp_path):
    (tmp_path / "failsecure.toml").write_text("timeot = 1\n")
    out = doctor(cwd=tmp_path)
    assert out.returncode == 1
    assert "unknown key 'timeot'" in out.stdout


def test_doctor_text_output(tmp_path):
    out = doctor("--no-self-test", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("config: defaults")


def test_doctor_finds_host_settings_and_counts_bare_hooks(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh --token s3cr3t"}]}]}}))
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    out = doctor("--json", "--no-self-test", cwd=tmp_path, **env)
    report = json.loads(out.stdout)
    assert report["hosts"] == [{"host": "claude", "path": str(settings), "wrapped": 0, "bare": 1}]
    assert out.returncode == 1  # a bare PreToolUse hook fails open on its host
    text = doctor("--no-self-test", cwd=tmp_path, **env).stdout
    assert "0 PreToolUse hook(s) wrapped, 1 bare" in text and "s3cr3t" not in text
    installed = subprocess.run([sys.executable, "-m", "failsecure", "hook", "install", "--host", "claude", str(settings)],
                               capture_output=True, text=True, env={**os.environ, **env}, timeout=60)
    assert installed.returncode == 0, installed.stderr
    report = json.loads(doctor("--json", "--no-self-test", cwd=tmp_path, **env).stdout)
    assert report["hosts"][0]["wrapped"] == 1 and report["hosts"][0]["bare"] == 0


def test_doctor_json_piped_into_head_ends_cleanly(tmp_path):
    proc = subprocess.run(f"{sys.executable} -m failsecure doctor --json --no-self-test | head -1", shell=True,
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.stdout.strip() == "{" and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


# ---------------------------------------------------------------- doctor checks the user's interpreter


def fake_code_puppy(where):
    """An installed code-puppy whose dispatcher is not where the adapter expects: the
    drop-in, when it starts, activates the real built-in adapter on import, which refuses
    (state ``refused``); where the drop-in does not start, the import leaves it ``unpatched``."""
    info = where / "code_puppy-0.0.946.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: code-puppy\nVersion: 0.0.946\n")
    (where / "code_puppy").mkdir()
    (where / "code_puppy" / "__init__.py").write_text("")
    (where / "code_puppy" / "callbacks.py").write_text("# no dispatcher here\n")


def doctor_with(python_args, tmp_path, **env):
    purelib = sysconfig.get_paths()["purelib"]
    out = subprocess.run([*python_args, "-m", "failsecure", "doctor", "--json", "--no-self-test"], capture_output=True,
                         text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), purelib]), **env})
    text = subprocess.run([*python_args, "-m", "failsecure", "doctor", "--no-self-test"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), purelib]), **env})
    report = json.loads(out.stdout)
    return out.returncode, report, {r["framework"]: r for r in report["frameworks"]}, text.stdout


needs_pth = pytest.mark.skipif(
    not os.path.exists(os.path.join(sysconfig.get_paths()["purelib"], "failsecure-auto.pth")),
    reason="the drop-in .pth ships only in a built wheel",
)


@needs_pth
def test_doctor_says_the_drop_in_does_not_start_under_python_S(tmp_path):
    """Doctor patches frameworks in its own process; what counts is a program's fresh
    interpreter with the same flags: under -S no .pth runs, the framework comes out unpatched."""
    fake_code_puppy(tmp_path / "site")
    status, report, rows, text = doctor_with([sys.executable, "-S"], tmp_path, FAILSECURE_AUTO="1")
    assert report["drop_in"]["drop_in"] is False and "-S" in report["drop_in"]["flags"]
    assert "runs with -S" in report["drop_in"]["why_not"]
    fresh = rows["code-puppy"]["fresh_interpreter"]
    assert fresh["state"] == "unpatched" and "runs with -S" in fresh["why"]
    assert status == 1
    assert "drop-in: DOES NOT START" in text and "failsecure.install()" in text
    assert "NOT PATCHED when a program imports it in a fresh interpreter" in text


@needs_pth
def test_doctor_says_the_drop_in_starts_where_it_does(tmp_path):
    """The twin: the same interpreter without -S reads the .pth; the import alone
    activates the adapter (here it refuses: the fake dispatcher is not where expected)."""
    fake_code_puppy(tmp_path / "site")
    _, report, rows, text = doctor_with([sys.executable], tmp_path, FAILSECURE_AUTO="1")
    assert report["drop_in"]["drop_in"] is True and report["drop_in"]["why_not"] is None
    assert rows["code-puppy"]["fresh_interpreter"]["state"] == "refused"
    assert "drop-in: starts in" in text and "NOT PATCHED" not in text


def test_doctor_with_no_framework_installed_reports_the_drop_in_and_passes(tmp_path):
    """Nothing to guard: a drop-in that cannot start is said, and is no failure."""
    (tmp_path / "site").mkdir()
    status, report, rows, text = doctor_with([sys.executable, "-S"], tmp_path, FAILSECURE_AUTO="1")
    assert status == 0 and report["drop_in"]["drop_in"] is False
    assert all("fresh_interpreter" not in r for r in rows.values())


@pytest.mark.skipif(not getattr(sys, "_base_executable", None) or sys._base_executable == sys.executable,
                    reason="needs a virtualenv over a base interpreter")
def test_doctor_says_where_failsecure_is_outside_site_packages(tmp_path):
    """As after ``pip install --target DIR`` (or a zipapp): failsecure is importable
    through PYTHONPATH, but no site directory holds its .pth, so the drop-in never runs."""
    base = sys._base_executable
    check = subprocess.run([base, "-c", "import failsecure"], capture_output=True, env={**os.environ, "PYTHONPATH": ""})
    if check.returncode == 0:
        pytest.skip("the base interpreter has failsecure installed itself")
    fake_code_puppy(tmp_path / "site")
    status, report, rows, text = doctor_with([base], tmp_path, FAILSECURE_AUTO="1")
    assert report["drop_in"]["drop_in"] is False and "pip --target" in report["drop_in"]["why_not"]
    assert rows["code-puppy"]["fresh_interpreter"]["state"] == "unpatched" and status == 1
    assert "DOES NOT START" in text


def test_doctor_with_the_drop_in_off_says_so_without_failing_for_it(tmp_path):
    """FAILSECURE_AUTO=0 is the user's choice: said, with how to activate explicitly."""
    (tmp_path / "site").mkdir()
    status, report, _, text = doctor_with([sys.executable], tmp_path, FAILSECURE_AUTO="0")
    assert report["drop_in"]["drop_in"] is False and "FAILSECURE_AUTO=0" in report["drop_in"]["why_not"]
    assert status == 0 and "failsecure.install()" in text
