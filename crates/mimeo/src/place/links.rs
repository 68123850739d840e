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
        let slot = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            match map.get_mut(&id) {
                None => {
                    let slot = Arc::new(Slot {
                        state: Mutex::new(State::Copying),
                        ready: Condvar::new(),
                    });
                    if nlink > 1 {
                        map.insert(
                            id,
                            Entry {
                                slot: slot.clone(),
                                unseen: nlink - 1,
                            },
                        );
                    }
                    return Claim::First(FirstCopy {
                        slot,
                        finished: false,
                    });
                }
                Some(entry) => {
                    entry.unseen = entry.unseen.saturating_sub(1);
                    let slot = entry.slot.clone();
                    if entry.unseen == 0 {
                        map.remove(&id);
                    }
                    slot
                }
            }
        };
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
