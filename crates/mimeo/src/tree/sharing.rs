//! Extent-sharing groups for one entry (`--preserve=sharing`): whether a source file's
//! extents are worth looking at, the copy of a file whose extents are shared, and the holding
//! of an existing copy that `-u` keeps. The groups themselves are `place::sharing`.
//!
//! The common path pays nothing: no extent map is read where the copy clones from its source
//! (the same filesystem: sharing is kept anyway), where the destination cannot clone (its
//! filesystem type, known per root), where the source's filesystem cannot share (its type,
//! looked at once per device), or for a file with less than [`SHARE_MIN`] of data. Otherwise
//! one FIEMAP call (without a flush) per file tells whether it has shared extents at all.

use super::context::{Ctx, Here};
use crate::data::copy::{DataError, FileCopy, Layout, Written};
use crate::place::links::LinkLoc;
use crate::place::sharing::{self, Holder, Sharing};
use crate::sys::{self, Extent, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CStr;
use std::sync::Arc;

/// Files with less data than this are copied without looking at their extents: for a tree
/// of small files the extent map would add a system call per file, for little space (a
/// small file is at most this much).
pub(crate) const SHARE_MIN: u64 = 64 << 10;

/// A file whose extents are shared, about to be copied with its sharing kept.
pub(crate) struct SharedCopy {
    extents: Vec<Extent>,
    /// The copy being written, holding what it writes for later references.
    pub holder: Arc<Holder>,
    granularity: u64,
}

/// Whether the source device's filesystem can share extents (btrfs, XFS, ...): looked at
/// once per device in a run.
fn source_can_share(ctx: &Ctx<'_>, dev: u64, src: BorrowedFd<'_>) -> bool {
    let mut known = ctx.sharing_devs.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, can)) = known.iter().find(|(d, _)| *d == dev) {
        return can;
    }
    let can = super::roots::is_cow(src);
    known.push((dev, can));
    can
}

/// The shared extents of `src`, when its copy at `here` should keep them shared: sharing is
/// asked for, the destination can clone and is not the source's filesystem, and the source
/// has any.
fn extents_to_keep(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    src: BorrowedFd<'_>,
    meta: &Meta,
) -> Option<(Vec<Extent>, u64)> {
    let granularity = here.dst.share?;
    if meta.dev == here.dst.dev
        || here.root.is_none()
        || meta.size < SHARE_MIN
        || meta.blocks * 512 < SHARE_MIN
        || !source_can_share(ctx, meta.dev, src)
    {
        return None;
    }
    let all = sys::fiemap(src, 0, u64::MAX, false).ok()?;
    let shared = sharing::shared_extents(all, meta.size);
    (!shared.is_empty()).then_some((shared, granularity))
}

/// Prepares the copy of `src` into `dst` (written as `written` at `here`) with its shared
/// extents kept, or None when it has none to keep.
pub(crate) fn prepare(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    src: BorrowedFd<'_>,
    meta: &Meta,
    dst: BorrowedFd<'_>,
    written: &CStr,
) -> Option<SharedCopy> {
    let (extents, granularity) = extents_to_keep(ctx, here, src, meta)?;
    let loc = here.link_loc(written)?;
    let id = sys::fstat(dst).ok()?.id();
    Some(SharedCopy {
        extents,
        holder: Holder::new(loc, id),
        granularity,
    })
}

/// Opens a holder's file for reading, by its place below its root's destination.
fn open_holder(ctx: &Ctx<'_>, loc: &LinkLoc) -> Option<OwnedFd> {
    let dir = ctx.open_loc_dir(loc).ok()?;
    let at = match &dir {
        Some(fd) => fd.as_fd(),
        None => ctx.root(loc.root).dst_parent.as_fd(),
    };
    sys::open_read(at, &sys::cstring(&loc.name), false).ok()
}

/// The data path's layout for a file whose shared extents earlier copies may hold: those
/// are cloned from them. No whole-file clone is tried: the source is on another filesystem.
pub(crate) struct KeepShared<'a, 'c> {
    pub ctx: &'a Ctx<'c>,
    pub copy: &'a SharedCopy,
    /// The source's device.
    pub dev: u64,
}

impl Layout for KeepShared<'_, '_> {
    fn clone_whole_first(&self) -> bool {
        false
    }

    fn copy(&mut self, fc: &mut FileCopy<'_>) -> Result<Written, DataError> {
        let open = |loc: &LinkLoc| open_holder(self.ctx, loc);
        let how = Sharing {
            map: &self.ctx.extents,
            dev: self.dev,
            me: &self.copy.holder,
            granularity: self.copy.granularity,
            open: &open,
        };
        sharing::copy_shared(fc, &self.copy.extents, &how)?;
        Ok(Written::default())
    }
}

/// `-u` keeps the existing copy `dst_name` of `src`: it holds the source's shared extents
/// for the copies still to be made, so that they stay shared with it.
pub(crate) fn hold_existing(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    src: BorrowedFd<'_>,
    meta: &Meta,
    dst_name: &CStr,
) {
    let Some((extents, _)) = extents_to_keep(ctx, here, src, meta) else {
        return;
    };
    let (Some(loc), Ok(d)) = (
        here.link_loc(dst_name),
        sys::stat_at(here.dst_dir, dst_name, false),
    ) else {
        return;
    };
    if !d.is_reg() || d.size != meta.size {
        return;
    }
    let holder = Holder::new(loc, d.id());
    for e in extents {
        let len = (e.logical + e.length).min(meta.size) - e.logical;
        ctx.extents
            .hold(meta.dev, e.physical, len, &holder, e.logical);
    }
}
