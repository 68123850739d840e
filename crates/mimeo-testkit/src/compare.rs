//! Tree comparer: the fidelity oracle.
//!
//! Walks two trees in lockstep without following symlinks and reports every
//! difference as (relative path, field, left, right). GNU `cp -a` output on
//! the left and mimeo's on the right must compare equal; the benchmark
//! harness counts the entries a peer tool gets wrong the same way.
//!
//! The walk is fd-relative (`openat`/`fstatat`/`readlinkat` on open
//! directory descriptors, xattrs through an `O_PATH` descriptor), never by
//! full path, so trees deeper than `PATH_MAX` compare like any other. It
//! keeps one descriptor per level and side open, and raises the soft
//! `RLIMIT_NOFILE` to the hard limit for that.
//!
//! Paths are handled as raw bytes (`OsStr`), so names that are not UTF-8
//! work; they are shown with lossy escaping only in messages.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, SeekFrom, Stat};

/// Which fields to compare. Type, presence, size, content, symlink
/// targets and device numbers are always compared; mode is compared unless
/// `mode` is off.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    /// Compare atimes of non-directories.
    pub atime: bool,
    /// Compare atimes of directories too (reading a directory may update
    /// its atime, so this is off by default).
    pub dir_atime: bool,
    /// Require that a right-hand regular file allocates no more blocks
    /// than the left one (sparse files stay sparse).
    pub blocks_le: bool,
    /// Compare permission bits (incl. set-id and sticky).
    pub mode: bool,
    /// Compare owner and group.
    pub owner: bool,
    /// Compare mtimes (atimes are governed by `atime`).
    pub mtime: bool,
    /// Compare extended attributes (incl. POSIX ACLs).
    pub xattrs: bool,
    /// Compare hard-link groups.
    pub links: bool,
}

impl CompareOptions {
    /// Everything `cp -a` keeps, except atimes: reading a source on a `relatime` filesystem
    /// may move its atime after the copy took it.
    pub fn archive() -> Self {
        CompareOptions {
            atime: false,
            ..CompareOptions::default()
        }
    }
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            atime: true,
            dir_atime: false,
            blocks_le: false,
            mode: true,
            owner: true,
            mtime: true,
            xattrs: true,
            links: true,
        }
    }
}

impl CompareOptions {
    /// Type, mode and bytes only: for copies that do not preserve owner,
    /// times, xattrs or links (`cp -r`).
    pub fn content_and_mode() -> CompareOptions {
        CompareOptions {
            atime: false,
            dir_atime: false,
            blocks_le: false,
            mode: true,
            owner: false,
            mtime: false,
            xattrs: false,
            links: false,
        }
    }
}

/// The compared attribute of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// The entry exists on one side only.
    Presence,
    Type,
    /// Permission bits including set-uid, set-gid and sticky.
    Mode,
    Uid,
    Gid,
    Size,
    /// File bytes; left/right show the first differing offset.
    Content,
    Mtime,
    Atime,
    /// A symlink's target.
    Target,
    /// A device node's device number.
    Rdev,
    /// One extended attribute (any namespace, incl. POSIX ACLs).
    Xattr,
    /// The set of paths sharing the inode differs.
    HardLinks,
    /// The right side allocates more blocks (only with `blocks_le`).
    Blocks,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Field::Presence => "presence",
            Field::Type => "type",
            Field::Mode => "mode",
            Field::Uid => "uid",
            Field::Gid => "gid",
            Field::Size => "size",
            Field::Content => "content",
            Field::Mtime => "mtime",
            Field::Atime => "atime",
            Field::Target => "target",
            Field::Rdev => "rdev",
            Field::Xattr => "xattr",
            Field::HardLinks => "links",
            Field::Blocks => "blocks",
        };
        f.write_str(s)
    }
}

/// One difference between the trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Path relative to the roots; empty for the roots themselves.
    pub path: PathBuf,
    pub field: Field,
    pub left: String,
    pub right: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.as_os_str().is_empty() {
            ".".into()
        } else {
            abbreviate(&self.path)
        };
        write!(f, "{path}: {}: {} != {}", self.field, self.left, self.right)
    }
}

/// A path for messages: quoted, and for very deep paths only the start,
/// the end and the number of components, so a report stays readable.
fn abbreviate(path: &Path) -> String {
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() <= 300 {
        return format!("{path:?}");
    }
    let head = OsStr::from_bytes(&bytes[..60]);
    let tail = OsStr::from_bytes(&bytes[bytes.len() - 120..]);
    let depth = path.components().count();
    format!("{head:?}…({depth} components)…{tail:?}")
}

/// The outcome of [`compare_trees`].
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    /// Entries looked at (union of both trees, roots included).
    pub entries: usize,
    pub differences: Vec<Difference>,
}

impl Comparison {
    /// True when no difference was found.
    pub fn is_equal(&self) -> bool {
        self.differences.is_empty()
    }

    /// Distinct relative paths with at least one difference: the number of
    /// entries a tool got wrong.
    pub fn wrong_entries(&self) -> usize {
        let paths: BTreeSet<&Path> = self.differences.iter().map(|d| d.path.as_path()).collect();
        paths.len()
    }

    /// Differences in `field`.
    pub fn of(&self, field: Field) -> Vec<&Difference> {
        self.differences
            .iter()
            .filter(|d| d.field == field)
            .collect()
    }

    /// Panics with the full list unless the trees are equal.
    #[track_caller]
    pub fn assert_equal(&self) {
        assert!(self.is_equal(), "trees differ:\n{self}");
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.differences {
            writeln!(f, "{d}")?;
        }
        write!(
            f,
            "{} difference(s) in {} of {} entries",
            self.differences.len(),
            self.wrong_entries(),
            self.entries
        )
    }
}

/// Compares the trees (or single entries) at `left` and `right`.
pub fn compare_trees(left: &Path, right: &Path, opts: &CompareOptions) -> io::Result<Comparison> {
    raise_nofile_limit();
    let mut c = Comparer {
        roots: [left.to_path_buf(), right.to_path_buf()],
        opts: *opts,
        out: Comparison::default(),
        links: [Links::default(), Links::default()],
    };
    c.walk()?;
    if opts.links {
        c.hard_links();
    }
    Ok(c.out)
}

/// Raises the soft open-file limit to the hard one: the walk holds two
/// descriptors per directory level.
fn raise_nofile_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// Hard-link structure of one side: inode → relative paths (only inodes
/// with nlink > 1), and path → inode.
#[derive(Debug, Default)]
struct Links {
    groups: HashMap<(u64, u64), BTreeSet<PathBuf>>,
    inode_of: BTreeMap<PathBuf, (u64, u64)>,
}

impl Links {
    fn add(&mut self, rel: &Path, m: &Stat) {
        if file_type(m) == FileType::Directory || m.st_nlink < 2 {
            return;
        }
        let key = (m.st_dev, m.st_ino);
        self.groups
            .entry(key)
            .or_default()
            .insert(rel.to_path_buf());
        self.inode_of.insert(rel.to_path_buf(), key);
    }

    /// The paths in the tree sharing `rel`'s inode (at least `rel`).
    fn group(&self, rel: &Path) -> BTreeSet<PathBuf> {
        match self.inode_of.get(rel) {
            Some(key) => self.groups[key].clone(),
            None => BTreeSet::from([rel.to_path_buf()]),
        }
    }
}

/// One entry on both sides: the directory holding it (or the current
/// directory for the roots) and its name there.
#[derive(Clone, Copy)]
struct At<'a> {
    dirs: [BorrowedFd<'a>; 2],
    names: [&'a OsStr; 2],
}

impl At<'_> {
    fn open(&self, side: usize, flags: OFlags) -> rustix::io::Result<OwnedFd> {
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rustix::fs::openat(self.dirs[side], self.names[side], flags, Mode::empty())
    }
}

/// A directory being walked: its descriptors on both sides and the child
/// names still to visit.
struct Frame {
    fds: [OwnedFd; 2],
    rel: PathBuf,
    names: std::collections::btree_set::IntoIter<OsString>,
}

struct Comparer {
    roots: [PathBuf; 2],
    opts: CompareOptions,
    out: Comparison,
    links: [Links; 2],
}

impl Comparer {
    fn diff(&mut self, rel: &Path, field: Field, left: impl ToString, right: impl ToString) {
        self.out.differences.push(Difference {
            path: rel.to_path_buf(),
            field,
            left: left.to_string(),
            right: right.to_string(),
        });
    }

    /// An error naming the full path (for the message only).
    fn error(&self, side: usize, rel: &Path, op: &str, e: impl Into<io::Error>) -> io::Error {
        context(e.into(), op, &join(&self.roots[side], rel))
    }

    /// Depth-first over both trees with an explicit stack, so depth costs
    /// heap, not call stack.
    fn walk(&mut self) -> io::Result<()> {
        let roots = self.roots.clone();
        let root = At {
            dirs: [CWD, CWD],
            names: [roots[0].as_os_str(), roots[1].as_os_str()],
        };
        let mut stack = Vec::new();
        if let Some(fds) = self.entry(root, Path::new(""))? {
            stack.push(self.frame(fds, PathBuf::new())?);
        }
        while let Some(top) = stack.last_mut() {
            let Some(name) = top.names.next() else {
                stack.pop();
                continue;
            };
            let rel = top.rel.join(&name);
            let at = At {
                dirs: [top.fds[0].as_fd(), top.fds[1].as_fd()],
                names: [&name, &name],
            };
            if let Some(fds) = self.entry(at, &rel)? {
                let frame = self.frame(fds, rel)?;
                stack.push(frame);
            }
        }
        Ok(())
    }

    fn frame(&self, fds: [OwnedFd; 2], rel: PathBuf) -> io::Result<Frame> {
        let names = self.children(&fds, &rel)?.into_iter();
        Ok(Frame { fds, rel, names })
    }

    fn lstat(&self, at: At<'_>, side: usize, rel: &Path) -> io::Result<Option<Stat>> {
        match rustix::fs::statat(at.dirs[side], at.names[side], AtFlags::SYMLINK_NOFOLLOW) {
            Ok(m) => Ok(Some(m)),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(self.error(side, rel, "lstat", e)),
        }
    }

    /// Compares one entry; returns both directory descriptors when it is a
    /// directory on both sides, for the walk to descend into.
    fn entry(&mut self, at: At<'_>, rel: &Path) -> io::Result<Option<[OwnedFd; 2]>> {
        self.out.entries += 1;
        let (l, r) = match (self.lstat(at, 0, rel)?, self.lstat(at, 1, rel)?) {
            (Some(l), Some(r)) => (l, r),
            (l, r) => {
                let show = |m: Option<Stat>| m.map_or("absent", |m| type_name(&m)).to_owned();
                self.diff(rel, Field::Presence, show(l), show(r));
                return Ok(None);
            }
        };
        if type_name(&l) != type_name(&r) {
            self.diff(rel, Field::Type, type_name(&l), type_name(&r));
            return Ok(None);
        }
        self.links[0].add(rel, &l);
        self.links[1].add(rel, &r);
        self.metadata(rel, &l, &r);
        if self.opts.xattrs {
            self.xattrs(at, rel)?;
        }
        match file_type(&l) {
            FileType::RegularFile => self.file(at, rel, &l, &r)?,
            FileType::Symlink => {
                let target = |side: usize| {
                    rustix::fs::readlinkat(at.dirs[side], at.names[side], Vec::new())
                        .map(|t| OsString::from_vec(t.into_bytes()))
                        .map_err(|e| self.error(side, rel, "readlink", e))
                };
                let (lt, rt) = (target(0)?, target(1)?);
                if lt != rt {
                    self.diff(rel, Field::Target, format!("{lt:?}"), format!("{rt:?}"));
                }
            }
            FileType::Directory => {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY;
                let open = |side| {
                    at.open(side, flags)
                        .map_err(|e| self.error(side, rel, "open", e))
                };
                return Ok(Some([open(0)?, open(1)?]));
            }
            _ => {}
        }
        Ok(None)
    }

    /// Fields every entry type has.
    fn metadata(&mut self, rel: &Path, l: &Stat, r: &Stat) {
        let (lmode, rmode) = (l.st_mode & 0o7777, r.st_mode & 0o7777);
        // Symlink permission bits are fixed on Linux and meaningless.
        let symlink = file_type(l) == FileType::Symlink;
        if self.opts.mode && !symlink && lmode != rmode {
            self.diff(rel, Field::Mode, octal(lmode), octal(rmode));
        }
        if self.opts.owner && l.st_uid != r.st_uid {
            self.diff(rel, Field::Uid, l.st_uid, r.st_uid);
        }
        if self.opts.owner && l.st_gid != r.st_gid {
            self.diff(rel, Field::Gid, l.st_gid, r.st_gid);
        }
        let (lm, rm) = (mtime(l), mtime(r));
        if self.opts.mtime && lm != rm {
            self.diff(rel, Field::Mtime, ns(lm), ns(rm));
        }
        let is_dir = file_type(l) == FileType::Directory;
        let atime = self.opts.atime && (self.opts.dir_atime || !is_dir);
        let (la, ra) = (atime_of(l), atime_of(r));
        if atime && la != ra {
            self.diff(rel, Field::Atime, ns(la), ns(ra));
        }
        let device = matches!(
            file_type(l),
            FileType::BlockDevice | FileType::CharacterDevice
        );
        if device && l.st_rdev != r.st_rdev {
            self.diff(rel, Field::Rdev, dev(l.st_rdev), dev(r.st_rdev));
        }
    }

    fn file(&mut self, at: At<'_>, rel: &Path, l: &Stat, r: &Stat) -> io::Result<()> {
        let (lsize, rsize) = (l.st_size as u64, r.st_size as u64);
        if lsize != rsize {
            self.diff(rel, Field::Size, lsize, rsize);
        } else {
            let open = |side: usize| {
                at.open(side, OFlags::RDONLY | OFlags::NOATIME)
                    .or_else(|_| at.open(side, OFlags::RDONLY))
                    .map(File::from)
                    .map_err(|e| self.error(side, rel, "open", e))
            };
            if let Some(offset) = first_difference_files(&open(0)?, &open(1)?, lsize)? {
                self.diff(rel, Field::Content, format!("differs at byte {offset}"), "");
            }
        }
        if self.opts.blocks_le && r.st_blocks > l.st_blocks {
            self.diff(rel, Field::Blocks, l.st_blocks, r.st_blocks);
        }
        Ok(())
    }

    fn xattrs(&mut self, at: At<'_>, rel: &Path) -> io::Result<()> {
        let read =
            |side: usize| xattrs_at(at, side).map_err(|e| self.error(side, rel, "xattrs of", e));
        let (l, r) = (read(0)?, read(1)?);
        let names: BTreeSet<&OsString> = l.keys().chain(r.keys()).collect();
        for name in names {
            let (lv, rv) = (l.get(name), r.get(name));
            if lv != rv {
                let show =
                    |v: Option<&Vec<u8>>| v.map_or("absent".to_owned(), |v| format!("{v:02x?}"));
                let left = format!("{}={}", name.to_string_lossy(), show(lv));
                self.diff(rel, Field::Xattr, left, show(rv));
            }
        }
        Ok(())
    }

    /// Union of the child names on both sides, in byte order.
    fn children(&self, fds: &[OwnedFd; 2], rel: &Path) -> io::Result<BTreeSet<OsString>> {
        let mut names = BTreeSet::new();
        for (side, fd) in fds.iter().enumerate() {
            let err = |e| self.error(side, rel, "readdir", e);
            for entry in rustix::fs::Dir::read_from(fd).map_err(err)? {
                let name = entry.map_err(err)?.file_name().to_bytes().to_vec();
                if name != b"." && name != b".." {
                    names.insert(OsString::from_vec(name));
                }
            }
        }
        Ok(names)
    }

    /// Reports each differing hard-link group once.
    fn hard_links(&mut self) {
        let paths: BTreeSet<PathBuf> = self.links[0]
            .inode_of
            .keys()
            .chain(self.links[1].inode_of.keys())
            .cloned()
            .collect();
        // Paths already named in a reported group, so a split group is
        // reported once, not once per member.
        let mut covered = BTreeSet::new();
        for rel in paths {
            let (l, r) = (self.links[0].group(&rel), self.links[1].group(&rel));
            if l != r && !covered.contains(&rel) {
                self.diff(&rel, Field::HardLinks, show_group(&l), show_group(&r));
                covered.extend(l.into_iter().chain(r));
            }
        }
    }
}

/// All extended attributes of one side's entry, read through an `O_PATH`
/// descriptor (so FIFOs and devices are not opened, and the path length
/// does not matter). The kernel resolves `/proc/self/fd/N` to the entry
/// itself, a symlink included.
fn xattrs_at(at: At<'_>, side: usize) -> io::Result<BTreeMap<OsString, Vec<u8>>> {
    let fd = at.open(side, OFlags::PATH)?;
    let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
    let mut list = vec![0u8; rustix::fs::listxattr_query(&path)?];
    let len = rustix::fs::listxattr(&path, &mut list[..])?;
    let mut out = BTreeMap::new();
    for name in list[..len].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = OsStr::from_bytes(name);
        let mut value = vec![0u8; rustix::fs::getxattr_query(&path, name)?];
        let n = rustix::fs::getxattr(&path, name, &mut value[..])?;
        value.truncate(n);
        out.insert(name.to_os_string(), value);
    }
    Ok(out)
}

/// All extended attributes of `path` (not following a final symlink).
pub fn read_xattrs(path: &Path) -> io::Result<BTreeMap<OsString, Vec<u8>>> {
    use std::os::unix::ffi::OsStringExt;
    let err = |e: rustix::io::Errno| context(e.into(), "listxattr", path);
    let mut list = vec![0u8; rustix::fs::llistxattr_query(path).map_err(err)?];
    let len = rustix::fs::llistxattr(path, &mut list[..]).map_err(err)?;
    let mut out = BTreeMap::new();
    for name in list[..len].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = OsString::from_vec(name.to_vec());
        let err = |e: rustix::io::Errno| context(e.into(), "getxattr", path);
        let mut value =
            vec![0u8; rustix::fs::lgetxattr_query(path, name.as_os_str()).map_err(err)?];
        let n = rustix::fs::lgetxattr(path, name.as_os_str(), &mut value[..]).map_err(err)?;
        value.truncate(n);
        out.insert(name, value);
    }
    Ok(out)
}

/// The first offset where two files of `size` bytes differ, reading only
/// the union of their data segments (regions that are holes on both sides
/// are equal zeros), so huge sparse files compare quickly.
pub fn first_difference(left: &Path, right: &Path, size: u64) -> io::Result<Option<u64>> {
    first_difference_files(&open_quietly(left)?, &open_quietly(right)?, size)
}

/// [`first_difference`] on open files.
pub fn first_difference_files(lf: &File, rf: &File, size: u64) -> io::Result<Option<u64>> {
    let mut segments = data_segments(lf, size)?;
    segments.extend(data_segments(rf, size)?);
    let mut lbuf = vec![0u8; 1 << 20];
    let mut rbuf = vec![0u8; 1 << 20];
    for (start, end) in merge(segments) {
        let mut at = start;
        while at < end {
            let want = (end - at).min(lbuf.len() as u64) as usize;
            lf.read_exact_at(&mut lbuf[..want], at)?;
            rf.read_exact_at(&mut rbuf[..want], at)?;
            // Slice equality is a memcmp; only a mismatch is scanned byte by
            // byte (which is slow in unoptimised test builds).
            if lbuf[..want] != rbuf[..want] {
                let i = lbuf[..want]
                    .iter()
                    .zip(&rbuf[..want])
                    .position(|(a, b)| a != b);
                return Ok(Some(at + i.unwrap_or(0) as u64));
            }
            at += want as u64;
        }
    }
    Ok(None)
}

/// Opens for reading without following symlinks and, where permitted,
/// without touching the atime (which the comparison may check).
fn open_quietly(path: &Path) -> io::Result<File> {
    let open = |flags| {
        File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | flags)
            .open(path)
    };
    open(libc::O_NOATIME)
        .or_else(|_| open(0))
        .map_err(|e| context(e, "open", path))
}

/// Data segments `[start, end)` of `file` per SEEK_DATA/SEEK_HOLE; the
/// whole file when the filesystem cannot tell.
pub fn data_segments(file: &File, size: u64) -> io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < size {
        let start = match rustix::fs::seek(file, SeekFrom::Data(at)) {
            Ok(s) => s,
            Err(rustix::io::Errno::NXIO) => break,
            Err(rustix::io::Errno::INVAL) if at == 0 => return Ok(vec![(0, size)]),
            Err(e) => return Err(e.into()),
        };
        let end = rustix::fs::seek(file, SeekFrom::Hole(start))?.min(size);
        if end <= start {
            break;
        }
        out.push((start, end));
        at = end;
    }
    Ok(out)
}

/// Sorts and merges overlapping or touching ranges.
fn merge(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// `root/rel`, where an empty `rel` is the root itself.
fn join(root: &Path, rel: &Path) -> PathBuf {
    if rel.as_os_str().is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

fn context(e: io::Error, op: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{op} {}: {e}", path.display()))
}

fn file_type(m: &Stat) -> FileType {
    FileType::from_raw_mode(m.st_mode as _)
}

fn type_name(m: &Stat) -> &'static str {
    match file_type(m) {
        FileType::RegularFile => "file",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "char device",
        FileType::BlockDevice => "block device",
        _ => "unknown",
    }
}

fn mtime(m: &Stat) -> (i64, i64) {
    (m.st_mtime, m.st_mtime_nsec as i64)
}

fn atime_of(m: &Stat) -> (i64, i64) {
    (m.st_atime, m.st_atime_nsec as i64)
}

fn octal(mode: u32) -> String {
    format!("{:04o}", mode & 0o7777)
}

fn ns((sec, nsec): (i64, i64)) -> String {
    format!("{sec}.{nsec:09}")
}

fn dev(rdev: u64) -> String {
    format!("{}:{}", rustix::fs::major(rdev), rustix::fs::minor(rdev))
}

fn show_group(g: &BTreeSet<PathBuf>) -> String {
    let items: Vec<String> = g.iter().map(|p| format!("{p:?}")).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::merge;

    #[test]
    fn merges_overlapping_ranges() {
        assert_eq!(
            merge(vec![(10, 20), (0, 5), (5, 8), (15, 30), (40, 50)]),
            vec![(0, 8), (10, 30), (40, 50)]
        );
    }
}
