"""Red team (rv2) of the drop of a call's standing records when a new call reuses its id:
while a confirmation of ``call-1`` is pending, the model makes a NEW call with the id
``call-1`` and other arguments (its pause replaces the first's), then the person answers
the FIRST confirmation. The answer is about the call it showed: the new call's arguments
must not run under it (ADK's own check of the confirmation against the call history
refuses the mismatch on both pins; failsecure runs nothing and audits no allow of it).
Twin: the person answers the SECOND confirmation, the new call runs, judged."""

from __future__ import annotations

import asyncio

import pytest

import failsecure_adk_rig as adk_rig


def _turns(tmp_path, answer_index):
    LlmAgent, _, _, _, InMemoryRunner, _, types = adk_rig._imports()
    outcome = adk_rig.Outcome()
    tool = adk_rig.make_tool(tmp_path / "ran", outcome, lambda command: True)
    model = adk_rig.model_class()(call_args={"command": "echo hi"})
    agent = LlmAgent(name="gated", model=model, instruction="Call the tool.", tools=[tool])
    runner = InMemoryRunner(agent=agent, app_name=adk_rig.APP)
    asked: list = []

    async def turn(session, new):
        async for event in runner.run_async(user_id=adk_rig.USER, session_id=session.id, new_message=new):
            for call in event.get_function_calls() or ():
                if call.name == "adk_request_confirmation":
                    asked.append(call.id)

    async def main():
        s = await runner.session_service.create_session(app_name=adk_rig.APP, user_id=adk_rig.USER)
        await turn(s, types.Content(role="user", parts=[types.Part(text="go")]))
        model.call_args = {"command": "rm -rf /"}
        await turn(s, types.Content(role="user", parts=[types.Part(text="go again")]))
        answer = types.FunctionResponse(name="adk_request_confirmation", id=asked[answer_index], response={"confirmed": True})
        try:
            await turn(s, types.Content(role="user", parts=[types.Part(function_response=answer)]))
        except ValueError as exc:  # ADK's refusal of a confirmation that does not match the call history
            outcome.error = exc

    asyncio.run(main())
    return outcome, asked


def test_the_first_confirmation_does_not_run_the_new_call_reusing_its_id(rig, tmp_path):
    outcome, asked = _turns(tmp_path, 0)
    assert len(asked) == 2
    assert outcome.ran == [], outcome.told()
    assert not [e for e in rig.events() if e["outcome"] == "allow" and "rm -rf" in str(e)]
    assert "rm -rf" not in rig.audit_path.read_text() if rig.audit_path.exists() else True


def test_the_second_confirmation_runs_the_new_call(rig, tmp_path):
    outcome, asked = _turns(tmp_path, 1)
    assert len(asked) == 2
    assert outcome.ran == [{"command": "rm -rf /"}], outcome.told()


@pytest.mark.parametrize("answer_index,ran", [(0, []), (1, [{"command": "rm -rf /"}])])
def test_upstream(rig, tmp_path, answer_index, ran):
    import failsecure

    failsecure.uninstall()
    try:
        outcome, _ = _turns(tmp_path, answer_index)
    finally:
        failsecure.install()
    assert outcome.ran == ran
