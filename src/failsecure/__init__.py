"""failsecure: pre-tool-call gates of agent frameworks that fail closed.

A gate that raises, hangs, is missing or answers junk denies the tool call; a deny from
any gate outranks an allow from any other; every decision is audited without payloads.

Importing this package is cheap on purpose (it runs at interpreter start through the
drop-in bootstrap): everything is loaded on first use.
"""

TYPE_CHECKING = False  # not typing's: importing typing costs the runner and every interpreter start

_LAZY = {
    "Action": "verdict",
    "Failure": "verdict",
    "Verdict": "verdict",
    "Outcome": "verdict",
    "Decision": "verdict",
    "Invalid": "verdict",
    "Adapter": "adapter",
    "PatchError": "adapter",
    "Check": "adapter",
    "hookimpl": "plugins",
    "ToolCall": "hookspecs",
    "install": "activation",
    "uninstall": "activation",
}

__all__ = sorted(_LAZY) + ["__version__"]

if TYPE_CHECKING:  # the public names, for IDEs and type checkers
    from .activation import install, uninstall
    from .adapter import Adapter, Check, PatchError
    from .hookspecs import ToolCall
    from .plugins import hookimpl
    from .verdict import Action, Decision, Failure, Invalid, Outcome, Verdict

    __version__: str


def __getattr__(name):
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("failsecure")
        except PackageNotFoundError:  # a source checkout that was never installed
            value = "0+unknown"
    else:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'failsecure' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"failsecure.{module}"), name)
    globals()[name] = value
    return value
