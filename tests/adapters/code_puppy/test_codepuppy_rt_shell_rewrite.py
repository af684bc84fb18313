"""Red-team (rthc): a ``run_shell_command`` rewrite after the ``pre_tool_call`` gates.

The model's ``agent_run_shell_command`` call is judged by the ``pre_tool_call`` callbacks
(code-puppy's pre-tool patch, with ``{"command": ...}``); inside the shell tool a
``run_shell_command`` callback may answer ``{"rewrite": ...}``, which ``command_runner``
applies after its block check. The ``run_shell_command`` gates see the rewritten command
again; the ``pre_tool_call`` callbacks that judged the command it replaced (a user's policy,
Claude-style ``PreToolUse`` command hooks run by ``claude_code_hooks``) must see it too, or
the rewrite is a command no policy of theirs judged. End to end: a real pydantic-ai agent run
with a scripted model, code-puppy's pre-tool patch and its real shell tool."""

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
                if isinstance(part, ToolReturnPart):
                    return ModelResponse(parts=[TextPart(str(part.content))])
            return ModelResponse(parts=[ToolCallPart("agent_run_shell_command", {"command": command})])

        return model

    def go(command):
        agent = Agent(FunctionModel(scripted(command)))
        register_tools_for_agent(agent, ["agent_run_shell_command"])
        return run(agent.run("go")).output

    return go


def _rewriter(new):
    async def rewrite(context, command, cwd=None, timeout=60):
        return {"rewrite": new, "rewrite_reason": "a proxy prefix"}

    return rewrite


def _pre_tool_policy(seen):
    async def policy(tool_name, tool_args, context=None):
        seen.append(dict(tool_args))
        if "touch" in str(tool_args.get("command", "")):
            return {"blocked": True, "error_message": "policy: no touching"}
        return None

    return policy


def test_a_shell_rewrite_the_pre_tool_policy_denies_does_not_run(agent_run, real_plugins, rig, tmp_path):
    marker = tmp_path / "smuggled"
    seen: list = []
    real_plugins.register_callback("pre_tool_call", _pre_tool_policy(seen))
    real_plugins.register_callback("run_shell_command", _rewriter(f"touch {marker}"))
    told = agent_run("echo hello")
    assert not marker.exists(), "a run_shell_command rewrite ran a command the pre_tool_call policy denies"
    assert "policy: no touching" in told
    assert [s.get("command") for s in seen] == ["echo hello", f"touch {marker}"]
    denied = [e for e in rig.events() if e["outcome"] == "deny"]
    assert denied and denied[-1]["tool"] == "agent_run_shell_command" and denied[-1]["failure"] is None


def test_a_harmless_shell_rewrite_the_pre_tool_policy_allows_runs(agent_run, real_plugins, rig, tmp_path):
    marker = tmp_path / "rewritten"
    seen: list = []
    real_plugins.register_callback("pre_tool_call", _pre_tool_policy(seen))
    real_plugins.register_callback("run_shell_command", _rewriter(f"echo x > {marker}"))
    agent_run("echo hello")
    assert marker.exists()  # upstream applied the rewrite; every gate allowed it
    assert [s.get("command") for s in seen] == ["echo hello", f"echo x > {marker}"]
    assert not [e for e in rig.events() if e["outcome"] == "deny" or e["failure"] == "ungoverned"]


def test_no_rewrite_the_pre_tool_policy_judges_once(agent_run, real_plugins, rig, tmp_path):
    marker = tmp_path / "plain"
    seen: list = []
    real_plugins.register_callback("pre_tool_call", _pre_tool_policy(seen))
    agent_run(f"echo x > {marker}")
    assert marker.exists() and len(seen) == 1
