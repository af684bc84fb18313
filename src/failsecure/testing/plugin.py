"""The conformance kit's pytest plugin (entry point ``pytest11``): ``pytest
--failsecure-conformance[=failsecure|upstream|both]`` runs every case of the fault matrix
against each harness fixture a ``conftest.py`` defines (``failsecure_harness`` and one
``failsecure_harness_<kind>`` per further gate kind), prints one table and writes the
records for ``tools/render_matrix.py`` (``--failsecure-matrix-out``)."""

from __future__ import annotations

from .harness import Harness
from .matrix import RESULTS, cases, run_case

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
    import inspect

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
            def conformance_case(**fixtures):
                _run_item(self, fixtures[fixture], fixtures["tmp_path"])

            # the harness fixture is requested by name, as a test's argument would be (a
            # conftest's autouse fixtures look at request.fixturenames)
            conformance_case.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
                [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in (fixture, "tmp_path")]
            )

            super().__init__(callobj=conformance_case, **kw)
            self.case_index, self.mode, self.column = index, mode, column

        def reportinfo(self):
            return self.path, None, f"conformance {self.column} {self.name}"

    kit_cases, kit_item = _KitCases, _KitItem
    return _KitFile, _KitCases, _KitItem


_MAX_CASES = 40


def _run_item(item, harness: Harness, tmp_path) -> None:
    import pytest

    all_cases = cases(harness)
    if item.case_index >= len(all_cases):
        pytest.skip("no such case for this harness")
    if item.mode not in harness.modes:
        pytest.skip(f"{harness.framework} has no {item.mode} mode")
    case = all_cases[item.case_index]
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
        from failsecure import activation

        return activation.get(harness.framework).version or "?"
    except Exception:  # noqa: BLE001 - the version is only a label in the report
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
            except Exception:  # noqa: BLE001 - a closed stream at exit: the status is in the exit code
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
