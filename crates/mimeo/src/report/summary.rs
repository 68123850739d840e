//! Counts of a run: lock-free counters while it runs, a [`Summary`] at the end.

use super::error::Error;
use super::event::EntryKind;
use super::outcome::{FileOutcome, Method};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Counts of a finished run. Summaries of parts of a run (threads, processes, hosts) add up
/// with [`Summary::merge`]. With the `serde` feature it can be serialized, to be merged in
/// another process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Summary {
    /// Regular files copied (hard links to an earlier copy not included).
    pub files: u64,
    /// Directories copied or merged into, metadata applied.
    pub directories: u64,
    /// Symbolic links copied.
    pub symlinks: u64,
    /// Hard links made to an earlier copy in the run.
    pub hard_links: u64,
    /// FIFOs, sockets and device nodes.
    pub specials: u64,
    /// Entries left alone because of `-n` or `-u`.
    pub skipped: u64,
    /// Bytes of file data now present in the destination (excluding holes): cloned,
    /// offloaded, streamed and resumed.
    pub bytes: u64,
    /// Bytes that share extents with their source.
    pub clone_bytes: u64,
    /// Bytes copied inside the kernel.
    pub offload_bytes: u64,
    /// Bytes read and written through a buffer.
    pub stream_bytes: u64,
    /// Files cloned.
    pub clone_files: u64,
    /// Files offloaded.
    pub offload_files: u64,
    /// Files streamed (also files that mixed offload and stream).
    pub stream_files: u64,
    /// Bytes of the files' sizes left as holes.
    pub hole_bytes: u64,
    /// Bytes read through a canonical file (another source file holding the same blocks,
    /// read earlier in the run) instead of the file itself: part of the offloaded and
    /// streamed bytes.
    pub shared_read_bytes: u64,
    /// Bytes kept from the prefixes that interrupted runs had written (`-u` after a killed
    /// copy, or `--partial`), verified and not copied again; part of `bytes`, and of no
    /// method's count.
    pub resumed_bytes: u64,
    /// Entries that failed.
    pub errors: u64,
    /// Sources that disappeared during the run (also counted in `errors`).
    pub vanished: u64,
    /// The run was stopped before it finished.
    pub interrupted: bool,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Summary {
    /// Adds the counts of `other`, a part of the same run that ran alongside this one: counts
    /// add up, the run was interrupted if either part was, and its time is the longer one.
    pub fn merge(&mut self, other: &Summary) {
        self.files += other.files;
        self.directories += other.directories;
        self.symlinks += other.symlinks;
        self.hard_links += other.hard_links;
        self.specials += other.specials;
        self.skipped += other.skipped;
        self.bytes += other.bytes;
        self.clone_bytes += other.clone_bytes;
        self.offload_bytes += other.offload_bytes;
        self.stream_bytes += other.stream_bytes;
        self.clone_files += other.clone_files;
        self.offload_files += other.offload_files;
        self.stream_files += other.stream_files;
        self.hole_bytes += other.hole_bytes;
        self.shared_read_bytes += other.shared_read_bytes;
        self.resumed_bytes += other.resumed_bytes;
        self.errors += other.errors;
        self.vanished += other.vanished;
        self.interrupted |= other.interrupted;
        self.elapsed = self.elapsed.max(other.elapsed);
    }

    /// The bytes copied by one method.
    pub fn bytes_by(&self, method: Method) -> u64 {
        match method {
            Method::Clone => self.clone_bytes,
            Method::Offload => self.offload_bytes,
            Method::Stream => self.stream_bytes,
        }
    }

    /// The files copied by one method.
    pub fn files_by(&self, method: Method) -> u64 {
        match method {
            Method::Clone => self.clone_files,
            Method::Offload => self.offload_files,
            Method::Stream => self.stream_files,
        }
    }
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
    method_bytes: [AtomicU64; 3],
    method_files: [AtomicU64; 3],
    hole_bytes: AtomicU64,
    shared_read_bytes: AtomicU64,
    resumed_bytes: AtomicU64,
    errors: AtomicU64,
    vanished: AtomicU64,
}

impl Counters {
    pub(crate) fn entry(&self, kind: EntryKind, outcome: Option<&FileOutcome>) {
        let counter = match kind {
            EntryKind::File => &self.files,
            EntryKind::Directory | EntryKind::ParentDirectory => &self.directories,
            EntryKind::Symlink => &self.symlinks,
            EntryKind::HardLink => &self.hard_links,
            _ => &self.specials,
        };
        counter.fetch_add(1, Relaxed);
        if let Some(o) = outcome {
            // Bytes cloned from another copy count as cloned, a kept prefix as resumed, and
            // the rest under the file's method.
            let own = o.bytes - o.cloned_bytes.min(o.bytes);
            let own = own - o.resumed_bytes.min(own);
            self.method_bytes[o.method as usize].fetch_add(own, Relaxed);
            if o.cloned_bytes > 0 {
                self.method_bytes[Method::Clone as usize].fetch_add(o.cloned_bytes, Relaxed);
            }
            self.resumed_bytes.fetch_add(o.resumed_bytes, Relaxed);
            self.method_files[o.method as usize].fetch_add(1, Relaxed);
            self.hole_bytes.fetch_add(o.hole_bytes, Relaxed);
            self.shared_read_bytes
                .fetch_add(o.shared_read_bytes, Relaxed);
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
        let by = |m: Method| self.method_bytes[m as usize].load(Relaxed);
        let files = |m: Method| self.method_files[m as usize].load(Relaxed);
        Summary {
            files: self.files.load(Relaxed),
            directories: self.directories.load(Relaxed),
            symlinks: self.symlinks.load(Relaxed),
            hard_links: self.hard_links.load(Relaxed),
            specials: self.specials.load(Relaxed),
            skipped: self.skipped.load(Relaxed),
            bytes: Method::ALL.iter().map(|&m| by(m)).sum::<u64>()
                + self.resumed_bytes.load(Relaxed),
            clone_bytes: by(Method::Clone),
            offload_bytes: by(Method::Offload),
            stream_bytes: by(Method::Stream),
            clone_files: files(Method::Clone),
            offload_files: files(Method::Offload),
            stream_files: files(Method::Stream),
            hole_bytes: self.hole_bytes.load(Relaxed),
            shared_read_bytes: self.shared_read_bytes.load(Relaxed),
            resumed_bytes: self.resumed_bytes.load(Relaxed),
            errors: self.errors.load(Relaxed),
            vanished: self.vanished.load(Relaxed),
            interrupted: false,
            elapsed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_of_parts_merge() {
        let mut a = Summary {
            files: 2,
            clone_bytes: 10,
            bytes: 10,
            elapsed: Duration::from_secs(3),
            ..Summary::default()
        };
        let b = Summary {
            files: 1,
            stream_bytes: 5,
            bytes: 5,
            errors: 1,
            interrupted: true,
            elapsed: Duration::from_secs(2),
            ..Summary::default()
        };
        a.merge(&b);
        assert_eq!((a.files, a.bytes, a.errors), (3, 15, 1));
        assert_eq!(a.bytes_by(Method::Stream), 5);
        assert!(a.interrupted);
        assert_eq!(a.elapsed, Duration::from_secs(3));
    }
}
