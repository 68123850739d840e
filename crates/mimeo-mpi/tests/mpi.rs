//! `mimeo-mpi` under `mpirun` with 1 to 4 ranks on this machine: trees copy equal to their
//! source with any number of ranks, link groups stay groups across ranks, a lost rank or a
//! killed mpirun ends the run at once and `-u` finishes the tree, SIGINT cleans up, and
//! under `-L` the copies of a file reached through several symlinks are linked as cp links
//! them.

use mimeo_testkit::files::{assert_same_bytes, interruption_tree, random_file};
use mimeo_testkit::oracle::{Allow, assert_archive_equal, is_scratch, no_half_files};
use mimeo_testkit::{FsKind, GenOptions, LoopFs, gen_small, generate};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `mpirun -np N mimeo-mpi ARGS...`, each rank printing its own counts on stderr.
fn mpirun(np: usize, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(np.to_string())
        .arg(env!("CARGO_BIN_EXE_mimeo-mpi"))
        .args(args.iter().map(|a| a.as_ref()))
        .env("MIMEO_MPI_RANK_STATS", "1")
        .stdin(Stdio::null());
    cmd
}

/// What a finished run said.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    summary: Value,
    /// Each rank's own counts, by rank.
    ranks: BTreeMap<u64, Value>,
    stderr: String,
}

fn parse(out: Output) -> Run {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or(Value::Null);
    let ranks = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| Some((v["rank"].as_u64()?, v)))
        .collect();
    Run {
        code: out.status.code(),
        summary,
        ranks,
        stderr,
    }
}

fn run(np: usize, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Run {
    let out = mpirun(np, args).output().expect("mpirun runs");
    parse(out)
}

/// Copies `src` to `dst` with `-a` on `np` ranks and checks the result.
#[track_caller]
fn copy_exact(what: &str, np: usize, src: &Path, dst: &Path) -> Run {
    let r = run(np, &[&"-aT", &"--json", &src, &dst]);
    assert_eq!(r.code, Some(0), "{what}: {r:#?}");
    assert_eq!(r.summary["errors"], 0, "{what}: {r:#?}");
    assert_archive_equal(what, src, dst);
    assert_eq!(scratch(dst), Vec::<PathBuf>::new(), "{what}");
    // Every rank reported, and the merged summary is their sum.
    assert_eq!(r.ranks.len(), np, "{what}: {r:#?}");
    for key in ["files", "directories", "hard_links", "bytes"] {
        let sum: u64 = r.ranks.values().map(|v| v[key].as_u64().unwrap()).sum();
        assert_eq!(Some(sum), r.summary[key].as_u64(), "{what}: {key}");
    }
    r
}

/// mimeo's own scratch entries (temporaries, markers) below `root`.
fn scratch(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap().flatten() {
            if is_scratch(&e.file_name()) {
                out.push(e.path());
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

/// A tree like the benchmark corpus: many small files in many directories, a few larger
/// ones, and hard-link groups whose members sit in different directories.
fn corpus_like(src: &Path) {
    gen_small(&src.join("small"), 1200, 7).unwrap();
    let big = src.join("big");
    fs::create_dir_all(&big).unwrap();
    for i in 0..6u64 {
        random_file(&big.join(format!("b{i}")), (1 + i % 3) << 20);
    }
    link_groups(&src.join("linked"), 12, 6);
}

/// `dirs` directories of plain files, and `groups` inodes each linked from several of them.
fn link_groups(root: &Path, dirs: usize, groups: usize) {
    let first = root.join("origin");
    fs::create_dir_all(&first).unwrap();
    for g in 0..groups {
        fs::write(
            first.join(format!("g{g}")),
            format!("group {g}\n").repeat(g + 1),
        )
        .unwrap();
    }
    for d in 0..dirs {
        let dir = root.join(format!("d{d:02}"));
        fs::create_dir_all(dir.join("sub")).unwrap();
        for f in 0..30 {
            fs::write(dir.join(format!("f{f}")), format!("{d}/{f}")).unwrap();
        }
        for g in (0..groups).filter(|g| (g + d) % 2 == 0) {
            fs::hard_link(
                first.join(format!("g{g}")),
                dir.join("sub").join(format!("l{g}")),
            )
            .unwrap();
        }
    }
}

/// Every group of links in `src` is one inode in `dst`, with as many links, and distinct
/// source inodes are distinct destination inodes.
fn assert_link_groups(what: &str, src: &Path, dst: &Path) {
    let groups = shared_inodes(src);
    assert!(!groups.is_empty(), "{what}: the source has link groups");
    assert_eq!(shared_inodes(dst), groups, "{what}");
    for members in &groups {
        let first = members.first().unwrap();
        assert_eq!(
            fs::metadata(dst.join(first)).unwrap().nlink() as usize,
            members.len(),
            "{what}: {members:?}"
        );
    }
}

#[test]
fn trees_copy_equal_to_the_source_with_any_number_of_ranks() {
    for kind in FsKind::ALL {
        let Some(fs) = LoopFs::try_new(kind, 700) else {
            continue;
        };
        let tricky = fs.path().join("tricky");
        generate(&tricky, &GenOptions::new(0x15, 500)).unwrap();
        let corpus = fs.path().join("corpus");
        corpus_like(&corpus);
        for np in 1..=4 {
            for (name, src) in [("tricky", &tricky), ("corpus", &corpus)] {
                let dst = fs.path().join(format!("{name}-{np}"));
                let what = format!("{kind}: {name} on {np} rank(s)");
                let r = copy_exact(&what, np, src, &dst);
                if kind.reflinks() {
                    // Extents shared: every byte cloned.
                    assert_eq!(
                        r.summary["by_method"]["clone"], r.summary["bytes"],
                        "{what}"
                    );
                }
                if name == "corpus" {
                    assert_link_groups(&what, src, &dst);
                }
                fs::remove_dir_all(&dst).unwrap();
            }
        }
    }
}

#[test]
fn link_groups_whose_members_different_ranks_reach_stay_one_group() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    link_groups(&src, 40, 24);
    let mut spread = 0;
    for round in 0..4 {
        for np in [2, 3, 4] {
            let dst = tmp.path().join(format!("dst-{round}-{np}"));
            let what = format!("round {round}, {np} ranks");
            let r = copy_exact(&what, np, &src, &dst);
            assert_link_groups(&what, &src, &dst);
            // Links made by more than one rank: the groups crossed ranks.
            let linking = r
                .ranks
                .values()
                .filter(|v| v["hard_links"].as_u64().unwrap() > 0)
                .count();
            spread += usize::from(linking > 1);
            fs::remove_dir_all(&dst).unwrap();
        }
    }
    assert!(spread > 0, "no run had links made by two ranks");
}

/// Regular files below `root` that share an inode with another, as groups of paths.
fn shared_inodes(root: &Path) -> BTreeSet<BTreeSet<PathBuf>> {
    let mut by_ino: HashMap<u64, BTreeSet<PathBuf>> = HashMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in fs::read_dir(root.join(&rel)).unwrap().flatten() {
            let m = e.metadata().unwrap();
            let r = rel.join(e.file_name());
            if m.is_dir() {
                stack.push(r);
            } else if m.is_file() && m.nlink() > 1 {
                by_ino.entry(m.ino()).or_default().insert(r);
            }
        }
    }
    by_ino.into_values().collect()
}

#[test]
fn with_dereference_files_reached_through_symlinks_on_different_ranks_are_linked_as_cp_links_them()
{
    // Under -L, cp links the copies of a file that symlinks lead to more than once. The
    // symlinks sit in many directories, so with several ranks different ranks reach them.
    let tmp = tempfile::tempdir().unwrap();
    let targets = tmp.path().join("targets");
    fs::create_dir(&targets).unwrap();
    for t in 0..5 {
        fs::write(
            targets.join(format!("t{t}")),
            format!("target {t}\n").repeat(t + 1),
        )
        .unwrap();
    }
    let src = tmp.path().join("src");
    for d in 0..24 {
        let dir = src.join(format!("d{d:02}"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..20 {
            fs::write(dir.join(format!("f{f}")), format!("{d}/{f}")).unwrap();
        }
        for t in (0..5).filter(|t| (t + d) % 3 != 0) {
            let to = if d % 2 == 0 {
                targets.join(format!("t{t}"))
            } else {
                Path::new("../../targets").join(format!("t{t}"))
            };
            std::os::unix::fs::symlink(to, dir.join(format!("l{t}"))).unwrap();
        }
    }
    let by_cp = tmp.path().join("by-cp");
    let st = Command::new("cp")
        .arg("-aL")
        .arg(&src)
        .arg(&by_cp)
        .status()
        .unwrap();
    assert!(st.success());
    let expected = shared_inodes(&by_cp);
    assert_eq!(
        expected.len(),
        5,
        "cp links each target's copies: {expected:?}"
    );
    let mut spread = 0;
    for (round, np) in [1, 2, 3, 4, 2, 3, 4, 4].into_iter().enumerate() {
        let dst = tmp.path().join(format!("dst-{round}"));
        let r = run(np, &[&"-aL", &"--json", &src, &dst]);
        assert_eq!(r.code, Some(0), "{np} ranks: {r:#?}");
        assert_eq!(shared_inodes(&dst), expected, "{np} ranks");
        // Links made by more than one rank: the groups crossed ranks.
        let linking = r
            .ranks
            .values()
            .filter(|v| v["hard_links"].as_u64().unwrap() > 0)
            .count();
        spread += usize::from(linking > 1);
        for group in &expected {
            for member in group {
                assert_eq!(
                    fs::read(dst.join(member)).unwrap(),
                    fs::read(by_cp.join(member)).unwrap(),
                    "{np} ranks: {member:?}"
                );
            }
        }
        fs::remove_dir_all(&dst).unwrap();
    }
    assert!(spread > 0, "no run had links made by two ranks");
}

/// Flags of the interruption runs: streamed and flushed file by file, to be slow enough to hit,
/// with the larger files split into ranges that several ranks copy.
const SLOW: [&str; 5] = [
    "-aT",
    "--reflink=never",
    "--sparse=never",
    "--sync",
    "--split=1M",
];

fn spawn_slow(np: usize, src: &Path, dst: &Path) -> Child {
    mpirun(
        np,
        &[
            &SLOW[0], &SLOW[1], &SLOW[2], &SLOW[3], &SLOW[4], &"--json", &src, &dst,
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        if after.split(' ').nth(1) == Some(&pid.to_string()) {
            out.push(p);
        }
    }
    out
}

/// Sends signal `sig` to `pid` (with kill(1): the crate has no unsafe code).
fn kill(pid: u32, sig: i32) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

/// Waits until the copy has started writing into `dst`.
fn wait_started(dst: &Path) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        if dst.join("big").exists() || fs::read_dir(dst).map(|d| d.count() > 3).unwrap_or(false) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the copy into {dst:?} did not start");
}

/// Waits for `child`, at most `secs`; its output.
fn finish_within(mut child: Child, secs: u64, what: &str) -> Run {
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return parse(child.wait_with_output().unwrap());
        }
        if t0.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("{what}: still running after {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `-aT -u` on `np` ranks finishes the tree exactly.
#[track_caller]
fn update_finishes(what: &str, np: usize, src: &Path, dst: &Path) {
    let r = run(np, &[&"-aT", &"-u", &"--json", &src, &dst]);
    assert_eq!(r.code, Some(0), "{what}, then -u: {r:#?}");
    assert_archive_equal(&format!("{what}, then -u"), src, dst);
    assert_eq!(scratch(dst), Vec::<PathBuf>::new(), "{what}, then -u");
}

#[test]
fn sigkill_of_one_rank_fails_the_run_within_seconds_and_update_finishes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    interruption_tree(&src);
    for (round, victim) in [(0usize, 1usize), (1, 0), (2, 2)] {
        let dst = tmp.path().join(format!("dst{round}"));
        let child = spawn_slow(3, &src, &dst);
        wait_started(&dst);
        let mut ranks = children(child.id());
        ranks.sort();
        assert_eq!(ranks.len(), 3, "three ranks under mpirun");
        let t0 = Instant::now();
        kill(ranks[victim], 9);
        let what = format!("round {round}: SIGKILL of one rank");
        let r = finish_within(child, 20, &what);
        let took = t0.elapsed();
        assert_ne!(r.code, Some(0), "{what}: {r:#?}");
        assert!(
            took < Duration::from_secs(15),
            "{what}: ended after {took:?}"
        );
        no_half_files_after_kill(&src, &dst, &what);
        update_finishes(&what, 2, &src, &dst);
    }
}

#[test]
fn sigkill_of_mpirun_then_update_gives_an_exact_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    interruption_tree(&src);
    for (round, delay_ms) in [(0usize, 0u64), (1, 300), (2, 900)] {
        let dst = tmp.path().join(format!("dst{round}"));
        let mut child = spawn_slow(4, &src, &dst);
        wait_started(&dst);
        std::thread::sleep(Duration::from_millis(delay_ms));
        let ranks = children(child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        let what = format!("round {round}: SIGKILL of mpirun");
        // The ranks go with their launcher.
        wait_gone(&ranks, &what);
        no_half_files_after_kill(&src, &dst, &what);
        update_finishes(&what, 1 + round % 3, &src, &dst);
    }
}

#[test]
fn sigint_to_mpirun_stops_every_rank_which_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    interruption_tree(&src);
    let dst = tmp.path().join("dst");
    let child = spawn_slow(3, &src, &dst);
    wait_started(&dst);
    kill(child.id(), 2);
    let r = finish_within(child, 20, "SIGINT");
    assert_ne!(r.code, Some(0), "{r:#?}");
    // No temporaries and no half files: every rank removed what it had in progress.
    let allow = Allow {
        temps: false,
        marked: true,
        stale: None,
    };
    no_half_files(&src, &dst, &allow).unwrap_or_else(|e| panic!("SIGINT: {e}"));
    let temps: Vec<PathBuf> = scratch(&dst)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert_eq!(temps, Vec::<PathBuf>::new(), "{}", r.stderr);
    update_finishes("SIGINT", 3, &src, &dst);
}

/// A file of `mib` MiB whose every 4 KiB block differs from the others.
fn pattern_file(path: &Path, mib: u64) {
    use std::io::Write;
    let mut f = fs::File::create(path).unwrap();
    let mut chunk = vec![0u8; 1 << 20];
    for i in 0..mib {
        for (j, b) in chunk.iter_mut().enumerate().step_by(4096) {
            *b = (i as u8) ^ (j >> 12) as u8;
        }
        chunk[..8].copy_from_slice(&i.to_le_bytes());
        f.write_all(&chunk).unwrap();
    }
    f.sync_all().unwrap();
}

/// An ext4 filesystem with room for two copies of `src/big`, a file of `mib` MiB.
fn ext4_with_big_file(mib: u64) -> Option<(LoopFs, PathBuf)> {
    let fs = LoopFs::try_new(FsKind::Ext4, 2 * mib + 1024)?;
    let src = fs.path().join("src");
    fs::create_dir(&src).unwrap();
    pattern_file(&src.join("big"), mib);
    Some((fs, src))
}

/// Waits until the processes `pids` are gone.
fn wait_gone(pids: &[u32], what: &str) {
    let t0 = Instant::now();
    while pids
        .iter()
        .any(|p| Path::new(&format!("/proc/{p}")).exists())
    {
        assert!(t0.elapsed() < Duration::from_secs(20), "{what}: ranks stay");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// After a killed run: temporaries and marked entries may be left, never a half file.
#[track_caller]
fn no_half_files_after_kill(src: &Path, dst: &Path, what: &str) {
    let allow = Allow {
        temps: true,
        marked: true,
        stale: None,
    };
    no_half_files(src, dst, &allow).unwrap_or_else(|e| panic!("{what}: {e}"));
}

#[test]
fn a_4_gib_file_on_4_ranks_is_exact_and_cloned() {
    // Where the filesystem clones, the whole file is one clone: it is never split.
    let Some(fs) = LoopFs::try_new(FsKind::Xfs, 4096 + 1024) else {
        return;
    };
    let src = fs.path().join("big");
    pattern_file(&src, 4096);
    let dst = fs.path().join("copy");
    let r = run(4, &[&"-a", &"--json", &src, &dst]);
    assert_eq!(r.code, Some(0), "{r:#?}");
    assert_eq!(r.summary["by_method"]["clone"], 4u64 << 30, "{r:#?}");
    assert_same_bytes(&src, &dst);
    let m = fs::metadata(&dst).unwrap();
    assert_eq!(m.len(), 4 << 30);
}

#[test]
fn a_4_gib_file_is_split_across_4_ranks_where_it_cannot_be_cloned() {
    let Some((fs, src)) = ext4_with_big_file(4096) else {
        return;
    };
    fs::set_permissions(src.join("big"), fs::Permissions::from_mode(0o640)).unwrap();
    let dst = fs.path().join("dst");
    let r = copy_exact("4 GiB on ext4", 4, &src, &dst);
    assert_eq!(r.summary["files"], 1, "{r:#?}");
    assert_eq!(r.summary["bytes"], 4u64 << 30, "{r:#?}");
    // The rank that met the file split it into 256 MiB ranges; other ranks copied some.
    let helpers: Vec<u64> = r
        .ranks
        .values()
        .filter(|v| v["files"] == 0)
        .map(|v| v["ranges_copied"].as_u64().unwrap())
        .collect();
    assert_eq!(helpers.len(), 3, "{r:#?}");
    assert!(
        helpers.iter().filter(|&&n| n > 0).count() >= 2,
        "ranges copied by the other ranks: {helpers:?}"
    );
    assert!(helpers.iter().sum::<u64>() < 16, "{r:#?}");
}

#[test]
fn a_file_split_across_ranks_survives_a_lost_rank_and_a_killed_mpirun() {
    let Some((fs, src)) = ext4_with_big_file(2048) else {
        return;
    };
    gen_small(&src.join("small"), 200, 5).unwrap();
    for (round, kill_rank) in [(0, true), (1, false)] {
        let what = format!(
            "round {round}: SIGKILL of {} during a split file",
            if kill_rank { "rank 2" } else { "mpirun" }
        );
        let dst = fs.path().join(format!("dst{round}"));
        let mut child = mpirun(4, &[&"-aT", &"--split=64M", &"--json", &src, &dst])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Once the copy of the large file is under way.
        let t0 = Instant::now();
        while fs::read_dir(&dst).map(|d| d.count()).unwrap_or(0) < 2 {
            assert!(t0.elapsed() < Duration::from_secs(30), "{what}: no start");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(200));
        let mut ranks = children(child.id());
        ranks.sort();
        assert_eq!(ranks.len(), 4, "{what}: four ranks under mpirun");
        if kill_rank {
            let t0 = Instant::now();
            kill(ranks[2], 9);
            let r = finish_within(child, 30, &what);
            let took = t0.elapsed();
            assert_ne!(r.code, Some(0), "{what}: {r:#?}");
            assert!(
                took < Duration::from_secs(20),
                "{what}: ended after {took:?}"
            );
        } else {
            child.kill().unwrap();
            child.wait().unwrap();
        }
        wait_gone(&ranks, &what);
        no_half_files_after_kill(&src, &dst, &what);
        update_finishes(&what, 3, &src, &dst);
        fs::remove_dir_all(&dst).unwrap();
    }
}

#[test]
fn a_failed_source_gives_mimeos_status_and_rank_0_still_prints_the_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    link_groups(&src, 6, 3);
    let into = tmp.path().join("into");
    fs::create_dir(&into).unwrap();
    let missing = tmp.path().join("missing");
    for np in [1, 3] {
        let r = run(np, &[&"-a", &"--json", &missing, &src, &into]);
        assert_eq!(r.code, Some(1), "{np} ranks: {r:#?}");
        assert_eq!(r.summary["errors"], 1, "{np} ranks: {r:#?}");
        assert!(r.summary["files"].as_u64().unwrap() > 0, "{r:#?}");
        assert_archive_equal("the other source", &src, &into.join("src"));
        fs::remove_dir_all(into.join("src")).unwrap();
    }
    // A usage error: every rank stops with cp's status 2 and one message.
    let r = run(2, &[&"--no-such-option", &src, &into]);
    assert_eq!(r.code, Some(2), "{r:#?}");
    assert_eq!(r.stderr.matches("unrecognized option").count(), 1, "{r:#?}");
    // -i cannot ask from ranks without a terminal: refused, and nothing is copied.
    let r = run(2, &[&"-a", &"-i", &src, &into]);
    assert_eq!(r.code, Some(2), "{r:#?}");
    assert_eq!(r.stderr.matches("--interactive").count(), 1, "{r:#?}");
    assert!(!into.join("src").exists());
}

/// Subtrees `s/a0` to `s/a7`, each with a directory `n0`.. `n7` and enough files to spread
/// the directories over the ranks, a file `x` and `D` to copy into.
fn spread_tree(d: &Path) {
    for i in 0..8 {
        let a = d.join(format!("s/a{i}"));
        fs::create_dir_all(a.join(format!("n{i}"))).unwrap();
        fs::write(a.join(format!("n{i}/h")), "h\n").unwrap();
        for f in 0..100 {
            fs::write(a.join(format!("f{f}")), format!("{i}/{f}\n")).unwrap();
        }
    }
    fs::write(d.join("x"), "x\n").unwrap();
    fs::create_dir(d.join("D")).unwrap();
}

/// Runs `/bin/cp ARGS` and `mimeo-mpi ARGS` on 2 and 4 ranks, each in a tree of its own made
/// by `setup`, and checks that they end alike: status, messages (in order of their text: the
/// ranks' order is theirs) and what `D` holds. Returns the messages, and whether a rank
/// other than 0 copied directories in some run.
#[track_caller]
fn mpi_same_as_cp(tmp: &Path, setup: &dyn Fn(&Path), args: &[String]) -> (Vec<String>, bool) {
    let said = |stderr: &str, prog: &str| {
        let mut lines: Vec<String> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix(prog))
            .map(String::from)
            .collect();
        lines.sort();
        lines
    };
    let tree = |d: &Path| {
        let mut paths = BTreeMap::new();
        let mut stack = vec![d.join("D")];
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).unwrap().flatten() {
                let is_dir = e.file_type().unwrap().is_dir();
                let data = (!is_dir).then(|| fs::read(e.path()).unwrap());
                paths.insert(e.path().strip_prefix(d).unwrap().to_path_buf(), data);
                if is_dir {
                    stack.push(e.path());
                }
            }
        }
        paths
    };
    let cp_dir = tmp.join("cp");
    setup(&cp_dir);
    let cp = Command::new("/bin/cp")
        .args(args)
        .current_dir(&cp_dir)
        .output()
        .unwrap();
    let cp_said = said(&String::from_utf8_lossy(&cp.stderr), "/bin/cp: ");
    let mut spread = false;
    for np in [2, 4] {
        let d = tmp.join(format!("mpi{np}"));
        setup(&d);
        let mut cmd = mpirun(np, &[]);
        cmd.args(args).current_dir(&d);
        let r = parse(cmd.output().unwrap());
        let what = format!("{args:?} on {np} ranks");
        assert_eq!(r.code, cp.status.code(), "{what}: {r:#?}");
        assert_eq!(said(&r.stderr, "mimeo-mpi: "), cp_said, "{what}: {r:#?}");
        assert_eq!(tree(&d), tree(&cp_dir), "{what}");
        spread |= r
            .ranks
            .iter()
            .any(|(&rank, v)| rank != 0 && v["directories"].as_u64() > Some(0));
    }
    (cp_said, spread)
}

/// cp's rules for a source named twice hold whichever rank meets it: a directory named twice
/// is copied once, a file named twice likewise, each with one warning (not one per rank),
/// and a directory named before is refused where a later source holds it, also where another
/// rank lists that source's directories. Messages, status and tree as cp's.
#[test]
fn sources_named_twice_are_met_as_cp_meets_them_on_every_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = vec!["-a".into()];
    args.extend((0..8).map(|i| format!("s/a{i}/n{i}")));
    args.extend(["s", "s", "x", "x", "D"].map(String::from));
    let (said, spread) = mpi_same_as_cp(tmp.path(), &spread_tree, &args);
    // Eight refusals, and one warning for each source named twice.
    assert_eq!(said.len(), 10, "{said:?}");
    assert!(spread, "the directories were all copied by rank 0");
}

/// Sources that go to one destination are copied in command-line order whichever rank runs
/// the first of them: the later one finds what the first made, as in cp ("will not overwrite
/// just-created"; with backups, the first copy becomes the backup).
#[test]
fn sources_that_go_to_one_destination_are_copied_in_order_on_every_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let setup = |d: &Path| {
        spread_tree(d);
        // Another name of x (another source to cp), and another file of that name.
        fs::hard_link(d.join("x"), d.join("s/x")).unwrap();
        fs::write(d.join("s/a0/x"), "other x\n").unwrap();
    };
    for (i, a) in [
        &["-a", "s/a1", "s/a2", "s/a3", "x", "s/x", "s/a0/x", "D"][..],
        &[
            "-a",
            "--backup=numbered",
            "s/a1",
            "s/a2",
            "s/a3",
            "x",
            "s/a0/x",
            "D",
        ],
    ]
    .iter()
    .enumerate()
    {
        let args: Vec<String> = a.iter().map(|f| f.to_string()).collect();
        let dir = tmp.path().join(format!("case{i}"));
        let (said, _) = mpi_same_as_cp(&dir, &setup, &args);
        // Refused as just made; with backups, the first copy kept as a backup.
        let backup = dir.join("cp/D/x.~1~");
        assert_eq!(said.is_empty(), backup.exists(), "{args:?}: {said:?}");
    }
}
