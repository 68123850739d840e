//! Whether a source is reached through the destination entry that its copy puts aside first.
//!
//! With `--backup` or `--remove-destination`, cp renames or removes the destination before it
//! opens the source (or hard-links it, `-l`). Where the source's name leads through that entry
//! (`cp -b lf lf`, `lf` a symlink to a file; or `a -> lf -> f` copied onto `lf`), the open
//! then fails ("No such file or directory"), and cp renames the backup back (or, having removed
//! the entry, leaves it gone). mimeo opens the source first, so it asks the question by walking
//! the source's name itself, symlink by symlink, as the kernel resolves it. Only a destination
//! symlink asks it: any other entry on the way would be the source itself (the same file). It
//! renames and removes nothing, so no failure can leave the source under a backup name, and
//! `--remove-destination` does not take away the symlink the source is reached through (cp
//! does: a deliberate difference, "source-path-kept").

use super::context::{Here, Loc};
use crate::sys::{self, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::collections::VecDeque;
use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;

/// The kernel's limit on symlinks followed in one lookup (ELOOP beyond it).
const MAX_LINKS: usize = 40;

/// Whether the source `name` at `here` is reached through the entry `dst_name` of the
/// destination directory. A root is walked from its name as given (its parent was opened
/// through any symlinks in it), an entry below a root from its directory.
pub(super) fn source_through_destination(here: &Here<'_>, name: &CStr, dst_name: &CStr) -> bool {
    match here.loc {
        Loc::Root(_) | Loc::Alone { .. } => {
            let path = here.src_path(name);
            leads_through(
                sys::CWD,
                path.as_os_str().as_bytes(),
                here.dst_dir,
                dst_name,
            )
        }
        Loc::Below(..) => leads_through(here.src_dir, name.to_bytes(), here.dst_dir, dst_name),
    }
}

/// Whether resolving `path` from `start` (following every symlink, the last one too) looks up
/// the entry `dst_dir/dst_name`: that name in that directory. A lookup that fails or loops
/// says no (the open that follows reports it).
fn leads_through(
    start: BorrowedFd<'_>,
    path: &[u8],
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
) -> bool {
    let dst = dst_name.to_bytes();
    let (dst_parent, dst_base) = match dst.iter().rposition(|&b| b == b'/') {
        Some(i) => (&dst[..=i], &dst[i + 1..]),
        None => (&b"."[..], dst),
    };
    let Ok(parent) = sys::stat_at(dst_dir, &sys::cstring(dst_parent), true) else {
        return false;
    };
    walk(start, path, parent, dst_base).unwrap_or(false)
}

/// [`leads_through`]'s walk; None where a lookup failed.
fn walk(start: BorrowedFd<'_>, path: &[u8], parent: Meta, base: &[u8]) -> Option<bool> {
    let open = |dir: BorrowedFd<'_>, name: &CStr| sys::open_dir_path(dir, name, false).ok();
    let mut dir: OwnedFd = match path.starts_with(b"/") {
        true => open(sys::CWD, c"/")?,
        false => open(start, c".")?,
    };
    let mut here = sys::fstat(dir.as_fd()).ok()?;
    let mut pending: VecDeque<Vec<u8>> = components(path).collect();
    let mut links = 0;
    while let Some(c) = pending.pop_front() {
        if c.is_empty() || c == b"." {
            continue;
        }
        if here.id() == parent.id() && c == base {
            return Some(true);
        }
        let name = sys::cstring(&c);
        let m = sys::stat_at(dir.as_fd(), &name, false).ok()?;
        if m.is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            let target = sys::readlink(dir.as_fd(), &name).ok()?;
            let target = target.to_bytes();
            if target.starts_with(b"/") {
                dir = open(sys::CWD, c"/")?;
                here = sys::fstat(dir.as_fd()).ok()?;
            }
            for t in components(target).rev() {
                pending.push_front(t);
            }
            continue;
        }
        if pending.iter().all(|p| p.is_empty() || p == b".") && !m.is_dir() {
            return Some(false);
        }
        // ".." too: looked up in the directory reached, as the kernel does.
        dir = open(dir.as_fd(), &name)?;
        here = sys::fstat(dir.as_fd()).ok()?;
    }
    Some(false)
}

/// The components of a path, in order (empty ones where slashes repeat).
fn components(path: &[u8]) -> impl DoubleEndedIterator<Item = Vec<u8>> + '_ {
    path.split(|&b| b == b'/').map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn through(dir: &std::path::Path, src: &str, dst: &str) -> bool {
        let d = sys::open_dir(sys::CWD, &sys::cstring(dir.as_os_str().as_bytes()), true).unwrap();
        let src = dir.join(src);
        leads_through(
            sys::CWD,
            src.as_os_str().as_bytes(),
            d.as_fd(),
            &sys::cstring(dst.as_bytes()),
        )
    }

    #[test]
    fn a_symlink_onto_itself_a_chain_and_a_directory_link_lead_through() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        std::fs::write(p.join("f"), b"x").unwrap();
        std::fs::create_dir(p.join("d")).unwrap();
        std::fs::write(p.join("d/x"), b"x").unwrap();
        symlink("f", p.join("lf")).unwrap();
        symlink("lf", p.join("a")).unwrap();
        symlink(p.join("d"), p.join("dl")).unwrap();
        symlink("../dl/x", p.join("d/up")).unwrap();
        assert!(through(p, "lf", "lf"));
        assert!(through(p, "./lf", "lf"));
        assert!(through(p, "a", "lf"));
        assert!(through(p, "dl/x", "dl"));
        assert!(through(p, "d/up", "dl"));
        // Another name of the same file, or the file itself, is no way through the entry.
        assert!(!through(p, "f", "lf"));
        assert!(!through(p, "lf", "a"));
        assert!(!through(p, "d/x", "dl"));
        assert!(!through(p, "d/../f", "lf"));
    }

    #[test]
    fn a_loop_or_a_missing_name_says_no() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        symlink("l2", p.join("l1")).unwrap();
        symlink("l1", p.join("l2")).unwrap();
        symlink("gone", p.join("dangling")).unwrap();
        assert!(!through(p, "l1", "x"));
        assert!(!through(p, "dangling", "x"));
        assert!(!through(p, "nothing/x", "x"));
    }
}
