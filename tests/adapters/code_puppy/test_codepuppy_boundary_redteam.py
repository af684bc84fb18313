"""Red-team reproducers for the code-puppy tool boundary (issue 29): a grant is good for
one execution; a tool that raised (``ModelRetry``: pydantic-ai asks the model again, it
never re-runs the call itself) must not leave its grant for another path to use."""

import asyncio

TOOL = "marker_tool"
WRAPPER = "wrapper_tool"


def agent_with(steps: list):
    """The scripted model calls ``steps`` ((tool, arguments), one per turn). The marker
    tool records each run and asks for a retry the first time (``ModelRetry``); the
    wrapper runs the marker tool through its toolset's ``call_tool``, past the dispatch."""
    from pydantic_ai import Agent, ModelRetry, RunContext
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    turn = [0]

    def model(messages, info):
        if turn[0] < len(steps):
            tool, arguments = steps[turn[0]]
            turn[0] += 1
            return ModelResponse(parts=[ToolCallPart(tool, dict(arguments))])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model))
    ran: list = []

    @agent.tool_plain(retries=3)
    def marker_tool(command: str) -> str:
        ran.append(command)
        if len(ran) == 1:
            raise ModelRetry("try again later")
        return "ran"

    @agent.tool
    async def wrapper_tool(ctx: RunContext, command: str) -> str:
        toolset = agent._function_toolset
        tools = await toolset.get_tools(ctx)
        try:
            return str(await toolset.call_tool(TOOL, {"command": command}, ctx, tools[TOOL]))
        except PermissionError as exc:
            return f"Ungoverned: {exc}"

    return agent, ran


def once_gate():
    """The user's gate: the marker tool may be called once in this session (a budget)."""
    seen = []

    def gate(tool_name, tool_args, context=None):
        if tool_name == TOOL:
            seen.append(dict(tool_args))
            if len(seen) > 1:
                return {"blocked": True, "error_message": "budget spent"}
        return None

    return gate


def ungoverned(rig) -> list:
    return [e for e in rig.events() if e["failure"] == "ungoverned" and e["framework"] == "code-puppy"]


def test_a_grant_a_raised_call_gave_back_is_not_left_for_a_wrapper(rig, registry):
    registry.register_callback("pre_tool_call", once_gate())
    agent, ran = agent_with([(TOOL, {"command": "deploy"}), (WRAPPER, {"command": "deploy"})])
    asyncio.run(agent.run("go"))
    assert ran == ["deploy"], "the wrapper ran the marker tool again on the raised call's grant"
    assert [(e["tool"], e["outcome"]) for e in ungoverned(rig)] == [(TOOL, "deny")]


def test_the_model_s_own_retry_is_judged_and_runs(rig, registry):
    """Allow twin: the model retries the call itself; the gate judges it again."""
    registry.register_callback("pre_tool_call", lambda tool_name, tool_args, context=None: None)
    agent, ran = agent_with([(TOOL, {"command": "deploy"}), (TOOL, {"command": "deploy"})])
    assert asyncio.run(agent.run("go")).output == "done"
    assert ran == ["deploy", "deploy"]
    assert ungoverned(rig) == []
