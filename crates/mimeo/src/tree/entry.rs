//! One entry of a tree (or a file copied on its own): a regular file, a symlink, a FIFO,
//! socket or device node, or a hard link to a group's earlier copy. Each is created new or
//! under a temporary name as the overwrite decision says, gets its data and then its metadata,
//! and is reported.

use super::context::{Ctx, Here, relative_symlink_elsewhere};
use super::readvia;
use super::roots::{open_error, stat_error};
use super::shared::SharedCopy;
use super::{partial, shared, split};
use crate::data::copy::{Checkpoint, DataError, DataJob, Layout, copy_file};
use crate::data::meta::{self, Apply, Dst, creation_mode};
use crate::data::node;
use crate::data::origin;
use crate::data::verify;
use crate::options::{Dereference, LinkInstead, Overwrite};
use crate::place::decide::{Decision, decide};
use crate::place::links::{FirstCopy, LinkClaim, Sighting};
use crate::place::resume::Progress;
use crate::place::{backup, crash, resume};
use crate::report::{EntryKind, Error, FileOutcome, Method, Op, Refusal};
use crate::sys::{self, Errno, IoBuf, Meta, XattrTarget};
use rustix::fd::{AsFd, OwnedFd};
use std::ffi::{CStr, CString};

/// Asks the one overwrite decision about the existing destination `d` of `here/dst_name`,
/// with the `-i` question where the decision comes to it.
fn decide_existing(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    src: &Meta,
    d: &Meta,
) -> Result<Decision, Error> {
    let ask = || {
        ctx.report
            .confirm_overwrite(&here.src_path(name), &here.dst_path(dst_name))
    };
    let writable = || sys::may_write(here.dst_dir, dst_name);
    let mut rules = ctx.rules(here, &writable);
    rules.ask = Some(&ask);
    let decision = decide(
        &rules,
        src,
        Some(d),
        || sys::stat_at(here.src_dir, name, true).ok(),
        || sys::stat_at(here.dst_dir, dst_name, true),
    );
    match decision {
        Decision::Refuse(c) => Err(c.error(here.src_path(name), here.dst_path(dst_name))),
        other => Ok(other),
    }
}

/// [`decide_existing`] for a destination not looked at yet; also returns what is there.
fn decide_at(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    src: &Meta,
) -> Result<(Decision, Meta), Error> {
    let d = sys::stat_at(here.dst_dir, dst_name, false)
        .map_err(|e| Error::sys(Op::Stat, here.dst_path(dst_name), e))?;
    Ok((decide_existing(ctx, here, name, dst_name, src, &d)?, d))
}

/// Copies the regular file `here.src_dir/name` to `here.dst_dir/dst_name`, data and metadata.
/// Returns None when it was linked to an earlier copy or skipped.
pub(crate) fn copy_regular(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut IoBuf,
    name: &CStr,
    dst_name: &CStr,
    follow: bool,
) -> Result<Option<FileOutcome>, Error> {
    let src_path = || here.src_path(name);
    let (src, meta) = open_source(here, name, follow)?;
    if !meta.is_reg() {
        return Err(Error::refused(
            Op::Changed,
            src_path(),
            Refusal::NoLongerRegular,
        ));
    }
    copy_opened(ctx, here, buf, name, dst_name, &src, &meta, None, false)
}

/// Opens the source `name` for reading and looks at what was opened.
fn open_source(here: &Here<'_>, name: &CStr, follow: bool) -> Result<(OwnedFd, Meta), Error> {
    let src_path = || here.src_path(name);
    let src = sys::open_read(here.src_dir, name, follow).map_err(|e| open_error(src_path(), e))?;
    let meta = sys::fstat(src.as_fd()).map_err(|e| Error::sys(Op::Stat, src_path(), e))?;
    Ok((src, meta))
}

/// Where a regular file's data is being written.
enum Target {
    /// A new file under the destination name.
    New,
    /// A temporary, renamed over the destination name once complete.
    Temp {
        name: CString,
        /// Make a backup of the old entry first (`--backup`).
        backup: bool,
    },
    /// The existing destination itself (`--inplace`, or where no temporary can be made).
    InPlace,
    /// A copy of this source that an earlier run left incomplete, whose parts listed are
    /// complete (see `place::resume`).
    Resumed(Vec<(u64, u64)>),
}

/// What a regular file being written needs for its metadata step besides the source's.
struct Placed {
    /// Its permission bits now.
    perm: u32,
    /// The owner it has now, when known.
    owner: Option<(u32, u32)>,
    /// The mode it must keep from the file it replaces (without --preserve=mode).
    keep_perm: Option<u32>,
    /// Xattrs of the file it replaces, to carry over.
    kept_xattrs: meta::Xattrs,
}

/// [`copy_regular`] for a source already opened and checked to be a regular file.
/// `found` is the destination's metadata when it is known to exist: the copy then goes
/// straight to a temporary, without first trying to create the destination name.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_opened(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut IoBuf,
    name: &CStr,
    dst_name: &CStr,
    src: &OwnedFd,
    meta: &Meta,
    found: Option<&Meta>,
    contents: bool,
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
    let new = |perm| Placed {
        perm,
        owner: (!here.dst.setgid).then_some((ctx.process.euid, ctx.process.egid)),
        keep_perm: None,
        kept_xattrs: Vec::new(),
    };
    let (dst, target, placed) = match created {
        Ok(fd) => {
            let perm = if marked_dir {
                initial & !ctx.process.umask
            } else {
                initial
            };
            (fd, Target::New, new(perm))
        }
        Err(Errno::EXIST) => {
            let (decision, d) = match found {
                Some(d) => (decide_existing(ctx, here, name, dst_name, &meta, d)?, *d),
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
                    if ctx.opts.overwrite == Overwrite::Update {
                        // An up-to-date member of a hard-link group is the group's copy, as
                        // in cp: the members still to come are linked to it.
                        first_done(first, here, dst_name);
                    }
                    ctx.report.skipped(src_path, dst_path);
                    return Ok(None);
                }
                Decision::InPlace => {
                    let (fd, placed) = open_in_place(ctx, here, dst_name, &meta, &d)?;
                    (fd, Target::InPlace, placed)
                }
                Decision::Recreate => recreate(ctx, here, dst_name, &meta)?,
                _ if !d.is_reg() => recreate(ctx, here, dst_name, &meta)?,
                _ => match partial::try_resume(ctx, here, src.as_fd(), &meta, dst_name) {
                    // What an earlier run wrote of this very source: go on from there.
                    Some(r) => {
                        let placed = Placed {
                            perm: r.prior.was.perm(),
                            owner: Some((r.prior.was.uid, r.prior.was.gid)),
                            keep_perm: None,
                            kept_xattrs: Vec::new(),
                        };
                        (r.fd, Target::Resumed(r.prior.done), placed)
                    }
                    None => match replacement(ctx, here, dst_name, &meta, &d)? {
                        Some((fd, t, placed)) => {
                            let target = Target::Temp {
                                name: t,
                                backup: false,
                            };
                            (fd, target, placed)
                        }
                        // No temporary can be made there (a writable file in a directory
                        // we may not write), or it cannot get the old file's owner: cp
                        // writes into the file, and so does mimeo.
                        None => {
                            let (fd, placed) = open_in_place(ctx, here, dst_name, &meta, &d)?;
                            (fd, Target::InPlace, placed)
                        }
                    },
                },
            }
        }
        Err(e) => return Err(Error::sys(Op::Create, dst_path(), e)),
    };
    let written_name: &CStr = match &target {
        Target::Temp { name, .. } => name,
        _ => dst_name,
    };
    let in_place = matches!(target, Target::InPlace);
    let done = match &target {
        Target::Resumed(done) => &done[..],
        _ => &[][..],
    };
    let data = !ctx.opts.attributes_only && !contents;
    // --preserve=sharing: extents the source shares are written once and cloned after.
    let shared = match &target {
        Target::New | Target::Temp { .. } if data => {
            shared::prepare(ctx, here, src.as_fd(), &meta, dst.as_fd(), written_name)
        }
        _ => None,
    };
    // A failure leaves no half file behind: the new entry is removed (and nothing clones
    // from it any more). A file written in place stays as it is (marked incomplete where it
    // could be), as cp leaves it.
    let discard = |err: Error| {
        if let Some(s) = &shared {
            s.holder.kill();
        }
        if !in_place {
            let _ = sys::unlink(here.dst_dir, written_name, false);
        }
        err
    };
    // A large file written at its final name keeps a record of what is complete as it goes.
    let resumable = matches!(target, Target::New | Target::Resumed(_)) && shared.is_none();
    let progress = data
        .then(|| partial::progress(&meta, !resumable, done))
        .flatten();
    let outcome = if ctx.opts.attributes_only {
        FileOutcome::new(Method::Stream, 0, 0)
    } else if contents {
        let control = ctx.report.control;
        node::read_contents(src.as_fd(), dst.as_fd(), buf, ctx.opts.buffer_size, control)
            .map(|n| FileOutcome::new(Method::Stream, n, 0))
            .map_err(|e| discard(data_error(e, src_path, dst_path)))?
    } else {
        let how = DataHow {
            written: written_name,
            shared: shared.as_ref(),
            progress: progress.clone(),
            done,
        };
        match copy_file_data(ctx, here, buf, name, src, &meta, dst.as_fd(), how) {
            Ok(o) => o,
            // --partial: a copy stopped by the run's stop request keeps what it wrote.
            Err(DataFailure::Data(e))
                if e.op == Op::Interrupted
                    && partial::keep_stopped(
                        ctx,
                        here,
                        progress.as_deref(),
                        dst.as_fd(),
                        e.stopped_at,
                    ) =>
            {
                return Err(data_error(e, src_path, dst_path));
            }
            Err(e) => return Err(discard(e.into_error(src_path, dst_path))),
        }
    };
    if !done.is_empty() || progress.as_ref().is_some_and(|p| p.written()) {
        // The data is complete: a complete file never carries a record.
        resume::clear(dst.as_fd()).map_err(|e| discard(Error::sys(Op::SetXattr, dst_path(), e)))?;
    }
    let mut xattrs = placed.kept_xattrs;
    xattrs.extend(
        meta::source_xattrs(ctx.opts, XattrTarget::Fd(src.as_fd()), &src_path).map_err(discard)?,
    );
    if ctx.opts.record_origin {
        let cloned = outcome.method == Method::Clone;
        xattrs = origin::with_record(xattrs, cloned, src.as_fd(), &ctx.mounts);
    }
    let apply = Apply {
        opts: ctx.opts,
        process: &ctx.process,
        src: &meta,
        created: !in_place,
        created_owner: placed.owner,
        current_perm: Some(placed.perm),
        inherit_sgid: false,
        // A file made here (not one written into) inherits the directory's default ACL.
        inherited_acl: !in_place && here.dst.default_acl,
        keep_perm: placed.keep_perm,
    };
    apply
        .run(Dst::Fd(dst.as_fd()), &xattrs, &dst_path)
        .map_err(discard)?;
    if ctx.opts.verify && !ctx.opts.attributes_only {
        verify::same_content(src.as_fd(), dst.as_fd(), &meta, outcome.method)
            .map_err(|e| discard(e.into_error(src_path(), dst_path())))?;
    }
    if ctx.opts.sync {
        sys::fsync(dst.as_fd()).map_err(|e| discard(Error::sys(Op::Sync, dst_path(), e)))?;
    }
    drop(dst);
    if let Target::Temp { name: t, backup } = &target {
        let dirty = outcome.method != Method::Clone && outcome.bytes > 0;
        commit(ctx, here, t, dst_name, dirty, *backup)?;
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
    here.made();
    ctx.report
        .copied(src_path, dst_path, EntryKind::File, Some(outcome));
    Ok(Some(outcome))
}

/// A data-path failure, or a source that changed while its data was copied.
enum DataFailure {
    Data(DataError),
    Other(Error),
}

impl DataFailure {
    fn into_error(
        self,
        src_path: impl FnOnce() -> std::path::PathBuf,
        dst_path: impl FnOnce() -> std::path::PathBuf,
    ) -> Error {
        match self {
            DataFailure::Data(e) => data_error(e, src_path, dst_path),
            DataFailure::Other(e) => e,
        }
    }
}

/// How a file's data is written besides the plain way: the name it is written under, its
/// shared extents (`--preserve=sharing`), its resume record, and the parts an earlier run
/// completed (empty for a new copy).
struct DataHow<'h> {
    written: &'h CStr,
    shared: Option<&'h SharedCopy>,
    progress: Option<std::sync::Arc<Progress>>,
    done: &'h [(u64, u64)],
}

/// Copies the source's bytes into `dst` (new and empty, just truncated, or what an earlier
/// run left of it), checking that the source did not change meanwhile.
#[allow(clippy::too_many_arguments)]
fn copy_file_data(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut IoBuf,
    name: &CStr,
    src: &OwnedFd,
    meta: &Meta,
    dst: rustix::fd::BorrowedFd<'_>,
    how: DataHow<'_>,
) -> Result<FileOutcome, DataFailure> {
    let canonicals = readvia::canonicals(ctx, here, name, src.as_fd(), meta);
    let via = canonicals.via();
    let plan = ctx.plan(meta, &here.dst, here.sized_dev, &via);
    let mut recorder = how.progress.as_ref().map(|p| p.on(dst));
    let job = DataJob {
        src: src.as_fd(),
        meta,
        dst,
        plan: &plan,
        buf,
        control: ctx.report.control,
        checkpoint: recorder.as_mut().map(|r| r as &mut dyn Checkpoint),
    };
    let names = split::Names {
        src: name,
        written: how.written,
    };
    let mut keep = how.shared.map(|copy| shared::KeepShared {
        ctx,
        copy,
        dev: meta.dev,
    });
    let mut splitter = match keep {
        Some(_) => None,
        None => split::layout(ctx, here, names, how.progress.clone(), how.done, meta),
    };
    let layout: Option<&mut dyn Layout> = match (&mut keep, &mut splitter) {
        (Some(k), _) => Some(k),
        (None, Some(s)) => Some(s),
        (None, None) => None,
    };
    let copied = copy_file(job, how.done, layout);
    let outcome = copied.map_err(DataFailure::Data)?;
    if outcome.method != Method::Clone && meta.size > 0 {
        // Copying took time: a source written meanwhile would leave a copy that mixes old and
        // new bytes under the old times. A clone is one atomic step and needs no check.
        let now = sys::fstat(src.as_fd())
            .map_err(|errno| DataFailure::Data(DataError::new(Op::Read, errno)))?;
        if now.size != meta.size || now.mtime != meta.mtime {
            return Err(DataFailure::Other(Error::refused(
                Op::Changed,
                here.src_path(name),
                Refusal::ChangedWhileCopied,
            )));
        }
    }
    Ok(outcome)
}

/// A temporary that replaces an existing entry by a file made as if nothing were there.
/// A temporary is incomplete by its name, so it needs no marker (and no chmod to clear one):
/// it is created as restricted as its final mode requires.
fn recreate(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    dst_name: &CStr,
    src: &Meta,
) -> Result<(OwnedFd, Target, Placed), Error> {
    let mode = creation_mode(ctx.opts, &ctx.process, here.dst.setgid, src);
    let (fd, name) = crash::with_temp(here.dst_prefix(), |t| {
        sys::create_excl(here.dst_dir, t, mode)
    })
    .map_err(|e| Error::sys(Op::Create, here.dst_path(dst_name), e))?;
    let backup = ctx.opts.backup.is_some();
    let placed = Placed {
        perm: mode & !ctx.process.umask,
        owner: (!here.dst.setgid).then_some((ctx.process.euid, ctx.process.egid)),
        keep_perm: None,
        kept_xattrs: Vec::new(),
    };
    Ok((fd, Target::Temp { name, backup }, placed))
}

/// The temporary that replaces the existing regular file `d`, made to keep what cp (which
/// writes into the file) keeps where the options do not take it from the source: the old
/// file's mode, owner and group, and its xattrs and ACL. None when cp's way must be taken
/// instead: no temporary can be made in the directory, or it cannot be given the old file's
/// owner.
fn replacement(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    dst_name: &CStr,
    src: &Meta,
    d: &Meta,
) -> Result<Option<(OwnedFd, CString, Placed)>, Error> {
    let p = ctx.opts.preserve;
    let process = &ctx.process;
    let dst_path = || here.dst_path(dst_name);
    let keep_owner = (!p.ownership).then_some((d.uid, d.gid));
    let keep_perm = (!p.mode).then(|| kept_perm(ctx, src, d));
    let kept_xattrs = {
        let at = here.dst_entry_path(dst_name);
        let mut kept = meta::kept_xattrs(ctx.opts, XattrTarget::NoFollow(&at), &dst_path)?;
        // The resume record of an earlier run's partial copy is not the file's own.
        kept.retain(|(name, _)| name.as_c_str() != resume::RECORD);
        kept
    };
    let ours = (process.euid, process.egid);
    let mode = match keep_perm {
        // Nobody but the final owner may open it before it is theirs.
        Some(perm) if keep_owner.is_some_and(|o| o != ours) || here.dst.setgid => perm & 0o700,
        Some(perm) => perm & 0o777,
        None => creation_mode(ctx.opts, process, here.dst.setgid, src),
    };
    let made = crash::with_temp(here.dst_prefix(), |t| {
        sys::create_excl(here.dst_dir, t, mode)
    });
    let (fd, temp) = match made {
        Ok(made) => made,
        Err(Errno::ACCESS) => return Ok(None),
        Err(e) => return Err(Error::sys(Op::Create, dst_path(), e)),
    };
    let mut owner = (!here.dst.setgid).then_some(ours);
    if let Some(o) = keep_owner {
        if owner != Some(o) {
            match sys::fchown(fd.as_fd(), Some(o.0), Some(o.1)) {
                Ok(()) => owner = Some(o),
                Err(Errno::PERM) => {
                    let _ = sys::unlink(here.dst_dir, &temp, false);
                    return Ok(None);
                }
                Err(e) => {
                    let _ = sys::unlink(here.dst_dir, &temp, false);
                    return Err(Error::sys(Op::Chown, dst_path(), e));
                }
            }
        }
    }
    let placed = Placed {
        perm: mode & !process.umask,
        owner,
        keep_perm,
        kept_xattrs,
    };
    Ok(Some((fd, temp, placed)))
}

/// The mode the file `d` keeps when cp's writing into it is what the copy stands for: the
/// mode the write leaves, without the mark of an earlier copy killed while writing into it.
fn kept_perm(ctx: &Ctx<'_>, src: &Meta, d: &Meta) -> u32 {
    let perm = meta::written_perm(d, src, ctx.opts, &ctx.process);
    if crash::marked_incomplete(d, src) {
        perm & !sys::S_ISVTX
    } else {
        perm
    }
}

/// Opens the existing regular file `d` to write into it, as cp does, and truncates it.
/// Where mimeo may change its mode, it carries the sticky bit until its final chmod, so that
/// a copy killed meanwhile is recognisably incomplete.
fn open_in_place(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    dst_name: &CStr,
    src: &Meta,
    d: &Meta,
) -> Result<(OwnedFd, Placed), Error> {
    let dst_path = || here.dst_path(dst_name);
    let process = &ctx.process;
    let data = !ctx.opts.attributes_only;
    let fd = sys::open_existing_for_writing(here.dst_dir, dst_name, ctx.opts.verify)
        .map_err(|e| Error::sys(Op::Create, dst_path(), e))?;
    let kept = kept_perm(ctx, src, d);
    let mut perm = if data { kept } else { d.perm() };
    if data && (process.euid == 0 || process.euid == d.uid) {
        let marked = kept | sys::S_ISVTX;
        if sys::fchmod(fd.as_fd(), marked).is_ok() {
            perm = marked;
        }
    }
    if data {
        sys::truncate(fd.as_fd(), 0).map_err(|e| Error::sys(Op::Truncate, dst_path(), e))?;
        // An earlier run's resume record described the bytes just cut off (a filesystem
        // without xattrs has none to remove).
        let _ = resume::clear(fd.as_fd());
    }
    let placed = Placed {
        perm,
        owner: Some((d.uid, d.gid)),
        keep_perm: (!ctx.opts.preserve.mode).then_some(kept),
        kept_xattrs: Vec::new(),
    };
    Ok((fd, placed))
}

/// Moves a finished temporary over the destination name, after linking the old entry to its
/// backup name when asked (`--backup`). On failure the temporary is removed and the old
/// entry stays.
fn commit(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    temp: &CStr,
    dst_name: &CStr,
    dirty: bool,
    backup: bool,
) -> Result<(), Error> {
    let dst_path = || here.dst_path(dst_name);
    if let (true, Some(how)) = (backup, &ctx.opts.backup) {
        match backup::make(here.dst_dir, dst_name, here.dst_prefix(), how) {
            // The old entry went away meanwhile: there is nothing to keep.
            Ok(_) | Err(Errno::NOENT) => {}
            Err(e) => {
                let _ = sys::unlink(here.dst_dir, temp, false);
                return Err(Error::sys(Op::Backup, dst_path(), e));
            }
        }
    }
    crash::commit_temp(here.dst_dir, temp, dst_name, dirty)
        .map_err(|e| Error::sys(Op::Rename, dst_path(), e))
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
    buf: &mut IoBuf,
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
    let apply = Apply::for_existing(ctx.opts, &ctx.process, meta);
    apply.run(Dst::Fd(dst.as_fd()), &xattrs, &dst_path)?;
    let outcome = FileOutcome::new(Method::Stream, bytes, 0);
    here.made();
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
    let kind = entry_kind(meta);
    // Created without group/other bits; the final mode comes after the owner.
    let mode = meta.file_type() | (meta.perm() & 0o700);
    create_and_finish(ctx, here, name, dst_name, meta, kind, Op::MakeNode, |t| {
        sys::mknod(here.dst_dir, t, mode, meta.rdev)
    })
}

/// The kind of an entry, from its metadata.
pub(crate) fn entry_kind(meta: &Meta) -> EntryKind {
    match meta.file_type() {
        sys::S_IFREG => EntryKind::File,
        sys::S_IFDIR => EntryKind::Directory,
        sys::S_IFLNK => EntryKind::Symlink,
        sys::S_IFIFO => EntryKind::Fifo,
        0o140000 => EntryKind::Socket,
        0o020000 => EntryKind::CharDevice,
        _ => EntryKind::BlockDevice,
    }
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
        Err(Errno::EXIST) => match decide_at(ctx, here, name, dst_name, meta)?.0 {
            Decision::Skip => {
                ctx.report.skipped(|| here.src_path(name), dst_path);
                return Ok(());
            }
            // Only a regular source is written into a node, or merged: anything else replaces.
            decision => {
                let ((), t) = crash::with_temp(here.dst_prefix(), &make)
                    .map_err(|e| Error::sys(op, dst_path(), e))?;
                Some((t, decision == Decision::Recreate))
            }
        },
        Err(e) => return Err(Error::sys(op, dst_path(), e)),
    };
    let made: &CStr = temp.as_ref().map_or(dst_name, |(t, _)| t);
    let symlink = meta.is_symlink();
    let xattrs = if symlink && !ctx.opts.preserve.xattr {
        // Symlinks have no ACLs; only --preserve=xattr reads their attributes.
        Vec::new()
    } else {
        let p = sys::proc_fd_path(here.src_dir, Some(name));
        meta::source_xattrs(ctx.opts, XattrTarget::NoFollow(&p), &|| here.src_path(name))?
    };
    let apply = Apply::for_new(
        ctx.opts,
        &ctx.process,
        meta,
        here.dst.setgid,
        here.dst.default_acl,
        (!symlink).then_some(meta.perm() & 0o700),
    );
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
    if let Some((t, backup)) = &temp {
        commit(ctx, here, t, dst_name, false, *backup)?;
    }
    first_done(first, here, dst_name);
    here.made();
    ctx.report
        .copied(|| here.src_path(name), dst_path, kind, None);
    Ok(())
}

/// The outcome of looking a multiply-linked source up in the link map.
enum LinkStep<'a> {
    /// Linked to an earlier copy (or left alone): nothing more to do.
    Done,
    /// Copy it; `Some` when it is a group's first copy and others will link to it.
    Copy(Option<FirstCopy<'a>>),
}

/// With `--preserve=links`, links to an earlier copy of the same inode, or claims the inode.
fn link_or_claim<'a>(
    ctx: &'a Ctx<'_>,
    here: &Here<'_>,
    src_name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<LinkStep<'a>, Error> {
    if here.root.is_none() || !ctx.opts.preserve.links || meta.is_dir() {
        // A file copied on its own (`copy_file`) has no group to join.
        return Ok(LinkStep::Copy(None));
    }
    // Under -L and -H, cp links every copy of one file reached more than once: through
    // symlinks, or named more than once. Those files are remembered; others only when they
    // have more than one link.
    let deref = ctx.opts.dereference;
    let pinned = deref != Dereference::Never
        && match here.loc {
            super::context::Loc::Root(_) => true,
            _ => {
                deref == Dereference::Always
                    && sys::stat_at(here.src_dir, src_name, false).is_ok_and(|m| m.is_symlink())
            }
        };
    let how = if pinned {
        Sighting::Pinned
    } else if meta.nlink >= 2 {
        Sighting::Link(meta.nlink as u64)
    } else if deref == Dereference::Always {
        Sighting::Lookup
    } else {
        return Ok(LinkStep::Copy(None));
    };
    let groups = ctx.link_groups();
    let loc = match groups.claim(meta.id(), how) {
        None => return Ok(LinkStep::Copy(None)),
        Some(LinkClaim::First) => {
            return Ok(LinkStep::Copy(Some(FirstCopy::new(groups, meta.id()))));
        }
        Some(LinkClaim::LinkTo(loc)) => loc,
    };
    let loc_name = sys::cstring(&loc.name);
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
    match sys::link(from, &loc_name, here.dst_dir, dst_name) {
        Ok(()) => {}
        Err(Errno::EXIST) => {
            let (decision, d) = decide_at(ctx, here, src_name, dst_name, meta)?;
            // Under -u, cp links an up-to-date member to the group's copy all the same; one
            // already linked to it (nlink > 1) is left as it is.
            let relink = ctx.opts.overwrite == Overwrite::Update && d.nlink < 2 && d.is_reg();
            if decision == Decision::Skip && !relink {
                ctx.report.skipped(|| here.src_path(src_name), dst_path);
                return Ok(LinkStep::Done);
            }
            let ((), temp) = crash::with_temp(here.dst_prefix(), |t| {
                sys::link(from, &loc_name, here.dst_dir, t)
            })
            .map_err(|e| Error::sys(Op::Link, dst_path(), e))?;
            commit(
                ctx,
                here,
                &temp,
                dst_name,
                false,
                decision == Decision::Recreate,
            )?;
            // Renaming onto another link of the same inode does nothing: drop the temporary.
            let _ = sys::unlink(here.dst_dir, &temp, false);
        }
        Err(e) => return Err(Error::sys(Op::Link, dst_path(), e)),
    }
    here.made();
    ctx.report.copied(
        || here.src_path(src_name),
        dst_path,
        EntryKind::HardLink,
        None,
    );
    Ok(LinkStep::Done)
}

/// Records where a group's first copy now lives, for the links that follow.
fn first_done(first: Option<FirstCopy<'_>>, here: &Here<'_>, dst_name: &CStr) {
    if let (Some(first), Some(loc)) = (first, here.link_loc(dst_name)) {
        first.done(loc);
    }
}

/// Copies one entry whose type is known from `meta` (or is a regular file when None): a
/// regular file, symlink or special file. Directories are the caller's.
pub(crate) fn copy_entry(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut IoBuf,
    name: &CStr,
    dst_name: &CStr,
    meta: Option<Meta>,
    follow: bool,
) -> Result<(), Changed> {
    if let Some(kind) = ctx.opts.link {
        if let Err(e) = link_entry(ctx, here, name, dst_name, meta, follow, kind) {
            ctx.report.fail(e);
        }
        return Ok(());
    }
    // cp reads FIFOs and devices as files unless it copies recursively, and then too with
    // --copy-contents.
    let as_regular = !ctx.opts.recursive || ctx.opts.copy_contents;
    let result = match meta.map(|m| m.file_type()) {
        Some(sys::S_IFIFO | sys::S_IFCHR | sys::S_IFBLK) if as_regular => {
            copy_contents(ctx, here, buf, name, dst_name, follow).map(|_| ())
        }
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

/// `--copy-contents`: copies what reading the FIFO or device node `name` gives into a
/// regular file, with the node's metadata.
fn copy_contents(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut IoBuf,
    name: &CStr,
    dst_name: &CStr,
    follow: bool,
) -> Result<Option<FileOutcome>, Error> {
    let (src, node) = open_source(here, name, follow)?;
    // Copied as the regular file it becomes.
    let meta = Meta {
        mode: sys::S_IFREG | (node.mode & 0o7777),
        size: 0,
        blocks: 0,
        ..node
    };
    copy_opened(ctx, here, buf, name, dst_name, &src, &meta, None, true)
}

/// `-l`/`-s`: makes a link to the source entry `name` at `dst_name` instead of a copy.
fn link_entry(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: Option<Meta>,
    follow: bool,
    kind: LinkInstead,
) -> Result<(), Error> {
    let src_path = || here.src_path(name);
    let dst_path = || here.dst_path(dst_name);
    // cp hard-links what a symlink points to unless symlinks are never followed.
    let through = kind == LinkInstead::Hard && ctx.opts.dereference != Dereference::Never;
    let meta = match meta {
        Some(m) if !(through && m.is_symlink()) => m,
        _ => sys::stat_at(here.src_dir, name, follow || through)
            .map_err(|e| stat_error(src_path(), e))?,
    };
    let target = match kind {
        LinkInstead::Symbolic => Some(symlink_target(here, name, dst_name)?),
        LinkInstead::Hard => None,
    };
    let make = |t: &CStr| match &target {
        Some(path) => sys::symlink(path, here.dst_dir, t),
        None if through => sys::link_following(here.src_dir, name, here.dst_dir, t),
        None => sys::link(here.src_dir, name, here.dst_dir, t),
    };
    let (op, entry) = match kind {
        LinkInstead::Symbolic => (Op::Symlink, EntryKind::Symlink),
        LinkInstead::Hard => (Op::Link, EntryKind::HardLink),
    };
    match make(dst_name) {
        Ok(()) => {}
        Err(Errno::EXIST) => {
            if decide_at(ctx, here, name, dst_name, &meta)?.0 == Decision::Skip {
                ctx.report.skipped(src_path, dst_path);
                return Ok(());
            }
            let ((), t) = crash::with_temp(here.dst_prefix(), &make)
                .map_err(|e| Error::sys(op, dst_path(), e))?;
            commit(ctx, here, &t, dst_name, false, ctx.opts.backup.is_some())?;
            // A hard link renamed over another link of its inode leaves the temporary.
            let _ = sys::unlink(here.dst_dir, &t, false);
        }
        Err(e) => return Err(Error::sys(op, dst_path(), e)),
    }
    here.made();
    ctx.report.copied(src_path, dst_path, entry, None);
    Ok(())
}

/// What `-s` makes a link point to: the source's path as given. A relative one points to the
/// right place only from the working directory, so cp makes one only there.
fn symlink_target(here: &Here<'_>, name: &CStr, dst_name: &CStr) -> Result<CString, Error> {
    let path = here.src_path(name);
    let bytes = path.as_os_str().as_encoded_bytes();
    let dir = match here.loc {
        super::context::Loc::Alone { dst_prefix, .. } if !dst_prefix.is_empty() => {
            sys::open_dir(sys::CWD, &sys::cstring(dst_prefix), true).ok()
        }
        _ => None,
    };
    let dir = dir.as_ref().map_or(here.dst_dir, |fd| fd.as_fd());
    if relative_symlink_elsewhere(bytes, dir) {
        return Err(Error::refused(
            Op::Symlink,
            here.dst_path(dst_name),
            Refusal::RelativeSymlink,
        ));
    }
    Ok(sys::cstring(bytes))
}

/// A source listed as a regular file that is something else now, with its new metadata.
pub(crate) struct Changed(pub Meta);
