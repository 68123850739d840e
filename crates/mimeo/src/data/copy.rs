//! The data path of one regular file: clone → offload → stream.
//!
//! Which errnos mean "this mechanism is not available here" is decided in one table,
//! [`falls_back`]; every other errno is terminal for the file, so no fallback ever hides
//! ENOSPC, EIO, EDQUOT or ENOMEM (docs/guarantees.md §1). Holes come from SEEK_DATA/SEEK_HOLE,
//! never from `copy_file_range`. The bytes between them move through the one [`SpanCopier`],
//! as those of range copies do.

pub(crate) use super::error::DataError;
use super::fallback::{Mechanism, falls_back};
use super::range::Ranger;
use super::shared_reads::{ReadVia, Through};
use super::span::SpanCopier;
use crate::options::{Reflink, Sparse};
use crate::report::{Control, FileOutcome, Method, Op};
use crate::sys::{self, Errno, IoBuf, Meta};
use rustix::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};

fn fail(op: Op) -> impl FnOnce(Errno) -> DataError {
    move |errno| DataError::new(op, errno)
}

/// Told which parts of a file's data are complete, so that a copy stopped part-way can be
/// resumed (see `place::resume`). `reached(from, to)`: every byte and hole of `[from, to)`
/// is final; `from` is where the range being copied started, and `to == from` says that its
/// copy is starting.
pub(crate) trait Checkpoint {
    fn reached(&mut self, from: u64, to: u64);
}

/// The data step is told how far it got every this many bytes.
pub(crate) const CHECKPOINT_EVERY: u64 = 64 << 20;

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

/// The loose values every copy of a file's data starts from: the source (open, with its
/// metadata), the destination, the plan, the worker's buffer, the run's control, and who is
/// told how far the copy got.
pub(crate) struct DataJob<'a> {
    pub src: BorrowedFd<'a>,
    pub meta: &'a Meta,
    pub dst: BorrowedFd<'a>,
    pub plan: &'a DataPlan<'a>,
    pub buf: &'a mut IoBuf,
    pub control: &'a Control,
    pub checkpoint: Option<&'a mut dyn Checkpoint>,
}

/// What a copy (or the part of it other workers did) wrote: data bytes, and whether by
/// offload and by stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Written {
    pub bytes: u64,
    pub offloaded: bool,
    pub streamed: bool,
}

impl Written {
    /// The method a file counts under when this was written of it, `cloned` bytes of it from
    /// another file: a clone only if nothing was copied, an offload only if nothing was
    /// streamed.
    fn method(&self, cloned: u64) -> Method {
        if self.bytes == cloned && cloned > 0 {
            Method::Clone
        } else if self.offloaded && !self.streamed {
            Method::Offload
        } else {
            Method::Stream
        }
    }
}

/// Lays out the pieces of a file's copy where they are not simply copied from its start to
/// its end: `--preserve=sharing` clones some from earlier copies, `--split` hands ranges to
/// other workers. Runs after the whole-file clone was tried, with the file's engine.
pub(crate) trait Layout {
    /// Whether the whole-file clone is tried first.
    fn clone_whole_first(&self) -> bool {
        true
    }

    /// Copies the file (the parts an earlier run completed excepted) through `fc`; returns
    /// what other workers wrote of it.
    fn copy(&mut self, fc: &mut FileCopy<'_>) -> Result<Written, DataError>;
}

/// The data path of one file: `job.src` into `job.dst`, new and empty, or holding the parts
/// `done` (sorted, disjoint) that an earlier run wrote of the same source, which stay. A
/// whole-file clone is tried first (for a new copy); then `layout` puts the pieces in place,
/// or else the gaps of `done` are copied in order (offload, else stream). The counting of
/// how it went is [`FileCopy::finish`]'s, for every mode.
pub(crate) fn copy_file(
    job: DataJob<'_>,
    done: &[(u64, u64)],
    mut layout: Option<&mut dyn Layout>,
) -> Result<FileOutcome, DataError> {
    let (meta, size) = (job.meta, job.meta.size);
    if done.is_empty() && layout.as_ref().is_none_or(|l| l.clone_whole_first()) {
        if let Some(cloned) = clone_whole(job.src, meta, job.dst, job.plan, job.control)? {
            return Ok(cloned);
        }
    }
    if size == 0 && (job.plan.size_is_true || sys::sizes_are_true(job.src)) {
        return Ok(FileOutcome::new(Method::Stream, 0, 0));
    }
    if size == 0 {
        // Files such as those in /proc report size 0 yet have content: read to the end.
        let (bs, control) = (job.plan.buffer_size, job.control);
        let n = super::wait::read_to_end(job.src, job.dst, job.buf, bs, control, false)?;
        return Ok(FileOutcome::new(Method::Stream, n, 0));
    }
    let mut fc = FileCopy::new(job);
    fc.resume_from(done);
    let others = match layout.as_mut() {
        Some(l) => l.copy(&mut fc)?,
        None => {
            for (from, to) in gaps(size, done) {
                fc.span(from, to)?;
            }
            Written::default()
        }
    };
    fc.finish(others)
}

/// One range `[from, to)` of a file that another worker copies (`--split`): offload, else
/// stream, never a clone. Returns what it wrote.
pub(crate) fn copy_span(job: DataJob<'_>, from: u64, to: u64) -> Result<Written, DataError> {
    let mut fc = FileCopy::new(job);
    fc.span(from, to)?;
    Ok(fc.written())
}

/// The parts of `[0, size)` outside `done` (sorted, disjoint), in order.
pub(crate) fn gaps(size: u64, done: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut pos = 0;
    for &(from, to) in done.iter().chain(std::iter::once(&(size, size))) {
        if from > pos {
            out.push((pos, from));
        }
        pos = pos.max(to);
    }
    out
}

/// Tries to clone the whole file (`FICLONE`) as the plan allows. `Some` when it was cloned,
/// `None` when the data is to be copied.
fn clone_whole(
    src: BorrowedFd<'_>,
    meta: &Meta,
    dst: BorrowedFd<'_>,
    plan: &DataPlan<'_>,
    control: &Control,
) -> Result<Option<FileOutcome>, DataError> {
    let size = meta.size;
    // An empty file has nothing to share, but cp's --reflink=always clones it all the same,
    // and fails where it cannot.
    let worth = size > 0 || plan.reflink == Reflink::Always;
    if plan.sparse != Sparse::Never && plan.reflink != Reflink::Never && worth {
        if plan.same_fs && !plan.no_clone.contains(meta.dev) {
            match sys::clone_file(dst, src) {
                Ok(()) => {
                    control.add_bytes(Method::Clone, size);
                    let data = (meta.blocks * 512).min(size);
                    return Ok(Some(FileOutcome::new(Method::Clone, data, size - data)));
                }
                Err(e) if falls_back(Mechanism::Clone, e) && plan.reflink == Reflink::Auto => {
                    if e == Errno::OPNOTSUPP {
                        plan.no_clone.insert(meta.dev);
                    }
                }
                Err(e) => return Err(DataError::new(Op::Clone, e)),
            }
        } else if plan.reflink == Reflink::Always {
            return Err(DataError::new(Op::Clone, Errno::XDEV));
        }
    } else if plan.reflink == Reflink::Always && size > 0 {
        return Err(DataError::new(Op::Clone, Errno::OPNOTSUPP));
    }
    Ok(None)
}

/// The copy of one file's data by ranges, in the order of the file: spans copied by offload
/// or stream (holes kept), and pieces cloned from another file that holds the same bytes
/// (`--preserve=sharing`). [`FileCopy::finish`] sets the size and says how it went.
pub(crate) struct FileCopy<'a> {
    c: Copier<'a>,
    /// Keep the source's holes: look for them with SEEK_DATA/SEEK_HOLE.
    holes: bool,
    /// Bytes cloned from another file.
    shared: u64,
    /// Bytes kept from an earlier, interrupted run.
    resumed: u64,
    /// The source's size as it was looked at.
    size: u64,
}

impl<'a> FileCopy<'a> {
    fn new(job: DataJob<'a>) -> Self {
        let DataJob {
            src,
            meta,
            dst,
            plan,
            buf,
            control,
            checkpoint,
        } = job;
        let may_offload =
            plan.sparse == Sparse::Auto && !(plan.reflink == Reflink::Never && plan.dst_cow);
        let skip_zeros = plan.sparse == Sparse::Always;
        FileCopy {
            c: Copier {
                src,
                dst,
                plan,
                span: SpanCopier::new(control, buf, plan.buffer_size, may_offload, skip_zeros),
                eof: None,
                through: 0,
                progress: Progress {
                    src,
                    dst,
                    nocache: plan.nocache,
                    window: 0,
                    span_start: 0,
                    prefix: 0,
                    checkpoint,
                    told: None,
                },
            },
            // Not sparse, or holes unwanted: one segment, no SEEK_DATA/SEEK_HOLE calls.
            holes: plan.sparse != Sparse::Never && meta.blocks * 512 < meta.size,
            shared: 0,
            resumed: 0,
            size: meta.size,
        }
    }

    /// The destination being written.
    pub fn dst(&self) -> BorrowedFd<'a> {
        self.c.dst
    }

    /// The source's size as it was looked at.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Goes on from the parts `done` an earlier run wrote, which stay as they are.
    fn resume_from(&mut self, done: &[(u64, u64)]) {
        self.resumed = done.iter().map(|(a, b)| b - a).sum();
        self.c.span.end = done.iter().map(|&(_, b)| b).max().unwrap_or(0);
    }

    /// Records a failure; when the run was stopped, with the part of the range being copied
    /// that was complete.
    fn stopped(&self, e: DataError) -> DataError {
        DataError {
            stopped_at: (e.op == Op::Interrupted)
                .then_some((self.c.progress.span_start, self.c.progress.prefix)),
            ..e
        }
    }

    /// Copies `[from, to)` of the source to the same place (offload, else stream), leaving
    /// the source's holes as holes. Stops early where the source ends.
    pub fn span(&mut self, from: u64, to: u64) -> Result<(), DataError> {
        if from >= to || self.c.eof.is_some() {
            return Ok(());
        }
        let p = &mut self.c.progress;
        p.span_start = from;
        p.prefix = from;
        p.told = None;
        // Before the first byte: the checkpoint learns that this range is being copied.
        p.tell();
        let r = if self.holes {
            self.c.segments(from, to)
        } else {
            self.c.segment(from, to)
        };
        r.map_err(|e| self.stopped(e))?;
        if self.c.eof.is_none() {
            // A trailing hole of the span is complete too, and the whole range is told.
            let p = &mut self.c.progress;
            p.advance(to);
            p.told = None;
            p.tell();
        }
        Ok(())
    }

    /// Puts `[at, at + len)` of the file in place by cloning the same bytes from `holder` at
    /// `holder_off` (another copy that already holds them), copying what cannot be cloned.
    pub fn clone_from(
        &mut self,
        holder: BorrowedFd<'_>,
        holder_off: u64,
        at: u64,
        len: u64,
        granularity: u64,
    ) -> Result<(), DataError> {
        let mut done = super::range::RangeCopy::default();
        let c = &mut self.c;
        let mut r = Ranger::new(c.span.control, c.span.buf, c.plan.buffer_size);
        r.span.offload = c.span.offload;
        let result = r.copy(
            (holder, holder_off),
            (c.dst, at),
            len,
            granularity,
            &mut done,
        );
        let offloaded = r.span.offload;
        result.map_err(|e| self.stopped(e))?;
        self.shared += done.cloned;
        let span = &mut self.c.span;
        span.written += done.total();
        if done.copied > 0 {
            span.used_offload |= offloaded;
            span.used_stream |= !offloaded;
        }
        span.end = span.end.max(at + done.total());
        if done.total() < len {
            // The holder is shorter than it should be: the rest comes from the source.
            self.span(at + done.total(), at + len)?;
        }
        Ok(())
    }

    /// What was written so far.
    fn written(&self) -> Written {
        Written {
            bytes: self.c.span.written,
            offloaded: self.c.span.used_offload,
            streamed: self.c.span.used_stream,
        }
    }

    /// Ends the copy: a trailing hole, and how it went, counting
    /// what `others` (other workers) wrote of it.
    fn finish(mut self, others: Written) -> Result<FileOutcome, DataError> {
        let size = self.size;
        let c = &mut self.c;
        c.span.written += others.bytes;
        c.span.used_offload |= others.offloaded;
        c.span.used_stream |= others.streamed;
        c.progress.drop_window(u64::MAX, c.span.end)?;
        let final_size = match c.eof {
            // The source shrank while we copied: keep exactly what it had.
            Some(at) => at,
            None => {
                if c.span.end < size {
                    // A trailing hole (or zeros skipped by --sparse=always).
                    sys::truncate(c.dst, size).map_err(fail(Op::Truncate))?;
                }
                size
            }
        };
        let wrote = self.written();
        let method = wrote.method(self.shared);
        let bytes = (wrote.bytes + self.resumed).min(final_size);
        let mut outcome = FileOutcome::new(method, bytes, final_size - bytes);
        outcome.cloned_bytes = self.shared;
        outcome.resumed_bytes = self.resumed;
        outcome.shared_read_bytes = self.c.through;
        Ok(outcome)
    }
}

/// The copy of a file's data in ranges: its holes looked for, its bytes moved by a
/// [`SpanCopier`] (from the source, or through a canonical file), and how far it got kept.
struct Copier<'a> {
    src: BorrowedFd<'a>,
    dst: BorrowedFd<'a>,
    plan: &'a DataPlan<'a>,
    span: SpanCopier<'a>,
    /// Where the source ended before its recorded size, if it shrank.
    eof: Option<u64>,
    /// Bytes read through a canonical file.
    through: u64,
    progress: Progress<'a>,
}

/// How far the copy of a file got: what its checkpoint is told and, with --nocache, what
/// was dropped from the page cache.
struct Progress<'a> {
    src: BorrowedFd<'a>,
    dst: BorrowedFd<'a>,
    nocache: bool,
    /// With --nocache: the start of the range not yet dropped from the page cache.
    window: u64,
    /// Where the range being copied started.
    span_start: u64,
    /// Everything from `span_start` to this offset is complete.
    prefix: u64,
    checkpoint: Option<&'a mut dyn Checkpoint>,
    /// Where the checkpoint was last told.
    told: Option<u64>,
}

/// With --nocache, the copied range is written back and dropped in windows of this size, so
/// the page cache holds at most about this much of the file at a time.
const NOCACHE_WINDOW: u64 = 8 << 20;

impl Progress<'_> {
    /// Everything below `at` is complete (pieces are put in place in the file's order).
    fn advance(&mut self, at: u64) {
        if at > self.prefix {
            self.prefix = at;
            self.tell();
        }
    }

    /// Tells the checkpoint, if any, how far the copy of the range got: the first time, and
    /// then when it got [`CHECKPOINT_EVERY`] further.
    fn tell(&mut self) {
        let at = self.prefix;
        if let Some(cp) = self.checkpoint.as_deref_mut() {
            if self.told.is_none_or(|t| at >= t + CHECKPOINT_EVERY) {
                cp.reached(self.span_start, at);
                self.told = Some(at);
            }
        }
    }

    /// With --nocache, once `upto` is a window past the last drop (or at the end, with
    /// `u64::MAX`), writes the range back and drops it from the cache on both sides; `end`
    /// is the highest offset written.
    fn drop_window(&mut self, upto: u64, end: u64) -> Result<(), DataError> {
        if !self.nocache {
            return Ok(());
        }
        let last = upto == u64::MAX;
        let upto = upto.min(end);
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
}

impl Copier<'_> {
    /// Copies every data segment of `[from, to)`, leaving holes unwritten.
    fn segments(&mut self, from: u64, to: u64) -> Result<(), DataError> {
        let mut pos = from;
        while pos < to && self.eof.is_none() {
            let Some(data) = sys::seek_data(self.src, pos).map_err(fail(Op::Read))? else {
                break;
            };
            if data >= to {
                break;
            }
            let hole = sys::seek_hole(self.src, data)
                .map_err(fail(Op::Read))?
                .min(to);
            self.segment(data, hole)?;
            pos = hole;
        }
        Ok(())
    }

    /// Copies bytes `[from, to)`: the ranges read through a canonical file (`plan.via`)
    /// through it, the rest from the source.
    fn segment(&mut self, from: u64, to: u64) -> Result<(), DataError> {
        // What lies below `from` and was not written is a hole of the source: complete.
        self.progress.advance(from);
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

    /// Copies bytes `[from, to)` of the source through the span copier (offload, else
    /// stream), telling the checkpoint and dropping the cache as it goes.
    fn own_segment(&mut self, from: u64, to: u64) -> Result<(), DataError> {
        let p = &mut self.progress;
        let piece = if self.plan.nocache {
            NOCACHE_WINDOW
        } else if p.checkpoint.is_some() {
            CHECKPOINT_EVERY
        } else {
            OFFLOAD_CHUNK
        };
        let mut after = |at, end| {
            p.drop_window(at, end)?;
            p.advance(at);
            Ok(())
        };
        let n = self.span.copy(
            (self.src, from),
            (self.dst, from),
            to - from,
            piece,
            &mut after,
        )?;
        if n < to - from {
            self.eof = Some(from + n);
        }
        Ok(())
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
        let written = self.span.written;
        let (span, dst) = (&mut self.span, self.dst);
        let mut sink = |fd: BorrowedFd<'_>, off: u64, at: u64, n: u64| {
            let dst = (dst, from + at);
            span.copy((fd, off), dst, n, OFFLOAD_CHUNK, &mut |_, _| Ok(()))
                .map_err(|e| {
                    failed = Some(e);
                    std::io::Error::from(e.errno)
                })
        };
        let moved = t.transfer(from, v.canon_at + (from - v.at), to - from, &mut sink);
        let m = match moved {
            Ok(m) => m,
            Err(e) => {
                let errno = Errno::from_io_error(&e).unwrap_or(Errno::IO);
                return Err(failed.unwrap_or(DataError::new(Op::Read, errno)));
            }
        };
        self.span.written = written + m.bytes;
        self.through += m.through;
        if m.bytes < to - from {
            self.eof = Some(from + m.bytes);
        }
        self.progress.drop_window(from + m.bytes, self.span.end)?;
        // The range is complete only once its checks passed and it was written in full.
        self.progress.advance(from + m.bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_what_an_earlier_run_left_undone() {
        assert_eq!(gaps(10, &[]), [(0, 10)]);
        assert_eq!(gaps(10, &[(0, 4)]), [(4, 10)]);
        assert_eq!(gaps(10, &[(2, 4), (6, 10)]), [(0, 2), (4, 6)]);
        assert_eq!(gaps(10, &[(0, 10)]), []);
        assert_eq!(gaps(0, &[]), []);
    }

    #[test]
    fn a_file_counts_as_cloned_offloaded_or_streamed_by_the_weakest_step() {
        let w = |bytes, offloaded, streamed| Written {
            bytes,
            offloaded,
            streamed,
        };
        assert_eq!(w(100, false, false).method(100), Method::Clone);
        // Part cloned, part offloaded: offloaded.
        assert_eq!(w(100, true, false).method(40), Method::Offload);
        // One worker offloaded, another streamed (a split file): streamed.
        assert_eq!(w(100, true, true).method(0), Method::Stream);
        // Nothing written at all (an empty file, or holes only): streamed.
        assert_eq!(w(0, false, false).method(0), Method::Stream);
    }

    #[test]
    fn devices_that_cannot_clone_are_remembered_in_a_few_slots() {
        let devs = NoCloneDevs::default();
        assert!(!devs.contains(0), "device 0 is a device like any other");
        devs.insert(0);
        devs.insert(0);
        assert!(devs.contains(0));
        for dev in 1..8 {
            devs.insert(dev);
        }
        assert!((0..8).all(|d| devs.contains(d)));
        // Full: a ninth is not remembered, so its files try the clone again.
        devs.insert(8);
        assert!(!devs.contains(8));
    }
}
