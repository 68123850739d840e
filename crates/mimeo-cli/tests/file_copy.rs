//! Integration tests for one-file copies, driving the real `mimeo` binary on
//! loop-mounted btrfs, XFS (reflink=1) and ext4.
//!
//! Tests that need a filesystem print what they skipped when one cannot be
//! created, and fail instead under `MIMEO_REQUIRE_FS=1` (CI).

mod util;

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::time::{Duration, Instant};

use mimeo_testkit::{CompareOptions, FsKind, LoopFs, compare_trees, run_ok, sharing, st_blocks};
use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, XattrFlags};
use util::{
    assert_same_bytes, assert_sparse_copy, copy_json, meta, names, random_file, run, run_in,
    scratch, sparse_file,
};

const MIB: u64 = 1 << 20;

/// A directory `name` inside the filesystem (keeps `lost+found` out of the
/// listings).
fn dir_in(fs: &LoopFs, name: &str) -> std::path::PathBuf {
    let d = fs.path().join(name);
    fs::create_dir(&d).unwrap();
    d
}

// ---- data path: which method copied the bytes ----

#[test]
fn clone_within_btrfs_and_xfs_shares_every_extent() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
        random_file(&src, 4 * MIB + 123);
        copy_json(&[], &src, &dst).expect_method("clone", 4 * MIB + 123);
        assert_same_bytes(&src, &dst);
        let s = sharing(&dst).unwrap();
        assert!(s.fully_shared(), "{kind}: not every extent shared: {s:?}");
    }
}

#[test]
fn offload_on_ext4() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    random_file(&src, 3 * MIB + 1);
    copy_json(&[], &src, &dst).expect_method("offload", 3 * MIB + 1);
    assert_same_bytes(&src, &dst);
}

#[test]
fn stream_across_filesystems() {
    let (Some(ext4), Some(xfs)) = (scratch(FsKind::Ext4), scratch(FsKind::Xfs)) else {
        return;
    };
    let (src, dst) = (ext4.path().join("src"), xfs.path().join("dst"));
    random_file(&src, 2 * MIB + 7);
    copy_json(&[], &src, &dst).expect_method("stream", 2 * MIB + 7);
    assert_same_bytes(&src, &dst);
    assert_eq!(sharing(&dst).unwrap().shared, 0);
}

#[test]
fn reflink_never_streams_on_cow_filesystems_and_shares_nothing() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
        random_file(&src, 4 * MIB);
        copy_json(&["--reflink=never"], &src, &dst).expect_method("stream", 4 * MIB);
        assert_same_bytes(&src, &dst);
        let s = sharing(&dst).unwrap();
        assert!(s.extents > 0 && s.shared == 0, "{kind}: {s:?}");
        let s = sharing(&src).unwrap();
        assert_eq!(s.shared, 0, "{kind}: source extents became shared: {s:?}");
    }
}

#[test]
fn reflink_never_on_ext4_does_not_clone() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    random_file(&src, MIB);
    let r = copy_json(&["--reflink=never"], &src, &dst);
    r.expect_code(0);
    let method = r.copied()["method"].as_str().unwrap_or_default().to_owned();
    assert!(["offload", "stream"].contains(&method.as_str()), "{r:#?}");
    r.expect_method(&method, MIB);
    assert_same_bytes(&src, &dst);
}

#[test]
fn reflink_always_fails_cleanly_without_clone_support() {
    let (Some(ext4), Some(xfs)) = (scratch(FsKind::Ext4), scratch(FsKind::Xfs)) else {
        return;
    };
    let src = ext4.path().join("src");
    random_file(&src, MIB);
    // Across filesystems (EXDEV), and within ext4 (EOPNOTSUPP).
    for out in [dir_in(&xfs, "out"), dir_in(&ext4, "out")] {
        let dst = out.join("dst");
        let r = copy_json(&["--reflink=always"], &src, &dst);
        r.expect_code(1);
        assert!(r.stderr.starts_with("mimeo: "), "{r:#?}");
        assert!(
            r.stderr.contains("dst") || r.stderr.contains("src"),
            "{r:#?}"
        );
        assert_eq!(r.count("errors"), 1, "{r:#?}");
        assert_eq!(r.events("error").len(), 1, "{r:#?}");
        assert!(names(&out).is_empty(), "left behind: {:?}", names(&out));
    }
}

// ---- sparse files ----

/// A sparse file shape: name, size and data ranges `(offset, len)`.
type Layout = (&'static str, u64, Vec<(u64, u64)>);

/// The sparse layouts every filesystem must keep: leading hole, trailing
/// hole, holes between data, unaligned size, nothing but a hole.
fn sparse_layouts() -> Vec<Layout> {
    vec![
        ("leading-hole", 8 * MIB, vec![(6 * MIB, 2 * MIB)]),
        ("trailing-hole", 16 * MIB, vec![(0, MIB)]),
        (
            "holes-between",
            12 * MIB,
            vec![(0, 64 << 10), (4 * MIB, MIB), (11 * MIB, MIB)],
        ),
        ("unaligned", 5 * MIB + 4097, vec![(3 * MIB, 2 * MIB + 4097)]),
        ("all-hole", 32 * MIB, vec![]),
    ]
}

#[test]
fn sparse_layouts_keep_bytes_and_holes() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        for (name, size, data) in sparse_layouts() {
            let src = fs.path().join(format!("{name}.src"));
            let dst = fs.path().join(format!("{name}.dst"));
            sparse_file(&src, size, &data);
            let r = copy_json(&[], &src, &dst);
            r.expect_code(0);
            assert_eq!(r.count("errors"), 0, "{kind} {name}: {r:#?}");
            assert_sparse_copy(&src, &dst);
        }
    }
}

#[test]
fn one_tib_sparse_file_copies_in_seconds_on_ext4() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    let size = 1u64 << 40;
    sparse_file(&src, size, &[(0, 10), (size / 2, 4096), (size - 5, 5)]);
    let started = Instant::now();
    let r = copy_json(&[], &src, &dst);
    let took = started.elapsed();
    r.expect_code(0);
    assert!(
        took < Duration::from_secs(30),
        "1 TiB sparse copy took {took:?}"
    );
    assert_sparse_copy(&src, &dst);
}

#[test]
fn sparse_never_allocates_every_block() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    let size = 8 * MIB;
    sparse_file(&src, size, &[(0, 64 << 10), (7 * MIB, 64 << 10)]);
    copy_json(&["--sparse=never"], &src, &dst).expect_code(0);
    assert_same_bytes(&src, &dst);
    let allocated = st_blocks(&dst).unwrap() * 512;
    assert!(
        allocated >= size,
        "only {allocated} of {size} bytes allocated"
    );
}

#[test]
fn sparse_always_turns_zero_runs_into_holes_when_streaming() {
    let (Some(ext4), Some(xfs)) = (scratch(FsKind::Ext4), scratch(FsKind::Xfs)) else {
        return;
    };
    let (src, dst) = (ext4.path().join("src"), xfs.path().join("dst"));
    // Fully allocated: random MiB, 4 MiB of written zeros, random MiB.
    random_file(&src, 6 * MIB);
    fs::OpenOptions::new()
        .write(true)
        .open(&src)
        .unwrap()
        .write_all_at(&vec![0u8; 4 * MIB as usize], MIB)
        .unwrap();
    assert!(st_blocks(&src).unwrap() * 512 >= 6 * MIB);
    let r = copy_json(&["--sparse=always"], &src, &dst);
    r.expect_code(0);
    // `bytes` counts data written and `hole_bytes` the holes left.
    let c = r.copied();
    assert_eq!(c["method"], "stream", "{r:#?}");
    let (data, holes) = (c["bytes"].as_u64(), c["hole_bytes"].as_u64());
    assert_eq!(data.zip(holes).map(|(d, h)| d + h), Some(6 * MIB), "{r:#?}");
    assert!(holes >= Some(4 * MIB), "{r:#?}");
    assert_eq!(r.count("hole_bytes"), holes.unwrap_or(0), "{r:#?}");
    assert_same_bytes(&src, &dst);
    let allocated = st_blocks(&dst).unwrap() * 512;
    assert!(
        allocated <= 3 * MIB,
        "zero run not punched: {allocated} bytes allocated"
    );
}

use std::os::unix::fs::FileExt;

#[test]
fn file_over_2_gib_offloads_completely_on_ext4() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 5 * 1024) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    let size = (2u64 << 30) + 12_345;
    // 8 MiB of random data, stamped with its index, repeated: every block
    // differs, so a misplaced chunk is detected.
    let mut block = vec![0u8; 8 << 20];
    mimeo_testkit::rng::Rng::new(2).fill(&mut block);
    let file = fs::File::create(&src).unwrap();
    let mut at = 0;
    while at < size {
        block[..8].copy_from_slice(&at.to_le_bytes());
        let n = (size - at).min(block.len() as u64) as usize;
        file.write_all_at(&block[..n], at).unwrap();
        at += n as u64;
    }
    file.sync_all().unwrap();
    drop(file);
    copy_json(&[], &src, &dst).expect_method("offload", size);
    assert_same_bytes(&src, &dst);
}

// ---- special sources ----

#[test]
fn proc_files_with_zero_size_are_copied_whole() {
    let tmp = tempfile::tempdir().unwrap();
    for (src, starts) in [
        ("/proc/cpuinfo", "processor"),
        ("/proc/self/status", "Name:"),
    ] {
        assert_eq!(meta(Path::new(src)).len(), 0, "{src} has a size after all");
        let dst = tmp.path().join(src.replace('/', "_"));
        let r = run(&[src.as_ref(), dst.as_os_str()]);
        r.expect_code(0);
        let got = fs::read_to_string(&dst).unwrap();
        assert!(
            got.starts_with(starts) && got.ends_with('\n'),
            "{src}: {got:?}"
        );
    }
}

// ---- metadata: GNU cp is the oracle ----

/// A source with set-id bits, a foreign owner, ns times, user xattrs and
/// an ACL.
fn decorated_source(path: &Path) {
    random_file(path, 300_000);
    for (name, value) in [
        ("user.a", &b"1"[..]),
        ("user.empty", b""),
        ("user.bin", b"\0\xff"),
    ] {
        rustix::fs::lsetxattr(path, name, value, XattrFlags::empty()).unwrap();
    }
    run_ok(
        "setfacl",
        &["-m", "u:4321:rw,g:8765:r", path.to_str().unwrap()],
    );
    rustix::fs::chownat(
        CWD,
        path,
        Some(rustix::fs::Uid::from_raw(1234)),
        Some(rustix::fs::Gid::from_raw(5678)),
        AtFlags::empty(),
    )
    .unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o6755)).unwrap();
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 86_400,
            tv_nsec: 123_456_789,
        },
        last_modification: Timespec {
            tv_sec: 4_102_444_800,
            tv_nsec: 987_654_321,
        },
    };
    rustix::fs::utimensat(CWD, path, &times, AtFlags::empty()).unwrap();
}

#[test]
fn preserve_matches_gnu_cp() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let src = fs.path().join("src");
        decorated_source(&src);
        for (i, flags) in [
            &["-p"][..],
            &["--preserve=mode,ownership,timestamps,xattr"],
            &["--preserve=all"],
        ]
        .into_iter()
        .enumerate()
        {
            let (oracle, ours) = (
                fs.path().join(format!("cp{i}")),
                fs.path().join(format!("mimeo{i}")),
            );
            let mut args: Vec<&std::ffi::OsStr> = flags.iter().map(|f| f.as_ref()).collect();
            args.extend([src.as_os_str(), oracle.as_os_str()]);
            run_ok("cp", &args);
            args.pop();
            args.push(ours.as_os_str());
            run(&args).expect_code(0);
            let c = compare_trees(&oracle, &ours, &CompareOptions::default()).unwrap();
            assert!(c.is_equal(), "{kind} {flags:?}: {c}");
            assert_eq!(meta(&ours).mode() & 0o7777, 0o6755, "{kind} {flags:?}");
        }
    }
}

// ---- replacing destinations ----

#[test]
fn overwrite_replaces_atomically() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let d = dir_in(&fs, "d");
        let (src, dst) = (d.join("src"), d.join("dst"));
        random_file(&src, 2 * MIB);
        let old = vec![b'o'; 3 * MIB as usize];
        fs::write(&dst, &old).unwrap();
        let mut held = fs::File::open(&dst).unwrap();
        let old_ino = held.metadata().unwrap().ino();

        copy_json(&[], &src, &dst).expect_code(0);

        assert_ne!(meta(&dst).ino(), old_ino, "{kind}: written in place");
        let mut seen = Vec::new();
        held.read_to_end(&mut seen).unwrap();
        assert!(seen == old, "{kind}: the old inode's content changed");
        assert_same_bytes(&src, &dst);
        assert_eq!(names(&d), ["dst", "src"], "{kind}: stray files");
    }
}

#[test]
fn destination_symlink_is_replaced_never_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("src"), b"new content").unwrap();
    fs::write(d.join("target"), b"target content").unwrap();
    symlink("target", d.join("dst")).unwrap();
    symlink("missing", d.join("dangling")).unwrap();
    for dst in ["dst", "dangling"] {
        run(&[d.join("src"), d.join(dst)]).expect_code(0);
        assert!(meta(&d.join(dst)).is_file(), "{dst} is still a symlink");
        assert_eq!(fs::read(d.join(dst)).unwrap(), b"new content");
    }
    assert_eq!(fs::read(d.join("target")).unwrap(), b"target content");
    assert!(
        !d.join("missing").exists(),
        "written through a dangling symlink"
    );
    assert_eq!(names(d), ["dangling", "dst", "src", "target"]);
}

// ---- refusals and messages ----

#[test]
fn same_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("a"), b"precious").unwrap();
    fs::hard_link(d.join("a"), d.join("hl")).unwrap();
    symlink("a", d.join("sl")).unwrap();
    // Same path, a hard link, and a source symlink resolving to the target.
    for (src, dst) in [("a", "a"), ("a", "hl"), ("hl", "a"), ("sl", "a")] {
        let r = run_in(Some(d), &[src, dst]);
        r.expect_code(1);
        assert!(
            r.stderr.starts_with("mimeo: ") && r.stderr.contains("are the same file"),
            "{src} -> {dst}: {r:#?}"
        );
        assert_eq!(fs::read(d.join("a")).unwrap(), b"precious");
        assert_eq!(meta(&d.join("hl")).ino(), meta(&d.join("a")).ino());
    }
    assert_eq!(names(d), ["a", "hl", "sl"]);
}

#[test]
fn missing_source_is_reported_cp_style() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run_in(Some(tmp.path()), &["nope", "dst"]);
    r.expect_code(1);
    assert_eq!(
        r.stderr,
        "mimeo: cannot stat 'nope': No such file or directory\n"
    );
    assert!(names(tmp.path()).is_empty());

    let r = run_in(Some(tmp.path()), &["--json", "nope", "dst"]);
    r.expect_code(1);
    let errors = r.events("error");
    assert_eq!(errors.len(), 1, "{r:#?}");
    assert_eq!(errors[0]["path"], "nope", "{r:#?}");
    assert_eq!(errors[0]["errno"], libc::ENOENT, "{r:#?}");
    assert_eq!(r.count("errors"), 1);
    assert_eq!(r.count("files"), 0);
}

#[test]
fn usage_errors_exit_2() {
    for args in [&[][..], &["only-one"], &["--no-such-flag", "a", "b"]] {
        let r = run(args);
        r.expect_code(2);
        assert!(!r.stderr.is_empty(), "{args:?}: no message");
    }
}

#[test]
fn no_clobber_leaves_destination_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("src"), b"new").unwrap();
    fs::write(d.join("dst"), b"old").unwrap();
    let ino = meta(&d.join("dst")).ino();
    let r = run_in(Some(d), &["-n", "--json", "src", "dst"]);
    r.expect_code(0);
    assert_eq!(r.count("skipped"), 1, "{r:#?}");
    assert_eq!(r.count("files"), 0, "{r:#?}");
    assert_eq!(fs::read(d.join("dst")).unwrap(), b"old");
    assert_eq!(meta(&d.join("dst")).ino(), ino);
}

// ---- argument forms ----

/// `a`, `b`, `c` with distinct content and an empty directory `dir`.
fn three_files(d: &Path) {
    for n in ["a", "b", "c"] {
        fs::write(d.join(n), format!("content of {n}")).unwrap();
    }
    fs::create_dir(d.join("dir")).unwrap();
}

#[track_caller]
fn assert_copied_into(d: &Path, dir: &str) {
    for n in ["a", "b", "c"] {
        assert_eq!(
            fs::read_to_string(d.join(dir).join(n)).unwrap(),
            format!("content of {n}")
        );
    }
    assert_eq!(names(&d.join(dir)), ["a", "b", "c"]);
}

#[test]
fn several_files_into_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    three_files(tmp.path());
    let r = run_in(Some(tmp.path()), &["--json", "a", "b", "c", "dir"]);
    r.expect_code(0);
    assert_eq!(r.count("files"), 3);
    assert_copied_into(tmp.path(), "dir");
}

#[test]
fn target_directory_option() {
    let tmp = tempfile::tempdir().unwrap();
    three_files(tmp.path());
    run_in(Some(tmp.path()), &["-t", "dir", "a", "b", "c"]).expect_code(0);
    assert_copied_into(tmp.path(), "dir");
}

#[test]
fn no_target_directory_option() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    three_files(d);
    // -T: DST is a file name even though nothing says so.
    run_in(Some(d), &["-T", "a", "new"]).expect_code(0);
    assert_eq!(fs::read_to_string(d.join("new")).unwrap(), "content of a");
    // -T onto an existing directory must not copy into it.
    let r = run_in(Some(d), &["-T", "a", "dir"]);
    r.expect_code(1);
    assert!(r.stderr.starts_with("mimeo: "), "{r:#?}");
    assert!(names(&d.join("dir")).is_empty());
    assert!(meta(&d.join("dir")).is_dir());
}

#[test]
fn trailing_slash_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    three_files(d);
    // An existing directory with a slash: copy into it.
    run_in(Some(d), &["a", "dir/"]).expect_code(0);
    assert_eq!(names(&d.join("dir")), ["a"]);
    // A slash on a missing destination: it must be a directory, so fail.
    let r = run_in(Some(d), &["b", "nodir/"]);
    r.expect_code(1);
    assert!(r.stderr.contains("nodir/"), "{r:#?}");
    // A slash on a file source: ENOTDIR.
    let r = run_in(Some(d), &["a/", "x"]);
    r.expect_code(1);
    assert!(r.stderr.contains("Not a directory"), "{r:#?}");
    assert_eq!(names(d), ["a", "b", "c", "dir"]);
}
