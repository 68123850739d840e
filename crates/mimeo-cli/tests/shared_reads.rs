//! Shared reads and origin records through the real binary: a tree of clones copied from
//! btrfs or XFS to ext4 reads each shared extent from the device once, `--stats` and the
//! JSON summary say how much was read through a canonical file, reads are plain where
//! `cachestat` or FIEMAP is missing, and `--record-origin` names each clone's origin.

mod util;

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use mimeo_testkit::mutate::{mount_source, sectors_read};
use mimeo_testkit::oracle::assert_trees_equal;
use mimeo_testkit::{CompareOptions, FsKind, LoopFs};
use util::tree::regular_files;
use util::{random_file, run, run_fp, scratch};

const MIB: u64 = 1 << 20;

fn arg(p: &Path) -> &str {
    p.to_str().expect("UTF-8 test path")
}

/// `src/parent` of `size` random bytes and `clones` clones of it in `src/c/`, the first
/// `rewritten` of them with their second MiB written over; every file flushed and dropped
/// from the page cache.
fn clones(root: &Path, size: u64, clones: usize, rewritten: usize) -> PathBuf {
    let src = root.join("src");
    fs::create_dir_all(src.join("c")).unwrap();
    let parent = src.join("parent");
    random_file(&parent, size);
    let p = File::open(&parent).unwrap();
    for i in 0..clones {
        let c = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(src.join("c").join(format!("clone{i}")))
            .unwrap();
        rustix::fs::ioctl_ficlone(&c, &p).expect("FICLONE");
        if i < rewritten {
            c.write_all_at(&vec![i as u8 + 1; MIB as usize], MIB)
                .unwrap();
        }
        c.sync_all().unwrap();
    }
    for f in regular_files(&src) {
        let f = File::open(f).unwrap();
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    }
    // Shared reads trust a file only once its ctime is a little old.
    std::thread::sleep(std::time::Duration::from_millis(120));
    src
}

#[test]
fn clones_copied_to_another_filesystem_read_the_device_once() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let (Some(fs), Some(ext4)) = (scratch(kind), LoopFs::try_new(FsKind::Ext4, 512)) else {
            continue;
        };
        let size = 24 * MIB;
        let src = clones(fs.path(), size, 5, 2);
        let dev = mount_source(fs.path()).expect("the loop device");
        let before = sectors_read(&dev).unwrap();
        let dst = ext4.path().join("dst");
        let r = run(&["-a", "--json", arg(&src), arg(&dst)]);
        r.expect_code(0);
        let read = (sectors_read(&dev).unwrap() - before) * 512;
        assert_trees_equal(
            kind.to_string().as_str(),
            &src,
            &dst,
            &CompareOptions::archive(),
        );
        // Five clones of 24 MiB, two with 1 MiB of their own, read through the parent (or,
        // for a clone met before it, the parent through the clone).
        let shared = r.count("shared_read_bytes");
        assert_eq!(shared, 5 * size - 2 * MIB, "{kind}: {r:#?}");
        assert_eq!(r.count("bytes"), 6 * size, "{kind}");
        // The device gave the parent's bytes once, the rewritten MiBs, and metadata (the
        // extent maps, the directories): far less than the six files' 144 MiB.
        assert!(
            read < size + size / 2,
            "{kind}: {} MiB read from {dev}",
            read / MIB
        );

        // The same copy without shared reads reads every file from the device.
        for f in regular_files(&src) {
            let f = File::open(f).unwrap();
            rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        }
        let before = sectors_read(&dev).unwrap();
        let plain = ext4.path().join("plain");
        let r = run(&["-a", "--json", "--no-shared-reads", arg(&src), arg(&plain)]);
        r.expect_code(0);
        assert_eq!(r.count("shared_read_bytes"), 0);
        let read = (sectors_read(&dev).unwrap() - before) * 512;
        assert!(read >= 6 * size, "{kind}: {} MiB read", read / MIB);
        assert_trees_equal("plain", &src, &plain, &CompareOptions::archive());
    }
}

#[test]
fn stats_say_how_much_was_read_through_a_canonical_file() {
    let (Some(fs), Some(ext4)) = (scratch(FsKind::Btrfs), scratch(FsKind::Ext4)) else {
        return;
    };
    let src = clones(fs.path(), 4 * MIB, 1, 0);
    let r = run(&["-a", "--stats", arg(&src), arg(&ext4.path().join("dst"))]);
    r.expect_code(0);
    assert!(
        r.stdout.contains("read through a canonical file 4.00 MiB"),
        "{}",
        r.stdout
    );
}

#[test]
fn without_cachestat_or_fiemap_reads_are_plain() {
    for fp in ["cachestat=return(ENOSYS)", "fiemap=return(EOPNOTSUPP)"] {
        let (Some(fs), Some(ext4)) = (scratch(FsKind::Btrfs), scratch(FsKind::Ext4)) else {
            return;
        };
        let src = clones(fs.path(), 8 * MIB, 3, 1);
        let dst = ext4.path().join("dst");
        let r = run_fp(fp, &["-a", "--json", arg(&src), arg(&dst)]);
        r.expect_code(0);
        assert_eq!(r.count("shared_read_bytes"), 0, "{fp}");
        assert_trees_equal(fp, &src, &dst, &CompareOptions::archive());
    }
}

#[test]
fn record_origin_names_each_clones_source_in_a_tree() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let src = fs.path().join("src");
        fs::create_dir_all(src.join("sub")).unwrap();
        for name in ["a", "sub/b"] {
            random_file(&src.join(name), 200_000);
        }
        let dst = fs.path().join("dst");
        run(&["-a", "--record-origin", arg(&src), arg(&dst)]).expect_code(0);
        for name in ["a", "sub/b"] {
            let mut buf = [0u8; 512];
            let n = rustix::fs::getxattr(dst.join(name), "user.mimeo.origin", &mut buf[..])
                .unwrap_or_else(|e| panic!("{kind}: {name}: no record: {e}"));
            let rec = String::from_utf8(buf[..n].to_vec()).unwrap();
            let m = fs::metadata(src.join(name)).unwrap();
            let want = format!(" {} {} ", m.dev(), m.ino());
            assert!(rec.starts_with('1') && rec.contains(&want), "{kind}: {rec}");
            assert!(rec.ends_with(&format!(" src/{name}")), "{kind}: {rec}");
        }
        // The tree compares equal to its source but for the records.
        let again = fs.path().join("again");
        run(&["-a", arg(&src), arg(&again)]).expect_code(0);
        let f = File::open(again.join("a")).unwrap();
        let mut none = [0u8; 64];
        assert!(rustix::fs::fgetxattr(f.as_fd(), "user.mimeo.origin", &mut none[..]).is_err());
    }
}
