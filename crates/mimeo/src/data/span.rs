//! The one copier of bytes that are not cloned: a span of one file put into another by
//! offload (`copy_file_range`) while it works, else streamed (read and written through a
//! buffer). A whole file's copy (`copy::FileCopy`), range copies ([`Ranger`]) and so
//! `mimeo-cat` all copy through it, so they fall back from offload to stream by one rule:
//! the table of [`falls_back`], and only before the first byte this copier offloaded.
//!
//! [`Ranger`]: super::range::Ranger

use super::error::{DataError, interrupted};
use super::fallback::{Mechanism, falls_back};
use crate::report::{Control, Method, Op};
use crate::sys::{self, IoBuf};
use rustix::fd::BorrowedFd;

/// Offloads, else streams, spans between files; counts what it wrote. One per file copy
/// (or per range copy), with the run's control and the worker's buffer.
pub(crate) struct SpanCopier<'a> {
    pub control: &'a Control,
    pub buf: &'a mut IoBuf,
    /// Bytes read and written at a time when streaming.
    buffer_size: usize,
    /// Leave all-zero blocks unwritten, as holes, when streaming (`--sparse=always`).
    skip_zeros: bool,
    /// Still allowed to try `copy_file_range`.
    pub offload: bool,
    pub used_offload: bool,
    pub used_stream: bool,
    /// Data bytes written (zero blocks left as holes excluded).
    pub written: u64,
    /// Highest destination offset written so far.
    pub end: u64,
}

/// Told after each piece a span copy moved: the destination offset the span is complete
/// up to, and the highest destination offset written so far.
pub(crate) type AfterPiece<'f> = &'f mut dyn FnMut(u64, u64) -> Result<(), DataError>;

impl<'a> SpanCopier<'a> {
    /// A copier that streams `buffer_size` bytes at a time (4 KiB at least), tries
    /// `copy_file_range` first when `offload` says so, and with `skip_zeros` leaves the zero
    /// blocks it streams as holes.
    pub fn new(
        control: &'a Control,
        buf: &'a mut IoBuf,
        buffer_size: usize,
        offload: bool,
        skip_zeros: bool,
    ) -> Self {
        SpanCopier {
            control,
            buf,
            buffer_size: buffer_size.max(4096),
            skip_zeros,
            offload,
            used_offload: false,
            used_stream: false,
            written: 0,
            end: 0,
        }
    }

    /// The buffer for reading and writing, at its working size.
    pub fn buffer(&mut self) -> &mut [u8] {
        self.buf.grow_to(self.buffer_size);
        &mut self.buf[..self.buffer_size]
    }

    /// Copies `len` bytes of `src` at `off` into `dst` at `dst_off`, fewer where `src` ends;
    /// `copy_file_range` is asked for at most `offload_max` bytes at a time. `after` is told
    /// after each piece. Returns the bytes copied.
    pub fn copy(
        &mut self,
        (src, off): (BorrowedFd<'_>, u64),
        (dst, dst_off): (BorrowedFd<'_>, u64),
        len: u64,
        offload_max: u64,
        after: AfterPiece<'_>,
    ) -> Result<u64, DataError> {
        let mut done = 0;
        while done < len {
            interrupted(self.control)?;
            let (from, to) = ((src, off + done), (dst, dst_off + done));
            let n = self.piece(from, to, len - done, offload_max)?;
            if n == 0 {
                break;
            }
            done += n;
            after(dst_off + done, self.end)?;
        }
        Ok(done)
    }

    /// Moves up to `want` bytes (`copy_file_range`: up to `offload_max`) from `src` to `dst`:
    /// by offload while it is allowed and works, else through the buffer. Returns the bytes
    /// moved, 0 at the end of the source.
    fn piece(
        &mut self,
        src: (BorrowedFd<'_>, u64),
        dst: (BorrowedFd<'_>, u64),
        want: u64,
        offload_max: u64,
    ) -> Result<u64, DataError> {
        if self.offload {
            match self.offload_piece(src, dst, want.min(offload_max)) {
                Err(e) if falls_back(Mechanism::Offload, e.errno) && !self.used_offload => {
                    self.offload = false;
                }
                other => return other,
            }
        }
        self.stream_piece(src, dst, want)
    }

    /// One `copy_file_range` of up to `want` bytes; returns the bytes copied.
    fn offload_piece(
        &mut self,
        (src, off): (BorrowedFd<'_>, u64),
        (dst, dst_off): (BorrowedFd<'_>, u64),
        want: u64,
    ) -> Result<u64, DataError> {
        let (mut s, mut d) = (off, dst_off);
        let n = sys::copy_range(src, &mut s, dst, &mut d, want as usize)
            .map_err(|e| DataError::new(Op::Write, e))? as u64;
        self.control.add_bytes(Method::Offload, n);
        self.written += n;
        self.end = self.end.max(dst_off + n);
        self.used_offload |= n > 0;
        Ok(n)
    }

    /// Reads up to a buffer (at most `want` bytes) and writes it; returns the bytes moved.
    fn stream_piece(
        &mut self,
        (src, off): (BorrowedFd<'_>, u64),
        (dst, dst_off): (BorrowedFd<'_>, u64),
        want: u64,
    ) -> Result<u64, DataError> {
        self.used_stream = true;
        let want = want.min(self.buffer_size as u64) as usize;
        let buf = &mut self.buffer()[..want];
        let n = sys::pread(src, buf, off).map_err(|e| DataError::new(Op::Read, e))?;
        if n == 0 {
            return Ok(0);
        }
        let data = &self.buf[..n];
        let (written, end) = if self.skip_zeros {
            write_skipping_zeros(dst, data, dst_off)?
        } else {
            write_all_at(dst, data, dst_off)?;
            (n as u64, dst_off + n as u64)
        };
        self.written += written;
        self.end = self.end.max(end);
        self.control.add_bytes(Method::Stream, n as u64);
        Ok(n as u64)
    }
}

/// Block size used to find runs of zeros for `--sparse=always`.
const ZERO_BLOCK: usize = 4096;

/// Writes the non-zero blocks of `data` at `off`, leaving all-zero blocks as holes. Returns
/// the bytes written and the end of the last run written (0 when none was).
fn write_skipping_zeros(
    dst: BorrowedFd<'_>,
    data: &[u8],
    off: u64,
) -> Result<(u64, u64), DataError> {
    let (mut written, mut end) = (0, 0);
    let mut i = 0;
    while i < data.len() {
        let blk_end = (i + ZERO_BLOCK).min(data.len());
        if data[i..blk_end].iter().all(|&b| b == 0) {
            i = blk_end;
            continue;
        }
        // Extend the run over following non-zero blocks, so runs are written in one call.
        let mut j = blk_end;
        while j < data.len() {
            let k = (j + ZERO_BLOCK).min(data.len());
            if data[j..k].iter().all(|&b| b == 0) {
                break;
            }
            j = k;
        }
        write_all_at(dst, &data[i..j], off + i as u64)?;
        written += (j - i) as u64;
        end = off + j as u64;
        i = j;
    }
    Ok((written, end))
}

fn write_all_at(dst: BorrowedFd<'_>, data: &[u8], off: u64) -> Result<(), DataError> {
    sys::write_all(dst, data, Some(off)).map_err(|e| DataError::new(Op::Write, e))
}
