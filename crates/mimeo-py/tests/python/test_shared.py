"""mimeo.SharedFile: a file object whose clones' shared ranges are read through one canonical
file, returning exactly the bytes of a plain read, on btrfs and XFS (which share blocks) and
ext4 (which does not: every read is plain)."""

import io
import os
import shutil
import time

import pytest

import mimeo

MIB = 1 << 20


def settle():
    """Shared reads trust a file only once its ctime is a little old."""
    time.sleep(0.12)


def parent_and_clone(d, size=3 * MIB + 123):
    parent, clone = d / "parent", d / "clone"
    parent.write_bytes(os.urandom(size))
    with open(parent, "rb") as f:
        os.fsync(f.fileno())
    mimeo.copyfile(parent, clone)
    settle()
    return parent, clone


def test_a_clone_reads_through_its_parent_and_returns_a_plain_read(fs):
    d = fs.scratch()
    parent, clone = parent_and_clone(d)
    expected = clone.read_bytes()
    size = len(expected)
    with mimeo.SharedFile(parent) as p, mimeo.SharedFile(clone) as c:
        assert isinstance(c, io.RawIOBase) and c.readable() and c.seekable()
        assert p.canonical_count == 0
        assert c.canonical_count == (0 if fs.kind == "ext4" else 1)
        assert c.read() == expected
        assert c.read() == b""
        stats = c.stats
        if fs.kind == "ext4":
            assert stats == {"canonical": 0, "own": size, "rejected": 0}
        else:
            assert stats["canonical"] == size and stats["own"] == 0
    assert c.closed
    with pytest.raises(ValueError):
        c.read()


def test_open_shared_is_a_shared_file_giving_the_plain_bytes(fs):
    d = fs.scratch()
    parent, clone = parent_and_clone(d)
    with mimeo.open_shared(parent) as p, mimeo.open_shared(clone, registry=True) as c:
        assert isinstance(c, mimeo.SharedFile)
        assert c.canonical_count == (0 if fs.kind == "ext4" else 1)
        assert c.read() == clone.read_bytes()
        assert p.read() == parent.read_bytes()


def test_seek_tell_readinto_and_copyfileobj(fs):
    d = fs.scratch()
    parent, clone = parent_and_clone(d)
    expected = clone.read_bytes()
    with mimeo.SharedFile(clone, canonical=parent, registry=False) as c:
        assert c.seek(MIB + 5) == MIB + 5 and c.tell() == MIB + 5
        assert c.read(10) == expected[MIB + 5 : MIB + 15]
        assert c.tell() == MIB + 15
        assert c.seek(-3, io.SEEK_END) == len(expected) - 3
        assert c.read(100) == expected[-3:]
        c.seek(7)
        buf = bytearray(1000)
        assert c.readinto(buf) == 1000 and bytes(buf) == expected[7:1007]
        c.seek(-7, io.SEEK_CUR)
        assert c.read(7) == expected[1000:1007]
        with pytest.raises(OSError):
            c.seek(-1)
        c.seek(0)
        out = io.BytesIO()
        shutil.copyfileobj(c, out)
        assert out.getvalue() == expected
        assert os.fstat(c.fileno()).st_ino == os.stat(clone).st_ino
        if fs.kind != "ext4":
            assert c.stats["canonical"] > 0


def test_without_a_canonical_file_reads_are_plain(fs):
    d = fs.scratch()
    parent, clone = parent_and_clone(d)
    expected = clone.read_bytes()
    keep = mimeo.SharedFile(parent)
    with mimeo.SharedFile(os.fsencode(clone), origin=False, registry=False) as c:
        assert c.canonical_count == 0
        assert c.read() == expected
        assert c.stats["canonical"] == 0
    keep.close()
    with pytest.raises(FileNotFoundError) as e:
        mimeo.SharedFile(d / "missing")
    assert e.value.filename == str(d / "missing")


def test_a_clone_written_meanwhile_reads_its_own_bytes(fs_by_kind):
    for kind in ["btrfs", "xfs"]:
        d = fs_by_kind(kind).scratch()
        parent, clone = parent_and_clone(d)
        with mimeo.SharedFile(clone, canonical=parent) as c:
            assert c.read(MIB) == clone.read_bytes()[:MIB]
            with open(clone, "r+b") as w:
                w.seek(2 * MIB)
                w.write(b"x" * 5000)
            settle()
            c.seek(0)
            assert c.read() == clone.read_bytes(), kind


def test_archive_counts_shared_reads(fs_by_kind):
    """A copy from btrfs to ext4 reads the clone through its parent."""
    fs = fs_by_kind("btrfs")
    src = fs.scratch() / "src"
    src.mkdir()
    parent_and_clone(src)
    other = fs_by_kind("ext4").scratch()
    summary = mimeo.archive(src, other / "copy")
    assert summary.errors == 0
    assert summary.to_dict()["shared_read_bytes"] == summary.shared_read_bytes
    assert summary.shared_read_bytes > 0
