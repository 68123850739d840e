//! Extent-sharing groups (`--preserve=sharing`): the extents that source files share (reflink
//! clones, dedupe results, images cloned from one another) stay shared in the copy, also
//! where the copy cannot clone from its source (another filesystem).
//!
//! The same idea as hard-link groups ([`links`](super::links)), per extent instead of per
//! inode: the first time a shared physical extent of the source is met, its bytes are written
//! into that file's copy, which becomes the extent's *holder*; every later reference to it is
//! cloned (`FICLONERANGE`) from the holder. Workers coordinate through one map: a piece being
//! written is marked so, and a worker that needs it waits until it is written, then clones.
//!
//! - **What counts.** FIEMAP extents flagged `FIEMAP_EXTENT_SHARED` with a known physical
//!   address. Physical 0 and extents flagged UNKNOWN, DELALLOC, DATA_INLINE, NOT_ALIGNED,
//!   ENCODED (compressed: the physical length is not the logical one) or UNWRITTEN are
//!   unknown, never shared.
//! - **Partial references.** btrfs and XFS report the part of an extent a file references, so
//!   two files may reference overlapping parts of one extent. The map holds disjoint physical
//!   intervals per source device; a reference is split into the parts already held (cloned)
//!   and the gaps (written, and held from then on).
//! - **No deadlock.** A worker waits only before it claims anything, for pieces others are
//!   writing; it claims the gaps of one extent at a time and writes them before it claims
//!   the next, so whoever it waits for is writing, never waiting.
//! - **Bounded memory.** One entry per shared physical interval met, plus one per holder
//!   file: memory grows with the number of shared extents, never with the number of files.
//! - **Failures.** A holder whose copy failed is marked dead before it is removed, and its
//!   pieces are written again by the next reference. A holder is opened by its place below
//!   the destination root and checked by inode number; where it cannot be, the piece is
//!   written from the source. A clone that fails is written over (see `data::range`).

use super::links::LinkLoc;
use crate::data::copy::{DataError, FileCopy};
use crate::sys::{self, Extent};
use rustix::fd::{AsFd, OwnedFd};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// A destination file that holds shared extents for later references to clone from.
#[derive(Debug)]
pub(crate) struct Holder {
    /// Where it is: its directory below a root, and its name, which changes when a
    /// temporary is renamed to the final name.
    loc: Mutex<LinkLoc>,
    /// Its (dev, ino), checked after it is opened.
    id: (u64, u64),
    /// False once its copy failed and it is being removed.
    alive: AtomicBool,
}

impl Holder {
    pub fn new(loc: LinkLoc, id: (u64, u64)) -> Arc<Holder> {
        Arc::new(Holder {
            loc: Mutex::new(loc),
            id,
            alive: AtomicBool::new(true),
        })
    }

    /// The file is now under `name` in the same directory (a temporary was committed).
    pub fn renamed(&self, name: &std::ffi::CStr) {
        lock(&self.loc).name = name.to_bytes().to_vec();
    }

    /// The copy failed: nothing may clone from it any more.
    pub fn kill(&self) {
        self.alive.store(false, Ordering::SeqCst);
    }

    fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug)]
enum State {
    /// A worker is writing it.
    Writing,
    /// `holder` holds it at `offset`.
    Done { holder: Arc<Holder>, offset: u64 },
}

#[derive(Debug)]
struct Piece {
    len: u64,
    state: State,
}

/// A part of one reference to a shared extent, relative to the reference's start.
#[derive(Debug)]
pub(crate) enum Part {
    /// Clone `len` bytes at `at` from `holder` at `offset`.
    Clone {
        at: u64,
        len: u64,
        holder: Arc<Holder>,
        offset: u64,
    },
    /// Write `len` bytes at `at`; the caller now holds them (as being written), and must
    /// call [`ExtentMap::written`] or [`ExtentMap::abandon`].
    Write { at: u64, len: u64 },
}

/// The run's map of shared physical extents: (source device, physical start) → piece.
#[derive(Debug, Default)]
pub(crate) struct ExtentMap {
    map: Mutex<BTreeMap<(u64, u64), Piece>>,
    changed: Condvar,
}

impl ExtentMap {
    /// Pieces known (held or being written).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// The entries of `dev` that overlap `[phys, end)`, by start.
    fn overlapping(
        map: &BTreeMap<(u64, u64), Piece>,
        dev: u64,
        phys: u64,
        end: u64,
    ) -> Vec<(u64, u64)> {
        let mut keys = Vec::new();
        if let Some((&(d, start), piece)) = map.range(..(dev, phys)).next_back() {
            if d == dev && start + piece.len > phys {
                keys.push(start);
            }
        }
        keys.extend(
            map.range((dev, phys)..(dev, end))
                .map(|(&(_, start), _)| start),
        );
        keys.into_iter().map(|k| (dev, k)).collect()
    }

    /// One reference to `len` bytes of the shared extent at `phys` of device `dev`: which
    /// parts to clone from a holder, and which to write (now held by the caller as being
    /// written). Waits while another worker writes a part of it.
    pub fn claim(&self, dev: u64, phys: u64, len: u64) -> Vec<Part> {
        let end = phys + len;
        let mut map = lock(&self.map);
        loop {
            // A dead holder's pieces are gone: whoever comes next writes them again.
            let keys = Self::overlapping(&map, dev, phys, end);
            let mut busy = false;
            for k in &keys {
                match &map[k].state {
                    State::Writing => busy = true,
                    State::Done { holder, .. } if !holder.is_alive() => {
                        map.remove(k);
                    }
                    State::Done { .. } => {}
                }
            }
            if !busy {
                break;
            }
            map = self.changed.wait(map).unwrap_or_else(|e| e.into_inner());
        }
        let mut parts = Vec::new();
        let mut pos = phys;
        for k in Self::overlapping(&map, dev, phys, end) {
            let piece = &map[&k];
            let (start, stop) = (k.1, k.1 + piece.len);
            if start > pos {
                parts.push(Part::Write {
                    at: pos - phys,
                    len: start - pos,
                });
            }
            let (from, to) = (start.max(pos), stop.min(end));
            if let State::Done { holder, offset } = &piece.state {
                parts.push(Part::Clone {
                    at: from - phys,
                    len: to - from,
                    holder: holder.clone(),
                    offset: offset + (from - start),
                });
            }
            pos = to;
        }
        if pos < end {
            parts.push(Part::Write {
                at: pos - phys,
                len: end - pos,
            });
        }
        for p in &parts {
            if let Part::Write { at, len } = p {
                map.insert(
                    (dev, phys + at),
                    Piece {
                        len: *len,
                        state: State::Writing,
                    },
                );
            }
        }
        parts
    }

    /// The piece at `phys` that the caller was writing is now in `holder` at `offset`.
    pub fn written(&self, dev: u64, phys: u64, holder: &Arc<Holder>, offset: u64) {
        if let Some(piece) = lock(&self.map).get_mut(&(dev, phys)) {
            piece.state = State::Done {
                holder: holder.clone(),
                offset,
            };
        }
        self.changed.notify_all();
    }

    /// The piece at `phys` that the caller was writing will not be written: the next
    /// reference writes it.
    pub fn abandon(&self, dev: u64, phys: u64) {
        let mut map = lock(&self.map);
        if matches!(map.get(&(dev, phys)), Some(p) if matches!(p.state, State::Writing)) {
            map.remove(&(dev, phys));
        }
        drop(map);
        self.changed.notify_all();
    }

    /// Records that `holder` already holds the extent at `phys` at `offset` (a copy that an
    /// earlier run made and `-u` keeps), for the parts nobody holds yet.
    pub fn hold(&self, dev: u64, phys: u64, len: u64, holder: &Arc<Holder>, offset: u64) {
        let end = phys + len;
        let mut map = lock(&self.map);
        let mut gaps = Vec::new();
        let mut pos = phys;
        for k in Self::overlapping(&map, dev, phys, end) {
            let (start, stop) = (k.1, k.1 + map[&k].len);
            if start > pos {
                gaps.push((pos, start - pos));
            }
            pos = pos.max(stop);
        }
        if pos < end {
            gaps.push((pos, end - pos));
        }
        for (at, n) in gaps {
            map.insert(
                (dev, at),
                Piece {
                    len: n,
                    state: State::Done {
                        holder: holder.clone(),
                        offset: offset + (at - phys),
                    },
                },
            );
        }
    }
}

/// Flags that make an extent's physical address unknown, or unusable for sharing.
const UNKNOWN: u32 = sys::FIEMAP_EXTENT_UNKNOWN
    | sys::FIEMAP_EXTENT_DELALLOC
    | sys::FIEMAP_EXTENT_ENCODED
    | sys::FIEMAP_EXTENT_DATA_INLINE
    | sys::FIEMAP_EXTENT_NOT_ALIGNED
    | sys::FIEMAP_EXTENT_UNWRITTEN;

/// The extents of a source file that are shared with known physical addresses, below its
/// size; empty when it has none.
pub(crate) fn shared_extents(all: Vec<Extent>, size: u64) -> Vec<Extent> {
    all.into_iter()
        .filter(|e| {
            e.flags & sys::FIEMAP_EXTENT_SHARED != 0
                && e.flags & UNKNOWN == 0
                && e.physical != 0
                && e.length > 0
                && e.logical < size
        })
        .collect()
}

/// What copying one file with its sharing kept needs to know.
pub(crate) struct Sharing<'a> {
    pub map: &'a ExtentMap,
    /// The source's device: physical addresses are per device.
    pub dev: u64,
    /// The copy being written, as a holder for what it writes.
    pub me: &'a Arc<Holder>,
    /// The destination filesystem's clone granularity.
    pub granularity: u64,
    /// Opens a holder's file for reading, by its place below the destination.
    pub open: &'a dyn Fn(&LinkLoc) -> Option<OwnedFd>,
}

impl Sharing<'_> {
    /// Opens `holder` for cloning from it: None when it is dead, gone, or another file now.
    fn open_holder(&self, holder: &Holder) -> Option<OwnedFd> {
        if !holder.is_alive() {
            return None;
        }
        let loc = lock(&holder.loc).clone();
        let fd = (self.open)(&loc)?;
        let m = sys::fstat(fd.as_fd()).ok()?;
        (m.id() == holder.id && holder.is_alive()).then_some(fd)
    }
}

/// Pieces claimed for writing and not written yet: abandoned if the copy fails.
struct Claimed<'a> {
    map: &'a ExtentMap,
    dev: u64,
    pending: Vec<u64>,
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        for phys in self.pending.drain(..) {
            self.map.abandon(self.dev, phys);
        }
    }
}

/// Copies a file whose shared extents are `shared` through its engine `fc`: the extents an
/// earlier copy holds are cloned from it, the rest is copied.
pub(crate) fn copy_shared(
    fc: &mut FileCopy<'_>,
    shared: &[Extent],
    sharing: &Sharing<'_>,
) -> Result<(), DataError> {
    let (dst, size) = (fc.dst(), fc.size());
    let mut pos = 0;
    for e in shared {
        let start = e.logical.max(pos);
        let end = (e.logical + e.length).min(size);
        if start >= end {
            continue;
        }
        fc.span(pos, start)?;
        let phys = e.physical + (start - e.logical);
        let parts = sharing.map.claim(sharing.dev, phys, end - start);
        let mut claimed = Claimed {
            map: sharing.map,
            dev: sharing.dev,
            pending: parts
                .iter()
                .filter_map(|p| match p {
                    Part::Write { at, .. } => Some(phys + at),
                    Part::Clone { .. } => None,
                })
                .collect(),
        };
        for part in parts {
            match part {
                Part::Clone {
                    at,
                    len,
                    holder,
                    offset,
                } => {
                    let own = Arc::ptr_eq(&holder, sharing.me);
                    let opened = if own {
                        None
                    } else {
                        sharing.open_holder(&holder)
                    };
                    match (own, &opened) {
                        (true, _) => {
                            fc.clone_from(dst, offset, start + at, len, sharing.granularity)?
                        }
                        (false, Some(fd)) => {
                            fc.clone_from(fd.as_fd(), offset, start + at, len, sharing.granularity)?
                        }
                        // The holder is gone: these bytes come from the source.
                        (false, None) => fc.span(start + at, start + at + len)?,
                    }
                }
                Part::Write { at, len } => {
                    fc.span(start + at, start + at + len)?;
                    sharing
                        .map
                        .written(sharing.dev, phys + at, sharing.me, start + at);
                    claimed.pending.retain(|&p| p != phys + at);
                }
            }
        }
        pos = end;
    }
    fc.span(pos, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(n: u64) -> Arc<Holder> {
        Holder::new(
            LinkLoc {
                root: 0,
                dir: None,
                name: format!("f{n}").into_bytes(),
            },
            (1, n),
        )
    }

    fn summary(parts: &[Part]) -> Vec<(char, u64, u64, u64)> {
        parts
            .iter()
            .map(|p| match p {
                Part::Write { at, len } => ('w', *at, *len, 0),
                Part::Clone {
                    at, len, offset, ..
                } => ('c', *at, *len, *offset),
            })
            .collect()
    }

    #[test]
    fn the_first_reference_writes_and_later_ones_clone_what_it_holds() {
        let map = ExtentMap::default();
        let a = holder(1);
        // File a references [1000, 1100) at its offset 0.
        assert_eq!(summary(&map.claim(7, 1000, 100)), [('w', 0, 100, 0)]);
        map.written(7, 1000, &a, 0);
        // File b references a part of it, [1040, 1060), and a gap after it.
        let parts = map.claim(7, 1040, 100);
        assert_eq!(summary(&parts), [('c', 0, 60, 40), ('w', 60, 40, 0)]);
        map.written(7, 1100, &holder(2), 500);
        // Another device is another address space.
        assert_eq!(summary(&map.claim(8, 1000, 10)), [('w', 0, 10, 0)]);
        map.abandon(8, 1000);
        // A reference covering both pieces and more, before and after.
        let parts = map.claim(7, 900, 400);
        assert_eq!(
            summary(&parts),
            [
                ('w', 0, 100, 0),
                ('c', 100, 100, 0),
                ('c', 200, 40, 500),
                ('w', 240, 160, 0)
            ]
        );
        assert_eq!(map.len(), 4, "one entry per physical interval");
    }

    #[test]
    fn a_dead_holders_pieces_are_written_again_and_abandoned_ones_too() {
        let map = ExtentMap::default();
        let a = holder(1);
        map.claim(1, 0, 50);
        map.written(1, 0, &a, 0);
        a.kill();
        assert_eq!(summary(&map.claim(1, 0, 50)), [('w', 0, 50, 0)]);
        map.abandon(1, 0);
        assert_eq!(summary(&map.claim(1, 0, 50)), [('w', 0, 50, 0)]);
    }

    #[test]
    fn a_reference_waits_for_the_piece_being_written_then_clones_it() {
        let map = Arc::new(ExtentMap::default());
        assert_eq!(summary(&map.claim(1, 0, 64)), [('w', 0, 64, 0)]);
        let m = map.clone();
        let waiter = std::thread::spawn(move || summary(&m.claim(1, 16, 16)));
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(
            !waiter.is_finished(),
            "must wait while the piece is written"
        );
        map.written(1, 0, &holder(3), 4096);
        assert_eq!(waiter.join().unwrap(), [('c', 0, 16, 4096 + 16)]);
    }

    #[test]
    fn holding_an_existing_copy_fills_only_the_gaps() {
        let map = ExtentMap::default();
        map.claim(1, 100, 100);
        map.written(1, 100, &holder(1), 0);
        map.hold(1, 0, 300, &holder(2), 1000);
        assert_eq!(
            summary(&map.claim(1, 0, 300)),
            [
                ('c', 0, 100, 1000),
                ('c', 100, 100, 0),
                ('c', 200, 100, 1200)
            ]
        );
    }

    #[test]
    fn unknown_and_unshared_extents_never_count() {
        let e = |flags, physical| Extent {
            logical: 0,
            physical,
            length: 4096,
            flags,
        };
        let shared = sys::FIEMAP_EXTENT_SHARED;
        let all = vec![
            e(shared, 8192),
            e(0, 8192),
            e(shared, 0),
            e(shared | sys::FIEMAP_EXTENT_DELALLOC, 8192),
            e(shared | sys::FIEMAP_EXTENT_ENCODED, 8192),
            e(shared | sys::FIEMAP_EXTENT_DATA_INLINE, 8192),
            e(shared | sys::FIEMAP_EXTENT_UNKNOWN, 8192),
            e(shared | sys::FIEMAP_EXTENT_UNWRITTEN, 8192),
        ];
        assert_eq!(shared_extents(all, 10_000).len(), 1);
    }
}
