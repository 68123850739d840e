//! The executor: runs work items for a scheduler.

use super::context::{Buffers, Ctx, Here, Root};
use super::dir::{self, make_dst_dir};
use super::hooks::{HookSet, Hooks, NoHooks};
use super::roots::{CopyPair, file_source_id, open_error, root_file_key};
use super::split;
use super::work::{Dest, Named};
use super::work::{DirDone, DirInfo, Lineage, RangeDone, Stat, WorkItem, WorkKind};
use crate::options::{Dereference, Options};
use crate::place::links::LinkGroups;
use crate::report::{Control, Error, Method, Observer, Op, Reporter, Summary, Warning};
use crate::sys;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
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
        // The sources cp counts as named so far (see [`Named`]).
        let mut named = Named::default();
        // cp's flag that a --parents destination is new, kept from one source to the next.
        let mut new_dst = false;
        // The directories the roots so far write into (only looked at for --parents times).
        let mut written: Vec<(u64, u64)> = Vec::new();
        for (n, pair) in pairs.iter().enumerate() {
            let mut root = match resolve_root(&ctx, pair, &named, &written, &mut new_dst) {
                Ok(mut root) => {
                    parents_made_early(&ctx, &mut root);
                    if opts.parents && opts.preserve.timestamps {
                        written.extend(sys::fstat(root.dst_parent.as_fd()).map(|m| m.id()));
                    }
                    root
                }
                // Making a non-directory where its parent is missing, or at "d/" naming a
                // dangling symlink: cp names it on its -v line before the call fails.
                Err((e, counted)) => {
                    root_failed(&ctx, &mut items, &mut named, &pairs[n..], e, counted);
                    continue;
                }
            };
            root.taken_new = new_dst;
            let index = ctx.roots.len() as u32;
            // The same file named again, wherever it goes: cp skips it with a warning, in its
            // turn (see `dir::root_entry`).
            root.named_twice = pairs.len() > 1 && named.file_again(opts, &root, index);
            let dest = (pairs.len() > 1).then(|| dest_of(&root)).flatten();
            // An earlier source that is not a directory goes to the same name: cp copies in
            // command-line order, and the later one must find what the earlier one made.
            // (A file named twice writes nothing: it waits for no earlier root.)
            let dest = dest.filter(|_| !root.named_twice);
            let earlier = dest
                .as_ref()
                .and_then(|dest| dests.iter().position(|d| d.as_ref() == Some(dest)));
            // A destination cp takes to be new is made without a look (after cp's check
            // for a source named twice), also where an earlier file (named again under
            // -b, or another one of that name) went: what that one left there is found.
            let file_lead = earlier.is_some_and(|e| !ctx.roots[e].meta.is_dir());
            let id = root.meta.id();
            // The same directory named before to this place, after it went first elsewhere
            // (under -H and -L, see `Named::dir_again`), is copied again: cp makes it without
            // a look where it takes it to be new, and finds it there.
            let again_here = earlier.is_some_and(|e| ctx.roots[e].meta.id() == id)
                && named.first_elsewhere(id, &dest);
            let dir_lead = earlier.is_some() && !file_lead && !again_here;
            let twice = dir_lead
                || root.named_twice
                || named.went(id, &dest)
                || root.meta.is_dir() && named.refused_again(opts, id);
            if new_dst && !twice {
                if file_lead {
                    run_files_now(&ctx, &mut items, &[]);
                }
                if let Some(e) = super::roots::made_over(opts, &root) {
                    // The files before it, and their failures, come first (a rare case:
                    // the pool waits for them).
                    run_files_now(&ctx, &mut items, &pairs[n + 1..]);
                    root.finish_parents(opts, &ctx.report);
                    // cp names a non-directory on its -v line before it makes it.
                    let (src, dst) = (|| root.src_path.clone(), || root.dst_path.clone());
                    ctx.report.entry_failed(src, dst, e);
                    continue;
                }
            }
            let earlier_item = earlier_item(&mut ctx, &items, earlier, &mut root);
            if let (Some(e), None, true) = (earlier, earlier_item, file_lead) {
                // The earlier one ran already (see `run_files_now`): what it made, this one
                // will not replace.
                just_made_by(&ctx, e, &root);
            }
            let queue = Queue {
                items: &mut items,
                dests: &mut dests,
                named: &mut named,
            };
            queue.add(&mut ctx, root, index, dest, earlier_item);
        }
        ctx.overlapping_roots = super::context::roots_overlap(&ctx.roots);
        ctx.roots_share_a_file = super::context::roots_share_a_file(&ctx.roots);
        ctx.named = named;
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
            let mut root = Root::resolve(opts, pair, Some(control))?;
            if root.meta.is_dir() {
                // As the first process opened them: one the user may not read by an O_PATH
                // handle.
                let src = open_dir_or_path(root.src_parent.as_fd(), &root.src_name, root.follow)
                    .map_err(|e| open_error(root.src_path.clone(), e))?;
                let dst = open_dir_or_path(root.dst_parent.as_fd(), &root.dst_name, false)
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

    /// The sources this executor counts as named, as cp does for its "specified more than
    /// once" rules: what [`Executor::with_named`] needs in another process.
    pub fn named(&self) -> Named {
        self.ctx.named.clone()
    }

    /// In an executor made by [`Executor::attach`]: `named` is the first executor's
    /// [`Executor::named`], so that a root named twice is skipped, and a directory root named
    /// before is not copied again below a later one, whichever process runs it. Call it
    /// before the first [`Executor::run`].
    pub fn with_named(mut self, named: Named) -> Self {
        for &i in &named.files_twice {
            if let Some(root) = self.ctx.roots.get_mut(i as usize) {
                root.named_twice = true;
            }
        }
        self.ctx.named = named;
        self
    }

    /// For each root (by index), the later roots with the same destination that follow it:
    /// cp copies them right after it, and refuses to overwrite what it just made. What
    /// [`Executor::with_followers`] needs in another process.
    pub fn followers(&self) -> Vec<Vec<u32>> {
        self.ctx.roots.iter().map(|r| r.followers.clone()).collect()
    }

    /// In an executor made by [`Executor::attach`]: `followers` are the first executor's
    /// [`Executor::followers`], so that whichever process runs a root also runs the roots
    /// that follow it. Call it before the first [`Executor::run`].
    pub fn with_followers(mut self, followers: Vec<Vec<u32>>) -> Self {
        for (root, f) in self.ctx.roots.iter_mut().zip(followers) {
            root.followers = f;
        }
        self
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

    /// Whether the sources overlap (one lies in another's tree) or two are one file: cp
    /// copies them one after another, and what a later one finds (and which of them names
    /// an entry on its `-v` line, or links a file met twice) depends on that order, so they
    /// run on one worker.
    pub(crate) fn in_order(&self) -> bool {
        self.ctx.overlapping_roots || self.ctx.roots_share_a_file
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
/// clock; its access time stays as set), and after earlier ones only, or ones that wrote
/// nothing there, it has its source's.
fn touch_written_into(ctx: &Ctx<'_>) {
    if !ctx.opts.preserve.timestamps || ctx.report.control.is_stopped() {
        return;
    }
    if ctx.roots.len() < 2 || !ctx.roots.iter().any(|r| r.dirs.is_some()) {
        return;
    }
    let id = |fd: BorrowedFd<'_>| sys::fstat(fd).ok().map(|m| m.id());
    // Every root's destination directory, and whether it wrote there: one that wrote nothing
    // (`-n` finding its entry there) may still have disturbed its mtime with its marker,
    // which cp's order of sources does not know.
    let into_dirs: Vec<(usize, (u64, u64), bool)> = ctx
        .roots
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let made = r.made.load(std::sync::atomic::Ordering::Relaxed)
                || r.emptied.load(std::sync::atomic::Ordering::Relaxed);
            Some((i, id(r.dst_parent.as_fd())?, made))
        })
        .collect();
    // Under -n or -u, a later root that is an entry of an earlier directory root's source,
    // copied under its own name into that root's destination (`s/. s/x d`), finds there in
    // cp's order what the directory's copy made, and writes nothing; here it may have run
    // first.
    use crate::options::Overwrite as O;
    let skips = matches!(ctx.opts.overwrite, O::NoClobber | O::Update | O::NoneFail);
    let made_by = |src: BorrowedFd<'_>, j: usize| {
        let r = &ctx.roots[j];
        skips && r.src_name == r.dst_name && id(r.src_parent.as_fd()) == id(src)
    };
    for (i, root) in ctx.roots.iter().enumerate() {
        let Some((src, dst)) = &root.dirs else {
            continue;
        };
        let Some(dir) = id(dst.as_fd()) else {
            continue;
        };
        let into: Vec<(usize, bool)> = into_dirs
            .iter()
            .filter(|&&(j, w, _)| j != i && w == dir)
            .map(|&(j, _, made)| (j, made))
            .collect();
        let wrote = into.iter().any(|&(_, made)| made);
        // A directory copied onto itself (`-l s/. s`) has as its source's mtime, when cp
        // looks at it in its turn, that of an earlier root's write.
        let onto_itself = root.meta.id() == dir;
        let later = into
            .iter()
            .any(|&(j, made)| made && j > i && !made_by(src.as_fd(), j));
        let _ = if later || onto_itself && wrote {
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
/// were all there, or it failed on a deeper one first), or makes a parent in it, leaves it the
/// time of that write, and a directory root copied onto one gives it that root's times. The
/// last of these in cp's order decides.
fn touch_parents_written_into(ctx: &Ctx<'_>) {
    let opts = ctx.opts;
    if !(opts.parents && opts.preserve.timestamps) || ctx.report.control.is_stopped() {
        return;
    }
    let id = |fd: BorrowedFd<'_>| sys::fstat(fd).ok().map(|m| m.id());
    // Per directory: an open handle, and its last event (Some(times): set; None: written).
    let mut last: HashMap<(u64, u64), (OwnedFd, Option<sys::Meta>)> = HashMap::new();
    for root in &ctx.roots {
        // A directory this root's `--parents` made, before its copy: the directory holding
        // it was written into, after the times an earlier source gave it.
        for parent in root.parents.iter().filter(|p| p.created && !p.early) {
            let Some(up) = parent.dst.parent() else {
                continue;
            };
            let up = sys::cstring(up.as_os_str().as_bytes());
            let up = sys::stat_at(sys::CWD, &up, true).ok().map(|m| m.id());
            if let Some(event) = up.and_then(|d| last.get_mut(&d)) {
                event.1 = None;
            }
        }
        let made = root.made.load(std::sync::atomic::Ordering::Relaxed);
        if made && let Some(event) = id(root.dst_parent.as_fd()).and_then(|d| last.get_mut(&d)) {
            event.1 = None;
        }
        // A directory copied onto one: its copy ends by setting its own source's times.
        let onto = root.dirs.as_ref().and_then(|(_, d)| id(d.as_fd()));
        if let Some(event) = onto.and_then(|d| last.get_mut(&d)) {
            event.1 = Some(root.meta);
        }
        let timed = root
            .parents
            .iter()
            .filter(|p| p.timed.load(std::sync::atomic::Ordering::Relaxed));
        for parent in timed {
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

/// Why a directory root has no pass (each is reported already).
enum NoPass {
    /// Its destination directory could not be made (cp then forgets the root was named).
    Unmade,
    Failed,
}

/// Opens the directory `name` of `parent` to list it, or where the user may not read it, as
/// an `O_PATH` handle that still reaches it (cp works on such a root by name).
fn open_dir_or_path(
    parent: BorrowedFd<'_>,
    name: &std::ffi::CStr,
    follow: bool,
) -> sys::Result<OwnedFd> {
    match sys::open_dir(parent, name, follow) {
        Err(sys::Errno::ACCESS) => sys::open_dir_path(parent, name, follow),
        other => other,
    }
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
    let src = match open_dir_or_path(parent, name, follow) {
        Ok(fd) => fd,
        Err(e) => {
            ctx.report.fail(open_error(root.src_path.clone(), e));
            return Err(NoPass::Failed);
        }
    };
    let here = Here::at_root(index, root);
    let made = make_dst_dir(
        ctx,
        &here,
        &root.src_name,
        &root.dst_name,
        Some(root.meta),
        root.follow,
    )
    .ok_or(NoPass::Unmade)?;
    // One we may not list (made so by an earlier root, or merged into) is still copied into,
    // as cp copies into it by name: its entries fail, not the directory.
    let dst = match open_dir_or_path(root.dst_parent.as_fd(), &root.dst_name, false) {
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
    let created = made.created;
    Ok(DirInfo {
        created,
        dst_setgid: made.setgid,
        dst_sgid_foreign: made.sgid_foreign,
        made_perm: made.made_perm,
        suspect: false,
        default_acl: created && root.dst.default_acl,
        acl_perm: if created { root.dst.acl_perm } else { None },
        lineage,
    })
}

/// The directory root `root` has just made its destination: where an earlier directory
/// root's walk copies the same entry to the same place (`cp -r s/. s/x/ d`: `s/./x` to
/// `d/./x`), cp made it in that walk, before it came to this root, and named it there under
/// -v. The lines of the directories this root makes go to that walk (see
/// [`Root::made_early`]).
fn made_early(ctx: &Ctx<'_>, root: &mut Root) {
    if !ctx.report.wants_entries() {
        return;
    }
    let id = |fd: BorrowedFd<'_>| sys::fstat(fd).ok().map(|m| m.id());
    let (Some(src_parent), Some(dst_parent)) =
        (id(root.src_parent.as_fd()), id(root.dst_parent.as_fd()))
    else {
        return;
    };
    // The name in its source directory (less the slashes that name it as one).
    let name = root.src_name.to_bytes();
    let name = &name[..name.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1)];
    let walked = (name == root.dst_name.to_bytes())
        .then(|| walked_dir(ctx, root.src_parent.as_fd(), &sys::cstring(name)))
        .flatten();
    let made = root.dirs.as_ref().and_then(|(_, d)| id(d.as_fd()));
    let (Some(src), Some(made)) = (walked, made) else {
        return;
    };
    // Under -L, an entry that leads to the directory it is in, or to the earlier walk's own
    // source, is one that walk refuses as a cyclic symlink: it makes nothing there.
    let cyclic = |earlier: u32| src == src_parent || ctx.root(earlier).meta.id() == src;
    if let Some(earlier) = early_walk(ctx, src_parent, dst_parent).filter(|&e| !cyclic(e)) {
        root.made_early = Some(earlier);
        let mut early = ctx.early_dirs.lock().unwrap_or_else(|e| e.into_inner());
        early.insert(made, (earlier, src));
    }
}

/// `--parents`: the directories `root` made on the way that an earlier root's walk makes too
/// (`cp -r --parents s s/./x/y d`: `d/s/./x`) are named by that walk, as cp names them (see
/// [`made_early`]), and given their times by it.
fn parents_made_early(ctx: &Ctx<'_>, root: &mut Root) {
    let wanted = ctx.report.wants_entries() || ctx.opts.preserve.timestamps;
    if !wanted || !root.parents.iter().any(|p| p.created) {
        return;
    }
    let stat = |p: &std::path::Path| {
        let path = sys::cstring(p.as_os_str().as_bytes());
        sys::stat_at(sys::CWD, &path, true).ok().map(|m| m.id())
    };
    let dir_of = |p: &std::path::Path| match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    for parent in root.parents.iter_mut().filter(|p| p.created) {
        let (src, dst) = (&parent.src_path, &parent.dst);
        let named = src.file_name().is_some() && src.file_name() == dst.file_name();
        let (Some(src_parent), Some(dst_parent), Some(made)) =
            (stat(&dir_of(src)), stat(&dir_of(dst)), stat(dst))
        else {
            continue;
        };
        let name = sys::cstring(src.file_name().unwrap_or_default().as_bytes());
        let dir = sys::open_dir_path(
            sys::CWD,
            &sys::cstring(dir_of(src).as_os_str().as_bytes()),
            true,
        );
        let walked = dir.ok().and_then(|d| walked_dir(ctx, d.as_fd(), &name));
        let (true, Some(src)) = (named, walked) else {
            continue;
        };
        // A walk that copies nothing of its source's parent does not make it (cp's
        // parents do).
        if super::roots::walk_copies_nothing(&dir_of(&parent.src_path)) {
            continue;
        }
        if let Some(earlier) = early_walk(ctx, src_parent, dst_parent) {
            parent.early = true;
            let mut early = ctx.early_dirs.lock().unwrap_or_else(|e| e.into_inner());
            early.insert(made, (earlier, src));
        }
    }
}

/// The (dev, ino) of the directory `name` in `dir` as a walk meets it: a symlink only where
/// the walk follows them.
fn walked_dir(ctx: &Ctx<'_>, dir: BorrowedFd<'_>, name: &std::ffi::CStr) -> Option<(u64, u64)> {
    let follows = ctx.opts.dereference == Dereference::Always;
    let m = sys::stat_at(dir, name, follows).ok()?;
    m.is_dir().then(|| m.id())
}

/// The earlier directory root whose walk copies the source directory `src` into the
/// destination directory `dst` (its own root, or a directory made early for it).
fn early_walk(ctx: &Ctx<'_>, src: (u64, u64), dst: (u64, u64)) -> Option<u32> {
    let id = |fd: BorrowedFd<'_>| sys::fstat(fd).ok().map(|m| m.id());
    // (A root's own stat is its source directory's: no call for the roots of other sources.)
    let root = ctx.roots.iter().position(|r| {
        let dst_dir = r.dirs.as_ref().map(|(_, d)| d.as_fd());
        r.meta.id() == src && dst_dir.is_some_and(|d| id(d) == Some(dst))
    });
    let early = ctx.early_dirs.lock().unwrap_or_else(|e| e.into_inner());
    root.map(|r| r as u32)
        .or_else(|| early.get(&dst).filter(|&&(_, s)| s == src).map(|&(r, _)| r))
}

/// Whether the sources overlap once `root` joins `roots` (then they all run in order, see
/// [`Executor::in_order`]).
fn overlap_with(roots: &[Root], root: &Root) -> bool {
    let mut with = roots.iter().collect::<Vec<_>>();
    with.push(root);
    super::context::roots_overlap_refs(&with)
}

/// Where a root goes: its destination parent's (dev, ino) and name.
fn dest_of(root: &Root) -> Option<Dest> {
    let parent = sys::fstat(root.dst_parent.as_fd()).ok()?;
    Some((parent.id(), root.dst_name.to_bytes().to_vec()))
}

/// Resolves one command-line pair to its root, making the source's parents at the
/// destination first with `--parents`. A failure tells whether cp counts the source as
/// named (it does not where its parents could not be made).
fn resolve_root(
    ctx: &Ctx<'_>,
    pair: &CopyPair,
    named: &Named,
    written: &[(u64, u64)],
    new_dst: &mut bool,
) -> Result<Root, (Error, bool)> {
    let (opts, report) = (ctx.opts, &ctx.report);
    let walked = |s: &Path, d: &Path| walked_by_earlier(&ctx.roots, opts, s, d);
    let mut parents = if opts.parents {
        // cp has not looked at the source yet: it is not counted as named.
        super::roots::make_parents(&pair.src, &pair.dst, opts, new_dst, &walked)
            .map_err(|e| (e, false))?
    } else {
        Vec::new()
    };
    // cp looks at a parent's source after the earlier sources are copied: one that an earlier
    // source wrote into has, then, the time of that write (here it may not have run yet).
    for parent in &mut parents {
        if written.contains(&parent.src.id()) {
            parent.src.mtime = now();
        }
    }
    // cp made the copy of an earlier directory it refused as a copy into itself where the
    // first of these was just made: it found that there, and takes nothing below it as new.
    let first = parents.iter().position(|p| p.created);
    let found = first.is_some_and(|i| named.copied_into_itself_at(&parents[i].dst));
    if found {
        *new_dst = false;
        // Where that is the destination's own parent, cp found the parent there and made
        // and looked at none (no attributes given, no line): what was made here stays as made.
        if first == Some(parents.len() - 1) {
            parents.clear();
        }
    }
    // Without -r, cp omits a directory before it looks at the destination. One it copied
    // before elsewhere it refuses again before it makes anything (see `dir_root`).
    let copied_before = || {
        sys::stat_at(
            sys::CWD,
            &sys::cstring(pair.src.as_os_str().as_bytes()),
            true,
        )
        .is_ok_and(|m| m.is_dir() && named.refused_again(opts, m.id()))
    };
    if opts.recursive
        && !found
        && super::roots::dot_after_new_parent(&pair.src, &parents)
        && !copied_before()
    {
        super::roots::finish_parents(&parents, opts, report);
        let dst = super::roots::trimmed(&pair.dst);
        return Err((Error::sys(Op::CreateDir, dst, sys::Errno::EXIST), true));
    }
    // cp gives the parents it made their attributes also where the copy then fails.
    let mut root = Root::resolve_named(opts, pair, report.control).map_err(|e| {
        super::roots::finish_parents(&parents, opts, report);
        (e, true)
    })?;
    root.parents = parents;
    Ok(root)
}

/// `--parents`: whether the walk of one of the directory `roots` so far copies the source
/// directory `src` to `dst` (the same path below the root's source and its copy).
fn walked_by_earlier(roots: &[Root], opts: &Options, src: &Path, dst: &Path) -> bool {
    opts.recursive
        && roots.iter().any(|r| {
            r.meta.is_dir()
                && match (src.strip_prefix(&r.src_path), dst.strip_prefix(&r.dst_path)) {
                    (Ok(s), Ok(d)) => s == d,
                    _ => false,
                }
        })
}

/// The time now, as a file's mtime.
fn now() -> (i64, u32) {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_secs() as i64, t.subsec_nanos())
}

/// The queued item of the `earlier` root that goes to the same destination name as `root`,
/// which `root` is queued behind. A directory root queued since, whose walk may replace what
/// the earlier one made, runs before `root` in cp's order: where the sources overlap (and so
/// run in order) `root`, a file, is queued on its own, after it, and led by that root.
fn earlier_item(
    ctx: &mut Ctx<'_>,
    items: &[WorkItem],
    earlier: Option<usize>,
    root: &mut super::context::Root,
) -> Option<usize> {
    let at = earlier.and_then(|e| {
        items
            .iter()
            .position(|i| i.root == e as u32 && matches!(i.kind, WorkKind::Root))
    })?;
    if root.meta.is_dir() {
        return Some(at);
    }
    let walk_between = items[at + 1..]
        .iter()
        .any(|i| matches!(i.kind, WorkKind::Dir(_)));
    if walk_between && overlap_with(&ctx.roots, root) {
        let lead = items[at].root;
        ctx.roots[lead as usize].leads = true;
        root.lead = Some(lead);
        return None;
    }
    Some(at)
}

/// Where [`Executor::with_hooks`] puts the roots it takes in.
struct Queue<'q> {
    items: &'q mut Vec<WorkItem>,
    /// Where each root goes (see [`Executor::with_hooks`]).
    dests: &'q mut Vec<Option<Dest>>,
    /// The sources named so far.
    named: &'q mut Named,
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
                        made_early(ctx, &mut root);
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
    named: &mut Named,
    pairs: &[CopyPair],
    e: Error,
    counted: bool,
) {
    let pair = &pairs[0];
    let twice = counted && named.failed_file_again(ctx.opts, &pair.src);
    if ctx.opts.interactive {
        // Every question before this failure, also about a file a later source names again
        // (which then meets it as just made, see `just_made_by`). -i runs in one process.
        // Files queued after a directory's walk wait for it, as cp copies in order: their
        // questions then follow this failure.
        let walks = items.iter().position(|i| !matches!(i.kind, WorkKind::Root));
        let mut before: Vec<WorkItem> = items.drain(..walks.unwrap_or(items.len())).collect();
        run_files_now(ctx, &mut before, &[]);
        items.splice(0..0, before);
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
/// names again stays queued, so that the later one still meets it as just made (and runs
/// with it wherever it runs); the same file named again need not (it is skipped as named
/// twice, without backups). With no `later` ones, all run (see [`just_made_by`]).
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

/// `root` goes where the file root `lead` (and its followers) went, which ran already: where
/// one of them made the destination, `root` will not replace it (cp's "will not overwrite
/// just-created"), as a follower run after them would not.
fn just_made_by(ctx: &Ctx<'_>, lead: usize, root: &Root) {
    let made = |i: usize| ctx.roots[i].just_made();
    let lead_root = &ctx.roots[lead];
    let mut chain = std::iter::once(lead).chain(lead_root.followers.iter().map(|&f| f as usize));
    if chain.any(made) {
        if let Ok(m) = sys::stat_at(lead_root.dst_parent.as_fd(), &lead_root.dst_name, false) {
            let _ = root.just_created.set(m.id());
        }
    }
}

/// A directory root of [`Executor::with_hooks`]: refused when named before into the same
/// place or copied into itself; else its destination is made (after an earlier root of the
/// same destination name, which runs first) and its pass is the work. None when there is
/// nothing to run.
fn dir_root(
    ctx: &Ctx<'_>,
    named: &mut Named,
    dest: Option<Dest>,
    root: Root,
    index: u32,
    earlier_item: Option<usize>,
    items: &mut Vec<WorkItem>,
) -> Option<(Root, WorkKind)> {
    let mut root = root;
    if let Some(at) = earlier_item {
        // The earlier one runs first, now, before this directory is made or refused, also
        // as one named before: what it made is what cp then finds at the destination, before
        // it looks for the directory among those it copied (a symlink to the source there is
        // the same file, not a copy into itself nor a directory named twice).
        let item = items.remove(at);
        // Before the pool runs: a file it splits has no helpers, its splitter copies every
        // range.
        dir::root_entry(ctx, &mut Buffers::new(), item.root, &mut |_| {});
        root.look_again_into_itself();
    }
    // The same directory named again into the same place: cp copies it once, and says so (a
    // backup would otherwise keep the first copy's files).
    let mark = named.mark();
    if let Some(e) = named.dir_again(ctx.opts, dest, &root, index) {
        match e {
            Ok(warning) => ctx.report.warn(warning),
            Err(e) => ctx.report.fail(e),
        }
        // cp gives the `--parents` directories their attributes after the copy all the same.
        root.finish_parents(ctx.opts, &ctx.report);
        return None;
    }
    if let Some(e) = named.refuse_into_itself(&root, mark) {
        ctx.report.fail(e);
        // cp gives the `--parents` directories it made their attributes all the same.
        root.finish_parents(ctx.opts, &ctx.report);
        return None;
    }
    if named.meets_a_copy_into_itself(ctx.opts, &root) {
        ctx.report.fail(root.refusal_into_itself());
    }
    let info = open_root_dirs(ctx, index, &mut root);
    // Nothing more is made in its parents.
    root.finish_parents(ctx.opts, &ctx.report);
    match info {
        Ok(info) => Some((root, WorkKind::Dir(info))),
        Err(NoPass::Unmade) => {
            named.forget_since(mark);
            None
        }
        Err(NoPass::Failed) => None,
    }
}
