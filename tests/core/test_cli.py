import json
import os
import subprocess
import sys


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
