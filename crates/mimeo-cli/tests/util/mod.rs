//! Helpers for driving the real `mimeo` binary: running it, parsing its
//! JSON Lines, and building source files with known layouts.

#![allow(dead_code)] // each test binary uses a different subset

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use mimeo_testkit::capture;
use mimeo_testkit::oracle::{Allow, HalfFiles, no_half_files};
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

#[allow(unused_imports)] // each test binary uses a different subset
pub use mimeo_testkit::files::{
    assert_same_bytes, assert_sparse_copy, meta, names, random_file, scratch, sparse_file,
};

#[allow(unused_imports)] // each test binary uses a different subset
pub use mimeo_testkit::oracle::{in_marked_dir, is_scratch};

/// [`no_half_files`](mimeo_testkit::oracle::no_half_files), panicking with `what` and the
/// file that looks complete but is not.
#[track_caller]
pub fn assert_no_half_files(what: &str, src: &Path, dst: &Path, allow: &Allow<'_>) -> HalfFiles {
    no_half_files(src, dst, allow).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// A `mimeo args...` command with fault injection `fp` (`MIMEO_FAILPOINTS`, none when empty),
/// its output piped, ready to spawn.
pub fn mimeo_fp<S: AsRef<OsStr>>(fp: &str, args: &[S]) -> Command {
    let mut cmd = mimeo();
    cmd.args(args);
    if !fp.is_empty() {
        cmd.env("MIMEO_FAILPOINTS", fp);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Starts `mimeo args...` in the background with fault injection `fp`.
pub fn spawn_fp<S: AsRef<OsStr>>(fp: &str, args: &[S]) -> Child {
    mimeo_fp(fp, args).spawn().expect("cannot start mimeo")
}

/// Runs `mimeo args...` with fault injection `fp`.
pub fn run_fp<S: AsRef<OsStr>>(fp: &str, args: &[S]) -> Run {
    let json = args.iter().any(|a| a.as_ref() == "--json");
    run_command(&mut mimeo_fp(fp, args), json)
}

/// Waits for a background run, killing it if it takes over a minute, and collects its output
/// (JSON parsed leniently: only complete lines, since a stopped run may cut its last one).
pub fn finish(mut child: Child) -> (ExitStatus, Run) {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("mimeo still running after 60 s");
        }
        thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        json,
    };
    (out.status, run)
}

/// Sends `sig` to a child. It may have exited already; it is not reaped yet, so its pid
/// cannot have been reused.
pub fn signal(child: &Child, sig: rustix::process::Signal) {
    let _ = rustix::process::kill_process(rustix::process::Pid::from_child(child), sig);
}

/// Polls until `cond` holds, for at most `secs` seconds; panics naming `what` on timeout.
#[track_caller]
pub fn wait_for(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(2));
    }
}

/// A name in mimeo's JSON: a string, or `{"hex":…}` with its bytes when it is not UTF-8 (see
/// the README, "JSON output"). Panics on anything else.
#[track_caller]
pub fn json_path(v: &Value) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStringExt;
    if let Some(s) = v.as_str() {
        return s.into();
    }
    let hex = v["hex"]
        .as_str()
        .unwrap_or_else(|| panic!("not a name: {v}"));
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    std::ffi::OsString::from_vec(bytes).into()
}

/// [`json_path`] as text, for comparisons (bytes that are not UTF-8 replaced).
#[track_caller]
pub fn json_name(v: &Value) -> String {
    json_path(v).to_string_lossy().into_owned()
}
