//! mimeo: fast, faithful, copy-on-write aware copying of files and trees on Linux.
//!
//! Every regular file goes down the cheapest data path its filesystems allow: a clone
//! (`FICLONE`) shares extents, an offload (`copy_file_range`) copies inside the kernel, and
//! a stream (read/write with a large buffer) is the last resort. Trees are walked in
//! parallel with directory file descriptors, and everything `cp -a` keeps is kept.
//!
//! The engine never prints: it reports through an [`Observer`] and returns a [`Summary`].
//!
//! # Examples
//!
//! Copy a tree as `cp -a` would, and look at how the data travelled:
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
//! # std::fs::create_dir(&src)?;
//! # std::fs::write(src.join("file"), vec![7u8; 100_000])?;
//! let summary = mimeo::copy(
//!     &[mimeo::CopyPair::new(&src, &dst)],
//!     &mimeo::Options::archive(),
//!     &mimeo::NoObserver,
//! );
//! assert_eq!(summary.errors, 0);
//! assert_eq!(summary.files, 1);
//! // Cloned on btrfs or XFS, offloaded or streamed elsewhere.
//! assert_eq!(summary.clone_bytes + summary.offload_bytes + summary.stream_bytes, 100_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Stop a copy from another thread, and receive its events in batches:
//!
//! ```
//! use mimeo::{Control, CopyPair, Event, EventChannel, Options};
//! use std::time::Duration;
//!
//! # let dir = tempfile::tempdir()?;
//! # let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
//! # std::fs::create_dir(&src)?;
//! # for i in 0..100 { std::fs::write(src.join(i.to_string()), b"x")?; }
//! let control = Control::new();
//! let (observer, batches) = EventChannel::new(64, Duration::from_millis(100), true);
//! let summary = std::thread::scope(|s| {
//!     let copy = s.spawn(|| {
//!         let pairs = [CopyPair::new(&src, &dst)];
//!         mimeo::copy_with(&pairs, &Options::archive(), &observer, &control)
//!     });
//!     control.stop(); // e.g. from a signal handler
//!     copy.join().unwrap()
//! });
//! drop(observer);
//! let copied = batches.iter().flatten().filter(|e| matches!(e, Event::Copied { .. })).count();
//! // Stopped early: whatever was copied is complete, and nothing partial is left.
//! assert!(summary.interrupted || copied == 101);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layers
//!
//! The modules form a stack; each uses only those below it:
//!
//! - [`space`]: space accounting ([`space::du`]) and dedupe ([`space::dedupe`]), on the
//!   walker of `tree` run by `sched`;
//! - `sched`: who runs which work item ([`copy_with`], [`copy_hooked`], [`LocalPool`],
//!   [`Scheduler`]), and the walks that copy nothing ([`dry_run`], [`scan`]);
//! - `tree`: roots, the per-directory pass, directory completion, a caller's [`Hooks`]
//!   (entries left out per directory, entries it copies itself), the parallel walker behind
//!   `space`, the dry run and the progress totals, and the step every walk takes in a
//!   directory
//!   ([`work`]: the plain-data unit of work and its [`Executor`](work::Executor));
//! - `place`: the overwrite decision, crash safety, hard-link groups;
//! - `data`: clone / offload / stream, byte ranges ([`clone_range`]), verify, metadata,
//!   shared reads ([`SharedFile`]);
//! - `sys`: the only module that calls the kernel;
//! - `report` ([`Error`], [`Event`], [`Summary`], [`Control`]) and [`Options`], used by all.
//!
//! # Where each feature lives
//!
//! One name per feature, in every layer it reaches (paths below `src/`; "·" where the
//! feature has nothing in that layer):
//!
//! | feature | `tree` | `place` | `data` | `sys` |
//! |---|---|---|---|---|
//! | one regular file: place, write, finish | `tree/file.rs` | `place/decide.rs`, `place/crash.rs` | `data/copy.rs`, `data/meta.rs` | `sys/linux.rs` |
//! | symlinks, special files, `-l`/`-s` | `tree/entry.rs` | `place/decide.rs` | `data/meta.rs` | `sys/linux.rs` |
//! | steps every entry shares (links, decision, commit) | `tree/placing.rs` | `place/links.rs`, `place/backup.rs` | · | · |
//! | clone → offload → stream, fallback errnos | · | · | `data/copy.rs`, `data/span.rs`, `data/fallback.rs` | `sys/linux.rs` |
//! | byte ranges ([`clone_range`]) | · | · | `data/range.rs` | `sys/range.rs` |
//! | `--preserve=sharing` | `tree/sharing.rs` | `place/sharing.rs` | `data/copy.rs` (`Layout`) | `sys/linux.rs` (FIEMAP) |
//! | shared reads ([`SharedFile`], `--shared-reads`) | `tree/shared_reads.rs` | `place/shared_reads.rs` | `data/shared_reads.rs`, `data/origin.rs`, `data/physmap.rs` | `sys/cache.rs`, `sys/ident.rs`, `sys/inode.rs` |
//! | resume (`-u` after a kill, `--partial`) | `tree/resume.rs` | `place/resume.rs` | `data/copy.rs` (`Checkpoint`) | · |
//! | `--split` | `tree/split.rs`, `tree/split_state.rs` | · | `data/copy.rs` (`Layout`, `copy_span`) | · |
//! | writing into nodes, `--copy-contents` | `tree/file.rs` | `place/decide.rs` | `data/node.rs`, `data/wait.rs` | · |
//! | `--verify` | `tree/file.rs` | · | `data/verify.rs` | · |
//! | `mimeo-cat` ([`concat()`]) | · | · | `data/concat.rs` | · |
//! | reading a directory: listing in inode order, when to stat, `-x`, cycles | `tree/listing.rs` (used by `tree/dir.rs` and `tree/walk.rs`) | · | · | `sys/linux.rs` (`DirReader`) |
//! | dry run, progress totals (visitors of the parallel walker) | `tree/plan.rs`, `sched/plan.rs` | `place/decide.rs` | · | · |
//! | a source named twice (cp's "specified more than once"; copy, dry run, other processes) | `tree/named.rs` (used by `tree/exec.rs`, `tree/dir.rs`, `tree/plan.rs`) | · | · | · |
//! | `mimeo-du`, `mimeo-dedupe` ([`space`]) | `tree/walk.rs` | · | · | `sys/dedupe.rs` |

#![deny(missing_docs)]

mod data;
mod options;
mod place;
mod report;
mod sched;
pub mod space;
mod sys;
mod tree;

pub use data::concat::{ConcatOptions, concat, concat_with};
pub use data::range::{RangeCopy, RangeError, clone_range};
pub use data::shared_reads::{SharedFile, SharedOpenOptions, SharedReadStats};
pub use options::{
    Backup, DEFAULT_BUFFER_SIZE, DEFAULT_SPLIT, DanglingSymlink, Dereference, LinkInstead, Options,
    Overwrite, Preserve, Reflink, Sparse, default_jobs, default_max_jobs,
};
pub use report::{
    Action, Cause, Control, EntryKind, Error, Event, EventChannel, FileOutcome, Method, NoObserver,
    Observer, Op, Refusal, Result, Summary, Warning, quote,
};
pub use sched::{LocalPool, Scheduler, copy, copy_hooked, copy_with, dry_run, scan};
pub use tree::{CopyPair, Hooked, Hooks, NoHooks, Totals, copy_file, copy_file_with};

/// The unit of work and its executor, for schedulers other than the local pool (another
/// process, another host): see [`Scheduler`]. A process's share of such a run can still run
/// on a thread pool ([`Pool`](work::Pool)), hard-link groups can be kept where every
/// process agrees on them ([`LinkGroups`](work::LinkGroups)), and every process applies cp's
/// rules for a source named twice as the first one counted them ([`Named`](work::Named)).
pub mod work {
    pub use crate::place::links::{LinkClaim, LinkGroups, LinkLoc, Sighting};
    pub use crate::sched::{Feed, Pool, Spawner};
    pub use crate::tree::{
        DirDone, DirInfo, EntryType, Executor, FileRange, Lineage, Named, RangeDone, Stat,
        WorkItem, WorkKind, Worker, XattrList,
    };
}
