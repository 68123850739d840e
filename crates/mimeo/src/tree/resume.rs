//! Resumable copies for one entry (see `place::resume`): the record a large file's copy
//! keeps while its data is written, `-u` going on from what an earlier run wrote, and
//! `--partial` keeping what a copy that the run's stop interrupted wrote.

use super::context::{Ctx, Here};
use crate::options::Overwrite;
use crate::place::crash;
use crate::place::resume::{self, RESUME_MIN, ResumeProgress};
use crate::sys::{self, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CStr;
use std::sync::Arc;

/// A destination that an earlier run left incomplete, opened to go on from its parts.
pub(crate) struct Resumed {
    pub fd: OwnedFd,
    pub prior: Prior,
}

/// What an earlier run left of a copy.
pub(crate) struct Prior {
    /// Its parts that are complete and verified.
    pub done: Vec<(u64, u64)>,
    /// Its metadata as found: owner and mode as the earlier run left them.
    pub was: Meta,
}

/// Under `-u`, the existing destination `dst_name` of `src` that the overwrite decision
/// would replace: when it is an incomplete copy of this very source, with a record of its
/// complete parts and the last block of each equal to the source's, it is opened to go on
/// from there. None: copy afresh.
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
    let end = record.done.last().map_or(0, |&(_, end)| end);
    if !record.is_for(meta) || record.done.is_empty() || end > was.size {
        return None;
    }
    // While it is written again it must stay detectably incomplete: by its own mark (the
    // sticky bit, or the xattr of a file alone), or by this part's marker in its directory.
    let marked = crash::marked_incomplete(&was, meta)
        || match here.marker {
            Some(m) => m.ensure(here.dst_dir),
            None => sys::has_xattr(fd.as_fd(), crash::MARK),
        };
    let sound = record
        .done
        .iter()
        .all(|&(a, b)| resume::part_matches(src, fd.as_fd(), a, b));
    if !marked || !sound {
        return None;
    }
    Some(Resumed {
        fd,
        prior: Prior {
            done: record.done,
            was,
        },
    })
}

/// The record keeper for the copy of `meta`, whose parts `done` are complete already: for a
/// large file written at its final name (a temporary is removed by any later run, so it
/// could never be resumed).
pub(crate) fn progress(
    meta: &Meta,
    temporary: bool,
    done: &[(u64, u64)],
) -> Option<Arc<ResumeProgress>> {
    (meta.size >= RESUME_MIN && !temporary).then(|| Arc::new(ResumeProgress::new(meta, done)))
}

/// With `--partial`, a copy stopped by the run's stop request keeps what it wrote and its
/// record (and its directory's marker) instead of being removed: `stopped_at` is the part of
/// the range it was copying that was complete. Returns whether it was kept.
pub(crate) fn keep_stopped(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    progress: Option<&ResumeProgress>,
    dst: BorrowedFd<'_>,
    stopped_at: Option<(u64, u64)>,
) -> bool {
    let Some(p) = progress else {
        return false;
    };
    if !ctx.opts.partial || !p.sound() {
        return false;
    }
    if let Some((from, to)) = stopped_at {
        p.add(dst, from, to);
    }
    if !p.sound() {
        return false;
    }
    if let Some(m) = here.marker {
        m.keep();
    }
    true
}
