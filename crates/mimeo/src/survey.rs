//! Walking the sources without copying: totals for a progress bar, and `--dry-run`.
//!
//! One serial, depth-first, fd-relative walk serves both. Directories are reopened by their
//! path below the root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so the walk
//! keeps two descriptors open however deep the tree is.

use crate::error::{Error, Op};
use crate::options::{Dereference, Options, Overwrite};
use crate::place;
use crate::summary::{Control, EntryKind, Event, Observer, Summary};
use crate::sys::{self, DType, DirReader, Meta};
use crate::tree::{CopyPair, Root, Run};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// What a copy would do with one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Create,
    Replace,
    /// Left alone because of `-n` or `-u`.
    Skip,
    /// An existing directory that the copy merges into.
    Merge,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Replace => "replace",
            Action::Skip => "skip",
            Action::Merge => "merge",
        }
    }
}

/// Totals found by [`scan`], readable while it runs.
#[derive(Debug, Default)]
pub struct Totals {
    pub entries: AtomicU64,
    pub files: AtomicU64,
    pub bytes: AtomicU64,
    /// Set when the scan has finished.
    pub complete: AtomicBool,
}

/// Counts the entries, files and bytes a copy of `pairs` would handle, for a progress bar.
/// Meant to run on its own thread beside the copy; it stops early when `control` is stopped.
pub fn scan(pairs: &[CopyPair], opts: &Options, totals: &Totals, control: &Control) {
    let observer = crate::NoObserver;
    let run = Run::new(opts, &observer, control);
    for pair in pairs {
        let Ok(Some(root)) = Root::open(&run, pair) else {
            continue;
        };
        walk(&run, &root, false, &mut |_, _, _, meta| {
            totals.entries.fetch_add(1, Relaxed);
            if meta.is_reg() {
                totals.files.fetch_add(1, Relaxed);
                totals.bytes.fetch_add(meta.size, Relaxed);
            }
        });
    }
    totals.complete.store(true, Relaxed);
}

/// Reports what a copy would create, replace, skip or merge, and changes nothing.
pub fn dry_run(pairs: &[CopyPair], opts: &Options, observer: &dyn Observer) -> Summary {
    let start = Instant::now();
    let control = Control::new();
    let run = Run::new(opts, observer, &control);
    for pair in pairs {
        let root = match Root::open(&run, pair) {
            Ok(Some(root)) => root,
            Ok(None) => continue,
            Err(e) => {
                run.fail(&e);
                continue;
            }
        };
        walk(&run, &root, true, &mut |src, dst, dst_dir, meta| {
            let kind = kind_of(meta);
            let existing = dst_dir.and_then(|d| sys::stat_at(d.0, d.1, false).ok());
            let action = match existing {
                None => Action::Create,
                Some(d) if d.is_dir() && meta.is_dir() => Action::Merge,
                Some(d) => match opts.overwrite {
                    Overwrite::NoClobber => Action::Skip,
                    Overwrite::Update
                        if place::is_complete_copy(
                            &run,
                            &d,
                            meta,
                            dst_dir.is_some_and(|d| d.2),
                        ) =>
                    {
                        Action::Skip
                    }
                    _ => Action::Replace,
                },
            };
            run.counters.entry(kind, None);
            observer.event(&Event::Planned {
                src: &src,
                dst: &dst,
                kind,
                action,
            });
        });
    }
    run.counters.summary(start.elapsed())
}

fn kind_of(m: &Meta) -> EntryKind {
    match m.file_type() {
        sys::S_IFREG => EntryKind::File,
        sys::S_IFDIR => EntryKind::Directory,
        sys::S_IFLNK => EntryKind::Symlink,
        0o010000 => EntryKind::Fifo,
        0o140000 => EntryKind::Socket,
        0o020000 => EntryKind::CharDevice,
        _ => EntryKind::BlockDevice,
    }
}

/// The destination directory of an entry and its name there, when that directory exists.
/// The destination directory and name, and whether that directory is suspect (it holds the
/// in-progress marker of a killed run, see `journal`).
type DstAt<'a> = Option<(BorrowedFd<'a>, &'a CStr, bool)>;

/// Called for each entry: source path, destination path, destination place, source metadata.
type Visit<'v> = dyn FnMut(PathBuf, PathBuf, DstAt<'_>, &Meta) + 'v;

/// Visits every entry a copy of `root` would copy: (source path, destination path, where the
/// destination would be, the source's metadata). `need_dst` opens destination directories.
fn walk(run: &Run<'_>, root: &Root, need_dst: bool, visit: &mut Visit<'_>) {
    let opts = run.opts;
    let dst_at = need_dst.then_some((root.dst_parent.as_fd(), root.dst_name.as_c_str(), false));
    visit(
        root.src_path.clone(),
        root.dst_path.clone(),
        dst_at,
        &root.meta,
    );
    if !root.meta.is_dir() || !opts.recursive {
        return;
    }
    let Ok(src_anchor) = sys::open_dir(root.src_parent.as_fd(), &root.src_name, root.follow) else {
        return;
    };
    let dst_anchor: Option<OwnedFd> = if need_dst {
        sys::open_dir(root.dst_parent.as_fd(), &root.dst_name, false).ok()
    } else {
        None
    };
    let follow = opts.dereference == Dereference::Always;
    let mut reader = DirReader::new(64 * 1024);
    let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(rel) = stack.pop() {
        if run.control.is_stopped() {
            return;
        }
        let src_dir = match sys::open_dir_beneath(src_anchor.as_fd(), &rel) {
            Ok(fd) => fd,
            Err(e) => {
                run.fail(&Error::io(
                    Op::Open,
                    join(&root.src_path, &rel, b""),
                    sys::io_err(e),
                ));
                continue;
            }
        };
        let dst_dir = dst_anchor
            .as_ref()
            .and_then(|a| sys::open_dir_beneath(a.as_fd(), &rel).ok());
        let suspect = opts.overwrite == Overwrite::Update
            && dst_dir
                .as_ref()
                .is_some_and(|fd| place::has_stale_marker(&mut reader, fd.as_fd()));
        let mut names = Vec::new();
        if let Err(e) = reader.read_all(src_dir.as_fd(), |n, t| names.push((n.to_owned(), t))) {
            run.fail(&Error::io(
                Op::ReadDir,
                join(&root.src_path, &rel, b""),
                sys::io_err(e),
            ));
        }
        for (name, t) in names {
            let meta = match sys::stat_at(src_dir.as_fd(), &name, follow) {
                Ok(m) => m,
                Err(e) => {
                    let p = join(&root.src_path, &rel, name.to_bytes());
                    run.fail(&Error::io(Op::Stat, p, sys::io_err(e)));
                    continue;
                }
            };
            let d = dst_dir
                .as_ref()
                .map(|fd| (fd.as_fd(), name.as_c_str(), suspect));
            visit(
                join(&root.src_path, &rel, name.to_bytes()),
                join(&root.dst_path, &rel, name.to_bytes()),
                d,
                &meta,
            );
            let crosses = opts.one_file_system && meta.dev != root.meta.dev;
            if meta.is_dir() && !crosses && (t == DType::Dir || follow) {
                let mut child = rel.clone();
                if !child.is_empty() {
                    child.push(b'/');
                }
                child.extend_from_slice(name.to_bytes());
                stack.push(child);
            }
        }
    }
}

fn join(base: &std::path::Path, rel: &[u8], name: &[u8]) -> PathBuf {
    let mut p = base.to_path_buf();
    if !rel.is_empty() {
        p.push(OsStr::from_bytes(rel));
    }
    if !name.is_empty() {
        p.push(OsStr::from_bytes(name));
    }
    p
}
