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

use super::error::{DataError, interrupted};
use super::range::{RangeCopy, Ranger};
use crate::report::{Control, EntryKind, Error, FileOutcome, Method, Observer, Op, Refusal};
use crate::report::{Reporter, Summary};
use crate::sys::{self, Errno, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    let start = Instant::now();
    let report = Reporter::new(observer, control);
    let fail_out = |op, e: Errno| Error::sys(op, out_name, e);
    let mut sink = match Sink::new(out) {
        Ok(s) => s,
        Err(e) => {
            report.fail(fail_out(Op::Stat, e));
            return report.finish(start.elapsed());
        }
    };
    let mut buf = Vec::new();
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
}

/// How long one wait for room in a non-blocking output lasts before the stop switch is
/// looked at again.
const POLL: Duration = Duration::from_millis(50);

impl<'a> Sink<'a> {
    fn new(out: BorrowedFd<'a>) -> sys::Result<Sink<'a>> {
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
        Ok(Sink { out, meta, kind })
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
        buf: &mut Vec<u8>,
        control: &Control,
    ) -> Result<FileOutcome, Failure> {
        let part_err = |op, e: Errno| Failure::Part(Error::sys(op, part, e));
        let opened: OwnedFd;
        let stdin = part.as_os_str().as_bytes() == b"-";
        let src = if stdin {
            rustix::stdio::stdin()
        } else {
            let name = sys::cstring(part.as_os_str().as_bytes());
            opened = sys::open_to_read(&name).map_err(|e| part_err(Op::Open, e))?;
            opened.as_fd()
        };
        let m = sys::fstat(src).map_err(|e| part_err(Op::Stat, e))?;
        if m.is_dir() {
            return Err(part_err(Op::Read, Errno::ISDIR));
        }
        if m.is_reg() && m.id() == self.meta.id() {
            return Err(Failure::Part(Error::refused(
                Op::Refuse,
                part,
                Refusal::InputIsOutput,
            )));
        }
        let mut r = Ranger::new(control, buf, crate::DEFAULT_BUFFER_SIZE);
        let before = Method::ALL.map(|m| control.bytes_by(m));
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
            self.range(&mut r, part, src, off, len, &mut done)?;
            from = Some(off + done.total());
        }
        // Whatever the file holds beyond its size as first seen (it grew, or it is one of
        // those that report no size, as in /proc) is read to its end, as cat reads.
        let more = self.stream(&mut r, part, src, from, &mut done)?;
        if stdin {
            if let Some(at) = from {
                let _ = sys::set_offset(src, at + more);
            }
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
        Ok(outcome)
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
                let result = r.copy(src, off, self.out, *pos, len, *granularity, done);
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
                        Err(Errno::INTR) => {}
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

    /// Reads `src` to its end (from `from`, or from its own offset when None) and writes it
    /// to the output. Returns the bytes moved.
    fn stream(
        &mut self,
        r: &mut Ranger<'_>,
        part: &Path,
        src: BorrowedFd<'_>,
        from: Option<u64>,
        done: &mut RangeCopy,
    ) -> Result<u64, Failure> {
        let read_err = |e: Errno| Failure::Part(Error::sys(Op::Read, part, e));
        let mut moved = 0u64;
        loop {
            interrupted(r.control()).map_err(Failure::Out)?;
            let buf = r.buffer();
            let n = match from {
                Some(at) => sys::pread(src, buf, at + moved),
                None => sys::read(src, buf),
            };
            let n = match n {
                Ok(0) => return Ok(moved),
                Ok(n) => n,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(read_err(e)),
            };
            self.write(r, n)?;
            moved += n as u64;
            done.copied += n as u64;
            r.control().add_bytes(Method::Stream, n as u64);
        }
    }

    /// Writes the first `n` bytes of the ranger's buffer to the output.
    fn write(&mut self, r: &mut Ranger<'_>, n: usize) -> Result<(), Failure> {
        let out_err = |e: Errno| Failure::Out(DataError::new(Op::Write, e));
        let control = r.control();
        let mut data = &r.buffer()[..n];
        while !data.is_empty() {
            let wrote = match &mut self.kind {
                Kind::Regular { pos, .. } => sys::pwrite(self.out, data, *pos),
                _ => sys::write(self.out, data),
            };
            match wrote {
                Ok(0) => return Err(out_err(Errno::NOSPC)),
                Ok(w) => {
                    data = &data[w..];
                    if let Kind::Regular { pos, .. } = &mut self.kind {
                        *pos += w as u64;
                    }
                }
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => {
                    interrupted(control).map_err(Failure::Out)?;
                    sys::wait_writable(self.out, POLL.as_millis() as i32);
                }
                Err(e) => return Err(out_err(e)),
            }
        }
        Ok(())
    }
}
