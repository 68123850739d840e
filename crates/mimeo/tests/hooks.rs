//! Hooks: a caller's `ignore` per directory and its own copy of some kinds of entries, as a
//! `shutil.copytree` work-alike needs them.

use mimeo::{Control, CopyPair, EntryKind, Error, Event, EventChannel, Hooked, Hooks, Op, Options};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// A tree: `f`, `skip.tmp`, `sub/g`, `sub/h.tmp`, `gone/x` (left out whole), `link -> f`,
/// and a file with a name that is not UTF-8.
fn tree(root: &Path) {
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join("gone")).unwrap();
    for name in ["f", "skip.tmp", "sub/g", "sub/h.tmp", "gone/x"] {
        std::fs::write(root.join(name), name).unwrap();
    }
    std::fs::write(root.join(OsStr::from_bytes(b"odd\xff")), b"odd").unwrap();
    std::os::unix::fs::symlink("f", root.join("link")).unwrap();
}

/// Leaves out `*.tmp` and `gone`, records each call, and copies regular files itself
/// (upper-casing them), failing on `sub/g` and skipping `odd\xff`.
#[derive(Default)]
struct Recorder {
    dirs: Mutex<BTreeMap<PathBuf, Vec<OsString>>>,
    copied: Mutex<Vec<(PathBuf, PathBuf, EntryKind)>>,
    take_files: bool,
}

impl Hooks for Recorder {
    fn ignores(&self) -> bool {
        true
    }

    fn ignore(&self, dir: &Path, names: &[&OsStr]) -> Vec<bool> {
        let mut listed: Vec<OsString> = names.iter().map(|n| n.to_os_string()).collect();
        listed.sort();
        assert!(
            self.dirs
                .lock()
                .unwrap()
                .insert(dir.into(), listed)
                .is_none()
        );
        names
            .iter()
            .map(|n| n.as_bytes().ends_with(b".tmp") || n.as_bytes() == b"gone")
            .collect()
    }

    fn takes(&self, kind: EntryKind) -> bool {
        self.take_files && kind == EntryKind::File
    }

    fn copy_entry(&self, src: &Path, dst: &Path, kind: EntryKind) -> Result<Hooked, Error> {
        self.copied
            .lock()
            .unwrap()
            .push((src.into(), dst.into(), kind));
        if src.ends_with("sub/g") {
            return Err(Error::os(Op::Write, dst, libc::ENOSPC));
        }
        if src.as_os_str().as_bytes().ends_with(b"odd\xff") {
            return Ok(Hooked::Skipped);
        }
        if src.ends_with("link") {
            return Ok(Hooked::Declined);
        }
        let data = std::fs::read(src).map_err(|e| Error::io(Op::Read, src, &e))?;
        std::fs::write(dst, data.to_ascii_uppercase())
            .map_err(|e| Error::io(Op::Write, dst, &e))?;
        Ok(Hooked::Copied)
    }
}

fn run(hooks: &Recorder, opts: &Options, src: &Path, dst: &Path) -> (mimeo::Summary, Vec<Event>) {
    let (observer, batches) = EventChannel::new(1024, Duration::from_secs(1), true);
    let summary = mimeo::copy_hooked(
        &[CopyPair::new(src, dst)],
        opts,
        &observer,
        &Control::new(),
        hooks,
    );
    drop(observer);
    (summary, batches.iter().flatten().collect())
}

#[test]
fn ignore_is_asked_once_per_directory_and_its_entries_are_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    tree(&src);
    let hooks = Recorder::default();
    let (summary, _) = run(&hooks, &Options::archive(), &src, &dst);
    assert_eq!(summary.errors, 0);
    let dirs = hooks.dirs.lock().unwrap();
    // The root and `sub`; `gone` was left out, so it is never listed.
    assert_eq!(dirs.keys().collect::<Vec<_>>(), [&src, &src.join("sub")]);
    let names = |v: &[&[u8]]| -> Vec<OsString> {
        v.iter()
            .map(|b| OsStr::from_bytes(b).to_os_string())
            .collect()
    };
    assert_eq!(
        dirs[&src],
        names(&[b"f", b"gone", b"link", b"odd\xff", b"skip.tmp", b"sub"])
    );
    assert_eq!(dirs[&src.join("sub")], names(&[b"g", b"h.tmp"]));
    for gone in ["skip.tmp", "sub/h.tmp", "gone"] {
        assert!(!dst.join(gone).exists(), "{gone} was copied");
    }
    assert_eq!(std::fs::read(dst.join("sub/g")).unwrap(), b"sub/g");
    assert_eq!(
        std::fs::read_link(dst.join("link")).unwrap(),
        Path::new("f")
    );
    assert_eq!(
        (summary.files, summary.directories, summary.symlinks),
        (3, 2, 1)
    );
}

#[test]
fn copy_hooks_get_the_kinds_they_take_and_their_outcomes_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    tree(&src);
    let hooks = Recorder {
        take_files: true,
        ..Recorder::default()
    };
    // Symlinks followed (-L): `link` is a regular file to the hook, which declines it.
    let mut opts = Options::archive();
    opts.dereference = mimeo::Dereference::Always;
    let (summary, events) = run(&hooks, &opts, &src, &dst);
    let mut copied = hooks.copied.lock().unwrap().clone();
    copied.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let odd = src.join(OsStr::from_bytes(b"odd\xff"));
    let mut expected = vec![
        (src.join("f"), dst.join("f"), EntryKind::File),
        (src.join("link"), dst.join("link"), EntryKind::File),
        (
            odd.clone(),
            dst.join(OsStr::from_bytes(b"odd\xff")),
            EntryKind::File,
        ),
        (src.join("sub/g"), dst.join("sub/g"), EntryKind::File),
    ];
    expected.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    assert_eq!(copied, expected);
    assert_eq!(std::fs::read(dst.join("f")).unwrap(), b"F");
    // Declined: copied by the engine, as a file since -L follows the link.
    assert_eq!(std::fs::read(dst.join("link")).unwrap(), b"f");
    assert!(!dst.join("sub/g").exists());
    assert!(!dst.join(OsStr::from_bytes(b"odd\xff")).exists());
    assert_eq!((summary.files, summary.skipped, summary.errors), (2, 1, 1));
    let failed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Failed(err) => Some(err.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        [Error::os(Op::Write, dst.join("sub/g"), libc::ENOSPC)]
    );
}

#[test]
fn a_copy_file_with_a_stopped_control_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    std::fs::write(&src, vec![3u8; 1 << 20]).unwrap();
    let control = Control::new();
    let outcome = mimeo::copy_file_with(&src, &dst, &Options::default(), &control).unwrap();
    assert_eq!(outcome.bytes, 1 << 20);
    assert_eq!(control.bytes_done(), 1 << 20);
    control.stop();
    std::fs::remove_file(&dst).unwrap();
    let err = mimeo::copy_file_with(&src, &dst, &Options::default(), &control).unwrap_err();
    assert_eq!(err.op, Op::Interrupted);
    assert!(!dst.exists());
}
