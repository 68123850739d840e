//! `mimeo::space::dedupe` on real btrfs and XFS: it changes nothing but sharing (the tree
//! comparer, before and after), what it saves is what `du` measures, a file rewritten while it
//! runs is reported and never changed, a dry run predicts the saving exactly, and a second
//! run finds everything shared.

use mimeo::Control;
use mimeo::space::{
    DedupeOptions, DedupeSummary, DuOptions, NoSpaceObserver, Progress, SkipReason, SpaceEvent,
    SpaceObserver, Usage,
};
use mimeo_testkit::space::{regular_files, space_tree};
use mimeo_testkit::{CompareOptions, FsKind, GenOptions, LoopFs, compare_trees, generate, run_ok};
use std::ffi::OsStr;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

const REFLINK_KINDS: [FsKind; 2] = [FsKind::Btrfs, FsKind::Xfs];

/// Every event, kept.
#[derive(Default)]
struct Log(Mutex<Vec<SpaceEvent>>);

impl SpaceObserver for Log {
    fn event(&self, e: SpaceEvent) {
        self.0.lock().unwrap().push(e);
    }
}

impl Log {
    fn skipped(&self) -> Vec<(PathBuf, SkipReason)> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter_map(|e| match e {
                SpaceEvent::Skipped { path, reason, .. } => Some((path.clone(), *reason)),
                _ => None,
            })
            .collect()
    }

    fn deduped(&self) -> Vec<PathBuf> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter_map(|e| match e {
                SpaceEvent::Deduped { path, .. } => Some(path.clone()),
                _ => None,
            })
            .collect()
    }

    fn failures(&self) -> Vec<String> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter_map(|e| match e {
                SpaceEvent::Failed(err) => Some(err.to_string()),
                _ => None,
            })
            .collect()
    }
}

fn dedupe_with(path: &Path, dry_run: bool, observer: &dyn SpaceObserver) -> DedupeSummary {
    let mut opts = DedupeOptions::default();
    opts.dry_run = dry_run;
    mimeo::space::dedupe(
        &[path.to_path_buf()],
        &opts,
        observer,
        &Control::new(),
        &Progress::default(),
    )
}

fn dedupe(path: &Path, dry_run: bool) -> DedupeSummary {
    dedupe_with(path, dry_run, &NoSpaceObserver)
}

/// The space `path` takes as `du` measures it: every physical byte once.
fn used(path: &Path) -> u64 {
    run_ok("sync", &[] as &[&str]);
    let r = mimeo::space::du(
        &[path.to_path_buf()],
        &DuOptions::default(),
        &NoSpaceObserver,
        &Control::new(),
    );
    assert_eq!(r.errors, 0);
    let u: Usage = r.total;
    u.exclusive + u.shared.unwrap()
}

fn cp(args: &[&OsStr]) {
    run_ok("cp", args);
}

/// A tree with duplicates of every kind below `t`: a generated tricky tree (modes, owners,
/// times, xattrs, hard links, sparse files, special files) and two plain copies of it, a
/// space-accounting tree (clones, range clones, partial rewrites) and a plain copy of it.
/// Then `snapshot`, a plain `cp -a` of all of it, to compare with.
fn tree_with_duplicates(fs: &Path, seed: u64) -> (PathBuf, PathBuf) {
    let t = fs.join("t");
    generate(&t.join("gen"), &GenOptions::new(seed, 250)).expect("generate");
    for copy in ["copy1", "copy2"] {
        cp(&[
            OsStr::new("-a"),
            OsStr::new("--reflink=never"),
            t.join("gen").as_os_str(),
            t.join(copy).as_os_str(),
        ]);
    }
    space_tree(&t.join("s"), &fs.join("out"), seed, true).expect("space tree");
    cp(&[
        OsStr::new("-a"),
        OsStr::new("--reflink=never"),
        t.join("s").as_os_str(),
        t.join("s-copy").as_os_str(),
    ]);
    let snapshot = fs.join("snapshot");
    cp(&[
        OsStr::new("-a"),
        OsStr::new("--reflink=never"),
        t.as_os_str(),
        snapshot.as_os_str(),
    ]);
    run_ok("sync", &[] as &[&str]);
    (t, snapshot)
}

#[test]
fn dedupe_changes_nothing_but_sharing_and_saves_what_du_measures() {
    for kind in REFLINK_KINDS {
        let Some(fs) = LoopFs::try_new(kind, 768) else {
            continue;
        };
        let (t, snapshot) = tree_with_duplicates(fs.path(), 21);
        let before = used(&t);
        let log = Log::default();
        let s = dedupe_with(&t, false, &log);
        assert_eq!(
            s.errors,
            0,
            "{kind}: {s:?} {:?} {:?}",
            log.failures(),
            log.skipped()
        );
        assert!(s.deduped_files > 0 && s.bytes_deduped > 0, "{kind}: {s:?}");
        assert_eq!(s.deduped_files, log.deduped().len() as u64);
        let after = used(&t);
        assert!(s.bytes_saved > 0, "{kind}: {s:?}");
        assert_eq!(
            s.bytes_saved,
            before - after,
            "{kind}: du before {before}, after {after}"
        );
        compare_trees(&snapshot, &t, &CompareOptions::default())
            .expect("compare")
            .assert_equal();

        // Everything shares now: a second run finds nothing to do, and reads only what
        // same-size files of different content need.
        let again = dedupe(&t, false);
        assert_eq!(
            (again.groups, again.bytes_deduped, again.bytes_saved),
            (0, 0, 0),
            "{kind}: {again:?}"
        );
        assert!(again.already_shared >= s.deduped_files, "{kind}: {again:?}");
        assert!(
            again.bytes_read * 4 < s.bytes_read,
            "{kind}: {again:?} after {s:?}"
        );
        assert_eq!(used(&t), after);
    }
}

#[test]
fn a_dry_run_changes_nothing_and_predicts_the_saving() {
    for kind in REFLINK_KINDS {
        let Some(fs) = LoopFs::try_new(kind, 768) else {
            continue;
        };
        let (t, snapshot) = tree_with_duplicates(fs.path(), 22);
        let before = used(&t);
        let log = Log::default();
        let dry = dedupe_with(&t, true, &log);
        assert!(
            dry.dry_run && dry.groups > 0 && dry.bytes_saved > 0,
            "{kind}: {dry:?}"
        );
        assert_eq!(dry.bytes_deduped, 0);
        assert!(log.deduped().is_empty());
        assert_eq!(used(&t), before, "{kind}: a dry run changed sharing");
        compare_trees(&snapshot, &t, &CompareOptions::default())
            .expect("compare")
            .assert_equal();
        let groups = log
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| matches!(e, SpaceEvent::Duplicates { .. }))
            .count();
        assert_eq!(groups as u64, dry.groups);
        let real = dedupe(&t, false);
        assert_eq!(
            real.bytes_saved, dry.bytes_saved,
            "{kind}: {dry:?} {real:?}"
        );
        assert_eq!(real.duplicates, dry.duplicates);
    }
}

/// Two files of 40 MiB, three pieces of 16 MiB, with the same content; returns their paths.
fn twins(dir: &Path, n: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let mut data = vec![0u8; 40 << 20];
    mimeo_testkit::rng::Rng::new(5).fill(&mut data);
    let paths: Vec<PathBuf> = (0..n).map(|i| dir.join(format!("f{i}"))).collect();
    for p in &paths {
        std::fs::write(p, &data).unwrap();
    }
    run_ok("sync", &[] as &[&str]);
    paths
}

/// On the first group found, before anything is shared, rewrites one byte of `victim` in
/// its last piece; with `keep_mtime`, puts its modification time back, so that only the
/// kernel's own comparison can tell.
struct Writer {
    victim: PathBuf,
    keep_mtime: bool,
    done: AtomicBool,
    log: Log,
}

impl SpaceObserver for Writer {
    fn event(&self, e: SpaceEvent) {
        if matches!(e, SpaceEvent::Duplicates { .. }) && !self.done.swap(true, Ordering::SeqCst) {
            let before = std::fs::metadata(&self.victim).unwrap().modified().unwrap();
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&self.victim)
                .unwrap();
            f.write_all_at(b"X", (38 << 20) + 11).unwrap();
            if self.keep_mtime {
                f.set_modified(before).unwrap();
            }
            f.sync_all().unwrap();
        }
        self.log.event(e);
    }
}

#[test]
fn a_file_rewritten_after_it_was_hashed_is_reported_and_never_changed() {
    for kind in REFLINK_KINDS {
        let Some(fs) = LoopFs::try_new(kind, 512) else {
            continue;
        };
        for keep_mtime in [false, true] {
            let dir = fs.path().join(format!("race-{keep_mtime}"));
            let files = twins(&dir, 3);
            let snapshot = fs.path().join(format!("snapshot-{keep_mtime}"));
            cp(&[OsStr::new("-a"), dir.as_os_str(), snapshot.as_os_str()]);
            let writer = Writer {
                victim: files[2].clone(),
                keep_mtime,
                done: AtomicBool::new(false),
                log: Log::default(),
            };
            let s = dedupe_with(&dir, false, &writer);
            assert!(writer.done.load(Ordering::SeqCst));
            let skipped = writer.log.skipped();
            assert_eq!(
                skipped,
                vec![(files[2].clone(), SkipReason::Changed)],
                "{kind} keep_mtime={keep_mtime}: {s:?}"
            );
            assert_eq!(s.errors, 0, "a changed file is not an error");
            // With its time put back, only the kernel's comparison could tell: the first two
            // pieces of f2 were equal and are shared, the last one differed.
            let f2_shared = if keep_mtime { 32 << 20 } else { 0 };
            assert_eq!(s.bytes_deduped, (40 << 20) + f2_shared, "{kind}: {s:?}");
            // The rewritten file holds exactly what the writer wrote; the others are
            // deduped and unchanged.
            let mut expected = std::fs::read(snapshot.join("f2")).unwrap();
            expected[(38 << 20) + 11] = b'X';
            assert!(
                std::fs::read(&files[2]).unwrap() == expected,
                "{kind}: f2 changed"
            );
            assert_eq!(writer.log.deduped().len(), 1, "{kind}: {s:?}");
            let cmp = compare_trees(&snapshot, &dir, &CompareOptions::default()).unwrap();
            let differing: Vec<_> = cmp.differences.iter().map(|d| d.path.clone()).collect();
            assert!(
                differing.iter().all(|p| p == Path::new("f2")),
                "{kind}: {cmp}"
            );
        }
    }
}

#[test]
fn a_concurrent_writer_never_loses_a_write() {
    for kind in REFLINK_KINDS {
        let Some(fs) = LoopFs::try_new(kind, 512) else {
            continue;
        };
        let dir = fs.path().join("live");
        let files = twins(&dir, 3);
        let original = std::fs::read(&files[0]).unwrap();
        // The writer flips one byte of f1 between the original value and another, over
        // and over, and remembers what it wrote last.
        let last = Mutex::new(original[(20 << 20) + 5]);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&files[1])
                    .unwrap();
                let mut n = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let mut v = last.lock().unwrap();
                    let b = if n % 2 == 0 {
                        b'W'
                    } else {
                        original[(20 << 20) + 5]
                    };
                    f.write_all_at(&[b], (20 << 20) + 5).unwrap();
                    *v = b;
                    n += 1;
                    drop(v);
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            });
            for _ in 0..6 {
                let s = dedupe(&dir, false);
                assert_eq!(s.errors, 0, "{kind}: {s:?}");
            }
            stop.store(true, Ordering::SeqCst);
        });
        let mut expected = original.clone();
        expected[(20 << 20) + 5] = *last.lock().unwrap();
        assert!(
            std::fs::read(&files[1]).unwrap() == expected,
            "{kind}: a write was lost"
        );
        assert!(
            std::fs::read(&files[0]).unwrap() == original,
            "{kind}: f0 changed"
        );
        assert!(
            std::fs::read(&files[2]).unwrap() == original,
            "{kind}: f2 changed"
        );
    }
}

#[test]
fn dedupe_on_ext4_says_it_cannot_and_changes_nothing() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 256) else {
        return;
    };
    let dir = fs.path().join("d");
    twins(&dir, 2);
    let snapshot = fs.path().join("snapshot");
    cp(&[OsStr::new("-a"), dir.as_os_str(), snapshot.as_os_str()]);
    let log = Log::default();
    let s = dedupe_with(&dir, false, &log);
    assert_eq!(
        (s.errors, s.deduped_files, s.bytes_read),
        (1, 0, 0),
        "{s:?}"
    );
    let failures = log.failures();
    assert!(
        failures[0].contains("Operation not supported"),
        "{failures:?}"
    );
    compare_trees(&snapshot, &dir, &CompareOptions::default())
        .unwrap()
        .assert_equal();
}

#[test]
fn btrfs_nodatacow_on_one_side_is_reported_and_the_run_goes_on() {
    let Some(fs) = LoopFs::try_new(FsKind::Btrfs, 256) else {
        return;
    };
    let dir = fs.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let data = vec![9u8; 1 << 20];
    // `chattr +C` only takes on an empty file.
    std::fs::write(dir.join("a-cow"), &data).unwrap();
    std::fs::File::create(dir.join("b-nocow")).unwrap();
    run_ok("chattr", &["+C", dir.join("b-nocow").to_str().unwrap()]);
    std::fs::write(dir.join("b-nocow"), &data).unwrap();
    let other = vec![4u8; 1 << 20];
    std::fs::write(dir.join("c1"), &other).unwrap();
    std::fs::write(dir.join("c2"), &other).unwrap();
    run_ok("sync", &[] as &[&str]);
    let log = Log::default();
    let s = dedupe_with(&dir, false, &log);
    assert_eq!(
        log.skipped(),
        vec![(dir.join("b-nocow"), SkipReason::Unaligned)],
        "{s:?}"
    );
    assert_eq!(s.errors, 1);
    assert_eq!(log.deduped(), vec![dir.join("c2")]);
    assert_eq!(std::fs::read(dir.join("b-nocow")).unwrap(), data);
    assert!(regular_files(&dir).unwrap().len() == 4);
}
