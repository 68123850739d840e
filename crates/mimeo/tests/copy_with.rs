//! The engine driven as a library: `copy_with` with an observer, batched events, a stop from
//! another thread, and a scheduler of the caller's own that moves every work item as JSON.

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mimeo::work::{
    DirDone, Executor, LinkClaim, LinkGroups, LinkLoc, Sighting, WorkItem, WorkKind, Worker,
};
use mimeo::{Control, CopyPair, EntryKind, Event, EventChannel, Observer, Options, Overwrite};
use mimeo_testkit::oracle::{Allow, assert_archive_equal, is_scratch, no_half_files};
use mimeo_testkit::{FsKind, GenOptions, LoopFs, generate};

/// A seeded tricky tree of about `entries` entries at `root`.
fn tree(root: &Path, seed: u64, entries: usize) {
    generate(root, &GenOptions::new(seed, entries)).unwrap();
}

/// Counts events by kind, and the distinct destinations copied.
#[derive(Default)]
struct Tally {
    copied: Mutex<BTreeMap<PathBuf, EntryKind>>,
    failed: AtomicU64,
}

impl Observer for Tally {
    fn event(&self, event: Event) {
        match event {
            Event::Copied { dst, kind, .. } => {
                let before = self.copied.lock().unwrap().insert(dst.clone(), kind);
                assert!(before.is_none(), "{dst:?} reported twice");
            }
            Event::Failed(e) => {
                eprintln!("failed: {e}");
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn copy_with_reports_every_entry_once_and_the_summary_agrees() {
    for kind in FsKind::ALL {
        let Some(fs) = LoopFs::try_new(kind, 300) else {
            continue;
        };
        let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
        tree(&src, 11, 400);
        let tally = Tally::default();
        let control = Control::new();
        let summary = mimeo::copy_with(
            &[CopyPair::new(&src, &dst)],
            &Options::archive(),
            &tally,
            &control,
        );
        assert_eq!(summary.errors, 0, "{kind}");
        assert_eq!(tally.failed.load(Ordering::Relaxed), 0);
        assert_archive_equal(&format!("{kind}: copy_with"), &src, &dst);
        let copied = tally.copied.lock().unwrap();
        let count = |k: EntryKind| copied.values().filter(|&&v| v == k).count() as u64;
        assert_eq!(count(EntryKind::File), summary.files, "{kind}");
        assert_eq!(count(EntryKind::Directory), summary.directories, "{kind}");
        assert_eq!(count(EntryKind::Symlink), summary.symlinks, "{kind}");
        assert_eq!(count(EntryKind::HardLink), summary.hard_links, "{kind}");
        assert_eq!(copied.len() as u64, control.entries_done(), "{kind}");
        for path in copied.keys() {
            assert!(path.starts_with(&dst) && fs::symlink_metadata(path).is_ok());
        }
    }
}

#[test]
fn an_event_channel_delivers_every_event_in_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    fs::create_dir(&src).unwrap();
    for i in 0..500 {
        fs::write(src.join(format!("f{i}")), b"x").unwrap();
    }
    let (observer, batches) = EventChannel::new(64, Duration::from_secs(60), true);
    let summary = mimeo::copy(&[CopyPair::new(&src, &dst)], &Options::archive(), &observer);
    drop(observer);
    let batches: Vec<Vec<Event>> = batches.iter().collect();
    let events: usize = batches.iter().map(Vec::len).sum();
    assert_eq!(events as u64, summary.files + summary.directories);
    assert_eq!(events, 501);
    // Batches of 64 (the interval never runs out here), and the rest at the end.
    assert_eq!(batches.len(), 501usize.div_ceil(64));
    assert!(batches[..batches.len() - 1].iter().all(|b| b.len() == 64));
}

/// Stops the run from the observer, as another thread would, at the `at`-th copied entry.
struct StopAt<'a> {
    control: &'a Control,
    at: u64,
    seen: AtomicU64,
}

impl Observer for StopAt<'_> {
    fn event(&self, event: Event) {
        if let Event::Copied { .. } = event {
            if self.seen.fetch_add(1, Ordering::SeqCst) + 1 == self.at {
                self.control.stop();
            }
        }
    }
}

#[test]
fn a_stopped_run_leaves_no_half_files_and_a_rerun_finishes_it() {
    for kind in FsKind::ALL {
        let Some(fs) = LoopFs::try_new(kind, 300) else {
            continue;
        };
        let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
        tree(&src, 23, 1500);
        let control = Control::new();
        let stopper = StopAt {
            control: &control,
            at: 100,
            seen: AtomicU64::new(0),
        };
        let mut opts = Options::archive();
        opts.jobs = 2;
        let summary = mimeo::copy_with(&[CopyPair::new(&src, &dst)], &opts, &stopper, &control);
        assert!(summary.interrupted, "{kind}: the run was stopped");
        assert!(summary.files < 1000, "{kind}: stopped early: {summary:?}");
        // A clean stop: no temporary, no marker, and every file complete (none marked).
        let half =
            no_half_files(&src, &dst, &Allow::default()).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert!(half.complete > 0, "{kind}");
        let scratch: Vec<_> = walkdir(&dst)
            .into_iter()
            .filter(|p| p.file_name().is_some_and(is_scratch))
            .collect();
        assert!(scratch.is_empty(), "{kind}: {scratch:?}");
        opts.overwrite = Overwrite::Replace;
        let summary = mimeo::copy(&[CopyPair::new(&src, &dst)], &opts, &mimeo::NoObserver);
        assert_eq!(summary.errors, 0);
        assert_archive_equal(&format!("{kind}: stopped, then again"), &src, &dst);
    }
}

/// Every path below `root`, directories included.
fn walkdir(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// A directory: its root and its path below it.
type DirKey = (u32, Vec<u8>);

/// Per directory: the items it still waits for, and its completion (as JSON) once its pass ran.
type Pending = BTreeMap<DirKey, (usize, Option<String>)>;

/// A scheduler of the caller's own: one thread, first in first out, and every work item and
/// every completion passes through JSON on its way, as it would between processes. Directory
/// completion is counted by path, not by anything the engine keeps.
fn run_serialized(exec: &Executor<'_>, initial: Vec<WorkItem>) {
    run_serialized_on(&[exec], initial);
}

/// [`run_serialized`] over several executors of one run (as in several processes): the n-th
/// item runs on executor n modulo their number, and so do completions.
fn run_serialized_on(execs: &[&Executor<'_>], initial: Vec<WorkItem>) {
    // Pending items per directory, and the directory each queued item gates.
    let mut pending: Pending = BTreeMap::new();
    let mut queue: VecDeque<(String, Option<DirKey>)> = initial
        .into_iter()
        .map(|i| (serde_json::to_string(&i).unwrap(), None))
        .collect();
    let mut workers: Vec<Worker> = execs.iter().map(|e| e.worker()).collect();
    let mut turn = 0usize;
    fn release(
        exec: &Executor<'_>,
        worker: &mut Worker,
        pending: &mut Pending,
        key: Option<DirKey>,
    ) {
        let Some(key) = key else { return };
        let entry = pending.get_mut(&key).unwrap();
        entry.0 -= 1;
        if entry.0 > 0 {
            return;
        }
        let (_, done) = pending.remove(&key).unwrap();
        let done: DirDone = serde_json::from_str(&done.unwrap()).unwrap();
        exec.complete(worker, done);
        // The parent directory waited for this one.
        let (root, path) = key;
        let parent = match path.iter().rposition(|&b| b == b'/') {
            Some(i) => Some((root, path[..i].to_vec())),
            None if !path.is_empty() => Some((root, Vec::new())),
            None => None,
        };
        let parent = parent.filter(|p| pending.contains_key(p));
        release(exec, worker, pending, parent);
    }
    while let Some((text, gate)) = queue.pop_front() {
        turn += 1;
        let (exec, worker) = (execs[turn % execs.len()], &mut workers[turn % execs.len()]);
        let item: WorkItem = serde_json::from_str(&text).unwrap();
        let is_pass = matches!(item.kind, WorkKind::Dir(_));
        let key = (item.root, item.path.clone());
        if is_pass {
            pending.insert(key.clone(), (1, None));
        }
        let mine = if is_pass {
            Some(key.clone())
        } else {
            gate.clone()
        };
        let mut spawned = Vec::new();
        let done = exec.run(worker, item, &mut |i| spawned.push(i));
        for i in spawned {
            if let Some(k) = &mine {
                pending.get_mut(k).unwrap().0 += 1;
            }
            queue.push_back((serde_json::to_string(&i).unwrap(), mine.clone()));
        }
        if let Some(done) = done {
            pending.get_mut(&key).unwrap().1 = Some(serde_json::to_string(&done).unwrap());
        }
        release(exec, worker, &mut pending, mine);
    }
    assert!(
        pending.is_empty(),
        "directories never completed: {pending:?}"
    );
}

#[test]
fn a_scheduler_of_plain_serialized_items_copies_the_same_tree() {
    for kind in FsKind::ALL {
        let Some(fs) = LoopFs::try_new(kind, 300) else {
            continue;
        };
        let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
        tree(&src, 31, 600);
        // Many files in one directory, so that it is shared out as `Entries` items too.
        fs::create_dir(src.join("wide")).unwrap();
        for i in 0..1500 {
            fs::write(src.join("wide").join(format!("{i:04}")), b"w").unwrap();
        }
        let control = Control::new();
        let mut opts = Options::archive();
        opts.jobs = 2;
        let tally = Tally::default();
        let (exec, initial) = Executor::new(&[CopyPair::new(&src, &dst)], &opts, &tally, &control);
        run_serialized(&exec, initial);
        let summary = exec.finish();
        assert_eq!(summary.errors, 0, "{kind}");
        assert_archive_equal(&format!("{kind}: serialized scheduler"), &src, &dst);
        assert_eq!(
            tally.copied.lock().unwrap().len() as u64,
            summary.files
                + summary.directories
                + summary.symlinks
                + summary.hard_links
                + summary.specials
        );
    }
}

/// Link groups kept outside the executors, as a run over several processes keeps them: here
/// one map that both executors of the test ask.
#[derive(Default)]
struct SharedLinks {
    map: Mutex<BTreeMap<(u64, u64), Option<LinkLoc>>>,
    claims: AtomicU64,
}

impl LinkGroups for SharedLinks {
    fn claim(&self, id: (u64, u64), how: Sighting) -> Option<LinkClaim> {
        self.claims.fetch_add(1, Ordering::Relaxed);
        let mut map = self.map.lock().unwrap();
        Some(match map.get(&id) {
            // One thread: a first copy is always settled before the next sighting.
            Some(Some(loc)) => LinkClaim::LinkTo(loc.clone()),
            _ if how == Sighting::Lookup => return None,
            _ => {
                map.insert(id, None);
                LinkClaim::First
            }
        })
    }

    fn settle(&self, id: (u64, u64), loc: Option<LinkLoc>) {
        self.map.lock().unwrap().insert(id, loc);
    }
}

#[test]
fn executors_of_one_run_in_two_places_share_the_work_and_the_link_groups() {
    for kind in FsKind::ALL {
        let Some(fs) = LoopFs::try_new(kind, 300) else {
            continue;
        };
        let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
        tree(&src, 47, 600);
        // Link groups whose members sit in different directories, so different executors.
        for d in 0..6 {
            fs::create_dir_all(src.join(format!("links{d}"))).unwrap();
        }
        for g in 0..5 {
            let first = src.join("links0").join(format!("g{g}"));
            fs::write(&first, format!("group {g}")).unwrap();
            for d in 1..6 {
                fs::hard_link(&first, src.join(format!("links{d}")).join(format!("g{g}"))).unwrap();
            }
        }
        let (control, opts, links) = (Control::new(), Options::archive(), SharedLinks::default());
        let first = Tally::default();
        let (a, initial) = Executor::new(&[CopyPair::new(&src, &dst)], &opts, &first, &control);
        let a = a.with_link_groups(&links);
        // The other place opens the roots the first resolved, and creates nothing.
        let second = Tally::default();
        let b = Executor::attach(&a.pairs(), &opts, &second, &control)
            .unwrap()
            .with_link_groups(&links);
        run_serialized_on(&[&a, &b], initial);
        let (sa, sb) = (a.finish(), b.finish());
        assert_eq!((sa.errors, sb.errors), (0, 0), "{kind}");
        assert!(sa.files > 0 && sb.files > 0, "{kind}: both did work");
        assert!(sa.hard_links + sb.hard_links >= 25, "{kind}");
        assert!(links.claims.load(Ordering::Relaxed) >= 30, "{kind}");
        assert_archive_equal(&format!("{kind}: two executors"), &src, &dst);
    }
}

#[test]
fn attaching_needs_the_roots_the_first_executor_made() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    fs::create_dir(&src).unwrap();
    let (control, opts) = (Control::new(), Options::archive());
    let pairs = [CopyPair::new(&src, &dst)];
    // Nothing made yet: the destination root is missing, and attach creates nothing.
    let err = Executor::attach(&pairs, &opts, &mimeo::NoObserver, &control).unwrap_err();
    assert_eq!(err.path, dst);
    assert!(!dst.exists());
    let (a, _) = Executor::new(&pairs, &opts, &mimeo::NoObserver, &control);
    assert_eq!(a.pairs(), pairs);
    assert!(Executor::attach(&a.pairs(), &opts, &mimeo::NoObserver, &control).is_ok());
}

/// A process that attaches to a run opens the roots as the first one opens them: a directory
/// root the user may not read, source or destination, by an `O_PATH` handle (cp works on such
/// a root by name). The attaching process is this test run again as an unprivileged user.
#[test]
fn attaching_opens_roots_the_user_may_not_read() {
    const AS_USER: &str = "MIMEO_TEST_ATTACH_AS_USER";
    if let Some(dir) = std::env::var_os(AS_USER) {
        let dir = PathBuf::from(dir);
        let pairs = [CopyPair::new(dir.join("src"), dir.join("dst"))];
        let (control, opts) = (Control::new(), Options::archive());
        if let Err(e) = Executor::attach(&pairs, &opts, &mimeo::NoObserver, &control) {
            panic!("attach as a user: {e}");
        }
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let user = mimeo_testkit::treegen::FOREIGN_UID;
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    for name in ["src", "dst"] {
        let d = tmp.path().join(name);
        fs::create_dir(&d).unwrap();
        std::os::unix::fs::chown(&d, Some(user), Some(user)).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o311)).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let out = mimeo_testkit::as_user(Some(user), &exe)
        .args(["--exact", "attaching_opens_roots_the_user_may_not_read"])
        .env(AS_USER, tmp.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("1 passed"),
        "the test ran as the user: {said}"
    );
}

/// The destinations of files copied, in the order they were reported.
#[derive(Default)]
struct Order(Mutex<Vec<PathBuf>>);

impl Observer for Order {
    fn event(&self, event: Event) {
        if let Event::Copied {
            dst,
            kind: EntryKind::File,
            ..
        } = event
        {
            self.0.lock().unwrap().push(dst);
        }
    }
}

#[test]
fn a_directory_s_files_are_copied_in_inode_order() {
    use std::os::unix::fs::MetadataExt;
    // tmpfs lists newest first, ext4 in name-hash order, XFS and btrfs in creation order of
    // small directories: in inode order a cold source is read in one sweep.
    let tmp = tempfile::tempdir().unwrap();
    let mut places = vec![(tmp.path().to_path_buf(), None)];
    for kind in FsKind::ALL {
        if let Some(fs) = LoopFs::try_new(kind, 300) {
            places.push((fs.path().to_path_buf(), Some(fs)));
        }
    }
    for (place, _fs) in &places {
        let (src, dst) = (place.join("src"), place.join("dst"));
        fs::create_dir(&src).unwrap();
        for i in 0..300 {
            fs::write(src.join(format!("f{}", (i * 7919) % 1000)), b"x").unwrap();
        }
        let order = Order::default();
        let mut opts = Options::archive();
        opts.jobs = 1;
        opts.max_jobs = 1;
        let summary = mimeo::copy(&[CopyPair::new(&src, &dst)], &opts, &order);
        assert_eq!((summary.files, summary.errors), (300, 0));
        let inos: Vec<u64> = order
            .0
            .into_inner()
            .unwrap()
            .iter()
            .map(|d| {
                fs::metadata(src.join(d.file_name().unwrap()))
                    .unwrap()
                    .ino()
            })
            .collect();
        assert!(inos.is_sorted(), "{place:?}: copied out of inode order");
    }
}

/// `cp -a s/f s/. d` with f hard-linked outside s: the file root and the tree's entry for f
/// are one destination. Whichever of the two work items gets there first (they run in
/// parallel), the other finds its own copy and keeps it, as cp (which copies the file root
/// first) does: no error, one d/f.
#[test]
fn a_file_root_and_a_later_tree_meeting_it_agree_in_either_order() {
    for reversed in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let (src, dst) = (tmp.path().join("s"), tmp.path().join("d"));
        fs::create_dir(&src).unwrap();
        fs::create_dir(&dst).unwrap();
        fs::write(src.join("f"), b"f\n").unwrap();
        fs::hard_link(src.join("f"), tmp.path().join("other")).unwrap();
        let pairs = [
            CopyPair::new(src.join("f"), dst.join("f")),
            CopyPair::new(src.join("."), dst.join(".")),
        ];
        let (control, opts) = (Control::new(), Options::archive());
        let (exec, mut initial) = Executor::new(&pairs, &opts, &mimeo::NoObserver, &control);
        assert_eq!(initial.len(), 2);
        if reversed {
            // The tree's walk first: the order parallel workers may take.
            initial.reverse();
        }
        run_serialized(&exec, initial);
        let summary = exec.finish();
        assert_eq!(summary.errors, 0, "reversed: {reversed}");
        assert_eq!(
            fs::read(dst.join("f")).unwrap(),
            b"f\n",
            "reversed: {reversed}"
        );
        let names: Vec<_> = fs::read_dir(&dst)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["f"], "reversed: {reversed}");
    }
}
