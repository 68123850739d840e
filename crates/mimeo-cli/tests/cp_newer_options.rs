//! Options of cp 9.2-9.7 (`--update=WHICH`, `--debug`, `--keep-directory-symlink`), which
//! GNU cp 9.1 here does not have, and the limits on option values.

mod util;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, SystemTime};

use mimeo_testkit::{FsKind, LoopFs};
use util::run_in;

fn set_mtime(path: &Path, t: SystemTime) {
    let f = fs::File::options().write(true).open(path).unwrap();
    f.set_modified(t).unwrap();
}

/// `src` and three destinations: `newer` (same size, newer), `older` (same size, older) and
/// `bigger` (another size, newer).
fn update_setup(dir: &Path) {
    let now = SystemTime::now();
    let hour = Duration::from_secs(3600);
    fs::create_dir(dir.join("d")).unwrap();
    fs::write(dir.join("src"), "new\n").unwrap();
    set_mtime(&dir.join("src"), now);
    for (name, text, when) in [
        ("newer", "old\n", now + hour),
        ("older", "old\n", now - hour),
        ("bigger", "older\n", now + hour),
    ] {
        fs::write(dir.join("d").join(name), text).unwrap();
        set_mtime(&dir.join("d").join(name), when);
    }
}

/// What each destination holds after `mimeo FLAGS src d/NAME` for every NAME.
fn after_update(flags: &[&str]) -> Vec<(String, i32, String, String)> {
    let dir = tempfile::tempdir().unwrap();
    update_setup(dir.path());
    ["newer", "older", "bigger"]
        .into_iter()
        .map(|name| {
            let dst = format!("d/{name}");
            let mut args: Vec<&str> = flags.to_vec();
            args.extend(["src", &dst]);
            let r = run_in(Some(dir.path()), &args);
            let text = fs::read_to_string(dir.path().join(&dst)).unwrap();
            (name.to_owned(), r.code, text, r.stderr)
        })
        .collect()
}

#[test]
fn update_selects_which_destinations_are_replaced() {
    let replaced = |name: &str| (name.to_owned(), 0, "new\n".to_owned(), String::new());
    let kept = |name: &str| (name.to_owned(), 0, "old\n".to_owned(), String::new());
    // all: every one (as without --update).
    assert_eq!(
        after_update(&["--update=all"]),
        [replaced("newer"), replaced("older"), replaced("bigger")]
    );
    // none: none, and no failure.
    assert_eq!(
        after_update(&["--update=none"]),
        [
            kept("newer"),
            kept("older"),
            ("bigger".into(), 0, "older\n".into(), String::new())
        ]
    );
    // none-fail: none, each a failure with cp's message.
    let failed = after_update(&["--update=none-fail"]);
    for (name, code, text, stderr) in &failed {
        assert_eq!(*code, 1, "{name}");
        assert_ne!(text, "new\n", "{name}");
        assert_eq!(*stderr, format!("mimeo: not replacing 'd/{name}'\n"));
    }
    // older, bare -u and --update: the older one, and (mimeo's size check) the one of
    // another size although it is newer.
    for flags in [
        &["--update=older"][..],
        &["-u"],
        &["--update"],
        &["--upd=o"],
    ] {
        assert_eq!(
            after_update(flags),
            [kept("newer"), replaced("older"), replaced("bigger")],
            "{flags:?}"
        );
    }
    // -n wins over --update=all whatever the order, as over -u in cp 9.1.
    for flags in [&["-n", "--update=all"][..], &["--update=all", "-n"]] {
        assert_eq!(after_update(flags)[0], kept("newer"), "{flags:?}");
    }
}

#[test]
fn update_takes_only_its_four_values() {
    let r = run_in(None, &["--update=sometimes", "a", "b"]);
    r.expect_code(2);
    assert!(
        r.stderr.starts_with(
            "mimeo: invalid argument 'sometimes' for '--update'\nValid arguments are:\n  - 'all'"
        ),
        "{r:#?}"
    );
}

/// `--debug`: cp's `-v` line, then how the file was copied: a sparse file cloned on btrfs,
/// and copied by copy offload on ext4, each with its holes found.
#[test]
fn debug_says_how_each_file_was_copied() {
    for (kind, expected) in [
        (
            FsKind::Btrfs,
            "copy offload: avoided, reflink: yes, sparse detection: SEEK_HOLE",
        ),
        (
            FsKind::Ext4,
            "copy offload: yes, reflink: no, sparse detection: SEEK_HOLE",
        ),
    ] {
        let Some(fs) = LoopFs::try_new(kind, 16) else {
            continue;
        };
        let src = fs.path().join("src");
        let f = fs::File::create(&src).unwrap();
        f.set_len(8 << 20).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, b"data", 4 << 20).unwrap();
        drop(f);
        let r = run_in(Some(fs.path()), &["--debug", "src", "dst"]);
        r.expect_code(0);
        assert_eq!(
            r.stdout,
            format!("'src' -> 'dst'\n{expected}\n"),
            "on {kind}"
        );
        // -v alone prints cp's line and nothing more.
        let r = run_in(Some(fs.path()), &["-v", "src", "dst2"]);
        assert_eq!(r.stdout, "'src' -> 'dst2'\n", "on {kind}");
    }
}

/// GNU's keep-directory-symlink.sh: a directory copied onto a symlink to a directory fails
/// without the option (as in cp 9.1), and goes through the symlink with it.
#[test]
fn keep_directory_symlink_copies_through_the_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("a/b")).unwrap();
    fs::create_dir_all(d.join("b/d/e")).unwrap();
    symlink("b", d.join("a/d")).unwrap();
    let r = run_in(Some(d), &["-RT", "--copy-contents", "b", "a"]);
    r.expect_code(1);
    assert!(
        r.stderr
            .contains("cannot overwrite non-directory 'a/d' with directory 'b/d'"),
        "{r:#?}"
    );
    let r = run_in(
        Some(d),
        &[
            "-RT",
            "--copy-contents",
            "--keep-directory-symlink",
            "b",
            "a",
        ],
    );
    r.expect_code(0);
    assert!(d.join("a/b/e").is_dir());
    assert!(fs::symlink_metadata(d.join("a/d")).unwrap().is_symlink());
}

/// Absurd values are usage errors, not runaway runs: `-j` up to 256, `--split` at least 1M.
#[test]
fn absurd_jobs_and_split_values_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a"), "a").unwrap();
    for (args, message) in [
        (
            &["-j", "1000000", "a", "b"][..],
            "mimeo: invalid argument '1000000' for '--jobs': must be a number from 1 to 256\n",
        ),
        (
            &["-j", "0", "a", "b"],
            "mimeo: invalid argument '0' for '--jobs': must be a number from 1 to 256\n",
        ),
        (
            &["--jobs=257", "a", "b"],
            "mimeo: invalid argument '257' for '--jobs': must be a number from 1 to 256\n",
        ),
        (
            &["--split", "1", "a", "b"],
            "mimeo: invalid argument '1' for '--split': must be at least 1M, or off\n",
        ),
        (
            &["--split=4K", "a", "b"],
            "mimeo: invalid argument '4K' for '--split': must be at least 1M, or off\n",
        ),
    ] {
        let r = run_in(Some(dir.path()), args);
        r.expect_code(2);
        assert_eq!(
            r.stderr,
            format!("{message}Try 'mimeo --help' for more information.\n"),
            "{args:?}"
        );
        assert!(!dir.path().join("b").exists());
    }
    for args in [&["-j", "256", "a", "b"][..], &["--split=1M", "a", "c"]] {
        run_in(Some(dir.path()), args).expect_code(0);
    }
}

/// SIGINT and SIGTERM end a run within a second, whatever it is doing: streaming without
/// end (`/dev/zero` into `/dev/null`), waiting for a FIFO's writer, or copying a tree with
/// the most workers `-j` allows.
#[test]
fn every_run_ends_within_a_second_of_sigint_or_sigterm() {
    use rustix::process::Signal;
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    rustix::fs::mkfifoat(rustix::fs::CWD, d.join("fifo"), 0o600.into()).unwrap();
    fs::create_dir(d.join("tree")).unwrap();
    for i in 0..2000 {
        fs::write(d.join("tree").join(i.to_string()), vec![b'x'; 4096]).unwrap();
    }
    let out = |n: &str| d.join(n).to_str().unwrap().to_owned();
    let cases: [(&str, Vec<String>); 3] = [
        ("stream", vec!["/dev/zero".into(), "/dev/null".into()]),
        ("fifo", vec![out("fifo"), out("from-fifo")]),
        (
            "tree",
            vec![
                "-r".into(),
                "-j".into(),
                "256".into(),
                "--reflink=never".into(),
                out("tree"),
                out("tree-copy"),
            ],
        ),
    ];
    for (what, args) in cases {
        for (sig, code) in [(Signal::TERM, 143), (Signal::INT, 130)] {
            // A second try where the first took longer: the machine the tests share may
            // stall a process for a moment; a run that ignores the signal fails both.
            let mut took = Vec::new();
            for _ in 0..2 {
                let _ = fs::remove_dir_all(d.join("tree-copy"));
                let child = util::spawn_fp("", &args);
                std::thread::sleep(Duration::from_millis(200));
                let sent = Instant::now();
                util::signal(&child, sig);
                let (_, r) = util::finish(child);
                took.push(sent.elapsed());
                // The tree may be copied before the signal comes on a fast machine.
                if what != "tree" || r.code != 0 {
                    assert_eq!(r.code, code, "{what}, {sig:?}: {r:#?}");
                }
                if took.last() < Some(&Duration::from_secs(1)) {
                    break;
                }
            }
            assert!(
                took.last() < Some(&Duration::from_secs(1)),
                "{what}, {sig:?}: {took:?}"
            );
        }
    }
}
