"""claude-agent-sdk: the Python gates of a session fail closed: ``PreToolUse`` and
``PermissionRequest`` hook callbacks and ``can_use_tool``.

The SDK runs Python hook callbacks in its own process and answers the Claude Code CLI
over the control protocol (``_internal/query.py::Query._handle_control_request``). Upstream,
a callback that raises is answered with ``{"subtype": "error", "error": str(e)}`` (the
exception text goes to the CLI), and the CLI reads an error, a timeout, ``None`` or an
unknown ``permissionDecision`` as "no decision": the tool runs whenever the permission
rules allow it (``allowed_tools``, acceptEdits, bypass), exactly when the hook is the only
gate. ``HookMatcher(on_failure="block")`` (0.2.177+) is opt-in.

The patch is one wrapper on ``Query.initialize``: before the SDK registers the callbacks
with the CLI, each ``PreToolUse`` and ``PermissionRequest`` callback is swapped (in the
Query's own copy of the hooks) for a failsecure trigger, and ``can_use_tool`` for a
guarded twin. So the upstream dispatcher (``_handle_control_request``) stays as it is and
only ever sees answers that are valid and never raise:

- the first trigger request of a tool call (keyed by event and ``tool_use_id``) runs every
  callback of that event whose matcher selects the tool, concurrently, each through
  ``Adapter.ahook_call`` (the core's deadline and late-answer rule; bounded by the CLI's
  own deadline for the matcher); ``adecide`` reduces them with the cross-framework gates,
  ``required`` and the config; every trigger of that call answers the same Decision in the
  shape the CLI honours: ``permissionDecision: "deny"`` (also for a callback's own
  ``continue_: False`` or ``decision: "block"``, which the CLI does not read as a deny),
  ``"defer"`` (deny > defer > ask > allow, as the CLI ranks them), ``"ask"``, or the
  callback's own valid answer; a ``PermissionRequest`` deny as ``decision.behavior: "deny"``;
- argument integrity: a callback's ``updatedInput`` is shown to every callback again
  (``integrity.auntil_stable``), a deny or failure of any round stands, and every answer
  carries the final input; a ``PermissionRequest`` or ``can_use_tool`` rewrite is judged by
  the ``PreToolUse`` and ``PermissionRequest`` callbacks before it is allowed;
- ``can_use_tool``: the CLI races it against the ``PermissionRequest`` hooks and takes the
  first answer; the guarded twin waits for (or runs) their shared decision first, so their
  deny or failure outranks its allow; raise, hang, junk -> ``PermissionResultDeny``;
- a session whose initialize answer says the CLI did not register the hooks
  (``hooks_applied: false``: a client joining a session another client configured), or
  a Query that never sends them (not streaming), refuses to start;
- 0.2.177+: a second small wrapper on ``Query._send_control_request`` sends every gating
  matcher with ``onFailure: "block"`` on the wire (so a CLI-side timeout or a lost answer
  blocks too) without the SDK's refusal to talk to an older CLI.

``permission_prompt_tool_name`` naming an in-process SDK MCP tool: the CLI's
``tools/call`` of it is answered at ``Query._handle_sdk_mcp_request`` under the guard (the
handler through the SDK's own MCP path; raise, junk, a late answer ->
``{"behavior": "deny", "message": ...}``), after the PermissionRequest callbacks' shared
decision, audited; the call is the CLI's, granted at the tool boundary.

Other hook events are observers: untouched. Hook ids: ``claude-agent-sdk:<module>.<qualname>``
of the callback (``can_use_tool`` likewise).

The tool boundary (docs/ungoverned.md): most tools run inside the CLI process, where no
Python code sees them. The tools that run in this process are the SDK MCP servers' tools
(``create_sdk_mcp_server`` / ``@tool``): ``Query.start`` is the run entry point (the
session's reader, which answers every control request, runs in its context), each such
tool's ``handler`` the innermost call (wrapped when ``build_tool_server`` builds its
server), matched by tool name and arguments (a handler is handed nothing else). A
``PreToolUse`` / ``PermissionRequest`` / ``can_use_tool`` decision that allows grants the
call; a ``tools/call`` the CLI sends for a tool no ``PreToolUse`` callback selects is the
CLI's own decision (its permission rules) and is granted on arrival.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import json
import re
import sys
import warnings
from collections import OrderedDict
from time import perf_counter
from typing import Any, Awaitable, Optional

from failsecure.adapter import CHANGED, RANK, Adapter, PatchError, auntil_stable, internal, nonempty_str, plain_str, same, snapshot
from failsecure.adapter import adapter as registered
from failsecure.verdict import Action, Decision, Failure, Invalid, Outcome, Verdict

QUERY = "claude_agent_sdk._internal.query"
TYPES = "claude_agent_sdk.types"
EVENT = "PreToolUse"
PERMISSION = "PermissionRequest"
#: the hook events whose callbacks decide whether, and with what, a tool runs
GATED = (EVENT, PERMISSION)
#: the CLI's own deadline for a hook callback when the matcher sets none (seconds)
CLI_DEFAULT_TIMEOUT = 60.0
#: tool calls whose shared decision is kept for the triggers still to answer
MAX_PENDING = 256
#: (event, tool name) selections kept per session
MAX_SELECTIONS = 4096
_DECISIONS = {"allow": Action.ALLOW, "deny": Action.DENY, "ask": Action.ASK, "defer": Action.ASK}
DEFER = "defer"
_MARK = "_failsecure_session"
#: the fields of a hook input the CLI sends for every event (kept from the latest
#: request, for a PermissionRequest decision the permission callback has to start)
_BASE_FIELDS = ("session_id", "transcript_path", "cwd", "permission_mode", "prompt_id")
#: where the SDK builds an in-process MCP server of ``SdkMcpTool``s (the tool boundary)
MCP_COMPAT = "claude_agent_sdk._internal._mcp_compat"
#: a tool call the CLI itself decided to make (its permission rules; no PreToolUse
#: callback selects the tool): the CLI is the dispatcher, the call is granted
_CLI_DECIDED = Decision(Verdict(action=Action.ALLOW))


def _mcp_name(name: Any) -> str:
    """A server or tool name as Claude Code spells it in ``mcp__<server>__<tool>``."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name) if type(name) is str else ""


def _has_gates(query: Any) -> bool:
    """The session a ``Query`` starts has a gate (a ``PreToolUse`` or ``PermissionRequest``
    callback, or ``can_use_tool``): what an in-process tool run past the CLI's dispatch
    would pass by. Read at ``Query.start``, before ``initialize`` prepares the callbacks."""
    if getattr(query, "can_use_tool", None) is not None:
        return True
    hooks = getattr(query, "hooks", None)
    if not isinstance(hooks, dict):
        return False
    return any(isinstance(m, dict) and m.get("hooks") for event in GATED for m in hooks.get(event) or ())


def _hook_output(decision: str, reason: Optional[str], updated: Any = None) -> dict:
    out: dict = {"hookEventName": EVENT, "permissionDecision": decision}
    if reason:
        out["permissionDecisionReason"] = reason
    if updated is not None:
        out["updatedInput"] = updated
    return {"hookSpecificOutput": out}


def _permission_output(reason: Optional[str]) -> dict:
    decision: dict = {"behavior": "deny"}
    if reason:
        decision["message"] = reason
    return {"hookSpecificOutput": {"hookEventName": PERMISSION, "decision": decision}}


#: the CLI's legacy tool names (a matcher naming one selects the tool it became): the
#: union of the bundled CLIs' maps (2.1.257, 2.1.332); naming more selects more (fail closed)
_ALIASES = {
    "Task": "Agent", "KillShell": "TaskStop", "KillBash": "TaskStop", "AgentOutputTool": "TaskOutput",
    "BashOutputTool": "TaskOutput", "AgentOutput": "TaskOutput", "BashOutput": "TaskOutput", "ListPeers": "ListAgents",
    "Brief": "SendUserMessage", "ListMcpResources": "ListMcpResourcesTool", "ReadMcpResource": "ReadMcpResourceTool",
    "ReadMcpResourceDir": "ReadMcpResourceDirTool", "ProposeGoal": "SetGoal",
}
_LEGACY = {new: tuple(old for old, now in _ALIASES.items() if now == new) for new in set(_ALIASES.values())}


def _matches(matcher: Any, tool: Any) -> bool:
    """The CLI's matcher rule for the tool events: empty or ``*`` = every tool; a matcher
    of names, ``|``, ``,``, spaces and ``-`` is a list of names split on ``|`` or ``,``
    and trimmed, a legacy name standing for the tool it became (``Task``: ``Agent``);
    otherwise a JavaScript regular expression (``_js_regex``: read as the CLI's
    ``new RegExp`` reads it, not as Python's ``re`` would) searched in the tool name or one
    of its legacy names (an invalid one never matches, as in the CLI)."""
    if matcher is None or matcher == "" or matcher == "*":
        return True
    if type(matcher) is not str or type(tool) is not str:
        return False
    if re.fullmatch(r"[a-zA-Z0-9_|, -]+", matcher):
        names = [n.strip() for n in re.split(r"[|,]", matcher)]
        return any(n and (n == tool or _ALIASES.get(n) == tool) for n in names)
    pattern = _js_regex(matcher)
    if pattern is None:
        return False
    if pattern is _UNREAD:
        return True  # valid JavaScript Python cannot run (a lookbehind of any length): selects (fail closed)
    return pattern.search(_utf16(tool)) is not None or any(pattern.search(_utf16(old)) is not None
                                                           for old in _LEGACY.get(tool, ()))


def _utf16(text: str) -> str:
    """``text`` as JavaScript's string of UTF-16 code units (an astral character is two
    surrogates): what a JavaScript regular expression without the ``u`` flag reads."""
    if all(ord(c) < 0x10000 for c in text):
        return text
    return "".join(c if ord(c) < 0x10000 else chr(0xD800 + ((ord(c) - 0x10000) >> 10)) + chr(0xDC00 + ((ord(c) - 0x10000) & 0x3FF))
                   for c in text)


class _NotJS(Exception):
    """A matcher JavaScript rejects (a SyntaxError there): it matches nothing."""


class _Unread(Exception):
    """A matcher valid in JavaScript this translation cannot read exactly: it selects."""


#: JavaScript's white space and line terminators (its ``\s``), as a class's contents
_JS_SPACE = "\\t\\n\\x0b\\f\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"


#: a matcher valid in JavaScript that Python's ``re`` cannot run: it selects every tool
_UNREAD = object()


#: compiled matchers (a session's matchers are fixed; kept bounded)
_JS_REGEXES: dict = {}
#: escapes JavaScript and Python read alike (outside and inside a class)
_SAME_ESCAPES = frozenset("dDwWsSnrtfv")
_JS_SYNTAX = frozenset("^$\\.*+?()[]{}|")


def _js_escape(pattern: str, i: int, in_class: bool) -> tuple:
    """The escape at ``pattern[i]`` (after the backslash) as JavaScript reads it without
    the ``u`` flag (Annex B) -> (Python text, next index)."""
    if i >= len(pattern):
        raise _NotJS()  # a trailing backslash: a SyntaxError in JavaScript
    ch = pattern[i]
    if ch == "s":
        return (_JS_SPACE if in_class else "[" + _JS_SPACE + "]"), i + 1
    if ch == "S":
        if in_class:
            raise _Unread()  # a negated class inside a class
        return "[^" + _JS_SPACE + "]", i + 1
    if ch in _SAME_ESCAPES or (ch in "bB" and not in_class):
        return "\\" + ch, i + 1
    if ch == "b":  # in a class: backspace
        return "\\x08", i + 1
    if ch == "0" and not pattern[i + 1:i + 2].isdigit():
        return "\\x00", i + 1
    if ch.isdigit() and not in_class:
        if pattern[i + 1:i + 2].isdigit():
            raise _Unread()  # `\\12`: a reference or an octal escape, by the count of groups
        # a back reference; one to a group that took no part matches the empty string
        # (Python's fails): a conditional; no such group: not read (selects)
        return "(?(%s)\\%s)" % (ch, ch), i + 1
    if ch.isdigit():
        return "\\" + ch, i + 1  # an octal escape in a class (Python's reads alike)
    hexdigits = "0123456789abcdefABCDEF"
    if ch == "x" and len(pattern) >= i + 3 and all(c in hexdigits for c in pattern[i + 1:i + 3]):
        return re.escape(chr(int(pattern[i + 1:i + 3], 16))), i + 3
    if ch == "u" and len(pattern) >= i + 5 and all(c in hexdigits for c in pattern[i + 1:i + 5]):
        return re.escape(chr(int(pattern[i + 1:i + 5], 16))), i + 5
    if ch == "c" and i + 1 < len(pattern) and pattern[i + 1].isascii() and (
            pattern[i + 1].isalpha() or (in_class and (pattern[i + 1].isdigit() or pattern[i + 1] == "_"))):
        return re.escape(chr(ord(pattern[i + 1]) % 32)), i + 2
    if ch == "c":
        return "\\\\c", i + 1  # Annex B: a backslash and a `c`
    if ch == "k" and not in_class:
        named = re.match(r"<([A-Za-z_$][A-Za-z0-9_$]*)>", pattern[i + 1:])
        if named:
            name = named.group(1).replace("$", "_S_")
            return "(?(%s)(?P=%s))" % (name, name), i + 1 + named.end()
    return re.escape(ch), i + 1  # an identity escape (``\h`` is ``h``)


def _js_to_python(pattern: str) -> str:
    """A JavaScript regular expression (no flags, as the CLI builds it) as an equivalent
    Python one; raises _NotJS for one JavaScript rejects or this does not read."""
    pattern = _utf16(pattern)  # JavaScript reads code units
    out = []
    i, n = 0, len(pattern)
    depth = 0
    repeatable = False  # whether a quantifier here has something to repeat (else a SyntaxError)
    lazy = False  # just after a quantifier
    while i < n:
        ch = pattern[i]
        if ch in "*+?" and not repeatable and not (ch == "?" and lazy):
            raise _NotJS()  # nothing to repeat
        was, repeatable = repeatable, True
        lazy = ch in "*+?" and was  # a quantifier: a `?` may follow (lazy)
        if ch in "|^*+?":
            repeatable = False
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise _NotJS()  # an unmatched `)`
        if ch == "\\":
            text, i = _js_escape(pattern, i + 1, False)
            out.append(text)
            continue
        if ch == "[":
            j = i + 1
            negated = pattern[j:j + 1] == "^"
            j += negated
            if pattern[j:j + 1] == "]":  # `[]` matches nothing, `[^]` any character
                out.append("[\\s\\S]" if negated else "(?!)")
                i = j + 1
                continue
            parts = ["[^" if negated else "["]
            while True:
                if j >= n:
                    raise _NotJS()  # an unterminated class
                c = pattern[j]
                if c == "]":
                    break
                if c == "\\":
                    text, j = _js_escape(pattern, j + 1, True)
                    parts.append(text)
                    continue
                parts.append(c if c == "-" else re.escape(c))
                j += 1
            parts.append("]")
            out.append("".join(parts))
            i = j + 1
            continue
        if ch == "(":
            if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                end = pattern.find(">", i)
                name = pattern[i + 3:end] if end > 0 else ""
                if not re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", name):
                    raise _NotJS()
                out.append("(?P<%s>" % name.replace("$", "_S_"))
                depth += 1
                repeatable = False
                i = end + 1
                continue
            if pattern.startswith("(?", i) and not pattern.startswith(("(?:", "(?=", "(?!", "(?<=", "(?<!"), i):
                raise _NotJS()  # `(?i)`, `(?P<...>`: a SyntaxError in JavaScript
            if pattern.startswith("(?", i):
                opener = 4 if pattern.startswith("(?<", i) else 3
                out.append(pattern[i:i + opener])
                depth += 1
                repeatable = False
                i += opener
                continue
            out.append("(")
            depth += 1
            repeatable = False
            i += 1
            continue
        if ch == "{":
            quantifier = re.match(r"\{[0-9]+(,[0-9]*)?\}", pattern[i:])
            if quantifier:
                if not was:
                    raise _NotJS()  # nothing to repeat
                repeatable, lazy = False, True
                out.append(quantifier.group())
                i += quantifier.end()
                continue
            out.append("\\{")  # Annex B: a brace that opens no quantifier is itself
            i += 1
            continue
        if ch == "}":
            out.append("\\}")
            i += 1
            continue
        if ch == "$":
            out.append("\\Z")  # JavaScript's `$`: the end, not before a last newline
            i += 1
            continue
        if ch == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")  # JavaScript's `.`: no line terminator
            i += 1
            continue
        out.append(ch if ch in _JS_SYNTAX else re.escape(ch))
        i += 1
    if depth:
        raise _NotJS()  # an unterminated group
    return "".join(out)


def _js_regex(matcher: str) -> Any:
    """The CLI's ``new RegExp(matcher)`` in Python, or None when it is invalid there (it
    then matches nothing, as in the CLI), or _UNREAD when Python cannot run it. Read as
    JavaScript reads it: a named group, ``[^]``, an identity escape such as ``\\h`` select
    what they select in the CLI (Python's
    own reading rejected them, so ``can_use_tool`` did not wait for a PermissionRequest
    callback the CLI ran), and Python-only syntax (``(?i)``, ``\\Z``) selects nothing."""
    cached = _JS_REGEXES.get(matcher)
    if cached is not None or matcher in _JS_REGEXES:
        return cached
    compiled: Any
    try:
        with warnings.catch_warnings():  # Python's "possible set difference" (`[!--]`): read as today
            warnings.simplefilter("ignore", FutureWarning)
            compiled = re.compile(_js_to_python(matcher), re.ASCII)
    except (_NotJS, RecursionError):
        compiled = None
    except (_Unread, re.error, OverflowError):
        compiled = _UNREAD
    if len(_JS_REGEXES) >= MAX_SELECTIONS:
        _JS_REGEXES.clear()
    _JS_REGEXES[matcher] = compiled
    return compiled


class _NotPlain(Exception):
    pass


#: bits of an int whose decimal text is surely within CPython's default digit limit for
#: int -> str (4300 digits; 4300 * log2(10) is 14284 bits): a longer one takes the round
#: trip, where the limit in force decides (the SDK's json.dumps cannot write past it)
_INT_BITS = 14_000


def _plain_copy(value: Any, depth: int) -> Any:
    """A copy of ``value`` when it holds only what a JSON round trip gives back unchanged
    (``dict`` with ``str`` keys, ``list``, ``str``, ``int``, ``bool``, ``None``, a finite
    ``float``; exact types), else :class:`_NotPlain` (the round trip decides)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        if value.bit_length() > _INT_BITS:  # maybe past int_max_str_digits: json.dumps may refuse its text
            raise _NotPlain()
        return value
    if depth > 32:
        raise _NotPlain()
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain()
            out[key] = _plain_copy(item, depth + 1)
        return out
    if kind is list:
        return [_plain_copy(item, depth + 1) for item in value]
    if kind is float and value - value == 0.0:  # finite: inf - inf and nan - nan are nan
        return value
    raise _NotPlain()


def _wire(native: dict) -> dict:
    """A hook answer as the SDK writes it to the CLI (``json.dumps``) and the CLI reads it
    back (``JSON.parse``: no NaN or Infinity): what the gates judge and the CLI is sent. An
    answer the SDK cannot write (an object, a set, a cycle) would be an error response,
    which the CLI reads as no decision: INVALID. An answer of plain values only (the
    usual one) is copied as it would come back, without the text in between."""
    try:
        return _plain_copy(native, 0)
    except (_NotPlain, RuntimeError):  # RuntimeError: changed while copied (another thread): the round trip decides
        pass
    try:
        return json.loads(json.dumps(native, allow_nan=False))
    except Exception:  # noqa: BLE001 - the answer's own objects (a hostile __str__, a dict subclass's items()) can raise anything while written: junk, denied
        raise Invalid() from None


def _sent(native: dict, python: str, cli: str) -> Any:
    """The value of a field the SDK renames on the wire (``continue_`` -> ``continue``)
    as the CLI gets it: the SDK converts key by key, so with both spellings present the
    later one in the answer is the one sent."""
    value = None
    for key in native:
        if key == python or key == cli:
            value = native[key]
    return value


def _kind(verdict: Optional[Verdict]) -> Optional[str]:
    """The decision word a callback's answer gave (``"defer"``...), from its verdict."""
    data = verdict.data if verdict is not None else None
    return data[2] if type(data) is tuple and len(data) == 3 else None


def _stands(outcome: Outcome) -> bool:
    """An outcome an earlier round of a rewritten call produced that must count in the
    decision whatever later rounds say: a failure, a deny, an ask or defer."""
    if outcome.failure is not None:
        return True
    verdict = outcome.verdict
    return verdict is not None and (verdict.action is Action.DENY or verdict.action is Action.ASK)


class _Entry:
    __slots__ = ("callback", "hook_id", "matcher", "cli_timeout", "event")

    def __init__(self, callback, hook_id, matcher, cli_timeout, event=EVENT):
        self.callback, self.hook_id, self.matcher, self.cli_timeout, self.event = callback, hook_id, matcher, cli_timeout, event


class _Result:
    __slots__ = ("decision", "indices", "outcomes", "final", "changed", "served")

    def __init__(self, decision, indices, outcomes, final, changed):
        # ``indices``: a tuple of the entries it judged (a handful: a tuple's ``in`` is enough)
        self.decision, self.indices, self.outcomes, self.final, self.changed = decision, indices, outcomes, final, changed
        self.served: set = set()  # the triggers (and the permission callback) answered from it


class _Session:
    """The gating callbacks of one Query, and the decisions of its tool calls."""

    def __init__(self, adapter: "ClaudeSDKAdapter", entries: list):
        self.adapter = adapter
        self.entries = entries
        self.pending: "OrderedDict[tuple, asyncio.Future]" = OrderedDict()
        #: tool_use_id -> (local tool name, arguments) of the in-process calls granted
        self.grants: "OrderedDict[str, tuple]" = OrderedDict()
        #: (event, tool name) -> (indices of the entries its matchers select, those that have a
        #: callback); the entries (matcher, callback) are fixed once the Query is prepared
        self._selection: dict = {}
        self.registered = {e.hook_id for e in entries if e.callback is not None}
        self._later: tuple = ()  # ``registered`` as the core's ``later`` (it only grows: rebuilt when it did)
        self.base: dict = {}  # the latest hook input's session fields
        #: "mcp__<server>__" of the Query's in-process (SDK MCP) servers
        self.in_process: tuple = ()
        #: ``permission_prompt_tool_name`` when it is one of those servers' tools
        self.prompt_tool: Optional[str] = None

    def local_tool(self, tool: Any) -> Optional[str]:
        """The in-process tool's own name for a CLI tool name ``mcp__<server>__<tool>`` of
        one of this session's SDK MCP servers (None: the tool runs in the CLI)."""
        if type(tool) is not str or not self.in_process or not tool.startswith("mcp__"):
            return None
        for prefix in self.in_process:
            if tool.startswith(prefix):
                local = tool[len(prefix):]
                return self.adapter.local_names.get(local, local)  # the name as its handler knows it
        return None

    def grant(self, decision: Decision, tool: Any, call_id: Any, arguments: Any) -> None:
        """The decision on an in-process tool's call: it may run once with ``arguments``.
        A later decision point of the same call (``can_use_tool``, a PermissionRequest
        hook) replaces the grant an earlier one (PreToolUse) made: a deny takes it back
        (the CLI never runs that call, and no other path may run the tool on its grant),
        an allow is the call's one grant, not a second one. A tool no PreToolUse callback
        selects is granted when the CLI's ``tools/call`` arrives (``_arrived``), whatever
        decided it: no grant here."""
        local = self.local_tool(tool)
        if local is None or not self.selects(EVENT, tool):
            return
        if call_id is not None:
            earlier = self.grants.pop(call_id, None)
            if earlier is not None:
                self.adapter.ungrant(*earlier)
        self.adapter.granted(decision, local, None, arguments)
        if decision.action is not Action.DENY and decision.action is not Action.ASK and call_id is not None:
            self.grants[call_id] = (local, arguments)  # what ``granted`` granted
            if len(self.grants) > 4096:
                self.grants.popitem(last=False)

    # -------------------------------------------------------------- the trigger

    def trigger_for(self, index: int):
        """The trigger registered in place of entry ``index``: it answers the CLI's hook
        request for that callback (the answer's own code, no coroutine of its own around
        it: the entry, its event and its adapter are fixed once the Query is prepared)."""
        session = self
        adapter = self.adapter
        entry = self.entries[index]
        event = entry.event
        gate = event == EVENT and entry.callback is not None
        alone = (index,)

        async def failsecure_pre_tool_use(input_data, tool_use_id, context):
            # never raises (but for cancellation)
            tool = input_data.get("tool_name") if isinstance(input_data, dict) else None
            try:
                if isinstance(input_data, dict):
                    base = session.base
                    for name in _BASE_FIELDS:
                        if name in input_data:
                            base[name] = input_data[name]
                    if event == EVENT and session._chosen(event, tool) == alone:
                        # the only callback of this tool call: no other request shares its
                        # decision (``shared`` would evaluate it at once too)
                        if gate and input_data.get("hook_event_name", event) == event:
                            # ``evaluate``'s one-callback path, without its selection (it is
                            # this entry alone)
                            result = await session._one(event, index, input_data, tool, tool_use_id, context, alone, perf_counter())
                        else:
                            result = await session.evaluate(event, input_data, tool_use_id, context, alone)
                    else:
                        result = await session.shared(event, index, input_data, tool_use_id, context)
                else:
                    result = await session.shared(event, index, input_data, tool_use_id, context)
                if event == PERMISSION:
                    return session._render_permission(index, result)
                return session._render(index, result)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the CLI's hook request always gets an answer: any failure while judging it is a deny, audited
                decision = adapter.failed(exc, tool, tool_use_id, hook=adapter.hook_id(event))
                if event == PERMISSION:
                    return _permission_output(decision.reason)
                return _hook_output("deny", decision.reason)

        if event == PERMISSION:
            failsecure_pre_tool_use.__name__ = failsecure_pre_tool_use.__qualname__ = "failsecure_permission_request"
        return failsecure_pre_tool_use

    async def shared(self, event: str, index: Optional[int], input_data: Any, tool_use_id: Any, context: Any) -> _Result:
        """The decision of ``event`` for one tool call, made once for every request that
        asks for it (the triggers of that event, the permission callback: ``index`` None);
        a request served from a decision before asks again and gets a fresh one."""
        key = nonempty_str(tool_use_id)
        me = index if index is not None else "can_use_tool"
        also: tuple = () if index is None else (index,)
        if key is not None and event == EVENT and isinstance(input_data, dict) and self._chosen(event, input_data.get("tool_name")) == (index,):
            key = None  # the only callback of this tool call: no other request shares it
        if key is None:
            return await self.evaluate(event, input_data, tool_use_id, context, also)
        slot = (event, key)
        shared = self.pending.get(slot)
        if shared is not None:
            result = await asyncio.shield(shared)
            if result is not None and me not in result.served and (index is None or index in result.indices):
                result.served.add(me)
                return result
            if result is not None and index is not None and me not in result.served:
                also = also + tuple(result.indices)  # the CLI selected a callback our matcher rule did not
        future = asyncio.get_running_loop().create_future()
        self.pending[slot] = future
        while len(self.pending) > MAX_PENDING:
            self.pending.popitem(last=False)
        try:
            result = await self.evaluate(event, input_data, tool_use_id, context, also)
        except BaseException:
            if not future.done():
                future.set_result(None)  # the waiters evaluate on their own
            if self.pending.get(slot) is future:
                del self.pending[slot]
            raise
        result.served.add(me)
        future.set_result(result)
        return result

    def selects(self, event: str, tool: Any) -> bool:
        return bool(self._choice(event, tool)[1])

    def permission_input(self, tool_name: Any, tool_input: Any, context: Any) -> dict:
        """The PermissionRequest hook input for a permission callback's request, as the CLI
        builds it (the session fields from the latest hook request of this session)."""
        data = {name: self.base.get(name, "") for name in _BASE_FIELDS}
        data.update(hook_event_name=PERMISSION, tool_name=tool_name, tool_input=tool_input)
        suggestions = []
        for suggestion in getattr(context, "suggestions", None) or ():
            try:
                suggestions.append(suggestion.to_dict())
            except Exception:  # noqa: BLE001 - a suggestion whose to_dict() raises is left out of the hook input; the call is judged all the same
                continue
        data["permission_suggestions"] = suggestions
        agent = getattr(context, "agent_id", None)
        if type(agent) is str and agent:
            data["agent_id"] = agent
        return data

    # -------------------------------------------------------------- deciding

    def later(self) -> tuple:
        """``registered`` as the core's ``later``: the tuple is built again only when the
        set grew (it only ever grows, while the Query is prepared)."""
        later = self._later
        if len(later) != len(self.registered):
            later = self._later = tuple(self.registered)
        return later

    def _choice(self, event: str, tool: Any) -> tuple:
        """(the indices of the entries whose matchers select ``tool`` for ``event``, those
        of them that have a callback), cached: an entry's matcher and callback are fixed."""
        key = (event, plain_str(tool))
        choice = self._selection.get(key)
        if choice is None:
            if len(self._selection) >= MAX_SELECTIONS:
                self._selection.clear()  # tool names come from the CLI: kept bounded
            chosen = tuple(i for i, e in enumerate(self.entries) if e.event == event and _matches(e.matcher, key[1]))
            choice = self._selection[key] = (chosen, tuple(i for i in chosen if self.entries[i].callback is not None))
        return choice

    def _chosen(self, event: str, tool: Any) -> tuple:
        """The indices of the entries whose matchers select ``tool`` for ``event`` (cached)."""
        return self._choice(event, tool)[0]

    def _selected(self, event: str, tool: Any, also: tuple) -> tuple:
        chosen = self._choice(event, tool)[0]
        if also and (len(also) != 1 or also[0] not in chosen) and not set(also) <= set(chosen):
            return tuple(sorted(set(chosen) | {i for i in also if 0 <= i < len(self.entries) and self.entries[i].event == event}))
        return chosen

    def _payload(self, data: dict, event: str, args: Any) -> dict:
        """What a callback of ``event`` is handed for a call first seen as ``data``."""
        if data.get("hook_event_name", event) == event:
            return dict(data, tool_input=args)
        payload = {k: v for k, v in data.items() if k != "permission_suggestions"}
        payload.update(hook_event_name=event, tool_input=args)
        if event == PERMISSION:
            payload["permission_suggestions"] = []
        return payload

    async def evaluate(self, event, input_data, tool_use_id, context, also=(), arguments=None, judges=None) -> _Result:
        """Every callback of ``event`` whose matcher selects the tool (and ``also``), each
        under the contract, again on each rewrite until the input settles; then the core
        decides. ``judges``: the events whose callbacks judge from the first round (default
        ``event`` alone); a rewrite of a permission answer is judged by the ``PreToolUse``
        callbacks too, since the tool runs with it."""
        data = input_data if isinstance(input_data, dict) else {}
        tool = data.get("tool_name")
        chosen, gated = self._choice(event, tool)
        indices = self._selected(event, tool, also)
        gates = list(gated) if indices is chosen else [i for i in indices if self.entries[i].callback is not None]
        for other in judges or ():
            if other != event:
                gates += self._choice(other, tool)[1]
        started = perf_counter()
        if len(gates) == 1 and arguments is None and self.entries[gates[0]].event == data.get("hook_event_name", event):
            return await self._one(event, gates[0], data, tool, tool_use_id, context, indices, started)
        original = data.get("tool_input") if arguments is None else arguments
        return await self._rounds(event, data, tool_use_id, context, arguments, indices, gates, original, started, None)

    async def _one(self, event, only, data, tool, tool_use_id, context, indices, started) -> _Result:
        """``evaluate`` of one callback, ``only``, handed the request's own input (as
        upstream hands it): when it does not rewrite, that one round is the whole
        evaluation; a rewrite goes on to the rounds (every round judged, a deny or failure
        of any round stands)."""
        original = data.get("tool_input")
        first = await self._call(only, data, tool_use_id, context, started)
        verdict = first.verdict
        if verdict is None or verdict.data is None or verdict.data[1] is None:
            call_id = nonempty_str(tool_use_id)
            decision = await self.adapter.adecide(plain_str(tool), [first], call_id=call_id, arguments=original,
                                                  later=self.later())
            self.grant(decision, tool, call_id, original)
            return _Result(decision, indices, {only: first}, original, False)
        return await self._rounds(event, data, tool_use_id, context, None, indices, [only], original, started, [first])

    async def _rounds(self, event, data, tool_use_id, context, arguments, indices, gates, original, started, done) -> _Result:
        """``evaluate`` past its one-callback path: whole rounds of ``gates`` until the
        input settles (``done``: the first round's outcomes, when already run). A method
        of its own: the closure's cells are made only for the calls that need them."""
        adapter = self.adapter
        tool = data.get("tool_name")
        state: dict[str, Any] = {"args": original, "judged": original, "gates": gates}
        last: dict = {}
        rounds: list = []

        async def one_round(args: Any) -> list:
            # ``args``: the input every callback of the round is handed (its own copy of
            # it); after a rewrite, the copy ``auntil_stable`` made, which nobody else holds
            nonlocal done
            state["judged"] = args
            round_gates = state["gates"]
            if done is not None:  # the first round, already run by the one-callback path
                outcomes, done = done, None
            else:
                payloads = []
                for n, i in enumerate(round_gates):
                    entry_event = self.entries[i].event
                    if n == 0 and args is original and arguments is None and entry_event == data.get("hook_event_name", event):
                        payloads.append(data)  # upstream hands each callback the request's own input
                    else:
                        own = snapshot(args)
                        payloads.append(self._payload(data, entry_event, args if own is CHANGED else own))
                calls = [self._call(i, payload, tool_use_id, context, started) for i, payload in zip(round_gates, payloads)]
                if len(calls) == 1:
                    outcomes = [await calls[0]]
                else:
                    outcomes = list(await asyncio.gather(*calls))
            for i, outcome in zip(round_gates, outcomes):
                last[i] = outcome
                verdict = outcome.verdict
                if verdict is not None and verdict.data is not None and verdict.data[1] is not None:
                    state["args"] = verdict.data[1]  # the last rewrite in order wins
            if state["args"] is not original and event == PERMISSION:
                # the tool will run with a permission answer's rewrite: the PreToolUse
                # callbacks judge it as well
                extra = self._choice(EVENT, tool)[1]
                state["gates"] = list(dict.fromkeys(state["gates"] + list(extra)))
            rounds.append(outcomes)
            return outcomes

        outcomes = await one_round(original)
        if state["args"] is not original:  # rewritten: every gate judges the new input, until it settles
            # (callbacks run concurrently on one input, as the CLI runs them: whole rounds,
            # not gate by gate, each handed the round's input; a round that only changes
            # keys earlier rounds added is a stamp, and the input every gate of that round
            # judged is what runs)
            outcomes = await auntil_stable(one_round, lambda: state["args"], adapter.hook_id("updatedInput"), origin=original,
                                                     restore=lambda args: state.__setitem__("args", args))
        outcomes = list(outcomes)
        for earlier in rounds[:-1]:  # a deny, failure or ask of any round stands
            outcomes += [o for o in earlier if _stands(o)]
        call_id = nonempty_str(tool_use_id)
        final = state["judged"]
        # the callbacks registered with this session are there (a ``required`` naming one
        # is met), whether or not their matchers select this tool: the core says so
        decision = await adapter.adecide(plain_str(tool), outcomes, call_id=call_id, arguments=final,
                                         later=self.later())
        self.grant(decision, tool, call_id, final)
        return _Result(decision, indices, last, final, final is not original)

    def _call(self, index, payload, tool_use_id, context, started) -> Awaitable[Outcome]:
        """The awaitable of one callback's guarded call (no coroutine of its own around it)."""
        entry = self.entries[index]
        adapter = self.adapter
        validate = adapter.to_verdict if entry.event == EVENT else adapter.permission_request_verdict
        # the CLI stops waiting at its own deadline for the matcher, counted from its request
        # (an older CLI reads its own timeout as "no decision"): the core keeps within it
        return adapter.ahook_call(entry.hook_id, entry.callback, payload, tool_use_id, context, _validate=validate,
                                  _host=(entry.cli_timeout, started))

    # -------------------------------------------------------------- rendering

    def _render(self, index: int, result: _Result) -> dict:
        decision = result.decision
        own = result.outcomes.get(index)
        verdict = own.verdict if own is not None else None
        native = verdict.data[0] if verdict is not None and verdict.data is not None else None
        updated = result.final if result.changed else None
        action = decision.action
        if action is Action.DENY:
            reason = decision.reason or _denied_by(decision)
            if verdict is not None and verdict.action is Action.DENY and _kind(verdict) == "deny":
                return native  # type: ignore[return-value]  # the callback's own explicit deny, untouched
            if verdict is not None and verdict.action is Action.DENY and isinstance(native, dict):
                # the callback's own deny by continue_: False or decision: "block": the CLI
                # reads neither as a deny of the tool, so the deny goes beside them
                answer = dict(native)
                answer.update(_hook_output("deny", reason))
                return answer
            return _hook_output("deny", reason)
        if action is Action.ASK:
            deferred = [o for o in decision.deciding if _kind(o.verdict) == DEFER]
            if deferred:  # the CLI ranks defer above ask: the call pauses for approval
                if verdict is not None and _kind(verdict) == DEFER:
                    return native  # type: ignore[return-value]
                return _hook_output(DEFER, deferred[0].verdict.reason or _denied_by(decision, "deferred"))
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

    def _render_permission(self, index: int, result: _Result) -> dict:
        decision = result.decision
        own = result.outcomes.get(index)
        verdict = own.verdict if own is not None else None
        native = verdict.data[0] if verdict is not None and verdict.data is not None else None
        action = decision.action
        if action is Action.DENY:
            if verdict is not None and verdict.action is Action.DENY and _kind(verdict) == "deny":
                return native  # type: ignore[return-value]
            return _permission_output(decision.reason or _denied_by(decision))
        if action is Action.ASK:
            return {}  # no decision from the hooks: the host's permission callback asks
        answer = native if native is not None else {}
        if action is Action.ALLOW and verdict is not None and verdict.action is Action.ALLOW and result.changed:
            answer = dict(answer)
            specific = dict(answer["hookSpecificOutput"])
            specific["decision"] = dict(specific["decision"], updatedInput=result.final)
            answer["hookSpecificOutput"] = specific
        return answer


class ClaudeSDKAdapter(Adapter):
    name = "claude-agent-sdk"
    fail_closed_upstream = ""
    modules = (QUERY,)
    supports_ask = True
    self_test_junk = {"hookSpecificOutput": {"hookEventName": EVENT, "permissionDecision": "Deny"}}

    def __init__(self) -> None:
        super().__init__()
        self._on_failure = False  # the release sends HookMatcher.on_failure (0.2.177+)
        #: an in-process tool's name as Claude Code spells it -> its own name
        self.local_names: dict = {}
        #: "mcp__<server>__<tool>" -> the hook id of its handler (a permission prompt tool's)
        self.handler_ids: dict = {}

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
        for attr in ("start", "_handle_sdk_mcp_request"):  # the tool boundary's
            if not asyncio.iscoroutinefunction(query.__dict__.get(attr)):
                raise PatchError(f"{QUERY}.Query.{attr}")
        if not callable(vars(importlib.import_module(MCP_COMPAT)).get("build_tool_server")):
            raise PatchError(f"{MCP_COMPAT}.build_tool_server")
        return query

    def _patch(self) -> None:
        query = self._targets()  # all checked before anything changes
        try:
            import dataclasses

            matcher = getattr(importlib.import_module(TYPES), "HookMatcher")
            self._on_failure = "on_failure" in {f.name for f in dataclasses.fields(matcher)}
        except Exception:  # noqa: BLE001 - a HookMatcher that cannot be read (an import, a non-dataclass): no onFailure sent, as before 0.2.177
            self._on_failure = False
        adapter = self

        async def initialize(wrapped, instance, args, kwargs):
            adapter._prepare(instance)
            adapter._check_sent(instance)
            response = await wrapped(*args, **kwargs)
            adapter._check_applied(instance, response)
            return response

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
        self._patch_boundary(query)

    # ------------------------------------------------------------ the tool boundary

    def _patch_boundary(self, query: Any) -> None:
        """``Query.start`` is the run entry point; each in-process tool's handler, the
        innermost call; a CLI ``tools/call`` of a tool no PreToolUse callback selects is
        granted on arrival (the CLI's permission rules decided it)."""
        compat = importlib.import_module(MCP_COMPAT)
        adapter = self
        self.wrap_run(query, "start", gated=_has_gates)

        def build_tool_server(wrapped, instance, args, kwargs):
            server = wrapped(*args, **kwargs)
            run_tool = args[3] if len(args) > 3 else kwargs.get("run_tool")
            adapter._bound_tools(args[0] if args else kwargs.get("name"), run_tool)
            return server

        self.wrap_everywhere(compat, "build_tool_server", build_tool_server, "claude_agent_sdk")

        async def handle_sdk_mcp_request(wrapped, instance, args, kwargs):
            server = args[0] if args else kwargs.get("server_name")
            message = args[1] if len(args) > 1 else kwargs.get("message")
            prompt = adapter._prompt_of(instance, server, message)
            if prompt is not None:
                return await adapter._prompt_call(instance, prompt, message, wrapped, args, kwargs)
            adapter._arrived(instance, server, message)
            return await wrapped(*args, **kwargs)

        self.wrap(query, "_handle_sdk_mcp_request", handle_sdk_mcp_request)

    def _bound_tools(self, server: Any, run_tool: Any) -> None:
        """Each ``SdkMcpTool`` of a server ``create_sdk_mcp_server`` builds (``run_tool``'s
        ``tools_by_name``): its ``handler`` gets the boundary. Never raises."""
        try:
            code = getattr(run_tool, "__code__", None)
            cells = dict(zip(code.co_freevars, run_tool.__closure__ or ())) if code is not None else {}
            tools = cells["tools_by_name"].cell_contents if "tools_by_name" in cells else {}
            for name, tool_def in list(tools.items()) if isinstance(tools, dict) else ():
                handler = vars(tool_def).get("handler") if hasattr(tool_def, "__dict__") else None
                if type(name) is not str or not callable(handler) or getattr(handler, "_self_failsecure_boundary", False):
                    continue
                if _mcp_name(name) != name and len(self.local_names) < 4096:
                    self.local_names[_mcp_name(name)] = name
                # the CLI never re-runs a tools/call that failed (the model's next call is
                # judged again): a handler that raised gives no grant back
                if len(self.handler_ids) < 4096:
                    self.handler_ids[f"mcp__{_mcp_name(server)}__{_mcp_name(name)}"] = self.callable_id(handler)
                self.wrap_boundary(tool_def, "handler", self._reader(name), where=f"{_mcp_name(server)}.{name}", give_back=False)
                self.wrap(tool_def, "handler", _capture_raise)
        except Exception as exc:  # noqa: BLE001 - the SDK's or the user's objects: this server's tools keep no boundary (said)
            internal(exc, "failsecure: claude-agent-sdk: an SDK MCP server's tools got no boundary ({type})")

    @staticmethod
    def _reader(name: str):
        def read(_instance: Any, args: tuple, kwargs: dict) -> tuple:
            return name, None, (args[0] if args else kwargs.get("args")), name, None

        return read

    def _arrived(self, query: Any, server: Any, message: Any) -> None:
        """A ``tools/call`` from the CLI for an in-process tool that no PreToolUse callback
        of the session selects: the CLI's permission rules decided it; granted."""
        try:
            if not isinstance(message, dict) or message.get("method") != "tools/call":
                return
            params = message.get("params")
            if not isinstance(params, dict):
                return
            name = params.get("name")
            if type(name) is not str:
                return
            session = getattr(query, _MARK, None)
            if session is not None and session.selects(EVENT, f"mcp__{_mcp_name(server)}__{_mcp_name(name)}"):
                return  # the PreToolUse callbacks' decision grants it
            arguments = params.get("arguments")
            self.granted(_CLI_DECIDED, name, None, arguments if arguments is not None else {})
        except Exception as exc:  # noqa: BLE001 - no grant: the call is ungoverned (fail closed), said
            internal(exc, "failsecure: claude-agent-sdk: an in-process tool call was not recorded ({type})")

    # ------------------------------------------------------------ permission_prompt_tool_name

    @staticmethod
    def _prompt_of(query: Any, server: Any, message: Any) -> Optional[str]:
        """The CLI name of the session's permission prompt tool when ``message`` is the
        CLI's ``tools/call`` of it (an SDK MCP tool the CLI asks instead of the user)."""
        session = getattr(query, _MARK, None)
        prompt = getattr(session, "prompt_tool", None)
        if prompt is None or not isinstance(message, dict) or message.get("method") != "tools/call":
            return None
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if type(name) is not str or f"mcp__{_mcp_name(server)}__{_mcp_name(name)}" != prompt:
            return None
        return prompt

    async def _prompt_call(self, query: Any, prompt: str, message: dict, wrapped: Any, args: tuple, kwargs: dict) -> Any:
        """The permission prompt tool as a gate: its handler, through the SDK's own MCP
        path, under the guard (deadline, a late answer is a timeout, a raise or an answer
        the CLI does not define denies); the session's PermissionRequest callbacks'
        decision first (their deny outranks its allow); one audited decision; a deny is
        answered in the shape the CLI honours, ``{"behavior": "deny", "message": R}``."""
        session = getattr(query, _MARK)
        params = message.get("params") or {}
        given = params.get("arguments")
        arguments: dict = given if isinstance(given, dict) else {}
        tool_name = arguments.get("tool_name")
        tool = tool_name if type(tool_name) is str else None
        call_id = arguments.get("tool_use_id")
        call_id = call_id if type(call_id) is str and call_id else None
        hook = self.handler_ids.get(prompt) or self.hook_id(prompt)
        local = params.get("name")
        try:
            # the CLI's own call of its prompt (not a model's tool call): no decision to pass
            self.granted(_CLI_DECIDED, local, None, arguments)
            if session.selects(PERMISSION, tool):
                data = session.permission_input(tool_name, arguments.get("input"), None)
                hooks = await session.shared(PERMISSION, None, data, call_id, None)
                if hooks.decision.action is Action.DENY:
                    self.ungrant(local, arguments)
                    return _prompt_deny(message, hooks.decision.reason or _denied_by(hooks.decision))
            box: dict = {}

            async def ask() -> Any:
                token = _prompting.set(box)
                try:
                    response = await wrapped(*args, **kwargs)
                finally:
                    _prompting.reset(token)
                if "raised" in box:
                    raise box["raised"]  # the handler's own exception (the SDK made it a tool error)
                return response

            outcome = await self.ahook_call(hook, ask, _validate=_prompt_verdict, _interactive=True)
            verdict = outcome.verdict
            original = arguments.get("input")
            final = _prompt_updated(verdict.data) if verdict is not None and verdict.action is Action.ALLOW else None
            final = original if final is None else final
            decision = await self.adecide(tool, [outcome], call_id=call_id, arguments=final,
                                          later=session.later())
            session.grant(decision, tool, call_id, final)
            if decision.action is Action.ALLOW or decision.action is Action.ABSTAIN:
                if verdict is None:
                    return _prompt_deny(message, _denied_by(decision))
                if final is not original and not same(snapshot(original), final):
                    # the prompt rewrote the input the PreToolUse callbacks approved (the CLI
                    # asked them before its permission path): they and the PermissionRequest
                    # callbacks judge what will run
                    data = {"hook_event_name": EVENT, "tool_name": tool_name, "tool_input": original}
                    data.update({k: v for k, v in session.base.items() if k not in data})
                    again = await session.evaluate(EVENT, data, call_id, None, arguments=final, judges=GATED)
                    if again.decision.action is not Action.ALLOW and again.decision.action is not Action.ABSTAIN:
                        return _prompt_deny(message, again.decision.reason or _denied_by(again.decision))
                return verdict.data
            if decision.action is Action.DENY and verdict is not None and verdict.action is Action.DENY:
                return verdict.data  # its own deny, as it answered
            return _prompt_deny(message, decision.reason or _denied_by(decision))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the permission prompt is answered deny on any failure to judge it (audited), never let through
            return _prompt_deny(message, self.failed(exc, tool, call_id, hook=hook).reason or "failsecure: denied")

    def _lockdown(self) -> None:
        """The targets are not where expected: a session that has gating callbacks or
        ``can_use_tool`` (or would need failsecure's own gate) refuses to start."""
        module = sys.modules.get(QUERY)
        query = getattr(module, "Query", None) if module is not None else None
        if not isinstance(query, type) or not callable(getattr(query, "initialize", None)):
            return
        adapter = self

        async def locked(wrapped, instance, args, kwargs):
            hooks = getattr(instance, "hooks", None) or {}
            gated = isinstance(hooks, dict) and any(hooks.get(event) for event in GATED)
            if gated or getattr(instance, "can_use_tool", None) is not None or adapter.must_decide():
                decision = adapter.decide(None, ())
                raise RuntimeError(decision.reason or "failsecure: claude-agent-sdk is not patched")
            return await wrapped(*args, **kwargs)

        self.wrap(query, "initialize", locked)

    # ------------------------------------------------------------ one Query

    def _prepare(self, query: Any) -> None:
        """Swap the Query's gating callbacks and ``can_use_tool`` for guarded ones (in the
        Query's own copy of the hooks; the user's options are not touched)."""
        if getattr(query, _MARK, None) is not None:
            return
        hooks = query.hooks if isinstance(query.hooks, dict) else {}
        entries: list = []
        replaced: dict = {}
        for event in GATED:
            new_matchers: list = []
            for matcher in list(hooks.get(event) or ()):
                if not isinstance(matcher, dict):
                    new_matchers.append(matcher)
                    continue
                cli_timeout: Any = matcher.get("timeout")
                if type(cli_timeout) not in (int, float) or cli_timeout <= 0:
                    cli_timeout = CLI_DEFAULT_TIMEOUT
                triggers = []
                for callback in list(matcher.get("hooks") or ()):
                    entry = _Entry(callback, self.callable_id(callback), matcher.get("matcher"), float(cli_timeout), event)
                    entries.append(entry)
                    triggers.append(len(entries) - 1)
                new_matchers.append(dict(matcher, hooks=triggers))
            if event == EVENT and self.must_decide():
                entries.append(_Entry(None, self.hook_id("failsecure"), None, CLI_DEFAULT_TIMEOUT))
                new_matchers.append({"matcher": None, "hooks": [len(entries) - 1]})
            if new_matchers:
                replaced[event] = new_matchers
        session = _Session(self, entries)
        servers = getattr(query, "sdk_mcp_servers", None)
        if isinstance(servers, dict):
            session.in_process = tuple(f"mcp__{_mcp_name(name)}__" for name in servers)
        options = getattr(getattr(query, "transport", None), "_options", None)
        prompt = getattr(options, "permission_prompt_tool_name", None)
        if type(prompt) is str and session.in_process and prompt.startswith(session.in_process):
            session.prompt_tool = prompt
            hook = self.handler_ids.get(prompt)
            if hook is not None:
                session.registered.add(hook)
        for new_matchers in replaced.values():
            for matcher in new_matchers:
                if isinstance(matcher, dict) and isinstance(matcher.get("hooks"), list):
                    matcher["hooks"] = [session.trigger_for(i) if type(i) is int else i for i in matcher["hooks"]]
        if replaced:
            query.hooks = dict(hooks, **replaced)
        setattr(query, _MARK, session)
        user = getattr(query, "can_use_tool", None)
        if user is not None and getattr(user, _MARK, None) is None:
            session.registered.add(self.callable_id(user))
            query.can_use_tool = self._guarded_permission(user, session)

    def _gates_of(self, query: Any) -> list:
        """The hook ids of the gates a Query would leave ungated if its hooks never reached
        the CLI (its own catch-all included)."""
        session = getattr(query, _MARK, None)
        if session is None:
            return []
        return [e.hook_id for e in session.entries]

    def _refuse_session(self, query: Any, why: str) -> None:
        """The session would run its tools without the gates: audited as a deny of each
        gate (``missing``), and the session does not start."""
        outcomes = [Outcome(hook=h, failure=Failure.MISSING) for h in self._gates_of(query)]
        decision = self.decide(None, outcomes)
        error = getattr(importlib.import_module("claude_agent_sdk._errors"), "CLIConnectionError", RuntimeError)
        raise error(f"{decision.reason or _denied_by(decision)}: {why}")

    def _check_sent(self, query: Any) -> None:
        """A Query that is not streaming never sends its hooks to the CLI."""
        if getattr(query, "is_streaming_mode", True) is False and self._gates_of(query):
            self._refuse_session(query, "this session does not send its hooks to Claude Code (not streaming)")

    def _check_applied(self, query: Any, response: Any) -> None:
        """The CLI says it did not register this client's hooks (a client joining a
        session another client configured): its tools would run ungated."""
        if isinstance(response, dict) and response.get("hooks_applied") is False and self._gates_of(query):
            self._refuse_session(query, "Claude Code did not apply this client's hooks to the session (it was already running)")

    # ------------------------------------------------------------ can_use_tool

    def _guarded_permission(self, user: Any, session: _Session):
        adapter = self
        hook_id = self.callable_id(user)
        types = importlib.import_module(TYPES)
        deny_type, allow_type = types.PermissionResultDeny, types.PermissionResultAllow
        validate = self._permission_verdict

        async def can_use_tool(tool_name, input_data, context):
            tool = plain_str(tool_name)
            call_id = getattr(context, "tool_use_id", None)
            call_id = nonempty_str(call_id)
            try:
                if session.selects(PERMISSION, tool):
                    # the CLI takes whichever answers first, the PermissionRequest hooks or
                    # this callback: their decision comes first
                    data = session.permission_input(tool_name, input_data, context)
                    hooks = await session.shared(PERMISSION, None, data, call_id, None)
                    said = hooks.decision.action
                    if said is Action.DENY:
                        return deny_type(message=hooks.decision.reason or _denied_by(hooks.decision))
                    if said is Action.ALLOW:  # the CLI applies the hooks' allow and drops this request
                        return allow_type(updated_input=hooks.final if hooks.changed else None)
                outcome = await adapter.ahook_call(hook_id, user, tool_name, input_data, context, _validate=validate, _interactive=True)
                verdict = outcome.verdict
                native = verdict.data if verdict is not None else None
                final = input_data
                if verdict is not None and verdict.action is Action.ALLOW and native.updated_input is not None:
                    final = native.updated_input
                decision = await adapter.adecide(tool, [outcome], call_id=call_id, arguments=final,
                                                 later=session.later())
                session.grant(decision, tool, call_id, final)
                action = decision.action
                if action is Action.ASK and verdict is not None and verdict.action is Action.ALLOW:
                    action = Action.ALLOW  # the permission callback is the human being asked
                if action is Action.DENY or action is Action.ASK:
                    if verdict is not None and verdict.action is Action.DENY:
                        return native
                    return deny_type(message=decision.reason or _denied_by(decision))
                if final is not input_data and not same(snapshot(input_data), final):
                    # the permission callback rewrote the input the gates approved: the
                    # PreToolUse and PermissionRequest callbacks judge what will run
                    data = {"hook_event_name": EVENT, "tool_name": tool_name, "tool_input": input_data}
                    data.update({k: v for k, v in session.base.items() if k not in data})
                    again = await session.evaluate(EVENT, data, call_id, None, arguments=final, judges=GATED)
                    if again.decision.action is not Action.ALLOW and again.decision.action is not Action.ABSTAIN:
                        return deny_type(message=again.decision.reason or _denied_by(again.decision))
                return native
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - can_use_tool answers deny on any failure to judge the call (audited), never allow
                return deny_type(message=adapter.failed(exc, tool_name, hook=hook_id).reason)

        setattr(can_use_tool, _MARK, True)
        can_use_tool.__wrapped__ = user  # type: ignore[attr-defined]
        return can_use_tool

    def _permission_verdict(self, native: Any) -> Verdict:
        """``can_use_tool``'s answer: PermissionResultAllow or PermissionResultDeny,
        anything else is INVALID (upstream raises TypeError and the CLI is told the
        exception text)."""
        types = sys.modules[TYPES]
        allow_type = types.PermissionResultAllow
        if type(native) is allow_type or isinstance(native, allow_type):
            updated = native.updated_input  # each field read once: what is judged is what is sent
            if updated is not None and not isinstance(updated, dict):
                raise Invalid()
            permissions = native.updated_permissions
            if permissions is not None and not isinstance(permissions, list):
                raise Invalid()
            if updated is not None:
                # the SDK sends json.dumps of it (a dict subclass: its own items()): the
                # gates judge, and the CLI is sent, that wire form
                try:
                    updated = json.loads(json.dumps(updated))
                except Exception:  # noqa: BLE001 - the answer's own objects (a dict subclass, a hostile __str__) can raise anything while written: junk, denied
                    raise Invalid() from None
                if type(updated) is not dict:
                    raise Invalid()
            if updated is not None or type(native) is not allow_type:
                # a plain answer of the fields as read: a subclass's property cannot answer
                # the SDK's own read with another input
                native = allow_type(updated_input=updated, updated_permissions=permissions)
            return Verdict(action=Action.ALLOW, data=native)
        if isinstance(native, types.PermissionResultDeny):
            message = native.message
            if type(message) is not str:
                raise Invalid()
            interrupt = native.interrupt
            if type(interrupt) is not bool:
                raise Invalid()
            if type(native) is not types.PermissionResultDeny:  # a subclass: the fields as read
                native = types.PermissionResultDeny(message=message, interrupt=interrupt)
            return Verdict(action=Action.DENY, reason=message or None, data=native)
        raise Invalid()

    # ------------------------------------------------------------ hook answers

    @staticmethod
    def _common(native: Any) -> tuple:
        """The fields every hook answer shares: -> (action, reason) from ``decision``
        (approve/block) and ``continue_`` (False stops the run: counts as a deny)."""
        if type(native) is not dict:
            raise Invalid()
        if len(native) == 1 and "hookSpecificOutput" in native:
            return Action.ABSTAIN, None  # the usual answer: none of the shared fields
        if native.get("async_") is True or native.get("async") is True:
            raise Invalid()  # the CLI would not wait for it
        action = Action.ABSTAIN
        reason = None
        old = native.get("decision")
        if old is not None:
            if old == "block":
                action = Action.DENY
                reason = native.get("reason")
            elif old == "approve":
                action = Action.ALLOW
            else:
                raise Invalid()
        go_on = _sent(native, "continue_", "continue")
        if go_on is not None and type(go_on) is not bool:
            raise Invalid()
        if go_on is False:
            action = Action.DENY
            reason = reason or native.get("stopReason")
        return action, reason

    def to_verdict(self, native: Any) -> Verdict:
        """A PreToolUse callback's answer (the SDK's hook output dict). ``{}`` or an
        answer without a decision: no opinion. ``permissionDecision`` allow/deny/ask/defer
        (defer: an ask that pauses the run until the call is approved and resumed),
        ``decision`` approve/block, ``continue: False`` (stops the run: counts as a deny)
        are honoured; ``None``, a non-dict, an unknown or wrong-case decision, a
        ``hookEventName`` other than PreToolUse, a non-dict ``updatedInput`` or
        ``async: True`` (the CLI would not wait for it) are INVALID. ``data`` keeps the
        native answer, its ``updatedInput`` (where the CLI applies one: allow, ask, no
        decision) and its ``permissionDecision``."""
        action, reason = self._common(native)
        updated = None
        kind = None
        specific = native.get("hookSpecificOutput")
        if specific is not None:
            if type(specific) is not dict or specific.get("hookEventName") != EVENT:
                raise Invalid()
            decision = specific.get("permissionDecision")
            if decision is not None:
                mapped = _DECISIONS.get(decision) if type(decision) is str else None
                if mapped is None:
                    raise Invalid()
                kind = decision
                if RANK[mapped] > RANK[action] or (mapped is action and decision == "deny"):
                    action = mapped
                    reason = specific.get("permissionDecisionReason") or native.get("reason")
            updated = specific.get("updatedInput")
            if updated is not None and type(updated) is not dict:
                raise Invalid()
            if kind == "deny" or kind == DEFER:
                updated = None  # the CLI applies no rewrite with a deny or a defer
        if type(reason) is not str or not reason:
            reason = None
        native = _wire(native)
        if updated is not None:
            updated = native["hookSpecificOutput"]["updatedInput"]
        return Verdict(action=action, reason=reason, data=(native, updated, kind))

    def permission_request_verdict(self, native: Any) -> Verdict:
        """A PermissionRequest callback's answer: ``hookSpecificOutput.decision`` with
        ``behavior`` allow (``updatedInput`` dict, ``updatedPermissions`` list) or deny
        (``message`` str, ``interrupt`` bool); ``{}`` or no decision: no opinion (the host
        asks); ``decision: "block"`` and ``continue: False`` deny. Anything the CLI would
        not read as one of those is INVALID."""
        action, reason = self._common(native)
        if action is Action.ALLOW:
            action = Action.ABSTAIN  # ``approve`` is no PermissionRequest allow
        updated = None
        kind = None
        specific = native.get("hookSpecificOutput")
        if specific is not None:
            if type(specific) is not dict or specific.get("hookEventName") != PERMISSION:
                raise Invalid()
            decision = specific.get("decision")
            if decision is not None:
                if type(decision) is not dict:
                    raise Invalid()
                behavior = decision.get("behavior")
                if behavior == "allow":
                    updated = decision.get("updatedInput")
                    if updated is not None and type(updated) is not dict:
                        raise Invalid()
                    permissions = decision.get("updatedPermissions")
                    if permissions is not None and type(permissions) is not list:
                        raise Invalid()
                    mapped = Action.ALLOW
                elif behavior == "deny":
                    message = decision.get("message")
                    if message is not None and type(message) is not str:
                        raise Invalid()
                    interrupt = decision.get("interrupt")
                    if interrupt is not None and type(interrupt) is not bool:
                        raise Invalid()
                    mapped = Action.DENY
                else:
                    raise Invalid()
                kind = behavior
                if RANK[mapped] >= RANK[action]:
                    action = mapped
                    if mapped is Action.DENY:
                        reason = decision.get("message") or reason
                if action is not Action.ALLOW:
                    updated = None
        if type(reason) is not str or not reason:
            reason = None
        native = _wire(native)
        if updated is not None:
            updated = native["hookSpecificOutput"]["decision"]["updatedInput"]
        return Verdict(action=action, reason=reason, data=(native, updated, kind))

    # ------------------------------------------------------------ doctor

    def _probe(self, gate: Any) -> bool:
        """``gate`` as the only PreToolUse callback of a real ``Query``, through its
        (patched) set-up and its real ``_handle_control_request``: True when the answer
        written to the CLI denies the tool call."""
        import functools

        @functools.wraps(gate)
        def hook(*args):
            # the kit's allowing gate answers None, which is junk here: {} is no opinion
            answer = gate(*args)
            return {} if answer is None else answer

        answer = self.run_probe(lambda: asyncio.run(probe_answer(hook)))
        response = (answer or {}).get("response", {})
        if response.get("subtype") != "success":
            return False
        specific = (response.get("response") or {}).get("hookSpecificOutput") or {}
        return specific.get("permissionDecision") == "deny"


def _denied_by(decision, verb: str = "denied") -> str:
    primary = decision.primary
    return f"failsecure: hook '{primary.hook if primary is not None else ClaudeSDKAdapter.name}' {verb} the call"




#: the box of the permission prompt call whose handler runs in this task
_prompting: "contextvars.ContextVar[Optional[dict]]" = contextvars.ContextVar("failsecure_claude_prompt", default=None)


async def _capture_raise(wrapped, instance, args, kwargs):
    """An SDK MCP tool's handler: when it runs as the permission prompt, its exception is
    kept for the guard (the SDK turns it into a tool error with its text)."""
    box = _prompting.get()
    if box is None:
        return await wrapped(*args, **kwargs)
    try:
        return await wrapped(*args, **kwargs)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit too: kept for the guard, not let loose in the SDK's MCP server
        box["raised"] = exc
        raise RuntimeError("failsecure: the permission prompt tool raised") from None


def _prompt_verdict(response: Any) -> Verdict:
    """The JSON-RPC answer of a permission prompt tool call -> a Verdict: one text content
    holding ``{"behavior": "allow", "updatedInput"?: object}`` or ``{"behavior": "deny",
    "message": string}`` (what the CLI accepts); a tool error or anything else is INVALID."""
    if type(response) is not dict or type(response.get("result")) is not dict:
        raise Invalid()
    result = response["result"]
    content = result.get("content")
    if result.get("isError") or type(content) is not list or len(content) != 1 or type(content[0]) is not dict:
        raise Invalid()
    text = content[0].get("text")
    if content[0].get("type") != "text" or type(text) is not str:
        raise Invalid()
    try:
        answer = json.loads(text)
    except ValueError:
        raise Invalid() from None
    if type(answer) is not dict:
        raise Invalid()
    if answer.get("behavior") == "allow":
        updated = answer.get("updatedInput")
        if "updatedInput" in answer and type(updated) is not dict:
            raise Invalid()
        return Verdict(action=Action.ALLOW, data=response)
    if answer.get("behavior") == "deny" and type(answer.get("message")) is str:
        return Verdict(action=Action.DENY, reason=answer["message"] or None, data=response)
    raise Invalid()


def _prompt_updated(response: Any) -> Any:
    """The ``updatedInput`` of an allow ``_prompt_verdict`` accepted (None: none given)."""
    answer = json.loads(response["result"]["content"][0]["text"])
    return answer.get("updatedInput")


def _prompt_deny(message: dict, reason: str) -> dict:
    """A deny in the shape the CLI honours for a permission prompt tool's answer."""
    text = json.dumps({"behavior": "deny", "message": reason})
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": {"content": [{"type": "text", "text": text}]}}


def _block_on_failure(request: dict) -> dict:
    """The initialize request with ``onFailure: "block"`` on every gating matcher
    (PreToolUse, PermissionRequest)."""
    hooks = request.get("hooks")
    if not isinstance(hooks, dict):
        return request
    blocked = {}
    for event in GATED:
        if isinstance(hooks.get(event), list):
            blocked[event] = [dict(m, onFailure="block") if isinstance(m, dict) else m for m in hooks[event]]
    return dict(request, hooks=dict(hooks, **blocked)) if blocked else request


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
        adapter = registered("claude-agent-sdk")
        return adapter if isinstance(adapter, ClaudeSDKAdapter) else None
    except Exception:  # noqa: BLE001 - the probe then prepares no session and answers as upstream does, which is what the self-test reads
        return None


__all__ = ["ClaudeSDKAdapter", "probe_answer"]
