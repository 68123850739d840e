//! Events: what happened to each entry, delivered to an [`Observer`] as it happens.

use super::error::Error;
use super::outcome::FileOutcome;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

/// The kind of a copied entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A directory made on the way to a destination (`--parents`), not itself a copy of a
    /// source named or found in a tree: cp's `-v` names it unquoted.
    ParentDirectory,
    /// A symbolic link, copied as a link.
    Symlink,
    /// A hard link to a destination file created earlier in the run.
    HardLink,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device node.
    CharDevice,
    /// A block device node.
    BlockDevice,
}

impl EntryKind {
    /// A stable lower-case name, used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Directory | EntryKind::ParentDirectory => "directory",
            EntryKind::Symlink => "symlink",
            EntryKind::HardLink => "hard_link",
            EntryKind::Fifo => "fifo",
            EntryKind::Socket => "socket",
            EntryKind::CharDevice => "char_device",
            EntryKind::BlockDevice => "block_device",
        }
    }
}

/// What a copy would do with one entry (`--dry-run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// The destination does not exist: it would be created.
    Create,
    /// The destination would be replaced atomically.
    Replace,
    /// The destination is a FIFO or device node that the data would be written into.
    WriteInto,
    /// Left alone because of `-n` or `-u`.
    Skip,
    /// An existing directory that the copy merges into.
    Merge,
}

impl Action {
    /// A stable lower-case name, used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Replace => "replace",
            Action::WriteInto => "write_into",
            Action::Skip => "skip",
            Action::Merge => "merge",
        }
    }
}

/// Something worth saying that is not a failure: the run goes on, and its exit status is not
/// changed by it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// A source named more than once on the command line, into one destination: it is copied
    /// once, as cp copies it.
    SourceTwice {
        /// The source, as named again.
        src: PathBuf,
        /// It is a directory.
        directory: bool,
    },
    /// An extended attribute that could not be read or set where the copy goes on without
    /// it, which cp names (with `--attributes-only`, or xattrs kept without `-a`): the
    /// failure, in cp's words.
    Attribute(Error),
}

impl std::fmt::Display for Warning {
    /// cp's words, without a program-name prefix.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::SourceTwice { src, directory } => write!(
                f,
                "warning: source {} {} specified more than once",
                if *directory { "directory" } else { "file" },
                super::quote::quote(src)
            ),
            Warning::Attribute(e) => std::fmt::Display::fmt(e, f),
        }
    }
}

/// Something that happened during a run. Events are owned, so an observer may keep them or
/// send them to another thread.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// An entry was copied completely, metadata included.
    Copied {
        /// The source path, as given plus the path below it.
        src: PathBuf,
        /// The destination path.
        dst: PathBuf,
        /// What kind of entry it is.
        kind: EntryKind,
        /// The data path and byte counts, for regular files.
        outcome: Option<FileOutcome>,
    },
    /// A non-directory entry whose copy was begun and then failed: the destination was
    /// decided (and backed up), so cp's `-v` has named it before its failure. Sent just
    /// before the [`Event::Failed`] of that failure, when entries are wanted.
    Begun {
        /// The source path.
        src: PathBuf,
        /// The destination path.
        dst: PathBuf,
    },
    /// An entry was left alone because of `-n` or `-u`.
    Skipped {
        /// The source path.
        src: PathBuf,
        /// The destination that was kept.
        dst: PathBuf,
    },
    /// An existing destination was removed to make its copy, as cp removes it first
    /// (`--remove-destination`, and where cp could not write into it).
    Removed {
        /// The destination.
        path: PathBuf,
    },
    /// An entry failed; the run goes on.
    Failed(Error),
    /// Not a failure, but worth saying.
    Warning(Warning),
    /// `--dry-run`: what the copy would do with an entry.
    Planned {
        /// The source path.
        src: PathBuf,
        /// The destination path.
        dst: PathBuf,
        /// What kind of entry it is.
        kind: EntryKind,
        /// What the copy would do.
        action: Action,
    },
}

/// Receives events from the engine, from its worker threads.
///
/// Implementations must be cheap: they run on the copy path. [`EventChannel`] hands events
/// to another thread in batches instead.
pub trait Observer: Sync {
    /// One event.
    fn event(&self, event: Event);

    /// Whether `Copied` and `Skipped` events are wanted. When false the engine does not build
    /// the paths they carry, which keeps the per-file cost down.
    fn wants_entries(&self) -> bool {
        true
    }

    /// Called once when a run has finished, after its last event.
    fn finished(&self) {}

    /// With [`Options::interactive`](crate::Options::interactive): whether the existing
    /// destination `dst` may be replaced by a copy of `src` (cp's `-i`). Called from a
    /// worker thread, one question at a time per worker; an answer of false leaves `dst`
    /// alone. The default says yes, as cp does without `-i`.
    fn confirm_overwrite(&self, src: &Path, dst: &Path) -> bool {
        let _ = (src, dst);
        true
    }
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn event(&self, _: Event) {}
    fn wants_entries(&self) -> bool {
        false
    }
}

/// An observer that delivers events in batches over a channel, so that the receiving thread
/// (a Python callback, a UI) is woken a few times a second rather than once per file.
///
/// A batch is sent when it holds `max_batch` events or when `interval` has passed since the
/// last one, whichever comes first, and at the end of the run. The receiver sees the end of
/// the channel once the observer is dropped.
///
/// ```
/// use mimeo::{EventChannel, Observer};
/// use std::time::Duration;
///
/// let (observer, batches) = EventChannel::new(256, Duration::from_millis(100), true);
/// // ... mimeo::copy(&pairs, &options, &observer) on this or another thread ...
/// observer.finished();
/// drop(observer);
/// let events: usize = batches.iter().map(|batch| batch.len()).sum();
/// assert_eq!(events, 0);
/// ```
#[derive(Debug)]
pub struct EventChannel {
    pending: Mutex<Pending>,
    sender: Mutex<Sender<Vec<Event>>>,
    max_batch: usize,
    interval: Duration,
    entries: bool,
}

#[derive(Debug)]
struct Pending {
    events: Vec<Event>,
    since: Instant,
}

impl EventChannel {
    /// An observer and the receiving end of its channel. `entries` says whether `Copied` and
    /// `Skipped` events are wanted (failures always are).
    pub fn new(
        max_batch: usize,
        interval: Duration,
        entries: bool,
    ) -> (EventChannel, Receiver<Vec<Event>>) {
        let (tx, rx) = channel();
        let observer = EventChannel {
            pending: Mutex::new(Pending {
                events: Vec::new(),
                since: Instant::now(),
            }),
            sender: Mutex::new(tx),
            max_batch: max_batch.max(1),
            interval,
            entries,
        };
        (observer, rx)
    }

    /// Sends what is pending now.
    pub fn flush(&self) {
        let batch = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.since = Instant::now();
            std::mem::take(&mut p.events)
        };
        self.send(batch);
    }

    fn send(&self, batch: Vec<Event>) {
        if batch.is_empty() {
            return;
        }
        let tx = self.sender.lock().unwrap_or_else(|e| e.into_inner());
        // A receiver that went away no longer wants events; the copy goes on.
        let _ = tx.send(batch);
    }
}

impl Observer for EventChannel {
    fn event(&self, event: Event) {
        let batch = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.events.push(event);
            if p.events.len() < self.max_batch && p.since.elapsed() < self.interval {
                return;
            }
            p.since = Instant::now();
            std::mem::take(&mut p.events)
        };
        self.send(batch);
    }

    fn wants_entries(&self) -> bool {
        self.entries
    }

    fn finished(&self) {
        self.flush();
    }
}
