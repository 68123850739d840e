"""mimeo.du and mimeo.dedupe: the numbers of the extent maps, on btrfs and XFS (which share
extents) and ext4 (which does not)."""

import os

import pytest

import mimeo

MIB = 1 << 20


def written(path, data):
    path.write_bytes(data)
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def test_du_counts_a_clone_as_shared_once(fs):
    d = fs.scratch()
    data = os.urandom(2 * MIB)
    written(d / "parent", data)
    mimeo.copyfile(d / "parent", d / "clone")
    report = mimeo.du(d, sync=True)
    assert report["errors"] == 0 and not report["interrupted"]
    [(path, usage)] = report["paths"]
    assert path == str(d)
    assert usage["files"] == 2
    assert usage["total"] == 4 * MIB
    if fs.kind == "ext4":
        assert usage["exclusive"] == 4 * MIB and usage["shared"] == 0
    else:
        assert usage["exclusive"] == 0 and usage["shared"] == 2 * MIB
    assert report["total"]["total"] == 4 * MIB
    # Paths come back as they were given.
    [(raw, _)] = mimeo.du(os.fsencode(d), sync=True)["paths"]
    assert raw == os.fsencode(d)


def test_dedupe_shares_equal_files_and_du_sees_it(fs):
    d = fs.scratch()
    data = os.urandom(MIB)
    written(d / "a", data)
    written(d / "b", data)
    written(d / "c", os.urandom(MIB))
    looked = mimeo.dedupe(d, dry_run=True)
    assert looked["dry_run"] and looked["candidates"] == 3
    assert mimeo.du(d, sync=True)["total"]["exclusive"] == 3 * MIB
    done = mimeo.dedupe(d)
    if fs.kind == "ext4":
        assert done["errors"] >= 1 and done["deduped_files"] == 0
        return
    assert (done["groups"], done["duplicates"], done["deduped_files"]) == (1, 1, 1)
    assert done["bytes_deduped"] == MIB and done["errors"] == 0
    assert (d / "a").read_bytes() == data == (d / "b").read_bytes()
    after = mimeo.du(d, sync=True)["total"]
    assert after["shared"] == MIB and after["exclusive"] == MIB


def test_bad_arguments():
    with pytest.raises(TypeError):
        mimeo.du()
    with pytest.raises(TypeError):
        mimeo.dedupe(3.5)
    with pytest.raises(ValueError):
        mimeo.du(".", workers=0)
