//! Shared reads in a tree copy. Before a file is copied to a destination it cannot be cloned
//! into (another filesystem, `--reflink=never`), the run's map of canonical source files
//! ([`CanonMap`](crate::place::shared_reads::CanonMap)) says which of its shared extents an earlier
//! source file already holds; those holders are opened (by their place below their root,
//! checked to be the same inode) and the data path reads those ranges through them, with the
//! checks of shared reads. The device is read once for all the clones of a file.

use super::context::{Ctx, Here};
use crate::data::shared_reads::{self, ReadVia};
use crate::options::{Reflink, Sparse};
use crate::place::shared_reads::{CanonRange, Canonical};
use crate::sys::{self, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CStr;
use std::sync::Arc;

/// The canonical files a file is read through, open, and the ranges read through each.
#[derive(Debug, Default)]
pub(crate) struct Canonicals {
    fds: Vec<(Arc<Canonical>, OwnedFd)>,
    ranges: Vec<(CanonRange, usize)>,
}

impl Canonicals {
    /// The ranges to read through canonical files, by offset, for the data path.
    pub fn via(&self) -> Vec<ReadVia<'_>> {
        self.ranges
            .iter()
            .map(|(t, i)| ReadVia {
                at: t.at,
                len: t.len,
                canon: self.fds[*i].1.as_fd(),
                canon_at: t.holder_at,
            })
            .collect()
    }
}

/// Whether a file's data will be copied, not cloned, so that shared reads may pay: the
/// options allow it, and the file is big enough and on a filesystem that shares blocks.
fn worth_it(ctx: &Ctx<'_>, here: &Here<'_>, src: BorrowedFd<'_>, meta: &Meta) -> bool {
    let o = ctx.opts;
    let may_clone = o.reflink != Reflink::Never && o.sparse != Sparse::Never;
    let cloned = may_clone && meta.dev == here.dst.dev;
    o.shared_reads
        && !o.nocache
        && o.sparse != Sparse::Always
        && !cloned
        && meta.size >= shared_reads::MIN_SIZE
        && sys::fs_type(src).is_ok_and(shared_reads::shares_blocks)
}

/// Finds and opens the canonical files of the source `here/name` (open as `src`), and makes
/// it the canonical file of its shared extents that none holds yet. Empty when shared reads
/// do not apply; a holder that cannot be opened, or is no longer the same inode, is skipped
/// (its ranges are read from the file itself).
pub(crate) fn canonicals(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    src: BorrowedFd<'_>,
    meta: &Meta,
) -> Canonicals {
    let mut out = Canonicals::default();
    let Some(loc) = here.link_loc(name) else {
        return out;
    };
    if !worth_it(ctx, here, src, meta) {
        return out;
    }
    let Ok(ext) = sys::fiemap(src, 0, u64::MAX, false) else {
        return out;
    };
    if !ext.iter().any(shared_reads::shared) {
        return out;
    }
    let me = || Canonical { loc, id: meta.id() };
    for t in ctx.canon.claim(meta.dev, &ext, me) {
        let i = match out.fds.iter().position(|(h, _)| Arc::ptr_eq(h, &t.holder)) {
            Some(i) => i,
            None => match open(ctx, &t.holder) {
                Some(fd) => {
                    out.fds.push((t.holder.clone(), fd));
                    out.fds.len() - 1
                }
                None => continue,
            },
        };
        out.ranges.push((t, i));
    }
    out
}

/// Opens a holder by its place below its root, if it is still the same inode.
fn open(ctx: &Ctx<'_>, h: &Canonical) -> Option<OwnedFd> {
    let root = ctx.root(h.loc.root);
    let name = std::ffi::CString::new(h.loc.name.as_slice()).ok()?;
    let fd = match &h.loc.dir {
        None => sys::open_read(root.src_parent.as_fd(), &name, root.follow).ok()?,
        Some(rel) => {
            let dir = sys::open_dir_beneath(root.dirs().0, rel).ok()?;
            sys::open_read(dir.as_fd(), &name, false).ok()?
        }
    };
    let m = sys::fstat(fd.as_fd()).ok()?;
    (m.is_reg() && m.id() == h.id).then_some(fd)
}
