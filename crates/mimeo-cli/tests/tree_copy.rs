//! Integration tests for tree copies, driving the real `mimeo` binary.
//!
//! GNU `cp` is the oracle: the same command runs with both tools on the
//! same tree (or on identically generated trees) and the results must
//! compare equal. Where cp cannot work (paths beyond `PATH_MAX`) the copy is
//! compared with its source instead.
//!
//! Tests that need a loop filesystem print what they skipped when one
//! cannot be created, and fail instead under `MIMEO_REQUIRE_FS=1` (CI).

mod util;

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use mimeo_testkit::extents::extents;
use mimeo_testkit::oracle::assert_trees_equal;
use mimeo_testkit::{
    CompareOptions, FsKind, GenOptions, LoopFs, compare_trees, gen_deep, gen_small, generate,
    run_ok,
};
use rustix::fs::{CWD, FileType, Mode};
use util::tree::{Scratch, Tmpfs, cp_ok, fixed_times, limit_open_files, regular_files, run_timed};
use util::{Run, meta, mimeo, run, run_command, run_in};

/// `FIEMAP_EXTENT_DATA_INLINE`: data kept in metadata (small btrfs files),
/// which a clone copies instead of sharing.
const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;

/// Compares with everything on, plus "sparse files stay sparse".
fn full() -> CompareOptions {
    CompareOptions {
        blocks_le: true,
        ..CompareOptions::default()
    }
}

/// `mimeo args...` must succeed without errors.
#[track_caller]
fn mimeo_ok<S: AsRef<std::ffi::OsStr>>(cwd: Option<&Path>, args: &[S]) -> Run {
    let r = run_in(cwd, args);
    assert_eq!(r.code, 0, "mimeo failed: {r:#?}");
    if !r.json.is_empty() {
        assert_eq!(r.count("errors"), 0, "{r:#?}");
    }
    r
}

fn os(p: &Path) -> &std::ffi::OsStr {
    p.as_os_str()
}

// ---- 1. random tricky trees against cp -a ----

/// Files of the tree whose data extents are not all shared with another
/// file (inline extents excepted: those are copied by a clone).
fn unshared_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for f in regular_files(root) {
        let all = extents(&f).unwrap_or_else(|e| panic!("FIEMAP {f:?}: {e}"));
        let data: Vec<_> = all
            .iter()
            .filter(|e| e.flags & FIEMAP_EXTENT_DATA_INLINE == 0)
            .collect();
        let shared = data.iter().filter(|e| e.is_shared()).count();
        if shared != data.len() {
            out.push(format!("{f:?}: {shared} of {} extents shared", data.len()));
        }
    }
    out
}

#[test]
fn random_trees_match_cp_archive_on_every_filesystem() {
    for kind in FsKind::ALL {
        let Some(fs) = LoopFs::try_new(kind, 768) else {
            continue;
        };
        for seed in [11, 12, 13] {
            let base = fs.path().join(format!("seed{seed}"));
            let (src, ours, oracle) = (base.join("src"), base.join("m"), base.join("c"));
            let stats = generate(&src, &GenOptions::new(seed, 250)).unwrap();
            let what = format!("{kind}, seed {seed}: mimeo -a src m");
            let r = mimeo_ok(
                None,
                &["-a".as_ref(), "--json".as_ref(), os(&src), os(&ours)],
            );
            cp_ok(None, &["-a".as_ref(), os(&src), os(&oracle)]);

            assert_trees_equal(&what, &oracle, &ours, &full());
            assert_trees_equal(&what, &src, &ours, &full());

            assert_eq!(r.count("files"), stats.files as u64, "{what}: {r:#?}");
            assert_eq!(r.count("symlinks"), stats.symlinks as u64, "{what}");
            assert_eq!(r.count("hard_links"), stats.hard_links as u64, "{what}");
            assert_eq!(r.count("specials"), stats.specials as u64, "{what}");
            let bytes = r.count("bytes");
            assert!(bytes > 0, "{what}: {r:#?}");
            let (clone, offload, stream) = (
                r.count("by_method.clone"),
                r.count("by_method.offload"),
                r.count("by_method.stream"),
            );
            if kind.reflinks() {
                assert_eq!(
                    (clone, offload, stream),
                    (bytes, 0, 0),
                    "{what}: not everything cloned: {}",
                    r.summary()
                );
                let unshared = unshared_files(&ours);
                assert!(
                    unshared.is_empty(),
                    "{what}: files not sharing extents with their source:\n{}",
                    unshared.join("\n")
                );
            } else {
                assert_eq!(
                    (clone, offload, stream),
                    (0, bytes, 0),
                    "{what}: not everything offloaded: {}",
                    r.summary()
                );
            }
        }
    }
}

// ---- 2. hard links across source arguments ----

#[test]
fn hard_links_across_source_arguments_stay_one_group() {
    let tmp = Scratch::new();
    for tool in ["m", "c"] {
        let base = tmp.path().join(tool);
        fs::create_dir_all(base.join("d1")).unwrap();
        fs::create_dir_all(base.join("d2")).unwrap();
        fs::create_dir_all(base.join("dest")).unwrap();
        fs::write(base.join("d1/x"), b"linked data").unwrap();
        fs::hard_link(base.join("d1/x"), base.join("d2/y")).unwrap();
        fixed_times(&base.join("d1/x"));
        let args = ["-a", "d1/x", "d2/y", "dest/"];
        if tool == "m" {
            mimeo_ok(Some(&base), &args);
        } else {
            cp_ok(Some(&base), &args);
        }
        // Neither tool sets the times of an existing target directory.
        fixed_times(&base.join("dest"));
    }
    let dest = tmp.path().join("m/dest");
    let (x, y) = (meta(&dest.join("x")), meta(&dest.join("y")));
    assert_eq!(
        (x.ino(), x.nlink()),
        (y.ino(), 2),
        "mimeo -a d1/x d2/y dest/: x and y are not one link group"
    );
    assert_trees_equal(
        "mimeo -a d1/x d2/y dest/",
        &tmp.path().join("c/dest"),
        &dest,
        &full(),
    );
}

// ---- 3. deeper than PATH_MAX ----

#[test]
fn tree_deeper_than_path_max_copies_with_few_descriptors() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 256) else {
        return;
    };
    let src = fs.path().join("src");
    // 4096 levels of "dd/": a 12 KiB path at the bottom.
    gen_deep(&src, 4096, "dd").unwrap();
    for (dst, limit) in [("plain", None), ("nofile256", Some(256))] {
        let dst = fs.path().join(dst);
        let mut cmd = mimeo();
        cmd.args(["-a".as_ref(), "--json".as_ref(), os(&src), os(&dst)]);
        if let Some(n) = limit {
            limit_open_files(&mut cmd, n);
        }
        let what = format!("mimeo -a src {dst:?} (RLIMIT_NOFILE {limit:?})");
        let r = run_command(&mut cmd, true);
        assert_eq!(r.code, 0, "{what}: {r:#?}");
        assert_eq!(r.count("errors"), 0, "{what}: {r:#?}");
        assert_eq!(r.count("directories"), 4097, "{what}: {r:#?}");
        assert_eq!(r.count("files"), 64, "{what}: {r:#?}");
        assert_eq!(r.count("symlinks"), 1, "{what}: {r:#?}");
        let c = compare_trees(&src, &dst, &full()).unwrap();
        assert!(c.is_equal(), "{what}:\n{c}");
        assert!(c.entries > 4096 + 64, "{what}: {c}");
    }
}

// ---- 4. 100k entries, one and eight workers ----

#[test]
fn hundred_thousand_entries_with_one_and_eight_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let tmpfs = Tmpfs::mount(&mnt, 3 << 10);
    let src = tmpfs.path().join("src");
    gen_small(&src, 100_000, 5).unwrap();
    let mut outs = Vec::new();
    for jobs in ["1", "8"] {
        let dst = tmpfs.path().join(format!("j{jobs}"));
        let started = Instant::now();
        let r = mimeo_ok(
            None,
            &[
                "-a".as_ref(),
                "--json".as_ref(),
                "-j".as_ref(),
                jobs.as_ref(),
                os(&src),
                os(&dst),
            ],
        );
        let took = started.elapsed();
        assert_eq!(r.count("files"), 100_000, "-j {jobs}: {}", r.summary());
        assert_eq!(r.count("directories"), 1011, "-j {jobs}: {}", r.summary());
        eprintln!("-j {jobs}: 100k files in {took:?}");
        assert_trees_equal(&format!("mimeo -a -j {jobs}"), &src, &dst, &full());
        outs.push(dst);
    }
    assert_trees_equal("-j 1 against -j 8", &outs[0], &outs[1], &full());
}

// ---- 5. cp semantics ----

/// Builds the same scenario twice (with `setup`), runs cp and mimeo with
/// `args` in their own copy, and compares each of `results` (relative
/// paths) between the two.
fn differential(setup: impl Fn(&Path), args: &[&str], results: &[&str]) {
    let tmp = Scratch::new();
    let (m, c) = (tmp.path().join("m"), tmp.path().join("c"));
    for base in [&m, &c] {
        fs::create_dir(base).unwrap();
        setup(base);
    }
    cp_ok(Some(&c), args);
    mimeo_ok(Some(&m), args);
    for rel in results {
        let what = format!("mimeo {} (compared at {rel})", args.join(" "));
        assert_trees_equal(&what, &c.join(rel), &m.join(rel), &full());
    }
}

/// A generated source tree `src` and an empty directory `dst`.
fn src_and_dst(base: &Path) {
    generate(&base.join("src"), &GenOptions::new(21, 80)).unwrap();
    fs::create_dir(base.join("dst")).unwrap();
    fixed_times(&base.join("dst"));
}

#[test]
fn existing_destination_directory_receives_the_source() {
    differential(src_and_dst, &["-a", "src", "dst"], &["dst/src"]);
    let tmp = Scratch::new();
    src_and_dst(tmp.path());
    mimeo_ok(Some(tmp.path()), &["-a", "src", "dst"]);
    assert_eq!(util::names(&tmp.path().join("dst")), ["src"]);
}

#[test]
fn no_target_directory_copies_contents_onto_the_destination() {
    differential(src_and_dst, &["-a", "-T", "src", "dst"], &["dst"]);
}

#[test]
fn several_sources_into_a_directory() {
    let setup = |base: &Path| {
        src_and_dst(base);
        generate(&base.join("two"), &GenOptions::new(22, 40)).unwrap();
        fs::write(base.join("file"), b"plain file").unwrap();
        fixed_times(&base.join("file"));
    };
    differential(
        setup,
        &["-a", "src", "two", "file", "dst"],
        &["dst/src", "dst/two", "dst/file"],
    );
    differential(
        setup,
        &["-a", "-t", "dst", "src", "two", "file"],
        &["dst/src", "dst/two", "dst/file"],
    );
}

#[test]
fn merging_into_an_existing_tree() {
    let setup = |base: &Path| {
        let (src, old) = (base.join("src"), base.join("existing"));
        for d in [
            src.join("sub/deeper"),
            old.join("sub"),
            old.join("only-old"),
        ] {
            fs::create_dir_all(d).unwrap();
        }
        fs::write(src.join("a"), b"new a").unwrap();
        fs::write(src.join("sub/b"), b"new b").unwrap();
        fs::write(src.join("sub/deeper/c"), b"new c").unwrap();
        symlink("sub/b", src.join("ln")).unwrap();
        fs::write(old.join("keep"), b"old keep").unwrap();
        fs::write(old.join("sub/old"), b"old file").unwrap();
        fs::write(old.join("only-old/x"), b"x").unwrap();
        fs::set_permissions(src.join("sub"), fs::Permissions::from_mode(0o750)).unwrap();
        for p in [
            "src/a",
            "src/sub/b",
            "src/sub/deeper/c",
            "src/sub/deeper",
            "src/ln",
            "src/sub",
            "src",
            "existing/keep",
            "existing/sub/old",
            "existing/only-old/x",
            "existing/only-old",
            "existing/sub",
            "existing",
        ] {
            fixed_times(&base.join(p));
        }
    };
    differential(setup, &["-a", "src/.", "existing/"], &["existing"]);
}

#[test]
fn directory_into_itself_is_refused_by_identity() {
    let tmp = Scratch::new();
    let (d, pristine) = (tmp.path().join("d"), tmp.path().join("pristine"));
    generate(&d, &GenOptions::new(31, 30)).unwrap();
    generate(&pristine, &GenOptions::new(31, 30)).unwrap();
    // `alias` names the same directory by another path: only dev/ino can
    // tell. A bind mount would too; a symlink is enough for the path.
    symlink("d", tmp.path().join("alias")).unwrap();
    // Whatever differs before the runs (nothing, or times the generator
    // does not control) must be all that differs after them.
    let before = compare_trees(&pristine, &d, &CompareOptions::default())
        .unwrap()
        .differences;
    for (src, dst) in [("d", "d/sub"), ("d", "alias/sub"), ("alias/", "d/sub")] {
        let r = run_in(Some(tmp.path()), &["-a", src, dst]);
        let what = format!("mimeo -a {src} {dst}");
        assert_eq!(r.code, 1, "{what}: {r:#?}");
        assert!(
            r.stderr.contains("itself"),
            "{what}: no clear message: {:?}",
            r.stderr
        );
        assert!(!d.join("sub").exists(), "{what} created d/sub");
        let after = compare_trees(&pristine, &d, &CompareOptions::default()).unwrap();
        assert_eq!(after.differences, before, "{what} changed d:\n{after}");
    }
}

#[test]
fn recursive_without_archive_matches_cp_r() {
    let tmp = Scratch::new();
    let src = tmp.path().join("src");
    generate(&src, &GenOptions::new(41, 150)).unwrap();
    let (ours, oracle) = (tmp.path().join("m"), tmp.path().join("c"));
    mimeo_ok(None, &["-r".as_ref(), os(&src), os(&ours)]);
    cp_ok(None, &["-r".as_ref(), os(&src), os(&oracle)]);
    let opts = CompareOptions::content_and_mode();
    assert_trees_equal("mimeo -r src m", &oracle, &ours, &opts);
    // Not archive: the copy's times are new, like cp -r's.
    let (s, m) = (meta(&src), meta(&ours));
    assert_ne!(
        (s.mtime(), s.mtime_nsec()),
        (m.mtime(), m.mtime_nsec()),
        "mimeo -r preserved the root's mtime"
    );
}

#[test]
fn one_file_system_creates_the_mount_point_only() {
    let tmp = Scratch::new();
    let src = tmp.path().join("src");
    generate(&src, &GenOptions::new(51, 40)).unwrap();
    let mnt = src.join("mnt");
    fs::create_dir(&mnt).unwrap();
    let inner = Tmpfs::mount(&mnt, 16);
    fs::write(inner.path().join("below-mount"), b"not to be copied").unwrap();
    fs::create_dir(inner.path().join("dir-below")).unwrap();
    let (ours, oracle) = (tmp.path().join("m"), tmp.path().join("c"));
    mimeo_ok(None, &["-a".as_ref(), "-x".as_ref(), os(&src), os(&ours)]);
    cp_ok(None, &["-a".as_ref(), "-x".as_ref(), os(&src), os(&oracle)]);
    assert!(ours.join("mnt").is_dir(), "mimeo -ax did not create mnt");
    assert_eq!(util::names(&ours.join("mnt")), Vec::<String>::new());
    assert_trees_equal("mimeo -ax src m", &oracle, &ours, &full());
    drop(inner);
}

#[test]
fn dereference_follows_symlinks_to_files_and_directories() {
    let setup = |base: &Path| {
        let src = base.join("src");
        generate(&src.join("real"), &GenOptions::new(61, 25)).unwrap();
        fs::write(src.join("file"), b"target bytes").unwrap();
        fs::create_dir(src.join("dir")).unwrap();
        fs::write(src.join("dir/inner"), b"inner bytes").unwrap();
        symlink("file", src.join("to-file")).unwrap();
        symlink("dir", src.join("to-dir")).unwrap();
        symlink("../outside", src.join("to-outside")).unwrap();
        fs::write(base.join("outside"), b"outside bytes").unwrap();
        for p in [
            "src/file",
            "src/dir/inner",
            "src/dir",
            "src/to-file",
            "src/to-dir",
            "src/to-outside",
            "outside",
            "src",
        ] {
            fixed_times(&base.join(p));
        }
    };
    // The generated part has dangling symlinks, which -L cannot copy:
    // copy only the hand-made entries, and `real` without -L.
    let tmp = Scratch::new();
    setup(tmp.path());
    let sub = ["file", "dir", "to-file", "to-dir", "to-outside"];
    for tool in ["m", "c"] {
        let dst = tmp.path().join(tool);
        fs::create_dir(&dst).unwrap();
        let mut args: Vec<PathBuf> = vec!["-aL".into()];
        args.extend(sub.iter().map(|s| tmp.path().join("src").join(s)));
        args.push(dst.clone());
        if tool == "m" {
            mimeo_ok(None, &args);
        } else {
            cp_ok(None, &args);
        }
    }
    let ours = tmp.path().join("m");
    for s in ["to-file", "to-outside"] {
        assert!(meta(&ours.join(s)).is_file(), "mimeo -aL: {s} not a file");
    }
    assert!(meta(&ours.join("to-dir")).is_dir(), "mimeo -aL: to-dir");
    for s in sub {
        let what = format!("mimeo -aL src/{s} m/");
        assert_trees_equal(&what, &tmp.path().join("c").join(s), &ours.join(s), &full());
    }
}

// ---- 6. errors ----

#[test]
fn failing_destination_directory_is_reported_and_the_rest_copied() {
    let Some(fs) = LoopFs::try_new(FsKind::Ext4, 64) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    for d in ["a", "blocked", "z/deep"] {
        fs::create_dir_all(src.join(d)).unwrap();
        fs::write(src.join(d).join("f"), d.as_bytes()).unwrap();
    }
    fs::create_dir_all(src.join("clash")).unwrap();
    fs::write(src.join("clash/g"), b"g").unwrap();
    fs::create_dir_all(dst.join("blocked")).unwrap();
    // Immutable: even root cannot create entries in it.
    run_ok("chattr", &["+i".as_ref(), os(&dst.join("blocked"))]);
    // A non-directory where the source has a directory.
    fs::write(dst.join("clash"), b"in the way").unwrap();
    let r = run(&[
        "-a".as_ref(),
        "--json".as_ref(),
        os(&src.join(".")),
        os(&dst),
    ]);
    let what = "mimeo -a src/. dst (dst/blocked immutable, dst/clash a file)";
    assert_eq!(r.code, 1, "{what}: {r:#?}");
    let errors = r.events("error");
    assert_eq!(r.count("errors"), errors.len() as u64, "{what}: {r:#?}");
    for bad in ["blocked", "clash"] {
        assert!(
            errors
                .iter()
                .any(|e| e["path"].as_str().is_some_and(|p| p.contains(bad))),
            "{what}: no error event naming {bad}: {errors:#?}"
        );
        assert!(r.stderr.contains(bad), "{what}: stderr: {}", r.stderr);
    }
    for ok in ["a", "z"] {
        assert_trees_equal(what, &src.join(ok), &dst.join(ok), &full());
    }
    run_ok("chattr", &["-i".as_ref(), os(&dst.join("blocked"))]);
}

#[test]
fn vanished_source_directory_is_reported() {
    let tmp = Scratch::new();
    let (src, grave) = (tmp.path().join("src"), tmp.path().join("grave"));
    fs::create_dir(&grave).unwrap();
    let names: Vec<String> = (0..40).map(|i| format!("d{i:02}")).collect();
    for n in &names {
        fs::create_dir_all(src.join(n)).unwrap();
        for f in 0..300 {
            fs::write(src.join(n).join(format!("f{f}")), [b'x'; 100]).unwrap();
        }
    }
    let mut attempts = Vec::new();
    for attempt in 0..5 {
        let dst = tmp.path().join(format!("dst{attempt}"));
        let mut child = mimeo()
            .args(["-a", "-j", "1", "--json"])
            .args([os(&src), os(&dst)])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // As soon as the first file shows up in the copy, move every source
        // directory whose files have not started to be copied out of the tree.
        // (Directories are created by their parent's pass, before their own
        // pass copies their files, so a file, not the directory, marks a start.)
        let started = |n: &String| dst.join(n).join("f0").exists();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut moved = BTreeSet::new();
        while moved.is_empty() && Instant::now() < deadline {
            if names.iter().any(started) {
                for n in &names {
                    if !started(n) && fs::rename(src.join(n), grave.join(n)).is_ok() {
                        moved.insert(n.clone());
                    }
                }
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            thread::sleep(Duration::from_micros(200));
        }
        let out = child.wait_with_output().unwrap();
        // Put the tree back for the next attempt.
        for n in &moved {
            fs::rename(grave.join(n), src.join(n)).unwrap();
        }
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let json: Vec<serde_json::Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let r = Run {
            code: out.status.code().unwrap_or(-1),
            stdout: stdout.clone(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            json,
        };
        if moved.is_empty() {
            attempts.push(format!("attempt {attempt}: finished before the move"));
            continue;
        }
        let what = format!("mimeo -a -j 1 src dst, moved away during the run: {moved:?}");
        let vanished = r.count("vanished");
        // 24: the only failures were vanished sources (docs/cp.md, exit status).
        let expected = if vanished == r.count("errors") { 24 } else { 1 };
        assert_eq!(r.code, expected, "{what}: {r:#?}");
        let events: Vec<&serde_json::Value> = r
            .events("error")
            .into_iter()
            .filter(|e| e["operation"] == "vanished")
            .collect();
        assert!(
            vanished >= 1 && vanished == events.len() as u64,
            "{what}: vanished {vanished}, events {events:#?}: {r:#?}"
        );
        for e in &events {
            let path = util::json_name(&e["path"]);
            assert!(
                moved.iter().any(|n| path.contains(n.as_str())),
                "{what}: vanished event for an entry that was not moved: {e}"
            );
        }
        // Everything else is reported only if it was moved too, and every
        // directory not moved was copied whole.
        for e in r.events("error") {
            let path = util::json_name(&e["path"]);
            assert!(
                moved.iter().any(|n| path.contains(n.as_str())),
                "{what}: error for an entry that was not moved: {e}"
            );
        }
        for n in names.iter().filter(|n| !moved.contains(*n)) {
            assert_trees_equal(&what, &src.join(n), &dst.join(n), &full());
        }
        return;
    }
    panic!("never hit the window: {attempts:?}");
}

#[test]
fn read_only_source_directories_with_contents_copy() {
    let tmp = Scratch::new();
    let src = tmp.path().join("src");
    for dir in ["ro", "ro/inner", "locked"] {
        fs::create_dir_all(src.join(dir)).unwrap();
        fs::write(src.join(dir).join("f"), dir.as_bytes()).unwrap();
        fs::write(src.join(dir).join("g"), b"more").unwrap();
    }
    for (dir, mode) in [("ro/inner", 0o500), ("ro", 0o555), ("locked", 0o000)] {
        fs::set_permissions(src.join(dir), fs::Permissions::from_mode(mode)).unwrap();
    }
    let (ours, oracle) = (tmp.path().join("m"), tmp.path().join("c"));
    mimeo_ok(
        None,
        &["-a".as_ref(), "--json".as_ref(), os(&src), os(&ours)],
    );
    cp_ok(None, &["-a".as_ref(), os(&src), os(&oracle)]);
    assert_trees_equal("mimeo -a src m (read-only dirs)", &oracle, &ours, &full());
    assert_trees_equal("mimeo -a src m (read-only dirs)", &src, &ours, &full());
}

// ---- 7. special files ----

#[test]
fn special_files_are_copied_as_nodes_without_hanging() {
    let tmp = Scratch::new();
    let src = tmp.path().join("src");
    fs::create_dir(&src).unwrap();
    let node = |name: &str, kind, dev| {
        rustix::fs::mknodat(CWD, src.join(name), kind, Mode::from_raw_mode(0o640), dev)
            .unwrap_or_else(|e| panic!("mknod {name}: {e}"));
    };
    node("fifo", FileType::Fifo, 0);
    node("null", FileType::CharacterDevice, rustix::fs::makedev(1, 3));
    node("loop7", FileType::BlockDevice, rustix::fs::makedev(7, 7));
    let listener = std::os::unix::net::UnixListener::bind(src.join("sock")).unwrap();
    for name in ["fifo", "null", "loop7", "sock", ""] {
        fixed_times(&src.join(name));
    }
    for flags in [&["-a"][..], &["-r"][..]] {
        let tag = flags[0].trim_start_matches('-');
        let (ours, oracle) = (
            tmp.path().join(format!("m{tag}")),
            tmp.path().join(format!("c{tag}")),
        );
        let mut args: Vec<&std::ffi::OsStr> = flags.iter().map(|f| f.as_ref()).collect();
        args.extend(["--json".as_ref(), os(&src), os(&ours)]);
        let r = run_timed(60, &args);
        let what = format!("mimeo {} src m", flags.join(" "));
        assert_eq!(r.code, 0, "{what}: {r:#?}");
        assert_eq!(r.count("specials"), 4, "{what}: {}", r.summary());
        cp_ok(None, &[flags[0].as_ref(), os(&src), os(&oracle)]);
        let opts = if tag == "a" {
            full()
        } else {
            CompareOptions::content_and_mode()
        };
        assert_trees_equal(&what, &oracle, &ours, &opts);
        for (name, ft) in [
            ("fifo", "fifo"),
            ("null", "char"),
            ("loop7", "block"),
            ("sock", "sock"),
        ] {
            let m = meta(&ours.join(name));
            use std::os::unix::fs::FileTypeExt;
            let t = m.file_type();
            let ok = match ft {
                "fifo" => t.is_fifo(),
                "char" => t.is_char_device() && m.rdev() == rustix::fs::makedev(1, 3),
                "block" => t.is_block_device() && m.rdev() == rustix::fs::makedev(7, 7),
                _ => t.is_socket(),
            };
            assert!(ok, "{what}: {name} is {t:?} rdev {:x}", m.rdev());
        }
    }
    // A FIFO named directly as the source, too.
    let r = run_timed(
        60,
        &[
            "-a".as_ref(),
            os(&src.join("fifo")),
            os(&tmp.path().join("f2")),
        ],
    );
    assert_eq!(r.code, 0, "mimeo -a fifo f2: {r:#?}");
    use std::os::unix::fs::FileTypeExt;
    assert!(meta(&tmp.path().join("f2")).file_type().is_fifo());
    drop(listener);
}

// ---- atimes on a relatime filesystem ----

/// Reading a source updates its atime on a `relatime` filesystem; the
/// copy must still get the atime the source had before (as `cp -a` does).
#[test]
fn atime_before_the_read_is_kept_on_relatime() {
    let tmp = tempfile::tempdir().unwrap();
    let setup = |base: &Path| {
        let src = base.join("src");
        fs::create_dir_all(src.join("sub")).unwrap();
        for f in ["a", "sub/b"] {
            fs::write(src.join(f), b"read me").unwrap();
            fixed_times(&src.join(f));
        }
        fixed_times(&src.join("sub"));
        fixed_times(&src);
    };
    for tool in ["m", "c"] {
        let base = tmp.path().join(tool);
        setup(&base);
        if tool == "m" {
            mimeo_ok(Some(&base), &["-a", "src", "dst"]);
        } else {
            cp_ok(Some(&base), &["-a", "src", "dst"]);
        }
    }
    let (m, c) = (tmp.path().join("m/dst"), tmp.path().join("c/dst"));
    assert_trees_equal("mimeo -a src dst on relatime", &c, &m, &full());
    assert_eq!(meta(&m.join("a")).atime(), 1_500_000_000);
}

/// A directory with a default ACL passes ACLs on to what is made in it. With `-a` (ACLs are
/// part of the mode) an entry whose source has no ACL must not keep an inherited one, and an
/// entry whose source has one gets exactly that, as with cp; without `-p` the inherited ACLs
/// stay, as with cp.
#[test]
fn copies_into_a_directory_with_a_default_acl_match_cp() {
    for kind in FsKind::ALL {
        let Some(fs) = LoopFs::try_new(kind, 300) else {
            continue;
        };
        let setup = |base: &Path| {
            let src = base.join("src");
            fs::create_dir_all(src.join("sub")).unwrap();
            fs::write(src.join("plain"), b"no acl\n").unwrap();
            fs::write(src.join("sub/plain"), b"no acl\n").unwrap();
            fs::write(src.join("with-acl"), b"acl\n").unwrap();
            run_ok(
                "setfacl",
                &["-m", "u:1234:r", src.join("with-acl").to_str().unwrap()],
            );
            run_ok("mkfifo", &[src.join("fifo")]);
            for p in ["plain", "sub/plain", "with-acl", "fifo", "sub", ""] {
                fixed_times(&src.join(p));
            }
            let dst = base.join("dst");
            fs::create_dir(&dst).unwrap();
            run_ok(
                "setfacl",
                &["-d", "-m", "u:4321:rwx", dst.to_str().unwrap()],
            );
            // Made after the default ACL: it inherits it.
            fs::create_dir(dst.join("sub")).unwrap();
        };
        // (arguments, what to compare below the base)
        let cases: [(&[&str], &str); 3] = [
            (&["-a", "src", "dst/new"], "dst/new"),
            (&["-r", "src", "dst/new"], "dst/new"),
            (
                &["-a", "src/plain", "src/with-acl", "src/fifo", "dst/sub"],
                "dst/sub",
            ),
        ];
        for (args, result) in cases {
            let base = fs
                .path()
                .join(format!("case-{}", args.join("_").replace('/', "-")));
            let (c, m) = (base.join("c"), base.join("m"));
            for dir in [&c, &m] {
                fs::create_dir_all(dir).unwrap();
                setup(dir);
            }
            cp_ok(Some(&c), args);
            mimeo_ok(Some(&m), args);
            let what = format!("{kind}: mimeo {}", args.join(" "));
            let opts = CompareOptions {
                // Without -p, cp and mimeo both give new entries the times of the copy, and
                // a directory copied into changes its own.
                mtime: args[0] == "-a" && result == "dst/new",
                atime: false,
                ..full()
            };
            assert_trees_equal(&what, &c.join(result), &m.join(result), &opts);
        }
    }
}
