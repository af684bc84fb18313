"""The ``failsecure`` command: ``doctor`` and the command-hook runner (``hook ...``)."""

from __future__ import annotations

import argparse
import json
import sys


def _doctor(args) -> int:
    import importlib

    from . import activation, policy

    config = policy.load_light()
    rows = []
    for name in activation.names():
        adapter = activation.get(name)
        row = adapter.status()
        if adapter.version is not None:
            try:
                importlib.import_module(adapter.modules[0])  # activates through the drop-in path
            except Exception as exc:
                row["import_error"] = type(exc).__name__
            if adapter.state == "unpatched" and args.activate:
                adapter.patch()
            row = adapter.status()
            if not args.no_self_test:
                try:
                    row["self_test"] = [c.as_dict() for c in adapter.self_test()]
                except Exception as exc:
                    row["self_test"] = [{"name": "self-test", "ok": False, "detail": type(exc).__name__}]
        rows.append(row)
    report = {
        "config": {"source": config.source, "error": config.error, "timeout": config.timeout, "on_error": config.on_error},
        "frameworks": rows,
    }
    failed = bool(config.error) or any(
        (r.get("state") == "refused" and r.get("version") is not None) or any(not c["ok"] for c in r.get("self_test", ())) for r in rows
    )
    if args.json:
        print(json.dumps(report, indent=2))
        return 1 if failed else 0
    print(f"config: {config.source or 'defaults'}" + (f"  ERROR: {config.error}" if config.error else ""))
    print(f"  on_error={config.on_error} timeout={config.timeout}s")
    for r in rows:
        if r["version"] is None:
            print(f"{r['framework']}: not installed (supported {r['supported']})")
            continue
        rng = "in supported range" if r["in_range"] else "UNTESTED release"
        upstream = "fails closed upstream" if r["fail_closed_upstream"] else "fails open upstream"
        print(f"{r['framework']} {r['version']}: {r['state']}, {rng} ({r['supported']}), {upstream}")
        if r.get("refused_reason"):
            print(f"  refused: {r['refused_reason']}")
        for c in r.get("self_test", ()):
            print(f"  [{'ok' if c['ok'] else 'FAIL'}] {c['name']}" + (f": {c['detail']}" if c["detail"] else ""))
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="failsecure", description="Fail-closed pre-tool-call gates.")
    sub = parser.add_subparsers(dest="command", required=True)
    doctor = sub.add_parser("doctor", help="frameworks found, versions, patch state, live self-test")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--no-self-test", action="store_true", help="skip the live self-test")
    doctor.add_argument("--no-activate", dest="activate", action="store_false", help="report only, patch nothing")
    doctor.set_defaults(func=_doctor)
    try:
        from .command import add_hook_commands
    except ImportError:
        pass
    else:
        add_hook_commands(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
