//! One regular file: the data-path chain clone → offload → stream.

/// The data path a regular file took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Extents shared with the source (`FICLONE`).
    Clone = 0,
    /// Copied inside the kernel (`copy_file_range`).
    Offload,
    /// Read and written through a user-space buffer.
    Stream,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Clone => "clone",
            Method::Offload => "offload",
            Method::Stream => "stream",
        }
    }
}

/// How one regular file was copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileOutcome {
    pub method: Method,
    /// Bytes of data in the copy (its size less its holes).
    pub bytes: u64,
    /// Bytes of the copy's size left as holes.
    pub hole_bytes: u64,
}

use crate::error::Op;
use crate::options::{Reflink, Sparse};
use crate::summary::Control;
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
                    return Ok(FileOutcome {
                        method: Method::Clone,
                        bytes: data,
                        hole_bytes: size - data,
                    });
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
        return Ok(FileOutcome {
            method: Method::Stream,
            bytes: 0,
            hole_bytes: 0,
        });
    }
    if size == 0 {
        // Files such as those in /proc report size 0 yet have content: read to the end.
        let n = stream_to_end(src, dst, plan, buf, control)?;
        return Ok(FileOutcome {
            method: Method::Stream,
            bytes: n,
            hole_bytes: 0,
        });
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
    Ok(FileOutcome {
        method,
        bytes: c.written,
        hole_bytes: final_size.saturating_sub(c.written),
    })
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

    /// Copies bytes `[from, to)` by offload, falling back to streaming when offload is not
    /// supported here and nothing has been offloaded yet.
    fn segment(&mut self, from: u64, to: u64) -> Result<(), DataError> {
        let mut pos = from;
        if self.offload {
            while pos < to {
                interrupted(self.control)?;
                let (mut s, mut d) = (pos, pos);
                let chunk = if self.plan.nocache {
                    NOCACHE_WINDOW
                } else {
                    OFFLOAD_CHUNK
                };
                let want = (to - pos).min(chunk) as usize;
                match sys::copy_range(self.src, &mut s, self.dst, &mut d, want) {
                    Ok(0) => {
                        self.eof = Some(pos);
                        return Ok(());
                    }
                    Ok(n) => {
                        self.control.add_bytes(Method::Offload, n as u64);
                        pos += n as u64;
                        self.written += n as u64;
                        self.end = self.end.max(pos);
                        self.used_offload = true;
                        self.drop_window(pos)?;
                    }
                    Err(e) if offload_unsupported(e) && !self.used_offload => {
                        self.offload = false;
                        break;
                    }
                    Err(e) => {
                        return Err(DataError {
                            op: Op::Write,
                            errno: e,
                        });
                    }
                }
            }
            if pos >= to {
                return Ok(());
            }
        }
        self.stream(pos, to)
    }

    /// Reads and writes `[from, to)` through the buffer.
    fn stream(&mut self, from: u64, to: u64) -> Result<(), DataError> {
        self.used_stream = true;
        let bs = self.plan.buffer_size.max(4096);
        if self.buf.len() < bs {
            self.buf.resize(bs, 0);
        }
        let punch = self.plan.sparse == Sparse::Always;
        let mut pos = from;
        while pos < to {
            interrupted(self.control)?;
            let want = ((to - pos) as usize).min(bs);
            let n = sys::pread(self.src, &mut self.buf[..want], pos).map_err(fail(Op::Read))?;
            if n == 0 {
                self.eof = Some(pos);
                return Ok(());
            }
            if punch {
                write_skipping_zeros(
                    self.dst,
                    &self.buf[..n],
                    pos,
                    &mut self.written,
                    &mut self.end,
                )?;
            } else {
                write_all_at(self.dst, &self.buf[..n], pos)?;
                self.written += n as u64;
                self.end = self.end.max(pos + n as u64);
            }
            self.control.add_bytes(Method::Stream, n as u64);
            pos += n as u64;
            self.drop_window(pos)?;
        }
        Ok(())
    }
}

/// Fails the file when the run has been stopped, so it is removed promptly.
fn interrupted(control: &Control) -> Result<(), DataError> {
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
        let mut data = &buf[..n];
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
                Err(e) => {
                    return Err(DataError {
                        op: Op::Write,
                        errno: e,
                    });
                }
            }
        }
        total += n as u64;
        control.add_bytes(Method::Stream, n as u64);
    }
}

use crate::error::Error;
use crate::meta::{self, Apply, Dst};
use crate::place::{self, Existing, LinkStep};
use crate::summary::EntryKind;
use crate::sys::XattrTarget;
use crate::tree::{Here, Run, open_error};
use crate::verify;
use rustix::fd::{AsFd, OwnedFd};
use std::ffi::CStr;

/// Copies the regular file `here.src_dir/name` to `here.dst_dir/dst_name`, data and metadata.
/// Returns None when it was linked to an earlier copy or skipped.
pub(crate) fn copy_regular(
    run: &Run<'_>,
    here: &Here<'_>,
    buf: &mut Vec<u8>,
    name: &CStr,
    dst_name: &CStr,
    _listed: Option<Meta>,
    follow: bool,
) -> Result<Option<FileOutcome>, Error> {
    let src_path = || here.src_path(name);
    let src = sys::open_read(here.src_dir, name, follow).map_err(|e| open_error(src_path(), e))?;
    let meta =
        sys::fstat(src.as_fd()).map_err(|e| Error::io(Op::Stat, src_path(), sys::io_err(e)))?;
    if !meta.is_reg() {
        return Err(Error::refused(
            Op::Changed,
            src_path(),
            "no longer a regular file",
        ));
    }
    copy_opened(run, here, buf, name, dst_name, &src, &meta, None)
}

/// [`copy_regular`] for a source already opened and checked to be a regular file.
/// `found` is the destination's metadata when it is known to exist: the copy then goes
/// straight to a temporary, without first trying to create the destination name.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_opened(
    run: &Run<'_>,
    here: &Here<'_>,
    buf: &mut Vec<u8>,
    name: &CStr,
    dst_name: &CStr,
    src: &OwnedFd,
    meta: &Meta,
    found: Option<&Meta>,
) -> Result<Option<FileOutcome>, Error> {
    let meta = *meta;
    let src_path = || here.src_path(name);
    let dst_path = || here.dst_path(dst_name);
    let first = match place::link_or_claim(run, here, name, dst_name, &meta)? {
        LinkStep::Done => return Ok(None),
        LinkStep::Copy(first) => first,
    };
    // In a directory that carries this run's in-progress marker, a new file is created with
    // the mode a temporary gets (its final permission bits, or fewer while a chown is to come);
    // elsewhere it carries the sticky bit until its final chmod (see `journal`).
    let marked_dir = found.is_none()
        && here
            .node
            .is_some_and(|n| n.mark_in_progress(run, here.dst_dir));
    let initial = if marked_dir {
        place::unmarked_mode(run, here, &meta)
    } else {
        place::incomplete_mode(&meta)
    };
    let created = match found {
        Some(_) => Err(Errno::EXIST),
        None => sys::create_excl(here.dst_dir, dst_name, initial),
    };
    let (dst, temp) = match created {
        Ok(fd) => (fd, None),
        Err(Errno::EXIST) => {
            let policy = match found {
                Some(d) => place::existing_as(run, here, name, dst_name, d, &meta)?,
                None => place::existing(run, here, name, dst_name, &meta)?,
            };
            match policy {
                Existing::WriteInto => {
                    // No group member can link to a node: the next one becomes the copy.
                    drop(first);
                    return write_into_node(run, here, buf, name, dst_name, src, &meta);
                }
                Existing::Skip if !stale_content(run, here, src, dst_name, &meta)? => {
                    run.skipped(here, name, dst_name);
                    return Ok(None);
                }
                Existing::Skip | Existing::Replace => {
                    // A temporary is incomplete by its name, so it needs no marker (and no
                    // chmod to clear one): it is created as restricted as its final mode
                    // requires.
                    let mode = place::unmarked_mode(run, here, &meta);
                    let (fd, t) =
                        place::with_temp(here, |t| sys::create_excl(here.dst_dir, t, mode))
                            .map_err(|e| Error::io(Op::Create, dst_path(), sys::io_err(e)))?;
                    (fd, Some((t, mode & !run.process.umask)))
                }
            }
        }
        Err(e) => return Err(Error::io(Op::Create, dst_path(), sys::io_err(e))),
    };
    let written_name: &CStr = temp.as_ref().map_or(dst_name, |(t, _)| t);
    // A failure leaves no half file behind: the new entry is removed.
    let discard = |err: Error| {
        let _ = sys::unlink(here.dst_dir, written_name, false);
        err
    };
    let plan = DataPlan {
        reflink: run.opts.reflink,
        sparse: run.opts.sparse,
        buffer_size: run.opts.buffer_size,
        same_fs: meta.dev == here.dst_dev,
        dst_cow: here.dst_cow,
        nocache: run.opts.nocache,
        size_is_true: meta.dev == here.sized_dev,
        no_clone: &run.no_clone,
    };
    let outcome =
        copy_data(src.as_fd(), &meta, dst.as_fd(), &plan, buf, run.control).map_err(|e| {
            let path = if e.op == Op::Read {
                src_path()
            } else {
                dst_path()
            };
            discard(Error::io(e.op, path, sys::io_err(e.errno)))
        })?;
    if outcome.method != Method::Clone && meta.size > 0 {
        // Copying took time: a source written meanwhile would leave a copy that mixes old and
        // new bytes under the old times. A clone is one atomic step and needs no check.
        let now = sys::fstat(src.as_fd())
            .map_err(|e| discard(Error::io(Op::Stat, src_path(), sys::io_err(e))))?;
        if now.size != meta.size || now.mtime != meta.mtime {
            return Err(discard(Error::refused(
                Op::Changed,
                src_path(),
                "file changed as we read it; not copied",
            )));
        }
    }
    let xattrs =
        meta::source_xattrs(run.opts, XattrTarget::Fd(src.as_fd()), &src_path).map_err(discard)?;
    let apply = Apply {
        opts: run.opts,
        process: &run.process,
        src: &meta,
        created: true,
        created_owner: (!here.dst_setgid).then_some((run.process.euid, run.process.egid)),
        current_perm: Some(match &temp {
            Some((_, mode)) => *mode,
            None if marked_dir => initial & !run.process.umask,
            None => initial,
        }),
        inherit_sgid: false,
    };
    apply
        .run(Dst::Fd(dst.as_fd()), &xattrs, &dst_path)
        .map_err(discard)?;
    if run.opts.verify {
        verify::same_content(src.as_fd(), dst.as_fd(), &meta, outcome.method)
            .map_err(|e| discard(e.into_error(src_path(), dst_path())))?;
    }
    if run.opts.sync {
        sys::fsync(dst.as_fd())
            .map_err(|e| discard(Error::io(Op::Sync, dst_path(), sys::io_err(e))))?;
    }
    drop(dst);
    if let Some((t, _)) = &temp {
        let dirty = outcome.method != Method::Clone && outcome.bytes > 0;
        place::commit_temp(here, t, dst_name, dirty)?;
    }
    if run.opts.sync && here.node.is_none() {
        // A root-level file: its directory entry is flushed here; inside a tree, the
        // directory's own flush at its finish covers it.
        here.sync_dst_dir()
            .map_err(|e| Error::io(Op::Sync, dst_path(), sys::io_err(e)))?;
    }
    place::first_done(first, here, dst_name);
    run.copied(here, name, dst_name, EntryKind::File, Some(outcome));
    Ok(Some(outcome))
}

/// `-u --verify`: whether a destination that `-u` would skip differs from its source in
/// content, so that it is copied again instead.
fn stale_content(
    run: &Run<'_>,
    here: &Here<'_>,
    src: &rustix::fd::OwnedFd,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<bool, Error> {
    if !(run.opts.verify && run.opts.overwrite == crate::options::Overwrite::Update) {
        return Ok(false);
    }
    let dst_path = || here.dst_path(dst_name);
    let dst = sys::open_read(here.dst_dir, dst_name, false)
        .map_err(|e| Error::io(Op::Open, dst_path(), sys::io_err(e)))?;
    match verify::same_content(src.as_fd(), dst.as_fd(), meta, Method::Clone) {
        Ok(()) => Ok(false),
        Err(verify::Mismatch::Differs(_)) => Ok(true),
        Err(e) => Err(e.into_error(here.src_path(c""), dst_path())),
    }
}

/// Writes a regular file's bytes into an existing FIFO, socket or device node, as cp does,
/// then applies the metadata asked for to the node (cp does that too). The node is never
/// removed, whatever fails. A FIFO without a reader, or one that is full, is waited for in
/// short polls, so that a stop request is still seen.
fn write_into_node(
    run: &Run<'_>,
    here: &Here<'_>,
    buf: &mut Vec<u8>,
    name: &CStr,
    dst_name: &CStr,
    src: &OwnedFd,
    meta: &Meta,
) -> Result<Option<FileOutcome>, Error> {
    let src_path = || here.src_path(name);
    let dst_path = || here.dst_path(dst_name);
    let dst = loop {
        match sys::open_node_for_writing(here.dst_dir, dst_name) {
            // A FIFO that nobody reads yet.
            Err(Errno::NXIO)
                if sys::stat_at(here.dst_dir, dst_name, false)
                    .is_ok_and(|m| m.file_type() == sys::S_IFIFO) =>
            {
                if run.control.is_stopped() {
                    return Err(Error::io(
                        Op::Interrupted,
                        dst_path(),
                        sys::io_err(Errno::INTR),
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(Error::io(Op::Create, dst_path(), sys::io_err(e))),
            Ok(fd) => break fd,
        }
    };
    let bs = run.opts.buffer_size.clamp(4096, 1 << 20);
    if buf.len() < bs {
        buf.resize(bs, 0);
    }
    let mut pos = 0u64;
    loop {
        if run.control.is_stopped() {
            return Err(Error::io(
                Op::Interrupted,
                dst_path(),
                sys::io_err(Errno::INTR),
            ));
        }
        let n = sys::pread(src.as_fd(), &mut buf[..bs], pos)
            .map_err(|e| Error::io(Op::Read, src_path(), sys::io_err(e)))?;
        if n == 0 {
            break;
        }
        let mut data = &buf[..n];
        while !data.is_empty() {
            match sys::write(dst.as_fd(), data) {
                Ok(w) => data = &data[w..],
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => {
                    if run.control.is_stopped() {
                        return Err(Error::io(
                            Op::Interrupted,
                            dst_path(),
                            sys::io_err(Errno::INTR),
                        ));
                    }
                    sys::wait_writable(dst.as_fd(), 100);
                }
                Err(e) => return Err(Error::io(Op::Write, dst_path(), sys::io_err(e))),
            }
        }
        run.control.add_bytes(Method::Stream, n as u64);
        pos += n as u64;
    }
    let xattrs = meta::source_xattrs(run.opts, XattrTarget::Fd(src.as_fd()), &src_path)?;
    let apply = Apply {
        opts: run.opts,
        process: &run.process,
        src: meta,
        created: false,
        created_owner: None,
        current_perm: None,
        inherit_sgid: false,
    };
    apply.run(Dst::Fd(dst.as_fd()), &xattrs, &dst_path)?;
    let outcome = FileOutcome {
        method: Method::Stream,
        bytes: pos,
        hole_bytes: 0,
    };
    run.copied(here, name, dst_name, EntryKind::File, Some(outcome));
    Ok(Some(outcome))
}
