//! Seeded generators for test and benchmark trees.
//!
//! [`generate`] builds a small tree full of the entries copy tools get wrong:
//! sparse files, every file type, hard links across directories, xattrs and
//! POSIX ACLs, set-id and locked-out modes, foreign owners, extreme
//! nanosecond times (also on symlinks) and names that are not UTF-8. The
//! same seed and options give the same tree, so a failure can be replayed.
//!
//! [`gen_small`] and [`gen_empty`] make plain bulk trees for benchmarks.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType, Gid, Mode, Timespec, Timestamps, Uid, XattrFlags};

use crate::rng::Rng;

/// Deepest directory level below the root.
const MAX_DEPTH: usize = 6;
/// A foreign owner used for files and symlinks when allowed.
pub const FOREIGN_UID: u32 = 1234;
/// A foreign group used for files and symlinks when allowed.
pub const FOREIGN_GID: u32 = 5678;

/// What [`generate`] puts into a tree.
#[derive(Debug, Clone)]
pub struct GenOptions {
    pub seed: u64,
    /// Approximate number of entries below the root.
    pub entries: usize,
    /// Character and block device nodes (needs root).
    pub devices: bool,
    /// Owners and groups other than the caller's (needs root).
    pub foreign_owners: bool,
    /// Modes that lock the owner out (000, read-only directories with
    /// contents). Only root can still read and delete such trees.
    pub locked_modes: bool,
    /// Upper bound for a regular file's size in bytes.
    pub max_file_size: u64,
    /// FIFOs (off for runs that read special files, which would wait on them).
    pub fifos: bool,
    /// Names with control characters and of 255 bytes, absolute symlinks into the tree,
    /// and directories their owner cannot list or search (for the differential fuzzer).
    pub hostile: bool,
}

impl GenOptions {
    /// Defaults for `seed` and `entries`: the root-only entries are enabled
    /// exactly when running as root.
    pub fn new(seed: u64, entries: usize) -> GenOptions {
        let root = rustix::process::geteuid().is_root();
        GenOptions {
            seed,
            entries,
            devices: root,
            foreign_owners: root,
            locked_modes: root,
            max_file_size: 3 << 20,
            fifos: true,
            hostile: false,
        }
    }
}

/// Counts of what [`generate`] created (the root not included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GenStats {
    pub files: usize,
    pub dirs: usize,
    pub symlinks: usize,
    pub hard_links: usize,
    pub specials: usize,
    /// Logical size of all regular files, hard links counted once.
    pub bytes: u64,
}

/// A directory waiting for its final owner, mode and times.
#[derive(Debug)]
struct Dir {
    path: PathBuf,
    depth: usize,
    /// Names in creation order (deterministic, unlike a hash set).
    names: Vec<OsString>,
    meta: Meta,
}

/// Metadata applied to an entry once its contents are final.
#[derive(Debug, Clone, Copy)]
struct Meta {
    mode: u32,
    owner: Option<(u32, u32)>,
    atime: Timespec,
    mtime: Timespec,
}

/// Builds a random tree under `root` (created if missing) from `opts`.
pub fn generate(root: &Path, opts: &GenOptions) -> io::Result<GenStats> {
    fs::create_dir_all(root)?;
    let mut g = Generator {
        rng: Rng::new(opts.seed),
        opts: opts.clone(),
        stats: GenStats::default(),
        dirs: Vec::new(),
        files: Vec::new(),
    };
    // The root keeps an ordinary mode so the tree stays usable, but gets
    // generated times like everything else.
    let root_meta = Meta {
        mode: 0o755,
        owner: None,
        atime: g.time(),
        mtime: g.time(),
    };
    g.dirs.push(Dir {
        path: root.to_path_buf(),
        depth: 0,
        names: Vec::new(),
        meta: root_meta,
    });
    for _ in 0..opts.entries {
        g.entry()?;
    }
    // Post-order: a child directory always comes after its parent in
    // `dirs`, so finishing in reverse sets each directory's mode and times
    // after everything inside it exists.
    for dir in g.dirs.iter().rev() {
        apply_meta(&dir.path, dir.meta, false)?;
    }
    Ok(g.stats)
}

struct Generator {
    rng: Rng,
    opts: GenOptions,
    stats: GenStats,
    dirs: Vec<Dir>,
    /// Regular files, as hard-link candidates.
    files: Vec<PathBuf>,
}

impl Generator {
    /// Creates one random entry in a random directory.
    fn entry(&mut self) -> io::Result<()> {
        // Favour the newest directory so the tree grows deep, not just wide.
        let d = if self.rng.chance(50) {
            self.dirs.len() - 1
        } else {
            self.rng.below(self.dirs.len() as u64) as usize
        };
        let name = self.name(d);
        let path = self.dirs[d].path.join(&name);
        let depth = self.dirs[d].depth;
        self.create(d, path.clone(), depth)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }

    fn create(&mut self, d: usize, path: PathBuf, depth: usize) -> io::Result<()> {
        match self.rng.below(100) {
            0..=34 => self.regular(&path),
            35..=42 => self.sparse(&path),
            43..=54 if depth < MAX_DEPTH => self.dir(path, depth + 1),
            55..=66 => self.symlink(&path, d),
            67..=72 if !self.files.is_empty() => self.hard_link(&path),
            73..=76 if self.opts.fifos => self.special(&path, FileType::Fifo, 0),
            77..=79 => self.special(&path, FileType::Socket, 0),
            80..=83 if self.opts.devices => {
                let (kind, dev) = if self.rng.chance(50) {
                    let minor = *self.rng.pick(&[3, 5, 7, 8, 9]);
                    (FileType::CharacterDevice, rustix::fs::makedev(1, minor))
                } else {
                    let minor = self.rng.below(8) as u32;
                    (FileType::BlockDevice, rustix::fs::makedev(7, minor))
                };
                self.special(&path, kind, dev)
            }
            _ => self.write_file(&path, &[]),
        }
    }

    /// A name unique within directory `d`: plain, with spaces or a newline,
    /// non-UTF-8, hidden, dash-led, multibyte or long.
    fn name(&mut self, d: usize) -> OsString {
        const PLAIN: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789_.-";
        let len = self.rng.range(1, 12) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| *self.rng.pick(PLAIN)).collect();
        match self.rng.below(20) {
            0 => bytes.extend_from_slice(b" with spaces "),
            1 => bytes.extend_from_slice(b"\nnew\nline"),
            2 | 3 => {
                let n = self.rng.range(1, 4);
                bytes.extend((0..n).map(|_| self.rng.range(0x80, 0xff) as u8));
            }
            4 => bytes.insert(0, b'.'),
            5 => bytes.insert(0, b'-'),
            6 => bytes.extend_from_slice("-é中".as_bytes()),
            7 => bytes.resize(200, b'L'),
            _ => {}
        }
        if self.opts.hostile {
            self.hostile_name(&mut bytes);
        }
        if bytes == b"." || bytes == b".." {
            bytes.push(b'x');
        }
        let names = &mut self.dirs[d].names;
        let mut name = OsString::from_vec(bytes.clone());
        let mut n = 0;
        while names.contains(&name) {
            n += 1;
            let suffix = format!("~{n}");
            let mut b = bytes.clone();
            // A 255-byte name stays within NAME_MAX.
            b.truncate(255 - suffix.len());
            b.extend_from_slice(suffix.as_bytes());
            name = OsString::from_vec(b);
        }
        names.push(name.clone());
        name
    }

    /// Sometimes makes `bytes` what terminals and line-based tools choke on: escape
    /// sequences and other control characters, or the longest name a directory can hold.
    fn hostile_name(&mut self, bytes: &mut Vec<u8>) {
        match self.rng.below(10) {
            0 => bytes.extend_from_slice(b"\x1b]0;pwned\x07"),
            1 => bytes.extend_from_slice(b"\t\x01\x7f\r"),
            2 => bytes.resize(255, b'N'),
            3 => bytes.extend_from_slice(b"\\'\"$"),
            _ => {}
        }
    }

    fn regular(&mut self, path: &Path) -> io::Result<()> {
        let max = self.opts.max_file_size;
        let size = match self.rng.below(100) {
            0..=19 => self.rng.below(65),
            20..=69 => self.rng.below(16 << 10),
            70..=89 => self.rng.below(256 << 10),
            90..=97 => self.rng.below(1 << 20),
            _ => self.rng.below(max + 1),
        }
        .min(max) as usize;
        let mut data = vec![0u8; size];
        self.rng.fill(&mut data);
        // Some files carry zero runs that are data, not holes.
        if size > 8192 && self.rng.chance(15) {
            let start = self.rng.below(size as u64 / 2) as usize;
            data[start..start + size / 3].fill(0);
        }
        self.write_file(path, &data)
    }

    fn write_file(&mut self, path: &Path, data: &[u8]) -> io::Result<()> {
        fs::write(path, data)?;
        self.finish_file(path, data.len() as u64)
    }

    /// A sparse file: leading hole, holes between data, trailing hole, all
    /// hole, or an unaligned tail after a hole.
    fn sparse(&mut self, path: &Path) -> io::Result<()> {
        const K: u64 = 1024;
        let mut data: Vec<(u64, u64)> = Vec::new();
        let mut size;
        match self.rng.below(5) {
            0 => {
                data.push((
                    self.rng.range(1, 16) * 256 * K,
                    self.rng.range(1, 16) * 4 * K,
                ));
                size = 0;
            }
            1 => {
                let mut at = 0;
                for _ in 0..self.rng.range(2, 5) {
                    let len = self.rng.range(1, 32) * 4 * K;
                    data.push((at, len));
                    at += len + self.rng.range(1, 16) * 256 * K;
                }
                size = 0;
            }
            2 => {
                data.push((0, self.rng.range(1, 16) * 4 * K));
                size = self.rng.range(1, 64) * 256 * K + 4 * 64 * K;
            }
            3 => size = self.rng.range(1, 64) * 256 * K,
            _ => {
                data.push((self.rng.range(1, 8) * 256 * K, self.rng.range(1, 9000)));
                size = 0;
            }
        }
        let file = File::create(path)?;
        for &(at, len) in &data {
            let mut buf = vec![0u8; len as usize];
            self.rng.fill(&mut buf);
            file.write_all_at(&buf, at)?;
            size = size.max(at + len);
        }
        file.set_len(size)?;
        drop(file);
        self.finish_file(path, size)
    }

    /// Decorates a new regular file and remembers it for hard links.
    fn finish_file(&mut self, path: &Path, size: u64) -> io::Result<()> {
        self.stats.files += 1;
        self.stats.bytes += size;
        self.files.push(path.to_path_buf());
        self.decorate(path, false)?;
        let meta = self.meta(false);
        apply_meta(path, meta, false)
    }

    fn dir(&mut self, path: PathBuf, depth: usize) -> io::Result<()> {
        fs::create_dir(&path)?;
        self.stats.dirs += 1;
        // Xattrs and a default ACL now, so children inherit it like they
        // would on a real system; owner, mode and times at the very end.
        self.decorate(&path, true)?;
        let meta = self.meta(true);
        self.dirs.push(Dir {
            path,
            depth,
            names: Vec::new(),
            meta,
        });
        Ok(())
    }

    fn symlink(&mut self, path: &Path, d: usize) -> io::Result<()> {
        let kinds = if self.opts.hostile { 8 } else { 7 };
        let target: OsString = match self.rng.below(kinds) {
            0 => "..".into(),
            1 => ".".into(),
            2 => "/nonexistent/mimeo/target".into(),
            // The tree's own root by its absolute path: a copy that writes through it stays
            // inside the case (a system directory here was filled by the cases written
            // through it), and following it is a loop.
            3 if self.opts.hostile => self.dirs[0].path.clone().into_os_string(),
            3 => "/etc".into(),
            4 => "dangling-target".into(),
            5 => {
                // A sibling, or something in the parent; may or may not exist.
                let n = self.rng.below(4);
                let mut t = b"../".to_vec();
                t.extend(format!("x{n}").bytes());
                t.push(0xfe);
                OsString::from_vec(t)
            }
            // A sibling of any type (possibly itself: a loop).
            6 => self.rng.pick(&self.dirs[d].names).clone(),
            // The same, by its absolute path.
            _ => {
                let name = self.rng.pick(&self.dirs[d].names).clone();
                self.dirs[d].path.join(name).into_os_string()
            }
        };
        std::os::unix::fs::symlink(&target, path)?;
        self.stats.symlinks += 1;
        let meta = self.meta(false);
        apply_meta(path, meta, true)
    }

    fn hard_link(&mut self, path: &Path) -> io::Result<()> {
        let original = self.rng.pick(&self.files).clone();
        fs::hard_link(&original, path)?;
        self.stats.hard_links += 1;
        Ok(())
    }

    fn special(&mut self, path: &Path, kind: FileType, dev: u64) -> io::Result<()> {
        // mknod makes socket nodes too: the same inode `bind` would leave
        // behind, without bind's 108-byte path limit.
        rustix::fs::mknodat(CWD, path, kind, Mode::from_raw_mode(0o600), dev)?;
        self.stats.specials += 1;
        let meta = self.meta(false);
        apply_meta(path, meta, false)
    }

    /// Random user xattrs and POSIX ACLs (for regular files and
    /// directories: the kernel refuses `user.*` on special files).
    fn decorate(&mut self, path: &Path, is_dir: bool) -> io::Result<()> {
        if self.rng.chance(25) {
            for i in 0..self.rng.range(1, 3) {
                let len = *self.rng.pick(&[0, 1, 17, 100, 900]);
                let mut value = vec![0u8; len];
                self.rng.fill(&mut value);
                let name = format!("user.mimeo.k{i}");
                ignore_unsupported(rustix::fs::lsetxattr(
                    path,
                    name.as_str(),
                    &value,
                    XattrFlags::empty(),
                ))?;
            }
        }
        if self.rng.chance(12) {
            let acl = acl_xattr(&[
                (ACL_USER_OBJ, 7, ACL_UNDEFINED_ID),
                (ACL_USER, 5, FOREIGN_UID),
                (ACL_GROUP_OBJ, 4, ACL_UNDEFINED_ID),
                (ACL_GROUP, 6, FOREIGN_GID),
                (ACL_MASK, 7, ACL_UNDEFINED_ID),
                (ACL_OTHER, 4, ACL_UNDEFINED_ID),
            ]);
            let name = if is_dir && self.rng.chance(50) {
                "system.posix_acl_default"
            } else {
                "system.posix_acl_access"
            };
            ignore_unsupported(rustix::fs::lsetxattr(path, name, &acl, XattrFlags::empty()))?;
        }
        Ok(())
    }

    /// Random final metadata for a new entry.
    fn meta(&mut self, is_dir: bool) -> Meta {
        const FILE_MODES: &[u32] = &[
            0o4755, 0o2711, 0o6755, 0o444, 0o600, 0o777, 0o1644, 0o2755, 0o640, 0o400, 0o4000,
        ];
        const DIR_MODES: &[u32] = &[0o1777, 0o2711, 0o2775, 0o700, 0o711, 0o3777];
        const LOCKED_FILE: &[u32] = &[0o000];
        const LOCKED_DIR: &[u32] = &[0o555, 0o444, 0o000, 0o500];
        // Also directories their owner can search but not list, or list but not search.
        const ODD_DIR: &[u32] = &[0o555, 0o444, 0o000, 0o500, 0o311, 0o300, 0o111];
        let locked = self.opts.locked_modes && self.rng.chance(8);
        let locked_dir = if self.opts.hostile {
            ODD_DIR
        } else {
            LOCKED_DIR
        };
        let mode = match (is_dir, locked, self.rng.chance(50)) {
            (true, true, _) => *self.rng.pick(locked_dir),
            (false, true, _) => *self.rng.pick(LOCKED_FILE),
            (true, false, true) => 0o755,
            (false, false, true) => 0o644,
            (true, false, false) => *self.rng.pick(DIR_MODES),
            (false, false, false) => *self.rng.pick(FILE_MODES),
        };
        let owner = (self.opts.foreign_owners && self.rng.chance(30)).then(|| {
            *self.rng.pick(&[
                (FOREIGN_UID, FOREIGN_GID),
                (FOREIGN_UID, 0),
                (0, FOREIGN_GID),
            ])
        });
        Meta {
            mode,
            owner,
            atime: self.time(),
            mtime: self.time(),
        }
    }

    /// A time far in the past, before 1970, recent, or in 2100, with
    /// nanoseconds most of the time.
    fn time(&mut self) -> Timespec {
        const YEAR: u64 = 365 * 86400;
        let tv_sec = match self.rng.below(10) {
            0..=2 => self.rng.below(2 * YEAR) as i64,
            3 => -(self.rng.range(1, YEAR) as i64),
            4..=5 => 4_102_444_800 + self.rng.below(YEAR) as i64,
            _ => 1_600_000_000 + self.rng.below(5 * YEAR) as i64,
        };
        let tv_nsec = if self.rng.chance(80) {
            self.rng.below(1_000_000_000) as i64
        } else {
            0
        };
        Timespec { tv_sec, tv_nsec }
    }
}

/// Owner, then mode (chown clears set-id bits), then times, never following
/// a final symlink.
fn apply_meta(path: &Path, meta: Meta, is_symlink: bool) -> io::Result<()> {
    if let Some((uid, gid)) = meta.owner {
        rustix::fs::chownat(
            CWD,
            path,
            Some(Uid::from_raw(uid)),
            Some(Gid::from_raw(gid)),
            AtFlags::SYMLINK_NOFOLLOW,
        )?;
    }
    if !is_symlink {
        fs::set_permissions(path, fs::Permissions::from_mode(meta.mode))?;
    }
    let times = Timestamps {
        last_access: meta.atime,
        last_modification: meta.mtime,
    };
    rustix::fs::utimensat(CWD, path, &times, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(())
}

/// Filesystems without user xattrs or ACLs (e.g. some tmpfs) simply get a
/// tree without them.
fn ignore_unsupported(r: rustix::io::Result<()>) -> io::Result<()> {
    match r {
        Err(rustix::io::Errno::NOTSUP) => Ok(()),
        other => other.map_err(Into::into),
    }
}

const ACL_USER_OBJ: u16 = 0x01;
const ACL_USER: u16 = 0x02;
const ACL_GROUP_OBJ: u16 = 0x04;
const ACL_GROUP: u16 = 0x08;
const ACL_MASK: u16 = 0x10;
const ACL_OTHER: u16 = 0x20;
const ACL_UNDEFINED_ID: u32 = u32::MAX;

/// Encodes `(tag, perm, id)` entries, sorted by tag, in the kernel's
/// `system.posix_acl_*` xattr format (version 2, little endian).
pub fn acl_xattr(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let mut out = 2u32.to_le_bytes().to_vec();
    for &(tag, perm, id) in entries {
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&perm.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
    }
    out
}

/// `files` small files (0–8 KiB of seeded data), 100 per directory, in a
/// two-level directory fan-out.
pub fn gen_small(root: &Path, files: usize, seed: u64) -> io::Result<()> {
    let mut rng = Rng::new(seed);
    let mut buf = vec![0u8; 8192];
    bulk(root, files, 100, |path| {
        let len = rng.below(8193) as usize;
        rng.fill(&mut buf[..len]);
        fs::write(path, &buf[..len])
    })
}

/// `files` empty files, 1000 per directory.
pub fn gen_empty(root: &Path, files: usize) -> io::Result<()> {
    bulk(root, files, 1000, |path| File::create(path).map(drop))
}

/// Calls `make` for `files` paths `dNN/dNNNN/fNNNNNN` with `per_dir` files
/// per leaf directory and up to 100 leaves per top directory.
fn bulk(
    root: &Path,
    files: usize,
    per_dir: usize,
    mut make: impl FnMut(&Path) -> io::Result<()>,
) -> io::Result<()> {
    for i in 0..files {
        let leaf = i / per_dir;
        let dir = root
            .join(format!("d{:02}", leaf / 100))
            .join(format!("d{leaf:04}"));
        if i % per_dir == 0 {
            fs::create_dir_all(&dir)?;
        }
        make(&dir.join(format!("f{i:07}")))?;
    }
    fs::create_dir_all(root)
}

/// Joins raw name bytes onto `dir`: a convenience for tests that need
/// non-UTF-8 names.
pub fn join_bytes(dir: &Path, name: &[u8]) -> PathBuf {
    dir.join(OsStr::from_bytes(name))
}

/// A chain of `levels` nested directories named `name` below `root`
/// (created if missing), built fd-relative so the total path may exceed
/// `PATH_MAX`. Every 64th level and the deepest one hold a small seeded
/// file `f` (mode 0640, with a `user.mimeo.deep` xattr where supported) and
/// the deepest one also a symlink `up` to `..`.
pub fn gen_deep(root: &Path, levels: usize, name: &str) -> io::Result<()> {
    use rustix::fs::{OFlags, openat};
    fs::create_dir_all(root)?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = openat(CWD, root, flags, Mode::empty())?;
    // The same bytes at the same level, whatever the depth of the chain.
    let mut rng = Rng::new(0xdee9);
    for level in 1..=levels {
        rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755))?;
        dir = openat(&dir, name, flags, Mode::empty())?;
        if level % 64 == 0 || level == levels {
            let file_flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
            let fd = openat(&dir, "f", file_flags, Mode::from_raw_mode(0o640))?;
            let mut data = vec![0u8; rng.below(5000) as usize];
            rng.fill(&mut data);
            File::from(fd).write_all_at(&data, 0)?;
            let fd = openat(&dir, "f", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
            ignore_unsupported(rustix::fs::fsetxattr(
                &fd,
                "user.mimeo.deep",
                level.to_string().as_bytes(),
                XattrFlags::empty(),
            ))?;
        }
    }
    rustix::fs::symlinkat("..", &dir, "up")?;
    Ok(())
}
