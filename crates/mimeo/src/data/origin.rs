//! Origin records: the extended attribute `user.mimeo.origin` that `mimeo --record-origin`
//! puts on each clone it makes, naming the file the clone's blocks came from, so that a
//! later reader finds the canonical file to read shared ranges through (see
//! [`shared_reads`](super::shared_reads)).
//!
//! A record names a file by identity (device, inode number and, where the filesystem has
//! one, inode generation) and gives its path relative to its mount as a hint:
//!
//! ```text
//! 1 DEV INO GEN PATH        e.g.  1 2049 257 8 images/base.img     (GEN is - where unknown)
//! ```
//!
//! - **Chains.** The clone of a file that carries a valid record gets that same record, so a
//!   clone of a clone of a clone names the first origin, and any number of children of any
//!   depth read through one file.
//! - **Trust.** A reader opens the hint below the mount of the file it reads (never leaving
//!   that mount) and uses it only when device, inode and generation all match the record.
//!   Anything else (the origin deleted, renamed, or its inode number reused by another file)
//!   leaves the reads plain. Even a trusted origin only serves the ranges whose checks pass.

use super::meta::Xattrs;
use crate::sys::{self, XattrTarget};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Mutex;

/// The name of the extended attribute that holds an origin record.
pub(crate) const ORIGIN_XATTR: &CStr = c"user.mimeo.origin";

/// Who the origin is, and where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OriginRecord {
    pub dev: u64,
    pub ino: u64,
    pub generation: Option<u32>,
    /// Relative to the mount the origin was reached through.
    pub path: Vec<u8>,
}

impl OriginRecord {
    /// The record's bytes, as stored in the attribute.
    pub fn encode(&self) -> Vec<u8> {
        let generation = self
            .generation
            .map_or_else(|| "-".to_string(), |g| g.to_string());
        let mut out = format!("1 {} {} {} ", self.dev, self.ino, generation).into_bytes();
        out.extend_from_slice(&self.path);
        out
    }

    /// A record from the attribute's bytes; `None` when it is not one this version writes.
    pub fn decode(bytes: &[u8]) -> Option<OriginRecord> {
        let mut parts = bytes.splitn(5, |&b| b == b' ');
        let mut field = || parts.next().and_then(|p| std::str::from_utf8(p).ok());
        if field()? != "1" {
            return None;
        }
        let dev = field()?.parse().ok()?;
        let ino = field()?.parse().ok()?;
        let generation = match field()? {
            "-" => None,
            g => Some(g.parse().ok()?),
        };
        let path = parts.next()?.to_vec();
        if path.is_empty() || path.starts_with(b"/") || path.contains(&0) {
            return None;
        }
        Some(OriginRecord {
            dev,
            ino,
            generation,
            path,
        })
    }
}

/// Mount points by mount id, from `/proc/self/mountinfo`, remembered for one run (a mount
/// id may be reused once its mount is gone).
#[derive(Debug, Default)]
pub(crate) struct Mounts(Mutex<Vec<(u64, PathBuf)>>);

impl Mounts {
    /// The mount point of the mount an open file was reached through.
    pub fn point_of(&self, fd: BorrowedFd<'_>) -> Option<PathBuf> {
        let id = sys::mount_id(fd).ok()??;
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, p)) = known.iter().find(|(i, _)| *i == id) {
            return Some(p.clone());
        }
        let info = std::fs::read("/proc/self/mountinfo").ok()?;
        let point = mount_point(&info, id)?;
        known.push((id, point.clone()));
        Some(point)
    }
}

/// The mount point of mount `id` in the text of a mountinfo file.
fn mount_point(info: &[u8], id: u64) -> Option<PathBuf> {
    info.split(|&b| b == b'\n').find_map(|line| {
        let mut f = line.split(|&b| b == b' ');
        let this: u64 = std::str::from_utf8(f.next()?).ok()?.parse().ok()?;
        if this != id {
            return None;
        }
        let point = f.nth(3)?;
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(&unescape(point))))
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space, and so on).
fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let oct = |b: u8| (b'0'..=b'7').contains(&b);
        if s[i] == b'\\' && i + 3 < s.len() && s[i + 1..i + 4].iter().all(|&b| oct(b)) {
            let v = s[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, &b| acc * 8 + u32::from(b - b'0'));
            out.push(v as u8);
            i += 4;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// The record stored on an open file, if it has a readable one.
pub(crate) fn read_record(fd: BorrowedFd<'_>) -> Option<OriginRecord> {
    let mut value = Vec::new();
    sys::get_xattr(XattrTarget::Fd(fd), ORIGIN_XATTR, &mut value).ok()?;
    OriginRecord::decode(&value)
}

/// The origin a record names, opened below the mount of `near` (the file that carries the
/// record), if it is the very file the record names.
fn resolve(record: &OriginRecord, near: BorrowedFd<'_>, mounts: &Mounts) -> Option<OwnedFd> {
    let point = mounts.point_of(near)?;
    let anchor = std::fs::File::open(&point).ok()?;
    let fd = sys::open_beneath(anchor.as_fd(), &sys::cstring(&record.path)).ok()?;
    let meta = sys::fstat(fd.as_fd()).ok()?;
    let generation = sys::inode_generation(fd.as_fd()).ok()?;
    (meta.is_reg()
        && meta.nlink > 0
        && meta.dev == record.dev
        && meta.ino == record.ino
        && generation == record.generation)
        .then_some(fd)
}

/// The origin named by the record of the open file `fd`, opened and checked to be the file
/// the record names; `None` when there is no record or it does not check out.
pub(crate) fn find(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    let record = read_record(fd)?;
    resolve(&record, fd, &Mounts::default())
}

/// The record a clone of the open file `src` should carry: the record `src` carries when it
/// names its origin truly (a clone of a clone names the first origin), else `src` itself.
/// `None` when `src` cannot be named (deleted, or outside every mount this process sees).
pub(crate) fn record_for(src: BorrowedFd<'_>, mounts: &Mounts) -> Option<OriginRecord> {
    if let Some(r) = read_record(src) {
        if resolve(&r, src, mounts).is_some() {
            return Some(r);
        }
    }
    let meta = sys::fstat(src).ok()?;
    let path = sys::fd_path(src)?;
    let point = mounts.point_of(src)?;
    let rel = path.strip_prefix(&point).ok()?;
    if rel.as_os_str().is_empty() {
        return None;
    }
    Some(OriginRecord {
        dev: meta.dev,
        ino: meta.ino,
        generation: sys::inode_generation(src).ok().flatten(),
        path: rel.as_os_str().as_bytes().to_vec(),
    })
}

/// The xattrs to give a copy of the open file `src` under `--record-origin`: those read from
/// the source less any origin record it carries (which names the source's origin, not the
/// copy's), and, when the copy is a clone, the record naming its origin.
pub(crate) fn with_record(
    mut xattrs: Xattrs,
    cloned: bool,
    src: BorrowedFd<'_>,
    mounts: &Mounts,
) -> Xattrs {
    xattrs.retain(|(name, _)| name.as_c_str() != ORIGIN_XATTR);
    if cloned {
        if let Some(r) = record_for(src, mounts) {
            xattrs.push((ORIGIN_XATTR.to_owned(), r.encode()));
        }
    }
    xattrs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_reject_what_they_are_not() {
        let r = OriginRecord {
            dev: 2049,
            ino: 257,
            generation: Some(8),
            path: b"dir with spaces/a b".to_vec(),
        };
        assert_eq!(r.encode(), b"1 2049 257 8 dir with spaces/a b");
        assert_eq!(OriginRecord::decode(&r.encode()), Some(r.clone()));
        let none = OriginRecord {
            generation: None,
            ..r
        };
        assert_eq!(OriginRecord::decode(&none.encode()), Some(none));
        for bad in [
            &b"2 1 2 3 p"[..],
            b"1 1 2 3 /abs",
            b"1 x 2 3 p",
            b"1 1 2 3",
            b"1 1 2 3 ",
        ] {
            assert_eq!(
                OriginRecord::decode(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn mount_points_come_from_mountinfo_unescaped() {
        let info = b"22 1 8:1 / / rw shared:1 - ext4 /dev/sda1 rw\n\
                     35 22 7:0 / /mnt/a\\040b rw - btrfs /dev/loop0 rw\n";
        assert_eq!(mount_point(info, 22), Some(PathBuf::from("/")));
        assert_eq!(mount_point(info, 35), Some(PathBuf::from("/mnt/a b")));
        assert_eq!(mount_point(info, 36), None);
    }
}
