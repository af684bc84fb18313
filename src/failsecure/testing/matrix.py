"""The conformance kit's fault matrix: the cases (``cases``), the hostile objects they use,
and ``run_case``, which runs one case through a ``Harness`` in one column (``failsecure``:
failsecure active, asserted; ``upstream``: the release as published, reported) and says
``pass``, ``escape``, ``false deny``, ``wrong branch``, ``leak``, ``wrong arguments`` or
``n/a``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .harness import Harness, NotSupported, Seen

__all__ = ("Case", "HostileAnswer", "HostileDict", "HostileError", "RESULTS", "SELF_TEST", "cases", "junk_case", "run_case",
           "self_test_cases")


SECRET = "sk-conformance-secret-5150"
DEADLINE = 0.3  # seconds: the kit's config deadline per gate
HANG = 1.0  # seconds a hanging gate waits at most (upstream has no deadline)
HARMLESS = {"command": "harmless"}
FORBIDDEN = "forbidden"


class HostileMeta(type):
    """A metaclass whose ``__name__`` raises: ``type(exc).__name__`` is hostile."""

    @property
    def __name__(cls):  # type: ignore[override]
        raise RuntimeError("hostile __name__")


class HostileError(Exception, metaclass=HostileMeta):
    """An exception whose every inspection misbehaves."""

    def __str__(self):
        raise RuntimeError("hostile __str__")

    def __repr__(self):
        raise RuntimeError("hostile __repr__")

    def __eq__(self, other):
        raise RuntimeError("hostile __eq__")

    def __hash__(self):
        raise RuntimeError("hostile __hash__")

    def __del__(self):
        raise RuntimeError("hostile __del__")


class HostileAnswer:
    """An answer whose truth, equality, attributes and items all raise."""

    def __bool__(self):
        raise RuntimeError("hostile __bool__")

    def __eq__(self, other):
        raise RuntimeError("hostile __eq__")

    __hash__ = None  # type: ignore[assignment]

    def __getattr__(self, name):
        raise RuntimeError("hostile attribute")

    def __getitem__(self, key):
        raise RuntimeError("hostile item")

    def __iter__(self):
        raise RuntimeError("hostile iter")

    def __len__(self):
        raise RuntimeError("hostile len")


class HostileDict(dict):
    """A dict subclass whose lookups raise (for frameworks whose answers are dicts)."""

    def get(self, *a, **k):
        raise RuntimeError("hostile get")

    def __getitem__(self, key):
        raise RuntimeError("hostile item")

    def items(self):
        raise RuntimeError("hostile items")


@dataclass
class Case:
    name: str
    #: (label, kind, is_async): kinds below; gates are added in this order
    gates: tuple
    #: "deny" or "run"
    expect: str
    #: the failure category the audit must show for a deny ("" = an explicit deny)
    failure: str = ""
    exception_type: str = ""
    arguments: dict = field(default_factory=lambda: dict(HARMLESS))
    #: what the tool must have run with (for "run"), default the arguments
    ran_with: Optional[dict] = None
    config: str = ""
    needs: tuple = ()  # "ask", "rewrite", "async", "bypass" (the call takes ``Harness.bypass``)
    junk: Any = None
    plugin: Optional[str] = None  # a failsecure_pre_tool_call plugin gate: "raise" | "allow"


def cases(harness: Harness) -> list[Case]:
    A = False
    cases = [
        Case("allow", (("allowing", "allow", A),), "run"),
        Case("no opinion", (("silent", "abstain", A),), "run"),
        Case("policy allows harmless", (("policy", "policy", A),), "run"),
        Case("explicit deny", (("denying", "deny", A),), "deny"),
        Case("policy denies forbidden", (("policy", "policy", A),), "deny", arguments={"command": FORBIDDEN}),
        Case("raise RuntimeError (secret in args and message)", (("raising", "raise", A),), "deny", "raised", "RuntimeError",
             arguments={"command": f"harmless {SECRET}"}),
        Case("hang (sync)", (("hanging", "hang", A),), "deny", "timeout"),
        Case("deny then allow", (("denying", "deny", A), ("allowing", "allow", A)), "deny"),
        Case("allow then deny", (("allowing", "allow", A), ("denying", "deny", A)), "deny"),
        Case("allow then raise", (("allowing", "allow", A), ("raising", "raise", A)), "deny", "raised", "RuntimeError"),
        Case("raise then allow", (("raising", "raise", A), ("allowing", "allow", A)), "deny", "raised", "RuntimeError"),
        Case("missing required gate", (("allowing", "allow", A),), "deny", "missing", config="required"),
        Case("required gate present", (("allowing", "allow", A),), "run", config="required-present"),
        Case("invalid config", (("allowing", "allow", A),), "deny", "invalid", config="invalid"),
        Case("plugin gate raises", (("allowing", "allow", A),), "deny", "raised", "RuntimeError", plugin="raise"),
        Case("plugin gate allows", (("allowing", "allow", A),), "run", plugin="allow"),
        Case("plugin gate denies forbidden", (("allowing", "allow", A),), "deny", plugin="policy",
             arguments={"command": FORBIDDEN}),
        Case("rewrite smuggles forbidden after approval", (("policy", "policy", A), ("rewriter", "rewrite-forbidden", A)),
             "deny", needs=("rewrite",)),
        Case("harmless rewrite runs", (("policy", "policy", A), ("rewriter", "rewrite-harmless", A)), "run",
             ran_with={"command": "harmless rewritten"}, needs=("rewrite",)),
        Case("ask then deny", (("asking", "ask", A), ("denying", "deny", A)), "deny", needs=("ask",)),
        Case("deny then ask", (("denying", "deny", A), ("asking", "ask", A)), "deny", needs=("ask",)),
        Case("raise (async)", (("raising", "raise", True),), "deny", "raised", "RuntimeError", needs=("async",)),
        Case("hang (async)", (("hanging", "hang-async", True),), "deny", "timeout", needs=("async",)),
        Case("allow (async)", (("allowing", "allow", True),), "run", needs=("async",)),
        Case("deny (async) after allow", (("allowing", "allow", A), ("denying", "deny", True)), "deny", needs=("async",)),
        # the tool boundary: the call reaches the tool by a path the dispatcher never saw
        Case("ungoverned path (a gate registered)", (("policy", "policy", A),), "deny", "ungoverned", needs=("bypass",)),
        Case("ungoverned path (a plugin gate)", (), "deny", "ungoverned", plugin="allow", needs=("bypass",)),
        Case("ungoverned path (no gate)", (), "run", needs=("bypass",)),
        Case("ungoverned path (ungoverned = audit)", (("policy", "policy", A),), "run", config="ungoverned-audit",
             needs=("bypass",)),
    ]
    try:
        junk = list(harness.junk())
    except NotImplementedError:
        junk = []
    for label, value in junk:
        cases.append(junk_case(label, value))
    # last: upstream, these can take the whole process down with them (a SystemExit that
    # ends the run, an exception whose repr breaks asyncio's own bookkeeping)
    cases.append(Case("raise SystemExit", (("exiting", "exit", A),), "deny", "raised", "SystemExit"))
    cases.append(Case("raise hostile exception", (("hostile", "hostile-raise", A),), "deny", "raised"))
    return cases


def junk_case(label: str, value: Any) -> Case:
    """The row of a junk answer ``value``: one gate answering it, denied as invalid."""
    return Case(f"junk: {label}", (("junky", "junk", False),), "deny", "invalid", junk=value)


#: The rows ``Adapter.self_test`` (``failsecure doctor``) runs in production, each as the
#: only gate of one call through the framework's real dispatcher: (the label doctor shows,
#: the row's name; "junk: ..." is the adapter's own ``self_test_junk``). Each is judged as
#: the row is here: denied for its failure category without the secret it carries, or run.
SELF_TEST = (
    ("raising gate", "raise RuntimeError (secret in args and message)"),
    ("hanging gate", "hang (sync)"),
    ("junk gate", "junk: self-test"),
    ("allowing gate", "no opinion"),
)


def self_test_cases(junk: Any) -> list[tuple[str, Case]]:
    """``SELF_TEST``'s rows, the junk one answering ``junk``: (label, Case)."""
    rows = {case.name: case for case in cases(Harness())}
    rows["junk: self-test"] = junk_case("self-test", junk)
    return [(label, rows[name]) for label, name in SELF_TEST]


class _Gates:
    """Builds the gate behaviours of one case."""

    def __init__(self, harness: Harness, case: Case, release):
        self.h, self.case, self.release = harness, case, release

    def behaviour(self, kind: str):
        h, case, release = self.h, self.case, self.release

        def command(seen: Seen) -> str:
            value = seen.arguments.get("command") if isinstance(seen.arguments, dict) else None
            return value if isinstance(value, str) else ""

        def sync(seen: Seen):
            if kind == "allow":
                return h.allow(seen)
            if kind == "abstain":
                return h.abstain(seen)
            if kind == "deny":
                return h.deny(seen)
            if kind == "ask":
                return h.ask(seen)
            if kind == "policy":
                return h.deny(seen) if FORBIDDEN in command(seen) else h.allow(seen)
            if kind == "raise":
                raise RuntimeError(f"gate failed on {SECRET}")
            if kind == "exit":
                raise SystemExit(SECRET)
            if kind == "hostile-raise":
                raise HostileError()
            if kind == "hang":
                release.wait(HANG)
                return h.allow(seen)
            if kind == "junk":
                return case.junk
            if kind == "rewrite-forbidden":
                return h.rewrite(seen, {"command": FORBIDDEN})
            if kind == "rewrite-harmless":
                if command(seen) == "harmless rewritten":
                    return h.allow(seen)
                return h.rewrite(seen, {"command": "harmless rewritten"})
            raise AssertionError(kind)

        return sync

    def async_behaviour(self, kind: str):
        sync = self.behaviour(kind)

        async def gate(seen: Seen):
            import asyncio

            if kind == "hang-async":
                await asyncio.sleep(HANG)
                return self.h.allow(seen)
            await asyncio.sleep(0)
            return sync(seen)

        return gate


def _write_config(path, audit_path, case: Case, required_id: Optional[str], bounded: tuple = (),
                  deadline: float = DEADLINE) -> None:
    import json

    deadline = min(deadline, HANG * 0.8)  # a hanging gate must outlast it
    lines = [f"timeout = {deadline}"]
    if case.config == "invalid":
        lines.append('on_error = "maybe"')
    if case.config == "ungoverned-audit":
        lines.append('ungoverned = "audit"')
    if case.config in ("required", "required-present") and required_id:
        lines.append(f"required = [{required_id!r}]".replace("'", '"'))
    lines += ["[audit]", f'path = "{audit_path}"']
    for hook in dict.fromkeys(bounded):  # gates that wait for a person: their own deadline
        lines += [f"[hooks.{json.dumps(hook)}]", f"timeout = {deadline}"]
    path.write_text("\n".join(lines) + "\n")


class _Plugin:
    def __init__(self, kind: str):
        self.kind = kind

    def failsecure_pre_tool_call(self, call):  # marked as a hookimpl below
        from failsecure.verdict import Action, Verdict

        if self.kind == "raise":
            raise RuntimeError(f"plugin failed on {SECRET}")
        if self.kind == "policy":
            args = call.arguments
            text = repr(args) if not isinstance(args, dict) else str(args.get("command", ""))
            if FORBIDDEN in text:
                return Verdict(action=Action.DENY, reason="conformance plugin: forbidden")
        return Verdict(action=Action.ALLOW)


def _mark_plugin() -> None:
    from failsecure.plugins import hookimpl

    if not hasattr(_Plugin.failsecure_pre_tool_call, "failsecure_impl"):
        _Plugin.failsecure_pre_tool_call = hookimpl(_Plugin.failsecure_pre_tool_call)  # type: ignore[method-assign]


RESULTS: dict = {}  # (framework, version, column) -> {(case, mode): status}


def run_case(harness: Harness, case: Case, mode: str, column: str, tmp_path) -> tuple[str, str]:
    """Run one case; returns (status, detail): status is pass | escape | false deny | n/a |
    wrong branch | leak | crash | error. A hostile exception's ``__del__`` raising while the
    case runs is swallowed here (test runners' own hooks choke on its hostile type name)."""
    import gc
    import sys

    saved = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        return _run_case(harness, case, mode, column, tmp_path)
    finally:
        gc.collect()
        sys.unraisablehook = saved
        if column == "upstream":
            harness.install()  # the tests after the kit's cases run with failsecure, as before


def _run_case(harness: Harness, case: Case, mode: str, column: str, tmp_path) -> tuple[str, str]:
    import json
    import os
    import threading

    from failsecure import plugins, policy

    needs = set(case.needs)
    if "ask" in needs and not harness.has_ask:
        return "n/a", "no ask"
    if "async" in needs and not harness.async_gates:
        return "n/a", "no async gates"
    if "bypass" in needs and harness.kind:
        return "n/a", "the ungoverned-path rows are the framework's main harness's"
    if column == "upstream":
        harness.uninstall()
    else:
        harness.install()
    audit_path = tmp_path / "audit.jsonl"
    config_path = tmp_path / "failsecure.toml"
    release = threading.Event()
    gates = _Gates(harness, case, release)
    harness.reset()
    required_id = None
    bounded: list = []
    plugin = None
    saved_env = os.environ.get("FAILSECURE_CONFIG")
    saved_trust, trust_set = None, False
    try:
        if case.config == "required":
            try:
                required_id = harness.add_gate("absentee", gates.behaviour("allow"))
            except NotSupported as exc:
                return "n/a", str(exc)
            harness.reset()
        for label, kind, is_async in case.gates:
            fn = gates.async_behaviour(kind) if is_async else gates.behaviour(kind)
            try:
                hook = harness.add_gate(label, fn, is_async=is_async)
            except NotSupported as exc:
                return "n/a", str(exc)
            if case.config == "required-present" and required_id is None:
                required_id = hook
            if harness.interactive and isinstance(hook, str):
                bounded.append(hook)
        _write_config(config_path, audit_path, case, required_id, tuple(bounded), harness.deadline or DEADLINE)
        # the case's config is trusted: chosen in-process (the trust model does not read
        # later os.environ changes), and in os.environ for the processes a harness starts
        os.environ["FAILSECURE_CONFIG"] = str(config_path)
        trusted = dict(policy.trusted_environment(), FAILSECURE_CONFIG=str(config_path))
        saved_trust, trust_set = policy.set_trusted_environment(trusted), True
        policy.reload()
        if case.plugin:
            _mark_plugin()
            plugin = _Plugin(case.plugin)
            plugins.register(plugin, name="conformance")
        try:
            call = harness.bypass if "bypass" in needs else harness.run
            ran = call(dict(case.arguments), mode)
        except NotSupported as exc:
            return "n/a", str(exc)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the framework itself died on the gate's failure: judged, not reported
            from failsecure.report import type_name

            return ("crash" if column == "upstream" else "error"), f"the run raised {type_name(exc)}"
    finally:
        release.set()
        if plugin is not None:
            plugins.unregister(plugin)
        harness.reset()
        if saved_env is None:
            os.environ.pop("FAILSECURE_CONFIG", None)
        else:
            os.environ["FAILSECURE_CONFIG"] = saved_env
        if trust_set:
            policy.set_trusted_environment(saved_trust)
        policy.reload()
    from failsecure import audit

    audit.flush(10.0)  # the audit file is written off the tool call's thread
    audit_text = audit_path.read_text() if audit_path.exists() else ""
    if case.expect == "deny" and ran.ran:
        return "escape", "the tool ran"
    if case.expect == "run":
        if not ran.ran:
            return "false deny", (ran.told or "")[:200].replace(SECRET, "<secret>")
        want = case.ran_with or case.arguments
        if ran.arguments is not None and ran.arguments != want:
            return "escape" if FORBIDDEN in str(ran.arguments) else "wrong arguments", "ran with other arguments"
        if "bypass" in needs and column != "upstream":  # an ungoverned call that runs is audited
            events = [json.loads(line) for line in audit_text.splitlines() if line.strip()]
            if not any(e.get("framework") == harness.framework and e.get("failure") == "ungoverned"
                       and e.get("outcome") == "allow" for e in events):
                return "wrong branch", "the ungoverned call that ran is not in the audit"
        return "pass", ""
    if column == "upstream":
        return "pass", "denied upstream"
    if SECRET in (ran.told or "") or SECRET in audit_text:
        return "leak", "the secret reached the deny text or the audit"
    if case.config == "invalid":  # an invalid config has no audit path to write to
        if "failsecure:config" not in (ran.told or "") and "(invalid)" not in (ran.told or ""):
            return "wrong branch", "the deny text does not name the config failure"
        return "pass", ""
    if case.failure:
        events = [json.loads(line) for line in audit_text.splitlines() if line.strip()]
        # an ungoverned execution passes every adapter's boundary around the tool (code-puppy's
        # and pydantic-ai's beneath it): the deny is the one whose boundary stopped it
        events = [e for e in events if e.get("outcome") == "deny" and (
            e.get("framework") == harness.framework or (case.failure == "ungoverned" and e.get("failure") == "ungoverned"))]
        if not events:
            return "wrong branch", "no deny in the audit"
        event = events[-1]
        if event.get("failure") != case.failure:
            return "wrong branch", f"audited failure {event.get('failure')!r}, expected {case.failure!r}"
        if case.exception_type and event.get("exception_type") != case.exception_type:
            return "wrong branch", f"audited exception {event.get('exception_type')!r}"
        if f"({case.failure})" not in (ran.told or "") and case.failure != "missing" and not ran.asked:
            return "wrong branch", "the deny text does not name the failure category"
    return "pass", ""
