"""What Gemini CLI 0.61.0 reads as a hook's answer besides plain stdout, and the runner
answering and auditing exactly that.

`HookRunner.executeCommandHook` parses `stdout.trim() || stderr.trim()`: a hook that
exits 0 with nothing on stdout and a JSON answer on stderr has answered with it (a
deny there blocks the tool), and `String.prototype.trim` strips a UTF-8 byte-order
mark (U+FEFF), so a BOM-prefixed answer on stdout is read too. Each: the bare hook
first (the host itself), then the same hook under the runner, with its twin.
"""

import json
import os

import pytest
from test_gemini_cli_e2e import assert_ran, audit_events, hook_id, hook_script, install, settings_with

BOM = "\\357\\273\\277"  # printf octal escapes of EF BB BF
DENY = json.dumps({"decision": "deny", "reason": "stderr says no"})
ALLOW = json.dumps({"decision": "allow"})

HOOKS = {
    "stderr-deny": "printf '%%s\\n' '%s' >&2; exit 0" % DENY,
    "stderr-allow": "printf '%%s\\n' '%s' >&2; exit 0" % ALLOW,
    "bom-deny": "printf '%s%%s\\n' '%s'" % (BOM, DENY.replace("stderr", "bom")),
    "bom-allow": "printf '%s%%s\\n' '%s'" % (BOM, ALLOW),
}


def stopped_with(run_gemini, scripted_api, text):
    proc = run_gemini()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert not os.path.exists(scripted_api.marker), "the tool ran"
    assert text in json.dumps(scripted_api.function_responses())


@pytest.mark.parametrize("kind,reason", [("stderr-deny", "stderr says no"), ("bom-deny", "bom says no")])
def test_premise_gemini_reads_the_deny(tmp_path, run_gemini, scripted_api, kind, reason):
    settings_with(run_gemini.settings, hook_script(tmp_path, kind + ".sh", HOOKS[kind]))
    stopped_with(run_gemini, scripted_api, reason)


@pytest.mark.parametrize("kind", ["stderr-allow", "bom-allow"])
def test_premise_gemini_reads_the_allow(tmp_path, run_gemini, scripted_api, kind):
    settings_with(run_gemini.settings, hook_script(tmp_path, kind + ".sh", HOOKS[kind]))
    assert_ran(run_gemini(), scripted_api)


@pytest.mark.parametrize("kind,reason", [("stderr-deny", "stderr says no"), ("bom-deny", "bom says no")])
def test_the_runner_answers_and_audits_the_deny_gemini_reads(tmp_path, run_gemini, scripted_api, kind, reason):
    script = hook_script(tmp_path, kind + ".sh", HOOKS[kind])
    settings_with(run_gemini.settings, script)
    install(run_gemini)
    stopped_with(run_gemini, scripted_api, reason)
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [(hook_id(script), "deny", None)]


@pytest.mark.parametrize("kind", ["stderr-allow", "bom-allow"])
def test_the_runner_answers_and_audits_the_allow_gemini_reads(tmp_path, run_gemini, scripted_api, kind):
    script = hook_script(tmp_path, kind + ".sh", HOOKS[kind])
    settings_with(run_gemini.settings, script)
    install(run_gemini)
    assert_ran(run_gemini(), scripted_api)
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [(hook_id(script), "allow", None)]


# Gemini reads all of an exit-0 hook's stderr; the runner kept 64 KiB of it, so a deny
# there past that (a long reason, or padding before it) was cut, read as no answer and
# passed on cut: the tool ran where the bare hook is blocked.
PAD = "printf '%71680s' '' >&2; "
HOOKS.update({
    "big-stderr-deny": PAD + "printf '%%s\\n' '%s' >&2; exit 0" % DENY.replace("stderr", "big stderr"),
    "big-stderr-allow": PAD + "printf '%%s\\n' '%s' >&2; exit 0" % ALLOW,
})


def test_premise_gemini_reads_a_deny_past_64k_of_stderr(tmp_path, run_gemini, scripted_api):
    settings_with(run_gemini.settings, hook_script(tmp_path, "big.sh", HOOKS["big-stderr-deny"]))
    stopped_with(run_gemini, scripted_api, "big stderr says no")


def test_the_runner_answers_and_audits_a_deny_past_64k_of_stderr(tmp_path, run_gemini, scripted_api):
    script = hook_script(tmp_path, "big.sh", HOOKS["big-stderr-deny"])
    settings_with(run_gemini.settings, script)
    install(run_gemini)
    stopped_with(run_gemini, scripted_api, "big stderr says no")
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [(hook_id(script), "deny", None)]


def test_the_runner_passes_on_an_allow_past_64k_of_stderr_twin(tmp_path, run_gemini, scripted_api):
    script = hook_script(tmp_path, "big.sh", HOOKS["big-stderr-allow"])
    settings_with(run_gemini.settings, script)
    install(run_gemini)
    assert_ran(run_gemini(), scripted_api)
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [(hook_id(script), "allow", None)]


# Gemini parses a JSON string on stdout once more (as on stderr): the runner read it as
# junk, a false deny of a wrapped allow and a wrapped deny audited as invalid
HOOKS.update({
    "wrapped-deny": "cat <<'EOF'\n%s\nEOF" % json.dumps(DENY.replace("stderr", "wrapped")),
    "wrapped-allow": "cat <<'EOF'\n%s\nEOF" % json.dumps(ALLOW),
})


def test_premise_gemini_reads_a_json_string_on_stdout(tmp_path, run_gemini, scripted_api):
    settings_with(run_gemini.settings, hook_script(tmp_path, "w.sh", HOOKS["wrapped-deny"]))
    stopped_with(run_gemini, scripted_api, "wrapped says no")
    settings_with(run_gemini.settings, hook_script(tmp_path, "w2.sh", HOOKS["wrapped-allow"]))
    assert_ran(run_gemini(), scripted_api)


def test_the_runner_answers_and_audits_a_deny_in_a_json_string(tmp_path, run_gemini, scripted_api):
    script = hook_script(tmp_path, "w.sh", HOOKS["wrapped-deny"])
    settings_with(run_gemini.settings, script)
    install(run_gemini)
    stopped_with(run_gemini, scripted_api, "wrapped says no")
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [(hook_id(script), "deny", None)]


def test_the_runner_passes_on_an_allow_in_a_json_string_twin(tmp_path, run_gemini, scripted_api):
    script = hook_script(tmp_path, "w.sh", HOOKS["wrapped-allow"])
    settings_with(run_gemini.settings, script)
    install(run_gemini)
    assert_ran(run_gemini(), scripted_api)
    assert [(e["hook"], e["outcome"], e["failure"]) for e in audit_events(run_gemini)] == [(hook_id(script), "allow", None)]
