//! Tree copies: roots, into-self checks, the per-directory pass and post-order finishing.
//!
//! Every directory is a task. Its pass opens the source and destination directories by their
//! paths below the run's anchors with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so a
//! directory swapped for a symlink mid-run is refused rather than followed, and no worker
//! keeps more than a few descriptors open. A directory's metadata is applied when its own pass
//! and all its subdirectories are done; whoever finishes last does it.

use crate::error::{Error, Op};
use crate::file::{self, FileOutcome};
use crate::journal::Journals;
use crate::links::LinkMap;
use crate::meta::{self, Apply, Dst, Process, Xattrs};
use crate::options::{Dereference, Options, Overwrite};
use crate::place;
use crate::special;
use crate::summary::{Control, Counters, EntryKind, Event, Observer, Summary};
use crate::sys::{self, DType, DirReader, Errno, Meta, XattrTarget};
use crate::walk::{self, Spawner};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// One source and the exact destination path it is copied to (cp's target rules already applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyPair {
    pub src: PathBuf,
    pub dst: PathBuf,
}

/// Copies every pair, sharing one hard-link map across them. Errors are reported to the
/// observer and counted; the run goes on.
pub fn copy(pairs: &[CopyPair], opts: &Options, observer: &dyn Observer) -> Summary {
    copy_with(pairs, opts, observer, &Control::new())
}

/// [`copy`] with a [`Control`]: live progress for another thread, and a stop switch. A
/// stopped run removes the entries it had in progress and reports `interrupted`.
pub fn copy_with(
    pairs: &[CopyPair],
    opts: &Options,
    observer: &dyn Observer,
    control: &Control,
) -> Summary {
    let start = Instant::now();
    sys::raise_nofile_limit();
    let run = Run::new(opts, observer, control);
    let mut roots = Vec::new();
    for pair in pairs {
        match Root::open(&run, pair) {
            Ok(Some(root)) => roots.push(root),
            Ok(None) => {}
            Err(e) => run.fail(&e),
        }
    }
    // Root directories are created and opened here, before the workers start, so that their
    // descriptors exist in every worker's private descriptor table (see below).
    let mut tasks = Vec::new();
    let mut keep_nodes = Vec::new();
    let mut keep_roots = Vec::new();
    for root in roots {
        if root.meta.is_dir() && opts.recursive {
            let here = root.here();
            if let Some(node) = run.dir_node(
                &here,
                &root.src_name,
                &root.dst_name,
                Some(root.meta),
                root.follow,
            ) {
                keep_nodes.push(node.clone());
                tasks.push(Task::Dir(node));
            }
        } else {
            let root = Arc::new(root);
            keep_roots.push(root.clone());
            tasks.push(Task::Root(root));
        }
    }
    // Workers copy with descriptor tables of their own (unshare(CLONE_FILES)), so opening and
    // closing files does not contend on one shared table. Only descriptors opened before this
    // point are visible to all; under -L, followed directories become anchors opened by a
    // worker and shared, so that mode keeps the shared table.
    let private_tables = opts.dereference != Dereference::Always;
    // Files alone need no more workers than there are files.
    let jobs = if tasks.iter().all(|t| matches!(t, Task::Root(_))) {
        opts.jobs.min(tasks.len())
    } else {
        opts.jobs
    };
    walk::run(
        jobs,
        tasks,
        || {
            if private_tables {
                sys::private_fd_table();
            }
            Worker {
                reader: DirReader::new(64 * 1024),
                buf: Vec::new(),
            }
        },
        |w, task, spawner| run.task(w, task, spawner),
    );
    // Every worker returned: what was in progress is complete or removed, so the markers of
    // directories left unfinished by a stop can go.
    run.journals.remove_all();
    // The last references to the roots' descriptors are dropped here, on the calling thread,
    // so they are closed in its own table.
    drop((keep_nodes, keep_roots));
    let mut summary = run.counters.summary(start.elapsed());
    summary.interrupted = control.is_stopped();
    summary
}

/// Per-worker reusable buffers.
pub(crate) struct Worker {
    reader: DirReader,
    pub buf: Vec<u8>,
}

/// State shared by every worker of one run.
pub(crate) struct Run<'a> {
    pub opts: &'a Options,
    pub observer: &'a dyn Observer,
    pub wants_entries: bool,
    pub counters: Counters,
    pub links: LinkMap<LinkLoc>,
    pub process: Process,
    pub control: &'a Control,
    pub no_clone: file::NoCloneDevs,
    pub journals: Journals,
}

/// Where the first copy of a hard-link group was made.
#[derive(Debug, Clone)]
pub(crate) struct LinkLoc {
    pub anchor: Arc<OwnedFd>,
    /// The directory below the anchor ("" for the anchor itself).
    pub rel: Arc<[u8]>,
    pub name: CString,
}

enum Task {
    Root(Arc<Root>),
    Dir(Arc<DirNode>),
    Chunk {
        node: Arc<DirNode>,
        entries: Vec<(CString, DType)>,
    },
}

/// A command-line source, resolved to parent directory + name on both sides.
pub(crate) struct Root {
    pub(crate) src_parent: OwnedFd,
    pub(crate) src_name: CString,
    pub(crate) dst_parent: Arc<OwnedFd>,
    pub(crate) dst_name: CString,
    pub(crate) meta: Meta,
    pub(crate) follow: bool,
    pub(crate) src_path: PathBuf,
    pub(crate) dst_path: PathBuf,
    pub(crate) dst_dev: u64,
    pub(crate) dst_cow: bool,
    pub(crate) dst_setgid: bool,
    pub(crate) empty_rel: Arc<[u8]>,
    pub(crate) sized_dev: u64,
}

/// A directory being copied.
pub(crate) struct DirNode {
    parent: Option<Arc<DirNode>>,
    src_anchor: Arc<OwnedFd>,
    src_rel: Arc<[u8]>,
    dst_anchor: Arc<OwnedFd>,
    dst_rel: Arc<[u8]>,
    src_base: Arc<Path>,
    dst_base: Arc<Path>,
    /// The pass over its own entries, plus each unfinished chunk and subdirectory.
    pending: AtomicUsize,
    /// The pass over its own entries, plus each unfinished chunk.
    own_pending: AtomicUsize,
    /// Whether this run's in-progress marker was created in the destination (see `journal`).
    marker: OnceLock<bool>,
    /// The destination held the marker of a killed run: `-u` checks its entries strictly.
    suspect: AtomicBool,
    created: bool,
    /// The destination directory has set-gid, so new entries take its group.
    dst_setgid: bool,
    root_src_dev: u64,
    /// The source device whose files' sizes can be trusted (see `Here::sized_dev`).
    sized_dev: u64,
    dst_dev: u64,
    dst_cow: bool,
    /// Source metadata captured by the pass, applied when the directory is finished.
    finish: Mutex<Option<(Meta, Xattrs)>>,
    /// The parent directory ends up set-gid (see `Apply::inherit_sgid`).
    parent_final_sgid: bool,
    /// This directory ends up set-gid; known once its pass has read the source's mode.
    final_sgid: AtomicBool,
}

/// Where an entry is being copied: its source and destination directories.
pub(crate) struct Here<'a> {
    pub src_dir: BorrowedFd<'a>,
    pub dst_dir: BorrowedFd<'a>,
    /// The open directory that `dst_rel` is below; none for a file copied on its own, whose
    /// names are whole paths resolved from the working directory.
    pub dst_anchor: Option<&'a Arc<OwnedFd>>,
    pub dst_rel: &'a Arc<[u8]>,
    /// For names that are whole paths: the destination's directory with a trailing slash
    /// (empty for the working directory itself), which temporaries are put in.
    pub dst_prefix: &'a [u8],
    /// For messages: the anchors' display paths (for a root, the entry's own path) and the
    /// directories below them.
    src_base: &'a Path,
    src_rel: &'a [u8],
    dst_base: &'a Path,
    is_root: bool,
    pub node: Option<&'a Arc<DirNode>>,
    pub dst_dev: u64,
    pub dst_cow: bool,
    pub dst_setgid: bool,
    pub root_src_dev: u64,
    /// The device of a root on a filesystem whose files report their true size, so an empty
    /// file there needs no read; files elsewhere (procfs, sysfs, ...) are read to the end.
    pub sized_dev: u64,
}

impl<'a> Here<'a> {
    /// A file copied on its own: `src_dir` and `dst_dir` are the working directory and the
    /// names are the paths given.
    pub(crate) fn by_path(
        src: &'a Path,
        dst: &'a Path,
        dst_prefix: &'a [u8],
        empty_rel: &'a Arc<[u8]>,
        facts: DstFacts,
        src_dev: u64,
    ) -> Here<'a> {
        Here {
            src_dir: sys::CWD,
            dst_dir: sys::CWD,
            dst_anchor: None,
            dst_rel: empty_rel,
            dst_prefix,
            src_base: src,
            src_rel: b"",
            dst_base: dst,
            is_root: true,
            node: None,
            dst_dev: facts.dev,
            dst_cow: facts.cow,
            dst_setgid: facts.setgid,
            root_src_dev: src_dev,
            sized_dev: u64::MAX,
        }
    }

    /// Flushes the destination directory's entries.
    pub fn sync_dst_dir(&self) -> sys::Result<()> {
        if self.dst_anchor.is_some() {
            return sys::fsync(self.dst_dir);
        }
        let dir = if self.dst_prefix.is_empty() {
            c".".to_owned()
        } else {
            sys::cstring(self.dst_prefix)
        };
        sys::fsync(sys::open_dir(self.dst_dir, &dir, true)?.as_fd())
    }

    pub fn src_path(&self, name: &CStr) -> PathBuf {
        join(self.src_base, self.src_rel, name, self.is_root)
    }
    pub fn dst_path(&self, name: &CStr) -> PathBuf {
        join(self.dst_base, self.dst_rel, name, self.is_root)
    }
}

fn join(base: &Path, rel: &[u8], name: &CStr, is_root: bool) -> PathBuf {
    if is_root {
        return base.to_path_buf();
    }
    let mut p = base.to_path_buf();
    if !rel.is_empty() {
        p.push(OsStr::from_bytes(rel));
    }
    p.push(OsStr::from_bytes(name.to_bytes()));
    p
}

/// The display path of a directory below an anchor.
fn rel_path(base: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        base.to_path_buf()
    } else {
        base.join(OsStr::from_bytes(rel))
    }
}

fn join_rel(rel: &[u8], name: &CStr) -> Arc<[u8]> {
    let mut v = Vec::with_capacity(rel.len() + 1 + name.to_bytes().len());
    v.extend_from_slice(rel);
    if !rel.is_empty() {
        v.push(b'/');
    }
    v.extend_from_slice(name.to_bytes());
    v.into()
}

impl<'a> Run<'a> {
    pub(crate) fn new(opts: &'a Options, observer: &'a dyn Observer, control: &'a Control) -> Self {
        #[cfg(feature = "failpoints")]
        sys::failpoints::setup();
        Run {
            opts,
            observer,
            wants_entries: observer.wants_entries(),
            counters: Counters::default(),
            links: LinkMap::new(),
            process: Process::current(),
            control,
            no_clone: file::NoCloneDevs::default(),
            journals: Journals::new(),
        }
    }

    pub fn fail(&self, err: &Error) {
        if err.op == Op::Interrupted {
            return;
        }
        self.counters.error(err);
        self.observer.event(&Event::Failed(err));
    }

    pub fn copied(
        &self,
        here: &Here<'_>,
        src: &CStr,
        dst: &CStr,
        kind: EntryKind,
        outcome: Option<FileOutcome>,
    ) {
        self.counters.entry(kind, outcome.as_ref());
        self.control.add_entry();
        if self.wants_entries {
            self.observer.event(&Event::Copied {
                src: &here.src_path(src),
                dst: &here.dst_path(dst),
                kind,
                outcome,
            });
        }
    }

    pub fn skipped(&self, here: &Here<'_>, src: &CStr, dst: &CStr) {
        self.counters.skipped();
        if self.wants_entries {
            self.observer.event(&Event::Skipped {
                src: &here.src_path(src),
                dst: &here.dst_path(dst),
            });
        }
    }

    fn task(&self, w: &mut Worker, task: Task, spawner: &Spawner<'_, Task>) {
        if self.control.is_stopped() {
            return;
        }
        match task {
            Task::Root(root) => {
                let here = root.here();
                let (name, dst_name) = (root.src_name.clone(), root.dst_name.clone());
                self.entry(
                    w,
                    &here,
                    &name,
                    &dst_name,
                    Some(root.meta),
                    root.follow,
                    spawner,
                );
            }
            Task::Dir(node) => self.dir_pass(w, node, spawner),
            Task::Chunk { node, entries } => {
                // Reopened here: a descriptor of the worker that split the directory is not
                // valid in this worker's table.
                let pair = self.open_pair(&node);
                if let Some((src, dst)) = &pair {
                    let here = node.here(src.as_fd(), dst.as_fd());
                    for (name, t) in &entries {
                        self.child(w, &here, name, *t, spawner);
                    }
                }
                drop(entries);
                self.own_done(&node, pair.as_ref().map(|(_, dst)| dst.as_fd()));
                self.dir_done(node, None);
            }
        }
    }

    /// Copies one entry of a directory listing, by its `d_type`.
    fn child(
        &self,
        w: &mut Worker,
        here: &Here<'_>,
        name: &CStr,
        t: DType,
        spawner: &Spawner<'_, Task>,
    ) {
        if self.control.is_stopped() {
            return;
        }
        let follow = self.opts.dereference == Dereference::Always;
        let meta = match t {
            DType::Reg if !follow => None,
            DType::Dir if !self.opts.one_file_system => None,
            _ => match sys::stat_at(here.src_dir, name, follow) {
                Ok(m) => Some(m),
                Err(e) => {
                    self.fail(&stat_error(here.src_path(name), e));
                    return;
                }
            },
        };
        if t == DType::Dir && meta.is_none() {
            self.subdir(here, name, name, None, follow, spawner);
        } else {
            self.entry(w, here, name, name, meta, follow, spawner);
        }
    }

    /// Copies one entry whose type is known from `meta` (or is a regular file when None).
    #[allow(clippy::too_many_arguments)]
    fn entry(
        &self,
        w: &mut Worker,
        here: &Here<'_>,
        name: &CStr,
        dst_name: &CStr,
        meta: Option<Meta>,
        follow: bool,
        spawner: &Spawner<'_, Task>,
    ) {
        let kind = meta.map(|m| m.file_type());
        let result = match kind {
            None | Some(sys::S_IFREG) => {
                match file::copy_regular(self, here, &mut w.buf, name, dst_name, meta, follow) {
                    // Listed as a file, something else now (a symlink fails O_NOFOLLOW with
                    // ELOOP): copy what is there now.
                    Err(e)
                        if e.op == Op::Changed || e.errno() == Some(Errno::LOOP.raw_os_error()) =>
                    {
                        match sys::stat_at(here.src_dir, name, follow) {
                            Ok(m) if !m.is_reg() => {
                                return self.entry(
                                    w,
                                    here,
                                    name,
                                    dst_name,
                                    Some(m),
                                    follow,
                                    spawner,
                                );
                            }
                            _ => Err(e),
                        }
                    }
                    other => other.map(|_| ()),
                }
            }
            Some(sys::S_IFDIR) => {
                self.subdir(here, name, dst_name, meta, follow, spawner);
                Ok(())
            }
            Some(sys::S_IFLNK) => special::copy_symlink(self, here, name, dst_name, &meta.unwrap()),
            Some(_) => special::copy_special(self, here, name, dst_name, &meta.unwrap()),
        };
        if let Err(e) = result {
            self.fail(&e);
        }
    }

    /// Creates (or merges into) the destination directory and queues its pass.
    fn subdir(
        &self,
        here: &Here<'_>,
        name: &CStr,
        dst_name: &CStr,
        meta: Option<Meta>,
        follow: bool,
        spawner: &Spawner<'_, Task>,
    ) {
        if let Some(node) = self.dir_node(here, name, dst_name, meta, follow) {
            spawner.push(Task::Dir(node));
        }
    }

    /// Creates (or merges into) the destination directory and returns the node of its pass,
    /// or None when there is no pass to run (an error, or a -x mount point finished empty).
    fn dir_node(
        &self,
        here: &Here<'_>,
        name: &CStr,
        dst_name: &CStr,
        meta: Option<Meta>,
        follow: bool,
    ) -> Option<Arc<DirNode>> {
        let src_path = || here.src_path(name);
        let dst_path = || here.dst_path(dst_name);
        if !self.opts.recursive {
            self.fail(&Error::refused(
                Op::Refuse,
                src_path(),
                "-r not specified; omitting directory",
            ));
            return None;
        }
        // -x: a directory on another filesystem is created, not entered (as cp does).
        let crosses = matches!(meta, Some(m) if self.opts.one_file_system && !here.is_root && m.dev != here.root_src_dev);
        // A root, or a symlink followed under -L, becomes a new anchor. Its source is opened
        // before anything is created, so an unreadable root leaves nothing behind.
        let new_anchor =
            here.node.is_none() || (follow && meta.is_some() && is_symlink_at(here.src_dir, name));
        let mut anchor_src = None;
        if new_anchor {
            match sys::open_dir(here.src_dir, name, follow) {
                Ok(fd) => anchor_src = Some(fd),
                Err(e) => {
                    self.fail(&open_error(src_path(), e));
                    return None;
                }
            }
        }
        let (created, dst_setgid) = match sys::mkdir(here.dst_dir, dst_name, 0o700) {
            Ok(()) => (true, here.dst_setgid),
            Err(Errno::EXIST) => match sys::stat_at(here.dst_dir, dst_name, false) {
                Ok(m) if m.is_dir() => (false, m.mode & sys::S_ISGID != 0),
                Ok(_) => {
                    self.fail(&Error::refused(
                        Op::CreateDir,
                        dst_path(),
                        format!(
                            "cannot overwrite non-directory with directory '{}'",
                            crate::path_display(&src_path())
                        ),
                    ));
                    return None;
                }
                Err(e) => {
                    self.fail(&Error::io(Op::Stat, dst_path(), sys::io_err(e)));
                    return None;
                }
            },
            Err(e) => {
                self.fail(&Error::io(Op::CreateDir, dst_path(), sys::io_err(e)));
                return None;
            }
        };
        let parent_final_sgid = match here.node {
            Some(p) => p.final_sgid.load(Ordering::SeqCst),
            None => here.dst_setgid,
        };
        let node = match (here.node, anchor_src) {
            // Below a root: extend the parent's paths; anchors stay.
            (Some(parent), None) => DirNode {
                parent: Some(parent.clone()),
                src_anchor: parent.src_anchor.clone(),
                src_rel: join_rel(&parent.src_rel, name),
                dst_anchor: parent.dst_anchor.clone(),
                dst_rel: join_rel(&parent.dst_rel, dst_name),
                src_base: parent.src_base.clone(),
                dst_base: parent.dst_base.clone(),
                pending: AtomicUsize::new(1),
                own_pending: AtomicUsize::new(1),
                marker: OnceLock::new(),
                suspect: AtomicBool::new(false),
                created,
                dst_setgid,
                root_src_dev: parent.root_src_dev,
                sized_dev: parent.sized_dev,
                dst_dev: parent.dst_dev,
                dst_cow: parent.dst_cow,
                finish: Mutex::new(None),
                parent_final_sgid,
                final_sgid: AtomicBool::new(false),
            },
            // A root, or a symlink followed under -L: the directory becomes a new anchor.
            (_, anchor_src) => {
                let src = anchor_src.expect("opened above for a new anchor");
                let dst = match sys::open_dir(here.dst_dir, dst_name, false) {
                    Ok(fd) => fd,
                    Err(e) => {
                        self.fail(&Error::io(Op::Open, dst_path(), sys::io_err(e)));
                        return None;
                    }
                };
                if let Some(parent) = here.node {
                    if let Err(e) = check_not_cycle(parent, &src) {
                        self.fail(&Error::refused(Op::Refuse, src_path(), e));
                        return None;
                    }
                }
                let src_dev = if here.is_root {
                    meta.map_or(0, |m| m.dev)
                } else {
                    here.root_src_dev
                };
                DirNode {
                    parent: here.node.cloned(),
                    src_anchor: Arc::new(src),
                    src_rel: Arc::from(&b""[..]),
                    dst_anchor: Arc::new(dst),
                    dst_rel: Arc::from(&b""[..]),
                    src_base: Arc::from(src_path().as_path()),
                    dst_base: Arc::from(dst_path().as_path()),
                    pending: AtomicUsize::new(1),
                    own_pending: AtomicUsize::new(1),
                    marker: OnceLock::new(),
                    suspect: AtomicBool::new(false),
                    created,
                    dst_setgid,
                    root_src_dev: src_dev,
                    sized_dev: here.sized_dev,
                    dst_dev: here.dst_dev,
                    dst_cow: here.dst_cow,
                    finish: Mutex::new(None),
                    parent_final_sgid,
                    final_sgid: AtomicBool::new(false),
                }
            }
        };
        if let Some(parent) = here.node {
            parent.pending.fetch_add(1, Ordering::SeqCst);
        }
        let node = Arc::new(node);
        if crosses {
            // Finish it empty: record its metadata and complete the pass at once.
            let m = meta.expect("stat taken under -x");
            let xattrs = self.dir_xattrs_at(here.src_dir, name, &src_path);
            *node.finish.lock().unwrap_or_else(|e| e.into_inner()) = Some((m, xattrs));
            self.dir_done(node, None);
            return None;
        }
        Some(node)
    }

    fn dir_xattrs_at(
        &self,
        dir: BorrowedFd<'_>,
        name: &CStr,
        path: &dyn Fn() -> PathBuf,
    ) -> Xattrs {
        if !self.opts.preserve.xattr && !self.opts.preserve.mode {
            return Vec::new();
        }
        match sys::open_dir(dir, name, false) {
            Ok(fd) => meta::source_xattrs(self.opts, XattrTarget::Fd(fd.as_fd()), path)
                .unwrap_or_else(|e| {
                    self.fail(&e);
                    Vec::new()
                }),
            Err(_) => Vec::new(),
        }
    }

    /// One directory's own pass: read its entries and copy them; subdirectories are queued.
    fn dir_pass(&self, w: &mut Worker, node: Arc<DirNode>, spawner: &Spawner<'_, Task>) {
        let src_path = || rel_path(&node.src_base, &node.src_rel);
        let src = match sys::open_dir_beneath(node.src_anchor.as_fd(), &node.src_rel) {
            Ok(fd) => fd,
            Err(e) => {
                self.fail(&open_error(src_path(), e));
                self.own_done(&node, None);
                self.dir_done(node, None);
                return;
            }
        };
        match sys::fstat(src.as_fd()) {
            Ok(m) => {
                let xattrs =
                    meta::source_xattrs(self.opts, XattrTarget::Fd(src.as_fd()), &src_path)
                        .unwrap_or_else(|e| {
                            self.fail(&e);
                            Vec::new()
                        });
                let sgid = if self.opts.preserve.mode {
                    m.mode & sys::S_ISGID != 0
                } else if node.created {
                    node.parent_final_sgid
                } else {
                    node.dst_setgid
                };
                node.final_sgid.store(sgid, Ordering::SeqCst);
                *node.finish.lock().unwrap_or_else(|e| e.into_inner()) = Some((m, xattrs));
            }
            Err(e) => self.fail(&stat_error(src_path(), e)),
        }
        let dst = match sys::open_dir_beneath(node.dst_anchor.as_fd(), &node.dst_rel) {
            Ok(fd) => fd,
            Err(e) => {
                let p = rel_path(&node.dst_base, &node.dst_rel);
                self.fail(&Error::io(Op::Open, p, sys::io_err(e)));
                self.own_done(&node, None);
                self.dir_done(node, None);
                return;
            }
        };
        // Merging into a directory that a killed run may have written: its temporaries and
        // marker go, and under -u its entries are then checked strictly. -n keeps everything
        // as it is, marks included, since it replaces nothing.
        if !node.created && self.opts.overwrite != Overwrite::NoClobber {
            let suspect = place::remove_leftovers(&mut w.reader, dst.as_fd());
            node.suspect.store(suspect, Ordering::SeqCst);
        }
        let mut entries = Vec::new();
        if let Err(e) = w
            .reader
            .read_all(src.as_fd(), |name, t| entries.push((name.to_owned(), t)))
        {
            self.fail(&Error::io(Op::ReadDir, src_path(), sys::io_err(e)));
        }
        // Subdirectories first, so other workers can start on them while we copy files.
        let (dirs, rest): (Vec<_>, Vec<_>) =
            entries.into_iter().partition(|(_, t)| *t == DType::Dir);
        {
            let here = node.here(src.as_fd(), dst.as_fd());
            for (name, t) in &dirs {
                self.child(w, &here, name, *t, spawner);
            }
        }
        if rest.len() > 2 * CHUNK && self.opts.jobs > 1 {
            let mut rest = rest;
            while rest.len() > CHUNK {
                let tail = rest.split_off(rest.len() - CHUNK);
                node.pending.fetch_add(1, Ordering::SeqCst);
                node.own_pending.fetch_add(1, Ordering::SeqCst);
                spawner.push(Task::Chunk {
                    node: node.clone(),
                    entries: tail,
                });
            }
            let here = node.here(src.as_fd(), dst.as_fd());
            for (name, t) in &rest {
                self.child(w, &here, name, *t, spawner);
            }
            drop(src);
            self.own_done(&node, Some(dst.as_fd()));
            self.dir_done(node, Some(dst));
        } else {
            let here = node.here(src.as_fd(), dst.as_fd());
            for (name, t) in &rest {
                self.child(w, &here, name, *t, spawner);
            }
            drop(src);
            self.own_done(&node, Some(dst.as_fd()));
            self.dir_done(node, Some(dst));
        }
    }

    /// Opens a directory's source and destination by their paths below the anchors.
    fn open_pair(&self, node: &DirNode) -> Option<(OwnedFd, OwnedFd)> {
        let src = sys::open_dir_beneath(node.src_anchor.as_fd(), &node.src_rel)
            .map_err(|e| self.fail(&open_error(rel_path(&node.src_base, &node.src_rel), e)))
            .ok()?;
        let dst = sys::open_dir_beneath(node.dst_anchor.as_fd(), &node.dst_rel)
            .map_err(|e| {
                let p = rel_path(&node.dst_base, &node.dst_rel);
                self.fail(&Error::io(Op::Open, p, sys::io_err(e)))
            })
            .ok()?;
        Some((src, dst))
    }

    /// Marks the pass or one chunk of a directory done; after the last one, all of its own
    /// entries are complete and its in-progress marker goes. `dst` is the directory if open.
    fn own_done(&self, node: &DirNode, dst: Option<BorrowedFd<'_>>) {
        if node.own_pending.fetch_sub(1, Ordering::SeqCst) == 1 && node.marker.get() == Some(&true)
        {
            self.journals.remove(dst, &node.dst_anchor, &node.dst_rel);
        }
    }

    /// Marks one part of a directory done; the last part applies its metadata, and so on up.
    fn dir_done(&self, node: Arc<DirNode>, fd: Option<OwnedFd>) {
        let mut node = node;
        let mut fd = fd;
        loop {
            if node.pending.fetch_sub(1, Ordering::SeqCst) != 1 || self.control.is_stopped() {
                return;
            }
            self.finish_dir(&node, fd.take());
            match &node.parent {
                Some(p) => node = p.clone(),
                None => return,
            }
        }
    }

    fn finish_dir(&self, node: &DirNode, fd: Option<OwnedFd>) {
        let dst_path = || rel_path(&node.dst_base, &node.dst_rel);
        let src_path = || rel_path(&node.src_base, &node.src_rel);
        let Some((meta, xattrs)) = node.finish.lock().unwrap_or_else(|e| e.into_inner()).take()
        else {
            return;
        };
        let fd = match fd {
            Some(fd) => fd,
            None => match sys::open_dir_beneath(node.dst_anchor.as_fd(), &node.dst_rel) {
                Ok(fd) => fd,
                Err(e) => {
                    self.fail(&Error::io(Op::Open, dst_path(), sys::io_err(e)));
                    return;
                }
            },
        };
        let apply = Apply {
            opts: self.opts,
            process: &self.process,
            src: &meta,
            created: node.created,
            created_owner: (node.created && !node.dst_setgid)
                .then_some((self.process.euid, self.process.egid)),
            inherit_sgid: node.created && node.parent_final_sgid,
            current_perm: node
                .created
                .then_some(0o700 | if node.dst_setgid { sys::S_ISGID } else { 0 }),
        };
        let flushed = || {
            if self.opts.sync {
                sys::fsync(fd.as_fd()).map_err(|e| Error::io(Op::Sync, dst_path(), sys::io_err(e)))
            } else {
                Ok(())
            }
        };
        match apply
            .run(Dst::Fd(fd.as_fd()), &xattrs, &dst_path)
            .and_then(|()| flushed())
        {
            Ok(()) => {
                self.counters.entry(EntryKind::Directory, None);
                self.control.add_entry();
                if self.wants_entries {
                    self.observer.event(&Event::Copied {
                        src: &src_path(),
                        dst: &dst_path(),
                        kind: EntryKind::Directory,
                        outcome: None,
                    });
                }
            }
            Err(e) => self.fail(&e),
        }
    }
}

/// Entries per chunk when a large directory's files are shared among workers.
const CHUNK: usize = 512;

impl DirNode {
    /// Makes sure the destination holds this run's in-progress marker before a new entry is
    /// created in it (see `journal`). False when the marker cannot be created: new files are
    /// then marked one by one.
    pub(crate) fn mark_in_progress(&self, run: &Run<'_>, dst: BorrowedFd<'_>) -> bool {
        *self
            .marker
            .get_or_init(|| run.journals.create(dst, &self.dst_anchor, &self.dst_rel))
    }

    /// Whether a killed run's marker was found in the destination (`-u` only).
    pub(crate) fn is_suspect(&self) -> bool {
        self.suspect.load(Ordering::SeqCst)
    }

    fn here<'a>(self: &'a Arc<Self>, src: BorrowedFd<'a>, dst: BorrowedFd<'a>) -> Here<'a> {
        Here {
            src_dir: src,
            dst_dir: dst,
            dst_anchor: Some(&self.dst_anchor),
            dst_rel: &self.dst_rel,
            dst_prefix: b"",
            src_base: &self.src_base,
            src_rel: &self.src_rel,
            dst_base: &self.dst_base,
            is_root: false,
            node: Some(self),
            dst_dev: self.dst_dev,
            dst_cow: self.dst_cow,
            dst_setgid: self.dst_setgid,
            root_src_dev: self.root_src_dev,
            sized_dev: self.sized_dev,
        }
    }
}

impl Root {
    /// Resolves a command-line pair; refuses same-file and into-self copies by dev/ino.
    pub(crate) fn open(run: &Run<'_>, pair: &CopyPair) -> Result<Option<Root>, Error> {
        let opts = run.opts;
        let src_path = &pair.src;
        let dst_path = &pair.dst;
        let trailing_slash = src_path.as_os_str().as_bytes().ends_with(b"/");
        let follow = opts.dereference != Dereference::Never || trailing_slash;
        let (src_parent, src_name) = split(src_path);
        let src_parent = sys::open_dir(sys::CWD, &src_parent, true)
            .map_err(|e| stat_error(src_path.clone(), e))?;
        let meta = sys::stat_at(src_parent.as_fd(), &src_name, follow)
            .map_err(|e| stat_error(src_path.clone(), e))?;
        if meta.is_dir() && !opts.recursive {
            return Err(Error::refused(
                Op::Refuse,
                src_path,
                format!(
                    "-r not specified; omitting directory '{}'",
                    crate::path_display(src_path)
                ),
            ));
        }
        let (dst_parent_path, dst_name) = split(dst_path);
        let create_op = if meta.is_dir() {
            Op::CreateDir
        } else {
            Op::Create
        };
        let dst_parent = sys::open_dir(sys::CWD, &dst_parent_path, true)
            .map_err(|e| Error::io(create_op, dst_path, sys::io_err(e)))?;
        let parent_meta = sys::fstat(dst_parent.as_fd())
            .map_err(|e| Error::io(Op::Stat, dst_path, sys::io_err(e)))?;
        let same = sys::stat_at(dst_parent.as_fd(), &dst_name, false).is_ok_and(|d| {
            place::is_same_file(
                &meta,
                place::followed(src_parent.as_fd(), &src_name),
                &d,
                place::followed(dst_parent.as_fd(), &dst_name),
            )
        });
        if same {
            return Err(same_file(src_path, dst_path));
        }
        if meta.is_dir() && is_inside(dst_parent.as_fd(), meta.id()) {
            return Err(Error::refused(
                Op::Refuse,
                src_path,
                format!(
                    "cannot copy a directory, '{}', into itself, '{}'",
                    crate::path_display(src_path),
                    crate::path_display(dst_path)
                ),
            ));
        }
        let dst_cow = cow_matters(opts) && is_cow(dst_parent.as_fd());
        // Known per tree for directories; a file given alone is checked only if it is empty.
        let sized_dev =
            if meta.is_dir() && sys::sizes_are_true_at(src_parent.as_fd(), &src_name, follow) {
                meta.dev
            } else {
                u64::MAX
            };
        Ok(Some(Root {
            sized_dev,
            src_parent,
            src_name,
            dst_parent: Arc::new(dst_parent),
            dst_name,
            meta,
            follow,
            src_path: src_path.clone(),
            dst_path: dst_path.clone(),
            dst_dev: parent_meta.dev,
            dst_cow,
            dst_setgid: parent_meta.mode & sys::S_ISGID != 0,
            empty_rel: Arc::from(&b""[..]),
        }))
    }

    pub(crate) fn here(&self) -> Here<'_> {
        Here {
            src_dir: self.src_parent.as_fd(),
            dst_dir: self.dst_parent.as_fd(),
            dst_anchor: Some(&self.dst_parent),
            dst_rel: &self.empty_rel,
            dst_prefix: b"",
            src_base: &self.src_path,
            src_rel: b"",
            dst_base: &self.dst_path,
            is_root: true,
            node: None,
            dst_dev: self.dst_dev,
            dst_cow: self.dst_cow,
            dst_setgid: self.dst_setgid,
            root_src_dev: self.meta.dev,
            sized_dev: self.sized_dev,
        }
    }
}

/// What a destination directory is like, as far as copying into it goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DstFacts {
    pub dev: u64,
    /// Copy-on-write: `copy_file_range` may share extents there (see `Here::dst_cow`).
    pub cow: bool,
    /// Set-gid: new entries take the directory's group.
    pub setgid: bool,
}

/// Only --reflink=never needs to know whether the destination is copy-on-write (to keep
/// copy_file_range from sharing extents there).
pub(crate) fn cow_matters(opts: &Options) -> bool {
    opts.reflink == crate::options::Reflink::Never
}

pub(crate) fn is_cow(dir: BorrowedFd<'_>) -> bool {
    matches!(
        sys::fs_type(dir),
        Ok(sys::BTRFS_MAGIC
            | sys::XFS_MAGIC
            | sys::BCACHEFS_MAGIC
            | sys::OCFS2_MAGIC
            | sys::ZFS_MAGIC)
    )
}

pub(crate) fn same_file(src: &Path, dst: &Path) -> Error {
    Error::refused(
        Op::Refuse,
        src,
        format!(
            "'{}' and '{}' are the same file",
            crate::path_display(src),
            crate::path_display(dst)
        ),
    )
}

/// Splits a command-line path into its parent directory and final name. A path that ends in
/// "." or ".." or is "/" names the directory itself: parent = the path, name = ".".
fn split(path: &Path) -> (CString, CString) {
    let bytes = path.as_os_str().as_bytes();
    match path.components().next_back() {
        Some(Component::Normal(name)) if !bytes.ends_with(b"/.") => {
            let parent = path
                .parent()
                .map(|p| p.as_os_str().as_bytes())
                .unwrap_or(b"");
            let parent = if parent.is_empty() {
                b"." as &[u8]
            } else {
                parent
            };
            // A trailing slash stays on the name: the kernel then insists on a directory
            // (ENOTDIR for a file) and follows a symlink to one, as POSIX says.
            let mut name = name.as_bytes().to_vec();
            if bytes.ends_with(b"/") {
                name.push(b'/');
            }
            (sys::cstring(parent), sys::cstring(&name))
        }
        _ => (sys::cstring(bytes), sys::cstring(b".")),
    }
}

/// Whether the directory `id` is `dir` or one of its ancestors (by dev/ino, walking "..").
fn is_inside(dir: BorrowedFd<'_>, id: (u64, u64)) -> bool {
    let Ok(mut cur_meta) = sys::fstat(dir) else {
        return false;
    };
    let mut cur: Option<OwnedFd> = None;
    loop {
        if cur_meta.id() == id {
            return true;
        }
        let at = cur.as_ref().map_or(dir, |fd| fd.as_fd());
        let Ok(up) = sys::open_dir(at, c"..", false) else {
            return false;
        };
        let Ok(up_meta) = sys::fstat(up.as_fd()) else {
            return false;
        };
        if up_meta.id() == cur_meta.id() {
            return false;
        }
        cur = Some(up);
        cur_meta = up_meta;
    }
}

/// Under -L, refuses a followed directory that is one of its own ancestors.
fn check_not_cycle(parent: &Arc<DirNode>, dir: &OwnedFd) -> Result<(), String> {
    let Ok(m) = sys::fstat(dir.as_fd()) else {
        return Ok(());
    };
    let mut cur = Some(parent.clone());
    while let Some(node) = cur {
        if let Some((pm, _)) = &*node.finish.lock().unwrap_or_else(|e| e.into_inner()) {
            if pm.id() == m.id() {
                return Err("directory cycle detected; not copying it again".into());
            }
        }
        cur = node.parent.clone();
    }
    Ok(())
}

fn is_symlink_at(dir: BorrowedFd<'_>, name: &CStr) -> bool {
    sys::stat_at(dir, name, false).is_ok_and(|m| m.is_symlink())
}

pub(crate) fn stat_error(path: PathBuf, e: Errno) -> Error {
    Error::io(Op::Stat, path, sys::io_err(e))
}

/// An open failure; ENOENT on something just listed means it vanished.
pub(crate) fn open_error(path: PathBuf, e: Errno) -> Error {
    if e == Errno::NOENT {
        Error::io(Op::Vanished, path, sys::io_err(e))
    } else {
        Error::io(Op::Open, path, sys::io_err(e))
    }
}
