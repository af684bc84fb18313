"""``needs_approval`` through real agent runs: a setting that raises, hangs or answers
junk denies the call (no interruption a human could approve; the model is told the
deny the audit records), never skips the check; ``True``/``False`` keep their meaning; an ASK from a plugin gate is an interruption."""

import asyncio

import pytest

import failsecure

MODES = ["sync", "async"]


def hook_of(fn):
    return f"openai-agents:{fn.__module__}.{fn.__qualname__}"


def interrupted(rig, result):
    assert rig.tool.runs() == []
    assert [i.tool_name for i in result.interruptions] == ["run_command"]
    return result.interruptions[0]


def approve_and_resume(rig, result, mode, approve=True):
    item = result.interruptions[0]
    state = result.to_state()
    if approve:
        state.approve(item)
    else:
        state.reject(item)
    return rig.resume(state, mode)


def audited(rig, fn, failure, exception_type=None):
    events = [e for e in rig.events() if any(o["hook"] == hook_of(fn) for o in e["outcomes"])]
    assert events, rig.events()
    event = events[0]
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", failure, exception_type)
    assert event["tool"] == "run_command"


def denied(rig, result, fn, failure, exception_type=None):
    """A failed ``needs_approval`` denied the call: nobody is asked, the tool did not run,
    the model was told the deny the audit recorded (the hook id and the failure)."""
    assert result.interruptions == [] and rig.tool.runs() == []
    audited(rig, fn, failure, exception_type)
    assert rig.told() == f"failsecure: hook '{hook_of(fn)}' failed closed ({failure})"
    assert len([e for e in rig.events() if e["outcome"] == "deny"]) == 1


@pytest.mark.parametrize("mode", MODES)
def test_none_denies(rig, mode):
    def needs(ctx, params, call_id):
        return None

    denied(rig, rig.run(needs_approval=needs, mode=mode), needs, "invalid")


def test_none_skips_approval_upstream(rig, adapter):
    def needs(ctx, params, call_id):
        return None

    failsecure.uninstall()
    try:
        result = rig.run(needs_approval=needs)
    finally:
        failsecure.install()
        assert adapter.patch() == "patched"
    assert result.interruptions == [] and rig.tool.runs() == [{"command": "harmless"}]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer", ["yes", 1, 0, [], {"approve": True}], ids=["str", "1", "0", "list", "dict"])
def test_junk_denies(rig, mode, answer):
    def needs(ctx, params, call_id):
        return answer

    denied(rig, rig.run(needs_approval=needs, mode=mode), needs, "invalid")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("exc", [RuntimeError, SystemExit])
def test_raising_denies(rig, mode, exc):
    def needs(ctx, params, call_id):
        raise exc("secret-in-message")

    denied(rig, rig.run(needs_approval=needs, mode=mode), needs, "raised", exc.__name__)
    assert "secret-in-message" not in rig.audit_path.read_text()
    assert "secret-in-message" not in rig.told()


@pytest.mark.parametrize("mode", MODES)
def test_hanging_sync_denies(rig, mode):
    release = rig.release

    def needs(ctx, params, call_id):
        release.wait(2)
        return False

    denied(rig, rig.run(needs_approval=needs, mode=mode), needs, "timeout")


@pytest.mark.parametrize("mode", MODES)
def test_hanging_async_denies(rig, mode):
    async def needs(ctx, params, call_id):
        await asyncio.sleep(2)
        return False

    denied(rig, rig.run(needs_approval=needs, mode=mode), needs, "timeout")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("is_async", [False, True])
def test_false_runs_twin(rig, mode, is_async):
    if is_async:
        async def needs(ctx, params, call_id):
            return False
    else:
        def needs(ctx, params, call_id):
            return params == {"command": "harmless"} and False

    result = rig.run(needs_approval=needs, mode=mode)
    assert result.interruptions == [] and rig.tool.runs() == [{"command": "harmless"}]
    assert any(o["hook"] == hook_of(needs) and o["outcome"] == "allow" for e in rig.events() for o in e["outcomes"])


@pytest.mark.parametrize("mode", MODES)
def test_true_asks_and_approval_runs(rig, mode):
    def needs(ctx, params, call_id):
        return params.get("command") == "harmless"

    result = rig.run(needs_approval=needs, mode=mode)
    interrupted(rig, result)
    assert rig.events()[0]["outcome"] == "ask"
    approve_and_resume(rig, result, mode)
    assert rig.tool.runs() == [{"command": "harmless"}]


@pytest.mark.parametrize("mode", MODES)
def test_static_settings_untouched(rig, mode):
    result = rig.run(needs_approval=True, mode=mode)
    interrupted(rig, result)
    approve_and_resume(rig, result, mode)
    assert rig.tool.runs() == [{"command": "harmless"}]


def test_on_error_allow_config_is_honoured(rig):
    def needs(ctx, params, call_id):
        raise RuntimeError

    rig.config(tables=f'[hooks."{hook_of(needs)}"]\non_error = "allow"\n')
    result = rig.run(needs_approval=needs)
    assert result.interruptions == [] and rig.tool.runs() == [{"command": "harmless"}]


# ---------------------------------------------------------------- ASK from a plugin gate


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("approve", [True, False])
def test_plugin_ask_is_an_interruption(rig, asking_plugin, mode, approve):
    result = rig.run(arguments={"command": "sensitive"}, mode=mode)
    interrupted(rig, result)
    assert rig.events()[0]["outcome"] == "ask"
    approve_and_resume(rig, result, mode, approve=approve)
    assert rig.tool.runs() == ([{"command": "sensitive"}] if approve else [])


@pytest.mark.parametrize("mode", MODES)
def test_plugin_no_ask_twin(rig, asking_plugin, mode):
    result = rig.run(arguments={"command": "plain"}, mode=mode)
    assert result.interruptions == [] and rig.tool.runs() == [{"command": "plain"}]
