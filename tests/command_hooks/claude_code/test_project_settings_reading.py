"""How Claude Code 2.1.332 reads a repository's `.claude/settings.json` that is not
strict JSON. A UTF-8 byte-order mark before it: read, so its `disableAllHooks: true`
switches the user's wrapped guard off (the guard never starts, the tool runs); a `//`
comment in it: not read (the guard runs). So `failsecure doctor` reads a file with a
mark as the CLI does (it read it as strict JSON: an error note, exit 0 — the switch was
not flagged): tests/command_hooks/test_runner_host_reading.py."""

import json
import os

from test_claude_code_e2e import audit_events, hook_id, hook_script, install, settings_with


def project_file(run_claude, text):
    path = run_claude.project / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_premise_a_projects_disable_all_hooks_after_a_bom_turns_the_users_guard_off(tmp_path, run_claude, scripted_api, claude_cli):
    project_file(run_claude, "\ufeff" + json.dumps({"disableAllHooks": True}))
    settings_with(run_claude.settings, hook_script(tmp_path, "crash.sh", "exit 1"))
    install(run_claude.settings, claude_cli)
    run_claude()
    assert os.path.exists(scripted_api.marker), "Claude Code did not read the file after its byte-order mark"
    assert audit_events(run_claude) == []


def test_premise_a_commented_projects_file_is_not_read(tmp_path, run_claude, scripted_api, claude_cli):
    project_file(run_claude, '{\n  // the team\'s defaults\n  "disableAllHooks": true\n}\n')
    crash = hook_script(tmp_path, "crash.sh", "exit 1")
    settings_with(run_claude.settings, crash)
    install(run_claude.settings, claude_cli)
    run_claude()
    assert not os.path.exists(scripted_api.marker)
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_claude)] == [(hook_id(crash), "deny", "crashed")]
