//! The command line against GNU cp 9.1 as the oracle.
//!
//! Each case builds the same small set-up in two directories, runs cp in one and mimeo in
//! the other with the same arguments, and compares the outcome (the exit status: a usage
//! error is 1 under the name cp, as cp's, and 2 under the name mimeo), the resulting trees
//! and, where the case says so, the messages word for word. mimeo runs through a link named `cp`, so its messages start with
//! `cp:` as the oracle's do. Both run with `LC_ALL=C`, so that cp quotes with ASCII quotes.

mod util;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use mimeo_testkit::{Captured, CompareOptions, capture, compare_trees};
use tempfile::TempDir;

/// The set-up every case starts from.
fn setup(dir: &Path) {
    let file = |name: &str, text: &str, mode: u32| {
        let path = dir.join(name);
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    };
    file("a", "hello\n", 0o644);
    file("x", "#!/bin/sh\n", 0o777);
    file("old", "old\n", 0o644);
    fs::create_dir(dir.join("d")).unwrap();
    file("d/f", "in d\n", 0o640);
    symlink("d", dir.join("link")).unwrap();
    symlink("x", dir.join("lx")).unwrap();
    fs::create_dir(dir.join("tgt")).unwrap();
    fs::create_dir(dir.join("tgt2")).unwrap();
}

/// One case run by both programs.
#[derive(Debug)]
struct Pair {
    args: Vec<String>,
    cp: Captured,
    ours: Captured,
    cp_dir: TempDir,
    our_dir: TempDir,
}

/// A directory holding `cp`, a link to the mimeo binary.
fn mimeo_as_cp() -> (TempDir, PathBuf) {
    let bin = tempfile::tempdir().unwrap();
    let cp = bin.path().join("cp");
    symlink(util::mimeo().get_program(), &cp).unwrap();
    (bin, cp)
}

fn run_in(program: &Path, dir: &Path, args: &[&str]) -> Captured {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(dir).env("LC_ALL", "C");
    capture(&mut cmd).unwrap_or_else(|e| panic!("cannot run {program:?}: {e}"))
}

/// Runs `cp args...` and mimeo (as `cp`) with the same arguments in two fresh set-ups.
fn differential(args: &[&str]) -> Pair {
    let (cp_dir, our_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    setup(cp_dir.path());
    setup(our_dir.path());
    let (_bin, ours) = mimeo_as_cp();
    Pair {
        args: args.iter().map(|a| a.to_string()).collect(),
        cp: run_in(Path::new("cp"), cp_dir.path(), args),
        ours: run_in(&ours, our_dir.path(), args),
        cp_dir,
        our_dir,
    }
}

impl Pair {
    /// Both succeed or both fail; a usage error of cp's (it points to --help) is exit 2 for
    /// mimeo; and both leave the same trees (type, bytes, mode, symlink targets).
    #[track_caller]
    fn assert_same_outcome(&self) -> &Pair {
        assert_eq!(
            self.cp.code(),
            self.ours.code(),
            "exit status differs for {:?}:\n{}\n{}",
            self.args,
            self.cp,
            self.ours
        );
        let diff = compare_trees(
            self.cp_dir.path(),
            self.our_dir.path(),
            &CompareOptions::content_and_mode(),
        )
        .unwrap();
        assert!(
            diff.is_equal(),
            "trees differ for {:?}:\n{diff}\n{}\n{}",
            self.args,
            self.cp,
            self.ours
        );
        self
    }

    /// The same messages, word for word.
    #[track_caller]
    fn assert_same_stderr(&self) -> &Pair {
        assert_eq!(
            self.cp.stderr, self.ours.stderr,
            "messages differ for {:?}",
            self.args
        );
        self
    }

    fn ours(&self, name: &str) -> PathBuf {
        self.our_dir.path().join(name)
    }
}

#[test]
fn repeated_flags_are_accepted_as_in_cp() {
    for args in [
        &["-r", "-R", "d", "out"][..],
        &["-rR", "d", "out"],
        &["-v", "-v", "a", "out"],
        &["-v", "--verbose", "a", "out"],
        &["-a", "-a", "d", "out"],
        &["-f", "-f", "a", "old"],
        &["-n", "-n", "a", "old"],
        &["-u", "-u", "a", "out"],
        &["-p", "-p", "x", "out"],
        &["-d", "-d", "lx", "out"],
        &["-P", "-P", "lx", "out"],
        &["-L", "-L", "lx", "out"],
        &["-H", "-H", "lx", "out"],
        &["-x", "-x", "a", "out"],
        &["-T", "-T", "a", "out"],
        &["-rT", "-T", "d", "tgt"],
        &["-Z", "-Z", "a", "out"],
        &["--reflink=auto", "--reflink=never", "a", "out"],
        // The last --reflink counts: --reflink alone (always) fails where cloning cannot.
        &["--reflink", "--reflink=auto", "a", "out"],
        &["--sparse=always", "--sparse=never", "a", "out"],
        &["--preserve=mode", "--preserve=timestamps", "x", "out"],
        &[
            "--no-preserve=links",
            "--no-preserve=timestamps",
            "x",
            "out",
        ],
        &[
            "--strip-trailing-slashes",
            "--strip-trailing-slashes",
            "-r",
            "link/",
            "tgt",
        ],
    ] {
        differential(args).assert_same_outcome();
    }
}

/// A target that cannot take several sources (or `-t`) is reported with the error of opening
/// it as a directory, as cp 9.1 words it, and before the rule of `--parents`. The
/// differential fuzzer (`fuzz_cp.rs`) found the older wording "is not a directory".
#[test]
fn an_unusable_target_is_reported_as_cp_reports_it() {
    for args in [
        &["a", "x", "nodir"][..],
        &["a", "x", "old"],
        &["a", "x", "old/"],
        &["-t", "nodir", "a"],
        &["-t", "old", "a"],
        &["--parents", "a", "x", "old"],
        &["--parents", "a", "x", "nodir"],
        &["--parents", "-t", "old", "a"],
        &["--parents", "a", "old"],
        // -t with -T is an error of its own (exit 1, no pointer to --help), checked first.
        &["-t", "tgt", "-T", "a"],
        &["--parents", "-t", "tgt", "-T", "a"],
        &["--parents", "-T", "a", "x", "tgt"],
    ] {
        differential(args)
            .assert_same_outcome()
            .assert_same_stderr();
    }
}

#[test]
fn later_flags_override_earlier_ones_as_in_cp() {
    for args in [
        // -H, -L, -P, -d and -a each set how symlinks are treated: the last one counts.
        &["-L", "-P", "lx", "out"][..],
        &["-P", "-L", "lx", "out"],
        &["-L", "-a", "lx", "out"],
        &["-a", "-L", "lx", "out"],
        &["-La", "lx", "out"],
        &["-aL", "lx", "out"],
        &["-H", "-d", "lx", "out"],
        &["-d", "-H", "lx", "out"],
        &["-L", "-r", "link", "out"],
        // -p, -a, --preserve and --no-preserve apply in order.
        &["--no-preserve=mode", "-p", "x", "out"],
        &["--no-preserve=all", "-a", "x", "out"],
        &["--no-preserve=mode", "--preserve", "x", "out"],
        &["--no-preserve=mode", "--preserve=all", "x", "out"],
    ] {
        differential(args).assert_same_outcome();
    }
}

#[test]
fn no_clobber_wins_over_force_in_either_order() {
    for args in [
        &["-n", "-f", "a", "old"][..],
        &["-f", "-n", "a", "old"],
        &["-nf", "a", "old"],
        &["-fn", "a", "old"],
        &["--force", "--no-clobber", "a", "old"],
    ] {
        let pair = differential(args);
        pair.assert_same_outcome();
        assert_eq!(
            fs::read_to_string(pair.ours("old")).unwrap(),
            "old\n",
            "{args:?}"
        );
    }
}

#[test]
fn unique_abbreviations_of_long_options_and_values_work_as_in_cp() {
    for args in [
        &["--recur", "d", "out"][..],
        &["--no-cl", "a", "old"],
        &["--verb", "a", "out"],
        &["--arch", "d", "out"],
        &["--one", "a", "out"],
        &["--no-t", "a", "out"],
        &["--target=tgt", "a"],
        &["--target", "tgt", "a"],
        &["--u", "a", "out"],
        // cp's reading of a prefix wins over mimeo's own long options (--dry-run, --stats,
        // --progress).
        &["--d", "lx", "out"],
        &["--st", "-r", "link/", "tgt"],
        &["--pr", "x", "out"],
        // Values too, as cp's argmatch reads them.
        &["--reflink=n", "a", "out"],
        &["--refl=au", "a", "out"],
        &["--sp", "n", "a", "out"],
        &["--sparse=al", "a", "out"],
        &["--preserve=mo,time", "x", "out"],
        &["-p", "--no-preserve=t", "x", "out"],
    ] {
        differential(args)
            .assert_same_outcome()
            .assert_same_stderr();
    }
}

#[test]
fn bad_options_are_usage_errors_worded_as_in_cp() {
    for args in [
        &["--re", "a", "out"][..],
        &["--re=x", "a", "out"],
        &["--no-", "a", "out"],
        &["--a", "d", "out"],
        &["--c", "a", "out"],
        &["--bogus", "a", "out"],
        &["--bogus=3", "a", "out"],
        &["-k", "a", "out"],
        &["-vk", "a", "out"],
        &["--verbose=3", "a", "out"],
        &["--verb=3", "a", "out"],
        &["--target-directory"],
        &["a", "-t"],
        &["--reflink=foo", "a", "out"],
        &["--reflink=", "a", "out"],
        &["--preserve=bogus", "a", "out"],
        &["--preserve=mode,", "a", "out"],
        &["--no-preserve=", "a", "out"],
    ] {
        let pair = differential(args);
        pair.assert_same_outcome().assert_same_stderr();
        assert_eq!(pair.ours.code(), 1, "{args:?}");
        assert_eq!(mimeo_code(&pair, args), 2, "{args:?}");
    }
}

/// The exit status of the same command line under the name mimeo, in mimeo's set-up.
fn mimeo_code(pair: &Pair, args: &[&str]) -> i32 {
    run_in(
        util::mimeo().get_program().as_ref(),
        pair.our_dir.path(),
        args,
    )
    .code()
}

#[test]
fn reflink_always_needs_sparse_auto_as_in_cp() {
    for args in [
        &["--sparse=always", "--reflink", "a", "out"][..],
        &["--reflink=always", "--sparse=always", "a", "out"],
        &["--sparse=never", "--reflink", "a", "out"],
        &["--reflink", "--sparse=never", "a", "out"],
        &["--sparse=always", "--reflink=auto", "--reflink", "a", "out"],
        &["--sparse=always", "--reflink"],
    ] {
        // GNU's tests/cp/sparse.sh: exit 1, as every usage error of cp's.
        let pair = differential(args);
        pair.assert_same_outcome().assert_same_stderr();
        assert_eq!(pair.ours.code(), 1, "{args:?}");
        assert_eq!(mimeo_code(&pair, args), 2, "{args:?}");
    }
    // Only --reflink=always conflicts, and only the last --reflink and --sparse count.
    for args in [
        &["--sparse=always", "--reflink=auto", "a", "out"][..],
        &["--sparse=always", "--reflink=never", "a", "out"],
        &["--sparse=never", "--reflink=never", "a", "out"],
        &[
            "--reflink=always",
            "--sparse=always",
            "--reflink=auto",
            "a",
            "out",
        ],
    ] {
        differential(args)
            .assert_same_outcome()
            .assert_same_stderr();
    }
}

#[test]
fn called_as_cp_every_message_starts_with_cp() {
    for args in [
        &[][..],
        &["a"],
        &["nope", "out"],
        &["d", "out"],
        &["-T", "a", "b", "c"],
        &["a", "nod/"],
        &["--bogus"],
    ] {
        let pair = differential(args);
        pair.assert_same_outcome().assert_same_stderr();
        assert!(pair.ours.stderr.starts_with("cp: "), "{}", pair.ours);
        // Under its own name, the same messages name mimeo.
        let plain = run_in(
            util::mimeo().get_program().as_ref(),
            pair.our_dir.path(),
            args,
        );
        assert_eq!(
            plain.stderr,
            pair.cp.stderr.replace("cp", "mimeo"),
            "{args:?}"
        );
    }
    let (_bin, cp) = mimeo_as_cp();
    let here = Path::new("/");
    let help = run_in(&cp, here, &["--help"]);
    assert!(help.success(), "{help}");
    assert!(
        help.stdout
            .contains("Usage: cp [OPTIONS] SOURCE DEST\n       cp [OPTIONS] SOURCE..."),
        "{help}"
    );
    assert!(!help.stdout.contains("mimeo [OPTIONS]"), "{help}");
    let version = run_in(&cp, here, &["--version"]);
    assert!(version.stdout.starts_with("cp (mimeo) "), "{version}");
}

#[test]
fn selinux_context_options_are_ignored_as_by_cp_without_selinux() {
    if Path::new("/sys/fs/selinux/enforce").exists() {
        eprintln!("SKIPPED: SELinux is enabled here, where cp sets contexts and mimeo does not");
        return;
    }
    for args in [
        &["-Z", "a", "out"][..],
        &["-Zv", "a", "out"],
        &["--context", "a", "out"],
        &["--context=system_u:object_r:user_tmp_t:s0", "a", "out"],
        &["--cont=x", "--context", "a", "out"],
        &["--context=", "-Z", "--context=y", "a", "out"],
        &["-Z", "-r", "d", "out"],
        &["--context=x"],
    ] {
        differential(args)
            .assert_same_outcome()
            .assert_same_stderr();
    }
}

#[test]
fn strip_trailing_slashes_applies_to_sources_copied_into_a_directory() {
    for args in [
        // link/ is the directory; stripped, link is the symlink itself.
        &["-r", "--strip-trailing-slashes", "link/", "tgt"][..],
        &["-r", "--strip-trailing-slashes", "-t", "tgt", "link//"],
        &["-r", "--strip-trailing-slashes", "link/", "a", "tgt/"],
        &["-r", "link/", "tgt"],
        // cp leaves SOURCE in SOURCE DEST as given.
        &["-r", "--strip-trailing-slashes", "link/", "out"],
        &["-r", "--strip-trailing-slashes", "-T", "link/", "tgt2"],
        // Without -r a symlink named as a source is followed anyway; -L follows every one.
        &["--strip-trailing-slashes", "link/", "tgt"],
        &["-rL", "--strip-trailing-slashes", "link/", "tgt"],
    ] {
        differential(args)
            .assert_same_outcome()
            .assert_same_stderr();
    }
    let pair = differential(&["-r", "--strip-trailing-slashes", "link/", "tgt"]);
    assert!(util::meta(&pair.ours("tgt/link")).is_symlink());
}

#[test]
fn more_than_one_target_directory_is_refused_as_in_cp() {
    for args in [
        &["-t", "tgt", "-t", "tgt2", "a"][..],
        &["--target-directory=tgt", "-ttgt", "a"],
    ] {
        let pair = differential(args);
        pair.assert_same_outcome();
        assert_eq!(mimeo_code(&pair, args), 2, "{args:?}");
        assert_eq!(
            pair.ours.stderr.lines().next(),
            pair.cp.stderr.lines().next(),
            "{args:?}"
        );
    }
}
