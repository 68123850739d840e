//! Hard-link groups across ranks: each inode has an owner rank (a hash of its dev and ino),
//! which decides which sighting copies the group's first member and tells the others where
//! that copy is, as the engine's own map does within one process.
//!
//! Workers call [`LinkGroups`] and wait for the answer; the rank's messaging loop carries
//! their questions to the owners ([`DistLinks::outgoing`]) and the owners' answers back.

use crate::msg::{self, LinkAnswer, LinkAsk, LinkSettle, Tag};
use mimeo::work::{LinkClaim, LinkGroups, LinkLoc, Sighting};
use std::collections::{HashMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// A message for the messaging loop to send: destination rank, tag, payload.
pub type Outgoing = (i32, Tag, Vec<u8>);

/// The link groups of a run spread over ranks, seen from one rank.
#[derive(Debug)]
pub struct DistLinks {
    rank: i32,
    size: i32,
    state: Mutex<State>,
    answered: Condvar,
}

#[derive(Debug, Default)]
struct State {
    next_req: u64,
    /// This rank's workers waiting for an answer, by request (the inner None: copy it on its
    /// own, the answer to a lookup of an inode with no group).
    waiting: HashMap<u64, Option<Option<LinkClaim>>>,
    /// Questions and answers for other ranks.
    outbox: Vec<Outgoing>,
    /// The groups this rank owns.
    owned: HashMap<(u64, u64), Group>,
    /// The run is stopping: nobody waits any more.
    stopped: bool,
}

/// A group this rank owns.
#[derive(Debug)]
struct Group {
    first: First,
    /// Links of the inode not seen yet in this run.
    unseen: u64,
    /// Met through a symlink or on the command line (`-L`, `-H`): kept for the whole run.
    pinned: bool,
    /// Sightings waiting for the first copy: (rank, request).
    waiters: VecDeque<(i32, u64)>,
}

#[derive(Debug)]
enum First {
    Copying,
    Done(LinkLoc),
    Failed,
}

/// The rank that owns the group of inode `id` among `size` ranks.
pub fn owner(id: (u64, u64), size: i32) -> i32 {
    // splitmix64 of both halves: inode numbers are dense, devices few.
    let mut z = id.0.rotate_left(29) ^ id.1;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % size.max(1) as u64) as i32
}

impl DistLinks {
    pub fn new(rank: i32, size: i32) -> Self {
        DistLinks {
            rank,
            size,
            state: Mutex::new(State::default()),
            answered: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the messages waiting to be sent.
    pub fn outgoing(&self) -> Vec<Outgoing> {
        std::mem::take(&mut self.lock().outbox)
    }

    /// A claim from rank `from`, for a group this rank owns.
    pub fn on_claim(&self, from: i32, ask: LinkAsk) {
        let mut st = self.lock();
        self.owner_claim(&mut st, from, ask);
    }

    /// A settlement of a group this rank owns.
    pub fn on_settle(&self, settle: LinkSettle) {
        let mut st = self.lock();
        self.owner_settle(&mut st, settle.id, settle.loc);
    }

    /// An owner's answer to one of this rank's workers.
    pub fn on_answer(&self, answer: LinkAnswer) {
        let mut st = self.lock();
        self.deliver(&mut st, answer.req, answer.claim);
    }

    /// The run stops: waiting workers go on (their copies stop with the run).
    pub fn stop(&self) {
        let mut st = self.lock();
        st.stopped = true;
        for answer in st.waiting.values_mut() {
            answer.get_or_insert(Some(LinkClaim::First));
        }
        self.answered.notify_all();
    }

    fn deliver(&self, st: &mut State, req: u64, claim: Option<LinkClaim>) {
        if let Some(slot) = st.waiting.get_mut(&req) {
            *slot = Some(claim);
            self.answered.notify_all();
        }
    }

    fn answer(&self, st: &mut State, to: (i32, u64), claim: Option<LinkClaim>) {
        if to.0 == self.rank {
            self.deliver(st, to.1, claim);
        } else {
            let body = msg::encode(&LinkAnswer { req: to.1, claim });
            st.outbox.push((to.0, Tag::LinkAnswer, body));
        }
    }

    fn owner_claim(&self, st: &mut State, from: i32, ask: LinkAsk) {
        let to = (from, ask.req);
        let Some(group) = st.owned.get_mut(&ask.id) else {
            let (unseen, pinned) = match ask.how {
                Sighting::Lookup => return self.answer(st, to, None),
                Sighting::Link(nlink) => (nlink.saturating_sub(1), false),
                Sighting::Pinned => (0, true),
            };
            if unseen > 0 || pinned {
                st.owned.insert(
                    ask.id,
                    Group {
                        first: First::Copying,
                        unseen,
                        pinned,
                        waiters: VecDeque::new(),
                    },
                );
            }
            return self.answer(st, to, Some(LinkClaim::First));
        };
        match ask.how {
            Sighting::Pinned => group.pinned = true,
            Sighting::Link(_) | Sighting::Lookup => group.unseen = group.unseen.saturating_sub(1),
        }
        let claim = match &group.first {
            First::Copying => {
                group.waiters.push_back(to);
                return;
            }
            First::Done(loc) => LinkClaim::LinkTo(loc.clone()),
            First::Failed => {
                group.first = First::Copying;
                LinkClaim::First
            }
        };
        if group.unseen == 0 && !group.pinned && matches!(group.first, First::Done(_)) {
            st.owned.remove(&ask.id);
        }
        self.answer(st, to, Some(claim));
    }

    fn owner_settle(&self, st: &mut State, id: (u64, u64), loc: Option<LinkLoc>) {
        let Some(group) = st.owned.get_mut(&id) else {
            return;
        };
        let mut answers = Vec::new();
        match loc {
            Some(loc) => {
                answers.extend(
                    group
                        .waiters
                        .drain(..)
                        .map(|w| (w, LinkClaim::LinkTo(loc.clone()))),
                );
                group.first = First::Done(loc);
                if group.unseen == 0 && !group.pinned {
                    st.owned.remove(&id);
                }
            }
            // The first copy failed: the next waiting sighting makes it.
            None => match group.waiters.pop_front() {
                Some(w) => answers.push((w, LinkClaim::First)),
                None => group.first = First::Failed,
            },
        }
        for (to, claim) in answers {
            self.answer(st, to, Some(claim));
        }
    }
}

impl LinkGroups for DistLinks {
    fn claim(&self, id: (u64, u64), how: Sighting) -> Option<LinkClaim> {
        let mut st = self.lock();
        if st.stopped {
            return Some(LinkClaim::First);
        }
        let req = st.next_req;
        st.next_req += 1;
        st.waiting.insert(req, None);
        let ask = LinkAsk { id, how, req };
        let owner = owner(id, self.size);
        if owner == self.rank {
            self.owner_claim(&mut st, self.rank, ask);
        } else {
            st.outbox.push((owner, Tag::LinkClaim, msg::encode(&ask)));
        }
        loop {
            if let Some(Some(_)) = st.waiting.get(&req) {
                return st.waiting.remove(&req).flatten().flatten();
            }
            st = self
                .answered
                .wait_timeout(st, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn settle(&self, id: (u64, u64), loc: Option<LinkLoc>) {
        let mut st = self.lock();
        let owner = owner(id, self.size);
        if owner == self.rank {
            self.owner_settle(&mut st, id, loc);
        } else {
            let body = msg::encode(&LinkSettle { id, loc });
            st.outbox.push((owner, Tag::LinkSettle, body));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_spread_over_ranks() {
        let mut seen = [0usize; 4];
        for ino in 0..4000 {
            seen[owner((2049, ino), 4) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
        assert_eq!(owner((1, 2), 1), 0);
    }

    #[test]
    fn a_remote_sighting_waits_for_the_first_copy_and_links_to_it() {
        // Two ranks; find an inode owned by rank 0.
        let id = (7, (0..).find(|&i| owner((7, i), 2) == 0).unwrap());
        let owner0 = DistLinks::new(0, 2);
        assert_eq!(owner0.claim(id, Sighting::Link(3)), Some(LinkClaim::First));
        // Rank 1 asks while the copy is under way: no answer yet.
        owner0.on_claim(
            1,
            LinkAsk {
                id,
                how: Sighting::Link(3),
                req: 5,
            },
        );
        assert!(owner0.outgoing().is_empty());
        let loc = LinkLoc {
            root: 0,
            dir: Some(b"d".to_vec()),
            name: b"f".to_vec(),
        };
        owner0.settle(id, Some(loc.clone()));
        let out = owner0.outgoing();
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].0, out[0].1), (1, Tag::LinkAnswer));
        let answer: LinkAnswer = msg::decode(&out[0].2).unwrap();
        assert_eq!(answer.req, 5);
        assert_eq!(answer.claim, Some(LinkClaim::LinkTo(loc.clone())));
        // The third link, seen later, links at once; then the group is forgotten.
        assert_eq!(
            owner0.claim(id, Sighting::Link(3)),
            Some(LinkClaim::LinkTo(loc))
        );
        assert!(owner0.lock().owned.is_empty());
    }

    #[test]
    fn a_failed_first_copy_passes_to_the_next_waiter() {
        let id = (9, (0..).find(|&i| owner((9, i), 2) == 0).unwrap());
        let owner0 = DistLinks::new(0, 2);
        assert_eq!(owner0.claim(id, Sighting::Link(2)), Some(LinkClaim::First));
        owner0.on_claim(
            1,
            LinkAsk {
                id,
                how: Sighting::Link(2),
                req: 1,
            },
        );
        owner0.settle(id, None);
        let out = owner0.outgoing();
        let answer: LinkAnswer = msg::decode(&out[0].2).unwrap();
        assert_eq!(answer.claim, Some(LinkClaim::First));
    }

    #[test]
    fn pinned_groups_stay_and_lookups_join_them_only() {
        let id = (4, (0..).find(|&i| owner((4, i), 2) == 1).unwrap());
        let owner1 = DistLinks::new(1, 2);
        let ask = |how, req| LinkAsk { id, how, req };
        // A lookup before any pinned sighting: no group, copy it on its own.
        owner1.on_claim(0, ask(Sighting::Lookup, 1));
        let out = owner1.outgoing();
        let answer: LinkAnswer = msg::decode(&out[0].2).unwrap();
        assert_eq!((answer.req, answer.claim), (1, None));
        assert!(owner1.lock().owned.is_empty());
        // A pinned sighting makes the group, and it outlives any number of sightings.
        assert_eq!(owner1.claim(id, Sighting::Pinned), Some(LinkClaim::First));
        let loc = LinkLoc {
            root: 0,
            dir: None,
            name: b"via-link".to_vec(),
        };
        owner1.settle(id, Some(loc.clone()));
        for (req, how) in [Sighting::Lookup, Sighting::Pinned, Sighting::Lookup]
            .into_iter()
            .enumerate()
        {
            owner1.on_claim(0, ask(how, req as u64));
            let out = owner1.outgoing();
            let answer: LinkAnswer = msg::decode(&out[0].2).unwrap();
            assert_eq!(answer.claim, Some(LinkClaim::LinkTo(loc.clone())));
        }
        assert_eq!(owner1.lock().owned.len(), 1);
    }
}
