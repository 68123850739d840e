//! Large files split into ranges that several workers copy at once
//! ([`Options::split`](crate::Options::split)).
//!
//! The worker that meets the file (the *splitter*) creates the copy as usual, then hands one
//! work item per range ([`FileRange`]: plain data) to the scheduler, and copies ranges itself
//! too. Each range is taken exactly once, by whoever gets to it first: a helper that runs a
//! range item takes that range, the splitter takes the ranges in order. When the splitter has
//! no range left to take, it waits for the ranges helpers are copying: a helper never waits,
//! so the wait always ends. Then the splitter goes on with the file as with any other: the
//! metadata is applied once, after the last range.
//!
//! A range that fails (or a stop request) ends the file: ranges not yet started are not
//! started, the splitter waits for those under way, and the copy is removed. A range item
//! whose file is finished, or unknown to this executor, does nothing.
//!
//! **Across processes** (a run spread over several, see `Executor::lend_range`): a range
//! item that reached another process is taken there only once the splitter's process has
//! lent it (`lend`), at the moment a worker there starts it, so that the splitter waits only
//! for ranges that a worker is copying and its wait still always ends. That worker copies
//! it (`run_lent`) and the outcome goes back to the splitter's process (`lent_done`).

use super::context::{Buffers, Ctx, Here, Loc, Spawner};
use super::split_state::{Split, Tally, lock};
use super::work::{FileRange, RangeDone, Stat, WorkItem, WorkKind};
use crate::data::copy::{
    Checkpoint, DataError, DataJob, FileCopy, Layout, Written, copy_span, gaps,
};
use crate::options::Dereference;
use crate::place::resume::ResumeProgress;
use crate::report::Op;
use crate::sys::{self, Errno, Meta};
use rustix::fd::{AsFd, OwnedFd};
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// The most ranges one file is split into, whatever [`Options::split`](crate::Options::split)
/// says: each range is a work item held until it is taken, so the memory a split file needs
/// stays bounded (a few hundred bytes per range) however large the file and small the range.
const MAX_RANGES: u64 = 4096;

/// The size of the ranges of a file with `left` bytes to copy, asked to be `each`: larger
/// where `each` would make more than [`MAX_RANGES`] of them.
fn range_size(each: u64, left: u64) -> u64 {
    each.max(left.div_ceil(MAX_RANGES))
}

/// The ranges of `[from, to)` split every `each` bytes (the last one takes the remainder).
fn ranges(from: u64, to: u64, each: u64) -> Vec<(u64, u64)> {
    let n = ((to - from) / each).max(1);
    (0..n)
        .map(|i| {
            let end = if i + 1 == n {
                to
            } else {
                from + (i + 1) * each
            };
            (from + i * each, end)
        })
        .collect()
}

/// What is left to copy of a file of `size` bytes whose parts `done` are complete: the
/// gaps, each split every `each` bytes.
fn todo(size: u64, done: &[(u64, u64)], each: u64) -> Vec<(u64, u64)> {
    gaps(size, done)
        .into_iter()
        .flat_map(|(from, to)| ranges(from, to, each))
        .collect()
}

/// The names of a file being split: its source's, and the one its copy is written under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Names<'a> {
    pub src: &'a CStr,
    pub written: &'a CStr,
}

/// The data path's layout for a large file copied in ranges that other workers help with.
/// Every worker keeps `progress` (the resume record) up to date with its ranges.
pub(crate) struct Splitter<'a, 'c> {
    ctx: &'a Ctx<'c>,
    spawn: &'a dyn Spawner,
    /// The file's place: its root, its directory below the root, and whether it is the root.
    root: u32,
    path: Vec<u8>,
    at_root: bool,
    names: Names<'a>,
    progress: Option<Arc<ResumeProgress>>,
    stat: Stat,
    /// The ranges, every `each` bytes of what is left to copy.
    all: Vec<(u64, u64)>,
}

/// The layout that copies the file `meta` (written as `names.written` at `here`) in ranges,
/// when the options ask for it and what is left to copy is large enough; None otherwise (the
/// file is copied in one piece). `done`: the parts an earlier run completed (a resumed copy),
/// empty for a new one. A clone is never split: the data path tries it first.
pub(crate) fn layout<'a, 'c>(
    ctx: &'a Ctx<'c>,
    here: &Here<'a>,
    names: Names<'a>,
    progress: Option<Arc<ResumeProgress>>,
    done: &[(u64, u64)],
    meta: &Meta,
) -> Option<Splitter<'a, 'c>> {
    let each = ctx.opts.split.filter(|&e| e > 0)?;
    let spawn = here.spawn?;
    let (root, path, at_root) = match here.loc {
        Loc::Root(i) => (i, Vec::new(), true),
        Loc::Below(i, rel) => (i, rel.to_vec(), false),
        Loc::Alone { .. } => return None,
    };
    let left = meta.size - done.iter().map(|(a, b)| b - a).sum::<u64>();
    if (ctx.opts.jobs < 2 && !ctx.splits.lending) || left < 2 * each {
        return None;
    }
    Some(Splitter {
        ctx,
        spawn,
        root,
        path,
        at_root,
        names,
        progress,
        stat: (*meta).into(),
        all: todo(meta.size, done, range_size(each, left)),
    })
}

impl Layout for Splitter<'_, '_> {
    fn copy(&mut self, fc: &mut FileCopy<'_>) -> Result<Written, DataError> {
        let ctx = self.ctx;
        let id = ctx.splits.next.fetch_add(1, Ordering::Relaxed);
        // Ranges copied elsewhere are recorded here, through a descriptor of our own.
        let own_dst = match (&self.progress, ctx.splits.lending) {
            (Some(_), true) => fc.dst().try_clone_to_owned().ok(),
            _ => None,
        };
        let split = Arc::new(Split {
            src: (self.stat.dev, self.stat.ino),
            progress: self.progress.clone(),
            dst: own_dst,
            taken: self.all.iter().map(|_| AtomicBool::new(false)).collect(),
            ranges: self.all.clone(),
            abort: AtomicBool::new(false),
            tally: Mutex::new(Tally::default()),
            finished: Condvar::new(),
        });
        lock(&ctx.splits.live).insert(id, split.clone());
        self.hand_out(id);
        self.take_in_order(&split, fc);
        // Every range is taken now; wait for the ones helpers are copying.
        let mut t = lock(&split.tally);
        while t.finished < self.all.len() {
            t = split.finished.wait(t).unwrap_or_else(|e| e.into_inner());
        }
        let tally = std::mem::take(&mut *t);
        drop(t);
        lock(&ctx.splits.live).remove(&id);
        match tally.error {
            Some(e) => Err(e),
            None => Ok(tally.helpers),
        }
    }
}

impl Splitter<'_, '_> {
    /// One work item per range but the first, which the splitter takes first; helpers take
    /// whichever item they get.
    fn hand_out(&self, id: u64) {
        for &(offset, end) in self.all.iter().skip(1) {
            self.spawn.push(WorkItem {
                root: self.root,
                path: self.path.clone(),
                kind: WorkKind::Range(FileRange {
                    file: id,
                    at_root: self.at_root,
                    name: self.names.src.to_bytes().to_vec(),
                    written: self.names.written.to_bytes().to_vec(),
                    offset,
                    len: end - offset,
                }),
                stat: Some(self.stat),
            });
        }
    }

    /// Copies, in order, the ranges no helper took yet.
    fn take_in_order(&self, split: &Split, fc: &mut FileCopy<'_>) {
        for (i, &(a, b)) in self.all.iter().enumerate() {
            if !split.take(i) {
                continue;
            }
            if split.abort.load(Ordering::SeqCst) {
                split.finish(Err(DataError::new(Op::Interrupted, Errno::INTR)), false);
                continue;
            }
            let did = fc.span(a, b).map(|()| Written::default());
            if let (Err(e), Some(p), true) = (&did, &self.progress, self.ctx.opts.partial) {
                if let Some((from, to)) = e.stopped_at {
                    p.add(fc.dst(), from, to);
                }
            }
            split.finish(did, false);
        }
    }
}

/// Runs a range item: copies its range, unless the splitter or another helper took it, or
/// its file is finished.
pub(crate) fn help(ctx: &Ctx<'_>, w: &mut Buffers, root: u32, rel: &[u8], r: &FileRange) {
    let Some(split) = ctx.splits.get(r.file) else {
        return;
    };
    let Some(i) = split.ranges.iter().position(|&(a, _)| a == r.offset) else {
        return;
    };
    if !split.take(i) {
        return;
    }
    if split.abort.load(Ordering::SeqCst) {
        split.finish(Err(DataError::new(Op::Interrupted, Errno::INTR)), true);
        return;
    }
    let did = copy_range(ctx, w, root, rel, r, split.src, split.progress.as_deref());
    split.finish(did, true);
}

/// In the splitter's process: takes the range of `file` at `offset` for a worker of another process that
/// is about to start it. False when it is taken already (by the splitter, a helper here, or
/// a worker elsewhere), when the file is finished, or when the file failed (the range is
/// then given up here).
pub(crate) fn lend(ctx: &Ctx<'_>, file: u64, offset: u64) -> bool {
    let Some(split) = ctx.splits.get(file) else {
        return false;
    };
    let Some(i) = split.ranges.iter().position(|&(a, _)| a == offset) else {
        return false;
    };
    if !split.take(i) {
        return false;
    }
    if split.abort.load(Ordering::SeqCst) {
        split.finish(Err(DataError::new(Op::Interrupted, Errno::INTR)), true);
        return false;
    }
    true
}

/// In another process: copies a range that the splitter's process lent (see [`lend`]), and
/// says how it went, for [`lent_done`] there. The run's resume record is the splitter's
/// business: this worker writes none.
pub(crate) fn run_lent(
    ctx: &Ctx<'_>,
    w: &mut Buffers,
    root: u32,
    rel: &[u8],
    r: &FileRange,
    stat: Option<Stat>,
) -> RangeDone {
    let did = match stat {
        _ if ctx.report.control.is_stopped() => Err(DataError::new(Op::Interrupted, Errno::INTR)),
        Some(stat) => copy_range(ctx, w, root, rel, r, (stat.dev, stat.ino), None),
        None => Err(DataError::new(Op::Changed, Errno::STALE)),
    };
    let (written, offloaded, streamed, failed, stopped_at) = match did {
        Ok(w) => (w.bytes, w.offloaded, w.streamed, None, None),
        Err(e) => (
            0,
            false,
            false,
            Some((e.op, e.errno.raw_os_error())),
            e.stopped_at,
        ),
    };
    RangeDone {
        file: r.file,
        offset: r.offset,
        written,
        offloaded,
        streamed,
        failed,
        stopped_at,
    }
}

/// In the splitter's process: a lent range is done; records it as a helper's.
pub(crate) fn lent_done(ctx: &Ctx<'_>, done: &RangeDone) {
    let Some(split) = ctx.splits.get(done.file) else {
        return;
    };
    let Some(&(from, to)) = split.ranges.iter().find(|&&(a, _)| a == done.offset) else {
        return;
    };
    let record = |a: u64, b: u64| {
        if let (Some(p), Some(dst)) = (&split.progress, &split.dst) {
            p.add(dst.as_fd(), a, b);
        }
    };
    let did = match done.failed {
        None => {
            record(from, to);
            Ok(Written {
                bytes: done.written,
                offloaded: done.offloaded,
                streamed: done.streamed,
            })
        }
        Some((op, errno)) => {
            if let (Some((a, b)), true) = (done.stopped_at, ctx.opts.partial) {
                record(a, b);
            }
            Err(DataError::new(op, Errno::from_raw_os_error(errno)))
        }
    };
    split.finish(did, true);
}

/// Opens the file's source (which must still be inode `src_id`) and its copy again, in this
/// worker, and copies the range, keeping `progress` up to date if given.
fn copy_range(
    ctx: &Ctx<'_>,
    w: &mut Buffers,
    root_index: u32,
    rel: &[u8],
    r: &FileRange,
    src_id: (u64, u64),
    progress: Option<&ResumeProgress>,
) -> Result<Written, DataError> {
    let root = ctx.root(root_index);
    let open = |e: Errno| DataError::new(Op::Open, e);
    let dirs: Option<(OwnedFd, OwnedFd)> = if r.at_root {
        None
    } else {
        let (src_anchor, dst_anchor) = root.dirs();
        let src_dir = if ctx.opts.dereference == Dereference::Always {
            sys::open_dir_following(src_anchor, rel)
        } else {
            sys::open_dir_beneath(src_anchor, rel)
        };
        Some((
            src_dir.map_err(open)?,
            sys::open_dir_beneath(dst_anchor, rel).map_err(open)?,
        ))
    };
    let (src_dir, dst_dir, follow) = match &dirs {
        Some((s, d)) => (
            s.as_fd(),
            d.as_fd(),
            ctx.opts.dereference == Dereference::Always,
        ),
        None => (
            root.src_parent.as_fd(),
            root.dst_parent.as_fd(),
            root.follow,
        ),
    };
    let src = sys::open_read(src_dir, &sys::cstring(&r.name), follow).map_err(open)?;
    let meta = sys::fstat(src.as_fd()).map_err(|e| DataError::new(Op::Stat, e))?;
    if meta.id() != src_id {
        return Err(DataError::new(Op::Changed, Errno::STALE));
    }
    let dst = sys::open_to_resume(dst_dir, &sys::cstring(&r.written)).map_err(open)?;
    let plan = ctx.plan(&meta, &root.dst, root.sized_dev, &[]);
    let mut recorder = progress.map(|p| p.on(dst.as_fd()));
    let job = DataJob {
        src: src.as_fd(),
        meta: &meta,
        dst: dst.as_fd(),
        plan: &plan,
        buf: &mut w.data,
        control: ctx.report.control,
        checkpoint: recorder.as_mut().map(|r| r as &mut dyn Checkpoint),
    };
    copy_span(job, r.offset, r.offset + r.len).inspect_err(|e| {
        // --partial keeps what this range wrote, as the splitter keeps its own.
        if let (Some(p), Some((from, to)), true) = (progress, e.stopped_at, ctx.opts.partial) {
            p.add(dst.as_fd(), from, to);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_what_is_left_once_and_the_last_takes_the_remainder() {
        assert_eq!(todo(10, &[], 4), [(0, 4), (4, 10)]);
        assert_eq!(todo(12, &[], 4), [(0, 4), (4, 8), (8, 12)]);
        assert_eq!(todo(3, &[], 4), [(0, 3)]);
        assert_eq!(
            todo(20, &[(0, 4), (10, 12)], 4),
            [(4, 10), (12, 16), (16, 20)]
        );
        assert_eq!(todo(20, &[(0, 20)], 4), []);
    }

    #[test]
    fn a_file_is_split_into_at_most_max_ranges_whatever_the_range_size() {
        let gib = 1 << 30;
        for (size, each) in [
            (24 * gib, 1),
            (3 * gib / 2, 4096),
            (gib, 1 << 20),
            (1 << 20, 1),
        ] {
            let n = todo(size, &[], range_size(each, size)).len() as u64;
            assert!(n <= MAX_RANGES, "{size} in ranges of {each}: {n}");
        }
        // Below the bound, ranges are as asked.
        assert_eq!(range_size(1 << 20, 1 << 30), 1 << 20);
        assert_eq!(todo(1 << 30, &[], range_size(1 << 20, 1 << 30)).len(), 1024);
    }
}
