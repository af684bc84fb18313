"""The ``Hooks`` capability's ``before_tool_execute`` hooks under failsecure, end to end:
``Agent(FunctionModel(...))`` calling a real ``@agent.tool_plain`` that writes a marker file,
through ``run_sync`` and ``run``. Every deny asserts the audited failure branch and has an
allow twin."""

import asyncio
import threading

import pytest

from failsecure_pai_rig import hook_id, hooks_with, make_agent, run_agent

MODES = ("sync", "async")
SECRET = "sk-pydantic-ai-secret-77"


def _allow(ctx, *, call, tool_def, args):
    return args


async def _allow_async(ctx, *, call, tool_def, args):
    return args


def _raising(ctx, *, call, tool_def, args):
    raise RuntimeError(f"gate failed on {SECRET}")


def _exiting(ctx, *, call, tool_def, args):
    raise SystemExit(SECRET)


async def _raising_async(ctx, *, call, tool_def, args):
    raise ValueError(SECRET)


def _policy(ctx, *, call, tool_def, args):
    from pydantic_ai.exceptions import ToolFailed

    if "forbidden" in str(args.get("command")):
        raise ToolFailed("policy: forbidden command")
    return args


def _deny_text(output, exc):
    return output if exc is None else f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("mode", MODES)
def test_allowing_gate_runs_the_tool(rig, mode):
    output, exc = run_agent(rig.agent(_allow, _allow_async), mode)
    assert exc is None and "ran harmless" in output
    assert rig.ran() == ["harmless"]
    event = rig.last()
    assert event["framework"] == "pydantic-ai" and event["outcome"] == "allow"
    assert event["tool"] == "run_command" and event["call_id"] == "call-0"
    assert [o["hook"] for o in event["outcomes"]] == [hook_id(_allow), hook_id(_allow_async)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "gate, exception_type",
    [(_raising, "RuntimeError"), (_exiting, "SystemExit"), (_raising_async, "ValueError")],
)
def test_raising_gate_denies_without_leaking(rig, mode, gate, exception_type):
    agent = rig.agent(_allow, gate, calls=[{"command": f"harmless {SECRET}"}])
    output, exc = run_agent(agent, mode)
    told = _deny_text(output, exc)
    assert rig.ran() == []
    assert exc is None, "the model is told, the run goes on"
    assert f"hook '{hook_id(gate)}' failed closed (raised)" in told
    assert SECRET not in told and SECRET not in rig.audit_path.read_text()
    event = rig.last()
    assert (event["outcome"], event["failure"], event["exception_type"]) == ("deny", "raised", exception_type)


@pytest.mark.parametrize("mode", MODES)
def test_hanging_sync_gate_times_out(rig, release, mode):
    def hanging(ctx, *, call, tool_def, args):
        release.wait(2)
        return args

    output, exc = run_agent(rig.agent(hanging), mode)
    assert rig.ran() == [] and exc is None
    assert "failed closed (timeout)" in output
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", "timeout")
    assert event["elapsed_ms"] < 1500


@pytest.mark.parametrize("mode", MODES)
def test_hanging_async_gate_times_out(rig, mode):
    async def hanging(ctx, *, call, tool_def, args):
        await asyncio.sleep(2)
        return args

    output, exc = run_agent(rig.agent(hanging), mode)
    assert rig.ran() == [] and exc is None
    assert rig.last()["failure"] == "timeout"


@pytest.mark.parametrize("mode", MODES)
def test_a_hooks_own_shorter_timeout_still_applies(rig, release, mode):
    """failsecure's deadline is 2 s here; the hook's own ``timeout=0.2`` wins."""
    rig.config(timeout=2)

    def slow(ctx, *, call, tool_def, args):
        release.wait(2)
        return args

    agent = make_agent(rig.marker, [{"command": "harmless"}], [hooks_with(slow, timeout=0.2)])
    output, exc = run_agent(agent, mode)
    assert rig.ran() == [] and exc is None
    event = rig.last()
    assert (event["failure"], event["exception_type"]) == ("timeout", "HookTimeoutError")
    assert event["elapsed_ms"] < 1500


def test_a_hooks_own_timeout_allow_twin(rig):
    agent = make_agent(rig.marker, [{"command": "harmless"}], [hooks_with(_allow, timeout=0.2)])
    output, exc = run_agent(agent)
    assert exc is None and rig.ran() == ["harmless"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("junk", [None, "DENY", False, ["command"], {1: "harmless"}])
def test_junk_answer_denies(rig, mode, junk):
    def junky(ctx, *, call, tool_def, args):
        return junk

    output, exc = run_agent(rig.agent(_allow, junky), mode)
    assert rig.ran() == [] and exc is None
    assert "failed closed (invalid)" in output
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", "invalid")


@pytest.mark.parametrize("mode", MODES)
def test_hostile_dict_subclass_denies(rig, mode):
    class Hostile(dict):
        def __iter__(self):
            raise RuntimeError("hostile")

    def junky(ctx, *, call, tool_def, args):
        return Hostile(args)

    run_agent(rig.agent(junky), mode)
    assert rig.ran() == [] and rig.last()["failure"] == "invalid"


@pytest.mark.parametrize("order", ["deny-first", "deny-last"])
def test_a_hooks_own_deny_wins_and_keeps_its_message(rig, order):
    from pydantic_ai.exceptions import ToolFailed

    def denying(ctx, *, call, tool_def, args):
        raise ToolFailed("denied by my policy")

    gates = (denying, _allow) if order == "deny-first" else (_allow, denying)
    output, exc = run_agent(rig.agent(*gates))
    assert rig.ran() == [] and exc is None
    assert "denied by my policy" in output
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", None)


def test_model_retry_and_skip_are_the_hooks_own_answers(rig):
    from pydantic_ai.exceptions import SkipToolExecution

    def skipping(ctx, *, call, tool_def, args):
        raise SkipToolExecution("skipped by the hook")

    output, exc = run_agent(rig.agent(skipping))
    assert exc is None and rig.ran() == [] and "skipped by the hook" in output
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


# ---------------------------------------------------------------- argument integrity


def _rewrite_to(command):
    def rewriter(ctx, *, call, tool_def, args):
        return {**args, "command": command}

    return rewriter


@pytest.mark.parametrize("mode", MODES)
def test_a_smuggled_rewrite_is_judged_again(rig, mode):
    output, exc = run_agent(rig.agent(_policy, _rewrite_to("forbidden rm -rf")), mode)
    assert rig.ran() == [] and exc is None
    assert "policy: forbidden command" in output


@pytest.mark.parametrize("mode", MODES)
def test_a_harmless_rewrite_runs_with_the_final_arguments(rig, mode):
    output, exc = run_agent(rig.agent(_policy, _rewrite_to("harmless rewritten")), mode)
    assert exc is None and rig.ran() == ["harmless rewritten"]
    assert rig.last()["outcome"] == "allow"


def test_an_in_place_rewrite_is_judged_again(rig):
    def mutating(ctx, *, call, tool_def, args):
        args["command"] = "forbidden"
        return args

    run_agent(rig.agent(_policy, mutating))
    assert rig.ran() == []


def test_a_rewrite_that_never_settles_denies(rig):
    """Changed on purpose (issue 25): a lone hook that rewrites on every run is not run
    again (no other gate judged a stale call); two that keep rewriting the command
    after each other still deny."""
    counter = iter(range(100))

    def restless(ctx, *, call, tool_def, args):
        return {**args, "command": f"harmless {next(counter)}"}

    def restless_too(ctx, *, call, tool_def, args):
        return restless(ctx, call=call, tool_def=tool_def, args=args)

    output, exc = run_agent(rig.agent(restless, restless_too))
    assert rig.ran() == [] and exc is None
    event = rig.last()
    assert (event["outcome"], event["failure"]) == ("deny", "invalid")
    assert "pydantic-ai:before_tool_execute" in output


# ---------------------------------------------------------------- scope


def test_a_gate_filtered_to_other_tools_is_not_consulted(rig):
    agent = make_agent(rig.marker, [{"command": "harmless"}], [hooks_with(_raising, tools=["other_tool"])])
    output, exc = run_agent(agent)
    assert exc is None and rig.ran() == ["harmless"]
    assert rig.events() == []  # no before-tool hook for this tool: upstream untouched


def test_hooks_without_before_tool_hooks_are_untouched(rig):
    from pydantic_ai.capabilities import Hooks

    seen = []
    hooks = Hooks()

    @hooks.on.after_tool_execute
    def after(ctx, *, call, tool_def, args, result):
        seen.append(result)
        return result

    agent = make_agent(rig.marker, [{"command": "harmless"}], [hooks])
    output, exc = run_agent(agent)
    assert exc is None and rig.ran() == ["harmless"] and seen == ["ran harmless"]
    assert rig.events() == []


def test_a_required_hook_that_is_missing_denies(rig):
    rig.config(top='required = ["pydantic-ai:somewhere.gate"]')
    output, exc = run_agent(rig.agent(_allow))
    assert rig.ran() == [] and exc is None
    assert (rig.last()["failure"]) == "missing"


def test_a_required_hook_that_is_there_allows(rig):
    rig.config(top=f'required = ["{hook_id(_allow)}"]')
    output, exc = run_agent(rig.agent(_allow))
    assert exc is None and rig.ran() == ["harmless"]


def test_a_required_hook_denies_even_without_any_before_tool_hook(rig):
    from pydantic_ai.capabilities import Hooks

    rig.config(top='required = ["pydantic-ai:somewhere.gate"]')
    agent = make_agent(rig.marker, [{"command": "harmless"}], [Hooks()])
    run_agent(agent)
    assert rig.ran() == [] and rig.last()["failure"] == "missing"


def test_an_observer_keeps_upstream_behaviour(rig):
    rig.config(tables=f'[hooks."{hook_id(_raising)}"]\nrole = "observer"\n')
    output, exc = run_agent(rig.agent(_raising))
    # the observer's failure does not count; there is no arguments dict to run with, so
    # the call still cannot run with what the hook returned: it runs with the last good one
    assert exc is None and rig.ran() == ["harmless"]


def test_several_tool_calls_each_decided(rig):
    calls = [{"command": "harmless a"}, {"command": "forbidden b"}]
    agent = make_agent(rig.marker, calls, [hooks_with(_policy)])
    output, exc = run_agent(agent)
    assert exc is None and rig.ran() == ["harmless a"]


def test_concurrent_runs_do_not_share_state(rig):
    results = []

    def one(command):
        agent = make_agent(rig.marker, [{"command": command}], [hooks_with(_policy)])
        results.append(run_agent(agent))

    threads = [threading.Thread(target=one, args=(c,)) for c in ("harmless 1", "forbidden 2", "harmless 3")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(rig.ran()) == ["harmless 1", "harmless 3"]


def test_deadline_is_the_configured_one(rig, release):
    rig.config(timeout=0.25)

    def hanging(ctx, *, call, tool_def, args):
        release.wait(2)
        return args

    run_agent(rig.agent(hanging))
    elapsed = rig.last()["elapsed_ms"]
    assert 200 <= elapsed < 1200
