"""hook install's edit of Codex's config.toml (runner_settings.codex_set_trusted_hashes),
without a CLI: only the trusted_hash value of the named hooks changes, every other byte
stays, and a form it does not edit is reported rather than guessed at."""

import tomllib

from failsecure.runner.settings import codex_set_trusted_hashes

KEY = "/home/me/.codex/hooks.json:pre_tool_use:0:0"
OTHER = "/home/me/.codex/hooks.json:pre_tool_use:0:1"
CONFIG = '''model = "x"

[hooks.state."%s"]
trusted_hash = "sha256:old"   # reviewed
enabled = true

[hooks.state."%s"]
trusted_hash = "sha256:other"

[projects."/p"]
trust_level = "trusted"
''' % (KEY, OTHER)


def test_only_the_named_hash_changes():
    text, missing = codex_set_trusted_hashes(CONFIG, {KEY: "sha256:new"})
    assert missing == []
    assert text == CONFIG.replace("sha256:old", "sha256:new")
    state = tomllib.loads(text)["hooks"]["state"]
    assert state[KEY]["trusted_hash"] == "sha256:new" and state[OTHER]["trusted_hash"] == "sha256:other"


def test_an_untrusted_or_inline_hook_is_reported_not_guessed():
    inline = 'hooks.state = { "%s" = { trusted_hash = "sha256:old" } }\n' % KEY
    assert codex_set_trusted_hashes(inline, {KEY: "sha256:new"}) == (inline, [KEY])
    assert codex_set_trusted_hashes("model = 'x'\n", {KEY: "sha256:new"}) == ("model = 'x'\n", [KEY])
