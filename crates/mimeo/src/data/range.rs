//! Byte ranges: part of one file put into another at any offsets. The block-aligned body is
//! cloned (`FICLONERANGE`), so it shares extents with the source; the unaligned head and tail,
//! and everything a clone cannot do, are copied by the data path's span copier
//! (`copy_file_range`, else read/write; `data/span.rs`).
//!
//! The kernel's rules (measured, and listed with `sys::clone_range`) are handled here
//! explicitly, each on purpose:
//!
//! - **A length of 0 means "to EOF"** to the kernel. An empty range is never sent to it, and
//!   no computed length reaches it without being checked.
//! - **Offsets and length must be multiples of the granularity**, except for a range that ends
//!   at the source's EOF. The head up to the first boundary and the tail after the last one are
//!   copied. The two offsets must agree modulo the granularity, or nothing can be cloned.
//! - **The unaligned EOF block** of the source may only be cloned where it lands at or past the
//!   destination's EOF; elsewhere it would end mid-file, and it is copied instead.
//! - **Overlapping ranges of one file** are refused by the kernel, and `copy_file_range` refuses
//!   them too: they are copied through the buffer, in the direction that reads every byte
//!   before it is overwritten (as `memmove`).
//! - **EXDEV, EOPNOTSUPP, EINVAL (btrfs NOCOW on one side only, alignment), ETXTBSY (a swap
//!   file)** mean "no clone here": the range is copied. A destination that cannot be written at
//!   all fails the copy, not the clone.
//! - **EAGAIN** (btrfs while the destination's subvolume is being sent) is retried a few times
//!   with a growing pause before the range is copied instead.
//! - **A short or failed clone is never assumed whole.** The kernel reports a remap shorter
//!   than asked as EINVAL, after part of it may already be shared, and an error part-way
//!   (ENOSPC, EIO) leaves the range half done: after any error the whole piece is written
//!   again by copying, so no byte is left as the failed clone left it. ENOSPC, EIO, EDQUOT and
//!   ENOMEM are terminal (docs/guarantees.md §1), as they are for every copy.

use super::error::{DataError, interrupted};
use super::fallback::{Mechanism, falls_back};
use super::span::SpanCopier;
use crate::report::{Control, Method, Op};
use crate::sys::{self, Errno, IoBuf};
use rustix::fd::{AsFd, BorrowedFd};
use std::fmt;
use std::time::Duration;

/// What a range copy did: how many bytes now share extents with the source, and how many
/// were copied. Their sum is the range's length, or less when the source ends first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RangeCopy {
    /// Bytes cloned (`FICLONERANGE`): they share the source's extents.
    pub cloned: u64,
    /// Bytes copied (`copy_file_range`, or read and written).
    pub copied: u64,
}

impl RangeCopy {
    /// Bytes of the range now in the destination: cloned plus copied.
    pub fn total(&self) -> u64 {
        self.cloned + self.copied
    }
}

/// A range copy that failed: the step and the errno. Bytes counted in `done` were complete
/// before the failure; the rest of the range holds unspecified bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RangeError {
    /// The step that failed: [`Op::Read`] (the source), [`Op::Write`] (the destination),
    /// [`Op::Clone`], [`Op::Stat`], or [`Op::Interrupted`].
    pub op: Op,
    /// The errno.
    pub errno: i32,
    /// What was complete before the failure.
    pub done: RangeCopy,
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = std::io::Error::from_raw_os_error(self.errno).to_string();
        let text = text.split(" (os error ").next().unwrap_or(&text);
        write!(f, "range copy failed to {}: {text}", self.op.name())
    }
}

impl std::error::Error for RangeError {}

impl From<RangeError> for std::io::Error {
    fn from(e: RangeError) -> std::io::Error {
        std::io::Error::from_raw_os_error(e.errno)
    }
}

/// Copies `len` bytes of `src` at `src_off` into `dst` at `dst_off`: the block-aligned body
/// is cloned where the filesystem can (`FICLONERANGE`), the unaligned head and tail and
/// everything a clone cannot do are copied. Returns how many bytes were cloned and how many
/// copied.
///
/// - A `len` of 0 copies nothing (it never reaches the kernel, which would read it as "to
///   EOF").
/// - The range ends early where the source ends: the result then adds up to less than `len`.
/// - `src` and `dst` may be the same file; overlapping ranges are copied as `memmove` would.
/// - The destination grows as needed; a gap before `dst_off` stays a hole.
/// - The clone granularity is the destination filesystem's: btrfs's sector size, XFS's block
///   size, ZFS's record size (`st_blksize`). The two offsets must be equal modulo it for
///   anything to be cloned; the first boundary after `src_off` starts the cloned body.
/// - Neither file's offset is used or moved.
///
/// `dst` must be open for writing, not with `O_APPEND`; `src` for reading.
///
/// ```
/// use std::fs::{File, OpenOptions};
/// # let dir = tempfile::tempdir()?;
/// # let (a, b) = (dir.path().join("a"), dir.path().join("b"));
/// std::fs::write(&a, vec![7u8; 3 * 4096 + 100])?;
/// let src = File::open(&a)?;
/// let dst = OpenOptions::new().read(true).write(true).create(true).open(&b)?;
/// // Everything from byte 100 on, to the start of b.
/// let done = mimeo::clone_range(&src, 100, &dst, 0, 3 * 4096)?;
/// assert_eq!(done.total(), 3 * 4096);
/// // On btrfs or XFS, nothing can be cloned here: the offsets differ modulo the block size.
/// assert_eq!(done.cloned, 0);
/// assert_eq!(std::fs::read(&b)?, vec![7u8; 3 * 4096]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// A [`RangeError`] when reading the source or writing the destination fails (EBADF for a
/// destination not open for writing, or open with `O_APPEND`), and for ENOSPC, EIO, EDQUOT
/// and ENOMEM from a clone. A clone refused for any other reason (another filesystem, no
/// reflink support, alignment, NOCOW on one side, a swap file) is not an error: that part is
/// copied.
pub fn clone_range<S: AsFd, D: AsFd>(
    src: S,
    src_off: u64,
    dst: D,
    dst_off: u64,
    len: u64,
) -> Result<RangeCopy, RangeError> {
    let (src, dst) = (src.as_fd(), dst.as_fd());
    if len == 0 {
        return Ok(RangeCopy::default());
    }
    let fail = |op, errno: Errno| RangeError {
        op,
        errno: errno.raw_os_error(),
        done: RangeCopy::default(),
    };
    if sys::is_append(dst).map_err(|e| fail(Op::Stat, e))? {
        return Err(fail(Op::Write, Errno::BADF));
    }
    let granularity = sys::clone_granularity(dst)
        .map_err(|e| fail(Op::Stat, e))?
        .bytes;
    let control = Control::new();
    let mut buf = IoBuf::default();
    let mut ranger = Ranger::new(&control, &mut buf, crate::DEFAULT_BUFFER_SIZE);
    let mut done = RangeCopy::default();
    ranger
        .copy((src, src_off), (dst, dst_off), len, granularity, &mut done)
        .map_err(|e| RangeError {
            op: e.op,
            errno: e.errno.raw_os_error(),
            done,
        })?;
    Ok(done)
}

/// Largest piece given to one `FICLONERANGE`: a stop request is seen between pieces, and a
/// piece that fails is all that is copied again.
const CLONE_PIECE: u64 = 1 << 30;

/// Largest piece given to one `copy_file_range`.
const OFFLOAD_PIECE: u64 = 64 << 20;

/// How often an EAGAIN from a clone is tried again, with pauses of 1, 2, 4, ... ms.
const AGAIN_TRIES: u32 = 8;

/// Copies ranges between files: clones what it can, and copies the rest through its
/// [`SpanCopier`] (offload, else stream), with one run's buffer and counters.
pub(crate) struct Ranger<'a> {
    pub span: SpanCopier<'a>,
}

impl<'a> Ranger<'a> {
    /// A range copier that tries `copy_file_range` before reading and writing, and streams
    /// through `buffer_size` bytes (within 4 KiB-8 MiB).
    pub fn new(control: &'a Control, buf: &'a mut IoBuf, buffer_size: usize) -> Self {
        let bs = buffer_size.clamp(4096, 8 << 20);
        Ranger {
            span: SpanCopier::new(control, buf, bs, true, false),
        }
    }

    /// The run's control.
    pub fn control(&self) -> &'a Control {
        self.span.control
    }

    /// [`clone_range`] of `len` bytes from `(src, src_off)` to `(dst, dst_off)` with a known
    /// granularity; adds what it did to `done` as it goes, so that after an error `done` says
    /// what was complete.
    pub fn copy(
        &mut self,
        (src, src_off): (BorrowedFd<'_>, u64),
        (dst, dst_off): (BorrowedFd<'_>, u64),
        len: u64,
        granularity: u64,
        done: &mut RangeCopy,
    ) -> Result<(), DataError> {
        if len == 0 {
            return Ok(());
        }
        let s = sys::fstat(src).map_err(fail(Op::Read))?;
        let d = sys::fstat(dst).map_err(fail(Op::Write))?;
        // The source's end bounds the range: a clone past it would be refused whole.
        let len = len.min(s.size.saturating_sub(src_off));
        if len == 0 {
            return Ok(());
        }
        let same_file = s.id() == d.id();
        if same_file && src_off < dst_off + len && dst_off < src_off + len {
            done.copied += self.overlapping((src, src_off), (dst, dst_off), len)?;
            return Ok(());
        }
        let g = granularity.max(1);
        if src_off % g != dst_off % g {
            done.copied += self.copy_bytes((src, src_off), (dst, dst_off), len)?;
            return Ok(());
        }
        let head = ((g - src_off % g) % g).min(len);
        if head > 0 {
            done.copied += self.copy_bytes((src, src_off), (dst, dst_off), head)?;
        }
        let rest = len - head;
        let mut body = rest / g * g;
        // The unaligned EOF block clones only where it lands at or past the destination's
        // EOF; the destination may have grown by the head meanwhile, never past this range.
        let at_src_eof = src_off + len == s.size;
        let at_dst_eof = dst_off + len >= d.size.max(dst_off + head);
        if rest > body && at_src_eof && at_dst_eof {
            body = rest;
        }
        let (so, doff) = (src_off + head, dst_off + head);
        let (so, doff) = self.clone_body((src, so), (dst, doff), body, done)?;
        let tail = len - head - body;
        if tail > 0 {
            done.copied += self.copy_bytes((src, so), (dst, doff), tail)?;
        }
        Ok(())
    }

    /// Clones the aligned `body` bytes in pieces; a piece the filesystem will not clone is
    /// copied, with all the rest of the body. Returns where the body ends on both sides.
    fn clone_body(
        &mut self,
        (src, src_off): (BorrowedFd<'_>, u64),
        (dst, dst_off): (BorrowedFd<'_>, u64),
        body: u64,
        done: &mut RangeCopy,
    ) -> Result<(u64, u64), DataError> {
        let (mut so, mut doff) = (src_off, dst_off);
        let body_end = so + body;
        let control = self.span.control;
        while so < body_end {
            interrupted(control)?;
            let piece = (body_end - so).min(CLONE_PIECE);
            // Never a length of 0 (to EOF); the last piece may carry the EOF block.
            debug_assert!(piece > 0);
            match clone_piece(src, so, dst, doff, piece) {
                Ok(()) => {
                    done.cloned += piece;
                    control.add_bytes(Method::Clone, piece);
                    so += piece;
                    doff += piece;
                }
                Err(e) if falls_back(Mechanism::Clone, e) => {
                    // Whatever a failed clone left in the range is written over.
                    done.copied += self.copy_bytes((src, so), (dst, doff), body_end - so)?;
                    so = body_end;
                    doff = dst_off + (so - src_off);
                }
                Err(e) => return Err(fail(Op::Clone)(e)),
            }
        }
        Ok((so, doff))
    }

    /// Copies `len` bytes (fewer where the source ends) without cloning, through the span
    /// copier. Returns the bytes copied.
    fn copy_bytes(
        &mut self,
        src: (BorrowedFd<'_>, u64),
        dst: (BorrowedFd<'_>, u64),
        len: u64,
    ) -> Result<u64, DataError> {
        self.span
            .copy(src, dst, len, OFFLOAD_PIECE, &mut |_, _| Ok(()))
    }

    /// Copies `len` bytes between two overlapping ranges of one file (open as `src` and as
    /// `dst`) through the buffer, as `memmove` does (`copy_file_range` refuses overlaps):
    /// forwards, unless the destination starts inside the source's range; then from the end,
    /// so that no byte is overwritten before it is read. Returns the bytes copied.
    fn overlapping(
        &mut self,
        (src, src_off): (BorrowedFd<'_>, u64),
        (dst, dst_off): (BorrowedFd<'_>, u64),
        len: u64,
    ) -> Result<u64, DataError> {
        let backwards = dst_off > src_off;
        let control = self.span.control;
        self.span.used_stream = true;
        let mut moved = 0u64;
        while moved < len {
            interrupted(control)?;
            let buf = self.span.buffer();
            let n = (len - moved).min(buf.len() as u64) as usize;
            let at = if backwards {
                len - moved - n as u64
            } else {
                moved
            };
            let got = sys::read_full(src, &mut buf[..n], Some(src_off + at));
            let got = got.map_err(fail(Op::Read))?;
            sys::write_all(dst, &buf[..got], Some(dst_off + at)).map_err(fail(Op::Write))?;
            control.add_bytes(Method::Stream, got as u64);
            moved += got as u64;
            if got < n {
                break;
            }
        }
        Ok(moved)
    }
}

fn fail(op: Op) -> impl FnOnce(Errno) -> DataError {
    move |errno| DataError::new(op, errno)
}

/// One `FICLONERANGE` of a non-empty piece, tried again on EAGAIN (`sys::clone_range`
/// itself makes it again after EINTR).
fn clone_piece(
    src: BorrowedFd<'_>,
    src_off: u64,
    dst: BorrowedFd<'_>,
    dst_off: u64,
    len: u64,
) -> sys::Result<()> {
    let mut tries = 0;
    loop {
        match sys::clone_range(src, src_off, dst, dst_off, len) {
            Err(Errno::AGAIN) if tries < AGAIN_TRIES => {
                std::thread::sleep(Duration::from_millis(1 << tries));
                tries += 1;
            }
            other => return other,
        }
    }
}
