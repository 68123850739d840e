//! Walking the sources without copying: totals for a progress bar ([`scan`]), and
//! `--dry-run` ([`dry_run`]), which asks the copy's own overwrite decision for every entry.
//!
//! One depth-first, fd-relative walk serves both. Directories are reopened by their path
//! below the root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so the walk keeps
//! two descriptors open however deep the tree is.

use super::context::{Root, join, rel_path, relative_symlink_elsewhere};
use super::entry::entry_kind;
use super::roots::{CopyPair, open_error, parent_dirs, parent_source, stat_error};
use super::work::join_rel;
use crate::data::meta::Process;
use crate::options::{Dereference, LinkInstead, Options, Overwrite};
use crate::place::decide::{Decision, Rules, decide};
use crate::place::{backup, crash};
use crate::report::{
    Action, Control, EntryKind, Error, NoObserver, Observer, Op, Refusal, Reporter, Summary,
    Warning,
};
use crate::sys::{self, DType, DirReader, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Totals found by [`scan`], readable while it runs.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Totals {
    /// Entries found so far.
    pub entries: AtomicU64,
    /// Regular files found so far.
    pub files: AtomicU64,
    /// Bytes of the regular files found so far (their sizes).
    pub bytes: AtomicU64,
    /// Set when the scan has finished.
    pub complete: AtomicBool,
}

/// Counts the entries, files and bytes a copy of `pairs` would handle, for a progress bar.
/// Meant to run on its own thread beside the copy; it stops early when `control` is stopped.
pub fn scan(pairs: &[CopyPair], opts: &Options, totals: &Totals, control: &Control) {
    let report = Reporter::new(&NoObserver, control);
    for pair in pairs {
        let Ok(root) = Root::resolve(opts, pair) else {
            continue;
        };
        walk(opts, &report, &root, false, &mut |_, _, _, meta| {
            totals.entries.fetch_add(1, Relaxed);
            if meta.is_reg() {
                totals.files.fetch_add(1, Relaxed);
                totals.bytes.fetch_add(meta.size, Relaxed);
            }
            true
        });
    }
    totals.complete.store(true, Relaxed);
}

/// Reports what a copy of `pairs` would create, replace, skip, merge or refuse, and changes
/// nothing. Each entry is an [`Event::Planned`](crate::Event::Planned) (or
/// [`Event::Failed`](crate::Event::Failed) for a refusal), decided by the same rule the copy
/// uses.
pub fn dry_run(pairs: &[CopyPair], opts: &Options, observer: &dyn Observer) -> Summary {
    let start = Instant::now();
    let control = Control::new();
    let report = Reporter::new(observer, &control);
    let process = Process::current();
    // Root-level files by destination: a later source with the same destination finds what
    // the earlier one would have made (see `Executor::new`).
    let mut planned: Vec<((u64, u64), Vec<u8>, Meta)> = Vec::new();
    'pairs: for pair in pairs {
        // --parents: the directories the copy would make on the way, and then everything
        // below them is new.
        let mut missing = false;
        if opts.parents {
            for (s, d) in parent_dirs(&pair.src, &pair.dst) {
                if !missing && sys::stat_at(sys::CWD, &path_name(d), false).is_ok() {
                    continue;
                }
                missing = true;
                if let Err(e) = parent_source(s) {
                    report.fail(e);
                    continue 'pairs;
                }
                let (s, d) = (s.to_path_buf(), d.to_path_buf());
                report.planned(s, d, EntryKind::Directory, Action::Create);
            }
        }
        let root = match Root::resolve_planned(opts, pair, missing) {
            Ok(root) => root,
            Err(e) => {
                report.fail(e);
                continue;
            }
        };
        let key = (pairs.len() > 1 && !missing)
            .then(|| sys::fstat(root.dst_parent.as_fd()).ok())
            .flatten()
            .map(|m| (m.id(), root.dst_name.to_bytes().to_vec()));
        if let Some((parent, name)) = &key {
            // A directory meets only itself named again: into another one it is merged.
            let dir = root.meta.is_dir();
            let earlier = planned
                .iter()
                .find(|(p, n, m)| p == parent && n == name && (!dir || m.id() == root.meta.id()))
                .map(|(_, _, m)| *m);
            if let Some(made) = earlier {
                let (src, dst) = (root.src_path.clone(), root.dst_path.clone());
                if made.id() == root.meta.id() {
                    // The same source named again: copied once.
                    report.warn(Warning::SourceTwice {
                        src,
                        directory: dir,
                    });
                    continue;
                }
                // What the earlier one would have made: its source's kind and size, its times
                // if kept (else now), under an identity no existing entry has.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                let mtime = if opts.preserve.timestamps {
                    made.mtime
                } else {
                    (now.as_secs() as i64, now.subsec_nanos())
                };
                let made = Meta {
                    ino: u64::MAX,
                    nlink: 1,
                    mtime,
                    ..made
                };
                let rules = Rules {
                    opts,
                    process: &process,
                    suspect: false,
                    just_created: Some(made.id()),
                    ask: None,
                    writable: &|| true,
                    backup_is_source: None,
                };
                let decision = decide(
                    &rules,
                    &root.meta,
                    Some(&made),
                    || None,
                    || Err(sys::Errno::NOENT),
                );
                match (decision, decision.action()) {
                    (_, Some(action)) => report.planned(src, dst, entry_kind(&root.meta), action),
                    (Decision::Refuse(c), None) => report.fail(c.error(src, dst)),
                    _ => unreachable!("only refusals have no action"),
                }
                continue;
            }
            planned.push((*parent, name.clone(), root.meta));
        }
        walk(opts, &report, &root, !missing, &mut |src, dst, at, meta| {
            let rules = Rules {
                opts,
                process: &process,
                suspect: at.is_some_and(|a| a.suspect),
                just_created: None,
                ask: None,
                writable: &|| at.is_none_or(|a| sys::may_write(a.dir, a.name)),
                backup_is_source: Some(&|| {
                    let (Some(a), Some(backup)) = (at, &opts.backup) else {
                        return false;
                    };
                    backup::is_source(a.src_name.to_bytes(), meta, a.dir, a.name, backup)
                }),
            };
            if let (Some(LinkInstead::Symbolic), Some(a)) = (opts.link, at) {
                let target = src.as_os_str().as_encoded_bytes();
                if !meta.is_dir() && relative_symlink_elsewhere(target, a.dir) {
                    report.fail(Error::refused(Op::Symlink, dst, Refusal::RelativeSymlink));
                    return false;
                }
            }
            let existing = at.and_then(|a| sys::stat_at(a.dir, a.name, false).ok());
            let decision = decide(
                &rules,
                meta,
                existing.as_ref(),
                || sys::stat_at(at?.src_dir, at?.src_name, true).ok(),
                || {
                    at.map_or(Err(sys::Errno::NOENT), |a| {
                        sys::stat_at(a.dir, a.name, true)
                    })
                },
            );
            match decision.action() {
                Some(action) => {
                    report.planned(src, dst, entry_kind(meta), action);
                    decision != Decision::Skip
                }
                None => {
                    let Decision::Refuse(c) = decision else {
                        unreachable!("only refusals have no action")
                    };
                    report.fail(c.error(src, dst));
                    false
                }
            }
        });
    }
    report.finish(start.elapsed())
}

fn path_name(p: &Path) -> std::ffi::CString {
    sys::cstring(p.as_os_str().as_encoded_bytes())
}

/// Where an entry's destination would be, when its directory exists.
#[derive(Clone, Copy)]
struct At<'a> {
    src_dir: BorrowedFd<'a>,
    src_name: &'a CStr,
    dir: BorrowedFd<'a>,
    name: &'a CStr,
    /// The directory holds another run's in-progress marker.
    suspect: bool,
}

/// Called for each entry: source path, destination path, where the destination would be,
/// the source's metadata. Returns whether to descend into a directory.
type Visit<'v> = dyn FnMut(PathBuf, PathBuf, Option<At<'_>>, &Meta) -> bool + 'v;

/// Visits every entry a copy of `root` would copy. `need_dst` opens destination directories.
fn walk(opts: &Options, report: &Reporter<'_>, root: &Root, need_dst: bool, visit: &mut Visit<'_>) {
    let at = need_dst.then_some(At {
        src_dir: root.src_parent.as_fd(),
        src_name: &root.src_name,
        dir: root.dst_parent.as_fd(),
        name: &root.dst_name,
        suspect: false,
    });
    let descend = visit(root.src_path.clone(), root.dst_path.clone(), at, &root.meta);
    if !descend || !root.meta.is_dir() || !opts.recursive {
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
        if report.control.is_stopped() {
            return;
        }
        let opened = if follow {
            sys::open_dir_following(src_anchor.as_fd(), &rel)
        } else {
            sys::open_dir_beneath(src_anchor.as_fd(), &rel)
        };
        let src_dir = match opened {
            Ok(fd) => fd,
            Err(e) => {
                report.fail(open_error(rel_path(&root.src_path, &rel), e));
                continue;
            }
        };
        let dst_dir = dst_anchor
            .as_ref()
            .and_then(|a| sys::open_dir_beneath(a.as_fd(), &rel).ok());
        let suspect = opts.overwrite == Overwrite::Update
            && dst_dir
                .as_ref()
                .is_some_and(|fd| crash::has_foreign_marker(&mut reader, fd.as_fd()));
        let mut names = Vec::new();
        if let Err(e) = reader.read_all(src_dir.as_fd(), |n, t| names.push((n.to_owned(), t))) {
            report.fail(Error::sys(Op::ReadDir, rel_path(&root.src_path, &rel), e));
        }
        for (name, t) in names {
            let meta = match sys::stat_at(src_dir.as_fd(), &name, follow) {
                Ok(m) => m,
                Err(e) => {
                    report.fail(stat_error(join(&root.src_path, &rel, &name), e));
                    continue;
                }
            };
            let at = dst_dir.as_ref().map(|fd| At {
                src_dir: src_dir.as_fd(),
                src_name: &name,
                dir: fd.as_fd(),
                name: &name,
                suspect,
            });
            let descend = visit(
                join(&root.src_path, &rel, &name),
                join(&root.dst_path, &rel, &name),
                at,
                &meta,
            );
            let crosses = opts.one_file_system && meta.dev != root.meta.dev;
            if descend && meta.is_dir() && !crosses && (t == DType::Dir || follow) {
                stack.push(join_rel(&rel, name.to_bytes()));
            }
        }
    }
}
