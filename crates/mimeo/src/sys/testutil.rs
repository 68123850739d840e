//! Helpers for the tests of the syscall layer: scratch filesystems, files with known
//! content, extent checks, and guards that undo what a test set up (swap, mounts).

use super::{Errno, extents};
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{FsKind, LoopFs, capture};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch filesystem of `kind` big enough for every test here, or None (skipped).
pub(crate) fn scratch(kind: FsKind) -> Option<LoopFs> {
    LoopFs::try_new(kind, kind.min_size_mib().max(256))
}

/// `n` bytes of seeded random data.
pub(crate) fn random(n: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; n];
    Rng::new(seed).fill(&mut v);
    v
}

/// Creates (or truncates) `dir/name` with `data`, flushed to disk, open read-write.
pub(crate) fn file_with(dir: &Path, name: &str, data: &[u8]) -> File {
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(dir.join(name))
        .unwrap_or_else(|e| panic!("create {name}: {e}"));
    f.write_all(data).expect("write test data");
    f.sync_all().expect("fsync test data");
    f
}

/// Opens an existing file with the given `open(2)` access flags (`libc::O_RDONLY`, ...).
pub(crate) fn reopen(dir: &Path, name: &str, flags: i32) -> File {
    let access = flags & libc::O_ACCMODE;
    OpenOptions::new()
        .read(access != libc::O_WRONLY)
        .write(access != libc::O_RDONLY)
        .custom_flags(flags & !libc::O_ACCMODE)
        .open(dir.join(name))
        .unwrap_or_else(|e| panic!("open {name}: {e}"))
}

/// The whole content of an open file.
pub(crate) fn content(f: &File) -> Vec<u8> {
    let len = f.metadata().expect("fstat").len() as usize;
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let n = rustix::io::pread(f.as_fd(), &mut buf[done..], done as u64).expect("pread");
        assert!(n > 0, "file shrank while read");
        done += n;
    }
    buf
}

/// Bytes of `[off, off + len)` that FIEMAP reports as `FIEMAP_EXTENT_SHARED`.
pub(crate) fn shared_bytes(fd: BorrowedFd<'_>, off: u64, len: u64) -> u64 {
    let end = off + len;
    extents(fd)
        .expect("FIEMAP")
        .iter()
        .filter(|e| e.flags & super::FIEMAP_EXTENT_SHARED != 0)
        .map(|e| {
            let lo = e.logical.max(off);
            let hi = (e.logical + e.length).min(end);
            hi.saturating_sub(lo)
        })
        .sum()
}

/// Modification, change and access times and mode, to check what an operation left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    pub atime: (i64, i64),
    pub mode: u32,
}

pub(crate) fn stamp(fd: BorrowedFd<'_>) -> Stamp {
    let s = rustix::fs::fstat(fd).expect("fstat");
    Stamp {
        mtime: (s.st_mtime, s.st_mtime_nsec as i64),
        ctime: (s.st_ctime, s.st_ctime_nsec as i64),
        atime: (s.st_atime, s.st_atime_nsec as i64),
        mode: s.st_mode,
    }
}

/// Sleeps long enough for the kernel's coarse clock to tick, so that an operation which
/// updates a timestamp is seen to change it.
pub(crate) fn let_clock_tick() {
    std::thread::sleep(std::time::Duration::from_millis(30));
}

/// Unwraps an errno result into a short name for assertion messages.
pub(crate) fn outcome<T>(r: &Result<T, Errno>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("{e:?}"),
    }
}

/// An active swap file, swapped off again on drop (before its filesystem is unmounted,
/// as long as the guard is declared after the [`LoopFs`]).
#[derive(Debug)]
pub(crate) struct SwapFile {
    path: PathBuf,
}

impl SwapFile {
    /// Makes `dir/name` a 16 MiB swap file and activates it, or returns why it could not.
    /// On btrfs the file is NOCOW, as swap files there must be.
    pub(crate) fn activate(dir: &Path, name: &str, nocow: bool) -> Result<SwapFile, String> {
        let path = dir.join(name);
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("create: {e}"))?;
        if nocow {
            rustix::fs::ioctl_setflags(&f, rustix::fs::IFlags::NOCOW)
                .map_err(|e| format!("chattr +C: {e}"))?;
        }
        rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, 16 << 20)
            .map_err(|e| format!("fallocate: {e}"))?;
        drop(f);
        for prog in ["mkswap", "swapon"] {
            let out = capture(Command::new(prog).arg(&path))
                .map_err(|e| format!("cannot run {prog}: {e}"))?;
            if !out.success() {
                return Err(format!("{prog} failed: {out}"));
            }
        }
        Ok(SwapFile { path })
    }
}

impl Drop for SwapFile {
    fn drop(&mut self) {
        match capture(Command::new("swapoff").arg(&self.path)) {
            Ok(out) if out.success() => {}
            other => eprintln!("warning: swapoff {}: {other:?}", self.path.display()),
        }
    }
}

/// A bind mount of `source` at `target`, unmounted on drop.
#[derive(Debug)]
pub(crate) struct BindMount {
    target: PathBuf,
}

impl BindMount {
    pub(crate) fn new(source: &Path, target: &Path) -> BindMount {
        std::fs::create_dir_all(target).expect("mkdir bind target");
        let out = capture(Command::new("mount").arg("--bind").arg(source).arg(target))
            .expect("run mount --bind");
        assert!(out.success(), "mount --bind failed: {out}");
        BindMount {
            target: target.to_owned(),
        }
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        match capture(Command::new("umount").arg(&self.target)) {
            Ok(out) if out.success() => {}
            other => eprintln!("warning: umount {}: {other:?}", self.target.display()),
        }
    }
}

/// Prints (past the test harness's capture) that part of a test did not run.
pub(crate) fn skipped(what: &str, why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_owned();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {what}: {why}");
}

/// The kinds that can share extents, for tests of cloning and dedupe.
pub(crate) const REFLINK_KINDS: [FsKind; 2] = [FsKind::Btrfs, FsKind::Xfs];
