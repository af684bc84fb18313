"""``needs_approval`` and ``on_approval`` of the shell and apply-patch tools, the
``on_approval`` of a custom tool hanging past its deadline, and
``HostedMCPTool.on_approval_request``, each through a real ``Runner`` run with a
scripted model (the model's ``shell_call`` / ``apply_patch_call`` /
``custom_tool_call`` / ``mcp_approval_request`` item). A setting or callback that
raises, hangs or answers junk is the SDK's own rejection with the audited reason
(nobody asked); every deny asserts the failure branch in the audit and has an allow
twin."""

from __future__ import annotations

import asyncio
import json

import pytest

MODES = ["sync", "async"]
SECRET = "SECRET-shell-patch-4711"
FAILURES = ["raised", "invalid", "timeout"]


def hook_of(fn):
    return f"openai-agents:{fn.__module__}.{fn.__qualname__}"


def failing(failure, answer_ok=None):
    """A callback (any arity) that fails the way ``failure`` says."""
    async def callback(*args):
        if failure == "raised":
            raise RuntimeError(SECRET)
        if failure == "timeout":
            await asyncio.sleep(3)
            return answer_ok
        return "yes"  # junk: not a bool, not an approval mapping

    callback.__qualname__ = f"failing_{failure}"
    callback.__name__ = callback.__qualname__
    return callback


def audited_deny(rig, fn, failure):
    events = [e for e in rig.events() if e.get("hook") == hook_of(fn) or any(o["hook"] == hook_of(fn) for o in e.get("outcomes", []))]
    assert events, rig.events()
    event = events[-1]
    assert (event["outcome"], event["failure"]) == ("deny", failure)
    assert SECRET not in rig.audit_path.read_text()


def told_text(told):
    return told if isinstance(told, str) else json.dumps(told, default=str)


# ---------------------------------------------------------------- the shell tool


def run_shell(rig, mode, needs_approval=False, on_approval=None):
    """One real run with a local ``ShellTool``; the model asks for one ``shell_call``.
    Returns (the commands the executor ran, the interruptions, what the model was told)."""
    from agents import Agent, ShellTool
    from failsecure_oa_rig import item_model, run
    from openai.types.responses import ResponseFunctionShellToolCall

    ran: list = []

    def executor(request):
        ran.extend(request.data.action.commands)
        return "ok"

    def first():
        return [ResponseFunctionShellToolCall(type="shell_call", id="sh_1", call_id="call_sh1", status="completed",
                                              action={"commands": ["ls"]})]

    tool = ShellTool(executor=executor, needs_approval=needs_approval, on_approval=on_approval)
    model = item_model(first)
    result = run(Agent(name="shell", instructions="run", tools=[tool], model=model), mode, max_turns=3)
    return ran, result.interruptions, told_text(model.told.get("call_sh1"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("failure", FAILURES)
def test_a_failed_shell_needs_approval_rejects_without_asking(rig, mode, failure):
    needs = failing(failure, answer_ok=False)
    ran, interruptions, told = run_shell(rig, mode, needs_approval=needs)
    assert ran == [] and interruptions == []  # upstream: a human asked about a check that failed (or a crash)
    assert f"'{hook_of(needs)}'" in told and f"({failure})" in told and SECRET not in told
    audited_deny(rig, needs, failure)


@pytest.mark.parametrize("mode", MODES)
def test_a_shell_needs_approval_answering_false_runs(rig, mode):
    async def needs(ctx, action, call_id):
        return False

    ran, interruptions, told = run_shell(rig, mode, needs_approval=needs)
    assert ran == ["ls"] and interruptions == []


@pytest.mark.parametrize("mode", MODES)
def test_a_shell_needs_approval_answering_true_asks(rig, mode):
    async def needs(ctx, action, call_id):
        return True

    ran, interruptions, told = run_shell(rig, mode, needs_approval=needs)
    assert ran == [] and [i.tool_name for i in interruptions] == ["shell"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("failure", FAILURES)
def test_a_failed_shell_on_approval_rejects(rig, mode, failure):
    on_approval = failing(failure, answer_ok={"approve": True})
    ran, interruptions, told = run_shell(rig, mode, needs_approval=True, on_approval=on_approval)
    assert ran == [] and interruptions == []  # upstream: junk asks a human; a raise ends the run; a hang waits
    assert f"'{hook_of(on_approval)}'" in told and f"({failure})" in told and SECRET not in told
    audited_deny(rig, on_approval, failure)


@pytest.mark.parametrize("mode", MODES)
def test_a_shell_on_approval_that_approves_runs(rig, mode):
    async def on_approval(ctx, item):
        return {"approve": True}

    ran, interruptions, told = run_shell(rig, mode, needs_approval=True, on_approval=on_approval)
    assert ran == ["ls"] and interruptions == []


# ---------------------------------------------------------------- the apply-patch tool


def run_patch(rig, mode, needs_approval=False, on_approval=None):
    """One real run with an ``ApplyPatchTool``; the model asks for one
    ``apply_patch_call`` creating a file. Returns (the paths the editor wrote, the
    interruptions, what the model was told)."""
    from agents import Agent, ApplyPatchTool
    from failsecure_oa_rig import item_model, run
    from openai.types.responses import ResponseApplyPatchToolCall

    written: list = []

    class Editor:
        def create_file(self, operation):
            written.append(operation.path)
            return None

        def update_file(self, operation):
            written.append(operation.path)
            return None

        def delete_file(self, operation):
            written.append(operation.path)
            return None

    def first():
        return [ResponseApplyPatchToolCall(type="apply_patch_call", id="ap_1", call_id="call_ap1", status="completed",
                                           operation={"type": "create_file", "path": "notes.txt", "diff": "+hello\n"})]

    tool = ApplyPatchTool(editor=Editor(), needs_approval=needs_approval, on_approval=on_approval)
    model = item_model(first)
    result = run(Agent(name="patch", instructions="edit", tools=[tool], model=model), mode, max_turns=3)
    return written, result.interruptions, told_text(model.told.get("call_ap1"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("failure", FAILURES)
def test_a_failed_apply_patch_needs_approval_rejects_without_asking(rig, mode, failure):
    needs = failing(failure, answer_ok=False)
    written, interruptions, told = run_patch(rig, mode, needs_approval=needs)
    assert written == [] and interruptions == []
    assert f"'{hook_of(needs)}'" in told and f"({failure})" in told and SECRET not in told
    audited_deny(rig, needs, failure)


@pytest.mark.parametrize("mode", MODES)
def test_an_apply_patch_needs_approval_answering_false_runs(rig, mode):
    async def needs(ctx, operation, call_id):
        return False

    written, interruptions, told = run_patch(rig, mode, needs_approval=needs)
    assert written == ["notes.txt"] and interruptions == []


@pytest.mark.parametrize("mode", MODES)
def test_an_apply_patch_needs_approval_answering_true_asks(rig, mode):
    async def needs(ctx, operation, call_id):
        return True

    written, interruptions, told = run_patch(rig, mode, needs_approval=needs)
    assert written == [] and [i.tool_name for i in interruptions] == ["apply_patch"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("failure", FAILURES)
def test_a_failed_apply_patch_on_approval_rejects(rig, mode, failure):
    on_approval = failing(failure, answer_ok={"approve": True})
    written, interruptions, told = run_patch(rig, mode, needs_approval=True, on_approval=on_approval)
    assert written == [] and interruptions == []
    assert f"'{hook_of(on_approval)}'" in told and f"({failure})" in told and SECRET not in told
    audited_deny(rig, on_approval, failure)


@pytest.mark.parametrize("mode", MODES)
def test_an_apply_patch_on_approval_that_approves_runs(rig, mode):
    async def on_approval(ctx, item):
        return {"approve": True}

    written, interruptions, told = run_patch(rig, mode, needs_approval=True, on_approval=on_approval)
    assert written == ["notes.txt"] and interruptions == []


# ---------------------------------------------------------------- a custom tool's on_approval hanging


def run_custom(rig, mode, on_approval):
    from agents import Agent
    from agents.tool import CustomTool
    from failsecure_oa_rig import item_model, run
    from openai.types.responses import ResponseCustomToolCall

    ran: list = []

    async def invoke(ctx, tool_input):
        ran.append(tool_input)
        return "ran"

    def first():
        return [ResponseCustomToolCall(type="custom_tool_call", call_id="call_u1", name="run_custom", input="ls", id="ct_1")]

    tool = CustomTool(name="run_custom", description="run", on_invoke_tool=invoke, needs_approval=True, on_approval=on_approval)
    model = item_model(first)
    result = run(Agent(name="custom", instructions="run", tools=[tool], model=model), mode, max_turns=3)
    return ran, result.interruptions, told_text(model.told.get("call_u1"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sync", [False, True], ids=["async-callback", "sync-callback"])
def test_a_hanging_custom_on_approval_rejects_at_its_deadline(rig, mode, sync):
    import time

    if sync:
        def on_approval(ctx, item):
            rig.release.wait(3)
            return {"approve": True}
    else:
        async def on_approval(ctx, item):
            await asyncio.sleep(3)
            return {"approve": True}

    started = time.monotonic()
    ran, interruptions, told = run_custom(rig, mode, on_approval)
    assert time.monotonic() - started < 2.5
    assert ran == [] and interruptions == []  # upstream: waits, then approves
    assert f"'{hook_of(on_approval)}'" in told and "(timeout)" in told
    audited_deny(rig, on_approval, "timeout")


@pytest.mark.parametrize("mode", MODES)
def test_a_custom_on_approval_answering_in_time_runs(rig, mode):
    async def on_approval(ctx, item):
        await asyncio.sleep(0.01)
        return {"approve": True}

    ran, interruptions, told = run_custom(rig, mode, on_approval)
    assert ran == ["ls"] and interruptions == []


# ---------------------------------------------------------------- HostedMCPTool.on_approval_request


def run_hosted(rig, mode, on_approval_request):
    """One real run with a ``HostedMCPTool`` (loopback URL, never contacted); the model
    sends one ``mcp_approval_request``. Returns the ``mcp_approval_response`` items the
    model got back."""
    from agents import Agent, HostedMCPTool
    from failsecure_oa_rig import _item_get, item_model, run
    from openai.types.responses.response_output_item import McpApprovalRequest

    def first():
        return [McpApprovalRequest(id="mcpr_1", type="mcp_approval_request", name="run_command",
                                   arguments=json.dumps({"command": "ls"}), server_label="srv")]

    tool = HostedMCPTool(
        tool_config={"type": "mcp", "server_label": "srv", "server_url": "http://127.0.0.1:9", "require_approval": "always"},
        on_approval_request=on_approval_request,
    )
    model = item_model(first)
    run(Agent(name="hosted", instructions="run", tools=[tool], model=model), mode, max_turns=3)
    return [(_item_get(a, "approve"), str(_item_get(a, "reason") or "")) for a in model.answers]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("failure", FAILURES)
def test_a_failed_on_approval_request_answers_no(rig, mode, failure):
    callback = failing(failure, answer_ok={"approve": True})
    if failure == "invalid":
        async def callback(request):  # noqa: F811 - truthy junk upstream approves
            return {"approve": "no"}

        callback.__qualname__ = callback.__name__ = "failing_invalid_truthy"
    answers = run_hosted(rig, mode, callback)
    assert len(answers) == 1 and answers[0][0] is False  # upstream: truthy junk approves, a raise ends the run
    assert f"'{hook_of(callback)}'" in answers[0][1] and f"({failure})" in answers[0][1] and SECRET not in answers[0][1]
    audited_deny(rig, callback, failure)


@pytest.mark.parametrize("mode", MODES)
def test_an_on_approval_request_that_approves_answers_yes(rig, mode):
    async def callback(request):
        return {"approve": True}

    assert run_hosted(rig, mode, callback) == [(True, "")]


@pytest.mark.parametrize("mode", MODES)
def test_an_on_approval_request_that_refuses_answers_no_with_its_reason(rig, mode):
    def callback(request):
        return {"approve": False, "reason": "not today"}

    assert run_hosted(rig, mode, callback) == [(False, "not today")]


# ---------------------------------------------------------------- upstream, for contrast


def _upstream(adapter, fn):
    import failsecure

    failsecure.uninstall()
    try:
        return fn()
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"


def test_junk_from_a_shell_needs_approval_asks_a_human_upstream(rig, adapter):
    ran, interruptions, told = _upstream(adapter, lambda: run_shell(rig, "sync", needs_approval=failing("invalid")))
    assert ran == [] and [i.tool_name for i in interruptions] == ["shell"]


def test_truthy_junk_from_on_approval_request_is_sent_on_upstream(rig, adapter):
    def callback(request):
        return {"approve": "no"}

    assert _upstream(adapter, lambda: run_hosted(rig, "sync", callback))[0][0] == "no"
