"""Red team of ADK's ``AgentTool`` (a nested agent as a tool: it runs in a Runner of its
own): the sub-agent's tool calls are judged by the plugins it inherits from the parent
runner and by the sub-agent's own ``before_tool_callback``; with
``include_plugins=False`` (an isolated sub-runner) a ``required`` parent plugin is missing
there, so its calls deny ``missing`` instead of running unjudged. Each deny has an allow
twin and asserts which branch denied."""

from __future__ import annotations

import asyncio

import failsecure_adk_rig as adk_rig


def _policy_plugin(seen):
    async def policy(tool, tool_args, tool_context):
        seen.append(dict(tool_args))
        if "forbidden" in str(tool_args.get("command", "")):
            return {"error": "policy: forbidden"}
        return None

    return adk_rig.plugin("corp_policy", policy)


def _run(tmp_path, command, include_plugins=True, before=None):
    LlmAgent, _, _, _, InMemoryRunner, _, types = adk_rig._imports()
    from google.adk.tools.agent_tool import AgentTool

    outcome = adk_rig.Outcome()
    seen: list = []
    kwargs = {"before_tool_callback": before} if before is not None else {}
    worker = LlmAgent(name="worker", model=adk_rig.model_class()(call_args={"command": command}),
                      instruction="Call the tool.", tools=[adk_rig.make_tool(tmp_path / "ran", outcome)], **kwargs)
    parent = LlmAgent(name="boss", model=adk_rig.model_class()(call_args={"request": "do it"}, call_name="worker"),
                      instruction="Delegate.", tools=[AgentTool(worker, include_plugins=include_plugins)])
    runner = InMemoryRunner(agent=parent, app_name=adk_rig.APP, plugins=[_policy_plugin(seen)])

    async def main():
        s = await runner.session_service.create_session(app_name=adk_rig.APP, user_id=adk_rig.USER)
        new = types.Content(role="user", parts=[types.Part(text="go")])
        async for _event in runner.run_async(user_id=adk_rig.USER, session_id=s.id, new_message=new):
            pass

    asyncio.run(main())
    return outcome, seen


def _denies(rig):
    return [e for e in rig.events() if e["outcome"] == "deny"]


def test_a_nested_agents_call_the_inherited_plugin_allows_runs(rig, tmp_path):
    outcome, seen = _run(tmp_path, "echo hi")
    assert outcome.ran == [{"command": "echo hi"}]
    assert {"command": "echo hi"} in seen  # the inherited plugin judged the nested call
    assert not _denies(rig)


def test_a_nested_agents_call_the_inherited_plugin_denies_does_not_run(rig, tmp_path):
    outcome, seen = _run(tmp_path, "forbidden")
    assert outcome.ran == []
    assert [(e["tool"], e["hook"]) for e in _denies(rig)] == [(adk_rig.TOOL, "google-adk:plugin:corp_policy")]


def test_a_nested_agents_own_raising_callback_denies(rig, tmp_path):
    def worker_gate(tool, args, tool_context):
        raise RuntimeError("worker policy down")

    outcome, _ = _run(tmp_path, "echo hi", before=worker_gate)
    assert outcome.ran == []
    [deny] = _denies(rig)
    o = rig.outcome_of("worker_gate", deny)
    assert (o["failure"], o["exception_type"]) == ("raised", "RuntimeError")


def test_an_isolated_sub_runner_misses_a_required_plugin_and_denies(rig, tmp_path):
    rig.config(top='required = ["google-adk:plugin:corp_policy"]')
    outcome, seen = _run(tmp_path, "echo hi", include_plugins=False)
    assert outcome.ran == []
    assert seen and {"command": "echo hi"} not in seen  # only the parent's call was judged by it
    denies = _denies(rig)
    assert denies and denies[-1]["tool"] == adk_rig.TOOL and denies[-1]["failure"] == "missing"


def test_an_isolated_sub_runner_with_the_plugin_required_inherited_runs(rig, tmp_path):
    rig.config(top='required = ["google-adk:plugin:corp_policy"]')
    outcome, _ = _run(tmp_path, "echo hi", include_plugins=True)
    assert outcome.ran == [{"command": "echo hi"}]
    assert not _denies(rig)
