//! `mimeo::clone_range` when a clone fails in ways the kernel rarely shows: EAGAIN (btrfs,
//! while a subvolume is being sent), a remap cut short (reported as EINVAL after part of the
//! range is already shared), and terminal errors. They are injected at the syscall boundary
//! (failpoints `clone_range` and `clone_range_short`), on real btrfs and XFS. Failpoints are
//! process-wide, so everything here runs in one test.

use mimeo::clone_range;
use mimeo_testkit::extents::extents;
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{FsKind, LoopFs};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

const B: u64 = 4096;

fn random(n: u64, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; n as usize];
    Rng::new(seed).fill(&mut v);
    v
}

fn file_with(dir: &Path, name: &str, data: &[u8]) -> File {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(dir.join(name))
        .unwrap();
    f.write_all_at(data, 0).unwrap();
    f.sync_all().unwrap();
    f
}

fn shared_bytes(path: &Path) -> u64 {
    File::open(path).unwrap().sync_all().unwrap();
    extents(path)
        .unwrap()
        .iter()
        .filter(|e| e.is_shared())
        .map(|e| e.length)
        .sum()
}

#[test]
fn failed_and_short_clones_are_checked_and_rewritten() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = LoopFs::try_new(kind, 300) else {
            continue;
        };
        let dir = fs.path();
        let len = 64 * B;
        let data = random(len, 1);
        let src = file_with(dir, "src", &data);
        let mut n = 0;
        // Each case: a destination full of other bytes, a failpoint, and what must happen.
        let mut run = |fp: &str, action: &str| {
            n += 1;
            let name = format!("dst{n}");
            let dst = file_with(dir, &name, &random(len, 100 + n));
            fail::cfg(fp, action).unwrap();
            let got = clone_range(&src, 0, &dst, 0, len);
            fail::remove(fp);
            (got, dir.join(name))
        };

        // EAGAIN is tried again: the clone then succeeds, whole.
        let (got, path) = run("clone_range", "2*return(EAGAIN)");
        let got = got.unwrap();
        assert_eq!((got.cloned, got.copied), (len, 0), "{kind}: EAGAIN retried");
        assert_eq!(shared_bytes(&path), len, "{kind}: shared after EAGAIN");
        assert!(std::fs::read(&path).unwrap() == data);

        // EAGAIN for ever: after a few tries the range is copied instead.
        let (got, path) = run("clone_range", "return(EAGAIN)");
        let got = got.unwrap();
        assert_eq!(
            (got.cloned, got.copied),
            (0, len),
            "{kind}: EAGAIN persists"
        );
        assert!(std::fs::read(&path).unwrap() == data, "{kind}: bytes");

        // A short remap: half the range is shared, then EINVAL. Never counted as cloned, and
        // the whole range is written again, so none of the old bytes survive.
        let (got, path) = run("clone_range_short", "1*return");
        let got = got.unwrap();
        assert_eq!((got.cloned, got.copied), (0, len), "{kind}: short clone");
        assert!(
            std::fs::read(&path).unwrap() == data,
            "{kind}: bytes after a short clone"
        );

        // Terminal errors fail the copy, with nothing counted as done.
        for errno in ["ENOSPC", "EIO", "EDQUOT", "ENOMEM"] {
            let (got, _) = run("clone_range", &format!("return({errno})"));
            let e = got.unwrap_err();
            assert_eq!(e.op, mimeo::Op::Clone, "{kind}: {errno}");
            let want = match errno {
                "ENOSPC" => libc::ENOSPC,
                "EIO" => libc::EIO,
                "EDQUOT" => libc::EDQUOT,
                _ => libc::ENOMEM,
            };
            assert_eq!(e.errno, want, "{kind}: {errno}");
            assert_eq!(e.done.cloned, 0, "{kind}: {errno}");
        }

        // A head copied before a failing body counts as done.
        let dst = file_with(dir, "head", b"");
        fail::cfg("clone_range", "return(ENOSPC)").unwrap();
        let e = clone_range(&src, 100, &dst, 100, 8 * B).unwrap_err();
        fail::remove("clone_range");
        assert_eq!(e.done.copied, B - 100, "{kind}: the head was copied first");
    }
}
