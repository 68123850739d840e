//! Loop-mounted scratch filesystems.
//!
//! Cloning, offload and sparse behaviour differ per filesystem, so tests run
//! on real btrfs, XFS (reflink=1) and ext4 images. Each [`LoopFs`] is a
//! small sparse image file mounted with `-o loop` (the loop device is set to
//! auto-detach), and is always unmounted and deleted again in `Drop`.
//!
//! Outside CI the filesystems may be unavailable (not root, mkfs missing);
//! tests then print what was skipped. With `MIMEO_REQUIRE_FS=1` an
//! unavailable filesystem is a failure, so CI can never skip silently.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use crate::cmd::{capture, have_program};

/// Environment variable that turns "skip" into "panic".
pub const REQUIRE_ENV: &str = "MIMEO_REQUIRE_FS";

/// The filesystems the tests use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FsKind {
    Btrfs,
    /// XFS created with `-m reflink=1`.
    Xfs,
    Ext4,
}

impl FsKind {
    /// Every supported kind, for tests that run on each.
    pub const ALL: [FsKind; 3] = [FsKind::Btrfs, FsKind::Xfs, FsKind::Ext4];

    /// The mkfs program for this kind.
    pub fn mkfs(self) -> &'static str {
        match self {
            FsKind::Btrfs => "mkfs.btrfs",
            FsKind::Xfs => "mkfs.xfs",
            FsKind::Ext4 => "mkfs.ext4",
        }
    }

    /// Smallest image size (MiB) mkfs accepts comfortably.
    pub fn min_size_mib(self) -> u64 {
        match self {
            FsKind::Btrfs => 128,
            FsKind::Xfs => 300,
            FsKind::Ext4 => 16,
        }
    }

    /// Whether the filesystem can share extents between files (FICLONE).
    pub fn reflinks(self) -> bool {
        matches!(self, FsKind::Btrfs | FsKind::Xfs)
    }

    fn mkfs_args(self) -> &'static [&'static str] {
        match self {
            FsKind::Btrfs => &["-q"],
            FsKind::Xfs => &["-q", "-m", "reflink=1"],
            // Small images would otherwise get 1 KiB blocks; real systems
            // (and hole alignment in the tests) use 4 KiB.
            FsKind::Ext4 => &["-q", "-F", "-b", "4096"],
        }
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FsKind::Btrfs => "btrfs",
            FsKind::Xfs => "xfs",
            FsKind::Ext4 => "ext4",
        })
    }
}

/// The sizes (MiB) of this process's live images, which may all fill up at once.
static LIVE_MIB: Mutex<u64> = Mutex::new(0);

/// Reserves room on the host for an image of `mib` MiB beside the live ones. A sparse image
/// takes space as it is written; when the host runs out, the loop device fails the writes and
/// the filesystem in it loses data silently, which a test would report as a wrong copy. So an
/// image is made only while the host has room for every live image to fill up.
fn reserve(dir: &Path, mib: u64) -> Result<(), String> {
    let st = rustix::fs::statvfs(dir).map_err(|e| format!("statvfs {}: {e}", dir.display()))?;
    let free_mib = st.f_bavail.saturating_mul(st.f_frsize) >> 20;
    let mut live = LIVE_MIB.lock().unwrap_or_else(|e| e.into_inner());
    if free_mib < *live + mib {
        return Err(format!(
            "the host has {free_mib} MiB free in {} where the live loop images could take \
             {} MiB with this one (a full host loses their writes)",
            dir.display(),
            *live + mib
        ));
    }
    *live += mib;
    Ok(())
}

/// A mounted loop filesystem that is torn down on drop.
#[derive(Debug)]
pub struct LoopFs {
    kind: FsKind,
    mountpoint: PathBuf,
    mounted: bool,
    /// The image's size, reserved on the host while it lives.
    size_mib: u64,
    // Holds the image and the mountpoint; removed after the unmount.
    _dir: tempfile::TempDir,
}

impl LoopFs {
    /// Creates and mounts a `kind` filesystem of `size_mib` MiB (raised to
    /// the kind's minimum), or returns `None` after printing which test was
    /// skipped and why. Panics instead when `MIMEO_REQUIRE_FS=1`.
    pub fn try_new(kind: FsKind, size_mib: u64) -> Option<LoopFs> {
        LoopFs::try_new_with(kind, size_mib, &[])
    }

    /// Like [`LoopFs::try_new`], with `extra` appended to the kind's own mkfs
    /// arguments, e.g. `["-b", "size=8192"]` for an XFS with 8 KiB blocks.
    pub fn try_new_with(kind: FsKind, size_mib: u64, extra: &[&str]) -> Option<LoopFs> {
        match LoopFs::create(kind, size_mib, extra) {
            Ok(fs) => Some(fs),
            Err(reason) => {
                let test = thread::current()
                    .name()
                    .unwrap_or("<unnamed test>")
                    .to_owned();
                if required() {
                    panic!("{test}: {kind} filesystem required ({REQUIRE_ENV}=1) but {reason}");
                }
                // Written to the real stderr, not via `eprintln!`, which the
                // test harness captures and hides for passing tests.
                let _ = writeln!(io::stderr(), "SKIPPED {test} on {kind}: {reason}");
                None
            }
        }
    }

    /// Like [`LoopFs::try_new`] but always panics when unavailable, for
    /// callers that have nothing useful to do without it.
    pub fn new(kind: FsKind, size_mib: u64) -> LoopFs {
        LoopFs::create(kind, size_mib, &[])
            .unwrap_or_else(|reason| panic!("cannot create {kind} filesystem: {reason}"))
    }

    /// The filesystem kind.
    pub fn kind(&self) -> FsKind {
        self.kind
    }

    /// The mountpoint (the root of the filesystem).
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    fn create(kind: FsKind, size_mib: u64, extra: &[&str]) -> Result<LoopFs, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("not running as root (loop mounts need root)".into());
        }
        if !have_program(kind.mkfs()) {
            return Err(format!("{} is not installed", kind.mkfs()));
        }
        let dir = tempfile::Builder::new()
            .prefix(&format!("mimeo-{kind}-"))
            .tempdir()
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
        let image = dir.path().join("image");
        let mountpoint = dir.path().join("mnt");
        std::fs::create_dir(&mountpoint).map_err(|e| format!("mkdir mountpoint: {e}"))?;
        let size_mib = size_mib.max(kind.min_size_mib());
        reserve(dir.path(), size_mib)?;
        let mut fs = LoopFs {
            kind,
            mountpoint,
            mounted: false,
            size_mib,
            _dir: dir,
        };
        // A sparse image: only what the filesystem writes takes disk space.
        let file = std::fs::File::create(&image).map_err(|e| format!("create image: {e}"))?;
        file.set_len(size_mib << 20)
            .map_err(|e| format!("size image: {e}"))?;
        drop(file);

        let mkfs = capture(
            Command::new(kind.mkfs())
                .args(kind.mkfs_args())
                .args(extra)
                .arg(&image),
        )
        .map_err(|e| format!("cannot run {}: {e}", kind.mkfs()))?;
        if !mkfs.success() {
            return Err(format!("mkfs failed: {mkfs}"));
        }
        let mount = capture(
            Command::new("mount")
                .args(["-o", "loop,noatime"])
                .arg(&image)
                .arg(&fs.mountpoint),
        )
        .map_err(|e| format!("cannot run mount: {e}"))?;
        if !mount.success() {
            return Err(format!("mount failed: {mount}"));
        }
        fs.mounted = true;
        Ok(fs)
    }

    /// Unmounts, retrying while the filesystem is busy, and falls back to a
    /// lazy unmount so the loop device is released in any case.
    fn unmount(&mut self) {
        if !self.mounted {
            return;
        }
        for attempt in 0..10 {
            match capture(Command::new("umount").arg(&self.mountpoint)) {
                Ok(out) if out.success() => {
                    self.mounted = false;
                    return;
                }
                _ => thread::sleep(Duration::from_millis(50 << attempt.min(4))),
            }
        }
        let lazy = capture(Command::new("umount").arg("-l").arg(&self.mountpoint));
        if !matches!(&lazy, Ok(out) if out.success()) {
            eprintln!(
                "warning: could not unmount {}: {lazy:?}",
                self.mountpoint.display()
            );
        }
        self.mounted = false;
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        self.unmount();
        // `_dir` (image and mountpoint) is removed after this body runs.
        *LIVE_MIB.lock().unwrap_or_else(|e| e.into_inner()) -= self.size_mib;
    }
}

/// Whether `MIMEO_REQUIRE_FS=1` is set.
pub fn required() -> bool {
    std::env::var_os(REQUIRE_ENV).is_some_and(|v| v == "1")
}
