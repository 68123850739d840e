//! `mimeo-du` against its oracles: `btrfs filesystem du -s --raw` on btrfs, and a FIEMAP
//! pass of the test kit's own on btrfs, XFS and ext4, on trees with clones, partial
//! rewrites, range clones, hard links, holes, inline and preallocated files.

use mimeo_testkit::space::{
    ExpectedUsage, btrfs_du, clone_file, expected_usage, inline_extents, regular_files, space_tree,
};
use mimeo_testkit::{FsKind, GenOptions, LoopFs, as_user, capture, generate, run_ok};
use serde_json::Value;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One run of `mimeo-du --json`.
struct Run {
    code: i32,
    lines: Vec<Value>,
    stderr: String,
}

fn mimeo_du(args: &[&OsStr]) -> Run {
    run_as(None, args)
}

/// Runs `mimeo-du --json ARGS`, as `user` (uid) when given.
fn run_as(user: Option<u32>, args: &[&OsStr]) -> Run {
    let mut cmd = as_user(user, env!("CARGO_BIN_EXE_mimeo-du"));
    let out = capture(cmd.arg("--json").args(args)).expect("run mimeo-du");
    let lines = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}\n{out}")))
        .collect();
    Run {
        code: out.code(),
        lines,
        stderr: out.stderr,
    }
}

impl Run {
    fn of(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|v| v["type"] == kind).collect()
    }

    /// The usage of each path, in the order given.
    fn paths(&self) -> Vec<ExpectedUsage> {
        self.of("path").into_iter().map(usage).collect()
    }

    fn total(&self) -> ExpectedUsage {
        let t = self.of("total");
        assert_eq!(t.len(), 1, "one total line: {:#?}", self.lines);
        usage(t[0])
    }
}

fn usage(v: &Value) -> ExpectedUsage {
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"));
    ExpectedUsage {
        total: n("total"),
        exclusive: n("exclusive"),
        shared: v["shared"].as_u64().unwrap_or(u64::MAX),
        shared_outside: v["shared_outside"].as_u64().unwrap_or(u64::MAX),
        unknown_extents: n("unknown_extents"),
        unknown_bytes: n("unknown_bytes"),
        files: n("files"),
    }
}

fn os<'a>(paths: &[&'a Path]) -> Vec<&'a OsStr> {
    paths.iter().map(|p| p.as_os_str()).collect()
}

/// The tree, a part of it and the files outside it, as arguments.
fn arguments(fs: &Path) -> Vec<PathBuf> {
    vec![
        fs.join("t"),
        fs.join("t/b"),
        fs.join("t/d"),
        fs.join("out"),
        fs.join("t/a/orig"),
    ]
}

/// Our numbers, less the unknown-address extents that `btrfs filesystem du` leaves out,
/// equal its numbers for every argument.
fn assert_matches_btrfs_du(args: &[PathBuf], what: &str) -> Vec<ExpectedUsage> {
    let args: Vec<&Path> = args.iter().map(|p| p.as_path()).collect();
    let run = mimeo_du(&[&[OsStr::new("-s")], &os(&args)[..]].concat());
    assert_eq!(run.code, 0, "{what}: {}", run.stderr);
    let ours = run.paths();
    let theirs = btrfs_du(&args).expect("btrfs filesystem du");
    assert_eq!(ours.len(), args.len(), "{what}");
    assert_eq!(theirs.len(), args.len(), "{what}");
    for ((arg, o), t) in args.iter().zip(&ours).zip(&theirs) {
        let got = (
            o.total - o.unknown_bytes,
            o.exclusive - o.unknown_bytes,
            o.shared,
        );
        assert_eq!(
            got,
            (t.total, t.exclusive, t.set_shared),
            "{what}: {arg:?}: ours {o:?}, btrfs filesystem du {t:?}"
        );
    }
    ours
}

#[test]
fn matches_btrfs_filesystem_du_with_clones_rewrites_links_holes_and_inline_files() {
    let Some(fs) = LoopFs::try_new(FsKind::Btrfs, 512) else {
        return;
    };
    for seed in [1, 2, 3] {
        let base = fs.path().join(seed.to_string());
        space_tree(&base.join("t"), &base.join("out"), seed, true).expect("tree");
        let args = arguments(&base);
        let ours = assert_matches_btrfs_du(&args, &format!("seed {seed}"));
        // What btrfs leaves out is exactly the inline data, found independently.
        let inline: u64 = regular_files(&args[0])
            .unwrap()
            .iter()
            .flat_map(|f| inline_extents(f).unwrap())
            .map(|e| e.length)
            .sum();
        assert!(inline > 0, "seed {seed}: the tree has inline files");
        assert_eq!(ours[0].unknown_bytes, inline, "seed {seed}");
        assert!(ours[0].shared > 0, "{ours:?}");
        // `out` shares with the tree only, and nothing else in `out` shares with it.
        assert_eq!(ours[3].shared_outside, ours[3].shared, "{ours:?}");
        // Without the inline files, the numbers are the same as they stand.
        for f in std::fs::read_dir(base.join("t/c")).unwrap() {
            let f = f.unwrap().path();
            if f.file_name().unwrap().to_string_lossy().starts_with("tiny") {
                std::fs::remove_file(f).unwrap();
            }
        }
        run_ok("sync", &[] as &[&str]);
        let ours = assert_matches_btrfs_du(&args, &format!("seed {seed}, no inline files"));
        assert!(ours.iter().all(|u| u.unknown_bytes == 0), "{ours:?}");
    }
}

#[test]
fn matches_btrfs_filesystem_du_on_generated_trees_and_their_clones() {
    let Some(fs) = LoopFs::try_new(FsKind::Btrfs, 512) else {
        return;
    };
    for seed in [7, 8] {
        let base = fs.path().join(seed.to_string());
        generate(&base.join("gen"), &GenOptions::new(seed, 300)).expect("generate");
        // A cloned copy, some of whose files are then partly rewritten, and a hard link
        // from the copy to the original.
        run_ok(
            "cp",
            &[
                OsStr::new("-a"),
                OsStr::new("--reflink=always"),
                base.join("gen").as_os_str(),
                base.join("copy").as_os_str(),
            ],
        );
        for (i, f) in regular_files(&base.join("copy"))
            .unwrap()
            .iter()
            .enumerate()
        {
            let len = std::fs::metadata(f).unwrap().len();
            if i % 3 == 0 && len > 8192 {
                let file = std::fs::OpenOptions::new().write(true).open(f).unwrap();
                std::os::unix::fs::FileExt::write_all_at(&file, &[0xa5; 4096], len / 2).unwrap();
            }
        }
        let first = regular_files(&base.join("gen")).unwrap()[0].clone();
        std::fs::hard_link(first, base.join("copy/link-to-gen")).unwrap();
        run_ok("sync", &[] as &[&str]);
        let args = vec![base.join("gen"), base.join("copy"), base.clone()];
        let ours = assert_matches_btrfs_du(&args, &format!("generated seed {seed}"));
        for (arg, o) in args.iter().zip(&ours) {
            assert_eq!(*o, expected_usage(arg).unwrap(), "{arg:?}");
        }
    }
}

/// Every field equals the test kit's own FIEMAP pass, for each argument.
fn assert_matches_fiemap(kind: FsKind) {
    let Some(fs) = LoopFs::try_new(kind, 512) else {
        return;
    };
    for seed in [4, 5] {
        let base = fs.path().join(seed.to_string());
        space_tree(&base.join("t"), &base.join("out"), seed, kind.reflinks()).expect("tree");
        let args = arguments(&base);
        let argv: Vec<&Path> = args.iter().map(|p| p.as_path()).collect();
        let run = mimeo_du(&[&[OsStr::new("-s")], &os(&argv)[..]].concat());
        assert_eq!(run.code, 0, "{kind}: {}", run.stderr);
        let ours = run.paths();
        for (arg, o) in args.iter().zip(&ours) {
            let expected = expected_usage(arg).unwrap();
            assert_eq!(*o, expected, "{kind} seed {seed}: {arg:?}");
            if kind.reflinks() {
                // Outside the given paths nothing else shares `out`'s extents within it.
                assert!(o.shared_outside <= o.shared, "{kind}: {arg:?}");
            } else {
                assert_eq!((o.shared, o.shared_outside), (0, 0), "{kind}: {arg:?}");
            }
        }
        if kind.reflinks() {
            assert!(ours[0].shared > 0, "{kind}: clones are shared: {ours:?}");
            assert!(
                ours[3].shared_outside > 0,
                "{kind}: out shares with t: {ours:?}"
            );
        }
        // The whole set: the tree holds two of the other arguments, so it counts once.
        let t = run.total();
        let whole_t = expected_usage(&args[0]).unwrap();
        assert_eq!(
            (t.total, t.files),
            (whole_t.total + ours[3].total, whole_t.files + ours[3].files),
            "{kind}: total line"
        );
    }
}

#[test]
fn matches_its_own_fiemap_pass_on_xfs() {
    assert_matches_fiemap(FsKind::Xfs);
}

#[test]
fn matches_its_own_fiemap_pass_on_btrfs() {
    assert_matches_fiemap(FsKind::Btrfs);
}

#[test]
fn matches_its_own_fiemap_pass_on_ext4_where_nothing_is_shared() {
    assert_matches_fiemap(FsKind::Ext4);
}

#[test]
fn directories_are_reported_after_their_children_down_to_the_depth_asked() {
    let Some(fs) = LoopFs::try_new(FsKind::Xfs, 512) else {
        return;
    };
    let t = fs.path().join("t");
    space_tree(&t, &fs.path().join("out"), 9, true).expect("tree");
    for (flag, deepest) in [(vec!["-s"], 0), (vec!["--max-depth", "1"], 1), (vec![], 2)] {
        let mut args: Vec<&OsStr> = flag.iter().map(OsStr::new).collect();
        args.push(t.as_os_str());
        let run = mimeo_du(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let dirs = run.of("directory");
        let max = dirs.iter().map(|d| d["depth"].as_u64().unwrap()).max();
        assert_eq!(max.unwrap_or(0), deepest, "{flag:?}: {dirs:#?}");
        // Each directory's line comes after the lines of the directories inside it, and
        // its numbers are those of its files and everything below.
        let position = |p: &Path| {
            run.lines
                .iter()
                .position(|v| v["path"].as_str() == Some(p.to_str().unwrap()))
        };
        // `a/orig` has a second link, `b/orig-link`: it counts in whichever of the two
        // the walk met first, and in only one.
        let orig = expected_usage(&t.join("a/orig")).unwrap();
        let mut sum_depth_1 = 0;
        for d in &dirs {
            let path = PathBuf::from(d["path"].as_str().unwrap());
            let below = expected_usage(&path).unwrap();
            let total = d["total"].as_u64().unwrap();
            let files = d["files"].as_u64().unwrap();
            if path == t.join("a") || path == t.join("b") {
                assert!(
                    (total, files) == (below.total, below.files)
                        || (total, files) == (below.total - orig.total, below.files - 1),
                    "{path:?}: {d}"
                );
            } else {
                assert_eq!((total, files), (below.total, below.files), "{path:?}");
                assert_eq!(d["exclusive"].as_u64(), Some(below.exclusive), "{path:?}");
            }
            if d["depth"] == 1 {
                sum_depth_1 += total;
            }
            assert!(d.get("shared").is_none(), "{d}");
            if let Some(parent) = path.parent().filter(|p| *p != t) {
                assert!(
                    position(&path) < position(parent),
                    "{path:?} after its parent"
                );
            }
            assert!(
                position(&path) < position(&t),
                "{path:?} after the path line"
            );
        }
        if deepest > 0 {
            // The tree's root holds no files: its directories add up to it.
            assert_eq!(sum_depth_1, run.paths()[0].total);
        }
        if deepest == 2 {
            assert!(
                dirs.iter()
                    .any(|d| d["path"].as_str().unwrap().ends_with("d/e"))
            );
        }
    }
}

#[test]
fn hard_links_count_once_per_path_and_once_in_the_total() {
    let Some(fs) = LoopFs::try_new(FsKind::Xfs, 512) else {
        return;
    };
    let t = fs.path().join("t");
    space_tree(&t, &fs.path().join("out"), 10, true).expect("tree");
    // `b/orig-link` is a hard link of `a/orig`.
    let (a, b) = (t.join("a"), t.join("b"));
    let run = mimeo_du(&[OsStr::new("-s"), a.as_os_str(), b.as_os_str()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let p = run.paths();
    let orig = expected_usage(&t.join("a/orig")).unwrap();
    let total = run.total();
    assert_eq!(total.files, p[0].files + p[1].files - 1);
    assert_eq!(total.total, p[0].total + p[1].total - orig.total);
    let both = expected_usage(&t).unwrap();
    // a and b hold all of t's data but c and d.
    let (c, d) = (
        expected_usage(&t.join("c")).unwrap(),
        expected_usage(&t.join("d")).unwrap(),
    );
    assert_eq!(total.total, both.total - c.total - d.total);
}

#[test]
fn one_file_system_stays_off_other_mounts() {
    let Some(fs) = LoopFs::try_new(FsKind::Btrfs, 256) else {
        return;
    };
    let Some(other) = LoopFs::try_new(FsKind::Ext4, 64) else {
        return;
    };
    let t = fs.path().join("t");
    space_tree(&t, &fs.path().join("out"), 11, true).expect("tree");
    std::fs::write(other.path().join("big"), vec![1u8; 1 << 20]).unwrap();
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
    let all = mimeo_du(&[OsStr::new("-s"), t.as_os_str()]);
    let one = mimeo_du(&[OsStr::new("-s"), OsStr::new("-x"), t.as_os_str()]);
    run_ok("umount", &[mnt.as_os_str()]);
    assert_eq!(
        (all.code, one.code),
        (0, 0),
        "{} {}",
        all.stderr,
        one.stderr
    );
    assert_eq!(all.paths()[0].total, one.paths()[0].total + (1 << 20));
    assert_eq!(all.paths()[0].files, one.paths()[0].files + 1);
}

#[test]
fn works_unprivileged_on_readable_files_and_reports_the_rest() {
    let Some(fs) = LoopFs::try_new(FsKind::Btrfs, 256) else {
        return;
    };
    // The mount point's parent is private to root; let others through.
    let parent = fs.path().parent().unwrap();
    std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = fs.path().join("t");
    space_tree(&t, &fs.path().join("out"), 12, true).expect("tree");
    let as_root = mimeo_du(&[OsStr::new("-s"), t.as_os_str()]);
    let nobody = run_as(Some(65534), &[OsStr::new("-s"), t.as_os_str()]);
    assert_eq!((as_root.code, nobody.code), (0, 0), "{}", nobody.stderr);
    assert_eq!(as_root.paths(), nobody.paths());
    // A file it may not read is reported with its path; the rest is counted.
    let secret = t.join("c/five-k");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let partial = run_as(Some(65534), &[OsStr::new("-s"), t.as_os_str()]);
    assert_eq!(partial.code, 1);
    let errors = partial.of("error");
    assert_eq!(errors.len(), 1, "{:#?}", partial.lines);
    assert_eq!(errors[0]["path"].as_str(), secret.to_str());
    assert_eq!(errors[0]["errno"].as_i64(), Some(i64::from(libc::EACCES)));
    let five_k = expected_usage(&secret).unwrap();
    assert_eq!(
        partial.paths()[0].total,
        as_root.paths()[0].total - five_k.total
    );
    // A fresh clone by the user is theirs to measure too.
    let mine = fs.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    clone_file(&t.join("a/orig"), &mine.join("c"), true).unwrap();
    run_ok(
        "chown",
        &[
            OsStr::new("-R"),
            OsStr::new("65534:65534"),
            mine.as_os_str(),
        ],
    );
    let own = run_as(Some(65534), &[mine.as_os_str()]);
    assert_eq!(own.code, 0);
    assert_eq!(own.paths()[0].shared, expected_usage(&mine).unwrap().shared);
}

/// `mimeo-du ARGS` as text.
fn du_text(args: &[&OsStr]) -> mimeo_testkit::Captured {
    capture(Command::new(env!("CARGO_BIN_EXE_mimeo-du")).args(args)).unwrap()
}

/// The first field of each line after the header, and its last, the name.
fn totals(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip(1)
        .map(|l| {
            let total = l.split_whitespace().next().unwrap_or_default().to_owned();
            let name = l.split_once("  ").map_or("", |(_, r)| r).trim_start();
            let name = name.rsplit_once("  ").map_or(name, |(_, n)| n);
            (total, name.to_owned())
        })
        .collect()
}

#[test]
fn sizes_and_options_follow_du() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    // Random bytes, so that every block is data on any filesystem, and whole blocks, so that
    // du's apparent size (-b) is the size of the data.
    random_bytes(&f, (3 << 20) + 8 * 1024);
    run_ok("sync", &[] as &[&str]);
    for flags in [
        &["-sh"][..],
        &["-s", "-h"],
        &["--summ", "--si"],
        &["-sb"],
        &["-s"],
        &["-sk"],
        &["-sh", "-b"],
        &["-sb", "-h"],
    ] {
        let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
        args.push(f.as_os_str());
        let mine = du_text(&args);
        let du = capture(Command::new("du").args(&args)).unwrap();
        assert!(mine.success() && du.success(), "{mine}\n{du}");
        let (size, name) = du.stdout.trim_end().split_once('\t').unwrap();
        assert_eq!(
            totals(&mine.stdout),
            [(size.to_owned(), name.to_owned())],
            "{flags:?}: {mine}\n{du}"
        );
    }
    // -c adds a total line; the help is on --help only.
    let with_total = du_text(&[OsStr::new("-sc"), f.as_os_str(), dir.path().as_os_str()]);
    let lines = totals(&with_total.stdout);
    assert_eq!(lines.len(), 3, "{with_total}");
    assert_eq!(lines[2].1, "total", "{with_total}");
    assert_eq!(
        totals(&du_text(&[OsStr::new("-s"), f.as_os_str(), f.as_os_str()]).stdout).len(),
        2
    );
    let help = du_text(&[OsStr::new("--help")]);
    assert!(
        help.success() && help.stdout.contains("-h, --human-readable"),
        "{help}"
    );
}

#[test]
fn messages_names_and_streams_as_in_the_family() {
    let dir = tempfile::tempdir().unwrap();
    let bad = du_text(&[OsStr::new("--no-such-flag")]);
    assert_eq!(bad.code(), 2, "{bad}");
    assert_eq!(
        bad.stderr,
        "mimeo-du: unrecognized option '--no-such-flag'\nTry 'mimeo-du --help' for more information.\n"
    );
    // With --json, the usage error is an error object too, and the total comes last.
    let json = mimeo_du(&[OsStr::new("--no-such-flag")]);
    assert_eq!(json.code, 2);
    assert_eq!(json.lines.len(), 2, "{:?}", json.lines);
    assert_eq!(json.lines[0]["operation"], "usage");
    assert_eq!(json.lines[1]["type"], "total");
    assert_eq!(json.lines[1]["errors"], 1);
    let missing = du_text(&[dir.path().join("missing").as_os_str()]);
    assert_eq!(missing.code(), 1, "{missing}");
    // Names a terminal would act on are quoted; JSON names are lossless.
    let hostile = dir.path().join(OsStr::from_bytes(b"x\x1b]0;pwned\x07"));
    std::fs::write(&hostile, b"x").unwrap();
    let text = du_text(&[OsStr::new("-s"), hostile.as_os_str()]);
    assert!(
        text.stdout.contains("x'$'\\033'']0;pwned'$'\\a'\n"),
        "{text}"
    );
    let raw = dir.path().join(OsStr::from_bytes(b"x\xff\ny"));
    std::fs::write(&raw, b"x").unwrap();
    let json = mimeo_du(&[OsStr::new("-s"), raw.as_os_str()]);
    let hex: String = raw
        .as_os_str()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        json.of("path")[0]["path"],
        serde_json::json!({ "hex": hex })
    );
    // --progress takes an optional value; a full stdout is a write error, as for du.
    let progress = du_text(&[OsStr::new("--progress"), OsStr::new("-s"), raw.as_os_str()]);
    assert_eq!(progress.code(), 0, "{progress}");
    for redirect in [">/dev/full", ">&-"] {
        let script = format!("exec \"$0\" -s \"$1\" {redirect}");
        let mine = capture(
            Command::new("sh")
                .args(["-c", &script, env!("CARGO_BIN_EXE_mimeo-du")])
                .arg(&raw),
        )
        .unwrap();
        let du = capture(Command::new("sh").args(["-c", &script, "du"]).arg(&raw)).unwrap();
        assert_eq!((mine.code(), du.code()), (1, 1), "{mine}\n{du}");
        assert!(mine.stderr.starts_with("mimeo-du: write error: "), "{mine}");
    }
    let man = du_text(&[OsStr::new("--generate"), OsStr::new("man")]);
    for section in [
        ".SH SYNOPSIS",
        ".SH \"EXIT STATUS\"",
        ".SH EXAMPLES",
        "human\\-readable",
    ] {
        assert!(man.stdout.contains(section), "{section}: {man}");
    }
}

/// `len` random bytes in `path`.
fn random_bytes(path: &Path, len: usize) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(path, bytes).unwrap();
}
