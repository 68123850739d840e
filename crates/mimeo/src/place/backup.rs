//! Backups of replaced destinations (`--backup`), named as cp names them: `NAME~` (simple,
//! with the chosen suffix) or `NAME.~N~` (numbered).
//!
//! cp renames the old entry to its backup name and then creates the new one, so for a moment
//! the destination name is missing. Here the backup is a hard link to the old entry, made
//! just before the finished copy is renamed over the name: the name always refers to the old
//! or the new entry, and the backup keeps the old one.

use super::crash;
use crate::options::Backup;
use crate::sys::{self, DType, DirReader, Errno, Meta};
use rustix::fd::{AsFd, BorrowedFd};
use std::ffi::{CStr, CString};

/// Links the existing entry `dir/name` to its backup name, replacing an older backup of that
/// name (simple backups). `name` may be a path below `dir` when `prefix` (its directory, with
/// a trailing slash) is not empty. Returns the backup's name, as a path like `name`.
pub(crate) fn make(
    dir: BorrowedFd<'_>,
    name: &CStr,
    prefix: &[u8],
    backup: &Backup,
) -> sys::Result<CString> {
    let base = &name.to_bytes()[prefix.len()..];
    let numbered = match backup {
        Backup::Numbered => true,
        Backup::Simple { .. } => false,
        Backup::Existing { .. } => highest_number(dir, prefix, base)?.is_some(),
    };
    if numbered {
        loop {
            let n = highest_number(dir, prefix, base)?.unwrap_or(0) + 1;
            let mut path = name.to_bytes().to_vec();
            path.extend_from_slice(format!(".~{n}~").as_bytes());
            let path = sys::cstring(&path);
            match sys::link(dir, name, dir, &path) {
                // Another run took this number meanwhile: count again.
                Err(Errno::EXIST) => continue,
                other => return other.map(|()| path),
            }
        }
    }
    let suffix = match backup {
        Backup::Simple { suffix } | Backup::Existing { suffix } => suffix.as_bytes(),
        Backup::Numbered => unreachable!("numbered backups are made above"),
    };
    let mut path = name.to_bytes().to_vec();
    path.extend_from_slice(suffix);
    let path = sys::cstring(&path);
    match sys::link(dir, name, dir, &path) {
        Err(Errno::EXIST) => {
            // An older backup: replaced in one step by a link made under a temporary name.
            let ((), temp) = crash::with_temp(prefix, |t| sys::link(dir, name, dir, t))?;
            sys::rename(dir, &temp, dir, &path).inspect_err(|_| {
                let _ = sys::unlink(dir, &temp, false);
            })?;
            Ok(path)
        }
        other => other.map(|()| path),
    }
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

/// The highest N of the `base.~N~` entries in the directory `prefix` of `dir`.
fn highest_number(dir: BorrowedFd<'_>, prefix: &[u8], base: &[u8]) -> sys::Result<Option<u64>> {
    let listed = if prefix.is_empty() {
        sys::open_dir(dir, c".", false)?
    } else {
        sys::open_dir(dir, &sys::cstring(prefix), true)?
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
    Ok(highest)
}
