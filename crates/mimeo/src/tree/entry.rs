//! One entry of a tree (or a file copied on its own): a regular file (see `file`), a symlink,
//! a FIFO, socket or device node, a link made instead of a copy (`-l`, `-s`). Each is created
//! new or under a temporary name as the overwrite decision says, gets its metadata, and is
//! reported.

use super::context::{Ctx, Here, relative_symlink_elsewhere};
use super::file::{as_file, copy_contents, copy_regular};
use super::placing::{
    LinkStep, backup_fails_first, backup_refused, before_failed_copy, before_failed_read, commit,
    decide_at, decide_for_unopened, first_done, first_skipped, link_or_claim, refused_removal,
};
use super::roots::stat_error;
use super::through;
use crate::data::meta::{self, Apply, Dst};
use crate::options::{Dereference, LinkInstead, Overwrite};
use crate::place::crash;
use crate::place::decide::{Decision, kernel_refuses_link};
use crate::place::links::FirstCopy;
use crate::report::{Cause, EntryKind, Error, Op, Refusal};
use crate::sys::{self, Errno, IoBuf, Meta, XattrTarget};
use rustix::fd::AsFd;
use std::ffi::{CStr, CString};

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
    let entry = Made {
        ctx,
        here,
        name,
        dst_name,
        meta,
        kind: EntryKind::Symlink,
        op: Op::Symlink,
    };
    entry.copy(|t| sys::symlink(&target, here.dst_dir, t))
}

/// Copies a FIFO, socket or device node.
pub(crate) fn copy_special(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<(), Error> {
    let mode = meta.file_type() | made_perm(ctx, meta);
    let entry = Made {
        ctx,
        here,
        name,
        dst_name,
        meta,
        kind: entry_kind(meta),
        // cp names a FIFO's failure apart ("cannot create fifo").
        op: if meta.file_type() == sys::S_IFIFO {
            Op::MakeFifo
        } else {
            Op::MakeNode
        },
    };
    entry.copy(|t| sys::mknod(here.dst_dir, t, mode, meta.rdev))
}

/// The permission bits a FIFO, socket or device node is made with. Where an owner, ACL or
/// mode is still to come, only the owner's; the final mode comes after them. Else the
/// source's, as cp makes it: the kernel takes away what the umask, or the directory's default
/// ACL in its place, does not allow, and that is the final mode.
fn made_perm(ctx: &Ctx<'_>, meta: &Meta) -> u32 {
    let p = ctx.opts.preserve;
    if p.ownership || p.mode || p.xattr || p.default_mode {
        meta.perm() & 0o700
    } else {
        meta.perm()
    }
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

/// A symlink, FIFO, socket or device node being copied: made whole by one call (`make`,
/// with `op` as its failure's step), then given its metadata by name without following it.
/// The same phases as a regular file's, without data: place, then finish.
struct Made<'a, 'c> {
    ctx: &'a Ctx<'c>,
    here: &'a Here<'a>,
    name: &'a CStr,
    dst_name: &'a CStr,
    meta: &'a Meta,
    kind: EntryKind,
    op: Op,
}

/// Where place made an entry: under its name, or under a temporary (and whether the old
/// entry gets a backup) to be committed over it.
type MadeAt = Option<(CString, bool)>;

impl<'a> Made<'a, '_> {
    fn copy(&self, make: impl Fn(&CStr) -> sys::Result<()>) -> Result<(), Error> {
        let first = match link_or_claim(self.ctx, self.here, self.name, self.dst_name, self.meta)? {
            LinkStep::Done => return Ok(()),
            LinkStep::Copy(first) => first,
        };
        match self.place(&make)? {
            Some(temp) => self.finish(temp, first),
            None => {
                // An entry -u skips as up to date is the group's copy, as for a regular file:
                // the same source met again (named twice with a backup) is linked to it.
                let names = (self.name, self.dst_name);
                first_skipped(self.ctx, first, self.here, names, self.meta);
                Ok(())
            }
        }
    }

    /// Makes the entry (under a temporary name when the destination exists and the decision
    /// replaces it). None when the decision skips it.
    fn place(&self, make: &dyn Fn(&CStr) -> sys::Result<()>) -> Result<Option<MadeAt>, Error> {
        let (ctx, here) = (self.ctx, self.here);
        let dst_path = || here.dst_path(self.dst_name);
        if let Some(marker) = here.marker {
            // New entries here are incomplete until their metadata is set.
            marker.ensure(here.dst_dir);
        }
        match make(self.dst_name) {
            Ok(()) => Ok(Some(None)),
            Err(Errno::EXIST) => {
                match decide_at(ctx, here, self.name, self.dst_name, (self.meta, false))? {
                    (Decision::Skip, _) => {
                        if let Some(marker) = here.marker {
                            marker.skipped();
                        }
                        ctx.report.skipped(|| here.src_path(self.name), dst_path);
                        Ok(None)
                    }
                    // Only a regular source is written into a node, or merged: anything else
                    // replaces.
                    (decision, d) => match crash::with_temp(here.dst_prefix(), make) {
                        Ok(((), t)) => Ok(Some(Some((t, decision == Decision::Recreate)))),
                        Err(e) => {
                            let backup = decision == Decision::Recreate;
                            let (op, e) =
                                match backup_fails_first(ctx, here, self.dst_name, backup, e) {
                                    Some(b) => (Op::Backup, b),
                                    None => (self.op, e),
                                };
                            // What cp did to the old entry before it failed stays done.
                            before_failed_copy(ctx, here, self.dst_name, self.meta, &d)?;
                            Err(Error::sys(op, dst_path(), e))
                        }
                    },
                }
            }
            Err(e) => Err(Error::sys(self.op, dst_path(), e)),
        }
    }

    /// A rename over the old entry refused where cp removes it first ([`refused_removal`]).
    fn refused_removal(&self, e: Error) -> Error {
        let (ctx, here) = (self.ctx, self.here);
        if e.op != Op::Rename || e.errno() != Some(libc::EPERM) {
            return e;
        }
        match sys::stat_at(here.dst_dir, self.dst_name, false) {
            Ok(d) => refused_removal(ctx, here, self.dst_name, self.meta, &d, &e).unwrap_or(e),
            Err(_) => e,
        }
    }

    /// Metadata, commit, report.
    fn finish(&self, temp: MadeAt, first: Option<FirstCopy<'a>>) -> Result<(), Error> {
        let (ctx, here, meta) = (self.ctx, self.here, self.meta);
        let dst_path = || here.dst_path(self.dst_name);
        let made: &CStr = temp.as_ref().map_or(self.dst_name, |(t, _)| t);
        let symlink = meta.is_symlink();
        let xattrs = if symlink && !ctx.opts.preserve.xattr {
            // Symlinks have no ACLs; only --preserve=xattr reads their attributes.
            Vec::new()
        } else {
            let p = sys::proc_fd_path(here.src_dir, Some(self.name));
            let src_path = || here.src_path(self.name);
            meta::source_xattrs(ctx.opts, XattrTarget::NoFollow(&p), &src_path, &|e| {
                ctx.report.attribute(e)
            })?
        };
        // Where cp sets a mode after making the entry, the umask takes part, never a default
        // ACL: that one only acts through the kernel at creation.
        let process = ctx.process;
        let apply = Apply::for_new(
            ctx.opts,
            &process,
            meta,
            here.dst.setgid,
            here.dst.default_acl,
            (!symlink).then(|| made_perm(ctx, meta) & !process.umask),
        );
        let dst = Dst::At {
            dir: here.dst_dir,
            name: made,
            symlink,
        };
        if let Err(e) = apply.run(dst, &xattrs, &dst_path, &|e| ctx.report.attribute(e)) {
            if temp.is_some() {
                let _ = sys::unlink(here.dst_dir, made, false);
            }
            return Err(e);
        }
        if let Some((t, backup)) = &temp {
            commit(ctx, here, t, self.dst_name, false, *backup)
                .map_err(|e| self.refused_removal(e))?;
        }
        first_done(first, here, self.dst_name);
        here.made();
        ctx.report
            .copied(|| here.src_path(self.name), dst_path, self.kind, None);
        Ok(())
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
            let e = looked_first(here, dst_name, e);
            ctx.report
                .entry_failed(|| here.src_path(name), || here.dst_path(dst_name), e);
        }
        return Ok(());
    }
    // cp reads FIFOs and devices as files unless it copies recursively, and then too with
    // --copy-contents; a socket, which cannot be opened, then fails (ENXIO).
    let as_regular = !ctx.opts.recursive || ctx.opts.copy_contents;
    let result = match meta.map(|m| m.file_type()) {
        Some(sys::S_IFSOCK) if as_regular => socket_contents(
            ctx,
            here,
            buf,
            (name, dst_name),
            &meta.expect("stat"),
            follow,
        ),
        Some(sys::S_IFIFO | sys::S_IFCHR | sys::S_IFBLK) if as_regular => {
            copy_contents(ctx, here, buf, (name, dst_name), follow).map(|_| ())
        }
        None | Some(sys::S_IFREG) => {
            match copy_regular(ctx, here, buf, (name, dst_name), follow) {
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
        let e = looked_first(here, dst_name, e);
        ctx.report
            .entry_failed(|| here.src_path(name), || here.dst_path(dst_name), e);
    }
    Ok(())
}

/// Whether cp took this root's destination to be new (see `Root::taken_new`): it makes it
/// without looking at what is there.
fn taken_new(here: &Here<'_>) -> bool {
    matches!(here.loc, super::context::Loc::Root(_)) && here.root.is_some_and(|r| r.taken_new)
}

/// cp looks at a destination before it makes it: in a directory it may not search, that
/// look fails first ("cannot stat"), not the making. Looked at again only on such a failure.
pub(crate) fn looked_first(here: &Here<'_>, dst_name: &CStr, e: Error) -> Error {
    let makes = matches!(
        e.op,
        Op::Create | Op::CreateDir | Op::MakeFifo | Op::MakeNode | Op::Symlink | Op::Link
    );
    // A root cp took to be new (`--parents`) it makes without that look.
    if !makes || taken_new(here) || e.errno() != Some(libc::EACCES) {
        return e;
    }
    match sys::stat_at(here.dst_dir, dst_name, false) {
        Err(Errno::ACCESS) => Error::sys(Op::Stat, here.dst_path(dst_name), Errno::ACCESS),
        _ => e,
    }
}

/// A socket read as a file, which cannot be opened (ENXIO). cp looks at an existing
/// destination before it opens the source: `-n`, `-u` or a "no" to `-i` leave it without a
/// word, and where cp removes it before it copies (under `-P`), it is gone before the failure.
fn socket_contents(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    buf: &mut IoBuf,
    names: (&CStr, &CStr),
    meta: &Meta,
    follow: bool,
) -> Result<(), Error> {
    let (name, dst_name) = names;
    if let Ok(d) = sys::stat_at(here.dst_dir, dst_name, false) {
        // cp looks through a destination symlink as for the regular file it reads the
        // socket as (unless it removes or backs up what is there): a dangling one is nothing
        // to skip or ask about.
        let fresh = ctx.opts.remove_destination || ctx.opts.backup.is_some();
        let seen = if d.is_symlink() && !fresh {
            as_file(*meta)
        } else {
            *meta
        };
        match decide_for_unopened(ctx, here, name, dst_name, (&seen, true), &d) {
            Ok(Decision::Skip) => {
                ctx.report
                    .skipped(|| here.src_path(name), || here.dst_path(dst_name));
                return Ok(());
            }
            // cp puts the destination aside first, and the source's name, leading through
            // it, then finds nothing; mimeo leaves the way to a source alone, as for a file.
            Ok(Decision::Recreate)
                if d.is_symlink()
                    && fresh
                    && through::source_through_destination(here, name, dst_name) =>
            {
                return Err(Error::os(Op::Open, here.src_path(name), libc::ENOENT));
            }
            // The open fails next: what cp does to the destination first stays done.
            Ok(_) => before_failed_read(ctx, here, dst_name, meta, &d)?,
            // With --attributes-only cp would open it as a file all the same.
            Err(e) if ctx.opts.attributes_only && e.op == Op::MakeNode => {}
            // cp opens the source before it opens or makes the destination: that fails first.
            Err(e) if e.op == Op::Create => {}
            Err(e) => return Err(e),
        }
    }
    copy_contents(ctx, here, buf, names, follow).map(|_| ())
}

/// Whether the entry `dst_name` of `here` is the destination directory of a root named after
/// `here`'s, which mimeo made before any walk started and cp only when it gets to that root
/// (one that was there already is not). Asked only where a link failed or was refused.
fn made_by_a_later_root(ctx: &Ctx<'_>, here: &Here<'_>, dst_name: &CStr) -> bool {
    let super::context::Loc::Below(root, _) = here.loc else {
        return false;
    };
    let Ok(d) = sys::stat_at(here.dst_dir, dst_name, false) else {
        return false;
    };
    let later = ctx.roots.iter().skip(root as usize + 1);
    d.is_dir()
        && later
            .filter(|r| r.made.load(std::sync::atomic::Ordering::Relaxed))
            .filter_map(|r| r.dirs.as_ref())
            .any(|(_, dst)| sys::fstat(dst.as_fd()).is_ok_and(|m| m.id() == d.id()))
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
    // cp hard-links what a symlink points to where it follows it (-L, the default of -l, or
    // a command-line operand under -H); one below an operand under -H is linked itself.
    let through = kind == LinkInstead::Hard
        && (ctx.opts.dereference == Dereference::Always
            || follow && ctx.opts.dereference != Dereference::Never);
    let meta = match meta {
        Some(m) if !(through && m.is_symlink()) => m,
        _ => sys::stat_at(here.src_dir, name, follow || through)
            .map_err(|e| stat_error(src_path(), e))?,
    };
    // With --preserve=links, cp hard-links a later member of a group to the symlink it made
    // for the first, before anything else.
    let (first, target) = match kind {
        LinkInstead::Symbolic => {
            let first = match link_or_claim(ctx, here, name, dst_name, &meta)? {
                LinkStep::Done => return Ok(()),
                LinkStep::Copy(first) => first,
            };
            match symlink_target(here, name, dst_name) {
                Ok(target) => (first, Some(target)),
                Err(e) => return relative_refused(ctx, here, (name, dst_name), &meta, first, e),
            }
        }
        LinkInstead::Hard => (None, None),
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
    // cp names what the link would point to.
    let failed = |e: Errno| Error::sys(op, dst_path(), e).from_source(src_path());
    match make(dst_name) {
        Ok(()) => {}
        // Onto a later root's directory, made before cp would make it: the link the kernel
        // refuses fails as it does onto nothing.
        Err(Errno::EXIST)
            if kernel_refuses_link(ctx.opts, &ctx.process, &meta)
                && made_by_a_later_root(ctx, here, dst_name) =>
        {
            return Err(failed(Errno::PERM));
        }
        // One cp took to be new (--parents) it links without a look: the link fails.
        Err(Errno::EXIST) if taken_new(here) => return Err(failed(Errno::EXIST)),
        Err(Errno::EXIST) => {
            if !link_over(ctx, here, (name, dst_name), &meta, through, &make, &failed)? {
                // Skipped as up to date under -u: the group's copy, as a copy's would be.
                first_skipped(ctx, first, here, (name, dst_name), &meta);
                return Ok(());
            }
        }
        Err(e) => return Err(failed(e)),
    }
    first_done(first, here, dst_name);
    here.made();
    if kind == LinkInstead::Symbolic {
        link_metadata(ctx, here, name, dst_name, &meta)?;
    }
    ctx.report.copied(src_path, dst_path, entry, None);
    Ok(())
}

/// [`link_entry`] onto the existing entry at `dst_name`: decides about it and links over it
/// (by a temporary name renamed over it). Returns false where the entry is kept (skipped).
fn link_over(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    (name, dst_name): (&CStr, &CStr),
    meta: &Meta,
    through: bool,
    make: &dyn Fn(&CStr) -> Result<(), Errno>,
    failed: &dyn Fn(Errno) -> Error,
) -> Result<bool, Error> {
    let src_path = || here.src_path(name);
    let dst_path = || here.dst_path(dst_name);
    let (decision, d) = decide_at(ctx, here, name, dst_name, (meta, false))?;
    if decision == Decision::Skip {
        ctx.report.skipped(src_path, dst_path);
        return Ok(false);
    }
    // A backup or --remove-destination puts the destination aside first: a link made
    // through it finds nothing (see `through`; nothing is renamed or removed, so the
    // way to the source stays). Under -f alone cp links to a temporary name and
    // renames it over the destination, which is there all along.
    let aside = ctx.opts.backup.is_some() || ctx.opts.remove_destination;
    let via_dst = || through::source_through_destination(here, name, dst_name);
    if through && aside && decision == Decision::Recreate && d.is_symlink() && via_dst() {
        // -u: what cp's rule keeps (not older) it skips first, as for a copy.
        if ctx.opts.overwrite == Overwrite::Update && d.mtime >= meta.mtime {
            ctx.report.skipped(src_path, dst_path);
            return Ok(false);
        }
        return Err(failed(Errno::NOENT));
    }
    let backup = ctx.opts.backup.is_some();
    let t = match crash::with_temp(here.dst_prefix(), make) {
        Ok(((), t)) => t,
        Err(e) => {
            if let Some(b) = backup_fails_first(ctx, here, dst_name, backup, e) {
                return Err(Error::sys(Op::Backup, dst_path(), b));
            }
            // Where cp removes the destination before it links, a failed link
            // leaves it removed.
            before_failed_copy(ctx, here, dst_name, meta, &d)?;
            return Err(failed(e));
        }
    };
    // A rename refused (a sticky directory, an immutable entry) is cp's: its removal
    // first where it removes the destination first, else its own rename of the link
    // made under a temporary name (force_linkat, force_symlinkat).
    commit(ctx, here, &t, dst_name, false, backup).map_err(|e| {
        let refused = e.op == Op::Rename && e.errno() == Some(libc::EPERM);
        refused_removal(ctx, here, dst_name, meta, &d, &e)
            .unwrap_or_else(|| if refused { failed(Errno::PERM) } else { e })
    })?;
    // A hard link renamed over another link of its inode leaves the temporary.
    let _ = sys::unlink(here.dst_dir, &t, false);
    Ok(true)
}

/// What cp gives a symlink it made for `-s`: under -p the source's times, and with
/// `--preserve=xattr` the source's xattrs (which a symlink takes only as root, and not the
/// `user.*` ones: cp names those failures as where it copies them), and nothing else of it:
/// the link itself, never what it points to.
fn link_metadata(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<(), Error> {
    let dst_path = || here.dst_path(dst_name);
    if ctx.opts.preserve.timestamps {
        sys::lutimens_at(here.dst_dir, dst_name, meta.atime, meta.mtime)
            .map_err(|e| Error::sys(Op::SetTimes, dst_path(), e))?;
    }
    if !ctx.opts.preserve.xattr {
        return Ok(());
    }
    let named = |e| ctx.report.attribute(e);
    let src = sys::proc_fd_path(here.src_dir, Some(name));
    let src_path = || here.src_path(name);
    let xattrs = meta::link_xattrs(ctx.opts, XattrTarget::NoFollow(&src), &src_path, &named)?;
    let dst = Dst::At {
        dir: here.dst_dir,
        name: dst_name,
        symlink: true,
    };
    meta::set_xattrs(
        ctx.opts,
        &ctx.process,
        dst,
        (&[], &xattrs),
        &dst_path,
        &named,
    )
}

/// `-s` where a relative link cannot be made (`e`): cp looks at an existing destination
/// first, so a directory there, the same file, `-n`, `-u` or a "no" to `-i` come before it;
/// a link that would fail on what is there does not, but a backup that cannot be made does.
/// Where cp removes the destination before it makes the link, it is gone before the failure
/// too.
fn relative_refused(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    (name, dst_name): (&CStr, &CStr),
    meta: &Meta,
    first: Option<FirstCopy<'_>>,
    e: Error,
) -> Result<(), Error> {
    // A later root's directory there, made before cp would make it: cp finds nothing there;
    // nor does it look where it took the destination to be new.
    if taken_new(here)
        || sys::stat_at(here.dst_dir, dst_name, false).is_err()
        || made_by_a_later_root(ctx, here, dst_name)
    {
        return Err(e);
    }
    match decide_at(ctx, here, name, dst_name, (meta, false)) {
        Ok((Decision::Skip, _)) => {
            // Skipped as up to date under -u: the group's copy, as a copy's would be.
            first_skipped(ctx, first, here, (name, dst_name), meta);
            ctx.report
                .skipped(|| here.src_path(name), || here.dst_path(dst_name));
            Ok(())
        }
        Err(first) if !matches!(first.cause, Cause::Refused(Refusal::LinkExists { .. })) => {
            Err(first)
        }
        // cp renames the old entry to its backup name before it looks at the link.
        Ok((Decision::Recreate, _)) if ctx.opts.backup.is_some() => {
            Err(backup_refused(ctx, here, dst_name).unwrap_or(e))
        }
        Ok((_, d)) => {
            before_failed_copy(ctx, here, dst_name, meta, &d)?;
            Err(e)
        }
        Err(_) => Err(e),
    }
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
