//! Tests of [`super::extents`] (FIEMAP) on real filesystems: batching past one call's
//! worth of extents, and the flags of extents that are not plain data.

use super::testutil::*;
use super::*;
use mimeo_testkit::FsKind;
use std::os::fd::AsFd;

/// Extents fetched per FIEMAP call by `extents` (256): files below cross that boundary.
const BATCH: usize = 256;

/// A file of `n` separate 4 KiB blocks, one every 8 KiB, with gaps between.
fn fragmented(dir: &std::path::Path, name: &str, n: usize) -> std::fs::File {
    let f = file_with(dir, name, b"");
    let block = random(4096, n as u64);
    for i in 0..n {
        rustix::io::pwrite(&f, &block, i as u64 * 8192).expect("pwrite");
    }
    f.sync_all().expect("fsync");
    f
}

#[test]
fn fiemap_batches_past_256_extents() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        // Two full batches exactly, and two and a bit.
        for n in [2 * BATCH, 2 * BATCH + 88] {
            let f = fragmented(fs.path(), &format!("frag{n}"), n);
            let ext = extents(f.as_fd()).expect("FIEMAP");
            // In order, without overlap or repetition across batches; LAST only at the end.
            for (i, w) in ext.windows(2).enumerate() {
                assert!(
                    w[0].logical + w[0].length <= w[1].logical,
                    "{kind}: {i}: {w:?}"
                );
            }
            for (i, e) in ext.iter().enumerate() {
                let last = e.flags & FIEMAP_EXTENT_LAST != 0;
                assert_eq!(
                    last,
                    i == ext.len() - 1,
                    "{kind}: LAST on extent {i} of {n}"
                );
            }
            // Every block written is there. XFS turns most gaps between them into
            // preallocated (unwritten) extents of their own, so only written ones count.
            let data: Vec<_> = ext
                .iter()
                .filter(|e| e.flags & FIEMAP_EXTENT_UNWRITTEN == 0)
                .collect();
            assert_eq!(data.len(), n, "{kind}: {n} data extents");
            for (i, e) in data.iter().enumerate() {
                assert_eq!(
                    (e.logical, e.length),
                    (i as u64 * 8192, 4096),
                    "{kind}: extent {i}"
                );
                assert_ne!(e.physical, 0, "{kind}: extent {i}");
            }
            if kind != FsKind::Xfs {
                assert_eq!(ext.len(), n, "{kind}: holes between the extents");
            }
        }
    }
}

/// `extents` flushes first (FIEMAP_FLAG_SYNC), so fresh writes show as real extents,
/// never as delayed allocation.
#[test]
fn fiemap_sees_unflushed_writes_as_real_extents() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let f = std::fs::File::create(fs.path().join("fresh")).expect("create");
        rustix::io::pwrite(&f, &random(1 << 20, 31), 0).expect("write");
        let ext = extents(f.as_fd()).expect("FIEMAP");
        assert!(!ext.is_empty(), "{kind}");
        for e in &ext {
            let bad = FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN;
            assert_eq!(e.flags & bad, 0, "{kind}: {e:?}");
        }
        assert_eq!(ext.iter().map(|e| e.length).sum::<u64>(), 1 << 20, "{kind}");
    }
}

#[test]
fn fiemap_flags_preallocated_space_unwritten() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let f = file_with(fs.path(), "prealloc", b"");
        rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, 1 << 20)
            .expect("fallocate");
        let ext = extents(f.as_fd()).expect("FIEMAP");
        assert!(!ext.is_empty(), "{kind}");
        assert!(
            ext.iter().all(|e| e.flags & FIEMAP_EXTENT_UNWRITTEN != 0),
            "{kind}: {ext:?}"
        );
    }
}

/// btrfs keeps small files inline in its metadata: one extent at physical 0, flagged
/// DATA_INLINE and NOT_ALIGNED.
#[test]
fn fiemap_exposes_btrfs_inline_extents() {
    let Some(fs) = scratch(FsKind::Btrfs) else {
        return;
    };
    let f = file_with(fs.path(), "small", &random(100, 32));
    let ext = extents(f.as_fd()).expect("FIEMAP");
    assert_eq!(ext.len(), 1, "{ext:?}");
    let e = ext[0];
    assert_eq!((e.logical, e.physical), (0, 0), "{e:?}");
    assert!(e.length >= 100, "{e:?}");
    let want = FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_LAST;
    assert_eq!(e.flags & want, want, "{e:?}");
}

/// Compressed btrfs extents are ENCODED, and their lengths are the uncompressed bytes.
#[test]
fn fiemap_exposes_btrfs_compressed_extents() {
    let Some(fs) = scratch(FsKind::Btrfs) else {
        return;
    };
    let f = file_with(fs.path(), "comp", b"");
    rustix::fs::ioctl_setflags(&f, rustix::fs::IFlags::COMPRESSED).expect("chattr +c");
    let text = b"mimeo copies files. ".repeat((1 << 20) / 20 + 1);
    rustix::io::pwrite(&f, &text[..1 << 20], 0).expect("write");
    f.sync_all().expect("fsync");
    let ext = extents(f.as_fd()).expect("FIEMAP");
    assert!(!ext.is_empty());
    assert!(
        ext.iter().all(|e| e.flags & FIEMAP_EXTENT_ENCODED != 0),
        "{ext:?}"
    );
    assert_eq!(ext.iter().map(|e| e.length).sum::<u64>(), 1 << 20);
}
