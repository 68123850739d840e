//! A live view of a running copy, and its stop switch.

use super::outcome::Method;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// A live view of a running copy, and its stop switch. The caller owns it and may read it
/// from another thread (a progress bar) or stop the run (a signal handler).
///
/// ```
/// let control = mimeo::Control::new();
/// assert!(!control.is_stopped());
/// control.stop();
/// assert!(control.is_stopped());
/// ```
#[derive(Debug, Default)]
pub struct Control {
    stop: AtomicBool,
    /// Bytes written so far by clone, offload and stream.
    bytes: [AtomicU64; 3],
    entries: AtomicU64,
}

impl Control {
    /// A control for a run that has not started.
    pub fn new() -> Self {
        Control::default()
    }

    /// Asks the run to stop: entries in progress are removed, nothing new is started.
    pub fn stop(&self) {
        self.stop.store(true, Relaxed);
    }

    /// Whether [`Control::stop`] was called.
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
