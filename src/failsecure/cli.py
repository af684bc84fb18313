"""The ``failsecure`` command: ``doctor`` and the command-hook runner (``hook ...``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional

from .report import type_name


def _gate_rows(adapter, config) -> list[dict]:
    """Every gate the adapter finds registered now, with its effective policy and where
    each setting came from (so ``[hooks."<id>"]`` can be written without the audit)."""
    rows = []
    try:
        hook_ids = adapter.inventory()
    except Exception as exc:  # noqa: BLE001 - the command's answer: the row names the type, the command goes on
        return [{"error": type_name(exc)}]
    for hook_id in hook_ids:
        own = config.hook(hook_id)
        rows.append({
            "hook": hook_id,
            "role": own.role,
            "on_error": own.on_error,
            "timeout": config.timeout_for(hook_id),
            "from": {k: config.origins.get(f'hooks."{hook_id}".{k}', config.origins.get(k, "default"))
                     for k in ("role", "on_error", "timeout")},
        })
    return rows


#: run in a fresh interpreter (the user's, with doctor's own flags and environment): does
#: the drop-in start there, and is each framework patched by importing it alone?
_PROBE = r"""
import json, os, sys
boot = sys.modules.get("failsecure._bootstrap")
out = {"drop_in": bool(boot is not None and getattr(boot, "finder", None) in sys.meta_path),
       "no_site": bool(sys.flags.no_site), "pth": [], "frameworks": {},
       "auto": os.environ.get("FAILSECURE_AUTO", "1").strip().lower() not in ("0", "false", "no", "off")}
try:
    import site
    dirs = list(site.getsitepackages()) + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    out["pth"] = [d for d in dirs if os.path.isfile(os.path.join(d, "failsecure-auto.pth"))]
except BaseException as exc:  # whatever stops the site check is its row (by type name); the probe goes on
    out["pth_error"] = type(exc).__name__
for pair in sys.argv[1:]:
    name, _, trigger = pair.partition("=")
    row = out["frameworks"][name] = {}
    try:
        __import__(trigger)
    except BaseException as exc:  # a refused or broken import is this framework's row; the others are still probed
        row["import_error"] = type(exc).__name__
    activation = sys.modules.get("failsecure.activation")
    adapter = getattr(activation, "_adapters", {}).get(name) if activation is not None else None
    row["state"] = adapter.state if adapter is not None else "unpatched"
    row["intact"] = bool(adapter is not None and adapter.state == "patched" and adapter.intact())
sys.stdout.write("\n" + json.dumps(out) + "\n")
"""

#: how to guard a program where the drop-in does not start
EXPLICIT = "to guard a program there, call failsecure.install() at its start, before it imports the framework"


def _probe(frameworks: dict) -> dict:
    """What the user's interpreter does on its own: ``sys.executable`` with the flags and
    the environment doctor runs with (``python -S``, ``PYTHONPATH`` of a ``pip install
    --target`` directory or a zipapp), importing each installed framework's trigger module
    without ``install()``. Returns the probe's report, or ``{"error": ...}``."""
    import subprocess

    flags = getattr(subprocess, "_args_from_interpreter_flags")()  # the -S, -I, -X ... doctor runs with
    cmd = [sys.executable, *flags, "-c", _PROBE]
    cmd += [f"{name}={trigger}" for name, trigger in frameworks.items()]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        report = json.loads(done.stdout.rsplit("\n", 2)[-2])
        if not isinstance(report, dict):
            raise ValueError("not a report")
    except subprocess.TimeoutExpired:
        return {"error": "the fresh interpreter did not finish in 600 s"}
    except Exception as exc:  # noqa: BLE001 - the command's answer: the row names the type, the command goes on
        return {"error": f"the fresh interpreter gave no report ({type_name(exc)})"}
    report["python"] = cmd[0]
    report["flags"] = flags
    report["why_not"] = _why_not(report)
    return report


def _why_not(report: dict) -> Optional[str]:
    """Why the drop-in does not start in that interpreter (None when it does)."""
    if report.get("drop_in"):
        return None
    if not report.get("auto", True):
        return "it is turned off (FAILSECURE_AUTO=0)"
    if report.get("no_site"):
        return "the interpreter runs with -S: the site module, which reads .pth files, never runs"
    if not report.get("pth"):
        return ("failsecure-auto.pth is in no site-packages directory of this interpreter (failsecure was installed "
                "with pip --target, or runs from a zipapp, a source tree or PYTHONPATH): .pth files are read only there")
    return "failsecure-auto.pth is there but the drop-in did not start (it says why on stderr)"


def _doctor(args) -> int:
    import importlib

    from . import activation, boundary, plugins, policy

    config = policy.load_light()
    rows = []
    for name in activation.names():
        adapter = activation.get(name)
        row = adapter.status()
        if adapter.version is not None:
            try:
                importlib.import_module(adapter.modules[0])  # activates through the drop-in path
            except Exception as exc:  # noqa: BLE001 - the command's answer: the row names the type, the command goes on
                row["import_error"] = type_name(exc)
            if adapter.state == "unpatched" and args.activate:
                adapter.patch()
            row = adapter.status()
            row["gates"] = _gate_rows(adapter, config)
            # tool calls that ran inside an agent run without a decision (docs/ungoverned.md),
            # in this process (an application calling doctor in-process; the audit file
            # holds every process's)
            row["ungoverned"] = boundary.seen.get(name, 0)
            if not args.no_self_test:
                try:
                    row["self_test"] = [c.as_dict() for c in adapter.self_test()]
                except Exception as exc:  # noqa: BLE001 - the command's answer: the row names the type, the command goes on
                    row["self_test"] = [{"name": "self-test", "ok": False, "detail": type_name(exc)}]
        rows.append(row)
    if plugins._pm is None and plugins._has_entry_points():
        plugins.manager()
    builtin = set(_builtin_names())
    fresh = _probe({r["framework"]: activation.get(r["framework"]).modules[0] for r in rows
                    if r.get("version") is not None and r["framework"] in builtin})
    for r in rows:
        if r.get("version") is None:
            continue
        if r["framework"] not in builtin:
            r["fresh_interpreter"] = {"state": "unpatched", "why": "adapters from plugins are activated by failsecure.install() only"}
            continue
        got = fresh.get("frameworks", {}).get(r["framework"])
        if got is None:
            r["fresh_interpreter"] = {"state": "unknown", "why": fresh.get("error", "no report")}
        else:
            r["fresh_interpreter"] = dict(got, why=None if got.get("state") != "unpatched" else fresh.get("why_not"))
    report: dict = {
        "config": {"source": config.source, "files": config.sources, "error": config.error, "timeout": config.timeout,
                   "on_error": config.on_error, "ungoverned": config.ungoverned,
                   "ignored": [f"{w}: {s}" for w, s in config.ignored]},
        "plugins_failed": [{"plugin": n, "why": w} for n, w in plugins.load_failures],
        "plugin_aliases": [{"plugin": n, "registered_as": a} for n, a in plugins.aliases.items()],
        "drop_in": {k: fresh.get(k) for k in ("python", "flags", "drop_in", "why_not", "error")},
        "frameworks": rows,
        "hosts": _host_settings(),
        "codex_hook_trust": _codex_hook_trust(),
        "codex_hooks_off": _codex_hooks_off(),
    }
    failed = bool(config.error) or bool(plugins.load_failures) or any(
        h["bare"] or h.get("disable_all_hooks") or h.get("shell_prefix") or h.get("hooks_switched_off") or h.get("loader_env")
        for h in report["hosts"]) or any(
        not t.get("trusted") for t in report["codex_hook_trust"]) or bool(report["codex_hooks_off"]) or any(
        (r.get("state") == "refused" and r.get("version") is not None)
        or r.get("patch_lost")
        or _unguarded(r)
        or any(not c["ok"] for c in r.get("self_test", ()))
        for r in rows
    )
    if args.json:
        _out(json.dumps(report, indent=2))
        return 1 if failed else 0
    lines = [f"config: {', '.join(config.sources) or 'defaults'}" + (f"  ERROR: {config.error}" if config.error else ""),
             f"  on_error={config.on_error} timeout={config.timeout}s ungoverned={config.ungoverned}"]
    lines += [f"  ignored (project file may only tighten): {i}" for i in report["config"]["ignored"]]
    drop_in = report["drop_in"]
    if drop_in.get("error"):
        lines.append(f"drop-in: could not check a fresh interpreter ({drop_in['error']})")
    elif drop_in.get("drop_in"):
        lines.append(f"drop-in: starts in {' '.join([drop_in['python'], *drop_in['flags']])}")
    else:
        lines.append(f"drop-in: DOES NOT START in {' '.join([drop_in['python'], *drop_in['flags']])}: {drop_in['why_not']}; {EXPLICIT}")
    for name, why in plugins.load_failures:
        lines.append(f"plugin {name}: FAILED TO LOAD ({why}); every gated call is denied")
    for name, canonical in plugins.aliases.items():
        lines.append(f"plugin {name}: the same object as plugin {canonical}, registered once as {canonical} (hook id plugin:{canonical})")
    for r in rows:
        if r["version"] is None:
            lines.append(f"{r['framework']}: not installed (supported {r['supported']})")
            continue
        rng = "in supported range" if r["in_range"] else "UNTESTED release"
        upstream = "fails closed upstream" if r["fail_closed_upstream"] else "fails open upstream"
        lines.append(f"{r['framework']} {r['version']}: {r['state']}, {rng} ({r['supported']}), {upstream}")
        if r.get("refused_reason"):
            lines.append(f"  refused: {r['refused_reason']}")
        fresh_row = r.get("fresh_interpreter") or {}
        if fresh_row.get("state") == "unpatched":
            lines.append(f"  NOT PATCHED when a program imports it in a fresh interpreter ({fresh_row['why']}); {EXPLICIT}"
                         + (" (doctor patched it in its own process only)" if r["state"] == "patched" else ""))
        elif fresh_row.get("state") == "unknown":
            lines.append(f"  in a fresh interpreter: unknown ({fresh_row['why']})")
        elif fresh_row.get("import_error"):
            lines.append(f"  in a fresh interpreter: its import failed ({fresh_row['import_error']}), state {fresh_row['state']}")
        else:
            lines.append(f"  in a fresh interpreter: {fresh_row.get('state')} on import, by the drop-in")
        if r.get("patch_lost"):
            lines.append("  PATCH LOST: the patched functions were replaced since (a reload?); import the framework again or run failsecure.install()")
        for g in r.get("gates", ()):
            if "error" in g:
                lines.append(f"  gates: could not list ({g['error']})")
                continue
            lines.append(f"  gate {g['hook']}: role={g['role']} on_error={g['on_error']} timeout={g['timeout']}"
                         f"  (from {', '.join(f'{k}: {v}' for k, v in g['from'].items())})")
        if r.get("ungoverned"):
            lines.append(f"  UNGOVERNED: {r['ungoverned']} tool call(s) ran inside an agent run without a decision in this process "
                         "(audit failure \"ungoverned\"; docs/ungoverned.md)")
        for c in r.get("self_test", ()):
            lines.append(f"  [{'ok' if c['ok'] else 'FAIL'}] {c['name']}" + (f": {c['detail']}" if c["detail"] else ""))
    for h in report["hosts"]:
        advice = f"; run `failsecure hook install --host {h['host']} {h['path']}`" if h["bare"] else ""
        lines.append(f"host {h['host']} {h['path']}: {h['wrapped']} PreToolUse hook(s) wrapped, {h['bare']} bare{advice}"
                     + (f" ({h['error']})" if h.get("error") else ""))
        if h.get("disable_all_hooks"):
            lines.append(f"WARNING: host {h['host']} {h['path']}: \"disableAllHooks\": true switches every hook off, "
                         "the wrapped guards included (a repository can ship this in .claude/settings.json)")
        if h.get("hooks_switched_off"):
            lines.append(f"WARNING: host {h['host']} {h['path']}: \"hooksConfig\" {h['hooks_switched_off']}: Gemini CLI merges it "
                         "from every scope, so the wrapped guards it names do not run (a trusted workspace can ship this in "
                         ".gemini/settings.json)")
        if h.get("shell_form"):
            lines.append(f"NOTE: host {h['host']} {h['path']}: {h['shell_form']} wrapped hook(s) in shell form, which Claude Code "
                         "launches through the shell prefix a repository's settings `env` can set; run "
                         f"`failsecure hook install --host {h['host']} {h['path']}` again to rewrite them in exec form "
                         "(when the installed Claude Code supports it)")
        if h.get("gemini_expanded"):
            lines.append(f"NOTE: host {h['host']} {h['path']}: {h['gemini_expanded']} wrapped hook(s) whose launch line still "
                         "carries $GEMINI_PROJECT_DIR (or another variable Gemini CLI replaces in the text), where a project "
                         "folder's name can end the launch line; run "
                         f"`failsecure hook install --host {h['host']} {h['path']}` again to rewrite them")
        if h.get("shell_prefix"):
            lines.append(f"WARNING: host {h['host']} {h['path']}: its \"env\" sets \"CLAUDE_CODE_SHELL_PREFIX\": Claude Code "
                         "launches every shell-form hook through that program, which decides whether the wrapped guard runs "
                         "(a repository can ship this in .claude/settings.json; exec-form hooks are not launched through it)")
        if h.get("loader_env"):
            names = ", ".join('"%s"' % name for name in h["loader_env"])
            lines.append(f"WARNING: host {h['host']} {h['path']}: its \"env\" sets {names}: Claude Code passes it to every "
                         "hook, and the dynamic loader runs that library in the guard's /bin/sh before the runner starts, "
                         "which can skip the wrapped guard, exec form included (a repository can ship this in "
                         ".claude/settings.json)")
    lines += _codex_hook_trust_lines(report["codex_hook_trust"])
    for row in report["codex_hooks_off"]:
        lines.append(f"WARNING: codex config {row['path']}: [features] {row['key']} = false: Codex runs no hook, the wrapped "
                     "guards included (a trusted project can ship this in .codex/config.toml)")
    _out("\n".join(lines))
    return 1 if failed else 0


def _codex_hook_trust() -> list[dict]:
    """Codex runs a hook only when the user trusted its current hash, and skips any other
    SILENTLY (the tool runs): every PreToolUse command hook Codex sees from here, with
    its trust, asked of the real Codex CLI (`codex app-server`, `hooks/list`). Empty when
    no Codex CLI is found (--codex-bin's lookup: $FAILSECURE_CODEX_BIN, `codex` on PATH)."""
    import os

    from .runner import settings as settings

    binary = settings.codex_binary()
    if binary is None:
        return []
    try:
        _home, hooks = settings.codex_hook_states(binary, os.getcwd())
    except Exception as exc:  # noqa: BLE001 - the command's answer: the row names the type, the command goes on
        return [{"key": "-", "trusted": False, "status": "unknown", "error": str(exc)[:200] if isinstance(exc, settings.InstallError) else type_name(exc)}]
    rows = []
    for key, hook in sorted(hooks.items()):
        if hook.get("eventName") not in ("preToolUse", "permissionRequest") or hook.get("handlerType") != "command":
            continue
        status = hook.get("trustStatus")
        rows.append({"key": key, "source": hook.get("source"), "status": status,
                     "trusted": status == settings.CODEX_TRUSTED or bool(hook.get("isManaged"))})
    return rows


def _codex_hooks_off() -> list[dict]:
    """Codex config layers that switch hooks off (`[features] hooks = false`, or the
    deprecated `codex_hooks = false`): the user's ($CODEX_HOME/config.toml) and every
    project `.codex/config.toml` from here upward (a trusted project's is layered over
    the user's). Codex then runs no hook, however trusted."""
    import os

    paths = [os.path.join(os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex"), "config.toml")]
    here = os.getcwd()
    while True:
        paths.append(os.path.join(here, ".codex", "config.toml"))
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    rows = []
    seen = set()
    for path in paths:
        real = os.path.realpath(path)
        if real in seen or not os.path.isfile(real) or os.path.getsize(real) > 4 << 20:
            continue
        seen.add(real)
        try:
            import tomllib

            with open(real, "rb") as fh:
                features = tomllib.load(fh).get("features")
        except Exception:  # noqa: BLE001 - a config Codex cannot read either: nothing to flag here
            continue
        if not isinstance(features, dict):
            continue
        for key in ("hooks", "codex_hooks"):
            if features.get(key) is False:
                rows.append({"path": os.path.abspath(path), "key": key})
    return rows


def _codex_hook_trust_lines(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        if row.get("error"):
            lines.append(f"codex hooks: could not read their trust ({row['error']})")
        elif not row["trusted"]:
            lines.append(f"codex hook {row['key']}: {row['status'].upper()}: Codex skips it without a word and the tool runs;"
                         " review it in codex (/hooks)")
        else:
            lines.append(f"codex hook {row['key']}: trusted")
    return lines


def _builtin_names() -> list:
    from .adapters import BUILTIN

    return list(BUILTIN)


def _unguarded(row: dict) -> bool:
    """A built-in framework that a program importing it in a fresh interpreter would run
    unpatched, with the drop-in not deliberately off: doctor's own patch proves nothing."""
    fresh = row.get("fresh_interpreter")
    if row.get("version") is None or not fresh or fresh.get("state") != "unpatched":
        return False
    why = fresh.get("why") or ""
    return "FAILSECURE_AUTO=0" not in why and "failsecure.install() only" not in why


#: where each command-hook host keeps its settings: user level, then project level
HOST_SETTINGS = {
    "claude": ("~/.claude/settings.json", ".claude/settings.json", ".claude/settings.local.json"),
    "gemini": ("~/.gemini/settings.json", ".gemini/settings.json"),
    "codex": ("~/.codex/hooks.json", ".codex/hooks.json"),
}


# environment variables through which the dynamic loader runs a settings file's code in
# every program a hook starts, /bin/sh of the prelude first (tests/command_hooks/
# claude_code/test_project_preload.py): `hook install` pins them empty for Gemini CLI
# (the hook's own env); a Claude Code command hook has no such key
_LOADER_VARIABLES = ("LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH")


def _host_document(settings, path: str, host: str) -> dict:
    """A host settings file as the host reads it. Claude Code 2.1.332 reads a settings
    file after a UTF-8 byte-order mark (a repository's `disableAllHooks` included:
    tests/command_hooks/claude_code/test_project_settings_reading.py), and Gemini CLI
    parses its settings through strip-json-comments: such a file switches the user's
    guard off as a strict one does, so doctor reads it so too."""
    try:
        return settings._read_document(path)[1]
    except settings.InstallError:
        from .runner.protocols import _settings_document

        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            text = text[1:] if text.startswith("\ufeff") else text
            if host == "gemini":
                document = _settings_document(text)
            else:
                document = json.loads(text)
        except (OSError, ValueError):
            raise settings.InstallError("%s: not valid JSON%s" % (path, ", with or without comments" if host == "gemini" else "")) from None
        if not isinstance(document, dict):
            raise settings.InstallError("%s: the top level is not a JSON object" % path) from None
        return document


def _host_settings() -> list[dict]:
    """The command-hook hosts' settings files in their usual places, with how many
    PreToolUse hooks run under the runner and how many are bare."""
    import os

    rows = []
    for host, paths in HOST_SETTINGS.items():
        for raw in paths:
            path = os.path.expanduser(raw)
            if not os.path.isfile(path):
                continue
            row: dict = {"host": host, "path": os.path.abspath(path), "wrapped": 0, "bare": 0}
            try:
                from .runner import settings as settings

                document = _host_document(settings, path, host)
                for handler in settings._handlers(document, settings.HOSTS[host]):
                    row["wrapped" if settings._is_wrapped(handler) else "bare"] += 1
                    launch = settings._launch_of(handler) if host == "claude" else None
                    if launch is not None and not (launch.exec_form or launch.exec_shell):
                        # this release's prelude or the previous one, in shell form: Claude Code
                        # launches it through a CLAUDE_CODE_SHELL_PREFIX any settings file (a
                        # repository's too) can set; a re-install writes exec form
                        row["shell_form"] = row.get("shell_form", 0) + 1
                    if host == "gemini" and settings._is_wrapped(handler) and settings._gemini_unprotected(handler.get("command")):
                        # written before the prelude protected what Gemini expands textually
                        # ($GEMINI_PROJECT_DIR, ...): a project folder's name can end the prelude
                        row["gemini_expanded"] = row.get("gemini_expanded", 0) + 1
                if host == "claude" and document.get("disableAllHooks") is True:
                    row["disable_all_hooks"] = True  # Claude Code then runs no hook, wrapped guards included
                switch = document.get("hooksConfig") if host == "gemini" else None
                if isinstance(switch, dict) and (switch.get("enabled") is False or switch.get("disabled")):
                    # merged from every scope (disabled: a union): the user's guard does not run
                    row["hooks_switched_off"] = ("enabled: false switches every hook off" if switch.get("enabled") is False
                                                 else "disabled lists hook(s) that then never run")
                env = document.get("env") if host == "claude" else None
                if isinstance(env, dict) and env.get("CLAUDE_CODE_SHELL_PREFIX"):
                    row["shell_prefix"] = True  # shell-form hooks launched through it (its value never printed)
                loaders = [name for name in _LOADER_VARIABLES
                           if isinstance(env, dict) and env.get(name) and not raw.startswith("~")]  # the user's own: trusted
                if loaders:
                    # Claude Code passes a settings file's env to every hook it starts, and the
                    # dynamic loader acts on /bin/sh before the prelude runs (exec form too)
                    row["loader_env"] = loaders  # names only, never the values
            except Exception as exc:  # noqa: BLE001 - the command's answer: the row names the type, the command goes on
                row["error"] = str(exc)[:200] if type(exc).__name__ == "InstallError" else type_name(exc)
            rows.append(row)
    return rows


def _out(text: str) -> None:
    """Print, and end quietly when the reader went away (``doctor --json | head``)."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(0) from None


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
    lines.append(f"audit.otel = {str(config.audit_otel).lower()}  ({origin('audit_otel')})")
    for hook_id, own in sorted(config.hooks.items()):
        for key in ("on_error", "timeout", "role"):
            name = f'hooks."{hook_id}".{key}'
            if name in config.origins:
                lines.append(f"{name} = {getattr(own, key)}  ({config.origins[name]})")
        name = f'hooks."{hook_id}".timeout (waiting for a human)'
        if name in config.origins:
            lines.append(f'hooks."{hook_id}".timeout = {own.interactive_timeout} while it waits for a human  ({config.origins[name]})')
    for framework, own in sorted(config.frameworks.items()):
        for key, value in sorted(own.items()):
            name = f'frameworks."{framework}".{key}'
            lines.append(f"{name} = {value}  ({config.origins.get(name, 'default')})")
    for where, setting in config.ignored:
        lines.append(f"ignored: {setting}  ({where}; trust it with `failsecure config trust {where}`)")
    lines.append("files read: " + (", ".join(config.sources) if config.sources else "none"))
    lines.append(f"trusted project files: {policy.trust_store()}")
    return lines


def _config_show(args) -> int:
    from . import policy

    config = policy.load_light()
    if args.json:
        print(json.dumps(dict(
            config.to_dict(),
            origins=config.origins, ignored=[{"file": w, "setting": s} for w, s in config.ignored], files=config.sources,
        ), indent=2))
    else:
        _out("\n".join(_config_lines(config)))
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
    except (OSError, ValueError) as exc:
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
        from .runner.cli import add_hook_commands
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
