//! Command-line sources: each pair resolved to parent directory + name on both sides, with
//! the refusals that need the whole pair (a directory without `-r`, a directory into itself).

use super::context::{DstFacts, Parent, Root, relative_symlink_elsewhere};
use super::work::{DirSeen, FileKey};
use crate::data::meta::{self, Apply, Dst, Process};
use crate::options::{DanglingSymlink, Dereference, LinkInstead, Options, Reflink};
use crate::place::crash;
use crate::report::{Control, Reporter};
use crate::report::{EntryKind, Error, Op, Refusal};
use crate::sys::{self, Errno, Meta, XattrTarget};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// One source and the exact destination path it is copied to (cp's target rules already
/// applied by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyPair {
    /// The source, as given.
    pub src: PathBuf,
    /// Where it goes.
    pub dst: PathBuf,
}

impl CopyPair {
    /// A pair of `src` and `dst`.
    pub fn new(src: impl Into<PathBuf>, dst: impl Into<PathBuf>) -> Self {
        CopyPair {
            src: src.into(),
            dst: dst.into(),
        }
    }
}

impl Root {
    /// Resolves a command-line pair. Creates nothing.
    /// `control` is the copy's own, for a FIFO source it may wait on (see `open_first`);
    /// without it (a scan, a dry run) no FIFO or device source is opened.
    pub(crate) fn resolve(
        opts: &Options,
        pair: &CopyPair,
        control: Option<&Control>,
    ) -> Result<Root, Error> {
        Root::resolve_in(opts, pair, false, control)?.refuse_into_itself()
    }

    /// [`Root::resolve`] that leaves a copy into itself to the caller ([`Root::into_itself`]):
    /// cp tells a source named twice apart first, so that such a root still counts as named.
    pub(crate) fn resolve_named(
        opts: &Options,
        pair: &CopyPair,
        control: &Control,
    ) -> Result<Root, Error> {
        Root::resolve_in(opts, pair, false, Some(control))
    }

    /// The root, or cp's error for a directory copied into itself.
    pub(crate) fn refuse_into_itself(self) -> Result<Root, Error> {
        if !self.into_itself {
            return Ok(self);
        }
        Err(self.refusal_into_itself())
    }

    /// cp's error for this directory copied into itself.
    pub(crate) fn refusal_into_itself(&self) -> Error {
        let dst = self.dst_path.clone();
        Error::refused(
            Op::Refuse,
            self.src_path.clone(),
            Refusal::IntoItself { dst },
        )
    }

    /// Looks again whether this directory root is copied into itself, after an earlier
    /// root made something at its destination.
    pub(crate) fn look_again_into_itself(&mut self) {
        if self.into_itself {
            let there = sys::stat_at(self.dst_parent.as_fd(), &self.dst_name, false).ok();
            let (dir, name) = (self.dst_parent.as_fd(), &self.dst_name);
            self.into_itself = into_itself(dir, name, there, self.meta.id());
        }
    }

    /// [`Root::resolve`] for a plan, where the destination's parent may be one that the copy
    /// would make first (`--parents`): it then stands in for the source's parent, and the
    /// plan must not look at the destination. A copy into itself is left to the caller, as
    /// by [`Root::resolve_named`].
    pub(crate) fn resolve_planned(
        opts: &Options,
        pair: &CopyPair,
        parent_missing: bool,
    ) -> Result<Root, Error> {
        Root::resolve_in(opts, pair, parent_missing, None)
    }

    fn resolve_in(
        opts: &Options,
        pair: &CopyPair,
        parent_missing: bool,
        control: Option<&Control>,
    ) -> Result<Root, Error> {
        let src_path = &pair.src;
        let dst_path = &pair.dst;
        let trailing_slash = src_path.as_os_str().as_bytes().ends_with(b"/");
        let follow = opts.dereference != Dereference::Never || trailing_slash;
        let (src_parent, src_name) = split(src_path);
        // A handle that needs no read permission: cp looks at a source through a directory
        // it may search but not list (issue 23 item 12).
        let src_parent = sys::open_dir_path(sys::CWD, &src_parent, true)
            .map_err(|e| stat_error(src_path.clone(), e))?;
        let meta = sys::stat_at(src_parent.as_fd(), &src_name, follow)
            .map_err(|e| stat_error(src_path.clone(), e))?;
        if meta.is_dir() && !opts.recursive {
            return Err(Error::refused(Op::Refuse, src_path, Refusal::NotRecursive));
        }
        let (dst_parent_path, dst_name) = split(dst_path);
        let source = (src_parent.as_fd(), src_name.as_c_str(), follow, &meta);
        let dst_parent = open_dst_parent(
            opts,
            &dst_parent_path,
            parent_missing,
            source,
            (src_path, dst_path),
            control,
        )?;
        let parent_meta =
            sys::fstat(dst_parent.as_fd()).map_err(|e| Error::sys(Op::Stat, dst_path, e))?;
        let open_source = || {
            sys::open_read(src_parent.as_fd(), &src_name, follow)
                .map(drop)
                .map_err(|e| Error::sys(Op::Open, src_path, e))
        };
        // A hard link to the source under a temporary name in `dir`, made and removed, as
        // cp tries it beside a destination it means to replace (see `existing_dst`).
        let link_beside = |dir: BorrowedFd<'_>| {
            let through = opts.dereference == Dereference::Always
                || follow && opts.dereference != Dereference::Never;
            let link = |t: &CStr| {
                if through {
                    sys::link_following(src_parent.as_fd(), &src_name, dir, t)
                } else {
                    sys::link(src_parent.as_fd(), &src_name, dir, t)
                }
            };
            let ((), temp) = crash::with_temp(b"", link)?;
            let _ = sys::unlink(dir, &temp, false);
            Ok(())
        };
        let there = existing_dst(
            opts,
            &meta,
            &dst_parent,
            &dst_name,
            (src_path, dst_path),
            parent_missing,
            (&open_source, &link_beside),
        )?;
        let into_itself =
            meta.is_dir() && into_itself(dst_parent.as_fd(), &dst_name, there, meta.id());
        let dst = dst_facts(opts, dst_parent.as_fd(), &parent_meta);
        // Known per tree for directories; a file given alone is checked only if it is empty.
        let sized_dev =
            if meta.is_dir() && sys::sizes_are_true_at(src_parent.as_fd(), &src_name, follow) {
                meta.dev
            } else {
                u64::MAX
            };
        Ok(Root {
            src_parent,
            src_name,
            dst_parent,
            dst_name,
            meta,
            follow,
            src_path: src_path.clone(),
            dst_path: dst_path.clone(),
            dst,
            sized_dev,
            dirs: None,
            followers: Vec::new(),
            just_created: std::sync::OnceLock::new(),
            lead: None,
            made_at: std::sync::OnceLock::new(),
            leads: false,
            parents: Vec::new(),
            made: std::sync::atomic::AtomicBool::new(false),
            linked: std::sync::atomic::AtomicBool::new(false),
            emptied: std::sync::atomic::AtomicBool::new(false),
            into_itself,
            reached_copy: std::sync::atomic::AtomicBool::new(false),
            stopped_at_copy: std::sync::atomic::AtomicBool::new(false),
            named_twice: false,
            taken_new: false,
            made_early: None,
        })
    }

    /// `--parents`: gives the directories made or found on the way to the destination their
    /// sources' attributes, deepest first, once nothing more is created in them.
    pub(crate) fn finish_parents(&self, opts: &Options, report: &Reporter<'_>) {
        finish_parents(&self.parents, opts, report);
    }
}

/// `--parents`: gives `parents` their sources' attributes, deepest first, and reports those
/// made (also where the copy then fails before it has a root).
pub(crate) fn finish_parents(parents: &[Parent], opts: &Options, report: &Reporter<'_>) {
    let process = Process::current();
    // Where an earlier root's walk makes the deepest of them, in cp's order it was there:
    // cp had no parents to give their times, and the copy's write leaves that directory the
    // time of the write (see `touch_parents_written_into`).
    let walked = parents.last().is_some_and(|p| p.created && p.early);
    let untimed;
    let opts = if walked && opts.preserve.timestamps {
        let mut o = opts.clone();
        o.preserve.timestamps = false;
        untimed = o;
        &untimed
    } else {
        opts
    };
    // A failure stops cp's work on the parents (those made keep the mode they were made
    // with); those made were reported as made.
    let mut failed = false;
    for parent in parents.iter().rev() {
        if !failed {
            parent.timed.store(!walked, Ordering::Relaxed);
            if let Err(e) = finish_parent(parent, opts, &process) {
                report.fail(e);
                failed = true;
            }
        }
        if parent.created && !parent.early {
            report.copied(
                || parent.src_path.clone(),
                || parent.dst.clone(),
                EntryKind::ParentDirectory,
                None,
            );
        }
    }
}

/// Gives one `--parents` directory its source's attributes: with the mode, the source's ACLs
/// too, as cp copies them. Its failures are worded as cp's for these directories.
fn finish_parent(parent: &Parent, opts: &Options, process: &Process) -> Result<(), Error> {
    give_parent_attributes(parent, opts, process).map_err(|mut e| {
        e.op = match e.op {
            Op::SetTimes => Op::SetParentTimes,
            // Only its ACLs are set as xattrs, which cp copies with the mode.
            Op::Chmod | Op::CopyAcl | Op::SetXattr => {
                e.attribute = None;
                Op::SetParentMode
            }
            op => op,
        };
        e
    })
}

fn give_parent_attributes(parent: &Parent, opts: &Options, process: &Process) -> Result<(), Error> {
    let name = sys::cstring(parent.dst.as_os_str().as_bytes());
    // cp sets these attributes by name, which needs no read permission on the directory
    // (an earlier source's copy may have left it unreadable): without it, it is reached by
    // an O_PATH descriptor, and set through its name.
    let (fd, readable) = match sys::open_dir(sys::CWD, &name, false) {
        Ok(fd) => (fd, true),
        Err(Errno::ACCESS) => (
            sys::open_dir_path(sys::CWD, &name, false)
                .map_err(|e| Error::sys(Op::Open, &parent.dst, e))?,
            false,
        ),
        Err(e) => return Err(Error::sys(Op::Open, &parent.dst, e)),
    };
    // cp sets the source's mode through the ACL, which leaves the set-id and sticky bits the
    // directory has: a new one's set-gid bit from its parent, an existing one's own.
    let kept_special = if opts.preserve.mode {
        sys::fstat(fd.as_fd()).map_or(0, |m| m.perm() & 0o7000)
    } else {
        0
    };
    // Without --preserve=mode the mode is the one it was made with, or the one cp restores.
    // A directory made under a default ACL inherited ACLs: with the mode, cp's copy_acl
    // replaces them with the source's, or removes them where the source has none.
    let apply = Apply {
        created: parent.created && opts.preserve.mode,
        inherited_acl: parent.created && opts.preserve.mode,
        kept_special,
        narrows: false,
        narrowed_read_only: false,
        whole_mode: true,
        ..Apply::for_existing(opts, process, &parent.src)
    };
    let dst = if readable {
        Dst::Fd(fd.as_fd())
    } else {
        Dst::At {
            dir: fd.as_fd(),
            name: c".",
            symlink: false,
        }
    };
    let path = || parent.dst.clone();
    // Only ACLs are set here, whose failures are never passed over with a word.
    let named = |_| {};
    if !opts.preserve.mode {
        apply.run(dst, &Vec::new(), &path, &named)?;
        if let Some(perm) = parent.restore {
            let restored = if readable {
                sys::fchmod(fd.as_fd(), perm)
            } else {
                sys::chmod_at_nofollow(fd.as_fd(), c".", perm)
            };
            restored.map_err(|e| Error::sys(Op::RestoreParentMode, path(), e))?;
        }
        return Ok(());
    }
    // cp 9.1 reads the ACLs of an absolute source's directory under its name less the
    // leading slash, relative to the working directory, after setting times and owner:
    // where that name leads nowhere, it fails there.
    let source = misnamed_acl_source(parent).unwrap_or_else(|| parent.src_path.clone());
    let acls = sys::open_dir_path(sys::CWD, &sys::cstring(source.as_os_str().as_bytes()), true)
        .map_err(|e| Error::sys(Op::GetParentAcl, &source, e))
        // Read through the handle, as cp reads them by name: no search of the directory
        // itself, which its owner may have taken away.
        .and_then(|fd| {
            let acls = meta::source_acls(XattrTarget::Fd(fd.as_fd()), &|| source.clone())?;
            Ok((acls, sys::fstat(fd.as_fd()).ok()))
        });
    match acls {
        Ok((acls, named_meta)) => {
            // cp sets the access ACL it read under that name: where the name leads to another
            // directory (the copy itself, say) without one, its minimal ACL, whose
            // permission bits then replace the source's.
            let mut src = parent.src;
            let access = acls
                .iter()
                .any(|(n, _)| n.as_bytes() == b"system.posix_acl_access");
            if let (false, Some(m)) = (access, named_meta) {
                src.mode = (src.mode & !0o777) | (m.perm() & 0o777);
            }
            Apply { src: &src, ..apply }.run(dst, &acls, &path, &named)
        }
        Err(e) => {
            let mut kept = opts.clone();
            kept.preserve.mode = false;
            // The mode stays as the directory was made.
            let times_and_owner = Apply {
                opts: &kept,
                created: false,
                // Nor does it lose the ACLs it inherited.
                inherited_acl: false,
                ..apply
            };
            times_and_owner.run(dst, &Vec::new(), &path, &named)?;
            Err(e)
        }
    }
}

/// The name cp 9.1 reads a `--parents` directory's ACLs under when its source path is
/// absolute: the path without its leading slashes.
fn misnamed_acl_source(parent: &Parent) -> Option<PathBuf> {
    let bytes = parent.src_path.as_os_str().as_bytes();
    if !bytes.starts_with(b"/") {
        return None;
    }
    let start = bytes.iter().position(|&b| b != b'/')?;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(&bytes[start..])))
}

/// `--parents`: makes the directories of `src`'s path that are missing at `dst`, which ends
/// with that path. Each pairs with the source directory at the same depth from the end. As
/// cp does: nothing is made or looked at when `dst`'s parent is there; a directory is made
/// only for a source that is a directory, and a source directory is looked at only where
/// its copy is made or its attributes are kept.
///
/// `new_dst` is cp's flag that the destination is new (its parent was just made), which cp
/// keeps from one source to the next: a source without a directory in its path leaves it as
/// the one before set it, and a failure as far as it got (set where a directory it could not
/// make was missing).
///
/// `walked` tells whether an earlier source's walk copies a source directory to a
/// destination directory: cp has copied that source by now (see [`left_to_walk`]).
pub(crate) fn make_parents(
    src: &Path,
    dst: &Path,
    opts: &Options,
    new_dst: &mut bool,
    walked: &dyn Fn(&Path, &Path) -> bool,
) -> Result<Vec<Parent>, Error> {
    let dirs = parent_dirs(src, dst);
    let Some(&(_, last)) = dirs.last() else {
        if has_dir_part(src) {
            *new_dst = false;
        }
        return Ok(Vec::new());
    };
    if existing_parent(last)? {
        *new_dst = false;
        return Ok(Vec::new());
    }
    let p = opts.preserve;
    let keeps = p.ownership || p.mode || p.timestamps;
    let mut made = Vec::new();
    // A directory an earlier source's walk makes, and cp has found made (see
    // [`left_to_walk`]): made here only where a directory is then made in it.
    let mut pending: Option<Parent> = None;
    let mut deferred = false;
    let each = || -> Result<(), Error> {
        for (s, d) in dirs {
            let there = existing_parent(d)?;
            let meta = match parent_source(s) {
                Ok(m) => m,
                Err(e) if !there || keeps => return Err(e),
                // Not looked at by cp: a missing directory below fails, or the copy itself.
                Err(_) => {
                    *new_dst = false;
                    continue;
                }
            };
            // cp takes the destination to be new once it has looked at the source of a missing
            // directory, before it tries to make it: a failure to make it leaves the flag set.
            if !there {
                *new_dst = true;
            }
            if let Some(prev) = pending.take() {
                if left_closed(&prev, opts) {
                    return Err(Error::sys(Op::CreateParent, d.to_path_buf(), Errno::ACCESS));
                }
                made.push(made_late(prev, opts)?);
            }
            let parent = Parent {
                src: meta,
                src_path: s.to_path_buf(),
                dst: d.to_path_buf(),
                created: false,
                restore: None,
                early: false,
                timed: AtomicBool::new(false),
            };
            if !there && left_to_walk(&parent, walked) {
                *new_dst = false;
                pending = Some(parent);
                deferred = true;
                continue;
            }
            let parent = if there {
                parent
            } else {
                made_late(parent, opts)?
            };
            *new_dst = parent.created;
            made.push(parent);
        }
        // The destination's own parent: made now, where the copy goes.
        if let Some(prev) = pending {
            let prev = made_late(prev, opts)?;
            *new_dst = prev.created;
            made.push(prev);
        }
        Ok(())
    };
    if let Err(e) = each() {
        if deferred {
            unmake_walked(&made, walked);
        }
        return Err(e);
    }
    // cp's last look is at the parent as named: "." or ".." there is no new directory.
    let (head, _) = split_last(src.as_os_str().as_bytes());
    if is_dot(split_last(head).1) {
        *new_dst = false;
    }
    Ok(made)
}

/// Makes the missing directory of `parent`, noting what was made.
fn made_late(mut parent: Parent, opts: &Options) -> Result<Parent, Error> {
    let made_now = make_parent(&parent.dst, &parent.src, opts)?;
    parent.created = made_now.is_some();
    parent.restore = made_now.flatten();
    Ok(parent)
}

/// After a failure below a directory an earlier source's walk makes: what cp's earlier walk
/// made, that walk makes here too (and names, and gives its mode), so the directories made
/// on the way to it, which cp finds made by then, are removed again (they are empty).
fn unmake_walked(made: &[Parent], walked: &dyn Fn(&Path, &Path) -> bool) {
    for parent in made.iter().rev() {
        if !parent.created || !walked(&parent.src_path, &parent.dst) {
            break;
        }
        let name = sys::cstring(parent.dst.as_os_str().as_bytes());
        let _ = sys::unlink(sys::CWD, &name, true);
    }
}

/// Whether an earlier source's walk, which has run in cp's order (here it runs later), makes
/// the missing `parent` without copying anything into it: it could not list its source, or
/// reach what it lists. cp finds that copy there, empty, with its final mode, and makes
/// nothing in it where that mode keeps its user out (see [`left_closed`]); nor does it look
/// at a source in it that cannot be reached. Root lists any directory.
fn left_to_walk(parent: &Parent, walked: &dyn Fn(&Path, &Path) -> bool) -> bool {
    if Process::current().euid == 0 || !walked(&parent.src_path, &parent.dst) {
        return false;
    }
    walk_copies_nothing(&parent.src_path)
}

/// Whether a walk as this user copies nothing of the source directory `src`: it may not list
/// it, or not reach what it lists.
pub(crate) fn walk_copies_nothing(src: &Path) -> bool {
    let src = sys::cstring(src.as_os_str().as_bytes());
    matches!(sys::open_dir(sys::CWD, &src, true), Err(Errno::ACCESS))
        || !sys::may_search(sys::CWD, &src)
}

/// Whether the mode a walk gives the directory it made for `parent` (the source's, less the
/// umask unless kept) lacks the owner's write or search bit: its user, who owns it, cannot
/// make a directory in it (root passes any mode).
fn left_closed(parent: &Parent, opts: &Options) -> bool {
    let p = opts.preserve;
    let umask = Process::current().umask;
    let owner = if p.mode {
        parent.src.perm()
    } else if p.default_mode {
        0o777 & !umask
    } else {
        parent.src.perm() & !umask
    } & 0o700;
    owner & 0o300 != 0o300
}

/// `--parents`: makes the missing directory `d` as cp 9.1 does: with its source's mode (0777
/// after --no-preserve=mode, even where -p or -a keep the mode again), set-id and sticky bits included for the kernel to keep or drop,
/// less the group and other bits with --preserve=ownership (the group and other write bits
/// with --preserve=mode) until its attributes are set; then opened up to its owner, to be
/// written into. None where it was there after all; else the mode cp restores without
/// --preserve=mode, if any (that of the directory as made, plus the bits left out that the
/// umask allows).
fn make_parent(d: &Path, src: &Meta, opts: &Options) -> Result<Option<Option<u32>>, Error> {
    let p = opts.preserve;
    let mut omitted = src.perm()
        & if p.ownership {
            0o077
        } else if p.mode {
            0o022
        } else {
            0
        };
    let mode = if p.default_mode || p.explicit_no_mode {
        0o777
    } else {
        src.perm()
    };
    let name = sys::cstring(d.as_os_str().as_bytes());
    match sys::mkdir(sys::CWD, &name, mode & !omitted) {
        Ok(()) => {}
        Err(Errno::EXIST) => return Ok(None),
        Err(e) => return Err(Error::sys(Op::CreateParent, d.to_path_buf(), e)),
    }
    let made = sys::stat_at(sys::CWD, &name, false)
        .map_err(|e| Error::sys(Op::StatParent, d.to_path_buf(), e))?
        .perm();
    let open = made & 0o700 != 0o700;
    let mut restore = None;
    if !p.mode {
        if omitted & !made != 0 {
            omitted &= !Process::current().umask;
        }
        if omitted & !made != 0 || open {
            restore = Some(made | omitted);
        }
    }
    if open {
        sys::chmod_at_nofollow(sys::CWD, &name, made | 0o700)
            .map_err(|e| Error::sys(Op::Chmod, d.to_path_buf(), e))?;
    }
    Ok(Some(restore))
}

/// Whether a `--parents` source has a directory in its path, less leading and trailing
/// slashes ("s/x", not "s/" or "/s"): only then does cp look at the destination's parents.
fn has_dir_part(src: &Path) -> bool {
    let b = src.as_os_str().as_bytes();
    let start = b.iter().position(|&c| c != b'/').unwrap_or(b.len());
    let end = b.iter().rposition(|&c| c != b'/').map_or(start, |i| i + 1);
    b[start..end.max(start)].contains(&b'/')
}

/// `--parents`: cp's failure for a source whose destination it takes to be new (see
/// [`make_parents`]) where something is there: it makes the entry without looking, which
/// finds it there. None where cp would look first after all (a directory without -r), or
/// for a link, whose message names its source too (a directory is made as one also under
/// `-l` and `-s`). A regular file's exclusive open that finds a symlink there is refused as
/// cp's copy refuses one: "not writing through dangling symlink", whatever it points to.
pub(crate) fn made_over(opts: &Options, root: &Root) -> Option<Error> {
    let m = &root.meta;
    let Ok(there) = sys::stat_at(root.dst_parent.as_fd(), &root.dst_name, false) else {
        return None;
    };
    if opts.link.is_some() && !m.is_dir() {
        return None;
    }
    let node = !(m.is_reg() || m.is_dir() || m.is_symlink());
    let op = if m.is_dir() {
        if !opts.recursive {
            return None;
        }
        Op::CreateDir
    } else if m.is_symlink() {
        Op::Symlink
    } else if node && opts.recursive && !opts.copy_contents {
        if m.file_type() == sys::S_IFIFO {
            Op::MakeFifo
        } else {
            Op::MakeNode
        }
    } else if there.is_symlink() && opts.dangling_symlink == DanglingSymlink::Refuse {
        let refusal = Refusal::DanglingSymlink;
        return Some(Error::refused(Op::Create, trimmed(&root.dst_path), refusal));
    } else {
        Op::Create
    };
    Some(Error::sys(op, trimmed(&root.dst_path), Errno::EXIST))
}

/// `--parents`: whether the directory `d` on the way to a destination is there (a symlink
/// to a directory counts); something else there is refused, as by cp.
fn existing_parent(d: &Path) -> Result<bool, Error> {
    match sys::stat_at(sys::CWD, &sys::cstring(d.as_os_str().as_bytes()), true) {
        Ok(m) if m.is_dir() => Ok(true),
        Ok(_) => Err(Error::refused(
            Op::CreateDir,
            d,
            Refusal::ParentNotDirectory,
        )),
        Err(_) => Ok(false),
    }
}

/// `--parents`: the source directory `s` on the way to a source, which must be one.
pub(crate) fn parent_source(s: &Path) -> Result<Meta, Error> {
    let fail = |e: Errno| Error::sys(Op::StatParent, s.to_path_buf(), e);
    let meta =
        sys::stat_at(sys::CWD, &sys::cstring(s.as_os_str().as_bytes()), true).map_err(fail)?;
    if !meta.is_dir() {
        return Err(fail(Errno::NOTDIR));
    }
    Ok(meta)
}

/// `--parents`: the directories of `src`'s path and the directories at the same depth from
/// the end of `dst`, which ends with that path, from the top down ("a/b/c" into "t": a with
/// t/a, a/b with t/a/b).
pub(crate) fn parent_dirs<'p>(src: &'p Path, dst: &'p Path) -> Vec<(&'p Path, &'p Path)> {
    // A path ending in "." names its directory's entries: cp makes that directory too ("a/."
    // into "t": t/a), where Path's components drop the ".".
    let (src, dst, own) = match (before_dot(src), before_dot(dst)) {
        (Some(s), Some(d)) => (s, d, 0),
        _ => (src, dst, 1),
    };
    let mut src_dirs: Vec<&Path> = src.ancestors().skip(own).collect();
    let mut dst_dirs: Vec<&Path> = dst.ancestors().skip(own).collect();
    // Only as many as the source path has below its start ("a/b/c": a and a/b).
    let depth = src
        .components()
        .filter(|c| !matches!(c, Component::RootDir | Component::CurDir))
        .count()
        .saturating_sub(own);
    src_dirs.truncate(depth);
    dst_dirs.truncate(depth);
    src_dirs
        .into_iter()
        .rev()
        .zip(dst_dirs.into_iter().rev())
        .collect()
}

/// A path without its trailing slashes, split before its last component ("a/b/": "a", "b").
fn split_last(b: &[u8]) -> (&[u8], &[u8]) {
    let end = b.len() - b.iter().rev().take_while(|&&c| c == b'/').count();
    let b = &b[..end];
    match b.iter().rposition(|&c| c == b'/') {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (&[], b),
    }
}

fn is_dot(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

/// The path before its final "/." components ("a/b/." or "a/b/.//.": "a/b"), where that
/// names a directory below the start.
fn before_dot(p: &Path) -> Option<&Path> {
    let (mut head, last) = split_last(p.as_os_str().as_bytes());
    if last != b"." {
        return None;
    }
    loop {
        match split_last(head) {
            (h, b".") if !h.is_empty() => head = h,
            _ => break,
        }
    }
    let stem = Path::new(OsStr::from_bytes(head));
    let below = stem.components().any(|c| matches!(c, Component::Normal(_)));
    below.then_some(stem)
}

/// `--parents` with a source whose last component is "." or "..": where cp has just made
/// the directory that holds it (named plainly, not as "." or ".." itself), it goes on to make
/// the destination as new, which is there already ("cannot create directory 't/a/.': File
/// exists").
pub(crate) fn dot_after_new_parent(src: &Path, parents: &[Parent]) -> bool {
    let (head, last) = split_last(src.as_os_str().as_bytes());
    let plain_parent = !is_dot(split_last(head).1);
    is_dot(last) && plain_parent && parents.last().is_some_and(|p| p.created)
}

/// `p` without its trailing slashes, as cp names a `--parents` destination.
pub(crate) fn trimmed(p: &Path) -> &Path {
    let b = p.as_os_str().as_bytes();
    let end = b.len() - b.iter().rev().take_while(|&&c| c == b'/').count();
    Path::new(OsStr::from_bytes(&b[..end.max(1).min(b.len())]))
}

/// Only --reflink=never needs to know whether the destination is copy-on-write (to keep
/// copy_file_range from sharing extents there).
pub(crate) fn cow_matters(opts: &Options) -> bool {
    opts.reflink == Reflink::Never
}

/// With `--preserve=sharing`, where the destination can clone: its clone granularity.
fn share_granularity(opts: &Options, dir: BorrowedFd<'_>) -> Option<u64> {
    let wanted = opts.preserve.sharing
        && opts.reflink != Reflink::Never
        && opts.sparse != crate::options::Sparse::Never;
    if !wanted || !is_cow(dir) {
        return None;
    }
    sys::clone_granularity(dir).ok().map(|g| g.bytes)
}

pub(crate) fn is_cow(dir: BorrowedFd<'_>) -> bool {
    matches!(
        sys::fs_type(dir),
        Ok(sys::BTRFS_MAGIC
            | sys::XFS_MAGIC
            | sys::BCACHEFS_MAGIC
            | sys::OCFS2_MAGIC
            | sys::ZFS_MAGIC)
    )
}

/// Splits a command-line path into its parent directory and final name. A path that ends in
/// "." or ".." or is "/" names the directory itself: parent = the path, name = ".".
pub(crate) fn split(path: &Path) -> (CString, CString) {
    let bytes = path.as_os_str().as_bytes();
    match path.components().next_back() {
        Some(Component::Normal(name)) if !bytes.ends_with(b"/.") => {
            let parent = path
                .parent()
                .map(|p| p.as_os_str().as_bytes())
                .unwrap_or(b"");
            let parent = if parent.is_empty() {
                b"." as &[u8]
            } else {
                parent
            };
            // A trailing slash stays on the name: the kernel then insists on a directory
            // (ENOTDIR for a file) and follows a symlink to one, as POSIX says.
            let mut name = name.as_bytes().to_vec();
            if bytes.ends_with(b"/") {
                name.push(b'/');
            }
            (sys::cstring(parent), sys::cstring(&name))
        }
        _ => (sys::cstring(bytes), sys::cstring(b".")),
    }
}

/// Whether `name` less its trailing slashes is a symlink in `dir`.
fn is_symlink_at(dir: &OwnedFd, name: &CString) -> bool {
    let bytes = name.to_bytes();
    let end = bytes.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    let bare = sys::cstring(&bytes[..end]);
    sys::stat_at(dir.as_fd(), &bare, false).is_ok_and(|m| m.is_symlink())
}

/// Whether copying the directory `id` to `name` in `dir`, where `there` is at that name, is
/// a copy into itself, as cp tells it: the directory the copy goes into is it or below it,
/// and nothing is there, or a directory other than it.
/// Where `name` is the source or not a directory, cp reports that first (decided later).
fn into_itself(dir: BorrowedFd<'_>, name: &CStr, there: Option<Meta>, id: (u64, u64)) -> bool {
    match there {
        Some(there) if there.id() == id || !there.is_dir() => false,
        // "d/" follows a symlink at d, so the copy goes into the directory it leads to,
        // which need not be below `dir` (cp tells a copy into itself by identity, not name).
        Some(_) if name.to_bytes().ends_with(b"/") => match sys::open_dir_path(dir, name, true) {
            Ok(there) => is_inside(there.as_fd(), id),
            Err(_) => is_inside(dir, id),
        },
        _ => is_inside(dir, id),
    }
}

/// Whether the directory `id` is `dir` or one of its ancestors (by dev/ino, walking "..").
pub(crate) fn is_inside(dir: BorrowedFd<'_>, id: (u64, u64)) -> bool {
    let Ok(mut cur_meta) = sys::fstat(dir) else {
        return false;
    };
    let mut cur: Option<OwnedFd> = None;
    loop {
        if cur_meta.id() == id {
            return true;
        }
        let at = cur.as_ref().map_or(dir, |fd| fd.as_fd());
        let Ok(up) = sys::open_dir(at, c"..", false) else {
            return false;
        };
        let Ok(up_meta) = sys::fstat(up.as_fd()) else {
            return false;
        };
        if up_meta.id() == cur_meta.id() {
            return false;
        }
        cur = Some(up);
        cur_meta = up_meta;
    }
}

pub(crate) fn stat_error(path: PathBuf, e: Errno) -> Error {
    Error::sys(Op::Stat, path, e)
}

/// The [`FileKey`] of the source `src`. None for a directory, or one not found.
pub(crate) fn file_source_id(opts: &Options, src: &Path) -> Option<FileKey> {
    let slash = src.as_os_str().as_bytes().ends_with(b"/");
    let follow = opts.dereference != Dereference::Never || slash;
    let (parent, name) = split(src);
    let dir = sys::open_dir_path(sys::CWD, &parent, true).ok()?;
    let meta = sys::stat_at(dir.as_fd(), &name, follow).ok()?;
    (!meta.is_dir())
        .then(|| file_key(src, meta.id(), &mut None))
        .flatten()
}

/// The [`FileKey`] of a resolved root that is not a directory.
pub(crate) fn root_file_key(root: &Root, seen: &mut DirSeen) -> Option<FileKey> {
    (!root.meta.is_dir())
        .then(|| file_key(&root.src_path, root.meta.id(), seen))
        .flatten()
}

/// The [`FileKey`] of the file `id` named `src`.
fn file_key(src: &Path, id: (u64, u64), seen: &mut DirSeen) -> Option<FileKey> {
    let (dir, name) = split_last(src.as_os_str().as_bytes());
    let dir_end = dir.len() - dir.iter().rev().take_while(|&&c| c == b'/').count();
    let dir = match (&dir[..dir_end], src.as_os_str().as_bytes().contains(&b'/')) {
        (_, false) => &b"."[..],
        (b"", true) => b"/",
        (d, true) => d,
    };
    let dir_id = match seen {
        Some((path, id)) if path.as_slice() == dir => *id,
        _ => {
            let id = sys::stat_at(sys::CWD, &CString::new(dir).ok()?, false)
                .ok()?
                .id();
            *seen = Some((dir.to_vec(), id));
            id
        }
    };
    Some((dir_id, name.to_vec(), id))
}

/// An open failure; ENOENT on something just listed means it vanished.
pub(crate) fn open_error(path: PathBuf, e: Errno) -> Error {
    if e == Errno::NOENT {
        Error::sys(Op::Vanished, path, e)
    } else {
        Error::sys(Op::Open, path, e)
    }
}
/// The longest name btrfs, XFS and ext4 take.
const NAME_MAX: usize = 255;

/// What is at the destination of a root, looked at only where it matters: for a directory
/// (a copy into itself?), for a name with a trailing slash (which fails on a non-directory)
/// and for a name too long to be there. None when nothing is there or it was not looked at.
/// `open_source` opens the source as a file copy does first; `link_beside` hard-links the
/// source under a temporary name in a directory.
fn existing_dst(
    opts: &Options,
    meta: &Meta,
    dst_parent: &OwnedFd,
    dst_name: &std::ffi::CString,
    (src_path, dst_path): (&Path, &Path),
    parent_missing: bool,
    (open_source, link_beside): (&dyn Fn() -> Result<(), Error>, &LinkBeside<'_>),
) -> Result<Option<Meta>, Error> {
    let slash = dst_name.to_bytes().ends_with(b"/");
    // A name longer than any filesystem here takes: cp's look at it fails first.
    let long = dst_name.to_bytes().len() > NAME_MAX;
    if !parent_missing && long && !meta.is_dir() && !slash {
        if let Err(e @ Errno::NAMETOOLONG) = sys::stat_at(dst_parent.as_fd(), dst_name, false) {
            return Err(Error::sys(Op::Stat, dst_path, e));
        }
    }
    let there = (!parent_missing && (meta.is_dir() || slash))
        .then(|| sys::stat_at(dst_parent.as_fd(), dst_name, false));
    // "d/" naming a symlink loop cannot be looked at; under -f cp goes on as if something
    // were there (its look's errno is not ENOENT) and makes a non-directory as onto a dangling
    // symlink. A directory's copy reads the stat buffer the failed look left unset (see
    // docs/cp.md): it stays "cannot stat".
    let looping = slash && opts.force && !meta.is_dir();
    match there {
        // "d/" naming a dangling symlink: what cp makes there finds the symlink. Where cp
        // replaces it, it makes the link under a temporary name beside it first, which cannot
        // be renamed to a name with a slash and is removed: the directory has a new time.
        Some(Err(e @ (Errno::NOENT | Errno::LOOP)))
            if e == Errno::LOOP && looping
                || e == Errno::NOENT && slash && is_symlink_at(dst_parent, dst_name) =>
        {
            // cp refuses a relative -s link outside the working directory before it makes it.
            let target = src_path.as_os_str().as_encoded_bytes();
            if opts.link == Some(LinkInstead::Symbolic)
                && !meta.is_dir()
                && relative_symlink_elsewhere(target, dst_parent.as_fd())
            {
                let why = Refusal::RelativeSymlink;
                return Err(Error::refused(Op::Symlink, dst_path, why));
            }
            let mut failed = onto_dangling(opts, meta, (src_path, dst_path));
            if failed.as_ref().and_then(Error::errno) == Some(libc::ENOTDIR) {
                // A link cp cannot make beside d fails there, before the rename: a symlink
                // in a directory this user may not write, a hard link also to a file the
                // kernel will not let this user link (protected_hardlinks: EPERM).
                let temp = match create_op(opts, meta).0 {
                    Op::Link => link_beside(dst_parent.as_fd()),
                    _ => touch_dir(dst_parent.as_fd()),
                };
                if let (Err(t), (Op::Symlink | Op::Link, _)) = (temp, create_op(opts, meta)) {
                    failed = Some(create_error(opts, meta, (src_path, dst_path), t));
                }
            }
            match failed {
                Some(failed) => Err(failed),
                // A file's copy opens its source, then fails to open the loop and, under -f,
                // to remove "d/" (no directory, ENOTDIR).
                None if e == Errno::LOOP => {
                    open_source()?;
                    let failed = Error::sys(Op::Remove, dst_path, Errno::NOTDIR);
                    Err(failed.after_failed_open())
                }
                None => Ok(None),
            }
        }
        Some(Err(Errno::NOENT)) | None => Ok(None),
        Some(Err(e)) => Err(Error::sys(Op::Stat, dst_path, e)),
        Some(Ok(m)) => Ok(Some(m)),
    }
}

/// Makes and removes a hard link to a source in a directory; the errno where it cannot.
type LinkBeside<'a> = dyn Fn(BorrowedFd<'_>) -> Result<(), Errno> + 'a;

/// Makes and removes a symlink in `dir`, which gives it the time cp's failed attempt does;
/// the errno where it cannot be made.
fn touch_dir(dir: BorrowedFd<'_>) -> Result<(), Errno> {
    let ((), temp) = crash::with_temp(b"", |t| sys::symlink(c".", dir, t))?;
    let _ = sys::unlink(dir, &temp, false);
    Ok(())
}

/// How making a copy of `meta` at "d/", where d is a dangling symlink, fails in cp: mkdir,
/// mknod, symlink and link find the symlink there (EEXIST); where cp then replaces it (a
/// link or symlink under -f, a hard link under -i too), the rename onto "d/" fails with
/// ENOTDIR. None for a regular file, whose copy opens its source first and then fails to
/// create "d/" by itself.
fn onto_dangling(opts: &Options, meta: &Meta, paths: (&Path, &Path)) -> Option<Error> {
    let replaced = match create_op(opts, meta).0 {
        Op::Create => return None,
        Op::Link => opts.force || opts.interactive,
        Op::Symlink => opts.force,
        _ => false,
    };
    let errno = if replaced {
        Errno::NOTDIR
    } else {
        Errno::EXIST
    };
    Some(create_error(opts, meta, paths, errno))
}

/// The failure of the call that makes the copy of `meta` at `paths.1`.
pub(crate) fn create_error(
    opts: &Options,
    meta: &Meta,
    (src, dst): (&Path, &Path),
    e: Errno,
) -> Error {
    match create_op(opts, meta) {
        (op, true) => Error::sys(op, dst, e).from_source(src),
        (op, false) => Error::sys(op, dst, e),
    }
}

/// The operation that makes the copy of `meta` (named in errors), and whether its errors
/// name the source too (a link made instead of a copy, as cp words it).
fn create_op(opts: &Options, meta: &Meta) -> (Op, bool) {
    if meta.is_dir() {
        return (Op::CreateDir, false);
    }
    match opts.link {
        Some(LinkInstead::Hard) => (Op::Link, true),
        Some(LinkInstead::Symbolic) => (Op::Symlink, true),
        None if meta.is_symlink() => (Op::Symlink, false),
        // FIFOs and devices are read as files but under -r without --copy-contents (see
        // `copy_entry`).
        None if meta.is_reg() || !opts.recursive || opts.copy_contents => (Op::Create, false),
        None if meta.file_type() == sys::S_IFIFO => (Op::MakeFifo, false),
        None => (Op::MakeNode, false),
    }
}

/// Opens the directory the destination goes into, as cp looks at the destination first: only
/// a missing one goes on to be created (and fails there), after the source `src` of a file
/// copy is opened; under `parent_missing` the source's own directory stands in for it.
fn open_dst_parent(
    opts: &Options,
    dst_parent_path: &CStr,
    parent_missing: bool,
    (src_parent, src_name, follow, meta): (BorrowedFd<'_>, &CStr, bool, &Meta),
    (src_path, dst_path): (&PathBuf, &PathBuf),
    control: Option<&Control>,
) -> Result<OwnedFd, Error> {
    match sys::open_dir_to_use(sys::CWD, dst_parent_path, true) {
        Err(Errno::NOENT) if parent_missing => {
            sys::open_dir(src_parent, c".", false).map_err(|e| stat_error(src_path.clone(), e))
        }
        // cp looks at the destination first: only a missing one goes on to be created,
        // after the source of a file copy is opened (a FIFO's open waits for its writer).
        Err(Errno::NOENT) => {
            if create_op(opts, meta).0 == Op::Create {
                open_first(src_parent, src_name, follow, meta, control)
                    .map_err(|e| Error::sys(Op::Open, src_path, e))?;
            }
            Err(create_error(opts, meta, (src_path, dst_path), Errno::NOENT))
        }
        // Under -f cp goes on past a destination it cannot stat for a symlink loop, to
        // replace it: making it fails for the same loop, and for a file (whose source
        // it opens first) so does the removal -f then tries.
        Err(Errno::LOOP) if opts.force => {
            let op = create_op(opts, meta).0;
            if op != Op::Create {
                return Err(create_error(opts, meta, (src_path, dst_path), Errno::LOOP));
            }
            open_first(src_parent, src_name, follow, meta, control)
                .map_err(|e| Error::sys(Op::Open, src_path, e))?;
            Err(Error::sys(Op::Remove, dst_path, Errno::LOOP).after_failed_open())
        }
        other => other.map_err(|e| Error::sys(Op::Stat, dst_path, e)),
    }
}

/// Opens the source `name` of a file copy whose destination cannot be created, as cp opens
/// it before it tries (an open may have an effect: a FIFO's writer meets a reader). A FIFO or
/// device is opened only with the copy's `control`, and a FIFO is then held until it has had
/// a writer, as cp's blocking open is; a stop request ends the wait.
fn open_first(
    dir: BorrowedFd<'_>,
    name: &CStr,
    follow: bool,
    meta: &Meta,
    control: Option<&Control>,
) -> Result<(), Errno> {
    let node = !(meta.is_reg() || meta.file_type() == sys::S_IFSOCK);
    let control = match control {
        None if node => return Ok(()),
        other => other,
    };
    let src = sys::open_read(dir, name, follow)?;
    if let Some(control) = control.filter(|_| meta.file_type() == sys::S_IFIFO) {
        // Stopped: the copy fails on the destination all the same.
        let _ = crate::data::node::wait_for_writer(src.as_fd(), control);
    }
    Ok(())
}

/// What the entries of a root need to know of the directory they are copied into.
fn dst_facts(opts: &Options, dst_parent: BorrowedFd<'_>, parent_meta: &Meta) -> DstFacts {
    let sets_mode = opts.preserve.mode || opts.preserve.default_mode;
    DstFacts {
        dev: parent_meta.dev,
        cow: cow_matters(opts) && is_cow(dst_parent),
        setgid: parent_meta.mode & sys::S_ISGID != 0,
        sgid_foreign: parent_meta.mode & sys::S_ISGID != 0
            && !sys::chmod_keeps_sgid(parent_meta.gid),
        share: share_granularity(opts, dst_parent),
        default_acl: sets_mode && sys::has_xattr(dst_parent, sys::ACL_DEFAULT),
        acl_perm: (!(sets_mode || opts.preserve.ownership))
            .then(|| meta::default_acl_perm(XattrTarget::Fd(dst_parent)))
            .flatten(),
    }
}
