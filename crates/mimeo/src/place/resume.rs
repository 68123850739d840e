//! Resumable copies: a large file copied by offload or stream (not cloned) that a run stopped
//! part-way keeps its written prefix, and a later `-u` goes on from there instead of copying
//! it all again.
//!
//! **Where the record lives.** On the partial file itself, as the extended attribute
//! `user.mimeo.partial`: which source it is a copy of (device, inode, size, mtime) and which
//! parts of it are complete: its prefix, or for a file copied in ranges by several workers
//! (`--split`), the parts of each range done. Kept with the bytes it describes, it cannot be
//! separated from them, it goes when the file goes, and it needs no file or name of its own.
//!
//! **Crash safety (docs/guarantees.md §5).** The record is written before the first byte, and then
//! again, every `CHECKPOINT_EVERY` bytes of a range and at its end, only after the bytes it
//! counts were written (returned by `copy_file_range` or `pwrite`): after a SIGKILL, the page
//! cache holds everything the record claims, and perhaps more. Workers that copy ranges of
//! one file update one record, under a lock, so a newer list is never replaced by an older
//! one. The partial file stays detectably incomplete as any other: its directory's
//! in-progress marker, or its own mark when no marker covers it (see
//! [`crash`](super::crash)); the record only adds what it is a copy of. The record is removed
//! once the data is complete, before the metadata step, so a complete file never carries one.
//!
//! **Resuming.** `-u` resumes only a destination that is marked incomplete, has a record for
//! this very source (same device, inode, size and mtime: a changed source means a fresh
//! copy), and is at least as long as the record says. Then the last block of each complete
//! part is read on both sides and compared; only if they are all equal does the copy go on,
//! copying what lies between the parts. Anything else is copied afresh, by the usual
//! temporary and rename. Bytes outside the parts are never trusted: they are written again
//! (they can only be the same source's bytes, written after the last record, or nothing).

use crate::data::copy::Checkpoint;
use crate::sys::{self, Meta};
use rustix::fd::BorrowedFd;
use std::ffi::CStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The attribute that holds the record.
pub(crate) const RECORD: &CStr = c"user.mimeo.partial";

/// Files smaller than this are copied again rather than resumed: their record would cost
/// more than it saves.
pub(crate) const RESUME_MIN: u64 = 16 << 20;

/// How much of the prefix's end is read back and compared before a copy goes on.
const VERIFY: u64 = 64 << 10;

/// What a partial file is a copy of, and which parts of it are complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, u32),
    /// The complete parts, `[from, to)`, sorted and disjoint.
    pub done: Vec<(u64, u64)>,
}

impl Record {
    pub fn of(src: &Meta, done: Vec<(u64, u64)>) -> Record {
        Record {
            dev: src.dev,
            ino: src.ino,
            size: src.size,
            mtime: src.mtime,
            done,
        }
    }

    fn encode(&self) -> String {
        let parts: Vec<String> = self.done.iter().map(|(a, b)| format!("{a}-{b}")).collect();
        format!(
            "mimeo-partial 1 dev={} ino={} size={} mtime={}.{:09} done={}",
            self.dev,
            self.ino,
            self.size,
            self.mtime.0,
            self.mtime.1,
            parts.join(",")
        )
    }

    fn decode(bytes: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut words = text.split(' ');
        if (words.next()?, words.next()?) != ("mimeo-partial", "1") {
            return None;
        }
        let mut field = |name: &str| -> Option<&str> { words.next()?.strip_prefix(name) };
        let dev = field("dev=")?.parse().ok()?;
        let ino = field("ino=")?.parse().ok()?;
        let size = field("size=")?.parse().ok()?;
        let (secs, nanos) = field("mtime=")?.split_once('.')?;
        let mtime = (secs.parse().ok()?, nanos.parse().ok()?);
        let list = field("done=")?;
        let mut done = Vec::new();
        for part in list.split(',').filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-')?;
            done.push((a.parse().ok()?, b.parse().ok()?));
        }
        // Sorted, disjoint, none empty: anything else was not written by us.
        let sound = done.iter().all(|(a, b)| a < b) && done.windows(2).all(|w| w[0].1 < w[1].0);
        sound.then_some(Record {
            dev,
            ino,
            size,
            mtime,
            done,
        })
    }

    /// Whether it describes a copy of `src` as it is now.
    pub fn is_for(&self, src: &Meta) -> bool {
        (self.dev, self.ino, self.size, self.mtime) == (src.dev, src.ino, src.size, src.mtime)
            && self.done.last().is_none_or(|&(_, end)| end <= src.size)
    }
}

/// Writes `record` on the partial file `fd`. False when the filesystem cannot hold it.
pub(crate) fn write(fd: BorrowedFd<'_>, record: &Record) -> bool {
    sys::set_own_xattr(fd, RECORD, record.encode().as_bytes()).is_ok()
}

/// The record on `fd`, if it has one.
pub(crate) fn read(fd: BorrowedFd<'_>) -> Option<Record> {
    let mut buf = vec![0u8; 4096];
    let n = match sys::get_own_xattr(fd, RECORD, &mut buf) {
        Ok(n) => n,
        Err(sys::Errno::RANGE) => {
            buf.resize(64 << 10, 0);
            sys::get_own_xattr(fd, RECORD, &mut buf).ok()?
        }
        Err(_) => return None,
    };
    Record::decode(&buf[..n])
}

/// Removes the record: the data is complete.
pub(crate) fn clear(fd: BorrowedFd<'_>) -> sys::Result<()> {
    sys::remove_own_xattr(fd, RECORD)
}

/// The record of one copy, kept up to date as its data step goes, by one worker or by every
/// worker copying a range of it.
#[derive(Debug)]
pub(crate) struct ResumeProgress {
    src: Meta,
    /// The complete parts, and whether the record could be written every time so far.
    state: Mutex<(Vec<(u64, u64)>, bool)>,
    /// A record was written.
    written: AtomicBool,
}

impl ResumeProgress {
    /// The record of a copy of `src` whose parts `done` are complete already (an earlier
    /// run's, verified; none for a new copy).
    pub fn new(src: &Meta, done: &[(u64, u64)]) -> ResumeProgress {
        ResumeProgress {
            src: *src,
            state: Mutex::new((done.to_vec(), true)),
            written: AtomicBool::new(false),
        }
    }

    /// Whether the file carries a record now.
    pub fn written(&self) -> bool {
        self.written.load(Ordering::SeqCst)
    }

    /// Whether the record is what the file holds: it was written every time.
    pub fn sound(&self) -> bool {
        self.written() && self.state.lock().unwrap_or_else(|e| e.into_inner()).1
    }

    /// `[from, to)` is complete (`to == from`: its copy is starting); writes the record on
    /// `fd` (the file, through whichever descriptor the caller has).
    pub fn add(&self, fd: BorrowedFd<'_>, from: u64, to: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.1 {
            return;
        }
        if to > from {
            merge(&mut state.0, from, to);
        }
        state.1 = write(fd, &Record::of(&self.src, state.0.clone()));
        if state.1 {
            self.written.store(true, Ordering::SeqCst);
        }
    }

    /// A checkpoint for the data step that writes through `fd`.
    pub fn on<'a>(&'a self, fd: BorrowedFd<'a>) -> Recorder<'a> {
        Recorder { progress: self, fd }
    }
}

/// Adds `[from, to)` to the sorted, disjoint `parts`, merging what touches.
fn merge(parts: &mut Vec<(u64, u64)>, from: u64, to: u64) {
    let (mut a, mut b) = (from, to);
    parts.retain(|&(x, y)| {
        let apart = y < a || x > b;
        if !apart {
            a = a.min(x);
            b = b.max(y);
        }
        apart
    });
    let at = parts.partition_point(|&(x, _)| x < a);
    parts.insert(at, (a, b));
}

/// Keeps a [`ResumeProgress`] up to date as one worker's data step goes.
#[derive(Debug)]
pub(crate) struct Recorder<'a> {
    progress: &'a ResumeProgress,
    fd: BorrowedFd<'a>,
}

impl Checkpoint for Recorder<'_> {
    fn reached(&mut self, from: u64, to: u64) {
        self.progress.add(self.fd, from, to);
    }
}

/// Whether the last block of the part `[from, to)` of `dst` equals the source's.
pub(crate) fn part_matches(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, from: u64, to: u64) -> bool {
    let n = (to - from).min(VERIFY) as usize;
    let at = to - n as u64;
    let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
    let read_all = |fd, buf: &mut [u8]| sys::read_full(fd, buf, Some(at)).is_ok_and(|k| k == n);
    read_all(src, &mut a) && read_all(dst, &mut b) && a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_reject_anything_else() {
        let r = Record {
            dev: 2049,
            ino: 131,
            size: 4 << 30,
            mtime: (1_700_000_000, 123),
            done: vec![(0, 1 << 30)],
        };
        assert_eq!(Record::decode(r.encode().as_bytes()), Some(r.clone()));
        let r = Record {
            mtime: (-5, 999_999_999),
            done: vec![(0, 10), (20, 30), (1 << 31, 1 << 32)],
            ..r
        };
        assert_eq!(Record::decode(r.encode().as_bytes()), Some(r.clone()));
        let none = Record { done: vec![], ..r };
        assert_eq!(Record::decode(none.encode().as_bytes()), Some(none));
        for bad in [
            &b""[..],
            b"mimeo-partial 2 dev=1 ino=1 size=1 mtime=1.0 done=0-1",
            b"mimeo-partial 1 dev=1 ino=1 size=1 mtime=1 done=0-1",
            b"mimeo-partial 1 dev=1 ino=1 size=1 mtime=1.0",
            b"mimeo-partial 1 ino=1 dev=1 size=1 mtime=1.0 done=0-1",
            b"mimeo-partial 1 dev=1 ino=1 size=9 mtime=1.0 done=5-3",
            b"mimeo-partial 1 dev=1 ino=1 size=9 mtime=1.0 done=0-5,4-6",
            b"mimeo-partial 1 dev=1 ino=1 size=9 mtime=1.0 done=4-6,0-2",
            b"mimeo-partial 1 dev=1 ino=1 size=9 mtime=1.0 done=0-5,5-6",
        ] {
            assert_eq!(Record::decode(bad), None, "{}", bad.escape_ascii());
        }
    }

    #[test]
    fn parts_merge_in_any_order() {
        let mut p = Vec::new();
        for (a, b) in [
            (100, 200),
            (0, 50),
            (300, 400),
            (50, 100),
            (250, 300),
            (190, 260),
        ] {
            merge(&mut p, a, b);
        }
        assert_eq!(p, [(0, 400)]);
        let mut p = vec![(0, 10), (20, 30)];
        merge(&mut p, 12, 15);
        assert_eq!(p, [(0, 10), (12, 15), (20, 30)]);
    }
}
