//! Origin records (`Options::record_origin`, `mimeo --record-origin`) on loop-mounted btrfs
//! and XFS: each clone names the file its blocks came from, a clone of a clone names the
//! first origin, and `SharedFile` trusts a record only when it names that very file.

use mimeo::{Method, Options, SharedFile};
use mimeo_testkit::files::{random_file, scratch};
use mimeo_testkit::{FsKind, LoopFs};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

const MIB: u64 = 1 << 20;
const XATTR: &str = "user.mimeo.origin";

fn record(path: &Path) -> Option<String> {
    let mut buf = vec![0u8; 4096];
    match rustix::fs::getxattr(path, XATTR, &mut buf[..]) {
        Ok(n) => Some(String::from_utf8(buf[..n].to_vec()).expect("utf-8 record")),
        Err(rustix::io::Errno::NODATA) => None,
        Err(e) => panic!("getxattr {}: {e}", path.display()),
    }
}

fn set_record(path: &Path, value: &str) {
    rustix::fs::setxattr(
        path,
        XATTR,
        value.as_bytes(),
        rustix::fs::XattrFlags::empty(),
    )
    .expect("setxattr");
}

fn opts() -> Options {
    let mut o = Options::default();
    o.record_origin = true;
    o
}

/// What a record naming `path` (on the filesystem mounted at `fs`) says, less the
/// generation, which only the kernel knows.
fn names(rec: &str, fs: &LoopFs, path: &Path) -> bool {
    let m = std::fs::metadata(path).expect("stat");
    let rel = path.strip_prefix(fs.path()).expect("below the mount");
    let f: Vec<&str> = rec.splitn(5, ' ').collect();
    f.len() == 5
        && f[0] == "1"
        && f[1] == m.dev().to_string()
        && f[2] == m.ino().to_string()
        && Path::new(f[4]) == rel
}

fn read_all(f: &mut SharedFile) -> Vec<u8> {
    let mut v = Vec::new();
    f.read_to_end(&mut v).expect("read");
    v
}

fn settle() {
    std::thread::sleep(Duration::from_millis(120));
}

#[test]
fn chains_of_clones_name_the_first_origin_and_read_through_it() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let dir = fs.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        let base = dir.join("base");
        random_file(&base, 5 * MIB + 11);
        let expected = std::fs::read(&base).unwrap();
        // A chain four deep, and eight children of one of its links.
        let mut prev = base.clone();
        for i in 0..4 {
            let next = dir.join(format!("gen{i}"));
            let out = mimeo::copy_file(&prev, &next, &opts()).unwrap();
            assert_eq!(out.method, Method::Clone, "{kind}");
            let rec = record(&next).unwrap_or_else(|| panic!("{kind}: no record on gen{i}"));
            assert!(
                names(&rec, &fs, &base),
                "{kind}: gen{i} names {rec}, not the base"
            );
            prev = next;
        }
        for c in 0..8 {
            let child = dir.join(format!("child{c}"));
            mimeo::copy_file(&dir.join("gen2"), &child, &opts()).unwrap();
            assert!(
                names(&record(&child).unwrap(), &fs, &base),
                "{kind}: child{c}"
            );
        }
        settle();
        for name in ["gen3", "child7"] {
            let mut f = SharedFile::open(dir.join(name)).unwrap();
            assert_eq!(f.canonical_count(), 1, "{kind}: {name} found its origin");
            assert!(read_all(&mut f) == expected, "{kind}: {name}");
            assert_eq!(f.stats().canonical_bytes, expected.len() as u64, "{kind}");
        }
        // Without the option, clones carry no record; a plain copy never does.
        let bare = dir.join("bare");
        mimeo::copy_file(&base, &bare, &Options::default()).unwrap();
        assert_eq!(record(&bare), None, "{kind}");
    }
}

#[test]
fn a_record_is_trusted_only_when_it_names_that_very_file() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let base = fs.path().join("base");
        random_file(&base, 3 * MIB);
        let expected = std::fs::read(&base).unwrap();
        let clone = fs.path().join("clone");
        mimeo::copy_file(&base, &clone, &opts()).unwrap();
        let rec = record(&clone).unwrap();
        settle();
        let through = |note: &str| {
            let mut f = SharedFile::options().registry(false).open(&clone).unwrap();
            let n = f.canonical_count();
            assert!(read_all(&mut f) == expected, "{kind}: {note}: bytes");
            n
        };
        assert_eq!(through("the true origin"), 1);

        // Another inode number, or another generation: another file.
        let f: Vec<&str> = rec.splitn(5, ' ').collect();
        let ino: u64 = f[2].parse().unwrap();
        set_record(&clone, &format!("1 {} {} {} {}", f[1], ino + 1, f[3], f[4]));
        assert_eq!(through("a wrong inode"), 0, "{kind}");
        let generation = match f[3] {
            "-" => "7".to_string(),
            g => (g.parse::<u32>().unwrap() ^ 1).to_string(),
        };
        set_record(
            &clone,
            &format!("1 {} {} {} {}", f[1], f[2], generation, f[4]),
        );
        assert_eq!(through("a wrong generation"), 0, "{kind}");
        // A hint that leaves the mount, or is not a record at all.
        set_record(
            &clone,
            &format!("1 {} {} {} ../../etc/passwd", f[1], f[2], f[3]),
        );
        assert_eq!(through("a hint leaving the mount"), 0, "{kind}");
        set_record(&clone, "not a record");
        assert_eq!(through("garbage"), 0, "{kind}");
        set_record(&clone, &rec);
        assert_eq!(through("restored"), 1, "{kind}");

        // The origin replaced by another file at the same path (a new inode).
        let bytes = std::fs::read(&base).unwrap();
        std::fs::remove_file(&base).unwrap();
        std::fs::write(&base, &bytes).unwrap();
        settle();
        assert_eq!(through("another file at the path"), 0, "{kind}");
        // Gone altogether.
        std::fs::remove_file(&base).unwrap();
        assert_eq!(through("the origin deleted"), 0, "{kind}");
        // A clone of a clone whose record is stale names its own parent instead.
        let grandchild = fs.path().join("grandchild");
        mimeo::copy_file(&clone, &grandchild, &opts()).unwrap();
        assert!(names(&record(&grandchild).unwrap(), &fs, &clone), "{kind}");
    }
}

#[test]
fn copies_that_are_not_clones_get_no_record() {
    let (Some(btrfs), Some(ext4)) = (scratch(FsKind::Btrfs), scratch(FsKind::Ext4)) else {
        return;
    };
    let base = btrfs.path().join("base");
    random_file(&base, MIB);
    let clone = btrfs.path().join("clone");
    mimeo::copy_file(&base, &clone, &opts()).unwrap();
    assert!(record(&clone).is_some());
    // Across filesystems, with every xattr kept: the source's record names the source's
    // origin, which the copy does not share, so it is left out.
    let mut o = Options::archive();
    o.record_origin = true;
    let copy = ext4.path().join("copy");
    let out = mimeo::copy_file(&clone, &copy, &o).unwrap();
    assert_ne!(out.method, Method::Clone);
    assert_eq!(record(&copy), None);
    // Without the option, `-a` copies it as it copies every xattr, as cp -a would.
    let verbatim = ext4.path().join("verbatim");
    mimeo::copy_file(&clone, &verbatim, &Options::archive()).unwrap();
    assert_eq!(record(&verbatim), record(&clone));
    let mut f = SharedFile::open(&verbatim).unwrap();
    assert_eq!(
        f.canonical_count(),
        0,
        "a record naming another filesystem's file"
    );
    assert!(read_all(&mut f) == std::fs::read(&base).unwrap());
    drop(File::open(&base).unwrap());
}
