//! The inode generation (`FS_IOC_GETVERSION`): together with device and inode number,
//! it tells a file apart from a later file that reuses the same inode number.
//!
//! Shared reads remember a file's origin (docs/shared-reads.md); when the
//! origin is deleted and its inode number reused, dev/ino alone would point at the wrong
//! file.

use rustix::fd::BorrowedFd;
use rustix::io::{Errno, Result};
use rustix::ioctl::{self, Opcode, Updater, opcode};

/// `FS_IOC_GETVERSION` = `_IOR('v', 1, long)`.
const FS_IOC_GETVERSION: Opcode = opcode::read::<libc::c_long>(b'v', 1);

/// The inode generation of `fd`'s file (`FS_IOC_GETVERSION`), or `None` where the
/// filesystem does not report one (`ENOTTY`, `EOPNOTSUPP`).
///
/// What the number means differs, measured on Linux 6.18.44 (tests below):
///
/// | filesystem | generation |
/// |---|---|
/// | ext4 | random per inode; a new file that reuses a freed inode number (at once, usually) gets a new one |
/// | XFS | random per inode, likewise; XFS seldom reuses a freed number soon |
/// | btrfs | the transaction id that created the inode: files created within one transaction share it, so it is not unique by itself. btrfs does not reuse inode numbers while mounted, and (dev, ino, generation) still tells a reused number apart after a remount |
/// | tmpfs, procfs | `None` (`ENOTTY`) |
///
/// Directories answer too. F2FS, and others that keep `i_generation` for NFS file
/// handles, answer as well. The kernel writes a 32-bit `int` although the opcode names
/// a `long`.
///
/// # References
///
/// - <https://man7.org/linux/man-pages/man2/ioctl_iflags.2.html> (the `FS_IOC_*` family)
#[allow(unsafe_code)]
pub(crate) fn inode_generation(fd: BorrowedFd<'_>) -> Result<Option<u32>> {
    // Room for a long, zeroed: every filesystem writes an int into its first half.
    let mut buf = [0u32; 2];
    // SAFETY: FS_IOC_GETVERSION writes one int (4 bytes; at most a long, 8 bytes) at the
    // pointer; `buf` is 8 bytes, live, aligned and zero-initialised, and any bytes are
    // valid u32s.
    let r = unsafe { ioctl::ioctl(fd, Updater::<FS_IOC_GETVERSION, [u32; 2]>::new(&mut buf)) };
    match r {
        Ok(()) => Ok(Some(buf[0])),
        Err(Errno::NOTTY | Errno::OPNOTSUPP) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::testutil::*;
    use mimeo_testkit::FsKind;
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;

    fn generation(f: &std::fs::File) -> u32 {
        inode_generation(f.as_fd())
            .expect("FS_IOC_GETVERSION")
            .expect("a generation on this filesystem")
    }

    #[test]
    fn generation_names_one_file_across_descriptors_and_renames() {
        for kind in FsKind::ALL {
            let Some(fs) = scratch(kind) else { continue };
            let dir = fs.path();
            let f = file_with(dir, "a", b"x");
            let g = generation(&f);
            let again = reopen(dir, "a", libc::O_RDONLY);
            assert_eq!(generation(&again), g, "{kind}: second descriptor");
            std::fs::rename(dir.join("a"), dir.join("b")).expect("rename");
            assert_eq!(
                generation(&reopen(dir, "b", libc::O_RDONLY)),
                g,
                "{kind}: rename"
            );
            let d = std::fs::File::open(dir).expect("open dir");
            assert!(
                inode_generation(d.as_fd()).expect("dir").is_some(),
                "{kind}: dir"
            );
        }
    }

    /// ext4 reuses a freed inode number at once, with a new generation. XFS does so
    /// rarely (its freed inodes are inactivated in the background); whenever it does, the
    /// generation differs too.
    #[test]
    fn generation_tells_a_reused_inode_number_apart() {
        for kind in [FsKind::Ext4, FsKind::Xfs] {
            let Some(fs) = scratch(kind) else { continue };
            let dir = fs.path();
            let mut reused = 0;
            for i in 0..20 {
                let f = file_with(dir, "f", b"x");
                let (ino, g) = (f.metadata().expect("fstat").ino(), generation(&f));
                std::fs::remove_file(dir.join("f")).expect("unlink");
                drop(f);
                rustix::fs::syncfs(std::fs::File::open(dir).expect("open dir")).expect("syncfs");
                let f = file_with(dir, "f", b"y");
                if f.metadata().expect("fstat").ino() == ino {
                    reused += 1;
                    assert_ne!(generation(&f), g, "{kind}: reuse {i}");
                }
                std::fs::remove_file(dir.join("f")).expect("unlink");
            }
            if kind == FsKind::Ext4 {
                assert!(reused > 0, "ext4 reused no inode number");
            }
        }
    }

    /// On btrfs the generation is the creating transaction: equal within one, larger
    /// after a commit.
    #[test]
    fn generation_on_btrfs_is_the_creating_transaction() {
        let Some(fs) = scratch(FsKind::Btrfs) else {
            return;
        };
        let dir = fs.path();
        let mk = |n: &str| {
            std::fs::File::options()
                .write(true)
                .create_new(true)
                .open(dir.join(n))
                .expect("create")
        };
        rustix::fs::sync();
        // Two files with no commit between them share the transaction.
        let (a, b) = (mk("a"), mk("b"));
        let g = generation(&a);
        assert_eq!(generation(&b), g, "btrfs: one transaction");
        rustix::fs::sync();
        let c = mk("c");
        assert!(generation(&c) > g, "btrfs: a later transaction");
    }

    #[test]
    fn generation_is_none_on_tmpfs_and_procfs() {
        let status = std::fs::File::open("/proc/self/status").expect("open");
        assert_eq!(inode_generation(status.as_fd()), Ok(None), "procfs");
        let shm = std::path::Path::new("/dev/shm");
        if rustix::fs::statfs(shm).map(|s| s.f_type as u64) != Ok(0x0102_1994) {
            skipped("tmpfs", "/dev/shm is not a tmpfs");
            return;
        }
        let f = tempfile::tempfile_in(shm).expect("tmpfs file");
        assert_eq!(inode_generation(f.as_fd()), Ok(None), "tmpfs");
    }
}
