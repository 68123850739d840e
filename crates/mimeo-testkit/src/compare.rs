//! Tree comparer: the fidelity oracle.
//!
//! Walks two trees in lockstep without following symlinks and reports every
//! difference as (relative path, field, left, right). GNU `cp -a` output on
//! the left and mimeo's on the right must compare equal; the benchmark
//! harness counts the entries a peer tool gets wrong the same way.
//!
//! Paths are handled as raw bytes (`OsStr`), so names that are not UTF-8
//! work; they are shown with lossy escaping only in messages.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::fmt;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::SeekFrom;

/// Which fields to compare beyond the always-compared ones.
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
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            atime: true,
            dir_atime: false,
            blocks_le: false,
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
            format!("{:?}", self.path)
        };
        write!(f, "{path}: {}: {} != {}", self.field, self.left, self.right)
    }
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
    let mut c = Comparer {
        roots: [left.to_path_buf(), right.to_path_buf()],
        opts: *opts,
        out: Comparison::default(),
        links: [Links::default(), Links::default()],
    };
    c.entry(Path::new(""))?;
    c.hard_links();
    Ok(c.out)
}

/// Hard-link structure of one side: inode → relative paths (only inodes
/// with nlink > 1), and path → inode.
#[derive(Debug, Default)]
struct Links {
    groups: HashMap<(u64, u64), BTreeSet<PathBuf>>,
    inode_of: BTreeMap<PathBuf, (u64, u64)>,
}

impl Links {
    fn add(&mut self, rel: &Path, m: &Metadata) {
        if m.is_dir() || m.nlink() < 2 {
            return;
        }
        let key = (m.dev(), m.ino());
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

    fn lstat(&self, side: usize, rel: &Path) -> io::Result<Option<Metadata>> {
        let path = join(&self.roots[side], rel);
        match std::fs::symlink_metadata(&path) {
            Ok(m) => Ok(Some(m)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(context(e, "lstat", &path)),
        }
    }

    fn entry(&mut self, rel: &Path) -> io::Result<()> {
        self.out.entries += 1;
        let (l, r) = match (self.lstat(0, rel)?, self.lstat(1, rel)?) {
            (Some(l), Some(r)) => (l, r),
            (l, r) => {
                let show = |m: Option<Metadata>| m.map_or("absent", |m| type_name(&m)).to_owned();
                self.diff(rel, Field::Presence, show(l), show(r));
                return Ok(());
            }
        };
        if type_name(&l) != type_name(&r) {
            self.diff(rel, Field::Type, type_name(&l), type_name(&r));
            return Ok(());
        }
        self.links[0].add(rel, &l);
        self.links[1].add(rel, &r);
        self.metadata(rel, &l, &r);
        self.xattrs(rel)?;
        let ft = l.file_type();
        if ft.is_file() {
            self.file(rel, &l, &r)?;
        } else if ft.is_symlink() {
            let target = |side: usize| std::fs::read_link(join(&self.roots[side], rel));
            let (lt, rt) = (target(0)?, target(1)?);
            if lt != rt {
                self.diff(rel, Field::Target, format!("{lt:?}"), format!("{rt:?}"));
            }
        } else if ft.is_dir() {
            for name in self.children(rel)? {
                self.entry(&rel.join(name))?;
            }
        }
        Ok(())
    }

    /// Fields every entry type has.
    fn metadata(&mut self, rel: &Path, l: &Metadata, r: &Metadata) {
        // Symlink permission bits are fixed on Linux and meaningless.
        if !l.file_type().is_symlink() && l.mode() & 0o7777 != r.mode() & 0o7777 {
            self.diff(rel, Field::Mode, octal(l.mode()), octal(r.mode()));
        }
        if l.uid() != r.uid() {
            self.diff(rel, Field::Uid, l.uid(), r.uid());
        }
        if l.gid() != r.gid() {
            self.diff(rel, Field::Gid, l.gid(), r.gid());
        }
        let (lm, rm) = ((l.mtime(), l.mtime_nsec()), (r.mtime(), r.mtime_nsec()));
        if lm != rm {
            self.diff(rel, Field::Mtime, ns(lm), ns(rm));
        }
        let atime = self.opts.atime && (self.opts.dir_atime || !l.is_dir());
        let (la, ra) = ((l.atime(), l.atime_nsec()), (r.atime(), r.atime_nsec()));
        if atime && la != ra {
            self.diff(rel, Field::Atime, ns(la), ns(ra));
        }
        let ft = l.file_type();
        use std::os::unix::fs::FileTypeExt;
        if (ft.is_block_device() || ft.is_char_device()) && l.rdev() != r.rdev() {
            self.diff(rel, Field::Rdev, dev(l.rdev()), dev(r.rdev()));
        }
    }

    fn file(&mut self, rel: &Path, l: &Metadata, r: &Metadata) -> io::Result<()> {
        if l.size() != r.size() {
            self.diff(rel, Field::Size, l.size(), r.size());
        } else if let Some(offset) = first_difference(
            &join(&self.roots[0], rel),
            &join(&self.roots[1], rel),
            l.size(),
        )? {
            self.diff(rel, Field::Content, format!("differs at byte {offset}"), "");
        }
        if self.opts.blocks_le && r.blocks() > l.blocks() {
            self.diff(rel, Field::Blocks, l.blocks(), r.blocks());
        }
        Ok(())
    }

    fn xattrs(&mut self, rel: &Path) -> io::Result<()> {
        let l = read_xattrs(&join(&self.roots[0], rel))?;
        let r = read_xattrs(&join(&self.roots[1], rel))?;
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
    fn children(&self, rel: &Path) -> io::Result<BTreeSet<OsString>> {
        let mut names = BTreeSet::new();
        for root in &self.roots {
            let dir = join(root, rel);
            for entry in std::fs::read_dir(&dir).map_err(|e| context(e, "readdir", &dir))? {
                names.insert(entry?.file_name());
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
    let (lf, rf) = (open_quietly(left)?, open_quietly(right)?);
    let mut segments = data_segments(&lf, size)?;
    segments.extend(data_segments(&rf, size)?);
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

fn type_name(m: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let ft = m.file_type();
    match () {
        _ if ft.is_file() => "file",
        _ if ft.is_dir() => "directory",
        _ if ft.is_symlink() => "symlink",
        _ if ft.is_fifo() => "fifo",
        _ if ft.is_socket() => "socket",
        _ if ft.is_char_device() => "char device",
        _ if ft.is_block_device() => "block device",
        _ => "unknown",
    }
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
