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
