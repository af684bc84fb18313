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
