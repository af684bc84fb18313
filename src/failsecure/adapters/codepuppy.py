"""code-puppy: the gating callback phases run under the guard, the core decides.

code-puppy dispatches every callback phase through two loops in ``code_puppy.callbacks``:
``async _trigger_callbacks(phase, ...)`` and ``_trigger_callbacks_sync(phase, ...)``. Both
log a raising callback and record ``None``, which the consumers of the gating phases
read as approval; neither has a deadline; junk answers (``"DENY"``, ``False``,
``{"block": True}``) are ignored; the sync loop closes an async callback it reaches from a
running loop and records ``None``. Upstream's opt-in ``register_callback(...,
fail_closed=True)`` (0.0.734+) covers only raising callbacks that opted in.

The patch is one ``wrapt`` wrapper on each of the two loops, for the three gating phases
only (``pre_tool_call``, ``run_shell_command``, ``file_permission``); every other phase
goes straight to upstream's loop:

- the callbacks come from upstream's own ``get_callbacks(phase)`` (looked up at call
  time), so registrations before or after activation, from every plugin tier, count,
  and disabled plugins stay filtered. Callbacks are never replaced or re-registered:
  ``unregister_callback``, ``_fail_closed_callbacks`` keyed by ``(phase, callback)`` and
  ``inspect.signature(register_callback)`` see exactly what upstream sees;
- each callback is one guarded call (``ahook_call`` in the async loop, ``hook_call`` in
  the sync loop) -> one Outcome; ``decide`` reduces them with the cross-framework gates,
  ``required`` and the config;
- the Decision goes back as the list of results the consumers already understand:
  ``{"blocked": True, "error_message": "[BLOCKED] ...", "reasoning": ...}`` blocks for a
  deny on ``pre_tool_call`` / ``run_shell_command`` (a callback's own valid block keeps
  its own message), ``[False]`` for a deny on ``file_permission``; otherwise each
  callback's own valid answer (``None``, ``context_message``, ``rewrite``, ``True`` ...).

So ``command_runner``, ``pydantic_patches`` and ``file_modifications`` stay as they are.

Timeouts and humans: a callback may be waiting for a person when it asks one (its code,
or a function of its own module it calls, names code-puppy's approval prompt
``get_user_approval[_async]`` or ``arrow_select[_async]``, ACP's ``request_permission``,
prompt_toolkit's ``PromptSession`` / ``prompt_async``, or the builtin ``input``) and
someone can answer (stdin is a TTY, or code-puppy has an approval backend installed: an
editor client answering over ACP). Such a callback gets no default deadline (or its
``interactive_timeout``); a per-hook ``timeout`` in the config still applies. Every other
callback, a plain policy callback on a terminal included, gets the global deadline.

If code-puppy's own pre-tool patch (``pydantic_patches.patch_tool_call_callbacks``)
failed to apply, ``pre_tool_call`` is never dispatched: the adapter says so once,
loudly, wraps pydantic-ai's tool execution so every tool call is denied, and denies the
other gating phases too.

Hook ids: ``code-puppy:<module>.<qualname>`` of the callback.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import sys
import threading
from typing import Any, Optional

from failsecure.adapter import (
    INVALID,
    Adapter,
    IdCache,
    PatchError,
    activate,
    awaitable,
    close_awaitable,
    command_name,
    internal,
    is_async,
    names_in_code,
    on_loop,
    plain_str,
    plugin_gates,
    problem,
    process_failure,
    run_command,
    same,
    snapshot,
    when_imported,
)
from failsecure.verdict import ABSTAIN, Action, Failure, Invalid, Outcome, Verdict, exactly, failure_reason

CALLBACKS = "code_puppy.callbacks"
EXECUTOR = "code_puppy.hook_engine.executor"
PATCHES = "code_puppy.pydantic_patches"
PRE_TOOL_PATCH = "patch_tool_call_callbacks"
ENTRY_POINT_NAME = "failsecure"  # [project.entry-points."code_puppy.plugins"]

PRE_TOOL = "pre_tool_call"
SHELL = "run_shell_command"
FILE = "file_permission"
#: where the rejection response of a file tool reads what to tell the model
STATE, FEEDBACK = "code_puppy.tools.file_permission_state", "get_last_user_feedback"
GATING = frozenset({PRE_TOOL, SHELL, FILE})

#: the tool boundary (docs/ungoverned.md): the run entry points, (module, class, methods):
#: code-puppy's agent turn, and the pydantic-ai agent run it (and a sub-agent) goes through
#: (``run_sync`` and ``ModelCall.run`` await ``run``)
RUN_ENTRIES = (
    ("code_puppy.agents.base_agent", "BaseAgent", ("run_with_mcp",)),
    ("pydantic_ai.agent.abstract", "AbstractAgent", ("run",)),
)
#: ... and the innermost tool execution beneath the ``pre_tool_call`` dispatch (code-puppy's
#: patched ``ToolManager.execute_tool_call``): every function toolset's ``call_tool``
TOOL_CLASSES = (("pydantic_ai.toolsets.function", "FunctionToolset", ("call_tool",)),)

#: the parameters each gating phase is dispatched with (callbacks.on_* signatures)
PARAMS = {
    PRE_TOOL: ("tool_name", "tool_args", "context"),
    SHELL: ("context", "command", "cwd", "timeout"),
    FILE: ("context", "file_path", "operation", "preview", "message_group", "operation_data"),
}
#: keys of a blocked-dict answer the consumers read, and the type each must have
_TEXT_KEYS = ("context_message", "rewrite", "rewrite_reason", "tool_result")
_REASON_KEYS = ("error_message", "reason", "reasoning")
_KNOWN_KEYS = frozenset(("blocked",) + _TEXT_KEYS + _REASON_KEYS)
_GENERIC_BLOCK = "Tool execution blocked by hook"  # upstream's own default text
_ALLOW = Verdict(action=Action.ALLOW)
_DENY = Verdict(action=Action.DENY)
_FILE_ANSWERS = ((None, ABSTAIN), (True, _ALLOW), (False, _DENY))


def _reason_text(value: Any) -> Optional[str]:
    """A deny reason as text, without calling a hook object's own ``__str__``."""
    if value is None:
        return None
    if type(value) is str:
        return value
    if type(value) in (int, float, bool):
        return repr(value)
    return _GENERIC_BLOCK


def _block_verdict(native: Any) -> Verdict:
    """Validator for ``pre_tool_call`` and ``run_shell_command`` answers.

    ``None``: no opinion. A plain dict with only the keys the consumers read:
    ``blocked`` (a bool), text fields (``context_message``, ``rewrite``,
    ``rewrite_reason``, ``tool_result``: str or None) and reasons (``error_message``,
    ``reason``, ``reasoning``: rendered as text). ``{"blocked": True, ...}`` is a deny with
    its own message; any other valid dict an allow carrying it. Anything else (a string,
    ``False``, a list, a typo'd key, a dict subclass, a hostile object) is INVALID.
    """
    if native is None:
        return ABSTAIN
    if type(native) is not dict:
        raise Invalid()
    clean: dict = {}
    for key, value in native.items():
        if type(key) is not str or key not in _KNOWN_KEYS:
            raise Invalid()
        if key == "blocked":
            if type(value) is not bool:
                raise Invalid()
            clean[key] = value
        elif key in _TEXT_KEYS:
            if value is not None and type(value) is not str:
                raise Invalid()
            clean[key] = value
        else:
            clean[key] = _reason_text(value)
    if not clean:
        return ABSTAIN
    if clean.get("blocked") is True:
        reason = clean.get("error_message") or clean.get("reason") or _GENERIC_BLOCK
        return Verdict(action=Action.DENY, reason=reason, data=clean)
    return Verdict(action=Action.ALLOW, data=clean)


def _file_verdict(native: Any) -> Verdict:
    """Validator for ``file_permission``: True approves, False denies, None abstains."""
    return exactly(native, _FILE_ANSWERS)


def _blocked(text: str) -> dict:
    """failsecure's own deny in code-puppy's block shape (``[BLOCKED]`` is the marker
    ``pydantic_patches`` renders from): hook id and failure category, nothing else."""
    return {"blocked": True, "error_message": f"[BLOCKED] {text}", "reasoning": text}


def _interactive() -> bool:
    """A human can answer a callback that asks: stdin is a TTY (the core-plugins guards
    and the file permission prompt ask on the TTY), or an approval backend is installed
    (ACP)."""
    try:
        if sys.stdin is not None and sys.stdin.isatty():
            return True
    except Exception:  # noqa: BLE001 - sys.stdin is whatever the application put there (closed: ValueError): not a terminal, the default deadlines hold
        pass
    common = sys.modules.get("code_puppy.tools.common")
    getter = getattr(common, "get_approval_backend", None) if common is not None else None
    if getter is None:
        return False
    try:
        return getter() is not None
    except Exception:  # noqa: BLE001 - code-puppy's own approval getter raised: no human known to answer, the default deadlines hold
        return False


#: the names a callback asks a person through: code-puppy's approval prompt and arrow
#: selector (``code_puppy.tools.common``; the prompt hands over to the approval backend
#: when one is installed), ACP's permission request (core-plugins' ``acp``), prompt_toolkit
_ASKING = frozenset({
    "get_user_approval", "get_user_approval_async", "arrow_select", "arrow_select_async",
    "request_permission", "PromptSession", "prompt_async",
})
_asking = IdCache()  # callback -> it asks a person


def _asks_person(callback: Any) -> bool:
    """The callback asks a person: its code, its nested functions', or that of a function
    (or a method of its own class) of its own module it names, names one of ``_ASKING`` or
    loads the builtin ``input``. Read once per callback, from the code objects only (none
    of the callback's code runs). A callback that asks only through another module's
    helper keeps the default deadline (a slow answer then denies, never runs); so does one
    whose code cannot be read."""
    known = _asking.get(callback)
    if known is not None:
        return known
    try:
        answer = names_in_code(callback, _ASKING, builtin=("input",))
    except Exception:  # noqa: BLE001 - a callback's own attributes can raise anything: not known to ask, the default deadline holds
        answer = False
    return _asking.put(callback, answer)


def _running_loop() -> Any:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _run_sync_callback(callback: Any, loop: Any, args: tuple, kwargs: dict) -> Any:
    """What upstream's sync loop does with one callback: an async callback is run with
    ``asyncio.run`` when the dispatching thread has no running loop. With a running loop
    (``loop``) the callback has it as its running loop, as in the dispatching thread, and a
    coroutine is handed back: the guard judges it INVALID (undecided is not unopposed)
    where upstream records ``None``."""
    result = callback(*args, **kwargs) if loop is None else on_loop(loop, callback, *args, **kwargs)
    if loop is None and asyncio.iscoroutine(result):
        return asyncio.run(result)
    return result


#: set while a rewritten command is re-checked (a rewrite of a rewrite is not chased)
_recheck: "contextvars.ContextVar[bool]" = contextvars.ContextVar("failsecure_code_puppy_recheck", default=False)
#: (tool, arguments) the ``pre_tool_call`` callbacks last allowed in this task: the shell
#: tool's rewrite check shows them a rewritten command of that call
_pre_tool_judged: "contextvars.ContextVar[Any]" = contextvars.ContextVar("failsecure_code_puppy_pre_tool_judged", default=None)
#: failsecure's own deny of the last ``file_permission`` dispatch in this context (None: no
#: deny, or a callback's own ``False``): what code-puppy's rejection response tells the model
_file_denied: "contextvars.ContextVar[Optional[str]]" = contextvars.ContextVar("failsecure_code_puppy_file_denied", default=None)
#: command-hook processes judged while one gating round runs (their outcomes join it)
_processes: "contextvars.ContextVar[Any]" = contextvars.ContextVar("failsecure_code_puppy_processes", default=None)


def _carrying(fn: Any, processes: list) -> Any:
    """``fn`` that notes the command hooks it runs in ``processes``, where it runs (on the
    worker of a batch, on the loop, or in the awaitable a sync callback answers)."""
    if is_async(fn):
        async def agate(*args: Any, **kwargs: Any) -> Any:
            token = _processes.set(processes)
            try:
                return await fn(*args, **kwargs)
            finally:
                _processes.reset(token)

        return agate

    def gate(*args: Any, **kwargs: Any) -> Any:
        token = _processes.set(processes)
        try:
            answer = fn(*args, **kwargs)
        finally:
            _processes.reset(token)
        return _Carried(answer, processes) if awaitable(answer) else answer

    return gate


class _Carried:
    """The awaitable a sync callback answered, awaited with its ``processes`` noted."""

    __slots__ = ("answer", "processes")

    def __init__(self, answer: Any, processes: list) -> None:
        self.answer, self.processes = answer, processes

    def __await__(self) -> Any:
        return self._run().__await__()

    async def _run(self) -> Any:
        token = _processes.set(self.processes)
        try:
            return await self.answer
        finally:
            _processes.reset(token)

    def close(self) -> None:  # closed unrun: so is what it carries
        close_awaitable(self.answer)


def _judged_object(phase: str, args: tuple, kwargs: dict) -> Any:
    """What a phase's callbacks may edit in place and the tool then uses: ``tool_args``
    (``pre_tool_call``), ``operation_data`` (``file_permission``: the file tool applies the
    very replacements it holds); None for ``run_shell_command`` (a string command)."""
    if phase == PRE_TOOL:
        return _bind(phase, args, kwargs).get("tool_args")
    if phase == FILE:
        return _bind(phase, args, kwargs).get("operation_data")
    return None


def _bind(phase: str, args: tuple, kwargs: dict) -> dict:
    names = PARAMS[phase]
    bound = dict(zip(names, args))
    for name in names:
        if name in kwargs:
            bound[name] = kwargs[name]
    return bound


class CodePuppyAdapter(Adapter):
    name = "code-puppy"
    fail_closed_upstream = ""  # 0.0.734+'s fail_closed is opt-in and off by default
    modules = (CALLBACKS, PATCHES)

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: Any = None
        self._pretool_missing = False
        self._watching = False
        self._active = False  # between _patch and _unpatch (the import hook checks it)
        self._feedback_wrapped = False  # file_permission_state.get_last_user_feedback
        self._said = threading.Lock()

    # ------------------------------------------------------------ patching

    def _patch(self) -> None:
        callbacks = importlib.import_module(CALLBACKS)
        for attr in ("_trigger_callbacks", "_trigger_callbacks_sync", "get_callbacks"):
            if not callable(getattr(callbacks, attr, None)):
                raise PatchError(f"{CALLBACKS}.{attr}")
        self._callbacks = callbacks
        adapter = self

        def async_loop(wrapped, instance, args, kwargs):
            phase = args[0] if args else None
            if phase not in GATING:
                return wrapped(*args, **kwargs)
            return adapter._agate(phase, args[1:], kwargs)

        def sync_loop(wrapped, instance, args, kwargs):
            phase = args[0] if args else None
            if phase not in GATING:
                return wrapped(*args, **kwargs)
            kwargs = dict(kwargs)
            kwargs.pop("raise_on_error", None)
            return adapter._gate(phase, args[1:], kwargs)

        self.wrap(callbacks, "_trigger_callbacks", async_loop)
        self.wrap(callbacks, "_trigger_callbacks_sync", sync_loop)
        self._active = True
        self._watch_pre_tool_patch()
        self._patch_command_hooks()
        self.bind_classes(RUN_ENTRIES + TOOL_CLASSES, self._bind_boundary)

        when_imported(STATE, self._patch_feedback)

    def _bind_boundary(self, entry: tuple, cls: type) -> None:
        """The run entry points and the innermost tool call of every module of them that
        is loaded."""
        if entry in TOOL_CLASSES:
            # a tool that raised is never re-run by pydantic-ai itself (ModelRetry asks
            # the model, whose next call is judged again): no grant given back
            self.wrap_subclasses(cls, entry[2], self._read_call_tool, give_back=False)
            return
        for attr in entry[2]:
            if callable(vars(cls).get(attr)):
                self.wrap_run(cls, attr)

    @staticmethod
    def _read_call_tool(toolset: Any, args: tuple, kwargs: dict) -> tuple:
        """``call_tool(name, tool_args, ctx, tool)``: the tool, and the arguments it runs
        with (the dict the ``pre_tool_call`` callbacks judged). Matched by name and
        arguments: code-puppy's ``pre_tool_call`` carries no call id."""
        name = args[0] if args else kwargs.get("name")
        tool_args = args[1] if len(args) > 1 else kwargs.get("tool_args")
        name = plain_str(name)
        return name, None, tool_args, name, None

    def user_gates(self) -> bool:
        """A ``pre_tool_call`` callback is registered: the gate an ungoverned call passes
        by (the ``run_shell_command`` and ``file_permission`` callbacks still judge inside
        the tool, whatever path reached it)."""
        callbacks = self._callbacks
        return callbacks is not None and bool(callbacks.get_callbacks(PRE_TOOL))

    def _patch_feedback(self, state: Any) -> None:
        """A ``file_permission`` deny is ``[False]`` (the phase has no reason), and
        ``file_modifications._create_rejection_response`` tells the model the feedback
        ``file_permission_state.get_last_user_feedback`` gives. For failsecure's own deny
        that feedback is the deny the audit records (the hook id and the failure
        category), as ``PermissionNotDecided`` where the release has it (nobody rejected
        the change); a callback's own ``False`` keeps upstream's feedback."""
        if not self._active or self._feedback_wrapped or not callable(vars(state).get(FEEDBACK)):
            return
        not_decided = vars(state).get("PermissionNotDecided")

        def get_last_user_feedback(wrapped, instance, args, kwargs):
            reason = _file_denied.get()
            if reason is None:
                return wrapped(*args, **kwargs)
            _file_denied.set(None)
            return not_decided(reason) if isinstance(not_decided, type) and issubclass(not_decided, str) else reason

        self.wrap_everywhere(state, FEEDBACK, get_last_user_feedback, "code_puppy")
        self._feedback_wrapped = True

    def _patch_command_hooks(self) -> None:
        """code-puppy runs Claude-style command hooks itself (``code_puppy.hook_engine``,
        used by core-plugins' ``claude_code_hooks``): its executor reads a missing binary,
        death by a signal and any exit status but 1 as "not blocked", and an exit-0
        answer it cannot parse or does not know (``permissionDecision: "ask"`` with nobody
        to ask, a block followed by more text, a wrong-case ``Block``) as "not blocked"
        too. With failsecure, a command hook runs through the command runner's process
        supervision (``failsecure.runner.process.execute``: new session, deadline, group
        kill, capped pipes; a hook that answered and exited is not a timeout because a
        background process it left holds the pipes) and is judged by its raw result
        (``_judge_command``): exit 0 with an answer code-puppy honours runs, exit 1
        (code-puppy) and 2 (Claude Code) block, anything else denies with its category.
        The deny text names the hook id, never the hook's command line."""
        executor = sys.modules.get(EXECUTOR)
        if executor is None:
            from importlib.util import find_spec

            try:
                if find_spec(EXECUTOR) is None:
                    return  # a release without the hook engine
            except ImportError:
                return
            executor = importlib.import_module(EXECUTOR)
        if not callable(getattr(executor, "execute_hook", None)):
            raise PatchError(f"{EXECUTOR}.execute_hook")
        for helper in ("_substitute_variables", "_build_stdin_payload", "_build_environment", "_interpret_control_payload"):
            if not callable(getattr(executor, helper, None)):
                raise PatchError(f"{EXECUTOR}.{helper}")
        adapter = self

        def execute_hook(wrapped, instance, args, kwargs):
            bound = dict(zip(("hook", "event_data", "env_vars"), args))
            bound.update(kwargs)
            hook = bound.get("hook")
            if getattr(hook, "type", "command") != "command":
                return wrapped(*args, **kwargs)  # a prompt hook: code-puppy's own answer
            return adapter._run_command_hook(executor, hook, bound.get("event_data"), bound.get("env_vars"))

        self.wrap(executor, "execute_hook", execute_hook)

    async def _run_command_hook(self, executor: Any, hook: Any, event_data: Any, env_vars: Any) -> Any:
        command = getattr(hook, "command", None)
        hook_id = self.hook_id(f"command:{command_name(command if isinstance(command, str) else '?')}")
        result_type = executor.ExecutionResult
        try:
            line = executor._substitute_variables(command, event_data, env_vars or {})
            payload = executor._build_stdin_payload(event_data)
            env = executor._build_environment(event_data, env_vars)
            timeout = max(float(hook.timeout) / 1000.0, 0.001)
            ran = await asyncio.to_thread(run_command, ["/bin/sh", "-c", line], payload, timeout, env)
            category, blocked_by, reason, stdout = _judge_command(executor, ran, payload)
        except Exception as exc:  # noqa: BLE001 - judging must not reopen what it judges: any failure to run or read the command is its block, audited
            decision = self.failed(exc, hook=self.hook_id("command"))
            return result_type(blocked=True, hook_command=hook_id, error=decision.reason or "failsecure: denied", exit_code=-1, hook_id=getattr(hook, "id", None))
        code = ran.status if ran.status is not None else -1
        if category is None and blocked_by is None:
            found = _processes.get()
            if found is not None:  # it ran and had no objection: there, for `required`
                found.append(Outcome(hook=hook_id, verdict=ABSTAIN, elapsed_ms=ran.elapsed_ms))
            return result_type(
                blocked=False, hook_command=hook_id, stdout=stdout, stderr=ran.stderr.decode("utf-8", "replace"),
                exit_code=code, duration_ms=ran.elapsed_ms, hook_id=getattr(hook, "id", None),
            )
        if category is not None:
            text = failure_reason(hook_id, category)
        else:
            text = reason or f"failsecure: hook '{hook_id}' blocked" + (f" (exit {code})" if code else "")
        found = _processes.get()
        if code == 1 and category is None:
            found = None  # code-puppy's own block: the callback's result says it, as upstream
        if found is not None:
            failure = Failure(category) if category else None
            verdict = None if category else Verdict(action=Action.DENY, reason=text)
            found.append(Outcome(hook=hook_id, verdict=verdict, failure=failure, elapsed_ms=ran.elapsed_ms))
        return result_type(
            blocked=True, hook_command=hook_id, stdout="", stderr="", exit_code=code, duration_ms=ran.elapsed_ms,
            error=text, hook_id=getattr(hook, "id", None),
        )

    def _unpatch(self) -> None:
        self._active = False
        self.restore()
        self._pretool_missing = False
        self._feedback_wrapped = False

    def _lockdown(self) -> None:
        """The loops are not where expected: every gating dispatcher the consumers import
        by name answers a deny (the adapter is refused, so ``decide`` denies)."""
        callbacks = sys.modules.get(CALLBACKS)
        if callbacks is None:
            return
        adapter = self

        async def on_pre_tool_call(*args, **kwargs):
            return adapter._native(PRE_TOOL, adapter._decide_sync(PRE_TOOL, args, kwargs, []), [])

        async def on_run_shell_command(*args, **kwargs):
            return adapter._native(SHELL, adapter._decide_sync(SHELL, args, kwargs, []), [])

        def on_file_permission(*args, **kwargs):
            return adapter._native(FILE, adapter._decide_sync(FILE, args, kwargs, []), [])

        async def on_file_permission_async(*args, **kwargs):
            return on_file_permission(*args, **kwargs)

        for fn in (on_pre_tool_call, on_run_shell_command, on_file_permission, on_file_permission_async):
            self.replace(callbacks, fn.__name__, fn)

    # ------------------------------------------------------------ code-puppy's pre-tool patch

    def _watch_pre_tool_patch(self) -> None:
        """Notice when ``pydantic_patches.patch_tool_call_callbacks`` fails (or failed
        before activation: the CLI applies its patches before importing callbacks)."""
        if not self._watching:  # once per process: the callback checks whether it is active

            self._watching = True
            when_imported(PATCHES, self._patch_pre_tool_watch)
        elif sys.modules.get(PATCHES) is not None:
            self._patch_pre_tool_watch(sys.modules[PATCHES])

    def _patch_pre_tool_watch(self, patches: Any) -> None:
        if not self._active:
            return
        if any(replaced[0] is patches for replaced in self._replaced):
            return
        if callable(getattr(patches, "_patch_failed", None)):
            adapter = self

            def patch_failed(wrapped, instance, args, kwargs):
                try:
                    return wrapped(*args, **kwargs)
                finally:
                    name = args[0] if args else kwargs.get("patch_name")
                    if name == PRE_TOOL_PATCH:
                        adapter._pre_tool_failed()

            self.wrap(patches, "_patch_failed", patch_failed)
        try:
            failed = PRE_TOOL_PATCH in list(getattr(patches, "_LOUD_FAILURES", ()))
        except Exception:  # noqa: BLE001 - code-puppy's record of failed patches cannot be read: as upstream; the _patch_failed wrapper sees later ones
            failed = False
        if failed:
            self._pre_tool_failed()

    def _missing_pre_tool(self) -> Outcome:
        return Outcome(hook=self.hook_id(f"pydantic_patches.{PRE_TOOL_PATCH}"), failure=Failure.MISSING)

    def _pre_tool_failed(self) -> None:
        """Say it once, loudly; deny every tool call pydantic-ai would run unhooked."""
        with self._said:
            if self._pretool_missing:
                return
            self._pretool_missing = True
        msg = (
            f"failsecure: code-puppy's pre-tool hook patch ({PATCHES}.{PRE_TOOL_PATCH}) did not apply; "
            "every tool call is denied"
        )
        problem(msg)
        try:
            from pydantic_ai.tool_manager import ToolManager
        except Exception as exc:  # noqa: BLE001 - importing pydantic-ai can raise anything: the gating phases still deny (said)
            internal(exc, "failsecure: pydantic-ai ToolManager not found ({type}); only the gating phases deny")
            return
        adapter = self

        def denied(wrapped, instance, args, kwargs):
            return adapter._deny_tool_call(args[0] if args else None)

        for attr in ("execute_tool_call", "_call_tool"):
            if callable(ToolManager.__dict__.get(attr)):
                self.wrap(ToolManager, attr, denied)

    async def _deny_tool_call(self, call: Any) -> str:
        call = getattr(call, "call", call)
        tool = getattr(call, "tool_name", None)
        call_id = getattr(call, "tool_call_id", None)
        decision = await self.adecide(
            tool if isinstance(tool, str) else None,
            [self._missing_pre_tool()],
            call_id=call_id if isinstance(call_id, str) and call_id else None,
        )
        text = _blocked(decision.reason or failure_reason(self._missing_pre_tool().hook, Failure.MISSING))["error_message"]
        return (
            f"ERROR: 🚫 Hook blocked this tool call: {text}\n\n"
            "The hook policy prevented this tool from running. Please inform the user and do not retry this specific command."
        )

    # ------------------------------------------------------------ the gate

    def _opted_in(self, phase: str, callback: Any) -> bool:
        """Registered with upstream's ``fail_closed=True`` (0.0.734+)."""
        try:
            return (phase, callback) in getattr(self._callbacks, "_fail_closed_callbacks", ())
        except Exception:  # noqa: BLE001 - code-puppy's opt-in registry (a hostile __eq__ among its entries): not opted in, the config alone decides
            return False

    def _tool_and_arguments(self, phase: str, args: tuple, kwargs: dict) -> tuple[Optional[str], Any]:
        bound = _bind(phase, args, kwargs)
        if phase == PRE_TOOL:
            tool = bound.get("tool_name")
            return (tool if isinstance(tool, str) else None), bound.get("tool_args")
        if phase == SHELL:
            return "agent_run_shell_command", {k: bound.get(k) for k in ("command", "cwd", "timeout")}
        return FILE, {k: bound.get(k) for k in ("file_path", "operation")}

    def _extra(self) -> list[Outcome]:
        return [self._missing_pre_tool()] if self._pretool_missing else []

    async def _agate(self, phase: str, args: tuple, kwargs: dict) -> list:
        """One dispatch of a gating phase from upstream's async loop."""
        try:
            validate = _file_verdict if phase == FILE else _block_verdict
            loop = asyncio.get_running_loop()

            opted: set = set()
            asking: set = set()
            plain: set = set()  # a hook id one callback that asks nobody has too keeps its deadline
            calls: list = []
            for callback in self._callbacks.get_callbacks(phase):
                hook_id = self.callable_id(callback)
                if self._opted_in(phase, callback):
                    opted.add(hook_id)
                if _asks_person(callback):
                    asking.add(hook_id)
                else:
                    plain.add(hook_id)
                if is_async(callback):
                    calls.append((hook_id, callback, args, kwargs, validate))
                else:  # upstream calls it on the loop: on the worker it is lent the loop
                    calls.append((hook_id, on_loop, (loop, callback, *args), kwargs, validate))
            # only a callback that asks a person waits for one without the default
            # deadline, and only when someone can answer (a terminal, an approval backend)
            asking -= plain
            interactive = frozenset(asking) if asking and _interactive() else False

            def step(call: tuple) -> Any:
                async def run() -> list:  # one callback, and the command hooks it ran, judged
                    processes: list = []
                    token = _processes.set(processes)
                    try:
                        outcomes = await self.ahook_calls([call], interactive)
                    finally:
                        _processes.reset(token)
                    return processes + outcomes  # the command hooks first: the cause of its answer

                return run

            # a pre_tool_call callback may mutate tool_args in place after a gate allowed
            # them: callback by callback, the ones that judged them before judge again (a
            # stamping callback settles; one after the last rewrite runs once). Pass 1 is
            # one batch (the sync callbacks one hand-off), each callback with its own list
            # of the command hooks it ran, booked ahead of its answer as its step does
            tool_args = _judged_object(phase, args, kwargs)
            before = snapshot(tool_args) if phase == FILE else None
            ran: list = [[] for _ in calls]
            batch = [(h, _carrying(fn, ran[i]), a, k, v) for i, (h, fn, a, k, v) in enumerate(calls)]
            outcomes = await self.asettle_calls(batch, lambda: tool_args, self.hook_id(phase), [step(c) for c in calls],
                                                interactive, caused=ran.__getitem__,
                                                fail_closed=frozenset(opted), finish_pass=True)
            tool, arguments = self._tool_and_arguments(phase, args, kwargs)
            if phase == FILE:
                outcomes = outcomes + self._edited_after_pre_tool(before, tool_args)
            decision = await self.adecide(tool, outcomes + self._extra(), arguments=arguments, fail_closed=frozenset(opted))
            if phase == PRE_TOOL:
                self.granted(decision, tool, None, arguments)  # the arguments after every callback
                # the call these callbacks judged, for a shell rewrite inside the tool (only
                # when they had a say: a callback there, and not a re-judge of a rewrite)
                if not _recheck.get():
                    _pre_tool_judged.set((tool, arguments) if calls and not decision.denied else None)
            results = self._native(phase, decision, outcomes)
            if phase == SHELL and not _recheck.get():
                results = await self._recheck_rewrite(args, kwargs, results)
            return results
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: a bug here must not read as "no callback objected"; failed() says it and blocks
            return self._broken(phase, exc)

    async def _recheck_rewrite(self, args: tuple, kwargs: dict, results: list) -> list:
        """``command_runner`` applies ``{"rewrite": ...}`` answers after its block check,
        so the command that runs was never shown to the gates. When the results would
        rewrite the command, the gates see the rewritten command once more; if they deny
        it, the call is denied (with the rewrite's own deny), else upstream goes on as
        before. Hooks may run twice for a rewritten command."""
        bound = _bind(SHELL, args, kwargs)
        command = final = bound.get("command")
        for result in results:  # exactly upstream's rule: last differing non-empty string
            if isinstance(result, dict) and "rewrite" in result:
                new = result["rewrite"]
                if isinstance(new, str) and new.strip() and new != final:
                    final = new
        if final == command or any(isinstance(r, dict) and r.get("blocked") for r in results):
            return results
        bound["command"] = final
        token = _recheck.set(True)
        try:
            again = await self._callbacks._trigger_callbacks(SHELL, *[bound.get(n) for n in PARAMS[SHELL]])
            blocks = [r for r in again if isinstance(r, dict) and r.get("blocked")]
            if not blocks:
                blocks = await self._recheck_pre_tool(command, final)
        finally:
            _recheck.reset(token)
        return blocks or results

    async def _recheck_pre_tool(self, command: Any, final: Any) -> list:
        """The ``pre_tool_call`` callbacks that judged this shell tool call judged
        ``command``; the rewrite runs ``final``: they judge the call again with it (its
        blocks, or [] to run). Only when the call they judged carried that very command
        (the shell tool reached from the model's call, in this task)."""
        judged = _pre_tool_judged.get()
        if judged is None:
            return []
        tool, arguments = judged
        if not isinstance(arguments, dict) or arguments.get("command") != command:
            return []
        rewritten = dict(arguments, command=final)
        again = await self._callbacks._trigger_callbacks(PRE_TOOL, tool, rewritten, None)
        self.ungrant(tool, rewritten)  # judged inside the tool: no second run of it to grant
        return [r for r in again if isinstance(r, dict) and r.get("blocked")]

    def _gate(self, phase: str, args: tuple, kwargs: dict) -> list:
        """One dispatch of a gating phase from upstream's sync loop (``on_file_permission``)."""
        try:
            validate = _file_verdict if phase == FILE else _block_verdict
            loop = _running_loop()
            calls: list = []
            opted: set = set()
            asking: set = set()
            plain: set = set()
            for callback in self._callbacks.get_callbacks(phase):
                hook_id = self.callable_id(callback)
                if self._opted_in(phase, callback):
                    opted.add(hook_id)
                (asking if _asks_person(callback) else plain).add(hook_id)
                calls.append((hook_id, _run_sync_callback, (callback, loop, args, kwargs), None, validate))
            asking -= plain  # a hook id one callback that asks nobody has too keeps its deadline
            interactive = frozenset(asking) if asking and _interactive() else False
            data = _judged_object(phase, args, kwargs)
            before = snapshot(data) if phase == FILE else None
            # one thread hand-off for all of them; a callback that edits the operation data
            # in place: the ones that judged it before judge it again (as for pre_tool_call)
            outcomes = self.settle_calls(calls, lambda: data, self.hook_id(phase), None, interactive,
                                         fail_closed=frozenset(opted), finish_pass=True)
            if phase == FILE:
                outcomes = outcomes + self._edited_after_pre_tool(before, data)
            return self._native(phase, self._decide_sync(phase, args, kwargs, outcomes, frozenset(opted)), outcomes)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: a bug here must not read as "no callback objected"; failed() says it and blocks
            return self._broken(phase, exc)

    def _edited_after_pre_tool(self, before: Any, data: Any) -> list[Outcome]:
        """A ``file_permission`` callback edited ``operation_data`` in place (the file tool
        applies that very object: ``replace_in_file``'s replacements, the tool's arguments
        as the ``pre_tool_call`` gates judged them, normalized) while ``pre_tool_call`` gates (callbacks, plugin gates) judged the tool
        call before: they cannot be asked again from inside the tool, so the edit is
        refused (``invalid``). Without them the ``file_permission`` callbacks, which judged
        the edit again, decide alone."""
        if data is None or same(before, data) or not (self.user_gates() or plugin_gates()):
            return []
        return [Outcome(hook=self.hook_id(FILE), failure=Failure.INVALID)]

    def _decide_sync(self, phase: str, args: tuple, kwargs: dict, outcomes: list, fail_closed=frozenset()):
        tool, arguments = self._tool_and_arguments(phase, args, kwargs)
        return self.decide(tool, outcomes + self._extra(), arguments=arguments, fail_closed=fail_closed)

    def _broken(self, phase: str, exc: BaseException) -> list:
        """The answer when this adapter's translation (or the core) raised: a deny."""
        try:
            text = self.failed(exc).reason or failure_reason("failsecure:internal", Failure.RAISED)
        except Exception:  # noqa: BLE001 - failed() never raises; should it, the block still has its text (the phase is denied either way)
            text = failure_reason("failsecure:internal", Failure.RAISED)
        if phase == FILE:
            _file_denied.set(text)
            return [False]
        return [_blocked(text)]

    def _native(self, phase: str, decision: Any, outcomes: list) -> list:
        """A Decision in the result-list shape the phase's consumers read."""
        action = decision.action
        if phase == FILE:
            _file_denied.set(self._file_reason(decision) if action is Action.DENY or action is Action.ASK else None)
        if action is Action.DENY or action is Action.ASK:
            if phase == FILE:
                return [False]
            return [self._native_block(o, decision) for o in decision.deciding] or [_blocked(decision.reason or _GENERIC_BLOCK)]
        if action is Action.ABSTAIN and all(o.failure is None and o.verdict.action is Action.ABSTAIN for o in outcomes):
            return [None] * len(outcomes)  # nobody had an opinion (the common case)
        results: list = []
        for outcome in outcomes:
            if decision.counted(outcome) is not Action.ALLOW:
                results.append(None)  # no opinion, an observer, a tolerated failure
            elif phase == FILE:
                results.append(True)
            else:
                data = outcome.verdict.data
                results.append(dict(data) if isinstance(data, dict) else None)
        return results

    @staticmethod
    def _file_reason(decision: Any) -> Optional[str]:
        """failsecure's deny text for a ``file_permission`` deny; None when a callback's
        own ``False`` decided it (upstream's rejection and feedback stand)."""
        if any(o.failure is None and o.verdict is _DENY for o in decision.deciding):
            return None
        return decision.reason or _GENERIC_BLOCK

    def _native_block(self, outcome: Outcome, decision: Any) -> dict:
        if outcome.failure is not None or outcome.verdict is None:
            return _blocked(failure_reason(outcome.hook, outcome.failure or Failure.MISSING))
        verdict = outcome.verdict
        if verdict.action is Action.ASK:  # code-puppy's hooks cannot ask: the core's deny reason
            return _blocked(decision.deny_text)
        data = verdict.data
        if isinstance(data, dict) and data.get("blocked") is True:
            return dict(data)  # the callback's own block, its own message
        return _blocked(verdict.reason or f"failsecure: hook '{outcome.hook}' denied the call")

    def to_verdict(self, native: Any) -> Verdict:
        return _block_verdict(native)

    # ------------------------------------------------------------ doctor

    def inventory(self) -> list[str]:
        if self._callbacks is None:
            return []
        return [self.callable_id(cb) for phase in sorted(GATING) for cb in self._callbacks.get_callbacks(phase)]

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only ``run_shell_command`` callback, through code-puppy's real
        ``on_run_shell_command``: True when the command would be blocked."""
        callbacks = self._callbacks
        registry = callbacks._callbacks[SHELL]
        saved = list(registry)
        registry[:] = [gate]
        try:
            dispatch = callbacks.on_run_shell_command(None, "failsecure-self-test", None, 60)
            results = self.run_probe(lambda: asyncio.run(dispatch))
        finally:
            registry[:] = saved
        return any(isinstance(r, dict) and r.get("blocked") for r in results or ())


_CONTROL_KEYS = frozenset({"result", "decision", "reason", "hookSpecificOutput", "continue", "stopReason"})


def _judge_command(executor: Any, ran: Any, shown: bytes = b"") -> tuple:
    """One command hook's raw run -> (failure category or None, "block" or None, the
    hook's own reason or None, stdout for code-puppy). code-puppy's exit codes: 0 runs,
    1 blocks (stderr is the reason), 2 is Claude Code's block. An exit-0 answer that
    looks like a control payload (stdout starting with ``{``, as code-puppy tests it)
    must be exactly one JSON object code-puppy honours as a decision, else INVALID:
    trailing text or a second document, an unknown or wrong-case value (``Block``),
    ``permissionDecision: "ask"`` or ``"defer"`` (nobody is asked), an ``updatedInput``
    other than the tool input the hook was shown (``shown``, its stdin payload: code-puppy
    never applies a rewrite, so the original input would run, which the hook did not
    approve) are all denies."""

    own_block = ran.status in (1, 2) and not ran.timed_out and ran.spawn_errno is None
    category = None if own_block else process_failure(ran.spawn_errno is not None, ran.timed_out, ran.status)
    if ran.oversized and category is None:
        category = INVALID
    if category is not None:
        return category, None, None, ""
    stderr = ran.stderr.decode("utf-8", "replace")
    if own_block:
        return None, "block", stderr.strip()[:2000] or None, ""
    try:
        text = ran.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return INVALID, None, None, ""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None, None, None, text  # plain output: code-puppy shows it, no decision
    import json

    try:
        payload = json.loads(stripped)
    except ValueError:
        return INVALID, None, None, ""  # a second document, trailing text, broken JSON
    if not isinstance(payload, dict):
        return INVALID, None, None, ""
    if not (_CONTROL_KEYS & payload.keys()):
        return None, None, None, text  # ordinary JSON output
    verdict = _control_verdict(payload)
    if verdict == "allow" and _rewrites(payload, shown):
        return INVALID, None, None, ""
    if verdict is None:
        return INVALID, None, None, ""
    if verdict == "block":
        specific = payload.get("hookSpecificOutput") or {}
        reason = payload.get("reason") or specific.get("permissionDecisionReason") or payload.get("stopReason")
        return None, "block", reason if isinstance(reason, str) else None, ""
    new_stdout, _blocked, _error = executor._interpret_control_payload(text, False, None)
    return None, None, None, new_stdout


def _rewrites(payload: dict, shown: bytes) -> bool:
    """The answer carries Claude Code's ``hookSpecificOutput.updatedInput`` and it is not
    the tool input the hook was shown (code-puppy runs the original input whatever it is)."""
    import json

    updated = payload.get("hookSpecificOutput", {}).get("updatedInput", _NO_INPUT)
    if updated is _NO_INPUT:
        return False
    try:
        return updated != json.loads(shown).get("tool_input")
    except Exception:  # noqa: BLE001 - the payload code-puppy built cannot be read back: the rewrite cannot be shown to be none
        return True


_NO_INPUT = object()


def _control_verdict(payload: dict) -> Optional[str]:
    """"block", "allow" or None (not a decision code-puppy can honour)."""
    for key in ("reason", "stopReason"):
        if key in payload and not isinstance(payload[key], str):
            return None
    block = False
    result = payload.get("result", "allow")
    if result == "block":
        block = True
    elif result not in ("allow", "approve", "continue"):
        return None
    decision = payload.get("decision", "approve")
    if decision == "block":
        block = True
    elif decision != "approve":
        return None
    go_on = payload.get("continue", True)
    if not isinstance(go_on, bool):
        return None
    block = block or go_on is False
    specific = payload.get("hookSpecificOutput", {})
    if not isinstance(specific, dict):
        return None
    permission = specific.get("permissionDecision", "allow")
    if permission in ("deny", "ask", "defer"):
        block = True  # ask / defer: nobody is asked here, the call must not run
    elif permission != "allow":
        return None
    for key in ("permissionDecisionReason", "additionalContext"):
        if key in specific and not isinstance(specific[key], str):
            return None
    return "block" if block else "allow"


def _activate_as_code_puppy_plugin() -> None:
    """code-puppy's loader imports this module for the ``code_puppy.plugins`` entry point
    (0.0.716+), inside its plugin-loading context: activate from there. An import by
    failsecure itself (drop-in, ``install()``) happens outside that context and does
    nothing here; activation is idempotent either way."""
    callbacks = sys.modules.get(CALLBACKS)
    if callbacks is None:
        return
    try:
        if callbacks.get_loading_context() != ENTRY_POINT_NAME:
            return

        activate(CodePuppyAdapter.name)
    except Exception as exc:  # noqa: BLE001 - code-puppy's loader would log it with its text and go on: said here by type name only
        internal(exc, "failsecure: could not activate code-puppy ({type})")


_activate_as_code_puppy_plugin()

__all__ = ["CodePuppyAdapter"]
