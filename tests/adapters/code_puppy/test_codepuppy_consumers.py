"""Consumer level: code-puppy's real shell tool (``command_runner.run_shell_command``) and
file-modification tools, with injected callbacks and with the real core-plugins guards.
Each test asserts whether the command or the write actually happened."""

import asyncio
from types import SimpleNamespace

import pytest

CTX = SimpleNamespace(deps=None)


def run_shell(run, command, cwd):
    from code_puppy.tools import command_runner

    return run(command_runner.run_shell_command(CTX, command, cwd=str(cwd), timeout=10))


# ---------------------------------------------------------------- the shell tool


def test_shell_tool_raising_callback_denies(cb, rig, run, tmp_path):
    async def guard(context, command, cwd=None, timeout=60):
        raise RuntimeError("boom")

    cb.register_callback("run_shell_command", guard)
    marker = tmp_path / "ran"
    out = run_shell(run, f"touch {marker}", tmp_path)
    assert not marker.exists()
    assert out.success is False and "(raised)" in out.error and "boom" not in out.error
    assert (rig.last()["failure"], rig.last()["exception_type"]) == ("raised", "RuntimeError")


def test_shell_tool_allowing_callback_runs(cb, rig, run, tmp_path):
    async def guard(context, command, cwd=None, timeout=60):
        return None

    cb.register_callback("run_shell_command", guard)
    marker = tmp_path / "ran"
    out = run_shell(run, f"touch {marker}", tmp_path)
    assert marker.exists() and out.success is True
    assert rig.last()["outcome"] == "abstain"


@pytest.mark.parametrize("answer", ["DENY", False, {"block": True}, ["blocked"]], ids=["str", "False", "typo", "list"])
def test_shell_tool_junk_denies(cb, rig, run, tmp_path, answer):
    async def guard(context, command, cwd=None, timeout=60):
        return answer

    cb.register_callback("run_shell_command", guard)
    marker = tmp_path / "ran"
    out = run_shell(run, f"touch {marker}", tmp_path)
    assert not marker.exists() and out.success is False
    assert rig.last()["failure"] == "invalid"


def test_shell_tool_hang_denies(cb, rig, run, tmp_path):
    async def guard(context, command, cwd=None, timeout=60):
        await asyncio.sleep(3)

    cb.register_callback("run_shell_command", guard)
    marker = tmp_path / "ran"
    assert run_shell(run, f"touch {marker}", tmp_path).success is False
    assert not marker.exists()
    assert rig.last()["failure"] == "timeout"


def test_shell_tool_non_string_reason_blocks(cb, rig, run, tmp_path):
    async def guard(context, command, cwd=None, timeout=60):
        return {"blocked": True, "error_message": 123, "reasoning": object()}

    cb.register_callback("run_shell_command", guard)
    marker = tmp_path / "ran"
    out = run_shell(run, f"touch {marker}", tmp_path)
    assert not marker.exists()
    assert out.error == "123" and isinstance(out.user_feedback, str)
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)


def test_shell_tool_rewrite_keeps_working(cb, rig, run, tmp_path):
    rewritten = tmp_path / "rewritten"

    async def guard(context, command, cwd=None, timeout=60):
        return {"rewrite": f"touch {rewritten}", "rewrite_reason": "test"}

    cb.register_callback("run_shell_command", guard)
    original = tmp_path / "original"
    assert run_shell(run, f"touch {original}", tmp_path).success is True
    assert rewritten.exists() and not original.exists()
    assert rig.last()["outcome"] == "allow"


# ---------------------------------------------------------------- the real core-plugins guards

GUARDS = {
    "destructive_command_guard": ("detect_destructive_command", "git reset --hard"),
    "force_push_guard": ("detect_force_push", "git push --force origin main"),
}


def guard_module(name):
    import importlib

    return importlib.import_module(f"code_puppy_core_plugins.{name}.register_callbacks")


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_real_guard_detector_fault_denies(real_plugins, rig, run, tmp_path, monkeypatch, name):
    """Upstream: the detector raises, the dispatcher records None, the command runs."""
    module = guard_module(name)
    detector, _ = GUARDS[name]

    def broken(command):
        raise RuntimeError("detector bug")

    monkeypatch.setattr(module, detector, broken)
    marker = tmp_path / "ran"
    out = run_shell(run, f"touch {marker}", tmp_path)
    assert not marker.exists() and out.success is False
    outcome = rig.outcome_of(f"{name}.register_callbacks.{name}_callback")
    assert (outcome["outcome"], outcome["failure"], outcome["exception_type"]) == ("abstain", "raised", "RuntimeError")
    assert rig.last()["failure"] == "raised" and rig.last()["outcome"] == "deny"


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_real_guard_intact_allows_a_safe_command(real_plugins, rig, run, tmp_path, name):
    marker = tmp_path / "ran"
    assert run_shell(run, f"touch {marker}", tmp_path).success is True
    assert marker.exists()
    assert rig.outcome_of(f"{name}_callback")["failure"] is None


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_real_guard_blocks_with_its_own_message(real_plugins, rig, run, tmp_path, name):
    """Outside a TTY the guards hard-block; their own block and message stand."""
    _, command = GUARDS[name]
    marker = tmp_path / "ran"
    out = run_shell(run, f"{command}; touch {marker}", tmp_path)
    assert not marker.exists() and out.success is False
    assert "blocked" in out.error.lower() and "failsecure" not in out.error
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)
    assert rig.last()["hook"].endswith(f"{name}_callback")


# ---------------------------------------------------------------- the file tools


def write_async(run, path):
    from code_puppy.tools import file_modifications as fm

    return run(fm.write_to_file_async(CTX, str(path), "hello\n", False))


def write_sync(path):
    from code_puppy.tools import file_modifications as fm

    return fm.write_to_file(CTX, str(path), "hello\n", False)


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_file_tool_raising_permission_callback_denies(cb, rig, run, tmp_path, mode):
    """Upstream: the crash becomes None and the write happens."""

    def guard(*args, **kwargs):
        raise PermissionError("boom")

    cb.register_callback("file_permission", guard)
    target = tmp_path / "out.txt"
    result = write_async(run, target) if mode == "async" else write_sync(target)
    assert not target.exists() and result.get("success") is False
    assert (rig.last()["failure"], rig.last()["exception_type"], rig.last()["tool"]) == ("raised", "PermissionError", "file_permission")


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_file_tool_approving_callback_writes(cb, rig, run, tmp_path, mode):
    async def guard(*args, **kwargs):
        return True

    cb.register_callback("file_permission", guard)
    target = tmp_path / "out.txt"
    result = write_async(run, target) if mode == "async" else write_sync(target)
    assert target.read_text() == "hello\n" and result.get("success") is True
    assert rig.last()["outcome"] == "allow"


def test_file_tool_delete_denied_on_junk(cb, rig, run, tmp_path):
    from code_puppy.tools import file_modifications as fm

    async def guard(*args, **kwargs):
        return "yes"

    cb.register_callback("file_permission", guard)
    target = tmp_path / "keep.txt"
    target.write_text("x")
    run(fm._delete_file_async(CTX, str(target)))
    assert target.exists()
    assert rig.last()["failure"] == "invalid"
    cb.unregister_callback("file_permission", guard)  # the twin: no objection, deleted
    run(fm._delete_file_async(CTX, str(target)))
    assert not target.exists()


def test_real_file_permission_handler_fault_denies(real_plugins, rig, run, tmp_path, monkeypatch):
    """The real core-plugins handler (yolo mode: approves) with an injected config fault."""
    module = guard_module("file_permission_handler")

    def broken():
        raise RuntimeError("config interpolation")

    monkeypatch.setattr(module, "get_yolo_mode", broken)
    target = tmp_path / "out.txt"
    write_async(run, target)
    assert not target.exists()
    outcome = rig.outcome_of("handle_file_permission_async")
    assert (outcome["failure"], outcome["exception_type"]) == ("raised", "RuntimeError")


def test_real_file_permission_handler_intact_writes(real_plugins, rig, run, tmp_path):
    target = tmp_path / "out.txt"
    write_async(run, target)
    assert target.read_text() == "hello\n"
    assert rig.outcome_of("handle_file_permission_async")["outcome"] == "allow"


# ---------------------------------------------------------------- a cross-framework failsecure gate


@pytest.fixture
def plugin_gate():
    from failsecure import Action, Verdict, hookimpl
    from failsecure import plugins as fs_plugins

    class Gate:
        @hookimpl
        def failsecure_pre_tool_call(self, call):
            command = (call.arguments or {}).get("command") or ""
            if call.framework != "code-puppy" or call.tool != "agent_run_shell_command":
                return None
            if "forbidden" in command:
                return Verdict(action=Action.DENY, reason="no forbidden things")
            if "ask-me" in command:
                return Verdict(action=Action.ASK, reason="really?")
            if "crash" in command:
                raise RuntimeError("gate bug")
            return None

    fs_plugins.register(Gate(), name="puppy_test_gate")
    yield
    fs_plugins.unregister(name="puppy_test_gate")


@pytest.mark.parametrize("word,failure,shown", [
    ("forbidden", None, "no forbidden things"),
    ("ask-me", None, "asked for approval"),
    ("crash", "raised", "hook 'plugin:puppy_test_gate' failed closed (raised)"),
])
def test_plugin_gate_is_consulted_beside_the_callbacks(cb, rig, run, tmp_path, plugin_gate, word, failure, shown):
    marker = tmp_path / "ran"
    out = run_shell(run, f"touch {marker} # {word}", tmp_path)
    assert not marker.exists() and shown in out.error
    event = rig.last()
    assert (event["hook"], event["failure"]) == ("plugin:puppy_test_gate", failure)
    assert event["outcome"] == "deny"  # code-puppy cannot ask: the core decides a deny


def test_plugin_gate_allowing_twin(cb, rig, run, tmp_path, plugin_gate):
    marker = tmp_path / "ran"
    assert run_shell(run, f"touch {marker}", tmp_path).success is True
    assert marker.exists()
    assert rig.outcome_of("plugin:puppy_test_gate")["outcome"] == "abstain"


def test_unpatched_twin_fails_open(cb, rig, run, tmp_path, adapter):
    """The same raising callbacks with the adapter unpatched: code-puppy logs them, the
    command runs and the file is written (what the tests above guard against)."""

    async def shell_guard(context, command, cwd=None, timeout=60):
        raise RuntimeError("boom")

    def file_guard(*args, **kwargs):
        raise RuntimeError("boom")

    cb.register_callback("run_shell_command", shell_guard)
    cb.register_callback("file_permission", file_guard)
    marker, target = tmp_path / "ran", tmp_path / "out.txt"
    adapter.unpatch()
    try:
        assert adapter.state == "unpatched"
        run_shell(run, f"touch {marker}", tmp_path)
        write_async(run, target)
        assert marker.exists() and target.exists()
    finally:
        assert adapter.patch() == "patched"
    marker.unlink()
    target.unlink()
    run_shell(run, f"touch {marker}", tmp_path)
    write_async(run, target)
    assert not marker.exists() and not target.exists()


# ---------------------------------------------------------------- rewrites are gated too


def _rewriter(to):
    async def rewrite(context, command, cwd=None, timeout=60):
        if command.startswith("echo "):
            return {"rewrite": to, "rewrite_reason": "test rewriter"}
        return None

    return rewrite


def _no_touch(context, command, cwd=None, timeout=60):
    if "touch" in command:
        return {"blocked": True, "error_message": "no touching"}
    return None


def test_shell_tool_rewritten_command_is_gated_again(cb, rig, run, tmp_path):
    marker = tmp_path / "ran"
    cb.register_callback("run_shell_command", _rewriter(f"touch {marker}"))

    async def no_touch(context, command, cwd=None, timeout=60):
        return _no_touch(context, command, cwd, timeout)

    cb.register_callback("run_shell_command", no_touch)
    out = run_shell(run, "echo hello", tmp_path)
    assert not marker.exists(), "a rewrite must not smuggle a command past a later guard"
    assert out.success is False and "no touching" in out.error
    assert rig.last()["outcome"] == "deny" and rig.last()["failure"] is None


def test_shell_tool_harmless_rewrite_still_runs(cb, rig, run, tmp_path):
    marker = tmp_path / "rewritten"
    cb.register_callback("run_shell_command", _rewriter(f"echo x > {marker}"))

    async def no_touch(context, command, cwd=None, timeout=60):
        return _no_touch(context, command, cwd, timeout)

    cb.register_callback("run_shell_command", no_touch)
    out = run_shell(run, "echo hello", tmp_path)
    assert marker.exists() and out.success is True  # upstream applied the rewrite, gates allowed it


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_file_tool_failed_permission_tells_the_model_the_audited_deny(cb, rig, run, tmp_path, mode):
    """A file_permission deny is [False]; the rejection response the model is told names
    failsecure's deny (hook and category), not a user's rejection, and no exception text."""

    def guard(*args, **kwargs):
        raise PermissionError("boom-secret-77")

    cb.register_callback("file_permission", guard)
    target = tmp_path / "out.txt"
    result = write_async(run, target) if mode == "async" else write_sync(target)
    assert not target.exists() and result.get("success") is False
    hook = rig.last()["hook"]
    assert f"failsecure: hook '{hook}' failed closed (raised)" in result["message"]
    assert "boom-secret-77" not in str(result)
    assert rig.last()["failure"] == "raised"


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_file_tool_callbacks_own_false_keeps_upstreams_rejection(cb, rig, run, tmp_path, mode):
    """The twin: a callback's own False is the rejection upstream tells, unchanged."""

    def guard(*args, **kwargs):
        return False

    cb.register_callback("file_permission", guard)
    target = tmp_path / "out.txt"
    result = write_async(run, target) if mode == "async" else write_sync(target)
    assert not target.exists() and result.get("success") is False
    assert "failsecure" not in result["message"] and result.get("user_rejection") is True
    assert (rig.last()["outcome"], rig.last()["failure"]) == ("deny", None)
