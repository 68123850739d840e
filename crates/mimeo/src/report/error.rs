//! Typed errors: every failure names the path and the operation, and its cause is either an
//! errno or a [`Refusal`] that callers can match on.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The operation that failed, named as cp names it in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Op {
    /// Reading an entry's metadata.
    Stat,
    /// Opening a source, or an existing destination directory.
    Open,
    /// Creating a regular file (or writing into an existing node).
    Create,
    /// Creating a directory.
    CreateDir,
    /// Listing a directory.
    ReadDir,
    /// Reading file data.
    Read,
    /// Writing file data.
    Write,
    /// Cloning extents (`FICLONE`, `FICLONERANGE`).
    Clone,
    /// Setting a file's size (a trailing hole).
    Truncate,
    /// Creating a hard link.
    Link,
    /// Creating a symbolic link.
    Symlink,
    /// Reading a symbolic link's target.
    ReadLink,
    /// Creating a socket or device node.
    MakeNode,
    /// Creating a FIFO.
    MakeFifo,
    /// Moving a finished temporary over its destination.
    Rename,
    /// Removing an entry.
    Remove,
    /// Keeping an existing destination under its backup name (`--backup`).
    Backup,
    /// Setting owner and group.
    Chown,
    /// Setting permission bits.
    Chmod,
    /// Narrowing an existing entry's permission bits to those its old and new modes share,
    /// before it is given another owner (`--preserve=mode,ownership`).
    ClearPerms,
    /// Setting access and modification times.
    SetTimes,
    /// Listing extended attributes.
    ListXattr,
    /// Reading an extended attribute.
    GetXattr,
    /// Setting an extended attribute.
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
    /// Reading a file's extent map (`FIEMAP`).
    MapExtents,
    /// Sharing a file's extents with a duplicate's (`FIDEDUPERANGE`).
    Dedupe,
    /// Looking at a directory of a source's path, to make its copy (`--parents`).
    StatParent,
    /// Creating a directory of a source's path (`--parents`).
    CreateParent,
    /// Reading the ACL of a directory of a source's path (`--parents` with modes kept).
    GetParentAcl,
    /// Looking up, from the working directory, the directory of a destination an earlier
    /// source made, by its name below the target (`--parents`: cp 9.1's set of made files).
    StatMadeDir,
    /// Giving a directory of a source's path its source's times (`--parents`).
    SetParentTimes,
    /// Giving a directory of a source's path its source's mode and ACL (`--parents`).
    SetParentMode,
    /// Giving a directory of a source's path back the mode it was made without
    /// (`--parents`).
    RestoreParentMode,
    /// Giving a copy its source's mode and ACL (`--preserve=mode`), as gnulib's `copy_acl`.
    CopyAcl,
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
            Op::MakeFifo => "mkfifo",
            Op::Rename => "rename",
            Op::Remove => "remove",
            Op::Backup => "backup",
            Op::Chown => "chown",
            Op::Chmod => "chmod",
            Op::ClearPerms => "clear_permissions",
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
            Op::MapExtents => "map_extents",
            Op::Dedupe => "dedupe",
            Op::StatParent => "stat_parent",
            Op::CreateParent => "create_parent",
            Op::GetParentAcl => "get_parent_acl",
            Op::StatMadeDir => "stat_made_dir",
            Op::SetParentTimes => "set_parent_times",
            Op::SetParentMode => "set_parent_mode",
            Op::CopyAcl => "copy_acl",
            Op::RestoreParentMode => "restore_parent_mode",
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
            Op::MakeFifo => "cannot create fifo",
            Op::Rename => "cannot move into place",
            Op::Remove => "cannot remove",
            Op::Backup => "cannot backup",
            Op::Chown => "failed to preserve ownership for",
            Op::Chmod => "setting permissions for",
            Op::ClearPerms => "clearing permissions for",
            Op::SetTimes => "preserving times for",
            // libattr's words, which cp prints (see `Error::attribute` for one attribute's).
            Op::ListXattr => "listing attributes of",
            Op::GetXattr => "failed to read extended attributes of",
            Op::SetXattr => "setting attributes for",
            Op::Vanished => "source vanished:",
            Op::Refuse => "refusing to copy",
            Op::Changed => "source changed while copying",
            Op::Sync => "failed to flush",
            Op::Verify => "verification failed for",
            Op::Interrupted => "interrupted while copying",
            Op::MapExtents => "cannot map the extents of",
            Op::Dedupe => "cannot dedupe",
            Op::StatParent => "failed to get attributes of",
            Op::CreateParent => "cannot make directory",
            // cp names only the path it could not read the ACL of.
            Op::GetParentAcl => "",
            // gnulib's same_name names only the directory, as it is.
            Op::StatMadeDir => "",
            // cp's words where it gives them their attributes at the end.
            Op::SetParentTimes => "failed to preserve times for",
            Op::SetParentMode | Op::CopyAcl => "preserving permissions for",
            Op::RestoreParentMode => "failed to preserve permissions for",
        }
    }

    /// What cp says after the path: a source that cannot be opened is "cannot open 'x' for
    /// reading".
    fn after_path(self) -> &'static str {
        match self {
            Op::Open => " for reading",
            _ => "",
        }
    }
}

/// A rule that refused an operation. The [`Error`]'s path is the entry refused; variants that
/// involve a second entry carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Source and destination are one file (by dev/ino, symlinks followed as cp follows
    /// them). The path is the source; `dst` the destination.
    SameFile {
        /// The destination that is the same file.
        dst: PathBuf,
    },
    /// A directory would be copied into itself or below itself. The path is the source.
    IntoItself {
        /// The destination below the source.
        dst: PathBuf,
    },
    /// A directory without `-r`. The path is the directory.
    NotRecursive,
    /// A directory would replace an existing non-directory. The path is the destination.
    NonDirectoryInTheWay {
        /// The source directory.
        src: PathBuf,
    },
    /// A non-directory would replace an existing directory. The path is the destination.
    DirectoryInTheWay,
    /// Under `-L`, a directory that is its own ancestor. The path is the source.
    Cycle,
    /// [`copy_file`](crate::copy_file) was given something other than a regular file.
    NotRegular,
    /// The source was listed as a regular file and is something else now.
    NoLongerRegular,
    /// The source's size or mtime changed while its data was copied; the copy was removed.
    ChangedWhileCopied,
    /// [`copy_file`](crate::copy_file) under `-n`: the destination exists and was kept.
    Exists,
    /// `--verify`: the copy's size differs from the source's.
    SizeDiffers {
        /// The copy's size.
        copy: u64,
        /// The source's size.
        source: u64,
    },
    /// `--verify`: the copy's content differs from the source's (BLAKE3).
    ContentDiffers,
    /// [`concat`](crate::concat): a part is the output file itself. The path is the part.
    InputIsOutput,
    /// `-l` or `-s` onto an existing entry, kept without `-f` or `--remove-destination`. The
    /// path is the destination.
    LinkExists {
        /// What the link would point to.
        target: PathBuf,
        /// A symbolic link (`-s`), not a hard link (`-l`).
        symbolic: bool,
    },
    /// A regular file onto a symlink that points to nothing, which cp will not write
    /// through. The path is the destination.
    DanglingSymlink,
    /// `-s` with a relative source path into a directory other than the working directory,
    /// where the link would point elsewhere. The path is the destination.
    RelativeSymlink,
    /// Two command-line sources have one destination name, and the first made it in this
    /// run: it is kept, as cp keeps it. The path is the destination.
    JustCreated {
        /// The later source, not copied.
        src: PathBuf,
        /// The destination made is a symlink (cp would have written through it).
        symlink: bool,
    },
    /// A source directory named again on the command line, to another destination than the
    /// first time: cp will not copy it twice (the copies would be hard links to one
    /// directory). The path is the later destination.
    DirectoryTwice {
        /// Where the directory was copied the first time.
        earlier: PathBuf,
    },
    /// `--parents`: a directory on the way to the destination exists and is not a directory.
    /// The path is that entry.
    ParentNotDirectory,
    /// `--backup`: the destination's backup name is the source itself, which the backup
    /// would replace (cp's rule; numbered backups never do). The path is the destination.
    BackupIsSource {
        /// The source, not copied.
        src: PathBuf,
    },
}

/// What went wrong, beyond the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cause {
    /// A system call failed with this errno.
    Os(i32),
    /// A rule of mimeo or cp refused the operation.
    Refused(Refusal),
}

/// A failure on one entry: path + operation + cause.
///
/// It is cheap to clone and can be sent to other threads. [`Display`](fmt::Display) gives
/// cp's sentence for it, without a program-name prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Error {
    /// The entry the operation was about (source or destination, as cp names it).
    pub path: PathBuf,
    /// What was being done.
    pub op: Op,
    /// Why it failed.
    pub cause: Cause,
    /// The source a failed [`Op::Clone`] was from, or what a failed `-l`/`-s` link would
    /// point to, which cp names too ("failed to clone 'd' from 's'", "cannot create hard
    /// link 'd' to 's'").
    pub from: Option<PathBuf>,
    /// The extended attribute a failed [`Op::GetXattr`] or [`Op::SetXattr`] was about, which
    /// cp names in place of the path (see [`Error::with_attribute`]).
    pub attribute: Option<OsString>,
    /// A failure cp counts without a word (see [`Error::unsaid`]): a front end says nothing
    /// of it, but exits as after any failure.
    pub unsaid: bool,
    /// An [`Op::Remove`] under `-f` of a destination that could not be opened: cp tries it
    /// after its `-v` line, where its other removals come before.
    pub(crate) after_failed_open: bool,
    /// A failure cp reports without its `-v` line for the entry (see [`Error::untold`]).
    pub(crate) untold: bool,
}

impl Error {
    /// A failed system call.
    pub fn os(op: Op, path: impl Into<PathBuf>, errno: i32) -> Self {
        Error {
            path: path.into(),
            op,
            cause: Cause::Os(errno),
            from: None,
            attribute: None,
            unsaid: false,
            after_failed_open: false,
            untold: false,
        }
    }

    /// A failed system call, from an `io::Error` (EIO when it carries no errno).
    pub fn io(op: Op, path: impl Into<PathBuf>, err: &io::Error) -> Self {
        Error::os(op, path, err.raw_os_error().unwrap_or(libc::EIO))
    }

    /// A failed system call, from the kernel layer's errno.
    pub(crate) fn sys(op: Op, path: impl Into<PathBuf>, errno: rustix::io::Errno) -> Self {
        Error::os(op, path, errno.raw_os_error())
    }

    /// A refusal by a rule.
    pub fn refused(op: Op, path: impl Into<PathBuf>, why: Refusal) -> Self {
        Error {
            path: path.into(),
            op,
            cause: Cause::Refused(why),
            from: None,
            attribute: None,
            unsaid: false,
            after_failed_open: false,
            untold: false,
        }
    }

    /// The error, as one cp fails the entry on without naming it.
    pub fn unsaid(mut self) -> Self {
        self.unsaid = true;
        self
    }

    /// The error, as a removal under `-f` of a destination that could not be opened.
    pub(crate) fn after_failed_open(mut self) -> Self {
        self.after_failed_open = true;
        self
    }

    /// The error, as one of a step cp takes without its `-v` line for the entry: the link of
    /// an entry -u skipped as up to date to its group's copy.
    pub(crate) fn untold(mut self) -> Self {
        self.untold = true;
        self
    }

    /// The error, naming `src` as the source it was about (the `from` field).
    pub fn from_source(mut self, src: impl Into<PathBuf>) -> Self {
        self.from = Some(src.into());
        self
    }

    /// The error, about the extended attribute `name` of its path. cp names such a failure
    /// through libattr, whose two quoted arguments share one buffer (quoteaf's), so that
    /// both show the name it quoted last: "setting attribute 'user.k' for 'user.k'", "getting
    /// attribute 'user.k' of 'user.k'". The path is kept for JSON.
    pub fn with_attribute(mut self, name: impl Into<OsString>) -> Self {
        self.attribute = Some(name.into());
        self
    }

    /// The errno, when a system call failed.
    pub fn errno(&self) -> Option<i32> {
        match &self.cause {
            Cause::Os(e) => Some(*e),
            Cause::Refused(_) => None,
        }
    }

    /// The refusal, when a rule refused the operation.
    pub fn refusal(&self) -> Option<&Refusal> {
        match &self.cause {
            Cause::Refused(r) => Some(r),
            Cause::Os(_) => None,
        }
    }

    /// Whether the failure came after the destination of a non-directory was decided (and
    /// backed up): cp's checks of the destination come first and are reported alone; what
    /// fails from the copy's first step on (opening the source, making, linking, writing,
    /// the metadata) follows cp's `-v` line for it.
    pub(crate) fn begun(&self) -> bool {
        if self.untold {
            return false;
        }
        match &self.cause {
            Cause::Refused(r) => matches!(
                r,
                Refusal::DanglingSymlink
                    | Refusal::LinkExists { .. }
                    | Refusal::RelativeSymlink
                    | Refusal::NoLongerRegular
                    | Refusal::ChangedWhileCopied
                    | Refusal::SizeDiffers { .. }
                    | Refusal::ContentDiffers
            ),
            Cause::Os(_) if self.after_failed_open => true,
            Cause::Os(_) => !matches!(
                self.op,
                Op::Stat
                    | Op::Backup
                    | Op::Remove
                    | Op::Vanished
                    | Op::Interrupted
                    | Op::Refuse
                    | Op::StatParent
                    | Op::CreateParent
                    | Op::CreateDir
                    | Op::ReadDir
                    // cp 9.1 stops at its lookup of what it made before it copies anything.
                    | Op::StatMadeDir
            ),
        }
    }

    /// The cause alone: strerror's words ("No such file or directory"), or the refusal's.
    pub fn message(&self) -> String {
        match &self.cause {
            Cause::Os(e) => strerror(*e),
            Cause::Refused(r) => self.refusal_sentence(r),
        }
    }

    /// The sentence `cat` says for it: the part's name, bare where no character needs
    /// quoting, then the cause (`x: No such file or directory`).
    pub fn cat_sentence(&self) -> String {
        match &self.cause {
            Cause::Os(e) => format!("{}: {}", cat_name(&self.path), strerror(*e)),
            Cause::Refused(r) => self.refusal_sentence(r),
        }
    }

    /// Whether this error means the source disappeared under us.
    pub fn is_vanished(&self) -> bool {
        self.op == Op::Vanished
    }

    /// cp's full sentence for a refusal, paths included.
    fn refusal_sentence(&self, r: &Refusal) -> String {
        let path = quoted(&self.path);
        match r {
            Refusal::SameFile { dst } => format!("{path} and {} are the same file", quoted(dst)),
            Refusal::IntoItself { dst } => format!(
                "cannot copy a directory, {path}, into itself, {}",
                quoted(dst)
            ),
            Refusal::NotRecursive => format!("-r not specified; omitting directory {path}"),
            Refusal::NonDirectoryInTheWay { src } => format!(
                "cannot overwrite non-directory {path} with directory {}",
                quoted(src)
            ),
            Refusal::DirectoryInTheWay => {
                format!("cannot overwrite directory {path} with non-directory")
            }
            Refusal::Cycle => format!("cannot copy cyclic symbolic link {path}"),
            Refusal::NotRegular => format!("cannot copy {path}: not a regular file"),
            Refusal::NoLongerRegular => format!("{path}: no longer a regular file; not copied"),
            Refusal::ChangedWhileCopied => {
                format!("{path}: file changed as we read it; not copied")
            }
            Refusal::Exists => format!("not replacing {path}"),
            Refusal::DanglingSymlink => format!("not writing through dangling symlink {path}"),
            Refusal::SizeDiffers { copy, source } => format!(
                "verification failed for {path}: size {copy} differs from the source's {source}"
            ),
            Refusal::InputIsOutput => {
                format!("{}: input file is output file", cat_name(&self.path))
            }
            Refusal::LinkExists { target, symbolic } => format!(
                "cannot create {} link {path} to {}: File exists",
                if *symbolic { "symbolic" } else { "hard" },
                quoted(target)
            ),
            // cp names the link as `quotef` does, quoted only where it must be.
            Refusal::RelativeSymlink => format!(
                "{}: can make relative symbolic links only in current directory",
                cat_name(&self.path)
            ),
            Refusal::JustCreated {
                src,
                symlink: false,
            } => format!(
                "will not overwrite just-created {path} with {}",
                quoted(src)
            ),
            Refusal::JustCreated { src, symlink: true } => format!(
                "will not copy {} through just-created symlink {path}",
                quoted(src)
            ),
            Refusal::DirectoryTwice { earlier } => format!(
                "will not create hard link {path} to directory {}",
                quoted(earlier)
            ),
            Refusal::ParentNotDirectory => format!("{path} exists but is not a directory"),
            Refusal::BackupIsSource { src } => format!(
                "backing up {path} might destroy source;  {} not copied",
                quoted(src)
            ),
            Refusal::ContentDiffers => {
                format!("verification failed for {path}: content differs from the source (BLAKE3)")
            }
        }
    }
}

/// `'path'`, quoted as cp quotes names (see [`quote`](super::quote::quote)).
fn quoted(path: &Path) -> String {
    super::quote::quote(path)
}

/// A path as `cat` names it in its messages, and cp its relative `-s` refusal (gnulib's
/// `quotef`, the `shell-escape` style): bare when no character needs quoting, quoted otherwise.
fn cat_name(path: &Path) -> String {
    // `:` is quoted too: cat names files with gnulib's `quotef`, which adds it.
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let Ok(s) = std::str::from_utf8(bytes) else {
        return quoted(path);
    };
    let plain = |(i, c): (usize, char)| match c {
        c if c.is_ascii_alphanumeric() => true,
        '%' | '+' | ',' | '-' | '.' | '/' | '@' | ']' | '_' => true,
        '#' | '~' => i > 0,
        '{' | '}' => s.len() > 1,
        c => !c.is_ascii() && !c.is_control() && super::quote::utf8_locale(),
    };
    if !s.is_empty() && s.char_indices().all(plain) {
        s.to_string()
    } else {
        quoted(path)
    }
}

/// strerror's text for an errno, without Rust's " (os error N)" suffix.
fn strerror(errno: i32) -> String {
    let text = io::Error::from_raw_os_error(errno).to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            Cause::Refused(r) => f.write_str(&self.refusal_sentence(r)),
            Cause::Os(e) => {
                if let Some(name) = &self.attribute {
                    let name = quoted(Path::new(name));
                    let (verb, link) = match self.op {
                        Op::GetXattr => ("getting", "of"),
                        _ => ("setting", "for"),
                    };
                    return write!(f, "{verb} attribute {name} {link} {name}: {}", strerror(*e));
                }
                // gnulib's `copy_acl` names its paths in the locale style, not as cp does.
                let path = match self.op {
                    Op::GetParentAcl | Op::SetParentMode | Op::CopyAcl => {
                        super::quote::quote_arg(&self.path)
                    }
                    Op::StatMadeDir => self.path.to_string_lossy().into_owned(),
                    _ => quoted(&self.path),
                };
                match self.op.phrase() {
                    "" => write!(f, "{path}")?,
                    phrase => write!(f, "{phrase} {path}")?,
                }
                if let Some(src) = &self.from {
                    // A link names what it would point to ("cannot create hard link 'd' to
                    // 's'"), a clone its source.
                    let word = match self.op {
                        Op::Link | Op::Symlink => "to",
                        _ => "from",
                    };
                    write!(f, " {word} {}", quoted(src))?;
                }
                write!(f, "{}: {}", self.op.after_path(), strerror(*e))
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    /// An `io::Error` of the errno, or of kind `Other` for a refusal, with the message.
    fn from(e: Error) -> io::Error {
        match e.cause {
            Cause::Os(errno) => io::Error::from_raw_os_error(errno),
            Cause::Refused(_) => io::Error::other(e.to_string()),
        }
    }
}

/// Results of the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_cps() {
        let e = Error::os(Op::Stat, "a/b", libc::ENOENT);
        assert_eq!(
            e.to_string(),
            "cannot stat 'a/b': No such file or directory"
        );
        let e = Error::refused(Op::Refuse, "l", Refusal::SameFile { dst: "foo".into() });
        assert_eq!(e.to_string(), "'l' and 'foo' are the same file");
        let e = Error::refused(
            Op::CreateDir,
            "f",
            Refusal::NonDirectoryInTheWay { src: "d".into() },
        );
        assert_eq!(
            e.to_string(),
            "cannot overwrite non-directory 'f' with directory 'd'"
        );
        let odd = std::ffi::OsStr::from_bytes(b"x\xff");
        let e = Error::os(Op::Open, odd, libc::EACCES);
        // As cp 9.1 words it in a UTF-8 locale.
        assert_eq!(
            e.to_string(),
            r"cannot open 'x'$'\377' for reading: Permission denied"
        );
        let e = Error::os(Op::Clone, "d", libc::EOPNOTSUPP).from_source("s");
        assert_eq!(
            e.to_string(),
            "failed to clone 'd' from 's': Operation not supported"
        );
        let e = Error::os(Op::MakeFifo, "p", libc::EACCES);
        assert_eq!(e.to_string(), "cannot create fifo 'p': Permission denied");
        let e = Error::os(Op::CreateParent, "d/a", libc::EACCES);
        assert_eq!(
            e.to_string(),
            "cannot make directory 'd/a': Permission denied"
        );
        let e = Error::os(Op::SetXattr, "d", libc::EPERM).with_attribute("user.k");
        assert_eq!(
            e.to_string(),
            "setting attribute 'user.k' for 'user.k': Operation not permitted"
        );
        let e = Error::os(Op::GetXattr, "s", libc::EACCES).with_attribute("user.a b");
        assert_eq!(
            e.to_string(),
            "getting attribute 'user.a b' of 'user.a b': Permission denied"
        );
        let e = Error::os(Op::SetXattr, "d", libc::EOPNOTSUPP);
        assert_eq!(
            e.to_string(),
            "setting attributes for 'd': Operation not supported"
        );
        let e = Error::os(Op::Open, "a b", libc::ENOENT);
        assert_eq!(e.cat_sentence(), "'a b': No such file or directory");
        let e = Error::os(Op::Read, "d", libc::EISDIR);
        assert_eq!(e.cat_sentence(), "d: Is a directory");
    }

    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn errors_are_clone_and_convert_to_io_errors() {
        let e = Error::os(Op::Read, "f", libc::EIO);
        let io: io::Error = e.clone().into();
        assert_eq!(io.raw_os_error(), Some(libc::EIO));
        assert_eq!(e.errno(), Some(libc::EIO));
        assert!(e.refusal().is_none());
    }
}
