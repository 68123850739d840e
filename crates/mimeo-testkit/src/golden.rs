//! A command's `--help` against a committed copy, so that every change to a command's help is
//! deliberate. After a deliberate change, review the difference the test prints, then rewrite
//! the copy with `MIMEO_UPDATE_GOLDEN=1` and commit it with the change.

use std::path::Path;
use std::process::Command;

/// `program --help` at the width clap uses when stdout is not a terminal (100 columns), without
/// the spaces clap leaves at the end of some lines.
pub fn help(program: &str) -> String {
    let out = Command::new(program)
        .arg("--help")
        .env("COLUMNS", "100")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end().to_owned() + "\n")
        .collect()
}

/// Panics with the lines that differ unless `actual` is the text of the file `golden`; with
/// `MIMEO_UPDATE_GOLDEN` set, writes `actual` there instead.
pub fn assert_golden(golden: &Path, actual: &str) {
    if std::env::var_os("MIMEO_UPDATE_GOLDEN").is_some() {
        std::fs::write(golden, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(golden).unwrap_or_default();
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut diff = String::new();
    for i in 0..e.len().max(a.len()) {
        if e.get(i) != a.get(i) {
            diff.push_str(&format!("line {}:\n", i + 1));
            if let Some(l) = e.get(i) {
                diff.push_str(&format!("-{l}\n"));
            }
            if let Some(l) = a.get(i) {
                diff.push_str(&format!("+{l}\n"));
            }
        }
    }
    assert!(
        diff.is_empty(),
        "{} differs:\n{diff}\nIf the change is intended, rerun with MIMEO_UPDATE_GOLDEN=1 and \
         commit the file.",
        golden.display()
    );
}
