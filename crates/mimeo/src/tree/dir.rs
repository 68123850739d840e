//! Directories: creating (or merging into) a destination directory, the per-directory pass,
//! shares of a large directory's entries, and the explicit completion step that applies a
//! directory's metadata after everything below it.
//!
//! A pass opens the source and destination directories by their paths below the root with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (following symlinks on the source side
//! only under `-L`), so a directory swapped for a symlink mid-run is refused rather than
//! followed, and no worker keeps more than a few descriptors open.

use super::context::{Buffers, Ctx, Here, Root, Spawn, Spawner, rel_path};
use super::entry::{Changed, copy_entry, entry_kind, looked_first};
use super::hooks::Hooked;
use super::listing::{self, Descent, Listed, Look, Want};
use super::named;
use super::roots::{open_error, stat_error};
use super::work::{
    DirDone, DirInfo, EntryType, Lineage, Stat, WorkItem, WorkKind, XattrList, join_rel,
    spawn_shares,
};
use crate::data::meta::{self, Apply, Dst, Xattrs};
use crate::options::{Dereference, Overwrite};
use crate::place::crash::{self, PartMarker};
use crate::place::decide::{Decision, Lookups, decide};
use crate::report::{EntryKind, Error, Op, Refusal, Warning};
use crate::sys::{self, DType, Errno, Meta, XattrTarget};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;

/// What [`make_dst_dir`] made or found.
pub(crate) struct MadeDir {
    /// Made by this run, not merged into.
    pub created: bool,
    /// It has the set-gid bit: new entries take its group.
    pub setgid: bool,
    /// ... of a group this process's chmod may not keep the bit for.
    pub sgid_foreign: bool,
    /// The permission bits it was made with, where they are its final ones.
    pub made_perm: Option<u32>,
}

/// Creates the destination directory `dst_dir/dst_name` for the source directory `name` of
/// `src_dir`, or merges into an existing one. Returns what it made or found, or None after
/// reporting why not (or, silently, where cp has nothing to do: `-l` onto the very directory).
pub(crate) fn make_dst_dir(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    src: Option<Meta>,
    follow: bool,
) -> Option<MadeDir> {
    let dst_path = || here.dst_path(dst_name);
    // A new directory needs no stat of its source, but for one whose mode mkdir must give.
    let src = match src {
        None if here.dst.sgid_foreign => sys::stat_at(here.src_dir, name, follow).ok(),
        src => src,
    };
    let whole = src.as_ref().and_then(|m| whole_perm(ctx, here, m));
    match sys::mkdir(here.dst_dir, dst_name, whole.unwrap_or(0o700)) {
        Ok(()) => Some(MadeDir {
            created: true,
            setgid: here.dst.setgid,
            sgid_foreign: here.dst.sgid_foreign,
            made_perm: whole.map(|perm| perm & !ctx.process.umask),
        }),
        Err(Errno::EXIST) => {
            let (decision, d) = decide_existing(ctx, here, name, dst_name, src, follow)?;
            match decision {
                Decision::Merge => {
                    let setgid = d.mode & sys::S_ISGID != 0;
                    Some(MadeDir {
                        created: false,
                        setgid,
                        sgid_foreign: setgid && !sys::chmod_keeps_sgid(d.gid),
                        made_perm: None,
                    })
                }
                // -l onto the very directory: cp's same_file_ok has nothing to do there, and
                // leaves it, what is below it included, without a word.
                Decision::Skip => None,
                Decision::Refuse(c) => {
                    ctx.report.fail(c.error(here.src_path(name), dst_path()));
                    None
                }
                other => unreachable!("a directory onto a directory is merged, not {other:?}"),
            }
        }
        Err(e) => {
            let e = looked_first(here, dst_name, Error::sys(Op::CreateDir, dst_path(), e));
            ctx.report.fail(e);
            None
        }
    }
}

/// The permission bits to make a new directory with where they are its final ones and a
/// chmod would take away the set-gid bit it inherits (see `DstFacts::sgid_foreign`): as with
/// `cp -r`, whose mkdir leaves nothing to set where no mode or owner is kept, no default ACL
/// stands in for the umask, and the source's mode has all the owner's bits and no group or
/// other write bit the umask lets through. Its owner and group are final as it is made, so
/// it may give others access at once (guarantee 4). None elsewhere: it is made owner-only.
fn whole_perm(ctx: &Ctx<'_>, here: &Here<'_>, src: &Meta) -> Option<u32> {
    let p = ctx.opts.preserve;
    let perm = src.perm() & 0o1777;
    let acl = here.dst.acl_perm.is_some() || here.dir.is_some_and(|d| d.acl_perm.is_some());
    let plain = !(p.mode || p.default_mode || p.ownership || acl);
    let settled = perm & 0o700 == 0o700 && perm & 0o022 & !ctx.process.umask == 0;
    (here.dst.sgid_foreign && plain && settled).then_some(perm)
}

/// What to do with the source directory `name` where an entry is at `dst_name` already (the
/// decision and that entry), or None after reporting why it cannot be looked at.
fn decide_existing(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    src: Option<Meta>,
    follow: bool,
) -> Option<(Decision, Meta)> {
    let dst_path = || here.dst_path(dst_name);
    let d = match sys::stat_at(here.dst_dir, dst_name, false) {
        Ok(d) => keep_directory_symlink(ctx, here, dst_name, d),
        Err(e) => {
            ctx.report.fail(Error::sys(Op::Stat, dst_path(), e));
            return None;
        }
    };
    // Only merges look at the source here; a new directory needs no stat.
    let src = match src {
        Some(m) => m,
        None => match sys::stat_at(here.src_dir, name, follow) {
            Ok(m) => m,
            Err(e) => {
                ctx.report.fail(stat_error(here.src_path(name), e));
                return None;
            }
        },
    };
    let look = Lookups {
        src: &|follow| sys::stat_at(here.src_dir, name, follow).ok(),
        dst_target: &|| sys::stat_at(here.dst_dir, dst_name, true),
        same_entry: &|| here.same_entry(name, dst_name),
    };
    let decision = decide(&ctx.rules(here, &|| true), &src, Some(&d), &look);
    Some((decision, d))
}

/// `--keep-directory-symlink`: an existing destination `d` that is a symlink to a
/// directory stands for that directory; otherwise `d` as it is.
fn keep_directory_symlink(ctx: &Ctx<'_>, here: &Here<'_>, dst_name: &CStr, d: Meta) -> Meta {
    if !(ctx.opts.keep_directory_symlink && d.is_symlink()) {
        return d;
    }
    match sys::stat_at(here.dst_dir, dst_name, true) {
        Ok(target) if target.is_dir() => target,
        _ => d,
    }
}

/// A source directory met below a root: creates its destination and returns the work item
/// of its pass, or None when there is none to run (an error, a cycle, or a `-x` mount point,
/// which is created and completed at once, as cp does).
fn subdir(
    ctx: &Ctx<'_>,
    w: &mut Buffers,
    here: &Here<'_>,
    lineage: &Lineage,
    name: &CStr,
    meta: Option<Meta>,
    descent: Descent,
) -> Option<WorkItem> {
    let super::context::Loc::Below(root, rel) = here.loc else {
        unreachable!("listed entries are below a root");
    };
    let follow = look(ctx).follow;
    if let Some(twice) = named_earlier(ctx, here, root, name, meta, follow) {
        match twice {
            Ok(warning) => ctx.report.warn(warning),
            Err(e) => ctx.report.fail(e),
        }
        return None;
    }
    if descent == Descent::Cycle {
        // cp looks at the destination first: what it may not merge into (a non-directory,
        // the source itself) is reported instead of the cycle.
        let there = sys::stat_at(here.dst_dir, name, false).is_ok();
        match there.then(|| decide_existing(ctx, here, name, name, meta, follow)) {
            Some(None) => {}
            Some(Some((Decision::Refuse(c), _))) => {
                let dst_path = here.dst_path(name);
                ctx.report.fail(c.error(here.src_path(name), dst_path));
            }
            _ => {
                let path = here.src_path(name);
                ctx.report
                    .fail(Error::refused(Op::Refuse, path, Refusal::Cycle));
            }
        }
        return None;
    }
    let made = make_dst_dir(ctx, here, name, name, meta, follow)?;
    let created = made.created;
    if let (true, Some(root)) = (created, here.root.and_then(|r| r.made_early)) {
        // An earlier root's walk names it (see `Root::made_early`).
        if let Ok(m) = sys::stat_at(here.dst_dir, name, false) {
            let src = meta.map_or((0, 0), |s| s.id());
            let mut early = ctx.early_dirs.lock().unwrap_or_else(|e| e.into_inner());
            early.insert(m.id(), (root, src));
        }
    }
    let info = DirInfo {
        created,
        dst_setgid: made.setgid,
        dst_sgid_foreign: made.sgid_foreign,
        made_perm: made.made_perm,
        suspect: false,
        // A new directory inherits its parent's default ACL; a merged one is looked at by
        // its pass.
        default_acl: created && here.dst.default_acl,
        // A new directory takes its parent's default ACL as its own.
        acl_perm: if created {
            here.dir.and_then(|d| d.acl_perm)
        } else {
            None
        },
        lineage: lineage.clone(),
    };
    let path = join_rel(rel, name.to_bytes());
    if descent == Descent::Mount {
        let m = meta.expect("stat taken under -x");
        let xattrs = dir_xattrs_at(ctx, here.src_dir, name, &|| here.src_path(name));
        let source = Some((m.into(), xattrs));
        let done = DirDone {
            root,
            path,
            info,
            source,
            xattrs_failed: false,
        };
        complete(ctx, w, done);
        return None;
    }
    Some(WorkItem {
        root,
        path,
        kind: WorkKind::Dir(info),
        stat: meta.map(Stat::from),
    })
}

/// What cp says of the directory `name` below root `root` if it is a directory root named
/// before (see [`named::met_below`]).
fn named_earlier(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    root: u32,
    name: &CStr,
    meta: Option<Meta>,
    follow: bool,
) -> Option<Result<Warning, Error>> {
    let dirs = &ctx.named.dirs;
    if !named::may_meet(ctx.opts, dirs, root) {
        return None;
    }
    let id = match meta {
        Some(m) => m.id(),
        None => sys::stat_at(here.src_dir, name, follow).ok()?.id(),
    };
    let dest = sys::fstat(here.dst_dir)
        .ok()
        .map(|p| (p.id(), name.to_bytes().to_vec()));
    let src = sys::fstat(here.src_dir)
        .ok()
        .map(|p| (p.id(), name.to_bytes().to_vec()));
    let r = ctx.root(root);
    let paths = (r.src_path.as_path(), r.dst_path.as_path());
    named::met_below(ctx.opts, dirs, (root, paths), (id, src), dest, || {
        here.dst_path(name)
    })
}

/// A directory's xattrs, read through a descriptor of its own.
fn dir_xattrs_at(
    ctx: &Ctx<'_>,
    dir: BorrowedFd<'_>,
    name: &CStr,
    path: &dyn Fn() -> std::path::PathBuf,
) -> XattrList {
    if !ctx.opts.preserve.xattr && !ctx.opts.preserve.mode {
        return Vec::new();
    }
    match sys::open_dir(dir, name, false) {
        Ok(fd) => source_xattrs(ctx, XattrTarget::Fd(fd.as_fd()), path),
        // One that cannot be opened is read by name, as cp reads every directory's: cp names
        // the xattrs it may not read (a directory its owner may not list).
        Err(_) => {
            let at = sys::proc_fd_path(dir, Some(name));
            // One reached through a symlink under -L: the symlink's xattrs, its own ACLs.
            let link =
                look(ctx).follow && sys::stat_at(dir, name, false).is_ok_and(|m| m.is_symlink());
            match link.then(|| sys::open_dir(dir, name, true).ok()).flatten() {
                Some(fd) => linked_xattrs(ctx, fd.as_fd(), &at, path),
                None => source_xattrs(ctx, XattrTarget::NoFollow(&at), path),
            }
        }
    }
}

/// The xattrs to give the copy of a source directory. A failure that fails the directory is
/// reported now: the directory is still made, and filled, as cp does.
fn source_xattrs(
    ctx: &Ctx<'_>,
    src: XattrTarget<'_>,
    path: &dyn Fn() -> std::path::PathBuf,
) -> XattrList {
    read_xattrs(ctx, src, path).0
}

/// [`source_xattrs`], and whether any could not be read (each reported).
fn read_xattrs(
    ctx: &Ctx<'_>,
    src: XattrTarget<'_>,
    path: &dyn Fn() -> std::path::PathBuf,
) -> (XattrList, bool) {
    let failed = std::cell::Cell::new(false);
    let named = |e| {
        failed.set(true);
        ctx.report.attribute(e)
    };
    match meta::source_xattrs(ctx.opts, src, path, &named) {
        Ok(xattrs) => (plain(xattrs), failed.get()),
        Err(e) => {
            ctx.report.fail(e);
            (Vec::new(), true)
        }
    }
}

fn plain(xattrs: Xattrs) -> XattrList {
    xattrs
        .into_iter()
        .map(|(n, v)| (n.into_bytes(), v))
        .collect()
}

/// How the copy looks at what it lists: symlinks and special files are made from their
/// metadata; a regular file is looked at once opened, a directory by its own pass.
fn look(ctx: &Ctx<'_>) -> Look {
    Look {
        follow: ctx.opts.dereference == Dereference::Always,
        one_file_system: ctx.opts.one_file_system,
        want: Want::Specials,
    }
}

/// Opens the source directory `rel` below a root: never through a symlink, except under
/// `-L`. A failure is reported; one we may not list as cp reports it.
fn open_src(ctx: &Ctx<'_>, root: &Root, rel: &[u8]) -> Option<OwnedFd> {
    let (anchor, _) = root.dirs();
    let opened = match look(ctx).open(anchor, rel) {
        // The root itself, which we may read but not search for ".".
        Err(Errno::ACCESS) if rel.is_empty() => sys::reopen_dir(anchor),
        other => other,
    };
    opened
        .map_err(|e| {
            let path = rel_path(&root.src_path, rel);
            // cp cannot list it: "cannot access".
            let error = if e == Errno::ACCESS {
                Error::sys(Op::ReadDir, path, e)
            } else {
                open_error(path, e)
            };
            ctx.report.fail(error)
        })
        .ok()
}

/// The metadata and xattrs of the source directory `rel` below a root that could not be
/// opened (no read permission), looked at from its parent as `open_src` would reach it. Its
/// xattrs are read by name, as cp reads them: those it may not read are named (and said to
/// have failed).
fn unopened_source(
    ctx: &Ctx<'_>,
    root: &Root,
    rel: &[u8],
    path: &dyn Fn() -> std::path::PathBuf,
) -> Option<(Stat, (XattrList, bool))> {
    let (anchor, _) = root.dirs();
    if rel.is_empty() {
        // A root we may not list: its anchor is a handle that needs no permission.
        let m = sys::fstat(anchor).ok().filter(|m| m.is_dir())?;
        // cp reads them by the operand's name: a symlink's own where -H or -L followed it
        // (not where a trailing slash did, which the name follows too).
        let slash =
            std::os::unix::ffi::OsStrExt::as_bytes(root.src_path.as_os_str()).ends_with(b"/");
        let link = !slash
            && sys::stat_at(root.src_parent.as_fd(), &root.src_name, false)
                .is_ok_and(|l| l.is_symlink());
        let xattrs = if link {
            let at = sys::proc_fd_path(root.src_parent.as_fd(), Some(&root.src_name));
            read_xattrs(ctx, XattrTarget::NoFollow(&at), path)
        } else {
            read_xattrs(ctx, XattrTarget::Fd(anchor), path)
        };
        return Some((m.into(), xattrs));
    }
    let split = rel.iter().rposition(|&b| b == b'/');
    let (parent, name) = split.map_or((&b""[..], rel), |i| (&rel[..i], &rel[i + 1..]));
    if name.is_empty() {
        return None;
    }
    let look = look(ctx);
    let parent = look.open(anchor, parent).ok()?;
    let name = sys::cstring(name);
    let m = sys::stat_at(parent.as_fd(), &name, look.follow)
        .ok()
        .filter(|m| m.is_dir())?;
    // By its name, not followed even under -L, as cp's libattr reads them (llistxattr): a
    // symlink's own, and those of a directory that is no symlink, which the user may be
    // refused (named as in cp).
    let at = sys::proc_fd_path(parent.as_fd(), Some(&name));
    let xattrs = read_xattrs(ctx, XattrTarget::NoFollow(&at), path);
    Some((m.into(), xattrs))
}

/// Whether the source directory `src` (with metadata `m`) may be read but not searched:
/// then none of its entries can be looked at, and each fails as in cp, before anything is
/// made for it. A lookup of `first` tells, only where the mode says we may not search.
fn unsearchable(ctx: &Ctx<'_>, src: BorrowedFd<'_>, m: &Meta, first: Option<&CStr>) -> bool {
    let p = &ctx.process;
    if p.euid == 0 {
        return false;
    }
    let shift = if p.euid == m.uid {
        6
    } else if p.egid == m.gid {
        3
    } else {
        0
    };
    (m.mode >> shift) & 1 == 0
        && first.is_some_and(|n| sys::stat_at(src, n, false).err() == Some(Errno::ACCESS))
}

/// Opens the destination directory `rel` below a root, never through a symlink. A failure
/// is reported. One the user may not search or list (merged into, made without search
/// permission by an earlier root, or a source that could not be read merged into itself)
/// gets a handle all the same, readable or `O_PATH`: cp names its entries through it and
/// fails on those, never on the directory, and changes its metadata by name (through its
/// /proc link here).
fn open_dst(ctx: &Ctx<'_>, root: &Root, rel: &[u8]) -> Option<OwnedFd> {
    let (_, anchor) = root.dirs();
    let opened = if ctx.opts.keep_directory_symlink {
        // Symlinks to directories in the destination were gone through on purpose.
        sys::open_dir_following(anchor, rel)
    } else {
        match sys::open_dir_beneath(anchor, rel) {
            // The root itself, which we may read but not search for ".".
            Err(Errno::ACCESS) if rel.is_empty() => sys::reopen_dir(anchor)
                .or_else(|_| sys::open_dir_path_beneath(anchor, rel))
                .map_err(|_| Errno::ACCESS),
            Err(Errno::ACCESS) => {
                sys::open_dir_path_beneath(anchor, rel).map_err(|_| Errno::ACCESS)
            }
            other => other,
        }
    };
    opened
        .map_err(|e| {
            let p = rel_path(&root.dst_path, rel);
            ctx.report.fail(Error::sys(Op::Open, p, e))
        })
        .ok()
}

/// One directory's own pass: lists its entries and copies them; subdirectories (and shares
/// of a large directory's entries) are handed to `spawn`. Returns what completing the
/// directory needs, once everything spawned is complete.
pub(crate) fn pass(
    ctx: &Ctx<'_>,
    w: &mut Buffers,
    root_index: u32,
    rel: &[u8],
    info: DirInfo,
    spawn: &mut dyn FnMut(WorkItem),
) -> DirDone {
    let root = ctx.root(root_index);
    let mut done = DirDone {
        root: root_index,
        path: rel.to_vec(),
        info,
        source: None,
        xattrs_failed: false,
    };
    let Some(src) = open_src(ctx, root, rel) else {
        // A directory that cannot be read still gets its mode, times and xattrs, as from cp.
        let path = || rel_path(&root.src_path, rel);
        if let Some((stat, (xattrs, failed))) = unopened_source(ctx, root, rel, &path) {
            done.source = Some((stat, xattrs));
            done.xattrs_failed = failed;
        }
        return done;
    };
    let lineage = read_source(ctx, src.as_fd(), &mut done);
    let Some(dst) = open_dst(ctx, root, rel) else {
        return done;
    };
    if look(ctx).follow && reached_the_copy(ctx, &mut done, dst.as_fd()) {
        return done;
    }
    let info = look_at_dst(ctx, w, dst.as_fd(), &mut done);
    let src_meta = done.source.as_ref().map(|(stat, _)| Meta::from(*stat));
    let src_path = rel_path(&root.src_path, rel);
    let (dirs, rest) = listed(ctx, w, src.as_fd(), src_meta.as_ref(), &src_path);
    let marker = part_marker(ctx, &info, src.as_fd(), dst.as_fd());
    {
        let spawn = Spawn::new(spawn);
        let dirs_fds = (src.as_fd(), dst.as_fd());
        let here = Here::below(root_index, root, rel, dirs_fds, &info, &marker);
        let here = here.with_spawner(&spawn);
        for (name, t) in &dirs {
            child(ctx, w, &here, &lineage, name, *t, &spawn);
        }
        let mut rest = rest;
        // A large directory's files are shared among workers.
        if ctx.opts.jobs > 1 {
            spawn_shares(&mut rest, root_index, rel, &info, &lineage, &mut |item| {
                spawn.push(item)
            });
        }
        for (name, t) in &rest {
            child(ctx, w, &here, &lineage, name, *t, &spawn);
        }
    }
    marker.remove_in(dst.as_fd());
    w.last_dst = Some((root_index, rel.to_vec(), dst));
    done
}

/// Under `-L`: records a directory this run made, and refuses a source directory that is
/// one of them (reached through a symlink into the copy), which would otherwise be copied
/// into itself until names grow too long. cp goes on until then; mimeo, whose names have no
/// length limit below the roots, stops at once (docs/cp.md, "A copy into itself makes
/// nothing"). One `fstat` per directory made, only under `-L`.
fn reached_the_copy(ctx: &Ctx<'_>, done: &mut DirDone, dst: BorrowedFd<'_>) -> bool {
    let mut made = ctx.made_dirs.lock().unwrap_or_else(|e| e.into_inner());
    if done.info.created {
        if let Ok(m) = sys::fstat(dst) {
            made.insert(m.id());
        }
    }
    let Some((stat, _)) = &done.source else {
        return false;
    };
    if !made.contains(&Meta::from(*stat).id()) {
        return false;
    }
    drop(made);
    let root = ctx.root(done.root);
    // cp names the command-line source and destination, once.
    if !root.reached_copy.swap(true, Ordering::Relaxed) {
        let (src, dst) = (root.src_path.clone(), root.dst_path.clone());
        ctx.report
            .fail(Error::refused(Op::Refuse, src, Refusal::IntoItself { dst }));
    }
    // cp stops the source only where it tells the copy (see `child`); elsewhere it copies
    // the copy into itself until the names grow too long and goes on with the rest, so the
    // rest is copied here too (and not only what the parallel walk did before it met this).
    if tells_the_copy(root, &done.path) {
        root.stopped_at_copy.store(true, Ordering::Relaxed);
    }
    // The directory made for it stays empty: it goes, and nothing is completed.
    let split = done.path.iter().rposition(|&b| b == b'/');
    let (parent, name) = match split {
        Some(i) => (&done.path[..i], &done.path[i + 1..]),
        None => (&[][..], &done.path[..]),
    };
    if done.info.created && !name.is_empty() {
        if let Some(parent) = open_dst(ctx, root, parent) {
            let _ = sys::unlink(parent.as_fd(), &sys::cstring(name), true);
        }
    }
    done.source = None;
    true
}

/// Whether cp tells the source directory `rel` of `root`, a directory this run made, to be
/// the copy: cp knows a root's copy by the name it made it under, and takes a source
/// directory for it where the two names have the same last component and the same parent
/// directory, the source's parent looked at without following its last component (its
/// `same_name`): `s/l/x/d` with `s/l` leading above the copy `x/d`, not `s/l/d` with `s/l`
/// leading to the copy's parent.
fn tells_the_copy(root: &Root, rel: &[u8]) -> bool {
    let (parent, name) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&[][..], rel),
    };
    if name != root.dst_name.to_bytes() {
        return false;
    }
    let there = if parent.is_empty() {
        // The root itself, as named (`s/` is looked at as `s`).
        let named = root.src_name.to_bytes();
        let named = named.strip_suffix(b"/").unwrap_or(named);
        sys::stat_at(root.src_parent.as_fd(), &sys::cstring(named), false)
    } else {
        sys::stat_at(root.dirs().0, &sys::cstring(parent), false)
    };
    let copys = sys::fstat(root.dst_parent.as_fd());
    matches!((there, copys), (Ok(a), Ok(b)) if a.id() == b.id())
}

/// Reads the source directory's own metadata and xattrs into `done`, and returns what it
/// passes down to its subdirectories.
fn read_source(ctx: &Ctx<'_>, src: BorrowedFd<'_>, done: &mut DirDone) -> Lineage {
    let root = ctx.root(done.root);
    let src_path = || rel_path(&root.src_path, &done.path);
    let mut lineage = Lineage::default();
    let m = match sys::fstat(src) {
        Ok(m) => m,
        Err(e) => {
            ctx.report.fail(stat_error(src_path(), e));
            return lineage;
        }
    };
    let xattrs = match through_link(ctx, root, &done.path) {
        Some(at) => linked_xattrs(ctx, src, &at, &src_path),
        None => source_xattrs(ctx, XattrTarget::Fd(src), &src_path),
    };
    lineage.sgid = if ctx.opts.preserve.mode {
        m.mode & sys::S_ISGID != 0
    } else if done.info.created {
        done.info.lineage.sgid
    } else {
        done.info.dst_setgid
    };
    lineage.ancestors = look(ctx).ancestors(&done.info.lineage, m.id());
    done.source = Some((m.into(), xattrs));
    lineage
}

/// The symlink through which the source directory `rel` was reached (`-L`, or `-H` for a
/// root named without a trailing slash), as a path whose last component is not followed.
fn through_link(ctx: &Ctx<'_>, root: &Root, rel: &[u8]) -> Option<CString> {
    let is_link = |dir, name: &CStr| sys::stat_at(dir, name, false).is_ok_and(|l| l.is_symlink());
    if rel.is_empty() {
        let slash =
            std::os::unix::ffi::OsStrExt::as_bytes(root.src_path.as_os_str()).ends_with(b"/");
        let parent = root.src_parent.as_fd();
        let link = !slash && is_link(parent, &root.src_name);
        return link.then(|| sys::proc_fd_path(parent, Some(&root.src_name)));
    }
    if !look(ctx).follow {
        return None;
    }
    let (anchor, _) = root.dirs();
    let name = sys::cstring(rel);
    is_link(anchor, &name).then(|| sys::proc_fd_path(anchor, Some(&name)))
}

/// The xattrs of a directory reached through the symlink `at`. cp reads them by name without
/// following it (libattr's llistxattr), so it copies the symlink's own xattrs, and none of
/// the directory's; its ACLs, which it reads following the name, are the directory's.
fn linked_xattrs(
    ctx: &Ctx<'_>,
    src: BorrowedFd<'_>,
    at: &CStr,
    path: &dyn Fn() -> std::path::PathBuf,
) -> XattrList {
    let acl = |n: &[u8]| meta::is_acl(n);
    let mut xattrs = source_xattrs(ctx, XattrTarget::NoFollow(at), path);
    xattrs.retain(|(n, _)| !acl(n));
    let dir = source_xattrs(ctx, XattrTarget::Fd(src), path);
    xattrs.extend(dir.into_iter().filter(|(n, _)| acl(n)));
    xattrs
}

/// What the pass's entries need to know of the destination directory, looked at now when
/// the run merges into it (recorded in `done` too).
fn look_at_dst(ctx: &Ctx<'_>, w: &mut Buffers, dst: BorrowedFd<'_>, done: &mut DirDone) -> DirInfo {
    // Merging into a directory that a killed run may have written: its temporaries and
    // markers go, and under -u its entries are then checked strictly. -n keeps everything
    // as it is, markers included, since it replaces nothing.
    let mut info = done.info.clone();
    let replaces = !matches!(
        ctx.opts.overwrite,
        Overwrite::NoClobber | Overwrite::NoneFail
    );
    if !info.created && replaces {
        info.suspect = crash::remove_leftovers(&mut w.reader, dst, ctx.sweep);
    }
    let p = ctx.opts.preserve;
    if !info.created && (p.mode || p.default_mode) {
        info.default_acl = sys::has_xattr(dst, sys::ACL_DEFAULT);
        done.info.default_acl = info.default_acl;
    }
    if !(info.created || p.mode || p.default_mode || p.ownership) {
        // New subdirectories get the bits its default ACL allows (one look per directory
        // merged into, never per file).
        info.acl_perm = meta::default_acl_perm(XattrTarget::Fd(dst));
        done.info.acl_perm = info.acl_perm;
    }
    info
}

/// Lists the source directory `src` (at `path`, with metadata `src_meta`) without what the
/// caller ignores: its subdirectories, then the rest in the order to copy them.
fn listed(
    ctx: &Ctx<'_>,
    w: &mut Buffers,
    src: BorrowedFd<'_>,
    src_meta: Option<&Meta>,
    path: &std::path::Path,
) -> (Listed, Listed) {
    let (mut entries, read) = listing::list(&mut w.reader, src);
    if let Err(e) = read {
        ctx.report
            .fail(Error::sys(Op::ReadDir, path.to_path_buf(), e));
    }
    let first = entries.first().map(|(n, _)| n.as_c_str());
    if src_meta.is_some_and(|m| unsearchable(ctx, src, m, first)) {
        for (name, _) in entries.drain(..) {
            let entry = path.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
            ctx.report.fail(stat_error(entry, Errno::ACCESS));
        }
    }
    if ctx.hooks.ignores {
        leave_out_ignored(ctx, path, &mut entries);
    }
    // Subdirectories first, so other workers can start on them while we copy files.
    let (dirs, mut rest): (Listed, Listed) =
        entries.into_iter().partition(|(_, t)| *t == DType::Dir);
    if ctx.opts.dereference == Dereference::Always && ctx.opts.preserve.links {
        // Symlinks to a file of one link first: that file is then remembered before it is
        // met directly, and linked to (see `link_or_claim`). The rest stay in inode order,
        // as cp meets them: a file of several links is remembered wherever it is met, and
        // which of its names is met first is where the group's copy is.
        let to_one_link = |name: &CString| {
            sys::stat_at(src, name, true).is_ok_and(|m| m.is_reg() && m.nlink == 1)
        };
        rest.sort_by_cached_key(|(n, t)| !(*t == DType::Symlink && to_one_link(n)));
    }
    (dirs, rest)
}

/// Drops the entries the caller's [`Hooks::ignore`](crate::Hooks::ignore) leaves out.
fn leave_out_ignored(ctx: &Ctx<'_>, dir: &std::path::Path, entries: &mut Vec<(CString, DType)>) {
    use std::os::unix::ffi::OsStrExt;
    let names: Vec<&std::ffi::OsStr> = entries
        .iter()
        .map(|(n, _)| std::ffi::OsStr::from_bytes(n.to_bytes()))
        .collect();
    let ignored = ctx.hooks.hooks.ignore(dir, &names);
    drop(names);
    let mut index = 0;
    entries.retain(|_| {
        let keep = !ignored.get(index).copied().unwrap_or(false);
        index += 1;
        keep
    });
}

/// A share of a large directory's entries.
#[allow(clippy::too_many_arguments)]
pub(crate) fn entries(
    ctx: &Ctx<'_>,
    w: &mut Buffers,
    root_index: u32,
    rel: &[u8],
    info: &DirInfo,
    lineage: &Lineage,
    names: Vec<(Vec<u8>, EntryType)>,
    spawn: &mut dyn FnMut(WorkItem),
) {
    let root = ctx.root(root_index);
    // Reopened here: a descriptor of the worker that listed the directory is not valid in
    // this worker's table.
    let (Some(src), Some(dst)) = (open_src(ctx, root, rel), open_dst(ctx, root, rel)) else {
        return;
    };
    let marker = part_marker(ctx, info, src.as_fd(), dst.as_fd());
    {
        let spawn = Spawn::new(spawn);
        let here = Here::below(
            root_index,
            root,
            rel,
            (src.as_fd(), dst.as_fd()),
            info,
            &marker,
        )
        .with_spawner(&spawn);
        for (name, t) in names {
            let name = CString::new(name).expect("file names contain no NUL byte");
            child(ctx, w, &here, lineage, &name, t.into(), &spawn);
        }
    }
    marker.remove_in(dst.as_fd());
}

/// Whether a part's entries may all be skipped: a directory that was there, which the run
/// does not simply replace entries in.
/// The marker of a part copying `src` into `dst`: none where they are one directory (merged
/// into itself, as under -n), which a run never changes as a source.
fn part_marker(
    ctx: &Ctx<'_>,
    info: &DirInfo,
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
) -> PartMarker {
    let id = |fd| sys::fstat(fd).map(|m| m.id());
    if !info.created && matches!((id(src), id(dst)), (Ok(a), Ok(b)) if a == b) {
        return PartMarker::unmade();
    }
    PartMarker::restoring(may_skip_all(ctx, info))
}

fn may_skip_all(ctx: &Ctx<'_>, info: &DirInfo) -> bool {
    !info.created && (ctx.opts.overwrite != Overwrite::Replace || ctx.opts.interactive)
}

/// Copies one entry of a directory listing, by its `d_type`.
fn child(
    ctx: &Ctx<'_>,
    w: &mut Buffers,
    here: &Here<'_>,
    lineage: &Lineage,
    name: &CStr,
    t: DType,
    spawn: &Spawn<'_>,
) {
    // cp stops copying a source once it has met the copy in it (under -L).
    let met_copy = here
        .root
        .is_some_and(|r| r.stopped_at_copy.load(Ordering::Relaxed));
    if ctx.report.control.is_stopped() || met_copy {
        return;
    }
    let look = look(ctx);
    let mut meta = match look.at(here.src_dir, name, t) {
        Ok(m) => m,
        Err(e) => {
            ctx.report.fail(stat_error(here.src_path(name), e));
            return;
        }
    };
    loop {
        let descent = look.descent(t, meta.as_ref(), here.root_src_dev, lineage);
        if descent != Descent::No {
            if let Some(item) = subdir(ctx, w, here, lineage, name, meta, descent) {
                spawn.push(item);
            }
            return;
        }
        if hooked(ctx, here, name, name, meta.as_ref()) {
            return;
        }
        match copy_entry(ctx, here, &mut w.data, name, name, meta, look.follow) {
            Ok(()) => return,
            // Listed as a file, something else now: copy what is there now.
            Err(Changed(m)) => meta = Some(m),
        }
    }
}

/// Copies a root entry that is not a directory to recurse into, then the later roots with
/// the same destination, in command-line order. Each of those finds what the earlier ones
/// made there in this run, which cp will not overwrite. Ranges of a large file it splits
/// go to `spawn`.
pub(crate) fn root_entry(
    ctx: &Ctx<'_>,
    w: &mut Buffers,
    index: u32,
    spawn: &mut dyn FnMut(WorkItem),
) {
    let spawn = Spawn::new(spawn);
    let lead = ctx.root(index);
    if lead.followers.is_empty() {
        return one_root_entry(ctx, w, index, &spawn);
    }
    let there = || {
        sys::stat_at(lead.dst_parent.as_fd(), &lead.dst_name, false)
            .ok()
            .map(|m| m.id())
    };
    for i in std::iter::once(index).chain(lead.followers.iter().copied()) {
        let root = ctx.root(i);
        one_root_entry(ctx, w, i, &spawn);
        // What it made, the later ones will not replace.
        if root.just_made() {
            if let Some(id) = there() {
                for &later in lead.followers.iter().filter(|&&f| f > i) {
                    let _ = ctx.root(later).just_created.set(id);
                }
            }
        }
    }
}

/// Copies one root entry that is not a directory to recurse into.
fn one_root_entry(ctx: &Ctx<'_>, w: &mut Buffers, index: u32, spawn: &Spawn<'_>) {
    if ctx.report.control.is_stopped() {
        return;
    }
    let root = ctx.root(index);
    if root.named_twice {
        // The same source named again: cp copies it once, and says so (with backups it
        // copies it again). The parents it made get their attributes after the warning.
        ctx.report.warn(Warning::SourceTwice {
            src: root.src_path.clone(),
            directory: false,
        });
        root.finish_parents(ctx.opts, &ctx.report);
        return;
    }
    if let Some(id) = root.lead.and_then(|l| ctx.root(l).made_at.get()) {
        let _ = root.just_created.set(*id);
    }
    let here = Here::at_root(index, root).with_spawner(spawn);
    if hooked(ctx, &here, &root.src_name, &root.dst_name, Some(&root.meta)) {
        return;
    }
    let mut meta = root.meta;
    while let Err(Changed(m)) = copy_entry(
        ctx,
        &here,
        &mut w.data,
        &root.src_name,
        &root.dst_name,
        Some(meta),
        root.follow,
    ) {
        if m.is_dir() {
            // Was a file when resolved and is a directory now: cp would refuse it as one
            // without -r, and a root directory with -r is never dispatched here.
            ctx.report.fail(Error::refused(
                Op::Refuse,
                root.src_path.clone(),
                Refusal::NotRecursive,
            ));
            return;
        }
        meta = m;
    }
    if root.leads && root.just_made() {
        if let Ok(m) = sys::stat_at(root.dst_parent.as_fd(), &root.dst_name, false) {
            let _ = root.made_at.set(m.id());
        }
    }
    root.finish_parents(ctx.opts, &ctx.report);
}

/// Hands a non-directory entry (a regular file when `meta` is None) to the caller's
/// [`Hooks::copy_entry`](crate::Hooks::copy_entry) if it takes that kind. Returns whether the
/// entry is dealt with.
fn hooked(
    ctx: &Ctx<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: Option<&Meta>,
) -> bool {
    let kind = meta.map_or(EntryKind::File, entry_kind);
    if !ctx.hooks.takes(kind) {
        return false;
    }
    let (src, dst) = (here.src_path(name), here.dst_path(dst_name));
    match ctx.hooks.hooks.copy_entry(&src, &dst, kind) {
        Ok(Hooked::Copied) => ctx.report.copied(|| src, || dst, kind, None),
        Ok(Hooked::Skipped) => ctx.report.skipped(|| src, || dst),
        Ok(Hooked::Declined) => return false,
        Err(e) => ctx.report.fail(e),
    }
    true
}

/// Completes a directory once its pass and everything it spawned are complete: applies its
/// metadata (owner, xattrs, times, mode), flushes it with `--sync`, and reports it. A stopped
/// run completes nothing.
pub(crate) fn complete(ctx: &Ctx<'_>, w: &mut Buffers, done: DirDone) {
    if ctx.report.control.is_stopped() {
        return;
    }
    let Some((stat, xattrs)) = done.source else {
        return;
    };
    let root = ctx.root(done.root);
    let dst_path = || rel_path(&root.dst_path, &done.path);
    let src_path = || rel_path(&root.src_path, &done.path);
    let fd = match w.last_dst.take() {
        Some((r, path, fd)) if r == done.root && path == done.path => fd,
        _ => match open_dst(ctx, root, &done.path) {
            Some(fd) => fd,
            None => return,
        },
    };
    let info = &done.info;
    let meta = Meta::from(stat);
    let xattrs: Xattrs = xattrs
        .into_iter()
        .map(|(n, v)| (sys::cstring(&n), v))
        .collect();
    // cp stops at a failure to copy the xattrs asked for (--preserve=xattr), before the mode
    // and ACL: a new directory keeps what its mkdir and cp's fill left it (see `mkdir_perm`).
    let stopped = done.xattrs_failed && ctx.opts.preserve.xattr_required && info.created;
    let unmoded;
    let opts = if stopped {
        let mut o = ctx.opts.clone();
        o.preserve.mode = false;
        unmoded = o;
        &unmoded
    } else {
        ctx.opts
    };
    let apply = Apply {
        opts,
        process: &ctx.process,
        src: &meta,
        created: info.created,
        created_owner: (info.created && !info.dst_setgid)
            .then_some((ctx.process.euid, ctx.process.egid)),
        inherit_sgid: info.created && info.lineage.sgid,
        keep_perm: stopped.then(|| mkdir_perm(ctx, info, &meta)),
        // A directory keeps its set-id and sticky bits under cp's setting of the source's
        // ACL, as a file written into does.
        kept_special: kept_special(ctx, info, &meta, fd.as_fd()),
        current_perm: info.created.then_some(
            info.made_perm.unwrap_or(0o700) | if info.dst_setgid { sys::S_ISGID } else { 0 },
        ),
        // --no-preserve=mode leaves a directory merged into as it is (cp sets no mode there).
        inherited_acl: info.default_acl && (info.created || ctx.opts.preserve.mode),
        // What the default ACL it was made under lets it keep, as mkdir would have.
        acl_perm: info.created.then_some(info.acl_perm).flatten(),
        kept: 0,
        written_node: false,
        narrows: true,
        narrowed_read_only: false,
        whole_mode: false,
    };
    let flushed = || {
        if ctx.opts.sync {
            match sys::fsync(fd.as_fd()) {
                // An `O_PATH` handle on a directory that may not be read: nothing was written
                // in it, so there is nothing to flush.
                Err(Errno::BADF) => Ok(()),
                other => other.map_err(|e| Error::sys(Op::Sync, dst_path(), e)),
            }
        } else {
            Ok(())
        }
    };
    match apply
        .run(Dst::Fd(fd.as_fd()), &xattrs, &dst_path, &|e| {
            ctx.report.attribute(e)
        })
        .and_then(|()| flushed())
    {
        // One made by a later root is named by the earlier walk that cp made it in (see
        // `Root::made_early`).
        Ok(()) if info.created && root.made_early.is_none() => {
            ctx.report
                .copied(src_path, dst_path, EntryKind::Directory, None)
        }
        Ok(()) if !info.created && made_early_for(ctx, done.root, fd.as_fd()) => {
            ctx.report
                .copied(src_path, dst_path, EntryKind::Directory, None)
        }
        // A directory merged into is counted, but not reported as made: cp's -v names
        // only the directories it creates.
        Ok(()) => ctx.report.merged(),
        Err(e) => ctx.report.fail(e),
    }
}

/// The mode cp's mkdir gives the copy of the source directory `src`, before the mode is set:
/// the source's bits less the umask and the group and other bits cp leaves out until then
/// (all of them where the owner is kept, otherwise their write bits), with the owner's bits
/// cp adds to fill it, and the set-gid bit it inherits.
fn mkdir_perm(ctx: &Ctx<'_>, info: &DirInfo, src: &Meta) -> u32 {
    let omitted = if ctx.opts.preserve.ownership {
        0o077
    } else {
        0o022
    };
    let sgid = if info.dst_setgid { sys::S_ISGID } else { 0 };
    (src.perm() & 0o1777 & !omitted & !ctx.process.umask) | 0o700 | sgid
}

/// Whether the directory `fd`, merged into by the walk of root `root`, is one a later root
/// made that cp made in this walk (see `Root::made_early`); it is claimed. One fstat, only
/// where a later root made such directories.
fn made_early_for(ctx: &Ctx<'_>, root: u32, fd: BorrowedFd<'_>) -> bool {
    let mut early = ctx.early_dirs.lock().unwrap_or_else(|e| e.into_inner());
    if early.is_empty() {
        return false;
    }
    let Ok(m) = sys::fstat(fd) else {
        return false;
    };
    if early.get(&m.id()).is_some_and(|&(r, _)| r == root) {
        early.remove(&m.id());
        return true;
    }
    false
}

/// The set-id and sticky bits the destination directory has before its mode is set, which a
/// preserved mode may leave: a new one's set-gid bit inherited from its parent and the
/// source's sticky bit, which cp's mkdir gives it (mimeo makes it 0700), an existing one's
/// own (one fstat, under --preserve=mode only).
fn kept_special(ctx: &Ctx<'_>, info: &DirInfo, src: &Meta, fd: BorrowedFd<'_>) -> u32 {
    if !ctx.opts.preserve.mode {
        0
    } else if info.created {
        let sgid = if info.dst_setgid { sys::S_ISGID } else { 0 };
        sgid | (src.mode & sys::S_ISVTX)
    } else {
        sys::fstat(fd).map_or(0, |d| d.perm() & 0o7000)
    }
}
