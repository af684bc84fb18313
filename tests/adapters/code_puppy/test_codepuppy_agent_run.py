"""End to end: a real pydantic-ai agent run with a scripted model (no LLM, no network),
code-puppy's pre-tool patch, its real shell tool and the real core-plugins. The marker
file says whether the command actually ran; the audit file says which branch denied."""

import os
import subprocess
import sys
import textwrap

import pytest


@pytest.fixture
def agent_run(real_plugins, run):
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from code_puppy.tools import register_tools_for_agent

    def scripted(command):
        def model(messages, info):
            for part in messages[-1].parts:
                if isinstance(part, ToolReturnPart):  # second turn: echo what the tool said
                    return ModelResponse(parts=[TextPart(str(part.content))])
            return ModelResponse(parts=[ToolCallPart("agent_run_shell_command", {"command": command})])

        return model

    def go(command):
        agent = Agent(FunctionModel(scripted(command)))
        register_tools_for_agent(agent, ["agent_run_shell_command"])
        return run(agent.run("go")).output

    return go


def test_agent_raising_pre_tool_call_denies(agent_run, real_plugins, rig, tmp_path):
    async def guard(tool_name, tool_args, context=None):
        raise RuntimeError("secret")

    real_plugins.register_callback("pre_tool_call", guard)
    marker = tmp_path / "ran"
    seen = agent_run(f"touch {marker}")
    assert not marker.exists()
    assert "(raised)" in seen and "secret" not in seen
    pre = [e for e in rig.events() if e["tool"] == "agent_run_shell_command" and e["failure"]]
    assert pre and (pre[-1]["hook"].endswith(".guard"), pre[-1]["failure"], pre[-1]["exception_type"]) == (True, "raised", "RuntimeError")


def test_agent_allowing_pre_tool_call_runs(agent_run, real_plugins, rig, tmp_path):
    async def guard(tool_name, tool_args, context=None):
        return {"context_message": "checked"}

    real_plugins.register_callback("pre_tool_call", guard)
    marker = tmp_path / "ran"
    seen = agent_run(f"touch {marker}")
    assert marker.exists()
    assert "[hook context]\nchecked" in seen  # a valid non-blocking answer keeps working
    assert all(e["outcome"] in ("allow", "abstain") for e in rig.events())


def test_agent_non_string_reason_blocks(agent_run, real_plugins, rig, tmp_path):
    """0.0.733 and older: ``"[BLOCKED]" in 123`` raised inside ``except Exception: pass``
    and the tool ran."""

    async def guard(tool_name, tool_args, context=None):
        return {"blocked": True, "reason": 123}

    real_plugins.register_callback("pre_tool_call", guard)
    marker = tmp_path / "ran"
    seen = agent_run(f"touch {marker}")
    assert not marker.exists()
    assert "Hook blocked this tool call: 123" in seen
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


def test_agent_destructive_guard_fault_denies(agent_run, rig, tmp_path, monkeypatch):
    import importlib

    module = importlib.import_module("code_puppy_core_plugins.destructive_command_guard.register_callbacks")

    def broken(command):
        raise RuntimeError("detector bug")

    monkeypatch.setattr(module, "detect_destructive_command", broken)
    marker = tmp_path / "ran"
    seen = agent_run(f"touch {marker}")
    assert not marker.exists()
    assert "destructive_command_guard_callback' failed closed (raised)" in seen
    shell = [e for e in rig.events() if e["failure"] == "raised"]
    assert shell and shell[-1]["hook"].endswith("destructive_command_guard_callback")
    assert shell[-1]["exception_type"] == "RuntimeError"


def test_agent_destructive_guard_intact_runs(agent_run, rig, tmp_path):
    marker = tmp_path / "ran"
    agent_run(f"touch {marker}")
    assert marker.exists()
    assert not [e for e in rig.events() if e["outcome"] == "deny"]


# ---------------------------------------------------------------- code-puppy's own patch did not apply

_SCRIPT = textwrap.dedent(
    """
    import asyncio, logging, os, sys
    logging.basicConfig(stream=sys.stdout, level=logging.ERROR)  # log records to stdout, prints to stderr
    import failsecure
    failsecure.install()
    from code_puppy import pydantic_patches, plugins
    from pydantic_ai.tool_manager import ToolManager
    break_it = sys.argv[2] == "broken"
    if break_it:  # pydantic-ai internals "changed": code-puppy's patch cannot apply
        saved = ToolManager.__dict__["get_tool_def"]
        del ToolManager.get_tool_def
    applied = pydantic_patches.patch_tool_call_callbacks()
    if break_it:
        assert pydantic_patches.patch_tool_call_callbacks() is False  # said once, not twice
        ToolManager.get_tool_def = saved
    plugins.load_plugin_callbacks()
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel
    from code_puppy.tools import register_tools_for_agent

    def model(messages, info):
        for part in messages[-1].parts:
            if isinstance(part, ToolReturnPart):
                return ModelResponse(parts=[TextPart(str(part.content))])
        return ModelResponse(parts=[ToolCallPart("agent_run_shell_command", {"command": "touch " + sys.argv[1]})])

    agent = Agent(FunctionModel(model))
    register_tools_for_agent(agent, ["agent_run_shell_command"])
    print("APPLIED", applied)
    print("SEEN", asyncio.run(agent.run("go")).output.replace(chr(10), " "))
    """
)


@pytest.mark.parametrize("state", ["broken", "intact"])
def test_pre_tool_patch_not_applied_denies_every_tool_call(rig, tmp_path, state):
    marker = tmp_path / "ran"
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(marker), state],
        capture_output=True, text=True, timeout=240, env=env, stdin=subprocess.DEVNULL, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    loud = "pre-tool hook patch (code_puppy.pydantic_patches.patch_tool_call_callbacks) did not apply"
    if state == "broken":
        assert "APPLIED False" in proc.stdout
        assert proc.stderr.count(loud) == 1 and proc.stdout.count(loud) == 1  # once, loudly
        assert not marker.exists()
        assert "patch_tool_call_callbacks' is missing" in proc.stdout
        event = rig.last()
        assert (event["outcome"], event["failure"], event["tool"]) == ("deny", "missing", "agent_run_shell_command")
        assert event["hook"] == "code-puppy:pydantic_patches.patch_tool_call_callbacks"
    else:
        assert "APPLIED True" in proc.stdout and loud not in proc.stderr
        assert marker.exists()
        assert all(e["outcome"] != "deny" for e in rig.events())
