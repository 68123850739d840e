//! The steps every kind of entry shares to be put in place: the hard-link groups' claim (or a
//! link to the group's copy), the one overwrite decision about an existing destination, and
//! the commit of a finished temporary over it.

use super::context::{Ctx, Here, Loc, join};
use super::through;
use crate::data::copy::DataError;
use crate::options::{Backup, Dereference, Overwrite};
use crate::place::decide::{
    Conflict, Decision, Lookups, cp_skips_as_not_older, decide, removed_first, symlink_removed,
    unopened_removed,
};
use crate::place::links::{FirstCopy, LinkClaim, LinkLoc, Sighting};
use crate::place::{backup, crash};
use crate::report::{EntryKind, Error, Op};
use crate::sys::{self, Errno, Meta};
use rustix::fd::{AsFd, BorrowedFd};
use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;

/// cp 9.1 finds what it made by the destination's name below the target directory, but
/// compares directories of such names from the working directory (gnulib's `same_name`, in
/// its set of made files): under `--parents` that is the source's path less its leading
/// slashes, and where that directory is not there (an absolute source), cp stops at the
/// source that meets its own copy with only the directory's name and why.
fn made_dir_gone(ctx: &Ctx<'_>, here: &Here<'_>) -> Option<Error> {
    let (Loc::Root(_), Some(root)) = (here.loc, here.root) else {
        return None;
    };
    if !ctx.opts.parents {
        return None;
    }
    let rel = root.src_path.as_os_str().as_encoded_bytes();
    let rel = &rel[rel.iter().position(|&b| b != b'/')?..];
    let dir = match rel.iter().rposition(|&b| b == b'/') {
        Some(end) => &rel[..end],
        None => return None,
    };
    let err = sys::stat_at(sys::CWD, &sys::cstring(dir), false).err()?;
    let dir = std::path::Path::new(std::ffi::OsStr::from_bytes(dir));
    Some(Error::sys(Op::StatMadeDir, dir, err))
}

/// Asks the one overwrite decision about the existing destination `d` of `here/dst_name`,
/// with the `-i` question where the decision comes to it. `read_node`: `src` is a FIFO or
/// device node given as the regular file it is read as.
pub(super) fn decide_existing(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    src: (&Meta, bool),
    d: &Meta,
) -> Result<Decision, Error> {
    decide_existing_as(ctx, here, (name, dst_name), src, d, true)
}

/// [`decide_existing`] for a source that could not be opened: cp, which opens the source
/// before the destination, never reaches what it removes after a failed open of the
/// destination (its -v "removed" line there).
pub(super) fn decide_for_unopened(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    src: (&Meta, bool),
    d: &Meta,
) -> Result<Decision, Error> {
    decide_existing_as(ctx, here, (name, dst_name), src, d, false)
}

fn decide_existing_as(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    (name, dst_name): (&CStr, &CStr),
    (src, read_node): (&Meta, bool),
    d: &Meta,
    source_opened: bool,
) -> Result<Decision, Error> {
    let ask = || {
        ctx.report
            .confirm_overwrite(&here.src_path(name), &here.dst_path(dst_name))
    };
    let writable = || sys::may_write(here.dst_dir, dst_name);
    let backup_is_source = || {
        let Some(backup) = &ctx.opts.backup else {
            return false;
        };
        backup::is_source(name.to_bytes(), src, here.dst_dir, dst_name, backup)
    };
    let changeable =
        || sys::may_change_dir(here.dst_dir).is_ok() && !sticky_keeps(ctx, here, d.uid);
    let mut rules = ctx.rules(here, &writable);
    rules.ask = Some(&ask);
    rules.backup_is_source = Some(&backup_is_source);
    rules.changeable = Some(&changeable);
    rules.read_node = read_node;
    let look = Lookups {
        src: &|follow| sys::stat_at(here.src_dir, name, follow).ok(),
        dst_target: &|| sys::stat_at(here.dst_dir, dst_name, true),
        same_entry: &|| here.same_entry(name, dst_name),
    };
    let decision = decide(&rules, src, Some(d), &look);
    match decision {
        Decision::Refuse(c @ Conflict::JustCreated { .. }) => Err(made_dir_gone(ctx, here)
            .unwrap_or_else(|| c.error(here.src_path(name), here.dst_path(dst_name)))),
        Decision::Refuse(c) => Err(c.error(here.src_path(name), here.dst_path(dst_name))),
        Decision::Skip => Ok(Decision::Skip),
        other => {
            if other == Decision::Recreate {
                slashed_backup(ctx, here, dst_name)?;
            }
            // In a directory the user may not change, cp's removal fails ("cannot remove").
            if ctx.report.wants_entries() {
                let path = || here.dst_path(dst_name);
                let after_open =
                    || unopened_removed(&rules, src, d) || symlink_removed(&rules, src, d, &look);
                // A symlink the source is reached through is kept (a run never changes a
                // source): no "removed" for it.
                let kept =
                    || d.is_symlink() && through::source_through_destination(here, name, dst_name);
                if removed_first(&rules, src, d) {
                    if changeable() && !kept() {
                        ctx.report.removed(path);
                    }
                } else if source_opened && after_open() && changeable() {
                    ctx.report.removed_after_open(path);
                }
            }
            Ok(other)
        }
    }
}

/// A simple-backup suffix ending in `/` (`-S s/`): cp's rename of the old entry to that name
/// fails (ENOTDIR for a non-directory) before it makes anything, so it fails here, before a
/// temporary is made and the directory changed. Asked only for such a suffix; a read-only
/// mount, which fails the rename first, is left to the temporary's failure.
fn slashed_backup(ctx: &Ctx<'_>, here: &Here<'_>, dst_name: &CStr) -> Result<(), Error> {
    let slashed = match &ctx.opts.backup {
        Some(Backup::Simple { suffix } | Backup::Existing { suffix }) => {
            suffix.as_bytes().ends_with(b"/")
        }
        _ => false,
    };
    if !slashed || sys::may_change_dir(here.dst_dir) == Err(Errno::ROFS) {
        return Ok(());
    }
    match backup_name_refused(ctx, here, dst_name) {
        Some(e) => Err(Error::sys(Op::Backup, here.dst_path(dst_name), e)),
        None => Ok(()),
    }
}

/// [`decide_existing`] for a destination not looked at yet; also returns what is there.
pub(super) fn decide_at(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    src: (&Meta, bool),
) -> Result<(Decision, Meta), Error> {
    let d = sys::stat_at(here.dst_dir, dst_name, false)
        .map_err(|e| Error::sys(Op::Stat, here.dst_path(dst_name), e))?;
    Ok((decide_existing(ctx, here, name, dst_name, src, &d)?, d))
}

/// The outcome of looking a multiply-linked source up in the link map.
pub(super) enum LinkStep<'a> {
    /// Linked to an earlier copy (or left alone): nothing more to do.
    Done,
    /// Copy it; `Some` when it is a group's first copy and others will link to it.
    Copy(Option<FirstCopy<'a>>),
}

/// How the link map is to see `meta` (an entry at `here`), and whether only where -u skips
/// it; None when it is not remembered. Under -L and -H, cp links every copy of one file
/// reached more than once: through symlinks, or named more than once. Under -L every file is
/// remembered for the whole run (it may sit below a symlinked directory met later); under -H
/// the operands are, and others only when they have more than one link.
fn sighting(ctx: &Ctx<'_>, here: &Here<'_>, meta: &Meta) -> Option<(Sighting, bool)> {
    let deref = ctx.opts.dereference;
    let pinned = deref != Dereference::Never
        && match here.loc {
            Loc::Root(_) => true,
            // Any file may be met again below a symlink to one of its directories, before or
            // after it is met directly: cp remembers every file under -L.
            _ => deref == Dereference::Always,
        };
    // A path met twice (roots that overlap) would count as two of a file's links; under -L,
    // cp remembers every file, so a file met again that way is linked too.
    let again = ctx.overlapping_roots && (meta.nlink >= 2 || deref == Dereference::Always);
    // Under -u, cp remembers every file it skips as up to date; a file named again (with
    // backups, which cp does not take as named twice) is linked to that copy, as is one met
    // again inside an overlapping root's walk (which cp never takes as named twice), before
    // or after it is named. One it copies it remembers only as it would without -u.
    let skipped_again = ctx.opts.overwrite == Overwrite::Update
        && ((matches!(here.loc, Loc::Root(_)) && ctx.opts.backup.is_some())
            || ctx.overlapping_roots);
    if !ctx.opts.preserve.links {
        // Without --preserve=links cp remembers only what -u skips: a file named again, or
        // one of a multiply-linked file's names, to which its other names skipped are linked.
        if skipped_again {
            return Some((Sighting::Pinned, true));
        }
        let update = ctx.opts.overwrite == Overwrite::Update;
        return (update && meta.nlink >= 2).then_some((Sighting::Link(meta.nlink as u64), true));
    }
    if pinned || again {
        Some((Sighting::Pinned, false))
    } else if skipped_again {
        let only_skipped = meta.nlink < 2 && deref != Dereference::Always;
        Some((Sighting::Pinned, only_skipped))
    } else if meta.nlink >= 2 {
        Some((Sighting::Link(meta.nlink as u64), false))
    } else {
        None
    }
}

/// Whether `loc` is this entry's destination: `d/f` met again as `d/./f`.
fn same_entry(ctx: &Ctx<'_>, here: &Here<'_>, loc: &LinkLoc, dst_name: &CStr) -> bool {
    if loc.name != dst_name.to_bytes() {
        return false;
    }
    if here.holds(loc) {
        return true;
    }
    let dir_id = |fd: BorrowedFd<'_>| sys::fstat(fd).map(|m| m.id()).ok();
    let there = match ctx.open_loc_dir(loc) {
        Ok(Some(fd)) => dir_id(fd.as_fd()),
        Ok(None) => dir_id(ctx.root(loc.root).dst_parent.as_fd()),
        Err(_) => None,
    };
    there.is_some() && there == dir_id(here.dst_dir)
}

/// With `--preserve=links`, links to an earlier copy of the same inode, or claims the inode
/// (without it, only a root -u may skip, see [`sighting`]).
pub(super) fn link_or_claim<'a>(
    ctx: &'a Ctx<'_>,
    here: &Here<'_>,
    src_name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<LinkStep<'a>, Error> {
    if here.root.is_none() || meta.is_dir() {
        // A file copied on its own (`copy_file`) has no group to join.
        return Ok(LinkStep::Copy(None));
    }
    let Some((how, only_skipped)) = sighting(ctx, here, meta) else {
        return Ok(LinkStep::Copy(None));
    };
    let groups = ctx.link_groups();
    let loc = match groups.claim(meta.id(), how) {
        None => return Ok(LinkStep::Copy(None)),
        Some(LinkClaim::First) => {
            let first = FirstCopy::new(groups, meta.id());
            // -i's "no" skips too, which cp does not remember: where -u will not skip it,
            // it is not the group's copy.
            if only_skipped
                && ctx.opts.interactive
                && !up_to_date(ctx, here, src_name, dst_name, meta)
            {
                return Ok(LinkStep::Copy(None));
            }
            let first = if only_skipped {
                first.if_skipped()
            } else {
                first
            };
            return Ok(LinkStep::Copy(Some(first)));
        }
        Some(LinkClaim::LinkTo(loc)) => loc,
    };
    // Without --preserve=links, or for a source cp remembers only where -u skips it, cp
    // links a source to what it skipped before only where -u skips this one too (the same
    // source met again onto that very destination, by whatever names, is linked onto itself);
    // one -u does not skip is copied on its own.
    let onto_itself = || same_entry(ctx, here, &loc, dst_name);
    if (!ctx.opts.preserve.links || only_skipped)
        && !onto_itself()
        && !up_to_date(ctx, here, src_name, dst_name, meta)
    {
        return Ok(LinkStep::Copy(None));
    }
    let linked = link_to_group(ctx, here, src_name, dst_name, meta, &loc)?;
    if linked != Linked::Skipped {
        here.made_as_link();
    }
    if linked == Linked::Told {
        ctx.report.copied(
            || here.src_path(src_name),
            || here.dst_path(dst_name),
            EntryKind::HardLink,
            None,
        );
    }
    Ok(LinkStep::Done)
}

/// Whether -u skips `meta` onto `here/dst_name` as up to date, asked without -i's question or
/// any -v line (those come with the copy's own decision).
fn up_to_date(ctx: &Ctx<'_>, here: &Here<'_>, name: &CStr, dst_name: &CStr, meta: &Meta) -> bool {
    let Ok(d) = sys::stat_at(here.dst_dir, dst_name, false) else {
        return false;
    };
    let writable = || sys::may_write(here.dst_dir, dst_name);
    let changeable =
        || sys::may_change_dir(here.dst_dir).is_ok() && !sticky_keeps(ctx, here, d.uid);
    let mut rules = ctx.rules(here, &writable);
    rules.changeable = Some(&changeable);
    let look = Lookups {
        src: &|follow| sys::stat_at(here.src_dir, name, follow).ok(),
        dst_target: &|| sys::stat_at(here.dst_dir, dst_name, true),
        same_entry: &|| here.same_entry(name, dst_name),
    };
    decide(&rules, meta, Some(&d), &look) == Decision::Skip
}

/// What [`link_to_group`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linked {
    /// Made the link, which -v tells as a copy.
    Told,
    /// Made the link over an entry -u skipped as up to date: cp links it quietly, saying
    /// only "removed".
    Quietly,
    /// Left the entry as the overwrite decision says.
    Skipped,
}

/// Links `dst_name` to the group's copy at `loc`, over an existing entry as the overwrite
/// decision says.
fn link_to_group(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    src_name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
    loc: &LinkLoc,
) -> Result<Linked, Error> {
    let loc_name = sys::cstring(&loc.name);
    let dst_path = || here.dst_path(dst_name);
    // cp names the copy it links to: "cannot create hard link 'd/b' to 'd/a'".
    let earlier = || match &loc.dir {
        Some(rel) => join(&ctx.root(loc.root).dst_path, rel, &loc_name),
        None => ctx.root(loc.root).dst_path.clone(),
    };
    let failed = |e: Errno| Error::sys(Op::Link, dst_path(), e).from_source(earlier());
    let other = if here.holds(loc) {
        None
    } else {
        Some(ctx.open_loc_dir(loc).map_err(failed)?)
    };
    let from: BorrowedFd<'_> = match &other {
        Some(Some(fd)) => fd.as_fd(),
        Some(None) => ctx.root(loc.root).dst_parent.as_fd(),
        None => here.dst_dir,
    };
    // cp's link follows the copy where cp follows symlinks (-L, or -H for a command-line
    // source): a copy that -s made a symlink gives the file it leads to, the source.
    let follows = match ctx.opts.dereference {
        Dereference::Always => true,
        Dereference::CommandLine => matches!(here.loc, Loc::Root(_)),
        Dereference::Never => false,
    };
    let link_at = |name: &CStr| {
        if follows {
            sys::link_following(from, &loc_name, here.dst_dir, name)
        } else {
            sys::link(from, &loc_name, here.dst_dir, name)
        }
    };
    match link_at(dst_name) {
        Ok(()) => Ok(Linked::Told),
        Err(Errno::EXIST) => {
            let d = sys::stat_at(here.dst_dir, dst_name, false)
                .map_err(|e| Error::sys(Op::Stat, dst_path(), e))?;
            let copy = sys::stat_at(from, &loc_name, false);
            let (decision, relink) = member_decision(
                ctx,
                here,
                (src_name, dst_name),
                meta,
                &d,
                copy.as_ref().ok(),
            )?;
            if relink {
                // cp's link to the copy goes by a temporary renamed over the entry: a copy
                // that is a directory (a source -u skipped onto one, named again with a
                // backup, which cp does not take as named twice) cannot be linked at all,
                // and nothing is renamed over a directory.
                // Either way without a -v line for the entry, as cp's quiet link.
                if copy.is_ok_and(|c| c.is_dir()) {
                    return Err(failed(Errno::PERM).untold());
                }
                if d.is_dir() {
                    return Err(failed(Errno::ISDIR).untold());
                }
            }
            if decision == Decision::Skip && !relink {
                ctx.report.skipped(|| here.src_path(src_name), dst_path);
                return Ok(Linked::Skipped);
            }
            if decision != Decision::Skip && own_copy(ctx, here, loc, dst_name, from, meta, &d) {
                before_failed_copy(ctx, here, dst_name, meta, &d)?;
                here.emptied();
                return Err(failed(Errno::NOENT));
            }
            // cp links an entry -u skipped without its -v line, failing or not.
            let told = |e: Error| if relink { e.untold() } else { e };
            let ((), temp) =
                crash::with_temp(here.dst_prefix(), link_at).map_err(|e| told(failed(e)))?;
            let backup = decision == Decision::Recreate;
            commit(ctx, here, &temp, dst_name, false, backup).map_err(told)?;
            // Renaming onto another link of the same inode does nothing: drop the temporary.
            let _ = sys::unlink(here.dst_dir, &temp, false);
            if relink {
                ctx.report.removed(dst_path);
                return Ok(Linked::Quietly);
            }
            // cp's link over the entry (force_linkat) says "removed" after the copy's line,
            // even where the entry was a link of the same file; unless cp removed it first,
            // or renamed it to its backup name (then the link is made where nothing is).
            if !backup && !removed_first(&ctx.rules(here, &|| true), meta, &d) {
                ctx.report.removed_after_open(dst_path);
            }
            Ok(Linked::Told)
        }
        Err(e) => Err(failed(e)),
    }
}

/// What to do with the entry `d` at `dst_name` that a member of a group is to be linked over
/// (the group's copy is `copy`), and whether that is cp's relink of a member -u skips as up
/// to date: under -u, cp links such a member to the group's copy all the same (force_linkat,
/// a temporary renamed over the entry), also where the entry is a link of that copy already
/// (a rename that does nothing), and says only "removed" under -v.
fn member_decision(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    (src_name, dst_name): (&CStr, &CStr),
    meta: &Meta,
    d: &Meta,
    copy: Option<&Meta>,
) -> Result<(Decision, bool), Error> {
    let decision = match decide_existing(ctx, here, src_name, dst_name, (meta, false), d) {
        // The call that makes a FIFO or node finds the entry there (-L): cp never makes that
        // call for a group member, it links over the entry (force_linkat).
        Err(e) if made_there(&e) => Decision::Replace,
        other => other?,
    };
    // The group's copy itself, which the first member left as cp's -u left it (a source
    // mimeo could not read, skipped as not older whatever its size): cp's -u skips this
    // member too, and relinks it.
    let own_entry = copy.is_some_and(|c| c.id() == d.id());
    let decision = if own_entry && cp_skips_as_not_older(ctx.opts, meta, d) {
        Decision::Skip
    } else {
        decision
    };
    // A "no" to -i skips too, which cp does not link over.
    let declined = || ctx.opts.interactive && !up_to_date(ctx, here, src_name, dst_name, meta);
    let update = ctx.opts.overwrite == Overwrite::Update;
    let relink = update && decision == Decision::Skip && !declined();
    Ok((decision, relink))
}

/// Whether the group's copy at `loc` is the very entry `dst_name` a root is about to link
/// over, made by an earlier tree (a source named again where the tree copied it) or by an
/// earlier root (a file named twice with numbered backups, which cp does not take as named
/// twice), where cp takes the entry away first (to its backup name, or removes it): cp then
/// fails to link what is gone, and a backup is renamed back; elsewhere the link over it is
/// one to itself, which is nothing to do. (cp copies the tree first. Where the root got there
/// first, the tree's entry links to it as to any other copy: which of the group's entries the
/// tree would have copied first is not known there.) A tree named after the root (cp -a s/f
/// s/. d) is one cp copies after it, so its entry that got here first (roots run in
/// parallel) is this root's copy as cp makes it.
fn own_copy(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    loc: &LinkLoc,
    dst_name: &CStr,
    from: BorrowedFd<'_>,
    meta: &Meta,
    d: &Meta,
) -> bool {
    matches!(here.loc, Loc::Root(i) if loc.root < i)
        && (ctx.opts.backup.is_some() || removed_first(&ctx.rules(here, &|| true), meta, d))
        && loc.name == dst_name.to_bytes()
        && same_dir(from, here.dst_dir)
}

/// A rename over the old entry `d` refused (a sticky directory, an immutable entry), where
/// cp removes the destination first (`-P` with what is not a regular file,
/// `--remove-destination`): cp's removal refused, "cannot remove", before its -v line. None
/// for any other failure.
pub(super) fn refused_removal(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    dst_name: &CStr,
    src: &Meta,
    d: &Meta,
    e: &Error,
) -> Option<Error> {
    let refused = e.op == Op::Rename && e.errno() == Some(libc::EPERM);
    (refused && removed_first(&ctx.rules(here, &|| true), src, d))
        .then(|| Error::sys(Op::Remove, here.dst_path(dst_name), Errno::PERM))
}

/// Whether `e` is the failure of the call that makes a FIFO or node where an entry is.
fn made_there(e: &Error) -> bool {
    matches!(e.op, Op::MakeFifo | Op::MakeNode) && e.errno() == Some(libc::EEXIST)
}

/// Whether two directory handles are one directory.
fn same_dir(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    matches!((sys::fstat(a), sys::fstat(b)), (Ok(x), Ok(y)) if x.id() == y.id())
}

/// Records where a group's first copy now lives, for the links that follow.
pub(super) fn first_done(first: Option<FirstCopy<'_>>, here: &Here<'_>, dst_name: &CStr) {
    if let (Some(first), Some(loc)) = (first, here.link_loc(dst_name)) {
        first.done(loc, false);
    }
}

/// [`first_done`] for a group's first member that was skipped: under -u, the copy skipped
/// as up to date is the group's copy, as in cp (the members still to come are linked to it).
/// A "no" to -i is not: cp remembers nothing there, so it is asked again without the question
/// (only under -u -i, and only for a group's first member).
pub(super) fn first_skipped(
    ctx: &Ctx<'_>,
    first: Option<FirstCopy<'_>>,
    here: &Here<'_>,
    (name, dst_name): (&CStr, &CStr),
    meta: &Meta,
) {
    if ctx.opts.overwrite != Overwrite::Update {
        return;
    }
    let Some(first) = first else {
        return;
    };
    if ctx.opts.interactive && !up_to_date(ctx, here, name, dst_name, meta) {
        return;
    }
    if let Some(loc) = here.link_loc(dst_name) {
        first.done(loc, true);
    }
}

/// Moves a finished temporary over the destination name, after linking the old entry to its
/// backup name when asked (`--backup`). On failure the temporary is removed and the old
/// entry stays.
pub(super) fn commit(
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

/// Whether the sticky bit of the destination's directory keeps this process from removing
/// (or renaming over) its entry of `owner`: only that owner, the directory's, or root may.
/// A temporary is made there all the same, so this is asked where cp's removal comes first.
pub(super) fn sticky_keeps(ctx: &Ctx<'_>, here: &Here<'_>, owner: u32) -> bool {
    let euid = ctx.process.euid;
    euid != 0
        && owner != euid
        && sys::fstat(here.dst_dir).is_ok_and(|m| m.mode & sys::S_ISVTX != 0 && m.uid != euid)
}

/// Where a temporary that failed with `e` in a directory where the old entry is to be backed
/// up fails as cp's backup does, the error cp's fails with: cp renames the old entry to its
/// backup name before it makes the new one, and fails there where the directory may not be
/// written. A hard link to another user's file is refused (EPERM) before the kernel looks at
/// the directory's permissions: the directory then decides. A backup name longer than the
/// filesystem takes, or one ending in `/` for a non-directory, fails before the directory's
/// permissions (the kernel looks up the new name first), but after a read-only mount.
pub(super) fn backup_fails_first(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    dst_name: &CStr,
    backup: bool,
    e: Errno,
) -> Option<Errno> {
    if !backup || ctx.opts.backup.is_none() {
        return None;
    }
    let by_name = || backup_name_refused(ctx, here, dst_name);
    match e {
        Errno::ROFS => Some(e),
        Errno::ACCESS => by_name().or(Some(e)),
        Errno::PERM => by_name().or_else(|| sys::may_change_dir(here.dst_dir).err()),
        _ => None,
    }
}

/// How the backup of `dst_name` fails by its name alone (under `--backup`): a name longer
/// than the filesystem takes, or one ending in `/` for a non-directory; cp's rename to it fails
/// there, before the kernel checks the directory's permissions.
pub(super) fn backup_name_refused(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    dst_name: &CStr,
) -> Option<Errno> {
    let how = ctx.opts.backup.as_ref()?;
    backup::refused_by_name(here.dst_dir, dst_name, here.dst_prefix(), how)
}

/// cp renames the old entry to its backup name before it opens the source or makes a link:
/// a backup name longer than the filesystem takes, or a directory the user may not change, is
/// what fails first (in that order, as the kernel looks up the new name before it checks the
/// directory's permissions).
pub(super) fn backup_refused(ctx: &Ctx<'_>, here: &Here<'_>, dst_name: &CStr) -> Option<Error> {
    let refused = |e| Some(Error::sys(Op::Backup, here.dst_path(dst_name), e));
    ctx.opts.backup.as_ref()?;
    if let Some(e) = backup_name_refused(ctx, here, dst_name) {
        return refused(e);
    }
    sys::may_change_dir(here.dst_dir).err().and_then(refused)
}

/// What cp does to the existing non-directory `d` at `dst_name` before it makes the copy of
/// `src`, for a copy that then fails from the start (a source that cannot be opened, a link
/// that cannot be made): where cp removes the destination first (`--remove-destination`),
/// it is gone. (Under `--backup` cp renames it to its backup name and, the copy failing,
/// back, which loses an older simple backup of that name: mimeo leaves both alone.)
pub(super) fn before_failed_copy(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    dst_name: &CStr,
    src: &Meta,
    d: &Meta,
) -> Result<(), Error> {
    if !d.is_dir() && removed_first(&ctx.rules(here, &|| true), src, d) {
        sys::unlink(here.dst_dir, dst_name, false)
            .map_err(|e| Error::sys(Op::Remove, here.dst_path(dst_name), e))?;
    }
    Ok(())
}

/// `before_failed_copy` for a source cp opens to read (a regular file, or a FIFO, socket or
/// device node read as one), which then cannot be opened. cp looks at a destination symlink
/// through it there, as it would write into what it leads to (unless it removes or backs up
/// the entry anyway): a loop or a dangling one it leaves alone, and it judges the removal by
/// what the symlink leads to. `src` is the source as it is (a node, not the file it is read
/// as). Only a failed copy pays for the look.
pub(super) fn before_failed_read(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    dst_name: &CStr,
    src: &Meta,
    d: &Meta,
) -> Result<(), Error> {
    let fresh = ctx.opts.remove_destination || ctx.opts.backup.is_some();
    if !d.is_symlink() || fresh {
        return before_failed_copy(ctx, here, dst_name, src, d);
    }
    match sys::stat_at(here.dst_dir, dst_name, true) {
        Ok(t) => before_failed_copy(ctx, here, dst_name, src, &t),
        Err(_) => Ok(()),
    }
}

/// A data-path failure as an error on the side it happened on.
pub(super) fn data_error(
    e: DataError,
    src_path: impl FnOnce() -> std::path::PathBuf,
    dst_path: impl FnOnce() -> std::path::PathBuf,
) -> Error {
    match e.op {
        Op::Read => Error::sys(e.op, src_path(), e.errno),
        // cp names both files of a failed clone.
        Op::Clone => Error::sys(e.op, dst_path(), e.errno).from_source(src_path()),
        _ => Error::sys(e.op, dst_path(), e.errno),
    }
}
