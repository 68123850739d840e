//! Space: how much room a tree really takes on a copy-on-write filesystem ([`du`](fn@du)), and
//! getting the room of duplicate files back without changing a byte ([`dedupe`](fn@dedupe)).
//!
//! This layer sits above `sched` (it walks with the one walker of `tree`, run on the local
//! pool) and below the crate root; it imports `sched`, `tree`, `report` and `sys`, and
//! nothing imports it but the root.
//!
//! # What the numbers mean
//!
//! [`du`](fn@du) reads every regular file's extent map (`FIEMAP`) and counts, as
//! `btrfs filesystem du` does, on btrfs, XFS and any filesystem with `FIEMAP`:
//!
//! - **total**: bytes of data extents. Holes are not data; an extent's length is what
//!   FIEMAP says, so the last block of a file counts whole. Preallocated extents count.
//! - **exclusive**: bytes of extents that nothing else references.
//! - **shared**: bytes of extents that something else references too, each physical byte
//!   counted once within the set (`Set shared` in `btrfs filesystem du`).
//! - **shared_outside**: the part of *shared* that no other file of the set references, so
//!   the other reference is outside the set (another path, a snapshot).
//!
//! Extents whose physical address is unknown (btrfs inline data, delayed allocation not yet
//! written) are counted as exclusive, and reported apart as `unknown_extents` and
//! `unknown_bytes`; `btrfs filesystem du` leaves them out, so its totals are ours minus
//! `unknown_bytes`. A file with several hard links counts once. On a filesystem without
//! sharing (ext4) *shared* is 0.
//!
//! # Examples
//!
//! ```
//! use mimeo::space::{DuOptions, NoSpaceObserver};
//!
//! # let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a"), vec![1u8; 100_000])?;
//! let report = mimeo::space::du(
//!     &[dir.path().to_path_buf()],
//!     &DuOptions::default(),
//!     &NoSpaceObserver,
//!     &mimeo::Control::new(),
//! );
//! assert_eq!(report.errors, 0);
//! // Nothing shares the new file's data: all of it is exclusive.
//! assert_eq!(report.total.exclusive, report.total.total);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod dedupe;
mod du;
mod physical;

pub use dedupe::{DedupeOptions, DedupeSummary, dedupe};
pub use du::{DuOptions, DuReport, Usage, du, du_with};

use crate::report::Error;
use crate::tree::{Look, Roots, WalkOptions, Want, WorkItem};
use std::path::PathBuf;

/// Workers for a space run: four per CPU, from 4 to 16. Reading extent maps and file data
/// waits on the device far more than it computes, so more requests in flight than CPUs
/// keep it busy (W9 and W10 in `bench/`).
fn default_jobs() -> usize {
    (crate::options::default_jobs() * 4).clamp(4, 16)
}
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};

/// Where a space run reports its failures, and how many there were.
struct Failures<'a> {
    observer: &'a dyn SpaceObserver,
    count: AtomicU64,
}

impl<'a> Failures<'a> {
    fn new(observer: &'a dyn SpaceObserver) -> Self {
        Failures {
            observer,
            count: AtomicU64::new(0),
        }
    }

    /// Reports and counts one failure.
    fn fail(&self, e: Error) {
        self.count.fetch_add(1, Relaxed);
        self.observer.event(SpaceEvent::Failed(e));
    }

    /// Counts a failure reported otherwise.
    fn counted(&self) {
        self.count.fetch_add(1, Relaxed);
    }

    fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }
}

/// The walk of a space run and its roots: every directory below the paths, symlinks not
/// followed below them (a path that is one is followed). Paths that cannot be resolved are
/// reported.
fn walk_roots(
    paths: &[PathBuf],
    one_file_system: bool,
    jobs: usize,
    failures: &Failures<'_>,
) -> (WalkOptions, Roots, Vec<WorkItem>) {
    let wopts = WalkOptions {
        recursive: true,
        follow_roots: true,
        look: Look {
            follow: false,
            one_file_system,
            want: Want::Types,
        },
        jobs: jobs.max(1),
    };
    let (roots, items) = Roots::resolve(paths, &wopts, &mut |e| failures.fail(e));
    (wopts, roots, items)
}

/// Something that happened during [`du`](fn@du) or [`dedupe`](fn@dedupe).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpaceEvent {
    /// Something could not be read or changed; the run goes on.
    Failed(Error),
    /// [`du`](fn@du): the usage of a directory below a given path, once everything below it has
    /// been counted (post-order). Its `shared` fields are `None`.
    Directory {
        /// The directory.
        path: PathBuf,
        /// How far below its given path (1 for a child).
        depth: u32,
        /// What it holds.
        usage: Usage,
    },
    /// [`dedupe`](fn@dedupe): files with the same content, found before any is changed.
    Duplicates {
        /// Their size in bytes.
        size: u64,
        /// The file whose extents the others will share.
        keep: PathBuf,
        /// The files to share `keep`'s extents.
        targets: Vec<PathBuf>,
        /// Files that share all of `keep`'s extents already; nothing is done to them.
        sharing: Vec<PathBuf>,
        /// Bytes the group would free, measured as [`du`](fn@du) measures (physical bytes that
        /// only the targets reference).
        saves: u64,
    },
    /// [`dedupe`](fn@dedupe): a file now shares all of its data with `keep`.
    Deduped {
        /// The file.
        path: PathBuf,
        /// The file whose extents it shares now.
        keep: PathBuf,
        /// Bytes compared and shared.
        bytes: u64,
    },
    /// [`dedupe`](fn@dedupe): a file was left as it was (or shares only part of its data).
    Skipped {
        /// The file.
        path: PathBuf,
        /// The file it was to share with, if it got that far.
        keep: Option<PathBuf>,
        /// Why.
        reason: SkipReason,
    },
}

/// Why [`dedupe`](fn@dedupe) left a file alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkipReason {
    /// Its content, size or modification time changed after it was compared (the kernel
    /// found different bytes, `FILE_DEDUPE_RANGE_DIFFERS`, or the file was no longer what
    /// was hashed). Nothing of it was changed.
    Changed,
    /// The filesystem asked to try again later (`EAGAIN`, e.g. during `btrfs send`), and it
    /// still did after a few tries.
    Busy,
    /// The kernel refused the range (`EINVAL`): not aligned to its blocks, or files that
    /// cannot share (btrfs: one `nodatacow`, the other not).
    Unaligned,
    /// The caller may not change its sharing (`EPERM`, `EACCES`): it neither owns the file
    /// nor may write it.
    NotPermitted,
    /// The filesystem cannot share these files (`EOPNOTSUPP`, `EXDEV`).
    NotSupported,
    /// Another error, by errno.
    Os(i32),
}

impl SkipReason {
    /// The reason for a failed dedupe of one file, by errno.
    pub fn from_errno(errno: i32) -> SkipReason {
        match errno {
            libc::EAGAIN => SkipReason::Busy,
            libc::EINVAL => SkipReason::Unaligned,
            libc::EPERM | libc::EACCES => SkipReason::NotPermitted,
            libc::EOPNOTSUPP | libc::EXDEV => SkipReason::NotSupported,
            e => SkipReason::Os(e),
        }
    }

    /// A stable lower-case name, used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::Changed => "changed",
            SkipReason::Busy => "busy",
            SkipReason::Unaligned => "unaligned",
            SkipReason::NotPermitted => "not_permitted",
            SkipReason::NotSupported => "not_supported",
            SkipReason::Os(_) => "error",
        }
    }

    /// The errno behind it, if any.
    pub fn errno(self) -> Option<i32> {
        match self {
            SkipReason::Changed => None,
            SkipReason::Busy => Some(libc::EAGAIN),
            SkipReason::Unaligned => Some(libc::EINVAL),
            SkipReason::NotPermitted => Some(libc::EPERM),
            SkipReason::NotSupported => Some(libc::EOPNOTSUPP),
            SkipReason::Os(e) => Some(e),
        }
    }

    /// Whether it counts as an error (everything but a file that changed under the run,
    /// which is how a live filesystem goes).
    pub fn is_error(self) -> bool {
        self != SkipReason::Changed
    }

    /// A sentence for people.
    pub fn message(self) -> String {
        match self {
            SkipReason::Changed => "changed since it was compared; left as it is".into(),
            SkipReason::Busy => "the filesystem is busy (EAGAIN); try again later".into(),
            SkipReason::Unaligned => {
                "the kernel refused the range (EINVAL: unaligned, or nodatacow on one side)".into()
            }
            SkipReason::NotPermitted => {
                "not permitted: only its owner, or who may write it, can dedupe it".into()
            }
            SkipReason::NotSupported => "the filesystem cannot share these files".into(),
            SkipReason::Os(e) => Error::os(crate::report::Op::Dedupe, "", e).message(),
        }
    }
}

/// Receives [`SpaceEvent`]s, from the worker threads.
pub trait SpaceObserver: Sync {
    /// One event.
    fn event(&self, event: SpaceEvent);
}

/// A [`SpaceObserver`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSpaceObserver;

impl SpaceObserver for NoSpaceObserver {
    fn event(&self, _: SpaceEvent) {}
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase {
    /// Walking the trees.
    Walking,
    /// [`dedupe`](fn@dedupe): comparing candidates and sharing duplicates.
    Comparing,
    /// Done.
    Finished,
}

/// Live progress of [`du`](fn@du) or [`dedupe`](fn@dedupe), for another thread to read (a progress bar).
///
/// ```
/// let progress = mimeo::space::Progress::default();
/// assert_eq!(progress.phase(), mimeo::space::Phase::Walking);
/// assert_eq!(progress.files(), 0);
/// ```
#[derive(Debug, Default)]
pub struct Progress {
    phase: AtomicU8,
    files: AtomicU64,
    bytes: AtomicU64,
    work_total: AtomicU64,
    work_done: AtomicU64,
    deduped: AtomicU64,
}

impl Progress {
    /// The phase.
    pub fn phase(&self) -> Phase {
        match self.phase.load(Relaxed) {
            0 => Phase::Walking,
            1 => Phase::Comparing,
            _ => Phase::Finished,
        }
    }

    /// Regular files found so far.
    pub fn files(&self) -> u64 {
        self.files.load(Relaxed)
    }

    /// [`du`](fn@du): data bytes counted so far. [`dedupe`](fn@dedupe): bytes of the files found so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Relaxed)
    }

    /// [`dedupe`](fn@dedupe): bytes of candidates to compare, known once the walk is done. Files
    /// found to share their extents already come off as they are found.
    pub fn work_total(&self) -> u64 {
        self.work_total.load(Relaxed)
    }

    /// [`dedupe`](fn@dedupe): bytes of candidates compared (read or proved shared) so far.
    pub fn work_done(&self) -> u64 {
        self.work_done.load(Relaxed)
    }

    /// [`dedupe`](fn@dedupe): bytes shared so far.
    pub fn deduped(&self) -> u64 {
        self.deduped.load(Relaxed)
    }

    pub(crate) fn set_phase(&self, phase: Phase) {
        let n = match phase {
            Phase::Walking => 0,
            Phase::Comparing => 1,
            Phase::Finished => 2,
        };
        self.phase.store(n, Relaxed);
    }

    pub(crate) fn add_file(&self, bytes: u64) {
        self.files.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes, Relaxed);
    }
}
