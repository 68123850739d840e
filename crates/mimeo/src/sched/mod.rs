//! Schedulers: who runs which work item, and when a directory is complete. The local one
//! spreads items over a bounded pool of threads with work-stealing deques; another (the MPI
//! one) can drive the same [`Executor`] across processes by implementing [`Scheduler`].

pub(crate) mod grow;
mod local;
mod plan;
pub(crate) mod pool;

pub(crate) use local::walk;
pub use local::{LocalPool, copy, copy_hooked, copy_with};
pub use plan::{dry_run, scan};
pub use pool::{Feed, Pool, Spawner};

use crate::tree::{Executor, WorkItem};

/// Runs work items on an [`Executor`] until none is left.
///
/// A scheduler must run every item it is given and every item those spawn, and call
/// [`Executor::complete`] with each [`DirDone`](crate::work::DirDone) that
/// [`Executor::run`] returns, after every item spawned while producing it (and everything
/// those spawned) has run. It may run items on any thread or process that has an executor for
/// the same run.
pub trait Scheduler {
    /// Runs `initial` and everything it spawns.
    fn run(&self, exec: &Executor<'_>, initial: Vec<WorkItem>);
}
