//! Deduplication (`FIDEDUPERANGE`): the kernel compares two ranges byte for byte and, only
//! if they are equal, makes them share storage. Nothing but sharing changes
//! (docs/guarantees.md §9).

use rustix::fd::{AsRawFd, BorrowedFd};
use rustix::io::{Errno, Result};
use rustix::ioctl::{self, Opcode, Updater, opcode};

/// Most targets one call takes. The kernel copies the argument into one page and answers
/// `ENOMEM` beyond it: (4096 − 24) / 32 = 127 on 4 KiB pages.
pub(crate) const DEDUPE_MAX_TARGETS: usize = 127;

/// A length per call that callers should not exceed. On Linux 6.18 neither btrfs nor XFS
/// caps a call (40 MiB was deduped whole by one call on each), because btrfs now splits
/// the work into 16 MiB pieces itself; older btrfs kernels instead stopped at 16 MiB and
/// reported that. The kernel also holds both files locked for the whole call. Looping in
/// pieces of this size is right on every kernel.
pub(crate) const DEDUPE_CHUNK: u64 = 16 << 20;

/// `struct file_dedupe_range` from `<linux/fs.h>`, without its trailing array.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct DedupeHeader {
    src_offset: u64,
    src_length: u64,
    dest_count: u16,
    reserved1: u16,
    reserved2: u32,
}

/// `struct file_dedupe_range_info` from `<linux/fs.h>`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct DedupeInfo {
    dest_fd: i64,
    dest_offset: u64,
    bytes_deduped: u64,
    status: i32,
    reserved: u32,
}

/// The header followed by room for the most targets one call takes.
#[repr(C)]
struct DedupeArgs {
    head: DedupeHeader,
    info: [DedupeInfo; DEDUPE_MAX_TARGETS],
}

const _: () = assert!(size_of::<DedupeHeader>() == 24);
const _: () = assert!(size_of::<DedupeInfo>() == 32);
const _: () = assert!(size_of::<DedupeArgs>() <= 4096);

/// `FIDEDUPERANGE` = `_IOWR(0x94, 54, struct file_dedupe_range)`.
const FIDEDUPERANGE: Opcode = opcode::read_write::<DedupeHeader>(0x94, 54);

const FILE_DEDUPE_RANGE_SAME: i32 = 0;
const FILE_DEDUPE_RANGE_DIFFERS: i32 = 1;

/// One destination of a dedupe call, and what happened to it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DedupeTarget<'fd> {
    pub fd: BorrowedFd<'fd>,
    pub offset: u64,
    /// Set by [`dedupe_range`].
    pub status: DedupeStatus,
}

impl<'fd> DedupeTarget<'fd> {
    pub fn new(fd: BorrowedFd<'fd>, offset: u64) -> Self {
        DedupeTarget {
            fd,
            offset,
            status: DedupeStatus::NotRun,
        }
    }
}

/// The outcome for one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DedupeStatus {
    /// The call failed as a whole (or was not made), so this target was not tried.
    NotRun,
    /// `FILE_DEDUPE_RANGE_SAME`: the bytes were equal and are now shared. `bytes` is the
    /// kernel's `bytes_deduped`, which is the requested length even when the kernel
    /// quietly shared less: see [`dedupe_range`].
    Same { bytes: u64 },
    /// `FILE_DEDUPE_RANGE_DIFFERS`: some byte differs; nothing was changed.
    Differs,
    /// A negative status: this target failed with this errno.
    Failed(Errno),
    /// A status this code does not know.
    Unknown(i32),
}

/// Compares `len` bytes of `src` at `src_off` with each target's range and shares those
/// that are equal: one `FIDEDUPERANGE` call on `src`. Each target's `status` is set.
///
/// `Err` means the call failed as a whole and every status is left [`DedupeStatus::NotRun`];
/// `Ok` means look at each target. A `len` of 0 (which the kernel accepts and reports as
/// `SAME` with 0 bytes, so a loop on `bytes` would never end) and more than
/// [`DEDUPE_MAX_TARGETS`] targets are refused with `EINVAL` by this wrapper.
///
/// # Kernel rules
///
/// The alignment rules are those of a range clone (see [`super::clone_range`]), but where
/// a clone fails, dedupe quietly shares less and still reports the full length. Measured
/// on Linux 6.18.44 on btrfs and XFS, identically on both, each proved by a test unless
/// marked otherwise:
///
/// Whole call (`Err`):
///
/// | case | errno |
/// |---|---|
/// | range reaches past the source's EOF | `EINVAL` |
/// | `src` not open for reading | `EINVAL` (not `EBADF` as for a clone) |
/// | filesystem without dedupe (ext4) | `EOPNOTSUPP` |
/// | more than 127 targets (measured with a raw call; this wrapper refuses them) | `ENOMEM` |
///
/// Per target:
///
/// | case | status |
/// |---|---|
/// | identical bytes | `Same { bytes: len }`, extents now `FIEMAP_EXTENT_SHARED` |
/// | any byte differs | `Differs`; nothing shared, nothing changed |
/// | `len` not a multiple of the granularity and the range ends before the source's EOF | `Same { bytes: len }`, but only the aligned-down part is shared |
/// | range ends at the source's EOF with a partial block, and at the target's EOF too | `Same`, all of it shared |
/// | same, target longer | `Same { bytes: len }`, the partial block not shared |
/// | an offset not a multiple of the granularity | `Failed(EINVAL)` |
/// | target range past the target's EOF | `Failed(EINVAL)` |
/// | same file, overlapping ranges | `Failed(EINVAL)` |
/// | same file, disjoint equal ranges | `Same` |
/// | target on another filesystem | `Failed(EXDEV)` |
/// | btrfs: one file NOCOW, the other not | `Failed(EINVAL)` |
/// | either file an active swap file | `Failed(ETXTBSY)` |
/// | target open read-only, and the caller neither owns it, nor may write it, nor has `CAP_SYS_ADMIN` | `Failed(EPERM)` |
/// | target open read-only but writable by the caller, or owned by the caller (even mode 0444) | `Same` |
/// | target open for writing (e.g. before privileges were dropped) | `Same` |
/// | target open with `O_APPEND` | `Same` (a clone refuses it) |
///
/// Not provoked in tests: btrfs answers `EAGAIN` while the target's subvolume is being
/// sent (`btrfs send`); retrying later is the remedy. `EBADF` for a closed target cannot
/// arise through a `BorrowedFd`.
///
/// # What dedupe leaves alone
///
/// Measured as root on btrfs and XFS: the target's and the source's mtime, ctime, atime
/// and mode (set-id bits included) are unchanged, whether the bytes were the same or
/// not. (A clone, by contrast, updates the destination's mtime and ctime.)
///
/// # What callers must check
///
/// `bytes` cannot be trusted to say how much is shared: pass lengths that are multiples
/// of the granularity, or end at both files' EOF, and loop in pieces of at most
/// [`DEDUPE_CHUNK`]. FIEMAP is the proof of sharing.
///
/// # References
///
/// - <https://man7.org/linux/man-pages/man2/ioctl_fideduperange.2.html>
#[allow(unsafe_code)]
pub(crate) fn dedupe_range(
    src: BorrowedFd<'_>,
    src_off: u64,
    len: u64,
    targets: &mut [DedupeTarget<'_>],
) -> Result<()> {
    if len == 0 || targets.len() > DEDUPE_MAX_TARGETS {
        return Err(Errno::INVAL);
    }
    for t in targets.iter_mut() {
        t.status = DedupeStatus::NotRun;
    }
    if targets.is_empty() {
        return Ok(());
    }
    #[cfg(feature = "failpoints")]
    fail::fail_point!("dedupe", |arg| Err(super::failpoints::errno(arg)));
    let mut args = DedupeArgs {
        head: DedupeHeader {
            src_offset: src_off,
            src_length: len,
            dest_count: targets.len() as u16,
            reserved1: 0,
            reserved2: 0,
        },
        info: [DedupeInfo::default(); DEDUPE_MAX_TARGETS],
    };
    for (info, t) in args.info.iter_mut().zip(targets.iter()) {
        info.dest_fd = t.fd.as_raw_fd().into();
        info.dest_offset = t.offset;
    }
    // SAFETY: FIDEDUPERANGE reads the header, then `dest_count` (at most 127, checked
    // above) `struct file_dedupe_range_info` entries, and writes the same bytes back.
    // `args` is a live, zero-initialised repr(C) value laid out as in <linux/fs.h> with
    // room for 127 entries, and holds only integers, so whatever the kernel writes is
    // valid. Every target fd is borrowed for the whole call.
    unsafe {
        ioctl::ioctl(src, Updater::<FIDEDUPERANGE, DedupeArgs>::new(&mut args))?;
    }
    for (info, t) in args.info.iter().zip(targets.iter_mut()) {
        t.status = match info.status {
            FILE_DEDUPE_RANGE_SAME => DedupeStatus::Same {
                bytes: info.bytes_deduped,
            },
            FILE_DEDUPE_RANGE_DIFFERS => DedupeStatus::Differs,
            s if s < 0 => DedupeStatus::Failed(Errno::from_raw_os_error(-s)),
            s => DedupeStatus::Unknown(s),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::clone_granularity;
    use crate::sys::testutil::*;
    use mimeo_testkit::FsKind;
    use std::fs::File;
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;

    /// Runs one dedupe of `src` against `targets` (file, offset) and returns the statuses.
    fn run(src: &File, off: u64, len: u64, targets: &[(&File, u64)]) -> Result<Vec<DedupeStatus>> {
        let mut t: Vec<DedupeTarget<'_>> = targets
            .iter()
            .map(|(f, o)| DedupeTarget::new(f.as_fd(), *o))
            .collect();
        dedupe_range(src.as_fd(), off, len, &mut t)?;
        Ok(t.iter().map(|t| t.status).collect())
    }

    fn same(bytes: u64) -> DedupeStatus {
        DedupeStatus::Same { bytes }
    }

    fn failed(e: Errno) -> DedupeStatus {
        DedupeStatus::Failed(e)
    }

    #[test]
    fn dedupe_rules_btrfs() {
        rules(FsKind::Btrfs);
    }

    #[test]
    fn dedupe_rules_xfs() {
        rules(FsKind::Xfs);
    }

    fn rules(kind: FsKind) {
        let Some(fs) = scratch(kind) else { return };
        let dir = fs.path();
        let b = {
            let d = File::open(dir).expect("open");
            clone_granularity(d.as_fd()).expect("granularity").bytes
        };
        let data = random(8 * b as usize, 11);
        let a = file_with(dir, "a", &data);
        let t = file_with(dir, "b", &data);
        std::fs::set_permissions(dir.join("b"), std::fs::Permissions::from_mode(0o4755))
            .expect("chmod");
        let mut other = data.clone();
        other[5 * b as usize] ^= 1;
        let c = file_with(dir, "c", &other);

        // Identical bytes are shared, and nothing else about either file changes.
        let before = [stamp(a.as_fd()), stamp(t.as_fd()), stamp(c.as_fd())];
        let_clock_tick();
        assert_eq!(
            run(&a, 0, 8 * b, &[(&t, 0)]),
            Ok(vec![same(8 * b)]),
            "{kind}"
        );
        assert_eq!(
            shared_bytes(t.as_fd(), 0, 8 * b),
            8 * b,
            "{kind}: target shared"
        );
        assert_eq!(
            shared_bytes(a.as_fd(), 0, 8 * b),
            8 * b,
            "{kind}: source shared"
        );
        assert_eq!(content(&t), data);

        // Different bytes: DIFFERS, and nothing changes either.
        assert_eq!(
            run(&a, 0, 8 * b, &[(&c, 0)]),
            Ok(vec![DedupeStatus::Differs]),
            "{kind}"
        );
        assert_eq!(
            shared_bytes(c.as_fd(), 0, 8 * b),
            0,
            "{kind}: a differing target"
        );
        assert_eq!(content(&c), other);
        let after = [stamp(a.as_fd()), stamp(t.as_fd()), stamp(c.as_fd())];
        assert_eq!(after, before, "{kind}: dedupe changed times or mode");
        assert_eq!(after[1].mode & 0o7777, 0o4755, "{kind}: set-id bit kept");

        // A clone, by contrast, does update the destination's times.
        let_clock_tick();
        crate::sys::clone_range(a.as_fd(), 0, c.as_fd(), 0, b).expect("clone");
        let cloned = stamp(c.as_fd());
        assert_ne!(cloned.mtime, before[2].mtime, "{kind}: clone mtime");
        assert_ne!(cloned.ctime, before[2].ctime, "{kind}: clone ctime");

        // Targets are independent: one call, three outcomes.
        let third = file_with(dir, "third", &other);
        assert_eq!(
            run(&a, 0, 4 * b, &[(&t, 0), (&third, 4 * b), (&t, 6 * b)]),
            Ok(vec![
                same(4 * b),
                DedupeStatus::Differs,
                failed(Errno::INVAL)
            ]),
            "{kind}: mixed targets (the last one reaches past its EOF)"
        );

        // Refused by the wrapper.
        assert_eq!(
            run(&a, 0, 0, &[(&t, 0)]),
            Err(Errno::INVAL),
            "{kind}: len 0"
        );
        let many = vec![(&t, 0); DEDUPE_MAX_TARGETS + 1];
        assert_eq!(
            run(&a, 0, b, &many),
            Err(Errno::INVAL),
            "{kind}: 128 targets"
        );
        let most = vec![(&t, 0); DEDUPE_MAX_TARGETS];
        assert_eq!(
            run(&a, 0, b, &most),
            Ok(vec![same(b); DEDUPE_MAX_TARGETS]),
            "{kind}"
        );
        assert_eq!(run(&a, 0, b, &[]), Ok(vec![]), "{kind}: no targets");

        // A length that is not a multiple of the granularity, mid-file: the kernel reports
        // every byte but shares only the whole blocks.
        let pair = random(2 * b as usize, 12);
        let x = file_with(dir, "x", &pair);
        let y = file_with(dir, "y", &pair);
        assert_eq!(
            run(&x, 0, b + 100, &[(&y, 0)]),
            Ok(vec![same(b + 100)]),
            "{kind}"
        );
        assert_eq!(
            shared_bytes(y.as_fd(), 0, 2 * b),
            b,
            "{kind}: the partial block"
        );

        // Unaligned offsets fail per target; a range past the source's EOF fails whole.
        assert_eq!(
            run(&x, 100, b, &[(&y, 100)]),
            Ok(vec![failed(Errno::INVAL)]),
            "{kind}: unaligned offsets"
        );
        assert_eq!(
            run(&x, b, 2 * b, &[(&y, b)]),
            Err(Errno::INVAL),
            "{kind}: past EOF"
        );

        // The partial EOF block is shared when the range ends at both EOFs, and left
        // out (yet still counted) when the target goes on.
        let tail = random(3 * b as usize + 100, 13);
        let e1 = file_with(dir, "e1", &tail);
        let e2 = file_with(dir, "e2", &tail);
        let mut longer = tail.clone();
        longer.extend_from_slice(&random(b as usize, 14));
        let e3 = file_with(dir, "e3", &longer);
        let n = 3 * b + 100;
        assert_eq!(
            run(&e1, 0, n, &[(&e2, 0), (&e3, 0)]),
            Ok(vec![same(n), same(n)]),
            "{kind}"
        );
        assert_eq!(
            shared_bytes(e2.as_fd(), 0, n),
            n,
            "{kind}: EOF block, both at EOF"
        );
        assert_eq!(
            shared_bytes(e3.as_fd(), 0, n),
            3 * b,
            "{kind}: EOF block, target longer"
        );

        // Within one file: overlap refused, disjoint equal ranges shared.
        let mut twice = pair[..b as usize].to_vec();
        twice.extend_from_slice(&pair[..b as usize]);
        let w = file_with(dir, "twice", &twice);
        assert_eq!(
            run(&w, 0, 2 * b, &[(&w, b)]),
            Ok(vec![failed(Errno::INVAL)]),
            "{kind}"
        );
        assert_eq!(
            run(&w, 0, b, &[(&w, b)]),
            Ok(vec![same(b)]),
            "{kind}: same file"
        );

        // Descriptor modes: the source must be readable (EINVAL, not EBADF); a read-only
        // or append-only target is fine for root.
        let wo = reopen(dir, "a", libc::O_WRONLY);
        assert_eq!(
            run(&wo, 0, b, &[(&t, 0)]),
            Err(Errno::INVAL),
            "{kind}: src write-only"
        );
        let ro = reopen(dir, "b", libc::O_RDONLY);
        let app = reopen(dir, "b", libc::O_WRONLY | libc::O_APPEND);
        assert_eq!(
            run(&a, 0, b, &[(&ro, 0), (&app, 0)]),
            Ok(vec![same(b), same(b)]),
            "{kind}: read-only and O_APPEND targets"
        );
    }

    #[test]
    fn dedupe_large_range_in_one_call() {
        const LEN: u64 = 40 << 20;
        for kind in REFLINK_KINDS {
            let Some(fs) = scratch(kind) else { continue };
            let data = random(LEN as usize, 15);
            let a = file_with(fs.path(), "a", &data);
            let t = file_with(fs.path(), "b", &data);
            drop(data);
            // No 16 MiB cap on this kernel: the whole range in one call, all shared.
            assert_eq!(run(&a, 0, LEN, &[(&t, 0)]), Ok(vec![same(LEN)]), "{kind}");
            assert_eq!(shared_bytes(t.as_fd(), 0, LEN), LEN, "{kind}: shared bytes");
        }
    }

    #[test]
    fn dedupe_across_filesystems_and_without_support() {
        let (Some(btrfs), Some(xfs), Some(ext4)) = (
            scratch(FsKind::Btrfs),
            scratch(FsKind::Xfs),
            scratch(FsKind::Ext4),
        ) else {
            return;
        };
        let data = random(16384, 16);
        let a = file_with(btrfs.path(), "a", &data);
        let local = file_with(btrfs.path(), "b", &data);
        let far = file_with(xfs.path(), "b", &data);
        let e = file_with(ext4.path(), "b", &data);
        assert_eq!(
            run(&a, 0, 16384, &[(&far, 0), (&local, 0), (&e, 0)]),
            Ok(vec![failed(Errno::XDEV), same(16384), failed(Errno::XDEV)])
        );
        let e2 = file_with(ext4.path(), "c", &data);
        assert_eq!(
            run(&e, 0, 16384, &[(&e2, 0)]),
            Err(Errno::OPNOTSUPP),
            "ext4"
        );
    }

    #[test]
    fn dedupe_btrfs_nocow_must_match() {
        let Some(fs) = scratch(FsKind::Btrfs) else {
            return;
        };
        let data = random(16384, 17);
        let a = file_with(fs.path(), "a", &data);
        let nc = file_with(fs.path(), "nocow", b"");
        rustix::fs::ioctl_setflags(&nc, rustix::fs::IFlags::NOCOW).expect("chattr +C");
        rustix::io::pwrite(&nc, &data, 0).expect("write");
        nc.sync_all().expect("fsync");
        assert_eq!(
            run(&a, 0, 16384, &[(&nc, 0)]),
            Ok(vec![failed(Errno::INVAL)])
        );
        assert_eq!(
            run(&nc, 0, 16384, &[(&a, 0)]),
            Ok(vec![failed(Errno::INVAL)])
        );
    }

    /// Dedupe into a file the caller may not write needs a writable descriptor, the file's
    /// ownership or CAP_SYS_ADMIN. Root opens the descriptors; a thread that has dropped to
    /// `nobody` (credentials are per thread in Linux) makes the call.
    #[test]
    fn dedupe_permissions_of_an_unprivileged_caller() {
        use rustix::process::{Gid, Uid};
        const NOBODY: u32 = 65534;
        for kind in REFLINK_KINDS {
            let Some(fs) = scratch(kind) else { continue };
            let dir = fs.path();
            let data = random(16384, 18);
            let src = file_with(dir, "src", &data);
            let mode = |name: &str, m: u32| {
                std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(m))
                    .expect("chmod")
            };
            drop(file_with(dir, "root_644", &data));
            mode("root_644", 0o644);
            drop(file_with(dir, "root_666", &data));
            mode("root_666", 0o666);
            drop(file_with(dir, "nobody_444", &data));
            std::os::unix::fs::chown(dir.join("nobody_444"), Some(NOBODY), Some(NOBODY))
                .expect("chown");
            mode("nobody_444", 0o444);
            let ro_644 = reopen(dir, "root_644", libc::O_RDONLY);
            let ro_666 = reopen(dir, "root_666", libc::O_RDONLY);
            let ro_own = reopen(dir, "nobody_444", libc::O_RDONLY);
            let rw_644 = reopen(dir, "root_644", libc::O_RDWR);

            let got = std::thread::scope(|s| {
                s.spawn(|| {
                    rustix::thread::set_thread_groups(&[]).expect("setgroups");
                    let g = Gid::from_raw(NOBODY);
                    rustix::thread::set_thread_res_gid(g, g, g).expect("setresgid");
                    let u = Uid::from_raw(NOBODY);
                    rustix::thread::set_thread_res_uid(u, u, u).expect("setresuid");
                    run(
                        &src,
                        0,
                        16384,
                        &[(&ro_644, 0), (&ro_666, 0), (&ro_own, 0), (&rw_644, 0)],
                    )
                })
                .join()
                .expect("unprivileged thread")
            });
            assert_eq!(
                got,
                Ok(vec![
                    failed(Errno::PERM),
                    same(16384),
                    same(16384),
                    same(16384)
                ]),
                "{kind}: read-only not writable, world-writable, owned 0444, writable fd"
            );
            // This thread kept its privileges.
            assert!(rustix::process::geteuid().is_root());
        }
    }
}
