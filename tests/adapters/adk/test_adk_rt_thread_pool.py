"""Red team of ADK's tool thread pool (``RunConfig(tool_thread_pool_config=...)``: 2.13
calls a sync ``FunctionTool``'s function on a pool thread, other tools on the loop; 2.7.1
uses the pool on the live path only): the before-tool stages still judge every call, the
tool boundary does not take the pool thread's run of a judged call for an ungoverned one
(no false deny), and a wrapper tool that runs another tool through its ``run_async`` is
still ungoverned. Each deny has an allow twin and asserts which branch denied."""

from __future__ import annotations

import asyncio
import threading

import failsecure_adk_rig as adk_rig

THREADS: list = []


def _make_tool(marker, outcome, confirm):
    """``run_command`` as ``adk_rig.make_tool`` makes it, noting the thread it runs on."""
    _, _, _, _, _, FunctionTool, _ = adk_rig._imports()

    def run_command(command: str) -> dict:
        """Run a command (the test tool: writes a marker file)."""
        THREADS.append(threading.current_thread() is threading.main_thread())
        marker.write_text(command)
        outcome.ran.append({"command": command})
        return {"ok": True}

    return FunctionTool(run_command) if confirm is None else FunctionTool(run_command, require_confirmation=confirm)


def _policy_plugin():
    async def policy(tool, tool_args, tool_context):
        if "forbidden" in str(tool_args.get("command", "")):
            return {"error": "policy: forbidden"}
        return None

    return adk_rig.plugin("corp_policy", policy)


def _run(tmp_path, command, call=adk_rig.TOOL, wrapper=False, confirm=None):
    LlmAgent, _, _, _, InMemoryRunner, _, types = adk_rig._imports()
    from google.adk.agents.run_config import RunConfig, ToolThreadPoolConfig

    outcome = adk_rig.Outcome()
    tool = _make_tool(tmp_path / "ran", outcome, confirm)
    tools = [tool] + ([adk_rig.wrapper_tool(tool)] if wrapper else [])
    agent = LlmAgent(name="gated", model=adk_rig.model_class()(call_args={"command": command}, call_name=call),
                     instruction="Call the tool.", tools=tools)
    runner = InMemoryRunner(agent=agent, app_name=adk_rig.APP, plugins=[_policy_plugin()])
    config = RunConfig(tool_thread_pool_config=ToolThreadPoolConfig(max_workers=2))

    async def main():
        s = await runner.session_service.create_session(app_name=adk_rig.APP, user_id=adk_rig.USER)
        new = types.Content(role="user", parts=[types.Part(text="go")])
        async for event in runner.run_async(user_id=adk_rig.USER, session_id=s.id, new_message=new, run_config=config):
            for response in event.get_function_responses() or ():
                outcome.responses.append(dict(response.response or {}))

    asyncio.run(main())
    return outcome


def test_a_call_the_plugin_allows_runs_on_the_pool(rig, tmp_path):
    THREADS.clear()
    outcome = _run(tmp_path, "echo hi")
    assert outcome.ran == [{"command": "echo hi"}], outcome.told()
    from google.adk.flows.llm_flows import functions

    if "tools" in functions._call_tool_in_thread_pool.__module__:
        assert THREADS == [False]  # 2.13: the pool thread ran the sync tool
    assert outcome.response == {"ok": True}
    assert "deny" not in {e["outcome"] for e in rig.events()}


def test_a_call_the_plugin_denies_does_not_run_on_the_pool(rig, tmp_path):
    outcome = _run(tmp_path, "forbidden")
    assert outcome.ran == []
    assert outcome.response == {"error": "policy: forbidden"}
    assert rig.last()["outcome"] == "deny" and rig.last()["hook"] == "google-adk:plugin:corp_policy"


def test_a_predicate_false_runs_on_the_pool(rig, tmp_path):
    outcome = _run(tmp_path, "echo hi", confirm=lambda command: False)
    assert outcome.ran == [{"command": "echo hi"}], outcome.told()


def test_a_raising_predicate_denies_on_the_pool(rig, tmp_path):
    def predicate(command):
        raise RuntimeError("down")

    outcome = _run(tmp_path, "echo hi", confirm=predicate)
    assert outcome.ran == []
    denies = [e for e in rig.events() if e["outcome"] == "deny"]
    assert denies and denies[-1]["failure"] == "raised"


def test_a_wrapper_tool_on_the_pool_is_ungoverned(rig, tmp_path):
    outcome = _run(tmp_path, "forbidden", call=adk_rig.WRAPPER, wrapper=True)
    assert outcome.ran == [], outcome.told()
