//! `mimeo-dedupe`, the command: its JSON Lines, `--dry-run`, `--min-size`, `-x`, per-file
//! messages for files it may not change (EPERM, as an unprivileged user) and for a busy
//! filesystem (EAGAIN, injected), exit statuses, and its saving measured by `du`.

use mimeo_testkit::space::{expected_usage, space_tree};
use mimeo_testkit::{CompareOptions, FsKind, LoopFs, as_user, capture, compare_trees, run_ok};
use serde_json::Value;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    lines: Vec<Value>,
    stderr: String,
}

impl Run {
    fn of(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|v| v["type"] == kind).collect()
    }

    fn summary(&self) -> &Value {
        let s = self.of("summary");
        assert_eq!(s.len(), 1, "{:#?} {}", self.lines, self.stderr);
        s[0]
    }

    fn n(&self, key: &str) -> u64 {
        self.summary()[key].as_u64().unwrap()
    }
}

/// Runs `mimeo-dedupe --json ARGS` with `env`, as `uid` when given.
fn dedupe(uid: Option<u32>, env: &[(&str, &str)], args: &[&OsStr]) -> Run {
    let mut cmd = as_user(uid, env!("CARGO_BIN_EXE_mimeo-dedupe"));
    cmd.envs(env.iter().copied());
    let out = capture(cmd.arg("--json").args(args)).expect("run mimeo-dedupe");
    Run {
        code: out.code(),
        lines: out
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}\n{out}")))
            .collect(),
        stderr: out.stderr,
    }
}

/// Physical bytes `path` takes, every byte once, from the test kit's own FIEMAP pass (what
/// `mimeo-du` reports as exclusive + shared; its own tests prove that).
fn used(path: &Path) -> u64 {
    run_ok("sync", &[] as &[&str]);
    let u = expected_usage(path).expect("FIEMAP pass");
    u.exclusive + u.shared
}

/// `t` with a space tree and two plain copies of it.
fn triplicate(fs: &Path, seed: u64) -> PathBuf {
    let t = fs.join("t");
    space_tree(&t.join("s"), &fs.join("out"), seed, true).expect("tree");
    for c in ["c1", "c2"] {
        run_ok(
            "cp",
            &[
                OsStr::new("-a"),
                OsStr::new("--reflink=never"),
                t.join("s").as_os_str(),
                t.join(c).as_os_str(),
            ],
        );
    }
    run_ok("sync", &[] as &[&str]);
    t
}

#[test]
fn json_lines_dry_run_and_the_saving_agree_with_du() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = LoopFs::try_new(kind, 512) else {
            continue;
        };
        let t = triplicate(fs.path(), 31);
        let before = used(&t);
        let dry = dedupe(None, &[], &[OsStr::new("--dry-run"), t.as_os_str()]);
        assert_eq!(dry.code, 0, "{}", dry.stderr);
        assert_eq!(used(&t), before, "{kind}: the dry run changed sharing");
        let groups = dry.of("group");
        assert_eq!(groups.len() as u64, dry.n("groups"));
        for g in &groups {
            for key in ["size", "saves"] {
                assert!(g[key].is_u64(), "{g}");
            }
            assert!(g["keep"].is_string() && g["targets"].is_array() && g["sharing"].is_array());
        }
        assert!(dry.summary()["dry_run"].as_bool().unwrap());
        assert!(dry.of("deduped").is_empty());
        let saves: u64 = groups.iter().map(|g| g["saves"].as_u64().unwrap()).sum();
        assert!(
            saves > 0 && dry.n("bytes_saved") > 0,
            "{kind}: {:#?}",
            dry.lines
        );

        let real = dedupe(None, &[], &[t.as_os_str()]);
        assert_eq!(real.code, 0, "{}", real.stderr);
        let deduped = real.of("deduped");
        assert_eq!(deduped.len() as u64, real.n("deduped_files"));
        assert!(
            deduped
                .iter()
                .all(|d| d["bytes"].is_u64() && d["keep"].is_string())
        );
        assert_eq!(
            real.n("bytes_saved"),
            before - used(&t),
            "{kind}: saved vs du"
        );
        assert_eq!(real.n("bytes_saved"), dry.n("bytes_saved"), "{kind}");
        for key in [
            "files",
            "candidates",
            "already_shared",
            "duplicates",
            "bytes_read",
            "bytes_deduped",
            "skipped",
            "errors",
        ] {
            assert!(real.summary()[key].is_u64(), "{key}");
        }
        assert!(real.summary()["elapsed_s"].is_f64());
        assert_eq!(real.summary()["interrupted"], false);
    }
}

#[test]
fn min_size_and_one_file_system_leave_files_alone() {
    let Some(fs) = LoopFs::try_new(FsKind::Xfs, 512) else {
        return;
    };
    let Some(other) = LoopFs::try_new(FsKind::Btrfs, 256) else {
        return;
    };
    let t = fs.path().join("t");
    std::fs::create_dir(&t).unwrap();
    for name in ["small1", "small2"] {
        std::fs::write(t.join(name), vec![1u8; 8192]).unwrap();
    }
    for name in ["big1", "big2"] {
        std::fs::write(t.join(name), vec![2u8; 1 << 20]).unwrap();
    }
    for name in ["m1", "m2"] {
        std::fs::write(other.path().join(name), vec![3u8; 1 << 20]).unwrap();
    }
    let mnt = t.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    run_ok(
        "mount",
        &[
            OsStr::new("--bind"),
            other.path().as_os_str(),
            mnt.as_os_str(),
        ],
    );
    run_ok("sync", &[] as &[&str]);
    let r = dedupe(
        None,
        &[],
        &[
            OsStr::new("--min-size=64K"),
            OsStr::new("-x"),
            t.as_os_str(),
        ],
    );
    run_ok("umount", &[mnt.as_os_str()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let deduped: Vec<&str> = r
        .of("deduped")
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        deduped,
        vec![t.join("big2").to_str().unwrap()],
        "{:#?}",
        r.lines
    );
    assert_eq!(r.n("files"), 4, "the mount's files are not even looked at");
}

#[test]
fn files_the_user_may_not_change_are_reported_one_by_one_and_the_rest_is_deduped() {
    let Some(fs) = LoopFs::try_new(FsKind::Btrfs, 256) else {
        return;
    };
    let parent = fs.path().parent().unwrap();
    std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = fs.path().join("t");
    std::fs::create_dir(&t).unwrap();
    // root's, readable by all; the user's own.
    for name in ["root1", "root2"] {
        std::fs::write(t.join(name), vec![5u8; 1 << 20]).unwrap();
    }
    for name in ["mine1", "mine2"] {
        std::fs::write(t.join(name), vec![6u8; 1 << 20]).unwrap();
        run_ok("chown", &["65534:65534", t.join(name).to_str().unwrap()]);
    }
    run_ok("sync", &[] as &[&str]);
    let snapshot = fs.path().join("snapshot");
    run_ok(
        "cp",
        &[OsStr::new("-a"), t.as_os_str(), snapshot.as_os_str()],
    );
    let r = dedupe(Some(65534), &[], &[t.as_os_str()]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let skipped = r.of("skipped");
    assert_eq!(skipped.len(), 1, "{:#?}", r.lines);
    assert_eq!(skipped[0]["path"].as_str(), t.join("root2").to_str());
    assert_eq!(skipped[0]["reason"], "not_permitted");
    assert_eq!(skipped[0]["errno"].as_i64(), Some(i64::from(libc::EPERM)));
    assert!(
        r.stderr.contains("root2") && r.stderr.contains("not permitted"),
        "{}",
        r.stderr
    );
    let deduped = r.of("deduped");
    assert_eq!(deduped.len(), 1);
    assert_eq!(deduped[0]["path"].as_str(), t.join("mine2").to_str());
    compare_trees(&snapshot, &t, &CompareOptions::default())
        .unwrap()
        .assert_equal();
}

#[test]
fn a_busy_filesystem_is_retried_then_each_file_is_reported() {
    let Some(fs) = LoopFs::try_new(FsKind::Xfs, 512) else {
        return;
    };
    let t = fs.path().join("t");
    std::fs::create_dir(&t).unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(t.join(name), vec![8u8; 3 << 20]).unwrap();
    }
    run_ok("sync", &[] as &[&str]);
    let r = dedupe(
        None,
        &[("MIMEO_FAILPOINTS", "dedupe=return(EAGAIN)")],
        &[t.as_os_str()],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let reasons: Vec<&str> = r
        .of("skipped")
        .iter()
        .map(|s| s["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["busy", "busy"], "{:#?}", r.lines);
    assert_eq!(r.n("bytes_deduped"), 0);
    // Without the injected error, the same run shares them.
    let ok = dedupe(None, &[], &[t.as_os_str()]);
    assert_eq!((ok.code, ok.n("deduped_files")), (0, 2), "{}", ok.stderr);
}

#[test]
fn usage_errors_exit_2_and_text_output_is_for_people() {
    let bin = env!("CARGO_BIN_EXE_mimeo-dedupe");
    let bad = capture(Command::new(bin).args(["--min-size=lots", "."])).unwrap();
    assert_eq!(bad.code(), 2, "{bad}");
    let none = capture(&mut Command::new(bin)).unwrap();
    assert_eq!(none.code(), 2, "{none}");
    let Some(fs) = LoopFs::try_new(FsKind::Xfs, 512) else {
        return;
    };
    let t = triplicate(fs.path(), 32);
    let text = capture(Command::new(bin).args(["-n"]).arg(&t)).unwrap();
    assert!(text.success(), "{text}");
    assert!(text.stdout.contains("would save"), "{text}");
    assert!(text.stdout.contains("  keep "), "{text}");
    let real = capture(Command::new(bin).arg(&t)).unwrap();
    assert!(real.stdout.contains("saved"), "{real}");
    assert!(!real.stdout.contains("  keep "), "quiet without -v: {real}");
}

#[test]
fn names_and_messages_as_in_the_family() {
    let bin = env!("CARGO_BIN_EXE_mimeo-dedupe");
    let bad = capture(Command::new(bin).arg("--bogus")).unwrap();
    assert_eq!(bad.code(), 2, "{bad}");
    assert_eq!(
        bad.stderr,
        "mimeo-dedupe: unrecognized option '--bogus'\nTry 'mimeo-dedupe --help' for more information.\n"
    );
    for args in [&[][..], &[OsStr::new("--bogus")]] {
        let json = dedupe(None, &[], args);
        assert_eq!(json.code, 2, "{args:?}");
        assert_eq!(json.lines.len(), 2, "{:?}", json.lines);
        assert_eq!(json.lines[0]["operation"], "usage");
        assert_eq!(json.n("errors"), 1);
    }
    let man = capture(Command::new(bin).args(["--gen=man"])).unwrap();
    for section in [
        ".SH SYNOPSIS",
        ".SH \"EXIT STATUS\"",
        ".SH EXAMPLES",
        "min\\-size",
    ] {
        assert!(man.stdout.contains(section), "{section}: {man}");
    }
    let Some(fs) = LoopFs::try_new(FsKind::Xfs, 512) else {
        return;
    };
    // Two copies under names a terminal would act on, one of them not UTF-8.
    let dir = fs.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let (raw, hostile) = (
        dir.join(OsStr::from_bytes(b"x\xff\ny")),
        dir.join(OsStr::from_bytes(b"x\x1b]0;pwned\x07")),
    );
    let data: Vec<u8> = (0..256 * 1024u32)
        .map(|i| (i * 7 + i / 251) as u8)
        .collect();
    for p in [&raw, &hostile] {
        std::fs::write(p, &data).unwrap();
    }
    run_ok("sync", &[] as &[&str]);
    let text = capture(Command::new(bin).args(["-n", "--progress"]).arg(&dir)).unwrap();
    assert!(text.success(), "{text}");
    assert!(text.stdout.contains("x'$'\\377\\n''y'"), "{text}");
    assert!(text.stdout.contains("x'$'\\033'']0;pwned'$'\\a'"), "{text}");
    assert!(!text.stdout.contains('\x1b'), "{text}");
    let json = dedupe(None, &[], &[OsStr::new("-n"), dir.as_os_str()]);
    let group = &json.of("group")[0];
    let hex: String = raw
        .as_os_str()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let names = [&group["keep"], &group["targets"][0]];
    assert!(
        names.contains(&&serde_json::json!({ "hex": hex })),
        "{group}"
    );
}
