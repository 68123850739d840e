//! Resumable prefixes for one entry (see `place::resume`): the record a large file's copy
//! keeps while its data is written, `-u` going on from an earlier run's prefix, and
//! `--partial` keeping the prefix of a copy that the run's stop interrupted.

use super::context::{Ctx, Here};
use crate::options::Overwrite;
use crate::place::crash;
use crate::place::resume::{self, RESUME_MIN, Recorder};
use crate::sys::{self, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CStr;

/// A destination that an earlier run left incomplete, opened to go on from its prefix.
pub(crate) struct Resumed {
    pub fd: OwnedFd,
    /// Bytes from its start that are complete and verified.
    pub done: u64,
    /// Its metadata as found: owner and mode as the earlier run left them.
    pub was: Meta,
}

/// Under `-u`, the existing destination `dst_name` of `src` that the overwrite decision
/// would replace: when it is an incomplete copy of this very source, with a record of its
/// prefix and that prefix's last block equal to the source's, it is opened to go on from
/// there (cut to the prefix). None: copy afresh.
pub(crate) fn try_resume(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    src: BorrowedFd<'_>,
    meta: &Meta,
    dst_name: &CStr,
) -> Option<Resumed> {
    if ctx.opts.overwrite != Overwrite::Update || meta.size < RESUME_MIN {
        return None;
    }
    let fd = sys::open_to_resume(here.dst_dir, dst_name).ok()?;
    let was = sys::fstat(fd.as_fd()).ok()?;
    if !was.is_reg() || was.size > meta.size {
        return None;
    }
    let record = resume::read(fd.as_fd())?;
    if !record.is_for(meta) || record.done == 0 || record.done > was.size {
        return None;
    }
    // While it is written again it must stay detectably incomplete: by its own mark, or by
    // this part's marker in its directory.
    let marked =
        crash::marked_incomplete(&was, meta) || here.marker.is_some_and(|m| m.ensure(here.dst_dir));
    if !marked || !resume::prefix_matches(src, fd.as_fd(), record.done) {
        return None;
    }
    sys::truncate(fd.as_fd(), record.done).ok()?;
    Some(Resumed {
        fd,
        done: record.done,
        was,
    })
}

/// The record keeper for the copy of `meta` into `dst`: for a large file written at its final
/// name (a temporary is removed by any later run, so its prefix could never be resumed).
pub(crate) fn recorder<'a>(
    dst: BorrowedFd<'a>,
    meta: &Meta,
    temporary: bool,
) -> Option<Recorder<'a>> {
    (meta.size >= RESUME_MIN && !temporary).then(|| Recorder::new(dst, meta))
}

/// With `--partial`, a copy stopped by the run's stop request after `prefix` bytes keeps its
/// prefix and record (and its directory's marker) instead of being removed. Returns whether
/// it was kept.
pub(crate) fn keep_stopped(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    recorder: Option<&mut Recorder<'_>>,
    prefix: u64,
) -> bool {
    let Some(rec) = recorder else {
        return false;
    };
    if !ctx.opts.partial || !rec.written || !rec.ok {
        return false;
    }
    use crate::data::copy::Checkpoint;
    rec.reached(prefix);
    if !rec.ok {
        return false;
    }
    if let Some(m) = here.marker {
        m.keep();
    }
    true
}
