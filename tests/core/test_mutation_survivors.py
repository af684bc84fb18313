"""Tests that kill mutants which survived `tox -e mutation` (see docs/mutation.md)."""

import pytest

from failsecure import failures
from failsecure.failures import CRASHED, MISSING, TIMEOUT, process_failure


@pytest.mark.parametrize(
    "could_not_start, timed_out, returncode, category",
    [
        (True, False, None, MISSING),  # the command never started
        (True, True, 1, MISSING),  # not starting outranks everything else
        (False, True, None, TIMEOUT),
        (False, True, 0, TIMEOUT),  # a deadline overrun is a timeout even if it exited 0 later
        (False, False, None, CRASHED),  # no exit status at all
        (False, False, "0", CRASHED),  # only an int is an exit status
        (False, False, True, CRASHED),  # bool is not an exit status either
        (False, False, -9, CRASHED),  # killed by a signal
        (False, False, -1, CRASHED),
        (False, False, 126, MISSING),  # found but not executable
        (False, False, 127, MISSING),  # not found by the shell
        (False, False, 1, CRASHED),
        (False, False, 3, CRASHED),
        (False, False, 125, CRASHED),
        (False, False, 128, CRASHED),
        (False, False, 255, CRASHED),
        (False, False, 0, None),  # a normal exit
        (False, False, 2, None),  # the Claude-style block is a meaningful answer
    ],
)
def test_process_failure_maps_each_ending_to_one_category(could_not_start, timed_out, returncode, category):
    assert process_failure(could_not_start, timed_out, returncode) == category


def test_failure_reason_names_only_the_hook_and_category():
    assert failures.failure_reason("pre", MISSING) == "failsecure: hook 'pre' is missing"
    assert failures.failure_reason("pre", TIMEOUT) == "failsecure: hook 'pre' failed closed (timeout)"
