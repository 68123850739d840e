//! Differential fuzzing of `mimeo-cat` against `cat` (issue 23): seeded parts of every
//! size, sparse ones, a symlink, a directory, missing parts and `-`, standard input from a
//! pipe or a file, and an output that is absent, a file, a hard link or symlink of a part,
//! or a part itself, opened as `>`, `>>` or `<>`, or a pipe, or given with `-o`. See
//! `mimeo_testkit::fuzz::cat`.
//!
//! `MIMEO_FUZZ_CASES`, `MIMEO_FUZZ_BASE` and `MIMEO_FUZZ_SEED` work as for `fuzz_cp.rs`; the
//! long mode is `mimeo-testkit fuzz-cat`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use mimeo_testkit::fuzz::{self, Config, Report};
use mimeo_testkit::{FsKind, LoopFs};

/// Cases per filesystem in CI.
const CI_CASES: usize = 150;
const CI_BASE: u64 = 0xca7;

fn fuzz_on(kind: FsKind) {
    let Some(fs) = LoopFs::try_new(kind, 600) else {
        return;
    };
    let index = FsKind::ALL.iter().position(|&k| k == kind).unwrap() as u64;
    let cfg = Config {
        program: PathBuf::from(env!("CARGO_BIN_EXE_mimeo-cat")),
        root: fs.path().join("fuzz"),
        user: None,
        timeout: Duration::from_secs(10),
        label: format!("{kind}/root"),
        reproduce: format!(
            "MIMEO_FUZZ_SEED={{seed}} cargo test --locked -p mimeo-cat --test fuzz_cat -- --exact gnu_cat_on_{kind}"
        ),
    };
    let seeds = fuzz::seeds(CI_CASES, CI_BASE, index * 2);
    let report: Report =
        fuzz::cat::run_cat(&cfg, &seeds).unwrap_or_else(|e| panic!("{}: {e}", cfg.label));
    let _ = writeln!(std::io::stderr(), "--- {} ---\n{report}", cfg.label);
    assert_eq!(
        report.failed, 0,
        "unexplained differences from cat:\n{report}"
    );
    assert!(report.not_built.is_empty(), "cases not built:\n{report}");
    assert!(report.cases > 0, "no case ran");
}

#[test]
fn gnu_cat_on_btrfs() {
    fuzz_on(FsKind::Btrfs);
}

#[test]
fn gnu_cat_on_xfs() {
    fuzz_on(FsKind::Xfs);
}

#[test]
fn gnu_cat_on_ext4() {
    fuzz_on(FsKind::Ext4);
}
