//! Which file held each range of device addresses first: disjoint intervals of physical
//! addresses per device, each with a value that names its holder.
//!
//! Shared reads find a canonical file for a range through it (the process-wide registry of
//! [`shared_reads`](super::shared_reads), and the run's map of source holders in `place`), and
//! extent-sharing groups can keep their holders in it: an interval is held by the first file
//! that claimed it, and a later reference is split into the parts already held and the gaps.

use std::collections::BTreeMap;

/// A part of a queried range that is already held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held<V> {
    /// Where it starts, relative to the start of the query.
    pub at: u64,
    pub len: u64,
    /// Its holder.
    pub value: V,
    /// How far into the holder's interval it starts: the holder's file offset for it is
    /// the interval's own offset plus this.
    pub into: u64,
}

/// Disjoint intervals `[start, start + len)` of device addresses, per device, each held by a
/// value.
#[derive(Debug)]
pub(crate) struct PhysMap<V> {
    map: BTreeMap<(u64, u64), (u64, V)>,
}

impl<V> Default for PhysMap<V> {
    fn default() -> Self {
        PhysMap {
            map: BTreeMap::new(),
        }
    }
}

impl<V: Clone> PhysMap<V> {
    /// Intervals held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The starts of the intervals of `dev` that overlap `[phys, end)`, in order.
    fn starts(&self, dev: u64, phys: u64, end: u64) -> Vec<u64> {
        let mut out = Vec::new();
        if let Some((&(d, start), &(len, _))) = self.map.range(..(dev, phys)).next_back() {
            if d == dev && start + len > phys {
                out.push(start);
            }
        }
        out.extend(
            self.map
                .range((dev, phys)..(dev, end))
                .map(|(&(_, s), _)| s),
        );
        out
    }

    /// The parts of `[phys, phys + len)` of `dev` that are held, in order.
    pub fn held(&self, dev: u64, phys: u64, len: u64) -> Vec<Held<V>> {
        let end = phys.saturating_add(len);
        self.starts(dev, phys, end)
            .into_iter()
            .map(|start| {
                let (ilen, value) = &self.map[&(dev, start)];
                let from = start.max(phys);
                let to = (start + ilen).min(end);
                Held {
                    at: from - phys,
                    len: to - from,
                    value: value.clone(),
                    into: from - start,
                }
            })
            .collect()
    }

    /// Holds the parts of `[phys, phys + len)` of `dev` that nobody holds yet with
    /// `value(at)` (`at`: where the part starts, relative to `phys`); returns those parts as
    /// `(at, len)`.
    pub fn fill(
        &mut self,
        dev: u64,
        phys: u64,
        len: u64,
        value: impl FnMut(u64) -> V,
    ) -> Vec<(u64, u64)> {
        self.fill_at_most(dev, phys, len, usize::MAX, value)
    }

    /// As [`fill`](Self::fill), but holds only the first `room` parts that nobody holds
    /// (each a new interval), so that the map never holds more than `len() + room`.
    pub fn fill_at_most(
        &mut self,
        dev: u64,
        phys: u64,
        len: u64,
        room: usize,
        mut value: impl FnMut(u64) -> V,
    ) -> Vec<(u64, u64)> {
        let end = phys.saturating_add(len);
        let mut gaps = Vec::new();
        let mut pos = phys;
        for start in self.starts(dev, phys, end) {
            if start > pos {
                gaps.push((pos - phys, start - pos));
            }
            pos = pos.max(start + self.map[&(dev, start)].0);
        }
        if pos < end {
            gaps.push((pos - phys, end - pos));
        }
        gaps.truncate(room);
        for &(at, n) in &gaps {
            self.map.insert((dev, phys + at), (n, value(at)));
        }
        gaps
    }

    /// Keeps only the intervals whose holder passes `keep`.
    pub fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        self.map.retain(|_, (_, v)| keep(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_holds_only_the_gaps_and_held_splits_a_query() {
        let mut m = PhysMap::default();
        assert_eq!(m.fill(1, 100, 50, |at| ('a', at)), vec![(0, 50)]);
        // Overlapping the end of the first interval, on another device too.
        assert_eq!(m.fill(1, 120, 60, |at| ('b', at)), vec![(30, 30)]);
        assert_eq!(m.fill(2, 120, 10, |at| ('c', at)), vec![(0, 10)]);
        assert_eq!(m.len(), 3);
        // A query across both intervals of device 1, starting inside the first.
        let h = m.held(1, 110, 100);
        assert_eq!(
            h,
            vec![
                Held {
                    at: 0,
                    len: 40,
                    value: ('a', 0),
                    into: 10
                },
                Held {
                    at: 40,
                    len: 30,
                    value: ('b', 30),
                    into: 0
                },
            ]
        );
        assert!(m.held(1, 0, 100).is_empty());
        assert!(m.held(3, 100, 100).is_empty());
        // A gap between two held intervals.
        assert_eq!(m.fill(1, 40, 200, |_| ('d', 0)), vec![(0, 60), (140, 60)]);
        m.retain(|v| v.0 != 'a');
        assert!(m.held(1, 100, 10).is_empty());
        assert_eq!(m.fill(1, 100, 20, |_| ('e', 0)), vec![(0, 20)]);
    }

    #[test]
    fn fill_at_most_holds_only_the_first_gaps() {
        let mut m = PhysMap::default();
        m.fill(1, 100, 10, |_| 'a');
        m.fill(1, 200, 10, |_| 'b');
        // Three gaps around the two intervals; room for two.
        assert_eq!(
            m.fill_at_most(1, 0, 300, 2, |_| 'c'),
            vec![(0, 100), (110, 90)]
        );
        assert_eq!(m.len(), 4);
        assert!(m.held(1, 210, 90).is_empty());
        assert!(m.fill_at_most(1, 210, 90, 0, |_| 'd').is_empty());
        assert_eq!(m.len(), 4);
    }
}
