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

use super::grow::{Grow, Growth, Sample, WINDOW};
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
        self.shared.wake_one();
    }
}

struct Shared<T> {
    injector: Injector<T>,
    stealers: Vec<Stealer<T>>,
    /// Workers started so far: the first `started` stealers.
    started: AtomicUsize,
    /// Tasks queued or running.
    pending: AtomicUsize,
    /// An open pool's driver is still running: more tasks may come from outside.
    open: AtomicBool,
    /// Workers asleep in `next_task`, or about to be.
    sleeping: AtomicUsize,
    lock: Mutex<()>,
    /// Idle workers wait here for a task or the end.
    wake: Condvar,
    /// The growth controller waits here for its next window or the end.
    tick: Condvar,
    /// The first panic of a task, raised again once every worker has stopped.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

impl<T> Shared<T> {
    /// No task is queued or running, and none can come any more.
    fn finished(&self) -> bool {
        self.pending.load(Ordering::SeqCst) == 0 && !self.open.load(Ordering::SeqCst)
    }

    /// A task was queued: wakes one idle worker, if any sleeps. The lock orders this after a
    /// sleeper's last look at the queues (see `next_task`), so no wake-up is lost.
    fn wake_one(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_one();
        }
    }

    /// The run may be over: wakes every worker and the controller.
    fn wake_all(&self) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.wake.notify_all();
        self.tick.notify_all();
    }
}

/// How many workers: `start` at once, and up to `max` while they wait on I/O (see `grow`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizing {
    pub start: usize,
    pub max: usize,
}

/// Runs `handle` on every task, starting from `initial`. Each worker owns a state made by
/// `make_state` (buffers reused across its tasks). As `grow` says, workers are added up to
/// `sizing.max` while they wait on the disk (see `grow`).
pub(crate) fn run<T, S>(
    sizing: Sizing,
    initial: Vec<T>,
    make_state: impl Fn() -> S + Sync,
    handle: impl Fn(&mut S, T, &Spawner<'_, T>) + Sync,
    grow: Grow<'_>,
) where
    T: Send,
{
    if initial.is_empty() {
        return;
    }
    run_with(sizing, initial, false, make_state, handle, grow, |_| ());
}

/// The pool itself: `open` keeps the workers waiting for tasks from `drive` until it returns.
fn run_with<T, S>(
    sizing: Sizing,
    initial: Vec<T>,
    open: bool,
    make_state: impl Fn() -> S + Sync,
    handle: impl Fn(&mut S, T, &Spawner<'_, T>) + Sync,
    grow: Grow<'_>,
    drive: impl FnOnce(&Feed<'_, T>),
) where
    T: Send,
{
    let start = sizing.start.max(1);
    let max = sizing.max.max(start);
    let workers: Vec<Worker<T>> = (0..max).map(|_| Worker::new_lifo()).collect();
    let shared = Shared {
        injector: Injector::new(),
        stealers: workers.iter().map(|w| w.stealer()).collect(),
        started: AtomicUsize::new(0),
        pending: AtomicUsize::new(initial.len()),
        open: AtomicBool::new(open),
        sleeping: AtomicUsize::new(0),
        lock: Mutex::new(()),
        wake: Condvar::new(),
        tick: Condvar::new(),
        panic: Mutex::new(None),
    };
    for t in initial {
        shared.injector.push(t);
    }
    let deques = Mutex::new(workers.into_iter().map(Some).collect::<Vec<_>>());
    let (deques, shared_ref, make_state, handle) = (&deques, &shared, &make_state, &handle);
    std::thread::scope(|scope| {
        for index in 0..start {
            start_worker(scope, index, deques, shared_ref, make_state, handle);
        }
        if max > start && !matches!(grow, Grow::Never) {
            scope.spawn(move || {
                let start_one =
                    |index| start_worker(scope, index, deques, shared_ref, make_state, handle);
                grow_while_waiting(shared_ref, max, grow, &start_one)
            });
        }
        let feed = Feed { shared: shared_ref };
        // Close the pool also when the driver panics, or the workers would wait forever.
        let driven = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drive(&feed)));
        shared_ref.open.store(false, Ordering::SeqCst);
        shared_ref.wake_all();
        if let Err(payload) = driven {
            let mut first = shared_ref.panic.lock().unwrap_or_else(|e| e.into_inner());
            first.get_or_insert(payload);
        }
    });
    if let Some(payload) = shared.panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
        std::panic::resume_unwind(payload);
    }
}

/// Starts worker `index` with its deque.
fn start_worker<'scope, 'env, T: Send, S>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    index: usize,
    deques: &'env Mutex<Vec<Option<Worker<T>>>>,
    shared: &'env Shared<T>,
    make_state: &'env (impl Fn() -> S + Sync),
    handle: &'env (impl Fn(&mut S, T, &Spawner<'_, T>) + Sync),
) {
    let local = deques.lock().unwrap_or_else(|e| e.into_inner())[index]
        .take()
        .expect("each worker starts once");
    std::thread::Builder::new()
        .name(format!("mimeo-{index}"))
        .spawn_scoped(scope, move || {
            let mut state = make_state();
            let spawner = Spawner {
                local: &local,
                shared,
            };
            while let Some(task) = next_task(&local, shared, index) {
                // A panicking task must still count as done, or the other workers would
                // wait for it forever; the panic is raised again at the end.
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    handle(&mut state, task, &spawner)
                }));
                if let Err(payload) = outcome {
                    let mut first = shared.panic.lock().unwrap_or_else(|e| e.into_inner());
                    first.get_or_insert(payload);
                }
                if shared.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
                    shared.wake_all();
                }
            }
        })
        .expect("spawn worker thread");
    // Counted once running, so that stealing only looks at deques that can hold work.
    shared.started.fetch_add(1, Ordering::SeqCst);
}

/// The controller: samples the pool every window and starts the workers the growth policy
/// asks for, until the run ends.
fn grow_while_waiting<T>(
    shared: &Shared<T>,
    max: usize,
    grow: Grow<'_>,
    spawn_worker: &(dyn Fn(usize) + Sync),
) {
    // Without the kernel's count of storage reads, nothing tells a cold copy from a warm one.
    let Some(reads0) = crate::sys::storage_reads() else {
        return;
    };
    let begun = std::time::Instant::now();
    let cpu0 = crate::sys::process_cpu_time();
    let mut policy = Growth::new(crate::sys::cpus(), max);
    loop {
        {
            // Sleeps a window, or less when the run ends (the last task wakes everyone).
            let guard = shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            if shared.finished() {
                return;
            }
            let _ = shared
                .tick
                .wait_timeout(guard, WINDOW)
                .unwrap_or_else(|e| e.into_inner());
        }
        let pending = shared.pending.load(Ordering::SeqCst);
        if shared.finished() {
            return;
        }
        let workers = shared.started.load(Ordering::SeqCst);
        let sample = Sample {
            wall: begun.elapsed(),
            cpu: crate::sys::process_cpu_time().saturating_sub(cpu0),
            storage_reads: crate::sys::storage_reads()
                .unwrap_or(0)
                .saturating_sub(reads0),
            workers,
            pending,
            data_read: grow.data_read(),
        };
        let add = policy.step(sample);
        for index in workers..(workers + add).min(max) {
            spawn_worker(index);
        }
    }
}

/// A pool of worker threads that stays open to tasks from outside while its driver runs: the
/// local share of a run that other processes share too. Each worker takes tasks from its own
/// deque depth-first and steals the oldest tasks of the others, as in [`LocalPool`], which it
/// also grows like while its workers wait on storage; the driver (on the calling thread) hands
/// tasks in and takes the oldest ones out through a [`Feed`].
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
    sizing: Sizing,
}

impl Pool {
    /// A pool of `jobs` worker threads (at least one).
    pub fn new(jobs: usize) -> Self {
        Pool::growing(jobs, jobs)
    }

    /// A pool of `start` worker threads that grows up to `max` while its workers wait on
    /// storage, as the local pool of [`copy_with`](crate::copy_with) does (see
    /// [`Options::max_jobs`](crate::Options::max_jobs)).
    pub fn growing(start: usize, max: usize) -> Self {
        let start = start.max(1);
        Pool {
            sizing: Sizing {
                start,
                max: max.max(start),
            },
        }
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
        let grow = if self.sizing.max > self.sizing.start {
            Grow::OnReads
        } else {
            Grow::Never
        };
        run_with(
            self.sizing,
            Vec::new(),
            true,
            make_state,
            handle,
            grow,
            drive,
        );
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
        self.shared.wake_one();
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
            shared.wake_all();
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

/// How long an idle worker sleeps before it looks at the queues again even if no push woke
/// it: a safety net only, since pushes wake sleepers.
const IDLE_CHECK: Duration = Duration::from_millis(100);

fn next_task<T>(local: &Worker<T>, shared: &Shared<T>, me: usize) -> Option<T> {
    loop {
        if let Some(t) = local.pop() {
            return Some(t);
        }
        if let Some(t) = steal(local, shared, me) {
            return Some(t);
        }
        if shared.finished() {
            return None;
        }
        // Nothing to take yet: sleep until a push or the end. Counted as sleeping before the
        // last look at the queues, so a push after that look sees the count and wakes us
        // (`wake_one`). A cold copy with dozens of workers, most of them idle, spent more
        // kernel time in polling wake-ups (every 2 ms each) than in copying: 180k futex
        // calls and 80k context switches for 54k entries, against 30 with `-j 2`.
        let guard = shared.lock.lock().unwrap_or_else(|e| e.into_inner());
        shared.sleeping.fetch_add(1, Ordering::SeqCst);
        let found = steal(local, shared, me);
        if found.is_none() && !shared.finished() {
            let _ = shared
                .wake
                .wait_timeout(guard, IDLE_CHECK)
                .unwrap_or_else(|e| e.into_inner());
        }
        shared.sleeping.fetch_sub(1, Ordering::SeqCst);
        if found.is_some() {
            return found;
        }
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
        let n = shared
            .started
            .load(Ordering::SeqCst)
            .min(shared.stealers.len());
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
            Sizing { start: 4, max: 4 },
            vec![0u32],
            || (),
            |_, depth, s| {
                count.fetch_add(1, Ordering::Relaxed);
                if depth < 12 {
                    s.push(depth + 1);
                    s.push(depth + 1);
                }
            },
            Grow::OnReads,
        );
        assert_eq!(count.load(Ordering::Relaxed), (1 << 13) - 1);
    }

    #[test]
    fn a_panicking_task_ends_the_run_and_is_raised_again() {
        let result = std::panic::catch_unwind(|| {
            run(
                Sizing { start: 2, max: 2 },
                vec![0u32, 1, 2],
                || (),
                |_, n, _| {
                    if n == 1 {
                        panic!("task failed");
                    }
                },
                Grow::OnReads,
            )
        });
        assert!(result.is_err());
    }

    /// Voluntary context switches so far of each thread of this process, by thread id.
    fn switches() -> std::collections::HashMap<String, u64> {
        let mut all = std::collections::HashMap::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            let n = status
                .lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .map_or(0, |v| v.trim().parse::<u64>().unwrap());
            all.insert(task.file_name().to_string_lossy().into_owned(), n);
        }
        all
    }

    /// The switches between two snapshots of the threads `tids`: other tests of this process
    /// run threads of their own meanwhile, busy on a loaded machine.
    fn switched(before: &std::collections::HashMap<String, u64>, tids: &[String]) -> u64 {
        switches()
            .iter()
            .filter(|(tid, _)| tids.contains(tid))
            .filter_map(|(tid, n)| before.get(tid).map(|b| n.saturating_sub(*b)))
            .sum()
    }

    /// The calling thread's id.
    fn tid() -> String {
        let me = std::fs::read_link("/proc/thread-self").unwrap();
        me.file_name().unwrap().to_string_lossy().into_owned()
    }

    #[test]
    fn idle_workers_sleep_until_there_is_work() {
        // One task runs for 400 ms while 15 workers have nothing to do. Polling every 2 ms,
        // they switched about 3000 times; asleep until woken, a handful.
        let counted = Mutex::new(0);
        // The pool's own threads: each makes its state on starting.
        let workers = Mutex::new(Vec::new());
        run(
            Sizing { start: 16, max: 16 },
            vec![0u32],
            || workers.lock().unwrap().push(tid()),
            |_, n, s| {
                if n == 0 {
                    // Let every worker reach its idle wait first.
                    std::thread::sleep(Duration::from_millis(50));
                    let before = switches();
                    std::thread::sleep(Duration::from_millis(400));
                    let tids = workers.lock().unwrap().clone();
                    assert_eq!(tids.len(), 16, "workers started");
                    *counted.lock().unwrap() = switched(&before, &tids);
                    // Work pushed later still gets done.
                    s.push(1);
                }
            },
            Grow::OnReads,
        );
        let counted = counted.into_inner().unwrap();
        assert!(counted < 300, "{counted} context switches while idle");
    }

    #[test]
    fn no_initial_tasks_returns_at_once() {
        run(
            Sizing { start: 2, max: 8 },
            Vec::<u8>::new(),
            || (),
            |_, _, _| unreachable!(),
            Grow::OnReads,
        );
    }
}
