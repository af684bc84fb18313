"""failsecure.command: the launcher of the command-hook runner.

Installed settings files name this file's path
(``.../site-packages/failsecure/command.py``), either as a script::

    /abs/python -I -S /abs/site-packages/failsecure/command.py run --protocol claude ...

or through the import launch line ``hook install`` writes::

    /abs/python -I -S -c 'import sys;...;from failsecure.command import script_main;script_main(sys.argv[2:])' SITE run ...

so it stays, tiny, and every installed hook keeps working across upgrades. The runner
itself is one module per concern:

- ``runner_protocols``  each host's wire protocol: its deny shape, what an answer means
- ``runner_process``    process supervision: new session, deadline, group kill, capped
                        pipes, the runner's last words when the host terminates it
- ``runner_decision``   the decision: Outcomes reduced by ``failsecure.reduce`` (the
                        core every adapter uses), the audit event
- ``runner_config``     the config, cached per user between calls
- ``runner_settings``   ``hook install`` / ``hook uninstall`` (``wrap_settings`` /
                        ``unwrap_settings``)
- ``runner_cli``        ``hook run`` (hand-parsed, hot path) and the one argparse
                        function for ``hook run|install|uninstall``
"""

import os
import sys

if __name__ == "__main__":  # started as a script: make `failsecure` importable

    def _bootstrap():
        here = os.path.dirname(os.path.abspath(__file__))
        # Without -I the script directory is sys.path[0]; siblings must never
        # shadow anything, so drop it.
        while here in sys.path:
            sys.path.remove(here)
        if "failsecure" in sys.modules:
            return
        if os.path.basename(here) == "failsecure":
            parent = os.path.dirname(here)
            if parent not in sys.path:
                sys.path.append(parent)  # stdlib stays first
            return
        # Development layout (source dir not named "failsecure", editable
        # install whose finder -S does not load): load the package from here.
        external = sys.modules["_frozen_importlib_external"]
        bootstrap = sys.modules["_frozen_importlib"]
        spec = external.spec_from_file_location(
            "failsecure",
            os.path.join(here, "__init__.py"),
            submodule_search_locations=[here],
        )
        module = bootstrap.module_from_spec(spec)
        sys.modules["failsecure"] = module
        spec.loader.exec_module(module)

    _bootstrap()
    del _bootstrap

from failsecure.runner_cli import add_hook_commands, main, script_main  # noqa: E402

__all__ = ("add_hook_commands", "main", "script_main")

if __name__ == "__main__":
    script_main()
