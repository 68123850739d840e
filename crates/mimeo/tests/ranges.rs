//! `mimeo::clone_range` against the kernel's rules for range clones, each on real btrfs and
//! XFS (reflink) filesystems: what is cloned, what is copied, and that the bytes are always
//! exactly the source's. Sharing is proved with FIEMAP (`FIEMAP_EXTENT_SHARED`).

use mimeo::clone_range;
use mimeo_testkit::extents::extents;
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{FsKind, LoopFs, capture};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Block size of the test filesystems (btrfs sectors, XFS blocks): the clone granularity.
const B: u64 = 4096;

const KINDS: [FsKind; 2] = [FsKind::Btrfs, FsKind::Xfs];

fn scratch(kind: FsKind) -> Option<LoopFs> {
    LoopFs::try_new(kind, kind.min_size_mib().max(300))
}

fn random(n: u64, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; n as usize];
    Rng::new(seed).fill(&mut v);
    v
}

/// Creates `dir/name` holding `data`, flushed, open read-write.
fn file_with(dir: &Path, name: &str, data: &[u8]) -> File {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(dir.join(name))
        .unwrap_or_else(|e| panic!("create {name}: {e}"));
    f.write_all_at(data, 0).unwrap();
    f.sync_all().unwrap();
    f
}

fn content(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {path:?}: {e}"))
}

/// Bytes of `[off, off + len)` of `path` that FIEMAP calls shared.
fn shared(path: &Path, off: u64, len: u64) -> u64 {
    File::open(path).unwrap().sync_all().unwrap();
    extents(path)
        .unwrap()
        .iter()
        .filter(|e| e.is_shared())
        .map(|e| {
            let lo = e.logical.max(off);
            let hi = (e.logical + e.length).min(off + len);
            hi.saturating_sub(lo)
        })
        .sum()
}

/// `want` with `data` written at `at` (growing it as needed, zeros in any gap).
fn written(mut want: Vec<u8>, at: u64, data: &[u8]) -> Vec<u8> {
    if data.is_empty() {
        return want;
    }
    let end = at as usize + data.len();
    if want.len() < end {
        want.resize(end, 0);
    }
    want[at as usize..end].copy_from_slice(data);
    want
}

/// One case: clone `len` bytes of `src` at `so` into `dst` (created with `dst_data`) at `dof`,
/// and check the bytes, the split into cloned and copied, and FIEMAP's view of the clone.
#[allow(clippy::too_many_arguments)]
fn case(
    kind: FsKind,
    dir: &Path,
    what: &str,
    src: &(PathBuf, Vec<u8>),
    dst_data: &[u8],
    so: u64,
    dof: u64,
    len: u64,
    want_cloned: u64,
) {
    let name = what.replace(' ', "_");
    let d = file_with(dir, &name, dst_data);
    let s = File::open(&src.0).unwrap();
    let got =
        clone_range(&s, so, &d, dof, len).unwrap_or_else(|e| panic!("{kind}: {what}: {e} ({e:?})"));
    let end = (so + len).min(src.1.len() as u64);
    let piece = &src.1[so.min(end) as usize..end as usize];
    assert_eq!(
        (got.cloned, got.copied),
        (want_cloned, piece.len() as u64 - want_cloned),
        "{kind}: {what}: cloned and copied"
    );
    let path = dir.join(&name);
    assert!(
        content(&path) == written(dst_data.to_vec(), dof, piece),
        "{kind}: {what}: bytes differ"
    );
    if want_cloned > 0 {
        let start = dof + (B - so % B) % B;
        assert!(
            shared(&path, start, want_cloned) >= want_cloned,
            "{kind}: {what}: the cloned part is not shared"
        );
    }
}

#[test]
fn every_rule_of_range_clones_on_btrfs_and_xfs() {
    for kind in KINDS {
        let Some(fs) = scratch(kind) else { continue };
        let dir = fs.path();
        let data = random(8 * B + 100, 1);
        let src = (dir.join("src"), data.clone());
        file_with(dir, "src", &data);
        let s = &src;

        // A length of 0 copies nothing and never reaches the kernel (which would clone to
        // EOF), whatever the offsets.
        for (so, dof) in [(0, 0), (B, 0), (100, 7)] {
            let what = format!("len 0 at {so} {dof}");
            case(kind, dir, &what, s, b"", so, dof, 0, 0);
            assert_eq!(
                std::fs::metadata(dir.join(what.replace(' ', "_")))
                    .unwrap()
                    .len(),
                0
            );
        }
        // A range at or past the source's EOF is empty; one reaching past it ends there.
        case(kind, dir, "at src EOF", s, b"", 8 * B + 100, 0, B, 0);
        case(kind, dir, "past src EOF", s, b"", 9 * B, 0, B, 0);
        case(
            kind,
            dir,
            "reaching past src EOF",
            s,
            b"",
            6 * B,
            0,
            4 * B,
            2 * B + 100,
        );

        // Aligned: cloned whole.
        case(kind, dir, "aligned", s, b"", B, 2 * B, 3 * B, 3 * B);
        // Unaligned offsets in the same phase: head and tail copied, the body cloned.
        case(
            kind,
            dir,
            "head and tail",
            s,
            b"",
            B + 100,
            100,
            3 * B,
            2 * B,
        );
        // Offsets in different phases: nothing can be cloned.
        case(kind, dir, "phases differ", s, b"", B, 100, 3 * B, 0);
        // A short unaligned range inside one block: copied.
        case(kind, dir, "inside a block", s, b"", 10, 10, 100, 0);

        // The unaligned EOF block: cloned where it lands at or past the destination's EOF,
        // copied where it would end mid-file.
        case(
            kind,
            dir,
            "EOF block into empty",
            s,
            b"",
            0,
            0,
            8 * B + 100,
            8 * B + 100,
        );
        case(
            kind,
            dir,
            "EOF block at dst EOF",
            s,
            &random(B + 100, 2),
            6 * B,
            0,
            2 * B + 100,
            2 * B + 100,
        );
        case(
            kind,
            dir,
            "EOF block past dst EOF",
            s,
            &random(100, 3),
            6 * B,
            B,
            2 * B + 100,
            2 * B + 100,
        );
        case(
            kind,
            dir,
            "EOF block mid dst",
            s,
            &random(5 * B, 4),
            6 * B,
            0,
            2 * B + 100,
            2 * B,
        );
        // Past the destination's EOF: a hole, then the range.
        case(
            kind,
            dir,
            "past dst EOF",
            s,
            &random(100, 5),
            0,
            4 * B,
            2 * B,
            2 * B,
        );

        // Ranges of one file: disjoint ones clone, overlapping ones are copied as memmove
        // would, in both directions.
        for (what, so, dof, cloned) in [
            ("self disjoint", 0, 4 * B, 4 * B),
            ("self overlap forward", 0, B, 0),
            ("self overlap backward", B, 0, 0),
            ("self overlap unaligned", 100, 300, 0),
        ] {
            let own = random(8 * B, 6);
            let f = file_with(dir, what, &own);
            let len = 4 * B;
            let got = clone_range(&f, so, &f, dof, len).unwrap();
            assert_eq!(
                (got.cloned, got.copied),
                (cloned, len - cloned),
                "{kind}: {what}"
            );
            let mut want = own.clone();
            want.copy_within(so as usize..(so + len) as usize, dof as usize);
            assert!(content(&dir.join(what)) == want, "{kind}: {what}: bytes");
            if cloned > 0 {
                assert_eq!(shared(&dir.join(what), dof, len), len, "{kind}: {what}");
            }
        }

        // What the descriptors must be open for: a destination not open for writing, or open
        // with O_APPEND (where a write would land at the end), is an error, not a copy.
        let ro = File::open(dir.join("aligned")).unwrap();
        let src_file = File::open(&src.0).unwrap();
        let e = clone_range(&src_file, 0, &ro, 0, B).unwrap_err();
        assert_eq!(
            (e.op, e.errno),
            (mimeo::Op::Write, libc::EBADF),
            "{kind}: read-only dst"
        );
        let app = OpenOptions::new()
            .append(true)
            .open(dir.join("aligned"))
            .unwrap();
        let e = clone_range(&src_file, 0, &app, 0, B).unwrap_err();
        assert_eq!(e.errno, libc::EBADF, "{kind}: O_APPEND dst");
        let want = written(Vec::new(), 2 * B, &data[B as usize..4 * B as usize]);
        assert!(content(&dir.join("aligned")) == want, "{kind}: dst changed");
    }
}

#[test]
fn nocow_on_one_side_only_is_copied_on_btrfs_and_cloned_on_xfs() {
    for kind in KINDS {
        let Some(fs) = scratch(kind) else { continue };
        let dir = fs.path();
        let data = random(4 * B, 7);
        let nocow = |name: &str, data: &[u8]| -> Option<File> {
            let f = file_with(dir, name, b"");
            rustix::fs::ioctl_setflags(&f, rustix::fs::IFlags::NOCOW).ok()?;
            f.write_all_at(data, 0).unwrap();
            f.sync_all().unwrap();
            Some(f)
        };
        let cow = file_with(dir, "cow", &data);
        let Some(nc) = nocow("nocow", &data) else {
            // XFS has no NOCOW flag: nothing can differ, and the rule cannot apply.
            assert_eq!(kind, FsKind::Xfs, "chattr +C failed on {kind}");
            let d = file_with(dir, "d", b"");
            let got = clone_range(&cow, 0, &d, 0, 4 * B).unwrap();
            assert_eq!(got.cloned, 4 * B, "{kind}: plain files clone");
            continue;
        };
        // EINVAL from the kernel either way round: copied, never an error.
        for (what, from, to) in [
            ("COW to NOCOW", &cow, nocow("nocow_dst", b"").unwrap()),
            ("NOCOW to COW", &nc, file_with(dir, "cow_dst", b"")),
        ] {
            let got = clone_range(from, 0, &to, 0, 4 * B).unwrap();
            assert_eq!((got.cloned, got.copied), (0, 4 * B), "{kind}: {what}");
            let mut back = vec![0u8; 4 * B as usize];
            to.read_exact_at(&mut back, 0).unwrap();
            assert!(back == data, "{kind}: {what}: bytes");
        }
        let both = nocow("nocow_dst2", b"").unwrap();
        let got = clone_range(&nc, 0, &both, 0, 4 * B).unwrap();
        assert_eq!(got.cloned, 4 * B, "{kind}: NOCOW to NOCOW clones");
    }
}

#[test]
fn across_filesystems_ranges_are_copied() {
    let (Some(btrfs), Some(xfs)) = (scratch(FsKind::Btrfs), scratch(FsKind::Xfs)) else {
        return;
    };
    let data = random(4 * B + 10, 8);
    for (from, to) in [(&btrfs, &xfs), (&xfs, &btrfs)] {
        let what = format!("{} to {}", from.kind(), to.kind());
        let s = file_with(from.path(), "src", &data);
        let d = file_with(to.path(), "dst", b"");
        let got = clone_range(&s, 0, &d, 0, 4 * B + 10).unwrap();
        assert_eq!((got.cloned, got.copied), (0, 4 * B + 10), "{what}: EXDEV");
        assert!(content(&to.path().join("dst")) == data, "{what}: bytes");
        std::fs::remove_file(from.path().join("src")).unwrap();
        std::fs::remove_file(to.path().join("dst")).unwrap();
    }
}

/// An active swap file on `dir` (NOCOW on btrfs, as swap files there must be), swapped off on
/// drop.
struct Swap(PathBuf);

impl Swap {
    fn on(dir: &Path, nocow: bool) -> Result<Swap, String> {
        let path = dir.join("swap");
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| e.to_string())?;
        if nocow {
            rustix::fs::ioctl_setflags(&f, rustix::fs::IFlags::NOCOW).map_err(|e| e.to_string())?;
        }
        rustix::fs::fallocate(&f, rustix::fs::FallocateFlags::empty(), 0, 16 << 20)
            .map_err(|e| e.to_string())?;
        drop(f);
        for prog in ["mkswap", "swapon"] {
            let out = capture(Command::new(prog).arg(&path)).map_err(|e| e.to_string())?;
            if !out.success() {
                return Err(format!("{prog}: {out}"));
            }
        }
        Ok(Swap(path))
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        let _ = capture(Command::new("swapoff").arg(&self.0));
    }
}

#[test]
fn swap_files_are_copied_from_and_never_written() {
    for kind in KINDS {
        let Some(fs) = scratch(kind) else { continue };
        let dir = fs.path();
        let nocow = kind == FsKind::Btrfs;
        let swap = match Swap::on(dir, nocow) {
            Ok(s) => s,
            Err(why) if !mimeo_testkit::fsimg::required() => {
                eprintln!("SKIPPED swap files on {kind}: {why}");
                continue;
            }
            Err(why) => panic!("swap file on {kind}: {why}"),
        };
        let fresh = |name: &str, data: &[u8]| {
            let f = file_with(dir, name, b"");
            if nocow {
                rustix::fs::ioctl_setflags(&f, rustix::fs::IFlags::NOCOW).unwrap();
            }
            f.write_all_at(data, 0).unwrap();
            f.sync_all().unwrap();
            f
        };
        let sw = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&swap.0)
            .unwrap();
        // From a swap file: ETXTBSY, so the range is copied (a swap file can be read).
        let d = fresh("from_swap", b"");
        let got = clone_range(&sw, 0, &d, 0, 4 * B).unwrap();
        assert_eq!(
            (got.cloned, got.copied),
            (0, 4 * B),
            "{kind}: from a swap file"
        );
        let mut want = vec![0u8; 4 * B as usize];
        sw.read_exact_at(&mut want, 0).unwrap();
        assert!(content(&dir.join("from_swap")) == want, "{kind}: bytes");
        // Into a swap file: neither a clone nor a write is allowed, and that is an error.
        let s = fresh("into_swap", &random(4 * B, 9));
        let e = clone_range(&s, 0, &sw, 0, 4 * B).unwrap_err();
        assert_eq!(e.errno, libc::ETXTBSY, "{kind}: into a swap file: {e:?}");
        assert_eq!(e.done.total(), 0);
        drop(sw);
        drop(swap);
    }
}

#[test]
fn a_running_executable_is_a_source_like_any_other() {
    for kind in KINDS {
        let Some(fs) = scratch(kind) else { continue };
        let exe = fs.path().join("sleeper");
        std::fs::copy("/bin/sleep", &exe).unwrap();
        let mut child = loop {
            match Command::new(&exe).arg("30").spawn() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => break other.unwrap(),
            }
        };
        let s = File::open(&exe).unwrap();
        let d = file_with(fs.path(), "copy", b"");
        let len = s.metadata().unwrap().len();
        let got = clone_range(&s, 0, &d, 0, len);
        let _ = child.kill();
        let _ = child.wait();
        let got = got.unwrap();
        assert_eq!(got.total(), len, "{kind}");
        assert_eq!(got.cloned, len, "{kind}: cloned whole, EOF block included");
        assert!(content(&fs.path().join("copy")) == content(&exe));
    }
}
