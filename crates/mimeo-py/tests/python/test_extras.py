"""What mimeo adds to shutil's functions, on loop-mounted btrfs, XFS and ext4: clones,
workers, batched progress, Ctrl-C, the GIL released, archive(), paths of every type, and
the asyncio wrappers."""

import asyncio
import fcntl
import os
import re
import shutil
import signal
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

import mimeo

FS_IOC_FIEMAP = 0xC020660B
FIEMAP_FLAG_SYNC = 0x1
FIEMAP_EXTENT_SHARED = 0x2000


def extents(path):
    """(logical, length, flags) of each extent of a file, by FIEMAP."""
    count = 64
    head = struct.pack("=QQIIII", 0, 0xFFFFFFFFFFFFFFFF, FIEMAP_FLAG_SYNC, 0, count, 0)
    buf = bytearray(head + bytes(56 * count))
    with open(path, "rb") as f:
        fcntl.ioctl(f.fileno(), FS_IOC_FIEMAP, buf)
    mapped = struct.unpack_from("=I", buf, 20)[0]
    out = []
    for i in range(mapped):
        logical, _, length = struct.unpack_from("=QQQ", buf, 32 + 56 * i)
        flags = struct.unpack_from("=I", buf, 32 + 56 * i + 40)[0]
        out.append((logical, length, flags))
    return out


def all_shared(path):
    e = extents(path)
    return bool(e) and all(flags & FIEMAP_EXTENT_SHARED for _, _, flags in e)


def write_pattern(path, mib):
    block = bytes(range(256)) * 4096  # 1 MiB, not zeros (zeros could become holes)
    with open(path, "wb") as f:
        for i in range(mib):
            f.write(block[i % 256 :] + block[: i % 256])


def test_clones_on_btrfs_and_xfs_and_copies_on_ext4(fs):
    d = fs.scratch()
    write_pattern(d / "big", 4)
    (d / "tree").mkdir()
    write_pattern(d / "tree" / "f", 2)
    mimeo.copy2(d / "big", d / "copy")
    mimeo.copytree(d / "tree", d / "tree-copy")
    mimeo.copyfile(d / "big", d / "never", reflink="never")
    assert (d / "copy").read_bytes() == (d / "big").read_bytes()
    reflinks = fs.kind in ("btrfs", "xfs")
    assert all_shared(d / "copy") == reflinks
    assert all_shared(d / "tree-copy" / "f") == reflinks
    assert not all_shared(d / "never")
    if reflinks:
        mimeo.copy2(d / "big", d / "always", reflink="always")
        assert all_shared(d / "always")
    else:
        with pytest.raises(OSError):
            mimeo.copy2(d / "big", d / "always", reflink="always")
        assert not (d / "always").exists()


def worker_names(fs, workers):
    """The names of the threads that called `ignore` during a copy of 64 directories."""
    d = fs.scratch()
    for i in range(64):
        sub = d / "src" / f"d{i:02}"
        sub.mkdir(parents=True)
        for j in range(20):
            (sub / f"f{j}").write_bytes(b"x" * 100)
    names = set()

    def ignore(dir, entries):
        with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
            names.add(f.read().strip())
        time.sleep(0.002)
        return []

    mimeo.copytree(d / "src", d / "dst", ignore=ignore, workers=workers)
    assert len(list((d / "dst").rglob("f*"))) == 64 * 20
    return names


def test_workers_sets_the_number_of_threads(fs_by_kind):
    fs = fs_by_kind("xfs")
    assert worker_names(fs, 1) == {"mimeo-0"}
    three = worker_names(fs, 3)
    assert three <= {"mimeo-0", "mimeo-1", "mimeo-2"} and len(three) >= 2
    with pytest.raises(ValueError):
        mimeo.copytree(fs.scratch(), fs.scratch() / "x", workers=0)


def test_progress_is_called_in_batches_at_most_ten_times_a_second(fs_by_kind, testkit):
    fs = fs_by_kind("ext4")
    d = fs.scratch()
    subprocess.run(
        [testkit.path, "gen-small", "--files", "6000", str(d / "src")], check=True
    )
    calls = []
    start = time.monotonic()
    mimeo.copytree(
        d / "src", d / "dst", workers=1, progress=lambda p: calls.append((time.monotonic(), p))
    )
    elapsed = time.monotonic() - start
    entries = sum(1 for _ in (d / "src").rglob("*")) + 1
    copied = [pair for _, p in calls for pair in p.copied]
    assert len(copied) == entries == calls[-1][1].entries
    assert len(set(copied)) == entries
    assert all(isinstance(s, str) and isinstance(t, str) for s, t in copied)
    assert [p.done for _, p in calls] == [False] * (len(calls) - 1) + [True]
    gaps = [b[0] - a[0] for a, b in zip(calls, calls[1:])]
    assert all(g >= 0.099 for g in gaps), gaps
    assert len(calls) <= elapsed * 10 + 1
    assert len(calls) < entries / 100  # batches, not one call per entry
    if elapsed > 0.35:
        assert len(calls) >= 2
    bytes_total = sum(f.stat().st_size for f in (d / "src").rglob("*") if f.is_file())
    assert calls[-1][1].bytes == bytes_total


def test_progress_of_one_file(fs):
    d = fs.scratch()
    write_pattern(d / "big", 3)
    seen = []
    mimeo.copy2(d / "big", d / "copy", progress=seen.append)
    assert seen[-1].done and seen[-1].bytes == 3 << 20
    assert seen[-1].copied == [(str(d / "big"), str(d / "copy"))]


def interrupt_after(seconds):
    """Sends SIGINT to this process after `seconds`; returns when it was sent."""
    sent = []

    def send():
        time.sleep(seconds)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=send, daemon=True).start()
    return sent


def leftovers(root):
    return [p for p in Path(root).rglob("*") if p.name.startswith(".mimeo-")]


def test_ctrl_c_stops_a_file_copy_within_100_ms_and_removes_it(fs_by_kind):
    fs = fs_by_kind("btrfs")
    d = fs.scratch()
    write_pattern(d / "big", 300)
    os.sync()
    sent = interrupt_after(0.05)
    with pytest.raises(KeyboardInterrupt):
        # Streamed: reflink="never" on btrfs, where copy_file_range could clone.
        mimeo.copy2(d / "big", d / "copy", reflink="never")
    took = time.monotonic() - sent[0]
    assert took < 0.1, f"stopped {took * 1000:.0f} ms after SIGINT"
    assert not (d / "copy").exists()
    assert leftovers(d) == []
    shutil.rmtree(d)


def test_ctrl_c_stops_a_tree_copy_and_leaves_only_complete_files(fs_by_kind):
    fs = fs_by_kind("xfs")

    def interrupted_copy():
        d = fs.scratch()
        for i in range(40):
            (d / "src" / f"d{i}").mkdir(parents=True)
            write_pattern(d / "src" / f"d{i}" / "f", 6)
        # The source written just now is written back first: writeback of it would throttle
        # the copy's own writes, which the stop has to wait for.
        os.sync()
        sent = interrupt_after(0.02)
        with pytest.raises(KeyboardInterrupt):
            mimeo.copytree(d / "src", d / "dst", reflink="never", workers=2)
        took = time.monotonic() - sent[0]
        assert leftovers(d / "dst") == []
        copied = [p for p in (d / "dst").rglob("f")]
        assert len(copied) < 40
        for p in copied:
            assert p.read_bytes() == (d / "src" / p.relative_to(d / "dst")).read_bytes()
        shutil.rmtree(d)
        return took

    # The stop waits for the writes in flight, which a device busy with other work can hold
    # up: every attempt must leave only complete files, and one of three must stop in time.
    times = []
    for _ in range(3):
        times.append(interrupted_copy())
        if times[-1] < 0.1:
            break
    assert min(times) < 0.1, f"stopped {[round(t * 1000) for t in times]} ms after SIGINT"


def test_other_threads_run_during_a_copy(fs_by_kind):
    fs = fs_by_kind("btrfs")
    d = fs.scratch()
    write_pattern(d / "big", 200)
    count = [0]
    running = [True]

    def spin():
        while running[0]:
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.01)
    try:
        before = count[0]
        start = time.monotonic()
        mimeo.copyfile(d / "big", d / "copy", reflink="never")
        elapsed = time.monotonic() - start
        during = count[0] - before
    finally:
        running[0] = False
        t.join()
    # With the GIL held for the whole copy the other thread could not count at all.
    assert elapsed > 0.02 and during > 10_000, (elapsed, during)
    shutil.rmtree(d)


def test_paths_of_every_type_round_trip(fs):
    d = fs.scratch()
    raw = os.fsencode(d)
    os.mkdir(raw + b"/src")
    with open(raw + b"/src/caf\xe9-\xff", "wb") as f:
        f.write(b"latin-1 name")
    seen = []

    def ignore(dir, names):
        seen.append((dir, names))
        return []

    assert mimeo.copytree(raw + b"/src", raw + b"/b", ignore=ignore) == raw + b"/b"
    assert seen == [(raw + b"/src", [b"caf\xe9-\xff"])]
    assert os.listdir(raw + b"/b") == [b"caf\xe9-\xff"]
    name = os.fsdecode(raw + b"/src/caf\xe9-\xff")  # surrogate escapes
    assert mimeo.copy2(name, str(d)) == os.path.join(str(d), os.path.basename(name))
    assert mimeo.copyfile(Path(name), d / "p") == d / "p"
    assert (d / "p").read_bytes() == b"latin-1 name"
    with pytest.raises(TypeError):
        mimeo.copyfile(3.5, d / "q")


SUMMARY_KEYS = [
    "type", "files", "directories", "symlinks", "hard_links", "specials", "skipped",
    "bytes", "by_method", "files_by_method", "hole_bytes", "shared_read_bytes", "resumed_bytes",
    "errors",
    "vanished", "interrupted", "elapsed_s",
]


def test_archive_is_mimeo_a_and_matches_cp_a(fs, testkit):
    d = fs.scratch()
    testkit.gen(d / "src", 7, devices=True)
    subprocess.run(["cp", "-a", str(d / "src"), str(d / "cp")], check=True)
    summary = mimeo.archive(d / "src", d / "mimeo")
    assert summary.errors == 0 and summary.failures == []
    assert summary.hard_links > 0 and summary.specials > 0
    assert list(summary.to_dict()) == SUMMARY_KEYS
    assert summary.to_dict()["by_method"] == summary.by_method
    assert testkit.compare(d / "cp", d / "mimeo") == []
    # Into an existing directory, as cp does; failures are counted, not raised.
    (d / "into").mkdir()
    again = mimeo.archive([d / "src" , d / "missing"], d / "into")
    assert (d / "into" / "src").is_dir()
    assert again.errors == 1 and again.failures[0][1:] == ("stat", "No such file or directory", 2)
    if fs.kind != "ext4":
        assert summary.by_method["clone"] == summary.bytes


def test_asyncio_wrappers(fs):
    d = fs.scratch()
    (d / "src").mkdir()
    (d / "src" / "f").write_bytes(b"async")

    async def main():
        tree = mimeo.aio.copytree(d / "src", d / "dst")
        one = mimeo.aio.copy2(d / "src" / "f", d / "g")
        return await asyncio.gather(tree, one)

    assert asyncio.run(main()) == [d / "dst", d / "g"]
    assert (d / "dst" / "f").read_bytes() == b"async"
    summary = asyncio.run(mimeo.aio.archive(d / "src", d / "arch"))
    assert summary.files == 1
