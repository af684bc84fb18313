"""End to end: a real Strands ``Agent`` with a scripted model that asks for a real ``@tool``
(a marker file says whether it ran), then answers with the tool result it got. Sync call
and ``invoke_async``; concurrent and sequential tool executors. The audit file says which
branch denied."""

import asyncio

import pytest

from failsecure_strands_rig import provider

SECRET = "sk-strands-secret-4242"
MODES = ("sync", "async")
EXECUTORS = ("concurrent", "sequential")


def run(agent, mode):
    if mode == "sync":
        return agent("go")
    return asyncio.run(agent.invoke_async("go"))


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("mode", MODES)
def test_cancel_true_denies(rig, mode, executor):
    def gate(event):
        event.cancel_tool = True

    result = run(rig.agent(hooks=[provider(gate)], executor=executor), mode)
    assert not rig.marker.ran
    assert "tool cancelled by user" in str(result)  # upstream's own text for True
    event = rig.last()
    assert (event["outcome"], event["failure"], event["tool"]) == ("deny", None, "run_command")
    assert event["hook"].endswith("test_cancel_true_denies.<locals>.gate")


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("mode", MODES)
def test_allowing_gate_runs(rig, mode, executor):
    def gate(event):
        event.cancel_tool = False

    result = run(rig.agent(hooks=[provider(gate)], executor=executor, command="echo ok"), mode)
    assert rig.marker.runs() == ["echo ok"]
    assert "ran echo ok" in str(result)
    # False over the initial False is no visible write: no opinion (a False written over
    # an earlier cancel is an allow, and the cancel still wins)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


@pytest.mark.parametrize("mode", MODES)
def test_cancel_message_is_the_tool_result(rig, mode):
    def gate(event):
        event.cancel_tool = "not on fridays"

    result = run(rig.agent(hooks=[provider(gate)]), mode)
    assert not rig.marker.ran
    assert "not on fridays" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


@pytest.mark.parametrize("mode", MODES)
def test_raising_gate_denies_without_leaking(rig, mode):
    def gate(event):
        raise RuntimeError(f"backend down {SECRET}")

    result = run(rig.agent(hooks=[provider(gate)], command=f"echo {SECRET}"), mode)
    assert not rig.marker.ran
    text = str(result)
    assert "(raised)" in text and "gate" in text and SECRET not in text
    event = rig.last()
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", "RuntimeError")
    assert SECRET not in rig.audit_path.read_text()


def test_raising_gate_upstream_ends_the_run_with_the_exception_text(rig, adapter):
    """Upstream is closed here (the run raises), but the caller gets the hook's exception
    text; failsecure turns it into a cancelled tool naming only hook and category."""

    def gate(event):
        raise RuntimeError(f"backend down {SECRET}")

    adapter.unpatch()
    try:
        with pytest.raises(Exception, match=SECRET):  # EventLoopException from the RuntimeError
            rig.agent(hooks=[provider(gate)])("go")
    finally:
        assert adapter.patch() == "patched"
    assert not rig.marker.ran


@pytest.mark.parametrize("mode", MODES)
def test_system_exit_denies(rig, mode):
    def gate(event):
        raise SystemExit(3)

    run(rig.agent(hooks=[provider(gate)]), mode)
    assert not rig.marker.ran
    assert (rig.last()["failure"], rig.last()["exception_type"]) == ("raised", "SystemExit")


@pytest.mark.parametrize("mode", MODES)
def test_hanging_sync_gate_times_out(rig, mode, release):
    def gate(event):
        release.wait(2)

    result = run(rig.agent(hooks=[provider(gate)]), mode)
    assert not rig.marker.ran
    assert "(timeout)" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


@pytest.mark.parametrize("mode", MODES)
def test_hanging_async_gate_times_out(rig, mode):
    async def gate(event):
        await asyncio.sleep(2)

    result = run(rig.agent(hooks=[provider(gate)]), mode)
    assert not rig.marker.ran
    assert "(timeout)" in str(result)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "timeout")


@pytest.mark.parametrize("mode", MODES)
def test_async_gate_within_deadline_runs(rig, mode):
    async def gate(event):
        await asyncio.sleep(0.01)
        event.cancel_tool = False

    run(rig.agent(hooks=[provider(gate)]), mode)
    assert rig.marker.ran
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("abstain", None)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_two_calls_one_forbidden(rig, executor):
    """Two tool calls in one turn: the policy gate cancels one, the other runs."""

    def policy(event):
        if "forbidden" in event.tool_use["input"]["command"]:
            event.cancel_tool = "forbidden command"

    calls = [("run_command", {"command": "forbidden rm"}), ("run_command", {"command": "harmless ls"})]
    result = run(rig.agent(calls=calls, hooks=[provider(policy)], executor=executor), "sync")
    assert rig.marker.runs() == ["harmless ls"]
    assert "forbidden command" in str(result) and "ran harmless ls" in str(result)
    assert sorted(e["outcome"] for e in rig.events()) == ["abstain", "deny"]
