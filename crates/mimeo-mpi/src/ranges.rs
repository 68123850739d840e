//! Ranges of large files across ranks: a file is split by the rank that meets it (its
//! *owner* here), and its range items spread by stealing like any other item. A worker of
//! another rank that starts such an item first asks the owner for the range
//! ([`DistRanges::ask`]); the owner lends it unless the range is taken already
//! (`Executor::lend_range`, answered by the messaging loop, never by a worker, so the answer
//! always comes). The worker copies it and sends how it went back to the owner
//! ([`DistRanges::done`]), whose splitter then applies the file's metadata once, after its
//! last range.

use crate::links::Outgoing;
use crate::msg::{self, RangeAnswer, RangeAsk, Tag};
use mimeo::work::{FileRange, RangeDone};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The range requests of one rank's workers, and the messages they leave for the loop.
#[derive(Debug, Default)]
pub struct DistRanges {
    /// This rank.
    pub rank: i32,
    state: Mutex<State>,
    answered: Condvar,
    /// Ranges of other ranks' files that this rank's workers copied.
    pub copied: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    next_req: u64,
    /// Workers waiting for an owner's answer, by request.
    waiting: HashMap<u64, Option<bool>>,
    outbox: Vec<Outgoing>,
    /// A rank is lost: nobody waits any more.
    stopped: bool,
}

impl DistRanges {
    pub fn new(rank: i32) -> Self {
        DistRanges {
            rank,
            ..DistRanges::default()
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks rank `owner` for `range` and waits for its answer: true if this worker is to copy
    /// it. The wait does not end on a stop: the owner may have lent the range already and
    /// waits for its outcome (a lent range stops at once when the run is stopped). A rank
    /// that dies ends the job instead (see `sched`).
    pub fn ask(&self, owner: i32, range: &FileRange) -> bool {
        let mut st = self.lock();
        if st.stopped {
            return false;
        }
        let req = st.next_req;
        st.next_req += 1;
        st.waiting.insert(req, None);
        let ask = RangeAsk {
            file: range.file,
            offset: range.offset,
            req,
        };
        st.outbox.push((owner, Tag::RangeAsk, msg::encode(&ask)));
        loop {
            if let Some(&Some(lent)) = st.waiting.get(&req) {
                st.waiting.remove(&req);
                if lent {
                    self.copied.fetch_add(1, Ordering::Relaxed);
                }
                return lent;
            }
            st = self
                .answered
                .wait_timeout(st, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// A lent range is copied (or failed): tells its owner.
    pub fn done(&self, owner: i32, done: &RangeDone) {
        self.lock()
            .outbox
            .push((owner, Tag::RangeDone, msg::encode(done)));
    }

    /// The loop's answer to rank `to`'s request `req`.
    pub fn answer(&self, to: i32, req: u64, lent: bool) {
        let body = msg::encode(&RangeAnswer { req, lent });
        self.lock().outbox.push((to, Tag::RangeAnswer, body));
    }

    /// An owner's answer to one of this rank's workers.
    pub fn on_answer(&self, answer: RangeAnswer) {
        let mut st = self.lock();
        if let Some(slot) = st.waiting.get_mut(&answer.req) {
            *slot = Some(answer.lent);
            self.answered.notify_all();
        }
    }

    /// A rank is lost and the job ends: waiting workers go on without their ranges.
    pub fn stop(&self) {
        let mut st = self.lock();
        st.stopped = true;
        for answer in st.waiting.values_mut() {
            answer.get_or_insert(false);
        }
        self.answered.notify_all();
    }

    /// Takes the messages waiting to be sent.
    pub fn outgoing(&self) -> Vec<Outgoing> {
        std::mem::take(&mut self.lock().outbox)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn range(offset: u64) -> FileRange {
        let item: mimeo::work::WorkItem = serde_json::from_value(serde_json::json!({
            "root": 0, "path": [], "stat": null,
            "kind": {"Range": {"file": 7, "at_root": true, "name": [97], "written": [97],
                               "offset": offset, "len": 10}}
        }))
        .unwrap();
        match item.kind {
            mimeo::work::WorkKind::Range(r) => r,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_worker_waits_for_the_owners_answer_and_counts_what_it_copies() {
        let ranges = Arc::new(DistRanges::default());
        for lent in [true, false] {
            let asking = {
                let ranges = ranges.clone();
                std::thread::spawn(move || ranges.ask(3, &range(10)))
            };
            // The loop sends the question, then the owner's answer comes back.
            let ask = loop {
                if let Some((to, tag, body)) = ranges.outgoing().pop() {
                    assert_eq!((to, tag), (3, Tag::RangeAsk));
                    break msg::decode::<RangeAsk>(&body).unwrap();
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            assert_eq!((ask.file, ask.offset), (7, 10));
            ranges.on_answer(RangeAnswer { req: ask.req, lent });
            assert_eq!(asking.join().unwrap(), lent);
        }
        assert_eq!(ranges.copied.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_lost_rank_releases_waiting_workers() {
        let ranges = Arc::new(DistRanges::default());
        let asking = {
            let ranges = ranges.clone();
            std::thread::spawn(move || ranges.ask(1, &range(0)))
        };
        while ranges.lock().waiting.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        ranges.stop();
        assert!(!asking.join().unwrap());
    }
}
