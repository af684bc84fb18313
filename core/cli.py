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


def _config_lines(config) -> list[str]:
    """Each effective value with the file it came from, then what was ignored."""
    from . import policy

    def origin(key: str) -> str:
        return config.origins.get(key, "default")

    lines = []
    if config.error:
        lines.append(f"ERROR: {config.error}")
    lines.append(f"on_error = {config.on_error}  ({origin('on_error')})")
    lines.append(f"timeout = {config.timeout}  ({origin('timeout')})")
    lines.append(f"required = {list(config.required)}  ({origin('required') if config.required else 'default'})")
    lines.append(f"audit.path = {config.audit_path}  ({origin('audit_path') if config.audit_path else 'default'})")
    for hook_id, own in sorted(config.hooks.items()):
        for key in ("on_error", "timeout", "role"):
            name = f'hooks."{hook_id}".{key}'
            if name in config.origins:
                lines.append(f"{name} = {getattr(own, key)}  ({config.origins[name]})")
    for where, setting in config.ignored:
        lines.append(f"ignored: {setting}  ({where}; trust it with `failsecure config trust {where}`)")
    lines.append("files read: " + (", ".join(config.sources) if config.sources else "none"))
    lines.append(f"trusted project files: {policy.trust_store()}")
    return lines


def _config_show(args) -> int:
    from . import policy

    config = policy.load_light()
    if args.json:
        print(json.dumps({
            "error": config.error, "on_error": config.on_error, "timeout": config.timeout,
            "required": list(config.required), "audit_path": config.audit_path,
            "hooks": {h: {"on_error": p.on_error, "timeout": p.timeout, "role": p.role} for h, p in config.hooks.items()},
            "origins": config.origins, "ignored": [{"file": w, "setting": s} for w, s in config.ignored],
            "files": config.sources,
        }, indent=2))
    else:
        print("\n".join(_config_lines(config)))
    return 1 if config.error else 0


def _config_trust(args) -> int:
    from . import policy

    path = args.file
    if path is None:
        path, _ = policy.project_path()
        if path is None:
            print("failsecure: no project config (failsecure.toml or [tool.failsecure]) from here upward", file=sys.stderr)
            return 2
    try:
        entry = policy.trust(path)
    except OSError as exc:
        print(f"failsecure: cannot trust {path} ({type(exc).__name__})", file=sys.stderr)
        return 2
    digest, _, where = entry.partition(" ")
    print(f"trusted {where} (sha256 {digest[:16]}...); any edit drops the trust")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="failsecure", description="Fail-closed pre-tool-call gates.")
    sub = parser.add_subparsers(dest="command", required=True)
    doctor = sub.add_parser("doctor", help="frameworks found, versions, patch state, live self-test")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--no-self-test", action="store_true", help="skip the live self-test")
    doctor.add_argument("--no-activate", dest="activate", action="store_false", help="report only, patch nothing")
    doctor.set_defaults(func=_doctor)
    config = sub.add_parser("config", help="the effective configuration, and trust of project files")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    show = config_sub.add_parser("show", help="each effective value with the file it came from, and what was ignored")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_config_show)
    trust = config_sub.add_parser("trust", help="give a project config file full effect (until it is edited)")
    trust.add_argument("file", nargs="?", default=None, help="default: the project config found from here")
    trust.set_defaults(func=_config_trust)
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
