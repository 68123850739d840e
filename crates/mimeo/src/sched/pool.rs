//! A bounded pool of workers that take tasks from work-stealing deques.
//!
//! Each worker pushes the tasks it discovers onto its own deque and pops them LIFO, so it goes
//! depth-first and its working set stays small (breadth-first over a big tree would hold every
//! directory of a level at once). Idle workers steal the oldest tasks of busy ones, which are
//! the biggest subtrees. The run ends when no task is queued or running.
//!
//! An open pool ([`Pool`]) also takes tasks from outside and gives its oldest ones away
//! ([`Feed`]) while the caller's driver runs, for a scheduler that shares work with other
//! processes; it ends when the driver has returned and no task is left.

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Lets a task handler queue more tasks on its own worker's deque.
pub struct Spawner<'a, T> {
    local: &'a Worker<T>,
    shared: &'a Shared<T>,
}

impl<T> std::fmt::Debug for Spawner<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawner").finish_non_exhaustive()
    }
}

impl<T> Spawner<'_, T> {
    /// Queues a task; this worker runs it next unless another worker steals it first.
    pub fn push(&self, task: T) {
        self.shared.pending.fetch_add(1, Ordering::SeqCst);
        self.local.push(task);
        if self.shared.sleeping.load(Ordering::SeqCst) > 0 {
            self.shared.wake.notify_one();
        }
    }
}

struct Shared<T> {
    injector: Injector<T>,
    stealers: Vec<Stealer<T>>,
    /// Tasks queued or running.
    pending: AtomicUsize,
    /// An open pool's driver is still running: more tasks may come from outside.
    open: AtomicBool,
    sleeping: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    /// The first panic of a task, raised again once every worker has stopped.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

/// Runs `handle` on every task, starting from `initial`, with `jobs` workers. Each worker
/// owns a state made by `make_state` (buffers reused across its tasks).
pub(crate) fn run<T, S>(
    jobs: usize,
    initial: Vec<T>,
    make_state: impl Fn() -> S + Sync,
    handle: impl Fn(&mut S, T, &Spawner<'_, T>) + Sync,
) where
    T: Send,
{
    if initial.is_empty() {
        return;
    }
    run_with(jobs, initial, false, make_state, handle, |_| ());
}

/// The pool itself: `open` keeps the workers waiting for tasks from `drive` until it returns.
fn run_with<T, S>(
    jobs: usize,
    initial: Vec<T>,
    open: bool,
    make_state: impl Fn() -> S + Sync,
    handle: impl Fn(&mut S, T, &Spawner<'_, T>) + Sync,
    drive: impl FnOnce(&Feed<'_, T>),
) where
    T: Send,
{
    let jobs = jobs.max(1);
    let workers: Vec<Worker<T>> = (0..jobs).map(|_| Worker::new_lifo()).collect();
    let shared = Shared {
        injector: Injector::new(),
        stealers: workers.iter().map(|w| w.stealer()).collect(),
        pending: AtomicUsize::new(initial.len()),
        open: AtomicBool::new(open),
        sleeping: AtomicUsize::new(0),
        lock: Mutex::new(()),
        wake: Condvar::new(),
        panic: Mutex::new(None),
    };
    for t in initial {
        shared.injector.push(t);
    }
    std::thread::scope(|scope| {
        for (index, local) in workers.into_iter().enumerate() {
            let shared = &shared;
            let make_state = &make_state;
            let handle = &handle;
            std::thread::Builder::new()
                .name(format!("mimeo-{index}"))
                .spawn_scoped(scope, move || {
                    let mut state = make_state();
                    let spawner = Spawner {
                        local: &local,
                        shared,
                    };
                    while let Some(task) = next_task(&local, shared, index) {
                        // A panicking task must still count as done, or the other workers
                        // would wait for it forever; the panic is raised again at the end.
                        let outcome =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                handle(&mut state, task, &spawner)
                            }));
                        if let Err(payload) = outcome {
                            let mut first = shared.panic.lock().unwrap_or_else(|e| e.into_inner());
                            first.get_or_insert(payload);
                        }
                        if shared.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
                            let _guard = shared.lock.lock();
                            shared.wake.notify_all();
                        }
                    }
                })
                .expect("spawn worker thread");
        }
        let feed = Feed { shared: &shared };
        // Close the pool also when the driver panics, or the workers would wait forever.
        let driven = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drive(&feed)));
        shared.open.store(false, Ordering::SeqCst);
        {
            let _guard = shared.lock.lock();
            shared.wake.notify_all();
        }
        if let Err(payload) = driven {
            let mut first = shared.panic.lock().unwrap_or_else(|e| e.into_inner());
            first.get_or_insert(payload);
        }
    });
    if let Some(payload) = shared.panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
        std::panic::resume_unwind(payload);
    }
}

/// A pool of worker threads that stays open to tasks from outside while its driver runs: the
/// local share of a run that other processes share too. Each worker takes tasks from its own
/// deque depth-first and steals the oldest tasks of the others, as in [`LocalPool`]; the
/// driver (on the calling thread) hands tasks in and takes the oldest ones out through a
/// [`Feed`].
///
/// [`LocalPool`]: crate::LocalPool
///
/// ```
/// use mimeo::work::Pool;
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// let sum = AtomicU32::new(0);
/// Pool::new(2).run(
///     || (),
///     |_, n: u32, spawner| {
///         sum.fetch_add(n, Ordering::SeqCst);
///         if n > 1 {
///             spawner.push(n - 1);
///         }
///     },
///     |feed| {
///         feed.push(3);
///         // The driver would talk to other processes here, until they are all idle.
///         while feed.busy() > 0 {
///             std::thread::yield_now();
///         }
///     },
/// );
/// assert_eq!(sum.load(Ordering::SeqCst), 3 + 2 + 1);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Pool {
    jobs: usize,
}

impl Pool {
    /// A pool of `jobs` worker threads (at least one).
    pub fn new(jobs: usize) -> Self {
        Pool { jobs: jobs.max(1) }
    }

    /// Runs `drive` on the calling thread while the workers run `handle` on every task it
    /// pushes and every task those spawn. Each worker owns a state made by `make_state`.
    /// Returns once `drive` has returned and no task is queued or running. A panic of a task
    /// or of `drive` is raised again once every worker has stopped.
    pub fn run<T, S>(
        &self,
        make_state: impl Fn() -> S + Sync,
        handle: impl Fn(&mut S, T, &Spawner<'_, T>) + Sync,
        drive: impl FnOnce(&Feed<'_, T>),
    ) where
        T: Send,
    {
        run_with(self.jobs, Vec::new(), true, make_state, handle, drive);
    }
}

/// An open [`Pool`]'s door to the outside, for its driver.
pub struct Feed<'a, T> {
    shared: &'a Shared<T>,
}

impl<T> std::fmt::Debug for Feed<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("busy", &self.busy())
            .finish_non_exhaustive()
    }
}

impl<T> Feed<'_, T> {
    /// Queues a task from outside; any idle worker takes it.
    pub fn push(&self, task: T) {
        self.shared.pending.fetch_add(1, Ordering::SeqCst);
        self.shared.injector.push(task);
        let _guard = self.shared.lock.lock();
        self.shared.wake.notify_one();
    }

    /// Takes the oldest queued task out of the pool (the biggest subtree, in a tree walk),
    /// for another process; None if every task is running or none is left.
    pub fn take(&self) -> Option<T> {
        let shared = self.shared;
        let task = loop {
            let mut retry = false;
            match shared.injector.steal() {
                Steal::Success(t) => break Some(t),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            let mut found = None;
            for s in &shared.stealers {
                match s.steal() {
                    Steal::Success(t) => {
                        found = Some(t);
                        break;
                    }
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if found.is_some() || !retry {
                break found;
            }
        };
        if task.is_some() && shared.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _guard = shared.lock.lock();
            shared.wake.notify_all();
        }
        task
    }

    /// Tasks queued, not yet taken by a worker.
    pub fn queued(&self) -> usize {
        self.shared.injector.len() + self.shared.stealers.iter().map(Stealer::len).sum::<usize>()
    }

    /// Tasks queued or running: 0 when the pool is idle.
    pub fn busy(&self) -> usize {
        self.shared.pending.load(Ordering::SeqCst)
    }
}

fn next_task<T>(local: &Worker<T>, shared: &Shared<T>, me: usize) -> Option<T> {
    loop {
        if let Some(t) = local.pop() {
            return Some(t);
        }
        if let Some(t) = steal(local, shared, me) {
            return Some(t);
        }
        if shared.pending.load(Ordering::SeqCst) == 0 && !shared.open.load(Ordering::SeqCst) {
            return None;
        }
        // Nothing to take yet: sleep until a push, the end, or a short timeout (a push can
        // race with going to sleep; the timeout bounds the cost of that rare miss).
        let guard = shared.lock.lock().unwrap_or_else(|e| e.into_inner());
        shared.sleeping.fetch_add(1, Ordering::SeqCst);
        let _ = shared
            .wake
            .wait_timeout(guard, Duration::from_millis(2))
            .unwrap_or_else(|e| e.into_inner());
        shared.sleeping.fetch_sub(1, Ordering::SeqCst);
    }
}

fn steal<T>(local: &Worker<T>, shared: &Shared<T>, me: usize) -> Option<T> {
    loop {
        let mut retry = false;
        match shared.injector.steal_batch_and_pop(local) {
            Steal::Success(t) => return Some(t),
            Steal::Retry => retry = true,
            Steal::Empty => {}
        }
        let n = shared.stealers.len();
        for k in 1..n {
            match shared.stealers[(me + k) % n].steal() {
                Steal::Success(t) => return Some(t),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
        }
        if !retry {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn every_spawned_task_runs_once() {
        // A binary tree of depth 12 built by the tasks themselves.
        let count = AtomicU64::new(0);
        run(
            4,
            vec![0u32],
            || (),
            |_, depth, s| {
                count.fetch_add(1, Ordering::Relaxed);
                if depth < 12 {
                    s.push(depth + 1);
                    s.push(depth + 1);
                }
            },
        );
        assert_eq!(count.load(Ordering::Relaxed), (1 << 13) - 1);
    }

    #[test]
    fn a_panicking_task_ends_the_run_and_is_raised_again() {
        let result = std::panic::catch_unwind(|| {
            run(
                2,
                vec![0u32, 1, 2],
                || (),
                |_, n, _| {
                    if n == 1 {
                        panic!("task failed");
                    }
                },
            )
        });
        assert!(result.is_err());
    }

    #[test]
    fn no_initial_tasks_returns_at_once() {
        run(2, Vec::<u8>::new(), || (), |_, _, _| unreachable!());
    }
}
