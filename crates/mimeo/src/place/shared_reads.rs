//! Canonical source files of one run: for every shared extent of the sources (clones,
//! dedupe results), the first source file read that held it. When the destination cannot
//! clone (btrfs → ext4, `--reflink=never`), each later reference to such an extent is read
//! through that file (see [`SharedFile`](crate::data::shared_reads::SharedFile)), whose page
//! cache then holds the bytes once: copying eight clones of one file reads the device once.
//!
//! The same idea as hard-link groups ([`links`](super::links)), per extent: the map holds
//! disjoint intervals of device addresses per source device (a [`PhysMap`]), each naming the
//! source file that holds it and where. A reference is split into the parts already held
//! (read through their holder) and the gaps (held by the file that claims them from then on).
//! A holder is named as plain data (a root, the directory below it, a name) with its
//! identity, so no descriptor stays open: it is opened by whoever reads through it, and
//! checked to be the same inode. Memory grows with the number of shared extents met, never
//! with the number of files, and is bounded: once [`MAX_INTERVALS`] intervals are held, new
//! extents are no longer held (those already held still serve later references).

use super::links::LinkLoc;
use crate::data::physmap::PhysMap;
use crate::data::shared_reads;
use crate::sys::Extent;
use std::sync::{Arc, Mutex};

/// The most intervals the map holds (a few tens of MiB): a copy of a snapshot, whose every
/// extent is shared, would otherwise remember every extent of the tree.
pub(crate) const MAX_INTERVALS: usize = 1 << 18;

/// A source file that holds shared extents: where it is, and which inode it is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Canonical {
    pub loc: LinkLoc,
    /// (dev, ino), checked when it is opened.
    pub id: (u64, u64),
}

/// A range of a file to read through its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CanonRange {
    /// Offset and length in the file.
    pub at: u64,
    pub len: u64,
    pub holder: Arc<Canonical>,
    /// The holder's offset of the same bytes.
    pub holder_at: u64,
}

/// The run's map of shared device addresses to the source files that hold them.
#[derive(Debug)]
pub(crate) struct CanonMap {
    map: Mutex<PhysMap<(Arc<Canonical>, u64)>>,
    /// The most intervals held.
    limit: usize,
}

impl Default for CanonMap {
    fn default() -> Self {
        CanonMap::with_limit(MAX_INTERVALS)
    }
}

impl CanonMap {
    /// A map that holds at most `limit` intervals.
    pub fn with_limit(limit: usize) -> Self {
        CanonMap {
            map: Mutex::default(),
            limit,
        }
    }

    /// A file on device `dev` with extents `ext` (its FIEMAP, in any order) is about to be
    /// read: the ranges of its shared extents that an earlier file holds, to be read through
    /// that file. The shared extents nobody holds yet are held by this file (`me`, built
    /// only if needed) from now on.
    pub fn claim(
        &self,
        dev: u64,
        ext: &[Extent],
        me: impl FnOnce() -> Canonical,
    ) -> Vec<CanonRange> {
        let mut me = Some(me);
        let mut mine: Option<Arc<Canonical>> = None;
        let mut out = Vec::new();
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        for e in ext.iter().filter(|e| shared_reads::shared(e)) {
            for h in map.held(dev, e.physical, e.length) {
                let (holder, offset) = h.value;
                if mine.as_ref().is_some_and(|m| Arc::ptr_eq(m, &holder)) {
                    continue; // the file's own extent, met at another offset
                }
                out.push(CanonRange {
                    at: e.logical + h.at,
                    len: h.len,
                    holder,
                    holder_at: offset + h.into,
                });
            }
            let room = self.limit.saturating_sub(map.len());
            if room > 0 {
                let me = mine.get_or_insert_with(|| Arc::new(me.take().expect("built once")()));
                map.fill_at_most(dev, e.physical, e.length, room, |at| {
                    (me.clone(), e.logical + at)
                });
            }
        }
        out.sort_by_key(|t| t.at);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{FIEMAP_EXTENT_ENCODED, FIEMAP_EXTENT_SHARED};

    fn ext(logical: u64, physical: u64, length: u64, flags: u32) -> Extent {
        Extent {
            logical,
            physical,
            length,
            flags,
        }
    }

    fn holder(name: &str) -> Canonical {
        Canonical {
            loc: LinkLoc {
                root: 0,
                dir: None,
                name: name.as_bytes().to_vec(),
            },
            id: (1, name.len() as u64),
        }
    }

    #[test]
    fn the_first_file_holds_and_later_ones_read_through_it() {
        let m = CanonMap::default();
        let s = FIEMAP_EXTENT_SHARED;
        // The parent: two shared extents and one of its own.
        let parent = [
            ext(0, 1000, 100, s),
            ext(100, 5000, 50, 0),
            ext(150, 2000, 100, s),
        ];
        assert!(m.claim(7, &parent, || holder("parent")).is_empty());
        // A clone that rewrote its middle, and shares a compressed extent (never counted).
        let clone = [
            ext(0, 1000, 100, s),
            ext(100, 9000, 50, 0),
            ext(150, 2050, 50, s),
            ext(200, 3000, 50, s | FIEMAP_EXTENT_ENCODED),
        ];
        let t = m.claim(7, &clone, || holder("clone"));
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].at, t[0].len, t[0].holder_at), (0, 100, 0));
        assert_eq!((t[1].at, t[1].len, t[1].holder_at), (150, 50, 200));
        assert!(t.iter().all(|x| x.holder.loc.name.as_slice() == b"parent"));
        // Another device's addresses are another space.
        assert!(m.claim(8, &clone, || holder("elsewhere")).is_empty());
        // A file that shares a part held by the parent and a part nobody held.
        let third = [ext(0, 2050, 100, s)];
        let t = m.claim(7, &third, || holder("third"));
        assert_eq!(t.len(), 1);
        assert_eq!((t[0].at, t[0].len, t[0].holder_at), (0, 50, 200));
        let t = m.claim(7, &[ext(500, 2100, 50, s)], || holder("fourth"));
        assert_eq!(t[0].holder.loc.name.as_slice(), b"third");
        assert_eq!(t[0].holder_at, 50);
    }

    /// However many shared extents the sources have (a copy of a snapshot), the map holds
    /// no more than its limit, even when one extent meets many gaps; what it holds still
    /// serves later references, and the rest is read from each file itself.
    #[test]
    fn the_map_stays_within_its_limit() {
        let m = CanonMap::with_limit(5);
        let s = FIEMAP_EXTENT_SHARED;
        let apart = |base: u64| -> Vec<Extent> {
            (0..4u64)
                .map(|i| ext(i * 100, base + i * 1000, 100, s))
                .collect()
        };
        let (first, second) = (apart(10_000), apart(50_000));
        assert!(m.claim(7, &first, || holder("first")).is_empty());
        assert_eq!(m.map.lock().unwrap().len(), 4);
        // One extent across the first file's four intervals: five gaps, room for one.
        let t = m.claim(7, &[ext(0, 1, 20_000, s)], || holder("big"));
        assert_eq!(t.len(), 4);
        assert_eq!(m.map.lock().unwrap().len(), 5);
        // Full: a new file holds nothing.
        assert!(m.claim(7, &second, || holder("second")).is_empty());
        assert_eq!(m.map.lock().unwrap().len(), 5);
        // What is held still serves: clones of the first file, and of the big one's start.
        let t = m.claim(7, &first, || holder("clone of first"));
        assert_eq!(t.len(), 4);
        assert!(t.iter().all(|x| x.holder.loc.name.as_slice() == b"first"));
        let t = m.claim(7, &[ext(0, 1, 100, s)], || holder("clone of big"));
        assert_eq!(t[0].holder.loc.name.as_slice(), b"big");
        // The rest is read from each file itself.
        assert!(m.claim(7, &second, || holder("clone of second")).is_empty());
    }
}
