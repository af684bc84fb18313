"""failsecure: pre-tool-call gates of agent frameworks that fail closed.

A gate that raises, hangs, is missing or answers junk denies the tool call; a deny from
any gate outranks an allow from any other; every decision is audited without payloads.

Importing this package is cheap on purpose (it runs at interpreter start through the
drop-in bootstrap): everything is loaded on first use.
"""

__version__ = "0.1.0"

_LAZY = {
    "Action": "verdict",
    "Failure": "verdict",
    "Verdict": "verdict",
    "Outcome": "verdict",
    "Decision": "verdict",
    "Invalid": "verdict",
    "hookimpl": "plugins",
    "ToolCall": "hookspecs",
    "install": "activation",
    "uninstall": "activation",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'failsecure' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"failsecure.{module}"), name)
    globals()[name] = value
    return value
