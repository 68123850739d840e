//! A bounded pool of workers that take tasks from work-stealing deques.
//!
//! Each worker pushes the tasks it discovers onto its own deque and pops them LIFO, so it goes
//! depth-first and its working set stays small (breadth-first over a big tree would hold every
//! directory of a level at once). Idle workers steal the oldest tasks of busy ones, which are
//! the biggest subtrees. The run ends when no task is queued or running.

use super::grow::{Growth, Sample, WINDOW};
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Lets a task handler queue more tasks.
pub(crate) struct Spawner<'a, T> {
    local: &'a Worker<T>,
    shared: &'a Shared<T>,
}

impl<T> Spawner<'_, T> {
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
    /// Workers started so far: the first `started` stealers.
    started: AtomicUsize,
    /// Tasks queued or running.
    pending: AtomicUsize,
    sleeping: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    /// The first panic of a task, raised again once every worker has stopped.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

/// How many workers: `start` at once, and up to `max` while they wait on I/O (see `grow`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizing {
    pub start: usize,
    pub max: usize,
}

/// Runs `handle` on every task, starting from `initial`. Each worker owns a state made by
/// `make_state` (buffers reused across its tasks). With `grow`, workers are added up to
/// `sizing.max` while they wait on the disk (see `grow`).
pub(crate) fn run<T, S>(
    sizing: Sizing,
    initial: Vec<T>,
    make_state: impl Fn() -> S + Sync,
    handle: impl Fn(&mut S, T, &Spawner<'_, T>) + Sync,
    grow: bool,
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
        sleeping: AtomicUsize::new(0),
        lock: Mutex::new(()),
        wake: Condvar::new(),
        panic: Mutex::new(None),
    };
    for t in initial {
        shared.injector.push(t);
    }
    if shared.pending.load(Ordering::SeqCst) == 0 {
        return;
    }
    let deques = Mutex::new(workers.into_iter().map(Some).collect::<Vec<_>>());
    let (deques, shared_ref, make_state, handle) = (&deques, &shared, &make_state, &handle);
    std::thread::scope(|scope| {
        for index in 0..start {
            start_worker(scope, index, deques, shared_ref, make_state, handle);
        }
        if max > start && grow {
            scope.spawn(move || {
                let start_one =
                    |index| start_worker(scope, index, deques, shared_ref, make_state, handle);
                grow_while_waiting(shared_ref, max, &start_one)
            });
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
                    let _guard = shared.lock.lock();
                    shared.wake.notify_all();
                }
            }
        })
        .expect("spawn worker thread");
    // Counted once running, so that stealing only looks at deques that can hold work.
    shared.started.fetch_add(1, Ordering::SeqCst);
}

/// The controller: samples the pool every window and starts the workers the growth policy
/// asks for, until the run ends.
fn grow_while_waiting<T>(shared: &Shared<T>, max: usize, spawn_worker: &(dyn Fn(usize) + Sync)) {
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
            if shared.pending.load(Ordering::SeqCst) == 0 {
                return;
            }
            let _ = shared
                .wake
                .wait_timeout(guard, WINDOW)
                .unwrap_or_else(|e| e.into_inner());
        }
        let pending = shared.pending.load(Ordering::SeqCst);
        if pending == 0 {
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
        };
        let add = policy.step(sample);
        for index in workers..(workers + add).min(max) {
            spawn_worker(index);
        }
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
        if shared.pending.load(Ordering::SeqCst) == 0 {
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
            true,
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
                true,
            )
        });
        assert!(result.is_err());
    }

    #[test]
    fn no_initial_tasks_returns_at_once() {
        run(
            Sizing { start: 2, max: 8 },
            Vec::<u8>::new(),
            || (),
            |_, _, _| unreachable!(),
            true,
        );
    }
}
