//! A failing range of a split file (`Options::split`) fails its file, whoever copies the
//! range, and leaves nothing behind. The failure is injected at the syscall boundary
//! (failpoint `copy_file_range`); failpoints are process-wide, so this test has its binary
//! to itself.

use mimeo::{CopyPair, NoObserver, Options};
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{FsKind, LoopFs};
use std::path::Path;

const MIB: u64 = 1 << 20;

fn random_file(path: &Path, len: u64, seed: u64) {
    let mut v = vec![0u8; len as usize];
    Rng::new(seed).fill(&mut v);
    std::fs::write(path, v).unwrap();
}

#[test]
fn a_failing_range_fails_its_file_and_leaves_nothing() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 300) else {
        return;
    };
    let src = fs.path().join("src");
    std::fs::create_dir(&src).unwrap();
    random_file(&src.join("big"), 16 * MIB, 3);
    // An empty file needs no copy_file_range call: every call is the big file's.
    std::fs::write(src.join("small"), b"").unwrap();
    let dst = fs.path().join("dst");
    // The fifth 1 MiB copy_file_range fails: one of the ranges, whoever copies it.
    let mut opts = Options::archive();
    opts.split = Some(MIB);
    opts.jobs = 4;
    fail::cfg("copy_file_range", "4*off->1*return(EIO)").unwrap();
    let s = mimeo::copy(&[CopyPair::new(&src, &dst)], &opts, &NoObserver);
    fail::remove("copy_file_range");
    assert_eq!(s.errors, 1, "{s:?}");
    assert_eq!(s.files, 1, "only the empty file: {s:?}");
    let mut names: Vec<_> = std::fs::read_dir(&dst)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["small"],
        "the failed file and every scratch entry are gone"
    );
}
