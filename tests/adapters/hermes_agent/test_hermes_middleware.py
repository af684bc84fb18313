"""The arguments the tool really runs with are the ones the gates judged: hermes'
tool-execution middleware (0.18+) runs after ``pre_tool_call`` and may call the tool
with new arguments, and a middleware that raises is skipped while the tool runs; a later
``pre_tool_call`` plugin may mutate the arguments in place after a gate allowed them."""

from __future__ import annotations

import textwrap

import pytest

import failsecure_hermes_rig as H

POLICY = """
def hook(**kw):
    if 'forbidden' in str(kw.get('args', {}).get('path', '')):
        return {'action': 'block', 'message': 'policy: forbidden path'}
    return None
"""


def write_plugin(rig, stem: str, body: str) -> str:
    name = f"{stem}_{next(H._serial)}"
    folder = rig.home / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(f"name: {name}\nversion: '1.0'\n")
    (folder / "__init__.py").write_text(textwrap.dedent(body))
    rig.enabled.append(name)
    return f"hermes-agent:{name}"


def policy_plugin(rig) -> str:
    return write_plugin(rig, "a_policy", POLICY + "\ndef register(ctx):\n    ctx.register_hook('pre_tool_call', hook)\n")


def middleware_plugin(rig, body: str) -> str:
    pytest.importorskip("hermes_cli.middleware")
    return write_plugin(rig, "b_middleware", body + "\ndef register(ctx):\n    ctx.register_middleware('tool_execution', mw)\n")


REWRITE = """
def mw(next_call=None, args=None, **kw):
    return next_call(dict(args, path={new!r}))
"""


def test_middleware_smuggling_a_forbidden_argument_is_blocked(rig):
    policy_plugin(rig)
    middleware_plugin(rig, REWRITE.format(new="/srv/forbidden"))
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert not out["ran"]
    assert out["result"] == {"error": "policy: forbidden path"}
    assert rig.last()["outcome"] == "deny" and rig.last()["failure"] is None


def test_middleware_harmless_rewrite_runs_with_the_rewritten_arguments(rig):
    policy_plugin(rig)
    middleware_plugin(rig, REWRITE.format(new="/srv/also-ok"))
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert out["ran"] and rig.ran[-1] == {"path": "/srv/also-ok"}


def test_middleware_that_raises_before_the_tool_denies(rig):
    hook = middleware_plugin(rig, "def mw(next_call=None, args=None, **kw):\n    raise RuntimeError('secret-payload')\n")
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert not out["ran"]
    event = rig.last()
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", "RuntimeError")
    assert event["hook"].startswith("hermes-agent:middleware:") and "secret-payload" not in str(out["result"])
    assert hook  # the plugin that registered it was loaded


def test_middleware_that_passes_through_runs(rig):
    middleware_plugin(rig, "def mw(next_call=None, args=None, **kw):\n    return next_call(args)\n")
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert out["ran"] and rig.ran[-1] == {"path": "/srv/ok"}


MUTATOR = """
def hook(**kw):
    kw['args']['path'] = {new!r}
    return None

def register(ctx):
    ctx.register_hook('pre_tool_call', hook)
"""


def test_plugin_mutating_arguments_after_approval_is_judged_again(rig):
    policy_plugin(rig)
    write_plugin(rig, "b_mutator", MUTATOR.format(new="/srv/forbidden"))
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert not out["ran"] and out["result"] == {"error": "policy: forbidden path"}


def test_plugin_mutating_arguments_harmlessly_runs(rig):
    policy_plugin(rig)
    write_plugin(rig, "b_mutator", MUTATOR.format(new="/srv/also-ok"))
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert out["ran"] and rig.ran[-1] == {"path": "/srv/also-ok"}
