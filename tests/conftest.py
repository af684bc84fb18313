"""For the whole test suite: the trust model follows ``os.environ``.

failsecure's trust model reads ``FAILSECURE_CONFIG``, ``XDG_CONFIG_HOME`` and ``HOME`` from
the environment the process STARTED with, never from later ``os.environ`` changes (a
``.env`` an application loads from an untrusted working directory). The suite's tests
are trusted code and choose their config in-process, with ``monkeypatch.setenv`` (about
fifty places); this fixture tells the policy, through its public API, to trust the live
``os.environ`` for the length of each test, which is exactly what trusted code may do.
The real rule (later changes do not widen trust; variables set before start do count)
is proven in subprocesses, which start with their own environment:
tests/core/test_trusted_environment.py.
"""

import os

import pytest

from failsecure import policy


@pytest.fixture(autouse=True)
def _trust_the_suites_environment():
    previous = policy.set_trusted_environment(os.environ)
    yield
    policy.set_trusted_environment(previous)


# ---------------------------------------------------------------- absent frameworks

def _absent(folder) -> str | None:
    """Why a folder's tests cannot run here (its framework is not installed), or None."""
    from importlib.metadata import PackageNotFoundError, version

    from failsecure.adapters import ADAPTERS

    here = folder.parent.name
    needs = {"otel": "opentelemetry-sdk"} if here == "tests" else {}
    if here == "adapters":
        needs = {meta.tests: meta.distribution for meta in ADAPTERS.values()}
    if here == "command_hooks":
        needs = {"claude_code": "claude-agent-sdk"}  # the Claude Code CLI comes bundled with it
    distribution = needs.get(folder.name)
    if distribution is None:
        return None
    try:
        version(distribution)
    except PackageNotFoundError:
        return f"{distribution} is not installed (its tox env installs it)"
    return None


def pytest_collect_directory(path, parent):
    """``pytest tests`` in a venv with only ``failsecure[test]``: each framework's folder is
    one skip that says what it needs, instead of its conftest failing to import."""
    if path.parent.parent != _TESTS and path.parent != _TESTS:
        return None
    reason = _absent(path)
    if reason is None:
        return None
    return _Absent.from_parent(parent, path=path, reason=reason)


class _Absent(pytest.File):  # not a pytest.Directory: those load the folder's conftest first
    def __init__(self, *, reason, **kw):
        super().__init__(**kw)
        self.reason = reason

    def collect(self):
        pytest.skip(self.reason)


from pathlib import Path  # noqa: E402

_TESTS = Path(__file__).resolve().parent


# ---------------------------------------------------------------- internal errors

def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "internal_errors: the test provokes failsecure's own failure on purpose "
        "(failsecure.report.internal_error), so a reported internal error does not fail it",
    )


@pytest.fixture(autouse=True)
def _no_unexpected_internal_errors(request):
    """Fail a test in which failsecure reported an internal error it did not expect
    (sentry-python's conftest does the same for ``capture_internal_exceptions``): such a
    report means a deny came from failsecure's own bug, which a passing deny test would
    otherwise hide. A test that provokes one on purpose says so with
    ``@pytest.mark.internal_errors``."""
    from failsecure import report

    report.INTERNAL_ERRORS.clear()
    yield
    seen = list(report.INTERNAL_ERRORS)
    report.INTERNAL_ERRORS.clear()
    if seen and request.node.get_closest_marker("internal_errors") is None:
        pytest.fail(
            "failsecure reported internal errors (mark the test @pytest.mark.internal_errors if on purpose): "
            + "; ".join(error.message for error in seen),
            pytrace=False,
        )
