//! The one decision about an existing destination entry. The copy, `--dry-run` and `-u` all
//! ask [`decide`], so what a dry run says is what a copy does.

use super::crash;
use crate::data::meta::Process;
use crate::options::{Backup, DanglingSymlink, Dereference, LinkInstead, Options, Overwrite};
use crate::report::{Action, Error, Op, Refusal};
use crate::sys::{self, Errno, Meta};
use std::path::PathBuf;

/// What to do with a source entry at its destination name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing is there: create it.
    Create,
    /// Replace the existing entry atomically (temporary + rename). A regular file replacing
    /// a regular file keeps what cp, writing into it, would keep: the old file's mode, owner,
    /// group and xattrs (ACLs included), where they are not taken from the source.
    Replace,
    /// Replace the existing entry atomically by one made as if nothing were there
    /// (`--remove-destination`, and `--backup`, where cp renames the old entry away).
    Recreate,
    /// Write into the existing regular file: truncate it and copy the data, as cp does
    /// (`--inplace`; `--attributes-only` sets only its attributes).
    InPlace,
    /// Write the regular source's bytes into the existing FIFO, socket or device node, as cp
    /// does (how images are written to block devices). Atomic replacement is for regular
    /// files only.
    WriteInto,
    /// Leave the existing entry alone (`-n`, or `-u` with an up-to-date copy).
    Skip,
    /// A directory onto an existing directory: merge into it.
    Merge,
    /// Refuse the copy of this entry.
    Refuse(Conflict),
}

/// Why an entry cannot be copied onto what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Conflict {
    SameFile,
    DirectoryInTheWay,
    NonDirectoryInTheWay,
    /// An earlier command-line source made this destination in this run (`symlink`: it is a
    /// symlink, which cp would write through).
    JustCreated {
        symlink: bool,
    },
    /// The destination is a symlink whose target cannot be looked at (this errno).
    CannotStat(i32),
    /// `-l` or `-s` onto an existing entry, without `-f` or `--remove-destination`.
    LinkExists(LinkInstead),
    /// A regular file this process may not write, without `-f`.
    NotWritable,
    /// A regular file onto a dangling symlink, which cp will not write through.
    Dangling,
    /// `--update=none-fail`: the destination exists.
    NotReplacing,
    /// The destination's backup would replace the source (cp's `backup-is-src` rule).
    BackupIsSource,
    /// `--attributes-only` with a source that is not a regular file onto an existing entry:
    /// cp would create a new entry there, which fails (`op`: the call that makes it).
    Exists {
        op: Op,
    },
}

impl Conflict {
    /// The error, named as cp names it.
    pub fn error(self, src: PathBuf, dst: PathBuf) -> Error {
        match self {
            Conflict::SameFile => Error::refused(Op::Refuse, src, Refusal::SameFile { dst }),
            Conflict::DirectoryInTheWay => {
                Error::refused(Op::Create, dst, Refusal::DirectoryInTheWay)
            }
            Conflict::NonDirectoryInTheWay => {
                Error::refused(Op::CreateDir, dst, Refusal::NonDirectoryInTheWay { src })
            }
            Conflict::CannotStat(errno) => Error::os(Op::Stat, dst, errno),
            Conflict::NotWritable => Error::os(Op::Create, dst, libc::EACCES),
            Conflict::Dangling => Error::refused(Op::Create, dst, Refusal::DanglingSymlink),
            Conflict::NotReplacing => Error::refused(Op::Refuse, dst, Refusal::Exists),
            Conflict::Exists { op } => Error::os(op, dst, libc::EEXIST),
            Conflict::LinkExists(kind) => Error::refused(
                Op::Link,
                dst,
                Refusal::LinkExists {
                    target: src,
                    symbolic: kind == LinkInstead::Symbolic,
                },
            ),
            Conflict::BackupIsSource => {
                Error::refused(Op::Backup, dst, Refusal::BackupIsSource { src })
            }
            Conflict::JustCreated { symlink } => {
                Error::refused(Op::Refuse, dst, Refusal::JustCreated { src, symlink })
            }
        }
    }
}

impl Decision {
    /// What a dry run reports for it; None for a refusal, which it reports as the error.
    pub fn action(self) -> Option<Action> {
        Some(match self {
            Decision::Create => Action::Create,
            Decision::Replace | Decision::Recreate => Action::Replace,
            Decision::WriteInto | Decision::InPlace => Action::WriteInto,
            Decision::Skip => Action::Skip,
            Decision::Merge => Action::Merge,
            Decision::Refuse(_) => return None,
        })
    }
}

/// What the decision needs besides the two entries.
#[derive(Clone, Copy)]
pub(crate) struct Rules<'a> {
    pub opts: &'a Options,
    pub process: &'a Process,
    /// The source was looked at through symlinks (cp's dereference other than "never" for
    /// this entry: `-L`, or `-H` and the default without `-r` on the command line).
    pub follows: bool,
    /// The destination directory held another run's in-progress marker: `-u` takes an entry
    /// there as up to date only if it is provably finished.
    pub suspect: bool,
    /// The (dev, ino) of the entry an earlier command-line source made at this destination
    /// name in this run: cp will not replace it.
    pub just_created: Option<(u64, u64)>,
    /// `-i`: asks whether the destination may be replaced (None: a dry run, which asks
    /// nothing).
    pub ask: Option<&'a dyn Fn() -> bool>,
    /// Whether this process may write to the existing destination (asked only of a process
    /// other than root's, about a regular file cp would open for writing).
    pub writable: &'a dyn Fn() -> bool,
    /// `--backup`: whether the destination's backup would replace the source (see
    /// `backup::is_source`); None where no backup is made.
    pub backup_is_source: Option<&'a dyn Fn() -> bool>,
    /// Whether this process may make and remove entries in the destination's directory
    /// (asked only under `-u`, of an entry cp's rule keeps and the stricter one would
    /// replace); None: it may.
    pub changeable: Option<&'a dyn Fn() -> bool>,
    /// The source is a FIFO or device node read as the regular file it is given as: cp's
    /// rule for removing the destination first still looks at its own kind.
    pub read_node: bool,
}

/// What [`decide`] may look up besides the two entries; each is asked only where cp's
/// rules need it (a destination symlink, or two entries that may be one file).
pub(crate) struct Lookups<'a> {
    /// The source name looked at again: through symlinks (true) or not.
    pub src: &'a dyn Fn(bool) -> Option<Meta>,
    /// What the destination symlink points to.
    pub dst_target: &'a dyn Fn() -> sys::Result<Meta>,
    /// Whether the source and the destination are one directory entry (one name in one
    /// directory).
    pub same_entry: &'a dyn Fn() -> bool,
}

/// Decides what to do with `src` at a destination name where `dst` is (None: nothing).
/// cp looks at the destination through a symlink where it would write a regular file
/// through it: one whose target cannot be looked at (EACCES, ELOOP) is refused with cp's
/// "cannot stat" (a loop is replaced under `-f` whatever `-n`, `-u` or `-i` say, as in cp), and a dangling one is handled
/// as [`Options::dangling_symlink`] says.
pub(crate) fn decide(
    rules: &Rules<'_>,
    src: &Meta,
    dst: Option<&Meta>,
    look: &Lookups<'_>,
) -> Decision {
    let Some(d) = dst else {
        return Decision::Create;
    };
    let opts = rules.opts;
    let fresh = opts.remove_destination || opts.backup.is_some();
    let seen = match looked_through(opts, src, d).then(|| (look.dst_target)()) {
        None => *d,
        Some(Ok(target)) => target,
        // A dangling symlink it just made: cp finds nothing there to ask about, and refuses.
        Some(Err(Errno::NOENT)) if just_created(rules, d) => {
            return Decision::Refuse(Conflict::JustCreated { symlink: true });
        }
        Some(Err(Errno::NOENT)) if opts.dangling_symlink == DanglingSymlink::Refuse => {
            return Decision::Refuse(Conflict::Dangling);
        }
        Some(Err(Errno::NOENT)) => *d,
        // cp knows nothing of a destination it cannot stat: none of -n, -u, -i or its other
        // checks apply; under -f it opens it (ELOOP), removes it and makes a new file.
        Some(Err(Errno::LOOP)) if opts.force => {
            return write_or_link(rules, src, d, fresh, replacement(opts, src, d, fresh));
        }
        Some(Err(e)) => return Decision::Refuse(Conflict::CannotStat(e.raw_os_error())),
    };
    // cp 9.1 does not ask whether the two are one file under -n: an existing non-directory
    // is skipped, the same file too (no failure), and a directory merged (into itself, where
    // every entry is there already and skipped).
    let no_clobber = opts.overwrite == Overwrite::NoClobber;
    if no_clobber && !src.is_dir() {
        return Decision::Skip;
    }
    let same = if no_clobber {
        Same::Fine
    } else {
        same_file(rules, src, &seen, d, look)
    };
    // Where there is nothing to do, cp still applies -u and asks under -i first.
    let done = match same {
        Same::Fine => false,
        Same::Done => true,
        Same::Refused => return Decision::Refuse(Conflict::SameFile),
    };
    if src.is_dir() {
        // -l onto the very directory: cp returns before its walk, leaving all below alone.
        if done {
            return Decision::Skip;
        }
        return if d.is_dir() {
            Decision::Merge
        } else {
            Decision::Refuse(Conflict::NonDirectoryInTheWay)
        };
    }
    // A node read as a file under -P finds the old entry removed first, as if nothing were
    // there: no FIFO or device to write into, nor a file to keep the mode of.
    let removed = rules.read_node && removed_before(rules, src, d);
    let replace = replacement(opts, src, d, fresh || removed);
    let up_to_date = match opts.overwrite {
        Overwrite::NoClobber => true,
        Overwrite::NoneFail => return Decision::Refuse(Conflict::NotReplacing),
        Overwrite::Replace => false,
        Overwrite::Update => not_older(rules, src, d, &seen, fresh, replace),
    };
    if up_to_date {
        return Decision::Skip;
    }
    if opts.interactive && rules.ask.is_some_and(|ask| !ask()) || done {
        return Decision::Skip;
    }
    // cp's rule for two sources with one destination name, after -i asks. cp words it by how
    // it looked at the destination: a symlink it looks through (a regular file would be
    // written through it) is one it will not copy through; otherwise it will not overwrite
    // what it made.
    if just_created(rules, d) {
        let through = looked_through(opts, src, d);
        return Decision::Refuse(Conflict::JustCreated { symlink: through });
    }
    // After -n, -u and -i, as in cp: a directory is left alone without a word where they
    // say so. A symlink to one, which cp would write through, is refused alike.
    if seen.is_dir() {
        return Decision::Refuse(Conflict::DirectoryInTheWay);
    }
    // cp checks this last, just before it would rename the old entry to its backup name.
    if opts.backup.is_some() && rules.backup_is_source.is_some_and(|is_source| is_source()) {
        return Decision::Refuse(Conflict::BackupIsSource);
    }
    write_or_link(rules, src, d, fresh, replace)
}

/// `-u`: whether `d` (seen as `seen` through a symlink cp looks through) is kept.
fn not_older(
    rules: &Rules<'_>,
    src: &Meta,
    d: &Meta,
    seen: &Meta,
    fresh: bool,
    replace: Decision,
) -> bool {
    let into_node = src.is_reg() && is_node(d);
    // A node or a directory is never a copy, nor a node's contents: cp's rule (not older
    // than the source) decides.
    if into_node || is_node(src) || d.is_dir() {
        return d.mtime >= src.mtime;
    }
    // Nor is a link (-l, -s) ever a half-made copy: cp's rule, but a copy an earlier run
    // left marked incomplete is replaced.
    if rules.opts.link.is_some() {
        let marked = d.is_reg() && crash::marked_incomplete(d, src);
        return !marked && d.mtime >= src.mtime;
    }
    // A symlink cp would write through: cp's rule, on what it points to (a dangling one is
    // as nothing there to cp).
    if d.is_symlink() && !seen.is_symlink() {
        return seen.mtime >= src.mtime;
    }
    // Where the stricter rule would replace what cannot be replaced (a file this process may
    // not write, without -f, an entry --attributes-only cannot make where one is, or anything
    // in a directory it may not change), cp's rule alone decides, so that what cp skips is
    // skipped rather than failed.
    is_complete_copy(rules, d, src)
        || d.mtime >= src.mtime
            && (matches!(
                write_or_link(rules, src, d, fresh, replace),
                Decision::Refuse(Conflict::NotWritable | Conflict::Exists { .. })
            ) || rules.changeable.is_some_and(|may| !may()))
}

/// `-l`: whether the kernel will not link `src` for the process `p` under `opts`
/// (`fs.protected_hardlinks`): another user's entry that is not a regular file it may read and
/// write, or is set-uid, or set-gid and group-executable.
pub(crate) fn kernel_refuses_link(opts: &Options, p: &Process, src: &Meta) -> bool {
    if opts.link != Some(LinkInstead::Hard) || p.euid == 0 || src.uid == p.euid {
        return false;
    }
    let m = src.perm();
    let set_id = m & 0o4000 != 0 || m & 0o2010 == 0o2010;
    let rw = if src.gid == p.egid { 0o060 } else { 0o006 };
    protected_hardlinks() && (!src.is_reg() || set_id || m & rw != rw)
}

/// Whether `fs.protected_hardlinks` is on (read once; on where it cannot be read, as on
/// most systems).
fn protected_hardlinks() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/fs/protected_hardlinks")
            .map_or(true, |s| s.trim() != "0")
    })
}

/// Whether `d` is what an earlier source of the same destination name made, which cp will not
/// replace (numbered backups keep both).
fn just_created(rules: &Rules<'_>, d: &Meta) -> bool {
    rules.just_created == Some(d.id()) && rules.opts.backup != Some(Backup::Numbered)
}

/// cp's last checks before it replaces `d`: what it opens to write into must be writable,
/// and it links only where it removes what is there.
fn write_or_link(
    rules: &Rules<'_>,
    src: &Meta,
    d: &Meta,
    fresh: bool,
    replace: Decision,
) -> Decision {
    let opts = rules.opts;
    let into_node = src.is_reg() && is_node(d);
    if let Decision::Refuse(_) = replace {
        return replace;
    }
    // cp opens the file (or node) to write into it, which fails where it may not write; with
    // -f it removes it and makes a new file. Atomic replacement would need no such right, but
    // a file made read-only stays as cp leaves it. A link is made without opening it, and
    // what cp removes first (a symlink or FIFO copied as one, say) is never opened.
    let opened = opts.link.is_none()
        && !removed_before(rules, src, d)
        && matches!(
            replace,
            Decision::Replace | Decision::InPlace | Decision::WriteInto
        );
    // Only a regular file (or a node read as one: without -r, or with --copy-contents) is
    // copied by opening the destination: a FIFO, socket or device node copied as one is made
    // by a call that finds the entry there.
    let node = !(src.is_reg() || src.is_dir() || src.is_symlink());
    let as_node = node && opts.recursive && !opts.copy_contents;
    let read = src.is_reg() || node && !as_node;
    let written = read && (d.is_reg() || into_node);
    if opened && rules.process.euid != 0 && written && !(rules.writable)() {
        if !opts.force {
            return Decision::Refuse(Conflict::NotWritable);
        }
        return Decision::Recreate;
    }
    if let Some(kind) = opts.link {
        // cp links only where nothing is, unless told to remove what is there, or it removes
        // it first anyway.
        if !(fresh || opts.force || removed_before(rules, src, d)) {
            return Decision::Refuse(Conflict::LinkExists(kind));
        }
        return Decision::Recreate;
    }
    // A FIFO, socket or device node is made by one call. cp removes what is there first only
    // where it does not follow symlinks for the entry (-P, or below the command line under
    // -H) or keeps a link group; elsewhere (-L, a command-line source under -H) the call
    // finds the old entry there, also under -f.
    if as_node && rules.follows && !fresh && !removed_before(rules, src, d) {
        return Decision::Refuse(Conflict::Exists { op: made_op(src) });
    }
    replace
}

/// Whether cp looks at the destination symlink `d` through it: where it would write the
/// regular file `src` into what it points to (nothing removes it first, no link is made).
pub(crate) fn looked_through(opts: &Options, src: &Meta, d: &Meta) -> bool {
    let fresh = opts.remove_destination || opts.backup.is_some();
    d.is_symlink() && src.is_reg() && !fresh && opts.link.is_none()
}

/// Whether cp's own `-u`, which compares times only, skips `src` onto `d` as not older, where
/// mimeo's, which also compares sizes, would replace it. mimeo keeps to cp's rule where it
/// cannot read the source: cp skips before it opens the source, so that is no failure there.
/// (A symlink cp looks through is compared by what it leads to, which the decision did.)
pub(crate) fn cp_skips_as_not_older(opts: &Options, src: &Meta, d: &Meta) -> bool {
    opts.overwrite == Overwrite::Update && d.mtime >= src.mtime && !looked_through(opts, src, d)
}

/// `-f` onto a destination symlink that cp looks through but cannot open for writing (a loop,
/// or a file or node this user may not write): the open fails, so cp removes the symlink
/// (saying "removed" under -v) and makes a new file.
pub(crate) fn symlink_removed(rules: &Rules<'_>, src: &Meta, d: &Meta, look: &Lookups<'_>) -> bool {
    let opts = rules.opts;
    if !opts.force || !looked_through(opts, src, d) {
        return false;
    }
    match (look.dst_target)() {
        Err(e) => e == Errno::LOOP,
        Ok(t) => {
            let opened = t.is_reg() || is_node(&t);
            opened && rules.process.euid != 0 && !(rules.writable)()
        }
    }
}

/// Whether cp removes the existing destination `d` before it copies `src` there, and says
/// "removed 'd'" under -v (a run that goes on to copy), before the copy's own line: with
/// `--remove-destination`, for a link group it keeps (`--preserve=links`), or for a source
/// that is not a regular file under `-P`, unless a backup takes the name first.
pub(crate) fn removed_first(rules: &Rules<'_>, src: &Meta, d: &Meta) -> bool {
    let opts = rules.opts;
    !d.is_dir() && opts.backup.is_none() && removed_before(rules, src, d)
}

/// Whether cp, with `-f`, removes the existing file or node `d` it could not open for
/// writing: it says "removed 'd'" under -v after the copy's own line (it tried the open
/// first).
pub(crate) fn unopened_removed(rules: &Rules<'_>, src: &Meta, d: &Meta) -> bool {
    let opts = rules.opts;
    opts.force
        && opts.backup.is_none()
        && opts.link.is_none()
        && src.is_reg()
        && (d.is_reg() || is_node(d))
        && rules.process.euid != 0
        && !(rules.writable)()
}

/// cp's rule for removing an existing non-directory `d` before it copies `src` there (no
/// backup taking the name first): `--remove-destination`; and where it copies data (not
/// `--attributes-only`), a link group it keeps (`--preserve=links`) or a source that is not
/// a regular file under `-P` (which is also `-H`'s below the command line's names).
fn removed_before(rules: &Rules<'_>, src: &Meta, d: &Meta) -> bool {
    let opts = rules.opts;
    let never = match opts.dereference {
        Dereference::Never => true,
        Dereference::CommandLine => !rules.follows,
        Dereference::Always => false,
    };
    let data = !opts.attributes_only;
    let regular = src.is_reg() && !rules.read_node;
    let replaced = opts.preserve.links && d.nlink > 1 || never && !regular;
    opts.remove_destination || data && replaced
}

/// How an existing non-directory `d` is replaced, before the flags that skip or refuse it.
fn replacement(opts: &Options, src: &Meta, d: &Meta, fresh: bool) -> Decision {
    let into_node = src.is_reg() && is_node(d);
    // A regular file is never written through a destination symlink, but replaces it.
    let through_symlink = src.is_reg() && d.is_symlink();
    if fresh {
        Decision::Recreate
    } else if opts.attributes_only && opts.link.is_none() && !into_node && !through_symlink {
        // With -l or -s, cp makes a link whatever --attributes-only says (and words its
        // failure as a link's).
        attributes_only(opts, src, d)
    } else if opts.preserve.links && d.nlink > 1 {
        // cp removes a destination with other links first when it keeps link groups,
        // rather than write into a file that other names share.
        Decision::Recreate
    } else if into_node && opts.force && d.file_type() == sys::S_IFSOCK {
        // A socket cannot be opened to write into (ENXIO): -f removes what cannot be opened.
        Decision::Recreate
    } else if into_node {
        Decision::WriteInto
    } else if src.is_reg() && d.is_reg() && opts.inplace {
        Decision::InPlace
    } else {
        Decision::Replace
    }
}

/// `--attributes-only` onto an existing entry, which keeps its data whatever its links: a
/// regular file is opened and only its attributes set; a new entry of any other kind cannot be
/// made where one is, as in cp, but for a symlink under `-f`, which replaces the entry (cp's
/// `force_symlinkat`).
fn attributes_only(opts: &Options, src: &Meta, d: &Meta) -> Decision {
    if src.is_reg() && d.is_reg() {
        Decision::InPlace
    } else if src.is_symlink() && opts.force {
        Decision::Replace
    } else {
        Decision::Refuse(Conflict::Exists { op: made_op(src) })
    }
}

/// The call that makes a new entry for the source `src` that is no regular file (named in
/// its failure; cp names a FIFO's apart, "cannot create fifo").
fn made_op(src: &Meta) -> Op {
    match src.file_type() {
        sys::S_IFLNK => Op::Symlink,
        sys::S_IFIFO => Op::MakeFifo,
        _ => Op::MakeNode,
    }
}

/// What cp's `same_file_ok` says of two entries that may be one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Same {
    /// Go on with the copy.
    Fine,
    /// Nothing to do, and no failure (a hard link that is there already).
    Done,
    /// "are the same file".
    Refused,
}

/// coreutils' `same_file_ok`, rule for rule: whether copying `src` (looked at as
/// [`Rules::follows`] says) onto `dst` (the destination as cp looks at it: through a
/// symlink where it would write through it; `dst_link` is the entry itself) could destroy
/// the data, given how the options replace the destination.
fn same_file(
    rules: &Rules<'_>,
    src: &Meta,
    dst: &Meta,
    dst_link: &Meta,
    look: &Lookups<'_>,
) -> Same {
    let opts = rules.opts;
    let hard = opts.link == Some(LinkInstead::Hard);
    let same = src.id() == dst.id();
    if same && hard {
        return Same::Done;
    }
    let (src_link, dst_link, same_link) = if rules.follows {
        if !same {
            return Same::Fine;
        }
        let Some(src_link) = (look.src)(false) else {
            return Same::Fine;
        };
        let both_links = src_link.is_symlink() && dst_link.is_symlink();
        if both_links && opts.remove_destination {
            return Same::Fine;
        }
        (src_link, *dst_link, src_link.id() == dst_link.id())
    } else {
        // Two symlinks: fine unless they are one entry; two links of one symlink are left
        // as they are, unless a backup is made. (Two inodes are never one entry: no lookup
        // for a symlink copied again onto its earlier copy.)
        if src.is_symlink() && dst.is_symlink() {
            if !same {
                return Same::Fine;
            }
            return match ((look.same_entry)(), opts.backup.is_some()) {
                (true, _) => Same::Refused,
                (false, false) => Same::Done,
                (false, true) => Same::Fine,
            };
        }
        (*src, *dst, same)
    };
    if opts.backup.is_some() {
        // A backup keeps what is replaced, unless the source is the entry backed up, or a
        // symlink that the backup would leave dangling.
        return if !same_link {
            let dangles = rules.follows && src_link.is_symlink() && !dst_link.is_symlink();
            if dangles { Same::Refused } else { Same::Fine }
        } else if (look.same_entry)() {
            Same::Refused
        } else {
            Same::Fine
        };
    }
    if opts.remove_destination
        && (dst_link.is_symlink() || (same_link && dst_link.nlink > 1 && !(look.same_entry)()))
    {
        return Same::Fine;
    }
    if !src_link.is_symlink() && !dst_link.is_symlink() {
        if src_link.id() != dst_link.id() {
            return Same::Fine;
        }
        if hard {
            return Same::Done;
        }
    }
    if opts.link == Some(LinkInstead::Symbolic) && dst_link.is_symlink() {
        return Same::Fine;
    }
    if !rules.follows {
        let s = if src_link.is_symlink() {
            (look.src)(true)
        } else {
            Some(src_link)
        };
        let d = if dst_link.is_symlink() {
            (look.dst_target)().ok()
        } else {
            Some(dst_link)
        };
        let (Some(s), Some(d)) = (s, d) else {
            return Same::Fine;
        };
        if s.id() != d.id() {
            return Same::Fine;
        }
        if hard {
            return if dst_link.is_symlink() {
                Same::Fine
            } else {
                Same::Done
            };
        }
    }
    Same::Refused
}

/// A FIFO, socket or device node.
fn is_node(m: &Meta) -> bool {
    !(m.is_reg() || m.is_dir() || m.is_symlink())
}

/// `-u`: the destination is of the same type, the same size and not older, and not marked
/// incomplete. In a suspect directory it must also be provably finished.
fn is_complete_copy(rules: &Rules<'_>, d: &Meta, src: &Meta) -> bool {
    if d.file_type() != src.file_type() {
        return false;
    }
    if d.is_reg() && crash::marked_incomplete(d, src) {
        return false;
    }
    if rules.suspect && !provably_finished(rules, d, src) {
        return false;
    }
    // An --attributes-only copy never has the source's data.
    let same_size = !d.is_reg() || rules.opts.attributes_only || d.size == src.size;
    same_size && d.mtime >= src.mtime
}

/// Whether what a copy sets last, in order (owner, then times, then mode), matches the source
/// exactly. Without preserved times nothing proves that a copy got past its data, so nothing is
/// taken as finished.
fn provably_finished(rules: &Rules<'_>, d: &Meta, src: &Meta) -> bool {
    let p = rules.opts.preserve;
    let owner = !p.ownership || rules.process.euid != 0 || (d.uid, d.gid) == (src.uid, src.gid);
    let mode = !p.mode || d.is_symlink() || d.perm() == src.perm();
    p.timestamps && d.mtime == src.mtime && owner && mode
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
