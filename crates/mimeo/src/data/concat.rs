//! Concatenation (`mimeo-cat`): parts written one after another into one output, each by the
//! cheapest means the pair allows.
//!
//! - **A regular output** gets each regular part as a range ([`Ranger`]): a part that starts
//!   at an aligned output offset is cloned, whole or up to its unaligned tail, so reassembling
//!   `split -b 1G` pieces shares every block with them; the rest is copied inside the kernel
//!   (`copy_file_range`), or read and written where that cannot work (another filesystem).
//!   Writing starts at the output's file offset and moves it on, as `cat` would.
//! - **A pipe** gets regular parts by `splice`, with no copy through user space.
//! - **Anything else** (a terminal, a socket, an output opened with `O_APPEND`, and any part
//!   that is not a regular file: a pipe, a terminal, `-` for standard input) is read and
//!   written through a buffer.
//!
//! **Shared reads.** Where a regular part's bytes must be read (every output but a regular
//! file that the part's filesystem could clone or copy into by itself), the part's shared
//! extents are read through a canonical file ([`SharedFile`]): its origin (a clone made by
//! `mimeo --record-origin`), or an earlier part of the same run that holds the same blocks.
//! The device is then read once for a file and its clones, and the page cache holds their
//! bytes once. Those ranges go through a user-space buffer (a pipe then gets them written,
//! not spliced: spliced pages of the canonical file would still be its pages when the
//! reader takes them, after the checks); the checks of shared reads keep the bytes those of
//! a plain read. A part too small for it, on a filesystem that shares no blocks, or with no
//! shared extent (found with one `statfs` and one `FIEMAP`) takes the path above, and so do
//! the ranges of a part that nothing shares.

use super::error::{DataError, POLL, interrupted};
use super::range::{RangeCopy, Ranger};
use super::shared_reads::{self, SharedFile, SharedOpenOptions};
use super::wait;
use crate::report::{Control, EntryKind, Error, FileOutcome, Method, Observer, Op, Refusal};
use crate::report::{Reporter, Summary};
use crate::sys::{self, Errno, IoBuf, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::collections::VecDeque;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How [`concat_with`] reads its parts. Made with `ConcatOptions::default()`, then its fields
/// set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConcatOptions {
    /// Read the shared extents of regular parts through a canonical file (their origin, or
    /// an earlier part holding the same blocks) wherever the bytes must be read: see
    /// [`SharedFile`]. The bytes are always those of a plain read. On by default.
    pub shared_reads: bool,
}

impl Default for ConcatOptions {
    fn default() -> Self {
        ConcatOptions { shared_reads: true }
    }
}

/// Writes the concatenation of `parts` into `out`, as `cat PART... > OUT` would, and returns
/// what happened: the parts copied (`files`), bytes by method (`clone_bytes` for the parts, or
/// parts of parts, that share extents with the output; `offload_bytes` and `stream_bytes` for
/// the rest), and failures.
///
/// - A part named `-` is the standard input, read from its current offset.
/// - `out` is written from its current file offset, which is moved to the end of what was
///   written; `out_name` names it in events and errors.
/// - Where a part cannot be read (missing, a directory, the output itself), the failure is
///   reported to `observer`, as [`Event::Failed`](crate::Event::Failed), and the next part
///   follows, as with `cat`. A failure to write the output ends the run.
/// - Each part written is reported as [`Event::Copied`](crate::Event::Copied) with its
///   outcome, when the observer wants entries.
/// - [`Control::stop`] ends the run between two blocks; the summary says `interrupted`.
/// - Shared extents of regular parts are read through a canonical file where their bytes
///   must be read (see [`ConcatOptions::shared_reads`]); `shared_read_bytes` counts them.
///
/// ```
/// use mimeo::{Control, NoObserver};
/// use std::os::fd::AsFd;
/// # let dir = tempfile::tempdir()?;
/// # let (a, b, out) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("out"));
/// std::fs::write(&a, b"hello, ")?;
/// std::fs::write(&b, b"world\n")?;
/// let file = std::fs::File::create(&out)?;
/// let summary = mimeo::concat(&[a, b], file.as_fd(), &out, &NoObserver, &Control::new());
/// assert_eq!((summary.files, summary.errors, summary.bytes), (2, 0, 13));
/// assert_eq!(std::fs::read(&out)?, b"hello, world\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn concat(
    parts: &[PathBuf],
    out: BorrowedFd<'_>,
    out_name: &Path,
    observer: &dyn Observer,
    control: &Control,
) -> Summary {
    concat_with(
        parts,
        out,
        out_name,
        &ConcatOptions::default(),
        observer,
        control,
    )
}

/// [`concat()`] with options: whether shared extents are read through canonical files.
///
/// ```
/// use mimeo::{ConcatOptions, Control, NoObserver};
/// use std::os::fd::AsFd;
/// # let dir = tempfile::tempdir()?;
/// # let (a, out) = (dir.path().join("a"), dir.path().join("out"));
/// std::fs::write(&a, b"plain\n")?;
/// let mut options = ConcatOptions::default();
/// options.shared_reads = false;
/// let file = std::fs::File::create(&out)?;
/// let s = mimeo::concat_with(&[a], file.as_fd(), &out, &options, &NoObserver, &Control::new());
/// assert_eq!((s.bytes, s.shared_read_bytes), (6, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn concat_with(
    parts: &[PathBuf],
    out: BorrowedFd<'_>,
    out_name: &Path,
    options: &ConcatOptions,
    observer: &dyn Observer,
    control: &Control,
) -> Summary {
    let start = Instant::now();
    let report = Reporter::new(observer, control);
    let fail_out = |op, e: Errno| Error::sys(op, out_name, e);
    let mut sink = match Sink::new(out, options) {
        Ok(s) => s,
        Err(e) => {
            report.fail(fail_out(Op::Stat, e));
            return report.finish(start.elapsed());
        }
    };
    let mut buf = IoBuf::default();
    for part in parts {
        if control.is_stopped() {
            break;
        }
        match sink.put(part, &mut buf, control) {
            Ok(outcome) => report.copied(
                || part.clone(),
                || out_name.to_path_buf(),
                EntryKind::File,
                Some(outcome),
            ),
            Err(Failure::Part(e)) => report.fail(e),
            Err(Failure::Out(e)) => {
                report.fail(Error::sys(e.op, out_name, e.errno));
                break;
            }
        }
    }
    if let Some(pos) = sink.pos() {
        if let Err(e) = sys::set_offset(out, pos) {
            report.fail(fail_out(Op::Write, e));
        }
    }
    report.finish(start.elapsed())
}

/// Why one part failed: it could not be read (the next part follows), or the output could not
/// be written (the run ends).
enum Failure {
    Part(Error),
    Out(DataError),
}

/// What the output is, and where the next part goes.
enum Kind {
    /// A regular file written at explicit offsets, from `pos` on; `granularity` is its
    /// filesystem's clone granularity.
    Regular { pos: u64, granularity: u64 },
    /// A pipe: regular parts are spliced into it.
    Pipe,
    /// A terminal, socket, device, or a file opened with `O_APPEND`: written in order.
    Stream,
}

struct Sink<'a> {
    out: BorrowedFd<'a>,
    meta: Meta,
    kind: Kind,
    shared_reads: bool,
    /// The output's filesystem type, once a part has needed it.
    out_fs: Option<Option<u64>>,
    /// Parts that hold shared extents in the registry, kept open so that later parts find
    /// them (at most [`KEEP`], the oldest let go first).
    kept: VecDeque<SharedFile>,
    /// The buffer for ranges read through a canonical file (one set of checks each).
    big: IoBuf,
}

/// How many parts holding shared extents stay open for later parts to be read through.
const KEEP: usize = 64;

impl<'a> Sink<'a> {
    fn new(out: BorrowedFd<'a>, options: &ConcatOptions) -> sys::Result<Sink<'a>> {
        let meta = sys::fstat(out)?;
        let kind = if meta.is_reg() && !sys::is_append(out)? {
            Kind::Regular {
                pos: sys::offset(out)?,
                granularity: sys::clone_granularity(out)?.bytes,
            }
        } else if meta.file_type() == sys::S_IFIFO {
            Kind::Pipe
        } else {
            Kind::Stream
        };
        Ok(Sink {
            out,
            meta,
            kind,
            shared_reads: options.shared_reads,
            out_fs: None,
            kept: VecDeque::new(),
            big: IoBuf::default(),
        })
    }

    /// The part open as `fd` (with `m`), read through canonical files, when shared reads
    /// apply: the output needs its bytes read, and it is big enough, on a filesystem that
    /// shares blocks, and holds shared extents. The descriptor then moves into the reader.
    fn reader(&mut self, m: &Meta, fd: &mut Option<OwnedFd>) -> Option<SharedFile> {
        let src = fd.as_ref()?.as_fd();
        if !self.shared_reads || !m.is_reg() || m.size < shared_reads::MIN_SIZE {
            return None;
        }
        if matches!(self.kind, Kind::Regular { .. }) && m.dev == self.meta.dev {
            return None; // cloned or copied inside the kernel
        }
        let fs = sys::fs_type(src).ok()?;
        if !shared_reads::shares_blocks(fs) {
            return None;
        }
        if matches!(self.kind, Kind::Regular { .. }) {
            // A regular output on a filesystem of the same type may be the same filesystem
            // (a btrfs subvolume has a device number of its own): clones may work there.
            let out = self.out;
            let out_fs = *self.out_fs.get_or_insert_with(|| sys::fs_type(out).ok());
            if out_fs == Some(fs) {
                return None;
            }
        }
        let map = sys::fiemap(src, 0, u64::MAX, false).ok()?;
        if !map.iter().any(shared_reads::shared) {
            return None;
        }
        let file = std::fs::File::from(fd.take()?);
        Some(SharedOpenOptions::default().with_extents(file, map))
    }

    /// Keeps a part open for later parts, if it holds shared extents for them.
    fn keep(&mut self, part: SharedFile) {
        if part.is_canonical() {
            self.kept.push_back(part);
            if self.kept.len() > KEEP {
                self.kept.pop_front();
            }
        }
    }

    /// Where the output's offset must end up (a regular output written at offsets).
    fn pos(&self) -> Option<u64> {
        match self.kind {
            Kind::Regular { pos, .. } => Some(pos),
            _ => None,
        }
    }

    fn put(
        &mut self,
        part: &Path,
        buf: &mut IoBuf,
        control: &Control,
    ) -> Result<FileOutcome, Failure> {
        let part_err = |op, e: Errno| Failure::Part(Error::sys(op, part, e));
        let stdin = part.as_os_str().as_bytes() == b"-";
        let mut opened = None;
        if !stdin {
            let name = sys::cstring(part.as_os_str().as_bytes());
            opened = Some(sys::open_to_read(&name).map_err(|e| part_err(Op::Open, e))?);
        }
        let fd = opened
            .as_ref()
            .map_or(rustix::stdio::stdin(), |f| f.as_fd());
        let m = sys::fstat(fd).map_err(|e| part_err(Op::Stat, e))?;
        if m.is_dir() {
            return Err(part_err(Op::Read, Errno::ISDIR));
        }
        // The output itself, with bytes left to read, is refused as cat refuses it (it would
        // grow as it is read); an empty one writes nothing and passes, as with cat.
        let is_out = m.is_reg() && m.id() == self.meta.id();
        if is_out
            && (if stdin {
                sys::offset(fd).unwrap_or(0)
            } else {
                0
            }) < m.size
        {
            return Err(Failure::Part(Error::refused(
                Op::Refuse,
                part,
                Refusal::InputIsOutput,
            )));
        }
        let reader = self.reader(&m, &mut opened);
        let src = match (&reader, &opened) {
            (Some(sf), _) => sf.file().as_fd(),
            (None, Some(f)) => f.as_fd(),
            (None, None) => rustix::stdio::stdin(),
        };
        let mut r = Ranger::new(control, buf, crate::DEFAULT_BUFFER_SIZE);
        let before = Method::ALL.map(|m| control.bytes_by(m));
        let mut through = 0;
        let mut done = RangeCopy::default();
        // A regular file is read at offsets (standard input from its own offset), anything
        // else (a pipe, a terminal) in order.
        let mut from = match (m.is_reg(), stdin) {
            (false, _) => None,
            (true, true) => sys::offset(src).ok(),
            (true, false) => Some(0),
        };
        if let Some(off) = from {
            let len = m.size.saturating_sub(off);
            match &reader {
                Some(sf) => through = self.shared(&mut r, part, sf, off, len, &mut done)?,
                None => self.range(&mut r, part, src, off, len, &mut done)?,
            }
            from = Some(off + done.total());
        }
        // Whatever the file holds beyond its size as first seen (it grew, or it is one of
        // those that report no size, as in /proc) is read to its end, as cat reads.
        let more = self.stream(&mut r, part, src, from, u64::MAX, &mut done)?;
        if stdin {
            if let Some(at) = from {
                let _ = sys::set_offset(src, at + more);
            }
        }
        if let Some(sf) = reader {
            self.keep(sf);
        }
        // This run is the only writer of the counters: their growth is this part's.
        let [cloned, offloaded, streamed] =
            Method::ALL.map(|m| control.bytes_by(m) - before[m as usize]);
        let method = if offloaded + streamed == 0 && cloned > 0 {
            Method::Clone
        } else if streamed == 0 {
            Method::Offload
        } else {
            Method::Stream
        };
        let mut outcome = FileOutcome::new(method, done.total(), 0);
        if method != Method::Clone {
            outcome.cloned_bytes = cloned;
        }
        outcome.shared_read_bytes = through;
        Ok(outcome)
    }

    /// Puts `len` bytes of the part `sf` at `off` in the output: its ranges read through a
    /// canonical file through the big buffer, the others as [`range`](Self::range) puts
    /// them. Returns the bytes read through a canonical file.
    fn shared(
        &mut self,
        r: &mut Ranger<'_>,
        part: &Path,
        sf: &SharedFile,
        off: u64,
        len: u64,
        done: &mut RangeCopy,
    ) -> Result<u64, Failure> {
        let before = sf.stats().canonical_bytes;
        let src = sf.file().as_fd();
        let end = off + len;
        let mut at = off;
        while at < end {
            let (want, moved) = match sf.shared_at(at) {
                Ok(n) => {
                    interrupted(r.control()).map_err(Failure::Out)?;
                    let want = n.min(end - at).min(shared_reads::CHUNK);
                    let mut big = std::mem::take(&mut self.big);
                    big.resize(shared_reads::CHUNK as usize);
                    let got = sf.read_at(&mut big[..want as usize], at);
                    let got = got.map_err(|e| Failure::Part(Error::io(Op::Read, part, &e)));
                    let wrote = got.and_then(|n| self.write(r.control(), &big[..n]).map(|_| n));
                    self.big = big;
                    let n = wrote? as u64;
                    done.copied += n;
                    r.control().add_bytes(Method::Stream, n);
                    (want, n)
                }
                Err(next) => {
                    let want = next.map_or(end, |n| n.min(end)) - at;
                    let first = done.total();
                    self.range(r, part, src, at, want, done)?;
                    let mut moved = done.total() - first;
                    if moved < want {
                        // Not spliced (or the output is a stream): read and written.
                        moved += self.stream(r, part, src, Some(at + moved), want - moved, done)?;
                    }
                    (want, moved)
                }
            };
            at += moved;
            if moved < want {
                break; // the part ended early
            }
        }
        Ok(sf.stats().canonical_bytes - before)
    }

    /// Puts `len` bytes of the regular file `src` at `off` in the output.
    fn range(
        &mut self,
        r: &mut Ranger<'_>,
        part: &Path,
        src: BorrowedFd<'_>,
        off: u64,
        len: u64,
        done: &mut RangeCopy,
    ) -> Result<(), Failure> {
        let failure = |e: DataError| match e.op {
            Op::Read => Failure::Part(Error::sys(Op::Read, part, e.errno)),
            _ => Failure::Out(e),
        };
        match &mut self.kind {
            Kind::Regular { pos, granularity } => {
                let before = done.total();
                let result = r.copy((src, off), (self.out, *pos), len, *granularity, done);
                *pos += done.total() - before;
                result.map_err(failure)
            }
            Kind::Pipe => {
                let mut at = off;
                let end = off + len;
                while at < end {
                    interrupted(r.control()).map_err(Failure::Out)?;
                    let want = (end - at).min(1 << 20) as usize;
                    match sys::splice_to_pipe(src, &mut at, self.out, want) {
                        Ok(0) => break,
                        Ok(n) => {
                            done.copied += n as u64;
                            r.control().add_bytes(Method::Offload, n as u64);
                        }
                        Err(Errno::AGAIN) => sys::wait_writable(self.out, POLL.as_millis() as i32),
                        // Not here (a source that cannot be spliced): the rest is streamed.
                        Err(Errno::INVAL | Errno::OPNOTSUPP | Errno::NOSYS) => break,
                        Err(e) => return Err(Failure::Out(DataError::new(Op::Write, e))),
                    }
                }
                Ok(())
            }
            Kind::Stream => Ok(()),
        }
    }

    /// Reads at most `limit` bytes of `src`, up to its end (from `from`, or from its own
    /// offset when None) and writes them to the output. Returns the bytes moved.
    fn stream(
        &mut self,
        r: &mut Ranger<'_>,
        part: &Path,
        src: BorrowedFd<'_>,
        from: Option<u64>,
        limit: u64,
        done: &mut RangeCopy,
    ) -> Result<u64, Failure> {
        let read_err = |e: Errno| Failure::Part(Error::sys(Op::Read, part, e));
        let mut moved = 0u64;
        while moved < limit {
            interrupted(r.control()).map_err(Failure::Out)?;
            let control = r.control();
            let buf = r.span.buffer();
            let want = buf
                .len()
                .min((limit - moved).try_into().unwrap_or(usize::MAX));
            let buf = &mut buf[..want];
            let n = match from {
                Some(at) => sys::pread(src, buf, at + moved),
                None => sys::read(src, buf),
            };
            let n = match n {
                Ok(0) => return Ok(moved),
                Ok(n) => n,
                Err(e) => return Err(read_err(e)),
            };
            self.write(control, &buf[..n])?;
            moved += n as u64;
            done.copied += n as u64;
            control.add_bytes(Method::Stream, n as u64);
        }
        Ok(moved)
    }

    /// Writes `data` to the output: a regular one at its position, moved on.
    fn write(&mut self, control: &Control, data: &[u8]) -> Result<(), Failure> {
        let pos = match &mut self.kind {
            Kind::Regular { pos, .. } => Some(pos),
            _ => None,
        };
        wait::write_all(self.out, data, pos, control).map_err(Failure::Out)
    }
}
