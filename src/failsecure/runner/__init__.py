"""failsecure.runner: the command-hook runner (``failsecure hook run|install|uninstall``)
that wraps each command hook of a CLI host (Claude Code, Gemini CLI, Codex CLI, kiro_crew,
Pool) so that it fails closed. One module per concern:

- ``protocols``  each host's wire protocol: its deny shape, what an answer means
- ``process``    process supervision: new session, deadline, group kill, capped pipes, the
                 runner's last words when the host terminates it
- ``decision``   the decision: Outcomes reduced by ``failsecure.reduce`` (the core every
                 adapter uses), the audit event
- ``config``     the config, cached per user between calls
- ``settings``   ``hook install`` / ``hook uninstall`` (``wrap_settings`` / ``unwrap_settings``)
- ``cli``        ``hook run`` (hand-parsed, hot path) and the one argparse function for
                 ``hook run|install|uninstall``

Installed settings files start it through ``failsecure/command.py`` (the launcher), which
stays where it is so every installed hook keeps working across upgrades. This file is
imported on every hook run: it stays empty of code.
"""
