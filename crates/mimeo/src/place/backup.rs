//! Backups of replaced destinations (`--backup`), named as cp names them: `NAME~` (simple,
//! with the chosen suffix) or `NAME.~N~` (numbered).
//!
//! cp renames the old entry to its backup name and then creates the new one, so for a moment
//! the destination name is missing. Here the backup is a hard link to the old entry, made
//! just before the finished copy is renamed over the name: the name always refers to the old
//! or the new entry, and the backup keeps the old one.

use super::crash;
use crate::options::Backup;
use crate::sys::{self, DType, DirReader, Errno};
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
