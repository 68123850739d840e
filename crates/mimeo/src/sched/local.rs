//! The local scheduler: a bounded pool of threads ([`pool`]) with completion
//! counting for directories.

use super::Scheduler;
use super::grow::Grow;
use super::pool::{self, Sizing, Spawner};
use crate::options::Options;
use crate::report::{Control, Observer, Summary};
use crate::sys;
use crate::tree::{
    CopyPair, Executor, Hooks, NoHooks, Passes, Roots, Visitor, Walk, WalkOptions, WorkItem,
    WorkKind,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Copies every pair, sharing one hard-link map across them. Errors are reported to the
/// observer and counted; the run goes on.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
/// std::fs::create_dir_all(src.join("sub"))?;
/// std::fs::write(src.join("sub/file"), b"data")?;
/// let summary = mimeo::copy(
///     &[mimeo::CopyPair::new(&src, &dst)],
///     &mimeo::Options::archive(),
///     &mimeo::NoObserver,
/// );
/// assert_eq!((summary.files, summary.directories, summary.errors), (1, 2, 0));
/// assert_eq!(std::fs::read(dst.join("sub/file"))?, b"data");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn copy(pairs: &[CopyPair], opts: &Options, observer: &dyn Observer) -> Summary {
    copy_with(pairs, opts, observer, &Control::new())
}

/// [`copy`] with a [`Control`]: live progress for another thread, and a stop switch. A
/// stopped run removes the entries it had in progress and reports `interrupted`.
///
/// ```
/// use mimeo::{Control, CopyPair, Event, Observer, Options};
/// use std::sync::Mutex;
///
/// /// Keeps the destination of every file copied.
/// #[derive(Default)]
/// struct Log(Mutex<Vec<std::path::PathBuf>>);
///
/// impl Observer for Log {
///     fn event(&self, event: Event) {
///         if let Event::Copied { dst, .. } = event {
///             self.0.lock().unwrap().push(dst);
///         }
///     }
/// }
///
/// # let dir = tempfile::tempdir()?;
/// # let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
/// # std::fs::create_dir(&src)?;
/// # std::fs::write(src.join("a"), b"a")?;
/// let (log, control) = (Log::default(), Control::new());
/// let summary = std::thread::scope(|s| {
///     // Another thread may watch `control.bytes_done()` or call `control.stop()`.
///     s.spawn(|| mimeo::copy_with(&[CopyPair::new(&src, &dst)], &Options::archive(), &log, &control))
///         .join()
///         .unwrap()
/// });
/// assert!(!summary.interrupted);
/// assert_eq!(log.0.lock().unwrap().len(), 2); // the file, then its directory
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn copy_with(
    pairs: &[CopyPair],
    opts: &Options,
    observer: &dyn Observer,
    control: &Control,
) -> Summary {
    copy_hooked(pairs, opts, observer, control, &NoHooks)
}

/// [`copy_with`] with [`Hooks`]: the caller leaves out entries of each directory
/// ([`Hooks::ignore`]) or copies some kinds of entries itself ([`Hooks::copy_entry`]), as
/// `shutil.copytree` does with its `ignore` and `copy_function`. See [`Hooks`] for an
/// example.
pub fn copy_hooked(
    pairs: &[CopyPair],
    opts: &Options,
    observer: &dyn Observer,
    control: &Control,
    hooks: &dyn Hooks,
) -> Summary {
    let (exec, initial) = Executor::with_hooks(pairs, opts, observer, control, hooks);
    // Files alone need no more workers than there are files, unless one is split; questions
    // to the user are asked one after another, in the order of the sources, as cp asks them;
    // sources that overlap are copied in their order too.
    let alone = initial.iter().all(|i| matches!(i.kind, WorkKind::Root));
    let split = initial.iter().any(|i| {
        let size = i.stat.map_or(0, |s| s.size);
        opts.split.is_some_and(|each| each > 0 && size >= 2 * each)
    });
    let jobs = if opts.interactive || exec.in_order() {
        1
    } else if alone && !split {
        opts.jobs.min(initial.len())
    } else {
        opts.jobs
    };
    let max = if jobs < opts.jobs {
        jobs
    } else {
        opts.max_jobs.max(jobs)
    };
    LocalPool::growing(jobs, max).run(&exec, initial);
    exec.finish()
}

/// The local scheduler: threads taking items from work-stealing deques, each worker
/// depth-first. Every worker copies with a descriptor table of its own
/// (`unshare(CLONE_FILES)`), so opening and closing files does not contend on one table.
#[derive(Debug, Clone, Copy)]
pub struct LocalPool {
    sizing: Sizing,
}

impl LocalPool {
    /// A pool of `jobs` threads (at least one).
    pub fn new(jobs: usize) -> Self {
        LocalPool::growing(jobs, jobs)
    }

    /// A pool of `start` threads that grows up to `max` while its workers wait on I/O and
    /// more of them copy faster (see [`Options::max_jobs`]).
    pub fn growing(start: usize, max: usize) -> Self {
        let start = start.max(1);
        LocalPool {
            sizing: Sizing {
                start,
                max: max.max(start),
            },
        }
    }
}

/// A directory waiting for its pass and everything it spawned.
struct Gate<D> {
    /// The pass itself, plus every item spawned under it and not finished yet.
    pending: AtomicUsize,
    /// What completing it needs, once its pass has returned.
    done: Mutex<Option<D>>,
    /// The directory it was spawned under.
    parent: Option<Arc<Gate<D>>>,
}

/// An item and the directory that must wait for it.
struct Task<D> {
    item: WorkItem,
    gate: Option<Arc<Gate<D>>>,
}

impl Scheduler for LocalPool {
    fn run(&self, exec: &Executor<'_>, initial: Vec<WorkItem>) {
        let data_read = || exec.data_read();
        drive(self.sizing, Grow::OnDataReads(&data_read), exec, initial);
    }
}

/// Runs `initial` and everything it spawns on `jobs` threads, completing each directory
/// once its pass and everything spawned under it have run: the one loop behind a copy and
/// every walk.
pub(crate) fn drive<P: Passes>(sizing: Sizing, grow: Grow<'_>, passes: &P, initial: Vec<WorkItem>) {
    let tasks = initial
        .into_iter()
        .map(|item| Task { item, gate: None })
        .collect();
    pool::run(
        sizing,
        tasks,
        || {
            sys::private_fd_table();
            passes.worker()
        },
        |worker, task: Task<P::Done>, spawner: &Spawner<'_, Task<P::Done>>| {
            // Items spawned by a directory's pass gate that directory; items spawned by
            // anything else gate what that item gates.
            let gate = if matches!(task.item.kind, WorkKind::Dir(_)) {
                Some(Arc::new(Gate {
                    pending: AtomicUsize::new(1),
                    done: Mutex::new(None),
                    parent: task.gate.clone(),
                }))
            } else {
                task.gate.clone()
            };
            let done = passes.run(worker, task.item, &mut |item| {
                if let Some(g) = &gate {
                    g.pending.fetch_add(1, Ordering::SeqCst);
                }
                spawner.push(Task {
                    item,
                    gate: gate.clone(),
                });
            });
            if let Some(done) = done {
                let g = gate.as_ref().expect("a directory's pass has a gate");
                *g.done.lock().unwrap_or_else(|e| e.into_inner()) = Some(done);
            }
            if let Some(g) = gate {
                release(passes, worker, g);
            }
        },
        grow,
    );
}

/// One thing a directory waited for is done; the last one completes it, and so on upwards.
fn release<P: Passes>(passes: &P, worker: &mut P::Worker, gate: Arc<Gate<P::Done>>) {
    let mut gate = gate;
    loop {
        if gate.pending.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        if let Some(done) = gate.done.lock().unwrap_or_else(|e| e.into_inner()).take() {
            passes.complete(worker, done);
        }
        match gate.parent.clone() {
            Some(p) => gate = p,
            None => return,
        }
    }
}

/// Walks `roots` with `visitor` on the local pool (`opts.jobs` threads).
pub(crate) fn walk<V: Visitor>(
    roots: &Roots,
    opts: &WalkOptions,
    visitor: &V,
    control: &Control,
    initial: Vec<WorkItem>,
) {
    let walk = Walk {
        roots,
        opts,
        visitor,
        control,
    };
    let sizing = Sizing {
        start: opts.jobs.max(1),
        max: opts.jobs.max(1),
    };
    drive(sizing, Grow::Never, &walk, initial);
}
