"""The failure categories and the only text a model or user is told on a fail-closed
deny. No imports: the command-hook runner uses this on every tool call, and
``failsecure.verdict`` builds its ``Failure`` enum from it."""

RAISED = "raised"  # the hook raised (any exception, SystemExit included)
TIMEOUT = "timeout"  # the hook did not answer before its deadline
INVALID = "invalid"  # the hook answered something the framework would not honour
MISSING = "missing"  # the hook was not there: a required hook not loaded, a command that cannot start, a patch target gone
CRASHED = "crashed"  # the hook process died: a signal, or an exit status the protocol gives no meaning
UNGOVERNED = "ungoverned"  # a tool ran inside an agent run without a decision of failsecure for that call


def failure_reason(hook, category):
    """Hook id and category, nothing from the payload or the exception."""
    category = getattr(category, "value", category)
    if category == MISSING:
        return "failsecure: hook '%s' is missing" % (hook,)
    if category == UNGOVERNED:
        return "failsecure: a tool ran at '%s' without a decision for that call (ungoverned)" % (hook,)
    return "failsecure: hook '%s' failed closed (%s)" % (hook, category)


def process_failure(could_not_start, timed_out, returncode):
    """The category of a finished command hook, or None when the process itself ran to
    a meaningful exit (0, or 2 = the Claude-style block). Shared by every host of
    command hooks (the runner, hermes' shell hooks) so one process failure maps to one
    category everywhere."""
    if could_not_start:
        return MISSING
    if timed_out:
        return TIMEOUT
    if type(returncode) is not int or returncode < 0:
        return CRASHED  # killed by a signal
    if returncode in (126, 127):
        return MISSING  # the shell could not find or execute the command
    if returncode not in (0, 2):
        return CRASHED
    return None
