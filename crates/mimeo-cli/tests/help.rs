//! `mimeo --help` against a committed copy, so that every change to the options' help is
//! deliberate.
//!
//! After changing an option or its doc comment, review the difference this test prints, then
//! update the copy and commit it with the change:
//!
//! ```sh
//! MIMEO_UPDATE_GOLDEN=1 cargo test -p mimeo-cli --test help
//! ```

mod util;

use std::path::PathBuf;

/// The committed help text.
fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/help.txt")
}

/// `mimeo --help` at the width clap uses when stdout is not a terminal, without the spaces
/// clap leaves at the end of some lines (so that the copy has none for editors to strip).
fn help() -> String {
    let mut cmd = util::mimeo();
    cmd.arg("--help").env("COLUMNS", "100");
    let out = util::run_command(&mut cmd, false);
    out.expect_code(0);
    assert!(out.stderr.is_empty(), "{out:#?}");
    out.stdout
        .lines()
        .map(|l| l.trim_end().to_owned() + "\n")
        .collect()
}

/// The lines that differ, as `-expected` / `+actual`.
fn line_diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut out = String::new();
    for i in 0..e.len().max(a.len()) {
        let (l, r) = (e.get(i), a.get(i));
        if l != r {
            out.push_str(&format!("line {}:\n", i + 1));
            if let Some(l) = l {
                out.push_str(&format!("-{l}\n"));
            }
            if let Some(r) = r {
                out.push_str(&format!("+{r}\n"));
            }
        }
    }
    out
}

#[test]
fn help_matches_the_committed_copy() {
    let actual = help();
    let path = golden();
    if std::env::var_os("MIMEO_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &actual).unwrap();
        eprintln!("updated {}", path.display());
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; create it with MIMEO_UPDATE_GOLDEN=1",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "--help differs from {}:\n{}\nIf the change is intended, run \
         `MIMEO_UPDATE_GOLDEN=1 cargo test -p mimeo-cli --test help` and commit the file.",
        path.display(),
        line_diff(&expected, &actual)
    );
}

#[test]
fn help_lists_the_cp_compatible_options() {
    let help = help();
    for option in [
        "-Z, --context[=<CTX>]",
        "--strip-trailing-slashes",
        "-n, --no-clobber",
        "-f, --force",
        "--reflink[=<WHEN>]",
        "--sparse <WHEN>",
        "abbreviated",
    ] {
        assert!(help.contains(option), "--help lacks {option}:\n{help}");
    }
}
