import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from failsecure import policy  # noqa: E402


@pytest.fixture(autouse=True)
def clean_config(tmp_path, monkeypatch):
    """Every test starts from defaults, in an empty cwd."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FAILSECURE_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no real user config
    policy.reload()
    yield
    policy.reload()


@pytest.fixture
def write_config(tmp_path, monkeypatch):
    def write(text, name="failsecure.toml"):
        path = tmp_path / name
        path.write_text(text)
        monkeypatch.setenv("FAILSECURE_CONFIG", str(path))
        return policy.reload()

    return write
