//! Oracles for space accounting: trees with every kind of extent sharing, the numbers
//! `btrfs filesystem du` gives for them, and the same numbers computed here from a FIEMAP
//! pass of our own ([`crate::extents`]), without any code of the tool under test.

use crate::extents::{Extent, extents};
use crate::rng::Rng;
use crate::{capture, run_ok};
use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

const FIEMAP_EXTENT_UNKNOWN: u32 = 0x2;
const FIEMAP_EXTENT_DELALLOC: u32 = 0x4;
const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;

/// Shares all of `src`'s extents with a new file `dst` (`FICLONE`), or copies it where the
/// filesystem cannot (`reflinks` false).
pub fn clone_file(src: &Path, dst: &Path, reflinks: bool) -> io::Result<()> {
    let from = File::open(src)?;
    let to = File::create(dst)?;
    if reflinks {
        rustix::fs::ioctl_ficlone(&to, &from)?;
    } else {
        io::copy(&mut &from, &mut &to)?;
    }
    Ok(())
}

/// Shares `len` bytes of `src` at `src_off` into `dst` at `dst_off` (`FICLONERANGE`, through
/// `xfs_io`), or copies them where the filesystem cannot.
pub fn clone_range(
    src: &Path,
    src_off: u64,
    dst: &Path,
    dst_off: u64,
    len: u64,
    reflinks: bool,
) -> io::Result<()> {
    if !reflinks {
        let mut buf = vec![0u8; len as usize];
        File::open(src)?.read_exact_at(&mut buf, src_off)?;
        let to = fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(dst)?;
        return to.write_all_at(&buf, dst_off);
    }
    let cmd = format!("reflink {} {src_off} {dst_off} {len}", src.display());
    let out = capture(Command::new("xfs_io").arg("-f").arg("-c").arg(cmd).arg(dst))?;
    if out.success() && out.stderr.is_empty() {
        Ok(())
    } else {
        Err(io::Error::other(out.to_string()))
    }
}

fn random_file(path: &Path, len: usize, rng: &mut Rng) -> io::Result<()> {
    let mut data = vec![0u8; len];
    rng.fill(&mut data);
    fs::write(path, data)
}

/// Builds a tree under `root` with what space accounting must get right, and files
/// outside it (under `outside`) that share some of its extents:
///
/// - a file and its whole clone (`a/orig`, `a/clone`), and a hard link to it (`b/orig-link`);
/// - a clone partly rewritten, a whole block and a few bytes inside another
///   (`b/rewritten`);
/// - a file sharing one range of another (`b/part`, `FICLONERANGE`);
/// - a sparse file (holes before, between and after its data: `c/sparse`);
/// - small files (inline data on btrfs: `c/tiny-*`), an empty file, a 5000-byte one;
/// - a preallocated file (`d/prealloc`);
/// - a clone in a subdirectory, a symlink and a FIFO (`d/e/…`);
/// - outside: a clone of `a/clone`, and a clone of a range of `d/e/deep`.
///
/// Sizes and contents come from `seed`. Where `reflinks` is false, clones are copies.
/// Everything is flushed (`sync`) before it returns, so no extent waits for allocation.
pub fn space_tree(root: &Path, outside: &Path, seed: u64, reflinks: bool) -> io::Result<()> {
    let mut rng = Rng::new(seed);
    for d in ["a", "b", "c", "d/e"] {
        fs::create_dir_all(root.join(d))?;
    }
    fs::create_dir_all(outside)?;
    let orig = root.join("a/orig");
    let size = rng.range(1 << 20, 4 << 20) as usize + rng.range(1, 4096) as usize;
    random_file(&orig, size, &mut rng)?;
    clone_file(&orig, &root.join("a/clone"), reflinks)?;
    fs::hard_link(&orig, root.join("b/orig-link"))?;

    let rewritten = root.join("b/rewritten");
    clone_file(&orig, &rewritten, reflinks)?;
    let f = fs::OpenOptions::new().write(true).open(&rewritten)?;
    let mut block = vec![0u8; 64 << 10];
    rng.fill(&mut block);
    f.write_all_at(&block, rng.range(1, 8) * (64 << 10))?;
    f.write_all_at(b"0123456789", rng.range(9 << 16, 12 << 16) + 3)?;
    drop(f);

    clone_range(
        &orig,
        256 << 10,
        &root.join("b/part"),
        0,
        512 << 10,
        reflinks,
    )?;

    let sparse = File::create(root.join("c/sparse"))?;
    sparse.set_len(4 << 20)?;
    let mut data = vec![0u8; rng.range(1, 200) as usize * 1024];
    rng.fill(&mut data);
    sparse.write_all_at(&data, 1 << 20)?;
    sparse.write_all_at(b"tail", (3 << 20) + 7)?;
    drop(sparse);

    for (i, len) in [1, rng.range(2, 1000), rng.range(1000, 2000)]
        .iter()
        .enumerate()
    {
        random_file(&root.join(format!("c/tiny-{i}")), *len as usize, &mut rng)?;
    }
    File::create(root.join("c/empty"))?;
    random_file(&root.join("c/five-k"), 5000, &mut rng)?;

    let pre = File::create(root.join("d/prealloc"))?;
    rustix::fs::fallocate(&pre, rustix::fs::FallocateFlags::empty(), 0, 256 << 10)?;
    drop(pre);
    let deep = root.join("d/e/deep");
    random_file(&deep, rng.range(100, 400) as usize * 1024, &mut rng)?;
    clone_file(&deep, &root.join("d/e/deep-clone"), reflinks)?;
    std::os::unix::fs::symlink("../../a/orig", root.join("d/e/link"))?;
    run_ok("mkfifo", &[root.join("d/e/fifo")]);

    clone_file(&root.join("a/clone"), &outside.join("ext-clone"), reflinks)?;
    clone_range(&deep, 0, &outside.join("ext-part"), 0, 64 << 10, reflinks)?;
    // Readable by everyone, as most trees are (xfs_io creates files private).
    for dir in [root, outside] {
        for f in regular_files(dir)? {
            fs::set_permissions(f, fs::Permissions::from_mode(0o644))?;
        }
    }
    run_ok("sync", &[] as &[&str]);
    Ok(())
}

/// Space accounting of one path, computed from a FIEMAP pass of this crate's own: what
/// `mimeo-du` must report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpectedUsage {
    /// Bytes of data extents.
    pub total: u64,
    /// Bytes of unshared extents, unknown-address ones included.
    pub exclusive: u64,
    /// Bytes of shared extents, each physical byte once.
    pub shared: u64,
    /// Bytes of shared extents that no other file below the path references.
    pub shared_outside: u64,
    /// Extents at no known address (inline, delayed allocation).
    pub unknown_extents: u64,
    /// Their bytes.
    pub unknown_bytes: u64,
    /// Regular files, hard links once.
    pub files: u64,
}

/// The regular files below `path` (or `path` itself), each inode once, not following
/// symlinks.
pub fn regular_files(path: &Path) -> io::Result<Vec<PathBuf>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = fs::symlink_metadata(&p)?;
        if m.is_dir() {
            for e in fs::read_dir(&p)? {
                stack.push(e?.path());
            }
        } else if m.is_file() && seen.insert((m.dev(), m.ino())) {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// The usage of `path` from its files' extent maps.
pub fn expected_usage(path: &Path) -> io::Result<ExpectedUsage> {
    let mut u = ExpectedUsage::default();
    let mut shared: Vec<(u64, u64)> = Vec::new();
    for file in regular_files(path)? {
        u.files += 1;
        for e in extents(&file)? {
            u.total += e.length;
            if e.flags
                & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_DATA_INLINE)
                != 0
            {
                u.unknown_extents += 1;
                u.unknown_bytes += e.length;
                u.exclusive += e.length;
            } else if e.is_shared() {
                shared.push((e.physical, e.physical + e.length));
            } else {
                u.exclusive += e.length;
            }
        }
    }
    // Every boundary, then how many ranges cover each piece between two of them.
    let mut points: Vec<u64> = shared.iter().flat_map(|&(a, b)| [a, b]).collect();
    points.sort_unstable();
    points.dedup();
    for w in points.windows(2) {
        let cover = shared
            .iter()
            .filter(|&&(a, b)| a <= w[0] && w[1] <= b)
            .count();
        if cover >= 1 {
            u.shared += w[1] - w[0];
        }
        if cover == 1 {
            u.shared_outside += w[1] - w[0];
        }
    }
    Ok(u)
}

/// The extents of `file` that FIEMAP marks as inline data.
pub fn inline_extents(file: &Path) -> io::Result<Vec<Extent>> {
    Ok(extents(file)?
        .into_iter()
        .filter(|e| e.flags & FIEMAP_EXTENT_DATA_INLINE != 0)
        .collect())
}

/// One line of `btrfs filesystem du -s --raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtrfsDu {
    /// `Total`.
    pub total: u64,
    /// `Exclusive`.
    pub exclusive: u64,
    /// `Set shared`.
    pub set_shared: u64,
    /// The path as printed.
    pub path: String,
}

/// Runs `btrfs filesystem du -s --raw` on `paths`: one line per path.
pub fn btrfs_du(paths: &[&Path]) -> io::Result<Vec<BtrfsDu>> {
    let out = capture(
        Command::new("btrfs")
            .args(["filesystem", "du", "-s", "--raw"])
            .args(paths),
    )?;
    if !out.success() {
        return Err(io::Error::other(out.to_string()));
    }
    let mut lines = Vec::new();
    for line in out.stdout.lines().skip(1) {
        let mut words = line.split_whitespace();
        let mut num = || -> io::Result<u64> {
            words
                .next()
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| io::Error::other(format!("unexpected line: {line:?}")))
        };
        let (total, exclusive, set_shared) = (num()?, num()?, num()?);
        lines.push(BtrfsDu {
            total,
            exclusive,
            set_shared,
            path: words.collect::<Vec<_>>().join(" "),
        });
    }
    Ok(lines)
}
