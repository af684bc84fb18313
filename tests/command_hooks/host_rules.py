"""The hosts' own rules for a PreToolUse command hook, as an oracle for the runner tests.

``host_verdict`` is what each host does with the stdout, stderr and exit status of the
command it started (the hook itself, or the runner in front of it): ``run`` the tool,
``block`` it, or ``ask`` the user. Facts from the shipped hosts (docs/command-hooks.md,
"Claude Code", "Gemini CLI 0.61.0", "Codex CLI 0.171.0", "kiro_crew"); where a host's
behaviour is not documented the rule below is the lenient reading (the host runs the
tool), which is what a fail-closed runner must assume.

``valid_answer`` is the strict reading: what a hook that exits 0 can count on every
release of the host to honour. The runner may pass a hook's answer through only when
it is valid here.
"""

import json

RUN, BLOCK, ASK = "run", "block", "ask"
ALLOW, ABSTAIN, DENY = "allow", "abstain", "deny"

STDOUT_CAP = 1024 * 1024  # the runner reads at most this much of a hook's answer
_JSON_WS = " \t\n\r"
BOM = b"\xef\xbb\xbf"
# Hosts that parse the trimmed stdout (JavaScript's trim: a byte-order mark, U+00A0, a
# form feed, ... at both ends), measured on the pinned CLIs: Claude Code 2.1.332 (a
# deny after a mark, two marks, U+00A0 or a form feed blocks), Gemini CLI 0.61.0 (its
# source trims; a deny after a mark blocks). Codex CLI 0.169.0 does not read an answer
# after a mark (tests/command_hooks/*/test_answer_*.py).
TRIMS = ("claude", "gemini")
# what JavaScript's String.prototype.trim strips
_JS_WS = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"

EVENT = {"claude": "PreToolUse", "codex": "PreToolUse", "kiro": "PreToolUse", "gemini": "BeforeTool"}

_CLAUDE_TOP = {
    "continue": bool,
    "suppressOutput": bool,
    "stopReason": str,
    "decision": str,
    "reason": str,
    "systemMessage": str,
    "hookSpecificOutput": dict,
}
_CLAUDE_SPECIFIC = {
    "hookEventName": str,
    "permissionDecision": str,
    "permissionDecisionReason": str,
    "updatedInput": dict,
    "additionalContext": str,
}
_CODEX_SPECIFIC = {"hookEventName": str, "permissionDecision": str, "permissionDecisionReason": str}
_GEMINI_SPECIFIC = {"hookEventName": str, "tool_input": dict, "additionalContext": str}


def _reject(name):
    raise ValueError(name)


def _distinct(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):  # a key given twice: each host's parser reads another answer
        raise ValueError("duplicate key")
    return dict(pairs)


def strict_json(data):
    """bytes -> one JSON object, strictly (UTF-8, no NaN, no trailing data, no key given
    twice at any depth), else None."""
    try:
        text = data.decode("utf-8")
        value = json.loads(text, parse_constant=_reject, object_pairs_hook=_distinct)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _typed(obj, schema, strict):
    for key, value in obj.items():
        kind = schema.get(key)
        if kind is None:
            if strict:
                return False
            continue
        if kind is bool:
            if not isinstance(value, bool):
                return False
        elif kind is dict:
            if not isinstance(value, dict):
                return False
        elif not isinstance(value, kind):
            return False
    return True


def _claude_like(obj, specific_schema, permissions, strict, honour_continue=True):
    """-> allow / abstain / ask / deny, or None when the host would not honour it."""
    if not _typed(obj, _CLAUDE_TOP, strict):
        return None
    if "decision" in obj and obj["decision"] not in ("approve", "block"):
        return None
    specific = obj.get("hookSpecificOutput")
    permission = None
    if specific is not None:
        if not _typed(specific, specific_schema, strict):
            return None
        if specific.get("hookEventName") != "PreToolUse":
            return None  # a wrong or missing event: a non-blocking failure
        if "permissionDecision" in specific:
            permission = specific["permissionDecision"]
            if permission not in permissions:
                return None
    if obj.get("decision") == "block" or permission == "deny":
        return DENY
    if honour_continue and obj.get("continue") is False:
        return DENY  # "stop": the tool does not run
    if permission == "ask":
        return ASK
    if obj.get("decision") == "approve" or permission == "allow":
        return ALLOW
    return ABSTAIN


def _gemini(obj, strict):
    top = dict(_CLAUDE_TOP)
    if not _typed(obj, top, strict):
        return None
    if "decision" in obj and obj["decision"] not in ("allow", "ask", "deny", "block"):
        return None
    specific = obj.get("hookSpecificOutput")
    if specific is not None:
        if not _typed(specific, _GEMINI_SPECIFIC, strict):
            return None
        if "hookEventName" in specific and specific["hookEventName"] != "BeforeTool":
            return None
    decision = obj.get("decision")
    if decision in ("deny", "block") or obj.get("continue") is False:
        return DENY
    if decision == "ask":
        return ASK
    return ALLOW if decision == "allow" else ABSTAIN


def valid_answer(protocol, stdout):
    """The strict meaning of an exit-0 hook's stdout -> allow / abstain / ask / deny, or
    None: an answer some release of the host would not honour (or that is too large to
    be read)."""
    if len(stdout) > STDOUT_CAP:
        return None
    if protocol == "kiro":  # kiro_crew reads stdout as text; only the exit code decides
        try:
            stdout.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return ABSTAIN
    if protocol in TRIMS:
        # judged trimmed, as the host reads it; blank stays blank only as JSON white
        # space after at most one mark (the runner's rule, stricter than the host's)
        if stdout.startswith(BOM):
            stdout = stdout[len(BOM):]
        try:
            trimmed = stdout.decode("utf-8").strip(_JS_WS).encode("utf-8")
        except UnicodeDecodeError:
            trimmed = b""
        stdout = trimmed or stdout
    if not stdout.strip(_JSON_WS.encode()):
        return ABSTAIN
    if protocol == "gemini" and stdout.lstrip(_JSON_WS.encode()).startswith(b'"'):
        try:
            inner = json.loads(stdout.decode("utf-8"))
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, str):  # Gemini parses a JSON string once more (0.61.0, measured)
            stdout = inner.encode("utf-8", "surrogatepass")
    obj = strict_json(stdout)
    if obj is None:
        return None
    if protocol == "gemini":
        return _gemini(obj, strict=True)
    if protocol == "codex":
        meaning = _claude_like(obj, _CODEX_SPECIFIC, ("allow", "deny", "ask"), strict=True)
        return DENY if meaning == ASK else meaning  # Codex cannot ask: ask is a deny
    return _claude_like(obj, _CLAUDE_SPECIFIC, ("allow", "deny", "ask", "defer"), strict=True)


def _claude_host(out, err, code):
    text = out.decode("utf-8", "replace").strip(_JS_WS)  # trimmed as JavaScript does (2.1.332, measured)
    if text.startswith("{"):
        first = strict_json(text.splitlines()[0].encode())
        if first is not None and first.get("async") is True:
            return RUN  # backgrounded: counts as success
        obj = strict_json(text.encode())
        meaning = None if obj is None else _claude_like(obj, _CLAUDE_SPECIFIC, ("allow", "deny", "ask", "defer"), strict=False)
        if meaning is None:
            return RUN  # invalid JSON is checked before the exit code: a non-blocking error
        if meaning == DENY or code == 2:
            return BLOCK
        if code != 0:
            return RUN
        return ASK if meaning == ASK else RUN
    return BLOCK if code == 2 else RUN  # any other code: a non-blocking error


def _gemini_text(data):
    """`stdout.trim()` / `stderr.trim()` of Gemini CLI's hook runner -> bytes."""
    return data.decode("utf-8", "replace").strip(_JS_WS).encode("utf-8")


def _gemini_host(out, err, code):
    # HookRunner.executeCommandHook parses `stdout.trim() || stderr.trim()` (0.61.0)
    text = _gemini_text(out) or _gemini_text(err)
    obj = strict_json(text)
    if obj is None:
        try:
            inner = json.loads(text.decode("utf-8"))
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, str):  # a JSON string is parsed once more
            obj = strict_json(inner.encode("utf-8"))
    if obj is not None:  # JSON on stdout (or, with none there, on stderr) wins whatever the exit code
        decision = obj.get("decision")
        if decision in ("deny", "block") or obj.get("continue") is False:
            return BLOCK
        return ASK if decision == "ask" else RUN  # no decision: fail open
    if code == 2:
        return BLOCK if (out.strip() or err.strip()) else RUN  # exit 2, nothing said: fail open
    return RUN  # any other code: a warning


def _codex_host(out, err, code):
    if code == 0:  # JSON is read only on exit 0
        if not out.strip():
            return RUN
        obj = strict_json(out)
        meaning = None if obj is None else _claude_like(obj, _CODEX_SPECIFIC, ("allow", "deny", "ask"), strict=True, honour_continue=False)
        if meaning == DENY:
            return BLOCK
        # "ask" is not supported: the tool runs (measured on the real CLI, 0.169.0);
        # an unsupported key, even on a deny: a failure
        return RUN
    if code == 2 and err.strip():
        return BLOCK
    return RUN  # failure never blocks


def _kiro_host(out, err, code):
    return BLOCK if code == 2 else RUN  # a timeout (-1) or 127: no opinion


_HOSTS = {"claude": _claude_host, "gemini": _gemini_host, "codex": _codex_host, "kiro": _kiro_host}


def host_verdict(protocol, stdout, stderr, code, timed_out=False):
    """What the host does with the command it ran -> run / block / ask. A command the
    host had to kill at its own timeout fails open on every host."""
    if timed_out:
        return RUN
    return _HOSTS[protocol](stdout, stderr, code)
