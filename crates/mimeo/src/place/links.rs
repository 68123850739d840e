//! Hard-link groups: (dev, ino) of a source with nlink > 1 → the destination made for it first.
//!
//! Who copies a group's first member and where the others find it is asked of a
//! [`LinkGroups`]. The run's own is a [`LinkMap`] in memory; a scheduler that spreads one run
//! over processes gives the executor one that asks the process owning the inode (see
//! `Executor::with_link_groups`), so that a group stays one group whichever process reaches
//! its members.
//!
//! The map remembers only multiply-linked inodes (and, under `-L` and `-H`, files reached
//! through symlinks or named on the command line), and drops an entry once every one of its
//! links has been seen, so memory follows the number of link groups in flight, not the
//! number of files. Members of a group may be reached by different workers at the same time:
//! the first claims the inode and copies it, the others wait for it and then link.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

/// Where the first copy of a hard-link group was made, as plain data that means the same in
/// every process of a run: a root, the directory below it, and a name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LinkLoc {
    /// The root (command-line pair) it was copied under.
    pub root: u32,
    /// The directory below the root's destination, components separated by `/`; None for the
    /// root entry itself, which sits in the root's destination parent.
    pub dir: Option<Vec<u8>>,
    /// Its name in that directory (no NUL byte).
    pub name: Vec<u8>,
}

/// How a source inode was met, in one call of [`LinkGroups::claim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Sighting {
    /// One of its links; it has this many (more than one).
    Link(u64),
    /// Reached through a symlink under `-L`, or named on the command line under `-H` or `-L`:
    /// it may be met any number of times, so its group is kept for the whole run, as cp
    /// keeps it.
    Pinned,
    /// A file with a single link: it joins the group of an earlier pinned sighting if there is
    /// one, and registers nothing otherwise. (The copy no longer asks this: under `-L` every
    /// file is [`Sighting::Pinned`], as one may be met again below a symlinked directory.)
    Lookup,
}

/// The answer to one sighting of a source ([`LinkGroups::claim`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum LinkClaim {
    /// Copy it: this sighting makes the group's first copy, and must then call
    /// [`LinkGroups::settle`] for the inode, whatever happens.
    First,
    /// Link to this earlier copy.
    LinkTo(LinkLoc),
}

/// The hard-link groups of one run: which sighting of an inode copies it, and where the other
/// sightings find that copy.
///
/// The executor calls [`claim`](LinkGroups::claim) for every sighting of a source with more
/// than one link (with `--preserve=links`), and for files met through symlinks or on the
/// command line under `-L` and `-H` (see [`Sighting`]), and [`settle`](LinkGroups::settle) once for every
/// [`LinkClaim::First`] it was given. Implementations must be safe to call from many threads
/// at once. The default is a map in the process's memory; a run spread over processes gives
/// every process's executor one that agrees with the others (for example by asking a process
/// chosen by a hash of the inode).
pub trait LinkGroups: Sync {
    /// One sighting of inode `id` (dev, ino). May wait while another sighting of the same
    /// inode is being copied; after a failed first copy, a waiting sighting gets
    /// [`LinkClaim::First`] in its turn. None only for a [`Sighting::Lookup`] of an inode
    /// that no pinned sighting registered: copy it on its own.
    fn claim(&self, id: (u64, u64), how: Sighting) -> Option<LinkClaim>;

    /// The first copy of inode `id`, claimed by a [`LinkClaim::First`], is now at `loc`, or
    /// failed (None).
    fn settle(&self, id: (u64, u64), loc: Option<LinkLoc>);
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
    /// Met through a symlink or on the command line: kept for the whole run.
    pinned: bool,
}

/// What a worker should do with a multiply-linked source.
#[derive(Debug)]
pub(crate) enum Claim<L> {
    /// Copy it, then [`LinkMap::settle`] it.
    First,
    /// Link to this earlier copy.
    LinkTo(L),
}

/// The link groups of a run, in memory.
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(u64, u64), Entry<L>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers one sighting of inode `id` with `nlink` links.
    #[cfg(test)]
    pub fn claim(&self, id: (u64, u64), nlink: u64) -> Claim<L> {
        self.sighting(id, Sighting::Link(nlink))
            .expect("a link is always registered")
    }

    /// Registers one sighting of inode `id`, met as `how` says.
    pub fn sighting(&self, id: (u64, u64), how: Sighting) -> Option<Claim<L>> {
        let slot = {
            let mut map = self.lock();
            match map.get_mut(&id) {
                None if how == Sighting::Lookup => return None,
                None => {
                    let (unseen, pinned) = match how {
                        Sighting::Link(nlink) => (nlink.saturating_sub(1), false),
                        _ => (0, true),
                    };
                    if unseen > 0 || pinned {
                        let slot = Arc::new(Slot {
                            state: Mutex::new(State::Copying),
                            ready: Condvar::new(),
                        });
                        map.insert(
                            id,
                            Entry {
                                slot,
                                unseen,
                                pinned,
                            },
                        );
                    }
                    return Some(Claim::First);
                }
                Some(entry) => {
                    match how {
                        Sighting::Pinned => entry.pinned = true,
                        Sighting::Link(_) | Sighting::Lookup => {
                            entry.unseen = entry.unseen.saturating_sub(1);
                        }
                    }
                    let slot = entry.slot.clone();
                    if entry.unseen == 0
                        && !entry.pinned
                        && matches!(
                            *slot.state.lock().unwrap_or_else(|e| e.into_inner()),
                            State::Done(_)
                        )
                    {
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
                State::Done(loc) => return Some(Claim::LinkTo(loc.clone())),
                State::Failed => {
                    // The first copy failed: this member becomes the group's copy.
                    *state = State::Copying;
                    return Some(Claim::First);
                }
            }
        }
    }

    /// The first copy of `id` is at `loc`, or failed (None). The entry stays until every link
    /// of the inode has been seen.
    pub fn settle(&self, id: (u64, u64), loc: Option<L>) {
        let mut map = self.lock();
        let Some(entry) = map.get(&id) else {
            return;
        };
        let slot = entry.slot.clone();
        let done = loc.is_some();
        *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = match loc {
            Some(l) => State::Done(l),
            None => State::Failed,
        };
        slot.ready.notify_all();
        if done && entry.unseen == 0 && !entry.pinned {
            map.remove(&id);
        }
    }
}

impl LinkGroups for LinkMap<LinkLoc> {
    fn claim(&self, id: (u64, u64), how: Sighting) -> Option<LinkClaim> {
        Some(match self.sighting(id, how)? {
            Claim::First => LinkClaim::First,
            Claim::LinkTo(loc) => LinkClaim::LinkTo(loc),
        })
    }

    fn settle(&self, id: (u64, u64), loc: Option<LinkLoc>) {
        LinkMap::settle(self, id, loc);
    }
}

/// The duty of the worker that copies a group's first member: settles the inode when done
/// with, as failed unless [`FirstCopy::done`] said where the copy is.
pub(crate) struct FirstCopy<'a> {
    groups: &'a dyn LinkGroups,
    id: (u64, u64),
    finished: bool,
    /// Remembered only where -u skips it (see [`FirstCopy::if_skipped`]).
    only_skipped: bool,
}

impl<'a> FirstCopy<'a> {
    pub fn new(groups: &'a dyn LinkGroups, id: (u64, u64)) -> Self {
        FirstCopy {
            groups,
            id,
            finished: false,
            only_skipped: false,
        }
    }

    /// A member cp remembers only where -u skips it as up to date: a copy it makes is left
    /// out of the group, whose next member is its first in turn.
    pub fn if_skipped(mut self) -> Self {
        self.only_skipped = true;
        self
    }

    /// The copy is at `location`; for a member remembered only where skipped, only if
    /// `skipped`.
    pub fn done(mut self, location: LinkLoc, skipped: bool) {
        if self.only_skipped && !skipped {
            return;
        }
        self.finished = true;
        self.groups.settle(self.id, Some(location));
    }
}

impl Drop for FirstCopy<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.groups.settle(self.id, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(c: Claim<&'static str>) -> bool {
        matches!(c, Claim::First)
    }

    #[test]
    fn first_copies_then_others_link_and_entry_is_dropped() {
        let map: LinkMap<&'static str> = LinkMap::new();
        assert!(first(map.claim((1, 2), 3)), "first sighting must copy");
        map.settle((1, 2), Some("a"));
        assert!(matches!(map.claim((1, 2), 3), Claim::LinkTo("a")));
        assert!(matches!(map.claim((1, 2), 3), Claim::LinkTo("a")));
        assert!(map.lock().is_empty(), "all links seen");
    }

    #[test]
    fn the_entry_stays_until_the_first_copy_is_settled() {
        // Every link seen before the first copy is done: the entry must survive until then.
        let map = Arc::new(LinkMap::<u32>::new());
        assert!(matches!(map.claim((3, 3), 2), Claim::First));
        let m = map.clone();
        let waiter = std::thread::spawn(move || matches!(m.claim((3, 3), 2), Claim::LinkTo(5)));
        std::thread::sleep(std::time::Duration::from_millis(20));
        map.settle((3, 3), Some(5));
        assert!(waiter.join().unwrap());
        assert!(map.lock().is_empty());
    }

    #[test]
    fn pinned_inodes_stay_and_single_links_join_them_only() {
        let map: LinkMap<&'static str> = LinkMap::new();
        assert!(
            map.sighting((1, 1), Sighting::Lookup).is_none(),
            "nothing registered"
        );
        assert!(map.lock().is_empty());
        assert!(matches!(
            map.sighting((1, 1), Sighting::Pinned),
            Some(Claim::First)
        ));
        map.settle((1, 1), Some("via-link"));
        for _ in 0..3 {
            for how in [Sighting::Lookup, Sighting::Pinned] {
                assert!(matches!(
                    map.sighting((1, 1), how),
                    Some(Claim::LinkTo("via-link"))
                ));
            }
        }
        // A group met through a symlink outlives its link count.
        assert!(first(map.claim((2, 2), 2)));
        map.settle((2, 2), Some("g"));
        for how in [Sighting::Pinned, Sighting::Link(2), Sighting::Pinned] {
            assert!(matches!(
                map.sighting((2, 2), how),
                Some(Claim::LinkTo("g"))
            ));
        }
    }

    #[test]
    fn a_failed_first_copy_hands_the_group_to_the_next_member() {
        let map: LinkMap<&'static str> = LinkMap::new();
        assert!(first(map.claim((1, 2), 2)));
        map.settle((1, 2), None);
        assert!(first(map.claim((1, 2), 2)));
    }

    #[test]
    fn waiters_block_until_the_first_copy_is_done() {
        let map = Arc::new(LinkMap::<u32>::new());
        assert!(matches!(map.claim((7, 7), 3), Claim::First));
        let m = map.clone();
        let waiter = std::thread::spawn(move || matches!(m.claim((7, 7), 3), Claim::LinkTo(9)));
        std::thread::sleep(std::time::Duration::from_millis(20));
        map.settle((7, 7), Some(9));
        assert!(waiter.join().unwrap());
    }
}
