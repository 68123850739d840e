//! Differential fuzzing against GNU cp 9.1 (issue 23): seeded random source trees,
//! destination states and command lines, run by cp and by mimeo called as `cp`, on btrfs,
//! XFS and ext4, as root and as `nobody`; the places (source and destination), exit status,
//! stdout and stderr must match but for the allowlist. See `mimeo_testkit::fuzz`.
//!
//! CI runs a fixed set of cases on each filesystem: `ROOT_CASES` as root, then `NOBODY_CASES`
//! as `nobody`. `MIMEO_FUZZ_CASES=N` runs N per filesystem and user instead, `MIMEO_FUZZ_BASE=S`
//! another set, `MIMEO_FUZZ_USERS=root` or `=nobody` one user only, and `MIMEO_FUZZ_SEED=S` the
//! one case a failure names. The long mode is `mimeo-testkit fuzz-cp`. Every run prints its
//! counts, the allowlist entries and known bugs that took differences out, and each class of
//! what is left.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use mimeo_testkit::fuzz::{self, Config, NOBODY, Report};
use mimeo_testkit::{FsKind, LoopFs};

/// Cases per filesystem in CI, as root and as `nobody`: about a minute per filesystem in all
/// on a loaded 2-core machine.
const ROOT_CASES: usize = 120;
const NOBODY_CASES: usize = 80;
/// The seed the CI cases derive from.
const CI_BASE: u64 = 0x23;

fn fuzz_on(kind: FsKind) {
    let Some(fs) = LoopFs::try_new(kind, 600) else {
        return;
    };
    let index = FsKind::ALL.iter().position(|&k| k == kind).unwrap() as u64;
    let mut total = Report::default();
    let only = std::env::var("MIMEO_FUZZ_USERS").unwrap_or_default();
    let users = [
        (None, ROOT_CASES, "root"),
        (Some(NOBODY), NOBODY_CASES, "nobody"),
    ];
    for (u, (user, cases, who)) in users.into_iter().enumerate() {
        if !only.is_empty() && only != "all" && only != who {
            let _ = writeln!(
                std::io::stderr(),
                "--- {kind}/{who}: not run (MIMEO_FUZZ_USERS={only}) ---"
            );
            continue;
        }
        let cfg = Config {
            program: PathBuf::from(env!("CARGO_BIN_EXE_mimeo")),
            root: fs.path().join("fuzz"),
            user,
            timeout: Duration::from_secs(10),
            label: format!("{kind}/{who}"),
            reproduce: format!(
                "MIMEO_FUZZ_SEED={{seed}} MIMEO_FUZZ_USERS={who} cargo test --locked -p mimeo-cli --test fuzz_cp -- --exact gnu_cp_on_{kind}"
            ),
        };
        let seeds = fuzz::seeds(cases, CI_BASE, index * 2 + u as u64);
        let report = fuzz::run_cp(&cfg, &seeds).unwrap_or_else(|e| panic!("{}: {e}", cfg.label));
        // On the real stderr, passing or not: known bugs must show in every log.
        let _ = writeln!(std::io::stderr(), "--- {} ---\n{report}", cfg.label);
        total.merge(report);
    }
    assert_eq!(
        total.failed, 0,
        "unexplained differences from GNU cp:\n{total}"
    );
    assert!(total.not_built.is_empty(), "cases not built:\n{total}");
    assert!(total.cases > 0, "no case ran");
}

#[test]
fn gnu_cp_on_btrfs() {
    fuzz_on(FsKind::Btrfs);
}

#[test]
fn gnu_cp_on_xfs() {
    fuzz_on(FsKind::Xfs);
}

#[test]
fn gnu_cp_on_ext4() {
    fuzz_on(FsKind::Ext4);
}
