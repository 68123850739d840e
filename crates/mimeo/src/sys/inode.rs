//! Who an open file is, and whether it changed: the facts shared reads check before and
//! after reading a range through another file (docs/shared-reads.md), and those an
//! origin record names a file by.

use rustix::fd::{AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{self as rfs, AtFlags, Mode, OFlags, ResolveFlags, StatxFlags};
use rustix::io::Result;
use std::ffi::{CStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// What changes when a file's content, size or links change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Status change time (seconds, nanoseconds). Every write, truncation, `fallocate`,
    /// clone into the file, mmap store (at its first fault after writeback), link and
    /// unlink sets it to the current time; nothing in user space can set it to a chosen
    /// value.
    pub ctime: (i64, u32),
    pub size: u64,
    pub nlink: u32,
    pub dev: u64,
    pub ino: u64,
}

/// The [`Stamp`] of an open file (`statx` of ctime, size, links and identity).
pub(crate) fn stamp(fd: BorrowedFd<'_>) -> Result<Stamp> {
    let mask = StatxFlags::CTIME | StatxFlags::SIZE | StatxFlags::NLINK | StatxFlags::INO;
    let x = rfs::statx(fd, c"", AtFlags::EMPTY_PATH, mask)?;
    Ok(Stamp {
        ctime: (x.stx_ctime.tv_sec, x.stx_ctime.tv_nsec),
        size: x.stx_size,
        nlink: x.stx_nlink,
        dev: rfs::makedev(x.stx_dev_major, x.stx_dev_minor),
        ino: x.stx_ino,
    })
}

/// The id of the mount an open file was reached through (`STATX_MNT_ID`, Linux 5.8+), as
/// `/proc/self/mountinfo` numbers mounts; `None` where the kernel does not report it.
pub(crate) fn mount_id(fd: BorrowedFd<'_>) -> Result<Option<u64>> {
    let x = rfs::statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID)?;
    Ok((x.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(x.stx_mnt_id))
}

/// The path an open file was opened by, as the kernel knows it now
/// (`/proc/thread-self/fd/N`): absolute, in this process's mount namespace, following
/// renames. `None` for a file that has been deleted, or one with no path (a pipe).
pub(crate) fn fd_path(fd: BorrowedFd<'_>) -> Option<PathBuf> {
    let link = format!("/proc/thread-self/fd/{}", fd.as_raw_fd());
    let target = std::fs::read_link(link).ok()?;
    let bytes = target.as_os_str().as_encoded_bytes();
    if !bytes.starts_with(b"/") || bytes.ends_with(b" (deleted)") {
        return None;
    }
    Some(PathBuf::from(OsString::from_vec(bytes.to_vec())))
}

/// Opens `rel` below the directory `anchor` for reading without ever leaving it: no `..`
/// above it, no absolute symlink, no other mount (`openat2` with `RESOLVE_BENEATH |
/// RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS`), never following a final symlink and never
/// waiting for a FIFO's writer. The caller checks the type.
pub(crate) fn open_beneath(anchor: BorrowedFd<'_>, rel: &CStr) -> Result<OwnedFd> {
    let flags =
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_XDEV | ResolveFlags::NO_MAGICLINKS;
    rfs::openat2(anchor, rel, flags, Mode::empty(), resolve)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn stamp_changes_with_writes_and_links() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let f = std::fs::File::create(&p).expect("create");
        let a = stamp(f.as_fd()).expect("stamp");
        assert_eq!((a.size, a.nlink), (0, 1));
        std::thread::sleep(std::time::Duration::from_millis(20));
        rustix::io::pwrite(&f, b"abc", 0).expect("write");
        let b = stamp(f.as_fd()).expect("stamp");
        assert_eq!(b.size, 3);
        assert_ne!(a.ctime, b.ctime, "a write sets ctime");
        std::fs::remove_file(&p).expect("unlink");
        assert_eq!(stamp(f.as_fd()).expect("stamp").nlink, 0);
        assert_eq!(fd_path(f.as_fd()), None, "a deleted file has no path");
    }

    #[test]
    fn fd_path_and_mount_id_name_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let f = std::fs::File::create(&p).expect("create");
        let real = std::fs::canonicalize(&p).expect("canonicalize");
        assert_eq!(fd_path(f.as_fd()), Some(real));
        let d = std::fs::File::open(dir.path()).expect("open dir");
        let id = mount_id(f.as_fd()).expect("statx");
        assert!(id.is_some(), "kernels since 5.8 report mount ids");
        assert_eq!(mount_id(d.as_fd()).expect("statx"), id, "same mount");
    }
}
