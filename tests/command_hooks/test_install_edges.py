"""`hook install` on values a host's JSON reader accepts but Python's float cannot
format: a timeout of 1e999 is valid JSON (JSON.parse reads Infinity) and crashed install
with an OverflowError traceback. Install refuses it with a message and leaves the file
as it was; a large finite timeout (twin) installs."""

import json
import subprocess
import sys


def settings_file(tmp_path, timeout_text):
    path = tmp_path / "settings.json"
    path.write_text('{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"guard.sh","timeout":%s}]}]}}'
                    % timeout_text)
    return path


def install(path):
    return subprocess.run([sys.executable, "-m", "failsecure", "hook", "install", "--host", "claude", "--on-failure", "omit",
                           str(path)], capture_output=True, text=True, timeout=60)


def test_an_infinite_timeout_is_refused_with_a_message(tmp_path):
    path = settings_file(tmp_path, "1e999")
    before = path.read_text()
    proc = install(path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "timeout" in proc.stderr and "finite" in proc.stderr
    assert path.read_text() == before


def test_a_large_finite_timeout_installs(tmp_path):
    path = settings_file(tmp_path, "1e6")
    proc = install(path)
    assert proc.returncode == 0, proc.stderr
    handler = json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert handler["timeout"] == 1000005 and "--timeout 1000000 " in handler["command"]
