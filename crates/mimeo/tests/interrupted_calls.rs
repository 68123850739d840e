//! A system call that a signal interrupts (EINTR) is made again, on every data path: a
//! whole-file copy by clone, offload and stream, range copies and clones, concatenations.
//! The retry lives in one place (`sys`); EINTR is injected there (failpoints `clone`,
//! `clone_range`, `copy_file_range`, `read`, `write`), on ext4, where nothing is cloned, and
//! on btrfs for the clones. Failpoints are process-wide, so everything here runs in one test.

use mimeo::{Control, Method, NoObserver, Options, Sparse, clone_range, concat};
use mimeo_testkit::FsKind;
use mimeo_testkit::files::{assert_same_bytes, random_file, scratch};
use std::fs::{self, File, OpenOptions};
use std::os::fd::AsFd;

const LEN: u64 = (3 << 20) + 7;

#[test]
fn interrupted_calls_are_made_again_on_every_data_path() {
    let fs = scratch(FsKind::Ext4).expect("an ext4 loop filesystem");
    let dir = fs.path();
    let src = dir.join("src");
    random_file(&src, LEN);
    let mut n = 0;
    // A whole-file copy with the failpoint set; its method, and the copy equals the source.
    let mut copy = |fp: &str, sparse: Sparse| {
        n += 1;
        let dst = dir.join(format!("copy{n}"));
        let mut options = Options::default();
        options.sparse = sparse;
        fail::cfg(fp, "1*return(EINTR)").unwrap();
        let got = mimeo::copy_file(&src, &dst, &options);
        fail::remove(fp);
        let outcome = got.unwrap_or_else(|e| panic!("{fp}, {sparse:?}: {e}"));
        assert_same_bytes(&src, &dst);
        outcome.method
    };
    assert_eq!(copy("copy_file_range", Sparse::Auto), Method::Offload);
    assert_eq!(copy("read", Sparse::Never), Method::Stream);
    assert_eq!(copy("write", Sparse::Never), Method::Stream);
    assert_eq!(copy("read", Sparse::Always), Method::Stream);

    // A range copy, at offsets that cannot clone: offload, interrupted once.
    let out = dir.join("range");
    let dst = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&out)
        .unwrap();
    fail::cfg("copy_file_range", "1*return(EINTR)").unwrap();
    let got = clone_range(File::open(&src).unwrap(), 1, &dst, 0, LEN - 1);
    fail::remove("copy_file_range");
    assert_eq!(got.unwrap().copied, LEN - 1);
    assert!(fs::read(&out).unwrap() == fs::read(&src).unwrap()[1..]);

    // Concatenations: into a regular file (offload), and into one opened with O_APPEND,
    // which is written in order (read and write).
    let data = fs::read(&src).unwrap();
    for (fp, append) in [("copy_file_range", false), ("read", true), ("write", true)] {
        let out = dir.join(format!("cat-{fp}"));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .append(append)
            .open(&out)
            .unwrap();
        fail::cfg(fp, "1*return(EINTR)").unwrap();
        let parts = [src.clone(), src.clone()];
        let summary = concat(&parts, file.as_fd(), &out, &NoObserver, &Control::new());
        fail::remove(fp);
        assert_eq!((summary.errors, summary.bytes), (0, 2 * LEN), "{fp}");
        assert!(
            fs::read(&out).unwrap() == [&data[..], &data[..]].concat(),
            "{fp}"
        );
    }

    // Clones, on btrfs: a whole file and a range, each interrupted once.
    let fs = scratch(FsKind::Btrfs).expect("a btrfs loop filesystem");
    let dir = fs.path();
    let src = dir.join("src");
    random_file(&src, LEN);
    fail::cfg("clone", "1*return(EINTR)").unwrap();
    let got = mimeo::copy_file(&src, &dir.join("whole"), &Options::default());
    fail::remove("clone");
    assert_eq!(got.unwrap().method, Method::Clone);
    assert_same_bytes(&src, &dir.join("whole"));
    let out = dir.join("range");
    let dst = File::create(&out).unwrap();
    fail::cfg("clone_range", "1*return(EINTR)").unwrap();
    let got = clone_range(File::open(&src).unwrap(), 0, &dst, 0, LEN);
    fail::remove("clone_range");
    let got = got.unwrap();
    assert!(got.cloned >= LEN - 4096, "{got:?}");
    assert_eq!(got.cloned + got.copied, LEN, "{got:?}");
    assert_same_bytes(&src, &out);
}
