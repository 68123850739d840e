//! Tests of the engine's one-file entry point, `mimeo::copy_file`, which resolves its paths
//! from the working directory instead of opening directories, on loop-mounted btrfs, XFS
//! (reflink=1) and ext4.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;

use mimeo::{Method, Options, Preserve};
use mimeo_testkit::files::{assert_same_bytes, meta, names, random_file, scratch};
use mimeo_testkit::{FsKind, sharing};
use rustix::fs::{AtFlags, CWD, Timespec, Timestamps};

const MIB: u64 = 1 << 20;

fn expected_method(kind: FsKind) -> Method {
    if kind.reflinks() {
        Method::Clone
    } else {
        Method::Offload
    }
}

#[test]
fn replaces_atomically_by_a_new_file() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let dir = fs.path().join("d");
        fs::create_dir(&dir).unwrap();
        let (src, dst, old) = (dir.join("src"), dir.join("dst"), dir.join("old"));
        random_file(&src, MIB + 7);
        // The destination is longer than the source, and has a second name that must keep
        // the old bytes: the new file replaces the name, it does not overwrite the old one.
        random_file(&dst, 3 * MIB);
        fs::hard_link(&dst, &old).unwrap();
        let old_bytes = fs::read(&old).unwrap();
        for round in 0..2 {
            let outcome = mimeo::copy_file(&src, &dst, &Options::default()).unwrap();
            assert_eq!(
                outcome.method,
                expected_method(kind),
                "{kind} round {round}"
            );
            assert_eq!(outcome.bytes, MIB + 7, "{kind}");
            assert_same_bytes(&src, &dst);
            assert_eq!(
                fs::read(&old).unwrap(),
                old_bytes,
                "{kind}: old file was written"
            );
            assert_eq!(meta(&old).nlink(), 1, "{kind}");
            assert_eq!(
                names(&dir),
                ["dst", "old", "src"],
                "{kind}: a temporary is left"
            );
            if kind.reflinks() {
                assert!(sharing(&dst).unwrap().fully_shared(), "{kind}: not shared");
            }
        }
    }
}

#[test]
fn new_file_gets_the_source_mode_less_the_umask() {
    let Some(fs) = scratch(FsKind::Xfs) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    random_file(&src, 10_000);
    fs::set_permissions(&src, fs::Permissions::from_mode(0o751)).unwrap();
    let umask = current_umask();
    mimeo::copy_file(&src, &dst, &Options::default()).unwrap();
    assert_eq!(meta(&dst).mode() & 0o7777, 0o751 & !umask);
    assert_eq!(meta(&dst).mode() & 0o1000, 0, "the sticky marker stayed");
    assert_same_bytes(&src, &dst);
}

#[test]
fn preserves_metadata_and_syncs_when_asked() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
        random_file(&src, 300_000);
        fs::set_permissions(&src, fs::Permissions::from_mode(0o640)).unwrap();
        std::os::unix::fs::chown(&src, Some(1234), Some(5678)).unwrap();
        let times = Timestamps {
            last_access: Timespec {
                tv_sec: 1_000_000,
                tv_nsec: 5,
            },
            last_modification: Timespec {
                tv_sec: 2_000_000,
                tv_nsec: 7,
            },
        };
        rustix::fs::utimensat(CWD, &src, &times, AtFlags::empty()).unwrap();
        let mut opts = Options::default();
        opts.preserve = Preserve::all();
        opts.sync = true;
        // Once new, once replacing.
        for round in 0..2 {
            mimeo::copy_file(&src, &dst, &opts).unwrap();
            let (s, d) = (meta(&src), meta(&dst));
            assert_eq!((d.uid(), d.gid()), (1234, 5678), "{kind} round {round}");
            assert_eq!(d.mode(), s.mode(), "{kind} round {round}");
            assert_eq!((d.mtime(), d.mtime_nsec()), (2_000_000, 7), "{kind}");
            assert_eq!((d.atime(), d.atime_nsec()), (1_000_000, 5), "{kind}");
            assert_same_bytes(&src, &dst);
        }
        assert_eq!(names(fs.path()), names_with(fs.path(), &["dst", "src"]));
    }
}

#[test]
fn refuses_the_same_file_and_what_is_not_a_file() {
    let Some(fs) = scratch(FsKind::Btrfs) else {
        return;
    };
    let p = |n: &str| fs.path().join(n);
    random_file(&p("src"), 5000);
    let before = fs::read(p("src")).unwrap();
    fs::hard_link(p("src"), p("link")).unwrap();
    symlink("src", p("sym")).unwrap();
    fs::create_dir(p("dir")).unwrap();
    let opts = Options::default();
    let err = |s: &str, d: &str| {
        mimeo::copy_file(&p(s), &p(d), &opts)
            .expect_err(&format!("{s} -> {d} was copied"))
            .to_string()
    };
    assert!(err("src", "link").contains("are the same file"));
    assert!(err("src", "sym").contains("are the same file"));
    assert!(err("sym", "new").contains("not a regular file"));
    assert!(err("dir", "new").contains("not a regular file"));
    assert!(err("src", "dir").contains("cannot overwrite directory"));
    assert!(err("missing", "new").contains("No such file"));
    assert!(err("src", "missing/new").contains("No such file"));
    assert_eq!(fs::read(p("src")).unwrap(), before);
    assert!(fs::symlink_metadata(p("sym")).unwrap().is_symlink());
    assert!(!p("new").exists());
    // A symlink followed on request is copied as the file it points to.
    let mut follow = Options::default();
    follow.dereference = mimeo::Dereference::Always;
    mimeo::copy_file(&p("sym"), &p("new"), &follow).unwrap();
    assert_same_bytes(&p("src"), &p("new"));
}

/// Relative names: the temporary of a replacement goes into the destination's own directory,
/// whether that is the working directory or one below it. (The only test here that changes
/// the working directory; the others use absolute paths.)
#[test]
fn relative_paths_resolve_from_the_working_directory() {
    let Some(fs) = scratch(FsKind::Xfs) else {
        return;
    };
    fs::create_dir(fs.path().join("sub")).unwrap();
    random_file(&fs.path().join("a"), 70_000);
    std::env::set_current_dir(fs.path()).unwrap();
    let opts = Options::default();
    for dst in ["b", "b", "sub/c", "sub/c", "./sub/../b"] {
        let out = mimeo::copy_file(Path::new("a"), Path::new(dst), &opts).unwrap();
        assert_eq!(out.method, Method::Clone, "{dst}");
    }
    let root = fs.path().to_path_buf();
    std::env::set_current_dir("/").unwrap();
    assert_same_bytes(&root.join("a"), &root.join("b"));
    assert_same_bytes(&root.join("a"), &root.join("sub/c"));
    assert_eq!(names(&root), names_with(&root, &["a", "b", "sub"]));
    assert_eq!(names(&root.join("sub")), ["c"]);
}

/// The expected listing of a filesystem's root: `entries` plus what mkfs put there.
fn names_with(root: &Path, entries: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = entries.iter().map(|s| s.to_string()).collect();
    if root.join("lost+found").exists() {
        v.push("lost+found".into());
    }
    v.sort();
    v
}

fn current_umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
}

/// `copy_file` (`mimeo.copyfile`) into a directory with a default ACL gives the new file the
/// permission bits that ACL allows, as `shutil.copyfile` does.
#[test]
fn a_new_file_keeps_what_the_default_acl_allows_as_shutil() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let dir = fs.path();
        let src = dir.join("f");
        fs::write(&src, b"f\n").unwrap();
        fs::set_permissions(&src, fs::Permissions::from_mode(0o644)).unwrap();
        let o = dir.join("o");
        fs::create_dir(&o).unwrap();
        mimeo_testkit::run_ok("setfacl", &["-d", "-m", "o::---", o.to_str().unwrap()]);
        mimeo::copy_file(&src, &o.join("m"), &Options::default()).unwrap();
        let script = "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])";
        let py = std::process::Command::new("python3")
            .args(["-c", script])
            .arg(&src)
            .arg(o.join("c"))
            .status()
            .unwrap();
        assert!(py.success());
        let mode = |n: &str| fs::metadata(o.join(n)).unwrap().mode() & 0o7777;
        assert_eq!(mode("m"), mode("c"), "{kind}");
        assert_eq!(mode("m"), 0o640, "{kind}");
    }
}
