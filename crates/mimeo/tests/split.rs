//! Large files split into ranges (`Options::split`): the ranges are plain-data work items
//! that any worker (or another scheduler) runs, the copy equals its source in bytes and
//! metadata, the metadata is applied once after the last range, and a failing range fails
//! the file without leaving anything behind. On real filesystems: ext4 (offload) and btrfs to
//! XFS (stream).

use mimeo::work::{Executor, WorkItem, WorkKind};
use mimeo::{Control, CopyPair, NoObserver, Options, Scheduler};
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{CompareOptions, FsKind, LoopFs, compare_trees};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;

const MIB: u64 = 1 << 20;

fn random_file(path: &Path, len: u64, seed: u64) {
    let mut v = vec![0u8; len as usize];
    Rng::new(seed).fill(&mut v);
    std::fs::write(path, v).unwrap();
}

/// A tree with large files (one sparse), a small one, and metadata to keep.
fn tree(root: &Path) -> std::path::PathBuf {
    let src = root.join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    random_file(&src.join("a"), 9 * MIB + 777, 1);
    random_file(&src.join("sub/b"), 4 * MIB, 2);
    let sparse = std::fs::File::create(src.join("sparse")).unwrap();
    use std::os::unix::fs::FileExt;
    sparse.write_all_at(&[9u8; 70_000], 5 * MIB).unwrap();
    sparse.set_len(8 * MIB).unwrap();
    std::fs::write(src.join("small"), b"small").unwrap();
    std::fs::set_permissions(src.join("a"), std::fs::Permissions::from_mode(0o751)).unwrap();
    src
}

fn split_options() -> Options {
    let mut opts = Options::archive();
    opts.split = Some(MIB);
    opts.jobs = 4;
    opts
}

#[track_caller]
fn assert_equal(what: &str, src: &Path, dst: &Path, blocks_le: bool) {
    let opts = CompareOptions {
        blocks_le,
        ..CompareOptions::default()
    };
    let c = compare_trees(src, dst, &opts).unwrap();
    assert!(c.is_equal(), "{what}: {dst:?} differs from {src:?}:\n{c}");
}

#[test]
fn split_copies_equal_their_source_on_ext4_and_from_btrfs_to_xfs() {
    let (Some(ext4), Some(btrfs), Some(xfs)) = (
        LoopFs::try_new(FsKind::Ext4, 300),
        LoopFs::try_new(FsKind::Btrfs, 300),
        LoopFs::try_new(FsKind::Xfs, 300),
    ) else {
        return;
    };
    for (from, to) in [(&ext4, &ext4), (&btrfs, &xfs)] {
        let what = format!("{} to {}", from.kind(), to.kind());
        let src = tree(&from.path().join(to.kind().to_string()));
        let dst = to.path().join(format!("dst-from-{}", from.kind()));
        let s = mimeo::copy(&[CopyPair::new(&src, &dst)], &split_options(), &NoObserver);
        assert_eq!((s.errors, s.files), (0, 4), "{what}: {s:?}");
        // The sparse file's data is its one block-aligned data segment.
        assert_eq!(
            s.bytes,
            9 * MIB + 777 + 4 * MIB + 73_728 + 5,
            "{what}: {s:?}"
        );
        assert_eq!(s.clone_bytes, 0, "{what}");
        // XFS preallocates speculatively past the end of a file that grows from several
        // writers at once and trims it later, so its block count is not comparable there.
        assert_equal(&what, &src, &dst, to.kind() != FsKind::Xfs);
        // A file given alone is split too.
        let alone = to.path().join(format!("alone-from-{}", from.kind()));
        let s = mimeo::copy(
            &[CopyPair::new(src.join("a"), &alone)],
            &split_options(),
            &NoObserver,
        );
        assert_eq!((s.errors, s.files), (0, 1), "{what}: {s:?}");
        assert!(std::fs::read(&alone).unwrap() == std::fs::read(src.join("a")).unwrap());
    }
}

/// Runs items on one thread, depth-first; a range item is sent through JSON first, as it
/// would be to another process, and run at once in a worker of its own, before the worker
/// that split the file can take its range: so every range but the first is copied through
/// the plain-data item.
struct Through {
    ranges: Mutex<Vec<WorkItem>>,
}

impl Through {
    fn run_one(&self, exec: &Executor<'_>, item: WorkItem) {
        let mut worker = exec.worker();
        let mut spawned = Vec::new();
        let done = exec.run(&mut worker, item, &mut |i: WorkItem| {
            if matches!(i.kind, WorkKind::Range(_)) {
                let text = serde_json::to_string(&i).unwrap();
                let back: WorkItem = serde_json::from_str(&text).unwrap();
                self.ranges.lock().unwrap().push(back.clone());
                let mut helper = exec.worker();
                assert!(
                    exec.run(&mut helper, back, &mut |_| unreachable!())
                        .is_none()
                );
            } else {
                spawned.push(i);
            }
        });
        for i in spawned {
            self.run_one(exec, i);
        }
        if let Some(d) = done {
            exec.complete(&mut worker, d);
        }
    }
}

impl Scheduler for Through {
    fn run(&self, exec: &Executor<'_>, initial: Vec<WorkItem>) {
        for item in initial {
            self.run_one(exec, item);
        }
    }
}

#[test]
fn ranges_are_plain_data_that_another_worker_copies() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 300) else {
        return;
    };
    let src = tree(fs.path());
    let dst = fs.path().join("dst");
    let opts = split_options();
    let control = Control::new();
    let (exec, initial) = Executor::new(&[CopyPair::new(&src, &dst)], &opts, &NoObserver, &control);
    let through = Through {
        ranges: Mutex::new(Vec::new()),
    };
    through.run(&exec, initial);
    let s = exec.finish();
    assert_eq!((s.errors, s.files), (0, 4), "{s:?}");
    assert_equal("ranges through JSON", &src, &dst, true);
    let ranges = through.ranges.lock().unwrap();
    // a: 9 ranges of 1 MiB (the last with the remainder), b: 4, sparse: 8; the first of each
    // is the splitter's own.
    assert_eq!(ranges.len(), 8 + 3 + 7, "{ranges:#?}");
    for r in ranges.iter() {
        let WorkKind::Range(range) = &r.kind else {
            unreachable!()
        };
        assert!(range.offset >= MIB && range.offset % MIB == 0, "{range:?}");
    }
}
