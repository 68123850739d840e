//! Crash safety (docs/guarantees.md §5): whatever stops a run, every destination entry is
//! complete, absent, or detectably incomplete, and a re-run finishes the job. This module
//! owns every mechanism behind that:
//!
//! - **Temporaries.** An existing destination is replaced by writing a temporary in the same
//!   directory and renaming it over the old entry ([`commit_temp`]), so readers see the old
//!   or the new file, never a mix.
//! - **Markers.** A file killed (SIGKILL) after its data but before its times or mode are set
//!   looks complete by size and mtime. So while one part of a directory's work (its pass, or
//!   a share of a large directory's entries) creates entries, the directory holds an empty
//!   marker of that part ([`PartMarker`]), removed when the part's entries are all complete.
//!   A later `-u` that finds a marker of a dead run removes it and takes an entry there as up
//!   to date only if it is provably finished (see `decide`).
//! - **The mark of a file alone.** A file copied on its own, which no marker covers, carries
//!   the xattr [`MARK`] from its creation until its last metadata step ([`mark_alone`]).
//!   `ls -l` does not show it, so while it is written it shows only its owner's bits, as
//!   cp's copy does (GNU's `tests/cp/file-perm-race.sh`). Where no marker can be made, or the
//!   filesystem takes no such xattr, a file carries the sticky bit until its final chmod
//!   instead ([`incomplete_mode`]), as does a file written in place.
//! - **Run identity.** Temporaries and markers are named `.mimeo-HOST-BOOT-PIDNS-PID-START-N.tmp`
//!   and `….partial`: a host id, the boot, the PID namespace, the process id and the process's
//!   start time, so that names are unique across the hosts that share a filesystem, and a
//!   leftover is removed only when its run is provably dead ([`remove_leftovers`]): from an
//!   earlier boot of this host; or in this PID namespace, with no process of that id and start
//!   time; or, from another namespace or container (where a pid means nothing), a regular file
//!   that no process has open, since a run keeps its temporaries and markers open until they
//!   are renamed or removed (the kernel tells by refusing a write lease to all but a sole
//!   opener). That test is made per leftover found, never per file copied. Another host's
//!   leftovers are removed only when asked.

use crate::options::Options;
use crate::sys::{self, DType, DirReader, Errno, Meta};
use rustix::fd::{BorrowedFd, OwnedFd};
use std::cell::OnceCell;
use std::ffi::{CStr, CString};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The process that made a scratch entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    /// A host id: the first 32 bits of /etc/machine-id (or a hash of the host name).
    pub host: u32,
    /// The first 32 bits of the kernel's boot id, which every container of the host shares.
    pub boot: u32,
    /// The inode of the PID namespace the pid is valid in (0: unknown).
    pub pidns: u64,
    pub pid: u32,
    /// The process's start time, in clock ticks since boot (`/proc/PID/stat`, field 22):
    /// tells a reused pid from the original process.
    pub start: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        static ME: OnceLock<Owner> = OnceLock::new();
        *ME.get_or_init(|| {
            let pid = std::process::id();
            Owner {
                host: host_id(),
                boot: boot_id(),
                pidns: pid_namespace(),
                pid,
                start: start_time(pid).unwrap_or(0),
            }
        })
    }

    /// Whether the owner is provably gone, by its name alone. Another host's run never is from
    /// here; one of another PID namespace is when its scratch entry is open nowhere.
    fn liveness(&self) -> Liveness {
        let me = Owner::current();
        if self.host != me.host {
            return Liveness::Alive;
        }
        if self.boot != me.boot {
            return Liveness::Dead;
        }
        if self.pidns != me.pidns || me.pidns == 0 {
            return Liveness::IfOpen;
        }
        let gone = if self.pid == me.pid {
            self.start != me.start
        } else {
            start_time(self.pid) != Some(self.start)
        };
        if gone {
            Liveness::Dead
        } else {
            Liveness::Alive
        }
    }
}

/// What a scratch entry's name says of its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Liveness {
    Dead,
    /// Alive, or not provably dead.
    Alive,
    /// Alive exactly while the entry is open somewhere (another PID namespace of this boot).
    IfOpen,
}

/// The first 32 bits of this boot's id (0 where there is none).
fn boot_id() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .and_then(|s| u32::from_str_radix(s.get(..8)?, 16).ok())
        .unwrap_or(0)
}

/// The inode of this process's PID namespace (0 where /proc does not tell).
fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").map_or(0, |m| m.ino())
}

/// A host id that other hosts sharing the filesystem do not have: the start of
/// /etc/machine-id, or a hash of the host name where there is none.
fn host_id() -> u32 {
    let from_machine_id = std::fs::read_to_string("/etc/machine-id")
        .ok()
        .and_then(|s| u32::from_str_radix(s.trim().get(..8)?, 16).ok());
    from_machine_id.unwrap_or_else(|| {
        let name = rustix::system::uname();
        let mut h: u32 = 0x811c_9dc5;
        for &b in name.nodename().to_bytes() {
            h = (h ^ b as u32).wrapping_mul(0x0100_0193);
        }
        h
    })
}

/// Field 22 of `/proc/PID/stat`: when the process started, in clock ticks since boot.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// What a scratch entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Temp,
    Marker,
}

/// Parses a scratch entry's name: its kind and owner. Names of older versions,
/// `.mimeo-HOST-PID-START-N.tmp` and `.mimeo-PID-N.tmp` (the latter with an unknown start
/// time), are taken as this boot's and PID namespace's, as those versions took them.
pub(crate) fn parse(name: &[u8]) -> Option<(Kind, Owner)> {
    let rest = name.strip_prefix(b".mimeo-")?;
    let (rest, kind) = match rest.strip_suffix(b".tmp") {
        Some(r) => (r, Kind::Temp),
        None => (rest.strip_suffix(b".partial")?, Kind::Marker),
    };
    let parts: Vec<&str> = std::str::from_utf8(rest).ok()?.split('-').collect();
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    let me = Owner::current();
    let owner = match parts[..] {
        [host, boot, ns, pid, start, n] if [host, boot, ns, start, n].into_iter().all(hex) => {
            Owner {
                host: u32::from_str_radix(host, 16).ok()?,
                boot: u32::from_str_radix(boot, 16).ok()?,
                pidns: u64::from_str_radix(ns, 16).ok()?,
                pid: pid.parse().ok()?,
                start: u64::from_str_radix(start, 16).ok()?,
            }
        }
        [host, pid, start, n] if hex(host) && hex(start) && hex(n) => Owner {
            host: u32::from_str_radix(host, 16).ok()?,
            pid: pid.parse().ok()?,
            start: u64::from_str_radix(start, 16).ok()?,
            ..me
        },
        [pid, n] if hex(n) => {
            let pid = pid.parse().ok()?;
            Owner {
                pid,
                // A legacy entry of a running process counts as that process's.
                start: start_time(pid).unwrap_or(u64::MAX),
                ..me
            }
        }
        _ => return None,
    };
    Some((kind, owner))
}

/// Names for this process's scratch entries. One counter for the whole process: several runs
/// of one process (library callers) may write into the same directory at once.
fn scratch_name(dir_prefix: &[u8], kind: Kind) -> CString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let me = Owner::current();
    let suffix = match kind {
        Kind::Temp => "tmp",
        Kind::Marker => "partial",
    };
    let mut name = dir_prefix.to_vec();
    name.extend_from_slice(
        format!(
            ".mimeo-{:08x}-{:08x}-{:x}-{}-{:x}-{n:x}.{suffix}",
            me.host, me.boot, me.pidns, me.pid, me.start
        )
        .as_bytes(),
    );
    sys::cstring(&name)
}

/// Creates something under a fresh temporary name in a directory with `make`, retrying on a
/// name clash. `dir_prefix` is the directory's path with a trailing slash when names are
/// resolved from the working directory (a file copied on its own), empty otherwise.
pub(crate) fn with_temp<T>(
    dir_prefix: &[u8],
    mut make: impl FnMut(&CStr) -> sys::Result<T>,
) -> sys::Result<(T, CString)> {
    loop {
        let name = scratch_name(dir_prefix, Kind::Temp);
        match make(&name) {
            Ok(v) => return Ok((v, name)),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Moves a finished temporary over the destination name; on failure the temporary is
/// removed and the old entry stays.
///
/// An entry without data of its own written by us (a clone, an empty file, a link, a special
/// file) is renamed over the destination in one step. A file whose data was written
/// (`dirty`) is exchanged with it instead (`RENAME_EXCHANGE`) and the old entry, now under the
/// temporary name, is unlinked: the destination name still always refers to the old or the
/// new file, but ext4 does not force the new file's data to disk as it does when a rename
/// replaces a file (its `auto_da_alloc` heuristic), which made each replacement cost a flush.
pub(crate) fn commit_temp(
    dir: BorrowedFd<'_>,
    temp: &CStr,
    dst_name: &CStr,
    dirty: bool,
) -> sys::Result<()> {
    if dirty && sys::exchange(dir, temp, dst_name).is_ok() {
        // Whatever stood at the destination is now under the temporary name.
        let _ = sys::unlink(dir, temp, false);
        return Ok(());
    }
    // A plain rename (also when the destination vanished, or the filesystem lacks exchange).
    sys::rename(dir, temp, dir, dst_name).inspect_err(|_| {
        let _ = sys::unlink(dir, temp, false);
    })
}

/// The marker of one part of a directory's work, created before the part's first new entry
/// and removed when the part is done. Each part has its own, so parts of one directory run
/// by different workers, processes or hosts need no shared state. It stays open while it
/// stands: that is how a run of another PID namespace knows it is alive.
#[derive(Debug, Default)]
pub(crate) struct PartMarker {
    /// The marker's name once created, and the descriptor held; None when it could not be
    /// created.
    made: OnceCell<Option<(CString, OwnedFd)>>,
    /// An incomplete entry was left on purpose (`--partial`): the marker stays.
    keep: std::cell::Cell<bool>,
    /// The part may skip what it finds in a directory that was there (`-n`, `-u`, `-i`):
    /// then the directory's mtime before the marker and right after it are kept here.
    restore: bool,
    times: OnceCell<Option<Times>>,
    /// Entries the part set out to make ([`Self::ensure`]) and did not skip.
    unskipped: std::cell::Cell<u32>,
}

/// A directory's mtime before its marker was made, and right after.
type Times = ((i64, u32), (i64, u32));

impl PartMarker {
    /// The marker of a part that may find every entry there and skip it all. cp then leaves
    /// the directory's mtime alone, so the marker's coming and going must leave it too.
    pub fn restoring(restore: bool) -> PartMarker {
        PartMarker {
            restore,
            ..PartMarker::default()
        }
    }

    /// A marker never made: for a part whose destination is its source directory itself
    /// (a directory merged into itself), where a marker would be a new source entry that the
    /// walk meets, and the source would change. New files are marked one by one instead.
    pub fn unmade() -> PartMarker {
        PartMarker {
            made: OnceCell::from(None),
            ..PartMarker::default()
        }
    }

    /// Makes sure `dir` holds this part's marker before a new entry is created in it. False
    /// when the marker cannot be created: new files are then marked one by one.
    pub fn ensure(&self, dir: BorrowedFd<'_>) -> bool {
        self.unskipped.set(self.unskipped.get() + 1);
        self.made
            .get_or_init(|| {
                let before = self.restore.then(|| sys::fstat(dir).ok()).flatten();
                let name = scratch_name(b"", Kind::Marker);
                let made = sys::create_excl(dir, &name, 0o600).ok();
                if let (Some(before), Some(_)) = (before, &made) {
                    let after = sys::fstat(dir).ok().map(|m| (before.mtime, m.mtime));
                    let _ = self.times.set(after);
                }
                made.map(|fd| (name, fd))
            })
            .is_some()
    }

    /// An entry [`Self::ensure`] was called for is skipped: nothing was made for it.
    pub fn skipped(&self) {
        self.unskipped.set(self.unskipped.get().saturating_sub(1));
    }

    /// An entry of this part is left incomplete on purpose (`--partial`): the marker stays,
    /// so that the entry is found incomplete.
    pub fn keep(&self) {
        self.keep.set(true);
    }

    /// Removes the marker, if this part made one, from `dir`, the directory it was made in:
    /// every entry of the part is complete (or was removed). Where the part made nothing and
    /// nothing else changed the directory meanwhile, its mtime is set back to what it was.
    pub fn remove_in(self, dir: BorrowedFd<'_>) {
        if self.keep.get() {
            return;
        }
        if let Some(Some((name, _held))) = self.made.into_inner() {
            let times = self.times.into_inner().flatten();
            let untouched = times.filter(|&(_, after)| {
                self.unskipped.get() == 0 && sys::fstat(dir).is_ok_and(|m| m.mtime == after)
            });
            let _ = sys::unlink(dir, &name, false);
            if let Some((before, _)) = untouched {
                let _ = sys::set_mtime(dir, before);
            }
        }
    }
}

/// Which other runs' leftovers a run may remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sweep {
    /// Leftovers of provably dead runs of this host.
    DeadHere,
    /// Also every leftover of other hosts (the user says no run elsewhere is going on).
    AlsoOtherHosts,
}

impl Sweep {
    pub fn of(opts: &Options) -> Sweep {
        if opts.clean_other_hosts {
            Sweep::AlsoOtherHosts
        } else {
            Sweep::DeadHere
        }
    }

    /// Whether the scratch entry `name` of `owner` in `dir` may go: its run is provably dead
    /// (or on another host, when told so).
    fn may_remove(self, owner: &Owner, dir: BorrowedFd<'_>, name: &CStr) -> bool {
        if self == Sweep::AlsoOtherHosts && owner.host != Owner::current().host {
            return true;
        }
        match owner.liveness() {
            Liveness::Dead => true,
            Liveness::Alive => false,
            Liveness::IfOpen => sys::open_elsewhere(dir, name) == Some(false),
        }
    }
}

/// Removes the temporaries and markers that dead runs left in a destination directory being
/// merged into, so that a re-run leaves the tree equal to the source. Returns whether the
/// directory is suspect: it holds, or held, another run's marker, so its entries may be
/// incomplete (a live run elsewhere may still be writing them).
pub(crate) fn remove_leftovers(reader: &mut DirReader, dir: BorrowedFd<'_>, sweep: Sweep) -> bool {
    let mut found = Vec::new();
    let mut suspect = false;
    let me = Owner::current();
    let _ = reader.read_all(dir, |name, t| {
        if t == DType::Dir {
            return;
        }
        if let Some((kind, owner)) = parse(name.to_bytes()) {
            if owner == me {
                return;
            }
            suspect |= kind == Kind::Marker;
            found.push((name.to_owned(), owner));
        }
    });
    for (name, owner) in found {
        if sweep.may_remove(&owner, dir, &name) {
            let _ = sys::unlink(dir, &name, false);
        }
    }
    suspect
}

/// Whether a directory holds another run's marker (`--dry-run` of `-u`, which changes
/// nothing).
pub(crate) fn has_foreign_marker(reader: &mut DirReader, dir: BorrowedFd<'_>) -> bool {
    let me = Owner::current();
    let mut marked = false;
    let _ = reader.read_all(dir, |name, t| {
        marked |= t != DType::Dir
            && parse(name.to_bytes()).is_some_and(|(k, o)| k == Kind::Marker && o != me);
    });
    marked
}

/// The xattr that marks a file copied on its own incomplete until its last metadata step.
pub(crate) const MARK: &CStr = c"user.mimeo.incomplete";

/// How a file copied on its own is marked incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AloneMark {
    /// By [`MARK`], which the last metadata step removes.
    Xattr,
    /// By the sticky bit ([`incomplete_mode`]), which its final chmod clears.
    Sticky,
}

/// Marks the new file `fd`, a copy of `src` made where no marker covers it, incomplete: by
/// [`MARK`], or by the sticky bit where the filesystem takes no such xattr.
pub(crate) fn mark_alone(fd: BorrowedFd<'_>, src: &Meta) -> sys::Result<AloneMark> {
    match sys::set_xattr(sys::XattrTarget::Fd(fd), MARK, b"") {
        Ok(()) => Ok(AloneMark::Xattr),
        Err(_) => sys::fchmod(fd, incomplete_mode(src)).map(|()| AloneMark::Sticky),
    }
}

/// Removes [`MARK`], the last metadata step. A user.* xattr needs write access to its file,
/// which an unprivileged owner no longer has once the final mode gives it none (a copy of a
/// 0400 file written in place): only then the mark goes under the owner's write bit for a
/// moment, and the final mode comes back.
pub(crate) fn clear_mark(fd: BorrowedFd<'_>) -> sys::Result<()> {
    let target = sys::XattrTarget::Fd(fd);
    match sys::remove_xattr(target, MARK) {
        Err(rustix::io::Errno::ACCESS) => {
            let perm = sys::fstat(fd)?.mode & 0o7777;
            sys::fchmod(fd, perm | 0o200)?;
            let removed = sys::remove_xattr(target, MARK);
            sys::fchmod(fd, perm)?;
            removed
        }
        done => done,
    }
}

/// Whether the regular file at `path` (not followed) carries [`MARK`]: a copy of a file on
/// its own that a run left before its last metadata step. One look, made only where `-u`
/// would otherwise keep a file copied on its own.
pub(crate) fn marked_alone(path: &CStr) -> bool {
    let mut value = Vec::new();
    sys::get_xattr(sys::XattrTarget::NoFollow(path), MARK, &mut value).is_ok()
}

/// A regular file created where no marker covers it carries the sticky bit, which no complete
/// copy of a file without it carries: a copy interrupted before its final chmod is
/// recognisable as incomplete.
pub(crate) fn marked_incomplete(d: &Meta, src: &Meta) -> bool {
    d.mode & sys::S_ISVTX != 0 && src.mode & sys::S_ISVTX == 0
}

/// The mode a new regular file gets, marked incomplete, until its data and metadata are
/// complete.
pub(crate) fn incomplete_mode(src: &Meta) -> u32 {
    sys::S_ISVTX | (src.perm() & 0o700)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(owner: Owner, n: u64, suffix: &str) -> String {
        format!(
            ".mimeo-{:08x}-{:08x}-{:x}-{}-{:x}-{n:x}.{suffix}",
            owner.host, owner.boot, owner.pidns, owner.pid, owner.start
        )
    }

    #[test]
    fn names_carry_the_owner_and_parse_back() {
        let me = Owner::current();
        assert!(me.start > 0, "start time read from /proc");
        assert!(
            me.boot != 0 && me.pidns != 0,
            "boot and namespace read from /proc"
        );
        let made = scratch_name(b"dir/", Kind::Temp);
        let made = made.to_bytes().strip_prefix(b"dir/").unwrap();
        assert_eq!(parse(made), Some((Kind::Temp, me)));
        assert_eq!(
            parse(name(me, 7, "partial").as_bytes()),
            Some((Kind::Marker, me))
        );
        // A name of the last version: this boot's and namespace's.
        let older = format!(".mimeo-{:08x}-{}-{:x}-1.tmp", me.host, me.pid, me.start);
        assert_eq!(parse(older.as_bytes()), Some((Kind::Temp, me)));
        for bad in [
            &b"mimeo-1-2.tmp"[..],
            b".mimeo-x-0.tmp",
            b".mimeo-4000000-.tmp",
            b".mimeo-4000000-1.tmp.bak",
            b".mimeo-4000000-1.partial~",
            b".mimeo-zz-1-2-3.tmp",
            b".mimeo-1-zz-3-4-5-6.tmp",
        ] {
            assert_eq!(parse(bad), None, "{}", bad.escape_ascii());
        }
    }

    #[test]
    fn only_provably_dead_runs_of_this_host_are_dead() {
        let me = Owner::current();
        assert_eq!(me.liveness(), Liveness::Alive, "this process");
        // A pid that cannot exist (above pid_max's ceiling).
        let gone = Owner {
            pid: 4_000_000,
            ..me
        };
        assert_eq!(gone.liveness(), Liveness::Dead);
        // This very pid, started at another time: the pid was reused.
        let earlier = Owner {
            start: me.start - 1,
            ..me
        };
        assert_eq!(earlier.liveness(), Liveness::Dead);
        // pid 1 runs, with its own start time.
        let init = Owner {
            pid: 1,
            start: start_time(1).unwrap(),
            ..me
        };
        assert_eq!(init.liveness(), Liveness::Alive);
        // An earlier boot of this host: whatever its pid, it is gone.
        let before_boot = Owner {
            boot: me.boot ^ 1,
            ..init
        };
        assert_eq!(before_boot.liveness(), Liveness::Dead);
        // Another PID namespace of this boot: its pids say nothing here, alive or not.
        for pid in [1, 4_000_000] {
            let contained = Owner {
                pidns: me.pidns ^ 1,
                pid,
                ..me
            };
            assert_eq!(contained.liveness(), Liveness::IfOpen, "pid {pid}");
        }
        // The same (dead) pid on another host sharing the filesystem: never provably dead.
        let elsewhere = Owner {
            host: me.host ^ 1,
            ..gone
        };
        assert_eq!(elsewhere.liveness(), Liveness::Alive);
        let dir = std::fs::File::open("/").unwrap();
        let dir = std::os::fd::AsFd::as_fd(&dir);
        assert!(!Sweep::DeadHere.may_remove(&elsewhere, dir, c"absent"));
        assert!(Sweep::AlsoOtherHosts.may_remove(&elsewhere, dir, c"absent"));
        assert!(!Sweep::AlsoOtherHosts.may_remove(&me, dir, c"absent"));
        // Names of older versions: this host, dead when the pid is gone.
        assert_eq!(
            parse(b".mimeo-4000000-1f.tmp").map(|(k, o)| (k, o.liveness())),
            Some((Kind::Temp, Liveness::Dead))
        );
        assert_eq!(
            parse(b".mimeo-1-0.partial").map(|(k, o)| (k, o.liveness())),
            Some((Kind::Marker, Liveness::Alive))
        );
    }

    /// A leftover of another PID namespace goes exactly when no process holds it open, as a
    /// run holds its temporaries and markers.
    #[test]
    fn another_namespaces_leftover_goes_when_open_nowhere() {
        let dir = tempfile::tempdir().unwrap();
        let fd = std::fs::File::open(dir.path()).unwrap();
        let fd = std::os::fd::AsFd::as_fd(&fd);
        let me = Owner::current();
        let contained = Owner {
            pidns: me.pidns ^ 1,
            pid: 1,
            ..me
        };
        let (held, left) = (name(contained, 1, "tmp"), name(contained, 2, "partial"));
        let held_open = std::fs::File::create(dir.path().join(&held)).unwrap();
        std::fs::File::create(dir.path().join(&left)).unwrap();
        let mut reader = DirReader::new(4096);
        assert!(
            remove_leftovers(&mut reader, fd, Sweep::DeadHere),
            "a marker was there"
        );
        assert!(dir.path().join(&held).exists(), "open: its run is alive");
        assert!(
            !dir.path().join(&left).exists(),
            "open nowhere: its run is gone"
        );
        drop(held_open);
        // A new descriptor: the first listing read this one to its end.
        let again = std::fs::File::open(dir.path()).unwrap();
        remove_leftovers(
            &mut reader,
            std::os::fd::AsFd::as_fd(&again),
            Sweep::DeadHere,
        );
        assert!(!dir.path().join(&held).exists(), "closed: gone");
    }
}
