"""Mutation score of the core: mutmut 3 over the result types, reducer, guard, policy,
failure categories and integrity rounds, with a kill rate per module.

mutmut runs in a scratch folder: a copy of src/failsecure and tests/core, the watchdog
conftest below and mutmut's own config, so neither its ``mutants/`` tree nor its config
touch the checkout.

    python tools/mutation.py [--workdir DIR] [--max-children N] [--fail-under PCT] [--survivors]
                             [--test-timeout SECONDS]

A mutant that makes a test hang (a deadline never firing, a wait that never ends) is ended
by a per-test wall-clock watchdog (``--test-timeout``, default 5 s, a conftest.py in the
scratch root) and counted as a timeout (exit 36). mutmut's own limit is a CPU-time limit and
a wall clock of (the covering tests' duration + 1 s) x 15, over a minute for the guard's
mutants, so each hanging mutant used to cost that long. The slowest unmutated test takes
about 1 s; keep the watchdog well above the slowest test on a loaded machine.

`tox -e mutation` runs it. The package must not be installed in the env that runs it: the
installed copy (and its drop-in .pth) would be imported instead of the mutants.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["verdict", "reduce", "guard", "policy", "failures", "integrity", "boundary"]
# The test files that exercise those modules. The rest of tests/core (activation, adapter,
# cli) patch process-wide state and fail when mutmut reorders them, so they are left out.
TESTS = [
    "test_guard.py",
    "test_policy.py",
    "test_reduce.py",
    "test_integrity.py",
    "test_config_trust.py",
    "test_audit.py",
    "test_failures.py",
    "test_guard_awaitables.py",
    "test_policy_loader.py",
    "test_verdict.py",
    "test_integrity_fingerprint.py",
    "test_integrity_settle.py",
    "test_settle_calls.py",
    "test_integrity_plugins.py",
    "test_integrity_paths.py",
    "test_integrity_asettle.py",
    "test_integrity_take_back.py",
    "test_fingerprint_quick.py",
    "test_fingerprint_stream.py",
    "test_guard_start.py",
    "test_guard_start_failure.py",
    "test_framework_settings.py",
    "test_boundary.py",
    "test_boundary_give_back.py",
    "test_boundary_picture.py",
    "test_boundary_ledger.py",
    "test_hookid_text.py",
    "test_trusted_environment.py",
    "test_pyproject_byte_check.py",
    "test_start_environment.py",
    "test_project_file_open.py",
    "test_guard_late_and_counts.py",
]
#: tests whose child process imports the package under test with ``-S`` from its own
#: folder: a mutant's trampoline there records its hit in mutmut's stats, which looks for
#: mutmut's config in the child's working directory and fails the run
DESELECT = [
    "tests/core/test_config_trust.py::test_the_runner_pays_no_tomllib_import_for_the_usual_pyprojects",
]
#: files whose tests that start a child process are left out: the child imports the
#: unmutated copy (so such a test cannot kill a mutant), some put the mutants' folder
#: (``policy.__file__``'s) on the child's path (mutmut's stats then fail), and in mutmut's
#: stats run one of them outlives the watchdog
IN_PROCESS_ONLY = ["test_trusted_environment.py"]


def child_process_tests(path: Path) -> list[str]:
    """The tests of ``path`` whose body starts a child process."""
    import ast

    text = path.read_text()
    return [f"tests/core/{path.name}::{node.name}" for node in ast.parse(text).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
            and any(w in (ast.get_source_segment(text, node) or "") for w in ("child(", "parent(", "subprocess."))]
#: exit status of a test run the watchdog cut (mutmut reads 36 as a timeout)
TIMEOUT_EXIT = 36
# A test running longer than ``limit`` seconds ends the run at once: the hooks a mutant makes
# hang run on daemon threads and may swallow any exception, so only leaving the process is sure.
WATCHDOG = """\
import os
import threading

import pytest

LIMIT = {limit!r}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    timer = threading.Timer(LIMIT, os._exit, ({code},))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
"""
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout",
          24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout", None: "not checked"}


def build_spin(pkg: Path) -> bool:
    """failsecure._spin, as setup.py builds it, so the guard's compiled poll is tested
    (and its Python branch too: the tests run both). Without a compiler the guard polls
    in Python and the compiled cases are skipped."""
    import sysconfig

    cc = (sysconfig.get_config_var("CC") or "cc").split()
    out = pkg / f"_spin{sysconfig.get_config_var('EXT_SUFFIX')}"
    cmd = cc + ["-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(pkg / "_spin.c"), "-o", str(out)]
    try:
        built = subprocess.run(cmd, capture_output=True).returncode == 0
    except OSError:
        built = False
    print(f"failsecure._spin: {'built' if built else 'not built (no compiler): the guard polls in Python'}")
    return built


def lay_out(work: Path, modules: list[str], test_timeout: float = 5.0) -> None:
    if work.exists():
        shutil.rmtree(work)
    pkg = work / "src" / "failsecure"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "src" / "failsecure", pkg, ignore=ignore)
    shutil.copytree(ROOT / "tests" / "core", work / "tests" / "core", ignore=ignore)
    # the suite's shared fixtures (the trusted environment every config test relies on)
    shutil.copy2(ROOT / "tests" / "conftest.py", work / "tests" / "conftest.py")
    shutil.copy2(ROOT / "failsecure-auto.pth", work / "failsecure-auto.pth")
    build_spin(pkg)
    (work / "conftest.py").write_text(WATCHDOG.format(limit=float(test_timeout), code=TIMEOUT_EXIT))
    tests = [f"tests/core/{t}" for t in TESTS if (ROOT / "tests" / "core" / t).exists()]
    deselect = DESELECT + [t for f in IN_PROCESS_ONLY if (ROOT / "tests" / "core" / f).exists()
                           for t in child_process_tests(ROOT / "tests" / "core" / f)]
    (work / "pyproject.toml").write_text(
        "[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        'also_copy = ["failsecure-auto.pth", "conftest.py"]\n'
        # mutmut's default ("fork") runs the stats and clean runs in its own process and forks
        # each mutant's run from it: the children inherit the guard's idle workers without
        # their threads, so every deadlined hook timed out and nearly every mutant reached by
        # a guard test was "killed". The fork server forks the runs from a process that only
        # collected the tests.
        'process_isolation = "forkserver"\n'
        f"only_mutate = {json.dumps([f'src/failsecure/{m}.py' for m in modules])}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        f"pytest_add_cli_args = {json.dumps([a for t in deselect for a in ('--deselect', t)])}\n"
        "\n[tool.pytest.ini_options]\n"
        'addopts = "-p no:cacheprovider --import-mode=importlib"\n'
    )


def results(work: Path, modules: list[str]) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for m in modules:
        meta = json.loads((work / "mutants" / "src" / "failsecure" / f"{m}.py.meta").read_text())
        by_status: dict[str, list[str]] = {}
        for name, code in meta["exit_code_by_key"].items():
            by_status.setdefault(STATUS.get(code, "suspicious"), []).append(name)
        out[m] = by_status
    return out


def table(res: dict[str, dict[str, list[str]]]) -> tuple[str, float]:
    rows = ["| module | mutants | killed | timeout | survived | no tests | kill rate |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    tk = tt = 0
    for m, s in res.items():
        n = sum(len(v) for k, v in s.items() if k != "skipped")
        k, t = len(s.get("killed", [])), len(s.get("timeout", []))
        tk, tt = tk + k + t, tt + n
        rows.append(f"| {m}.py | {n} | {k} | {t} | {len(s.get('survived', []))} | {len(s.get('no tests', []))} | {100 * (k + t) / max(n, 1):.1f} % |")
    total = 100 * tk / max(tt, 1)
    rows.append(f"| **all** | {tt} | | | | | **{total:.1f} %** |")
    return "\n".join(rows), total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "failsecure-mutation")
    ap.add_argument("--modules", nargs="+", default=MODULES, choices=MODULES)
    ap.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--fail-under", type=float, default=0.0, help="exit 1 when the overall kill rate is lower")
    ap.add_argument("--survivors", action="store_true", help="list the surviving mutants (see them with `mutmut show NAME` in the workdir)")
    ap.add_argument("--test-timeout", type=float, default=5.0, metavar="SECONDS",
                    help="a test still running after this long ends its mutant's run as a timeout")
    ap.add_argument("--report-only", action="store_true", help="read the last run in --workdir, do not run")
    args = ap.parse_args()
    work = args.workdir.resolve()
    if not args.report_only:
        lay_out(work, args.modules, args.test_timeout)
        # Children the tests start (`python -m failsecure ...`) import the unmutated copy in src/;
        # mutmut itself drops src/ from its own path and puts mutants/src first.
        env = {**os.environ, "PYTHONPATH": str(work / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
        run = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children)],
                             cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            sys.stderr.write(run.stderr[-4000:])
            return run.returncode
    res = results(work, args.modules)
    text, total = table(res)
    print(text)
    if args.survivors:
        for s in res.values():
            for status in ("survived", "no tests"):
                for name in s.get(status, []):
                    print(f"{status}: {name}")
    return 1 if total < args.fail_under else 0


if __name__ == "__main__":
    sys.exit(main())
