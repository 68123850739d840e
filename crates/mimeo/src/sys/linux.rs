//! Linux system calls, through rustix wherever it has a safe wrapper.
//!
//! Conventions: every function takes a directory fd and a single name (or a path below a
//! trusted anchor), never follows a symlink unless its name says so, and returns
//! `rustix::io::Result` so callers decide which errnos mean "fall back".

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, ResolveFlags, StatxFlags};
pub(crate) use rustix::io::Errno;
pub(crate) use rustix::io::Result;
use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;

pub(crate) use rustix::fs::CWD;

/// A fault-injection point for tests (`--features failpoints`): when the point named `$name`
/// is configured to `return(ERRNO)`, the call fails with that errno instead of running.
macro_rules! failpoint {
    ($name:literal) => {
        #[cfg(feature = "failpoints")]
        fail::fail_point!($name, |arg| Err(crate::sys::failpoints::errno(arg)));
    };
}

/// The subset of `statx` that copying needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub ino: u64,
    pub dev: u64,
    pub rdev: u64,
    pub size: u64,
    pub blocks: u64,
    pub atime: (i64, u32),
    pub mtime: (i64, u32),
}

pub(crate) const S_IFMT: u32 = 0o170000;
pub(crate) const S_IFREG: u32 = 0o100000;
pub(crate) const S_IFDIR: u32 = 0o040000;
pub(crate) const S_IFLNK: u32 = 0o120000;
pub(crate) const S_IFIFO: u32 = 0o010000;
pub(crate) const S_IFCHR: u32 = 0o020000;
pub(crate) const S_IFBLK: u32 = 0o060000;
pub(crate) const S_IFSOCK: u32 = 0o140000;
pub(crate) const S_ISVTX: u32 = 0o1000;
pub(crate) const S_ISUID: u32 = 0o4000;
pub(crate) const S_ISGID: u32 = 0o2000;

impl Meta {
    pub fn file_type(&self) -> u32 {
        self.mode & S_IFMT
    }
    pub fn is_dir(&self) -> bool {
        self.file_type() == S_IFDIR
    }
    pub fn is_reg(&self) -> bool {
        self.file_type() == S_IFREG
    }
    pub fn is_symlink(&self) -> bool {
        self.file_type() == S_IFLNK
    }
    /// Permission bits including set-id and sticky bits.
    pub fn perm(&self) -> u32 {
        self.mode & 0o7777
    }
    pub fn id(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }
}

const STATX_MASK: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::MODE)
    .union(StatxFlags::NLINK)
    .union(StatxFlags::UID)
    .union(StatxFlags::GID)
    .union(StatxFlags::ATIME)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::INO)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::BLOCKS);

fn meta_of(x: &rfs::Statx) -> Meta {
    Meta {
        mode: x.stx_mode as u32,
        uid: x.stx_uid,
        gid: x.stx_gid,
        nlink: x.stx_nlink,
        ino: x.stx_ino,
        dev: rfs::makedev(x.stx_dev_major, x.stx_dev_minor),
        rdev: rfs::makedev(x.stx_rdev_major, x.stx_rdev_minor),
        size: x.stx_size,
        blocks: x.stx_blocks,
        atime: (x.stx_atime.tv_sec, x.stx_atime.tv_nsec),
        mtime: (x.stx_mtime.tv_sec, x.stx_mtime.tv_nsec),
    }
}

/// `statx(fd, "", AT_EMPTY_PATH)`: the metadata of an open file.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> Result<Meta> {
    rfs::statx(fd, c"", AtFlags::EMPTY_PATH, STATX_MASK).map(|x| meta_of(&x))
}

/// `statx(dir, name)`, not following a final symlink unless `follow`.
pub(crate) fn stat_at(dir: BorrowedFd<'_>, name: &CStr, follow: bool) -> Result<Meta> {
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    rfs::statx(dir, name, flags, STATX_MASK).map(|x| meta_of(&x))
}

/// Opens a file in `dir` for reading. `O_NONBLOCK` keeps a FIFO swapped in from blocking us;
/// the caller checks the type with [`fstat`].
pub(crate) fn open_read(dir: BorrowedFd<'_>, name: &CStr, follow: bool) -> Result<OwnedFd> {
    let mut flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    rfs::openat(dir, name, flags, Mode::empty())
}

/// Opens the file at `rel` (components separated by '/') strictly below `anchor` for
/// reading, as [`open_dir_beneath`] opens directories: no symlink is followed in any
/// component, the final one included, and no component may leave the anchor. With
/// `noatime`, reads through the descriptor leave the access time alone (`O_NOATIME`) where
/// the caller may ask for that (it owns the file, or is privileged); elsewhere the file is
/// opened without it. The caller checks the type with [`fstat`].
pub(crate) fn open_file_beneath(
    anchor: BorrowedFd<'_>,
    rel: &[u8],
    noatime: bool,
) -> Result<OwnedFd> {
    let base =
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW;
    let open = |flags: OFlags| -> Result<OwnedFd> {
        let Some(slash) = rel.iter().rposition(|&b| b == b'/') else {
            return rfs::openat(anchor, cstring(rel).as_c_str(), flags, Mode::empty());
        };
        if rel.len() <= CHUNK {
            let resolve =
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            match rfs::openat2(
                anchor,
                cstring(rel).as_c_str(),
                flags,
                Mode::empty(),
                resolve,
            ) {
                Err(Errno::NOSYS) => {}
                other => return other,
            }
        }
        let dir = open_dir_beneath(anchor, &rel[..slash])?;
        rfs::openat(
            dir.as_fd(),
            cstring(&rel[slash + 1..]).as_c_str(),
            flags,
            Mode::empty(),
        )
    };
    if noatime {
        match open(base | OFlags::NOATIME) {
            Err(Errno::PERM) => {}
            other => return other,
        }
    }
    open(base)
}

/// Opens a file to read it from start to end, as `cat` does: following symlinks, and
/// blocking (a FIFO waits for its writer).
pub(crate) fn open_to_read(path: &CStr) -> Result<OwnedFd> {
    rfs::openat(
        CWD,
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
}

/// Opens a directory in `dir` without following a symlink (unless `follow`).
pub(crate) fn open_dir(dir: BorrowedFd<'_>, name: &CStr, follow: bool) -> Result<OwnedFd> {
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    rfs::openat(dir, name, flags, Mode::empty())
}

/// Opens a directory to work in: a readable handle, or an `O_PATH` one when the directory
/// may be searched but not listed (cp copies into a directory it may write and search).
/// One that may be neither fails as the readable open does.
pub(crate) fn open_dir_to_use(dir: BorrowedFd<'_>, name: &CStr, follow: bool) -> Result<OwnedFd> {
    match open_dir(dir, name, follow) {
        Err(Errno::ACCESS) => {
            let fd = open_dir_path(dir, name, follow)?;
            rfs::accessat(fd.as_fd(), c".", rfs::Access::EXEC_OK, AtFlags::EACCESS)?;
            Ok(fd)
        }
        other => other,
    }
}

/// Longest path handed to one `openat2`; longer paths are opened a chunk at a time.
const CHUNK: usize = 3072;

/// Opens the directory at `rel` (components separated by '/') strictly below `anchor`:
/// no symlink is followed in any component and no component may leave the anchor.
/// An empty `rel` reopens the anchor itself.
pub(crate) fn open_dir_beneath(anchor: BorrowedFd<'_>, rel: &[u8]) -> Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    if rel.is_empty() {
        return rfs::openat(anchor, c".", flags, Mode::empty());
    }
    open_in_chunks(anchor, rel, |base, part| {
        match rfs::openat2(base, part, flags, Mode::empty(), resolve) {
            Err(Errno::NOSYS) => open_components(base, part.to_bytes()),
            other => other,
        }
    })
}

/// An `O_PATH` handle on the directory at `rel` strictly below `anchor`, resolved as
/// [`open_dir_beneath`] resolves it: its metadata can be changed (through its /proc link,
/// see [`fchmod`]) where the directory may not be listed, as cp changes it by name.
pub(crate) fn open_dir_path_beneath(anchor: BorrowedFd<'_>, rel: &[u8]) -> Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    if rel.is_empty() {
        // The anchor itself, through its /proc link: "." is looked up inside it, which a
        // directory we may not search refuses.
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        return rfs::openat(CWD, proc_fd_path(anchor, None), flags, Mode::empty());
    }
    open_in_chunks(anchor, rel, |base, part| {
        rfs::openat2(base, part, flags, Mode::empty(), resolve)
    })
}

/// An `O_PATH` handle on the directory `name` of `dir`: it needs no permission on the
/// directory itself, so a directory that cannot be listed can still be looked at.
pub(crate) fn open_dir_path(dir: BorrowedFd<'_>, name: &CStr, follow: bool) -> Result<OwnedFd> {
    let mut flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    rfs::openat(dir, name, flags, Mode::empty())
}

/// Opens the directory that `dir` is a handle on for listing, without looking it up in
/// itself as `openat(dir, ".")` does (which a directory we may read but not search refuses).
pub(crate) fn reopen_dir(dir: BorrowedFd<'_>) -> Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    rfs::openat(CWD, proc_fd_path(dir, None), flags, Mode::empty())
}

/// Opens the directory at `rel` below `anchor` following symlinks in every component, as
/// `-L` asks (a symlink may lead anywhere). An empty `rel` reopens the anchor itself.
pub(crate) fn open_dir_following(anchor: BorrowedFd<'_>, rel: &[u8]) -> Result<OwnedFd> {
    if rel.is_empty() {
        return open_dir(anchor, c".", true);
    }
    open_in_chunks(anchor, rel, |base, part| open_dir(base, part, true))
}

/// Opens a non-empty path with `open_part`, a chunk of at most [`CHUNK`] bytes at a time, so
/// that paths longer than `PATH_MAX` work.
fn open_in_chunks(
    anchor: BorrowedFd<'_>,
    rel: &[u8],
    open_part: impl Fn(BorrowedFd<'_>, &CStr) -> Result<OwnedFd>,
) -> Result<OwnedFd> {
    let mut cur: Option<OwnedFd> = None;
    let mut rest = rel;
    while !rest.is_empty() {
        let take = if rest.len() <= CHUNK {
            rest.len()
        } else {
            // Split at the last '/' inside the chunk; a single component is at most 255 bytes.
            rest[..CHUNK]
                .iter()
                .rposition(|&b| b == b'/')
                .unwrap_or(CHUNK)
        };
        let part = cstring(&rest[..take]);
        rest = rest[take..].strip_prefix(b"/").unwrap_or(&rest[take..]);
        let base = cur.as_ref().map_or(anchor, |fd| fd.as_fd());
        cur = Some(open_part(base, &part)?);
    }
    Ok(cur.expect("non-empty path"))
}

/// The fallback for kernels without `openat2`: one `O_NOFOLLOW` open per component.
fn open_components(base: BorrowedFd<'_>, rel: &[u8]) -> Result<OwnedFd> {
    let mut cur: Option<OwnedFd> = None;
    for comp in rel.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
        if comp == b".." {
            return Err(Errno::XDEV);
        }
        let at = cur.as_ref().map_or(base, |fd| fd.as_fd());
        cur = Some(open_dir(at, &cstring(comp), false)?);
    }
    match cur {
        Some(fd) => Ok(fd),
        None => open_dir(base, c".", false),
    }
}

/// A C string from bytes that contain no NUL (file names never do).
pub(crate) fn cstring(bytes: &[u8]) -> CString {
    CString::new(bytes).expect("file names contain no NUL byte")
}

/// Creates a new regular file exclusively, open for writing and for reading back (`--verify`)
/// whatever `mode` says.
pub(crate) fn create_excl(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> Result<OwnedFd> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rfs::openat(dir, name, flags, Mode::from_raw_mode(mode))
}

/// Opens an existing regular file of ours to go on writing it: read-write, neither created
/// nor truncated, never through a symlink, never blocking on a FIFO swapped in.
pub(crate) fn open_to_resume(dir: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd> {
    let flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    rfs::openat(dir, name, flags, Mode::empty())
}

/// Opens an existing FIFO, socket or device node for writing, as cp opens a destination it
/// writes into: truncating (which nodes ignore), never following a symlink, never blocking
/// (a FIFO without a reader fails with ENXIO) and never becoming the controlling terminal.
pub(crate) fn open_node_for_writing(dir: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd> {
    let flags = OFlags::WRONLY
        | OFlags::TRUNC
        | OFlags::NOFOLLOW
        | OFlags::NONBLOCK
        | OFlags::NOCTTY
        | OFlags::CLOEXEC;
    rfs::openat(dir, name, flags, Mode::empty())
}

/// Opens an existing regular file to write into it in place (`--inplace`, or where no
/// temporary can be made), for reading back too when `read`: following a symlink only when
/// `follow` (the caller checks that it reached a regular file), never blocking on a FIFO put
/// there meanwhile, never truncating (the caller does, once the file is marked incomplete).
pub(crate) fn open_existing_for_writing(
    dir: BorrowedFd<'_>,
    name: &CStr,
    read: bool,
    follow: bool,
) -> Result<OwnedFd> {
    let access = if read { OFlags::RDWR } else { OFlags::WRONLY };
    let nofollow = if follow {
        OFlags::empty()
    } else {
        OFlags::NOFOLLOW
    };
    let flags = access | nofollow | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    rfs::openat(dir, name, flags, Mode::empty())
}

/// Whether this process may write to the entry `dir/name` (`faccessat(W_OK, AT_EACCESS)`,
/// which counts ACLs and groups as an open would; a symlink is followed, as by an open).
pub(crate) fn may_write(dir: BorrowedFd<'_>, name: &CStr) -> bool {
    rfs::accessat(dir, name, rfs::Access::WRITE_OK, AtFlags::EACCESS).is_ok()
}

/// Whether this process may search the directory `dir/name` (`faccessat(X_OK,
/// AT_EACCESS)`; a symlink is followed).
pub(crate) fn may_search(dir: BorrowedFd<'_>, name: &CStr) -> bool {
    rfs::accessat(dir, name, rfs::Access::EXEC_OK, AtFlags::EACCESS).is_ok()
}

/// Whether this process may make and remove entries in the directory `dir` (write and
/// search), as the kernel would answer a rename there.
pub(crate) fn may_change_dir(dir: BorrowedFd<'_>) -> Result<()> {
    let how = rfs::Access::WRITE_OK | rfs::Access::EXEC_OK;
    rfs::accessat(dir, c".", how, AtFlags::EACCESS)
}

/// Waits until `fd` can be read from or its writers have gone, for at most `timeout_ms`.
/// Returns whether it can.
pub(crate) fn wait_readable(fd: BorrowedFd<'_>, timeout_ms: i32) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: (timeout_ms / 1000) as _,
        tv_nsec: ((timeout_ms % 1000) * 1_000_000) as _,
    };
    matches!(rustix::event::poll(&mut fds, Some(&timeout)), Ok(n) if n > 0)
}

/// Waits until `fd` can be written to, for at most `timeout_ms`.
pub(crate) fn wait_writable(fd: BorrowedFd<'_>, timeout_ms: i32) {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
    let timeout = Timespec {
        tv_sec: (timeout_ms / 1000) as _,
        tv_nsec: ((timeout_ms % 1000) * 1_000_000) as _,
    };
    let _ = rustix::event::poll(&mut fds, Some(&timeout));
}

pub(crate) fn mkdir(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> Result<()> {
    rfs::mkdirat(dir, name, Mode::from_raw_mode(mode))
}

pub(crate) fn symlink(target: &CStr, dir: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    rfs::symlinkat(target, dir, name)
}

pub(crate) fn readlink(dir: BorrowedFd<'_>, name: &CStr) -> Result<CString> {
    rfs::readlinkat(dir, name, Vec::new())
}

/// Creates a FIFO, socket or device node with the given type bits in `mode`.
pub(crate) fn mknod(dir: BorrowedFd<'_>, name: &CStr, mode: u32, rdev: u64) -> Result<()> {
    let ft = FileType::from_raw_mode(mode);
    rfs::mknodat(dir, name, ft, Mode::from_raw_mode(mode & 0o7777), rdev)
}

/// A hard link `new_dir/new_name` to `old_dir/old_name` (never following a symlink).
pub(crate) fn link(
    old_dir: BorrowedFd<'_>,
    old_name: &CStr,
    new_dir: BorrowedFd<'_>,
    new_name: &CStr,
) -> Result<()> {
    rfs::linkat(old_dir, old_name, new_dir, new_name, AtFlags::empty())
}

/// Renames within or across directories, replacing the target atomically.
pub(crate) fn rename(
    old_dir: BorrowedFd<'_>,
    old: &CStr,
    new_dir: BorrowedFd<'_>,
    new: &CStr,
) -> Result<()> {
    failpoint!("rename");
    rfs::renameat(old_dir, old, new_dir, new)
}

/// Atomically swaps two names in one directory (`renameat2(RENAME_EXCHANGE)`).
pub(crate) fn exchange(dir: BorrowedFd<'_>, a: &CStr, b: &CStr) -> Result<()> {
    failpoint!("rename");
    rfs::renameat_with(dir, a, dir, b, rfs::RenameFlags::EXCHANGE)
}

/// A hard link `new_dir/new_name` to what the symlink `old_dir/old_name` points to
/// (`linkat(AT_SYMLINK_FOLLOW)`), or to the entry itself when it is not a symlink.
pub(crate) fn link_following(
    old_dir: BorrowedFd<'_>,
    old_name: &CStr,
    new_dir: BorrowedFd<'_>,
    new_name: &CStr,
) -> Result<()> {
    rfs::linkat(
        old_dir,
        old_name,
        new_dir,
        new_name,
        AtFlags::SYMLINK_FOLLOW,
    )
}

pub(crate) fn unlink(dir: BorrowedFd<'_>, name: &CStr, is_dir: bool) -> Result<()> {
    let flags = if is_dir {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    rfs::unlinkat(dir, name, flags)
}

/// Whether a regular file with a single link is open anywhere on this kernel besides the
/// descriptor this opens, in any process, PID namespace or container: the kernel grants a
/// write lease (`F_SETLEASE`) only to the file's sole opener. The lease goes with the
/// descriptor, at once. None where that cannot be told: not such a file, no right to open it
/// or to take a lease (another user's file), leases unsupported (NFS, `fs.leases-enable=0`).
pub(crate) fn open_elsewhere(dir: BorrowedFd<'_>, name: &CStr) -> Option<bool> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd = rfs::openat(dir, name, flags | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let m = fstat(fd.as_fd()).ok()?;
    if !m.is_reg() || m.nlink != 1 {
        return None;
    }
    match write_lease(fd.as_fd()) {
        Ok(()) => Some(false),
        Err(Errno::AGAIN) => Some(true),
        Err(_) => None,
    }
}

#[allow(unsafe_code)]
fn write_lease(fd: BorrowedFd<'_>) -> Result<()> {
    use rustix::fd::AsRawFd;
    // SAFETY: fcntl(fd, F_SETLEASE, F_WRLCK) takes an int argument and no pointer; the fd is
    // borrowed, so valid, for the call's duration.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ))
    }
}

// ---- data ----

/// Shares every extent of `src` with `dst` (`FICLONE`), again if a signal interrupted it
/// (btrfs gives up a long clone with EINTR when a signal is pending).
pub(crate) fn clone_file(dst: BorrowedFd<'_>, src: BorrowedFd<'_>) -> Result<()> {
    restart(|| {
        failpoint!("clone");
        rfs::ioctl_ficlone(dst, src)
    })
}

/// One `copy_file_range` at explicit offsets (again if a signal interrupted it); returns
/// bytes copied (0 at EOF).
pub(crate) fn copy_range(
    src: BorrowedFd<'_>,
    src_off: &mut u64,
    dst: BorrowedFd<'_>,
    dst_off: &mut u64,
    len: usize,
) -> Result<usize> {
    restart(|| {
        failpoint!("copy_file_range");
        rfs::copy_file_range(src, Some(&mut *src_off), dst, Some(&mut *dst_off), len)
    })
}

/// The next data offset at or after `from`, or None when only a hole remains.
pub(crate) fn seek_data(fd: BorrowedFd<'_>, from: u64) -> Result<Option<u64>> {
    match rfs::seek(fd, rfs::SeekFrom::Data(from)) {
        Ok(off) => Ok(Some(off)),
        Err(Errno::NXIO) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The next hole offset at or after `from` (the file size counts as a hole).
pub(crate) fn seek_hole(fd: BorrowedFd<'_>, from: u64) -> Result<u64> {
    rfs::seek(fd, rfs::SeekFrom::Hole(from))
}

/// Makes the call `f` again while a signal interrupts it (EINTR): the one place the data
/// path retries an interrupted call, so no loop above has to. Failpoints fire inside `f`, so
/// that an injected EINTR is retried as a real one.
pub(super) fn restart<T>(mut f: impl FnMut() -> Result<T>) -> Result<T> {
    loop {
        match f() {
            Err(Errno::INTR) => {}
            other => return other,
        }
    }
}

/// One `pread` (again if a signal interrupted it); 0 at the end of the file.
pub(crate) fn pread(fd: BorrowedFd<'_>, buf: &mut [u8], off: u64) -> Result<usize> {
    restart(|| {
        failpoint!("read");
        rustix::io::pread(fd, &mut *buf, off)
    })
}

/// One `pwrite` (again if a signal interrupted it).
pub(crate) fn pwrite(fd: BorrowedFd<'_>, buf: &[u8], off: u64) -> Result<usize> {
    restart(|| {
        failpoint!("write");
        rustix::io::pwrite(fd, buf, off)
    })
}

/// One `read` (again if a signal interrupted it); 0 at the end of the file.
pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize> {
    restart(|| {
        failpoint!("read");
        rustix::io::read(fd, &mut *buf)
    })
}

/// One `write` (again if a signal interrupted it).
pub(crate) fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> Result<usize> {
    restart(|| {
        failpoint!("write");
        rustix::io::write(fd, buf)
    })
}

/// Reads until `buf` is full or the file ends, at `off` (at the file's own offset when
/// None). Fewer bytes than asked means the file ended.
pub(crate) fn read_full(fd: BorrowedFd<'_>, buf: &mut [u8], off: Option<u64>) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        let n = match off {
            Some(off) => pread(fd, &mut buf[got..], off + got as u64)?,
            None => read(fd, &mut buf[got..])?,
        };
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok(got)
}

/// Writes all of `data` at `off` (at the file's own offset when None), through short
/// writes. A write that takes nothing is ENOSPC; one that would block, EAGAIN.
pub(crate) fn write_all(fd: BorrowedFd<'_>, data: &[u8], off: Option<u64>) -> Result<()> {
    let mut at = off;
    write_all_waiting(fd, data, at.as_mut(), &mut || false)
}

/// [`write_all`] at `*pos` (moved on by each write, so that it says how far a failed one
/// got), or at the file's own offset when None. A write that would block (EAGAIN: `fd` is
/// non-blocking) calls `wait`, which waits for room and says whether to try again; when it
/// says no, the result is EAGAIN.
pub(crate) fn write_all_waiting(
    fd: BorrowedFd<'_>,
    mut data: &[u8],
    mut pos: Option<&mut u64>,
    wait: &mut dyn FnMut() -> bool,
) -> Result<()> {
    while !data.is_empty() {
        let n = match pos.as_deref() {
            Some(&off) => pwrite(fd, data, off),
            None => write(fd, data),
        };
        match n {
            Ok(0) => return Err(Errno::NOSPC),
            Ok(n) => {
                data = &data[n..];
                if let Some(off) = pos.as_deref_mut() {
                    *off += n as u64;
                }
            }
            Err(Errno::AGAIN) if wait() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub(crate) fn truncate(fd: BorrowedFd<'_>, len: u64) -> Result<()> {
    rfs::ftruncate(fd, len)
}

/// Whether an open file was opened with `O_APPEND`: every write then lands at its end,
/// whatever offset `pwrite` names, and clones and `copy_file_range` refuse it (EBADF).
pub(crate) fn is_append(fd: BorrowedFd<'_>) -> Result<bool> {
    rfs::fcntl_getfl(fd).map(|f| f.contains(OFlags::APPEND))
}

/// The file offset of `fd` (`lseek(fd, 0, SEEK_CUR)`).
pub(crate) fn offset(fd: BorrowedFd<'_>) -> Result<u64> {
    rfs::seek(fd, rfs::SeekFrom::Current(0))
}

/// Moves the file offset of `fd` to `off` (`lseek(fd, off, SEEK_SET)`).
pub(crate) fn set_offset(fd: BorrowedFd<'_>, off: u64) -> Result<()> {
    rfs::seek(fd, rfs::SeekFrom::Start(off)).map(drop)
}

/// Moves up to `len` bytes from `src` at `*src_off` into the pipe `dst` (`splice`), without
/// a copy through user space (again if a signal interrupted it). Returns the bytes moved, 0
/// at the source's end.
pub(crate) fn splice_to_pipe(
    src: BorrowedFd<'_>,
    src_off: &mut u64,
    dst: BorrowedFd<'_>,
    len: usize,
) -> Result<usize> {
    restart(|| {
        failpoint!("write");
        let flags = rustix::pipe::SpliceFlags::MOVE;
        rustix::pipe::splice(src, Some(&mut *src_off), dst, None, len, flags)
    })
}

/// Filesystem magic number (`statfs.f_type`).
pub(crate) fn fs_type(fd: BorrowedFd<'_>) -> Result<u64> {
    rfs::fstatfs(fd).map(|s| s.f_type as u64)
}

/// The longest name the filesystem of `fd` takes (`statfs.f_namelen`, as `_PC_NAME_MAX`).
pub(crate) fn name_max(fd: BorrowedFd<'_>) -> Result<u64> {
    rfs::fstatfs(fd).map(|s| s.f_namelen as u64)
}

/// Whether files on the filesystem of `dir/name` report their true size, so a size of 0 means
/// empty. Not so on procfs, sysfs and the like, whose files have content yet report 0.
pub(crate) fn sizes_are_true_at(dir: BorrowedFd<'_>, name: &CStr, follow: bool) -> bool {
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    match rfs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => sizes_are_true(fd.as_fd()),
        Err(_) => false,
    }
}

pub(crate) fn sizes_are_true(fd: BorrowedFd<'_>) -> bool {
    const EXT4_MAGIC: u64 = 0xEF53;
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const F2FS_MAGIC: u64 = 0xF2F5_2010;
    matches!(
        fs_type(fd),
        Ok(EXT4_MAGIC
            | TMPFS_MAGIC
            | F2FS_MAGIC
            | BTRFS_MAGIC
            | XFS_MAGIC
            | BCACHEFS_MAGIC
            | ZFS_MAGIC)
    )
}

pub(crate) const BTRFS_MAGIC: u64 = 0x9123_683E;
pub(crate) const XFS_MAGIC: u64 = 0x5846_5342;
pub(crate) const BCACHEFS_MAGIC: u64 = 0xCA45_1A4E;
pub(crate) const OCFS2_MAGIC: u64 = 0x7461_636F;
pub(crate) const ZFS_MAGIC: u64 = 0x2FC1_2FC1;

// ---- metadata ----

/// Changes owner and/or group of an open file; `None` leaves that id as it is.
/// An `O_PATH` handle (EBADF) is changed through its /proc link, which leads to it.
pub(crate) fn fchown(fd: BorrowedFd<'_>, uid: Option<u32>, gid: Option<u32>) -> Result<()> {
    let (uid, gid) = (uid.map(rfs::Uid::from_raw), gid.map(rfs::Gid::from_raw));
    match rfs::fchown(fd, uid, gid) {
        Err(Errno::BADF) => rfs::chownat(CWD, proc_fd_path(fd, None), uid, gid, AtFlags::empty()),
        other => other,
    }
}

/// Changes the owner of `dir/name` itself, never a symlink's target.
pub(crate) fn lchown_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    uid: Option<u32>,
    gid: Option<u32>,
) -> Result<()> {
    rfs::chownat(
        dir,
        name,
        uid.map(rfs::Uid::from_raw),
        gid.map(rfs::Gid::from_raw),
        AtFlags::SYMLINK_NOFOLLOW,
    )
}

/// An `O_PATH` handle (EBADF) is changed through its /proc link, which leads to it.
pub(crate) fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> Result<()> {
    let mode = Mode::from_raw_mode(mode);
    match rfs::fchmod(fd, mode) {
        Err(Errno::BADF) => rfs::chmodat(CWD, proc_fd_path(fd, None), mode, AtFlags::empty()),
        other => other,
    }
}

/// chmod of `dir/name` that never follows a symlink: `fchmodat2(AT_SYMLINK_NOFOLLOW)`, or on
/// older kernels an `O_PATH` handle checked not to be a symlink and changed through /proc.
pub(crate) fn chmod_at_nofollow(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> Result<()> {
    match fchmodat2_nofollow(dir, name, mode) {
        Err(Errno::NOSYS) => {}
        other => return other,
    }
    let fd = rfs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    if fstat(fd.as_fd())?.is_symlink() {
        return Err(Errno::OPNOTSUPP);
    }
    let proc = proc_fd_path(fd.as_fd(), None);
    rfs::chmodat(CWD, &proc, Mode::from_raw_mode(mode), AtFlags::empty())
}

#[allow(unsafe_code)]
fn fchmodat2_nofollow(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> Result<()> {
    use rustix::fd::AsRawFd;
    const SYS_FCHMODAT2: libc::c_long = 452;
    // SAFETY: fchmodat2(int dirfd, const char *path, mode_t mode, unsigned flags) reads a
    // NUL-terminated path that outlives the call and a valid fd borrowed for its duration.
    let rc = unsafe {
        libc::syscall(
            SYS_FCHMODAT2,
            dir.as_raw_fd(),
            name.as_ptr(),
            mode as libc::mode_t,
            libc::AT_SYMLINK_NOFOLLOW as libc::c_uint,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ))
    }
}

fn timestamps(atime: (i64, u32), mtime: (i64, u32)) -> rfs::Timestamps {
    rfs::Timestamps {
        last_access: rfs::Timespec {
            tv_sec: atime.0,
            tv_nsec: atime.1 as _,
        },
        last_modification: rfs::Timespec {
            tv_sec: mtime.0,
            tv_nsec: mtime.1 as _,
        },
    }
}

pub(crate) fn futimens(fd: BorrowedFd<'_>, atime: (i64, u32), mtime: (i64, u32)) -> Result<()> {
    failpoint!("utimensat");
    let times = timestamps(atime, mtime);
    match rfs::futimens(fd, &times) {
        // An `O_PATH` handle: changed through its /proc link.
        Err(Errno::BADF) => rfs::utimensat(CWD, proc_fd_path(fd, None), &times, AtFlags::empty()),
        other => other,
    }
}

/// Sets the modification time of `fd` to `mtime`, leaving its access time.
pub(crate) fn set_mtime(fd: BorrowedFd<'_>, mtime: (i64, u32)) -> Result<()> {
    mtime_only(
        fd,
        rfs::Timespec {
            tv_sec: mtime.0,
            tv_nsec: mtime.1 as _,
        },
    )
}

/// Sets the modification time of `fd` from the clock, leaving its access time.
pub(crate) fn touch_mtime(fd: BorrowedFd<'_>) -> Result<()> {
    mtime_only(
        fd,
        rfs::Timespec {
            tv_sec: 0,
            tv_nsec: rfs::UTIME_NOW,
        },
    )
}

fn mtime_only(fd: BorrowedFd<'_>, last_modification: rfs::Timespec) -> Result<()> {
    failpoint!("utimensat");
    let times = rfs::Timestamps {
        last_access: rfs::Timespec {
            tv_sec: 0,
            tv_nsec: rfs::UTIME_OMIT,
        },
        last_modification,
    };
    rfs::futimens(fd, &times)
}

/// Sets the times of `dir/name` itself, never a symlink's target.
pub(crate) fn lutimens_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    atime: (i64, u32),
    mtime: (i64, u32),
) -> Result<()> {
    failpoint!("utimensat");
    rfs::utimensat(
        dir,
        name,
        &timestamps(atime, mtime),
        AtFlags::SYMLINK_NOFOLLOW,
    )
}

/// `/proc/thread-self/fd/N[/name]`: reaches the file an fd refers to, or an entry below the directory
/// it refers to, by path, for the calls (l*xattr, chmod) that have no fd-relative form.
pub(crate) fn proc_fd_path(fd: BorrowedFd<'_>, name: Option<&CStr>) -> CString {
    use rustix::fd::AsRawFd;
    // thread-self, not self: a worker may have a descriptor table of its own.
    let mut p = format!("/proc/thread-self/fd/{}", fd.as_raw_fd()).into_bytes();
    if let Some(n) = name {
        p.push(b'/');
        p.extend_from_slice(n.to_bytes());
    }
    cstring(&p)
}

// ---- extended attributes ----

/// Where xattrs are read or written: an open file, or a symlink reached by path.
#[derive(Debug, Clone, Copy)]
pub(crate) enum XattrTarget<'a> {
    Fd(BorrowedFd<'a>),
    /// A path whose final component is not followed.
    NoFollow(&'a CStr),
}

/// The xattr names of a target, NUL-separated; empty when it has none.
pub(crate) fn list_xattrs(t: XattrTarget<'_>, buf: &mut Vec<u8>) -> Result<()> {
    // Appends the names the kernel wrote into `out` to `buf`.
    // An `O_PATH` handle refuses flistxattr (EBADF): listed through its /proc link, which
    // reaches the file without a look inside it (a directory its owner may not search).
    let list = |out: &mut [MaybeUninit<u8>], buf: &mut Vec<u8>| -> Result<()> {
        let (init, _) = match t {
            XattrTarget::Fd(fd) => match rfs::flistxattr(fd, &mut *out) {
                Err(Errno::BADF) => rfs::listxattr(proc_fd_path(fd, None), out)?,
                other => other?,
            },
            XattrTarget::NoFollow(p) => rfs::llistxattr(p, out)?,
        };
        buf.extend_from_slice(init);
        Ok(())
    };
    buf.clear();
    // Most files have no attributes, or a few short names: a buffer on the stack first, so
    // that the common case costs one call and no allocation.
    let mut small = [MaybeUninit::<u8>::uninit(); 512];
    match list(&mut small, buf) {
        Err(Errno::RANGE) => {}
        other => return other,
    }
    let mut cap = 4096;
    loop {
        let mut big = vec![MaybeUninit::<u8>::uninit(); cap];
        match list(&mut big, buf) {
            Err(Errno::RANGE) if cap < (1 << 20) => cap *= 4,
            other => return other,
        }
    }
}

pub(crate) fn get_xattr(t: XattrTarget<'_>, name: &CStr, buf: &mut Vec<u8>) -> Result<()> {
    let mut cap = 256usize;
    // Set once an `O_PATH` handle refused fgetxattr (EBADF): read through its /proc link.
    let mut via_proc: Option<CString> = None;
    loop {
        let mut tmp: Vec<MaybeUninit<u8>> = vec![MaybeUninit::uninit(); cap];
        let got = match (t, &via_proc) {
            (_, Some(p)) => rfs::getxattr(p.as_c_str(), name, &mut tmp[..]),
            (XattrTarget::Fd(fd), None) => rfs::fgetxattr(fd, name, &mut tmp[..]),
            (XattrTarget::NoFollow(p), None) => rfs::lgetxattr(p, name, &mut tmp[..]),
        };
        match got {
            Ok((init, _)) => {
                buf.clear();
                buf.extend_from_slice(init);
                return Ok(());
            }
            Err(Errno::RANGE) if cap < (1 << 24) => cap *= 4,
            Err(Errno::BADF) if via_proc.is_none() && matches!(t, XattrTarget::Fd(_)) => {
                if let XattrTarget::Fd(fd) = t {
                    via_proc = Some(proc_fd_path(fd, None));
                }
            }
            Err(e) => return Err(e),
        }
    }
}

pub(crate) fn set_xattr(t: XattrTarget<'_>, name: &CStr, value: &[u8]) -> Result<()> {
    failpoint!("fsetxattr");
    let flags = rfs::XattrFlags::empty();
    match t {
        XattrTarget::Fd(fd) => match rfs::fsetxattr(fd, name, value, flags) {
            // An `O_PATH` handle: set through its /proc link.
            Err(Errno::BADF) => rfs::setxattr(proc_fd_path(fd, None), name, value, flags),
            other => other,
        },
        XattrTarget::NoFollow(p) => rfs::lsetxattr(p, name, value, flags),
    }
}

/// Sets an attribute of mimeo's own on an open file (a resume record), outside the
/// fault-injection point of the metadata step.
pub(crate) fn set_own_xattr(fd: BorrowedFd<'_>, name: &CStr, value: &[u8]) -> Result<()> {
    rfs::fsetxattr(fd, name, value, rfs::XattrFlags::empty())
}

/// Reads a small attribute of an open file into `buf` (at most its length); returns the
/// bytes read. ERANGE when it is longer.
pub(crate) fn get_own_xattr(fd: BorrowedFd<'_>, name: &CStr, buf: &mut [u8]) -> Result<usize> {
    rfs::fgetxattr(fd, name, buf)
}

/// Removes an attribute of an open file; one that is not there is no error.
pub(crate) fn remove_own_xattr(fd: BorrowedFd<'_>, name: &CStr) -> Result<()> {
    remove_xattr(XattrTarget::Fd(fd), name)
}

/// Whether an open file has the xattr `name` (a zero-sized read: no value is copied).
pub(crate) fn has_xattr(fd: BorrowedFd<'_>, name: &CStr) -> bool {
    let mut none: [MaybeUninit<u8>; 0] = [];
    let got = match rfs::fgetxattr(fd, name, &mut none[..]).map(|_| ()) {
        // An `O_PATH` handle: asked through its /proc link.
        Err(Errno::BADF) => rfs::getxattr(proc_fd_path(fd, None), name, &mut none[..]).map(|_| ()),
        other => other,
    };
    matches!(got, Ok(()) | Err(Errno::RANGE))
}

/// Removes the xattr `name`; a missing one is not an error.
pub(crate) fn remove_xattr(t: XattrTarget<'_>, name: &CStr) -> Result<()> {
    let r = match t {
        XattrTarget::Fd(fd) => match rfs::fremovexattr(fd, name) {
            Err(Errno::BADF) => rfs::removexattr(proc_fd_path(fd, None), name),
            other => other,
        },
        XattrTarget::NoFollow(p) => rfs::lremovexattr(p, name),
    };
    match r {
        Err(Errno::NODATA) => Ok(()),
        other => other,
    }
}

/// The POSIX ACL xattrs.
pub(crate) const ACL_ACCESS: &CStr = c"system.posix_acl_access";
pub(crate) const ACL_DEFAULT: &CStr = c"system.posix_acl_default";

// ---- directories ----

/// Reads directory entries with getdents64 into a reused buffer.
pub(crate) struct DirReader {
    buf: Vec<MaybeUninit<u8>>,
}

/// A directory entry's type as `d_type` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DType {
    Dir,
    Reg,
    Symlink,
    Other,
    Unknown,
}

impl DirReader {
    pub fn new(size: usize) -> Self {
        DirReader {
            buf: vec![MaybeUninit::uninit(); size],
        }
    }

    /// Calls `each` for every entry except "." and "..", in batches until the end.
    pub fn read_all(
        &mut self,
        dir: BorrowedFd<'_>,
        mut each: impl FnMut(&CStr, DType),
    ) -> Result<()> {
        self.read_all_ino(dir, |name, t, _| each(name, t))
    }

    /// [`read_all`](Self::read_all) with each entry's inode number (`d_ino`).
    pub fn read_all_ino(
        &mut self,
        dir: BorrowedFd<'_>,
        mut each: impl FnMut(&CStr, DType, u64),
    ) -> Result<()> {
        let mut raw = rfs::RawDir::new(dir, &mut self.buf);
        while let Some(entry) = raw.next() {
            let entry = entry?;
            let name = entry.file_name();
            let b = name.to_bytes();
            if b == b"." || b == b".." {
                continue;
            }
            let t = match entry.file_type() {
                FileType::Directory => DType::Dir,
                FileType::RegularFile => DType::Reg,
                FileType::Symlink => DType::Symlink,
                FileType::Unknown => DType::Unknown,
                _ => DType::Other,
            };
            each(name, t, entry.ino());
        }
        Ok(())
    }
}

impl std::fmt::Debug for DirReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirReader")
            .field("buf", &self.buf.len())
            .finish()
    }
}

// ---- process ----

/// Gives the calling thread a descriptor table of its own (`unshare(CLONE_FILES)`), a copy of
/// the process's, so its opens and closes do not contend with other threads on one table.
/// Failure is harmless: the thread keeps the shared table.
#[allow(unsafe_code)]
pub(crate) fn private_fd_table() {
    // SAFETY: after this call, descriptors this thread opens are invalid in other threads and
    // vice versa. The engine only calls it at the start of its worker threads, and shares
    // across workers only descriptors opened before the workers started (see `sched::local::copy_with`
    // and `space::dedupe`).
    let _ = unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) };
}

/// Raises the soft limit on open files to the hard limit.
pub(crate) fn raise_nofile_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current != lim.maximum {
        lim.current = lim.maximum;
        let _ = setrlimit(Resource::Nofile, lim);
    }
}

/// The process umask (read by setting and restoring it; call before threads start).
pub(crate) fn current_umask() -> u32 {
    let old = rustix::process::umask(Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.as_raw_mode()
}

/// CPU time used so far by the whole process, all threads (`CLOCK_PROCESS_CPUTIME_ID`).
pub(crate) fn process_cpu_time() -> std::time::Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Bytes this process has caused to be read from storage so far (`read_bytes` of
/// `/proc/self/io`): data and metadata that were not in the page cache. None where the
/// kernel does not keep the count.
pub(crate) fn storage_reads() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("read_bytes: "))
        .and_then(|v| v.trim().parse().ok())
}

/// The number of CPUs this process may run on.
pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub(crate) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

pub(crate) fn egid() -> u32 {
    rustix::process::getegid().as_raw()
}

/// Whether `gid` is one of the process's supplementary groups (false where they cannot be
/// read).
pub(crate) fn in_group(gid: u32) -> bool {
    rustix::process::getgroups().is_ok_and(|g| g.iter().any(|g| g.as_raw() == gid))
}

/// Whether a chmod by this process keeps the set-gid bit of an entry of group `gid`: the
/// kernel takes it away from a caller outside the group without `CAP_FSETID` (anyone but
/// root, here).
pub(crate) fn chmod_keeps_sgid(gid: u32) -> bool {
    let ours = rustix::process::getegid().as_raw() == gid;
    rustix::process::geteuid().is_root() || ours || in_group(gid)
}

// ---- durability and page cache ----

pub(crate) fn fsync(fd: BorrowedFd<'_>) -> Result<()> {
    rfs::fsync(fd)
}

/// Tells the kernel the range will not be read again (`POSIX_FADV_DONTNEED`); clean pages go.
pub(crate) fn drop_cache(fd: BorrowedFd<'_>, off: u64, len: u64) {
    let _ = rfs::fadvise(
        fd,
        off,
        std::num::NonZeroU64::new(len),
        rfs::Advice::DontNeed,
    );
}

/// Tells the kernel the file will be read from start to end (`POSIX_FADV_SEQUENTIAL`), so it
/// reads ahead further.
pub(crate) fn advise_sequential(fd: BorrowedFd<'_>) {
    let _ = rfs::fadvise(fd, 0, None, rfs::Advice::Sequential);
}

/// Writes a range back and waits for it (`sync_file_range` with WAIT_BEFORE | WRITE |
/// WAIT_AFTER), so a following [`drop_cache`] can drop its pages. Not a durability barrier.
#[allow(unsafe_code)]
pub(crate) fn write_back(fd: BorrowedFd<'_>, off: u64, len: u64) -> Result<()> {
    use rustix::fd::AsRawFd;
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: sync_file_range takes an fd borrowed for the call and plain integers.
    let rc = unsafe { libc::sync_file_range(fd.as_raw_fd(), off as i64, len as i64, flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ))
    }
}

// ---- extent maps ----

/// One extent from FIEMAP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: u32,
}

pub(crate) const FIEMAP_EXTENT_LAST: u32 = 0x1;
pub(crate) const FIEMAP_EXTENT_UNKNOWN: u32 = 0x2;
pub(crate) const FIEMAP_EXTENT_DELALLOC: u32 = 0x4;
pub(crate) const FIEMAP_EXTENT_ENCODED: u32 = 0x8;
// Both set on btrfs inline data (small files), whose `physical` is 0 as the bytes live in
// metadata.
pub(crate) const FIEMAP_EXTENT_NOT_ALIGNED: u32 = 0x100;
pub(crate) const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;
/// Preallocated space that reads as zeros.
pub(crate) const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
pub(crate) const FIEMAP_EXTENT_SHARED: u32 = 0x2000;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapHeader {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_FLAG_SYNC: u32 = 0x1;
const FIEMAP_BATCH: usize = 256;

#[repr(C)]
struct FiemapBuf {
    head: FiemapHeader,
    extents: [FiemapExtent; FIEMAP_BATCH],
}

/// The file's extent map (after flushing delayed allocation), or an error such as
/// EOPNOTSUPP where the filesystem has none.
pub(crate) fn extents(fd: BorrowedFd<'_>) -> Result<Vec<Extent>> {
    fiemap(fd, 0, u64::MAX, true)
}

/// The extents of `fd` that overlap `[start, start + len)` (whole extents, which may begin
/// before `start` or end after the range). With `sync` (`FIEMAP_FLAG_SYNC`) the kernel
/// first writes the file's dirty pages back and, on btrfs, waits for their ordered extents,
/// so the map shows every write that finished before the call; without it, data not yet
/// written back shows as `FIEMAP_EXTENT_DELALLOC` or, worse, as the extent it is about to
/// replace (measured on btrfs: after writeback of a rewritten page of a clone, FIEMAP
/// without `sync` still showed the old, shared block while its ordered extent completed).
pub(crate) fn fiemap(fd: BorrowedFd<'_>, start: u64, len: u64, sync: bool) -> Result<Vec<Extent>> {
    let mut out = Vec::new();
    fiemap_into(fd, start, len, sync, &mut out)?;
    Ok(out)
}

/// The file's whole extent map into `out` (cleared first), reusing its allocation. Without
/// `sync`, unflushed data shows as `FIEMAP_EXTENT_DELALLOC` at address 0 and nothing is
/// written back (as `btrfs filesystem du` asks).
pub(crate) fn extent_map(fd: BorrowedFd<'_>, sync: bool, out: &mut Vec<Extent>) -> Result<()> {
    fiemap_into(fd, 0, u64::MAX, sync, out)
}

/// [`fiemap`] into `out` (cleared first). Extents of length 0 are left out, and a map that
/// stops advancing ends the loop.
#[allow(unsafe_code)]
fn fiemap_into(
    fd: BorrowedFd<'_>,
    start: u64,
    len: u64,
    sync: bool,
    out: &mut Vec<Extent>,
) -> Result<()> {
    use rustix::fd::AsRawFd;
    failpoint!("fiemap");
    out.clear();
    let end = start.saturating_add(len);
    let mut start = start;
    loop {
        let mut buf = FiemapBuf {
            head: FiemapHeader {
                fm_start: start,
                fm_length: end - start,
                fm_flags: if sync { FIEMAP_FLAG_SYNC } else { 0 },
                fm_extent_count: FIEMAP_BATCH as u32,
                ..Default::default()
            },
            extents: [FiemapExtent::default(); FIEMAP_BATCH],
        };
        // SAFETY: FS_IOC_FIEMAP reads the header and writes at most fm_extent_count extents
        // into the array that follows it; `buf` is a live, properly laid out repr(C) value.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), FS_IOC_FIEMAP, &mut buf as *mut FiemapBuf) };
        if rc != 0 {
            return Err(Errno::from_raw_os_error(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ));
        }
        let n = buf.head.fm_mapped_extents as usize;
        let mut last = n == 0;
        let before = start;
        for e in &buf.extents[..n.min(FIEMAP_BATCH)] {
            last |= e.fe_flags & FIEMAP_EXTENT_LAST != 0;
            if e.fe_length == 0 {
                continue;
            }
            out.push(Extent {
                logical: e.fe_logical,
                physical: e.fe_physical,
                length: e.fe_length,
                flags: e.fe_flags,
            });
            start = start.max(e.fe_logical.saturating_add(e.fe_length));
        }
        // A batch that does not move the start on (extents of length 0) would be asked for
        // again for ever; one that reaches the end of the range is the last one asked for.
        if last || start <= before || start >= end {
            return Ok(());
        }
    }
}
