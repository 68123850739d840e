//! The data path of one regular file: clone → offload → stream.
//!
//! Which errnos mean "this mechanism is not available here" is decided once, in
//! [`clone_unsupported`] and [`offload_unsupported`]; every other errno is terminal for the
//! file, so no fallback ever hides ENOSPC, EIO, EDQUOT or ENOMEM (DESIGN §1). Holes come from
//! SEEK_DATA/SEEK_HOLE, never from `copy_file_range`.

use super::shared::{ReadVia, Through};
use crate::options::{Reflink, Sparse};
use crate::report::{Control, FileOutcome, Method, Op};
use crate::sys::{self, Errno, Meta};
use rustix::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};

/// A data-path failure: which step failed and the errno. Terminal for the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DataError {
    pub op: Op,
    pub errno: Errno,
}

fn fail(op: Op) -> impl FnOnce(Errno) -> DataError {
    move |errno| DataError { op, errno }
}

/// The policy and facts that choose a file's data path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DataPlan<'a> {
    pub reflink: Reflink,
    pub sparse: Sparse,
    pub buffer_size: usize,
    /// Source and destination are on the same filesystem, so a clone can work.
    pub same_fs: bool,
    /// The destination filesystem may share extents through `copy_file_range`.
    pub dst_cow: bool,
    /// Drop the copied range from the page cache on both sides as the copy goes.
    pub nocache: bool,
    /// The source's size is its true size, so a size of 0 needs no read.
    pub size_is_true: bool,
    /// Devices known, in this run, not to clone.
    pub no_clone: &'a NoCloneDevs,
    /// Ranges of the source to read through a canonical file (shared reads), by offset.
    pub via: &'a [ReadVia<'a>],
}

/// Errnos that mean "this mechanism is not available here", never "the copy failed".
/// Everything else (ENOSPC, EIO, EDQUOT, ENOMEM, ...) is terminal for the file.
fn clone_unsupported(e: Errno) -> bool {
    matches!(
        e,
        Errno::XDEV | Errno::OPNOTSUPP | Errno::INVAL | Errno::TXTBSY | Errno::NOSYS | Errno::NOTTY
    )
}

fn offload_unsupported(e: Errno) -> bool {
    matches!(
        e,
        Errno::XDEV | Errno::NOSYS | Errno::OPNOTSUPP | Errno::INVAL
    )
}

/// Filesystems (by device) that answered FICLONE with EOPNOTSUPP during one run: they cannot
/// clone at all, so later files there skip the attempt. A few slots are plenty; when they are
/// full, the attempt is simply made again. It lives only as long as the run: a device number
/// is reused by whatever is mounted next (a loop device most of all), so a process-wide memory
/// would deny clones to a later filesystem that has them.
#[derive(Debug, Default)]
pub(crate) struct NoCloneDevs([AtomicU64; 8]);

impl NoCloneDevs {
    fn contains(&self, dev: u64) -> bool {
        self.0
            .iter()
            .any(|slot| slot.load(Ordering::Relaxed) == dev.wrapping_add(1))
    }

    fn insert(&self, dev: u64) {
        let key = dev.wrapping_add(1);
        for slot in &self.0 {
            match slot.compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(held) if held == key => return,
                Err(_) => {}
            }
        }
    }
}

/// Largest request per `copy_file_range` call (the kernel caps one near 2 GiB); smaller
/// requests let progress and a stop request be seen often.
const OFFLOAD_CHUNK: u64 = 256 << 20;

/// Copies the bytes of `src` (described by `meta`) into the new, empty `dst`.
pub(crate) fn copy_data(
    src: BorrowedFd<'_>,
    meta: &Meta,
    dst: BorrowedFd<'_>,
    plan: &DataPlan<'_>,
    buf: &mut Vec<u8>,
    control: &Control,
) -> Result<FileOutcome, DataError> {
    let size = meta.size;
    if plan.sparse != Sparse::Never && plan.reflink != Reflink::Never && size > 0 {
        if plan.same_fs && !plan.no_clone.contains(meta.dev) {
            match sys::clone_file(dst, src) {
                Ok(()) => {
                    control.add_bytes(Method::Clone, size);
                    let data = (meta.blocks * 512).min(size);
                    return Ok(FileOutcome::new(Method::Clone, data, size - data));
                }
                Err(e) if clone_unsupported(e) && plan.reflink == Reflink::Auto => {
                    if e == Errno::OPNOTSUPP {
                        plan.no_clone.insert(meta.dev);
                    }
                }
                Err(e) => {
                    return Err(DataError {
                        op: Op::Clone,
                        errno: e,
                    });
                }
            }
        } else if plan.reflink == Reflink::Always {
            return Err(DataError {
                op: Op::Clone,
                errno: Errno::XDEV,
            });
        }
    } else if plan.reflink == Reflink::Always && size > 0 {
        return Err(DataError {
            op: Op::Clone,
            errno: Errno::OPNOTSUPP,
        });
    }
    if size == 0 && (plan.size_is_true || sys::sizes_are_true(src)) {
        return Ok(FileOutcome::new(Method::Stream, 0, 0));
    }
    if size == 0 {
        // Files such as those in /proc report size 0 yet have content: read to the end.
        let n = stream_to_end(src, dst, plan, buf, control)?;
        return Ok(FileOutcome::new(Method::Stream, n, 0));
    }
    let may_offload =
        plan.sparse == Sparse::Auto && !(plan.reflink == Reflink::Never && plan.dst_cow);
    let mut c = Copier {
        src,
        dst,
        plan,
        buf,
        control,
        offload: may_offload,
        used_offload: false,
        used_stream: false,
        written: 0,
        end: 0,
        eof: None,
        window: 0,
        through: 0,
    };
    if plan.sparse == Sparse::Never || meta.blocks * 512 >= size {
        // Not sparse, or holes unwanted: one segment, no SEEK_DATA/SEEK_HOLE calls.
        c.segment(0, size)?;
    } else {
        c.segments(size)?;
    }
    c.drop_window(u64::MAX)?;
    let final_size = match c.eof {
        // The source shrank while we copied: keep exactly what it had.
        Some(at) => at,
        None => {
            if c.end < size {
                // A trailing hole (or zeros skipped by --sparse=always).
                sys::truncate(dst, size).map_err(fail(Op::Truncate))?;
            }
            size
        }
    };
    let method = if c.used_offload && !c.used_stream {
        Method::Offload
    } else {
        Method::Stream
    };
    let mut outcome = FileOutcome::new(method, c.written, final_size.saturating_sub(c.written));
    outcome.shared_read_bytes = c.through;
    Ok(outcome)
}

struct Copier<'a> {
    src: BorrowedFd<'a>,
    dst: BorrowedFd<'a>,
    plan: &'a DataPlan<'a>,
    buf: &'a mut Vec<u8>,
    control: &'a Control,
    /// Still allowed to try `copy_file_range`.
    offload: bool,
    used_offload: bool,
    used_stream: bool,
    /// Data bytes written (holes excluded).
    written: u64,
    /// Highest offset written so far.
    end: u64,
    /// Where the source ended before its recorded size, if it shrank.
    eof: Option<u64>,
    /// With --nocache: the start of the range not yet dropped from the page cache.
    window: u64,
    /// Bytes read through a canonical file.
    through: u64,
}

/// With --nocache, the copied range is written back and dropped in windows of this size, so
/// the page cache holds at most about this much of the file at a time.
const NOCACHE_WINDOW: u64 = 8 << 20;

impl Copier<'_> {
    /// With --nocache, once `upto` is a window past the last drop (or at the end, with
    /// `u64::MAX`), writes the range back and drops it from the cache on both sides.
    fn drop_window(&mut self, upto: u64) -> Result<(), DataError> {
        if !self.plan.nocache {
            return Ok(());
        }
        let last = upto == u64::MAX;
        let upto = upto.min(self.end);
        if upto <= self.window || (!last && upto - self.window < NOCACHE_WINDOW) {
            return Ok(());
        }
        let len = upto - self.window;
        sys::write_back(self.dst, self.window, len).map_err(fail(Op::Write))?;
        sys::drop_cache(self.dst, self.window, len);
        sys::drop_cache(self.src, self.window, len);
        self.window = upto;
        if last {
            // Readahead brings in source pages beyond each dropped window: drop the whole file.
            sys::drop_cache(self.src, 0, 0);
        }
        Ok(())
    }

    /// Copies every data segment below `size`, leaving holes unwritten.
    fn segments(&mut self, size: u64) -> Result<(), DataError> {
        let mut pos = 0;
        while pos < size && self.eof.is_none() {
            let Some(data) = sys::seek_data(self.src, pos).map_err(fail(Op::Read))? else {
                break;
            };
            if data >= size {
                break;
            }
            let hole = sys::seek_hole(self.src, data)
                .map_err(fail(Op::Read))?
                .min(size);
            self.segment(data, hole)?;
            pos = hole;
        }
        Ok(())
    }

    /// Copies bytes `[from, to)`: the ranges read through a canonical file (`plan.via`)
    /// through it, the rest from the source.
    fn segment(&mut self, from: u64, to: u64) -> Result<(), DataError> {
        let mut pos = from;
        let via = self.plan.via;
        for v in via.iter().filter(|v| v.at < to && v.at + v.len > from) {
            let (start, end) = (v.at.max(pos), (v.at + v.len).min(to));
            if start >= end {
                continue;
            }
            if start > pos {
                self.own_segment(pos, start)?;
            }
            if self.eof.is_none() {
                self.through(v, start, end)?;
            }
            if self.eof.is_some() {
                return Ok(());
            }
            pos = end;
        }
        if pos < to {
            self.own_segment(pos, to)?;
        }
        Ok(())
    }

    /// Copies bytes `[from, to)` by offload, falling back to streaming when offload is not
    /// supported here and nothing has been offloaded yet.
    fn own_segment(&mut self, from: u64, to: u64) -> Result<(), DataError> {
        let mut pos = from;
        if self.offload {
            while pos < to {
                interrupted(self.control)?;
                let chunk = if self.plan.nocache {
                    NOCACHE_WINDOW
                } else {
                    OFFLOAD_CHUNK
                };
                let want = (to - pos).min(chunk);
                match self.offload_chunk(self.src, pos, pos, want) {
                    Ok(0) => {
                        self.eof = Some(pos);
                        return Ok(());
                    }
                    Ok(n) => {
                        pos += n;
                        self.drop_window(pos)?;
                    }
                    Err(e) if offload_unsupported(e.errno) && !self.used_offload => {
                        self.offload = false;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            if pos >= to {
                return Ok(());
            }
        }
        self.stream(pos, to)
    }

    /// One `copy_file_range` of up to `want` bytes of `fd` at `off` into the destination at
    /// `dst_off`; returns the bytes copied (0 at the end of `fd`).
    fn offload_chunk(
        &mut self,
        fd: BorrowedFd<'_>,
        off: u64,
        dst_off: u64,
        want: u64,
    ) -> Result<u64, DataError> {
        let (mut s, mut d) = (off, dst_off);
        let n = sys::copy_range(fd, &mut s, self.dst, &mut d, want as usize)
            .map_err(fail(Op::Write))? as u64;
        self.control.add_bytes(Method::Offload, n);
        self.written += n;
        self.end = self.end.max(dst_off + n);
        self.used_offload |= n > 0;
        Ok(n)
    }

    /// Reads and writes `[from, to)` through the buffer.
    fn stream(&mut self, from: u64, to: u64) -> Result<(), DataError> {
        let mut pos = from;
        while pos < to {
            interrupted(self.control)?;
            let n = self.stream_chunk(self.src, pos, pos, to - pos)?;
            if n == 0 {
                self.eof = Some(pos);
                return Ok(());
            }
            pos += n;
            self.drop_window(pos)?;
        }
        Ok(())
    }

    /// Reads up to a buffer of `fd` at `off` (at most `want` bytes) and writes it into the
    /// destination at `dst_off`; returns the bytes moved (0 at the end of `fd`).
    fn stream_chunk(
        &mut self,
        fd: BorrowedFd<'_>,
        off: u64,
        dst_off: u64,
        want: u64,
    ) -> Result<u64, DataError> {
        self.used_stream = true;
        let bs = self.plan.buffer_size.max(4096);
        if self.buf.len() < bs {
            self.buf.resize(bs, 0);
        }
        let want = want.min(bs as u64) as usize;
        let n = sys::pread(fd, &mut self.buf[..want], off).map_err(fail(Op::Read))?;
        if n == 0 {
            return Ok(0);
        }
        if self.plan.sparse == Sparse::Always {
            write_skipping_zeros(
                self.dst,
                &self.buf[..n],
                dst_off,
                &mut self.written,
                &mut self.end,
            )?;
        } else {
            write_all_at(self.dst, &self.buf[..n], dst_off)?;
            self.written += n as u64;
            self.end = self.end.max(dst_off + n as u64);
        }
        self.control.add_bytes(Method::Stream, n as u64);
        Ok(n as u64)
    }

    /// Copies `[from, to)` of the source reading through the canonical file of `v` where
    /// the checks of shared reads pass, from the source itself elsewhere.
    fn through(&mut self, v: &ReadVia<'_>, from: u64, to: u64) -> Result<(), DataError> {
        let last = std::sync::Mutex::new(None);
        let t = Through {
            own: self.src,
            canon: v.canon,
            last: &last,
        };
        let mut failed = None;
        // A range read through the canonical file whose checks then fail is written again
        // from the source: it counts once.
        let written = self.written;
        let mut sink = |fd: BorrowedFd<'_>, off: u64, at: u64, n: u64| {
            let mut done = 0;
            while done < n {
                let moved = self.move_chunk(fd, off + done, from + at + done, n - done);
                match moved {
                    Ok(0) => break,
                    Ok(k) => done += k,
                    Err(e) => {
                        failed = Some(e);
                        return Err(std::io::Error::from(e.errno));
                    }
                }
            }
            Ok(done)
        };
        let moved = t.transfer(from, v.canon_at + (from - v.at), to - from, &mut sink);
        let m = match moved {
            Ok(m) => m,
            Err(e) => {
                let errno = Errno::from_io_error(&e).unwrap_or(Errno::IO);
                return Err(failed.unwrap_or(DataError {
                    op: Op::Read,
                    errno,
                }));
            }
        };
        self.written = written + m.bytes;
        self.through += m.through;
        if m.bytes < to - from {
            self.eof = Some(from + m.bytes);
        }
        self.drop_window(from + m.bytes)
    }

    /// Moves up to `want` bytes of `fd` at `off` into the destination at `dst_off`: by
    /// offload while it is allowed and works, else through the buffer.
    fn move_chunk(
        &mut self,
        fd: BorrowedFd<'_>,
        off: u64,
        dst_off: u64,
        want: u64,
    ) -> Result<u64, DataError> {
        interrupted(self.control)?;
        if self.offload {
            match self.offload_chunk(fd, off, dst_off, want.min(OFFLOAD_CHUNK)) {
                Err(e) if offload_unsupported(e.errno) && !self.used_offload => {
                    self.offload = false;
                }
                other => return other,
            }
        }
        self.stream_chunk(fd, off, dst_off, want)
    }
}

/// Fails the file when the run has been stopped, so it is removed promptly.
pub(crate) fn interrupted(control: &Control) -> Result<(), DataError> {
    if control.is_stopped() {
        Err(DataError {
            op: Op::Interrupted,
            errno: Errno::INTR,
        })
    } else {
        Ok(())
    }
}

/// Block size used to find runs of zeros for `--sparse=always`.
const ZERO_BLOCK: usize = 4096;

/// Writes the non-zero blocks of `data` at `off`, leaving all-zero blocks as holes.
fn write_skipping_zeros(
    dst: BorrowedFd<'_>,
    data: &[u8],
    off: u64,
    written: &mut u64,
    end: &mut u64,
) -> Result<(), DataError> {
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
        *written += (j - i) as u64;
        *end = (*end).max(off + j as u64);
        i = j;
    }
    Ok(())
}

fn write_all_at(dst: BorrowedFd<'_>, mut data: &[u8], mut off: u64) -> Result<(), DataError> {
    while !data.is_empty() {
        match sys::pwrite(dst, data, off) {
            Ok(0) => {
                return Err(DataError {
                    op: Op::Write,
                    errno: Errno::NOSPC,
                });
            }
            Ok(n) => {
                data = &data[n..];
                off += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => {
                return Err(DataError {
                    op: Op::Write,
                    errno: e,
                });
            }
        }
    }
    Ok(())
}

/// Copies a file whose size is unknown (0 reported) by reading until end of file.
fn stream_to_end(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    plan: &DataPlan<'_>,
    buf: &mut Vec<u8>,
    control: &Control,
) -> Result<u64, DataError> {
    let bs = plan.buffer_size.clamp(4096, 1 << 20);
    if buf.len() < bs {
        buf.resize(bs, 0);
    }
    let mut total = 0u64;
    loop {
        interrupted(control)?;
        let n = match sys::read(src, &mut buf[..bs]) {
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => {
                return Err(DataError {
                    op: Op::Read,
                    errno: Errno::AGAIN,
                });
            }
            Err(e) => {
                return Err(DataError {
                    op: Op::Read,
                    errno: e,
                });
            }
        };
        if n == 0 {
            return Ok(total);
        }
        write_all(dst, &buf[..n])?;
        total += n as u64;
        control.add_bytes(Method::Stream, n as u64);
    }
}

/// Writes all of `data` to `dst` at its offset, through short writes and interruptions.
pub(crate) fn write_all(dst: BorrowedFd<'_>, mut data: &[u8]) -> Result<(), DataError> {
    while !data.is_empty() {
        match sys::write(dst, data) {
            Ok(0) => {
                return Err(DataError {
                    op: Op::Write,
                    errno: Errno::NOSPC,
                });
            }
            Ok(w) => data = &data[w..],
            Err(Errno::INTR) => {}
            Err(errno) => {
                return Err(DataError {
                    op: Op::Write,
                    errno,
                });
            }
        }
    }
    Ok(())
}
