"""Host protocols: what each host needs to block, and what a hook's answer means to it.

Facts from the shipped hosts (docs/command-hooks.md): Claude Code and Codex read
Claude-style JSON, Gemini CLI its own, kiro_crew only the exit code. Stdlib-free
beyond ``failsecure._fastjson`` and the result types (``failsecure.verdict``, which the
runner's decision imports on every run anyway): the hot path.
"""

from failsecure._fastjson import dumps as _dumps
from failsecure._fastjson import loads as _loads
from failsecure.verdict import Action, Invalid

TYPE_CHECKING = False  # not typing's: importing typing costs every hook run
if TYPE_CHECKING:
    from typing import Any

#: the actions ``judge`` answers, as plain strings: the values of ``verdict.Action`` (the
#: one declaration of the words)
ALLOW, DENY, ASK, ABSTAIN = Action.ALLOW.value, Action.DENY.value, Action.ASK.value, Action.ABSTAIN.value
_JSON_WS = " \t\n\r"
_BOM = "\ufeff"  # a UTF-8 byte-order mark (EF BB BF), as decoded
# what JavaScript's String.prototype.trim strips (ECMAScript WhiteSpace + LineTerminator)
_JS_WS = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"

# Every event that gates a tool call (or a command), per host, with the host release it
# was read from. The ONE table: `hook install` wraps handlers of exactly these events
# and the runner treats exactly these as gating (everything else is advisory). Matched
# case-insensitively (Kiro CLI writes ``preToolUse``).
GATING_EVENTS = {
    # Claude Code 2.1.332 (claude-agent-sdk 0.2.189): PreSkillShellCommand gates the
    # shell command a skill or slash command embeds (its schema: tool_name Bash or
    # PowerShell, tool_input.command); PermissionRequest only answers a permission
    # prompt (a failure shows the prompt as usual), so it does not gate.
    "claude": (("PreToolUse", "2.1.100"), ("PreSkillShellCommand", "2.1.332")),
    "codex": (("PreToolUse", "0.169.0"),),
    "gemini": (("BeforeTool", "0.61.0"),),
    "kiro": (("PreToolUse", "kiro_crew"),),
    "pool": (("PreToolUse", "seed"),),
}


def gating_events(*hosts):
    """-> frozenset of the lower-cased gating event names of `hosts` (the table above)."""
    return frozenset(name.lower() for host in hosts for name, _since in GATING_EVENTS[host])


# Claude Code's hook answer schema, read from the pinned release's own zod schema
# (2.1.332; tests/command_hooks/claude_code checks it against the binary): the
# top-level keys and, per gating event, the hookSpecificOutput keys.
CLAUDE_TOP_KEYS = frozenset(
    {"continue", "suppressOutput", "stopReason", "decision", "reason", "systemMessage", "terminalSequence",
     "hookSpecificOutput"}
)
CLAUDE_SPECIFIC_KEYS = {
    "PreToolUse": frozenset(
        {"hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput", "additionalContext",
         "permissionDisplay"}
    ),
    "PreSkillShellCommand": frozenset(
        {"hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput"}
    ),
}
# Unknown keys, per family (Claude's schema strips keys it does not define, so the
# answer the host acts on is the known keys alone):
# - keys the host acts on outside the schema (``async``: the hook goes to the
#   background, a success) and keys named like a decision (a known decision key in
#   another case, or a verdict word): the hook meant to decide and the host will not
#   read it -> invalid (deny);
# - any other unknown key: dropped by the host, so it changes nothing -> ignored, the
#   answer is judged on its known keys and passed on byte for byte.
_DECISION_KEYS = frozenset(
    {"decision", "continue", "permissiondecision", "result", "action", "verdict", "permission", "block", "allow",
     "deny", "approve", "ask", "async", "asynctimeout", "asyncrewake"}
)


# ``Invalid`` (``failsecure.verdict``): the hook answered something the host would not
# honour (category ``invalid``); ``why`` says which rule, in fixed words.


def _check_keys(obj, allowed, what, unknown="invalid"):
    for key in obj:
        if key not in allowed:
            lowered = key.lower()
            if unknown == "invalid" or lowered in _DECISION_KEYS or any(lowered == k.lower() for k in allowed):
                # a known key in another case (``hookspecificoutput``) is one the host
                # will not read either: the hook meant it
                raise Invalid(why="unknown key in %s" % what)


def _check_type(obj, key, kind):
    if key in obj and not isinstance(obj[key], kind):
        raise Invalid(why="wrong type for %s" % key)


def parse_answer(text):
    """stdout of an exit-0 hook -> dict, or None for an empty answer (JSON whitespace
    only: a form feed or a no-break space is junk, not silence)."""
    if not text.strip(_JSON_WS):
        return None
    try:
        # a key given twice is read differently by each host's parser (JSON.parse: the
        # last; others: the first, or the answer is rejected): the hook's meaning is not
        # one answer, so it is invalid (deny outranks allow in any order)
        obj = _loads(text, unique=True)
    except ValueError:
        raise Invalid(why="stdout is not JSON with distinct keys") from None
    if not isinstance(obj, dict):
        raise Invalid(why="stdout is not a JSON object")
    return obj


class Protocol:
    """One host's wire protocol for a command hook."""

    name = ""
    framework = ""
    gating_events: frozenset = frozenset()  # lower-cased hook_event_name values that gate a tool call
    default_event: "str | None" = None  # the gating event's name on the wire
    default_timeout = 30.0  # seconds, used when neither --timeout nor config says otherwise
    # seconds the host gives a hook whose settings entry sets no timeout, where `hook
    # install` writes none for it (see host_capped); None: install always writes one
    host_default_timeout: "float | None" = None

    def deny(self, reason, event):
        """-> (stdout bytes, stderr bytes, exit code) that make the host block: the
        table "What a fail-closed runner must print so each host blocks"."""
        return b"", (reason + "\n").encode(), 2

    # Whether the host parses `stdout.trim()`: JavaScript's String.prototype.trim, which
    # strips U+FEFF (a byte-order mark), U+00A0, a form feed and the other ECMAScript
    # white space at both ends. Measured on the real CLIs (tests/command_hooks/*/
    # test_answer_*.py): Claude Code 2.1.332 and Gemini CLI 0.61.0 read a deny after a
    # byte-order mark; Codex CLI 0.169.0 does not (the tool runs: the answer is lost).
    trims = False
    # bytes of an exit-0 hook's stderr the runner keeps; None: the runner's default
    # (process.STDERR_CAP, a reason only). More where the host reads an answer there.
    stderr_cap: "int | None" = None

    def judge(self, stdout, event):
        """Classify an exit-0 answer of a gating hook -> (action, reason).

        action: allow / ask / abstain (the hook's bytes go to the host unchanged) or
        deny (re-emitted in the canonical deny shape with ``reason``, which may be
        None). Raises Invalid when the host would not honour the answer."""
        return ABSTAIN, None

    def answer_text(self, stdout):
        """stdout bytes of an exit-0 hook -> the text the host parses as its answer
        (raises ValueError when it is not UTF-8). Where the host trims, the answer is
        judged trimmed, so a BOM allow is not a false deny; a blank answer stays one
        only when it is JSON white space after at most one leading byte-order mark
        (U+00A0 or a form feed alone is junk, as before)."""
        text = stdout.decode("utf-8")
        if self.trims:
            if text.startswith(_BOM):
                text = text[1:]
            trimmed = text.strip(_JS_WS)
            if trimmed:
                return trimmed
        return text

    def hook_argv(self, argv, payload):
        """The argv the hook runs as under this host (`payload`: the host's input, a dict
        or None): as given, except where the host rewrites the command text itself."""
        return argv

    def judge_exit0(self, stdout, stderr, event, stderr_cut=False):
        """judge() on what the host reads of an exit-0 hook's output (bytes).
        `stderr_cut`: stderr went past ``stderr_cap``, only its start is in `stderr`."""
        return self.judge(self.answer_text(stdout), event)


class JsonProtocol(Protocol):
    """What the Claude-style and Gemini answers share: one JSON object, known keys of
    known types, an optional ``hookSpecificOutput`` object for this event, and
    ``continue: false`` = stop (a deny)."""

    top_keys = frozenset(
        {"continue", "suppressOutput", "stopReason", "decision", "reason", "systemMessage", "hookSpecificOutput"}
    )
    specific_keys: frozenset = frozenset()
    event_required = True  # hookSpecificOutput must name the event
    # An unknown key: "invalid" (the host rejects the answer, so the runner denies) or
    # "ignore" (the host drops the key; only a decision key in another case is invalid).
    unknown_keys = "invalid"

    def specific_keys_for(self, event):
        return self.specific_keys

    def event_names(self, event):
        """The hookEventName values hookSpecificOutput may carry for `event`."""
        return (event or self.default_event,)

    def judge(self, stdout, event):
        obj = parse_answer(stdout)
        if obj is None:
            return ABSTAIN, None
        _check_keys(obj, self.top_keys, "answer", self.unknown_keys)
        _check_type(obj, "continue", bool)
        _check_type(obj, "suppressOutput", bool)
        for key in ("stopReason", "reason", "systemMessage", "terminalSequence"):
            _check_type(obj, key, str)
        specific = None
        if "hookSpecificOutput" in obj:
            specific = obj["hookSpecificOutput"]
            if not isinstance(specific, dict):
                raise Invalid(why="hookSpecificOutput is not an object")
            _check_keys(specific, self.specific_keys_for(event), "hookSpecificOutput", self.unknown_keys)
            if (self.event_required or "hookEventName" in specific) and specific.get("hookEventName") not in self.event_names(event):
                raise Invalid(why="wrong hookEventName")
            _check_type(specific, "additionalContext", str)
        action, reason = self.own_decision(obj, specific or {}, event)
        if action != DENY and obj.get("continue") is False:
            # "stop": the tool does not run. Said in the canonical deny shape, never
            # passed on raw (Codex, for one, does not honour it).
            return DENY, obj.get("stopReason")
        return action, reason

    def own_decision(self, obj, specific, event=None):
        raise NotImplementedError


class ClaudeProtocol(JsonProtocol):
    """Claude Code (also poolside Pool and Kiro CLI, which are Claude-compatible)."""

    name = "claude"
    framework = "claude-code"
    gating_events = gating_events("claude", "pool")
    default_event = "PreToolUse"
    trims = True  # Claude Code 2.1.332 (measured); a padded allow / ask is passed on byte for byte
    top_keys = CLAUDE_TOP_KEYS
    specific_keys = CLAUDE_SPECIFIC_KEYS["PreToolUse"]
    unknown_keys = "ignore"
    decisions = ("approve", "block")
    permission_decisions: tuple = ("allow", "deny", "ask", "defer")

    def specific_keys_for(self, event):
        return CLAUDE_SPECIFIC_KEYS.get(event, self.specific_keys)

    def event_names(self, event):
        if event == "PreSkillShellCommand":  # the CLI reads a PreToolUse answer there too
            return ("PreSkillShellCommand", "PreToolUse")
        return (event or self.default_event,)

    def deny(self, reason, event):
        answer = {"decision": "block", "reason": reason}
        if event in CLAUDE_SPECIFIC_KEYS:
            answer["hookSpecificOutput"] = {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        return (_dumps(answer) + "\n").encode(), (reason + "\n").encode(), 2

    def own_decision(self, obj, specific, event=None):
        decision = obj.get("decision")
        if "decision" in obj and decision not in self.decisions:
            raise Invalid(why="unknown decision")
        permission = specific.get("permissionDecision")
        if "permissionDecision" in specific and permission not in self.permission_decisions:
            raise Invalid(why="unknown permissionDecision")
        _check_type(specific, "permissionDecisionReason", str)
        _check_type(specific, "updatedInput", dict)
        if decision == "block" or permission == "deny":
            return DENY, specific.get("permissionDecisionReason") or obj.get("reason")
        if event == "PreSkillShellCommand" and (permission in ("ask", "defer") or "updatedInput" in specific):
            # Nobody can be asked there: the CLI blocks ask, defer and any updatedInput.
            # Said as the deny it is, so the audit records what the host does.
            return DENY, specific.get("permissionDecisionReason") or obj.get("reason")
        if permission == "ask":
            return ASK, None
        if decision == "approve" or permission == "allow":
            return ALLOW, None
        return ABSTAIN, None



class CodexProtocol(ClaudeProtocol):
    """Codex CLI: Claude-compatible wire types; a deny is exit 2 + non-empty stderr."""

    name = "codex"
    framework = "codex"
    gating_events = gating_events("codex")
    trims = False  # Codex 0.169.0 does not parse a BOM answer (measured): a BOM allow is lost, a BOM deny too
    top_keys = JsonProtocol.top_keys
    specific_keys = frozenset({"hookEventName", "permissionDecision", "permissionDecisionReason"})
    unknown_keys = "invalid"  # Codex rejects an answer with a key it does not know
    permission_decisions = ("allow", "deny", "ask")

    def specific_keys_for(self, event):
        return self.specific_keys

    def event_names(self, event):
        return (event or self.default_event,)

    def deny(self, reason, event):
        # JSON is read only on exit 0, and a JSON deny carrying a key Codex does
        # not support fails open: say it with exit 2 and stderr only.
        return b"", (reason + "\n").encode(), 2

    def own_decision(self, obj, specific, event=None):
        action, reason = ClaudeProtocol.own_decision(self, obj, specific, event)
        if action == ASK:
            # Codex cannot ask: it runs the tool on "ask" (measured on 0.169.0, `codex
            # exec`). On a host that cannot ask, ask is a deny.
            return DENY, specific.get("permissionDecisionReason") or obj.get("reason")
        return action, reason


class GeminiProtocol(JsonProtocol):
    name = "gemini"
    framework = "gemini-cli"
    gating_events = gating_events("gemini")
    default_event = "BeforeTool"
    specific_keys = frozenset({"hookEventName", "tool_input", "additionalContext"})
    event_required = False
    trims = True  # `stdout.trim()` before JSON.parse (0.61.0, HookRunner.executeCommandHook; measured)
    # Gemini reads ALL of stderr (`stderr += data` to the end): an answer there is kept
    # up to the size an answer on stdout may have (process.STDOUT_CAP, 1 MiB)
    stderr_cap = 1024 * 1024

    def hook_argv(self, argv, payload):
        # Gemini CLI 0.61.0 (HookRunner.expandCommand) replaces $GEMINI_PROJECT_DIR, ...
        # in the command text by shell-quoted words before its shell runs it; the
        # prelude keeps them out of Gemini's reach (settings.GEMINI_EXPANDED), so the
        # original `<shell> -c <command>` gets the same replacement here
        if len(argv) == 3 and argv[1] == "-c" and "$" in argv[2]:
            return [argv[0], "-c", gemini_expand(argv[2], payload)]
        return argv

    def judge_exit0(self, stdout, stderr, event, stderr_cut=False):
        # Gemini CLI 0.61.0 (HookRunner.executeCommandHook) parses `stdout.trim() ||
        # stderr.trim()`: with nothing on stdout, a JSON object on stderr IS the hook's
        # answer (a deny there blocks the tool), so it is judged as one. Plain text on
        # stderr is Gemini's "allow" with the text as a systemMessage: no opinion, as an
        # empty answer (the default decision is allow either way).
        text = self.answer_text(stdout)
        if not text.strip(_JSON_WS):
            if stderr_cut and _may_open_an_answer(stderr):
                # Gemini parses the whole stderr, the runner has only its start: an
                # answer there (a deny, say) is one the runner cannot read -> invalid
                raise Invalid(why="stderr answer past the cap")
            answer = _gemini_stderr_answer(stderr)
            if answer is not None:
                return self.judge(answer, event)
        return self.judge(_gemini_unwrap(text), event)

    def deny(self, reason, event):
        answer = _dumps({"decision": "deny", "reason": reason})
        return (answer + "\n").encode(), (reason + "\n").encode(), 2

    def own_decision(self, obj, specific, event=None):
        _check_type(specific, "tool_input", dict)
        decision = obj.get("decision")
        if "decision" in obj and decision not in ("allow", "ask", "deny", "block"):
            raise Invalid(why="unknown decision")
        if decision in ("deny", "block"):
            return DENY, obj.get("reason")
        if decision == "ask":
            return ASK, None
        if decision == "allow":
            return ALLOW, None
        return ABSTAIN, None


def _shell_quote(arg):
    """Gemini CLI's escapeShellArg(arg, "bash"): "" for an empty arg, else shell-quote's
    quote([arg]) (the bundled node_modules/shell-quote/quote.js, \\s as JavaScript's)."""
    import re

    if not arg:
        return ""
    space = "[%s]" % re.escape(_JS_WS + "\u2028\u2029\ufeff")
    if re.search(r'["\\]|' + space, arg) and "'" not in arg:
        return "'" + arg + "'"
    if re.search("[\"']|" + space, arg):
        return '"' + re.sub(r'(["\\$`!])', r"\\\1", arg) + '"'
    return re.sub(r"([A-Za-z]:)?([#!\"$&'()*,:;<=>?@\[\\\]^`{|}])", lambda m: (m.group(1) or "") + "\\" + m.group(2), arg)


def gemini_expand(command, payload):
    """`command` as Gemini CLI 0.61.0's HookRunner.expandCommand leaves it: each
    variable replaced, in its order, by the shell-quoted value (the cwd and session id
    of the host's input, the plans folder Gemini puts in the hook's environment)."""
    import os

    payload = payload if isinstance(payload, dict) else {}

    def value(key, env):
        found = payload.get(key) if key else None
        return found if isinstance(found, str) else os.environ.get(env, "")

    cwd = _shell_quote(value("cwd", "GEMINI_PROJECT_DIR"))
    for name, text in (("GEMINI_PROJECT_DIR", cwd), ("GEMINI_CWD", cwd), ("GEMINI_PLANS_DIR", _shell_quote(value(None, "GEMINI_PLANS_DIR"))),
                       ("GEMINI_SESSION_ID", _shell_quote(value("session_id", "GEMINI_SESSION_ID"))), ("CLAUDE_PROJECT_DIR", cwd)):
        command = command.replace("$" + name, text)
    return command


def _gemini_unwrap(text):
    """The answer text Gemini CLI parses out of `text`: a JSON string is parsed once
    more (`if (typeof parsed === "string") parsed = JSON.parse(parsed)`, stdout and
    stderr alike), so its contents are the answer; anything else is as it is."""
    if not text.lstrip(_JSON_WS).startswith('"'):
        return text
    try:
        value = _loads(text)
    except ValueError:
        return text  # not JSON: judged (invalid) as it is
    return value if isinstance(value, str) else text


def _may_open_an_answer(stderr):
    """True when the start of stderr, as Gemini trims it, could begin the JSON object
    (or the JSON string holding one) it would read: blank, `{` or `"`. Anything else
    makes the whole text plain (JSON.parse fails on its first character)."""
    text = stderr.decode("utf-8", "replace").lstrip(_JS_WS)
    return not text or text[0] in "{\""


def _gemini_stderr_answer(stderr):
    """The text of the JSON object Gemini CLI reads from an exit-0 hook's stderr, or
    None when it reads none there: JSON.parse of the trimmed text (a JSON string is
    parsed once more), kept only when that is an object (not an array: no decision)."""
    text = stderr.decode("utf-8", "replace").strip(_JS_WS)
    if not text:
        return None
    try:
        value = _loads(text)
        if isinstance(value, str):
            text = value
            value = _loads(text)
    except ValueError:
        return None  # plain text
    return text if isinstance(value, dict) else None


class KiroProtocol(Protocol):
    """kiro_crew script hooks: exit 2 blocks with stderr as the reason; stdout is not a verdict."""

    name = "kiro"
    framework = "kiro_crew"
    gating_events = gating_events("kiro")
    default_event = "PreToolUse"
    # Kiro CLI's timeout for a hook that sets no ``timeout_ms`` (kiro.dev/docs/cli/hooks:
    # 30,000 ms), which `hook install` leaves unset: the runner's 30 s would answer after it.
    host_default_timeout = 30.0


# The host's own clock. A host that times a hook out fails open (Claude Code, Codex,
# Gemini CLI), whatever the runner would have said, so the runner must answer before
# the host's clock runs out -- with the host timeout the settings file says NOW, not
# the one `hook install` wrote (a user may lower it later). `hook install` puts where
# to read it into the record it already carries on the launch line.
HOST_SETTINGS_CAP = 4 << 20  # bytes of a settings file read to find the host timeout
HOST_MARGIN_MIN, HOST_MARGIN_MAX, HOST_MARGIN_SHARE = 0.5, 2.0, 0.2
HOST_FLOOR = 0.05  # the shortest deadline the runner keeps for the hook


def host_margin(host_seconds):
    """Seconds the runner keeps between its own deadline and the host's: the runner's
    start-up, the host's shell and the deny being written all come out of it."""
    return max(HOST_MARGIN_MIN, min(HOST_MARGIN_MAX, host_seconds * HOST_MARGIN_SHARE))


def _decode_record(token):
    import binascii

    text = token.replace("-", "+").replace("_", "/")
    try:
        record = _loads(binascii.a2b_base64(text + "=" * (-len(text) % 4)).decode("utf-8"))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def _read_settings(path):
    """The settings file as text, or None: a regular file only (never a FIFO, a device
    or anything that could block), at most HOST_SETTINGS_CAP bytes, opened non-blocking."""
    import os
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError, TypeError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > HOST_SETTINGS_CAP:
            return None
        data = os.read(fd, HOST_SETTINGS_CAP + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _find_handlers(node, token, found, depth=0):
    """Every hook handler (a dict) whose command or args carry ``token``, in document
    order, appended to `found`. A wrapped hook copied to a second matcher group (with
    its own timeout) carries the same token: the host runs each copy by its own clock."""
    if depth > 8:
        return found
    if isinstance(node, dict):
        command = node.get("command")
        args = node.get("args")
        if (isinstance(command, str) and token in command) or (
            isinstance(args, list) and any(isinstance(arg, str) and token in arg for arg in args)
        ):  # an exec-form launch carries it as one argument, the prelude in exec form inside its `-c` text
            found.append(node)
            return found
        children: Any = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return found
    for child in children:
        if isinstance(child, (dict, list)):
            _find_handlers(child, token, found, depth + 1)
    return found


def _find_handler(node, token, depth=0):
    """The first hook handler (a dict) whose command or args carry ``token``."""
    found = _find_handlers(node, token, [], depth)
    return found[0] if found else None


# a string (its closing quote optional: a token never fails, so the scan stays linear),
# a line comment, a block comment (unclosed: to the end, as strip-json-comments does)
_COMMENT_TOKENS = r'"[^"\\]*(?:\\.[^"\\]*)*"?|//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/)?'
# what strip-json-comments keeps of a comment (it blanks /\S/ only: JavaScript's white
# space, which JSON.parse then refuses but for space, tab, CR and LF: a comment holding a
# no-break space leaves a file Gemini CLI cannot read, and ignores)
_JS_SPACE = frozenset("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                      "\u2028\u2029\u202f\u205f\u3000\ufeff")
COMMENTED_CAP = 256 * 1024  # bytes of a settings file read again without its comments


def _strip_json_comments(text):
    """`text` with its ``//`` and ``/* */`` comments outside strings blanked, as the
    settings loaders of Gemini CLI (strip-json-comments) read a settings file. Only
    used when the strict parse failed, on a file of at most COMMENTED_CAP."""
    import re

    def blank(match):
        token = match.group()
        return token if token[0] == '"' else "".join(c if c in _JS_SPACE else " " for c in token)

    return re.sub(_COMMENT_TOKENS, blank, text)


def _settings_document(text):
    try:
        return _loads(text)
    except ValueError:
        if "/" not in text or len(text) > COMMENTED_CAP:
            raise
        return _loads(_strip_json_comments(text))


def _handler_seconds(handler, key, unit, default):
    value = handler.get(key) if isinstance(key, str) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        value = default  # the host's own default applies
        unit = 1
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    if isinstance(unit, bool) or not isinstance(unit, (int, float)) or not unit > 0:
        return None
    try:
        return float(value) / unit
    except OverflowError:  # an int too large for a float (JSON.parse: Infinity): no clock from this copy, the others' stand
        return None


def host_timeout(token):
    """-> the host's own timeout for this hook, in seconds, read from the settings file
    named in the record ``token`` now; None when the record names none (an older
    install) or the file cannot be read. Never raises."""
    try:
        record = _decode_record(token) if isinstance(token, str) and token else None
        host = record.get("host") if record is not None else None
        if not isinstance(host, dict) or not isinstance(host.get("settings"), str):
            return None
        key, unit, default = host.get("key"), host.get("unit"), host.get("default")
        text = _read_settings(host["settings"])
        if text is None:
            return None
        if text.startswith("\ufeff"):
            # Claude Code reads a settings file after a UTF-8 byte-order mark (an editor's):
            # its clock there is the host's. (A host that cannot read such a file does not
            # run the hook from it: a clock read from it changes nothing.)
            text = text[1:]
        handlers = _find_handlers(_settings_document(text), token, [])
        if not handlers:
            return None  # not where install wrote it: moved or edited by hand
        # the shortest clock of every copy of this hook: the runner cannot tell which
        # copy the host is running, and answering late for one is the host's fail-open
        seconds = [_handler_seconds(handler, key, unit, default) for handler in handlers]
        known = [value for value in seconds if value is not None]
        return min(known) if known else None
    except Exception:  # noqa: BLE001 - a host field that is not a number: no deadline from it
        return None


def record_path(token):
    """The installing user's PATH entries the record carries (``hook install``), or None.
    Never raises."""
    try:
        record = _decode_record(token) if isinstance(token, str) and token else None
        path = record.get("path") if record is not None else None
        if isinstance(path, list) and all(isinstance(part, str) for part in path):
            return path
    except Exception:  # noqa: BLE001 - a record that cannot be read: the hook's own PATH stands
        pass
    return None


def record_steering(token):
    """The installing user's values of process.STEERING the record carries (``hook
    install``), or None (an earlier install, or a record that cannot be read: the hook's
    environment as it is). Never raises."""
    try:
        from failsecure.runner.process import STEERING

        record = _decode_record(token) if isinstance(token, str) and token else None
        env = record.get("env") if record is not None else None
        if isinstance(env, dict) and all(k in STEERING and isinstance(v, str) for k, v in env.items()):
            return env
    except Exception:  # noqa: BLE001 - a record that cannot be read: the hook's own environment stands
        pass
    return None


def _wrote_no_timeout(token):
    """True when the record says `hook install` wrote no host timeout for this hook and
    names no settings file to read one from: the host's own default applies to it."""
    try:
        record = _decode_record(token) if isinstance(token, str) and token else None
        if record is None or "host" in record:
            return False
        wrote = record.get("wrote")
        return isinstance(wrote, dict) and not any(key in wrote for key in ("timeout", "timeout_ms"))
    except Exception:  # noqa: BLE001 - a record that cannot be read: the launch line's deadline stands
        return False


def host_capped(timeout, token, host_default=None):
    """The runner's deadline (seconds) kept below the host's own clock with margin.

    ``host_default``: the protocol's ``host_default_timeout``; it is the host's clock for
    a hook whose record says install wrote no timeout (Kiro CLI's 30 s default: a
    record of any release, the ones before this check included)."""
    seconds = host_timeout(token)
    if seconds is None and host_default and _wrote_no_timeout(token):
        seconds = float(host_default)
    if seconds is None:
        return timeout
    return min(timeout, max(seconds - host_margin(seconds), HOST_FLOOR))


PROTOCOLS = {p.name: p for p in (ClaudeProtocol(), GeminiProtocol(), CodexProtocol(), KiroProtocol())}


def universal_deny(reason):
    """A deny every host reads as a block, for when the protocol is unknown: claude reads
    decision "block", gemini its alias "block"; codex and kiro read exit 2 + stderr."""
    return (_dumps({"decision": "block", "reason": reason}) + "\n").encode(), (reason + "\n").encode(), 2
