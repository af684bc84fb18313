"""Activation, unpatch, lockdown and the doctor self-test of the langchain adapter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import failsecure
from failsecure import activation
from failsecure_langchain_rig import handler

TARGETS = [
    ("langchain_core.callbacks.manager", None, "handle_event"),
    ("langchain_core.callbacks.manager", None, "ahandle_event"),
    ("langgraph.prebuilt.tool_node", "ToolNode", "_execute_tool_sync"),
    ("langgraph.prebuilt.tool_node", "ToolNode", "_execute_tool_async"),
    ("langchain.agents.middleware.human_in_the_loop", "HumanInTheLoopMiddleware", "__init__"),
    ("langchain.agents.factory", None, "_chain_tool_call_wrappers"),
    ("langchain.agents.factory", None, "_chain_async_tool_call_wrappers"),
]


def _owner(module, cls):
    mod = sys.modules[module]
    return getattr(mod, cls) if cls else mod


def test_every_target_is_patched_and_unpatch_restores_upstream(adapter):
    import wrapt

    for module, cls, attr in TARGETS:
        assert isinstance(vars(_owner(module, cls))[attr], wrapt.FunctionWrapper), (module, attr)
    failsecure.uninstall()
    try:
        for module, cls, attr in TARGETS:
            value = vars(_owner(module, cls))[attr]
            assert not isinstance(value, wrapt.FunctionWrapper), (module, attr)
            assert value.__module__ == module
    finally:
        failsecure.install()
    assert adapter.state == "patched"


def test_doctor_self_test_passes(adapter):
    checks = adapter.self_test()
    assert [c.ok for c in checks] == [True] * 4, checks
    assert {c.name for c in checks} == {"raising gate", "hanging gate", "junk gate", "allowing gate"}


def test_refused_adapter_denies_every_tool_call(rig, adapter):
    failsecure.uninstall()
    adapter.refuse("test: target missing")
    try:
        assert adapter.state == "refused"
        _, exc = rig.invoke([], mode="sync")
        assert exc is not None and not rig.marker.ran
        assert str(exc) == "failsecure: hook 'langchain:failsecure' is missing"
        _, exc = rig.invoke([], mode="async")
        assert exc is not None and not rig.marker.ran
    finally:
        adapter.unpatch()
        failsecure.install()
    assert adapter.state == "patched"
    _, exc = rig.invoke([], mode="sync")
    assert exc is None and rig.marker.ran


def test_patch_error_when_the_dispatcher_is_gone(adapter, monkeypatch):
    import langchain_core.callbacks.manager as manager

    fresh = type(adapter)()
    monkeypatch.delattr(manager, "ahandle_event")
    try:
        assert fresh.patch() == "refused"
        assert "ahandle_event" in fresh.refused_reason
    finally:
        fresh.unpatch()


def test_wrapped_targets_keep_their_signature(adapter):
    import inspect

    from langchain_core.callbacks import manager

    assert str(inspect.signature(manager.handle_event)).startswith("(handlers")
    assert inspect.iscoroutinefunction(manager.ahandle_event)


def test_a_module_imported_later_is_patched_on_import(tmp_path):
    """In a fresh interpreter: activate on langchain_core alone, then import langgraph's
    ToolNode and langchain's factory: both are patched on import."""
    code = textwrap.dedent(
        """
        import sys, wrapt, failsecure
        failsecure.install()
        import langchain_core.callbacks.manager
        from failsecure import activation
        assert activation.get("langchain").state == "patched"
        assert "langgraph.prebuilt.tool_node" not in sys.modules
        from langgraph.prebuilt import tool_node
        import langchain.agents.factory as factory
        print(isinstance(vars(tool_node.ToolNode)["_execute_tool_sync"], wrapt.FunctionWrapper),
              isinstance(vars(factory)["_chain_tool_call_wrappers"], wrapt.FunctionWrapper))
        """
    )
    env = dict(os.environ, FAILSECURE_AUTO="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]


def test_drop_in_activates_without_code_change(tmp_path):
    """The wheel's .pth bootstrap (tox installs the wheel): importing langchain_core is
    enough."""
    import site

    paths = site.getsitepackages() + [site.getusersitepackages()]
    if not any(os.path.exists(os.path.join(p, "failsecure-auto.pth")) for p in paths):
        pytest.skip("failsecure-auto.pth not installed (editable install)")
    code = textwrap.dedent(
        """
        from langchain_core.callbacks import BaseCallbackHandler
        from langchain_core.tools import tool
        class Strict(BaseCallbackHandler):
            raise_error = True
            def on_tool_start(self, *a, **k):
                raise NotImplementedError
        @tool
        def t(x: str) -> str:
            "t"
            return "ran"
        try:
            print(t.invoke({"x": "y"}, config={"callbacks": [Strict()]}))
        except Exception as e:
            print(type(e).__name__)
        """
    )
    env = dict(os.environ, FAILSECURE_AUTO="1")
    env.pop("FAILSECURE_CONFIG", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ToolCallDenied"


def test_status_names_the_distribution(adapter):
    status = adapter.status()
    assert status["distribution"] == "langchain-core" and status["state"] == "patched"
    assert status["in_range"], status
    assert activation.get("langchain") is adapter


def test_observer_only_run_calls_no_gate(rig):
    """A plain tracer with no gate: the call is still decided (and audited) once."""
    _, exc = rig.invoke([handler("Tracer", lambda *a, **k: None, strict=False)])
    assert exc is None and rig.marker.ran
    assert len(rig.events()) == 1


def test_a_copied_reference_calls_upstream_after_unpatch(rig, adapter):
    """``from langchain_core.callbacks.manager import handle_event`` taken while patched
    (langgraph does this) behaves as upstream once failsecure is uninstalled."""
    from langchain_core.callbacks.manager import handle_event as copied

    calls = []

    def on_start(*args, **kwargs):
        calls.append(1)
        raise NotImplementedError

    strict = handler("Strict", on_start)
    failsecure.uninstall()
    try:
        copied([strict], "on_tool_start", "ignore_agent", {"name": "t"}, "x", run_id=None)  # upstream swallows
    finally:
        failsecure.install()
    assert calls == [1]
    with pytest.raises(Exception) as denied:
        copied([strict], "on_tool_start", "ignore_agent", {"name": "t"}, "x", run_id=None)
    assert type(denied.value).__name__ == "ToolCallDenied"


@pytest.mark.parametrize("how", ["drop-in", "install"])
def test_importing_create_agent_first_patches_the_factory_once_it_ran(tmp_path, how):
    """``from langchain.agents import create_agent`` as the first import: the factory's
    own import imports the trigger, so the adapter activates while the factory is still
    executing (its functions below that import not defined yet). The factory is patched
    once it has run, not refused (a refused adapter denies every gated call: a false
    deny of every tool). A tool call of a real agent then runs, and a middleware that
    answers junk is judged."""
    if how == "drop-in":
        import site

        paths = site.getsitepackages() + [site.getusersitepackages()]
        if not any(os.path.exists(os.path.join(p, "failsecure-auto.pth")) for p in paths):
            pytest.skip("failsecure-auto.pth not installed (editable install)")
    code = textwrap.dedent(
        """
        import sys
        if sys.argv[1] == "install":
            import failsecure
            failsecure.install()
        from langchain.agents import create_agent
        import wrapt
        import langchain.agents.factory as factory
        from failsecure import activation
        adapter = activation.get("langchain")
        print(adapter.state, isinstance(vars(factory)["_chain_tool_call_wrappers"], wrapt.FunctionWrapper))
        from langchain.agents.middleware import AgentMiddleware
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage, ToolMessage
        from langchain_core.tools import tool

        class Chat(GenericFakeChatModel):
            def bind_tools(self, tools, **kw):
                return self

        @tool
        def echo(x: str) -> str:
            "echo"
            return "ran " + x

        class Junk(AgentMiddleware):
            def wrap_tool_call(self, request, handler):
                return "junk" if request.tool_call["args"]["x"] == "junk" else handler(request)

        for x in ("ok", "junk"):
            model = Chat(messages=iter([AIMessage(content="", tool_calls=[{"name": "echo", "args": {"x": x}, "id": "c1"}]),
                                        AIMessage(content="done")]))
            result = create_agent(model, tools=[echo], middleware=[Junk()]).invoke({"messages": [{"role": "user", "content": "go"}]})
            [message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
            print(message.status, message.content.endswith("(invalid)"))
        """
    )
    import failsecure

    src = os.path.dirname(os.path.dirname(os.path.abspath(failsecure.__file__)))  # the failsecure under test
    env = dict(os.environ, FAILSECURE_AUTO="1" if how == "drop-in" else "0", PYTHONPATH=src)
    env.pop("FAILSECURE_CONFIG", None)
    out = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "cannot patch" not in out.stderr, out.stderr
    assert out.stdout.split() == ["patched", "True", "success", "False", "error", "True"], out.stdout
