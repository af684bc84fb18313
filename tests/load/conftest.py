import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from failsecure import policy  # noqa: E402

#: (test, line) of measured figures, printed at the end of the run to be quoted
FIGURES: list = []


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
def figures(request):
    def note(line: str) -> None:
        FIGURES.append((request.node.name, line))

    return note


def pytest_terminal_summary(terminalreporter):
    if not FIGURES:
        return
    terminalreporter.section("failsecure under load: measured")
    for test, line in FIGURES:
        terminalreporter.write_line(f"{test}: {line}")
