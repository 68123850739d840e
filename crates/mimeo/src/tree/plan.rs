//! Walking the sources without copying: totals for a progress bar ([`Scan`]), and
//! `--dry-run` ([`DryRun`]), which asks the copy's own overwrite decision for every entry.
//!
//! Both are visitors of the parallel walker ([`super::walk`]), which the scheduler runs
//! (`sched/plan.rs`): they read the tree as the copy's pass does ([`super::listing`]). The
//! dry run decides the roots first, one after another in command-line order, since a later
//! root may land where an earlier one would have made something; the walk then plans what is
//! below the directory roots.

use super::context::{Root, join, relative_symlink_elsewhere, same_entry};
use super::entry::entry_kind;
use super::listing::{Descent, Look, Want};
use super::named;
use super::roots::{CopyPair, parent_dirs, parent_source};
use super::walk::{Entry, Roots, Visitor, WalkOptions, WalkRoot};
use super::work::WorkItem;
use super::work::{Named, NamedDir};
use crate::data::meta::Process;
use crate::options::{Dereference, LinkInstead, Options, Overwrite};
use crate::place::decide::{Conflict, Decision, Lookups, Rules, decide};
use crate::place::{backup, crash};
use crate::report::{
    Action, Control, EntryKind, Error, Observer, Op, Refusal, Reporter, Summary, Warning,
};
use crate::sys::{self, DirReader, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

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

/// How a plan of a copy with `opts` walks: as the copy does, looking at what `want` says.
fn walk_options(opts: &Options, want: Want) -> WalkOptions {
    WalkOptions {
        recursive: opts.recursive,
        follow_roots: opts.dereference != Dereference::Never,
        look: Look {
            follow: opts.dereference == Dereference::Always,
            one_file_system: opts.one_file_system,
            want,
        },
        jobs: opts.jobs.max(1),
    }
}

/// A root of the copy as a root of a walk.
fn walk_root(root: Root) -> WalkRoot {
    WalkRoot::new(
        root.src_path,
        root.src_parent,
        root.src_name,
        root.meta,
        root.follow,
    )
}

/// The progress scan: counts entries, regular files and their sizes into [`Totals`].
pub(crate) struct Scan<'a> {
    totals: &'a Totals,
    /// What the walk is.
    pub roots: Roots,
    pub opts: WalkOptions,
}

impl<'a> Scan<'a> {
    /// The scan of a copy of `pairs`, and its first work items. A pair the copy would refuse
    /// is left out.
    pub fn new(pairs: &[CopyPair], opts: &Options, totals: &'a Totals) -> (Self, Vec<WorkItem>) {
        let wopts = walk_options(opts, Want::Files);
        let list = pairs
            .iter()
            .filter_map(|pair| Root::resolve(opts, pair, None).ok())
            .map(walk_root)
            .collect();
        let (roots, items) = Roots::new(list, &wopts, &mut |_| {});
        let scan = Scan {
            totals,
            roots,
            opts: wopts,
        };
        (scan, items)
    }

    /// The scan is over.
    pub fn finish(&self) {
        self.totals.complete.store(true, Relaxed);
    }
}

/// Entries, files and bytes a worker found and has not added to the totals yet.
#[derive(Default)]
pub(crate) struct Counts(u64, u64, u64);

impl Visitor for Scan<'_> {
    type State = Counts;

    fn state(&self) -> Counts {
        Counts::default()
    }

    fn entry(&self, counts: &mut Counts, e: &Entry<'_>) -> bool {
        counts.0 += 1;
        if let Some(m) = e.meta.filter(|m| m.is_reg()) {
            counts.1 += 1;
            counts.2 += m.size;
        }
        true
    }

    fn flush(&self, counts: &mut Counts, _: u32, _: &[u8]) {
        let Counts(entries, files, bytes) = std::mem::take(counts);
        self.totals.entries.fetch_add(entries, Relaxed);
        self.totals.files.fetch_add(files, Relaxed);
        self.totals.bytes.fetch_add(bytes, Relaxed);
    }

    fn error(&self, _: Error) {}
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
    /// The source was looked at through symlinks.
    follows: bool,
}

/// The destination of a directory root the dry run walks.
struct Dest {
    path: PathBuf,
    /// The destination directory, when it exists.
    dir: Option<OwnedFd>,
}

/// `--dry-run`: reports what a copy would create, replace, skip, merge or refuse, and
/// changes nothing.
pub(crate) struct DryRun<'a> {
    opts: &'a Options,
    report: Reporter<'a>,
    process: Process,
    /// The directory roots to walk, and their destinations (`dests[i]` for root `i`).
    pub roots: Roots,
    dests: Vec<Dest>,
    /// The directory roots named on the command line, which cp does not copy again below a
    /// later root.
    named: Vec<NamedDir>,
    pub wopts: WalkOptions,
}

/// Root entries planned so far, by destination: parent (dev, ino), name, and the source that
/// would be copied there.
type Made = Vec<((u64, u64), Vec<u8>, Meta)>;

impl<'a> DryRun<'a> {
    /// Plans the roots of `pairs`, in order, and returns the dry run with the work items of
    /// the directory roots to walk.
    pub fn new(
        pairs: &[CopyPair],
        opts: &'a Options,
        observer: &'a dyn Observer,
        control: &'a Control,
    ) -> (Self, Vec<WorkItem>) {
        let wopts = walk_options(opts, Want::All);
        let mut dry = DryRun {
            opts,
            report: Reporter::new(observer, control),
            process: Process::current(),
            roots: Roots::default(),
            dests: Vec::new(),
            named: Vec::new(),
            wopts,
        };
        let mut list = Vec::new();
        let mut made = Made::new();
        // The sources cp counts as named, as the copy counts them (see `Executor::new`).
        let mut named = Named::default();
        for pair in pairs {
            let taken = (&mut made, &mut named, list.len() as u32);
            if let Some((root, dest)) = dry.plan_root(pair, pairs.len() > 1, taken) {
                list.push(walk_root(root));
                dry.dests.push(dest);
            }
        }
        dry.named = named.dirs;
        let (roots, items) = Roots::new(list, &dry.wopts, &mut |e| dry.report.fail(e));
        dry.roots = roots;
        (dry, items)
    }

    /// The summary of the plan.
    pub fn finish(&self, elapsed: Duration) -> Summary {
        self.report.finish(elapsed)
    }

    /// Plans one command-line pair's root entry (and, with `--parents`, the directories on
    /// the way), which would be the `index`th root of the walk. Returns the root and its
    /// destination when the walk is to plan below it.
    fn plan_root(
        &self,
        pair: &CopyPair,
        several: bool,
        (made, named, index): (&mut Made, &mut Named, u32),
    ) -> Option<(Root, Dest)> {
        let opts = self.opts;
        let missing = self.plan_parents(pair)?;
        let root = match Root::resolve_planned(opts, pair, missing) {
            Ok(root) => root,
            // cp counted the source as named before it failed.
            Err(_) if named.failed_file_again(opts, &pair.src) => {
                self.source_twice(&pair.src, false);
                return None;
            }
            Err(e) => {
                self.report.fail(e);
                return None;
            }
        };
        // The same file named again, wherever it goes: skipped with a warning.
        if several && named.file_again(opts, &root, index) {
            self.source_twice(&root.src_path, false);
            return None;
        }
        let key = (several && !missing)
            .then(|| sys::fstat(root.dst_parent.as_fd()).ok())
            .flatten()
            .map(|m| (m.id(), root.dst_name.to_bytes().to_vec()));
        let dir = root.meta.is_dir();
        // An earlier root that is not a directory would have made this one's destination:
        // decided against that (a directory is merged into one).
        let earlier = key.as_ref().and_then(|(parent, name)| {
            made.iter()
                .find(|(p, n, _)| !dir && p == parent && n == name)
        });
        if let Some(&(_, _, meta)) = earlier {
            self.plan_over_earlier(&root, meta);
            return None;
        }
        let mark = named.mark();
        if dir && let Some(twice) = named.dir_again(opts, key.clone(), &root, index) {
            match twice {
                Ok(warning) => self.report.warn(warning),
                Err(e) => self.report.fail(e),
            }
            return None;
        }
        if let Some(e) = named.refuse_into_itself(&root, mark) {
            self.report.fail(e);
            return None;
        }
        if dir && named.meets_a_copy_into_itself(opts, &root) {
            self.report.fail(root.refusal_into_itself());
        }
        if let Some((parent, name)) = key {
            made.push((parent, name, root.meta));
        }
        let at = (!missing).then_some(At {
            src_dir: root.src_parent.as_fd(),
            src_name: &root.src_name,
            dir: root.dst_parent.as_fd(),
            name: &root.dst_name,
            suspect: false,
            follows: root.follow,
        });
        let (src, dst) = (root.src_path.clone(), root.dst_path.clone());
        let descend = self.plan(src, dst, at, &root.meta);
        if !(descend && dir && opts.recursive) {
            return None;
        }
        let dir = (!missing)
            .then(|| sys::open_dir(root.dst_parent.as_fd(), &root.dst_name, false).ok())
            .flatten();
        let path = root.dst_path.clone();
        Some((root, Dest { path, dir }))
    }

    /// cp's warning that `src` is named twice (a directory or not).
    fn source_twice(&self, src: &Path, directory: bool) {
        let src = src.to_path_buf();
        self.report.warn(Warning::SourceTwice { src, directory });
    }

    /// `--parents`: plans the directories the copy would make on the way. Returns whether
    /// one is missing (everything below it is then new), or None when a source directory
    /// on the way cannot be looked at (reported).
    fn plan_parents(&self, pair: &CopyPair) -> Option<bool> {
        let mut missing = false;
        if !self.opts.parents {
            return Some(false);
        }
        for (s, d) in parent_dirs(&pair.src, &pair.dst) {
            if !missing && sys::stat_at(sys::CWD, &path_name(d), false).is_ok() {
                continue;
            }
            missing = true;
            if let Err(e) = parent_source(s) {
                self.report.fail(e);
                return None;
            }
            let (s, d) = (s.to_path_buf(), d.to_path_buf());
            self.report
                .planned(s, d, EntryKind::Directory, Action::Create);
        }
        Some(missing)
    }

    /// A root whose destination an earlier root (not a directory) would have made: decided
    /// against that (see `Executor::new`).
    fn plan_over_earlier(&self, root: &Root, earlier: Meta) {
        let (src, dst) = (root.src_path.clone(), root.dst_path.clone());
        // What the earlier one would have made: its source's kind and size, its times if
        // kept (else now), under an identity no existing entry has.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mtime = if self.opts.preserve.timestamps {
            earlier.mtime
        } else {
            (now.as_secs() as i64, now.subsec_nanos())
        };
        let made = Meta {
            ino: u64::MAX,
            nlink: 1,
            mtime,
            ..earlier
        };
        let rules = Rules {
            opts: self.opts,
            process: &self.process,
            follows: root.follow,
            suspect: false,
            just_created: Some(made.id()),
            ask: None,
            writable: &|| true,
            backup_is_source: None,
            changeable: None,
            read_node: false,
        };
        let look = Lookups {
            src: &|_| None,
            dst_target: &|| Err(sys::Errno::NOENT),
            same_entry: &|| false,
        };
        let decision = decide(&rules, &root.meta, Some(&made), &look);
        self.report_decision(decision, src, dst, &root.meta);
    }

    /// Plans one entry: `src` copied to `dst`, whose directory (when it exists) is `at`.
    /// Returns whether to descend into it.
    fn plan(&self, src: PathBuf, dst: PathBuf, at: Option<At<'_>>, meta: &Meta) -> bool {
        let opts = self.opts;
        let relative = match (opts.link, at) {
            (Some(LinkInstead::Symbolic), Some(a)) => {
                let target = src.as_os_str().as_encoded_bytes();
                !meta.is_dir() && relative_symlink_elsewhere(target, a.dir)
            }
            _ => false,
        };
        let writable = || at.is_none_or(|a| sys::may_write(a.dir, a.name));
        let changeable = || at.is_none_or(|a| sys::may_change_dir(a.dir).is_ok());
        let backup_is_source = || {
            let (Some(a), Some(backup)) = (at, &opts.backup) else {
                return false;
            };
            backup::is_source(a.src_name.to_bytes(), meta, a.dir, a.name, backup)
        };
        let rules = Rules {
            opts,
            process: &self.process,
            follows: at.map_or(opts.dereference == Dereference::Always, |a| a.follows),
            suspect: at.is_some_and(|a| a.suspect),
            just_created: None,
            ask: None,
            writable: &writable,
            backup_is_source: Some(&backup_is_source),
            changeable: Some(&changeable),
            read_node: false,
        };
        let existing = at.and_then(|a| sys::stat_at(a.dir, a.name, false).ok());
        let look = Lookups {
            src: &|follow| sys::stat_at(at?.src_dir, at?.src_name, follow).ok(),
            dst_target: &|| {
                at.map_or(Err(sys::Errno::NOENT), |a| {
                    sys::stat_at(a.dir, a.name, true)
                })
            },
            same_entry: &|| at.is_some_and(|a| same_entry(a.src_dir, a.src_name, a.dir, a.name)),
        };
        let decision = decide(&rules, meta, existing.as_ref(), &look);
        // A relative link that cannot be made: after what cp looks at first (see
        // `entry::relative_refused`).
        let first = matches!(decision, Decision::Skip | Decision::Refuse(_))
            && !matches!(decision, Decision::Refuse(Conflict::LinkExists(_)));
        if relative && !first {
            self.report
                .fail(Error::refused(Op::Symlink, dst, Refusal::RelativeSymlink));
            return false;
        }
        self.report_decision(decision, src, dst, meta)
    }

    /// Reports what the copy would do; returns whether it would go on below the entry
    /// (anything but a skip or a refusal).
    fn report_decision(&self, decision: Decision, src: PathBuf, dst: PathBuf, meta: &Meta) -> bool {
        match decision.action() {
            Some(action) => {
                self.report.planned(src, dst, entry_kind(meta), action);
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

    /// Reports what cp says of the directory `e` (to go to `dst_path`, in `dst`'s directory)
    /// if it is a directory root named before (see [`named::met_below`]); returns whether
    /// it did, and then the directory is not planned.
    fn named_earlier(&self, dst: &DstDir, e: &Entry<'_>, meta: Meta, dst_path: &Path) -> bool {
        if !self.opts.recursive || !named::may_meet(self.opts, &self.named, e.root) {
            return false;
        }
        let dest = dst.fd.as_ref().and_then(|fd| sys::fstat(fd.as_fd()).ok());
        let dest = dest.map(|p| (p.id(), e.name.to_bytes().to_vec()));
        let src = sys::fstat(e.dir)
            .ok()
            .map(|p| (p.id(), e.name.to_bytes().to_vec()));
        let paths = (
            self.roots.root(e.root).path.as_path(),
            self.dests[e.root as usize].path.as_path(),
        );
        let root = (e.root, paths);
        let twice = named::met_below(self.opts, &self.named, root, (meta.id(), src), dest, || {
            dst_path.to_path_buf()
        });
        match twice {
            Some(Ok(warning)) => self.report.warn(warning),
            Some(Err(e)) => self.report.fail(e),
            None => return false,
        }
        true
    }

    /// Points a worker's `dst` at the destination directory of the entries of `rel` below
    /// root `root` (opened once per work item).
    fn open_dst(&self, dst: &mut DstDir, root: u32, rel: &[u8]) {
        if dst.of.as_ref().is_some_and(|(r, p)| *r == root && p == rel) {
            return;
        }
        let anchor = self.dests[root as usize].dir.as_ref();
        dst.fd = anchor.and_then(|a| sys::open_dir_beneath(a.as_fd(), rel).ok());
        dst.suspect = self.opts.overwrite == Overwrite::Update
            && dst
                .fd
                .as_ref()
                .is_some_and(|fd| crash::has_foreign_marker(&mut dst.reader, fd.as_fd()));
        dst.of = Some((root, rel.to_vec()));
    }
}

/// A dry-run worker's destination directory: the one whose entries it is planning.
pub(crate) struct DstDir {
    /// Which directory it is (root, path below it).
    of: Option<(u32, Vec<u8>)>,
    fd: Option<OwnedFd>,
    /// It holds another run's in-progress marker.
    suspect: bool,
    reader: DirReader,
}

impl Visitor for DryRun<'_> {
    type State = DstDir;

    fn state(&self) -> DstDir {
        DstDir {
            of: None,
            fd: None,
            suspect: false,
            reader: DirReader::new(64 * 1024),
        }
    }

    fn entry(&self, dst: &mut DstDir, e: &Entry<'_>) -> bool {
        // A root was planned before the walk.
        if e.is_root {
            return true;
        }
        self.open_dst(dst, e.root, e.dir_rel);
        let meta = e.meta.expect("a dry run looks at every entry");
        let dst_path = join(&self.dests[e.root as usize].path, e.dir_rel, e.name);
        if meta.is_dir() && self.named_earlier(dst, e, meta, &dst_path) {
            return false;
        }
        // The walk refuses a cycle, as the copy does.
        if e.descent == Descent::Cycle {
            return true;
        }
        let at = dst.fd.as_ref().map(|fd| At {
            src_dir: e.dir,
            src_name: e.name,
            dir: fd.as_fd(),
            name: e.name,
            suspect: dst.suspect,
            follows: e.follow,
        });
        self.plan(e.path(&self.roots), dst_path, at, &meta)
    }

    fn flush(&self, dst: &mut DstDir, _: u32, _: &[u8]) {
        dst.of = None;
        dst.fd = None;
    }

    fn error(&self, error: Error) {
        self.report.fail(error);
    }
}

fn path_name(p: &Path) -> std::ffi::CString {
    sys::cstring(p.as_os_str().as_encoded_bytes())
}
