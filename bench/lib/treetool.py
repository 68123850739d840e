#!/usr/bin/env python3
"""Fallbacks for the mimeo-testkit subcommands the benchmark needs.

bench/run.sh prefers `mimeo-testkit`. While the testkit does not implement a subcommand yet
(run.sh probes it), the same subcommand is taken from here, and the report says so.

  treetool.py gen-small --files N DIR    N small files (0..16 KiB), 1000 per directory
  treetool.py gen-empty --files N DIR    N empty files, 1000 per directory
  treetool.py compare [--no-atime] LEFT RIGHT
      prints every difference, then "N differences"; exits 1 when there is any.
      Compared: presence, type, mode (with set-id bits), owner, group, size, bytes,
      symlink target, device number, mtime in ns (atime unless --no-atime), xattrs,
      and hard-link groups. Directories are compared like files (mode, owner, times).
"""

import argparse
import os
import stat
import sys

PER_DIR = 1000


def _dirs_for(total, root):
    os.makedirs(root, exist_ok=True)
    for start in range(0, total, PER_DIR):
        d = os.path.join(root, "d%05d" % (start // PER_DIR))
        os.makedirs(d, exist_ok=True)
        yield d, range(start, min(total, start + PER_DIR))


def gen_small(n, root):
    # Deterministic sizes from a simple LCG so that every run builds the same tree.
    state = 12345
    chunk = bytes(range(256)) * 64  # 16 KiB of non-zero, non-sparse data
    for d, idx in _dirs_for(n, root):
        for i in idx:
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            size = state % (16 * 1024 + 1)
            fd = os.open(os.path.join(d, "f%07d" % i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, chunk[:size])
            finally:
                os.close(fd)


def gen_empty(n, root):
    for d, idx in _dirs_for(n, root):
        for i in idx:
            os.close(os.open(os.path.join(d, "e%07d" % i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))


def _walk(root):
    """Yield relative paths of every entry below root (root itself as '.'), no symlink follow."""
    yield "."
    stack = [""]
    while stack:
        rel = stack.pop()
        full = os.path.join(root, rel) if rel else root
        try:
            with os.scandir(full) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            r = os.path.join(rel, e.name) if rel else e.name
            yield r
            if e.is_dir(follow_symlinks=False):
                stack.append(r)


def _xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return {}
    out = {}
    for n in names:
        try:
            out[n] = os.getxattr(path, n, follow_symlinks=False)
        except OSError:
            out[n] = None
    return out


def _same_bytes(a, b):
    with open(a, "rb", buffering=0) as fa, open(b, "rb", buffering=0) as fb:
        while True:
            x = fa.read(1 << 20)
            y = fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def compare(left, right, no_atime):
    diffs = []

    def diff(rel, what):
        diffs.append("%s: %s" % (rel, what))
        print("%s: %s" % (rel, what))

    lset = list(_walk(left))
    rset = set(_walk(right))
    links = {}  # left (dev, ino) -> right (dev, ino), for nlink > 1
    for rel in lset:
        lp = os.path.normpath(os.path.join(left, rel))
        rp = os.path.normpath(os.path.join(right, rel))
        if rel not in rset:
            diff(rel, "missing on the right")
            continue
        rset.discard(rel)
        ls, rs = os.lstat(lp), os.lstat(rp)
        if stat.S_IFMT(ls.st_mode) != stat.S_IFMT(rs.st_mode):
            diff(rel, "type %o != %o" % (stat.S_IFMT(ls.st_mode), stat.S_IFMT(rs.st_mode)))
            continue
        if stat.S_IMODE(ls.st_mode) != stat.S_IMODE(rs.st_mode):
            diff(rel, "mode %04o != %04o" % (stat.S_IMODE(ls.st_mode), stat.S_IMODE(rs.st_mode)))
        if (ls.st_uid, ls.st_gid) != (rs.st_uid, rs.st_gid):
            diff(rel, "owner %d:%d != %d:%d" % (ls.st_uid, ls.st_gid, rs.st_uid, rs.st_gid))
        if ls.st_mtime_ns != rs.st_mtime_ns:
            diff(rel, "mtime %d != %d" % (ls.st_mtime_ns, rs.st_mtime_ns))
        if not no_atime and ls.st_atime_ns != rs.st_atime_ns:
            diff(rel, "atime %d != %d" % (ls.st_atime_ns, rs.st_atime_ns))
        if _xattrs(lp) != _xattrs(rp):
            diff(rel, "xattrs differ")
        if stat.S_ISLNK(ls.st_mode):
            if os.readlink(lp) != os.readlink(rp):
                diff(rel, "symlink target differs")
        elif stat.S_ISREG(ls.st_mode):
            if ls.st_size != rs.st_size:
                diff(rel, "size %d != %d" % (ls.st_size, rs.st_size))
            elif not _same_bytes(lp, rp):
                diff(rel, "bytes differ")
            if ls.st_nlink > 1:
                key = (ls.st_dev, ls.st_ino)
                if key in links and links[key] != (rs.st_dev, rs.st_ino):
                    diff(rel, "hard link broken")
                links.setdefault(key, (rs.st_dev, rs.st_ino))
        elif stat.S_ISCHR(ls.st_mode) or stat.S_ISBLK(ls.st_mode):
            if ls.st_rdev != rs.st_rdev:
                diff(rel, "device number differs")
    for rel in sorted(rset):
        diff(rel, "missing on the left")
    print("%d differences" % len(diffs))
    return 1 if diffs else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("gen-small", "gen-empty"):
        s = sub.add_parser(name)
        s.add_argument("--files", type=int, required=True)
        s.add_argument("dir")
    c = sub.add_parser("compare")
    c.add_argument("--no-atime", action="store_true")
    c.add_argument("left")
    c.add_argument("right")
    a = p.parse_args()
    if a.cmd == "gen-small":
        gen_small(a.files, a.dir)
        return 0
    if a.cmd == "gen-empty":
        gen_empty(a.files, a.dir)
        return 0
    return compare(a.left, a.right, a.no_atime)


if __name__ == "__main__":
    sys.exit(main())
