//! The Python tests, run by `cargo test`: builds the extension module with maturin into a
//! virtual environment and runs the pytest suite in `tests/python`, failing when it fails.
//!
//! The environment is `$MIMEO_PY_VENV`, or `py-venv` in the target directory, made with
//! `python3 -m venv` and given maturin and pytest from PyPI when it does not exist yet
//! (`.ci/run` makes it beforehand). The build uses a target directory of its own
//! (`py-build`), so it never waits for the lock of the build that runs this test.
//! `MIMEO_REQUIRE_FS=1` reaches pytest: there too, a filesystem that cannot be made is a
//! failure, not a skip.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(what: &str, cmd: &mut Command) {
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(status.success(), "{what} failed: {status}");
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { root.join(t) })
        .unwrap_or_else(|| root.join("target"))
}

#[test]
fn python_suite_passes() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir.join("../..").canonicalize().unwrap();
    let target = target_dir(&root);
    let build = target.join("py-build");
    let venv = std::env::var_os("MIMEO_PY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("py-venv"));
    let python = venv.join("bin/python");
    if !python.exists() {
        run(
            "python3 -m venv",
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
        );
        run(
            "pip install maturin pytest",
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "maturin>=1.5,<2",
                "pytest>=7",
            ]),
        );
    }
    run(
        "cargo build -p mimeo-testkit",
        Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--locked", "-p", "mimeo-testkit"])
            .arg("--target-dir")
            .arg(&build)
            .current_dir(&root),
    );
    run(
        "maturin develop",
        Command::new(venv.join("bin/maturin"))
            .args(["develop", "--release", "--locked", "--quiet"])
            .env("VIRTUAL_ENV", &venv)
            .env("CARGO_TARGET_DIR", &build)
            .current_dir(crate_dir),
    );
    run(
        "pytest",
        Command::new(&python)
            .args([
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests/python",
            ])
            .env("MIMEO_TESTKIT", build.join("debug/mimeo-testkit"))
            .current_dir(crate_dir),
    );
}
