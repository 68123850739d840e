//! Where a set of files' data lies on the device: the physical byte ranges their extents
//! reference, each byte counted once, and whether one file or several reference it.
//!
//! Ranges are pushed as they come (FIEMAP gives them file by file, in parallel), and folded
//! now and then into sorted, disjoint segments with a reference count that stops at 2 (all
//! that matters is "one" or "more than one"). Folding joins adjacent segments of equal count,
//! so a tree written sequentially folds into few segments whatever its number of files.
//!
//! Compressed extents (`FIEMAP_EXTENT_ENCODED`) cannot be placed byte by byte: FIEMAP gives
//! their start on the device and their uncompressed length. They are kept apart, keyed by
//! (start, length): two references to the same compressed extent count once.

use crate::sys::{
    self, Extent, FIEMAP_EXTENT_DATA_INLINE, FIEMAP_EXTENT_DELALLOC, FIEMAP_EXTENT_ENCODED,
    FIEMAP_EXTENT_SHARED, FIEMAP_EXTENT_UNKNOWN,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// How one extent counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Its address is unknown (inline data, delayed allocation): counted, never placed.
    Unknown,
    /// Referenced by this file alone.
    Exclusive,
    /// Referenced more than once, somewhere on the filesystem.
    Shared,
}

/// Extents whose physical address means nothing: `btrfs filesystem du` skips them.
const UNPLACED: u32 = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_DATA_INLINE;

pub(crate) fn class(e: &Extent) -> Class {
    if e.flags & UNPLACED != 0 {
        Class::Unknown
    } else if e.flags & FIEMAP_EXTENT_SHARED != 0 {
        Class::Shared
    } else {
        Class::Exclusive
    }
}

/// Whether an extent is inline data (kept in the filesystem's metadata; it cannot be shared).
pub(crate) fn is_inline(e: &Extent) -> bool {
    e.flags & sys::FIEMAP_EXTENT_DATA_INLINE != 0
}

/// Whether an extent is preallocated space that reads as zeros.
pub(crate) fn is_unwritten(e: &Extent) -> bool {
    e.flags & sys::FIEMAP_EXTENT_UNWRITTEN != 0
}

pub(crate) fn is_encoded(e: &Extent) -> bool {
    e.flags & FIEMAP_EXTENT_ENCODED != 0
}

/// Physical ranges referenced by a set of files.
#[derive(Debug, Default)]
pub(crate) struct Physical {
    /// (start, end, references up to 2); the first `folded` are sorted and disjoint.
    segs: Vec<(u64, u64, u8)>,
    folded: usize,
    /// Compressed extents by (start, length), with references up to 2.
    encoded: HashMap<(u64, u64), u8>,
}

impl Physical {
    /// One reference to `len` bytes at `start` (or to the compressed extent there).
    pub fn add(&mut self, start: u64, len: u64, encoded: bool) {
        if len == 0 {
            return;
        }
        if encoded {
            let refs = self.encoded.entry((start, len)).or_insert(0);
            *refs = (*refs + 1).min(2);
            return;
        }
        self.segs.push((start, start.saturating_add(len), 1));
        if self.segs.len() >= 2 * self.folded + 4096 {
            self.fold();
        }
    }

    /// Adds every reference of `other` (folded later, when enough has come).
    pub fn merge(&mut self, other: Physical) {
        self.segs.extend(other.segs);
        for (k, n) in other.encoded {
            let refs = self.encoded.entry(k).or_insert(0);
            *refs = (*refs + n).min(2);
        }
        if self.segs.len() >= 2 * self.folded + 4096 {
            self.fold();
        }
    }

    /// Bytes referenced at least once (each byte once).
    pub fn bytes(&mut self) -> u64 {
        self.fold();
        let placed: u64 = self.segs.iter().map(|s| s.1 - s.0).sum();
        placed + self.encoded.keys().map(|k| k.1).sum::<u64>()
    }

    /// Bytes referenced exactly once.
    pub fn once(&mut self) -> u64 {
        self.fold();
        let placed: u64 = self
            .segs
            .iter()
            .filter(|s| s.2 == 1)
            .map(|s| s.1 - s.0)
            .sum();
        placed
            + self
                .encoded
                .iter()
                .filter(|(_, n)| **n == 1)
                .map(|(k, _)| k.1)
                .sum::<u64>()
    }

    /// Folds every range pushed into sorted, disjoint, counted segments.
    fn fold(&mut self) {
        if self.folded == self.segs.len() {
            return;
        }
        let mut segs = std::mem::take(&mut self.segs);
        segs.sort_unstable_by_key(|s| s.0);
        let mut out: Vec<(u64, u64, u8)> = Vec::with_capacity(segs.len() / 2 + 16);
        // Ranges that cover the current position: (end, references).
        let mut open: BinaryHeap<Reverse<(u64, u8)>> = BinaryHeap::new();
        let mut refs: u32 = 0;
        let mut pos = 0u64;
        let emit = |out: &mut Vec<(u64, u64, u8)>, a: u64, b: u64, refs: u32| {
            if a >= b || refs == 0 {
                return;
            }
            let n = refs.min(2) as u8;
            match out.last_mut() {
                Some(last) if last.1 == a && last.2 == n => last.1 = b,
                _ => out.push((a, b, n)),
            }
        };
        for (start, end, n) in segs {
            while let Some(&Reverse((e, m))) = open.peek() {
                if e > start {
                    break;
                }
                emit(&mut out, pos, e, refs);
                pos = e;
                refs -= u32::from(m);
                open.pop();
            }
            emit(&mut out, pos, start, refs);
            pos = start;
            refs += u32::from(n);
            open.push(Reverse((end, n)));
        }
        while let Some(Reverse((e, m))) = open.pop() {
            emit(&mut out, pos, e, refs);
            pos = e;
            refs -= u32::from(m);
        }
        out.shrink_to(out.len() * 2 + 16);
        self.folded = out.len();
        self.segs = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_byte_counts_once_and_references_are_counted() {
        let mut p = Physical::default();
        p.add(0, 100, false);
        p.add(50, 100, false); // overlaps 50..100
        p.add(200, 10, false);
        p.add(200, 10, false); // the same range twice
        p.add(1000, 7, true);
        p.add(1000, 7, true);
        p.add(1000, 9, true); // another compressed extent at the same start
        assert_eq!(p.bytes(), 150 + 10 + 7 + 9);
        // Once: 0..50 and 100..150, and the second compressed extent.
        assert_eq!(p.once(), 50 + 50 + 9);
    }

    #[test]
    fn folding_many_ranges_joins_neighbours() {
        let mut p = Physical::default();
        for i in 0..100_000u64 {
            p.add(i * 10, 10, false);
        }
        assert_eq!(p.bytes(), 1_000_000);
        assert_eq!(p.segs.len(), 1);
        let mut q = Physical::default();
        for i in 0..50_000u64 {
            q.add(i * 10, 10, false);
        }
        p.merge(q);
        assert_eq!(p.bytes(), 1_000_000);
        assert_eq!(p.once(), 500_000);
    }
}
