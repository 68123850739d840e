//! Range clones (`FICLONERANGE`) and the granularity they must respect.
//!
//! A range clone shares part of one file's extents with part of another, and is what the
//! range-copy path needs: clone the aligned middle of a range, copy the unaligned head and
//! tail. The kernel is strict about alignment and reports a clone it could not do whole as
//! an error, so these wrappers pass every errno through untouched and leave the fallback
//! decision to the caller.

use super::{BCACHEFS_MAGIC, BTRFS_MAGIC, OCFS2_MAGIC, XFS_MAGIC, ZFS_MAGIC};
use rustix::fd::{AsRawFd, BorrowedFd};
use rustix::fs as rfs;
use rustix::io::{Errno, Result};
use rustix::ioctl::{self, Opcode, Setter, Updater, opcode};

/// `struct file_clone_range` from `<linux/fs.h>`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct FileCloneRange {
    src_fd: i64,
    src_offset: u64,
    src_length: u64,
    dest_offset: u64,
}

const _: () = assert!(size_of::<FileCloneRange>() == 32);

/// `FICLONERANGE` = `_IOW(0x94, 13, struct file_clone_range)`.
const FICLONERANGE: Opcode = opcode::write::<FileCloneRange>(0x94, 13);

/// Shares `len` bytes of `src` at `src_off` with `dst` at `dst_off`: one `FICLONERANGE`
/// call on `dst`. On success the whole range is shared; there is no partial success.
///
/// A `len` of 0 is refused with `EINVAL` by this wrapper, without calling the kernel:
/// the kernel reads 0 as "up to the source's EOF", which a length computed as 0 by
/// accident must never turn into. Use `clone_range_to_eof` to ask for that.
///
/// # Kernel rules
///
/// See ioctl_ficlonerange(2) and ioctl_fideduperange(2) (the same checks apply to both;
/// in the kernel, `generic_remap_file_range_prep`). Measured on Linux 6.18.44 on btrfs
/// (4 KiB sectors) and XFS (`reflink=1`), both giving the same errno in every case; each
/// is proved by a test below:
///
/// | case | result |
/// |---|---|
/// | `src_off`, `dst_off` and `len` multiples of the [`clone_granularity`] | ok |
/// | `src_off` or `dst_off` not a multiple of the granularity | `EINVAL` |
/// | `len` not a multiple, and the range ends before the source's EOF | `EINVAL` |
/// | range ends exactly at the source's EOF with a partial last block, and `dst_off + len` is at or past the destination's EOF | ok (the destination grows to `dst_off + len`) |
/// | same, but `dst_off + len` ends inside the destination (the partial block would land mid-file) | `EINVAL` |
/// | range reaches past the source's EOF (it is never shortened) | `EINVAL` |
/// | `src_off` at or past the source's EOF, `len > 0` | `EINVAL` |
/// | `dst_off` past the destination's EOF | ok: a hole up to `dst_off`, the size grows |
/// | same file (same fd, or another fd of the same inode), ranges overlap | `EINVAL` |
/// | same file, ranges disjoint | ok |
/// | `src` and `dst` on different filesystems (btrfs to XFS, btrfs to ext4) | `EXDEV` |
/// | different mounts of the same filesystem (a bind mount) | ok: only the superblock must match (older kernels also wanted the same mount, else `EXDEV`) |
/// | filesystem without reflink (ext4; tmpfs too, measured by hand) | `EOPNOTSUPP` |
/// | btrfs: one file NOCOW (`chattr +C`, so also nodatasum) and the other not, either way | `EINVAL` |
/// | btrfs: both NOCOW | ok |
/// | either file is an active swap file (btrfs, XFS) | `ETXTBSY` |
/// | source is a running executable | ok; it can never be a destination, as opening it for writing fails with `ETXTBSY` |
/// | `dst` not open for writing, or open with `O_APPEND` | `EBADF` |
/// | `src` not open for reading | `EBADF` |
/// | `src` a directory | `EISDIR` |
///
/// Not provoked in tests: `EPERM` (destination immutable or append-only), `EFBIG`
/// (beyond the size limit), `ENOSPC`/`EDQUOT`/`EIO`/`ENOMEM` (terminal for a copy,
/// docs/guarantees.md §1), and btrfs's `EAGAIN` while the destination subvolume is being sent.
///
/// # Errors: what to check
///
/// A call a signal interrupted (`EINTR`) is made again. Success means the whole range was
/// shared: the kernel (`ioctl_file_clone` in
/// fs/ioctl.c) turns a remap shorter than asked into `EINVAL`. It can be short because
/// the kernel clamps the length on the way (to `RLIMIT_FSIZE`, to the filesystem's
/// maximum size, to a source that shrank meanwhile), and it clones extent by extent, so
/// an `EINVAL` of that kind, like `ENOSPC` or `EIO` part-way, comes after a prefix of the
/// range was already cloned into the destination, possibly growing it. After any error
/// the destination range holds unspecified bytes and must be rewritten or discarded,
/// never assumed untouched. On success nothing is left to check; a caller that wants
/// proof of sharing reads FIEMAP (`FIEMAP_EXTENT_SHARED`), as the tests do.
///
/// # References
///
/// - <https://man7.org/linux/man-pages/man2/ioctl_ficlonerange.2.html>
/// - <https://man7.org/linux/man-pages/man2/ioctl_fideduperange.2.html>
pub(crate) fn clone_range(
    src: BorrowedFd<'_>,
    src_off: u64,
    dst: BorrowedFd<'_>,
    dst_off: u64,
    len: u64,
) -> Result<()> {
    if len == 0 {
        return Err(Errno::INVAL);
    }
    super::linux::restart(|| ficlonerange(src, src_off, dst, dst_off, len))
}

/// Shares everything of `src` from `src_off` to its EOF with `dst` at `dst_off`:
/// `FICLONERANGE` with length 0. At the source's EOF it succeeds and does nothing; past
/// it, `EINVAL`. Otherwise the rules of [`clone_range`] apply with `len` = the source's
/// size − `src_off`, computed by the kernel at the time of the call; a caller that needs
/// to know what was cloned compares the destination's size afterwards. Only the tests ask
/// for it, to pin the kernel's rule: the engine never sends a length of 0.
#[cfg(test)]
pub(crate) fn clone_range_to_eof(
    src: BorrowedFd<'_>,
    src_off: u64,
    dst: BorrowedFd<'_>,
    dst_off: u64,
) -> Result<()> {
    ficlonerange(src, src_off, dst, dst_off, 0)
}

fn ficlonerange(
    src: BorrowedFd<'_>,
    src_off: u64,
    dst: BorrowedFd<'_>,
    dst_off: u64,
    len: u64,
) -> Result<()> {
    #[cfg(feature = "failpoints")]
    fail::fail_point!("clone_range", |arg| Err(super::failpoints::errno(arg)));
    #[cfg(feature = "failpoints")]
    fail::fail_point!("clone_range_short", len >= 8192, |_| {
        // What the kernel does with a remap cut short: a prefix is shared, and the call
        // still fails.
        let half = len / 2 / 4096 * 4096;
        ficlonerange_raw(src, src_off, dst, dst_off, half)?;
        Err(Errno::INVAL)
    });
    ficlonerange_raw(src, src_off, dst, dst_off, len)
}

#[allow(unsafe_code)]
fn ficlonerange_raw(
    src: BorrowedFd<'_>,
    src_off: u64,
    dst: BorrowedFd<'_>,
    dst_off: u64,
    len: u64,
) -> Result<()> {
    let arg = FileCloneRange {
        src_fd: src.as_raw_fd().into(),
        src_offset: src_off,
        src_length: len,
        dest_offset: dst_off,
    };
    // SAFETY: FICLONERANGE reads one `struct file_clone_range` (four 64-bit fields, laid
    // out by repr(C) as in <linux/fs.h>) and writes nothing back. `src` is borrowed for
    // the whole call, so the descriptor number in the argument stays valid.
    unsafe { ioctl::ioctl(dst, Setter::<FICLONERANGE, FileCloneRange>::new(arg)) }
}

// ---- granularity ----

/// The alignment a range clone or dedupe must respect on a filesystem, and where it
/// came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CloneGranularity {
    /// Offsets and lengths must be multiples of this (a power of two), except for a
    /// range that ends at the source's EOF.
    pub bytes: u64,
    pub source: GranularitySource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GranularitySource {
    /// btrfs: `clone_alignment` from `BTRFS_IOC_FS_INFO` (the sector size).
    BtrfsFsInfo,
    /// The filesystem's block size, `statfs` `f_bsize`: XFS, bcachefs, OCFS2, and btrfs
    /// when `BTRFS_IOC_FS_INFO` fails (btrfs reports its sector size there too).
    FsBlockSize,
    /// The file's own block size, `st_blksize`: ZFS, where it is the file's record size.
    FileBlockSize,
    /// A filesystem not known to clone: the larger of `f_bsize` and 4 KiB, rounded up to
    /// a power of two. Aligning to more than needed is always safe.
    Default,
}

/// The clone granularity for `fd`'s filesystem.
///
/// - **btrfs**: the sector size (4 KiB on x86-64; btrfs also mounts 4 KiB sectors on
///   larger pages, never larger sectors on 4 KiB pages). Read with `BTRFS_IOC_FS_INFO`,
///   which needs no privilege, works on any file or directory of the filesystem, and
///   returns `clone_alignment` directly. This is the robust source: the same value in
///   `/sys/fs/btrfs/<fsid>/clone_alignment` needs sysfs mounted and the real fsid,
///   which `statfs` does not give (its `f_fsid` folds the fsid and mixes in the
///   subvolume id).
/// - **XFS**: the filesystem block size (`mkfs.xfs -b size=`, 1 KiB to 64 KiB; not the
///   page size, which `st_blksize` reports for small blocks). Files on a realtime device
///   with an extent size above one block need that extent size instead; not handled.
/// - **ZFS** (block cloning): the file's block size, `st_blksize`, so pass the source
///   file's descriptor; ZFS also refuses to clone between files of different block sizes.
/// - **bcachefs, OCFS2**: the block size.
/// - anything else: [`GranularitySource::Default`].
///
/// # Errors
///
/// Only when `fstatfs` (or `fstat` on ZFS) fails.
pub(crate) fn clone_granularity(fd: BorrowedFd<'_>) -> Result<CloneGranularity> {
    let st = rfs::fstatfs(fd)?;
    let f_bsize = st.f_bsize as u64;
    let (bytes, source) = match st.f_type as u64 {
        BTRFS_MAGIC => match btrfs_fs_info(fd) {
            Ok(info) if info.clone_alignment.is_power_of_two() => {
                (info.clone_alignment as u64, GranularitySource::BtrfsFsInfo)
            }
            _ => (f_bsize, GranularitySource::FsBlockSize),
        },
        XFS_MAGIC | BCACHEFS_MAGIC | OCFS2_MAGIC => (f_bsize, GranularitySource::FsBlockSize),
        ZFS_MAGIC => (
            rfs::fstat(fd)?.st_blksize as u64,
            GranularitySource::FileBlockSize,
        ),
        _ => (f_bsize.max(4096), GranularitySource::Default),
    };
    Ok(CloneGranularity {
        bytes: bytes.max(512).next_power_of_two(),
        source,
    })
}

/// What `BTRFS_IOC_FS_INFO` says about a btrfs filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BtrfsFsInfo {
    /// The filesystem UUID, the name of its directory in `/sys/fs/btrfs`.
    pub fsid: [u8; 16],
    pub sectorsize: u32,
    pub nodesize: u32,
    /// Alignment for clone and dedupe; the sector size on every kernel so far.
    pub clone_alignment: u32,
}

impl BtrfsFsInfo {
    /// The fsid in the form `/sys/fs/btrfs` uses (lower-case, hyphenated 8-4-4-4-12): the
    /// tests compare the ioctl's answer with sysfs.
    #[cfg(test)]
    pub fn fsid_string(&self) -> String {
        let hex: String = self.fsid.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
    }
}

/// `struct btrfs_ioctl_fs_info_args` from `<linux/btrfs.h>`.
#[repr(C)]
struct BtrfsFsInfoArgs {
    max_id: u64,
    num_devices: u64,
    fsid: [u8; 16],
    nodesize: u32,
    sectorsize: u32,
    clone_alignment: u32,
    csum_type: u16,
    csum_size: u16,
    /// In and out: which optional fields to fill. Zero asks for none of them.
    flags: u64,
    generation: u64,
    metadata_uuid: [u8; 16],
    reserved: [u8; 944],
}

const _: () = assert!(size_of::<BtrfsFsInfoArgs>() == 1024);

/// `BTRFS_IOC_FS_INFO` = `_IOR(0x94, 31, struct btrfs_ioctl_fs_info_args)`.
const BTRFS_IOC_FS_INFO: Opcode = opcode::read::<BtrfsFsInfoArgs>(0x94, 31);

/// Sector size, node size, clone alignment and fsid of the btrfs filesystem holding
/// `fd` (`BTRFS_IOC_FS_INFO`; unprivileged). `ENOTTY` on other filesystems.
#[allow(unsafe_code)]
pub(crate) fn btrfs_fs_info(fd: BorrowedFd<'_>) -> Result<BtrfsFsInfo> {
    let mut args = BtrfsFsInfoArgs {
        max_id: 0,
        num_devices: 0,
        fsid: [0; 16],
        nodesize: 0,
        sectorsize: 0,
        clone_alignment: 0,
        csum_type: 0,
        csum_size: 0,
        flags: 0,
        generation: 0,
        metadata_uuid: [0; 16],
        reserved: [0; 944],
    };
    // SAFETY: BTRFS_IOC_FS_INFO reads `flags` from and writes at most the 1024 bytes of a
    // `struct btrfs_ioctl_fs_info_args` into `args`, a live, zero-initialised value laid
    // out by repr(C) as in <linux/btrfs.h> (size checked at compile time above). Every
    // field is plain integers, so any bytes the kernel writes are valid values.
    unsafe {
        ioctl::ioctl(
            fd,
            Updater::<BTRFS_IOC_FS_INFO, BtrfsFsInfoArgs>::new(&mut args),
        )?;
    }
    Ok(BtrfsFsInfo {
        fsid: args.fsid,
        sectorsize: args.sectorsize,
        nodesize: args.nodesize,
        clone_alignment: if args.clone_alignment == 0 {
            args.sectorsize
        } else {
            args.clone_alignment
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::testutil::*;
    use mimeo_testkit::{FsKind, LoopFs};
    use std::fs::File;
    use std::os::fd::AsFd;
    use std::path::Path;

    /// Asserts that `got` is `want` (None = success), naming the filesystem and case.
    #[track_caller]
    fn check(kind: FsKind, case: &str, got: Result<()>, want: Option<Errno>) {
        let want_s = want.map_or("ok".to_string(), |e| format!("{e:?}"));
        assert_eq!(
            outcome(&got),
            want_s,
            "{kind}: {case}: got {}, want {want_s}",
            outcome(&got)
        );
    }

    fn granularity_of(dir: &Path) -> CloneGranularity {
        let d = File::open(dir).expect("open mountpoint");
        clone_granularity(d.as_fd()).expect("granularity")
    }

    fn len(f: &File) -> u64 {
        f.metadata().expect("fstat").len()
    }

    #[test]
    fn clone_range_rules_btrfs() {
        rules(FsKind::Btrfs);
    }

    #[test]
    fn clone_range_rules_xfs() {
        rules(FsKind::Xfs);
    }

    /// Every rule of the table in [`clone_range`]'s documentation that one filesystem
    /// can show by itself.
    fn rules(kind: FsKind) {
        let Some(fs) = scratch(kind) else { return };
        let dir = fs.path();
        let b = granularity_of(dir).bytes;
        let data = random(4 * b as usize, 1);
        let src = file_with(dir, "src", &data);
        let s = src.as_fd();
        let empty = |name: &str| file_with(dir, name, b"");

        // A zero length is refused here: the kernel would have cloned to EOF.
        let d = empty("zero");
        check(
            kind,
            "len 0",
            clone_range(s, 0, d.as_fd(), 0, 0),
            Some(Errno::INVAL),
        );
        assert_eq!(len(&d), 0, "{kind}: a zero length reached the kernel");

        // An aligned range is shared whole.
        let d = empty("aligned");
        check(
            kind,
            "aligned",
            clone_range(s, b, d.as_fd(), 0, 2 * b),
            None,
        );
        assert_eq!(content(&d), &data[b as usize..3 * b as usize]);
        assert_eq!(
            shared_bytes(d.as_fd(), 0, 2 * b),
            2 * b,
            "{kind}: not shared"
        );

        // To EOF: everything from the offset; nothing at EOF; EINVAL past it.
        let d = empty("to_eof");
        check(kind, "to EOF", clone_range_to_eof(s, b, d.as_fd(), 0), None);
        assert_eq!(content(&d), &data[b as usize..]);
        let d = empty("to_eof_at_eof");
        check(
            kind,
            "to EOF from EOF",
            clone_range_to_eof(s, 4 * b, d.as_fd(), 0),
            None,
        );
        assert_eq!(len(&d), 0);
        check(
            kind,
            "to EOF from past EOF",
            clone_range_to_eof(s, 5 * b, d.as_fd(), 0),
            Some(Errno::INVAL),
        );

        // Alignment, and ranges outside the source.
        let d = empty("misaligned");
        let dd = d.as_fd();
        let inval = Some(Errno::INVAL);
        check(
            kind,
            "src_off unaligned",
            clone_range(s, 512, dd, 0, b),
            inval,
        );
        check(
            kind,
            "dst_off unaligned",
            clone_range(s, 0, dd, 512, b),
            inval,
        );
        check(
            kind,
            "len unaligned mid-file",
            clone_range(s, 0, dd, 0, b + 100),
            inval,
        );
        check(
            kind,
            "past src EOF",
            clone_range(s, 2 * b, dd, 0, 4 * b),
            inval,
        );
        check(
            kind,
            "src_off at EOF",
            clone_range(s, 4 * b, dd, 0, b),
            inval,
        );
        assert_eq!(
            len(&d),
            0,
            "{kind}: a refused clone changed the destination"
        );

        // The unaligned EOF block may only land at or past the destination's EOF.
        let tail = random(3 * b as usize + 100, 2);
        let t = file_with(dir, "tail", &tail);
        let t = t.as_fd();
        let d = empty("eof_into_empty");
        check(
            kind,
            "EOF block into empty",
            clone_range(t, 0, d.as_fd(), 0, 3 * b + 100),
            None,
        );
        assert_eq!(content(&d), tail);
        let before = random(4 * b as usize, 3);
        let d = file_with(dir, "eof_mid", &before);
        check(
            kind,
            "EOF block mid dst",
            clone_range(t, 2 * b, d.as_fd(), 0, b + 100),
            inval,
        );
        assert_eq!(content(&d), before);
        let d = file_with(dir, "eof_at_eof", &random(b as usize + 100, 4));
        check(
            kind,
            "EOF block ending at dst EOF",
            clone_range(t, 2 * b, d.as_fd(), 0, b + 100),
            None,
        );
        assert_eq!(content(&d), &tail[2 * b as usize..]);
        let d = file_with(dir, "eof_past_eof", &random(b as usize, 5));
        check(
            kind,
            "EOF block past dst EOF",
            clone_range(t, 2 * b, d.as_fd(), 0, b + 100),
            None,
        );
        assert_eq!(len(&d), b + 100);
        let d = file_with(dir, "eof_unaligned_dst", &random(b as usize + 5, 6));
        check(
            kind,
            "EOF block at dst EOF, dst_off unaligned",
            clone_range(t, 2 * b, d.as_fd(), b + 5, b + 100),
            inval,
        );

        // Past the destination's EOF: a hole, then the clone.
        let d = empty("past_dst_eof");
        check(
            kind,
            "dst_off past dst EOF",
            clone_range(s, 0, d.as_fd(), 2 * b, b),
            None,
        );
        let got = content(&d);
        assert_eq!(got.len() as u64, 3 * b);
        assert!(got[..2 * b as usize].iter().all(|&x| x == 0));
        assert_eq!(&got[2 * b as usize..], &data[..b as usize]);

        // Within one file: overlapping ranges are refused, disjoint ones are fine, and
        // FIEMAP then calls both places shared.
        check(
            kind,
            "overlap, same fd",
            clone_range(s, 0, s, b, 2 * b),
            inval,
        );
        let other = reopen(dir, "src", libc::O_RDWR);
        check(
            kind,
            "overlap, same inode",
            clone_range(s, 0, other.as_fd(), b, 2 * b),
            inval,
        );
        assert_eq!(content(&src), data);
        let own = random(4 * b as usize, 7);
        let f = file_with(dir, "self", &own);
        check(
            kind,
            "disjoint, same fd",
            clone_range(f.as_fd(), 0, f.as_fd(), 2 * b, 2 * b),
            None,
        );
        let got = content(&f);
        assert_eq!(&got[2 * b as usize..], &own[..2 * b as usize]);
        assert_eq!(
            shared_bytes(f.as_fd(), 0, 4 * b),
            4 * b,
            "{kind}: in-file sharing"
        );

        // What the descriptors must be open for.
        let ro = reopen(dir, "aligned", libc::O_RDONLY);
        let wo = reopen(dir, "src", libc::O_WRONLY);
        let app = reopen(dir, "aligned", libc::O_WRONLY | libc::O_APPEND);
        let dirfd = File::open(dir).expect("open dir");
        let d = empty("modes");
        let ebadf = Some(Errno::BADF);
        check(
            kind,
            "dst read-only",
            clone_range(s, 0, ro.as_fd(), 0, b),
            ebadf,
        );
        check(
            kind,
            "src write-only",
            clone_range(wo.as_fd(), 0, d.as_fd(), 0, b),
            ebadf,
        );
        check(
            kind,
            "dst O_APPEND",
            clone_range(s, 0, app.as_fd(), 0, b),
            ebadf,
        );
        check(
            kind,
            "src a directory",
            clone_range(dirfd.as_fd(), 0, d.as_fd(), 0, b),
            Some(Errno::ISDIR),
        );
    }

    #[test]
    fn clone_range_across_filesystems_and_mounts() {
        let (Some(btrfs), Some(xfs), Some(ext4)) = (
            scratch(FsKind::Btrfs),
            scratch(FsKind::Xfs),
            scratch(FsKind::Ext4),
        ) else {
            return;
        };
        let data = random(16384, 8);
        let s = file_with(btrfs.path(), "src", &data);
        let x = file_with(xfs.path(), "src", &data);
        let e = file_with(ext4.path(), "src", &data);
        let xdev = Some(Errno::XDEV);
        let to = |fs: &LoopFs, name: &str| file_with(fs.path(), name, b"");
        let d = to(&xfs, "from_btrfs");
        check(
            FsKind::Btrfs,
            "to XFS",
            clone_range(s.as_fd(), 0, d.as_fd(), 0, 4096),
            xdev,
        );
        let d = to(&ext4, "from_btrfs");
        check(
            FsKind::Btrfs,
            "to ext4",
            clone_range(s.as_fd(), 0, d.as_fd(), 0, 4096),
            xdev,
        );
        let d = to(&btrfs, "from_xfs");
        check(
            FsKind::Xfs,
            "to btrfs",
            clone_range(x.as_fd(), 0, d.as_fd(), 0, 4096),
            xdev,
        );
        let d = to(&ext4, "within");
        check(
            FsKind::Ext4,
            "within ext4",
            clone_range(e.as_fd(), 0, d.as_fd(), 0, 4096),
            Some(Errno::OPNOTSUPP),
        );

        // Another mount of the same filesystem is fine: the superblock is what counts.
        std::fs::create_dir(btrfs.path().join("sub")).expect("mkdir");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        let target = elsewhere.path().join("bind");
        let bind = BindMount::new(&btrfs.path().join("sub"), &target);
        let d = file_with(&target, "via_bind", b"");
        check(
            FsKind::Btrfs,
            "via a bind mount",
            clone_range(s.as_fd(), 0, d.as_fd(), 0, 4096),
            None,
        );
        assert_eq!(content(&d), &data[..4096]);
        drop(d);
        drop(bind);
    }

    #[test]
    fn clone_range_btrfs_nocow_must_match() {
        let kind = FsKind::Btrfs;
        let Some(fs) = scratch(kind) else { return };
        let dir = fs.path();
        let nocow = |name: &str, data: &[u8]| {
            let f = file_with(dir, name, b"");
            rfs::ioctl_setflags(&f, rfs::IFlags::NOCOW).expect("chattr +C");
            rustix::io::pwrite(&f, data, 0).expect("write");
            f.sync_all().expect("fsync");
            f
        };
        let data = random(16384, 9);
        let cow = file_with(dir, "cow", &data);
        let nc = nocow("nocow", &data);
        let inval = Some(Errno::INVAL);
        let d = nocow("nocow_dst", b"");
        check(
            kind,
            "COW to NOCOW",
            clone_range(cow.as_fd(), 0, d.as_fd(), 0, 4096),
            inval,
        );
        let d = file_with(dir, "cow_dst", b"");
        check(
            kind,
            "NOCOW to COW",
            clone_range(nc.as_fd(), 0, d.as_fd(), 0, 4096),
            inval,
        );
        let d = nocow("nocow_dst2", b"");
        check(
            kind,
            "NOCOW to NOCOW",
            clone_range(nc.as_fd(), 0, d.as_fd(), 0, 4096),
            None,
        );
        assert_eq!(content(&d), &data[..4096]);
    }

    #[test]
    fn clone_range_and_dedupe_refuse_swap_files() {
        for kind in REFLINK_KINDS {
            let Some(fs) = scratch(kind) else { continue };
            let dir = fs.path();
            let nocow = kind == FsKind::Btrfs;
            let swap = match SwapFile::activate(dir, "swap", nocow) {
                Ok(s) => s,
                Err(why) => {
                    skipped(&format!("swap file on {kind}"), &why);
                    continue;
                }
            };
            // On btrfs both files must be NOCOW, or the nodatasum check answers first.
            let fresh = |name: &str, data: &[u8]| {
                let f = file_with(dir, name, b"");
                if nocow {
                    rfs::ioctl_setflags(&f, rfs::IFlags::NOCOW).expect("chattr +C");
                }
                rustix::io::pwrite(&f, data, 0).expect("write");
                f.sync_all().expect("fsync");
                f
            };
            let busy = Some(Errno::TXTBSY);
            let sw = reopen(dir, "swap", libc::O_RDWR);
            let d = fresh("from_swap", b"");
            check(
                kind,
                "from a swap file",
                clone_range(sw.as_fd(), 0, d.as_fd(), 0, 4096),
                busy,
            );
            let s = fresh("into_swap", &random(4096, 10));
            check(
                kind,
                "into a swap file",
                clone_range(s.as_fd(), 0, sw.as_fd(), 0, 4096),
                busy,
            );
            for (case, from, to) in [("from", &sw, &s), ("into", &s, &sw)] {
                let mut targets = [crate::sys::DedupeTarget::new(to.as_fd(), 0)];
                crate::sys::dedupe_range(from.as_fd(), 0, 4096, &mut targets).expect("dedupe");
                assert_eq!(
                    targets[0].status,
                    crate::sys::DedupeStatus::Failed(Errno::TXTBSY),
                    "{kind}: dedupe {case} a swap file"
                );
            }
            drop(sw);
            drop(swap);
        }
    }

    #[test]
    fn clone_range_from_a_running_executable() {
        for kind in REFLINK_KINDS {
            let Some(fs) = scratch(kind) else { continue };
            let dir = fs.path();
            let exe = dir.join("sleeper");
            std::fs::copy("/bin/sleep", &exe).expect("copy /bin/sleep");
            // A process forked elsewhere in the test binary may briefly hold the copy's
            // descriptor, and exec then fails with ETXTBSY: try again.
            let mut tries = 0;
            let mut child = loop {
                match std::process::Command::new(&exe).arg("30").spawn() {
                    Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                        tries += 1;
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    other => break other.expect("run the copy of sleep"),
                }
            };
            // spawn returns once the exec has happened. From then on the file cannot be
            // opened for writing, so it can never be a clone destination; as a source it
            // is like any other file.
            let open_rw = std::fs::OpenOptions::new()
                .write(true)
                .open(&exe)
                .map(drop)
                .map_err(|e| e.raw_os_error());
            let s = reopen(dir, "sleeper", libc::O_RDONLY);
            let d = file_with(dir, "copy", b"");
            let got = clone_range(s.as_fd(), 0, d.as_fd(), 0, 4096);
            let _ = child.kill();
            let _ = child.wait();
            assert_eq!(
                open_rw,
                Err(Some(libc::ETXTBSY)),
                "{kind}: open for writing"
            );
            check(kind, "from a running executable", got, None);
        }
    }

    #[test]
    fn granularity_btrfs_is_the_sector_size() {
        let Some(fs) = scratch(FsKind::Btrfs) else {
            return;
        };
        let g = granularity_of(fs.path());
        assert_eq!(
            g,
            CloneGranularity {
                bytes: 4096,
                source: GranularitySource::BtrfsFsInfo
            }
        );
        let d = File::open(fs.path()).expect("open");
        let info = btrfs_fs_info(d.as_fd()).expect("BTRFS_IOC_FS_INFO");
        assert_eq!(info.sectorsize, 4096);
        assert_eq!(info.clone_alignment, 4096);
        assert!(info.nodesize >= info.sectorsize);
        // statfs reports the sector size as its block size too.
        assert_eq!(rfs::fstatfs(d.as_fd()).expect("statfs").f_bsize, 4096);
        // The same numbers as sysfs, found through the fsid the ioctl returned.
        let sysfs = Path::new("/sys/fs/btrfs").join(info.fsid_string());
        if !sysfs.exists() {
            skipped(
                "comparison with sysfs",
                &format!("{} is missing", sysfs.display()),
            );
            return;
        }
        for (name, want) in [
            ("sectorsize", info.sectorsize),
            ("clone_alignment", info.clone_alignment),
        ] {
            let got = std::fs::read_to_string(sysfs.join(name)).expect("read sysfs");
            assert_eq!(got.trim(), want.to_string(), "sysfs {name}");
        }
        // A file works as well as the mountpoint.
        let f = file_with(fs.path(), "f", b"x");
        assert_eq!(clone_granularity(f.as_fd()).expect("granularity"), g);
    }

    #[test]
    fn granularity_xfs_is_the_block_size() {
        let Some(fs) = scratch(FsKind::Xfs) else {
            return;
        };
        let g = granularity_of(fs.path());
        assert_eq!(
            g,
            CloneGranularity {
                bytes: 4096,
                source: GranularitySource::FsBlockSize
            }
        );
        let d = File::open(fs.path()).expect("open");
        assert_eq!(btrfs_fs_info(d.as_fd()).map(|_| ()), Err(Errno::NOTTY));

        for bs in [1024u64, 8192] {
            let size = format!("size={bs}");
            let Some(fs) = LoopFs::try_new_with(FsKind::Xfs, 300, &["-b", &size]) else {
                return;
            };
            let kind = FsKind::Xfs;
            let dir = fs.path();
            let g = granularity_of(dir);
            assert_eq!(
                g,
                CloneGranularity {
                    bytes: bs,
                    source: GranularitySource::FsBlockSize
                }
            );
            let data = random(8 * bs.max(4096) as usize, bs);
            let s = file_with(dir, "src", &data);
            // st_blksize is no substitute: for small blocks it is the page size.
            let blksize = rfs::fstat(&s).expect("fstat").st_blksize as u64;
            assert_eq!(blksize, bs.max(4096), "st_blksize on a {bs}-byte XFS");
            let d = file_with(dir, "dst", b"");
            check(
                kind,
                &format!("{bs}-aligned on a {bs}-byte XFS"),
                clone_range(s.as_fd(), bs, d.as_fd(), bs, bs),
                None,
            );
            assert_eq!(shared_bytes(d.as_fd(), bs, bs), bs);
            if bs > 4096 {
                check(
                    kind,
                    &format!("4096-aligned on a {bs}-byte XFS"),
                    clone_range(s.as_fd(), 4096, d.as_fd(), 4096, 4096),
                    Some(Errno::INVAL),
                );
            }
        }
    }

    #[test]
    fn granularity_elsewhere_is_a_safe_default() {
        let Some(fs) = scratch(FsKind::Ext4) else {
            return;
        };
        let g = granularity_of(fs.path());
        assert_eq!(
            g,
            CloneGranularity {
                bytes: 4096,
                source: GranularitySource::Default
            }
        );
    }

    #[test]
    fn fsid_string_is_hyphenated_like_sysfs() {
        let info = BtrfsFsInfo {
            fsid: [
                0x09, 0x18, 0xb2, 0x32, 0x98, 0xd0, 0x41, 0x26, 0x9d, 0x63, 0xd9, 0xe3, 0x32, 0x09,
                0x65, 0x41,
            ],
            sectorsize: 4096,
            nodesize: 16384,
            clone_alignment: 4096,
        };
        assert_eq!(info.fsid_string(), "0918b232-98d0-4126-9d63-d9e332096541");
    }
}
