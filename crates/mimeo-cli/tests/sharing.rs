//! `--preserve=sharing` (part of `-a`): extents that source files share stay shared in a copy
//! to another filesystem, which cannot clone from the source. The source is a tree of eight
//! clones of one image, two of them partly rewritten, and a cloned subtree; it is copied from
//! btrfs to XFS and from XFS to btrfs. The copy must equal the source in bytes and in every
//! bit of metadata, and take about the space of the distinct data, not of every file; a copy
//! killed part-way must be finished by `-u` with the sharing still kept.

mod util;

use mimeo_testkit::extents::extents;
use mimeo_testkit::{CompareOptions, FsKind, LoopFs, compare_trees};
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use util::{Run, mimeo, random_file, run, run_command};

const MIB: u64 = 1 << 20;
/// The image and its clones.
const IMAGE: u64 = 64 * MIB;
const CLONES: usize = 8;

fn scratch(kind: FsKind) -> Option<LoopFs> {
    LoopFs::try_new(kind, 1200)
}

/// Bytes in use on the filesystem holding `path`.
fn used(path: &Path) -> u64 {
    rustix::fs::sync();
    let s = rustix::fs::statvfs(path).unwrap();
    (s.f_blocks - s.f_bfree) * s.f_frsize
}

fn reflink(from: &Path, to: &Path) {
    let out = Command::new("cp")
        .args(["-a", "--reflink=always"])
        .arg(from)
        .arg(to)
        .output()
        .unwrap();
    assert!(out.status.success(), "cp --reflink: {out:?}");
}

fn overwrite(path: &Path, at: u64, len: u64, seed: u64) {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len as usize];
    mimeo_testkit::rng::Rng::new(seed).fill(&mut buf);
    let f = fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&buf, at).unwrap();
}

/// The source tree under `root/src`; returns it and the bytes of distinct data in it.
fn build_source(root: &Path) -> (PathBuf, u64) {
    let src = root.join("src");
    let images = src.join("images");
    fs::create_dir_all(&images).unwrap();
    let base = images.join("image0");
    random_file(&base, IMAGE);
    for i in 1..CLONES {
        reflink(&base, &images.join(format!("image{i}")));
    }
    // 1 MiB rewritten in two clones: those parts are theirs alone.
    overwrite(&images.join("image2"), 10 * MIB, MIB, 2);
    overwrite(&images.join("image5"), 30 * MIB + 4096, MIB, 5);
    // A subtree, and a clone of it with all its metadata.
    let tree = src.join("tree");
    fs::create_dir_all(tree.join("deep/er")).unwrap();
    random_file(&tree.join("a"), 3 * MIB + 123);
    random_file(&tree.join("deep/b"), 2 * MIB);
    random_file(&tree.join("deep/er/c"), 100_000);
    fs::write(tree.join("small"), b"inline on btrfs\n").unwrap();
    std::os::unix::fs::symlink("deep/b", tree.join("link")).unwrap();
    fs::set_permissions(tree.join("a"), fs::Permissions::from_mode(0o640)).unwrap();
    rustix::fs::chown(
        tree.join("deep/b").as_path(),
        Some(rustix::fs::Uid::from_raw(1234)),
        Some(rustix::fs::Gid::from_raw(5678)),
    )
    .unwrap();
    xattr(&tree.join("deep/er/c"), "user.note", b"kept");
    reflink(&tree, &src.join("tree-clone"));
    let distinct = IMAGE + 2 * MIB + 3 * MIB + 123 + 2 * MIB + 100_000;
    (src, distinct)
}

fn xattr(path: &Path, name: &str, value: &[u8]) {
    rustix::fs::setxattr(path, name, value, rustix::fs::XattrFlags::empty()).unwrap();
}

/// Everything `-a` keeps.
fn archive() -> CompareOptions {
    CompareOptions {
        blocks_le: false,
        ..CompareOptions::default()
    }
}

#[track_caller]
fn assert_equal(what: &str, src: &Path, dst: &Path) {
    let c = compare_trees(src, dst, &archive()).unwrap();
    assert!(c.is_equal(), "{what}: {dst:?} differs from {src:?}:\n{c}");
}

/// Files whose data extents are not all shared.
fn unshared(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() && e.metadata().unwrap().len() >= MIB {
                let ext = extents(&e.path()).unwrap();
                if ext.iter().any(|x| !x.is_shared()) || ext.is_empty() {
                    out.push(e.path());
                }
            }
        }
    }
    out
}

/// The sharing expected in a copy of the source: the images and the cloned subtree's
/// large files all share every extent, except the two rewritten images' own MiB (which FIEMAP
/// shows as one unshared extent each).
fn assert_sharing_kept(what: &str, dst: &Path) {
    let left = unshared(dst);
    let ok = |p: &PathBuf| p.ends_with("images/image2") || p.ends_with("images/image5");
    assert!(
        left.iter().all(ok),
        "{what}: files that share nothing or only part: {left:?}"
    );
}

fn copy_and_check(from: FsKind, to: FsKind) {
    let (Some(a), Some(b)) = (scratch(from), scratch(to)) else {
        return;
    };
    let what = format!("{from} to {to}");
    let (src, distinct) = build_source(a.path());
    let before = used(b.path());
    let dst = b.path().join("dst");
    let r = run(&[
        OsString::from("-a"),
        "--json".into(),
        src.clone().into(),
        dst.clone().into(),
    ]);
    r.expect_code(0);
    let grown = used(b.path()) - before;
    assert_equal(&what, &src, &dst);
    assert_sharing_kept(&what, &dst);
    // The distinct data, plus metadata and allocation slack; `cp -a` takes 8 images' worth.
    let all = CLONES as u64 * IMAGE;
    assert!(
        grown < distinct + 24 * MIB,
        "{what}: the copy took {} MiB for {} MiB of distinct data",
        grown / MIB,
        distinct / MIB
    );
    assert!(grown < all / 4, "{what}");
    let cloned = r.count("by_method.clone");
    assert!(
        cloned >= (CLONES as u64 - 1) * IMAGE - 2 * MIB,
        "{what}: only {cloned} bytes cloned: {r:#?}"
    );
    assert_eq!(
        r.count("bytes"),
        r.count("by_method.clone") + r.count("by_method.stream") + r.count("by_method.offload")
    );

    // Without sharing, each clone takes its own space: the test can tell the difference.
    let plain = b.path().join("plain");
    fs::create_dir(&plain).unwrap();
    let before = used(b.path());
    run(&[
        OsString::from("-a"),
        "--no-preserve=sharing".into(),
        src.join("images/image0").into(),
        src.join("images/image1").into(),
        plain.clone().into(),
    ])
    .expect_code(0);
    let grown = used(b.path()) - before;
    assert!(
        grown >= 2 * IMAGE - MIB,
        "{what}: without sharing two images took {} MiB",
        grown / MIB
    );
}

#[test]
fn sharing_is_kept_from_btrfs_to_xfs() {
    copy_and_check(FsKind::Btrfs, FsKind::Xfs);
}

#[test]
fn sharing_is_kept_from_xfs_to_btrfs() {
    copy_and_check(FsKind::Xfs, FsKind::Btrfs);
}

/// Entries of `dst` that have their source's mtime (and size, for files): the ones whose
/// times were set (every entry's times are set through the `utimensat` failpoint).
fn complete_entries(src: &Path, dst: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = fs::read_dir(src.join(&rel)) else {
            continue;
        };
        for e in entries.flatten() {
            let s = fs::symlink_metadata(e.path()).unwrap();
            let rel = rel.join(e.file_name());
            if s.is_dir() {
                stack.push(rel.clone());
            }
            let same = |d: fs::Metadata| {
                d.mtime_nsec() == s.mtime_nsec() && (!s.is_file() || d.len() == s.len())
            };
            if fs::symlink_metadata(dst.join(&rel)).is_ok_and(same) {
                n += 1;
            }
        }
    }
    n
}

fn spawn(args: &[OsString], failpoints: &str) -> Child {
    mimeo()
        .args(args)
        .env("MIMEO_FAILPOINTS", failpoints)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_sharing_copy_is_finished_by_update_with_sharing_kept() {
    for (from, to) in [(FsKind::Btrfs, FsKind::Xfs), (FsKind::Xfs, FsKind::Btrfs)] {
        let (Some(a), Some(b)) = (scratch(from), scratch(to)) else {
            return;
        };
        let what = format!("{from} to {to}, killed, then -u");
        let (src, distinct) = build_source(a.path());
        let before = used(b.path());
        let dst = b.path().join("dst");
        fs::create_dir(&dst).unwrap();
        // The images first: three finish, the fourth stops before its times are set, and the
        // copy is killed. The three must then hold the extents for the rest, or the others
        // would share with each other but not with them.
        let args = [
            OsString::from("-aT"),
            src.join("images").into(),
            dst.join("images").into(),
        ];
        let mut child = spawn(&args, "utimensat=3*off->sleep(30000)");
        let end = Instant::now() + Duration::from_secs(60);
        while complete_entries(&src, &dst) < 3 {
            assert!(Instant::now() < end, "{what}: three images never completed");
            assert!(child.try_wait().unwrap().is_none(), "{what}: exited early");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        child.kill().unwrap();
        child.wait().unwrap();
        let done = complete_entries(&src, &dst);
        assert_eq!(done, 3, "{what}: the kill came too late");

        let r: Run = run_command(
            mimeo().args(["-aT", "-u", "--json"]).arg(&src).arg(&dst),
            true,
        );
        r.expect_code(0);
        assert_eq!(
            r.count("skipped"),
            3,
            "{what}: complete images kept: {r:#?}"
        );
        assert_equal(&what, &src, &dst);
        assert_sharing_kept(&what, &dst);
        let grown = used(b.path()) - before;
        assert!(
            grown < distinct + 24 * MIB,
            "{what}: {} MiB for {} MiB of distinct data",
            grown / MIB,
            distinct / MIB
        );
        let names: Vec<_> = fs::read_dir(dst.join("images"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| !n.to_string_lossy().starts_with(".mimeo-")),
            "{what}: leftovers {names:?}"
        );
    }
}
