//! Helpers for tree-copy tests: resource limits and time limits for the
//! `mimeo` child, GNU `cp` as the oracle, scratch tmpfs mounts and fixed
//! times.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::Duration;

use mimeo_testkit::{Captured, capture};
use rustix::fs::{AtFlags, CWD, Timespec, Timestamps};

use super::{Run, mimeo, run_command};

/// Makes `cmd` start with both the soft and the hard `RLIMIT_NOFILE` at
/// `limit` (like `ulimit -n limit` in a shell), so the child cannot raise
/// it again.
#[allow(unsafe_code)]
pub fn limit_open_files(cmd: &mut Command, limit: u64) {
    use std::os::unix::process::CommandExt;
    let rlimit = rustix::process::Rlimit {
        current: Some(limit),
        maximum: Some(limit),
    };
    // SAFETY: the closure runs in the forked child before exec. It only
    // issues the setrlimit system call on a value captured by copy: no
    // allocation, no locks, nothing that is unsafe after fork in a
    // multi-threaded parent.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setrlimit(rustix::process::Resource::Nofile, rlimit)
                .map_err(Into::into)
        });
    }
}

/// A `mimeo args...` command killed after `secs` seconds (exit 124 or
/// 137), for runs that could hang (FIFOs).
pub fn mimeo_timed<S: AsRef<OsStr>>(secs: u32, args: &[S]) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.args(["--kill-after=5", &secs.to_string()])
        .arg(mimeo().get_program())
        .args(args);
    cmd
}

/// Runs `mimeo args...` with a time limit; panics if it was killed.
#[track_caller]
pub fn run_timed<S: AsRef<OsStr>>(secs: u32, args: &[S]) -> Run {
    let json = args.iter().any(|a| a.as_ref() == "--json");
    let run = run_command(&mut mimeo_timed(secs, args), json);
    assert!(
        run.code != 124 && run.code != 137,
        "mimeo did not finish within {secs} s (hung?): {run:#?}"
    );
    run
}

/// Runs GNU `cp args...` in `cwd` (or the current directory).
pub fn cp_in<S: AsRef<OsStr>>(cwd: Option<&Path>, args: &[S]) -> Captured {
    let mut cmd = Command::new("cp");
    cmd.args(args);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    capture(&mut cmd).expect("cannot run cp")
}

/// Runs GNU `cp args...` and panics unless it succeeds.
#[track_caller]
pub fn cp_ok<S: AsRef<OsStr>>(cwd: Option<&Path>, args: &[S]) {
    let out = cp_in(cwd, args);
    assert!(out.success(), "the oracle failed: {out}");
}

/// A tmpfs mounted at an existing directory, unmounted on drop.
#[derive(Debug)]
pub struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of at most `size_mib` MiB at `path`, with `noatime`
    /// so reading a source does not change it for the next tool.
    pub fn mount(path: &Path, size_mib: u64) -> Tmpfs {
        mimeo_testkit::run_ok(
            "mount",
            &[
                "-t".as_ref(),
                "tmpfs".as_ref(),
                "-o".as_ref(),
                format!("size={size_mib}m,mode=755,noatime").as_ref(),
                "mimeo-test".as_ref(),
                path.as_os_str(),
            ],
        );
        Tmpfs {
            path: path.to_path_buf(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        for attempt in 0..5 {
            let out = capture(Command::new("umount").arg(&self.path));
            if matches!(&out, Ok(o) if o.success()) {
                return;
            }
            thread::sleep(Duration::from_millis(50 << attempt));
        }
        let _ = capture(Command::new("umount").arg("-l").arg(&self.path));
    }
}

/// A fresh `noatime` tmpfs in a temporary directory: a scratch area where
/// cp and mimeo can read the same source one after the other.
#[derive(Debug)]
pub struct Scratch {
    // Unmounted before the directory is removed (fields drop in order).
    fs: Tmpfs,
    _dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        Scratch {
            fs: Tmpfs::mount(&mnt, 2 << 10),
            _dir: dir,
        }
    }

    pub fn path(&self) -> &Path {
        self.fs.path()
    }
}

/// Sets the atime and mtime of `path` (not following a symlink) to fixed
/// values with nanoseconds, so separately built trees compare equal.
pub fn fixed_times(path: &Path) {
    let t = |tv_sec, tv_nsec| Timespec { tv_sec, tv_nsec };
    let times = Timestamps {
        last_access: t(1_500_000_000, 123_456_789),
        last_modification: t(1_400_000_000, 987_654_321),
    };
    rustix::fs::utimensat(CWD, path, &times, AtFlags::SYMLINK_NOFOLLOW)
        .unwrap_or_else(|e| panic!("utimensat {path:?}: {e}"));
}

/// Every regular file below `root` (path-based; for shallow trees).
pub fn regular_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let ft = entry.file_type().unwrap();
            if ft.is_dir() {
                todo.push(entry.path());
            } else if ft.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}
