"""Red-team (rthc): a ``tool_execution`` middleware whose failure the user tolerates
(``on_error = "allow"``: a best-effort middleware) and that edited the arguments in place
before it raised. hermes goes on with the same (edited) arguments object to the next
stage; the tolerated failure must not stand for a judgement of what it edited: the
arguments that reach the tool are judged again by the ``pre_tool_call`` gates."""

from __future__ import annotations

import textwrap

import pytest

import failsecure_hermes_rig as H

POLICY = "return {'action': 'block', 'message': 'policy: forbidden path'} if 'forbidden' in str(kw['args'].get('path', '')) else None"


def raising_editor(rig, new_path: str) -> None:
    pytest.importorskip("hermes_cli.middleware")
    name = f"b_editor_{next(H._serial)}"
    folder = rig.home / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(f"name: {name}\nversion: '1.0'\n")
    (folder / "__init__.py").write_text(textwrap.dedent(f"""
        def mw(next_call=None, args=None, **kw):
            args['path'] = {new_path!r}
            raise RuntimeError('secret-payload')

        def register(ctx):
            ctx.register_middleware('tool_execution', mw)
    """))
    rig.enabled.append(name)


def test_a_tolerated_middleware_failure_after_an_in_place_edit_is_judged_again(rig):
    rig.failsecure('on_error = "allow"')
    rig.plugin("a_policy", POLICY)
    raising_editor(rig, "/srv/forbidden")
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert not out["ran"], "an edit made before a tolerated middleware failure ran unjudged"
    assert out["result"] == {"error": "policy: forbidden path"}


def test_a_tolerated_middleware_failure_after_a_harmless_edit_runs(rig):
    rig.failsecure('on_error = "allow"')
    rig.plugin("a_policy", POLICY)
    raising_editor(rig, "/srv/also-ok")
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert out["ran"] and rig.ran[-1] == {"path": "/srv/also-ok"}
    assert "secret-payload" not in str(rig.events())


def test_an_untolerated_middleware_failure_denies_raised(rig):
    rig.plugin("a_policy", POLICY)
    raising_editor(rig, "/srv/also-ok")
    rig.load()
    out = rig.call({"path": "/srv/ok"})
    assert not out["ran"]
    event = rig.last()
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", "RuntimeError")
