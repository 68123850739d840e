//! The parallel walker: reading a tree without copying it. Space accounting, dedupe, the
//! progress totals and `--dry-run` ([`super::plan`]) visit their trees through it; the copy's
//! own pass ([`super::dir`]) takes the same step in each directory ([`super::listing`]) while
//! it creates the destination.
//!
//! A walk is a set of resolved [`Roots`] and a [`Visitor`]. Its step is the same as the
//! copy's: a work item names a directory below a root ([`WorkKind::Dir`]); running it lists
//! the directory, shows every entry to the visitor, and spawns each subdirectory as a new
//! plain item (and, for a large directory, shares of its entries as [`WorkKind::Entries`]).
//! Which thread runs an item is the scheduler's business: [`Walk`] implements [`Passes`], so
//! the local pool drives it as it drives a copy, with a directory completed (post-order) once
//! everything below it has been visited.
//!
//! Directories are opened by their path below the root with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` (following symlinks only under `-L`), so a directory swapped for a
//! symlink is refused rather than followed, and a worker keeps only the directory it lists
//! open. `d_type` is trusted: when an entry is looked at (`statx`) is [`Look`]'s one rule.

use super::context::rel_path;
use super::exec::Passes;
use super::listing::{self, Descent, Look};
use super::roots::{open_error, split, stat_error};
use super::work::{DirInfo, EntryType, Lineage, Stat, WorkItem, WorkKind, join_rel, spawn_shares};
use crate::report::{Control, Error, Op, Refusal};
use crate::sys::{self, DType, DirReader, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How a walk treats its roots and what it finds below them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WalkOptions {
    /// Descend into directories (a directory root without it is visited alone).
    pub recursive: bool,
    /// Follow a root that is a symlink.
    pub follow_roots: bool,
    /// What is looked at, `-x`, and following every symlink below the roots (`-L`, where
    /// cycles are refused).
    pub look: Look,
    /// Workers.
    pub jobs: usize,
}

/// One command-line path, resolved to its parent directory and name.
pub(crate) struct WalkRoot {
    /// The path as given.
    pub path: PathBuf,
    parent: OwnedFd,
    name: CString,
    /// Its metadata when it was resolved.
    pub meta: Meta,
    /// Whether the root itself is followed if it is a symlink.
    follow: bool,
    /// A directory root, opened before the workers start so that every worker can use it.
    dir: Option<OwnedFd>,
}

impl WalkRoot {
    /// A root resolved already: `name` in the directory `parent`, with its metadata, the root
    /// itself followed if `follow` says so.
    pub fn new(path: PathBuf, parent: OwnedFd, name: CString, meta: Meta, follow: bool) -> Self {
        WalkRoot {
            path,
            parent,
            name,
            meta,
            follow,
            dir: None,
        }
    }

    /// Resolves `path`: opens its parent and looks at it. Creates nothing.
    pub fn resolve(path: &Path, follow: bool) -> sys::Result<WalkRoot> {
        let follow = follow || path.as_os_str().as_bytes().ends_with(b"/");
        let (parent, name) = split(path);
        let parent = sys::open_dir(sys::CWD, &parent, true)?;
        let meta = sys::stat_at(parent.as_fd(), &name, follow)?;
        Ok(WalkRoot::new(
            path.to_path_buf(),
            parent,
            name,
            meta,
            follow,
        ))
    }
}

/// The resolved roots of one walk, with the initial work items.
#[derive(Default)]
pub(crate) struct Roots {
    list: Vec<WalkRoot>,
}

impl Roots {
    /// Resolves every path; a path that cannot be resolved is handed to `fail`, and the
    /// others go on. Returns the roots and the initial work items, one per root.
    pub fn resolve(
        paths: &[PathBuf],
        opts: &WalkOptions,
        fail: &mut dyn FnMut(Error),
    ) -> (Roots, Vec<WorkItem>) {
        let mut list = Vec::new();
        for path in paths {
            match WalkRoot::resolve(path, opts.follow_roots) {
                Ok(root) => list.push(root),
                Err(e) => fail(stat_error(path.clone(), e)),
            }
        }
        Roots::new(list, opts, fail)
    }

    /// Roots already resolved; directory roots are opened here. A directory root that
    /// cannot be opened is handed to `fail` and visited alone. Root `i` is `list[i]`.
    pub fn new(
        mut list: Vec<WalkRoot>,
        opts: &WalkOptions,
        fail: &mut dyn FnMut(Error),
    ) -> (Roots, Vec<WorkItem>) {
        let mut items = Vec::new();
        for (index, root) in list.iter_mut().enumerate() {
            if root.meta.is_dir() && opts.recursive {
                match sys::open_dir(root.parent.as_fd(), &root.name, root.follow) {
                    Ok(fd) => root.dir = Some(fd),
                    Err(e) => fail(open_error(root.path.clone(), e)),
                }
            }
            let kind = if root.dir.is_some() {
                let mut info = DirInfo::default();
                info.lineage.ancestors = opts.look.ancestors(&Lineage::default(), root.meta.id());
                WorkKind::Dir(info)
            } else {
                WorkKind::Root
            };
            items.push(WorkItem {
                root: index as u32,
                path: Vec::new(),
                kind,
                stat: Some(Stat::from(root.meta)),
            });
        }
        (Roots { list }, items)
    }

    /// How many roots there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// One root.
    pub fn root(&self, index: u32) -> &WalkRoot {
        &self.list[index as usize]
    }

    /// The display path of the entry at `rel` below a root (the root itself when empty).
    pub fn path(&self, index: u32, rel: &[u8]) -> PathBuf {
        rel_path(&self.root(index).path, rel)
    }

    /// Opens the entry at `rel` below a root for reading, never through a symlink below
    /// the root. See [`sys::open_file_beneath`] for `noatime`.
    pub fn open_file(&self, index: u32, rel: &[u8], noatime: bool) -> sys::Result<OwnedFd> {
        let root = self.root(index);
        match &root.dir {
            Some(dir) if !rel.is_empty() => sys::open_file_beneath(dir.as_fd(), rel, noatime),
            _ if rel.is_empty() => {
                if root.follow {
                    sys::open_read(root.parent.as_fd(), &root.name, true)
                } else {
                    sys::open_file_beneath(root.parent.as_fd(), root.name.to_bytes(), noatime)
                }
            }
            _ => Err(sys::Errno::NOTDIR),
        }
    }

    /// Whether root `inner` lies inside root `outer` (or is the same entry), by identity:
    /// every entry below `inner` is then below `outer` too.
    pub fn is_within(&self, inner: u32, outer: u32) -> bool {
        let (i, o) = (self.root(inner), self.root(outer));
        if i.meta.id() == o.meta.id() {
            return true;
        }
        o.meta.is_dir() && super::roots::is_inside(i.parent.as_fd(), o.meta.id())
    }
}

/// One entry shown to a [`Visitor`].
pub(crate) struct Entry<'a> {
    /// The root it is under.
    pub root: u32,
    /// The path below the root of the directory holding it (empty for a root entry).
    pub dir_rel: &'a [u8],
    /// The directory holding it (a root's parent for a root entry).
    pub dir: BorrowedFd<'a>,
    /// Its name in that directory.
    pub name: &'a CStr,
    /// Its type as the listing gave it.
    pub dtype: DType,
    /// Its metadata, when the walker looked at it (symlinks followed where the walk follows
    /// them).
    pub meta: Option<Meta>,
    /// It is a command-line root.
    pub is_root: bool,
    /// Whether opening it should follow a symlink (a followed root, or `-L`).
    pub follow: bool,
    /// Whether the walk descends into it, if the visitor asks to.
    pub descent: Descent,
}

impl Entry<'_> {
    /// Its path below the root (empty for a root entry).
    pub fn rel(&self) -> Vec<u8> {
        if self.is_root {
            Vec::new()
        } else {
            join_rel(self.dir_rel, self.name.to_bytes())
        }
    }

    /// Its display path.
    pub fn path(&self, roots: &Roots) -> PathBuf {
        if self.is_root {
            roots.root(self.root).path.clone()
        } else {
            let mut p = roots.path(self.root, self.dir_rel);
            p.push(OsStr::from_bytes(self.name.to_bytes()));
            p
        }
    }

    /// Whether it is (or, followed, leads to) a directory.
    pub fn is_dir(&self) -> bool {
        self.meta.map_or(self.dtype == DType::Dir, |m| m.is_dir())
    }
}

/// What a walk does with what it finds. Its methods are called from every worker at once.
pub(crate) trait Visitor: Sync {
    /// Per-worker state (buffers, counts not yet added to the shared ones).
    type State;

    /// A new worker's state.
    fn state(&self) -> Self::State;

    /// One entry (roots included). For a directory, returns whether to descend into it.
    fn entry(&self, state: &mut Self::State, entry: &Entry<'_>) -> bool;

    /// The entries of one work item below `dir_rel` have all been shown: a place to add
    /// per-directory counts to shared ones.
    fn flush(&self, _state: &mut Self::State, _root: u32, _dir_rel: &[u8]) {}

    /// The directory `dir_rel` and everything below it have been visited (post-order).
    fn complete(&self, _root: u32, _dir_rel: &[u8]) {}

    /// Something could not be read; the walk goes on.
    fn error(&self, error: Error);
}

/// A walk over resolved roots, run by a scheduler through [`Passes`].
pub(crate) struct Walk<'a, V> {
    pub roots: &'a Roots,
    pub opts: &'a WalkOptions,
    pub visitor: &'a V,
    pub control: &'a Control,
}

/// A worker of a walk: its listing buffer and the visitor's state.
pub(crate) struct WalkWorker<S> {
    reader: DirReader,
    /// The visitor's state.
    pub state: S,
}

impl<V: Visitor> Passes for Walk<'_, V> {
    type Worker = WalkWorker<V::State>;
    type Done = (u32, Vec<u8>);

    fn worker(&self) -> Self::Worker {
        WalkWorker {
            reader: DirReader::new(64 * 1024),
            state: self.visitor.state(),
        }
    }

    fn run(
        &self,
        w: &mut Self::Worker,
        item: WorkItem,
        spawn: &mut dyn FnMut(WorkItem),
    ) -> Option<Self::Done> {
        if self.control.is_stopped() {
            return None;
        }
        match item.kind {
            WorkKind::Root => {
                self.visit_root(w, item.root);
                None
            }
            WorkKind::Dir(info) => {
                if item.path.is_empty() && !self.visit_root(w, item.root) {
                    return Some((item.root, item.path));
                }
                self.pass(w, item.root, &item.path, &info.lineage, spawn);
                Some((item.root, item.path))
            }
            WorkKind::Entries { lineage, names, .. } => {
                self.share(w, item.root, &item.path, &lineage, names, spawn);
                None
            }
            // A walk reads no file data, so it never makes ranges of a file.
            WorkKind::Range(_) => None,
        }
    }

    fn complete(&self, _: &mut Self::Worker, (root, rel): Self::Done) {
        if !self.control.is_stopped() {
            self.visitor.complete(root, &rel);
        }
    }
}

/// The directory a walk is listing, and what its entries need of it.
struct Listing<'a> {
    root: u32,
    rel: &'a [u8],
    dir: BorrowedFd<'a>,
    lineage: &'a Lineage,
}

impl<V: Visitor> Walk<'_, V> {
    /// Shows a root entry to the visitor; returns whether to descend.
    fn visit_root(&self, w: &mut WalkWorker<V::State>, index: u32) -> bool {
        let root = self.roots.root(index);
        let entry = Entry {
            root: index,
            dir_rel: b"",
            dir: root.parent.as_fd(),
            name: &root.name,
            dtype: dtype_of(&root.meta),
            meta: Some(root.meta),
            is_root: true,
            follow: root.follow,
            descent: if root.dir.is_some() {
                Descent::Into
            } else {
                Descent::No
            },
        };
        let descend = self.visitor.entry(&mut w.state, &entry);
        self.visitor.flush(&mut w.state, index, b"");
        descend && root.dir.is_some()
    }

    /// Opens a directory below a root, as the walk follows symlinks; a failure goes to the
    /// visitor.
    fn open(&self, index: u32, rel: &[u8]) -> Option<OwnedFd> {
        let anchor = self
            .roots
            .root(index)
            .dir
            .as_ref()
            .expect("a directory root");
        self.opts
            .look
            .open(anchor.as_fd(), rel)
            .map_err(|e| {
                self.visitor
                    .error(open_error(self.roots.path(index, rel), e))
            })
            .ok()
    }

    /// One directory's pass: lists it, shows its entries, spawns its subdirectories.
    fn pass(
        &self,
        w: &mut WalkWorker<V::State>,
        index: u32,
        rel: &[u8],
        lineage: &Lineage,
        spawn: &mut dyn FnMut(WorkItem),
    ) {
        let Some(dir) = self.open(index, rel) else {
            return;
        };
        let (mut names, read) = listing::list(&mut w.reader, dir.as_fd());
        if let Err(e) = read {
            self.visitor
                .error(Error::sys(Op::ReadDir, self.roots.path(index, rel), e));
        }
        let mut lineage = lineage.clone();
        if self.opts.look.follow {
            if let Ok(m) = sys::fstat(dir.as_fd()) {
                lineage.ancestors = self.opts.look.ancestors(&lineage, m.id());
            }
        }
        // A large directory's entries are shared among workers.
        if self.opts.jobs > 1 {
            spawn_shares(&mut names, index, rel, &DirInfo::default(), &lineage, spawn);
        }
        let at = Listing {
            root: index,
            rel,
            dir: dir.as_fd(),
            lineage: &lineage,
        };
        for (name, t) in &names {
            self.child(w, &at, name, *t, spawn);
        }
        self.visitor.flush(&mut w.state, index, rel);
    }

    /// A share of a large directory's entries.
    fn share(
        &self,
        w: &mut WalkWorker<V::State>,
        index: u32,
        rel: &[u8],
        lineage: &Lineage,
        names: Vec<(Vec<u8>, EntryType)>,
        spawn: &mut dyn FnMut(WorkItem),
    ) {
        // Reopened here: the lister's descriptor is not valid in this worker's table.
        let Some(dir) = self.open(index, rel) else {
            return;
        };
        let at = Listing {
            root: index,
            rel,
            dir: dir.as_fd(),
            lineage,
        };
        for (name, t) in names {
            self.child(w, &at, &sys::cstring(&name), t.into(), spawn);
        }
        self.visitor.flush(&mut w.state, index, rel);
    }

    /// One listed entry: looked at if need be, shown, and spawned if it is a directory to
    /// descend into.
    fn child(
        &self,
        w: &mut WalkWorker<V::State>,
        at: &Listing<'_>,
        name: &CStr,
        t: DType,
        spawn: &mut dyn FnMut(WorkItem),
    ) {
        if self.control.is_stopped() {
            return;
        }
        let look = &self.opts.look;
        let meta = match look.at(at.dir, name, t) {
            Ok(m) => m,
            Err(e) => {
                let mut p = self.roots.path(at.root, at.rel);
                p.push(OsStr::from_bytes(name.to_bytes()));
                self.visitor.error(stat_error(p, e));
                return;
            }
        };
        let root_dev = self.roots.root(at.root).meta.dev;
        let entry = Entry {
            root: at.root,
            dir_rel: at.rel,
            dir: at.dir,
            name,
            dtype: t,
            meta,
            is_root: false,
            follow: look.follow,
            descent: look.descent(t, meta.as_ref(), root_dev, at.lineage),
        };
        let descend = self.visitor.entry(&mut w.state, &entry);
        if !(descend && self.opts.recursive) {
            return;
        }
        match entry.descent {
            Descent::Into => spawn(WorkItem {
                root: at.root,
                path: entry.rel(),
                kind: WorkKind::Dir(DirInfo {
                    lineage: at.lineage.clone(),
                    ..DirInfo::default()
                }),
                stat: meta.map(Stat::from),
            }),
            Descent::Cycle => self.visitor.error(Error::refused(
                Op::Refuse,
                entry.path(self.roots),
                Refusal::Cycle,
            )),
            Descent::No | Descent::Mount => {}
        }
    }
}

/// The listing type of a looked-at entry.
fn dtype_of(m: &Meta) -> DType {
    match m.file_type() {
        sys::S_IFDIR => DType::Dir,
        sys::S_IFREG => DType::Reg,
        sys::S_IFLNK => DType::Symlink,
        _ => DType::Other,
    }
}
