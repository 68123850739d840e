//! Hardening: attacks on the guarantees of the design (never through a
//! link, no permission window, no half files that look whole, keep going
//! then tell, bounded resources, same-file and into-self by identity),
//! driving the real `mimeo` binary.
//!
//! Test builds of the binary have fault injection (`MIMEO_FAILPOINTS`),
//! which these tests use to fail system calls and to widen race windows
//! (`sleep(ms)` actions) so that races become deterministic.
//!
//! Tests that need a loop filesystem print what they skipped when one
//! cannot be created, and fail instead under `MIMEO_REQUIRE_FS=1` (CI).

mod util;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt, chown, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use mimeo_testkit::compare::read_xattrs;
use mimeo_testkit::files::interruption_tree;
use mimeo_testkit::oracle::{
    Allow, FileState, assert_archive_equal, assert_trees_equal, file_state, is_scratch,
    marked_alone,
};
use mimeo_testkit::rng::Rng;
use mimeo_testkit::treegen::{FOREIGN_GID, FOREIGN_UID, join_bytes};
use mimeo_testkit::{
    CompareOptions, FsKind, LoopFs, compare_trees, gen_deep, gen_empty, gen_small,
};
use rustix::fs::{CWD, RenameFlags, XattrFlags};
use rustix::process::Signal;
use serde_json::Value;
use util::tree::{Tmpfs, fixed_times, limit_open_files, mimeo_timed};
use util::{
    Run, assert_no_half_files, finish, meta, mimeo, mimeo_fp, random_file, run_command, run_fp,
    scratch, signal, wait_for,
};

// ---------------------------------------------------------------------------
// helpers

/// Builds an argument array from paths and strings.
macro_rules! argv {
    ($($a:expr),* $(,)?) => { [$(OsString::from($a)),*] };
}

/// Like `argv!`, as a vector (for lists of cases of different lengths).
macro_rules! argvec {
    ($($a:expr),* $(,)?) => { argv![$($a),*].to_vec() };
}

/// A scratch directory on the root filesystem that other users can enter.
fn tempdir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("mimeo-hardening-")
        .tempdir()
        .unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Every entry below `root` (not following symlinks, root excluded),
/// relative path → lstat.
fn entries(root: &Path) -> BTreeMap<PathBuf, fs::Metadata> {
    let mut out = BTreeMap::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let Ok(list) = fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for e in list {
            let Ok(e) = e else { continue };
            let rel = rel.join(e.file_name());
            let Ok(m) = fs::symlink_metadata(root.join(&rel)) else {
                continue;
            };
            if m.is_dir() {
                todo.push(rel.clone());
            }
            out.insert(rel, m);
        }
    }
    out
}

/// Temporaries (`.mimeo-PID-N.tmp`) and in-progress markers (`.mimeo-PID-N.partial`) left
/// anywhere below `root`.
fn temporaries(root: &Path) -> Vec<PathBuf> {
    entries(root)
        .into_keys()
        .filter(|p| p.file_name().is_some_and(is_scratch))
        .collect()
}

/// What a file outside the trees looks like; any write, chmod, chown,
/// xattr change or entry created below it changes its ctime too.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snap {
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    xattrs: BTreeMap<OsString, Vec<u8>>,
    data: Vec<u8>,
    target: Option<PathBuf>,
}

/// Snapshots `root` and everything below it.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Snap> {
    let mut all = entries(root);
    all.insert(PathBuf::new(), fs::symlink_metadata(root).unwrap());
    all.into_iter()
        .map(|(rel, m)| {
            let path = if rel.as_os_str().is_empty() {
                root.to_path_buf()
            } else {
                root.join(&rel)
            };
            let snap = Snap {
                mode: m.mode(),
                uid: m.uid(),
                gid: m.gid(),
                size: m.size(),
                mtime: (m.mtime(), m.mtime_nsec()),
                ctime: (m.ctime(), m.ctime_nsec()),
                xattrs: read_xattrs(&path).unwrap_or_default(),
                data: if m.is_file() {
                    fs::read(&path).unwrap()
                } else {
                    Vec::new()
                },
                target: m.is_symlink().then(|| fs::read_link(&path).unwrap()),
            };
            (rel, snap)
        })
        .collect()
}

#[track_caller]
fn assert_untouched(what: &str, before: &BTreeMap<PathBuf, Snap>, root: &Path) {
    let after = snapshot(root);
    if &after != before {
        let mut msg = String::new();
        for (rel, b) in before {
            match after.get(rel) {
                Some(a) if a == b => {}
                Some(a) => msg.push_str(&format!("changed {rel:?}:\n  {b:?}\n  {a:?}\n")),
                None => msg.push_str(&format!("removed {rel:?}\n")),
            }
        }
        for rel in after.keys().filter(|r| !before.contains_key(*r)) {
            msg.push_str(&format!("created {rel:?}\n"));
        }
        panic!("{what}: {root:?} outside the trees was modified:\n{msg}");
    }
}

fn set_xattr(path: &Path, name: &str, value: &[u8]) {
    rustix::fs::lsetxattr(path, name, value, XattrFlags::empty())
        .unwrap_or_else(|e| panic!("setxattr {path:?}: {e}"));
}

/// Exchanges two names atomically (`RENAME_EXCHANGE`).
fn exchange(a: &Path, b: &Path) -> bool {
    rustix::fs::renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).is_ok()
}

/// Runs `body` in a thread until the returned guard is dropped.
struct Background {
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl Background {
    fn start(mut body: impl FnMut() + Send + 'static) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                body();
            }
        });
        Background {
            stop,
            handle: Some(handle),
        }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn errors(run: &Run) -> Vec<&Value> {
    run.events("error")
}

/// The error events whose path ends with `name`.
fn errors_for<'a>(run: &'a Run, name: &str) -> Vec<&'a Value> {
    errors(run)
        .into_iter()
        .filter(|e| e["path"].as_str().is_some_and(|p| p.ends_with(name)))
        .collect()
}

/// `mimeo -a --update src dst` for one file must complete it exactly.
#[track_caller]
fn update_file_completes(what: &str, src: &Path, dst: &Path) {
    let r = run_fp("", &argv!["-a", "--update", src, dst]);
    assert_eq!(r.code, 0, "{what}, then --update: {r:#?}");
    assert_archive_equal(&format!("{what}, then --update"), src, dst);
}

/// What tests write into destination files to make them out of date.
const STALE: &[u8] = b"stale";

/// `mimeo -aT --update src dst` must complete the tree exactly.
#[track_caller]
fn update_completes(what: &str, src: &Path, dst: &Path) {
    let r = run_fp("", &argv!["-aT", "--update", "--json", src, dst]);
    assert_eq!(r.code, 0, "{what}: --update failed: {r:#?}");
    assert_archive_equal(&format!("{what}, then --update"), src, dst);
}

// ---------------------------------------------------------------------------
// 1. never through a link

/// A source tree whose leaf directories a thread keeps exchanging with
/// symlinks to a directory outside the tree; a second thread does the same
/// to the destination's directories as mimeo creates them.
#[test]
fn swapping_directories_for_symlinks_never_leaves_the_trees() {
    let tmp = tempdir();
    let base = tmp.path();
    let outside = base.join("outside");
    let outside_dst = base.join("outside-dst");
    for dir in [&outside, &outside_dst] {
        fs::create_dir_all(dir.join("deeper")).unwrap();
        fs::write(dir.join("MARKER"), b"outside marker").unwrap();
        fs::write(dir.join("deeper/MARKER"), b"outside marker").unwrap();
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
        fixed_times(dir);
    }
    let src = base.join("src");
    gen_small(&src, 3000, 7).unwrap();
    // Unusual directory modes, so that finishing a directory through a
    // symlink would visibly change the outside one.
    let leaves: Vec<PathBuf> = (0..30)
        .map(|i| src.join("d00").join(format!("d{i:04}")))
        .collect();
    for leaf in &leaves {
        fs::set_permissions(leaf, fs::Permissions::from_mode(0o750)).unwrap();
        fixed_times(leaf);
        // Each leaf has a twin symlink to the outside; exchanging the two
        // names swaps a directory for a symlink atomically.
        symlink(&outside, leaf.with_extension("swap")).unwrap();
    }
    let before = snapshot(&outside);
    let before_dst = snapshot(&outside_dst);

    for round in 0..4 {
        let dst = base.join(format!("dst{round}"));
        let swap_src = {
            let leaves = leaves.clone();
            let mut i = 0usize;
            Background::start(move || {
                let leaf = &leaves[i % leaves.len()];
                i += 1;
                exchange(leaf, &leaf.with_extension("swap"));
                thread::yield_now();
                exchange(leaf, &leaf.with_extension("swap"));
            })
        };
        let swap_dst = {
            let dst = dst.clone();
            let outside_dst = outside_dst.clone();
            let mut i = 0usize;
            Background::start(move || {
                let leaf = dst.join("d00").join(format!("d{:04}", i % 30));
                i += 1;
                let twin = leaf.with_extension("evil");
                if fs::symlink_metadata(&twin).is_err() {
                    let _ = symlink(&outside_dst, &twin);
                }
                if exchange(&leaf, &twin) {
                    thread::sleep(Duration::from_micros(200));
                    exchange(&leaf, &twin);
                }
            })
        };
        let r = run_fp("", &argv!["-a", "--json", &src, &dst]);
        swap_src.stop();
        swap_dst.stop();
        assert!(r.code == 0 || r.code == 1, "round {round}: {r:#?}");
        for (rel, m) in entries(&dst) {
            assert!(
                rel.file_name() != Some(OsStr::new("MARKER")),
                "round {round}: {rel:?} from outside the source appeared in the copy"
            );
            if m.is_file() && m.len() == 14 {
                assert_ne!(fs::read(dst.join(&rel)).unwrap(), b"outside marker");
            }
        }
        assert_untouched(&format!("round {round}, source side"), &before, &outside);
        assert_untouched(
            &format!("round {round}, destination side"),
            &before_dst,
            &outside_dst,
        );
        // Put the trees back for the next round.
        for leaf in &leaves {
            if fs::symlink_metadata(leaf).unwrap().is_symlink() {
                exchange(leaf, &leaf.with_extension("swap"));
            }
        }
    }
}

/// Files outside the trees that destination symlinks point to.
fn outside_targets(outside: &Path) {
    fs::create_dir_all(outside.join("dir")).unwrap();
    for (name, mode) in [
        ("fa", 0o640),
        ("fb", 0o600),
        ("fs", 0o644),
        ("dir/f", 0o640),
    ] {
        let p = outside.join(name);
        fs::write(&p, format!("outside {name}\n")).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
        set_xattr(&p, "user.keep", b"outside");
        fixed_times(&p);
    }
    fixed_times(&outside.join("dir"));
    fixed_times(outside);
}

/// Source files that need every metadata call: a foreign owner, set-id
/// bits, xattrs, times.
fn decorated_sources(src: &Path) {
    fs::create_dir_all(src.join("dir")).unwrap();
    fs::create_dir_all(src.join("sub")).unwrap();
    for (name, mode) in [
        ("a", 0o644),
        ("b", 0o4755),
        ("c", 0o2750),
        ("dir/f", 0o600),
        ("sub/g", 0o644),
    ] {
        let p = src.join(name);
        fs::write(&p, format!("source {name}\n")).unwrap();
        chown(&p, Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
        set_xattr(&p, "user.src", name.as_bytes());
        fixed_times(&p);
    }
    symlink("a", src.join("s")).unwrap();
    for d in ["dir", "sub"] {
        chown(src.join(d), Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
        fs::set_permissions(src.join(d), fs::Permissions::from_mode(0o750)).unwrap();
        fixed_times(&src.join(d));
    }
}

/// A destination tree made of symlinks to outside files, dangling or not,
/// with the names of the source's entries.
fn booby_trapped_destination(dst: &Path, outside: &Path) {
    fs::create_dir_all(dst.join("sub")).unwrap();
    symlink(outside.join("fa"), dst.join("a")).unwrap();
    symlink(outside.join("fb"), dst.join("b")).unwrap();
    symlink(outside.join("missing"), dst.join("c")).unwrap();
    symlink(outside.join("fs"), dst.join("s")).unwrap();
    symlink(outside.join("dir"), dst.join("dir")).unwrap();
    symlink(outside.join("missing-g"), dst.join("sub/g")).unwrap();
}

#[test]
fn destination_symlinks_to_outside_files_are_never_written_through() {
    let tmp = tempdir();
    let base = tmp.path();
    let (src, outside) = (base.join("src"), base.join("outside"));
    decorated_sources(&src);
    outside_targets(&outside);
    let before = snapshot(&outside);
    let variants: [&[&str]; 5] = [
        &["-aT"],
        &["-aT", "--update"],
        &["-aT", "--no-clobber"],
        &["-rT"],
        &["-aT", "--reflink=never", "--sparse=never"],
    ];
    for (i, flags) in variants.iter().enumerate() {
        let dst = base.join(format!("dst{i}"));
        booby_trapped_destination(&dst, &outside);
        let mut args: Vec<OsString> = flags.iter().map(OsString::from).collect();
        args.extend(argv!["--json", &src, &dst]);
        let r = run_fp("", &args);
        let what = format!("mimeo {flags:?} over symlinks to outside files");
        assert!(r.code == 0 || r.code == 1, "{what}: {r:#?}");
        assert_untouched(&what, &before, &outside);
        if !flags.contains(&"--no-clobber") {
            // A destination symlink is replaced, never written through. Under --update,
            // cp's rule judges one to a file by that file's time (not older here: the same
            // fixed times), which leaves the symlink as it is.
            for name in ["a", "b", "c", "sub/g"] {
                let d = dst.join(name);
                if flags.contains(&"--update") && ["a", "b"].contains(&name) {
                    let kept = fs::symlink_metadata(&d).unwrap().file_type().is_symlink();
                    assert!(kept, "{what}: {d:?} was replaced: {r:#?}");
                    continue;
                }
                assert!(
                    fs::symlink_metadata(&d).unwrap().is_file(),
                    "{what}: {d:?} was not replaced by a copy: {r:#?}"
                );
                assert_eq!(fs::read(&d).unwrap(), fs::read(src.join(name)).unwrap());
            }
        }
    }
    // One file onto a dangling symlink, and a file into a symlinked
    // directory given below the destination root.
    let dst = base.join("single");
    fs::create_dir(&dst).unwrap();
    symlink(outside.join("missing"), dst.join("x")).unwrap();
    let r = run_fp("", &argv!["-a", src.join("b"), dst.join("x")]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert!(fs::symlink_metadata(dst.join("x")).unwrap().is_file());
    assert_untouched("mimeo -a b dangling-link", &before, &outside);
}

// ---------------------------------------------------------------------------
// 2. no permission window

/// One observation of a destination entry during a copy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Seen {
    rel: PathBuf,
    mode: u32,
    uid: u32,
    gid: u32,
}

/// Polls `root` in a tight loop, recording every distinct state seen.
fn watch(root: PathBuf) -> (Background, Arc<std::sync::Mutex<BTreeSet<Seen>>>) {
    let seen = Arc::new(std::sync::Mutex::new(BTreeSet::new()));
    let out = seen.clone();
    let bg = Background::start(move || {
        // In-progress markers (empty, mode 0600) come and go and have no final mode.
        let now: Vec<Seen> = entries(&root)
            .into_iter()
            .filter(|(rel, _)| !rel.file_name().is_some_and(util::is_scratch))
            .map(|(rel, m)| Seen {
                rel,
                mode: m.mode(),
                uid: m.uid(),
                gid: m.gid(),
            })
            .collect();
        out.lock().unwrap().extend(now);
    });
    (bg, seen)
}

#[test]
fn no_entry_is_ever_more_accessible_than_its_final_mode() {
    let tmp = tempdir();
    let base = tmp.path();
    let src = base.join("src");
    let private = src.join("private");
    let shared = src.join("shared");
    fs::create_dir_all(&private).unwrap();
    fs::create_dir_all(&shared).unwrap();
    let files = [
        (src.join("f0600"), 0o600),
        (src.join("f0700"), 0o700),
        (src.join("f4750"), 0o4750),
        (src.join("f2750"), 0o2750),
        (src.join("f6755"), 0o6755),
        (private.join("secret"), 0o600),
        (private.join("tool"), 0o4711),
        (shared.join("g"), 0o2755),
    ];
    for (path, mode) in &files {
        random_file(path, 600 << 10);
        set_xattr(path, "user.tag", b"value");
        chown(path, Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(*mode)).unwrap();
    }
    for (dir, mode) in [(&private, 0o700), (&shared, 0o2770), (&src, 0o750)] {
        chown(dir, Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
        fs::set_permissions(dir, fs::Permissions::from_mode(mode)).unwrap();
    }
    // Slow every data write and xattr call down so the watcher sees each
    // stage of every file.
    let fp = "write=sleep(15);fsetxattr=sleep(40);utimensat=sleep(10)";
    for jobs in ["1", "2"] {
        let dst = base.join(format!("dst-j{jobs}"));
        let (bg, seen) = watch(dst.clone());
        let r = run_fp(
            fp,
            &argv!["-a", "--sparse=never", "-j", jobs, "--json", &src, &dst],
        );
        bg.stop();
        assert_eq!(r.code, 0, "{r:#?}");
        assert_archive_equal("permission-window copy", &src, &dst);
        let seen = seen.lock().unwrap();
        assert!(
            seen.len() > files.len() + 3,
            "the watcher saw too little: {seen:?}"
        );
        for s in seen.iter() {
            let fin = fs::symlink_metadata(dst.join(&s.rel)).unwrap();
            let (perm, final_perm) = (s.mode & 0o777, fin.mode() & 0o777);
            assert_eq!(
                perm & !final_perm,
                0,
                "{:?} was seen with mode {:o}, more than its final {:o}",
                s.rel,
                s.mode & 0o7777,
                fin.mode() & 0o7777
            );
            if s.mode & 0o4000 != 0 {
                assert_eq!(
                    s.uid,
                    fin.uid(),
                    "{:?} was set-uid ({:o}) while owned by uid {}",
                    s.rel,
                    s.mode,
                    s.uid
                );
            }
            if s.mode & 0o2000 != 0 && !fin.is_dir() {
                assert_eq!(
                    s.gid,
                    fin.gid(),
                    "{:?} was set-gid ({:o}) while owned by gid {}",
                    s.rel,
                    s.mode,
                    s.gid
                );
            }
        }
    }
}

#[test]
fn set_id_bits_are_dropped_when_the_owner_cannot_be_kept() {
    let tmp = tempdir();
    let base = tmp.path();
    let src = base.join("src");
    fs::create_dir(&src).unwrap();
    for (name, mode) in [("suid", 0o4755), ("sgid", 0o2755), ("both", 0o6755)] {
        let p = src.join(name);
        fs::write(&p, b"root's tool\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    }
    let out = base.join("out");
    fs::create_dir(&out).unwrap();
    chown(&out, Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
    let dst = out.join("copy");
    // Under a time limit: a run that cannot finish must fail, not hang.
    let mut cmd = mimeo_timed(30, &argv!["-a", "--json", &src, &dst]);
    cmd.uid(FOREIGN_UID).gid(FOREIGN_GID);
    let r = run_command(&mut cmd, true);
    assert!(r.code == 0 || r.code == 1, "{r:#?}");
    for name in ["suid", "sgid", "both"] {
        let m = fs::symlink_metadata(dst.join(name)).unwrap();
        assert_eq!(m.uid(), FOREIGN_UID, "{name}");
        assert_eq!(
            m.mode() & 0o6000,
            0,
            "{name}: set-id bits {:o} kept on a copy owned by uid {}: {r:#?}",
            m.mode(),
            m.uid()
        );
    }
}

// ---------------------------------------------------------------------------
// 3. full filesystem

/// Fills `fs` with a filler file until only about `keep_mib` MiB are free.
fn fill(fs: &LoopFs, keep_mib: u64) -> PathBuf {
    let v = rustix::fs::statvfs(fs.path()).unwrap();
    let free = v.f_bavail * v.f_frsize;
    let filler = fs.path().join("filler");
    let f = File::create(&filler).unwrap();
    let len = free.saturating_sub(keep_mib << 20);
    rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, len).unwrap();
    f.sync_all().unwrap();
    filler
}

#[test]
fn full_filesystem_reports_enospc_and_update_completes_the_tree() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    // About 24 MiB in files of 64 KiB to 2 MiB, plus small ones.
    let mut rng = Rng::new(0xf011);
    for i in 0..24 {
        let dir = src.join(format!("d{}", i % 4));
        fs::create_dir_all(&dir).unwrap();
        random_file(
            &dir.join(format!("big{i:02}")),
            rng.range(64 << 10, 2 << 20),
        );
    }
    gen_small(&src.join("small"), 300, 3).unwrap();
    for kind in [FsKind::Ext4, FsKind::Xfs] {
        let Some(fs) = LoopFs::try_new(kind, 64) else {
            continue;
        };
        let filler = fill(&fs, 6);
        let dst = fs.path().join("dst");
        let r = run_fp("", &argv!["-a", "--json", &src, &dst]);
        let what = format!("copy onto a full {kind}");
        assert_eq!(r.code, 1, "{what}: {r:#?}");
        let nospc: Vec<&Value> = errors(&r)
            .into_iter()
            .filter(|e| e["errno"] == 28)
            .collect();
        assert!(!nospc.is_empty(), "{what}: no ENOSPC error: {r:#?}");
        for e in &nospc {
            let path = util::json_name(&e["path"]);
            assert!(
                path.starts_with(dst.to_str().unwrap()),
                "{what}: error without the destination path: {e}"
            );
            assert!(
                r.stderr.contains("No space left on device")
                    && r.stderr
                        .contains(&mimeo::quote(util::json_path(&e["path"]))),
                "{what}: stderr does not name {path} and the error: {}",
                r.stderr
            );
        }
        assert!(
            r.stderr.lines().all(|l| l.starts_with("mimeo: ")),
            "{}",
            r.stderr
        );
        // No file may pass as complete (size and mtime of its source) with
        // other bytes.
        for (rel, m) in entries(&dst) {
            if !m.is_file() {
                continue;
            }
            let s = fs::symlink_metadata(src.join(&rel)).unwrap();
            if m.len() == s.len() && m.mtime() == s.mtime() && m.mtime_nsec() == s.mtime_nsec() {
                assert_eq!(
                    fs::read(dst.join(&rel)).unwrap(),
                    fs::read(src.join(&rel)).unwrap(),
                    "{what}: {rel:?} has the source's size and mtime but other bytes"
                );
            }
        }
        assert_no_half_files(
            &what,
            &src,
            &dst,
            &Allow {
                marked: true,
                ..Allow::default()
            },
        );
        fs::remove_file(&filler).unwrap();
        update_completes(&what, &src, &dst);
    }
}

// ---------------------------------------------------------------------------
// 4. injected I/O errors

/// One failpoint case on a single file.
struct Case {
    fp: &'static str,
    flags: &'static [&'static str],
    /// `None`: must fail; `Some(methods)`: must succeed with one of them.
    ok_with: Option<&'static [&'static str]>,
    /// The error's operation, when it must fail.
    errno: Option<i64>,
}

const FALLBACK: &[&str] = &["offload", "stream"];
const STREAM: &[&str] = &["stream"];

fn fail_case(fp: &'static str, flags: &'static [&'static str], errno: i64) -> Case {
    Case {
        fp,
        flags,
        ok_with: None,
        errno: Some(errno),
    }
}

fn ok_case(
    fp: &'static str,
    flags: &'static [&'static str],
    methods: &'static [&'static str],
) -> Case {
    Case {
        fp,
        flags,
        ok_with: Some(methods),
        errno: None,
    }
}

const EIO: i64 = 5;
const ENOMEM: i64 = 12;
const EXDEV: i64 = 18;
const ENOSPC: i64 = 28;
const EDQUOT: i64 = 122;

fn failpoint_cases() -> Vec<Case> {
    let mut v = Vec::new();
    // FICLONE: "not here" errnos fall back with reflink=auto...
    for fp in [
        "clone=return(EXDEV)",
        "clone=return(EOPNOTSUPP)",
        "clone=return(EINVAL)",
        "clone=return(ETXTBSY)",
        // ...the same table as range clones: no reflink support on this filesystem (EBADF),
        // an immutable destination (EPERM), a subvolume being sent (EAGAIN).
        "clone=return(EBADF)",
        "clone=return(EPERM)",
        "clone=return(EAGAIN)",
    ] {
        v.push(ok_case(fp, &[], FALLBACK));
    }
    // ... everything else is terminal.
    v.push(fail_case("clone=return(EIO)", &[], EIO));
    v.push(fail_case("clone=return(ENOSPC)", &[], ENOSPC));
    v.push(fail_case("clone=return(EDQUOT)", &[], EDQUOT));
    v.push(fail_case("clone=return(ENOMEM)", &[], ENOMEM));
    v.push(fail_case(
        "clone=return(EXDEV)",
        &["--reflink=always"],
        EXDEV,
    ));
    // copy_file_range: "not here" before the first byte → stream.
    for fp in [
        "clone=return(EOPNOTSUPP);copy_file_range=return(EXDEV)",
        "clone=return(EOPNOTSUPP);copy_file_range=return(ENOSYS)",
        "clone=return(EOPNOTSUPP);copy_file_range=return(EOPNOTSUPP)",
        "clone=return(EOPNOTSUPP);copy_file_range=return(EINVAL)",
    ] {
        v.push(ok_case(fp, &[], STREAM));
    }
    v.push(fail_case(
        "clone=return(EOPNOTSUPP);copy_file_range=return(EIO)",
        &[],
        EIO,
    ));
    v.push(fail_case(
        "clone=return(EOPNOTSUPP);copy_file_range=return(ENOSPC)",
        &[],
        ENOSPC,
    ));
    // EXDEV after bytes were already offloaded is no longer "not here".
    v.push(fail_case(
        "clone=return(EOPNOTSUPP);copy_file_range=1*off->return(EXDEV)",
        &[],
        EXDEV,
    ));
    v.push(fail_case(
        "clone=return(EOPNOTSUPP);copy_file_range=1*off->return(EIO)",
        &[],
        EIO,
    ));
    // The stream path.
    v.push(fail_case("read=return(EIO)", &["--reflink=never"], EIO));
    v.push(fail_case(
        "write=return(ENOSPC)",
        &["--reflink=never"],
        ENOSPC,
    ));
    v.push(fail_case(
        "write=2*off->return(EIO)",
        &["--reflink=never", "--buffer-size=64K"],
        EIO,
    ));
    v.push(fail_case(
        "write=1*off->return(EDQUOT)",
        &["--reflink=never", "--buffer-size=64K"],
        EDQUOT,
    ));
    // Metadata.
    v.push(fail_case("fsetxattr=return(EIO)", &[], EIO));
    v.push(fail_case("fsetxattr=return(ENOSPC)", &[], ENOSPC));
    v.push(ok_case("fsetxattr=return(EOPNOTSUPP)", &[], &["clone"]));
    v.push(fail_case("utimensat=return(EIO)", &[], EIO));
    v
}

#[test]
fn injected_errors_fall_back_or_fail_the_file_and_nothing_partial_remains() {
    let Some(fs) = scratch(FsKind::Btrfs) else {
        return;
    };
    let src = fs.path().join("src");
    fs::create_dir(&src).unwrap();
    let f = src.join("f");
    // Two data segments with a hole between them, so that offload and
    // stream make more than one call.
    util::sparse_file(&f, 3 << 20, &[(0, 1 << 20), (2 << 20, 1 << 20)]);
    set_xattr(&f, "user.k", b"v");
    fixed_times(&f);
    for (i, case) in failpoint_cases().iter().enumerate() {
        for replace in [false, true] {
            let dst_dir = fs.path().join(format!("c{i}-{replace}"));
            fs::create_dir(&dst_dir).unwrap();
            let dst = dst_dir.join("f");
            if replace {
                fs::write(&dst, b"old contents\n").unwrap();
                fs::set_permissions(&dst, fs::Permissions::from_mode(0o640)).unwrap();
            }
            let old = replace.then(|| snapshot(&dst));
            let mut args: Vec<OsString> = argv!["-a", "-v", "--json"].to_vec();
            args.extend(case.flags.iter().map(OsString::from));
            args.extend(argv![&f, &dst]);
            let r = run_fp(case.fp, &args);
            let what = format!("{} {:?} (replace: {replace})", case.fp, case.flags);
            match case.ok_with {
                Some(methods) => {
                    assert_eq!(r.code, 0, "{what}: {r:#?}");
                    let m = r.copied()["method"].as_str().unwrap().to_owned();
                    assert!(methods.contains(&m.as_str()), "{what}: method {m}: {r:#?}");
                    assert_eq!(file_state(&f, &dst), FileState::Complete, "{what}");
                    // An xattr the destination cannot hold is skipped, as
                    // in cp; everything else must be there.
                    let opts = CompareOptions {
                        xattrs: !case.fp.starts_with("fsetxattr"),
                        ..CompareOptions::archive()
                    };
                    assert_trees_equal(&what, &f, &dst, &opts);
                }
                None => {
                    assert_eq!(r.code, 1, "{what}: {r:#?}");
                    let errs = errors(&r);
                    assert_eq!(errs.len(), 1, "{what}: {r:#?}");
                    assert_eq!(errs[0]["errno"].as_i64(), case.errno, "{what}: {r:#?}");
                    assert!(r.stderr.starts_with("mimeo: "), "{what}: {}", r.stderr);
                    match &old {
                        None => assert_eq!(file_state(&f, &dst), FileState::Absent, "{what}"),
                        Some(old) => assert_untouched(&what, old, &dst),
                    }
                    assert_eq!(temporaries(&dst_dir), Vec::<PathBuf>::new(), "{what}");
                    update_file_completes(&what, &f, &dst);
                }
            }
        }
    }
}

#[test]
fn failed_rename_keeps_the_old_file_and_no_temporary() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    let dst = tmp.path().join("dst");
    gen_small(&src, 40, 11).unwrap();
    let r = run_fp("", &argv!["-a", &src, &dst]);
    assert_eq!(r.code, 0, "{r:#?}");
    // Make every destination file stale, then fail each replacement.
    for (rel, m) in entries(&dst) {
        if m.is_file() {
            fs::write(dst.join(&rel), b"stale\n").unwrap();
        }
    }
    let before = snapshot(&dst);
    for errno in ["EIO", "ENOSPC", "EDQUOT"] {
        let fp = format!("rename=return({errno})");
        let r = run_fp(&fp, &argv!["-aT", "--json", &src, &dst]);
        assert_eq!(r.code, 1, "{fp}: {r:#?}");
        assert_eq!(errors(&r).len(), 40, "{fp}: one error per file: {r:#?}");
        assert!(
            errors(&r).iter().all(|e| e["operation"] == "rename"),
            "{r:#?}"
        );
        // Directory times may be set again; files must be untouched.
        let after = snapshot(&dst);
        for (rel, snap) in &before {
            if snap.mode & 0o170000 == 0o100000 {
                assert_eq!(Some(snap), after.get(rel), "{fp}: {rel:?} changed");
            }
        }
        assert_eq!(temporaries(&dst), Vec::<PathBuf>::new(), "{fp}");
    }
    update_completes("failed renames", &src, &dst);
}

#[test]
fn injected_errors_in_a_tree_fail_only_their_files() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    gen_small(&src, 200, 12).unwrap();
    for (fp, flags) in [
        (
            "write=5*off->3*return(EIO)",
            &["--reflink=never", "--sparse=never"][..],
        ),
        ("copy_file_range=7*off->2*return(ENOSPC)", &[][..]),
        ("utimensat=20*off->2*return(EIO)", &[][..]),
        ("fsetxattr=return(EIO)", &[][..]),
    ] {
        let dst = tmp
            .path()
            .join(format!("dst-{}", fp.split('=').next().unwrap()));
        let mut args: Vec<OsString> = argv!["-a", "-j", "2", "--json"].to_vec();
        args.extend(flags.iter().map(OsString::from));
        args.extend(argv![&src, &dst]);
        // Every source file gets an xattr for the fsetxattr case.
        if fp.starts_with("fsetxattr") {
            for (rel, m) in entries(&src) {
                if m.is_file() && rel.ends_with("f0000007") {
                    set_xattr(&src.join(&rel), "user.x", b"1");
                }
            }
        }
        let r = run_fp(fp, &args);
        assert_eq!(r.code, 1, "{fp}: {r:#?}");
        let n = errors(&r).len() as u64;
        assert!(n >= 1, "{fp}: {r:#?}");
        assert_eq!(r.count("errors"), n, "{fp}: {r:#?}");
        // The rest was still copied.
        assert!(r.count("files") >= 200 - n, "{fp}: {}", r.summary());
        for e in errors(&r) {
            let p = util::json_path(&e["path"]);
            assert!(
                fs::symlink_metadata(&p).is_err(),
                "{fp}: failed {p:?} was left"
            );
        }
        assert_no_half_files(
            fp,
            &src,
            &dst,
            &Allow {
                marked: true,
                ..Allow::default()
            },
        );
        update_completes(fp, &src, &dst);
    }
}

// ---------------------------------------------------------------------------
// 5. interruption

/// The interruption tree under `root/src`, the destination path `root/dst`, a function that
/// builds `mimeo -aT --update` (streamed, to be slow enough to hit, plus `extra`) from the
/// source to a given destination, and how long one full run takes here, in microseconds.
fn interruption_setup(
    root: &Path,
    extra: &[&str],
) -> (PathBuf, PathBuf, impl Fn(&Path) -> Vec<OsString>, u64) {
    let src = root.join("src");
    interruption_tree(&src);
    let mut flags = argvec!["-aT", "--update", "--reflink=never", "--sparse=never"];
    flags.extend(extra.iter().map(OsString::from));
    let from = src.clone();
    let full = move |dst: &Path| {
        let mut a = flags.clone();
        a.extend(argv![&from, dst]);
        a
    };
    let t0 = Instant::now();
    assert_eq!(run_fp("", &full(&root.join("calibrate"))).code, 0);
    let span = t0.elapsed().as_micros() as u64;
    (src, root.join("dst"), full, span)
}

#[test]
fn sigkill_at_random_moments_leaves_only_complete_or_marked_files() {
    let tmp = tempdir();
    let (src, dst, full, span) = interruption_setup(tmp.path(), &[]);
    let mut rng = Rng::new(0x5161);
    let mut marked = 0;
    for round in 0..20 {
        // Even rounds start afresh; odd rounds replace stale copies, which
        // goes through temporaries.
        let mut stale = BTreeSet::new();
        if round % 2 == 0 {
            let _ = fs::remove_dir_all(&dst);
        } else {
            for (rel, m) in entries(&dst) {
                if m.is_file() && rel.to_str().unwrap().ends_with('3') {
                    fs::write(dst.join(&rel), STALE).unwrap();
                    stale.insert(rel);
                }
            }
        }
        let child = mimeo_fp("", &full(&dst)).spawn().unwrap();
        thread::sleep(Duration::from_micros(rng.below(span)));
        signal(&child, Signal::KILL);
        let (status, _) = finish(child);
        let what = format!("round {round}: SIGKILL ({status})");
        let allow = Allow {
            temps: true,
            marked: true,
            stale: Some((&stale, STALE)),
        };
        marked += assert_no_half_files(&what, &src, &dst, &allow).incomplete;
        update_completes(&what, &src, &dst);
        assert_eq!(
            temporaries(&dst),
            Vec::<PathBuf>::new(),
            "{what}, then --update"
        );
    }
    eprintln!("SIGKILL rounds left {marked} files marked incomplete");
}

/// Whether the child has a handler for `sig` installed (`SigCgt` in /proc/PID/status).
fn catches(child: &std::process::Child, sig: Signal) -> bool {
    let status = fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let caught = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    caught & (1 << (sig.as_raw() - 1)) != 0
}

#[test]
fn sigint_at_random_moments_cleans_up_and_exits_130() {
    let tmp = tempdir();
    let (src, dst, full, span) = interruption_setup(tmp.path(), &["--json"]);
    let mut rng = Rng::new(0x1217);
    let mut stopped = 0;
    for round in 0..20 {
        let sig = if round % 4 == 3 {
            Signal::TERM
        } else {
            Signal::INT
        };
        let _ = fs::remove_dir_all(&dst);
        if round % 2 == 1 {
            // Replace stale copies this time.
            assert_eq!(run_fp("", &full(&dst)).code, 0);
            for (rel, m) in entries(&dst) {
                if m.is_file() {
                    fs::write(dst.join(&rel), STALE).unwrap();
                }
            }
        }
        let mut child = mimeo_fp("", &full(&dst)).spawn().unwrap();
        // A signal before the process has started copying tests nothing of mimeo (it may not
        // have reached its handlers): wait for its handlers and the destination to appear
        // (in odd rounds the destination is there before it starts), then a random time.
        let start = Instant::now();
        while !(dst.exists() && catches(&child, sig))
            && child.try_wait().unwrap().is_none()
            && start.elapsed() < Duration::from_secs(10)
        {
            thread::sleep(Duration::from_micros(200));
        }
        thread::sleep(Duration::from_micros(2000 + rng.below(span * 2 / 3)));
        signal(&child, sig);
        let (status, r) = finish(child);
        let what = format!("round {round}: {sig:?} ({status})");
        let expected = if sig == Signal::INT { 130 } else { 143 };
        if r.code == expected {
            stopped += 1;
            assert_eq!(r.summary()["interrupted"], true, "{what}: {r:#?}");
        } else {
            assert_eq!(r.code, 0, "{what}: {r:#?}");
        }
        assert_eq!(temporaries(&dst), Vec::<PathBuf>::new(), "{what}");
        // Stale files from odd rounds are stale, not half: compare only
        // what this run created.
        if round % 2 == 0 {
            assert_eq!(
                assert_no_half_files(
                    &what,
                    &src,
                    &dst,
                    &Allow {
                        marked: true,
                        ..Allow::default()
                    }
                )
                .incomplete,
                0,
                "{what}: marked files left"
            );
        }
        update_completes(&what, &src, &dst);
    }
    assert!(
        stopped >= 5,
        "only {stopped} of 20 runs were stopped by the signal"
    );
}

/// Starts `mimeo` with `fp`, waits until `ready` holds, signals it and
/// returns its outcome.
fn interrupt_when(
    fp: &str,
    args: &[OsString],
    sig: Signal,
    ready: impl FnMut() -> bool,
) -> (ExitStatus, Run) {
    let child = mimeo_fp(fp, args).spawn().unwrap();
    wait_for(20, "the copy to reach the window", ready);
    signal(&child, sig);
    finish(child)
}

fn has_mode(path: &Path, pred: impl Fn(u32) -> bool) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| pred(m.mode()))
}

/// Whether `path`, a file copied on its own, holds all `len` bytes but is still marked
/// incomplete: its data is done and its metadata is in progress.
fn data_done_but_marked(path: &Path, len: u64) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.len() == len) && marked_alone(path)
}

/// Moments a killed copy of a new file can stop in, made deterministic
/// with sleeps: during the data, the xattrs and the times (all before the
/// final mode).
#[test]
fn sigkill_inside_each_stage_of_a_new_file_is_finished_by_update() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    let f = src.join("f");
    random_file(&f, 1 << 20);
    set_xattr(&f, "user.k", b"v");
    fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
    fixed_times(&f);
    let len = 1 << 20;
    type Ready = fn(&Path, u64) -> bool;
    let stages: [(&str, &str, Ready); 3] = [
        // Marked, and showing only its owner's bits, as cp's copy does.
        ("data", "write=sleep(5000)", |p, _| {
            marked_alone(p) && has_mode(p, |m| m & 0o7077 == 0)
        }),
        ("xattrs", "fsetxattr=sleep(5000)", data_done_but_marked),
        ("times", "utimensat=sleep(5000)", data_done_but_marked),
    ];
    for (stage, fp, ready) in stages {
        let dst = tmp.path().join(format!("dst-{stage}"));
        fs::create_dir(&dst).unwrap();
        let d = dst.join("f");
        let (status, _) = interrupt_when(
            fp,
            &argv!["-a", "--reflink=never", "--sparse=never", &f, &d],
            Signal::KILL,
            || ready(&d, len),
        );
        let what = format!("SIGKILL during the {stage} of a new file ({status})");
        assert_ne!(file_state(&f, &d), FileState::Absent, "{what}");
        assert_no_half_files(
            &what,
            &src,
            &dst,
            &Allow {
                marked: true,
                ..Allow::default()
            },
        );
        update_file_completes(&what, &f, &d);
    }
}

/// Copies `src/` (one 1 MiB file `f`, fixed times) to `dst/` with `mimeo -a` and kills it
/// once `dst/f` holds all its data and its directory the in-progress marker, before the
/// times are set. Returns (src, dst, a description for messages).
fn killed_before_the_times(base: &Path) -> (PathBuf, PathBuf, String) {
    let src = base.join("src");
    fs::create_dir(&src).unwrap();
    random_file(&src.join("f"), 1 << 20);
    fixed_times(&src.join("f"));
    fixed_times(&src);
    let dst = base.join("dst");
    let d = dst.join("f");
    let (status, _) = interrupt_when(
        "utimensat=sleep(5000)",
        &argv!["-a", &src, &dst],
        Signal::KILL,
        || fs::metadata(&d).is_ok_and(|m| m.len() == 1 << 20) && util::in_marked_dir(&d),
    );
    (
        src,
        dst,
        format!("SIGKILL before the times of dst/f ({status})"),
    )
}

/// Inside a tree, a new file is created with its final mode and no mark of its own: its
/// directory carries the in-progress marker. A file killed between its data and its times
/// looks complete to cp's `--update` rule (same size, newer), so the marker is all that tells:
/// the dry run and the real `--update` must both replace it, and leave no marker behind.
#[test]
fn sigkill_before_the_times_of_a_file_in_a_tree_is_found_by_its_directory_marker() {
    let tmp = tempdir();
    let (src, dst, what) = killed_before_the_times(tmp.path());
    let (f, d) = (src.join("f"), dst.join("f"));
    let (s, m) = (meta(&f), meta(&d));
    assert_eq!(
        m.mode() & 0o7777,
        s.mode() & 0o7777,
        "{what}: created with its final mode"
    );
    assert!(
        m.len() == s.len() && m.mtime() >= s.mtime(),
        "{what}: the test needs a copy that cp's --update rule takes for up to date"
    );
    assert!(
        util::in_marked_dir(&d),
        "{what}: its directory lost the marker"
    );
    let plan = run_fp(
        "",
        &argv!["-aT", "--update", "--dry-run", "--json", &src, &dst],
    );
    assert_eq!(plan.code, 0, "{what}: {plan:#?}");
    let action = plan
        .events("planned")
        .into_iter()
        .find(|e| e["dst"].as_str() == d.to_str())
        .map(|e| e["action"].as_str().unwrap().to_owned());
    assert_eq!(action.as_deref(), Some("replace"), "{what}: {plan:#?}");
    update_completes(&what, &src, &dst);
    assert_eq!(
        temporaries(&dst),
        Vec::<PathBuf>::new(),
        "{what}, then --update"
    );
}

/// After a SIGKILL, `-n` replaces nothing and so keeps the in-progress marker (the only sign
/// that a file there is incomplete); a plain re-run replaces everything and removes it.
#[test]
fn a_plain_rerun_after_sigkill_removes_the_marker_and_no_clobber_keeps_it() {
    let tmp = tempdir();
    let (src, dst, what) = killed_before_the_times(tmp.path());
    let d = dst.join("f");
    let r = run_fp("", &argv!["-aT", "-n", &src, &dst]);
    assert_eq!(r.code, 0, "{what}, then -n: {r:#?}");
    assert!(util::in_marked_dir(&d), "{what}: -n removed the marker");
    let r = run_fp("", &argv!["-aT", &src, &dst]);
    assert_eq!(r.code, 0, "{what}, then a plain re-run: {r:#?}");
    assert_archive_equal(&format!("{what}, then a plain re-run"), &src, &dst);
    assert_eq!(
        temporaries(&dst),
        Vec::<PathBuf>::new(),
        "{what}, then a plain re-run"
    );
}

/// A replacement killed before its rename leaves a temporary, which
/// `--update` must not leave behind for ever.
#[test]
fn sigkill_during_a_replacement_keeps_the_old_file_and_update_cleans_up() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    let f = src.join("f");
    random_file(&f, 1 << 20);
    let dst = tmp.path().join("dst");
    fs::create_dir(&dst).unwrap();
    fs::write(dst.join("f"), b"old\n").unwrap();
    let old = snapshot(&dst.join("f"));
    let (status, _) = interrupt_when(
        "write=sleep(5000)",
        &argv!["-aT", "--reflink=never", "--sparse=never", &src, &dst],
        Signal::KILL,
        || !temporaries(&dst).is_empty(),
    );
    let what = format!("SIGKILL during a replacement ({status})");
    assert_untouched(&what, &old, &dst.join("f"));
    update_completes(&what, &src, &dst);
}

#[test]
fn sigint_and_sigterm_inside_a_file_remove_it_and_exit_130_or_143() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    random_file(&src.join("f"), 1 << 20);
    fs::write(src.join("g"), b"small\n").unwrap();
    for (sig, code, replace) in [
        (Signal::INT, 130, false),
        (Signal::TERM, 143, false),
        (Signal::INT, 130, true),
    ] {
        let dst = tmp.path().join(format!("dst-{code}-{replace}"));
        fs::create_dir(&dst).unwrap();
        if replace {
            fs::write(dst.join("f"), b"old\n").unwrap();
        }
        let old = replace.then(|| snapshot(&dst.join("f")));
        let (_, r) = interrupt_when(
            "write=sleep(3000)",
            &argv![
                "-aT",
                "--json",
                "--reflink=never",
                "--sparse=never",
                &src,
                &dst
            ],
            sig,
            || match replace {
                // The temporary holding the new data, or the new file itself.
                true => temporaries(&dst)
                    .iter()
                    .any(|t| t.extension().is_some_and(|e| e == "tmp")),
                false => dst.join("f").exists(),
            },
        );
        let what = format!("{sig:?} inside a file (replace: {replace})");
        assert_eq!(r.code, code, "{what}: {r:#?}");
        assert_eq!(r.summary()["interrupted"], true, "{what}: {r:#?}");
        assert_eq!(temporaries(&dst), Vec::<PathBuf>::new(), "{what}");
        match old {
            Some(old) => assert_untouched(&what, &old, &dst.join("f")),
            None => assert_eq!(
                file_state(&src.join("f"), &dst.join("f")),
                FileState::Absent,
                "{what}"
            ),
        }
        update_completes(&what, &src, &dst);
    }
}

// ---------------------------------------------------------------------------
// 6. changing sources

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Grow,
    Shrink,
    Rewrite,
    Replace,
}

fn change(path: &Path, how: Change) {
    match how {
        Change::Grow => {
            let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
            f.write_all(&vec![0x5a; 512 << 10]).unwrap();
        }
        Change::Shrink => File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(300 << 10)
            .unwrap(),
        Change::Rewrite => {
            use std::os::unix::fs::FileExt;
            let f = File::options().write(true).open(path).unwrap();
            f.write_all_at(&vec![0xa5; 64 << 10], 900 << 10).unwrap();
        }
        Change::Replace => {
            let new = path.with_extension("new");
            fs::write(&new, vec![0x33; 700 << 10]).unwrap();
            fs::rename(&new, path).unwrap();
        }
    }
}

/// Source files change while they are copied (each copy is slowed down to
/// about half a second): each is reported, or copied as one consistent
/// version (bytes, size and mtime all from the same moment).
#[test]
fn sources_changing_during_the_copy_are_reported_never_mixed() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    let changes = [
        ("grow", Change::Grow),
        ("shrink", Change::Shrink),
        ("rewrite", Change::Rewrite),
        ("replace", Change::Replace),
    ];
    for (name, _) in changes {
        random_file(&src.join(name), 1 << 20);
        fixed_times(&src.join(name));
    }
    let old: BTreeMap<&str, (Vec<u8>, fs::Metadata)> = changes
        .iter()
        .map(|(n, _)| (*n, (fs::read(src.join(n)).unwrap(), meta(&src.join(n)))))
        .collect();
    random_file(&src.join("steady"), 256 << 10);
    let dst = tmp.path().join("dst");
    let mutator = {
        let (src, dst) = (src.clone(), dst.clone());
        let mut done = BTreeSet::new();
        Background::start(move || {
            for (name, how) in changes {
                if !done.contains(name) && fs::symlink_metadata(dst.join(name)).is_ok() {
                    change(&src.join(name), how);
                    done.insert(name);
                }
            }
            thread::sleep(Duration::from_micros(300));
        })
    };
    let r = run_fp(
        "write=sleep(50)",
        &argv![
            "-a",
            "-j",
            "1",
            "--json",
            "--sparse=never",
            "--buffer-size=128K",
            &src,
            &dst
        ],
    );
    mutator.stop();
    assert!(r.code == 0 || r.code == 1, "{r:#?}");
    assert_eq!(
        file_state(&src.join("steady"), &dst.join("steady")),
        FileState::Complete
    );
    let mut report = String::new();
    for (name, how) in changes {
        let (s, d) = (src.join(name), dst.join(name));
        let reported = !errors_for(&r, name).is_empty();
        let Ok(dm) = fs::symlink_metadata(&d) else {
            if !reported {
                report.push_str(&format!("{name}: absent without an error\n"));
            }
            continue;
        };
        let bytes = fs::read(&d).unwrap();
        let (old_bytes, old_meta) = &old[name];
        let (new_bytes, new_meta) = (fs::read(&s).unwrap(), meta(&s));
        let mtime = |m: &fs::Metadata| (m.mtime(), m.mtime_nsec());
        let is_old = &bytes == old_bytes && mtime(&dm) == mtime(old_meta);
        let is_new = bytes == new_bytes && mtime(&dm) == mtime(&new_meta);
        let marked = dm.mode() & 0o1000 != 0;
        // A file replaced by rename was never changed while open: its old
        // version is a consistent copy. In-place changes must be reported.
        let consistent = if how == Change::Replace {
            is_old || is_new
        } else {
            is_new
        };
        if !(consistent || reported && marked) {
            report.push_str(&format!(
                "{name} ({how:?}): reported: {reported}, copy has {} bytes (old {}, new {}), \
                 mtime {:?} (old {:?}, new {:?}), bytes equal old: {}, new: {}\n",
                bytes.len(),
                old_bytes.len(),
                new_bytes.len(),
                mtime(&dm),
                mtime(old_meta),
                mtime(&new_meta),
                &bytes == old_bytes,
                bytes == new_bytes,
            ));
        }
    }
    assert!(report.is_empty(), "changing sources:\n{report}\n{r:#?}");
}

#[test]
fn sources_vanishing_during_the_copy_are_reported_as_vanished() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    for i in 0..30 {
        random_file(&src.join(format!("f{i:02}")), 256 << 10);
    }
    gen_small(&src.join("sub"), 50, 4).unwrap();
    let dst = tmp.path().join("dst");
    let vanished = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mutator = {
        let (src, dst, vanished) = (src.clone(), dst.clone(), vanished.clone());
        let mut fired = false;
        Background::start(move || {
            if fired {
                return thread::sleep(Duration::from_millis(1));
            }
            let started = fs::read_dir(&dst).is_ok_and(|mut d| d.next().is_some());
            if !started {
                return thread::sleep(Duration::from_micros(200));
            }
            fired = true;
            let mut v = vanished.lock().unwrap();
            for i in (0..30).step_by(3) {
                let name = format!("f{i:02}");
                if fs::symlink_metadata(dst.join(&name)).is_err() {
                    fs::remove_file(src.join(&name)).unwrap();
                    v.push(name);
                }
            }
            if fs::symlink_metadata(dst.join("sub")).is_err() {
                fs::remove_dir_all(src.join("sub")).unwrap();
                v.push("sub".into());
            }
        })
    };
    let r = run_fp(
        "write=sleep(20)",
        &argv!["-a", "-j", "1", "--json", "--sparse=never", &src, &dst],
    );
    mutator.stop();
    let vanished = vanished.lock().unwrap().clone();
    assert!(!vanished.is_empty(), "nothing vanished in time: {r:#?}");
    let errs = errors(&r);
    // Entries opened before they were deleted may still be copied in full;
    // all the others must be reported as vanished, and nothing else.
    for e in &errs {
        assert_eq!(e["operation"], "vanished", "{r:#?}");
    }
    for name in &vanished {
        let copied = fs::symlink_metadata(dst.join(name)).is_ok();
        assert!(
            copied || !errors_for(&r, name).is_empty() || name == "sub",
            "{name} vanished but was not reported: {r:#?}"
        );
    }
    assert!(!errs.is_empty(), "{r:#?}");
    assert_eq!(r.count("vanished"), errs.len() as u64, "{r:#?}");
    assert_eq!(r.code, 24, "{r:#?}");
    assert!(r.stderr.contains("vanished"), "{}", r.stderr);
    // Everything else is there and whole.
    for i in 0..30 {
        let name = format!("f{i:02}");
        if !vanished.contains(&name) {
            assert_eq!(
                file_state(&src.join(&name), &dst.join(&name)),
                FileState::Complete,
                "{name}"
            );
        }
    }
    assert_no_half_files(
        "vanishing sources",
        &src,
        &dst,
        &Allow {
            marked: true,
            ..Allow::default()
        },
    );
}

// ---------------------------------------------------------------------------
// 7. limits

/// Peak RSS (KiB) and outcome of `mimeo args...` under `/usr/bin/time`.
fn run_measured(args: &[OsString]) -> (u64, Run) {
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-f")
        .arg("maxrss_kib=%M")
        .arg(mimeo().get_program())
        .args(args);
    let r = run_command(&mut cmd, true);
    let rss = r
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("maxrss_kib="))
        .next_back()
        .unwrap_or_else(|| panic!("no maxrss: {r:#?}"))
        .parse()
        .unwrap();
    (rss, r)
}

/// One million entries, one directory of them 200 000 strong: peak memory
/// stays bounded, and the copy does not run away.
#[test]
fn a_million_entries_in_bounded_memory() {
    let tmp = tempdir();
    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let tmpfs = Tmpfs::mount(&mnt, 4 << 10);
    let src = tmpfs.path().join("src");
    gen_empty(&src, 800_000).unwrap();
    let wide = src.join("wide");
    fs::create_dir(&wide).unwrap();
    for i in 0..200_000 {
        File::create(wide.join(format!("w{i:06}"))).unwrap();
    }
    let dst = tmpfs.path().join("dst");
    let t0 = Instant::now();
    let (rss, r) = run_measured(&argv!["-a", "--json", &src, &dst]);
    let took = t0.elapsed();
    eprintln!("1M entries: {took:?}, peak RSS {rss} KiB");
    assert_eq!(r.code, 0, "{r:#?}");
    assert_eq!(r.count("files"), 1_000_000, "{}", r.summary());
    assert_eq!(r.count("directories"), 810, "{}", r.summary());
    assert!(rss <= 64 << 10, "peak RSS {rss} KiB for 1M entries");
    // A bound on runaways, not a speed target (benchmarks measure speed): on a loaded 2-core
    // machine this copy has taken three minutes, on a quiet one well under one.
    assert!(took < Duration::from_secs(600), "1M entries took {took:?}");
    // The wide directory in full; the rest by count.
    let c = compare_trees(&wide, &dst.join("wide"), &CompareOptions::archive()).unwrap();
    assert!(c.is_equal(), "{c}");
    assert_eq!(c.entries, 200_001);
    let copied = fs::read_dir(dst.join("d07/d0799")).unwrap().count();
    assert_eq!(copied, 1000);
}

#[test]
fn names_with_every_byte_copy_exactly() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    let every: Vec<u8> = (1..=255u8).filter(|&b| b != b'/').collect();
    assert_eq!(every.len(), 254);
    for &b in &every {
        if b == b'.' {
            continue;
        }
        fs::write(join_bytes(&src, &[b]), [b]).unwrap();
        fs::create_dir(join_bytes(&src, &[b'd', b])).unwrap();
    }
    let long = join_bytes(&src, &every);
    fs::create_dir(&long).unwrap();
    fs::write(join_bytes(&long, &every), b"all bytes").unwrap();
    symlink(OsStr::from_bytes(&every), join_bytes(&long, b"link")).unwrap();
    rustix::fs::mknodat(
        CWD,
        join_bytes(&long, b"fifo\n\x1b[31m"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let dst = tmp.path().join("dst");
    let r = run_fp("", &argv!["-a", "-v", "--json", &src, &dst]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_eq!(r.events("copied").len(), 253 * 2 + 5, "{}", r.summary());
    assert_archive_equal("names with every byte", &src, &dst);
}

#[test]
fn deep_tree_updates_under_a_low_descriptor_limit() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    gen_deep(&src, 4096, "\u{1}\u{7f}").unwrap();
    let dst = tmp.path().join("dst");
    let r = run_fp("", &argv!["-a", &src, &dst]);
    assert_eq!(r.code, 0, "{r:#?}");
    // Change one file near the top; --update must find and replace it
    // 4096 levels deep, with at most 256 descriptors.
    let level64: PathBuf = (0..64).fold(src.clone(), |p, _| p.join("\u{1}\u{7f}"));
    fs::write(level64.join("f"), b"changed").unwrap();
    let mut cmd = mimeo();
    cmd.args(argv!["-aT", "--update", "--json", &src, &dst]);
    limit_open_files(&mut cmd, 256);
    let r = run_command(&mut cmd, true);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_eq!(r.count("files"), 1, "{}", r.summary());
    assert_archive_equal("4096 levels, --update", &src, &dst);
}

#[test]
fn wide_tree_with_link_groups_under_256_descriptors() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    // 400 directories, each two levels deep, with a hard link into each
    // from one group, so many directories are pending at once.
    let hub = src.join("hub");
    fs::create_dir_all(&hub).unwrap();
    fs::write(hub.join("shared"), b"one inode").unwrap();
    for i in 0..400 {
        let d = src.join(format!("d{i:03}/inner"));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("file"), format!("{i}")).unwrap();
        fs::hard_link(hub.join("shared"), d.join("link")).unwrap();
    }
    for jobs in ["2", "16"] {
        let dst = tmp.path().join(format!("dst{jobs}"));
        let mut cmd = mimeo();
        cmd.args(argv!["-a", "-j", jobs, "--json", &src, &dst]);
        limit_open_files(&mut cmd, 256);
        let r = run_command(&mut cmd, true);
        assert_eq!(r.code, 0, "-j {jobs}: {r:#?}");
        assert_archive_equal(&format!("-j {jobs} with 256 descriptors"), &src, &dst);
    }
}

// ---------------------------------------------------------------------------
// 8. same file, into self, overlapping sources

/// A bind mount, unmounted on drop.
struct Bind(PathBuf);

impl Bind {
    fn new(from: &Path, at: &Path) -> Bind {
        fs::create_dir(at).unwrap();
        mimeo_testkit::run_ok(
            "mount",
            &[OsStr::new("--bind"), from.as_os_str(), at.as_os_str()],
        );
        Bind(at.to_path_buf())
    }
}

impl Drop for Bind {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn into_self_is_refused_through_every_alias() {
    let tmp = tempdir();
    let base = tmp.path();
    let d = base.join("d");
    gen_small(&d, 20, 31).unwrap();
    symlink(&d, base.join("alias")).unwrap();
    let bind = Bind::new(&d, &base.join("bound"));
    let before = snapshot(&d);
    let dotted = base.join("d/d00/../d00");
    for dst in [
        d.join("sub"),
        d.join("d00/d0000/deeper"),
        base.join("alias/sub"),
        base.join("bound/sub"),
        dotted.join("x"),
    ] {
        for flags in [&["-a"][..], &["-r"], &["-aT"]] {
            let mut args: Vec<OsString> = flags.iter().map(OsString::from).collect();
            args.extend(argv![&d, &dst]);
            let r = run_fp("", &args);
            let what = format!("mimeo {flags:?} d {dst:?}");
            assert_eq!(r.code, 1, "{what}: {r:#?}");
            assert!(r.stderr.contains("into itself"), "{what}: {}", r.stderr);
            assert!(r.stderr.starts_with("mimeo: "), "{what}: {}", r.stderr);
            assert_untouched(&what, &before, &d);
        }
    }
    // The bind mount as the source, the original as the destination's
    // parent: the same directory under another mount.
    let r = run_fp("", &argv!["-a", bind.0.join("d00"), d.join("d00/copy")]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert_untouched("bound d00 into d00", &before, &d);
}

#[test]
fn a_file_onto_itself_is_refused_through_links() {
    let tmp = tempdir();
    let base = tmp.path();
    let f = base.join("f");
    random_file(&f, 100 << 10);
    fs::hard_link(&f, base.join("hard")).unwrap();
    symlink(&f, base.join("soft")).unwrap();
    symlink("soft", base.join("soft2")).unwrap();
    let sub = base.join("sub");
    fs::create_dir(&sub).unwrap();
    fs::hard_link(&f, sub.join("f")).unwrap();
    let before = snapshot(&f);
    let cases: Vec<(Vec<OsString>, &str)> = vec![
        (argvec![&f, &f], "same path"),
        (argvec![&f, base.join("hard")], "hard link"),
        (argvec!["-a", &f, base.join("hard")], "hard link, -a"),
        (argvec![base.join("hard"), &f], "hard link as the source"),
        (argvec![&f, base.join("soft")], "symlink"),
        (argvec![&f, base.join("soft2")], "symlink chain"),
        (
            argvec!["-L", base.join("soft"), &f],
            "-L symlink as the source",
        ),
        (argvec![&f, &sub], "into a directory holding a hard link"),
        (argvec!["-f", &f, base.join("./f")], "-f, dotted path"),
        (argvec!["-u", &f, base.join("hard")], "-u, hard link"),
    ];
    for (args, what) in cases {
        let r = run_fp("", &args);
        assert_untouched(what, &before, &f);
        // Whatever the outcome, the bytes are still there and no
        // temporary remains.
        assert_eq!(temporaries(base), Vec::<PathBuf>::new(), "{what}");
        if r.code != 0 {
            assert_eq!(r.code, 1, "{what}: {r:#?}");
            assert!(
                r.stderr.contains("are the same file"),
                "{what}: {}",
                r.stderr
            );
        }
    }
    // A symlink given as the destination holds no data of its own: after
    // any outcome it still leads to the same bytes.
    assert_eq!(
        fs::read(base.join("soft")).unwrap(),
        before[&PathBuf::new()].data
    );
}

#[test]
fn overlapping_source_arguments() {
    let tmp = tempdir();
    let base = tmp.path();
    let d = base.join("d");
    gen_small(&d, 50, 41).unwrap();
    let sub = d.join("d00/d0000");
    // A directory and its own subdirectory, into a third place.
    let out = base.join("out");
    fs::create_dir(&out).unwrap();
    let r = run_fp("", &argv!["-a", "--json", &d, &sub, &out]);
    assert_eq!(r.code, 0, "{r:#?}");
    assert_archive_equal("d and d/d00/d0000", &d, &out.join("d"));
    assert_archive_equal("d/d00/d0000", &sub, &out.join("d0000"));
    // The same argument twice: nothing broken, the copy complete.
    let out2 = base.join("out2");
    fs::create_dir(&out2).unwrap();
    let r = run_fp("", &argv!["-a", &d, &d, &out2]);
    assert!(r.code == 0 || r.code == 1, "{r:#?}");
    assert_archive_equal("d twice", &d, &out2.join("d"));
    assert_eq!(temporaries(&out2), Vec::<PathBuf>::new());
    // One source into another one's subdirectory, and that one into itself:
    // the second is refused, the first still copied.
    let e = base.join("e");
    gen_small(&e, 10, 42).unwrap();
    let before = snapshot(&e);
    let r = run_fp("", &argv!["-a", "--json", &e, &d, &sub]);
    assert_eq!(r.code, 1, "{r:#?}");
    assert!(r.stderr.contains("into itself"), "{}", r.stderr);
    assert_eq!(errors(&r).len(), 1, "{r:#?}");
    assert_archive_equal("e into d/d00/d0000", &e, &sub.join("e"));
    assert_untouched("e", &before, &e);
    assert!(fs::symlink_metadata(sub.join("d")).is_err());
}

// ---------------------------------------------------------------------------
// 9. bad arguments

#[test]
fn bad_arguments_are_reported_cp_style_and_create_nothing() {
    let tmp = tempdir();
    let base = tmp.path();
    let file = base.join("file");
    fs::write(&file, b"a file\n").unwrap();
    let dir = base.join("dir");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("inner"), b"inner\n").unwrap();
    let locked = base.join("locked");
    fs::create_dir(&locked).unwrap();
    fs::write(locked.join("x"), b"x").unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o700)).unwrap();
    let secret = base.join("secret");
    fs::write(&secret, b"secret\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    let out = base.join("out");
    fs::create_dir(&out).unwrap();
    chown(&out, Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
    let new = out.join("new");
    let before = snapshot(base);
    // (args, run as the foreign user, exit code, stderr must contain)
    let cases: Vec<(Vec<OsString>, bool, i32, String)> = vec![
        (
            argvec![base.join("missing"), &new],
            false,
            1,
            format!(
                "cannot stat '{}': No such file or directory",
                base.join("missing").display()
            ),
        ),
        (
            argvec![base.join("missing"), base.join("missing2"), &out],
            false,
            1,
            "No such file or directory".into(),
        ),
        (
            argvec![&dir, &new],
            false,
            1,
            "-r not specified; omitting directory".into(),
        ),
        (
            argvec!["-T", &file, &dir],
            false,
            1,
            format!(
                "cannot overwrite directory '{}' with non-directory",
                dir.display()
            ),
        ),
        (
            argvec!["-rT", &dir, &file],
            false,
            1,
            format!(
                "cannot overwrite non-directory '{}' with directory '{}'",
                file.display(),
                dir.display()
            ),
        ),
        (
            argvec!["-T", &file, &dir, &new],
            false,
            2,
            "extra operand".into(),
        ),
        (
            argvec!["-t", &out, "-T", &file],
            false,
            1,
            "cannot combine".into(),
        ),
        (
            argvec!["-t", &file, &dir],
            false,
            1,
            "': Not a directory".into(),
        ),
        (
            argvec![&file, &dir, &new],
            false,
            1,
            "': No such file or directory".into(),
        ),
        (
            argvec![&file],
            false,
            2,
            "missing destination file operand".into(),
        ),
        (
            argvec!["--reflink=sometimes", &file, &new],
            false,
            2,
            String::new(),
        ),
        (argvec![&secret, &new], true, 1, "Permission denied".into()),
        (
            argvec![format!("{}/", file.display()), &new],
            false,
            1,
            "Not a directory".into(),
        ),
    ];
    for (args, foreign, code, needle) in cases {
        let mut cmd = mimeo();
        cmd.args(&args);
        if foreign {
            cmd.uid(FOREIGN_UID).gid(FOREIGN_GID);
        }
        let r = run_command(&mut cmd, false);
        let what = format!("mimeo {args:?}");
        assert_eq!(r.code, code, "{what}: {r:#?}");
        assert!(
            r.stderr.contains(&needle),
            "{what}: stderr lacks {needle:?}: {}",
            r.stderr
        );
        if code == 1 {
            assert!(r.stderr.starts_with("mimeo: "), "{what}: {}", r.stderr);
        }
        assert!(r.stdout.is_empty(), "{what}: {}", r.stdout);
        assert!(
            fs::symlink_metadata(&new).is_err(),
            "{what}: created {new:?}"
        );
        assert_untouched(&what, &before, base);
    }
    // A source directory the user may not open is no bad argument: cp makes its copy and
    // reports the listing (tests/permissions.rs compares such trees with cp's).
    for (prog, to) in [("/bin/cp", out.join("by-cp")), ("mimeo", new.clone())] {
        let mut cmd = if prog == "mimeo" {
            mimeo()
        } else {
            Command::new(prog)
        };
        cmd.args(argvec!["-r", &locked, &to])
            .uid(FOREIGN_UID)
            .gid(FOREIGN_GID);
        let r = run_command(&mut cmd, false);
        assert_eq!(r.code, 1, "{prog}: {r:#?}");
        assert!(r.stderr.contains("Permission denied"), "{prog}: {r:#?}");
        assert!(
            fs::symlink_metadata(&to).is_ok_and(|m| m.is_dir()),
            "{prog}"
        );
    }
}

/// The names of scratch entries (`.mimeo-…`) in `dir`.
fn scratch_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".mimeo-"))
        .collect();
    v.sort();
    v
}

/// `mimeo ARGS` as the only process of a new PID namespace (as in a container), in `cwd`;
/// killed (with the `unshare` that starts it) unless waited for.
struct InPidNamespace(Option<std::process::Child>);

impl InPidNamespace {
    fn spawn(cwd: &Path, args: &[&str]) -> InPidNamespace {
        let child = Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc", "--kill-child"])
            .arg(env!("CARGO_BIN_EXE_mimeo"))
            .args(args)
            .current_dir(cwd)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        InPidNamespace(Some(child))
    }

    fn finish(mut self) -> std::process::Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for InPidNamespace {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A writer of the FIFO `p` that writes `first` once a reader has opened it, and stays open
/// until dropped.
fn fifo_writer(p: PathBuf, first: &'static [u8]) -> std::thread::JoinHandle<fs::File> {
    std::thread::spawn(move || {
        let mut f = fs::OpenOptions::new().write(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, first).unwrap();
        f
    })
}

/// A run never removes the temporary or marker of a live run in another PID namespace, where
/// a pid names another process; once that run is gone, its leftovers go. Each first run
/// waits on a FIFO source while a second run merges into the same directory.
#[test]
fn a_run_in_another_pid_namespace_keeps_its_temporaries_and_markers() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        eprintln!("on {kind}");
        let base = fs.path();
        for d in ["D", "small", "T"] {
            fs::create_dir(base.join(d)).unwrap();
        }
        fs::write(base.join("D/big"), "old\n").unwrap();
        fs::write(base.join("small/s"), "s\n").unwrap();
        mimeo_testkit::run_ok("mkfifo", &[base.join("pf").to_str().unwrap()]);
        mimeo_testkit::run_ok("mkfifo", &[base.join("T/q").to_str().unwrap()]);
        // A temporary (replacing D/big) and a marker (in the new D/T), both of live runs.
        // Each FIFO gets a writer that has written part of its data and holds on: as cp, a
        // run opens its FIFO source before it makes anything, and then waits for the rest.
        let temp_run = InPidNamespace::spawn(base, &["pf", "D/big"]);
        let pf_writer = fifo_writer(base.join("pf"), b"ne");
        let marker_run = InPidNamespace::spawn(base, &["-r", "--copy-contents", "T", "D"]);
        let q_writer = fifo_writer(base.join("T/q"), b"q");
        let (d, dt) = (base.join("D"), base.join("D/T"));
        wait_for(30, "the temporary", || scratch_entries(&d).len() == 1);
        wait_for(30, "the marker", || {
            dt.exists() && scratch_entries(&dt).len() == 1
        });
        let (temp, marker) = (scratch_entries(&d), scratch_entries(&dt));
        util::run_in(Some(base), &["-r", "small/.", "D"]).expect_code(0);
        util::run_in(Some(base), &["-r", "small/.", "D/T"]).expect_code(0);
        assert_eq!(
            scratch_entries(&d),
            temp,
            "{kind}: a live run's temporary stays"
        );
        assert_eq!(
            scratch_entries(&dt),
            marker,
            "{kind}: a live run's marker stays"
        );
        // The rest, and the writers go: each run reads to the end and finishes.
        for (writer, rest) in [(pf_writer, &b"w\n"[..]), (q_writer, &b"\n"[..])] {
            let mut f = writer.join().unwrap();
            std::io::Write::write_all(&mut f, rest).unwrap();
        }
        for (what, child) in [("temporary", temp_run), ("marker", marker_run)] {
            let out = child.finish();
            assert!(
                out.status.success(),
                "{kind}: the run with the {what}: {out:?}"
            );
        }
        assert_eq!(fs::read(d.join("big")).unwrap(), b"new\n", "{kind}");
        assert_eq!(fs::read(dt.join("q")).unwrap(), b"q\n", "{kind}");
        assert_eq!(scratch_entries(&d), Vec::<String>::new(), "{kind}");
        assert_eq!(scratch_entries(&dt), Vec::<String>::new(), "{kind}");
        // A run killed there leaves its temporary, which the next run here removes.
        let killed = InPidNamespace::spawn(base, &["pf", "D/big"]);
        let held = fifo_writer(base.join("pf"), b"x");
        wait_for(30, "the temporary", || scratch_entries(&d).len() == 1);
        drop(killed);
        drop(held.join().unwrap());
        // (Its process ends just after the unshare that is waited for.)
        wait_for(10, "the dead run's temporary to go", || {
            util::run_in(Some(base), &["-r", "small/.", "D"]).expect_code(0);
            scratch_entries(&d).is_empty()
        });
        assert_eq!(fs::read(d.join("big")).unwrap(), b"new\n", "{kind}");
    }
}
