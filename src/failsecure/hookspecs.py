"""The hook specifications plugins implement (with ``failsecure.plugins.hookimpl``).

A plugin is a module or object with ``@hookimpl`` functions, registered through the
``failsecure`` entry-point group (or ``failsecure.plugins.register``).
"""

from __future__ import annotations

from typing import Any, Optional

import pluggy

hookspec = pluggy.HookspecMarker("failsecure")


class ToolCall:
    """What a cross-framework gate is shown about a tool call.

    ``arguments`` is a copy of the framework's payload (``integrity.snapshot``: its
    dicts, lists and tuples copied, other objects shared): a gate may read it, but
    changing it does not change what the tool runs with. failsecure never audits or
    displays it."""

    __slots__ = ("framework", "tool", "arguments", "call_id")

    def __init__(self, framework: str, tool: Optional[str], arguments: Any = None, call_id: Optional[str] = None):
        self.framework = framework
        self.tool = tool
        self.arguments = arguments
        self.call_id = call_id

    def __repr__(self) -> str:  # never the arguments
        return f"ToolCall(framework={self.framework!r}, tool={self.tool!r}, call_id={self.call_id!r})"


@hookspec
def failsecure_pre_tool_call(call: ToolCall) -> Optional[Any]:
    """Decide on a tool call in any framework: return a ``failsecure.Verdict`` or None
    for no opinion. Runs under the fail-closed guard: raising, hanging past the deadline
    or returning anything else denies the call (hook id ``plugin:<plugin name>``)."""


@hookspec
def failsecure_audit(event: dict) -> None:
    """Receive one audit event (a dict of the documented fields; no payloads)."""


@hookspec
def failsecure_adapters() -> list:  # type: ignore[empty-body]
    """Return adapter classes (subclasses of ``failsecure.adapter.Adapter``) to activate."""
