"""claude-agent-sdk: Python ``PreToolUse`` hook callbacks and ``can_use_tool`` fail closed.

The SDK runs Python hook callbacks in its own process and answers the Claude Code CLI
over the control protocol (``_internal/query.py::Query._handle_control_request``). Upstream,
a callback that raises is answered with ``{"subtype": "error", "error": str(e)}`` (the
exception text goes to the CLI), and the CLI reads an error, a timeout, ``None`` or an
unknown ``permissionDecision`` as "no decision": the tool runs whenever the permission
rules allow it (``allowed_tools``, acceptEdits, bypass), exactly when the hook is the only
gate. ``HookMatcher(on_failure="block")`` (0.2.177+) is opt-in.

The patch is one wrapper on ``Query.initialize``: before the SDK registers the callbacks
with the CLI, each ``PreToolUse`` callback is swapped (in the Query's own copy of the
hooks) for a failsecure trigger, and ``can_use_tool`` for a guarded twin. So the upstream
dispatcher (``_handle_control_request``) stays as it is and only ever sees answers that
are valid and never raise:

- the first trigger request of a tool call (keyed by ``tool_use_id``) runs every
  ``PreToolUse`` callback whose matcher selects the tool, concurrently, each under the
  guard; ``adecide`` reduces them with the cross-framework gates, ``required`` and the
  config; every trigger of that call answers the same Decision: an explicit
  ``permissionDecision: "deny"`` (works with every CLI), ``"ask"``, or the callback's own
  valid answer;
- argument integrity: a callback's ``updatedInput`` is shown to every callback again
  (``integrity.auntil_stable``) and every answer carries the final input;
- ``can_use_tool``: raise, hang, junk -> ``PermissionResultDeny``; an allow that rewrites
  the input has the ``PreToolUse`` gates judge the rewritten input;
- 0.2.177+: a second small wrapper on ``Query._send_control_request`` sends every
  ``PreToolUse`` matcher with ``onFailure: "block"`` on the wire (so a CLI-side timeout
  or a lost answer blocks too) without the SDK's refusal to talk to an older CLI.

Other hook events are observers: untouched. Hook ids: ``claude-agent-sdk:<module>.<qualname>``
of the callback (``can_use_tool`` likewise).
"""

from __future__ import annotations

import asyncio
import importlib
import re
import sys
from collections import OrderedDict
from time import perf_counter
from typing import Any, Optional

from failsecure import guard, integrity, policy
from failsecure.adapter import Adapter, PatchError
from failsecure.verdict import Action, Failure, Invalid, Outcome, Verdict

QUERY = "claude_agent_sdk._internal.query"
TYPES = "claude_agent_sdk.types"
EVENT = "PreToolUse"
#: the CLI's own deadline for a hook callback when the matcher sets none (seconds)
CLI_DEFAULT_TIMEOUT = 60.0
#: share of the CLI's deadline failsecure's own deadlines may use: the answer must reach
#: the CLI before it gives up (an older CLI reads its own timeout as "no decision")
CLI_DEADLINE_SHARE = 0.8
#: tool calls whose shared decision is kept for the triggers still to answer
MAX_PENDING = 256
_DECISIONS = frozenset({"allow", "deny", "ask"})
_ABSTAIN = Verdict(action=Action.ABSTAIN)
_MARK = "_failsecure_session"


def _hook_output(decision: str, reason: Optional[str], updated: Any = None) -> dict:
    out: dict = {"hookEventName": EVENT, "permissionDecision": decision}
    if reason:
        out["permissionDecisionReason"] = reason
    if updated is not None:
        out["updatedInput"] = updated
    return {"hookSpecificOutput": out}


def _matches(matcher: Any, tool: Any) -> bool:
    """The CLI's matcher rule: empty or ``*`` = every tool; names joined by ``|``;
    otherwise a regular expression searched in the tool name (an invalid one never
    matches, as in the CLI)."""
    if matcher is None or matcher == "" or matcher == "*":
        return True
    if type(matcher) is not str or type(tool) is not str:
        return False
    if re.fullmatch(r"[a-zA-Z0-9_|]+", matcher):
        return tool in matcher.split("|")
    try:
        return re.search(matcher, tool) is not None
    except re.error:
        return False


class _Entry:
    __slots__ = ("callback", "hook_id", "matcher", "cli_timeout", "trigger")

    def __init__(self, callback, hook_id, matcher, cli_timeout):
        self.callback, self.hook_id, self.matcher, self.cli_timeout = callback, hook_id, matcher, cli_timeout
        self.trigger = None  # None: failsecure's own catch-all (no user callback)


class _Result:
    __slots__ = ("decision", "indices", "outcomes", "final", "changed")

    def __init__(self, decision, indices, outcomes, final, changed):
        self.decision, self.indices, self.outcomes, self.final, self.changed = decision, indices, outcomes, final, changed


class _Session:
    """The PreToolUse callbacks of one Query, and the decisions of its tool calls."""

    def __init__(self, adapter: "ClaudeSDKAdapter", entries: list):
        self.adapter = adapter
        self.entries = entries
        self.pending: "OrderedDict[str, asyncio.Future]" = OrderedDict()
        self._selection: dict = {}  # tool name -> indices of the entries its matchers select

    # -------------------------------------------------------------- the trigger

    def trigger_for(self, index: int):
        session = self

        async def failsecure_pre_tool_use(input_data, tool_use_id, context):
            return await session.answer(index, input_data, tool_use_id, context)

        return failsecure_pre_tool_use

    async def answer(self, index: int, input_data: Any, tool_use_id: Any, context: Any) -> dict:
        """The answer of trigger ``index``; never raises (but for cancellation)."""
        adapter = self.adapter
        tool = input_data.get("tool_name") if isinstance(input_data, dict) else None
        try:
            result = await self._result(index, input_data, tool_use_id, context)
            return self._render(index, result)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            decision = adapter.failed(exc, tool, tool_use_id, hook=adapter.hook_id(EVENT))
            return _hook_output("deny", decision.reason)

    async def _result(self, index, input_data, tool_use_id, context) -> _Result:
        key = tool_use_id if type(tool_use_id) is str and tool_use_id else None
        if key is not None and isinstance(input_data, dict) and self._selected(input_data.get("tool_name"), ()) == [index]:
            key = None  # the only callback of this tool call: no other request shares it
        extra: tuple = ()
        if key is not None:
            shared = self.pending.get(key)
            if shared is not None:
                result = await asyncio.shield(shared)
                if result is not None and index in result.indices:
                    return result
                if result is not None:  # the CLI selected a callback our matcher rule did not
                    extra = tuple(result.indices)
            future = asyncio.get_running_loop().create_future()
            self.pending[key] = future
            while len(self.pending) > MAX_PENDING:
                self.pending.popitem(last=False)
            try:
                result = await self.evaluate(input_data, tool_use_id, context, (index,) + extra)
            except BaseException:
                if not future.done():
                    future.set_result(None)  # the waiters evaluate on their own
                if self.pending.get(key) is future:
                    del self.pending[key]
                raise
            future.set_result(result)
            return result
        return await self.evaluate(input_data, tool_use_id, context, (index,))

    # -------------------------------------------------------------- deciding

    def _selected(self, tool: Any, also: tuple) -> list:
        key = tool if type(tool) is str else None
        chosen = self._selection.get(key)
        if chosen is None:
            chosen = self._selection[key] = tuple(i for i, e in enumerate(self.entries) if _matches(e.matcher, key))
        if also and not set(also) <= set(chosen):
            return sorted(set(chosen) | {i for i in also if 0 <= i < len(self.entries)})
        return list(chosen)

    async def evaluate(self, input_data, tool_use_id, context, also=(), arguments=None) -> _Result:
        """Every callback whose matcher selects the tool (and ``also``), under the guard,
        again on each rewrite until the input settles; then the core decides."""
        adapter = self.adapter
        data = input_data if isinstance(input_data, dict) else {}
        tool = data.get("tool_name")
        indices = self._selected(tool, also)
        gates = [i for i in indices if self.entries[i].callback is not None]
        original = data.get("tool_input") if arguments is None else arguments
        state = {"args": original, "judged": original}
        started = perf_counter()
        last: dict = {}
        timeouts: dict = {}
        config = policy.current()

        async def one_round() -> list:
            args = state["args"]
            if args is not original:  # a rewrite: judge a copy nobody else holds
                args = integrity.snapshot(args)
                if args is integrity.CHANGED:
                    args = state["args"]
            state["judged"] = args
            payloads = []
            for n, _ in enumerate(gates):
                if n == 0 and args is original and arguments is None:
                    payloads.append(data)  # upstream hands each callback the request's own input
                else:
                    own = integrity.snapshot(args)
                    payloads.append(dict(data, tool_input=args if own is integrity.CHANGED else own))
            calls = [self._call(i, payload, tool_use_id, context, started, config, timeouts) for i, payload in zip(gates, payloads)]
            if len(calls) == 1:
                outcomes = [await calls[0]]
            else:
                outcomes = list(await asyncio.gather(*calls))
            for i, outcome in zip(gates, outcomes):
                last[i] = outcome
                verdict = outcome.verdict
                if verdict is not None and verdict.data is not None and verdict.data[1] is not None:
                    state["args"] = verdict.data[1]  # the last rewrite in order wins
            return outcomes

        outcomes = await one_round()
        if state["args"] is not original:  # rewritten: every gate judges the new input, until it settles
            # (callbacks run concurrently on one input, as the CLI runs them: whole rounds,
            # not gate by gate; a round that only changes keys earlier rounds added is a
            # stamp, and the input every gate of that round judged is what runs)
            outcomes = await integrity.auntil_stable(one_round, lambda: state["args"], adapter.hook_id("updatedInput"), origin=original)
        required = config.required_for(adapter.name)
        if required:
            seen = {o.hook for o in outcomes}
            for i, entry in enumerate(self.entries):  # registered, not selected for this tool: present
                if entry.callback is not None and i not in gates and entry.hook_id in required and entry.hook_id not in seen:
                    outcomes.append(Outcome(hook=entry.hook_id, verdict=_ABSTAIN))
                    seen.add(entry.hook_id)
        call_id = tool_use_id if type(tool_use_id) is str and tool_use_id else None
        final = state["judged"]
        decision = await adapter.adecide(tool if type(tool) is str else None, outcomes, call_id=call_id, arguments=final)
        return _Result(decision, frozenset(indices), last, final, final is not original)

    async def _call(self, index, payload, tool_use_id, context, started, config, timeouts) -> Outcome:
        entry = self.entries[index]
        timeout = timeouts.get(index, 0.0)
        if timeout == 0.0:
            timeout = timeouts[index] = config.timeout_for(entry.hook_id)
        budget = entry.cli_timeout * CLI_DEADLINE_SHARE - (perf_counter() - started)
        if budget <= 0:
            return Outcome(hook=entry.hook_id, failure=Failure.TIMEOUT)
        timeout = min(timeout, budget) if timeout else budget
        return await guard.acall(
            entry.hook_id, entry.callback, (payload, tool_use_id, context), validate=self.adapter.to_verdict, timeout=timeout
        )

    # -------------------------------------------------------------- rendering

    def _render(self, index: int, result: _Result) -> dict:
        decision = result.decision
        own = result.outcomes.get(index)
        verdict = own.verdict if own is not None else None
        native = verdict.data[0] if verdict is not None and verdict.data is not None else None
        updated = result.final if result.changed else None
        action = decision.action
        if action is Action.DENY:
            if verdict is not None and verdict.action is Action.DENY:
                return native  # type: ignore[return-value]  # the callback's own deny, untouched
            return _hook_output("deny", decision.reason or _denied_by(decision))
        if action is Action.ASK:
            if verdict is not None and verdict.action is Action.ASK and updated is None:
                return native  # type: ignore[return-value]
            return _hook_output("ask", decision.reason or _denied_by(decision, "asked about"), updated)
        # allow or abstain
        answer = native if native is not None else {}
        if updated is not None:
            answer = dict(answer)
            specific = answer.get("hookSpecificOutput")
            specific = dict(specific) if isinstance(specific, dict) else {"hookEventName": EVENT}
            specific["updatedInput"] = updated
            answer["hookSpecificOutput"] = specific
        return answer


class ClaudeSDKAdapter(Adapter):
    name = "claude-agent-sdk"
    distribution = "claude-agent-sdk"
    supported = ">=0.2.150,<=0.2.189"
    tested = ("0.2.150", "0.2.189")
    fail_closed_upstream = ""
    modules = (QUERY,)
    supports_ask = True
    self_test_junk = {"hookSpecificOutput": {"hookEventName": EVENT, "permissionDecision": "Deny"}}

    def __init__(self) -> None:
        super().__init__()
        self._on_failure = False  # the release sends HookMatcher.on_failure (0.2.177+)

    # ------------------------------------------------------------ patching

    def _targets(self):
        module = importlib.import_module(QUERY)
        query = getattr(module, "Query", None)
        if not isinstance(query, type):
            raise PatchError(f"{QUERY}.Query")
        for attr, names in (
            ("initialize", ("hooks", "hook_callbacks")),
            ("_handle_control_request", ("hook_callbacks", "can_use_tool")),
            ("_send_control_request", ()),
        ):
            fn = query.__dict__.get(attr)
            code = getattr(fn, "__code__", None)
            if code is None or not asyncio.iscoroutinefunction(fn):
                raise PatchError(f"{QUERY}.Query.{attr}")
            if not set(names) <= set(code.co_names):
                raise PatchError(f"{QUERY}.Query.{attr} no longer reads {', '.join(names)}")
        return query

    def _patch(self) -> None:
        query = self._targets()  # all checked before anything changes
        try:
            import dataclasses

            matcher = getattr(importlib.import_module(TYPES), "HookMatcher")
            self._on_failure = "on_failure" in {f.name for f in dataclasses.fields(matcher)}
        except Exception:
            self._on_failure = False
        adapter = self

        async def initialize(wrapped, instance, args, kwargs):
            adapter._prepare(instance)
            return await wrapped(*args, **kwargs)

        self.wrap(query, "initialize", initialize)
        if self._on_failure:

            def send_control_request(wrapped, instance, args, kwargs):
                request = args[0] if args else kwargs.get("request")
                if isinstance(request, dict) and request.get("subtype") == "initialize" and getattr(instance, _MARK, None) is not None:
                    request = _block_on_failure(request)
                    if args:
                        args = (request,) + tuple(args[1:])
                    else:
                        kwargs = dict(kwargs, request=request)
                return wrapped(*args, **kwargs)

            self.wrap(query, "_send_control_request", send_control_request)

    def _lockdown(self) -> None:
        """The targets are not where expected: a session that has PreToolUse callbacks or
        ``can_use_tool`` (or would need failsecure's own gate) refuses to start."""
        module = sys.modules.get(QUERY)
        query = getattr(module, "Query", None) if module is not None else None
        if not isinstance(query, type) or not callable(getattr(query, "initialize", None)):
            return
        adapter = self

        async def locked(wrapped, instance, args, kwargs):
            hooks = getattr(instance, "hooks", None) or {}
            if (isinstance(hooks, dict) and hooks.get(EVENT)) or getattr(instance, "can_use_tool", None) is not None or adapter._needs_own_gate():
                decision = adapter.decide(None, ())
                raise RuntimeError(decision.reason or "failsecure: claude-agent-sdk is not patched")
            return await wrapped(*args, **kwargs)

        self.wrap(query, "initialize", locked)

    # ------------------------------------------------------------ one Query

    def _needs_own_gate(self) -> bool:
        """A tool call must be decided even if no user callback selects it: plugin gates,
        required hooks, a bad config."""
        try:
            from failsecure import plugins

            config = policy.current()
            return bool(config.error or config.required_for(self.name) or plugins.gates())
        except Exception:
            return True

    def _prepare(self, query: Any) -> None:
        """Swap the Query's PreToolUse callbacks and ``can_use_tool`` for guarded ones
        (in the Query's own copy of the hooks; the user's options are not touched)."""
        if getattr(query, _MARK, None) is not None:
            return
        hooks = query.hooks if isinstance(query.hooks, dict) else {}
        entries: list = []
        new_matchers: list = []
        for matcher in list(hooks.get(EVENT) or ()):
            if not isinstance(matcher, dict):
                new_matchers.append(matcher)
                continue
            cli_timeout: Any = matcher.get("timeout")
            if type(cli_timeout) not in (int, float) or cli_timeout <= 0:
                cli_timeout = CLI_DEFAULT_TIMEOUT
            triggers = []
            for callback in list(matcher.get("hooks") or ()):
                entry = _Entry(callback, self.callable_id(callback), matcher.get("matcher"), float(cli_timeout))
                entries.append(entry)
                triggers.append(len(entries) - 1)
            new_matchers.append(dict(matcher, hooks=triggers))
        if self._needs_own_gate():
            entries.append(_Entry(None, self.hook_id("failsecure"), None, CLI_DEFAULT_TIMEOUT))
            new_matchers.append({"matcher": None, "hooks": [len(entries) - 1]})
        session = _Session(self, entries)
        for matcher in new_matchers:
            if isinstance(matcher, dict) and isinstance(matcher.get("hooks"), list):
                matcher["hooks"] = [session.trigger_for(i) if type(i) is int else i for i in matcher["hooks"]]
        if new_matchers:
            query.hooks = dict(hooks, **{EVENT: new_matchers})
        setattr(query, _MARK, session)
        user = getattr(query, "can_use_tool", None)
        if user is not None and getattr(user, _MARK, None) is None:
            query.can_use_tool = self._guarded_permission(user, session)

    # ------------------------------------------------------------ can_use_tool

    def _guarded_permission(self, user: Any, session: _Session):
        adapter = self
        hook_id = self.callable_id(user)
        types = importlib.import_module(TYPES)
        deny_type = types.PermissionResultDeny

        async def can_use_tool(tool_name, input_data, context):
            try:
                timeout = policy.current().timeout_for(hook_id, True)
                outcome = await guard.acall(
                    hook_id, user, (tool_name, input_data, context), validate=adapter._permission_verdict, timeout=timeout
                )
                call_id = getattr(context, "tool_use_id", None)
                call_id = call_id if type(call_id) is str and call_id else None
                verdict = outcome.verdict
                native = verdict.data if verdict is not None else None
                final = input_data
                if verdict is not None and verdict.action is Action.ALLOW and native.updated_input is not None:
                    final = native.updated_input
                decision = await adapter.adecide(tool_name if type(tool_name) is str else None, [outcome], call_id=call_id, arguments=final)
                action = decision.action
                if action is Action.ASK and verdict is not None and verdict.action is Action.ALLOW:
                    action = Action.ALLOW  # the permission callback is the human being asked
                if action is Action.DENY or action is Action.ASK:
                    if verdict is not None and verdict.action is Action.DENY:
                        return native
                    return deny_type(message=decision.reason or _denied_by(decision))
                if final is not input_data and not integrity.same(integrity.snapshot(input_data), final):
                    # the permission callback rewrote the input the PreToolUse gates approved
                    data = {"hook_event_name": EVENT, "tool_name": tool_name, "tool_input": input_data}
                    again = await session.evaluate(data, call_id, None, arguments=final)
                    if again.decision.action is not Action.ALLOW and again.decision.action is not Action.ABSTAIN:
                        return deny_type(message=again.decision.reason or _denied_by(again.decision))
                return native
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return deny_type(message=adapter.failed(exc, tool_name, hook=hook_id).reason)

        setattr(can_use_tool, _MARK, True)
        can_use_tool.__wrapped__ = user  # type: ignore[attr-defined]
        return can_use_tool

    def _permission_verdict(self, native: Any) -> Verdict:
        """``can_use_tool``'s answer: PermissionResultAllow or PermissionResultDeny,
        anything else is INVALID (upstream raises TypeError and the CLI is told the
        exception text)."""
        types = sys.modules[TYPES]
        if type(native) is types.PermissionResultAllow or isinstance(native, types.PermissionResultAllow):
            updated = native.updated_input
            if updated is not None and not isinstance(updated, dict):
                raise Invalid()
            permissions = native.updated_permissions
            if permissions is not None and not isinstance(permissions, list):
                raise Invalid()
            return Verdict(action=Action.ALLOW, data=native)
        if isinstance(native, types.PermissionResultDeny):
            message = native.message
            if type(message) is not str:
                raise Invalid()
            if type(native.interrupt) is not bool:
                raise Invalid()
            return Verdict(action=Action.DENY, reason=message or None, data=native)
        raise Invalid()

    # ------------------------------------------------------------ PreToolUse answers

    def to_verdict(self, native: Any) -> Verdict:
        """A PreToolUse callback's answer (the SDK's hook output dict). ``{}`` or an
        answer without a decision: no opinion. ``permissionDecision`` allow/deny/ask,
        ``decision`` approve/block, ``continue: False`` (stops the run: counts as a deny)
        are honoured; ``None``, a non-dict, an unknown or wrong-case decision, a
        ``hookEventName`` other than PreToolUse, a non-dict ``updatedInput`` or
        ``async: True`` (the CLI would not wait for it) are INVALID. ``data`` keeps the
        native answer and its ``updatedInput``."""
        if type(native) is not dict:
            raise Invalid()
        action = Action.ABSTAIN
        reason = None
        if native.get("async_") is True or native.get("async") is True:
            raise Invalid()
        old = native.get("decision")
        if old is not None:
            if old == "block":
                action = Action.DENY
                reason = native.get("reason")
            elif old == "approve":
                action = Action.ALLOW
            else:
                raise Invalid()
        go_on = native.get("continue_", native.get("continue"))
        if go_on is not None and type(go_on) is not bool:
            raise Invalid()
        if go_on is False:
            action = Action.DENY
            reason = reason or native.get("stopReason")
        updated = None
        specific = native.get("hookSpecificOutput")
        if specific is not None:
            if type(specific) is not dict or specific.get("hookEventName") != EVENT:
                raise Invalid()
            decision = specific.get("permissionDecision")
            if decision is not None:
                if type(decision) is not str or decision not in _DECISIONS:
                    raise Invalid()
                mapped = {"allow": Action.ALLOW, "deny": Action.DENY, "ask": Action.ASK}[decision]
                if _RANK[mapped] > _RANK[action]:
                    action = mapped
                    reason = specific.get("permissionDecisionReason") or native.get("reason")
            updated = specific.get("updatedInput")
            if updated is not None and type(updated) is not dict:
                raise Invalid()
        if type(reason) is not str or not reason:
            reason = None
        return Verdict(action=action, reason=reason, data=(native, updated))

    # ------------------------------------------------------------ doctor

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only PreToolUse callback of a real ``Query``, through its
        (patched) set-up and its real ``_handle_control_request``: True when the answer
        written to the CLI denies the tool call."""
        import contextvars
        import functools
        import threading

        @functools.wraps(gate)
        def hook(*args):
            # the kit's allowing gate answers None, which is junk here: {} is no opinion
            answer = gate(*args)
            return {} if answer is None else answer

        box: dict = {}

        def run() -> None:
            try:
                box["answer"] = asyncio.run(probe_answer(hook))
            except BaseException as exc:
                box["error"] = exc

        context = contextvars.copy_context()  # the self-test's config lives in this context
        thread = threading.Thread(target=context.run, args=(run,), daemon=True)
        thread.start()
        thread.join(30)
        if "error" in box:
            raise box["error"]
        answer = box.get("answer")
        response = (answer or {}).get("response", {})
        if response.get("subtype") != "success":
            return False
        specific = (response.get("response") or {}).get("hookSpecificOutput") or {}
        return specific.get("permissionDecision") == "deny"


def _denied_by(decision, verb: str = "denied") -> str:
    primary = decision.primary
    return f"failsecure: hook '{primary.hook if primary is not None else ClaudeSDKAdapter.name}' {verb} the call"


_RANK = {Action.ABSTAIN: 0, Action.ALLOW: 1, Action.ASK: 2, Action.DENY: 3}


def _block_on_failure(request: dict) -> dict:
    """The initialize request with ``onFailure: "block"`` on every PreToolUse matcher."""
    hooks = request.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(EVENT), list):
        return request
    matchers = [dict(m, onFailure="block") if isinstance(m, dict) else m for m in hooks[EVENT]]
    return dict(request, hooks=dict(hooks, **{EVENT: matchers}))


class _CaptureTransport:
    """The narrowest transport a Query needs to answer one control request."""

    def __init__(self) -> None:
        self.written: list = []

    async def write(self, data: str) -> None:
        self.written.append(data)


async def probe_answer(callback: Any, tool_input: Optional[dict] = None, *, tool: str = "Bash", call_id: str = "toolu_failsecure_probe") -> dict:
    """One PreToolUse hook request for ``callback`` through a real ``Query``: the
    initialize preparation (patched or not) and the real ``_handle_control_request``.
    Returns the control response written to the CLI (parsed)."""
    import json

    query_module = importlib.import_module(QUERY)
    transport = _CaptureTransport()
    query = query_module.Query(
        transport=transport,
        is_streaming_mode=True,
        hooks={EVENT: [{"matcher": None, "hooks": [callback]}]},
    )
    adapter = _current_adapter()
    if adapter is not None and adapter.state == "patched":
        adapter._prepare(query)  # what the patched initialize does first
    # what upstream initialize does to register the callbacks
    for matcher in query.hooks.get(EVENT, ()):
        for cb in matcher.get("hooks", []):
            callback_id = f"hook_{query.next_callback_id}"
            query.next_callback_id += 1
            query.hook_callbacks[callback_id] = cb
    request = {
        "type": "control_request",
        "request_id": "req_failsecure_probe",
        "request": {
            "subtype": "hook_callback",
            "callback_id": "hook_0",
            "input": {"hook_event_name": EVENT, "tool_name": tool, "tool_input": tool_input or {"command": "true"},
                      "session_id": "failsecure", "transcript_path": "", "cwd": "", "tool_use_id": call_id},
            "tool_use_id": call_id,
        },
    }
    await query._handle_control_request(request)
    return json.loads(transport.written[-1]) if transport.written else {}


def _current_adapter() -> Optional[ClaudeSDKAdapter]:
    try:
        from failsecure import activation

        adapter = activation.get("claude-agent-sdk")
        return adapter if isinstance(adapter, ClaudeSDKAdapter) else None
    except Exception:
        return None


__all__ = ["ClaudeSDKAdapter", "probe_answer"]
