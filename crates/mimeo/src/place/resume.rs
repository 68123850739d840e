//! Resumable copies: a large file copied by offload or stream (not cloned) that a run stopped
//! part-way keeps its written prefix, and a later `-u` goes on from there instead of copying
//! it all again.
//!
//! **Where the record lives.** On the partial file itself, as the extended attribute
//! `user.mimeo.partial`: which source it is a prefix of (device, inode, size, mtime) and how
//! many bytes from its start are complete. Kept with the bytes it describes, it cannot be
//! separated from them, it goes when the file goes, and it needs no file or name of its own.
//!
//! **Crash safety (DESIGN §5).** The record is written before the first byte (0 done), and
//! then again, every `CHECKPOINT_EVERY` bytes, only after the bytes it counts were written
//! (returned by `copy_file_range` or `pwrite`): after a SIGKILL, the page cache holds
//! everything the record claims, and perhaps more, which the resumed run cuts off. The partial
//! file stays detectably incomplete as any other: its directory's in-progress marker, or its
//! sticky mark when no marker covers it (see [`crash`](super::crash)); the record only adds
//! what it is a prefix of. The record is removed once the data is complete, before the
//! metadata step, so a complete file never carries one.
//!
//! **Resuming.** `-u` resumes only a destination that is marked incomplete, has a record for
//! this very source (same device, inode, size and mtime: a changed source means a fresh
//! copy), and is at least as long as the record says. Then the last block of the prefix is
//! read on both sides and compared; only if it is equal does the copy go on from the end of
//! the prefix. Anything else is copied afresh, by the usual temporary and rename.

use crate::data::copy::Checkpoint;
use crate::sys::{self, Meta};
use rustix::fd::BorrowedFd;
use std::ffi::CStr;

/// The attribute that holds the record.
pub(crate) const RECORD: &CStr = c"user.mimeo.partial";

/// Files smaller than this are copied again rather than resumed: their record would cost
/// more than it saves.
pub(crate) const RESUME_MIN: u64 = 16 << 20;

/// How much of the prefix's end is read back and compared before a copy goes on.
const VERIFY: u64 = 64 << 10;

/// What a partial file is a prefix of, and how much of it is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, u32),
    /// Bytes from the start that are complete.
    pub done: u64,
}

impl Record {
    pub fn of(src: &Meta, done: u64) -> Record {
        Record {
            dev: src.dev,
            ino: src.ino,
            size: src.size,
            mtime: src.mtime,
            done,
        }
    }

    fn encode(&self) -> String {
        format!(
            "mimeo-partial 1 dev={} ino={} size={} mtime={}.{:09} done={}",
            self.dev, self.ino, self.size, self.mtime.0, self.mtime.1, self.done
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
        let done = field("done=")?.parse().ok()?;
        Some(Record {
            dev,
            ino,
            size,
            mtime,
            done,
        })
    }

    /// Whether it describes a prefix of `src` as it is now.
    pub fn is_for(&self, src: &Meta) -> bool {
        (self.dev, self.ino, self.size, self.mtime) == (src.dev, src.ino, src.size, src.mtime)
            && self.done <= src.size
    }
}

/// Writes `record` on the partial file `fd`. False when the filesystem cannot hold it.
pub(crate) fn write(fd: BorrowedFd<'_>, record: &Record) -> bool {
    sys::set_own_xattr(fd, RECORD, record.encode().as_bytes()).is_ok()
}

/// The record on `fd`, if it has one.
pub(crate) fn read(fd: BorrowedFd<'_>) -> Option<Record> {
    let mut buf = [0u8; 256];
    let n = sys::get_own_xattr(fd, RECORD, &mut buf).ok()?;
    Record::decode(&buf[..n])
}

/// Removes the record: the data is complete.
pub(crate) fn clear(fd: BorrowedFd<'_>) -> sys::Result<()> {
    sys::remove_own_xattr(fd, RECORD)
}

/// Keeps the record of a copy up to date as its data step goes.
pub(crate) struct Recorder<'a> {
    dst: BorrowedFd<'a>,
    src: Meta,
    /// The record could be written every time so far.
    pub ok: bool,
    /// What the record says now.
    pub done: u64,
    /// A record was written.
    pub written: bool,
}

impl<'a> Recorder<'a> {
    pub fn new(dst: BorrowedFd<'a>, src: &Meta) -> Self {
        Recorder {
            dst,
            src: *src,
            ok: true,
            done: 0,
            written: false,
        }
    }
}

impl Checkpoint for Recorder<'_> {
    fn reached(&mut self, done: u64) {
        if self.ok {
            self.ok = write(self.dst, &Record::of(&self.src, done));
            self.written |= self.ok;
            self.done = done;
        }
    }
}

/// Whether the last block of the prefix `[0, done)` of `dst` equals the source's.
pub(crate) fn prefix_matches(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, done: u64) -> bool {
    let n = done.min(VERIFY) as usize;
    let at = done - n as u64;
    let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
    let read_all = |fd, buf: &mut [u8]| {
        let mut got = 0;
        while got < buf.len() {
            match sys::pread(fd, &mut buf[got..], at + got as u64) {
                Ok(0) | Err(_) => return false,
                Ok(k) => got += k,
            }
        }
        true
    };
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
            done: 1 << 30,
        };
        assert_eq!(Record::decode(r.encode().as_bytes()), Some(r));
        let r = Record {
            mtime: (-5, 999_999_999),
            ..r
        };
        assert_eq!(Record::decode(r.encode().as_bytes()), Some(r));
        for bad in [
            &b""[..],
            b"mimeo-partial 2 dev=1 ino=1 size=1 mtime=1.0 done=0",
            b"mimeo-partial 1 dev=1 ino=1 size=1 mtime=1 done=0",
            b"mimeo-partial 1 dev=1 ino=1 size=1 mtime=1.0",
            b"mimeo-partial 1 ino=1 dev=1 size=1 mtime=1.0 done=0",
        ] {
            assert_eq!(Record::decode(bad), None, "{}", bad.escape_ascii());
        }
    }
}
