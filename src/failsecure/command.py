"""failsecure.command: the launcher of the command-hook runner.

Installed settings files name this file's path
(``.../site-packages/failsecure/command.py``), either as a script::

    /abs/python -I -S /abs/site-packages/failsecure/command.py run --protocol claude ...

or through the import launch line ``hook install`` writes::

    /abs/python -I -S -c 'import sys;...;from failsecure.command import script_main;script_main(sys.argv[2:])' SITE run ...

so it stays, tiny, and every installed hook keeps working across upgrades. The runner
itself is the package ``failsecure.runner`` (one module per concern: see its docstring).
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
        if "failsecure" not in sys.modules:
            parent = os.path.dirname(here)  # .../site-packages (or src/) holds failsecure/
            if parent not in sys.path:
                sys.path.append(parent)  # stdlib stays first

    _bootstrap()
    del _bootstrap

from failsecure.runner.cli import add_hook_commands, main, script_main  # noqa: E402

__all__ = ("add_hook_commands", "main", "script_main")

if __name__ == "__main__":
    script_main()
