"""The one table of ``tox -m bench``: every bench's figures (``common.Run``, one JSON file per
bench env in the results folder) side by side, printed last and written into
docs/performance.md between its markers, with the machine the run was on.

    python benchmarks/bench_report.py RESULTS_DIR [DOC]      (tox -e bench-report)

A bench env that left no figures (it failed, or did not run) is a row that says so; a
file older than ``MAX_AGE_H`` is from an earlier run and is shown as missing too.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys

START, END = "<!-- bench-report:start -->", "<!-- bench-report:end -->"
MAX_AGE_H = 12.0

# (bench env, the adapter's row label), in table order
ADAPTERS = [
    ("bench-hermes", "hermes-agent"),
    ("bench-code-puppy", "code-puppy"),
    ("bench-crewai", "crewai"),
    ("bench-langchain", "langchain"),
    ("bench-claude-sdk", "claude-agent-sdk"),
    ("bench-strands", "strands-agents"),
    ("bench-openai-agents", "openai-agents"),
    ("bench-adk", "google-adk"),
    ("bench-pydantic-ai", "pydantic-ai"),
]
HEAD = ("", "upstream", "what is timed", "added: no-op tool / hook / start",
        "small file read: patched / unpatched", "hand-off floor (same run)", "deadline path / floor")


def load(folder: str) -> tuple[dict, dict]:
    """(fresh results by bench env, why each other file was left out)."""
    fresh, stale = {}, {}
    now = datetime.datetime.now(datetime.timezone.utc)
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
        if not name.endswith(".json"):
            continue
        env = name[:-5]
        try:
            with open(os.path.join(folder, name)) as fh:
                data = json.load(fh)
            ended = datetime.datetime.fromisoformat(data["ended"])
        except (OSError, ValueError, KeyError) as exc:
            stale[env] = f"unreadable ({type(exc).__name__})"
            continue
        if (now - ended).total_seconds() > MAX_AGE_H * 3600:
            stale[env] = f"only figures of an earlier run ({data['ended']})"
        else:
            fresh[env] = data
    return fresh, stale


def _missing(label: str, env: str, stale: dict) -> tuple:
    return (label, "", f"**missing**: {env}: {stale.get(env, 'no figures (failed or not run)')}", "", "", "", "")


def _ups(data: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in data.get("upstream", {}).items())


def adapter_row(label: str, data: dict) -> tuple:
    r = data["row"]
    d = r["deadline"]
    if "na" in d:
        deadline = f"n/a: {d['na']}"
    else:
        deadline = f"x{d['ratio']:.2f}"
        if "deadlines_ratio" in d:
            deadline += f" (the deadlines alone x{d['deadlines_ratio']:.2f})"
    return (
        label,
        _ups(data),
        f"{r['gates']}; {r['path']}",
        f"+{r['noop']['added_us']:.1f} µs ({r['noop']['unpatched_us']:.1f} → {r['noop']['patched_us']:.1f})",
        f"x{r['file']['ratio']:.2f} ({r['file']['unpatched_us']:.1f} → {r['file']['patched_us']:.1f} µs)",
        f"{r['floor_us']:.1f} µs",
        deadline,
    )


def rows(fresh: dict, stale: dict) -> list[tuple]:
    out = []
    core = fresh.get("bench-core")
    if core and "guard" in core:
        g = core["guard"]
        out.append(("failsecure guard alone", "", "3 trivial sync gates, `guard.call_each` with deadlines vs inline",
                    f"+{g['three_gates_added_us']:.1f} µs", "", f"{g['floor_us']:.1f} µs", f"x{g['three_gates_ratio']:.2f}"))
    else:
        out.append(_missing("failsecure guard alone", "bench-core", stale))
    known = {env for env, _ in ADAPTERS}
    extra = [(env, env[len("bench-"):]) for env, data in fresh.items() if "row" in data and env not in known]
    for env, label in ADAPTERS + sorted(extra):
        out.append(adapter_row(label, fresh[env]) if env in fresh and "row" in fresh[env] else _missing(label, env, stale))
    command = fresh.get("bench-command")
    for key, label in (("runner", "command runner, no config file, no audit file"),
                       ("audited", "command runner, a config file and an audit file")):
        if command and key in command.get("runner", {}):
            c = command["runner"][key]
            out.append((label, "", "hook `/bin/true` under the runner vs run directly",
                        f"+{c['added_ms']:.1f} ms ({c['direct_ms']:.1f} → {c['runner_ms']:.1f})", "", "", ""))
        else:
            out.append(_missing(label, "bench-command", stale))
    start = core.get("start") if core else None
    for key, label, what in (("pth", "drop-in at interpreter start", "`python -c pass` with the `.pth` vs without"),
                             ("import", "`import failsecure`", "`python -c 'import failsecure'` vs `python -c pass`")):
        if start:
            out.append((label, "", what + f" (median of {start['runs']})",
                        f"+{start[key + '_added_ms']:.1f} ms ({start['bare_ms']:.1f} → {start[key + '_ms']:.1f})",
                        "", "", ""))
        else:
            out.append(_missing(label, "bench-core", stale))
    return out


def table(body: list[tuple]) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(cell or "" for cell in row) + " |" for row in body]
    return "\n".join(lines)


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def machine(fresh: dict) -> list[str]:
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or platform.machine())
    mem = next((int(line.split()[1]) for line in _read("/proc/meminfo").splitlines() if line.startswith("MemTotal")), 0)
    osname = next((line.split("=", 1)[1].strip().strip('"') for line in _read("/etc/os-release").splitlines()
                   if line.startswith("PRETTY_NAME=")), platform.system())
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    runs = sorted(fresh.values(), key=lambda d: d["started"])
    pythons = sorted({d.get("python", "?") for d in runs}) or [platform.python_version()]
    upstream = sorted({f"{k} {v}" for d in runs for k, v in d.get("upstream", {}).items()})
    out = [
        f"- CPU: {cpu}; {os.cpu_count()} logical CPUs ({usable} usable)",
        f"- RAM: {mem / 1024 / 1024:.1f} GiB" if mem else "- RAM: unknown",
        f"- OS: {osname}, {platform.system()} {platform.release()} {platform.machine()}",
        f"- Python: {', '.join(pythons)} ({platform.python_implementation()})",
    ]
    if runs:
        first, last = runs[0], max(runs, key=lambda d: d["ended"])
        peak = max(max(d["load_start"][0], d["load_end"][0]) for d in runs)
        out += [
            f"- run: {first['started']} to {last['ended']} ({len(runs)} benches)",
            "- load average (1, 5, 15 min) at the start: " + ", ".join(f"{x:.2f}" for x in first["load_start"])
            + "; at the end: " + ", ".join(f"{x:.2f}" for x in last["load_end"])
            + f"; highest 1-min figure seen by a bench: {peak:.2f}",
        ]
    out.append(f"- upstream: {', '.join(upstream) if upstream else 'none measured'}")
    guard = fresh.get("bench-core", {}).get("guard", {})
    if guard.get("read_alone_us") and guard.get("read_after_handoff_us"):
        alone, after = guard["read_alone_us"], guard["read_after_handoff_us"]
        out.append(f"- work right after a hand-off: the 4 KiB read takes {alone:.1f} µs alone and {after:.1f} µs "
                   f"(x{after / alone:.2f}) right after a bare hand-off round trip, no failsecure code in either: "
                   "what the caller runs next (framework, tool) is slower by this much once it has slept")
    return out


def render(fresh: dict, stale: dict) -> str:
    return "\n".join(["**Machine**", ""] + machine(fresh) + ["", table(rows(fresh, stale))])


def write_doc(doc: str, text: str) -> None:
    content = _read(doc)
    block = f"{START}\n{text}\n{END}"
    if START in content and END in content:
        head, rest = content.split(START, 1)
        content = head + block + rest.split(END, 1)[1]
    else:
        content = content.rstrip("\n") + "\n\n" + block + "\n"
    with open(doc + ".tmp", "w") as fh:
        fh.write(content)
    os.replace(doc + ".tmp", doc)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    fresh, stale = load(argv[0])
    text = render(fresh, stale)
    if len(argv) > 1:
        write_doc(argv[1], text)
        print(f"written to {argv[1]}\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
