"""Red team of what failsecure remembers of a call across turns, by (session, function call
id): a model may reuse a call id in a later turn (ADK keeps an id the model gives; the
scripted model here always says ``call-1``). A deny of a confirmation stage stands on that
call's resume; it must not stand on a LATER call that reuses the id: that one is a new
call, judged on its own, and a human's confirmation of it runs it, as upstream runs it.
Deny twin: the deny of the earlier call still stands on its own resume."""

from __future__ import annotations

import asyncio

import failsecure_adk_rig as adk_rig

ASKED = {"error": "This tool call requires confirmation, please approve or reject."}


class _JunkFirst:
    """Answers junk (``None``) in the first turn (upstream runs the call, failsecure denies
    it ``invalid``), then asks a human (``mend()`` between the turns)."""

    def __init__(self):
        self.junk = True

    def mend(self):
        self.junk = False

    def __call__(self, command: str) -> bool:
        return None if self.junk else True


def _turns(tmp_path, predicate, messages):
    """One session, one message per turn: ``"go"`` (the model calls ``run_command`` with
    id ``call-1``), or ``"confirm"`` (the human confirms what ADK asked last)."""
    LlmAgent, _, _, _, InMemoryRunner, _, types = adk_rig._imports()
    outcome = adk_rig.Outcome()
    tool = adk_rig.make_tool(tmp_path / "ran", outcome, predicate)
    agent = LlmAgent(name="gated", model=adk_rig.model_class()(call_args={"command": "echo hi"}),
                     instruction="Call the tool.", tools=[tool])
    runner = InMemoryRunner(agent=agent, app_name=adk_rig.APP)
    asked: list = []

    async def main():
        s = await runner.session_service.create_session(app_name=adk_rig.APP, user_id=adk_rig.USER)
        for message in messages:
            if callable(message):
                message()
                continue
            if message == "confirm":
                answer = types.FunctionResponse(name="adk_request_confirmation", id=asked[-1], response={"confirmed": True})
                new = types.Content(role="user", parts=[types.Part(function_response=answer)])
            else:
                new = types.Content(role="user", parts=[types.Part(text=message)])
            async for event in runner.run_async(user_id=adk_rig.USER, session_id=s.id, new_message=new):
                for response in event.get_function_responses() or ():
                    outcome.responses.append(dict(response.response or {}))
                for call in event.get_function_calls() or ():
                    if call.name == "adk_request_confirmation":
                        asked.append(call.id)

    asyncio.run(main())
    return outcome, asked


def adk_rig_hook(cls) -> str:
    return f"google-adk:{cls.__module__}.{cls.__qualname__}"


def test_a_later_call_reusing_the_id_of_a_denied_call_runs_once_confirmed(rig, tmp_path):
    predicate = _JunkFirst()
    outcome, asked = _turns(tmp_path, predicate, ["go", predicate.mend, "go again", "confirm"])
    # turn 1: the predicate answered junk, the call is denied (invalid), nobody asked
    denies = [e for e in rig.events() if e["outcome"] == "deny"]
    assert [(e["hook"], e["failure"]) for e in denies] == [(adk_rig_hook(_JunkFirst), "invalid")]
    assert outcome.responses[0] == {"error": f"failsecure: hook '{adk_rig_hook(_JunkFirst)}' failed closed (invalid)"}
    # turn 2: the same id again, the predicate asks a human; turn 3: confirmed, it runs
    assert len(asked) == 1
    assert outcome.responses[1] == ASKED
    assert outcome.ran == [{"command": "echo hi"}], outcome.told()
    assert outcome.response == {"ok": True}


def test_the_denied_call_itself_stays_denied_on_its_resume(rig, tmp_path):
    """The deny twin: the first call's own confirmation stage denied it while ADK checked
    the confirmation (the predicate raising on resume): it stands, the tool never runs."""

    class _RaisesOnResume:
        def __init__(self):
            self.asks = 0

        def __call__(self, command: str) -> bool:
            self.asks += 1
            if self.asks == 1:
                return True  # ask a human
            raise RuntimeError("policy backend down")

    outcome, asked = _turns(tmp_path, _RaisesOnResume(), ["go", "confirm"])
    assert len(asked) == 1
    assert outcome.ran == []
    denies = [e for e in rig.events() if e["outcome"] == "deny"]
    assert denies and {(e["hook"], e["failure"]) for e in denies} == {(adk_rig_hook(_RaisesOnResume), "raised")}


def test_upstream_runs_the_later_call_reusing_the_id(rig, tmp_path):
    """The baseline: unpatched, the junk answer runs the first call and the later call,
    confirmed, runs too."""
    import failsecure

    failsecure.uninstall()
    try:
        predicate = _JunkFirst()
        outcome, asked = _turns(tmp_path, predicate, ["go", predicate.mend, "go again", "confirm"])
    finally:
        failsecure.install()
    assert len(asked) == 1
    assert outcome.ran == [{"command": "echo hi"}, {"command": "echo hi"}]
    assert outcome.responses == [{"ok": True}, ASKED, {"ok": True}]
