"""The runner's reading of the host's own timeout (runner_protocols.host_capped), without
a CLI: it can only shorten the deadline, it never blocks on what the settings path
names, and an unreadable or moved hook leaves the installed deadline alone."""

import base64
import json
import os

import pytest

from failsecure.runner import protocols as protocols
from failsecure.runner import settings as settings


def installed(tmp_path, timeout=5000):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": {"BeforeTool": [{"matcher": "x", "hooks": [{"type": "command", "command": "/bin/true", "timeout": timeout}]}]}}))
    settings.wrap_settings(str(path), "gemini")
    handler = json.loads(path.read_text())["hooks"]["BeforeTool"][0]["hooks"][0]
    token = handler["command"].split(" --record ")[1].split(" ")[0]
    return path, handler, token


def set_timeout(path, value):
    document = json.loads(path.read_text())
    document["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] = value
    path.write_text(json.dumps(document))


def test_install_records_where_the_host_timeout_is(tmp_path):
    path, handler, token = installed(tmp_path)
    assert handler["timeout"] == 10000
    assert protocols.host_timeout(token) == 10.0
    assert protocols.host_capped(5.0, token) == 5.0  # install's own headroom: unchanged


@pytest.mark.parametrize("host_ms,expected", [(2000, 1.5), (4000, 3.2), (20000, 5.0), (300, 0.05)])
def test_a_lowered_host_timeout_shortens_the_deadline(tmp_path, host_ms, expected):
    path, _handler, token = installed(tmp_path)
    set_timeout(path, host_ms)
    assert protocols.host_capped(5.0, token) == pytest.approx(expected)


def test_no_timeout_key_means_the_hosts_default(tmp_path):
    path, _handler, token = installed(tmp_path)
    set_timeout(path, None)
    assert protocols.host_timeout(token) == 60.0


@pytest.mark.parametrize("kind", ["fifo", "directory", "missing", "moved", "junk", "old-token"])
def test_what_cannot_be_read_leaves_the_deadline_alone(tmp_path, kind):
    path, handler, token = installed(tmp_path)
    if kind == "fifo":
        os.unlink(path)
        os.mkfifo(path)  # an open for reading would block: never opened
    elif kind == "directory":
        os.unlink(path)
        os.mkdir(path)
    elif kind == "missing":
        os.unlink(path)
    elif kind == "moved":
        path.write_text(json.dumps({"hooks": {}}))
    elif kind == "junk":
        path.write_bytes(b"\xff{not json")
    else:
        token = base64.urlsafe_b64encode(json.dumps({"keys": {}}).encode()).decode().rstrip("=")
    assert protocols.host_timeout(token) is None
    assert protocols.host_capped(5.0, token) == 5.0


def test_the_host_timeout_never_lengthens_the_deadline(tmp_path):
    path, _handler, token = installed(tmp_path)
    set_timeout(path, 600000)
    assert protocols.host_capped(5.0, token) == 5.0
