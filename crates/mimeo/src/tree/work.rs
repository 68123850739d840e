//! The unit of work: plain data that can cross a thread, a channel or a process boundary.
//!
//! A work item names a root (an index into the run's command-line pairs, the same in every
//! process of a run), a path below it, what to do there, and the source's metadata when it is
//! already known. It holds no descriptor, pointer or counter: open descriptors are the
//! executor's business, and completion counting is the scheduler's. With the `serde`
//! feature, every type here can be serialized.

use crate::report::Op;
use crate::sys::{DType, Meta};
use std::path::PathBuf;

/// One unit of work of a tree copy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct WorkItem {
    /// The root it belongs to: an index into the pairs the run was started with.
    pub root: u32,
    /// The path below the root, the same on the source and the destination side: components
    /// separated by `/`, empty for the root itself. Bytes, since names need not be UTF-8.
    pub path: Vec<u8>,
    /// What to do there.
    pub kind: WorkKind,
    /// The source's metadata, when it is already known.
    pub stat: Option<Stat>,
}

/// What a [`WorkItem`] asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum WorkKind {
    /// A command-line source that is not a directory to recurse into: copy the entry itself.
    Root,
    /// A directory whose destination exists: its pass lists the source, copies the entries
    /// and spawns its subdirectories (and, for a large directory, shares of its entries).
    Dir(DirInfo),
    /// A share of a large directory's entries, listed by the directory's pass.
    Entries {
        /// The directory they are in.
        dir: DirInfo,
        /// What the directory passes down, for entries that turn out to be directories.
        lineage: Lineage,
        /// Their names and types as the listing gave them.
        names: Vec<(Vec<u8>, EntryType)>,
    },
    /// A range of a large file being copied by several workers at once.
    Range(FileRange),
}

/// One range of a large regular file, copied by whichever worker runs it while others copy
/// the file's other ranges (see [`Options::split`](crate::Options::split)). The item's `path`
/// is the directory the file is in, below the root; the file's metadata is applied once,
/// after its last range, by the worker that split it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct FileRange {
    /// Which split file of the run it belongs to.
    pub file: u64,
    /// The file is the root entry itself: its names are in the root's parent directories,
    /// not in the item's path.
    pub at_root: bool,
    /// The source file's name.
    pub name: Vec<u8>,
    /// The name the copy is being written under in the destination directory (a temporary,
    /// or the final name).
    pub written: Vec<u8>,
    /// Where the range starts, in both files.
    pub offset: u64,
    /// Its length.
    pub len: u64,
}

/// How a range copied in another process than its file's splitter went: what that process's
/// [`Executor::run_lent`](crate::work::Executor::run_lent) returns, for the splitter's
/// [`Executor::range_done`](crate::work::Executor::range_done).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct RangeDone {
    /// The split file ([`FileRange::file`]).
    pub file: u64,
    /// Where the range starts ([`FileRange::offset`]).
    pub offset: u64,
    /// Bytes written (holes are skipped, not written).
    pub written: u64,
    /// Some of it was copied inside the kernel (`copy_file_range`).
    pub offloaded: bool,
    /// Some of it was read and written through a buffer.
    pub streamed: bool,
    /// The failure, if it failed: the step and the errno.
    pub failed: Option<(Op, i32)>,
    /// For a range stopped by the run's stop: the part `[from, to)` of it that is complete.
    pub stopped_at: Option<(u64, u64)>,
}

/// What the work on a directory needs to know of it, decided when it was created.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct DirInfo {
    /// The destination directory was created by this run (a merged one keeps its mode unless
    /// modes are preserved).
    pub created: bool,
    /// The destination directory has the set-gid bit: new entries take its group.
    pub dst_setgid: bool,
    /// ... of a group this process's chmod may not keep the bit for: new subdirectories are
    /// made with their final mode where they can be (see `DstFacts::sgid_foreign`).
    pub dst_sgid_foreign: bool,
    /// The permission bits a new destination directory was made with, where they are its
    /// final ones (set-gid aside); None where it was made owner-only, or merged into.
    pub made_perm: Option<u32>,
    /// The destination held another run's in-progress marker: `-u` checks its entries
    /// strictly.
    pub suspect: bool,
    /// The destination directory has a default ACL, so entries made in it inherit ACLs that
    /// `--preserve=mode` removes where the source has none (as cp does).
    pub default_acl: bool,
    /// The permission bits that the default ACL new subdirectories are made under (the
    /// parent's for a new directory, its own for a merged one) lets them keep; None without
    /// one, or where it does not matter (only a copy that leaves the mode to mkdir, as
    /// `cp -r`, looks).
    pub acl_perm: Option<u32>,
    /// What its parent passed down.
    pub lineage: Lineage,
}

/// What a directory passes down to its subdirectories, known once its pass has read its
/// source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Lineage {
    /// The directory ends up set-gid, so a new subdirectory inherits the bit (as cp, which
    /// creates parents first, gets it).
    pub sgid: bool,
    /// Under `-L`: the source directories from the root down to it, by (dev, ino), to refuse
    /// a symlink that leads back up (a cycle). Empty otherwise.
    pub ancestors: Vec<(u64, u64)>,
}

/// An entry's type as a directory listing gives it (`d_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum EntryType {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// A FIFO, socket or device node.
    Other,
    /// The filesystem did not say: the entry is looked at.
    Unknown,
}

/// The metadata of a source entry, as plain data (a subset of `statx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Stat {
    /// Type and permission bits (`st_mode`).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Number of hard links.
    pub nlink: u32,
    /// Inode number.
    pub ino: u64,
    /// Device of the filesystem.
    pub dev: u64,
    /// Device number, for device nodes.
    pub rdev: u64,
    /// Size in bytes.
    pub size: u64,
    /// Allocated 512-byte blocks.
    pub blocks: u64,
    /// Access time: seconds and nanoseconds.
    pub atime: (i64, u32),
    /// Modification time: seconds and nanoseconds.
    pub mtime: (i64, u32),
}

/// A finished directory pass: what completing the directory needs, once every item the pass
/// spawned (and everything those spawned) is complete. Hand it to
/// [`Executor::complete`](crate::work::Executor::complete).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DirDone {
    /// The root.
    pub root: u32,
    /// The directory below it.
    pub path: Vec<u8>,
    /// What the pass was given.
    pub info: DirInfo,
    /// The source directory's metadata and the xattrs to set, when the pass could read them.
    pub source: Option<(Stat, XattrList)>,
    /// Some of its xattrs could not be read by name, where the pass could not open it (a
    /// directory the user may not read): reported already.
    pub xattrs_failed: bool,
}

/// Extended attributes as (name, value) pairs.
pub type XattrList = Vec<(Vec<u8>, Vec<u8>)>;

impl From<Meta> for Stat {
    fn from(m: Meta) -> Stat {
        Stat {
            mode: m.mode,
            uid: m.uid,
            gid: m.gid,
            nlink: m.nlink,
            ino: m.ino,
            dev: m.dev,
            rdev: m.rdev,
            size: m.size,
            blocks: m.blocks,
            atime: m.atime,
            mtime: m.mtime,
        }
    }
}

impl From<Stat> for Meta {
    fn from(s: Stat) -> Meta {
        Meta {
            mode: s.mode,
            uid: s.uid,
            gid: s.gid,
            nlink: s.nlink,
            ino: s.ino,
            dev: s.dev,
            rdev: s.rdev,
            size: s.size,
            blocks: s.blocks,
            atime: s.atime,
            mtime: s.mtime,
        }
    }
}

impl From<DType> for EntryType {
    fn from(t: DType) -> EntryType {
        match t {
            DType::Dir => EntryType::Dir,
            DType::Reg => EntryType::File,
            DType::Symlink => EntryType::Symlink,
            DType::Other => EntryType::Other,
            DType::Unknown => EntryType::Unknown,
        }
    }
}

impl From<EntryType> for DType {
    fn from(t: EntryType) -> DType {
        match t {
            EntryType::Dir => DType::Dir,
            EntryType::File => DType::Reg,
            EntryType::Symlink => DType::Symlink,
            EntryType::Other => DType::Other,
            EntryType::Unknown => DType::Unknown,
        }
    }
}

/// Entries per share when a large directory's entries are spread among workers.
const CHUNK: usize = 512;

/// Spreads a large directory's listing among workers: when `names` holds more than two
/// shares' worth, every share beyond the first goes to `spawn` as a [`WorkKind::Entries`]
/// item (for the directory `rel` below root `root`), and `names` keeps the first.
pub(crate) fn spawn_shares(
    names: &mut Vec<(std::ffi::CString, DType)>,
    root: u32,
    rel: &[u8],
    dir: &DirInfo,
    lineage: &Lineage,
    spawn: &mut dyn FnMut(WorkItem),
) {
    if names.len() <= 2 * CHUNK {
        return;
    }
    while names.len() > CHUNK {
        let tail = names.split_off(names.len() - CHUNK);
        spawn(WorkItem {
            root,
            path: rel.to_vec(),
            kind: WorkKind::Entries {
                dir: dir.clone(),
                lineage: lineage.clone(),
                names: tail
                    .into_iter()
                    .map(|(n, t)| (n.into_bytes(), t.into()))
                    .collect(),
            },
            stat: None,
        });
    }
}

/// Joins a directory path below a root and a name.
pub(crate) fn join_rel(rel: &[u8], name: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(rel.len() + 1 + name.len());
    v.extend_from_slice(rel);
    if !rel.is_empty() {
        v.push(b'/');
    }
    v.extend_from_slice(name);
    v
}

// ---- the sources cp counts as named (the rules: `named.rs`) ----

/// What cp's "specified more than once" check knows a source that is not a directory by:
/// the (device, inode) of the directory part of its name, not followed if a symlink, its
/// last name, and its own (device, inode). Another name of the same file (a hard link, or
/// through a symlink to its directory) is another source to cp.
pub(crate) type FileKey = ((u64, u64), Vec<u8>, (u64, u64));

/// The directory part of the last name looked at, and its (device, inode): the sources of
/// one run mostly share one, which is then looked at once.
pub(crate) type DirSeen = Option<(Vec<u8>, (u64, u64))>;

/// Where a root goes: its destination parent's (dev, ino), and the name in it.
pub(crate) type Dest = ((u64, u64), Vec<u8>);

/// A directory root named on the command line.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct NamedDir {
    /// The index of the first root after it (its own, where it runs).
    pub before: u32,
    pub id: (u64, u64),
    /// Where it went: its path, and its parent's (dev, ino) and name there.
    #[cfg_attr(feature = "serde", serde(with = "path_bytes"))]
    pub dst_path: PathBuf,
    pub dest: Option<Dest>,
    /// Its source's path as given: where an entry its copy makes comes from.
    #[cfg_attr(feature = "serde", serde(with = "path_bytes"))]
    pub src_path: PathBuf,
}

/// The sources of a run that cp counts as named, in command-line order: what its "specified
/// more than once" rules look at. The other processes of a run need it to run the roots:
/// see [`Executor::with_named`](super::Executor::with_named). The rules that read and grow
/// it are in `named.rs`.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Named {
    /// The sources so far that are not directories: cp copies each once, wherever it goes.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) files: Vec<FileKey>,
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) dir_seen: DirSeen,
    /// Every directory root so far, copied or refused as a copy into itself.
    pub(crate) dirs: Vec<NamedDir>,
    /// The roots (by index) that are files named before: skipped with a warning in their
    /// turn.
    pub(crate) files_twice: Vec<u32>,
    /// Where the directory roots refused as copies into themselves go: cp makes each copy
    /// there (filled until it meets itself); mimeo makes nothing.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) into_itself: Vec<Dest>,
}

/// A path as its bytes: a name need not be UTF-8.
#[cfg(feature = "serde")]
mod path_bytes {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::ffi::OsString;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::path::{Path, PathBuf};

    pub fn serialize<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(p.as_os_str().as_bytes())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        Vec::<u8>::deserialize(d).map(|b| PathBuf::from(OsString::from_vec(b)))
    }
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn work_items_cross_a_process_boundary_as_json() {
        let item = WorkItem {
            root: 3,
            path: b"a/\xffb".to_vec(),
            kind: WorkKind::Entries {
                dir: DirInfo {
                    created: true,
                    ..DirInfo::default()
                },
                lineage: Lineage {
                    sgid: true,
                    ancestors: vec![(1, 2)],
                },
                names: vec![(b"x".to_vec(), EntryType::File)],
            },
            stat: None,
        };
        let text = serde_json::to_string(&item).unwrap();
        assert_eq!(serde_json::from_str::<WorkItem>(&text).unwrap(), item);
    }

    /// What the other processes of a run are given keeps a destination that is not UTF-8.
    #[test]
    fn named_directories_travel_with_names_that_are_not_utf8() {
        let dst_path = PathBuf::from(OsStr::from_bytes(b"D/\xff\xfe"));
        let named = Named {
            dirs: vec![NamedDir {
                before: 1,
                id: (2, 3),
                dst_path: dst_path.clone(),
                dest: Some(((4, 5), b"\xff\xfe".to_vec())),
                src_path: PathBuf::from(OsStr::from_bytes(b"s/\x80")),
            }],
            files_twice: vec![7],
            ..Named::default()
        };
        let text = serde_json::to_string(&named).unwrap();
        let back: Named = serde_json::from_str(&text).unwrap();
        assert_eq!(back.files_twice, vec![7]);
        let dir = &back.dirs[0];
        assert_eq!((dir.before, dir.id), (1, (2, 3)));
        assert_eq!(dir.dst_path, dst_path);
        assert_eq!(dir.dest, Some(((4, 5), b"\xff\xfe".to_vec())));
        assert_eq!(dir.src_path.as_os_str().as_bytes(), b"s/\x80");
    }
}
