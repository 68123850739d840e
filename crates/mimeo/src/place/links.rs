//! Hard-link groups: (dev, ino) of a source with nlink > 1 → the destination made for it first.
//!
//! Only multiply-linked inodes are remembered, and an entry is dropped once every one of its
//! links has been seen, so memory follows the number of link groups in flight, not the
//! number of files. Members of a group may be reached by different workers at the same time:
//! the first claims the inode and copies it, the others wait for it and then link.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Condvar, Mutex};

/// Where the first copy of a hard-link group was made, as plain data: a root, the directory
/// below it, and a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkLoc {
    /// The root (command-line pair) it was copied under.
    pub root: u32,
    /// The directory below the root's destination; None for the root entry itself, which
    /// sits in the root's destination parent.
    pub dir: Option<Arc<[u8]>>,
    pub name: CString,
}

#[derive(Debug)]
enum State<L> {
    Copying,
    Done(L),
    Failed,
}

#[derive(Debug)]
struct Slot<L> {
    state: Mutex<State<L>>,
    ready: Condvar,
}

#[derive(Debug)]
struct Entry<L> {
    slot: Arc<Slot<L>>,
    /// Links of the inode not seen yet in this run.
    unseen: u64,
    /// Reached through a symlink or named on the command line (`-L`, `-H`): it may be met
    /// any number of times, so it is kept for the whole run.
    pinned: bool,
}

/// What a worker should do with a multiply-linked source.
#[derive(Debug)]
pub(crate) enum Claim<L> {
    /// Copy it, then call [`FirstCopy::done`] or [`FirstCopy::failed`].
    First(FirstCopy<L>),
    /// Link to this earlier copy.
    LinkTo(L),
}

/// The duty of the worker that copies a group's first member.
#[derive(Debug)]
pub(crate) struct FirstCopy<L> {
    slot: Arc<Slot<L>>,
    finished: bool,
}

impl<L> FirstCopy<L> {
    pub fn done(mut self, location: L) {
        self.finish(State::Done(location));
    }

    fn finish(&mut self, state: State<L>) {
        *self.slot.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
        self.finished = true;
        self.slot.ready.notify_all();
    }
}

impl<L> Drop for FirstCopy<L> {
    fn drop(&mut self) {
        if !self.finished {
            self.finish(State::Failed);
        }
    }
}

/// How an inode was met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sighting {
    /// One of its `nlink` links.
    Link,
    /// Through a symlink or on the command line: kept for the whole run.
    Pinned,
    /// Directly, with one link: only an earlier pinned sighting makes it a member.
    Lookup,
}

/// The run's map of link groups.
#[derive(Debug)]
pub(crate) struct LinkMap<L> {
    map: Mutex<HashMap<(u64, u64), Entry<L>>>,
}

impl<L: Clone> LinkMap<L> {
    pub fn new() -> Self {
        LinkMap {
            map: Mutex::new(HashMap::new()),
        }
    }

    /// Registers one sighting of inode `id` with `nlink` links.
    pub fn claim(&self, id: (u64, u64), nlink: u64) -> Claim<L> {
        self.sighting(id, nlink, Sighting::Link)
            .expect("a link is always registered")
    }

    /// Registers a sighting of inode `id` that may recur beyond its link count: a file
    /// reached through a symlink under `-L`, or named on the command line under `-H`/`-L`.
    /// Such inodes are remembered for the whole run, as cp remembers them.
    pub fn claim_pinned(&self, id: (u64, u64)) -> Claim<L> {
        self.sighting(id, 1, Sighting::Pinned)
            .expect("a pinned sighting is always registered")
    }

    /// A file with a single link reached directly under `-L`: it joins the group of an
    /// earlier sighting through a symlink, if there is one, and registers nothing.
    pub fn lookup(&self, id: (u64, u64)) -> Option<Claim<L>> {
        self.sighting(id, 1, Sighting::Lookup)
    }

    fn sighting(&self, id: (u64, u64), nlink: u64, how: Sighting) -> Option<Claim<L>> {
        let slot = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            match map.get_mut(&id) {
                None if how == Sighting::Lookup => return None,
                None => {
                    let slot = Arc::new(Slot {
                        state: Mutex::new(State::Copying),
                        ready: Condvar::new(),
                    });
                    let pinned = how == Sighting::Pinned;
                    if nlink > 1 || pinned {
                        map.insert(
                            id,
                            Entry {
                                slot: slot.clone(),
                                unseen: nlink.saturating_sub(1),
                                pinned,
                            },
                        );
                    }
                    return Some(Claim::First(FirstCopy {
                        slot,
                        finished: false,
                    }));
                }
                Some(entry) => {
                    let slot = entry.slot.clone();
                    match how {
                        Sighting::Pinned => entry.pinned = true,
                        Sighting::Link | Sighting::Lookup => {
                            entry.unseen = entry.unseen.saturating_sub(1);
                        }
                    }
                    if entry.unseen == 0 && !entry.pinned {
                        map.remove(&id);
                    }
                    slot
                }
            }
        };
        Some(Self::join(slot))
    }

    /// Waits for the group's first copy and links to it, or becomes the copy if it failed.
    fn join(slot: Arc<Slot<L>>) -> Claim<L> {
        let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match &*state {
                State::Copying => {
                    state = slot.ready.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                State::Done(loc) => return Claim::LinkTo(loc.clone()),
                State::Failed => {
                    // The first copy failed: this member becomes the group's copy.
                    *state = State::Copying;
                    return Claim::First(FirstCopy {
                        slot: slot.clone(),
                        finished: false,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_copies_then_others_link_and_entry_is_dropped() {
        let map: LinkMap<&'static str> = LinkMap::new();
        let Claim::First(first) = map.claim((1, 2), 3) else {
            panic!("first sighting must copy");
        };
        first.done("a");
        assert!(matches!(map.claim((1, 2), 3), Claim::LinkTo("a")));
        assert!(matches!(map.claim((1, 2), 3), Claim::LinkTo("a")));
        assert!(map.map.lock().unwrap().is_empty(), "all links seen");
    }

    #[test]
    fn pinned_inodes_stay_and_single_links_join_them_only() {
        let map: LinkMap<&'static str> = LinkMap::new();
        assert!(map.lookup((1, 1)).is_none(), "nothing registered");
        assert!(map.map.lock().unwrap().is_empty());
        let Claim::First(first) = map.claim_pinned((1, 1)) else {
            panic!("first sighting must copy");
        };
        first.done("via-link");
        for _ in 0..3 {
            assert!(matches!(
                map.lookup((1, 1)),
                Some(Claim::LinkTo("via-link"))
            ));
            assert!(matches!(
                map.claim_pinned((1, 1)),
                Claim::LinkTo("via-link")
            ));
        }
        // A group met through a symlink outlives its link count.
        let Claim::First(first) = map.claim((2, 2), 2) else {
            panic!()
        };
        first.done("g");
        assert!(matches!(map.claim_pinned((2, 2)), Claim::LinkTo("g")));
        assert!(matches!(map.claim((2, 2), 2), Claim::LinkTo("g")));
        assert!(matches!(map.claim_pinned((2, 2)), Claim::LinkTo("g")));
    }

    #[test]
    fn a_failed_first_copy_hands_the_group_to_the_next_member() {
        let map: LinkMap<&'static str> = LinkMap::new();
        let Claim::First(first) = map.claim((1, 2), 2) else {
            panic!()
        };
        drop(first);
        assert!(matches!(map.claim((1, 2), 2), Claim::First(_)));
    }

    #[test]
    fn waiters_block_until_the_first_copy_is_done() {
        let map = Arc::new(LinkMap::<u32>::new());
        let Claim::First(first) = map.claim((7, 7), 3) else {
            panic!()
        };
        let m = map.clone();
        let waiter = std::thread::spawn(move || matches!(m.claim((7, 7), 3), Claim::LinkTo(9)));
        std::thread::sleep(std::time::Duration::from_millis(20));
        first.done(9);
        assert!(waiter.join().unwrap());
    }
}
