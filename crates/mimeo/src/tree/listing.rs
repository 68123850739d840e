//! The step every walk of a source tree takes in one directory: the copy's pass
//! ([`super::dir`]), and the parallel walker ([`super::walk`]) behind du, dedupe, the progress
//! totals and `--dry-run`. One way to open a directory below a root, to list it, to look at an
//! entry only when needed, and to decide whether to descend (`-x`, cycles under `-L`); see
//! `docs/design.md` §6.

use super::work::Lineage;
use crate::sys::{self, DType, DirReader, Meta};
use rustix::fd::{BorrowedFd, OwnedFd};
use std::ffi::CString;

/// What a walk needs to know of the entries it lists, beyond their `d_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// The type alone (du and dedupe open the files they count).
    Types,
    /// The size of regular files (progress totals).
    Files,
    /// Symlinks and special files, which the copy makes from their metadata; regular files
    /// are looked at once opened.
    Specials,
    /// Every entry (`--dry-run` decides on each).
    All,
}

/// How a walk looks at what it lists: the one rule for when an entry is looked at (`statx`).
/// `d_type` is trusted; an entry is looked at when its type is unknown, when `-x` needs a
/// directory's device, under `-L` (which must see through a symlink, and tell a directory
/// that is one of its own ancestors, reached through a symlink above it, as cp does), or when
/// the walk wants its metadata.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Look {
    /// Follow every symlink below the roots (`-L`).
    pub follow: bool,
    /// Do not descend into a directory on another device than its root (`-x`).
    pub one_file_system: bool,
    pub want: Want,
}

/// Whether to descend into a listed entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Descent {
    /// Not a directory.
    No,
    /// A directory to descend into.
    Into,
    /// A directory on another device (`-x`): it is there, but not descended into.
    Mount,
    /// Under `-L`, a directory that is one of its own ancestors: refused.
    Cycle,
}

impl Look {
    /// Whether an entry listed as `t` is looked at.
    pub fn needs(&self, t: DType) -> bool {
        let wanted = match self.want {
            Want::Types => false,
            Want::Files => t == DType::Reg,
            Want::Specials => !matches!(t, DType::Reg | DType::Dir),
            Want::All => true,
        };
        wanted || t == DType::Unknown || (t == DType::Dir && self.one_file_system) || self.follow
    }

    /// Looks at the entry `name` of `dir`, listed as `t`, if [`Look::needs`] says so.
    pub fn at(
        &self,
        dir: BorrowedFd<'_>,
        name: &std::ffi::CStr,
        t: DType,
    ) -> sys::Result<Option<Meta>> {
        if self.needs(t) {
            sys::stat_at(dir, name, self.follow).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Whether to descend into an entry listed as `t` with `meta` (when looked at), below a
    /// root on `root_dev`, in a directory whose ancestors are `lineage`.
    pub fn descent(
        &self,
        t: DType,
        meta: Option<&Meta>,
        root_dev: u64,
        lineage: &Lineage,
    ) -> Descent {
        match meta {
            None if t == DType::Dir => Descent::Into,
            Some(m) if m.is_dir() => {
                if self.follow && lineage.ancestors.contains(&m.id()) {
                    Descent::Cycle
                } else if self.one_file_system && m.dev != root_dev {
                    Descent::Mount
                } else {
                    Descent::Into
                }
            }
            _ => Descent::No,
        }
    }

    /// The ancestors a directory with identity `id` passes down, given its own `lineage`:
    /// only `-L` keeps them.
    pub fn ancestors(&self, lineage: &Lineage, id: (u64, u64)) -> Vec<(u64, u64)> {
        if !self.follow {
            return Vec::new();
        }
        let mut ancestors = lineage.ancestors.clone();
        if !ancestors.contains(&id) {
            ancestors.push(id);
        }
        ancestors
    }

    /// Opens the directory `rel` below a root's directory `anchor`: never through a symlink,
    /// except under `-L`.
    pub fn open(&self, anchor: BorrowedFd<'_>, rel: &[u8]) -> sys::Result<OwnedFd> {
        if self.follow {
            sys::open_dir_following(anchor, rel)
        } else {
            sys::open_dir_beneath(anchor, rel)
        }
    }
}

/// A directory's entries, as listed: names and `d_type`s.
pub(crate) type Listed = Vec<(CString, DType)>;

/// Lists the directory `dir`, in inode order. What could be read before an error is kept
/// beside it.
pub(crate) fn list(reader: &mut DirReader, dir: BorrowedFd<'_>) -> (Listed, sys::Result<()>) {
    let mut entries = Vec::new();
    let read = reader.read_all_ino(dir, |name, t, ino| entries.push((ino, name.to_owned(), t)));
    // In inode order: a cold source is read where its inodes and (as filesystems allocate
    // near the inode) its data lie, in one sweep, not in the name-hash order of ext4's
    // listings. The order entries are handled in is otherwise free.
    entries.sort_by_key(|(ino, _, _)| *ino);
    let entries = entries.into_iter().map(|(_, n, t)| (n, t)).collect();
    (entries, read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(follow: bool, one_file_system: bool, want: Want) -> Look {
        Look {
            follow,
            one_file_system,
            want,
        }
    }

    #[test]
    fn the_copy_looks_at_specials_and_never_at_listed_files_or_directories() {
        let copy = look(false, false, Want::Specials);
        assert!(!copy.needs(DType::Reg));
        assert!(!copy.needs(DType::Dir));
        assert!(copy.needs(DType::Symlink));
        assert!(copy.needs(DType::Other));
        assert!(copy.needs(DType::Unknown));
        // -L sees through everything, and tells a listed directory that is an ancestor
        // (reached through a symlink above it); -x needs a directory's device.
        assert!(look(true, false, Want::Specials).needs(DType::Reg));
        assert!(look(true, false, Want::Specials).needs(DType::Dir));
        assert!(look(false, true, Want::Specials).needs(DType::Dir));
    }

    #[test]
    fn a_walk_for_types_looks_only_at_unknown_types() {
        let du = look(false, false, Want::Types);
        for t in [DType::Reg, DType::Dir, DType::Symlink, DType::Other] {
            assert!(!du.needs(t), "{t:?}");
        }
        assert!(du.needs(DType::Unknown));
        assert!(look(false, false, Want::Files).needs(DType::Reg));
        assert!(!look(false, false, Want::Files).needs(DType::Symlink));
    }

    fn dir(dev: u64, ino: u64) -> Meta {
        Meta {
            mode: sys::S_IFDIR | 0o755,
            uid: 0,
            gid: 0,
            nlink: 2,
            ino,
            dev,
            rdev: 0,
            size: 0,
            blocks: 0,
            atime: (0, 0),
            mtime: (0, 0),
        }
    }

    #[test]
    fn descent_applies_one_file_system_and_refuses_cycles_under_follow() {
        let lineage = Lineage {
            sgid: false,
            ancestors: vec![(1, 2)],
        };
        let plain = look(false, false, Want::All);
        assert_eq!(plain.descent(DType::Dir, None, 1, &lineage), Descent::Into);
        assert_eq!(plain.descent(DType::Reg, None, 1, &lineage), Descent::No);
        // Not following, an ancestor's identity is no cycle (a bind mount is walked as is).
        assert_eq!(
            plain.descent(DType::Dir, Some(&dir(1, 2)), 1, &lineage),
            Descent::Into
        );
        let x = look(false, true, Want::All);
        assert_eq!(
            x.descent(DType::Dir, Some(&dir(9, 3)), 1, &lineage),
            Descent::Mount
        );
        assert_eq!(
            x.descent(DType::Dir, Some(&dir(1, 3)), 1, &lineage),
            Descent::Into
        );
        let l = look(true, false, Want::All);
        assert_eq!(
            l.descent(DType::Symlink, Some(&dir(1, 2)), 1, &lineage),
            Descent::Cycle
        );
        assert_eq!(
            l.descent(DType::Dir, Some(&dir(1, 2)), 1, &lineage),
            Descent::Cycle
        );
        assert_eq!(
            l.descent(DType::Symlink, Some(&dir(1, 3)), 1, &lineage),
            Descent::Into
        );
    }

    #[test]
    fn only_follow_keeps_ancestors() {
        let lineage = Lineage {
            sgid: false,
            ancestors: vec![(1, 2)],
        };
        assert!(
            look(false, false, Want::All)
                .ancestors(&lineage, (1, 3))
                .is_empty()
        );
        let l = look(true, false, Want::All);
        assert_eq!(l.ancestors(&lineage, (1, 3)), vec![(1, 2), (1, 3)]);
        assert_eq!(l.ancestors(&lineage, (1, 2)), vec![(1, 2)]);
    }
}
