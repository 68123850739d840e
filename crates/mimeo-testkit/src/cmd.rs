//! Running external programs (mkfs, mount, cp, setfacl) with captured output.

use std::ffi::OsStr;
use std::fmt;
use std::process::{Command, ExitStatus, Stdio};

/// What a finished command produced.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The program and its arguments, for messages.
    pub command: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Captured {
    /// True when the program exited with status 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// The exit code, or -1 when the program was killed by a signal.
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or(-1)
    }
}

impl fmt::Display for Captured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` exited with {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.command, self.status, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd` to completion with stdin closed, capturing stdout and stderr.
/// Fails only when the program cannot be started.
pub fn capture(cmd: &mut Command) -> std::io::Result<Captured> {
    let command = describe(cmd);
    let out = cmd.stdin(Stdio::null()).output()?;
    Ok(Captured {
        command,
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Runs `program args...` and panics with its full output unless it
/// succeeds. For test set-up steps whose failure is a broken environment.
pub fn run_ok<S: AsRef<OsStr>>(program: &str, args: &[S]) -> Captured {
    let mut cmd = Command::new(program);
    cmd.args(args);
    let out = capture(&mut cmd).unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(out.success(), "{out}");
    out
}

/// Whether `program` can be found on PATH (or in the sbin directories, which
/// a non-login root shell may lack on PATH).
pub fn have_program(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(Into::into))
        .any(|dir| dir.join(program).is_file())
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        s.push(' ');
        s.push_str(&arg.to_string_lossy());
    }
    s
}

/// A command that runs `program` as user and group `uid` without supplementary groups
/// (through `setpriv`, from util-linux), or as the caller when `uid` is `None`.
pub fn as_user(uid: Option<u32>, program: impl AsRef<OsStr>) -> Command {
    match uid {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={uid}"))
                .arg("--clear-groups")
                .arg(program);
            c
        }
        None => Command::new(program),
    }
}
