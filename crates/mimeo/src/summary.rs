//! What a run reports: one event per entry as it happens, and a summary at the end.

use crate::error::Error;
use crate::file::{FileOutcome, Method};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The kind of a copied entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Directory,
    Symlink,
    /// A hard link to a destination file created earlier in the run.
    HardLink,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
}

impl EntryKind {
    /// A stable lower-case name, used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Directory => "directory",
            EntryKind::Symlink => "symlink",
            EntryKind::HardLink => "hard_link",
            EntryKind::Fifo => "fifo",
            EntryKind::Socket => "socket",
            EntryKind::CharDevice => "char_device",
            EntryKind::BlockDevice => "block_device",
        }
    }
}

/// Something that happened during a run. Events are emitted from worker threads.
#[derive(Debug)]
pub enum Event<'a> {
    /// An entry was copied completely, metadata included.
    Copied {
        src: &'a Path,
        dst: &'a Path,
        kind: EntryKind,
        /// The data path and byte counts, for regular files.
        outcome: Option<FileOutcome>,
    },
    /// An entry was left alone because of `-n` or `-u`.
    Skipped { src: &'a Path, dst: &'a Path },
    /// An entry failed; the run goes on.
    Failed(&'a Error),
    /// `--dry-run`: what the copy would do with an entry.
    Planned {
        src: &'a Path,
        dst: &'a Path,
        kind: EntryKind,
        action: crate::survey::Action,
    },
}

/// Receives events from the engine. Implementations must be cheap: they run on the copy path.
pub trait Observer: Sync {
    fn event(&self, event: &Event<'_>);

    /// Whether `Copied` and `Skipped` events are wanted. When false the engine does not build
    /// the paths they carry, which keeps the per-file cost down.
    fn wants_entries(&self) -> bool {
        true
    }
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn event(&self, _: &Event<'_>) {}
    fn wants_entries(&self) -> bool {
        false
    }
}

/// A live view of a running copy, and its stop switch. The caller owns it and may read it
/// from another thread (a progress bar) or stop the run (a signal handler).
#[derive(Debug, Default)]
pub struct Control {
    stop: AtomicBool,
    /// Bytes written so far by clone, offload and stream.
    bytes: [AtomicU64; 3],
    entries: AtomicU64,
}

impl Control {
    pub fn new() -> Self {
        Control::default()
    }

    /// Asks the run to stop: entries in progress are removed, nothing new is started.
    pub fn stop(&self) {
        self.stop.store(true, Relaxed);
    }

    pub fn is_stopped(&self) -> bool {
        self.stop.load(Relaxed)
    }

    /// Bytes of file data written so far, counted as they are written.
    pub fn bytes_done(&self) -> u64 {
        self.bytes.iter().map(|b| b.load(Relaxed)).sum()
    }

    /// Bytes written so far by one method.
    pub fn bytes_by(&self, method: Method) -> u64 {
        self.bytes[method as usize].load(Relaxed)
    }

    /// Entries completed so far (files, directories, links, specials).
    pub fn entries_done(&self) -> u64 {
        self.entries.load(Relaxed)
    }

    pub(crate) fn add_bytes(&self, method: Method, n: u64) {
        self.bytes[method as usize].fetch_add(n, Relaxed);
    }

    pub(crate) fn add_entry(&self) {
        self.entries.fetch_add(1, Relaxed);
    }
}

/// Counts of a finished run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub files: u64,
    pub directories: u64,
    pub symlinks: u64,
    pub hard_links: u64,
    pub specials: u64,
    pub skipped: u64,
    /// Bytes of file data now present in the destination (excluding holes).
    pub bytes: u64,
    pub clone_bytes: u64,
    pub offload_bytes: u64,
    pub stream_bytes: u64,
    pub clone_files: u64,
    pub offload_files: u64,
    pub stream_files: u64,
    /// Bytes of the files' sizes left as holes.
    pub hole_bytes: u64,
    pub errors: u64,
    /// Sources that disappeared during the run (also counted in `errors`).
    pub vanished: u64,
    /// The run was stopped before it finished.
    pub interrupted: bool,
    pub elapsed: Duration,
}

/// Shared, lock-free counters behind [`Summary`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    files: AtomicU64,
    directories: AtomicU64,
    symlinks: AtomicU64,
    hard_links: AtomicU64,
    specials: AtomicU64,
    skipped: AtomicU64,
    clone_bytes: AtomicU64,
    offload_bytes: AtomicU64,
    stream_bytes: AtomicU64,
    clone_files: AtomicU64,
    offload_files: AtomicU64,
    stream_files: AtomicU64,
    hole_bytes: AtomicU64,
    errors: AtomicU64,
    vanished: AtomicU64,
}

impl Counters {
    pub(crate) fn entry(&self, kind: EntryKind, outcome: Option<&FileOutcome>) {
        let counter = match kind {
            EntryKind::File => &self.files,
            EntryKind::Directory => &self.directories,
            EntryKind::Symlink => &self.symlinks,
            EntryKind::HardLink => &self.hard_links,
            _ => &self.specials,
        };
        counter.fetch_add(1, Relaxed);
        if let Some(o) = outcome {
            let (bytes, files) = match o.method {
                Method::Clone => (&self.clone_bytes, &self.clone_files),
                Method::Offload => (&self.offload_bytes, &self.offload_files),
                Method::Stream => (&self.stream_bytes, &self.stream_files),
            };
            bytes.fetch_add(o.bytes, Relaxed);
            files.fetch_add(1, Relaxed);
            self.hole_bytes.fetch_add(o.hole_bytes, Relaxed);
        }
    }

    pub(crate) fn skipped(&self) {
        self.skipped.fetch_add(1, Relaxed);
    }

    pub(crate) fn error(&self, err: &Error) {
        self.errors.fetch_add(1, Relaxed);
        if err.is_vanished() {
            self.vanished.fetch_add(1, Relaxed);
        }
    }

    pub(crate) fn summary(&self, elapsed: Duration) -> Summary {
        let clone_bytes = self.clone_bytes.load(Relaxed);
        let offload_bytes = self.offload_bytes.load(Relaxed);
        let stream_bytes = self.stream_bytes.load(Relaxed);
        Summary {
            files: self.files.load(Relaxed),
            directories: self.directories.load(Relaxed),
            symlinks: self.symlinks.load(Relaxed),
            hard_links: self.hard_links.load(Relaxed),
            specials: self.specials.load(Relaxed),
            skipped: self.skipped.load(Relaxed),
            bytes: clone_bytes + offload_bytes + stream_bytes,
            clone_bytes,
            offload_bytes,
            stream_bytes,
            clone_files: self.clone_files.load(Relaxed),
            offload_files: self.offload_files.load(Relaxed),
            stream_files: self.stream_files.load(Relaxed),
            hole_bytes: self.hole_bytes.load(Relaxed),
            errors: self.errors.load(Relaxed),
            vanished: self.vanished.load(Relaxed),
            interrupted: false,
            elapsed,
        }
    }
}
