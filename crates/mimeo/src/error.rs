//! Typed errors: every failure names the path and the operation that failed.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// The operation that failed, named as cp names it in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    Stat,
    Open,
    Create,
    CreateDir,
    ReadDir,
    Read,
    Write,
    Clone,
    Truncate,
    Link,
    Symlink,
    ReadLink,
    MakeNode,
    Rename,
    Remove,
    Chown,
    Chmod,
    SetTimes,
    ListXattr,
    GetXattr,
    SetXattr,
    /// The source disappeared between being listed and being copied.
    Vanished,
    /// The copy was refused before anything was written (same file, into itself, type clash).
    Refuse,
    /// The source changed while it was being copied.
    Changed,
    /// Flushing to stable storage (`--sync`).
    Sync,
    /// The copy's content differs from its source (`--verify`).
    Verify,
    /// The run was stopped (SIGINT/SIGTERM) while this entry was in progress; it was removed.
    Interrupted,
}

impl Op {
    /// A stable lower-case name, used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Op::Stat => "stat",
            Op::Open => "open",
            Op::Create => "create",
            Op::CreateDir => "create_dir",
            Op::ReadDir => "read_dir",
            Op::Read => "read",
            Op::Write => "write",
            Op::Clone => "clone",
            Op::Truncate => "truncate",
            Op::Link => "link",
            Op::Symlink => "symlink",
            Op::ReadLink => "readlink",
            Op::MakeNode => "mknod",
            Op::Rename => "rename",
            Op::Remove => "remove",
            Op::Chown => "chown",
            Op::Chmod => "chmod",
            Op::SetTimes => "set_times",
            Op::ListXattr => "list_xattr",
            Op::GetXattr => "get_xattr",
            Op::SetXattr => "set_xattr",
            Op::Vanished => "vanished",
            Op::Refuse => "refuse",
            Op::Changed => "changed",
            Op::Sync => "sync",
            Op::Verify => "verify",
            Op::Interrupted => "interrupted",
        }
    }

    /// The verb phrase cp uses: "cannot {phrase} 'path'".
    fn phrase(self) -> &'static str {
        match self {
            Op::Stat => "cannot stat",
            Op::Open => "cannot open",
            Op::Create => "cannot create regular file",
            Op::CreateDir => "cannot create directory",
            Op::ReadDir => "cannot access",
            Op::Read => "error reading",
            Op::Write => "error writing",
            Op::Clone => "failed to clone",
            Op::Truncate => "failed to extend",
            Op::Link => "cannot create hard link",
            Op::Symlink => "cannot create symbolic link",
            Op::ReadLink => "cannot read symbolic link",
            Op::MakeNode => "cannot create special file",
            Op::Rename => "cannot move into place",
            Op::Remove => "cannot remove",
            Op::Chown => "failed to preserve ownership for",
            Op::Chmod => "setting permissions for",
            Op::SetTimes => "preserving times for",
            Op::ListXattr => "failed to list extended attributes of",
            Op::GetXattr => "failed to read extended attributes of",
            Op::SetXattr => "failed to set extended attributes of",
            Op::Vanished => "source vanished:",
            Op::Refuse => "refusing to copy",
            Op::Changed => "source changed while copying",
            Op::Sync => "failed to flush",
            Op::Verify => "verification failed for",
            Op::Interrupted => "interrupted while copying",
        }
    }
}

/// What went wrong, beyond the operation.
#[derive(Debug)]
pub enum Cause {
    /// A system call failed.
    Io(io::Error),
    /// A rule of mimeo or cp refused the operation; the text says which.
    Refused(String),
}

/// A failure on one entry: path + operation + cause.
#[derive(Debug)]
pub struct Error {
    pub path: PathBuf,
    pub op: Op,
    pub cause: Cause,
}

impl Error {
    pub fn io(op: Op, path: impl Into<PathBuf>, err: impl Into<io::Error>) -> Self {
        Error {
            path: path.into(),
            op,
            cause: Cause::Io(err.into()),
        }
    }

    pub fn refused(op: Op, path: impl Into<PathBuf>, why: impl Into<String>) -> Self {
        Error {
            path: path.into(),
            op,
            cause: Cause::Refused(why.into()),
        }
    }

    /// The errno, when a system call failed.
    pub fn errno(&self) -> Option<i32> {
        match &self.cause {
            Cause::Io(e) => e.raw_os_error(),
            Cause::Refused(_) => None,
        }
    }

    /// The cause alone, in strerror's words ("No such file or directory").
    pub fn message(&self) -> String {
        match &self.cause {
            Cause::Io(e) => io_message(e),
            Cause::Refused(why) => why.clone(),
        }
    }

    /// Whether this error means the source disappeared under us.
    pub fn is_vanished(&self) -> bool {
        self.op == Op::Vanished
    }
}

/// `strerror` text for an io::Error, without Rust's " (os error N)" suffix.
pub fn io_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = crate::path_display(&self.path);
        match &self.cause {
            // Refusals carry cp's full sentence, paths included.
            Cause::Refused(why) if self.op == Op::Refuse => f.write_str(why),
            Cause::Io(e) => write!(f, "{} '{}': {}", self.op.phrase(), path, io_message(e)),
            Cause::Refused(why) => write!(f, "{} '{}': {}", self.op.phrase(), path, why),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Cause::Io(e) => Some(e),
            Cause::Refused(_) => None,
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Io(e) => write!(f, "{}", io_message(e)),
            Cause::Refused(why) => f.write_str(why),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
