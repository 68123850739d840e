//! Walking the sources without copying: totals for a progress bar (`scan`), and `--dry-run`,
//! which asks the copy's own overwrite decision for every entry. Both are visitors of the one
//! walker ([`super::walk`]); the scheduler above drives them.

use super::context::{Root, rel_path};
use super::roots::CopyPair;
use super::walk::{Entry, Roots, Visitor, WalkOptions, WalkRoot};
use super::work::WorkItem;
use crate::data::meta::Process;
use crate::options::{Dereference, Options, Overwrite};
use crate::place::crash;
use crate::place::decide::{Decision, Rules, decide};
use crate::report::{EntryKind, Error, Reporter};
use crate::sys::{self, DirReader, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// Totals found by [`scan`](crate::scan), readable while it runs.
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

/// How a walk over a copy's sources goes: as the copy itself would go.
pub(crate) fn walk_options(opts: &Options) -> WalkOptions {
    WalkOptions {
        recursive: opts.recursive,
        one_file_system: opts.one_file_system,
        follow_roots: opts.dereference != Dereference::Never,
        follow_all: opts.dereference == Dereference::Always,
        jobs: opts.jobs,
    }
}

/// The sources of `pairs` that resolve, as walk roots, with the initial work items.
pub(crate) fn scan_roots(pairs: &[CopyPair], opts: &Options) -> (Roots, Vec<WorkItem>) {
    let wopts = walk_options(opts);
    let list = pairs
        .iter()
        .filter_map(|p| WalkRoot::resolve(&p.src, wopts.follow_roots).ok())
        .collect();
    Roots::new(list, &wopts, &mut |_| {})
}

/// Counts entries, files and bytes into [`Totals`].
pub(crate) struct ScanVisitor<'a>(pub &'a Totals);

impl Visitor for ScanVisitor<'_> {
    type State = ();

    fn state(&self) {}

    fn entry(&self, _: &mut (), e: &Entry<'_>) -> bool {
        self.0.entries.fetch_add(1, Relaxed);
        let meta = e.meta.or_else(|| {
            (e.dtype != sys::DType::Dir && e.dtype != sys::DType::Symlink)
                .then(|| sys::stat_at(e.dir, e.name, e.follow).ok())
                .flatten()
        });
        if let Some(m) = meta.filter(|m| m.is_reg()) {
            self.0.files.fetch_add(1, Relaxed);
            self.0.bytes.fetch_add(m.size, Relaxed);
        }
        true
    }

    fn error(&self, _: Error) {}
}

/// `--dry-run`: reports what the copy would do with every entry.
pub(crate) struct DryRun<'a> {
    opts: &'a Options,
    report: &'a Reporter<'a>,
    process: Process,
    /// The copy's roots, by the same index as the walk's.
    roots: Vec<Root>,
    /// Each root's destination directory, when it exists.
    dst_anchors: Vec<Option<OwnedFd>>,
    walk_roots: &'a Roots,
}

impl<'a> DryRun<'a> {
    /// Resolves `pairs` as the copy would (refusals go to `report`), returning the visitor
    /// once the walk roots exist: see [`dry_run_roots`].
    pub fn new(
        opts: &'a Options,
        report: &'a Reporter<'a>,
        roots: Vec<Root>,
        walk_roots: &'a Roots,
    ) -> Self {
        let dst_anchors = roots
            .iter()
            .map(|r| sys::open_dir(r.dst_parent.as_fd(), &r.dst_name, false).ok())
            .collect();
        DryRun {
            opts,
            report,
            process: Process::current(),
            roots,
            dst_anchors,
            walk_roots,
        }
    }
}

/// The copy's roots of `pairs` (failures reported), and walk roots over their sources.
pub(crate) fn dry_run_roots(
    pairs: &[CopyPair],
    opts: &Options,
    report: &Reporter<'_>,
) -> (Vec<Root>, Roots, Vec<WorkItem>) {
    let mut roots = Vec::new();
    let mut list = Vec::new();
    for pair in pairs {
        let root = match Root::resolve(opts, pair) {
            Ok(root) => root,
            Err(e) => {
                report.fail(e);
                continue;
            }
        };
        let parent = match root.src_parent.try_clone() {
            Ok(fd) => fd,
            Err(e) => {
                report.fail(Error::io(crate::report::Op::Open, &root.src_path, &e));
                continue;
            }
        };
        list.push(WalkRoot::from_parts(
            root.src_path.clone(),
            parent,
            root.src_name.clone(),
            root.meta,
            root.follow,
        ));
        roots.push(root);
    }
    let (walk_roots, items) = Roots::new(list, &walk_options(opts), &mut |e| report.fail(e));
    (roots, walk_roots, items)
}

/// The destination directory a worker is listing entries for.
pub(crate) struct DstDir {
    key: Option<(u32, Vec<u8>)>,
    fd: Option<OwnedFd>,
    suspect: bool,
    reader: DirReader,
}

impl Visitor for DryRun<'_> {
    type State = DstDir;

    fn state(&self) -> DstDir {
        DstDir {
            key: None,
            fd: None,
            suspect: false,
            reader: DirReader::new(16 * 1024),
        }
    }

    fn entry(&self, st: &mut DstDir, e: &Entry<'_>) -> bool {
        let root = &self.roots[e.root as usize];
        let meta = match e.meta {
            Some(m) => m,
            None => match sys::stat_at(e.dir, e.name, e.follow) {
                Ok(m) => m,
                Err(err) => {
                    self.report
                        .fail(super::roots::stat_error(e.path(self.walk_roots), err));
                    return false;
                }
            },
        };
        let src = e.path(self.walk_roots);
        let dst = rel_path(&root.dst_path, &e.rel());
        let at = if e.is_root {
            Some(At {
                src_dir: root.src_parent.as_fd(),
                src_name: &root.src_name,
                dir: root.dst_parent.as_fd(),
                name: &root.dst_name,
                suspect: false,
            })
        } else {
            self.open_dst(st, e.root, e.dir_rel);
            st.fd.as_ref().map(|fd| At {
                src_dir: e.dir,
                src_name: e.name,
                dir: fd.as_fd(),
                name: e.name,
                suspect: st.suspect,
            })
        };
        self.plan(src, dst, at, &meta)
    }

    fn flush(&self, st: &mut DstDir, _: u32, _: &[u8]) {
        st.key = None;
        st.fd = None;
    }

    fn error(&self, error: Error) {
        self.report.fail(error);
    }
}

impl DryRun<'_> {
    /// Opens the destination directory of `dir_rel` below a root, unless it is open already.
    fn open_dst(&self, st: &mut DstDir, root: u32, dir_rel: &[u8]) {
        if st
            .key
            .as_ref()
            .is_some_and(|(r, d)| *r == root && d == dir_rel)
        {
            return;
        }
        st.fd = self.dst_anchors[root as usize]
            .as_ref()
            .and_then(|a| sys::open_dir_beneath(a.as_fd(), dir_rel).ok());
        st.suspect = self.opts.overwrite == Overwrite::Update
            && st
                .fd
                .as_ref()
                .is_some_and(|fd| crash::has_foreign_marker(&mut st.reader, fd.as_fd()));
        st.key = Some((root, dir_rel.to_vec()));
    }

    /// Decides one entry and reports it; returns whether to descend.
    fn plan(
        &self,
        src: std::path::PathBuf,
        dst: std::path::PathBuf,
        at: Option<At<'_>>,
        meta: &Meta,
    ) -> bool {
        let rules = Rules {
            opts: self.opts,
            process: &self.process,
            suspect: at.is_some_and(|a| a.suspect),
        };
        let existing = at.and_then(|a| sys::stat_at(a.dir, a.name, false).ok());
        let decision = decide(
            &rules,
            meta,
            existing.as_ref(),
            || sys::stat_at(at?.src_dir, at?.src_name, true).ok(),
            || sys::stat_at(at?.dir, at?.name, true).ok(),
        );
        match decision.action() {
            Some(action) => {
                self.report.planned(src, dst, kind_of(meta), action);
                decision != Decision::Skip
            }
            None => {
                let Decision::Refuse(c) = decision else {
                    unreachable!("only refusals have no action")
                };
                self.report.fail(c.error(src, dst));
                false
            }
        }
    }
}

fn kind_of(m: &Meta) -> EntryKind {
    match m.file_type() {
        sys::S_IFREG => EntryKind::File,
        sys::S_IFDIR => EntryKind::Directory,
        sys::S_IFLNK => EntryKind::Symlink,
        sys::S_IFIFO => EntryKind::Fifo,
        0o140000 => EntryKind::Socket,
        0o020000 => EntryKind::CharDevice,
        _ => EntryKind::BlockDevice,
    }
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
