"""Fixtures of the Python tests: loop-mounted btrfs, XFS and ext4 images (as
``crates/mimeo-testkit/src/fsimg.rs`` makes them), and the ``mimeo-testkit`` program that
generates seeded tricky trees and compares trees.

As root with mkfs.btrfs and mkfs.xfs installed, each filesystem is a small sparse image
mounted with ``-o loop,noatime`` and always unmounted again. Elsewhere the tests that need one
are skipped, saying why; with ``MIMEO_REQUIRE_FS=1`` (CI) a filesystem that cannot be made is
a failure instead.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
KINDS = ["btrfs", "xfs", "ext4"]
MKFS = {
    "btrfs": ["mkfs.btrfs", "-q"],
    "xfs": ["mkfs.xfs", "-q", "-m", "reflink=1"],
    "ext4": ["mkfs.ext4", "-q", "-F", "-b", "4096"],
}
MIN_MIB = {"btrfs": 128, "xfs": 300, "ext4": 16}


def required():
    return os.environ.get("MIMEO_REQUIRE_FS") == "1"


class LoopFs:
    """A mounted loop filesystem, unmounted and deleted by close()."""

    def __init__(self, kind, size_mib):
        self.kind = kind
        self.dir = Path(tempfile.mkdtemp(prefix=f"mimeo-py-{kind}-"))
        # Tests run copies as another user too: the mountpoint must be reachable.
        os.chmod(self.dir, 0o755)
        self.path = self.dir / "mnt"
        self.mounted = False
        try:
            self.path.mkdir()
            image = self.dir / "image"
            with open(image, "wb") as f:
                f.truncate(max(size_mib, MIN_MIB[kind]) << 20)
            run = lambda cmd: subprocess.run(cmd, capture_output=True, text=True)
            mkfs = run(MKFS[kind] + [str(image)])
            if mkfs.returncode != 0:
                raise OSError(f"mkfs failed: {mkfs.stderr.strip()}")
            mount = run(["mount", "-o", "loop,noatime", str(image), str(self.path)])
            if mount.returncode != 0:
                raise OSError(f"mount failed: {mount.stderr.strip()}")
            self.mounted = True
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.mounted:
            for attempt in range(10):
                if subprocess.run(["umount", str(self.path)], capture_output=True).returncode == 0:
                    self.mounted = False
                    break
                time.sleep(0.05 * (1 << min(attempt, 4)))
            if self.mounted:
                subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
                self.mounted = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def scratch(self, name="t"):
        """A fresh directory on this filesystem."""
        d = self.path / f"{name}-{uuid.uuid4().hex[:8]}"
        d.mkdir()
        return d


def unavailable(kind):
    if os.geteuid() != 0:
        return "not running as root (loop mounts need root)"
    if shutil.which(MKFS[kind][0]) is None:
        return f"{MKFS[kind][0]} is not installed"
    return None


def make_fs(kind, size_mib=512):
    reason = unavailable(kind)
    if reason is None:
        try:
            return LoopFs(kind, size_mib)
        except OSError as e:
            reason = str(e)
    if required():
        pytest.fail(f"{kind} filesystem required (MIMEO_REQUIRE_FS=1) but {reason}")
    sys.stderr.write(f"SKIPPED on {kind}: {reason}\n")
    pytest.skip(f"{kind}: {reason}")


_mounted = {}


@pytest.fixture(scope="session", params=KINDS)
def fs(request):
    """Each of btrfs, XFS and ext4 in turn, one image per kind for the whole session."""
    loop = make_fs(request.param)
    _mounted[request.param] = loop
    yield loop
    loop.close()
    del _mounted[request.param]


@pytest.fixture(scope="session")
def fs_by_kind():
    """A function giving the image of one kind (made on first use, for tests of one kind)."""
    made = {}

    def get(kind):
        if kind not in made:
            made[kind] = make_fs(kind)
        return made[kind]

    yield get
    for loop in made.values():
        loop.close()


@pytest.fixture(scope="session")
def testkit():
    """The mimeo-testkit program: $MIMEO_TESTKIT, or built with cargo."""
    path = os.environ.get("MIMEO_TESTKIT")
    if not path:
        subprocess.run(
            ["cargo", "build", "--quiet", "--locked", "-p", "mimeo-testkit"],
            cwd=REPO,
            check=True,
        )
        path = str(REPO / "target" / "debug" / "mimeo-testkit")
    return Testkit(path)


class Testkit:
    def __init__(self, path):
        self.path = path

    def gen(self, dest, seed, entries=150, devices=False):
        args = [self.path, "gen", "--seed", str(seed), "--entries", str(entries)]
        if not devices:
            args.append("--no-devices")
        subprocess.run(args + [str(dest)], check=True, capture_output=True)

    def compare(self, left, right, *flags):
        """The differences between two trees, as lines "path: field: left != right"."""
        out = subprocess.run(
            [self.path, "compare", *flags, str(left), str(right)], capture_output=True
        )
        if out.returncode not in (0, 1):
            raise RuntimeError(out.stderr.decode(errors="replace"))
        lines = out.stdout.decode(errors="surrogateescape").splitlines()
        return [l for l in lines if ": " in l and " != " in l]
