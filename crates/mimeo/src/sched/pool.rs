//! A bounded pool of workers that take tasks from work-stealing deques.
//!
//! Each worker pushes the tasks it discovers onto its own deque and pops them LIFO, so it goes
//! depth-first and its working set stays small (breadth-first over a big tree would hold every
//! directory of a level at once). Idle workers steal the oldest tasks of busy ones, which are
//! the biggest subtrees. The run ends when no task is queued or running.

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
    /// Tasks queued or running.
    pending: AtomicUsize,
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
    let jobs = jobs.max(1);
    let workers: Vec<Worker<T>> = (0..jobs).map(|_| Worker::new_lifo()).collect();
    let shared = Shared {
        injector: Injector::new(),
        stealers: workers.iter().map(|w| w.stealer()).collect(),
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
    });
    if let Some(payload) = shared.panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
        std::panic::resume_unwind(payload);
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
