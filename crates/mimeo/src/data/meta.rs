//! Metadata in the order the guarantees demand: owner → xattrs (ACLs included) → times → mode.
//!
//! chown comes first because it clears set-id bits and because security xattrs must be set
//! by the final owner's rules; mode comes after xattrs because an ACL rewrites the group bits.
//! None of these touch mtime, so times may come before the mode. They must: a file whose
//! "incomplete" mark is its mode (the sticky bit, see `place::crash`) keeps it until its final
//! chmod, and that chmod has to be the very last step, or a copy killed between chmod and
//! utimensat would look complete to `-u`.

use crate::options::Options;
use crate::report::{Error, Op};
use crate::sys::{self, Errno, Meta, XattrTarget};
use rustix::fd::BorrowedFd;
use std::ffi::{CStr, CString};
use std::path::PathBuf;

/// Facts about the running process that decide how metadata is applied.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Process {
    pub euid: u32,
    pub egid: u32,
    pub umask: u32,
}

impl Process {
    /// Read once per process: a copy of one small file should not pay four system calls for
    /// facts that do not change while it runs.
    pub fn current() -> Self {
        static PROCESS: std::sync::OnceLock<Process> = std::sync::OnceLock::new();
        *PROCESS.get_or_init(|| Process {
            euid: sys::euid(),
            egid: sys::egid(),
            umask: sys::current_umask(),
        })
    }
}

/// The mode a regular file is created with when it needs no mark of its own (a temporary, or
/// a new file in a directory that carries an in-progress marker): the final permission bits
/// when the owner it gets at creation is already the right one, only the owner's bits when a
/// chown is still to come (so that nobody else can open it meanwhile, docs/guarantees.md
/// §4). Never set-id bits: those come after the chown, which would clear them. `dst_setgid`:
/// the directory is set-gid, so the file gets the directory's group, not ours. The umask is
/// left to the kernel, as cp leaves it: where the directory has a default ACL, the kernel
/// applies the ACL instead, so a copy without --preserve=mode gets what cp's gets.
pub(crate) fn creation_mode(
    opts: &Options,
    process: &Process,
    dst_setgid: bool,
    src: &Meta,
) -> u32 {
    let p = opts.preserve;
    let perm = if p.mode {
        src.perm() & 0o777
    } else if p.default_mode {
        0o666 & !process.umask
    } else {
        src.perm() & 0o777
    };
    let owner_changes =
        p.ownership && (dst_setgid || (src.uid, src.gid) != (process.euid, process.egid));
    // --preserve=ownership without the mode: cp makes the file with the owner's bits, then
    // adds the others that the umask allows, whatever a default ACL would have allowed.
    let umask_decides = p.ownership && !p.mode && !p.default_mode;
    if owner_changes || umask_decides {
        perm & 0o700
    } else {
        perm
    }
}

/// The mode an existing file has after cp writes into it without --preserve=mode: its own,
/// less the set-id bits that the kernel clears when a process without `CAP_FSETID` (anyone
/// but root, here) writes to a file (`wrote`: not under --attributes-only), or when cp gives
/// it the source's owner (--preserve=ownership), which clears them for root too. Set-gid goes
/// only where group execution is on.
pub(crate) fn written_perm(
    existing: &Meta,
    src: &Meta,
    opts: &Options,
    process: &Process,
    wrote: bool,
) -> u32 {
    let perm = existing.perm();
    let chowned = opts.preserve.ownership
        && (existing.uid, existing.gid) != (src.uid, src.gid)
        && chown_takes(existing, src, process);
    if (process.euid == 0 || !wrote) && !chowned {
        return perm;
    }
    // With the mode kept, cp first narrows the file to owner bits both have, through the
    // ACL, which leaves the set-id bits alone: without group execution then, the chown keeps
    // set-gid. (Where anyone but root wrote, the write took it away before.)
    let narrowed = opts.preserve.mode && (process.euid == 0 || !wrote);
    let mut cleared = sys::S_ISUID;
    if perm & 0o010 != 0 && !narrowed {
        cleared |= sys::S_ISGID;
    }
    perm & !cleared
}

/// Whether cp's chown of `existing` to the source's owner changes it. Root's does; anyone
/// else's only on a file of their own, where it fails (the owner is not theirs to give) and
/// cp then gives it the source's group alone, which it may only where it belongs to that
/// group (or the file has it already). A refused chown leaves the set-id bits.
fn chown_takes(existing: &Meta, src: &Meta, process: &Process) -> bool {
    process.euid == 0
        || (existing.uid == process.euid
            && (existing.gid == src.gid || process.egid == src.gid || sys::in_group(src.gid)))
}

/// The xattrs of an existing destination that cp, writing into it, would leave in place, for
/// a replacement to carry over: every one but file capabilities (which the kernel removes on
/// a write), and but the POSIX ACLs when the mode comes from the source (cp then sets the
/// source's ACL, or none). One list call when there are none.
pub(crate) fn kept_xattrs(
    opts: &Options,
    existing: XattrTarget<'_>,
    path: &dyn Fn() -> PathBuf,
) -> Result<Xattrs, Error> {
    let mode = opts.preserve.mode;
    read_xattrs(existing, path, |n| {
        n != b"security.capability" && !(mode && is_acl(n))
    })
}

/// The permission bits a directory's default ACL lets a new entry keep (owner, mask or else
/// group, other), which the kernel applies instead of the umask; None without one.
pub(crate) fn default_acl_perm(dir: XattrTarget<'_>) -> Option<u32> {
    let mut value = Vec::new();
    sys::get_xattr(dir, sys::ACL_DEFAULT, &mut value).ok()?;
    // The xattr form: a 4-byte version, then (tag u16, perm u16, id u32) entries.
    let (mut user, mut group, mut mask, mut other) = (0, 0, None, 0);
    for e in value.get(4..)?.chunks_exact(8) {
        let perm = u32::from(u16::from_le_bytes([e[2], e[3]])) & 0o7;
        match u16::from_le_bytes([e[0], e[1]]) {
            0x01 => user = perm,
            0x04 => group = perm,
            0x10 => mask = Some(perm),
            0x20 => other = perm,
            _ => {}
        }
    }
    Some(user << 6 | mask.unwrap_or(group) << 3 | other)
}

/// A POSIX ACL, under its common name or XFS's own (which root sees too).
pub(crate) fn is_acl(name: &[u8]) -> bool {
    name.starts_with(b"system.posix_acl_") || name.starts_with(b"trusted.SGI_ACL_")
}

/// A destination entry whose metadata is being set.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Dst<'a> {
    /// An open regular file or directory.
    Fd(BorrowedFd<'a>),
    /// A symlink, FIFO, socket or device node, reached by name and never followed.
    At {
        dir: BorrowedFd<'a>,
        name: &'a CStr,
        symlink: bool,
    },
}

/// Extended attributes read from a source entry.
pub(crate) type Xattrs = Vec<Xattr>;

/// One extended attribute: its name and value.
pub(crate) type Xattr = (CString, Vec<u8>);

/// The xattrs of a source entry that the options ask to keep: the POSIX ACLs with
/// `--preserve=mode` only (ACLs are part of the mode, as in cp), every other one with
/// `--preserve=xattr`. One list call when there are none. One that cannot be read is named
/// through `named` and left out where cp would go on without it (see [`Failures`]).
pub(crate) fn source_xattrs(
    opts: &Options,
    src: XattrTarget<'_>,
    path: &dyn Fn() -> PathBuf,
    named: Named<'_>,
) -> Result<Xattrs, Error> {
    let p = opts.preserve;
    if !(p.xattr || p.mode) {
        return Ok(Vec::new());
    }
    // XFS shows root the ACLs under its own names too; those are never copied (as cp).
    let wanted = |n: &[u8]| {
        if is_acl(n) {
            p.mode && n.starts_with(b"system.posix_acl_")
        } else {
            p.xattr
        }
    };
    read_xattrs_named(opts, src, path, wanted, named)
}

/// The xattrs of a source entry that cp copies onto a symlink it makes for `-s` with
/// `--preserve=xattr`: all but the ACLs (cp's xattr copy leaves those to the mode, which a
/// symlink does not get).
pub(crate) fn link_xattrs(
    opts: &Options,
    src: XattrTarget<'_>,
    path: &dyn Fn() -> PathBuf,
    named: Named<'_>,
) -> Result<Xattrs, Error> {
    if !opts.preserve.xattr {
        return Ok(Vec::new());
    }
    read_xattrs_named(opts, src, path, |n| !is_acl(n), named)
}

/// Reads the xattrs `wanted` of a source, naming those it cannot read as cp does (see
/// [`Failures`]).
fn read_xattrs_named(
    opts: &Options,
    src: XattrTarget<'_>,
    path: &dyn Fn() -> PathBuf,
    wanted: impl Fn(&[u8]) -> bool,
    named: Named<'_>,
) -> Result<Xattrs, Error> {
    let mut failures = Failures::new(opts, named);
    let out = read_xattrs_with(src, path, wanted, &mut failures)?;
    failures.finish().map(|()| out)
}

/// Sets `xattrs` on `dst`: those kept from a file replaced, then the source's. Where xattrs
/// were not asked for by name (-a, --preserve=all), cp goes on past an attribute the
/// destination will not take: one it cannot hold, a node that takes no user.* ones, an
/// unprivileged user's lack of access to trusted.* and security.*, or to an entry it may not
/// write (ACLs too). An ACL is otherwise the mode's, whose failure fails the copy. The source's
/// other failures go to [`Failures`], which names them as cp does.
pub(crate) fn set_xattrs(
    opts: &Options,
    process: &Process,
    dst: Dst<'_>,
    (kept, xattrs): (&[Xattr], &[Xattr]),
    path: &dyn Fn() -> PathBuf,
    named: Named<'_>,
) -> Result<(), Error> {
    let proc_path;
    let target = match dst {
        Dst::Fd(fd) => XattrTarget::Fd(fd),
        Dst::At { dir, name, .. } => {
            proc_path = sys::proc_fd_path(dir, Some(name));
            XattrTarget::NoFollow(&proc_path)
        }
    };
    let required = opts.preserve.xattr_required;
    let passed_over = |name: &CStr, e: Errno| match e {
        Errno::PERM | Errno::ACCESS if !required && process.euid != 0 => true,
        Errno::NOTSUP | Errno::PERM | Errno::ACCESS => !required && !is_acl(name.to_bytes()),
        _ => false,
    };
    for (name, value) in kept {
        match sys::set_xattr(target, name, value) {
            Err(e) if !passed_over(name, e) => return Err(Error::sys(Op::SetXattr, path(), e)),
            _ => {}
        }
    }
    let mut failures = Failures::new(opts, named);
    // libattr names one that the destination cannot hold (ENOTSUP) once, after the others.
    let mut unsupported = false;
    // The ACLs last, as cp sets them with the mode after the other xattrs: an ACL that takes
    // the owner's write permission away (a read-only file) would make the kernel refuse a
    // user other than root the user.* ones after it (EACCES). The listing's order is the
    // filesystem's (btrfs, XFS: ACL first).
    let (acls, others): (Vec<_>, Vec<_>) = xattrs.iter().partition(|(n, _)| is_acl(n.to_bytes()));
    for (name, value) in others.into_iter().chain(acls) {
        let Err(e) = sys::set_xattr(target, name, value) else {
            continue;
        };
        if is_acl(name.to_bytes()) {
            if passed_over(name, e) {
                continue;
            }
            return Err(Error::sys(Op::SetXattr, path(), e));
        }
        if e == Errno::NOTSUP {
            unsupported = true;
            continue;
        }
        let err = Error::sys(Op::SetXattr, path(), e).with_attribute(attr_name(name));
        failures.add(err, passed_over(name, e))?;
    }
    if unsupported {
        failures.add(Error::sys(Op::SetXattr, path(), Errno::NOTSUP), true)?;
    }
    failures.finish()
}

/// The POSIX ACLs of a source entry (access and default), as cp copies them where it keeps
/// the mode of a `--parents` directory.
pub(crate) fn source_acls(
    src: XattrTarget<'_>,
    path: &dyn Fn() -> PathBuf,
) -> Result<Xattrs, Error> {
    read_xattrs(src, path, |n| n.starts_with(b"system.posix_acl_"))
}

fn read_xattrs(
    src: XattrTarget<'_>,
    path: &dyn Fn() -> PathBuf,
    wanted: impl Fn(&[u8]) -> bool,
) -> Result<Xattrs, Error> {
    read_xattrs_with(src, path, wanted, &mut Failures::fatal())
}

/// Reads the xattrs `wanted` of `src`. One that cannot be read goes to `failures`, unless it is
/// an ACL: that is the mode's, whose failure fails the copy.
fn read_xattrs_with(
    src: XattrTarget<'_>,
    path: &dyn Fn() -> PathBuf,
    wanted: impl Fn(&[u8]) -> bool,
    failures: &mut Failures<'_>,
) -> Result<Xattrs, Error> {
    let mut names = Vec::new();
    match sys::list_xattrs(src, &mut names) {
        Ok(()) => {}
        Err(Errno::NOTSUP) => return Ok(Vec::new()),
        Err(e) => return Err(Error::sys(Op::ListXattr, path(), e)),
    }
    let mut out = Vec::new();
    for name in names
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty() && wanted(n))
    {
        let name = sys::cstring(name);
        let mut value = Vec::new();
        match sys::get_xattr(src, &name, &mut value) {
            Ok(()) => out.push((name, value)),
            // Removed between list and get: nothing to copy.
            Err(Errno::NODATA) => {}
            Err(e) if is_acl(name.to_bytes()) => {
                return Err(Error::sys(Op::GetXattr, path(), e));
            }
            Err(e) => {
                let err = Error::sys(Op::GetXattr, path(), e).with_attribute(attr_name(&name));
                // One the user may not read; a failing device fails the file.
                failures.add(err, matches!(e, Errno::ACCESS | Errno::PERM))?;
            }
        }
    }
    Ok(out)
}

/// Where a failure to copy an xattr that the copy goes on without is named (as a warning).
pub(crate) type Named<'a> = &'a dyn Fn(Error);

/// A name as an [`Error`] names the attribute.
fn attr_name(name: &CStr) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(name.to_bytes()).to_owned()
}

/// The failures of one entry's xattr copy, handled as cp's (coreutils' `copy_attr`, through
/// libattr) are: each is named or not, and fails the entry or not, by the options; the
/// attributes after one that failed are still copied.
///
/// - Named: every one with `--attributes-only` or `--preserve=xattr`; with `-a` none; else
///   (`--preserve=all` without `-a`) all but ENOTSUP, which says the destination takes no
///   xattrs (libattr gathers those into one "setting attributes for" line).
/// - Failing: every one with `--preserve=xattr`. Else a failing device (EIO, ENOSPC, ...)
///   still fails the file, where cp goes on: a copy whose metadata the device refused is not
///   called complete. Only what the destination will not take, or the user may not read or
///   set, is passed over.
pub(crate) struct Failures<'a> {
    naming: Naming,
    required: bool,
    /// The first failure fails the entry at once, unnamed (xattrs cp does not copy, such as
    /// those kept from a file replaced).
    at_once: bool,
    named: Named<'a>,
    /// The last failure that fails the entry; the earlier ones were named.
    fatal: Option<Error>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Naming {
    All,
    Supported,
    Unnamed,
}

impl<'a> Failures<'a> {
    pub fn new(opts: &Options, named: Named<'a>) -> Self {
        let p = opts.preserve;
        let naming = if opts.attributes_only || p.xattr_required {
            Naming::All
        } else if p.xattr_quiet {
            Naming::Unnamed
        } else {
            Naming::Supported
        };
        Failures {
            naming,
            required: p.xattr_required,
            at_once: false,
            named,
            fatal: None,
        }
    }

    /// Every failure fails the entry at once.
    fn fatal() -> Failures<'static> {
        Failures {
            naming: Naming::Unnamed,
            required: true,
            at_once: true,
            named: &|_| {},
            fatal: None,
        }
    }

    /// One failure; `passable`: one cp goes on without where xattrs are not required. Err
    /// where nothing is to be named and the entry fails now.
    fn add(&mut self, mut err: Error, passable: bool) -> Result<(), Error> {
        if self.naming == Naming::Unnamed {
            // A failure of mimeo's own, where cp says nothing: named by its file.
            err.attribute = None;
        }
        if self.at_once {
            return Err(err);
        }
        if self.required || !passable {
            if let Some(earlier) = self.fatal.replace(err) {
                (self.named)(earlier);
            }
            return Ok(());
        }
        let unsupported = err.errno() == Some(libc::EOPNOTSUPP);
        match self.naming {
            Naming::All => (self.named)(err),
            Naming::Supported if !unsupported => (self.named)(err),
            _ => {}
        }
        Ok(())
    }

    /// The failure that fails the entry, if any.
    pub fn finish(self) -> Result<(), Error> {
        self.fatal.map_or(Ok(()), Err)
    }
}

/// The metadata step for one destination entry.
#[derive(Debug)]
pub(crate) struct Apply<'a> {
    pub opts: &'a Options,
    pub process: &'a Process,
    pub src: &'a Meta,
    /// Whether the entry was created by this run (an existing directory keeps its mode
    /// unless modes are preserved).
    pub created: bool,
    /// The owner the new entry got at creation, to skip a chown that would change nothing.
    pub created_owner: Option<(u32, u32)>,
    /// The mode the entry has now, to skip a chmod that would change nothing.
    pub current_perm: Option<u32>,
    /// A new directory whose parent ends up set-gid: without --preserve=mode it gets the
    /// set-gid bit it would have inherited, as with cp (which creates parents first).
    pub inherit_sgid: bool,
    /// The entry was made in a directory with a default ACL, so it may carry ACLs the source
    /// does not have: with --preserve=mode they are removed, as cp does (the ACL is part of
    /// the mode).
    pub inherited_acl: bool,
    /// Without --preserve=mode: the mode the entry must end with because it takes the place
    /// of an existing file whose mode cp would have kept (cp writes into that file).
    pub keep_perm: Option<u32>,
    /// With --preserve=mode, the set-id and sticky bits the entry has before its mode is set:
    /// an existing file's as the write into it left them, a new directory's set-gid bit
    /// from its parent, an existing directory's own. cp gives it the source's mode by setting
    /// the source's ACL (a minimal one where the source has none), which leaves these bits
    /// alone; only a source with special bits of its own gets its whole mode set first.
    pub kept_special: u32,
    /// A new directory made where a default ACL stands in for the umask: the permission bits
    /// the ACL lets it keep (see `final_perm`).
    pub acl_perm: Option<u32>,
    /// How many of the xattrs given to [`Apply::run`], from the first, are kept from a file
    /// replaced rather than copied from the source: cp names no failure of theirs.
    pub kept: usize,
    /// A FIFO or device the data was written into: an xattr that fails it leaves the times
    /// and mode still to set, as cp's copy of a file's data goes on to them (a node carries
    /// no incomplete mark that the mode must keep).
    pub written_node: bool,
    /// An existing entry is narrowed to the permission bits its old and new modes share
    /// before it gets another owner (see `narrow`); not a `--parents` directory on the way,
    /// which cp gives its owner outright.
    pub narrows: bool,
    /// A file made to take the place of one cp would write into and narrow (see `narrow`) to
    /// bits without the owner's write: the kernel then refuses cp, not being root, the
    /// source's user.* xattrs (EACCES), while those the old file had stay. So the new file
    /// is read-only again before the source's xattrs are set.
    pub narrowed_read_only: bool,
    /// The source's whole mode is set even where its owner could not be kept: cp does so
    /// for a `--parents` directory on the way, whose mode it sets apart from the copy.
    pub whole_mode: bool,
}

impl<'a> Apply<'a> {
    /// The step for an entry this process just made in a directory that has the set-gid bit
    /// (`dst_setgid`, so the entry took the directory's group) or a default ACL
    /// (`default_acl`), with the permission bits it has now (`current_perm`, when known).
    pub fn for_new(
        opts: &'a Options,
        process: &'a Process,
        src: &'a Meta,
        dst_setgid: bool,
        default_acl: bool,
        current_perm: Option<u32>,
    ) -> Self {
        Apply {
            opts,
            process,
            src,
            created: true,
            created_owner: (!dst_setgid).then_some((process.euid, process.egid)),
            current_perm,
            inherit_sgid: false,
            inherited_acl: default_acl,
            keep_perm: None,
            kept_special: 0,
            acl_perm: None,
            kept: 0,
            written_node: false,
            narrows: true,
            narrowed_read_only: false,
            whole_mode: false,
        }
    }

    /// The step for an existing entry that the data was written into (a FIFO or device).
    pub fn for_existing(opts: &'a Options, process: &'a Process, src: &'a Meta) -> Self {
        Apply {
            opts,
            process,
            src,
            created: false,
            created_owner: None,
            current_perm: None,
            inherit_sgid: false,
            inherited_acl: false,
            keep_perm: None,
            kept_special: 0,
            acl_perm: None,
            kept: 0,
            written_node: false,
            narrows: true,
            narrowed_read_only: false,
            whole_mode: false,
        }
    }

    /// Applies owner, xattrs, times and mode to `dst`. `path` names it in errors; it is only
    /// built when one happens. An xattr the copy goes on without is named through `named`
    /// where cp names it.
    pub fn run(
        &self,
        dst: Dst<'_>,
        xattrs: &Xattrs,
        path: &dyn Fn() -> PathBuf,
        named: Named<'_>,
    ) -> Result<(), Error> {
        let p = self.opts.preserve;
        if self.narrows && p.ownership && p.mode && !self.created && !self.src.is_symlink() {
            self.narrow(dst, path)?;
        }
        // Without --preserve=ownership the owner is still the source's when the entry was
        // created with it (a user copying their own file): set-id bits then stay, as in cp.
        let (owner_kept, chowned) = if p.ownership {
            self.chown(dst, path)?
        } else {
            (
                self.created_owner == Some((self.src.uid, self.src.gid)),
                false,
            )
        };
        // The kernel's chown of a non-directory takes its set-uid bit away, and its set-gid
        // bit where group execution is on, also for root: what the entry has now.
        let chown_called = chowned && self.created_owner != Some((self.src.uid, self.src.gid));
        let current_perm = self.current_perm.map(|m| {
            if chown_called && !self.src.is_dir() && !self.src.is_symlink() {
                let sgid = if m & 0o010 != 0 { sys::S_ISGID } else { 0 };
                m & !(sys::S_ISUID | sgid)
            } else {
                m
            }
        });
        let opened_up = !xattrs.is_empty() && self.open_up_for_xattrs(dst);
        // cp sets the times before the xattrs, and goes no further where it cannot: the
        // xattrs' failures are named once the times are set.
        let later = std::cell::RefCell::new(Vec::new());
        let set_times = || {
            self.set_times(dst, path)?;
            later.take().into_iter().for_each(named);
            Ok::<(), Error>(())
        };
        if !xattrs.is_empty() {
            let at = self.kept.min(xattrs.len());
            let keep = |e| later.borrow_mut().push(e);
            let (kept, from_src) = xattrs.split_at(at);
            let set = |both| set_xattrs(self.opts, self.process, dst, both, path, &keep);
            // The old file's go on while it is opened up, the source's once it is read-only.
            let set = match current_perm {
                Some(perm) if self.narrowed_read_only && opened_up => set((kept, &[]))
                    .and_then(|()| chmod(dst, perm).map_err(|e| Error::sys(Op::Chmod, path(), e)))
                    .and_then(|()| set((&[], from_src))),
                _ => set((kept, from_src)),
            };
            if let Err(e) = set {
                // The mode stays as it is (a file marked incomplete by its mode stays so),
                // but for a node's, which cp's copy of a file's data goes on to set.
                set_times()?;
                if self.written_node
                    && let Some(perm) = self.final_perm(owner_kept, chowned)
                {
                    chmod(dst, perm).map_err(|e| Error::sys(Op::Chmod, path(), e))?;
                }
                return Err(e);
            }
        }
        // cp sets the mode outright with --preserve=mode and --no-preserve=mode: an ACL the
        // entry inherited from its directory goes. So it does from a file that takes the
        // place of one cp would write into: that one keeps its own ACL (among the xattrs
        // kept from it), or none.
        let inherited =
            self.inherited_acl && (p.mode || p.default_mode || self.keep_perm.is_some());
        if inherited {
            self.strip_inherited_acls(dst, xattrs, path)?;
        }
        set_times()?;
        let perm = self.final_perm(owner_kept, chowned);
        // An inherited ACL gave the entry bits other than those it was made with; xattrs set
        // on a read-only entry opened it up for a moment.
        if let Some(perm) = perm.or(current_perm.filter(|_| opened_up))
            && (current_perm != Some(perm) || inherited || opened_up)
        {
            // With the mode kept, cp sets it with gnulib's `copy_acl`, which words its failure.
            let op = if p.mode { Op::CopyAcl } else { Op::Chmod };
            chmod(dst, perm).map_err(|e| Error::sys(op, path(), e))?;
        }
        // With the mode kept, an entry written into gets the source's ACL or none, as gnulib's
        // copy_acl gives it after its chmod: its own does not stay (`--attributes-only -p`
        // onto a file with an ACL); copy_acl's words where that is refused.
        if !inherited && !self.created && p.mode {
            self.strip_inherited_acls(dst, xattrs, path)
                .map_err(|e| match e.errno() {
                    Some(libc::EPERM) => Error::sys(Op::CopyAcl, path(), Errno::PERM),
                    _ => e,
                })?;
        }
        Ok(())
    }

    /// The source's times, with --preserve=timestamps.
    fn set_times(&self, dst: Dst<'_>, path: &dyn Fn() -> PathBuf) -> Result<(), Error> {
        if !self.opts.preserve.timestamps {
            return Ok(());
        }
        let (a, m) = (self.src.atime, self.src.mtime);
        let r = match dst {
            Dst::Fd(fd) => sys::futimens(fd, a, m),
            Dst::At { dir, name, .. } => sys::lutimens_at(dir, name, a, m),
        };
        r.map_err(|e| Error::sys(Op::SetTimes, path(), e))
    }

    /// cp gives an existing entry whose owner or group is not the source's the permission
    /// bits its old and new modes share before it changes the owner, and fails the entry
    /// where it cannot (after its times), without a word where it may not (another user's
    /// entry). Root always may, and the whole mode is set after.
    fn narrow(&self, dst: Dst<'_>, path: &dyn Fn() -> PathBuf) -> Result<(), Error> {
        if self.process.euid == 0 {
            return Ok(());
        }
        let now = match dst {
            Dst::Fd(fd) => sys::fstat(fd),
            Dst::At { dir, name, .. } => sys::stat_at(dir, name, false),
        };
        let Ok(now) = now else {
            return Ok(());
        };
        if (now.uid, now.gid) == (self.src.uid, self.src.gid) {
            return Ok(());
        }
        self.set_times(dst, path)?;
        // cp narrows it through the ACL, which leaves the set-id and sticky bits alone.
        let narrowed = now.perm() & (self.src.perm() | 0o7000);
        chmod(dst, narrowed).map_err(|e| {
            let err = Error::sys(Op::ClearPerms, path(), e);
            match e {
                Errno::PERM | Errno::INVAL => err.unsaid(),
                _ => err,
            }
        })
    }

    /// As cp lets a user other than root set the xattrs of a regular file it made without
    /// the owner's write permission: gives the owner read and write until the mode is set.
    /// Whether it did.
    fn open_up_for_xattrs(&self, dst: Dst<'_>) -> bool {
        let made_read_only = self.current_perm.is_some_and(|m| m & 0o200 == 0);
        self.process.euid != 0 && self.src.is_reg() && made_read_only && chmod(dst, 0o600).is_ok()
    }

    /// Returns whether the source's owner is now the destination's.
    /// Gives `dst` the source's owner: whether it has it now, and whether a chown of it
    /// succeeded (or cp's would have, where it has it already).
    fn chown(&self, dst: Dst<'_>, path: &dyn Fn() -> PathBuf) -> Result<(bool, bool), Error> {
        let (uid, gid) = (self.src.uid, self.src.gid);
        if self.created_owner == Some((uid, gid)) {
            return Ok((true, true));
        }
        match chown(dst, Some(uid), Some(gid)) {
            Ok(()) => Ok((true, true)),
            // Without privilege, cp keeps what it can (the group, if we belong to it) silently.
            Err(Errno::PERM | Errno::INVAL) if self.process.euid != 0 => {
                Ok((false, chown(dst, None, Some(gid)).is_ok()))
            }
            Err(e) => Err(Error::sys(Op::Chown, path(), e)),
        }
    }

    /// Removes the ACLs an entry inherited from its directory's default ACL that the source
    /// does not have: the access ACL, and with --preserve=mode a directory's default ACL
    /// (--no-preserve=mode keeps that one, as cp's setting of the mode does).
    fn strip_inherited_acls(
        &self,
        dst: Dst<'_>,
        xattrs: &Xattrs,
        path: &dyn Fn() -> PathBuf,
    ) -> Result<(), Error> {
        if self.src.is_symlink() {
            return Ok(());
        }
        let proc_path;
        let target = match dst {
            Dst::Fd(fd) => XattrTarget::Fd(fd),
            Dst::At { dir, name, .. } => {
                proc_path = sys::proc_fd_path(dir, Some(name));
                XattrTarget::NoFollow(&proc_path)
            }
        };
        let has = |name: &CStr| xattrs.iter().any(|(n, _)| n.as_c_str() == name);
        let mut names = vec![sys::ACL_ACCESS];
        if self.src.is_dir() && self.opts.preserve.mode {
            names.push(sys::ACL_DEFAULT);
        }
        for name in names {
            if !has(name) {
                match sys::remove_xattr(target, name) {
                    Ok(()) | Err(Errno::NOTSUP) => {}
                    Err(e) => return Err(Error::sys(Op::SetXattr, path(), e)),
                }
            }
        }
        Ok(())
    }

    /// The mode the entry must end with, or None to leave it as created (symlinks, and
    /// existing directories without --preserve=mode). `chowned`: a chown of it succeeded.
    pub fn final_perm(&self, owner_kept: bool, chowned: bool) -> Option<u32> {
        if self.src.is_symlink() {
            return None;
        }
        let mut perm = if self.opts.preserve.mode {
            self.src.perm()
        } else if let Some(kept) = self.keep_perm {
            return Some(kept);
        } else if self.created {
            // cp without --preserve=mode creates with the source's mode less the umask, and
            // the kernel then drops set-id bits of a regular file (open) and of a directory
            // (mkdir, which only inherits set-gid from its parent); mknod keeps them.
            let bits = match self.src.file_type() {
                sys::S_IFREG => 0o777,
                sys::S_IFDIR => 0o1777,
                _ => 0o7777,
            };
            let inherited = if self.inherit_sgid { sys::S_ISGID } else { 0 };
            let p = self.opts.preserve;
            // cp gives a new node its owner with a chown even where it has it already, and
            // the kernel's chown takes a non-directory's set-uid bit away, also for root.
            let chowned_node = chowned && !p.mode && bits == 0o7777;
            let made = self.src.perm() & if chowned_node { !sys::S_ISUID } else { !0 };
            let src_perm = if p.default_mode {
                // cp's setting of the mode leaves the special bits the entry was made with
                // (a node's set-gid too; our chmod loses it where the kernel's mknod would).
                default_perm(self.src) | (made & bits & !0o777)
            } else {
                made
            };
            match self.acl_perm {
                // cp makes a directory without its group and other write bits, which the
                // kernel then takes through the parent's default ACL, and adds back only
                // those the umask allows.
                Some(acl) if self.src.is_dir() && !(p.default_mode || p.ownership) => {
                    let made = src_perm & bits & !0o022 & (acl | !0o777);
                    made | (src_perm & 0o022 & !self.process.umask) | inherited
                }
                _ => (src_perm & bits & !self.process.umask) | inherited,
            }
        } else {
            return None;
        };
        // Where the owner could not be kept, cp drops the set-id and sticky bits of a file or
        // directory, but keeps those of a FIFO, socket or device node; those of a directory
        // only where it was asked to keep the owner (a directory's set-id bits run nothing).
        // The entry then keeps the ones it has (see `kept_special`). A `--parents`
        // directory gets the source's whole mode.
        let special = !matches!(self.src.file_type(), sys::S_IFREG | sys::S_IFDIR);
        let unasked = self.src.is_dir() && !self.opts.preserve.ownership;
        if !owner_kept && self.opts.preserve.mode && !special && !unasked && !self.whole_mode {
            perm &= !(sys::S_ISUID | sys::S_ISGID | sys::S_ISVTX);
        }
        // cp sets a preserved mode that has no set-id or sticky bit through the ACL, which
        // leaves those the entry has (a new directory's set-gid bit from its parent); the
        // kernel takes set-gid away from a caller outside the group, as from our chmod.
        if self.opts.preserve.mode && perm & (sys::S_ISUID | sys::S_ISGID | sys::S_ISVTX) == 0 {
            perm |= self.kept_special;
        }
        Some(perm)
    }
}

/// The mode `cp --no-preserve=mode` gives a new entry before the umask: 0777 for directories
/// and sockets, 0666 for everything else.
fn default_perm(src: &Meta) -> u32 {
    match src.file_type() {
        sys::S_IFDIR | 0o140000 => 0o777,
        _ => 0o666,
    }
}

fn chown(dst: Dst<'_>, uid: Option<u32>, gid: Option<u32>) -> sys::Result<()> {
    match dst {
        Dst::Fd(fd) => sys::fchown(fd, uid, gid),
        Dst::At { dir, name, .. } => sys::lchown_at(dir, name, uid, gid),
    }
}

fn chmod(dst: Dst<'_>, perm: u32) -> sys::Result<()> {
    match dst {
        Dst::Fd(fd) => sys::fchmod(fd, perm),
        Dst::At { symlink: true, .. } => Ok(()),
        Dst::At { dir, name, .. } => sys::chmod_at_nofollow(dir, name, perm),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// What `Failures` makes of one EPERM and one ENOTSUP that the copy may go on without,
    /// and of one EIO: the lines named, and the failure left for the entry.
    fn handled(opts: &Options) -> (Vec<String>, Option<String>) {
        let said = RefCell::new(Vec::new());
        let named = |e: Error| said.borrow_mut().push(e.to_string());
        let mut f = Failures::new(opts, &named);
        let perm = Error::sys(Op::SetXattr, "d", Errno::PERM).with_attribute("user.a");
        f.add(perm, true).unwrap();
        f.add(Error::sys(Op::SetXattr, "d", Errno::NOTSUP), true)
            .unwrap();
        let io = Error::sys(Op::SetXattr, "d", Errno::IO).with_attribute("user.b");
        f.add(io, false).unwrap();
        let left = f.finish().err().map(|e| e.to_string());
        (said.into_inner(), left)
    }

    #[test]
    fn xattr_failures_are_named_and_fail_as_the_options_say() {
        let perm = "setting attribute 'user.a' for 'user.a': Operation not permitted";
        let notsup = "setting attributes for 'd': Operation not supported";
        let io = "setting attribute 'user.b' for 'user.b': Input/output error";
        // -a: nothing named; the failing device fails the file, named by the file.
        let a = Options::archive();
        let io_file = "setting attributes for 'd': Input/output error";
        assert_eq!(handled(&a), (vec![], Some(io_file.into())));
        // --preserve=all: all but ENOTSUP.
        let mut all = Options::archive();
        all.preserve.xattr_quiet = false;
        assert_eq!(handled(&all), (vec![perm.into()], Some(io.into())));
        // --attributes-only: every one.
        let mut only = Options::archive();
        only.attributes_only = true;
        assert_eq!(
            handled(&only),
            (vec![perm.into(), notsup.into()], Some(io.into()))
        );
        // --preserve=xattr: every one, the last failing the file.
        let mut required = Options::archive();
        required.preserve.xattr_required = true;
        assert_eq!(
            handled(&required),
            (vec![perm.into(), notsup.into()], Some(io.into()))
        );
    }
}
