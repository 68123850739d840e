//! Backups of replaced destinations (`--backup`), named as cp names them: `NAME~` (simple,
//! with the chosen suffix) or `NAME.~N~` (numbered).
//!
//! cp renames the old entry to its backup name and then creates the new one, so for a moment
//! the destination name is missing. Here the backup is a hard link to the old entry, made
//! just before the finished copy is renamed over the name: the name always refers to the old
//! or the new entry, and the backup keeps the old one. Where the kernel allows no such link
//! (another user's file, under `fs.protected_hardlinks`), the old entry is renamed, as cp
//! renames it.

use super::crash;
use crate::options::Backup;
use crate::sys::{self, DType, DirReader, Errno, Meta};
use rustix::fd::{AsFd, BorrowedFd};
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;

/// Links the existing entry `dir/name` to its backup name, replacing an older backup of that
/// name (simple backups). `name` may be a path below `dir` when `prefix` (its directory, with
/// a trailing slash) is not empty. Returns the backup's name, as a path like `name`.
pub(crate) fn make(
    dir: BorrowedFd<'_>,
    name: &CStr,
    prefix: &[u8],
    backup: &Backup,
) -> sys::Result<CString> {
    loop {
        let (path, numbered, shortened, listed) = backup_name(dir, name, prefix, backup)?;
        let renamed = || sys::rename(dir, name, dir, &path).map(|()| path.clone());
        // A name ending in `/` (a suffix like `s/`) is cp's rename's to judge: it fails with
        // ENOTDIR for a non-directory and moves a directory. A link there fails with ENOENT,
        // which would read as an old entry gone meanwhile.
        if path.to_bytes().ends_with(b"/") {
            return renamed();
        }
        if numbered {
            match sys::link(dir, name, dir, &path) {
                // Another run took this number meanwhile: count again (a shortened name
                // stays the same whatever the number, so cp gives up there). In a directory
                // that could not be listed the count finds the same number again, and cp
                // tries it forever: mimeo fails with EEXIST instead.
                Err(Errno::EXIST) if !shortened && listed => continue,
                Err(Errno::PERM) => return renamed(),
                other => return other.map(|()| path),
            }
        }
        return match sys::link(dir, name, dir, &path) {
            Err(Errno::EXIST) => {
                // An older backup: replaced in one step by a link made under a temporary name.
                let linked = crash::with_temp(prefix, |t| sys::link(dir, name, dir, t));
                let ((), temp) = match linked {
                    Err(Errno::PERM) => return renamed(),
                    other => other?,
                };
                sys::rename(dir, &temp, dir, &path).inspect_err(|_| {
                    let _ = sys::unlink(dir, &temp, false);
                })?;
                Ok(path)
            }
            Err(Errno::PERM) => renamed(),
            other => other.map(|()| path),
        };
    }
}

/// The backup name of `dir/name` as cp's (gnulib's `backupfile`) names it, whether it is a
/// numbered one, and whether it was shortened to fit: a new name (`--backup=existing` without
/// numbered backups, a first or a longer number) whose last component is longer than the
/// filesystem's name limit less one keeps at most that less one of the original name's bytes
/// and ends in `~`. An explicit simple backup is never shortened (its link then fails with
/// ENAMETOOLONG, as cp's rename does). Last, whether the directory was listed.
fn backup_name(
    dir: BorrowedFd<'_>,
    name: &CStr,
    prefix: &[u8],
    backup: &Backup,
) -> sys::Result<(CString, bool, bool, bool)> {
    let name = name.to_bytes();
    let (highest, listed) = match backup {
        Backup::Simple { .. } => (None, true),
        _ => highest_number(dir, prefix, &name[prefix.len()..])?,
    };
    let (mut path, check, numbered) = match (backup, highest) {
        (Backup::Simple { suffix }, _) => ([name, suffix.as_bytes()].concat(), false, false),
        (Backup::Existing { suffix }, None) => ([name, suffix.as_bytes()].concat(), true, false),
        (_, Some(n)) => {
            // A number with one more digit than any existing backup's makes a longer name.
            let longer = (n + 1).to_string().len() > n.to_string().len();
            (
                [name, format!(".~{}~", n + 1).as_bytes()].concat(),
                longer,
                true,
            )
        }
        (Backup::Numbered, None) => ([name, b".~1~"].concat(), true, true),
    };
    let shortened = check && shorten(dir, &mut path, prefix.len(), name.len());
    Ok((sys::cstring(&path), numbered, shortened, listed))
}

/// How cp's rename of `dir/name` to its backup name fails before the kernel checks the
/// directory's permissions, as far as the name decides: a last component longer than the
/// filesystem takes (an explicit simple backup, which is never shortened) with ENAMETOOLONG,
/// else a name ending in `/` (a suffix like `s/`) for a non-directory with ENOTDIR. (`name` a
/// path below `dir`: the limit of `dir`'s filesystem is asked.)
pub(crate) fn refused_by_name(
    dir: BorrowedFd<'_>,
    name: &CStr,
    prefix: &[u8],
    backup: &Backup,
) -> Option<Errno> {
    let (path, ..) = backup_name(dir, name, prefix, backup).ok()?;
    let len = last_component(path.to_bytes()).len() as u64;
    if sys::name_max(dir).is_ok_and(|max| len > max) {
        return Some(Errno::NAMETOOLONG);
    }
    let slashed = path.to_bytes().ends_with(b"/");
    (slashed && sys::stat_at(dir, name, false).is_ok_and(|m| !m.is_dir())).then_some(Errno::NOTDIR)
}

/// gnulib's `check_extension`: a last component longer than the name limit less one is cut to
/// the original name (at most that limit less two bytes) and `~`. Returns whether it was cut.
fn shorten(dir: BorrowedFd<'_>, path: &mut Vec<u8>, base_at: usize, name_len: usize) -> bool {
    /// Below this, gnulib takes any name as fitting, without asking the filesystem.
    const NAME_MAX_MINIMUM: usize = 14;
    let len = path.len() - base_at;
    if len <= NAME_MAX_MINIMUM {
        return false;
    }
    let Ok(max) = sys::name_max(dir) else {
        return false;
    };
    let max = (max as usize).saturating_sub(1);
    if len <= max {
        return false;
    }
    let keep = (name_len - base_at).min(max.saturating_sub(1));
    path.truncate(base_at + keep);
    path.push(b'~');
    true
}

/// cp's guard against a backup that would take the source's place (`source_is_dst_backup`
/// in coreutils): the source's last name is the destination's with the simple-backup suffix
/// added, and that name beside the destination is the source itself (symlinks followed, as
/// cp looks). Refused for every kind of backup but numbered, as cp refuses it; the stat is
/// made only when the names match.
pub(crate) fn is_source(
    src_name: &[u8],
    src: &Meta,
    dir: BorrowedFd<'_>,
    name: &CStr,
    backup: &Backup,
) -> bool {
    let suffix = match backup {
        Backup::Simple { suffix } | Backup::Existing { suffix } => suffix.as_bytes(),
        Backup::Numbered => return false,
    };
    let dst = name.to_bytes();
    let (src_base, dst_base) = (last_component(src_name), last_component(dst));
    if src_base.strip_prefix(dst_base) != Some(suffix) {
        return false;
    }
    let backup_name = sys::cstring(&[dst, suffix].concat());
    sys::stat_at(dir, &backup_name, true).is_ok_and(|m| m.id() == src.id())
}

/// The last name of a path (trailing slashes aside).
fn last_component(path: &[u8]) -> &[u8] {
    let end = path.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    let path = &path[..end];
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// The highest N of the `base.~N~` entries in the directory `prefix` of `dir`, and whether
/// the directory could be opened: gnulib takes one it cannot open (one the user may write
/// but not read) as holding none.
fn highest_number(
    dir: BorrowedFd<'_>,
    prefix: &[u8],
    base: &[u8],
) -> sys::Result<(Option<u64>, bool)> {
    let opened = if prefix.is_empty() {
        sys::open_dir(dir, c".", false)
    } else {
        sys::open_dir(dir, &sys::cstring(prefix), true)
    };
    let listed = match opened {
        Ok(fd) => fd,
        Err(Errno::NOMEM) => return Err(Errno::NOMEM),
        Err(_) => return Ok((None, false)),
    };
    let mut reader = DirReader::new(16 * 1024);
    let mut highest = None;
    reader.read_all(listed.as_fd(), |entry, _: DType| {
        let n = entry
            .to_bytes()
            .strip_prefix(base)
            .and_then(|r| r.strip_prefix(b".~"))
            .and_then(|r| r.strip_suffix(b"~"))
            .filter(|d| !d.is_empty() && d.iter().all(u8::is_ascii_digit) && d[0] != b'0')
            .and_then(|d| std::str::from_utf8(d).ok()?.parse::<u64>().ok());
        if let Some(n) = n {
            highest = highest.max(Some(n));
        }
    })?;
    Ok((highest, true))
}
