"""Fixtures for the langchain adapter tests (the real pinned langchain, langchain-core
and langgraph; no fakes of them). The helpers live in ``langchain_rig.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("failsecure_langchain_rig", _HERE / "langchain_rig.py")
rig_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = rig_module
_spec.loader.exec_module(rig_module)

import failsecure  # noqa: E402
from failsecure import activation, policy  # noqa: E402

Rig = rig_module.Rig


@pytest.fixture
def adapter():
    failsecure.install()  # idempotent; the kit's upstream column leaves failsecure uninstalled
    a = activation.get("langchain")
    assert a.state == "patched", a.refused_reason
    return a


@pytest.fixture
def rig(tmp_path, monkeypatch, adapter):
    monkeypatch.chdir(tmp_path)
    r = Rig(tmp_path, monkeypatch)
    r.config()
    yield r
    r.release.set()
    monkeypatch.delenv("FAILSECURE_CONFIG", raising=False)
    policy.reload()


@pytest.fixture
def upstream(adapter):
    """Run a test's block with failsecure uninstalled, then install it again."""

    class _Upstream:
        def __enter__(self):
            failsecure.uninstall()
            assert adapter.state == "unpatched"

        def __exit__(self, *exc):
            failsecure.install()
            assert adapter.state == "patched", adapter.refused_reason

    return _Upstream()


@pytest.fixture
def failsecure_harness(tmp_path):
    return rig_module.LangChainHarness(tmp_path)


@pytest.fixture
def failsecure_harness_wrap_tool_call(tmp_path):
    return rig_module.MiddlewareHarness(tmp_path)


@pytest.fixture
def failsecure_harness_awrap_tool_call(tmp_path):
    return rig_module.AsyncMiddlewareHarness(tmp_path)


@pytest.fixture
def failsecure_harness_tool_node(tmp_path):
    return rig_module.ToolNodeHarness(tmp_path)


@pytest.fixture
def failsecure_harness_tool_node_async(tmp_path):
    return rig_module.AsyncToolNodeHarness(tmp_path)


@pytest.fixture
def failsecure_harness_hitl_when(tmp_path):
    return rig_module.ReviewHarness(tmp_path)


@pytest.fixture
def failsecure_harness_hitl_when_per_call(tmp_path):
    return rig_module.PerCallReviewHarness(tmp_path)  # its rows are n/a where the release has no per_call


@pytest.fixture
def failsecure_harness_wrap_tool_call_after_hitl(tmp_path):
    return rig_module.AfterReviewHarness(tmp_path)


@pytest.fixture
def failsecure_harness_awrap_tool_call_after_hitl(tmp_path):
    return rig_module.AsyncAfterReviewHarness(tmp_path)
