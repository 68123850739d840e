//! One regular file copied (or a FIFO or device node read as one, `--copy-contents`): a
//! [`RegularFile`] holds the run's context, the place, the names, the opened source and its
//! metadata, and takes the file through three phases:
//!
//! - **place**: the hard-link groups may link it (done), then the one overwrite decision gives
//!   a [`Target`] (new, temporary, in place, resumed); skipping it and writing into an
//!   existing node are early returns;
//! - **write**: the data path gives an outcome;
//! - **finish**: metadata, verify, sync, commit, report.
//!
//! A failure after place leaves no half file behind: a new entry is removed (and nothing
//! clones from it any more); a file written in place stays as it is, marked incomplete where
//! it could be, as cp leaves it.

use super::context::{Ctx, Here};
use super::placing::{
    LinkStep, backup_name_refused, backup_refused, before_failed_read, commit, data_error,
    decide_at, decide_existing, decide_for_unopened, first_done, first_skipped, link_or_claim,
    sticky_keeps,
};
use super::roots::open_error;
use super::sharing::SharedCopy;
use super::{shared_reads, sharing, split, through};
use crate::data::copy::{Checkpoint, DataError, DataJob, Layout, copy_file};
use crate::data::meta::{self, Apply, Dst, creation_mode};
use crate::data::{node, origin, verify};
use crate::options::{Backup, Overwrite, Reflink};
use crate::place::crash;
use crate::place::decide::{
    Conflict, Decision, cp_skips_as_not_older, looked_through, removed_first,
};
use crate::place::links::FirstCopy;
use crate::place::resume::{self, ResumeProgress};
use crate::report::{EntryKind, Error, FileOutcome, Method, Op, Refusal};
use crate::sys::{self, Errno, IoBuf, Meta, XattrTarget};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::sync::Arc;

/// Copies the regular file `here.src_dir/name` to `here.dst_dir/dst_name`, data and metadata.
/// Returns None when it was linked to an earlier copy or skipped.
pub(crate) fn copy_regular(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut IoBuf,
    names: (&CStr, &CStr),
    follow: bool,
) -> Result<Option<FileOutcome>, Error> {
    let (src, meta) = match open_source(here, names.0, follow) {
        Ok(opened) => opened,
        Err(e) => return unopened(ctx, here, names, follow, e, Meta::is_reg, |m| m),
    };
    if !meta.is_reg() {
        return Err(Error::refused(
            Op::Changed,
            here.src_path(names.0),
            Refusal::NoLongerRegular,
        ));
    }
    RegularFile::new(ctx, here, names, &src, meta).copy(buf, None)
}

/// `--copy-contents`: copies what reading the FIFO or device node `names.0` gives into a
/// regular file, with the node's metadata.
pub(crate) fn copy_contents(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut IoBuf,
    names: (&CStr, &CStr),
    follow: bool,
) -> Result<Option<FileOutcome>, Error> {
    let is_node = |m: &Meta| !(m.is_reg() || m.is_dir() || m.is_symlink());
    let (src, node) = match open_source(here, names.0, follow) {
        Ok(opened) => opened,
        Err(e) => return unopened(ctx, here, names, follow, e, is_node, as_file),
    };
    if node.file_type() == sys::S_IFIFO {
        // cp looks at the destination before it opens the source: what an earlier source
        // just made there it refuses without waiting for a writer.
        if let Some(e) = just_made_there(ctx, here, names, &as_file(node)) {
            return Err(e);
        }
        if let Some(e) = removal_fails_first(ctx, here, names.1, &node) {
            return Err(e);
        }
        node::wait_for_writer(src.as_fd(), ctx.report.control)
            .map_err(|e| data_error(e, || here.src_path(names.0), || here.dst_path(names.1)))?;
    }
    let meta = as_file(node);
    let mut file = RegularFile::new(ctx, here, names, &src, meta);
    file.contents = true;
    file.copy(buf, None)
}

/// The refusal of a copy of `src` onto what an earlier command-line source made at
/// `names.1` in this run (cp's "will not overwrite just-created"), which cp makes before it
/// opens the source, where no `-i` question comes first. One lstat, for a FIFO root only.
fn just_made_there(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    (name, dst_name): (&CStr, &CStr),
    src: &Meta,
) -> Option<Error> {
    let made = ctx.rules(here, &|| true).just_created?;
    // Numbered backups keep both (see `decide::just_created`).
    if ctx.opts.interactive || ctx.opts.backup == Some(Backup::Numbered) {
        return None;
    }
    let d = sys::stat_at(here.dst_dir, dst_name, false).ok()?;
    (d.id() == made).then(|| {
        let symlink = looked_through(ctx.opts, src, &d);
        Conflict::JustCreated { symlink }.error(here.src_path(name), here.dst_path(dst_name))
    })
}

/// cp's removal of the destination `dst_name` before it opens the source `src` (see
/// `removed_first`), where it fails: this user may not change the directory, or it keeps
/// another user's entry (sticky). cp says so and never opens the source, which for a FIFO
/// means it waits for no writer. Asked where the copy replaces without a question or a
/// comparison (no -i, -n or -u), for a FIFO source only: one lstat, and the directory's
/// access only where cp removes first.
fn removal_fails_first(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    dst_name: &CStr,
    src: &Meta,
) -> Option<Error> {
    let opts = ctx.opts;
    if opts.interactive || opts.overwrite != Overwrite::Replace || opts.attributes_only {
        return None;
    }
    let d = sys::stat_at(here.dst_dir, dst_name, false).ok()?;
    if d.id() == src.id() || !removed_first(&ctx.rules(here, &|| true), src, &d) {
        return None;
    }
    let errno = match sys::may_change_dir(here.dst_dir) {
        Err(e) => e,
        Ok(()) if sticky_keeps(ctx, here, d.uid) => Errno::PERM,
        Ok(()) => return None,
    };
    Some(Error::sys(Op::Remove, here.dst_path(dst_name), errno))
}

/// The node `node` as the regular file it is copied as (`--copy-contents`).
pub(crate) fn as_file(node: Meta) -> Meta {
    Meta {
        mode: sys::S_IFREG | (node.mode & 0o7777),
        size: 0,
        blocks: 0,
        ..node
    }
}

/// The source `names.0` could not be opened (`err`). cp looks at the destination before it
/// opens the source: a destination it cannot look at, or one the decision refuses or skips
/// (the same file, `-n`, `-u`, `-i`), or a backup it cannot make, is reported as such, and
/// only otherwise `err`, after what cp does to the destination before it opens the source
/// (a removal). `kind`
/// says whether the source is still what the caller expected; `seen` gives its metadata as
/// copied.
fn unopened(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    names: (&CStr, &CStr),
    follow: bool,
    err: Error,
    kind: impl Fn(&Meta) -> bool,
    seen: impl Fn(Meta) -> Meta,
) -> Result<Option<FileOutcome>, Error> {
    let (name, dst_name) = names;
    let (raw, meta, read_node) = match sys::stat_at(here.src_dir, name, follow) {
        Ok(m) if kind(&m) => (m, seen(m), !m.is_reg()),
        _ => return Err(err),
    };
    let d = match sys::stat_at(here.dst_dir, dst_name, false) {
        Ok(d) => d,
        // cp links a member of a group whose copy is made without opening it: the link is
        // made, or fails, as for one it could read. (A group's first member fails here, and
        // the next becomes its copy.)
        Err(Errno::NOENT) => {
            return match link_or_claim(ctx, here, name, dst_name, &meta)? {
                LinkStep::Done => Ok(None),
                LinkStep::Copy(_) => Err(err),
            };
        }
        Err(e) => return Err(Error::sys(Op::Stat, here.dst_path(dst_name), e)),
    };
    let skipped = || {
        // cp remembers what -u skips before it opens the source: the same file met again
        // links to it, and one met before is linked here.
        if ctx.opts.overwrite == Overwrite::Update {
            match link_or_claim(ctx, here, name, dst_name, &meta)? {
                LinkStep::Done => return Ok(None),
                LinkStep::Copy(first) => first_skipped(ctx, first, here, (name, dst_name), &meta),
            }
        }
        ctx.report
            .skipped(|| here.src_path(name), || here.dst_path(dst_name));
        Ok(None)
    };
    match decide_for_unopened(ctx, here, name, dst_name, (&meta, read_node), &d) {
        Ok(Decision::Skip) => skipped(),
        // A symlink cp cannot look at, a loop under -f, cp compares with nothing.
        Ok(_) if cp_skips_as_not_older(ctx.opts, &meta, &d) => skipped(),
        // cp renames the old entry to its backup name before it opens the source.
        Ok(Decision::Recreate) if ctx.opts.backup.is_some() => {
            Err(backup_refused(ctx, here, dst_name).unwrap_or(err))
        }
        // cp refuses a dangling symlink or a file it may not write only when it opens the
        // destination, after the source.
        Err(e) if !matches!(e.refusal(), Some(Refusal::DanglingSymlink)) && !unwritable(&e) => {
            Err(e)
        }
        Err(_) => Err(err),
        Ok(_) => before_failed_read(ctx, here, dst_name, &raw, &d).and(Err(err)),
    }
}

/// The decision's refusal of a regular file the process may not write.
fn unwritable(e: &Error) -> bool {
    e.op == Op::Create && e.errno() == Some(libc::EACCES)
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
    /// With --preserve=mode: the set-id and sticky bits of the file it replaces (see
    /// `Apply::kept_special`).
    kept_special: u32,
    /// Xattrs of the file it replaces, to carry over.
    kept_xattrs: meta::Xattrs,
    /// It carries the xattr mark of a file copied on its own, which its last metadata step
    /// removes.
    marked: bool,
    /// It replaces a file that cp would narrow to a mode without the owner's write before
    /// the xattrs (see `Apply::narrowed_read_only`).
    narrowed_read_only: bool,
}

/// The outcome of the place phase: the destination open for writing, where it is, and what
/// the later phases need.
struct Placement<'g> {
    dst: OwnedFd,
    target: Target,
    placed: Placed,
    /// The hard-link group this copy is the first of, told where it lives once finished.
    first: Option<FirstCopy<'g>>,
    /// `--preserve=sharing`: the extents this copy keeps shared (set by the write phase).
    shared: Option<SharedCopy>,
    /// The resume record a large file written at its final name keeps (write phase).
    progress: Option<Arc<ResumeProgress>>,
    /// The source's xattrs where place read them (to know whether an ACL is to come).
    src_xattrs: Option<meta::Xattrs>,
    /// A destination symlink replaced where cp, writing through it, could not have opened
    /// what it leads to: should the copy fail, cp's failure (which came first) is reported.
    refused_through: bool,
    /// The owner of the entry a temporary replaces where cp removes it first: should the
    /// copy fail, or its rename be refused, cp's failure to remove it (which came first) is
    /// reported.
    removed_first: Option<u32>,
}

impl Placement<'_> {
    fn in_place(&self) -> bool {
        matches!(self.target, Target::InPlace)
    }

    /// The parts an earlier run completed (empty for a new copy).
    fn done(&self) -> &[(u64, u64)] {
        match &self.target {
            Target::Resumed(done) => done,
            _ => &[],
        }
    }
}

/// The place phase's answer.
enum Placing<'g> {
    /// Linked, skipped or written into a node: nothing more to do.
    Done(Option<FileOutcome>),
    Write(Placement<'g>),
}

/// One regular file being copied. See the module's documentation for its phases.
pub(crate) struct RegularFile<'a, 'c> {
    ctx: &'a Ctx<'c>,
    here: &'a Here<'a>,
    name: &'a CStr,
    dst_name: &'a CStr,
    src: &'a OwnedFd,
    meta: Meta,
    /// `--copy-contents`: a FIFO or device node read to its end; `meta` is what it becomes.
    contents: bool,
}

impl<'a, 'c> RegularFile<'a, 'c> {
    /// The source `names.0` at `here`, open as `src` and checked to be a regular file, to be
    /// copied to `names.1`.
    pub fn new(
        ctx: &'a Ctx<'c>,
        here: &'a Here<'a>,
        names: (&'a CStr, &'a CStr),
        src: &'a OwnedFd,
        meta: Meta,
    ) -> Self {
        RegularFile {
            ctx,
            here,
            name: names.0,
            dst_name: names.1,
            src,
            meta,
            contents: false,
        }
    }

    fn src_path(&self) -> PathBuf {
        self.here.src_path(self.name)
    }

    fn dst_path(&self) -> PathBuf {
        self.here.dst_path(self.dst_name)
    }

    /// Copies the file: place, write, finish. `found` is the destination's metadata when it
    /// is known to exist: the copy then goes straight to a temporary, without first trying to
    /// create the destination name. None when it was linked to an earlier copy or skipped.
    pub fn copy(
        &self,
        buf: &mut IoBuf,
        found: Option<&Meta>,
    ) -> Result<Option<FileOutcome>, Error> {
        let mut p = match self.place(buf, found)? {
            Placing::Done(outcome) => return Ok(outcome),
            Placing::Write(p) => p,
        };
        let refused_through = p.refused_through;
        let done = self.write(buf, &mut p).and_then(|o| self.finish(p, o));
        match done {
            Err(_) if refused_through => Err(Error::os(Op::Create, self.dst_path(), libc::EACCES)),
            done => done.map(Some),
        }
    }

    // ---- place ----

    /// Links the file to its group's copy, or creates the destination, or asks the overwrite
    /// decision about the one that exists.
    fn place(&self, buf: &mut IoBuf, found: Option<&Meta>) -> Result<Placing<'a>, Error> {
        let (ctx, here) = (self.ctx, self.here);
        let first = match link_or_claim(ctx, here, self.name, self.dst_name, &self.meta)? {
            LinkStep::Done => return Ok(Placing::Done(None)),
            LinkStep::Copy(first) => first,
        };
        // Where this part of the directory's work carries its in-progress marker, a new file
        // is created with the mode a temporary gets (its final permission bits, or fewer while
        // a chown or an ACL is to come), and so is a file copied on its own, which carries a
        // mark of its own (see `crash`); elsewhere it carries the sticky bit until its final
        // chmod.
        let alone = here.marker.is_none();
        let marked_dir =
            found.is_none() && (alone || here.marker.is_some_and(|m| m.ensure(here.dst_dir)));
        // The source's xattrs say whether an ACL is to come. They are read before the file is
        // made where it is made in any case; where a -u or -n run may skip an existing file,
        // the copy is made for an ACL that may come instead (no list call for a file skipped).
        let src_xattrs = match found.is_none() && self.no_skip_here() {
            true => Some(self.read_xattrs()?),
            false => None,
        };
        // A file alone that gets its owner kept shows only its owner's bits until its final
        // chmod, as cp's copy does (GNU's tests/cp/file-perm-race.sh).
        let alone_owner = if alone && ctx.opts.preserve.ownership {
            0o700
        } else {
            0o777
        };
        let initial = if marked_dir {
            creation_mode(ctx.opts, &ctx.process, here.dst.setgid, &self.meta)
                & self.owner_only(src_xattrs.as_ref())
                & alone_owner
        } else {
            crash::incomplete_mode(&self.meta)
        };
        let created = match found {
            Some(_) => Err(Errno::EXIST),
            None => sys::create_excl(here.dst_dir, self.dst_name, initial),
        };
        let (dst, target, placed) = match created {
            Ok(fd) if alone => {
                let placed = self.mark_alone(&fd, initial)?;
                (fd, Target::New, placed)
            }
            Ok(fd) => {
                let perm = if marked_dir {
                    initial & !ctx.process.umask
                } else {
                    initial
                };
                (fd, Target::New, self.new_placed(perm))
            }
            Err(Errno::EXIST) => {
                let ensured = found.is_none();
                return self.existing(buf, found, ensured, first, src_xattrs);
            }
            Err(Errno::ISDIR) if self.dst_name.to_bytes().ends_with(b"/") => {
                return self.onto_slash(buf, first, src_xattrs);
            }
            Err(e) => return Err(Error::sys(Op::Create, self.dst_path(), e)),
        };
        let p = self.placement((dst, target, placed), first, src_xattrs);
        Ok(Placing::Write(p))
    }

    /// A file is not made at a name with a trailing slash ("d/"): O_CREAT fails there with
    /// EISDIR. A directory there is one in the way, as cp's look at the destination finds
    /// it; for anything else cp reports ENOTDIR, its word for a missing directory.
    fn onto_slash(
        &self,
        buf: &mut IoBuf,
        first: Option<FirstCopy<'a>>,
        src_xattrs: Option<meta::Xattrs>,
    ) -> Result<Placing<'a>, Error> {
        match sys::stat_at(self.here.dst_dir, self.dst_name, false) {
            Ok(d) => self.existing(buf, Some(&d), true, first, src_xattrs),
            Err(_) => Err(Error::sys(Op::Create, self.dst_path(), Errno::NOTDIR)),
        }
    }

    fn placement(
        &self,
        (dst, target, placed): (OwnedFd, Target, Placed),
        first: Option<FirstCopy<'a>>,
        src_xattrs: Option<meta::Xattrs>,
    ) -> Placement<'a> {
        Placement {
            dst,
            target,
            placed,
            first,
            shared: None,
            progress: None,
            src_xattrs,
            refused_through: false,
            removed_first: None,
        }
    }

    /// The source's xattrs (those the options preserve).
    fn read_xattrs(&self) -> Result<meta::Xattrs, Error> {
        let src = XattrTarget::Fd(self.src.as_fd());
        let named = |e| self.ctx.report.attribute(e);
        meta::source_xattrs(self.ctx.opts, src, &|| self.src_path(), &named)
    }

    /// Whether no existing file can make a copy here be skipped: the run replaces what it
    /// finds, or the directory was made by this run.
    fn no_skip_here(&self) -> bool {
        self.ctx.opts.overwrite == Overwrite::Replace || self.here.dir.is_some_and(|d| d.created)
    }

    /// The permission bits a regular file made here may have while its data is written
    /// (docs/guarantees.md, guarantee 4): only the owner's when an ACL is to come, since the
    /// group bits of a mode with an ACL are the ACL's mask, and the owning group may be
    /// allowed less. The ACL is the source's (`xattrs`, None when not read yet: then one may
    /// come, and matters only where its mask gives more than the source gives others), or one
    /// the directory passes on that --preserve=mode or --no-preserve=mode removes at the end.
    fn owner_only(&self, xattrs: Option<&meta::Xattrs>) -> u32 {
        let (p, src) = (self.ctx.opts.preserve, &self.meta);
        let acl = match xattrs {
            Some(x) => has_access_acl(x),
            None => (p.mode || p.xattr) && (src.perm() >> 3) & !src.perm() & 0o7 != 0,
        };
        if acl || ((p.mode || p.default_mode) && self.here.dst.default_acl) {
            0o700
        } else {
            0o777
        }
    }

    /// A file this run creates: its owner is ours unless the directory's set-gid bit gives
    /// it another group.
    fn new_placed(&self, perm: u32) -> Placed {
        let ctx = self.ctx;
        Placed {
            perm,
            owner: (!self.here.dst.setgid).then_some((ctx.process.euid, ctx.process.egid)),
            keep_perm: None,
            kept_special: 0,
            kept_xattrs: Vec::new(),
            marked: false,
            narrowed_read_only: false,
        }
    }

    /// The new file `fd`, copied on its own and made with `initial`, is marked incomplete
    /// where a metadata step is to follow its data: without one, its data complete is the
    /// copy complete, which `-u` tells by size and time as cp does.
    fn mark_alone(&self, fd: &OwnedFd, initial: u32) -> Result<Placed, Error> {
        let (opts, here) = (self.ctx.opts, self.here);
        let p = opts.preserve;
        let process = here.dst.process(&self.ctx.process);
        let mut placed = self.new_placed(initial & !process.umask);
        let metadata_follows = p.mode
            || p.ownership
            || p.timestamps
            || p.xattr
            || p.default_mode
            || opts.record_origin;
        if !metadata_follows {
            return Ok(placed);
        }
        match crash::mark_alone(fd.as_fd(), &self.meta) {
            Ok(crash::AloneMark::Xattr) => placed.marked = true,
            Ok(crash::AloneMark::Sticky) => placed.perm = crash::incomplete_mode(&self.meta),
            Err(e) => {
                let _ = sys::unlink(here.dst_dir, self.dst_name, false);
                return Err(Error::sys(Op::Create, self.dst_path(), e));
            }
        }
        Ok(placed)
    }

    /// The destination exists: the overwrite decision says where the data goes, or that
    /// nothing more is to be done. `ensured`: the part's marker was made ready for a new file.
    fn existing(
        &self,
        buf: &mut IoBuf,
        found: Option<&Meta>,
        ensured: bool,
        first: Option<FirstCopy<'a>>,
        src_xattrs: Option<meta::Xattrs>,
    ) -> Result<Placing<'a>, Error> {
        let (ctx, here, meta) = (self.ctx, self.here, &self.meta);
        let (decision, d) = match found {
            Some(d) => (
                decide_existing(
                    ctx,
                    here,
                    self.name,
                    self.dst_name,
                    (meta, self.contents),
                    d,
                )?,
                *d,
            ),
            None => decide_at(ctx, here, self.name, self.dst_name, (meta, self.contents))?,
        };
        match decision {
            Decision::WriteInto => {
                // The node written into is the group's copy, as in cp: the members still to
                // come are linked to it.
                let outcome = self.write_into_node(buf)?;
                first_done(first, here, self.dst_name);
                return Ok(Placing::Done(Some(outcome)));
            }
            Decision::Skip if !self.stale_content()? && !self.left_alone_incomplete(&d) => {
                self.skip(first);
                if let Some(marker) = here.marker.filter(|_| ensured) {
                    marker.skipped();
                }
                return Ok(Placing::Done(None));
            }
            // cp renames or removes the destination before it opens the source; where the
            // source's name leads through it, that open fails. mimeo renames and removes
            // nothing: the entry is the way to a source, which a run never changes.
            Decision::Recreate
                if d.is_symlink()
                    && through::source_through_destination(here, self.name, self.dst_name) =>
            {
                // -u: what cp's rule keeps (not older) it skips before it puts anything
                // aside, where the stricter rule would replace it.
                if ctx.opts.overwrite == Overwrite::Update && d.mtime >= meta.mtime {
                    self.skip(first);
                    if let Some(marker) = here.marker.filter(|_| ensured) {
                        marker.skipped();
                    }
                    return Ok(Placing::Done(None));
                }
                return Err(Error::os(Op::Open, self.src_path(), libc::ENOENT));
            }
            _ => {}
        }
        let src_xattrs = match src_xattrs {
            Some(x) => x,
            None => self.read_xattrs()?,
        };
        let owner_only = self.owner_only(Some(&src_xattrs));
        let made = match decision {
            Decision::InPlace => self.open_in_place(&d, owner_only)?,
            Decision::Recreate => {
                let mut rules = ctx.rules(here, &|| true);
                rules.read_node = self.contents;
                self.recreate(owner_only, removed_first(&rules, meta, &d))?
            }
            _ if d.is_symlink() => self.replace_symlink(owner_only)?,
            _ if !d.is_reg() => self.recreate(owner_only, false)?,
            _ => self.overwrite(&d, owner_only)?,
        };
        let mut p = self.placement(made, first, Some(src_xattrs));
        p.refused_through = d.is_symlink() && decision == Decision::Replace && self.unopenable();
        let removes = decision == Decision::Recreate && ctx.opts.backup.is_none();
        p.removed_first = removes.then_some(d.uid);
        Ok(Placing::Write(p))
    }

    /// Whether cp, writing through the destination symlink without `-f`, could not open what
    /// it leads to: a regular file or node this user may not write.
    fn unopenable(&self) -> bool {
        let (ctx, here) = (self.ctx, self.here);
        if ctx.opts.force || ctx.process.euid == 0 {
            return false;
        }
        let opened = |t: Meta| t.is_reg() || !(t.is_dir() || t.is_symlink());
        sys::stat_at(here.dst_dir, self.dst_name, true).is_ok_and(opened)
            && !sys::may_write(here.dst_dir, self.dst_name)
    }

    /// The decision keeps the existing copy.
    fn skip(&self, first: Option<FirstCopy<'a>>) {
        let (ctx, here) = (self.ctx, self.here);
        sharing::hold_existing(ctx, here, self.src.as_fd(), &self.meta, self.dst_name);
        first_skipped(ctx, first, here, (self.name, self.dst_name), &self.meta);
        ctx.report.skipped(|| self.src_path(), || self.dst_path());
    }

    /// The existing regular file `d` is replaced: what an earlier run wrote of this very
    /// source is gone on from; else a temporary takes its place; else it is written into.
    fn overwrite(&self, d: &Meta, owner_only: u32) -> Result<(OwnedFd, Target, Placed), Error> {
        let (ctx, here) = (self.ctx, self.here);
        if let Some(r) =
            super::resume::try_resume(ctx, here, self.src.as_fd(), &self.meta, self.dst_name)
        {
            let placed = Placed {
                perm: r.prior.was.perm(),
                owner: Some((r.prior.was.uid, r.prior.was.gid)),
                keep_perm: None,
                kept_special: 0,
                kept_xattrs: Vec::new(),
                // A file alone goes on under the mark it was left with.
                marked: here.marker.is_none(),
                narrowed_read_only: false,
            };
            return Ok((r.fd, Target::Resumed(r.prior.done), placed));
        }
        match self.replacement(d, owner_only)? {
            Some((fd, name, placed)) => {
                let backup = false;
                Ok((fd, Target::Temp { name, backup }, placed))
            }
            // No temporary can be made there (a writable file in a directory we may not
            // write), or it cannot get the old file's owner: cp writes into the file, and so
            // does mimeo.
            None => self.open_in_place(d, owner_only),
        }
    }

    /// A temporary that replaces an existing entry by a file made as if nothing were there.
    /// A temporary is incomplete by its name, so it needs no marker (and no chmod to clear
    /// one): it is created as restricted as its final mode requires. `removed_first`: cp
    /// removes the destination before anything else (see `decide::removed_first`).
    fn recreate(
        &self,
        owner_only: u32,
        removed_first: bool,
    ) -> Result<(OwnedFd, Target, Placed), Error> {
        self.try_recreate(owner_only, removed_first)
            .map_err(|e| if removed_first { e } else { self.announced(e) })
    }

    /// Under -f the removal follows the failed open, after cp's -v line: it is said for the
    /// error that ends the copy, not for one a fallback recovers from (which says it once
    /// done).
    fn announced(&self, e: Error) -> Error {
        if e.op == Op::Remove && !self.ctx.opts.remove_destination {
            self.ctx
                .report
                .begun(|| self.src_path(), || self.dst_path());
        }
        e
    }

    /// [`Self::recreate`] without the -v line of a failure. cp's removal first fails before
    /// its -v line, where the directory cannot be written ("cannot remove").
    fn try_recreate(
        &self,
        owner_only: u32,
        removed_first: bool,
    ) -> Result<(OwnedFd, Target, Placed), Error> {
        let (ctx, here) = (self.ctx, self.here);
        let mode = creation_mode(ctx.opts, &ctx.process, here.dst.setgid, &self.meta) & owner_only;
        let backup = ctx.opts.backup.is_some();
        let (fd, name) = crash::with_temp(here.dst_prefix(), |t| {
            sys::create_excl(here.dst_dir, t, mode)
        })
        .map_err(|e| {
            // cp renames the old entry to its backup first, and fails there where the
            // directory cannot be written; without a backup, -f and --remove-destination
            // remove it first (-f: what cp cannot open), and fail at that. A backup name
            // too long fails that rename before the directory's permissions do.
            let refused = matches!(e, Errno::ACCESS | Errno::PERM | Errno::ROFS);
            let e = match e {
                Errno::ACCESS | Errno::PERM if backup => {
                    backup_name_refused(ctx, here, self.dst_name).unwrap_or(e)
                }
                _ => e,
            };
            let removes = ctx.opts.force || ctx.opts.remove_destination || removed_first;
            let op = match (backup, removes) {
                (true, _) if refused => Op::Backup,
                (false, true) if refused => Op::Remove,
                _ => Op::Create,
            };
            Error::sys(op, self.dst_path(), e)
        })?;
        let placed = self.new_placed(mode & !ctx.process.umask);
        Ok((fd, Target::Temp { name, backup }, placed))
    }

    /// A destination symlink is replaced by a new file. Where none can be made in its
    /// directory (one the user may not write), cp's way is taken: the regular file the
    /// symlink leads to is written into, as the fallback for a regular file does.
    fn replace_symlink(&self, owner_only: u32) -> Result<(OwnedFd, Target, Placed), Error> {
        let err = match self.try_recreate(owner_only, false) {
            Err(e) if e.errno() == Some(libc::EACCES) => e,
            made => return made.map_err(|e| self.announced(e)),
        };
        let (ctx, here) = (self.ctx, self.here);
        let opened =
            sys::open_existing_for_writing(here.dst_dir, self.dst_name, ctx.opts.verify, true);
        let Ok(fd) = opened else {
            return Err(self.announced(err));
        };
        match sys::fstat(fd.as_fd()) {
            Ok(target) if target.is_reg() => self.write_in_place(fd, &target, owner_only),
            _ => Err(self.announced(err)),
        }
    }

    /// The temporary that replaces the existing regular file `d`, made to keep what cp
    /// (which writes into the file) keeps where the options do not take it from the source:
    /// the old file's mode, owner and group, and its xattrs and ACL. None when cp's way must
    /// be taken instead: no temporary can be made in the directory, or it cannot be given
    /// the old file's owner.
    fn replacement(
        &self,
        d: &Meta,
        owner_only: u32,
    ) -> Result<Option<(OwnedFd, CString, Placed)>, Error> {
        let (ctx, here) = (self.ctx, self.here);
        let p = ctx.opts.preserve;
        let process = &ctx.process;
        let dst_path = || self.dst_path();
        let keep_owner = (!p.ownership).then_some((d.uid, d.gid));
        let keep_perm = (!p.mode).then(|| self.kept_perm(d));
        let kept_special = if p.mode {
            special(self.kept_perm(d))
        } else {
            0
        };
        let kept_xattrs = {
            let at = here.dst_entry_path(self.dst_name);
            let mut kept = meta::kept_xattrs(ctx.opts, XattrTarget::NoFollow(&at), &dst_path)?;
            // The resume record and the mark of an earlier run's partial copy are not the
            // file's own.
            kept.retain(|(name, _)| ![resume::RECORD, crash::MARK].contains(&name.as_c_str()));
            kept
        };
        let ours = (process.euid, process.egid);
        // Nobody but the final owner may open it before it is theirs: the old file's owner, or
        // the source's with --preserve=ownership. An ACL kept from the old file counts as one
        // to come.
        let src = &self.meta;
        let chown_to_come = keep_owner.is_some_and(|o| o != ours)
            || (p.ownership && (src.uid, src.gid) != ours)
            || here.dst.setgid;
        let owner_only = if chown_to_come || has_access_acl(&kept_xattrs) {
            0o700
        } else {
            owner_only
        };
        let mode = match keep_perm {
            Some(perm) => perm & owner_only,
            None => creation_mode(ctx.opts, process, here.dst.setgid, src) & owner_only,
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
        if let Some(o) = keep_owner.filter(|&o| owner != Some(o)) {
            match sys::fchown(fd.as_fd(), Some(o.0), Some(o.1)) {
                Ok(()) => owner = Some(o),
                Err(e) => {
                    let _ = sys::unlink(here.dst_dir, &temp, false);
                    return match e {
                        Errno::PERM => Ok(None),
                        e => Err(Error::sys(Op::Chown, dst_path(), e)),
                    };
                }
            }
        }
        // Where a default ACL stands in for the umask, the temporary has the ACL's bits, so the
        // mode kept from the old file is set again.
        let made_under = here.dst.acl_perm.or(here.dir.and_then(|d| d.acl_perm));
        let perm = match made_under {
            Some(acl) => mode & (acl | !0o777),
            None => mode & !process.umask,
        };
        let placed = Placed {
            perm,
            owner,
            keep_perm,
            kept_special,
            kept_xattrs,
            marked: false,
            narrowed_read_only: self.narrowed_read_only(d),
        };
        Ok(Some((fd, temp, placed)))
    }

    /// Whether cp, writing into the existing file `d` (ours), would narrow it to the permission
    /// bits it shares with the source before it changes the owner (`Apply::narrow`), and so
    /// leave it without the owner's write while it sets the xattrs. Root is never refused.
    fn narrowed_read_only(&self, d: &Meta) -> bool {
        let (p, src, process) = (self.ctx.opts.preserve, &self.meta, &self.ctx.process);
        process.euid != 0
            && p.ownership
            && p.mode
            && d.uid == process.euid
            && (d.uid, d.gid) != (src.uid, src.gid)
            && d.perm() & src.perm() & 0o200 == 0
    }

    /// The mode the file `d` keeps when cp's writing into it is what the copy stands for:
    /// the mode the write leaves, without the mark of an earlier copy killed while writing
    /// into it.
    fn kept_perm(&self, d: &Meta) -> u32 {
        let ctx = self.ctx;
        let perm = meta::written_perm(d, &self.meta, ctx.opts, &ctx.process, true);
        if crash::marked_incomplete(d, &self.meta) {
            perm & !sys::S_ISVTX
        } else {
            perm
        }
    }

    /// Opens the existing regular file `d` to write into it, as cp does, and truncates it.
    /// Where mimeo may change its mode, it carries the sticky bit until its final chmod, so
    /// that a copy killed meanwhile is recognisably incomplete.
    fn open_in_place(&self, d: &Meta, owner_only: u32) -> Result<(OwnedFd, Target, Placed), Error> {
        let (ctx, here) = (self.ctx, self.here);
        let fd =
            sys::open_existing_for_writing(here.dst_dir, self.dst_name, ctx.opts.verify, false)
                .map_err(|e| Error::sys(Op::Create, self.dst_path(), e))?;
        self.write_in_place(fd, d, owner_only)
    }

    /// [`Self::open_in_place`] once `fd`, the regular file `d`, is open.
    fn write_in_place(
        &self,
        fd: OwnedFd,
        d: &Meta,
        owner_only: u32,
    ) -> Result<(OwnedFd, Target, Placed), Error> {
        let (ctx, here, src) = (self.ctx, self.here, &self.meta);
        let dst_path = || self.dst_path();
        let process = &ctx.process;
        let p = ctx.opts.preserve;
        let data = !ctx.opts.attributes_only;
        // Without data nothing is written: only a change of owner takes set-id bits away.
        let kept = if data {
            self.kept_perm(d)
        } else {
            meta::written_perm(d, src, ctx.opts, process, false)
        };
        let mut perm = if data { kept } else { d.perm() };
        if data && (process.euid == 0 || process.euid == d.uid) {
            // The chmod that marks it also takes away, while the new data is written, what the
            // final owner, mode or ACL will not allow (guarantee 4).
            let chown_to_come = p.ownership && (d.uid, d.gid) != (src.uid, src.gid);
            let mut during = kept & if chown_to_come { 0o700 } else { owner_only };
            if p.mode {
                during &= src.perm() | !0o777;
            }
            // A source with the sticky bit of its own cannot be told incomplete by it (see
            // `crash::marked_incomplete`): the bit would only pass for the file's own mode
            // to another source written onto the same file meanwhile.
            let mark = if src.mode & sys::S_ISVTX == 0 {
                sys::S_ISVTX
            } else {
                0
            };
            let marked = during | mark;
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
            kept_special: if p.mode { special(kept) } else { 0 },
            kept_xattrs: Vec::new(),
            // A file alone may carry the mark an earlier run left on it.
            marked: here.marker.is_none() && data,
            narrowed_read_only: false,
        };
        Ok((fd, Target::InPlace, placed))
    }

    /// `-u`: whether the existing regular file `d`, a copy of a file on its own, is one that
    /// a run left before its last metadata step (by its mark; looked at only here).
    fn left_alone_incomplete(&self, d: &Meta) -> bool {
        let (ctx, here) = (self.ctx, self.here);
        ctx.opts.overwrite == Overwrite::Update
            && here.marker.is_none()
            && d.is_reg()
            && crash::marked_alone(&here.dst_entry_path(self.dst_name))
    }

    /// `-u --verify`: whether a destination that `-u` would skip differs from its source in
    /// content, so that it is copied again instead.
    fn stale_content(&self) -> Result<bool, Error> {
        let (ctx, here) = (self.ctx, self.here);
        if !(ctx.opts.verify && ctx.opts.overwrite == Overwrite::Update) {
            return Ok(false);
        }
        let dst = sys::open_read(here.dst_dir, self.dst_name, false)
            .map_err(|e| Error::sys(Op::Open, self.dst_path(), e))?;
        match verify::same_content(self.src.as_fd(), dst.as_fd(), &self.meta, Method::Clone) {
            Ok(()) => Ok(false),
            Err(verify::Mismatch::Differs(_)) => Ok(true),
            Err(e) => Err(e.into_error(self.src_path(), self.dst_path())),
        }
    }

    /// Writes the file's bytes into the existing FIFO, socket or device node at the
    /// destination, then applies the metadata asked for to the node (cp does both). The node
    /// is never removed, whatever fails.
    fn write_into_node(&self, buf: &mut IoBuf) -> Result<FileOutcome, Error> {
        let (ctx, here) = (self.ctx, self.here);
        let (src_path, dst_path) = (|| self.src_path(), || self.dst_path());
        let control = ctx.report.control;
        let dst = node::open_node(here.dst_dir, self.dst_name, control)
            .map_err(|e| data_error(e, src_path, dst_path))?;
        let src = self.src.as_fd();
        let bytes = if ctx.opts.attributes_only {
            // --attributes-only opens the node as cp does, but copies (and clones) no data.
            0
        } else {
            self.clone_required(dst.as_fd())?;
            // A FIFO or device source (read as a file) cannot be read at an offset: it is
            // read in order, to its end, as cp reads it.
            if self.contents {
                node::read_contents(src, dst.as_fd(), buf, ctx.opts.buffer_size, control)
            } else {
                node::stream_into(src, &dst, buf, ctx.opts.buffer_size, control)
            }
            .map_err(|e| data_error(e, src_path, dst_path))?
        };
        let named = |e| ctx.report.attribute(e);
        let xattrs = meta::source_xattrs(ctx.opts, XattrTarget::Fd(src), &src_path, &named)?;
        let apply = Apply {
            written_node: true,
            ..Apply::for_existing(ctx.opts, &ctx.process, &self.meta)
        };
        apply.run(Dst::Fd(dst.as_fd()), &xattrs, &dst_path, &named)?;
        let outcome = FileOutcome::new(Method::Stream, bytes, 0);
        here.made();
        ctx.report
            .copied(src_path, dst_path, EntryKind::File, Some(outcome));
        Ok(outcome)
    }

    /// cp's `--reflink=always` clones whatever it copies, into a FIFO or device node and
    /// from one too, which the kernel refuses (EINVAL): such a copy fails before anything is
    /// written.
    fn clone_required(&self, dst: BorrowedFd<'_>) -> Result<(), Error> {
        if self.ctx.opts.reflink != Reflink::Always {
            return Ok(());
        }
        sys::clone_file(dst, self.src.as_fd())
            .map_err(|e| Error::sys(Op::Clone, self.dst_path(), e).from_source(self.src_path()))
    }

    // ---- write ----

    /// The name the data is written under.
    fn written_name<'p>(&'p self, p: &'p Placement<'_>) -> &'p CStr {
        match &p.target {
            Target::Temp { name, .. } => name,
            _ => self.dst_name,
        }
    }

    /// Removes what place made, after a failure (see the module's documentation).
    fn discard(&self, p: &Placement<'_>, err: Error) -> Error {
        if let Some(s) = &p.shared {
            s.holder.kill();
        }
        if !p.in_place() {
            let _ = sys::unlink(self.here.dst_dir, self.written_name(p), false);
        }
        if p.removed_first
            .is_some_and(|owner| sticky_keeps(self.ctx, self.here, owner))
        {
            return self.not_removed();
        }
        // cp renames the old entry to its backup name before it clones: where that rename
        // would fail (a name too long), cp's words are about the backup. Asked only here,
        // after a failed clone, so a copy that succeeds makes no extra call.
        match &p.target {
            Target::Temp { backup: true, .. } if err.op == Op::Clone => {
                backup_refused(self.ctx, self.here, self.dst_name).unwrap_or(err)
            }
            _ => err,
        }
    }

    /// cp's failure to remove the destination it replaces (`--remove-destination`, or `-f`
    /// where it cannot open it), which comes before anything is made.
    fn not_removed(&self) -> Error {
        self.announced(Error::sys(Op::Remove, self.dst_path(), Errno::PERM))
    }

    /// Writes the data (none with `--attributes-only`), and drops the resume record of a
    /// copy whose data is complete.
    fn write(&self, buf: &mut IoBuf, p: &mut Placement<'_>) -> Result<FileOutcome, Error> {
        let ctx = self.ctx;
        let data = !ctx.opts.attributes_only && !self.contents;
        // --preserve=sharing: extents the source shares are written once and cloned after.
        if data && matches!(p.target, Target::New | Target::Temp { .. }) {
            let (src, dst) = (self.src.as_fd(), p.dst.as_fd());
            let written = self.written_name(p);
            p.shared = sharing::prepare(ctx, self.here, src, &self.meta, dst, written);
        }
        // A large file written at its final name keeps a record of what is complete as it
        // goes.
        let resumable = matches!(p.target, Target::New | Target::Resumed(_)) && p.shared.is_none();
        p.progress = data
            .then(|| super::resume::progress(&self.meta, !resumable, p.done()))
            .flatten();
        let outcome = if ctx.opts.attributes_only {
            FileOutcome::new(Method::Stream, 0, 0)
        } else if self.contents {
            let (src, dst) = (self.src.as_fd(), p.dst.as_fd());
            self.clone_required(dst).map_err(|e| self.discard(p, e))?;
            node::read_contents(src, dst, buf, ctx.opts.buffer_size, ctx.report.control)
                .map(|n| FileOutcome::new(Method::Stream, n, 0))
                .map_err(|e| self.discard(p, self.data_error(e)))?
        } else {
            self.write_data(buf, p)?
        };
        if !p.done().is_empty() || p.progress.as_ref().is_some_and(|r| r.written()) {
            // The data is complete: a complete file never carries a record.
            resume::clear(p.dst.as_fd())
                .map_err(|e| self.discard(p, Error::sys(Op::SetXattr, self.dst_path(), e)))?;
        }
        Ok(outcome)
    }

    fn data_error(&self, e: DataError) -> Error {
        data_error(e, || self.src_path(), || self.dst_path())
    }

    /// The data path, and what a failure leaves: with `--partial`, a copy stopped by the
    /// run's stop request keeps what it wrote; anything else is discarded.
    fn write_data(&self, buf: &mut IoBuf, p: &Placement<'_>) -> Result<FileOutcome, Error> {
        match self.copy_data(buf, p) {
            Ok(o) => Ok(o),
            Err(DataFailure::Data(e))
                if e.op == Op::Interrupted
                    && super::resume::keep_stopped(
                        self.ctx,
                        self.here,
                        p.progress.as_deref(),
                        p.dst.as_fd(),
                        e.stopped_at,
                    ) =>
            {
                Err(self.data_error(e))
            }
            Err(DataFailure::Data(e)) => Err(self.discard(p, self.data_error(e))),
            Err(DataFailure::Other(e)) => Err(self.discard(p, e)),
        }
    }

    /// Copies the source's bytes into the destination (new and empty, just truncated, or what
    /// an earlier run left of it), checking that the source did not change meanwhile.
    fn copy_data(&self, buf: &mut IoBuf, p: &Placement<'_>) -> Result<FileOutcome, DataFailure> {
        let (ctx, here, meta) = (self.ctx, self.here, &self.meta);
        let src = self.src.as_fd();
        let canonicals = shared_reads::canonicals(ctx, here, self.name, src, meta);
        let via = canonicals.via();
        let plan = ctx.plan(meta, &here.dst, here.sized_dev, &via);
        let dst: BorrowedFd<'_> = p.dst.as_fd();
        let mut recorder = p.progress.as_ref().map(|r| r.on(dst));
        let job = DataJob {
            src,
            meta,
            dst,
            plan: &plan,
            buf,
            control: ctx.report.control,
            checkpoint: recorder.as_mut().map(|r| r as &mut dyn Checkpoint),
        };
        let mut keep = p.shared.as_ref().map(|copy| sharing::KeepShared {
            ctx,
            copy,
            dev: meta.dev,
        });
        let names = split::Names {
            src: self.name,
            written: self.written_name(p),
        };
        let mut splitter = match keep {
            Some(_) => None,
            None => split::layout(ctx, here, names, p.progress.clone(), p.done(), meta),
        };
        let layout: Option<&mut dyn Layout> = match (&mut keep, &mut splitter) {
            (Some(k), _) => Some(k),
            (None, Some(s)) => Some(s),
            (None, None) => None,
        };
        let outcome = copy_file(job, p.done(), layout).map_err(DataFailure::Data)?;
        self.unchanged(outcome)
    }

    /// Copying took time: a source written meanwhile would leave a copy that mixes old and
    /// new bytes under the old times. A clone is one atomic step and needs no check.
    fn unchanged(&self, outcome: FileOutcome) -> Result<FileOutcome, DataFailure> {
        if outcome.method == Method::Clone || self.meta.size == 0 {
            return Ok(outcome);
        }
        let now = sys::fstat(self.src.as_fd())
            .map_err(|errno| DataFailure::Data(DataError::new(Op::Read, errno)))?;
        if now.size != self.meta.size || now.mtime != self.meta.mtime {
            return Err(DataFailure::Other(Error::refused(
                Op::Changed,
                self.src_path(),
                Refusal::ChangedWhileCopied,
            )));
        }
        Ok(outcome)
    }

    // ---- finish ----

    /// Metadata, verify, sync, commit, report.
    fn finish(&self, mut p: Placement<'_>, outcome: FileOutcome) -> Result<FileOutcome, Error> {
        let (ctx, here) = (self.ctx, self.here);
        let dst_path = || self.dst_path();
        let mut xattrs = std::mem::take(&mut p.placed.kept_xattrs);
        let kept = xattrs.len();
        xattrs.extend(match p.src_xattrs.take() {
            Some(x) => x,
            None => self.read_xattrs().map_err(|e| self.discard(&p, e))?,
        });
        self.apply_metadata(&p, (xattrs, kept), outcome)
            .map_err(|e| self.discard(&p, e))?;
        if p.placed.marked {
            // The last metadata step: the copy is complete.
            crash::clear_mark(p.dst.as_fd())
                .map_err(|e| self.discard(&p, Error::sys(Op::SetXattr, dst_path(), e)))?;
        }
        if ctx.opts.verify && !ctx.opts.attributes_only {
            verify::same_content(self.src.as_fd(), p.dst.as_fd(), &self.meta, outcome.method)
                .map_err(|e| self.discard(&p, e.into_error(self.src_path(), dst_path())))?;
        }
        if ctx.opts.sync {
            sys::fsync(p.dst.as_fd())
                .map_err(|e| self.discard(&p, Error::sys(Op::Sync, dst_path(), e)))?;
        }
        let Placement {
            dst,
            target,
            first,
            shared,
            removed_first,
            ..
        } = p;
        if let Target::Temp { name: t, backup } = &target {
            let dirty = outcome.method != Method::Clone && outcome.bytes > 0;
            // Held open until renamed: an open temporary is a live run's (see `crash`). A
            // rename refused (a sticky directory, an immutable entry) is cp's unlink refused.
            commit(ctx, here, t, self.dst_name, dirty, *backup).map_err(|e| {
                match removed_first.is_some() && e.errno() == Some(libc::EPERM) {
                    true => self.not_removed(),
                    false => e,
                }
            })?;
            if let Some(s) = &shared {
                s.holder.renamed(self.dst_name);
            }
        }
        drop(dst);
        if ctx.opts.sync && here.dir.is_none() {
            // A root-level file: its directory entry is flushed here; inside a tree, the
            // directory's own flush at its completion covers it.
            here.sync_dst_dir()
                .map_err(|e| Error::sys(Op::Sync, dst_path(), e))?;
        }
        first_done(first, here, self.dst_name);
        here.made();
        ctx.report
            .copied(|| self.src_path(), dst_path, EntryKind::File, Some(outcome));
        Ok(outcome)
    }

    /// Xattrs (`xattrs`: the first `kept` kept from the file replaced, then the source's;
    /// then the origin record), owner, mode and times, in the guarantees' order.
    fn apply_metadata(
        &self,
        p: &Placement<'_>,
        (mut xattrs, kept): (meta::Xattrs, usize),
        outcome: FileOutcome,
    ) -> Result<(), Error> {
        let (ctx, here) = (self.ctx, self.here);
        let src = self.src.as_fd();
        if ctx.opts.record_origin {
            let cloned = outcome.method == Method::Clone;
            xattrs = origin::with_record(xattrs, cloned, src, &ctx.mounts);
        }
        let in_place = p.in_place();
        let process = here.dst.process(&ctx.process);
        // A temporary that takes the place of a file cp would write into inherited the
        // directory's default ACL, if it has one (known from its bits, and not looked at
        // under --preserve=ownership): it must end with the old file's ACL, or none.
        let made_under_acl = here.dst.acl_perm.or(here.dir.and_then(|d| d.acl_perm));
        let replaced_under_acl = p.placed.keep_perm.is_some()
            && (made_under_acl.is_some() || ctx.opts.preserve.ownership);
        let apply = Apply {
            opts: ctx.opts,
            process: &process,
            src: &self.meta,
            created: !in_place,
            created_owner: p.placed.owner,
            current_perm: Some(p.placed.perm),
            inherit_sgid: false,
            // A file made here (not one written into) inherits the directory's default ACL.
            inherited_acl: !in_place && (here.dst.default_acl || replaced_under_acl),
            keep_perm: p.placed.keep_perm,
            kept_special: p.placed.kept_special,
            acl_perm: None,
            kept,
            written_node: false,
            narrows: true,
            narrowed_read_only: p.placed.narrowed_read_only,
            whole_mode: false,
        };
        let named = |e| ctx.report.attribute(e);
        apply.run(Dst::Fd(p.dst.as_fd()), &xattrs, &|| self.dst_path(), &named)
    }
}

/// A data-path failure, or a source that changed while its data was copied.
enum DataFailure {
    Data(DataError),
    Other(Error),
}

/// The set-id and sticky bits of `perm`.
fn special(perm: u32) -> u32 {
    perm & (sys::S_ISUID | sys::S_ISGID | sys::S_ISVTX)
}

/// Whether `xattrs` hold a POSIX access ACL.
fn has_access_acl(xattrs: &meta::Xattrs) -> bool {
    xattrs.iter().any(|(n, _)| n.as_c_str() == sys::ACL_ACCESS)
}
