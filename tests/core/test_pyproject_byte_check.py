"""The pyproject byte check (``policy._table_in_bytes`` and its helpers ``_back`` and
``_tool_array``): what it answers for each spelling, exactly.

test_config_trust.py proves the check sound against tomllib (it never says NO for a file
with ``tool.failsecure``, never HEADER for one without the table) and, in a child process,
that the usual pyprojects are decided without importing tomllib. These cases pin the answer
itself in-process: NO where a pyproject only names failsecure (a dependency), HEADER where
a header line settles it, MAYBE (parse it) for everything in between. A check that says
MAYBE where NO or HEADER is right costs the command-hook runner the tomllib import on every
tool call; one that says NO or HEADER where MAYBE is right would skip the parse that decides.
"""

import os

import pytest

from failsecure import policy
from failsecure.policy import HEADER, MAYBE, NO

CASES = [
    # no key at all: only a value, a dependency, a longer name
    (b"", NO),
    (b"failsecure", NO),
    (b'name = "failsecure"\n', NO),
    (b'[project]\ndependencies = ["failsecure>=1", "failsecure"]\n', NO),
    (b'deps = ["failsecure"]\n', NO),
    (b"failsecure]\n", NO),
    (b'failsecure == "1"\n', NO),
    (b"failsecure-x = 1\n", NO),
    (b"xfailsecure = 1\n", NO),
    (b"XfailsecureX = 1\n", NO),
    (b"failsecure_x = 1\nx = 1\n", NO),
    # a key: parse it
    (b"failsecure = 1", MAYBE),
    (b"failsecure = 1\n", MAYBE),
    (b'"failsecure" = 1\n', MAYBE),
    (b"'failsecure' = 1\n", MAYBE),
    (b"failsecure.x = 1\n", MAYBE),
    (b"x.failsecure = 1\n", MAYBE),
    (b"tool.failsecure.timeout = 2\n", MAYBE),
    (b"x.failsecure", MAYBE),
    (b"x.failsecure ", MAYBE),
    (b".failsecure]\n", MAYBE),
    (b'x = "failsecure"\nfailsecure = 1\nfailsecure-y = 2\n', MAYBE),
    (b"failsecure-x = 1\nfailsecure = 1\nfailsecure-y = 2\n", MAYBE),
    # a header on a line of its own in a plain file: settled without parsing
    (b"[tool.failsecure]", HEADER),
    (b"[tool.failsecure]\n", HEADER),
    (b"[tool.failsecure]\na = [", HEADER),
    (b"x = 1\n[tool.failsecure]\n", HEADER),
    (b"x = 1\r\n[tool.failsecure]\r\n", HEADER),
    (b"a = [\n[tool.failsecure]\n", HEADER),
    (b" [tool.failsecure]\n", HEADER),
    (b"x = 1\n [tool.failsecure]\n", HEADER),
    (b"\t[ tool . failsecure ]\n", HEADER),
    (b"[ tool.failsecure]\n", HEADER),
    (b"[\ttool.failsecure]\n", HEADER),
    (b'["tool".failsecure]\n', HEADER),
    (b"['tool'.\"failsecure\"]\n", HEADER),
    (b'[tool."failsecure"]\n', HEADER),
    (b"[tool.failsecure.hooks]\n", HEADER),
    (b'[tool.failsecure.hooks."fw:x"]\ntimeout = 2\n', HEADER),
    (b"[[tool.mypy.overrides]]\nx = 1\n[tool.failsecure]\n", HEADER),
    (b"[[toolbox]]\n[tool.failsecure]\n", HEADER),
    (b"[[tool.x]] # failsecure\n[tool.failsecure]\n", HEADER),
    (b"[[a]]\n[tool.failsecure]\n", HEADER),
    # a header-like spelling that is not one: parse it
    (b"tool.failsecure]\n", MAYBE),
    (b"=tool.failsecure]\n", MAYBE),
    (b"x[tool.failsecure]\n", MAYBE),
    (b"a = 1 [tool.failsecure]\n", MAYBE),
    (b"[x.failsecure]\n", MAYBE),
    (b"[notool.failsecure]\n", MAYBE),
    (b'["xtool".failsecure]\n', MAYBE),
    (b"[\"tool'.failsecure]\n", MAYBE),
    (b"[[tool.failsecure]]\n", MAYBE),
    # a header in a file that may hide it (multi-line strings, escapes, an array of tool)
    (b'[tool.failsecure]\nx = """a"""\n', MAYBE),
    (b"[tool.failsecure]\nx = '''a'''\n", MAYBE),
    (b'[tool.failsecure]\nx = "\\u00e9"\n', MAYBE),
    (b'x = "\\U0001F600"\n[tool.failsecure]\n', MAYBE),
    (b"[[tool]]\n[tool.failsecure]\n", MAYBE),
    (b"[[ tool ]]\n[tool.failsecure]\n", MAYBE),
    (b'[["tool"]]\n[tool.failsecure]\n', MAYBE),
    (b"[['tool']]\n[tool.failsecure]\n", MAYBE),
    (b"[[tool.x\n[tool.failsecure]\n", MAYBE),
    (b"[tool.failsecure]\n[[tool]]\n", MAYBE),
]


# plain ids: a node id with brackets, slashes or line breaks in it cannot be selected by name
# (mutmut runs each mutant's tests by their node ids)
def ids(cases):
    return [f"case{n}" for n in range(len(cases))]


@pytest.mark.parametrize("raw, said", CASES, ids=ids(CASES))
def test_table_in_bytes_answers_exactly(raw, said):
    got = policy._table_in_bytes(raw)
    assert got is said or (type(got) is int and got == said), (raw, got)


TOOL_ARRAYS = [
    (b"[[tool]]", True),
    (b"[[tool]]\n[[a]]\n", True),
    (b"[[a]]\n[[tool]]\n", True),
    (b"x = 1\n[[ tool ]]\n", True),
    (b"[[\ttool\t]]", True),
    (b'[["tool"]]', True),
    (b"[['tool']]", True),
    (b'[[ "tool" ]]', True),
    (b"[[tool.failsecure]]", True),
    (b"[[tool . failsecure]]", True),
    (b"[[tool.failsecure", True),  # no closing bracket: the rest of the file is looked at
    (b"[[tool.x.failsecure]]", True),
    (b"", False),
    (b"[tool]", False),
    (b"[[toolbox]]", False),
    (b"[[tool.x]]", False),
    (b"[[tool.x", False),
    (b"[[tool.x]] failsecure", False),
    (b"[[tool.x]]\n[tool.failsecure]\n", False),
    (b"[[tool]", True),
    (b"[[tools]]", False),
    (b'[["tools"]]', False),
    (b"[[a]]", False),
    (b"[[tool", False),
    (b"[[", False),
    (b"x = 1\n[[ ", False),
    (b'[["tool".failsecure]]', True),
    (b"[a]\n[[tool.failsecure]]", True),  # the closing bracket is looked for after the name
    (b"[[a]]\n[[tool]]\n[[b]]\n", True),
    (b"[[[[tool]]", True),
]


@pytest.mark.parametrize("raw, found", TOOL_ARRAYS, ids=ids(TOOL_ARRAYS))
def test_tool_array_finds_an_array_of_tool_or_under_failsecure(raw, found):
    assert policy._tool_array(raw) is found, raw


BACKS = [
    (b"tool", 3, -1),
    (b"tool  ", 5, -1),
    (b"  tool  ", 7, 1),
    (b"\t tool", 5, 1),
    (b".tool", 4, 0),
    (b"[tool", 4, 0),
    (b"x[ tool", 6, 2),
    (b'"tool"', 5, -1),
    (b"'tool'", 5, -1),
    (b'x"tool"', 6, 0),
    (b'x"tool" ', 7, 0),
    (b"xtool", 4, -2),  # part of a longer name
    (b"_tool", 4, -2),
    (b"-tool", 4, -2),
    (b"ool", 2, -2),  # too short
    (b'ool"', 3, -2),
    (b'"ool"', 4, -2),
    (b"'tool\"", 5, -2),  # the quotes differ
    (b'"tol"', 4, -2),
    (b'"toolx"', 6, -2),
    (b"tool x", 5, -2),
    (b"   ", 2, -2),
    (b"", -1, -2),
    (b"took", 3, -2),
    (b"XtoolX", 5, -2),  # only a quote quotes
]


@pytest.mark.parametrize("raw, i, before", BACKS, ids=ids(BACKS))
def test_back_finds_the_word_before_the_blanks(raw, i, before):
    assert policy._back(raw, i, b"tool") == before, (raw, i)


# ---------------------------------------------------------------- a passed-over pyproject: is it one of ours?


def test_has_table_follows_a_link_and_reads_the_bytes(tmp_path):
    plain = tmp_path / "real.toml"
    plain.write_text('[project]\ndependencies = ["failsecure"]\n')
    link = tmp_path / "pyproject.toml"
    link.symlink_to(plain)
    assert policy._has_table(str(link)) is False  # followed and read: no table
    plain.write_text("[tool.failsecure]\ntimeout = 2\n")
    assert policy._has_table(str(link)) is True  # the twin


def test_has_table_of_what_cannot_be_read_or_is_no_file(tmp_path):
    assert policy._has_table(str(tmp_path / "absent.toml")) is True  # unreadable: its load reports it
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    assert policy._has_table(str(fifo)) is False  # no regular file: nothing read, not ours


def test_bytes_have_table_when_the_parse_fails(tmp_path):
    assert policy._bytes_have_table(b"failsecure = [\n", "p.toml") is True  # invalid: its load reports it
    assert policy._bytes_have_table(b"failsecure = 1\n", "p.toml") is False  # the twin: parsed, no table
    assert policy._bytes_have_table(b"[tool.failsecure]\n", "p.toml") is True
