"""Which CrewAI before-tool-call hooks wait for a person on a terminal: a hook whose code
names ``context.request_human_input`` (its own, or a function of its own module it calls,
or one it closes over) waits without the default deadline; a hook calling a helper of its
module that asks nobody keeps it (a hang is a timeout, the tool does not run)."""

from __future__ import annotations

import threading

from crewai.hooks import register_before_tool_call_hook

_release = threading.Event()


class FakeTTY:
    """A terminal whose person takes 0.5 s to press Enter (past the rig's deadline)."""

    def isatty(self):
        return True

    def readline(self):
        threading.Event().wait(0.5)  # a person thinking
        return "\n"


def _ask_the_person(context):  # a helper of this module: it asks
    context.request_human_input(prompt="Allow?")
    return True


def _hang(context):  # a helper of this module: it asks nobody
    _release.wait(5)
    return True


def test_a_hook_asking_through_a_helper_of_its_module_waits_for_the_person(rig, monkeypatch):
    monkeypatch.setattr("sys.stdin", FakeTTY())

    def asking(context):
        return _ask_the_person(context)

    register_before_tool_call_hook(asking)
    run = rig.run()
    assert run.ran
    assert rig.events() == [] or rig.last()["outcome"] != "deny"


def test_a_hook_closing_over_an_asking_function_waits_for_the_person(rig, monkeypatch):
    monkeypatch.setattr("sys.stdin", FakeTTY())

    def factory(check):
        def gate(context):
            return check(context)

        return gate

    hook = factory(_ask_the_person)
    register_before_tool_call_hook(hook)
    assert rig.run().ran


def test_a_hook_calling_a_helper_that_asks_nobody_keeps_the_deadline(rig, monkeypatch):
    monkeypatch.setattr("sys.stdin", FakeTTY())
    _release.clear()

    def hung(context):
        return _hang(context)

    register_before_tool_call_hook(hung)
    run = rig.run()
    _release.set()
    assert not run.ran, "the tool ran"
    event = rig.last()
    assert (event["outcome"], event["failure"], event["hook"]) == ("deny", "timeout", rig.hook_id(hung))
