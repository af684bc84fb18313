"""How a project file is found and opened (``policy._resolve``, ``policy._read_regular``),
in-process: the link chain followed by hand (``.``, ``..``, empty parts, at most 40 hops,
every link owned by this user or root) and the one descriptor the bytes are read from
(no link followed when asked not to, never a wait on a FIFO, a regular file only).
test_config_trust.py covers the same through ``project_path()`` with files another user
owns (those need root to make)."""

import errno
import os

import pytest

from failsecure import policy

ME = os.getuid()


def test_resolve_normalises_dot_dotdot_and_empty_parts(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f.toml").write_text("x = 1\n")
    real = str(tmp_path / "a" / "b" / "f.toml")
    assert policy._resolve(str(tmp_path) + "/a/./b//f.toml", ME) == real
    assert policy._resolve(str(tmp_path) + "/a/b/../b/f.toml", ME) == real
    assert policy._resolve(str(tmp_path) + "/a/b/", ME) == str(tmp_path / "a" / "b")
    assert policy._resolve(real, ME) == real  # the twin: nothing to normalise


def test_resolve_follows_relative_and_absolute_links(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.toml").write_text("x = 1\n")
    (tmp_path / "rel").symlink_to("real")
    (tmp_path / "abs").symlink_to(tmp_path / "real")
    want = str(tmp_path / "real" / "f.toml")
    assert policy._resolve(str(tmp_path / "rel" / "f.toml"), ME) == want
    assert policy._resolve(str(tmp_path / "abs" / "f.toml"), ME) == want


def test_a_link_owned_by_root_counts_for_another_user(tmp_path):
    # the links here are this process's; as another uid they count only if owned by root
    (tmp_path / "real.toml").write_text("x = 1\n")
    (tmp_path / "link.toml").symlink_to(tmp_path / "real.toml")
    owner = os.lstat(tmp_path / "link.toml").st_uid
    other = 54321
    got = policy._resolve(str(tmp_path / "link.toml"), other)
    assert got == (str(tmp_path / "real.toml") if owner == 0 else None)
    assert policy._resolve(str(tmp_path / "link.toml"), owner) == str(tmp_path / "real.toml")


def chain(tmp_path, hops):
    (tmp_path / "end.toml").write_text("x = 1\n")
    target = "end.toml"
    for n in range(hops):
        (tmp_path / f"l{n}").symlink_to(target)
        target = f"l{n}"
    return str(tmp_path / target)


def test_forty_hops_are_followed(tmp_path):
    assert policy._resolve(chain(tmp_path, 40), ME) == str(tmp_path / "end.toml")


def test_the_forty_first_hop_is_a_loop_error(tmp_path):
    with pytest.raises(OSError) as info:
        policy._resolve(chain(tmp_path, 41), ME)
    assert info.value.errno == errno.ELOOP and info.value.strerror == "too many levels of symbolic links"


def test_read_regular_reads_a_file_from_one_descriptor(tmp_path):
    path = tmp_path / "f.toml"
    path.write_bytes(b"x = 1\n")
    for mode in (0o644, 0o755, 0o600):
        os.chmod(path, mode)
        for follow in (True, False):
            st, raw = policy._read_regular(str(path), follow=follow)
            assert raw == b"x = 1\n" and st.st_size == 6, (mode, follow)


def test_read_regular_follows_a_link_only_when_asked(tmp_path):
    (tmp_path / "real.toml").write_bytes(b"x = 1\n")
    (tmp_path / "link.toml").symlink_to(tmp_path / "real.toml")
    assert policy._read_regular(str(tmp_path / "link.toml"), follow=True)[1] == b"x = 1\n"
    with pytest.raises(OSError) as info:
        policy._read_regular(str(tmp_path / "link.toml"), follow=False)
    assert info.value.errno == errno.ELOOP


def test_read_regular_of_a_fifo_reads_nothing_and_does_not_wait(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    st, raw = policy._read_regular(str(fifo), follow=False)  # O_NONBLOCK: no writer needed
    assert raw is None and not os.path.isfile(fifo)
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(OSError):
        policy._read_regular(str(tmp_path / "dir.toml"), follow=True)  # a directory cannot be opened "rb"


def test_without_ownership_every_project_file_counts_as_it_reads(tmp_path, monkeypatch):
    # a platform without os.getuid (Windows): no owner to check; a link is followed
    (tmp_path / "real.toml").write_bytes(b"x = 1\n")
    (tmp_path / "link.toml").symlink_to(tmp_path / "real.toml")
    os.mkfifo(tmp_path / "fifo.toml")
    with monkeypatch.context() as patch:
        patch.delattr(os, "getuid")
        got = [policy._candidate(str(tmp_path / name)) for name in ("real.toml", "link.toml", "fifo.toml", "absent.toml")]
    assert got == [(policy._OURS, b"x = 1\n"), (policy._OURS, b"x = 1\n"), (policy._ABSENT, None), (policy._ABSENT, None)]
    assert policy._candidate(str(tmp_path / "link.toml")) == (policy._OURS, b"x = 1\n")  # the twin: with owners
