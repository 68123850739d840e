//! The reporting and safety options, driven through the real binary:
//! `--json` and `--stats` counts, `--dry-run`, the progress bar under a
//! pseudo-terminal, `--verify`, SIGINT/SIGTERM/SIGKILL followed by
//! `--update`, `--nocache`, `--sync`, exit 24 for vanished sources and
//! `--generate`.

mod util;

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::thread;
use std::time::Duration;

use mimeo_testkit::cmd::have_program;
use mimeo_testkit::compare::first_difference;
use mimeo_testkit::oracle::{Allow, assert_trees_equal};
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{
    CompareOptions, FsKind, GenOptions, GenStats, LoopFs, capture, compare_trees, generate, run_ok,
};
use serde_json::Value;
use util::tree::regular_files;
use util::{
    Run, assert_no_half_files, copy_json, finish, meta, random_file, run, run_fp, signal, spawn_fp,
    wait_for,
};

/// `MIMEO_FAILPOINTS` that turn a copy into a stream (no offload) and slow
/// every buffer write down.
const SLOW_STREAM: &str = "copy_file_range=return(EXDEV);write=sleep(20)";

fn path_arg(p: &Path) -> &str {
    p.to_str().expect("UTF-8 test path")
}

/// `files` files of 16–256 KiB of seeded data with assorted modes, spread
/// over ten directories: a tree whose copy can be interrupted mid-way.
fn medium_tree(root: &Path, files: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    for i in 0..files {
        let dir = root.join(format!("d{}", i % 10));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("f{i:04}"));
        let mut data = vec![0u8; rng.range(16 << 10, 256 << 10) as usize];
        rng.fill(&mut data);
        fs::write(&path, &data).unwrap();
        let mode = *rng.pick(&[0o644, 0o600, 0o755, 0o640]);
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn is_temp(path: &Path) -> bool {
    path.file_name().is_some_and(util::is_scratch)
}

/// A generated tree with files of at most 1 MiB.
fn gen_tree(root: &Path, seed: u64, entries: usize) -> GenStats {
    let opts = GenOptions {
        max_file_size: 1 << 20,
        ..GenOptions::new(seed, entries)
    };
    generate(root, &opts).unwrap()
}

// ---------------------------------------------------------------------------
// --json and --stats
// ---------------------------------------------------------------------------

/// Sums a numeric field over `events`.
fn sum(events: &[&Value], field: &str) -> u64 {
    events.iter().map(|e| e[field].as_u64().unwrap()).sum()
}

#[test]
fn json_summary_counts_the_generated_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    let stats = gen_tree(&src, 11, 160);
    let r = copy_json(&["-aT"], &src, &dst);
    r.expect_code(0);
    let want = [
        ("files", stats.files as u64),
        ("directories", stats.dirs as u64 + 1),
        ("symlinks", stats.symlinks as u64),
        ("hard_links", stats.hard_links as u64),
        ("specials", stats.specials as u64),
        ("skipped", 0),
        ("errors", 0),
        ("vanished", 0),
    ];
    for (field, n) in want {
        assert_eq!(r.count(field), n, "summary {field} ({stats:?}): {r:#?}");
    }
    assert_eq!(r.summary()["interrupted"], false);
    assert!(r.summary()["elapsed_s"].as_f64().unwrap() >= 0.0);
    // bytes is the data written, hole_bytes the rest of the files' sizes.
    assert_eq!(
        r.count("bytes") + r.count("hole_bytes"),
        stats.bytes,
        "{r:#?}"
    );
    let methods = ["clone", "offload", "stream"];
    let by_method: u64 = methods
        .iter()
        .map(|m| r.count(&format!("by_method.{m}")))
        .sum();
    assert_eq!(by_method, r.count("bytes"), "{r:#?}");

    // One `copied` event per entry, consistent with the summary.
    let copied = r.events("copied");
    let of_kind = |kinds: &[&str]| -> Vec<&Value> {
        copied
            .iter()
            .copied()
            .filter(|e| kinds.iter().any(|k| e["kind"] == *k))
            .collect()
    };
    let files = of_kind(&["file"]);
    assert_eq!(files.len() as u64, r.count("files"));
    assert_eq!(of_kind(&["directory"]).len() as u64, r.count("directories"));
    assert_eq!(of_kind(&["symlink"]).len() as u64, r.count("symlinks"));
    assert_eq!(of_kind(&["hard_link"]).len() as u64, r.count("hard_links"));
    let specials = ["fifo", "socket", "char_device", "block_device"];
    assert_eq!(of_kind(&specials).len() as u64, r.count("specials"));
    assert_eq!(
        copied.len(),
        r.json.len() - 1,
        "only copied events expected"
    );
    assert_eq!(sum(&files, "bytes"), r.count("bytes"));
    assert_eq!(sum(&files, "hole_bytes"), r.count("hole_bytes"));
    for m in methods {
        let by: Vec<&Value> = files.iter().copied().filter(|e| e["method"] == m).collect();
        assert_eq!(by.len() as u64, r.count(&format!("files_by_method.{m}")));
        assert_eq!(sum(&by, "bytes"), r.count(&format!("by_method.{m}")));
    }
    for e in &copied {
        // Names are strings, or {"hex":…} where they are not UTF-8.
        util::json_path(&e["src"]);
        util::json_path(&e["dst"]);
        let is_file = e["kind"] == "file";
        assert_eq!(e["method"].is_string(), is_file, "{e}");
        assert_eq!(e["bytes"].is_u64(), is_file, "{e}");
    }
}

#[test]
fn json_reports_a_failed_file_and_copies_the_rest() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 100) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    fs::create_dir(&src).unwrap();
    for i in 0..8 {
        random_file(&src.join(format!("f{i}")), 64 << 10);
    }
    // On ext4 every file is offloaded; the first offload fails with EIO,
    // whichever file it is.
    let r = run_fp(
        "copy_file_range=1*return(EIO)",
        &[
            "-aT".as_ref(),
            "--json".as_ref(),
            src.as_os_str(),
            dst.as_os_str(),
        ],
    );
    r.expect_code(1);
    let errors = r.events("error");
    assert_eq!(errors.len(), 1, "{r:#?}");
    let e = errors[0];
    let name = util::json_name(&e["path"]);
    let path = name.as_str();
    assert!(path.starts_with(path_arg(&dst)), "{e}");
    assert!(!e["operation"].as_str().unwrap().is_empty(), "{e}");
    assert!(!e["message"].as_str().unwrap().is_empty(), "{e}");
    assert_eq!(e["errno"], libc::EIO, "{e}");
    assert!(r.stderr.contains(path), "{r:#?}");
    assert_eq!(r.count("errors"), 1);
    assert_eq!(r.count("vanished"), 0);
    assert_eq!(r.count("files"), 7);
    // The failed file is gone, the others are whole.
    assert!(!Path::new(path).exists(), "failed file left behind: {path}");
    let copied = assert_no_half_files("after failures", &src, &dst, &Allow::default());
    assert_eq!(copied.complete, 7);
}

#[test]
fn stats_prints_the_same_counts_as_json() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let stats = gen_tree(&src, 12, 80);
    let j = copy_json(&["-aT"], &src, &tmp.path().join("a"));
    j.expect_code(0);
    let t = run(&[
        "-aT".as_ref(),
        "--stats".as_ref(),
        src.as_os_str(),
        tmp.path().join("b").as_os_str(),
    ]);
    t.expect_code(0);
    let first = format!(
        "copied: {} files, {} directories, {} symlinks, {} hard links, {} special files",
        stats.files,
        stats.dirs + 1,
        stats.symlinks,
        stats.hard_links,
        stats.specials
    );
    assert!(t.stdout.starts_with(&first), "{t:#?}");
    assert!(t.stdout.contains("errors: 0 (0 vanished)"), "{t:#?}");
    for (label, m) in [
        ("cloned", "clone"),
        ("offloaded", "offload"),
        ("streamed", "stream"),
    ] {
        let files = j.count(&format!("files_by_method.{m}"));
        let line = t
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line: {t:#?}"));
        assert!(line.ends_with(&format!(" in {files} files")), "{line}");
    }
}

// ---------------------------------------------------------------------------
// --dry-run
// ---------------------------------------------------------------------------

/// The planned actions of a `--dry-run --json` run, by destination path.
fn planned(r: &Run) -> BTreeMap<String, (String, String)> {
    r.events("planned")
        .into_iter()
        .map(|e| {
            let dst = util::json_name(&e["dst"]);
            let kind = e["kind"].as_str().unwrap().to_owned();
            let action = e["action"].as_str().unwrap().to_owned();
            (dst, (kind, action))
        })
        .collect()
}

/// Runs `mimeo --dry-run flags... src dst` in `cwd` as JSON and as text and
/// checks that neither touched `dst` (compared with `snapshot`, or absent
/// when there is none). Returns the JSON run.
#[track_caller]
fn dry_run(cwd: &Path, flags: &[&str], snapshot: Option<&Path>) -> Run {
    let mut args = vec!["--json", "--dry-run"];
    args.extend(flags);
    args.extend(["src", "dst"]);
    let r = util::run_in(Some(cwd), &args);
    r.expect_code(0);
    assert_eq!(r.count("errors"), 0);
    assert_eq!(r.count("bytes"), 0, "a dry run copies nothing");
    // The text form lists the same actions.
    let text = util::run_in(Some(cwd), &args[1..]);
    text.expect_code(0);
    // Every name is quoted as cp quotes it, so a newline in one does not split its line.
    for e in r.events("planned") {
        let dst = mimeo::quote(util::json_path(&e["dst"]));
        let kind = e["kind"].as_str().unwrap().replace('_', " ");
        let action = e["action"].as_str().unwrap();
        let line = format!("would {action} {kind} {dst} (from ");
        assert!(
            text.stdout.lines().any(|l| l.starts_with(&line)),
            "no line {line:?} in:\n{}",
            text.stdout
        );
    }
    let dst = cwd.join("dst");
    match snapshot {
        Some(before) => assert_trees_equal("copy", before, &dst, &CompareOptions::default()),
        None => assert!(!dst.exists(), "a dry run created {dst:?}"),
    }
    r
}

#[test]
fn dry_run_changes_nothing_and_lists_the_actions() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 200) else {
        return;
    };
    let root = fs.path();
    let (src, dst) = (root.join("src"), root.join("dst"));
    let stats = gen_tree(&src.join("gen"), 21, 120);
    fs::write(src.join("keep"), b"same").unwrap();
    fs::write(src.join("changed"), b"old").unwrap();
    fs::create_dir(src.join("sub")).unwrap();
    fs::write(src.join("sub/inner"), b"inner").unwrap();
    std::os::unix::fs::symlink("keep", src.join("link")).unwrap();

    // Nothing exists yet: everything would be created.
    let fresh = dry_run(root, &["-aT"], None);
    let gen_entries = stats.files + stats.dirs + stats.symlinks + stats.hard_links + stats.specials;
    // The roots (dst, dst/gen), the generated entries and five more.
    assert_eq!(fresh.events("planned").len(), 2 + gen_entries + 5);
    let plan = planned(&fresh);
    assert!(plan.values().all(|(_, a)| a == "create"), "{plan:#?}");
    for name in [
        "dst",
        "dst/keep",
        "dst/changed",
        "dst/sub/inner",
        "dst/link",
    ] {
        assert!(plan.contains_key(name), "{name} missing: {plan:#?}");
    }
    assert_eq!(plan["dst/sub"], ("directory".into(), "create".into()));
    assert_eq!(plan["dst/link"], ("symlink".into(), "create".into()));

    // Copy, then change the source: a longer file, a new file, a new
    // directory with a file.
    copy_json(&["-aT"], &src, &dst).expect_code(0);
    fs::write(src.join("changed"), b"new and longer").unwrap();
    fs::write(src.join("new"), b"fresh").unwrap();
    fs::create_dir(src.join("sub/newsub")).unwrap();
    fs::write(src.join("sub/newsub/deep"), b"deep").unwrap();
    let snap_dir = tempfile::tempdir_in(root).unwrap();
    let snapshot = snap_dir.path().join("dst");
    run_ok("cp", &["-a", path_arg(&dst), path_arg(&snapshot)]);
    assert_trees_equal("copy", &dst, &snapshot, &CompareOptions::default());

    let action = |plan: &BTreeMap<String, (String, String)>, p: &str| -> String {
        plan.get(p)
            .unwrap_or_else(|| panic!("{p} not planned: {plan:#?}"))
            .1
            .clone()
    };
    let mut expected = BTreeMap::new();
    for (flags, keep, changed) in [
        (&["-aT", "-u"][..], "skip", "replace"),
        (&["-aT", "-n"][..], "skip", "skip"),
        (&["-aT"][..], "replace", "replace"),
    ] {
        let plan = planned(&dry_run(root, flags, Some(&snapshot)));
        expected.clear();
        expected.insert("dst", "merge");
        expected.insert("dst/sub", "merge");
        expected.insert("dst/keep", keep);
        expected.insert("dst/sub/inner", keep);
        expected.insert("dst/link", keep);
        expected.insert("dst/changed", changed);
        expected.insert("dst/new", "create");
        expected.insert("dst/sub/newsub", "create");
        expected.insert("dst/sub/newsub/deep", "create");
        for (p, want) in &expected {
            assert_eq!(action(&plan, p), *want, "{p} with {flags:?}: {plan:#?}");
        }
        // The unchanged generated part: directories merge, the rest is
        // skipped under -u/-n and replaced otherwise.
        for (p, (kind, a)) in plan.range("dst/gen".to_owned()..) {
            if !p.starts_with("dst/gen") {
                break;
            }
            let want = match kind.as_str() {
                "directory" => "merge",
                _ => keep,
            };
            assert_eq!(a, want, "{p} ({kind}) with {flags:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// Progress bar
// ---------------------------------------------------------------------------

/// Runs `mimeo args...` under a pseudo-terminal (util-linux `script`), slowed
/// by [`SLOW_STREAM`], and returns what the terminal showed.
fn in_terminal(args: &[&str]) -> String {
    let mut line = String::from(env!("CARGO_BIN_EXE_mimeo"));
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let out = capture(
        Command::new("script")
            .args(["-qfec", &line, "/dev/null"])
            .env("MIMEO_FAILPOINTS", SLOW_STREAM),
    )
    .expect("cannot run script");
    assert!(out.success(), "{out}");
    out.stdout
}

#[test]
fn progress_bar_draws_on_a_terminal_only() {
    if !have_program("script") {
        eprintln!("SKIPPED progress_bar_draws_on_a_terminal_only: no script(1)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("big");
    random_file(&src, 8 << 20);
    let dst = |name: &str| tmp.path().join(name).to_str().unwrap().to_owned();
    let s = path_arg(&src);

    let shown = in_terminal(&[s, &dst("auto")]);
    let percent = shown
        .split('%')
        .any(|before| before.ends_with(|c: char| c.is_ascii_digit()));
    assert!(percent, "no percentage drawn:\n{shown:?}");
    assert!(shown.contains("B/s"), "no rate drawn:\n{shown:?}");
    assert!(shown.contains("entries"), "no entry counts:\n{shown:?}");
    util::assert_same_bytes(&src, Path::new(&dst("auto")));

    for quiet in [&["-q"][..], &["--progress=never"][..]] {
        let mut args = quiet.to_vec();
        let d = dst(&quiet[0].replace('-', ""));
        args.extend([s, &d]);
        let shown = in_terminal(&args);
        assert_eq!(shown.trim(), "", "{quiet:?} still drew on the terminal");
        util::assert_same_bytes(&src, Path::new(&d));
    }

    // Not a terminal: auto draws nothing.
    let r = run_fp(SLOW_STREAM, &[s, &dst("pipe")]);
    r.expect_code(0);
    assert_eq!(r.stderr, "", "progress drawn without a terminal");
}

// ---------------------------------------------------------------------------
// --verify
// ---------------------------------------------------------------------------

/// Copies a generated tree with `--verify` and checks the method used, the
/// absence of errors and the result.
#[track_caller]
fn verified_copy(src: &Path, dst: &Path, method: &str) {
    let r = copy_json(&["-aT", "--verify"], src, dst);
    r.expect_code(0);
    assert_eq!(r.count("errors"), 0);
    assert!(r.events("error").is_empty(), "{r:#?}");
    let data_files: Vec<&Value> = r
        .events("copied")
        .into_iter()
        .filter(|e| e["kind"] == "file" && e["bytes"].as_u64().unwrap() > 0)
        .collect();
    assert!(!data_files.is_empty());
    for e in data_files {
        assert_eq!(e["method"], method, "{e}");
    }
    assert_trees_equal("copy", src, dst, &CompareOptions::default());
}

#[test]
fn verify_passes_for_clones_offloads_and_streams() {
    let fss: Vec<LoopFs> = FsKind::ALL
        .iter()
        .filter_map(|&k| LoopFs::try_new(k, 300))
        .collect();
    let on = |kind| fss.iter().find(|f| f.kind() == kind);
    for fs in &fss {
        let src = fs.path().join("src");
        gen_tree(&src, 31, 100);
        let method = if fs.kind().reflinks() {
            "clone"
        } else {
            "offload"
        };
        verified_copy(&src, &fs.path().join("dst"), method);
    }
    // Across filesystems copy_file_range fails with EXDEV: a stream. (Not
    // into XFS, which lists ACLs also as trusted.SGI_ACL_* attributes.)
    if let (Some(ext4), Some(btrfs)) = (on(FsKind::Ext4), on(FsKind::Btrfs)) {
        verified_copy(&ext4.path().join("src"), &btrfs.path().join("x"), "stream");
    }
}

/// Copies an 8 MiB file by slowed streaming and flips its first byte in the
/// destination once the copy has written past it, so the copy differs from
/// the source without the engine having seen an error.
fn copy_with_flipped_byte(
    extra: &[&str],
) -> (ExitStatus, Run, PathBuf, PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    random_file(&src, 8 << 20);
    let mut args = vec!["--json"];
    args.extend(extra);
    args.extend([path_arg(&src), path_arg(&dst)]);
    let child = spawn_fp(SLOW_STREAM, &args);
    wait_for(30, "the copy is past its first MiB", || {
        fs::symlink_metadata(&dst).is_ok_and(|m| m.len() >= 1 << 20)
    });
    let f = OpenOptions::new().write(true).open(&dst).unwrap();
    let mut byte = [0u8];
    File::open(&src).unwrap().read_at(&mut byte, 0).unwrap();
    f.write_at(&[!byte[0]], 0).unwrap();
    drop(f);
    let (status, run) = finish(child);
    (status, run, src, dst, tmp)
}

#[test]
fn verify_catches_a_byte_flipped_during_the_copy() {
    // Without --verify the corruption goes unnoticed.
    let (status, out, src, dst, _tmp) = copy_with_flipped_byte(&[]);
    assert_eq!(status.code(), Some(0), "{out:?}");
    assert_eq!(first_difference(&src, &dst, 8 << 20).unwrap(), Some(0));

    let (status, out, src, dst, _tmp) = copy_with_flipped_byte(&["--verify"]);
    let stdout = &out.stdout;
    assert_eq!(status.code(), Some(1), "{out:?}");
    let err: Value = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "error")
        .unwrap_or_else(|| panic!("no error reported: {stdout}"));
    assert_eq!(err["operation"], "verify", "{err}");
    assert_eq!(err["path"], path_arg(&dst), "{err}");
    assert!(out.stderr.contains(path_arg(&dst)), "{}", out.stderr);
    assert!(
        !dst.exists(),
        "the mismatching copy was kept: {:?}",
        first_difference(&src, &dst, 8 << 20)
    );
}

// ---------------------------------------------------------------------------
// Signals and --update after an interruption
// ---------------------------------------------------------------------------

/// Slows every offloaded chunk (ext4) a little, so a tree copy lasts long
/// enough to be interrupted.
const SLOW_OFFLOAD: &str = "copy_file_range=sleep(15)";

/// Interrupts a copy of a medium tree with `sig` once some files are done,
/// checks the exit status and that nothing partial is left, then completes
/// it with `--update`.
fn interrupt_and_update(sig: rustix::process::Signal, code: i32) {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 300) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    medium_tree(&src, 300, 41);
    let child = spawn_fp(SLOW_OFFLOAD, &["-aT", path_arg(&src), path_arg(&dst)]);
    wait_for(30, "some files are copied", || {
        dst.exists() && regular_files(&dst).len() >= 20
    });
    signal(&child, sig);
    let (status, out) = finish(child);
    assert_eq!(status.code(), Some(code), "{out:?}");
    let done = assert_no_half_files("stopped", &src, &dst, &Allow::default()).complete;
    assert!(done < 300, "the run finished before the signal");

    let r = run(&["-aT", "--update", path_arg(&src), path_arg(&dst)]);
    r.expect_code(0);
    assert_trees_equal("copy", &src, &dst, &CompareOptions::default());
}

#[test]
fn sigint_exits_130_without_partial_files() {
    interrupt_and_update(rustix::process::Signal::INT, 130);
}

#[test]
fn sigterm_exits_143_without_partial_files() {
    interrupt_and_update(rustix::process::Signal::TERM, 143);
}

#[test]
fn sigterm_during_replacement_keeps_old_or_new_and_no_temporaries() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 300) else {
        return;
    };
    let root = fs.path();
    let (old, src, dst) = (root.join("old"), root.join("src"), root.join("dst"));
    medium_tree(&old, 120, 51);
    medium_tree(&src, 120, 52);
    run(&["-aT", path_arg(&old), path_arg(&dst)]).expect_code(0);
    // Every file differs in size, so each one is replaced through a
    // temporary and a rename.
    let child = spawn_fp(SLOW_OFFLOAD, &["-aT", path_arg(&src), path_arg(&dst)]);
    wait_for(30, "a replacement is in progress", || {
        fs::read_dir(dst.join("d0"))
            .unwrap()
            .any(|e| is_temp(&e.unwrap().path()))
    });
    thread::sleep(Duration::from_millis(100));
    signal(&child, rustix::process::Signal::TERM);
    let (status, out) = finish(child);
    assert_eq!(status.code(), Some(143), "{out:?}");
    let (mut new, mut kept) = (0, 0);
    for file in regular_files(&dst) {
        assert!(!is_temp(&file), "temporary left behind: {file:?}");
        let rel = file.strip_prefix(&dst).unwrap();
        let len = meta(&file).len();
        let same_as = |tree: &Path| {
            meta(&tree.join(rel)).len() == len
                && first_difference(&tree.join(rel), &file, len)
                    .unwrap()
                    .is_none()
        };
        if same_as(&src) {
            new += 1;
        } else {
            assert!(
                same_as(&old),
                "{file:?} is neither the old nor the new file"
            );
            kept += 1;
        }
    }
    assert_eq!(new + kept, 120);
    assert!(kept > 0, "the run finished before the signal");
    run(&["-aT", "--update", path_arg(&src), path_arg(&dst)]).expect_code(0);
    assert_trees_equal("copy", &src, &dst, &CompareOptions::default());
}

#[test]
fn sigkill_at_random_moments_then_update_completes_the_tree() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 300) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    medium_tree(&src, 300, 61);
    let mut rng = Rng::new(0x5161_c111);
    // (delay in ms, killed mid-run, complete files, files marked incomplete)
    let mut history = Vec::new();
    for round in 0..5 {
        let mut args = vec!["-aT", path_arg(&src), path_arg(&dst)];
        if round > 0 {
            args.insert(1, "--update");
        }
        let mut child = spawn_fp(SLOW_OFFLOAD, &args);
        let delay = rng.range(20, 250);
        thread::sleep(Duration::from_millis(delay));
        child.kill().unwrap();
        let killed = child.wait().unwrap().signal() == Some(libc::SIGKILL);
        let (complete, marked) = if dst.exists() {
            let allow = Allow {
                temps: true,
                marked: true,
                stale: None,
            };
            let h = assert_no_half_files(&format!("round {round}"), &src, &dst, &allow);
            (h.complete, h.incomplete)
        } else {
            (0, 0)
        };
        history.push((delay, killed, complete, marked));
    }
    // The recovery below must have had incomplete files to finish.
    assert!(
        history.iter().any(|h| h.1 && h.3 > 0),
        "no run was killed mid-file: {history:?}"
    );
    let r = run(&["-aT", "--update", "--json", path_arg(&src), path_arg(&dst)]);
    r.expect_code(0);
    let cmp = compare_trees(&src, &dst, &CompareOptions::default()).unwrap();
    assert!(cmp.is_equal(), "after SIGKILLs {history:?}:\n{cmp}");
}

/// A file whose times have not been set yet must not look complete: a
/// SIGKILL between the final chmod and utimensat must not leave a copy
/// that `--update` takes for up to date.
#[test]
fn sigkill_before_times_are_set_is_finished_by_update() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    fs::create_dir(&src).unwrap();
    random_file(&src.join("f"), 100_000);
    util::tree::fixed_times(&src.join("f"));
    util::tree::fixed_times(&src);
    let mut child = spawn_fp(
        "utimensat=sleep(3000)",
        &["-aT", path_arg(&src), path_arg(&dst)],
    );
    wait_for(30, "the file has its data", || {
        fs::symlink_metadata(dst.join("f")).is_ok_and(|m| m.len() == 100_000)
    });
    thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    run(&["-aT", "--update", path_arg(&src), path_arg(&dst)]).expect_code(0);
    let opts = CompareOptions {
        atime: false,
        ..CompareOptions::default()
    };
    compare_trees(&src, &dst, &opts).unwrap().assert_equal();
}

// ---------------------------------------------------------------------------
// --nocache, --sync
// ---------------------------------------------------------------------------

/// Bytes of `path` resident in the page cache (util-linux `fincore`).
fn resident(path: &Path) -> u64 {
    let out = run_ok(
        "fincore",
        &["--bytes", "--noheadings", "--output", "RES", path_arg(path)],
    );
    out.stdout.trim().parse().unwrap()
}

/// Writes back and drops `path` from the page cache.
fn evict(path: &Path) {
    let f = File::open(path).unwrap();
    f.sync_all().unwrap();
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
}

/// Copies `src` to `dst` (removed first) with `flags` by `method` and
/// returns the bytes of each side left in the page cache.
fn cached_after_copy(src: &Path, dst: &Path, method: &str, flags: &[&str]) -> (u64, u64) {
    let _ = fs::remove_file(dst);
    evict(src);
    assert_eq!(resident(src), 0, "cannot evict {src:?}");
    let mut args = flags.to_vec();
    args.extend(["--json", path_arg(src), path_arg(dst)]);
    let r = run(&args);
    r.expect_code(0);
    assert_eq!(r.count(&format!("files_by_method.{method}")), 1, "{r:#?}");
    // Measured before the comparison, which reads both files.
    let cached = (resident(src), resident(dst));
    util::assert_same_bytes(src, dst);
    cached
}

#[test]
fn nocache_leaves_little_in_the_page_cache() {
    if !have_program("fincore") {
        eprintln!("SKIPPED nocache_leaves_little_in_the_page_cache: no fincore");
        return;
    }
    let Some(a) = LoopFs::try_new(FsKind::Ext4, 300) else {
        return;
    };
    let Some(b) = LoopFs::try_new(FsKind::Ext4, 300) else {
        return;
    };
    const SIZE: u64 = 64 << 20;
    let src = a.path().join("src");
    random_file(&src, SIZE);
    // Offload within one filesystem, streaming across two.
    for (dst, method) in [
        (a.path().join("dst"), "offload"),
        (b.path().join("dst"), "stream"),
    ] {
        let (s, d) = cached_after_copy(&src, &dst, method, &[]);
        assert!(
            s > SIZE / 2 && d > SIZE / 2,
            "{method}: without --nocache expected both sides cached, got {s} and {d}"
        );
        let (s, d) = cached_after_copy(&src, &dst, method, &["--nocache"]);
        assert!(
            s <= SIZE / 16 && d <= SIZE / 16,
            "{method}: --nocache left {s} (source) and {d} (copy) bytes cached"
        );
    }
}

#[test]
fn sync_copies_the_tree_without_errors() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 200) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    let stats = gen_tree(&src, 71, 120);
    let r = copy_json(&["-aT", "--sync"], &src, &dst);
    r.expect_code(0);
    assert_eq!(r.count("errors"), 0);
    assert_eq!(r.count("files"), stats.files as u64);
    assert_trees_equal("copy", &src, &dst, &CompareOptions::default());
}

// ---------------------------------------------------------------------------
// Exit 24, --generate
// ---------------------------------------------------------------------------

#[test]
fn exit_24_when_only_vanished_sources_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    fs::create_dir(&src).unwrap();
    for i in 0..20 {
        random_file(&src.join(format!("f{i:02}")), 4096);
    }
    // One worker, each file slowed by 100 ms: once the first copy exists the
    // directory has been listed, and every source not yet copied is deleted
    // under the run.
    let child = spawn_fp(
        "clone=sleep(100);copy_file_range=sleep(100);write=sleep(100)",
        &["-aT", "-j1", "--json", path_arg(&src), path_arg(&dst)],
    );
    wait_for(30, "the first file is being copied", || {
        dst.exists() && fs::read_dir(&dst).unwrap().next().is_some()
    });
    // A source whose copy is already under way (opened between the check and the move) is
    // still copied whole from its open descriptor. So sources are moved aside, not deleted:
    // whichever way each one went, its copy can be checked against it.
    let aside = tmp.path().join("aside");
    fs::create_dir(&aside).unwrap();
    let mut removed = 0;
    for i in 0..20 {
        let name = format!("f{i:02}");
        if !dst.join(&name).exists() {
            fs::rename(src.join(&name), aside.join(&name)).unwrap();
            removed += 1;
        }
    }
    assert!(removed > 0);
    let (status, out) = finish(child);
    let stdout = &out.stdout;
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary = lines.last().unwrap();
    let vanished = summary["vanished"].as_u64().unwrap();
    assert!(vanished > 0, "no source reported vanished: {stdout}");
    assert_eq!(summary["errors"], summary["vanished"], "{stdout}");
    for e in lines.iter().filter(|v| v["type"] == "error") {
        assert_eq!(e["operation"], "vanished", "{e}");
        assert_eq!(e["errno"], libc::ENOENT, "{e}");
    }
    assert_eq!(status.code(), Some(24), "{stdout}");
    // Every copy is complete and equal to its source, wherever that source is now.
    for entry in fs::read_dir(&aside).unwrap() {
        let name = entry.unwrap().file_name();
        fs::rename(aside.join(&name), src.join(&name)).unwrap();
    }
    assert_no_half_files("vanished sources", &src, &dst, &Allow::default());
}

#[test]
fn generate_man_page_and_completions() {
    let man = run(&["--generate", "man"]);
    man.expect_code(0);
    assert!(man.stdout.contains(".TH mimeo"), "{}", man.stdout);
    for flag in ["reflink", "update", "dry\\-run", "verify"] {
        assert!(man.stdout.contains(flag), "man page lacks {flag}");
    }
    let bash = run(&["--generate", "bash"]);
    bash.expect_code(0);
    assert!(bash.stdout.contains("--reflink"), "{}", bash.stdout);
    for shell in ["zsh", "fish", "elvish"] {
        let r = run(&["--generate", shell]);
        r.expect_code(0);
        assert!(r.stdout.contains("reflink"), "{shell}: {}", r.stdout);
    }
    run(&["--generate", "tcsh"]).expect_code(2);
}
