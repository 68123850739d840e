//! One entry of a tree (or a file copied on its own): a regular file, a symlink, a FIFO,
//! socket or device node, or a hard link to a group's earlier copy. Each is created new or
//! under a temporary name as the overwrite decision says, gets its data and then its metadata,
//! and is reported.

use super::context::{Ctx, Here};
use super::roots::open_error;
use super::{partial, shared, split};
use crate::data::copy::{Checkpoint, DataError, copy_data, resume_data};
use crate::data::meta::{self, Apply, Dst, creation_mode};
use crate::data::node;
use crate::data::verify;
use crate::options::Overwrite;
use crate::place::decide::{Decision, decide};
use crate::place::links::{Claim, FirstCopy, LinkLoc};
use crate::place::{crash, resume};
use crate::report::{EntryKind, Error, FileOutcome, Method, Op, Refusal};
use crate::sys::{self, Errno, Meta, XattrTarget};
use rustix::fd::{AsFd, OwnedFd};
use std::ffi::CStr;

/// Asks the one overwrite decision about the existing destination `d` of `here/dst_name`.
fn decide_existing(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    src: &Meta,
    d: &Meta,
) -> Result<Decision, Error> {
    let decision = decide(
        &ctx.rules(here.suspect()),
        src,
        Some(d),
        || sys::stat_at(here.src_dir, name, true).ok(),
        || sys::stat_at(here.dst_dir, dst_name, true).ok(),
    );
    match decision {
        Decision::Refuse(c) => Err(c.error(here.src_path(name), here.dst_path(dst_name))),
        other => Ok(other),
    }
}

/// [`decide_existing`] for a destination not looked at yet.
fn decide_at(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    src: &Meta,
) -> Result<Decision, Error> {
    let d = sys::stat_at(here.dst_dir, dst_name, false)
        .map_err(|e| Error::sys(Op::Stat, here.dst_path(dst_name), e))?;
    decide_existing(ctx, here, name, dst_name, src, &d)
}

/// Copies the regular file `here.src_dir/name` to `here.dst_dir/dst_name`, data and metadata.
/// Returns None when it was linked to an earlier copy or skipped.
pub(crate) fn copy_regular(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut Vec<u8>,
    name: &CStr,
    dst_name: &CStr,
    follow: bool,
) -> Result<Option<FileOutcome>, Error> {
    let src_path = || here.src_path(name);
    let src = sys::open_read(here.src_dir, name, follow).map_err(|e| open_error(src_path(), e))?;
    let meta = sys::fstat(src.as_fd()).map_err(|e| Error::sys(Op::Stat, src_path(), e))?;
    if !meta.is_reg() {
        return Err(Error::refused(
            Op::Changed,
            src_path(),
            Refusal::NoLongerRegular,
        ));
    }
    copy_opened(ctx, here, buf, name, dst_name, &src, &meta, None)
}

/// [`copy_regular`] for a source already opened and checked to be a regular file.
/// `found` is the destination's metadata when it is known to exist: the copy then goes
/// straight to a temporary, without first trying to create the destination name.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_opened(
    ctx: &Ctx<'_>,
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
    let first = match link_or_claim(ctx, here, name, dst_name, &meta)? {
        LinkStep::Done => return Ok(None),
        LinkStep::Copy(first) => first,
    };
    // Where this part of the directory's work carries its in-progress marker, a new file is
    // created with the mode a temporary gets (its final permission bits, or fewer while a
    // chown is to come); elsewhere it carries the sticky bit until its final chmod.
    let marked_dir = found.is_none() && here.marker.is_some_and(|m| m.ensure(here.dst_dir));
    let initial = if marked_dir {
        creation_mode(ctx.opts, &ctx.process, here.dst.setgid, &meta)
    } else {
        crash::incomplete_mode(&meta)
    };
    let created = match found {
        Some(_) => Err(Errno::EXIST),
        None => sys::create_excl(here.dst_dir, dst_name, initial),
    };
    let (dst, temp, resumed): (_, _, Option<partial::Prior>) = match created {
        Ok(fd) => (fd, None, None),
        Err(Errno::EXIST) => {
            let decision = match found {
                Some(d) => decide_existing(ctx, here, name, dst_name, &meta, d)?,
                None => decide_at(ctx, here, name, dst_name, &meta)?,
            };
            match decision {
                Decision::WriteInto => {
                    // No group member can link to a node: the next one becomes the copy.
                    drop(first);
                    return write_into_node(ctx, here, buf, name, dst_name, src, &meta).map(Some);
                }
                Decision::Skip if !stale_content(ctx, here, src, name, dst_name, &meta)? => {
                    shared::hold_existing(ctx, here, src.as_fd(), &meta, dst_name);
                    ctx.report.skipped(src_path, dst_path);
                    return Ok(None);
                }
                _ => match partial::try_resume(ctx, here, src.as_fd(), &meta, dst_name) {
                    // An earlier run's prefix of this very source: go on from there.
                    Some(r) => (r.fd, None, Some(r.prior)),
                    None => {
                        // A temporary is incomplete by its name, so it needs no marker (and
                        // no chmod to clear one): it is created as restricted as its final
                        // mode requires.
                        let mode = creation_mode(ctx.opts, &ctx.process, here.dst.setgid, &meta);
                        let (fd, t) = crash::with_temp(here.dst_prefix(), |t| {
                            sys::create_excl(here.dst_dir, t, mode)
                        })
                        .map_err(|e| Error::sys(Op::Create, dst_path(), e))?;
                        (fd, Some((t, mode & !ctx.process.umask)), None)
                    }
                },
            }
        }
        Err(e) => return Err(Error::sys(Op::Create, dst_path(), e)),
    };
    let written_name: &CStr = temp.as_ref().map_or(dst_name, |(t, _)| t);
    let shared = match &resumed {
        Some(_) => None,
        None => shared::prepare(ctx, here, src.as_fd(), &meta, dst.as_fd(), written_name),
    };
    // A failure leaves no half file behind: the new entry is removed (and nothing clones
    // from it any more).
    let discard = |err: Error| {
        if let Some(s) = &shared {
            s.holder.kill();
        }
        let _ = sys::unlink(here.dst_dir, written_name, false);
        err
    };
    let plan = ctx.plan(&meta, &here.dst, here.sized_dev);
    let control = ctx.report.control;
    let (s, d) = (src.as_fd(), dst.as_fd());
    // A large file written at its final name keeps a record of what is complete as it goes.
    let done = resumed.as_ref().map_or(&[][..], |r| &r.done[..]);
    let progress = partial::progress(&meta, temp.is_some() || shared.is_some(), done);
    let mut recorder = progress.as_ref().map(|p| p.on(d));
    let checkpoint = recorder.as_mut().map(|r| r as &mut dyn Checkpoint);
    let copied = match &shared {
        Some(sh) => shared::copy(ctx, sh, s, &meta, d, &plan, buf, control),
        None => {
            let names = split::Names {
                src: name,
                written: written_name,
            };
            let p = progress.clone();
            match split::copy(ctx, here, names, p, done, s, &meta, d, &plan, buf, control) {
                Some(in_ranges) => in_ranges,
                None if done.is_empty() => copy_data(s, &meta, d, &plan, buf, control, checkpoint),
                None => resume_data(s, &meta, d, &plan, buf, control, done, checkpoint),
            }
        }
    };
    let outcome = match copied {
        Ok(o) => o,
        // --partial: a copy stopped by the run's stop request keeps what it wrote.
        Err(e)
            if e.op == Op::Interrupted
                && partial::keep_stopped(ctx, here, progress.as_deref(), d, e.stopped_at) =>
        {
            return Err(data_error(e, src_path, dst_path));
        }
        Err(e) => return Err(discard(data_error(e, src_path, dst_path))),
    };
    if resumed.is_some() || progress.as_ref().is_some_and(|p| p.written()) {
        // The data is complete: a complete file never carries a record.
        resume::clear(d).map_err(|e| discard(Error::sys(Op::SetXattr, dst_path(), e)))?;
    }
    if outcome.method != Method::Clone && meta.size > 0 {
        // Copying took time: a source written meanwhile would leave a copy that mixes old and
        // new bytes under the old times. A clone is one atomic step and needs no check.
        let now =
            sys::fstat(src.as_fd()).map_err(|e| discard(Error::sys(Op::Stat, src_path(), e)))?;
        if now.size != meta.size || now.mtime != meta.mtime {
            return Err(discard(Error::refused(
                Op::Changed,
                src_path(),
                Refusal::ChangedWhileCopied,
            )));
        }
    }
    let xattrs =
        meta::source_xattrs(ctx.opts, XattrTarget::Fd(src.as_fd()), &src_path).map_err(discard)?;
    let apply = Apply {
        opts: ctx.opts,
        process: &ctx.process,
        src: &meta,
        created: true,
        created_owner: match &resumed {
            Some(r) => Some((r.was.uid, r.was.gid)),
            None => (!here.dst.setgid).then_some((ctx.process.euid, ctx.process.egid)),
        },
        current_perm: Some(match (&temp, &resumed) {
            (_, Some(r)) => r.was.perm(),
            (Some((_, mode)), _) => *mode,
            (None, _) if marked_dir => initial & !ctx.process.umask,
            (None, _) => initial,
        }),
        inherit_sgid: false,
    };
    apply
        .run(Dst::Fd(dst.as_fd()), &xattrs, &dst_path)
        .map_err(discard)?;
    if ctx.opts.verify {
        verify::same_content(src.as_fd(), dst.as_fd(), &meta, outcome.method)
            .map_err(|e| discard(e.into_error(src_path(), dst_path())))?;
    }
    if ctx.opts.sync {
        sys::fsync(dst.as_fd()).map_err(|e| discard(Error::sys(Op::Sync, dst_path(), e)))?;
    }
    drop(dst);
    if let Some((t, _)) = &temp {
        let dirty = outcome.method != Method::Clone && outcome.bytes > 0;
        crash::commit_temp(here.dst_dir, t, dst_name, dirty)
            .map_err(|e| Error::sys(Op::Rename, dst_path(), e))?;
        if let Some(s) = &shared {
            s.holder.renamed(dst_name);
        }
    }
    if ctx.opts.sync && here.dir.is_none() {
        // A root-level file: its directory entry is flushed here; inside a tree, the
        // directory's own flush at its completion covers it.
        here.sync_dst_dir()
            .map_err(|e| Error::sys(Op::Sync, dst_path(), e))?;
    }
    first_done(first, here, dst_name);
    ctx.report
        .copied(src_path, dst_path, EntryKind::File, Some(outcome));
    Ok(Some(outcome))
}

/// A data-path failure as an error on the side it happened on.
fn data_error(
    e: DataError,
    src_path: impl FnOnce() -> std::path::PathBuf,
    dst_path: impl FnOnce() -> std::path::PathBuf,
) -> Error {
    let path = if e.op == Op::Read {
        src_path()
    } else {
        dst_path()
    };
    Error::sys(e.op, path, e.errno)
}

/// `-u --verify`: whether a destination that `-u` would skip differs from its source in
/// content, so that it is copied again instead.
fn stale_content(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    src: &OwnedFd,
    name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<bool, Error> {
    if !(ctx.opts.verify && ctx.opts.overwrite == Overwrite::Update) {
        return Ok(false);
    }
    let dst_path = || here.dst_path(dst_name);
    let dst = sys::open_read(here.dst_dir, dst_name, false)
        .map_err(|e| Error::sys(Op::Open, dst_path(), e))?;
    match verify::same_content(src.as_fd(), dst.as_fd(), meta, Method::Clone) {
        Ok(()) => Ok(false),
        Err(verify::Mismatch::Differs(_)) => Ok(true),
        Err(e) => Err(e.into_error(here.src_path(name), dst_path())),
    }
}

/// Writes a regular file's bytes into the existing FIFO, socket or device node `dst_name`,
/// then applies the metadata asked for to the node (cp does both). The node is never
/// removed, whatever fails.
fn write_into_node(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut Vec<u8>,
    name: &CStr,
    dst_name: &CStr,
    src: &OwnedFd,
    meta: &Meta,
) -> Result<FileOutcome, Error> {
    let src_path = || here.src_path(name);
    let dst_path = || here.dst_path(dst_name);
    let control = ctx.report.control;
    let dst = node::open_node(here.dst_dir, dst_name, control)
        .map_err(|e| data_error(e, src_path, dst_path))?;
    let bytes = node::stream_into(src.as_fd(), &dst, buf, ctx.opts.buffer_size, control)
        .map_err(|e| data_error(e, src_path, dst_path))?;
    let xattrs = meta::source_xattrs(ctx.opts, XattrTarget::Fd(src.as_fd()), &src_path)?;
    let apply = Apply {
        opts: ctx.opts,
        process: &ctx.process,
        src: meta,
        created: false,
        created_owner: None,
        current_perm: None,
        inherit_sgid: false,
    };
    apply.run(Dst::Fd(dst.as_fd()), &xattrs, &dst_path)?;
    let outcome = FileOutcome::new(Method::Stream, bytes, 0);
    ctx.report
        .copied(src_path, dst_path, EntryKind::File, Some(outcome));
    Ok(outcome)
}

/// Copies the symlink `name` as a symlink with the same target, owner, xattrs and times.
pub(crate) fn copy_symlink(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<(), Error> {
    let target = sys::readlink(here.src_dir, name)
        .map_err(|e| Error::sys(Op::ReadLink, here.src_path(name), e))?;
    create_and_finish(
        ctx,
        here,
        name,
        dst_name,
        meta,
        EntryKind::Symlink,
        Op::Symlink,
        |t| sys::symlink(&target, here.dst_dir, t),
    )
}

/// Copies a FIFO, socket or device node.
pub(crate) fn copy_special(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<(), Error> {
    let kind = match meta.file_type() {
        sys::S_IFIFO => EntryKind::Fifo,
        0o140000 => EntryKind::Socket,
        0o020000 => EntryKind::CharDevice,
        _ => EntryKind::BlockDevice,
    };
    // Created without group/other bits; the final mode comes after the owner.
    let mode = meta.file_type() | (meta.perm() & 0o700);
    create_and_finish(ctx, here, name, dst_name, meta, kind, Op::MakeNode, |t| {
        sys::mknod(here.dst_dir, t, mode, meta.rdev)
    })
}

/// Creates the entry with `make` (under a temporary name when the destination exists), then
/// applies its metadata by name without following it.
#[allow(clippy::too_many_arguments)]
fn create_and_finish(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
    kind: EntryKind,
    op: Op,
    make: impl Fn(&CStr) -> sys::Result<()>,
) -> Result<(), Error> {
    let dst_path = || here.dst_path(dst_name);
    let first = match link_or_claim(ctx, here, name, dst_name, meta)? {
        LinkStep::Done => return Ok(()),
        LinkStep::Copy(first) => first,
    };
    if let Some(marker) = here.marker {
        // New entries here are incomplete until their metadata is set.
        marker.ensure(here.dst_dir);
    }
    let temp = match make(dst_name) {
        Ok(()) => None,
        Err(Errno::EXIST) => match decide_at(ctx, here, name, dst_name, meta)? {
            Decision::Skip => {
                ctx.report.skipped(|| here.src_path(name), dst_path);
                return Ok(());
            }
            // Only a regular source is written into a node, or merged: anything else replaces.
            _ => {
                let ((), t) = crash::with_temp(here.dst_prefix(), &make)
                    .map_err(|e| Error::sys(op, dst_path(), e))?;
                Some(t)
            }
        },
        Err(e) => return Err(Error::sys(op, dst_path(), e)),
    };
    let made: &CStr = temp.as_deref().unwrap_or(dst_name);
    let symlink = meta.is_symlink();
    let xattrs = if symlink && !ctx.opts.preserve.xattr {
        // Symlinks have no ACLs; only --preserve=xattr reads their attributes.
        Vec::new()
    } else {
        let p = sys::proc_fd_path(here.src_dir, Some(name));
        meta::source_xattrs(ctx.opts, XattrTarget::NoFollow(&p), &|| here.src_path(name))?
    };
    let apply = Apply {
        opts: ctx.opts,
        process: &ctx.process,
        src: meta,
        created: true,
        created_owner: (!here.dst.setgid).then_some((ctx.process.euid, ctx.process.egid)),
        current_perm: (!symlink).then_some(meta.perm() & 0o700),
        inherit_sgid: false,
    };
    let dst = Dst::At {
        dir: here.dst_dir,
        name: made,
        symlink,
    };
    if let Err(e) = apply.run(dst, &xattrs, &dst_path) {
        if temp.is_some() {
            let _ = sys::unlink(here.dst_dir, made, false);
        }
        return Err(e);
    }
    if let Some(t) = &temp {
        crash::commit_temp(here.dst_dir, t, dst_name, false)
            .map_err(|e| Error::sys(Op::Rename, dst_path(), e))?;
    }
    first_done(first, here, dst_name);
    ctx.report
        .copied(|| here.src_path(name), dst_path, kind, None);
    Ok(())
}

/// The outcome of looking a multiply-linked source up in the link map.
enum LinkStep {
    /// Linked to an earlier copy (or left alone): nothing more to do.
    Done,
    /// Copy it; `Some` when it is a group's first copy and others will link to it.
    Copy(Option<FirstCopy<LinkLoc>>),
}

/// With `--preserve=links`, links to an earlier copy of the same inode, or claims the inode.
fn link_or_claim(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    src_name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<LinkStep, Error> {
    if here.root.is_none() || !ctx.opts.preserve.links || meta.nlink < 2 || meta.is_dir() {
        // A file copied on its own (`copy_file`) has no group to join.
        return Ok(LinkStep::Copy(None));
    }
    let loc = match ctx.links.claim(meta.id(), meta.nlink as u64) {
        Claim::First(first) => return Ok(LinkStep::Copy(Some(first))),
        Claim::LinkTo(loc) => loc,
    };
    let dst_path = || here.dst_path(dst_name);
    let other = if here.holds(&loc) {
        None
    } else {
        Some(
            ctx.open_loc_dir(&loc)
                .map_err(|e| Error::sys(Op::Link, dst_path(), e))?,
        )
    };
    let from = match &other {
        Some(Some(fd)) => fd.as_fd(),
        Some(None) => ctx.root(loc.root).dst_parent.as_fd(),
        None => here.dst_dir,
    };
    match sys::link(from, &loc.name, here.dst_dir, dst_name) {
        Ok(()) => {}
        Err(Errno::EXIST) => {
            if decide_at(ctx, here, src_name, dst_name, meta)? == Decision::Skip {
                ctx.report.skipped(|| here.src_path(src_name), dst_path);
                return Ok(LinkStep::Done);
            }
            let ((), temp) = crash::with_temp(here.dst_prefix(), |t| {
                sys::link(from, &loc.name, here.dst_dir, t)
            })
            .map_err(|e| Error::sys(Op::Link, dst_path(), e))?;
            crash::commit_temp(here.dst_dir, &temp, dst_name, false)
                .map_err(|e| Error::sys(Op::Rename, dst_path(), e))?;
            // Renaming onto another link of the same inode does nothing: drop the temporary.
            let _ = sys::unlink(here.dst_dir, &temp, false);
        }
        Err(e) => return Err(Error::sys(Op::Link, dst_path(), e)),
    }
    ctx.report.copied(
        || here.src_path(src_name),
        dst_path,
        EntryKind::HardLink,
        None,
    );
    Ok(LinkStep::Done)
}

/// Records where a group's first copy now lives, for the links that follow.
fn first_done(first: Option<FirstCopy<LinkLoc>>, here: &Here<'_>, dst_name: &CStr) {
    if let (Some(first), Some(loc)) = (first, here.link_loc(dst_name)) {
        first.done(loc);
    }
}

/// Copies one entry whose type is known from `meta` (or is a regular file when None): a
/// regular file, symlink or special file. Directories are the caller's.
pub(crate) fn copy_entry(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut Vec<u8>,
    name: &CStr,
    dst_name: &CStr,
    meta: Option<Meta>,
    follow: bool,
) -> Result<(), Changed> {
    let result = match meta.map(|m| m.file_type()) {
        None | Some(sys::S_IFREG) => {
            match copy_regular(ctx, here, buf, name, dst_name, follow) {
                // Listed as a file, something else now (a symlink fails O_NOFOLLOW with
                // ELOOP): the caller copies what is there now.
                Err(e) if e.op == Op::Changed || e.errno() == Some(Errno::LOOP.raw_os_error()) => {
                    match sys::stat_at(here.src_dir, name, follow) {
                        Ok(m) if !m.is_reg() => return Err(Changed(m)),
                        _ => Err(e),
                    }
                }
                other => other.map(|_| ()),
            }
        }
        Some(sys::S_IFLNK) => copy_symlink(ctx, here, name, dst_name, &meta.expect("stat")),
        Some(_) => copy_special(ctx, here, name, dst_name, &meta.expect("stat")),
    };
    if let Err(e) = result {
        ctx.report.fail(e);
    }
    Ok(())
}

/// A source listed as a regular file that is something else now, with its new metadata.
pub(crate) struct Changed(pub Meta);
