//! Putting an entry into the destination: what to do with an existing entry, temporaries that
//! are renamed over it atomically, and hard links to a group's first copy.

use crate::error::{Error, Op};
use crate::links::{Claim, FirstCopy};
use crate::options::Overwrite;
use crate::summary::EntryKind;
use crate::sys::{self, Errno, Meta};
use crate::tree::{Here, LinkLoc, Run};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::{CStr, CString};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What to do when the destination name is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Existing {
    Skip,
    Replace,
    /// The destination is a FIFO, socket or device node and the source a regular file: the
    /// data is written into the node, as cp does (how images are written to block devices).
    /// Atomic replacement is for regular files only.
    WriteInto,
}

/// Whether copying `src` onto `dst` would copy a file onto itself, by cp's rule
/// (`same_file_ok` in coreutils). Symlinks count by what they point to: a source symlink
/// onto its own target, or a source onto a destination symlink that points to it, would
/// destroy the data, so both are refused. Two distinct symlinks are fine (one replaces the
/// other). The targets are only looked up (`src_target`, `dst_target`: the entry followed)
/// when a symlink is involved; a dangling one is never the same file.
pub(crate) fn is_same_file(
    src: &Meta,
    src_target: impl FnOnce() -> Option<Meta>,
    dst: &Meta,
    dst_target: impl FnOnce() -> Option<Meta>,
) -> bool {
    if src.id() == dst.id() {
        return true;
    }
    if src.is_symlink() && dst.is_symlink() {
        return false;
    }
    let s = if src.is_symlink() {
        src_target()
    } else {
        Some(*src)
    };
    let Some(s) = s else { return false };
    let d = if dst.is_symlink() {
        dst_target()
    } else {
        Some(*dst)
    };
    d.is_some_and(|d| d.id() == s.id())
}

/// The entry `name` of `dir`, followed: what a symlink there points to.
pub(crate) fn followed(dir: BorrowedFd<'_>, name: &CStr) -> impl FnOnce() -> Option<Meta> {
    move || sys::stat_at(dir, name, true).ok()
}

/// Applies `-n` / `-u` / replace to an existing destination entry. `src_name` is the source
/// in `here.src_dir`, for the same-file check.
pub(crate) fn existing(
    run: &Run<'_>,
    here: &Here<'_>,
    src_name: &CStr,
    dst_name: &CStr,
    src: &Meta,
) -> Result<Existing, Error> {
    let d = sys::stat_at(here.dst_dir, dst_name, false)
        .map_err(|e| Error::io(Op::Stat, here.dst_path(dst_name), sys::io_err(e)))?;
    existing_as(run, here, src_name, dst_name, &d, src)
}

/// [`existing`] for a destination entry whose metadata `d` is already known.
pub(crate) fn existing_as(
    run: &Run<'_>,
    here: &Here<'_>,
    src_name: &CStr,
    dst_name: &CStr,
    d: &Meta,
    src: &Meta,
) -> Result<Existing, Error> {
    let dst_path = || here.dst_path(dst_name);
    if d.is_dir() {
        return Err(Error::refused(
            Op::Create,
            dst_path(),
            "cannot overwrite directory with non-directory",
        ));
    }
    if is_same_file(
        src,
        followed(here.src_dir, src_name),
        d,
        followed(here.dst_dir, dst_name),
    ) {
        return Err(crate::tree::same_file(
            &here.src_path(src_name),
            &dst_path(),
        ));
    }
    let into_node = src.is_reg() && is_node(d);
    let replace = if into_node {
        Existing::WriteInto
    } else {
        Existing::Replace
    };
    Ok(match run.opts.overwrite {
        Overwrite::NoClobber => Existing::Skip,
        Overwrite::Replace => replace,
        // A node is never "complete": cp's rule (older than the source) decides.
        Overwrite::Update if into_node => {
            if d.mtime >= src.mtime {
                Existing::Skip
            } else {
                replace
            }
        }
        Overwrite::Update => {
            let suspect = here.node.is_some_and(|n| n.is_suspect());
            if is_complete_copy(run, d, src, suspect) {
                Existing::Skip
            } else {
                replace
            }
        }
    })
}

/// A FIFO, socket or device node.
fn is_node(m: &Meta) -> bool {
    !(m.is_reg() || m.is_dir() || m.is_symlink())
}

/// `-u`: the destination is the same size and not older, and not marked incomplete. In a
/// `suspect` directory (one that a killed run was writing), it must also be provably finished.
pub(crate) fn is_complete_copy(run: &Run<'_>, d: &Meta, src: &Meta, suspect: bool) -> bool {
    if d.file_type() != src.file_type() {
        return false;
    }
    if d.is_reg() && incomplete(d, src) {
        return false;
    }
    if suspect && !provably_finished(run, d, src) {
        return false;
    }
    let same_size = !d.is_reg() || d.size == src.size;
    same_size && d.mtime >= src.mtime
}

/// Whether what a copy sets last, in order (owner, then times, then mode), matches the source
/// exactly. Without preserved times nothing proves that a copy got past its data, so nothing is
/// taken as finished.
fn provably_finished(run: &Run<'_>, d: &Meta, src: &Meta) -> bool {
    let p = run.opts.preserve;
    let owner = !p.ownership || run.process.euid != 0 || (d.uid, d.gid) == (src.uid, src.gid);
    let mode = !p.mode || d.is_symlink() || d.perm() == src.perm();
    p.timestamps && d.mtime == src.mtime && owner && mode
}

/// A regular file created where no in-progress marker covers it (a file given alone, or a
/// directory that refused the marker, see `journal`) carries the sticky bit, which no complete
/// copy of a file without it carries: a copy interrupted before its final chmod is
/// recognisable as incomplete.
pub(crate) fn incomplete(d: &Meta, src: &Meta) -> bool {
    d.mode & sys::S_ISVTX != 0 && src.mode & sys::S_ISVTX == 0
}

/// The mode a new regular file gets until its data and metadata are complete.
pub(crate) fn incomplete_mode(src: &Meta) -> u32 {
    sys::S_ISVTX | (src.perm() & 0o700)
}

/// The mode a regular file is created with when it needs no mark of its own (a temporary, or a
/// new file in a directory that carries the in-progress marker): the final permission bits
/// when the owner it gets at creation is already the right one, only the owner's bits when a
/// chown is still to come (so that nobody else can open it meanwhile). Never set-id bits:
/// those come after the chown, which would clear them.
pub(crate) fn unmarked_mode(run: &Run<'_>, here: &Here<'_>, src: &Meta) -> u32 {
    let p = run.opts.preserve;
    let perm = if p.mode {
        src.perm() & 0o777
    } else {
        src.perm() & 0o777 & !run.process.umask
    };
    let owner_changes = p.ownership
        && (here.dst_setgid || (src.uid, src.gid) != (run.process.euid, run.process.egid));
    if owner_changes { perm & 0o700 } else { perm }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary name in the destination directory, unique within this process. `dir` is the
/// directory's path with a trailing slash when names are resolved from the working directory
/// (see `Here::dst_prefix`), and empty when they are relative to an open directory.
fn temp_name(dir: &[u8]) -> CString {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let pid = *PID.get_or_init(std::process::id);
    let mut name = dir.to_vec();
    name.extend_from_slice(format!(".mimeo-{pid}-{n:x}.tmp").as_bytes());
    sys::cstring(&name)
}

/// Creates something under a fresh temporary name with `make`, retrying on a name clash.
pub(crate) fn with_temp<T>(
    here: &Here<'_>,
    mut make: impl FnMut(&CStr) -> sys::Result<T>,
) -> sys::Result<(T, CString)> {
    loop {
        let name = temp_name(here.dst_prefix);
        match make(&name) {
            Ok(v) => return Ok((v, name)),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Moves a finished temporary over the destination name.
///
/// An entry without data of its own written by us (a clone, an empty file, a link, a special
/// file) is renamed over the destination in one step. A file whose data was written (`dirty`)
/// is exchanged with it instead (`RENAME_EXCHANGE`) and the old entry, now under the temporary
/// name, is unlinked: the destination name still always refers to the old or the new file, but
/// ext4 does not force the new file's data to disk as it does when a rename replaces a file
/// (its `auto_da_alloc` heuristic), which made each replacement cost a flush.
pub(crate) fn commit_temp(
    here: &Here<'_>,
    temp: &CStr,
    dst_name: &CStr,
    dirty: bool,
) -> Result<(), Error> {
    if dirty && sys::exchange(here.dst_dir, temp, dst_name).is_ok() {
        // Whatever stood at the destination is now under the temporary name.
        let _ = sys::unlink(here.dst_dir, temp, false);
        return Ok(());
    }
    // A plain rename (also when the destination vanished, or the filesystem lacks exchange).
    match sys::rename(here.dst_dir, temp, here.dst_dir, dst_name) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = sys::unlink(here.dst_dir, temp, false);
            Err(Error::io(
                Op::Rename,
                here.dst_path(dst_name),
                sys::io_err(e),
            ))
        }
    }
}

/// The outcome of looking a multiply-linked source up in the link map.
pub(crate) enum LinkStep {
    /// Linked to an earlier copy (or left alone): nothing more to do.
    Done,
    /// Copy it; `Some` when it is a group's first copy and others will link to it.
    Copy(Option<FirstCopy<LinkLoc>>),
}

/// With `--preserve=links`, links to an earlier copy of the same inode, or claims the inode.
pub(crate) fn link_or_claim(
    run: &Run<'_>,
    here: &Here<'_>,
    src_name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<LinkStep, Error> {
    let Some(anchor) = here.dst_anchor else {
        // A file copied on its own (`copy_file`): there is no group to join.
        return Ok(LinkStep::Copy(None));
    };
    if !run.opts.preserve.links || meta.nlink < 2 || meta.is_dir() {
        return Ok(LinkStep::Copy(None));
    }
    let loc = match run.links.claim(meta.id(), meta.nlink as u64) {
        Claim::First(first) => return Ok(LinkStep::Copy(Some(first))),
        Claim::LinkTo(loc) => loc,
    };
    let dst_path = || here.dst_path(dst_name);
    let same_dir = Arc::ptr_eq(&loc.anchor, anchor) && loc.rel == *here.dst_rel;
    let other: Option<OwnedFd> = if same_dir {
        None
    } else {
        Some(
            sys::open_dir_beneath(loc.anchor.as_fd(), &loc.rel)
                .map_err(|e| Error::io(Op::Link, dst_path(), sys::io_err(e)))?,
        )
    };
    let from = other.as_ref().map_or(here.dst_dir, |fd| fd.as_fd());
    match sys::link(from, &loc.name, here.dst_dir, dst_name) {
        Ok(()) => {}
        Err(Errno::EXIST) => {
            if existing(run, here, src_name, dst_name, meta)? == Existing::Skip {
                run.skipped(here, src_name, dst_name);
                return Ok(LinkStep::Done);
            }
            let ((), temp) = with_temp(here, |t| sys::link(from, &loc.name, here.dst_dir, t))
                .map_err(|e| Error::io(Op::Link, dst_path(), sys::io_err(e)))?;
            commit_temp(here, &temp, dst_name, false)?;
            // Renaming onto another link of the same inode does nothing: drop the temporary.
            let _ = sys::unlink(here.dst_dir, &temp, false);
        }
        Err(e) => return Err(Error::io(Op::Link, dst_path(), sys::io_err(e))),
    }
    run.copied(here, src_name, dst_name, EntryKind::HardLink, None);
    Ok(LinkStep::Done)
}

/// Records where a group's first copy now lives, for the links that follow.
pub(crate) fn first_done(first: Option<FirstCopy<LinkLoc>>, here: &Here<'_>, dst_name: &CStr) {
    // A first copy is only claimed where there is an anchor (see `link_or_claim`).
    if let (Some(first), Some(anchor)) = (first, here.dst_anchor) {
        first.done(LinkLoc {
            anchor: anchor.clone(),
            rel: here.dst_rel.clone(),
            name: dst_name.to_owned(),
        });
    }
}

/// Removes what an interrupted run (SIGKILL, power loss) of another process left in a
/// destination directory: temporaries (`.mimeo-PID-N.tmp`) and its in-progress marker
/// (`.mimeo-PID-N.partial`, see `journal`), of processes that no longer run. Called on the
/// directories a run merges into (except under `-n`), so that a re-run leaves the tree equal
/// to the source.
/// Returns whether a marker was among them: the directory's entries are then suspect.
pub(crate) fn remove_leftovers(reader: &mut sys::DirReader, dir: BorrowedFd<'_>) -> bool {
    let mut found = Vec::new();
    let mut marked = false;
    let _ = reader.read_all(dir, |name, t| {
        if t != sys::DType::Dir {
            if let Some(kind) = leftover(name.to_bytes()) {
                marked |= kind == Leftover::Marker;
                found.push(name.to_owned());
            }
        }
    });
    for name in found {
        let _ = sys::unlink(dir, &name, false);
    }
    marked
}

/// Whether a directory holds the in-progress marker of a process that no longer runs
/// (`--dry-run` of `-u`, which changes nothing).
pub(crate) fn has_stale_marker(reader: &mut sys::DirReader, dir: BorrowedFd<'_>) -> bool {
    let mut marked = false;
    let _ = reader.read_all(dir, |name, t| {
        marked |= t != sys::DType::Dir && leftover(name.to_bytes()) == Some(Leftover::Marker);
    });
    marked
}

#[derive(Debug, PartialEq, Eq)]
enum Leftover {
    Temp,
    Marker,
}

/// A temporary or an in-progress marker of a process that no longer runs.
fn leftover(name: &[u8]) -> Option<Leftover> {
    let rest = name.strip_prefix(b".mimeo-")?;
    let (rest, kind) = match rest.strip_suffix(b".tmp") {
        Some(r) => (r, Leftover::Temp),
        None => (rest.strip_suffix(b".partial")?, Leftover::Marker),
    };
    let (pid, n) = std::str::from_utf8(rest).ok()?.split_once('-')?;
    let pid = pid.parse::<u32>().ok()?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let dead = pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists();
    dead.then_some(kind)
}

#[cfg(test)]
mod tests {
    use super::{Leftover, leftover};

    #[test]
    fn only_leftovers_of_dead_processes_count() {
        assert_eq!(leftover(b".mimeo-4000000-1f.tmp"), Some(Leftover::Temp));
        assert_eq!(
            leftover(b".mimeo-4000000-1f.partial"),
            Some(Leftover::Marker)
        );
        let mine = format!(".mimeo-{}-0.tmp", std::process::id());
        assert_eq!(leftover(mine.as_bytes()), None);
        let mine = format!(".mimeo-{}-0.partial", std::process::id());
        assert_eq!(leftover(mine.as_bytes()), None);
        assert_eq!(leftover(b".mimeo-1-0.tmp"), None, "pid 1 runs");
        assert_eq!(leftover(b".mimeo-1-0.partial"), None, "pid 1 runs");
        assert_eq!(leftover(b".mimeo-x-0.tmp"), None);
        assert_eq!(leftover(b".mimeo-4000000-.tmp"), None);
        assert_eq!(leftover(b"mimeo-4000000-1.tmp"), None);
        assert_eq!(leftover(b".mimeo-4000000-1.tmp.bak"), None);
        assert_eq!(leftover(b".mimeo-4000000-1.partial~"), None);
    }
}
