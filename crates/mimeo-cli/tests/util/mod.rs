//! Helpers for driving the real `mimeo` binary: running it, parsing its
//! JSON Lines, and building source files with known layouts.

#![allow(dead_code)] // each test binary uses a different subset

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

use mimeo_testkit::compare::first_difference;
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{FsKind, LoopFs, capture, st_blocks};
use serde_json::Value;

pub mod tree;

/// A `mimeo` command ready for arguments.
pub fn mimeo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mimeo"))
}

/// One finished `mimeo` run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// Parsed stdout lines when `--json` was given.
    pub json: Vec<Value>,
}

impl Run {
    /// The `summary` line (the last JSON line).
    #[track_caller]
    pub fn summary(&self) -> &Value {
        let last = self
            .json
            .last()
            .unwrap_or_else(|| panic!("no JSON output: {self:#?}"));
        assert_eq!(
            last["type"], "summary",
            "last line is not the summary: {self:#?}"
        );
        last
    }

    /// A numeric field of the summary, e.g. `"files"` or
    /// `"files_by_method.clone"`.
    #[track_caller]
    pub fn count(&self, dotted: &str) -> u64 {
        let mut v = self.summary();
        for key in dotted.split('.') {
            v = &v[key];
        }
        v.as_u64()
            .unwrap_or_else(|| panic!("summary has no numeric {dotted}: {self:#?}"))
    }

    /// All lines of one `type`.
    pub fn events(&self, kind: &str) -> Vec<&Value> {
        self.json.iter().filter(|v| v["type"] == kind).collect()
    }

    /// The single `copied` event (for one-file copies with `-v --json`).
    #[track_caller]
    pub fn copied(&self) -> &Value {
        let copied = self.events("copied");
        assert_eq!(copied.len(), 1, "expected one copied event: {self:#?}");
        copied[0]
    }

    /// Panics with the whole run unless the exit status is `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(self.code, code, "unexpected exit status: {self:#?}");
        self
    }

    /// Asserts a successful one-file copy by `method` ("clone", "offload"
    /// or "stream") of `bytes` bytes, per the `copied` event and the
    /// summary.
    #[track_caller]
    pub fn expect_method(&self, method: &str, bytes: u64) {
        self.expect_code(0);
        let c = self.copied();
        assert_eq!(c["method"], method, "{self:#?}");
        assert_eq!(c["bytes"].as_u64(), Some(bytes), "{self:#?}");
        assert_eq!(
            self.count(&format!("files_by_method.{method}")),
            1,
            "{self:#?}"
        );
        assert_eq!(
            self.count(&format!("by_method.{method}")),
            bytes,
            "{self:#?}"
        );
        assert_eq!(self.count("errors"), 0, "{self:#?}");
    }
}

/// Runs `mimeo args...` in `cwd` (or the current directory).
pub fn run_in<S: AsRef<OsStr>>(cwd: Option<&Path>, args: &[S]) -> Run {
    let mut cmd = mimeo();
    cmd.args(args);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let json = args.iter().any(|a| a.as_ref() == "--json");
    run_command(&mut cmd, json)
}

/// Runs a prepared `mimeo` command (possibly wrapped, e.g. by `timeout`),
/// parsing stdout as JSON Lines when `json`.
pub fn run_command(cmd: &mut Command, json: bool) -> Run {
    let out = capture(cmd).expect("cannot start mimeo");
    let json = if json {
        out.stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}\n{}", out.stdout))
            })
            .collect()
    } else {
        Vec::new()
    };
    Run {
        code: out.code(),
        stdout: out.stdout,
        stderr: out.stderr,
        json,
    }
}

/// Runs `mimeo args...`.
pub fn run<S: AsRef<OsStr>>(args: &[S]) -> Run {
    run_in(None, args)
}

/// Runs `mimeo -v --json [flags...] src dst`.
pub fn copy_json(flags: &[&str], src: &Path, dst: &Path) -> Run {
    let mut args: Vec<&OsStr> = vec!["-v".as_ref(), "--json".as_ref()];
    args.extend(flags.iter().map(|f| OsStr::new(*f)));
    args.extend([src.as_os_str(), dst.as_os_str()]);
    run(&args)
}

/// A loop filesystem of `kind` big enough for most single-file tests.
pub fn scratch(kind: FsKind) -> Option<LoopFs> {
    LoopFs::try_new(kind, kind.min_size_mib().max(300))
}

/// Writes a file of `size` bytes with seeded random data at each of the
/// `data` ranges `(offset, len)` and holes elsewhere.
pub fn sparse_file(path: &Path, size: u64, data: &[(u64, u64)]) {
    let file = File::create(path).unwrap();
    let mut rng = Rng::new(size ^ data.len() as u64);
    for &(at, len) in data {
        let mut buf = vec![0u8; len as usize];
        rng.fill(&mut buf);
        file.write_all_at(&buf, at).unwrap();
    }
    file.set_len(size).unwrap();
    file.sync_all().unwrap();
}

/// Writes `size` bytes of seeded random data.
pub fn random_file(path: &Path, size: u64) {
    sparse_file(path, size, &[(0, size)]);
}

/// Asserts that two files have the same size and bytes (reading only the
/// data segments, so huge sparse files are cheap).
#[track_caller]
pub fn assert_same_bytes(left: &Path, right: &Path) {
    let (l, r) = (meta(left), meta(right));
    assert_eq!(l.len(), r.len(), "size of {right:?} differs from {left:?}");
    let diff = first_difference(left, right, l.len()).unwrap();
    assert_eq!(
        diff, None,
        "{right:?} differs from {left:?} at byte {diff:?}"
    );
}

/// Asserts equal bytes and that the copy allocates no more blocks than
/// the source (holes were kept).
#[track_caller]
pub fn assert_sparse_copy(src: &Path, dst: &Path) {
    assert_same_bytes(src, dst);
    let (sb, db) = (st_blocks(src).unwrap(), st_blocks(dst).unwrap());
    assert!(db <= sb, "{dst:?} has {db} blocks, the source {sb}");
}

/// `lstat`, panicking with the path.
#[track_caller]
pub fn meta(path: &Path) -> std::fs::Metadata {
    std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("lstat {path:?}: {e}"))
}

/// Sorted names in `dir`: to prove no stray destination or temporary file.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Whether `name` is one of mimeo's own scratch entries: a temporary (`.mimeo-PID-N.tmp`) or
/// a directory's in-progress marker (`.mimeo-PID-N.partial`).
pub fn is_scratch(name: &std::ffi::OsStr) -> bool {
    let b = name.as_encoded_bytes();
    b.starts_with(b".mimeo-") && (b.ends_with(b".tmp") || b.ends_with(b".partial"))
}

/// Whether the directory holding `path` carries an in-progress marker: its entries may be
/// incomplete (a killed run was writing them), which `--update` must then finish.
pub fn in_marked_dir(path: &Path) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let n = e.file_name();
            is_scratch(&n) && n.as_encoded_bytes().ends_with(b".partial")
        })
    })
}
