"""The conformance kit: one fault matrix for any pre-tool-call dispatcher.

A framework author (or an operator) writes one ``Harness`` for the framework and exposes
it as the pytest fixture ``failsecure_harness``; ``pytest --failsecure-conformance`` then
runs every case of the fault matrix through the framework's real dispatcher and prints
one table: for each case ``pass``, ``escape`` (the tool ran though it should not have)
or ``false deny`` (a legitimate call was blocked).

The tool every case calls takes one string argument, ``command``. A call whose command
contains ``forbidden`` is what the kit's policy gate denies; ``harmless`` is what it
allows. The harness's tool records whether it ran and with which arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional


class NotSupported(Exception):
    """Raised by a harness for an answer or mode its framework does not have (the
    case is reported ``n/a``)."""


@dataclass
class Seen:
    """What one gate is shown: the tool name and the arguments as the gate sees them
    (a plain dict copy), plus ``native``: the framework's own objects of this gate call,
    for ``Harness.rewrite``."""

    tool: Optional[str]
    arguments: dict
    native: Any = None


@dataclass
class Ran:
    """What one tool call through the real dispatcher did.

    ``ran``: the tool's side effect happened. ``arguments``: what the tool ran with (None
    when it did not run). ``told``: every text the model or caller was given back for
    this call (tool result, error message, exception text), joined; the kit checks it
    for leaked secrets and for the failure category. ``asked``: the run stopped for a
    human's answer about this call (an approval interruption, a review) and the harness
    gave none: for a gate kind whose fail-closed answer is "ask a human" (an approval
    predicate) that is the deny; the audit must still show the failure category, and
    nothing told to the caller may leak."""

    ran: bool
    arguments: Optional[dict] = None
    told: str = ""
    asked: bool = False


class Harness:
    """How to drive one framework's real dispatcher. Subclass it, implement the methods,
    and return an instance from a pytest fixture named ``failsecure_harness``.

    Class attributes say what the framework has; cases that need something it has not
    are reported ``n/a``."""

    #: the adapter's name: the ``framework`` field of its audit events and hook-id prefix
    framework: str = ""
    #: ways to run a tool call ("sync", "async"); ``run`` gets one of them
    modes: tuple = ("sync",)
    #: the framework accepts async gates (coroutine functions)
    async_gates: bool = False
    #: the framework has an "ask a human" answer (``ask`` is implemented)
    has_ask: bool = False
    #: the gate kind this harness registers, when the framework has more than one (an
    #: item of its docs page's inventory: "PermissionRequest", "require_confirmation"...);
    #: its rows are reported as ``<version> <kind>``. A conftest offers one fixture per
    #: kind: ``failsecure_harness`` and ``failsecure_harness_<kind>``.
    kind: str = ""

    # ---------------------------------------------------------------- gates

    def add_gate(self, name: str, behave: Callable[[Seen], Any], *, is_async: bool = False) -> str:
        """Register one gate with the framework, the way its users do, after every gate
        added before it (registration order matters to some cases). When the framework
        calls it, it builds a ``Seen`` and returns ``behave(seen)`` unchanged (a raise or
        a hang passes through; for ``is_async`` the gate is a coroutine function that
        returns the same). Returns the gate's failsecure hook id (``[hooks."<id>"]``)."""
        raise NotImplementedError

    def reset(self) -> None:
        """Remove every gate added by ``add_gate`` (called before each case)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- native answers

    def allow(self, seen: Seen) -> Any:
        """The framework's explicit "allow" (or, where it has none, "no opinion")."""
        raise NotImplementedError

    def abstain(self, seen: Seen) -> Any:
        """The framework's "no opinion" (usually ``None``)."""
        return None

    def deny(self, seen: Seen) -> Any:
        """The framework's explicit deny, with a reason naming the gate."""
        raise NotImplementedError

    def ask(self, seen: Seen) -> Any:
        """The framework's "ask a human"; only when ``has_ask``."""
        raise NotSupported("ask")

    def junk(self) -> list[tuple[str, Any]]:
        """(label, native answer) pairs the framework's protocol does not define. Each
        must deny with failure ``invalid``. The kit adds hostile objects of its own."""
        raise NotImplementedError

    def rewrite(self, seen: Seen, arguments: dict) -> Any:
        """Make the tool run with ``arguments`` instead, the way a hook of this framework
        can (mutate the native input in place, or return the native rewrite answer), and
        return what the gate should return. ``NotSupported`` if hooks cannot rewrite."""
        raise NotSupported("rewrite")

    # ---------------------------------------------------------------- the call

    def run(self, arguments: dict, mode: str) -> Ran:
        """One tool call with ``arguments`` through the framework's real dispatcher (an
        agent run with a scripted model, or the narrowest real call path), in ``mode``.
        Must not raise for a denied call: catch the framework's deny exception and put
        its text into ``Ran.told``."""
        raise NotImplementedError

    def install(self) -> None:
        """Make failsecure active for this framework (default: ``failsecure.install()``
        and import of the trigger module)."""
        import failsecure

        failsecure.install()

    def uninstall(self) -> None:
        """Run upstream as released (default: ``failsecure.uninstall()``)."""
        import failsecure

        failsecure.uninstall()


# ====================================================================== the fault matrix

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
    needs: tuple = ()  # "ask", "rewrite", "async"
    junk: Any = None
    plugin: Optional[str] = None  # a failsecure_pre_tool_call plugin gate: "raise" | "allow"


def _cases(harness: Harness) -> list[Case]:
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
    ]
    try:
        junk = list(harness.junk())
    except NotImplementedError:
        junk = []
    for label, value in junk:
        cases.append(Case(f"junk: {label}", (("junky", "junk", A),), "deny", "invalid", junk=value))
    # last: upstream, these can take the whole process down with them (a SystemExit that
    # ends the run, an exception whose repr breaks asyncio's own bookkeeping)
    cases.append(Case("raise SystemExit", (("exiting", "exit", A),), "deny", "raised", "SystemExit"))
    cases.append(Case("raise hostile exception", (("hostile", "hostile-raise", A),), "deny", "raised"))
    return cases


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


def _write_config(path, audit_path, case: Case, required_id: Optional[str]) -> None:
    lines = [f"timeout = {DEADLINE}"]
    if case.config == "invalid":
        lines.append('on_error = "maybe"')
    if case.config in ("required", "required-present") and required_id:
        lines.append(f"required = [{required_id!r}]".replace("'", '"'))
    lines += ["[audit]", f'path = "{audit_path}"']
    path.write_text("\n".join(lines) + "\n")


class _Plugin:
    def __init__(self, kind: str):
        self.kind = kind

    def failsecure_pre_tool_call(self, call):  # marked as a hookimpl below
        from .verdict import Action, Verdict

        if self.kind == "raise":
            raise RuntimeError(f"plugin failed on {SECRET}")
        if self.kind == "policy":
            args = call.arguments
            text = repr(args) if not isinstance(args, dict) else str(args.get("command", ""))
            if FORBIDDEN in text:
                return Verdict(action=Action.DENY, reason="conformance plugin: forbidden")
        return Verdict(action=Action.ALLOW)


def _mark_plugin() -> None:
    from .plugins import hookimpl

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

    from . import plugins, policy

    needs = set(case.needs)
    if "ask" in needs and not harness.has_ask:
        return "n/a", "no ask"
    if "async" in needs and not harness.async_gates:
        return "n/a", "no async gates"
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
        _write_config(config_path, audit_path, case, required_id)
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
            ran = harness.run(dict(case.arguments), mode)
        except NotSupported as exc:
            return "n/a", str(exc)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the framework itself died on the gate's failure
            from .report import type_name

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
    from . import audit

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
        events = [e for e in events if e.get("framework") == harness.framework and e.get("outcome") == "deny"]
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


# ====================================================================== the pytest plugin

_FIXTURE = "failsecure_harness"


def pytest_addoption(parser):
    group = parser.getgroup("failsecure")
    group.addoption(
        "--failsecure-conformance",
        action="store",
        nargs="?",
        const="failsecure",
        default=None,
        help="run the fail-closed fault matrix against every `failsecure_harness` fixture "
        "(failsecure: asserted; upstream: failsecure uninstalled, reported only; both)",
    )
    group.addoption("--failsecure-matrix-out", default=None, help="write the matrix results (JSON) to this file")


_COLUMNS = ("failsecure", "upstream", "both")


def pytest_configure(config):
    """``pytest --failsecure-conformance tests/x``: argparse took the path for the
    option's value; give it back to pytest."""
    value = config.getoption("--failsecure-conformance", None)
    if value is None or value in _COLUMNS:
        return
    config.option.failsecure_conformance = "failsecure"
    import os

    if os.path.exists(value):
        default = [str(config.invocation_params.dir)] + list(config.getini("testpaths") or [])
        if not config.args or config.args == default[: len(config.args)] or config.args == ["."]:
            config.args[:] = [value]
        else:
            config.args.append(value)
    else:
        raise ValueError(f"--failsecure-conformance: expected one of {', '.join(_COLUMNS)}, got {value!r}")


def _columns(config) -> tuple:
    value = config.getoption("--failsecure-conformance", None)
    if not value:
        return ()
    # failsecure first: the upstream column runs failing gates with nothing to stop them
    return ("failsecure", "upstream") if value == "both" else (value,)


def pytest_collection_modifyitems(session, config, items):
    """The upstream column runs last of all: a release run with nothing to stop a failing
    gate can leave the process broken (asyncio's own state, an exit in flight), which
    must not reach the asserted column or the suite's own tests."""
    if "upstream" not in _columns(config):
        return
    items.sort(key=lambda item: getattr(item, "column", None) == "upstream")


def pytest_collect_file(file_path, parent):
    if file_path.name != "conftest.py" or not _columns(parent.config):
        return None
    try:
        text = file_path.read_text()
    except OSError:
        return None
    fixtures = _fixtures(text)
    if not fixtures:
        return None
    kit_file = _classes()[0].from_parent(parent, path=file_path)
    kit_file.fixtures = fixtures
    return kit_file


def _fixtures(text: str) -> list:
    """The harness fixtures a conftest defines: ``failsecure_harness`` and one
    ``failsecure_harness_<kind>`` per further gate kind, in the order written."""
    import re

    found = re.findall(rf"^(?:async )?def ({_FIXTURE}(?:_\w+)?)\(", text, re.MULTILINE)
    return list(dict.fromkeys(found))


def _item_classes():
    import pytest

    class _KitFile(pytest.File):
        fixtures: list = [_FIXTURE]

        def collect(self):
            columns = _columns(self.config)
            for fixture in self.fixtures:
                kind = fixture[len(_FIXTURE) + 1 :]
                for column in columns:
                    name = f"conformance[{kind}-{column}]" if kind else f"conformance[{column}]"
                    yield kit_cases.from_parent(self, name=name, column=column, fixture=fixture)

    class _KitCases(pytest.Collector):
        def __init__(self, *, column, fixture=_FIXTURE, **kw):
            super().__init__(**kw)
            self.column, self.fixture = column, fixture

        def collect(self):
            # the cases depend on the harness (its junk list): resolved lazily per item
            for index in range(_MAX_CASES):
                for mode in ("sync", "async"):
                    yield kit_item.from_parent(
                        self, name=f"{index:02d}-{mode}", index=index, mode=mode, column=self.column, fixture=self.fixture
                    )

    class _KitItem(pytest.Function):
        def __init__(self, *, index, mode, column, fixture=_FIXTURE, **kw):
            def conformance_case(request, tmp_path):
                _run_item(self, request.getfixturevalue(fixture), tmp_path)

            super().__init__(callobj=conformance_case, **kw)
            self.case_index, self.mode, self.column = index, mode, column

        def reportinfo(self):
            return self.path, None, f"conformance {self.column} {self.name}"

    kit_cases, kit_item = _KitCases, _KitItem
    return _KitFile, _KitCases, _KitItem


_MAX_CASES = 40


def _run_item(item, harness: Harness, tmp_path) -> None:
    import pytest

    cases = _cases(harness)
    if item.case_index >= len(cases):
        pytest.skip("no such case for this harness")
    if item.mode not in harness.modes:
        pytest.skip(f"{harness.framework} has no {item.mode} mode")
    case = cases[item.case_index]
    version = _version(harness)
    if harness.kind:
        version = f"{version} {harness.kind}"
    status, detail = run_case(harness, case, item.mode, item.column, tmp_path)
    RESULTS.setdefault((harness.framework, version, item.column), {})[(case.name, item.mode)] = (status, detail)
    item.user_properties.append(("conformance", f"{case.name} [{item.mode}]: {status}"))
    if status == "n/a":
        pytest.skip(f"{case.name}: n/a ({detail})")
    if item.column == "failsecure" and status != "pass":
        pytest.fail(f"{harness.framework} {version} {case.name} [{item.mode}]: {status}: {detail}", pytrace=False)


def _version(harness: Harness) -> str:
    try:
        from . import activation

        return activation.get(harness.framework).version or "?"
    except Exception:
        return "?"


_built: list = []


def _classes():
    """The pytest collector classes, built on first use (pytest is imported only then)."""
    if not _built:
        _built.extend(_item_classes())
    return _built


def table(results: dict) -> str:
    """The results as one Markdown table: case x mode rows, one column per
    (framework, version, column)."""
    keys = sorted(results)
    rows: list = []
    for key in keys:
        for row in results[key]:
            if row not in rows:
                rows.append(row)
    mark = {"pass": "ok", "escape": "ESCAPE", "false deny": "FALSE DENY", "n/a": "n/a", "crash": "crash"}
    head = "| case | mode | " + " | ".join(f"{f} {v} {c}" for f, v, c in keys) + " |"
    lines = [head, "|" + "---|" * (len(keys) + 2)]
    for name, mode in rows:
        cells = [mark.get(results[k].get((name, mode), ("",))[0], results[k].get((name, mode), ("",))[0]) for k in keys]
        lines.append(f"| {name} | {mode} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


_exit_status: list = []


def pytest_sessionfinish(session, exitstatus):
    _exit_status.append(int(exitstatus))


def pytest_unconfigure(config):
    """After the upstream column, a release may have leaked threads that never end (a
    gate's SystemExit tore its event loop down without stopping its worker threads): the
    interpreter would wait for them forever at exit. The run is over and reported, so end
    the process with pytest's own status."""
    if "upstream" not in _columns(config) or not _exit_status:
        return
    import os
    import sys
    import threading

    stuck = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if stuck:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(_exit_status[-1])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not RESULTS:
        return
    import json

    terminalreporter.section("failsecure conformance")
    terminalreporter.write_line(table(RESULTS))
    for key, rows in sorted(RESULTS.items()):
        counts: dict = {}
        for status, _ in rows.values():
            counts[status] = counts.get(status, 0) + 1
        terminalreporter.write_line(f"{' '.join(key)}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    out = config.getoption("--failsecure-matrix-out", None)
    if out:
        data = [
            {"framework": f, "version": v, "column": c, "case": name, "mode": mode, "status": s, "detail": d}
            for (f, v, c), rows in RESULTS.items()
            for (name, mode), (s, d) in rows.items()
        ]
        import os

        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as fh:
            json.dump(data, fh, indent=1)


# ====================================================================== the published table


def render(records: list) -> str:
    """``docs/fault-matrix.md`` from the JSON records of every framework env: one table
    per framework, a row per case and mode, upstream and failsecure per release."""
    by_fw: dict = {}
    for r in records:
        by_fw.setdefault(r["framework"], []).append(r)
    mark = {"pass": "ok", "escape": "**ESCAPE**", "false deny": "**FALSE DENY**", "n/a": "n/a", "crash": "crash",
            "error": "**ERROR**",
            "wrong branch": "**WRONG BRANCH**", "leak": "**LEAK**", "wrong arguments": "**WRONG ARGS**"}
    out = [
        "# Fault matrix",
        "",
        "Generated by `tox -e matrix` from the conformance kit (`pytest --failsecure-conformance`),",
        "run against each framework's real dispatcher at each pinned release: **upstream** is the",
        "release as published (failsecure uninstalled), **failsecure** the same run with failsecure",
        "active. `ESCAPE`: the tool ran though the case must deny. `FALSE DENY`: a legitimate call",
        "was blocked. `WRONG BRANCH`: denied, but not for the failure the case injected. `n/a`: the",
        "framework has no such thing (no async gates, no way for a hook to ask or rewrite).",
        "`crash`: upstream's whole run died on the gate's failure (the tool did not run, nor did the agent).",
        "An `ok` in an upstream column for a deny case means upstream already denies it.",
        "",
    ]
    out += ["## Summary", "", "| framework | release | cases | upstream: escapes | failsecure: escapes | failsecure: false denies |", "|---|---|---|---|---|---|"]
    for fw in sorted(by_fw):
        for version in sorted({r["version"] for r in by_fw[fw]}):
            mine = [r for r in by_fw[fw] if r["version"] == version]
            tally: dict = {}
            for r in mine:
                tally[(r["column"], r["status"])] = tally.get((r["column"], r["status"]), 0) + 1
            run = sum(n for (column, status), n in tally.items() if column == "failsecure" and status != "n/a")
            out.append(f"| {fw} | {version} | {run} | {tally.get(('upstream', 'escape'), 0)} | "
                       f"{tally.get(('failsecure', 'escape'), 0)} | {tally.get(('failsecure', 'false deny'), 0)} |")
    out.append("")
    for fw in sorted(by_fw):
        rows = by_fw[fw]
        cols = sorted({(r["version"], r["column"]) for r in rows}, key=lambda c: (c[0], c[1] != "upstream"))
        cases: list = []
        for r in rows:
            key = (r["case"], r["mode"])
            if key not in cases:
                cases.append(key)
        cell = {(r["case"], r["mode"], r["version"], r["column"]): r["status"] for r in rows}
        escapes = {c: sum(1 for r in rows if (r["version"], r["column"]) == c and r["status"] == "escape") for c in cols}
        out += [f"## {fw}", ""]
        out.append("| case | mode | " + " | ".join(f"{v} {c}" for v, c in cols) + " |")
        out.append("|---|---|" + "---|" * len(cols))
        for name, mode in cases:
            out.append(f"| {name} | {mode} | " + " | ".join(mark.get(cell.get((name, mode, v, c), ""), cell.get((name, mode, v, c), "")) for v, c in cols) + " |")
        out.append("| **escapes** | | " + " | ".join(str(escapes[c]) for c in cols) + " |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    """``python -m failsecure.conformance render OUT FILE...``: write the table; exit 1
    on any escape, false deny, wrong branch or leak with failsecure on, or a missing file."""
    import json
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[0] != "render":
        print("usage: python -m failsecure.conformance render OUT.md RESULTS.json...", file=sys.stderr)
        return 2
    records: list = []
    for path in argv[2:]:
        with open(path) as fh:
            records += json.load(fh)
    with open(argv[1], "w") as fh:
        fh.write(render(records) + "\n")
    bad = [r for r in records if r["column"] == "failsecure" and r["status"] not in ("pass", "n/a")]
    for r in bad:
        print(f"{r['framework']} {r['version']}: {r['case']} [{r['mode']}]: {r['status']} {r['detail']}", file=sys.stderr)
    print(f"wrote {argv[1]}: {len(records)} results, {len(bad)} failing with failsecure on")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
