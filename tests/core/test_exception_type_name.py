"""A raising gate's exception type name reaches the audit and stderr; a class made at run
time can carry any text in its name, so only a short identifier is kept."""

import pytest
from core_helpers import validate

from failsecure import guard
from failsecure.report import type_name
from failsecure.verdict import Failure

SECRET = "sk-live-0123456789 cat /etc/shadow"


def _raiser(name):
    cls = type(name, (Exception,), {})

    def hook():
        raise cls("payload")

    return hook


@pytest.mark.parametrize("name", [SECRET, "A" * 5000, "Bad\nName", "x.y"])
def test_a_run_time_exception_name_carrying_text_is_not_recorded(name, capsys):
    o = guard.call("t:named", _raiser(name), validate=validate, timeout=5)
    assert o.failure is Failure.RAISED
    assert o.exception_type == "<unnamed>"
    err = capsys.readouterr().err
    assert name not in err and "payload" not in err


def test_the_twin_an_ordinary_exception_name_is_recorded():
    o = guard.call("t:named", _raiser("PolicyError"), validate=validate, timeout=5)
    assert (o.failure, o.exception_type) == (Failure.RAISED, "PolicyError")
    assert type_name(KeyError()) == "KeyError" and type_name("é") == "str"
