"""The conformance kit's harness API: what a framework author implements so the kit can
drive that framework's real dispatcher (``Harness``), and what one gate is shown and one
call did (``Seen``, ``Ran``).

A framework author (or an operator) writes one ``Harness`` for the framework and exposes
it as the pytest fixture ``failsecure_harness``; ``pytest --failsecure-conformance`` then
runs every case of the fault matrix through the framework's real dispatcher and prints
one table: for each case ``pass``, ``escape`` (the tool ran though it should not have)
or ``false deny`` (a legitimate call was blocked).

The tool every case calls takes one string argument, ``command``. A call whose command
contains ``forbidden`` is what the kit's policy gate denies; ``harmless`` is what it
allows. The harness's tool records whether it ran and with which arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


class NotSupported(Exception):
    """Raised by a harness for an answer or mode its framework does not have (the
    case is reported ``n/a``)."""


@dataclass
class Seen:
    """What one gate is shown: the tool name and the arguments as the gate sees them
    (a plain dict copy), plus ``native``: the framework's own objects of this gate call,
    for ``Harness.rewrite``."""

    tool: Optional[str]
    arguments: dict
    native: Any = None


@dataclass
class Ran:
    """What one tool call through the real dispatcher did.

    ``ran``: the tool's side effect happened. ``arguments``: what the tool ran with (None
    when it did not run). ``told``: every text the model or caller was given back for
    this call (tool result, error message, exception text), joined; the kit checks it
    for leaked secrets and for the failure category. ``asked``: the run stopped for a
    human's answer about this call (an approval interruption, a review) and the harness
    gave none: for a gate kind whose fail-closed answer is "ask a human" (an approval
    predicate) that is the deny; the audit must still show the failure category, and
    nothing told to the caller may leak."""

    ran: bool
    arguments: Optional[dict] = None
    told: str = ""
    asked: bool = False


class Harness:
    """How to drive one framework's real dispatcher. Subclass it, implement the methods,
    and return an instance from a pytest fixture named ``failsecure_harness``.

    Class attributes say what the framework has; cases that need something it has not
    are reported ``n/a``."""

    #: the adapter's name: the ``framework`` field of its audit events and hook-id prefix
    framework: str = ""
    #: ways to run a tool call ("sync", "async"); ``run`` gets one of them
    modes: tuple = ("sync",)
    #: the framework accepts async gates (coroutine functions)
    async_gates: bool = False
    #: the framework has an "ask a human" answer (``ask`` is implemented)
    has_ask: bool = False
    #: the gate kind this harness registers, when the framework has more than one (an
    #: item of its docs page's inventory: "PermissionRequest", "require_confirmation"...);
    #: its rows are reported as ``<version> <kind>``. A conftest offers one fixture per
    #: kind: ``failsecure_harness`` and ``failsecure_harness_<kind>``.
    kind: str = ""
    #: the gate kind waits for a person (failsecure gives it no default deadline, as
    #: upstream): the kit bounds each gate as a user does, with the kit's deadline as the
    #: gate's own ``[hooks."<id>"] timeout``, so the hang cases test that it holds
    interactive: bool = False
    #: the deadline (seconds) each gate of this kind gets in the kit's config; None: the
    #: kit's ``DEADLINE``. A kind whose gates are processes (command hooks) needs room for
    #: a process to start; it must stay below the kit's ``HANG`` (1 s)
    deadline: Optional[float] = None

    # ---------------------------------------------------------------- gates

    def add_gate(self, name: str, behave: Callable[[Seen], Any], *, is_async: bool = False) -> str:
        """Register one gate with the framework, the way its users do, after every gate
        added before it (registration order matters to some cases). When the framework
        calls it, it builds a ``Seen`` and returns ``behave(seen)`` unchanged (a raise or
        a hang passes through; for ``is_async`` the gate is a coroutine function that
        returns the same). Returns the gate's failsecure hook id (``[hooks."<id>"]``)."""
        raise NotImplementedError

    def reset(self) -> None:
        """Remove every gate added by ``add_gate`` (called before each case)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- native answers

    def allow(self, seen: Seen) -> Any:
        """The framework's explicit "allow" (or, where it has none, "no opinion")."""
        raise NotImplementedError

    def abstain(self, seen: Seen) -> Any:
        """The framework's "no opinion" (usually ``None``)."""
        return None

    def deny(self, seen: Seen) -> Any:
        """The framework's explicit deny, with a reason naming the gate."""
        raise NotImplementedError

    def ask(self, seen: Seen) -> Any:
        """The framework's "ask a human"; only when ``has_ask``."""
        raise NotSupported("ask")

    def junk(self) -> list[tuple[str, Any]]:
        """(label, native answer) pairs the framework's protocol does not define. Each
        must deny with failure ``invalid``. The kit adds hostile objects of its own."""
        raise NotImplementedError

    def rewrite(self, seen: Seen, arguments: dict) -> Any:
        """Make the tool run with ``arguments`` instead, the way a hook of this framework
        can (mutate the native input in place, or return the native rewrite answer), and
        return what the gate should return. ``NotSupported`` if hooks cannot rewrite."""
        raise NotSupported("rewrite")

    # ---------------------------------------------------------------- the call

    def run(self, arguments: dict, mode: str) -> Ran:
        """One tool call with ``arguments`` through the framework's real dispatcher (an
        agent run with a scripted model, or the narrowest real call path), in ``mode``.
        Must not raise for a denied call: catch the framework's deny exception and put
        its text into ``Ran.told``."""
        raise NotImplementedError

    def bypass(self, arguments: dict, mode: str) -> Ran:
        """One tool call with ``arguments`` *inside an agent run* by a path the framework's
        dispatcher never sees (the tool boundary, docs/ungoverned.md): a wrapper tool that
        calls another tool's inner run method, a custom executor or graph node. Same
        ``Ran`` as ``run`` (an ungoverned call that is denied: the ``Ungoverned`` text in
        ``told``). ``NotSupported`` when the harness has no such path (``n/a``)."""
        raise NotSupported("bypass")

    def install(self) -> None:
        """Make failsecure active for this framework (default: ``failsecure.install()``
        and import of the trigger module)."""
        import failsecure

        failsecure.install()

    def uninstall(self) -> None:
        """Run upstream as released (default: ``failsecure.uninstall()``)."""
        import failsecure

        failsecure.uninstall()

