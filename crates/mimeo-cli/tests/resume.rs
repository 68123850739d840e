//! Resumable copies: a large file copied by offload or stream and killed (SIGKILL), or
//! stopped by SIGINT with `--partial`, keeps its written prefix and a record of what it is a
//! prefix of; `-u` goes on from there when the source is unchanged and the prefix's last
//! block checks out, and copies afresh otherwise. Real signals, real filesystems; failpoints
//! only pause the copy at a known place so the signal lands there.

mod util;

use mimeo_testkit::{CompareOptions, FsKind, LoopFs, compare_trees};
use rustix::process::{Pid, Signal};
use std::fs;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use util::{Run, mimeo, random_file, run_command};

const MIB: u64 = 1 << 20;
/// The size of the large file: three records' worth and a bit.
const BIG: u64 = 200 * MIB + 12345;

fn scratch(kind: FsKind) -> Option<LoopFs> {
    LoopFs::try_new(kind, 1000)
}

/// `src/` with the large file `big` (mode 0640, an xattr) and a small one.
fn source(root: &Path) -> PathBuf {
    let src = root.join("src");
    fs::create_dir(&src).unwrap();
    random_file(&src.join("big"), BIG);
    fs::set_permissions(src.join("big"), fs::Permissions::from_mode(0o640)).unwrap();
    rustix::fs::setxattr(
        src.join("big").as_path(),
        "user.k",
        b"v",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    fs::write(src.join("small"), b"small\n").unwrap();
    src
}

/// The parts a partial file's record says are complete.
fn record_parts(path: &Path) -> Option<Vec<(u64, u64)>> {
    let mut buf = [0u8; 4096];
    let n = rustix::fs::getxattr(path, "user.mimeo.partial", &mut buf).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let list = text.split(' ').find_map(|w| w.strip_prefix("done="))?;
    list.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (a, b) = p.split_once('-')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect()
}

/// How many bytes a partial file's record says are complete.
fn record_done(path: &Path) -> Option<u64> {
    Some(record_parts(path)?.iter().map(|(a, b)| b - a).sum())
}

fn spawn(args: &[&std::ffi::OsStr], failpoints: &str) -> Child {
    mimeo()
        .args(args)
        .env("MIMEO_FAILPOINTS", failpoints)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the record of `path` says at least `done` bytes are complete.
fn wait_for_record(child: &mut Child, path: &Path, done: u64) {
    let end = Instant::now() + Duration::from_secs(60);
    while record_done(path).is_none_or(|d| d < done) {
        assert!(
            Instant::now() < end,
            "no record of {done} bytes on {path:?}"
        );
        assert!(child.try_wait().unwrap().is_none(), "mimeo exited early");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn update(src: &Path, dst: &Path) -> Run {
    let r = run_command(
        mimeo().args(["-aT", "-u", "--json"]).arg(src).arg(dst),
        true,
    );
    r.expect_code(0);
    assert_eq!(r.count("errors"), 0, "{r:#?}");
    r
}

#[track_caller]
fn assert_equal(what: &str, src: &Path, dst: &Path) {
    let opts = CompareOptions::default();
    let c = compare_trees(src, dst, &opts).unwrap();
    assert!(c.is_equal(), "{what}: {dst:?} differs from {src:?}:\n{c}");
    assert_eq!(
        record_done(&dst.join("big")),
        None,
        "{what}: a record is left"
    );
}

fn has_marker(dir: &Path) -> bool {
    fs::read_dir(dir).unwrap().flatten().any(|e| {
        let n = e.file_name();
        let n = n.to_string_lossy();
        n.starts_with(".mimeo-") && n.ends_with(".partial")
    })
}

/// Copies `src` to `dst` with `extra` flags, pausing the data step at `failpoint` once
/// `done` bytes are recorded, and kills it there. Returns what the record says.
fn killed_at(src: &Path, dst: &Path, extra: &[&str], failpoint: &str, done: u64) -> u64 {
    let mut args: Vec<&std::ffi::OsStr> = vec!["-aT".as_ref()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    args.extend([src.as_os_str(), dst.as_os_str()]);
    let mut child = spawn(&args, failpoint);
    wait_for_record(&mut child, &dst.join("big"), done);
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = record_done(&dst.join("big")).expect("the record stays after SIGKILL");
    assert!(has_marker(dst), "the directory is marked incomplete");
    kept
}

#[test]
fn a_killed_offload_resumes_where_it_stopped() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let src = source(fs.path());
    let dst = fs.path().join("dst");
    // copy_file_range goes 64 MiB at a time with a record after each, and the small file
    // takes one call too, before or after `big` starts: the fourth call pauses, so `big` is
    // killed with two or three records' worth written.
    let kept = killed_at(
        &src,
        &dst,
        &[],
        "copy_file_range=3*off->sleep(60000)",
        128 * MIB,
    );
    assert!(kept == 128 * MIB || kept == 192 * MIB, "{kept}");
    let r = update(&src, &dst);
    assert_eq!(r.count("resumed_bytes"), kept, "{r:#?}");
    // The small file is copied again unless the killed run had finished it.
    let offloaded = r.count("by_method.offload");
    assert!(
        offloaded == BIG - kept + 6 || offloaded == BIG - kept,
        "{r:#?}"
    );
    assert_equal("offload resumed", &src, &dst);
}

#[test]
fn a_killed_stream_resumes_only_an_unchanged_source_with_a_sound_prefix() {
    let (Some(a), Some(b)) = (scratch(FsKind::Btrfs), scratch(FsKind::Xfs)) else {
        return;
    };
    // Across filesystems the data is streamed in 256 KiB writes: paused after 80 MiB.
    let fp = "write=320*off->sleep(60000)";
    let src = source(a.path());
    for case in ["unchanged", "source changed", "prefix damaged"] {
        let dst = b.path().join(case.replace(' ', "-"));
        let kept = killed_at(&src, &dst, &[], fp, 64 * MIB);
        assert_eq!(kept, 64 * MIB, "{case}");
        match case {
            "source changed" => {
                let f = fs::OpenOptions::new()
                    .write(true)
                    .open(src.join("big"))
                    .unwrap();
                f.write_all_at(b"changed", 10 * MIB).unwrap();
            }
            "prefix damaged" => {
                let f = fs::OpenOptions::new()
                    .write(true)
                    .open(dst.join("big"))
                    .unwrap();
                f.write_all_at(b"damaged", kept - 100).unwrap();
            }
            _ => {}
        }
        let r = update(&src, &dst);
        let resumed = r.count("resumed_bytes");
        if case == "unchanged" {
            assert_eq!(resumed, kept, "{case}: {r:#?}");
            assert_eq!(r.count("by_method.stream"), BIG - kept + 6, "{case}");
        } else {
            assert_eq!(resumed, 0, "{case}: a fresh copy: {r:#?}");
        }
        assert_equal(case, &src, &dst);
    }
}

#[test]
fn a_killed_split_copy_resumes_every_range_it_finished() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let src = source(fs.path());
    let dst = fs.path().join("dst");
    // 32 MiB ranges, one copy_file_range call each: four calls finish (three or four ranges:
    // the small file may take one), then every worker pauses.
    let mut child = spawn(
        &[
            "-aT".as_ref(),
            "--split".as_ref(),
            "32M".as_ref(),
            "-j".as_ref(),
            "3".as_ref(),
            src.as_os_str(),
            dst.as_os_str(),
        ],
        "copy_file_range=4*off->sleep(60000)",
    );
    wait_for_record(&mut child, &dst.join("big"), 96 * MIB);
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let parts = record_parts(&dst.join("big")).unwrap();
    let kept = record_done(&dst.join("big")).unwrap();
    assert!(kept % (32 * MIB) == 0 && kept >= 96 * MIB, "{parts:?}");
    assert!(parts.iter().all(|(a, _)| a % (32 * MIB) == 0), "{parts:?}");
    let r = update(&src, &dst);
    assert_eq!(r.count("resumed_bytes"), kept, "{r:#?}");
    // The rest of the large file, and the small one unless the killed run finished it.
    let offloaded = r.count("by_method.offload");
    assert!(
        offloaded == BIG - kept || offloaded == BIG - kept + 6,
        "{r:#?}"
    );
    assert_equal("split, killed, resumed", &src, &dst);
}

#[test]
fn a_file_copied_alone_resumes_by_its_own_mark() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let src = source(fs.path());
    let (f, d) = (src.join("big"), fs.path().join("alone"));
    let mut child = spawn(
        &["-a".as_ref(), f.as_os_str(), d.as_os_str()],
        "copy_file_range=1*off->sleep(60000)",
    );
    wait_for_record(&mut child, &d, 64 * MIB);
    child.kill().unwrap();
    child.wait().unwrap();
    let mode = fs::metadata(&d).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o7077,
        0,
        "a file alone shows only its owner's bits: {mode:o}"
    );
    assert!(
        mimeo_testkit::oracle::marked_alone(&d),
        "a file alone is marked by its xattr"
    );
    let r = run_command(mimeo().args(["-a", "-u", "--json"]).arg(&f).arg(&d), true);
    r.expect_code(0);
    assert_eq!(r.count("resumed_bytes"), 64 * MIB, "{r:#?}");
    util::assert_same_bytes(&f, &d);
    assert_eq!(
        fs::metadata(&d).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    assert_eq!(record_done(&d), None);
}

#[test]
fn sigint_with_partial_keeps_the_prefix_and_without_it_removes_the_file() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let src = source(fs.path());
    for partial in [true, false] {
        let dst = fs.path().join(format!("dst-{partial}"));
        let mut args: Vec<&std::ffi::OsStr> = vec!["-aT".as_ref(), "--json".as_ref()];
        if partial {
            args.push("--partial".as_ref());
        }
        args.extend([src.as_os_str(), dst.as_os_str()]);
        let mut child = spawn(&args, "copy_file_range=1*off->sleep(1500)");
        wait_for_record(&mut child, &dst.join("big"), 64 * MIB);
        rustix::process::kill_process(Pid::from_child(&child), Signal::INT).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{out:?}");
        let big = dst.join("big");
        if partial {
            let kept = record_done(&big).expect("--partial keeps the record");
            assert!(kept >= 64 * MIB, "{kept}");
            assert!(fs::metadata(&big).unwrap().len() >= kept);
            assert!(has_marker(&dst), "--partial keeps the directory's marker");
            let r = update(&src, &dst);
            assert_eq!(r.count("resumed_bytes"), kept, "{r:#?}");
            assert_equal("--partial, then -u", &src, &dst);
        } else {
            assert!(
                !big.exists(),
                "without --partial the stopped file is removed"
            );
            assert!(!has_marker(&dst), "and the marker too");
        }
    }
}
