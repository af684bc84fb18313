"""The one hook-id sanitizer (``hookid._clean``: a callable's name, ``command_id`` for a
command hook's id) and the one str-or-None helper pair of the core and the adapter SDK."""

import pytest

from failsecure import adapter, hookid
from failsecure.runner import decision


@pytest.mark.parametrize("given, expected", [
    ("command:guard#1a2b", "command:guard#1a2b"),  # the prefix and a derived id's '#' kept
    ("a b;c$(d)<e>", "a_b_c__d__e_"),  # what a shell or a log reads, and '<>', replaced
    ("é", "_"),  # letters outside ASCII
    ("", "hook"),
    ("x" * 300, "x" * 300),  # no limit on an id given explicitly
])
def test_command_id_keeps_only_the_characters_of_a_command_hook_id(given, expected):
    assert hookid.command_id(given) == expected


def test_the_runner_uses_the_one_sanitizer():
    assert decision.hook_id_for("a b", ["/bin/true"]) == "command:a_b"
    assert decision.hook_id_for("command:x", ["/bin/true"]) == "command:x"
    derived = decision.hook_id_for(None, ["/usr/bin/guard", "--token", "s3cret"])
    assert derived.startswith("command:guard#") and "s3cret" not in derived


def test_a_callable_name_keeps_its_own_characters():
    def f():
        pass

    assert hookid.callable_name(f).endswith("test_a_callable_name_keeps_its_own_characters.<locals>.f")


class Str(str):
    pass


@pytest.mark.parametrize("value, plain, nonempty", [
    ("tool", "tool", "tool"),
    ("", "", None),
    (Str("tool"), None, None),  # a subclass could run code of its own
    (None, None, None),
    (3, None, None),
])
def test_plain_str_and_nonempty_str(value, plain, nonempty):
    assert hookid.plain_str(value) == plain and hookid.nonempty_str(value) == nonempty
    assert adapter.plain_str is hookid.plain_str and adapter.nonempty_str is hookid.nonempty_str
