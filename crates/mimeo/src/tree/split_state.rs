//! The state of the large files a run copies in ranges (see `split`): which ranges are
//! taken, how they went, and the splitter's wait for its helpers. Shared through `Ctx`, so
//! it imports no other part of `tree`.

use crate::data::copy::{DataError, Written};
use crate::place::resume::ResumeProgress;
use crate::report::Op;
use rustix::fd::OwnedFd;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// The run's split files, by id.
#[derive(Debug, Default)]
pub(crate) struct Splits {
    pub next: AtomicU64,
    pub live: Mutex<HashMap<u64, Arc<Split>>>,
    /// Other processes of the run copy ranges too (see `Executor::lend_range`): a file is
    /// split even where this process has a single worker.
    pub lending: bool,
}

impl Splits {
    pub fn get(&self, id: u64) -> Option<Arc<Split>> {
        lock(&self.live).get(&id).cloned()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Ranges finished (copied, failed, or given up).
    pub finished: usize,
    /// The first failure; a stop request only when nothing else failed.
    pub error: Option<DataError>,
    /// What helpers wrote.
    pub helpers: Written,
}

/// One file being copied in ranges.
#[derive(Debug)]
pub(crate) struct Split {
    /// The source's (dev, ino): a helper checks that it opened the same file.
    pub src: (u64, u64),
    /// The file's resume record, which every worker keeps up to date with its ranges.
    pub progress: Option<Arc<ResumeProgress>>,
    /// The copy, for recording the ranges other processes copied in `progress`: only when
    /// both are there.
    pub dst: Option<OwnedFd>,
    pub ranges: Vec<(u64, u64)>,
    pub taken: Vec<AtomicBool>,
    /// Set when a range failed: ranges not started are given up.
    pub abort: AtomicBool,
    pub tally: Mutex<Tally>,
    pub finished: Condvar,
}

impl Split {
    pub fn take(&self, i: usize) -> bool {
        !self.taken[i].swap(true, Ordering::SeqCst)
    }

    pub fn finish(&self, did: Result<Written, DataError>, by_helper: bool) {
        let mut t = lock(&self.tally);
        t.finished += 1;
        match did {
            Ok(w) if by_helper => {
                t.helpers.bytes += w.bytes;
                t.helpers.offloaded |= w.offloaded;
                t.helpers.streamed |= w.streamed;
            }
            Ok(_) => {}
            Err(e) => {
                self.abort.store(true, Ordering::SeqCst);
                let stop = |e: &Option<DataError>| e.is_some_and(|e| e.op == Op::Interrupted);
                if t.error.is_none() || stop(&t.error) {
                    t.error = Some(e);
                }
            }
        }
        drop(t);
        self.finished.notify_all();
    }
}
