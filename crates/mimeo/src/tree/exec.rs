//! The executor: runs work items for a scheduler.

use super::context::{Buffers, Ctx, Here, Root};
use super::dir::{self, make_dst_dir};
use super::hooks::{HookSet, Hooks, NoHooks};
use super::roots::{CopyPair, DirSeen, FileKey, file_source_id, open_error, root_file_key};
use super::split;
use super::work::{DirDone, DirInfo, Lineage, RangeDone, Stat, WorkItem, WorkKind};
use crate::options::{Dereference, Options, Overwrite};
use crate::place::links::LinkGroups;
use crate::report::{Control, Error, Method, Observer, Op, Refusal, Reporter, Summary, Warning};
use crate::sys;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Instant;

/// Work that a scheduler drives: plain [`WorkItem`]s, each run on some worker, spawning more,
/// with directories completed once everything spawned under them has run. The copy's
/// [`Executor`] is one; a walk ([`super::walk::Walk`]) is another.
pub(crate) trait Passes: Sync {
    /// A worker's reusable state.
    type Worker;
    /// What completing a directory needs.
    type Done: Send;
    /// A new worker's state.
    fn worker(&self) -> Self::Worker;
    /// Runs one item; items it discovers go to `spawn`. A directory's pass returns what
    /// completing it needs.
    fn run(
        &self,
        worker: &mut Self::Worker,
        item: WorkItem,
        spawn: &mut dyn FnMut(WorkItem),
    ) -> Option<Self::Done>;
    /// Completes a directory, after every item spawned under it has run, on the worker that
    /// ran the last of them.
    fn complete(&self, worker: &mut Self::Worker, done: Self::Done);
}

impl Passes for Executor<'_> {
    type Worker = Worker;
    type Done = DirDone;

    fn worker(&self) -> Worker {
        Executor::worker(self)
    }

    fn run(
        &self,
        worker: &mut Worker,
        item: WorkItem,
        spawn: &mut dyn FnMut(WorkItem),
    ) -> Option<DirDone> {
        Executor::run(self, worker, item, spawn)
    }

    fn complete(&self, worker: &mut Worker, done: DirDone) {
        Executor::complete(self, worker, done);
    }
}

/// Runs the work items of one tree copy. A scheduler (the local pool of
/// [`copy_with`](crate::copy_with), or one that spreads items over processes) takes the
/// initial items from [`Executor::new`], hands each item to [`Executor::run`] on some worker,
/// and calls [`Executor::complete`] with each [`DirDone`] once every item spawned while
/// producing it, and everything those spawned, has run.
///
/// Descriptors: [`Executor::new`] opens the roots; those descriptors are valid in every
/// thread started afterwards, also in threads that give themselves a private descriptor table
/// (`unshare(CLONE_FILES)`), which the local pool does. Everything else a worker opens, it
/// closes before `run` returns.
pub struct Executor<'a> {
    ctx: Ctx<'a>,
    start: Instant,
}

impl std::fmt::Debug for Executor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("roots", &self.ctx.roots.len())
            .finish_non_exhaustive()
    }
}

/// A worker's reusable buffers; make one per thread with [`Executor::worker`].
pub struct Worker(Buffers);

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").finish_non_exhaustive()
    }
}

impl<'a> Executor<'a> {
    /// Resolves every pair and returns the executor with the initial work items: one per
    /// source. A failure of one pair (missing source, a directory without `-r`, a directory
    /// into itself) is reported to `observer`, and the others go on.
    ///
    /// The destination directory of each directory source is created here (or merged into),
    /// so that its descriptor exists before any worker starts.
    pub fn new(
        pairs: &[CopyPair],
        opts: &'a Options,
        observer: &'a dyn Observer,
        control: &'a Control,
    ) -> (Executor<'a>, Vec<WorkItem>) {
        Executor::with_hooks(pairs, opts, observer, control, &NoHooks)
    }

    /// [`Executor::new`] with [`Hooks`]: the caller decides which entries of each directory
    /// are copied, and may copy some kinds of entries itself.
    pub fn with_hooks(
        pairs: &[CopyPair],
        opts: &'a Options,
        observer: &'a dyn Observer,
        control: &'a Control,
        hooks: &'a dyn Hooks,
    ) -> (Executor<'a>, Vec<WorkItem>) {
        let start = Instant::now();
        sys::raise_nofile_limit();
        let mut ctx = Ctx::new(opts, Reporter::new(observer, control), HookSet::new(hooks));
        let mut items: Vec<WorkItem> = Vec::new();
        // Where each root goes: its destination parent's (dev, ino) and name. Only looked at
        // when there are several sources, which may share a destination.
        let mut dests: Vec<Option<Dest>> = Vec::new();
        // Every directory root so far, copied or refused as a copy into itself.
        let mut named: Vec<Named> = Vec::new();
        // cp's flag that a --parents destination is new, kept from one source to the next.
        let mut new_dst = false;
        // The sources so far that are not directories, by [`FileKey`]: cp copies each once,
        // wherever it goes, and warns of it named again (without backups).
        let mut seen_files: Vec<FileKey> = Vec::new();
        let mut dir_seen: DirSeen = None;
        for (n, pair) in pairs.iter().enumerate() {
            let mut root = match resolve_root(opts, pair, &ctx.report, &mut new_dst) {
                Ok(root) => root,
                // Making a non-directory where its parent is missing, or at "d/" naming a
                // dangling symlink: cp names it on its -v line before the call fails.
                Err((e, counted)) => {
                    root_failed(&ctx, &mut items, &mut seen_files, &pairs[n..], e, counted);
                    continue;
                }
            };
            // The same file named again, wherever it goes: cp skips it with a warning, in its
            // turn (see `dir::root_entry`).
            let key = (pairs.len() > 1 && opts.backup.is_none())
                .then(|| root_file_key(&root, &mut dir_seen))
                .flatten();
            if let Some(key) = key {
                root.named_twice = seen_files.contains(&key);
                if !root.named_twice {
                    seen_files.push(key);
                }
            }
            let index = ctx.roots.len() as u32;
            let dest = (pairs.len() > 1).then(|| dest_of(&root)).flatten();
            // An earlier source that is not a directory goes to the same name: cp copies in
            // command-line order, and the later one must find what the earlier one made.
            // (A file named twice writes nothing: it waits for no earlier root.)
            let dest = dest.filter(|_| !root.named_twice);
            let earlier = dest
                .as_ref()
                .and_then(|dest| dests.iter().position(|d| d.as_ref() == Some(dest)));
            // A destination cp takes to be new is made without a look (after cp's check
            // for a source named twice).
            let twice = earlier.is_some()
                || root.named_twice
                || named
                    .iter()
                    .any(|n| n.id == root.meta.id() && dest.is_some() && n.dest == dest);
            if new_dst && !twice {
                if let Some(e) = super::roots::made_over(opts, &root) {
                    // The files before it, and their failures, come first (a rare case:
                    // the pool waits for them).
                    run_files_now(&ctx, &mut items, &pairs[n + 1..]);
                    root.finish_parents(opts, &ctx.report);
                    ctx.report.fail(e);
                    continue;
                }
            }
            let earlier_item = earlier.and_then(|e| {
                items
                    .iter()
                    .position(|i| i.root == e as u32 && matches!(i.kind, WorkKind::Root))
            });
            let queue = Queue {
                items: &mut items,
                dests: &mut dests,
                named: &mut named,
            };
            queue.add(&mut ctx, root, index, dest, earlier_item);
        }
        ctx.overlapping_roots = super::context::roots_overlap(&ctx.roots);
        ctx.named_dirs = named
            .into_iter()
            .map(|n| super::context::NamedDir {
                before: n.index,
                id: n.id,
                dst_path: n.dst_path,
                dest: n.dest,
            })
            .collect();
        (Executor { ctx, start }, items)
    }

    /// The executor of a run that another process started with [`Executor::new`]: opens the
    /// same roots, creating nothing and reporting nothing that the first process reported.
    /// `pairs` are that executor's [`Executor::pairs`], so that root indices in work items
    /// mean the same in both; the destination directories of directory roots must exist
    /// (the first process made them).
    ///
    /// # Errors
    ///
    /// The first root that cannot be resolved or opened here: this process cannot take part
    /// in the run.
    pub fn attach(
        pairs: &[CopyPair],
        opts: &'a Options,
        observer: &'a dyn Observer,
        control: &'a Control,
    ) -> Result<Executor<'a>, crate::report::Error> {
        let start = Instant::now();
        sys::raise_nofile_limit();
        let mut ctx = Ctx::new(
            opts,
            Reporter::new(observer, control),
            HookSet::new(&NoHooks),
        );
        for pair in pairs {
            let mut root = Root::resolve(opts, pair)?;
            if root.meta.is_dir() {
                let src = sys::open_dir(root.src_parent.as_fd(), &root.src_name, root.follow)
                    .map_err(|e| open_error(root.src_path.clone(), e))?;
                let dst = sys::open_dir(root.dst_parent.as_fd(), &root.dst_name, false)
                    .map_err(|e| open_error(root.dst_path.clone(), e))?;
                root.dirs = Some((src, dst));
            }
            ctx.roots.push(root);
        }
        ctx.overlapping_roots = super::context::roots_overlap(&ctx.roots);
        Ok(Executor { ctx, start })
    }

    /// The pairs whose roots this executor opened, in the order of the roots that work items
    /// name ([`WorkItem::root`]): what [`Executor::attach`] needs in another process.
    pub fn pairs(&self) -> Vec<CopyPair> {
        self.ctx
            .roots
            .iter()
            .map(|r| CopyPair::new(&r.src_path, &r.dst_path))
            .collect()
    }

    /// Keeps the run's hard-link groups in `groups` instead of this executor's own map: a run
    /// spread over processes gives each process's executor one that agrees with the others,
    /// so that a group whose members different processes reach stays one group. Call it
    /// before the first [`Executor::run`].
    pub fn with_link_groups(mut self, groups: &'a dyn LinkGroups) -> Self {
        self.ctx.groups = Some(groups);
        self
    }

    /// Other processes of the run help copy the ranges of the files this executor splits
    /// ([`Options::split`]): a file is split even where this process runs a single worker,
    /// and its range items may be run elsewhere, as [`Executor::lend_range`] says. Call it
    /// before the first [`Executor::run`].
    pub fn lending_ranges(mut self) -> Self {
        self.ctx.splits.lending = true;
        self
    }

    /// In the process that split a file (the one whose executor spawned the range item of
    /// `file` at `offset`, see [`FileRange`](crate::work::FileRange)): takes the range for a worker of another
    /// process that is about to start its item. True: that
    /// worker copies it with [`Executor::run_lent`], and what it returns must come back here,
    /// to [`Executor::range_done`], or the file never finishes. False: the range is taken
    /// already, or its file finished or failed; the item does nothing.
    ///
    /// Ask at the moment the item starts, not when it is handed over: the splitter waits for
    /// the ranges taken by others, and a range waiting in a queue behind a busy worker could
    /// make it wait for ever.
    pub fn lend_range(&self, file: u64, offset: u64) -> bool {
        split::lend(&self.ctx, file, offset)
    }

    /// Copies the range of a [`WorkKind::Range`] item whose file another process split, after
    /// that process lent it ([`Executor::lend_range`]). None for another kind of item.
    pub fn run_lent(&self, worker: &mut Worker, item: WorkItem) -> Option<RangeDone> {
        match item.kind {
            WorkKind::Range(range) => Some(split::run_lent(
                &self.ctx,
                &mut worker.0,
                item.root,
                &item.path,
                &range,
                item.stat,
            )),
            _ => None,
        }
    }

    /// In the process that split a file: a range it lent is done.
    pub fn range_done(&self, done: &RangeDone) {
        split::lent_done(&self.ctx, done);
    }

    /// A worker's buffers, for [`Executor::run`].
    pub fn worker(&self) -> Worker {
        Worker(Buffers::new())
    }

    /// The options of the run.
    pub fn options(&self) -> &Options {
        self.ctx.opts
    }

    /// The run's control (stop switch and live counters).
    pub fn control(&self) -> &Control {
        self.ctx.report.control
    }

    /// Runs one item. Items it discovers are handed to `spawn`. For a directory's pass it
    /// returns what completing the directory needs; see [`Executor::complete`].
    pub fn run(
        &self,
        worker: &mut Worker,
        item: WorkItem,
        spawn: &mut dyn FnMut(WorkItem),
    ) -> Option<DirDone> {
        if self.control().is_stopped() {
            return None;
        }
        match item.kind {
            WorkKind::Root => {
                dir::root_entry(&self.ctx, &mut worker.0, item.root, spawn);
                None
            }
            WorkKind::Dir(info) => Some(dir::pass(
                &self.ctx,
                &mut worker.0,
                item.root,
                &item.path,
                info,
                spawn,
            )),
            WorkKind::Entries {
                dir,
                lineage,
                names,
            } => {
                dir::entries(
                    &self.ctx,
                    &mut worker.0,
                    item.root,
                    &item.path,
                    &dir,
                    &lineage,
                    names,
                    spawn,
                );
                None
            }
            WorkKind::Range(range) => {
                split::help(&self.ctx, &mut worker.0, item.root, &item.path, &range);
                None
            }
        }
    }

    /// Completes a directory: applies its metadata, now that everything below it is done.
    /// Best called on the worker that ran the last item of the directory (often its own
    /// pass), which may still hold the directory open.
    pub fn complete(&self, worker: &mut Worker, done: DirDone) {
        dir::complete(&self.ctx, &mut worker.0, done);
    }

    /// Bytes of file data read from the sources so far: copied by offload or stream, not
    /// cloned (a clone reads no data).
    pub(crate) fn data_read(&self) -> u64 {
        let control = self.ctx.report.control;
        control.bytes_by(Method::Offload) + control.bytes_by(Method::Stream)
    }

    /// Ends the run: the summary of what this executor did.
    pub fn finish(self) -> Summary {
        touch_written_into(&self.ctx);
        touch_parents_written_into(&self.ctx);
        self.ctx.report.finish(self.start.elapsed())
    }
}

/// cp copies the sources in order and sets a directory's times when its copy ends. Roots
/// run in parallel here, so where another root writes into the destination directory of a
/// directory root (`s/.` merged into `d`), that directory's times are set again once all are
/// done, as cp's order leaves them: a later root's write gives it the time of that write (the
/// clock; its access time stays as set), and after earlier ones only, it has its source's.
fn touch_written_into(ctx: &Ctx<'_>) {
    if !ctx.opts.preserve.timestamps || ctx.report.control.is_stopped() {
        return;
    }
    let id = |fd: BorrowedFd<'_>| sys::fstat(fd).ok().map(|m| m.id());
    let written: Vec<(usize, (u64, u64))> = ctx
        .roots
        .iter()
        .enumerate()
        .filter(|(_, r)| r.made.load(std::sync::atomic::Ordering::Relaxed))
        .filter_map(|(i, r)| Some((i, id(r.dst_parent.as_fd())?)))
        .collect();
    if written.is_empty() {
        return;
    }
    for (i, root) in ctx.roots.iter().enumerate() {
        let Some((_, dst)) = &root.dirs else {
            continue;
        };
        let Some(dir) = id(dst.as_fd()) else {
            continue;
        };
        let into: Vec<usize> = written
            .iter()
            .filter(|&&(j, w)| j != i && w == dir)
            .map(|&(j, _)| j)
            .collect();
        let _ = if into.iter().any(|&j| j > i) {
            sys::touch_mtime(dst.as_fd())
        } else if !into.is_empty() {
            sys::futimens(dst.as_fd(), root.meta.atime, root.meta.mtime)
        } else {
            Ok(())
        };
    }
}

/// The same for the directories `--parents` gave their sources' times: cp sets them after each
/// source, and a later source that writes into one without parents of its own to set (they
/// were all there) leaves it the time of that write. The last of these in cp's order decides.
fn touch_parents_written_into(ctx: &Ctx<'_>) {
    let opts = ctx.opts;
    if !(opts.parents && opts.preserve.timestamps) || ctx.report.control.is_stopped() {
        return;
    }
    let id = |fd: BorrowedFd<'_>| sys::fstat(fd).ok().map(|m| m.id());
    // Per directory: an open handle, and its last event (Some(times): set; None: written).
    let mut last: HashMap<(u64, u64), (OwnedFd, Option<sys::Meta>)> = HashMap::new();
    for root in &ctx.roots {
        let made = root.made.load(std::sync::atomic::Ordering::Relaxed);
        if made && let Some(event) = id(root.dst_parent.as_fd()).and_then(|d| last.get_mut(&d)) {
            event.1 = None;
        }
        for parent in &root.parents {
            let name = sys::cstring(parent.dst.as_os_str().as_bytes());
            let Ok(fd) = sys::open_dir(sys::CWD, &name, false) else {
                continue;
            };
            if let Some(dir) = id(fd.as_fd()) {
                last.insert(dir, (fd, Some(parent.src)));
            }
        }
    }
    for (fd, event) in last.values() {
        let _ = match event {
            Some(src) => sys::futimens(fd.as_fd(), src.atime, src.mtime),
            None => sys::touch_mtime(fd.as_fd()),
        };
    }
}

/// Where a root goes: its destination parent's (dev, ino), and the name in it.
type Dest = ((u64, u64), Vec<u8>);

/// Why a directory root has no pass (each is reported already).
enum NoPass {
    /// Its destination directory could not be made (cp then forgets the root was named).
    Unmade,
    Failed,
}

/// A directory root: opens its source first (so a root that is not there leaves nothing
/// behind), then creates or merges into its destination and opens that. Returns the info of
/// its pass. A root we may not read is copied as cp copies it: its pass reports that it
/// cannot be listed, and its copy still gets its mode and times.
fn open_root_dirs(
    ctx: &Ctx<'_>,
    index: u32,
    root: &mut super::context::Root,
) -> Result<DirInfo, NoPass> {
    let (parent, name, follow) = (root.src_parent.as_fd(), &root.src_name, root.follow);
    let opened = match sys::open_dir(parent, name, follow) {
        Err(sys::Errno::ACCESS) => sys::open_dir_path(parent, name, follow),
        other => other,
    };
    let src = match opened {
        Ok(fd) => fd,
        Err(e) => {
            ctx.report.fail(open_error(root.src_path.clone(), e));
            return Err(NoPass::Failed);
        }
    };
    let here = Here::at_root(index, root);
    let (created, dst_setgid) = make_dst_dir(
        ctx,
        &here,
        &root.src_name,
        &root.dst_name,
        Some(root.meta),
        root.follow,
    )
    .ok_or(NoPass::Unmade)?;
    let dst = match sys::open_dir(root.dst_parent.as_fd(), &root.dst_name, false) {
        Ok(fd) => fd,
        Err(e) => {
            ctx.report.fail(crate::report::Error::sys(
                crate::report::Op::Open,
                root.dst_path.clone(),
                e,
            ));
            return Err(NoPass::Failed);
        }
    };
    let lineage = Lineage {
        sgid: root.dst.setgid,
        ancestors: Vec::new(),
    };
    root.dirs = Some((src, dst));
    Ok(DirInfo {
        created,
        dst_setgid,
        suspect: false,
        default_acl: created && root.dst.default_acl,
        acl_perm: if created { root.dst.acl_perm } else { None },
        lineage,
    })
}

/// Where a root goes: its destination parent's (dev, ino) and name.
fn dest_of(root: &Root) -> Option<Dest> {
    let parent = sys::fstat(root.dst_parent.as_fd()).ok()?;
    Some((parent.id(), root.dst_name.to_bytes().to_vec()))
}

/// A directory root named on the command line: where it goes, and what it is.
struct Named {
    /// The index the root has (or the next root has, where it was refused).
    index: u32,
    dest: Option<Dest>,
    id: (u64, u64),
    src_path: PathBuf,
    dst_path: PathBuf,
}

/// What cp says of the directory root `root` (going to `dest`) if it was named before, and
/// records it otherwise. Named before to the same place: copied once, with a warning; to
/// another place: refused, unless command-line symlinks are followed (`-H`, `-L`), where cp
/// copies it again. A root refused as a copy into itself counts as named.
fn named_before(
    opts: &Options,
    named: &mut Vec<Named>,
    dest: Option<Dest>,
    root: &Root,
    index: u32,
) -> Option<Result<Warning, Error>> {
    let id = root.meta.id();
    // cp looks at the destination first: the source itself, or not a directory, is reported
    // as such later, and the root is not counted. (Only with several sources, `dest`.)
    let there = || sys::stat_at(root.dst_parent.as_fd(), &root.dst_name, false);
    if dest.is_some() && there().is_ok_and(|m| m.id() == id || !m.is_dir()) {
        return None;
    }
    if let Some(e) = in_an_earlier_copys_way(opts, named, root) {
        return Some(Err(e));
    }
    let same = named.iter().filter(|n| n.id == id);
    // cp remembers the first destination of a directory only: under -H and -L, one copied
    // again elsewhere is not counted there.
    if dest.is_some() && same.clone().next().is_some_and(|n| n.dest == dest) {
        let src = root.src_path.clone();
        return Some(Ok(Warning::SourceTwice {
            src,
            directory: true,
        }));
    }
    let elsewhere = same.map(|n| n.dst_path.clone()).next();
    if let Some(earlier) = elsewhere.filter(|_| opts.dereference == Dereference::Never) {
        let refusal = Refusal::DirectoryTwice { earlier };
        return Some(Err(Error::refused(
            Op::Refuse,
            root.dst_path.clone(),
            refusal,
        )));
    }
    let dst_path = root.dst_path.clone();
    named.push(Named {
        index,
        dest,
        id,
        src_path: root.src_path.clone(),
        dst_path,
    });
    None
}

/// A directory root whose destination is an entry of an earlier directory root's copy
/// ("s/." then "s" or "s/up/", all into "d"): cp has copied the earlier one by then, which
/// made that entry from its source's entry of that name, and cp finds it there before
/// anything else. A symlink that leads to this root's source is the same file (but under
/// -n); anything else that is not a directory is in the way. None otherwise.
fn in_an_earlier_copys_way(opts: &Options, named: &[Named], root: &Root) -> Option<Error> {
    if named.is_empty() {
        return None;
    }
    let parent = sys::fstat(root.dst_parent.as_fd()).ok()?.id();
    let into_parent = |n: &&Named| {
        let dst = sys::cstring(n.dst_path.as_os_str().as_bytes());
        sys::stat_at(sys::CWD, &dst, true).is_ok_and(|m| m.id() == parent)
    };
    let earlier = named.iter().find(into_parent)?;
    let name = root.dst_name.to_bytes();
    let name = &name[..name.iter().rposition(|&c| c != b'/')? + 1];
    let mut entry = earlier.src_path.as_os_str().as_bytes().to_vec();
    entry.push(b'/');
    entry.extend_from_slice(name);
    let entry = sys::cstring(&entry);
    let follow = opts.dereference == Dereference::Always;
    let made = sys::stat_at(sys::CWD, &entry, follow).ok()?;
    if made.is_dir() {
        return None;
    }
    let src = root.src_path.clone();
    let dst = root.dst_path.clone();
    // The copied symlink has the same target, read from the destination's directory.
    let leads_here = made.is_symlink()
        && opts.overwrite != Overwrite::NoClobber
        && sys::readlink(sys::CWD, &entry).is_ok_and(|target| {
            sys::stat_at(root.dst_parent.as_fd(), &target, true)
                .is_ok_and(|m| m.id() == root.meta.id())
        });
    Some(if leads_here {
        Error::refused(Op::Refuse, src, Refusal::SameFile { dst })
    } else {
        Error::refused(Op::CreateDir, dst, Refusal::NonDirectoryInTheWay { src })
    })
}

/// Resolves one command-line pair to its root, making the source's parents at the
/// destination first with `--parents`. A failure tells whether cp counts the source as
/// named (it does not where its parents could not be made).
fn resolve_root(
    opts: &Options,
    pair: &CopyPair,
    report: &Reporter<'_>,
    new_dst: &mut bool,
) -> Result<Root, (Error, bool)> {
    let parents = if opts.parents {
        // cp has not looked at the source yet: it is not counted as named.
        super::roots::make_parents(&pair.src, &pair.dst, opts, new_dst).map_err(|e| (e, false))?
    } else {
        Vec::new()
    };
    // Without -r, cp omits a directory before it looks at the destination.
    if opts.recursive && super::roots::dot_after_new_parent(&pair.src, &parents) {
        super::roots::finish_parents(&parents, opts, report);
        let dst = super::roots::trimmed(&pair.dst);
        return Err((Error::sys(Op::CreateDir, dst, sys::Errno::EXIST), true));
    }
    // cp gives the parents it made their attributes also where the copy then fails.
    let mut root = Root::resolve_named(opts, pair).map_err(|e| {
        super::roots::finish_parents(&parents, opts, report);
        (e, true)
    })?;
    root.parents = parents;
    Ok(root)
}
/// Where [`Executor::with_hooks`] puts the roots it takes in.
struct Queue<'q> {
    items: &'q mut Vec<WorkItem>,
    /// Where each root goes (see [`Executor::with_hooks`]).
    dests: &'q mut Vec<Option<Dest>>,
    /// Every directory root so far, copied or refused as a copy into itself.
    named: &'q mut Vec<Named>,
}

impl Queue<'_> {
    /// Queues `root` (the `index`th): a directory as its pass, a file after `earlier_item`
    /// (an earlier root of the same destination name) as its follower, else as a work item.
    fn add(
        self,
        ctx: &mut Ctx<'_>,
        mut root: Root,
        index: u32,
        dest: Option<Dest>,
        earlier_item: Option<usize>,
    ) {
        let stat = Some(Stat::from(root.meta));
        let kind = if root.meta.is_dir() {
            let dest = dest.clone();
            match dir_root(ctx, self.named, dest, root, index, earlier_item, self.items) {
                Some((made, kind)) => {
                    root = made;
                    // Made now, in its parent (later --parents sources see that write).
                    if matches!(&kind, WorkKind::Dir(info) if info.created) {
                        root.made.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    kind
                }
                None => return,
            }
        } else if let Some(at) = earlier_item {
            let lead = self.items[at].root as usize;
            ctx.roots[lead].followers.push(index);
            self.dests.push(None);
            ctx.roots.push(root);
            return;
        } else {
            WorkKind::Root
        };
        self.dests.push(dest);
        ctx.roots.push(root);
        self.items.push(WorkItem {
            root: index,
            path: Vec::new(),
            kind,
            stat,
        });
    }
}

/// A root that failed before it was copied. cp counts a file source as named before it looks
/// at the destination: named again, it is skipped with a warning (without backups). cp copies
/// its sources in order: under -i, the questions about the files before this one come before
/// its failure. `pairs` begins with this root's.
fn root_failed(
    ctx: &Ctx<'_>,
    items: &mut Vec<WorkItem>,
    seen_files: &mut Vec<FileKey>,
    pairs: &[CopyPair],
    e: Error,
    counted: bool,
) {
    let opts = ctx.opts;
    let pair = &pairs[0];
    let id = (counted && opts.backup.is_none()).then(|| file_source_id(opts, &pair.src));
    let twice = match id {
        Some(Some(id)) if seen_files.contains(&id) => true,
        Some(Some(id)) => {
            seen_files.push(id);
            false
        }
        _ => false,
    };
    if opts.interactive {
        run_files_now(ctx, items, &pairs[1..]);
    }
    if twice {
        let src = pair.src.clone();
        ctx.report.warn(Warning::SourceTwice {
            src,
            directory: false,
        });
    } else {
        let (src, dst) = (|| pair.src.clone(), || pair.dst.clone());
        ctx.report.entry_failed(src, dst, e);
    }
}

/// Copies the file roots queued so far, in order, before the pool runs (a file it splits has
/// no helpers: its splitter copies every range). A root whose destination a `later` source
/// names again stays queued, so that the later one still meets it as just made; the same
/// file named again need not (it is skipped as named twice, without backups).
fn run_files_now(ctx: &Ctx<'_>, items: &mut Vec<WorkItem>, later: &[CopyPair]) {
    let (files, rest) = std::mem::take(items).into_iter().partition(|i| {
        let root = &ctx.roots[i.root as usize];
        let twice = |p: &CopyPair| {
            ctx.opts.backup.is_none()
                && root_file_key(root, &mut None)
                    .is_some_and(|k| file_source_id(ctx.opts, &p.src) == Some(k))
        };
        let met = |p: &CopyPair| p.dst == root.dst_path && !twice(p);
        matches!(i.kind, WorkKind::Root) && !later.iter().any(met)
    });
    *items = rest;
    for item in files {
        dir::root_entry(ctx, &mut Buffers::new(), item.root, &mut |_| {});
    }
}

/// A directory root of [`Executor::with_hooks`]: refused when named before into the same
/// place or copied into itself; else its destination is made (after an earlier root of the
/// same destination name, which runs first) and its pass is the work. None when there is
/// nothing to run.
fn dir_root(
    ctx: &Ctx<'_>,
    named: &mut Vec<Named>,
    dest: Option<Dest>,
    root: Root,
    index: u32,
    earlier_item: Option<usize>,
    items: &mut Vec<WorkItem>,
) -> Option<(Root, WorkKind)> {
    // The same directory named again into the same place: cp copies it once, and says so (a
    // backup would otherwise keep the first copy's files).
    let named_before_this = named.len();
    if let Some(e) = named_before(ctx.opts, named, dest, &root, index) {
        match e {
            Ok(warning) => ctx.report.warn(warning),
            Err(e) => ctx.report.fail(e),
        }
        // cp gives the `--parents` directories their attributes after the copy all the same.
        root.finish_parents(ctx.opts, &ctx.report);
        return None;
    }
    let mut root = root;
    if let Some(at) = earlier_item {
        // The earlier one runs first, now, before this directory is made or refused: what
        // it made is what cp then finds at the destination (a symlink to the source there
        // is the same file, not a copy into itself).
        let item = items.remove(at);
        // Before the pool runs: a file it splits has no helpers, its splitter copies every
        // range.
        dir::root_entry(ctx, &mut Buffers::new(), item.root, &mut |_| {});
        root.look_again_into_itself();
    }
    // cp finds a copy into itself only once it has made the copy: where it cannot make it,
    // it forgets the directory, which named again is tried again.
    let unmakeable = root.into_itself
        && sys::stat_at(root.dst_parent.as_fd(), &root.dst_name, false).is_err()
        && !sys::may_write(root.dst_parent.as_fd(), c".");
    if root.into_itself {
        ctx.report.fail(root.refusal_into_itself());
        if unmakeable {
            named.truncate(named_before_this);
        }
        // cp gives the `--parents` directories it made their attributes all the same.
        root.finish_parents(ctx.opts, &ctx.report);
        return None;
    }
    let info = open_root_dirs(ctx, index, &mut root);
    // Nothing more is made in its parents.
    root.finish_parents(ctx.opts, &ctx.report);
    match info {
        Ok(info) => Some((root, WorkKind::Dir(info))),
        Err(NoPass::Unmade) => {
            // cp forgets a directory it could not make: named again, it is tried again.
            named.truncate(named_before_this);
            None
        }
        Err(NoPass::Failed) => None,
    }
}
