//! Space accounting: total, exclusive and shared bytes of trees, from their extent maps.
//!
//! Every regular file is opened and its extent map read (`FIEMAP`, without flushing unless
//! asked, as `btrfs filesystem du` reads it), on the workers of the one walker. A file's
//! extents add to the counts of the directory it is in; a directory's counts go up to its
//! parent once everything below it is counted, which is when its line is reported
//! (post-order, as `du` prints). Shared extents go into each path's [`Physical`] set, which
//! counts every physical byte once.
//!
//! Memory: the counts of directories still being walked (at most `--depth` levels of them),
//! the inodes with more than one link, and the folded physical ranges of shared extents.

use super::physical::{Class, Physical, class, is_encoded};
use super::{Failures, Progress, SpaceEvent, SpaceObserver, walk_roots};
use crate::report::{Control, Error, Op};
use crate::sched::walk;
use crate::sys::{self, Errno, Extent};
use crate::tree::{Entry, Roots, Visitor};
use rustix::fd::AsFd;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How [`du`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DuOptions {
    /// Report directories down to this many levels below each path
    /// ([`SpaceEvent::Directory`]); `Some(0)` reports the paths alone (`-s`), `None` every
    /// directory.
    pub depth: Option<u32>,
    /// Do not descend into directories on other filesystems (`-x`).
    pub one_file_system: bool,
    /// Flush each file's unwritten data before reading its extent map, so that it is counted
    /// where it will lie rather than as unknown (`FIEMAP_FLAG_SYNC`). Writes data back.
    pub sync: bool,
    /// Workers (default: four per CPU, from 4 to 16; the work waits on the device more
    /// than it computes).
    pub jobs: usize,
}

impl Default for DuOptions {
    fn default() -> Self {
        DuOptions {
            depth: Some(0),
            one_file_system: false,
            sync: false,
            jobs: super::default_jobs(),
        }
    }
}

/// Space used by a path, a directory or the whole set. See the [module](super) for what the
/// numbers mean.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// Bytes of data extents (holes left out).
    pub total: u64,
    /// Bytes of extents nothing else references (unknown-address extents included).
    pub exclusive: u64,
    /// Bytes of shared extents, each physical byte once. `None` for directories below the
    /// paths, as in `btrfs filesystem du`.
    pub shared: Option<u64>,
    /// The part of `shared` that no other file of the set references. `None` where
    /// `shared` is.
    pub shared_outside: Option<u64>,
    /// Extents whose physical address is unknown (inline data, delayed allocation).
    pub unknown_extents: u64,
    /// Their bytes, counted in `total` and `exclusive`.
    pub unknown_bytes: u64,
    /// Regular files counted (a file with several hard links once).
    pub files: u64,
}

impl Usage {
    fn add(&mut self, o: &Usage) {
        self.total += o.total;
        self.exclusive += o.exclusive;
        self.unknown_extents += o.unknown_extents;
        self.unknown_bytes += o.unknown_bytes;
        self.files += o.files;
    }
}

/// What [`du`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DuReport {
    /// Each path given that could be read, with its usage (hard links counted once within
    /// the path, as `btrfs filesystem du` counts each argument).
    pub paths: Vec<(PathBuf, Usage)>,
    /// The whole set: every file once, however many paths hold it, and every physical byte
    /// once.
    pub total: Usage,
    /// Entries that could not be read.
    pub errors: u64,
    /// The run was stopped before it finished.
    pub interrupted: bool,
    /// Wall time.
    pub elapsed: Duration,
}

/// Measures the space used by `paths`: total, exclusive and shared bytes, per path and for
/// the whole set. Directories below the paths are reported to `observer` down to
/// `opts.depth`; failures too, and the run goes on. Symlinks are not followed, except a
/// path that is one.
///
/// # Errors
///
/// Failures are reported as [`SpaceEvent::Failed`] and counted in [`DuReport::errors`]:
/// paths that do not exist, directories or files that cannot be opened (the caller needs
/// read access, nothing more), extent maps that cannot be read. On a filesystem without
/// `FIEMAP`, a file's allocated blocks count as unknown-address data.
pub fn du(
    paths: &[PathBuf],
    opts: &DuOptions,
    observer: &dyn SpaceObserver,
    control: &Control,
) -> DuReport {
    du_with(paths, opts, observer, control, &Progress::default())
}

/// [`du`] with live [`Progress`].
pub fn du_with(
    paths: &[PathBuf],
    opts: &DuOptions,
    observer: &dyn SpaceObserver,
    control: &Control,
    progress: &Progress,
) -> DuReport {
    let start = Instant::now();
    sys::raise_nofile_limit();
    let failures = Failures::new(observer);
    let (wopts, roots, items) = walk_roots(paths, opts.one_file_system, opts.jobs, &failures);
    let n = roots.len();
    // A path inside another (or given twice) adds nothing to the whole set.
    let top: Vec<bool> = (0..n as u32)
        .map(|i| {
            !(0..n as u32)
                .any(|j| j != i && roots.is_within(i, j) && !(roots.is_within(j, i) && j > i))
        })
        .collect();
    let visitor = Du {
        roots: &roots,
        opts,
        depth: opts.depth.unwrap_or(u32::MAX),
        observer,
        progress,
        failures: &failures,
        top,
        sets: (0..n).map(|_| Mutex::new(Physical::default())).collect(),
        whole: (n > 1).then(|| Mutex::new(Physical::default())),
        links: Mutex::new(HashSet::new()),
        whole_links: Mutex::new(HashSet::new()),
        dirs: Mutex::new(HashMap::new()),
        whole_counts: Mutex::new(Usage::default()),
    };
    walk(&roots, &wopts, &visitor, control, items);
    progress.set_phase(super::Phase::Finished);
    let mut report = DuReport::default();
    let mut dirs = visitor.dirs.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut sets = visitor
        .sets
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()));
    for i in 0..n as u32 {
        let mut usage = dirs.remove(&(i, Vec::new())).unwrap_or_default();
        let mut set = sets.next().expect("one set per root");
        usage.shared = Some(set.bytes());
        usage.shared_outside = Some(set.once());
        if n == 1 {
            report.total = usage;
        }
        report.paths.push((roots.root(i).path.clone(), usage));
    }
    if let Some(whole) = visitor.whole {
        let mut whole = whole.into_inner().unwrap_or_else(|e| e.into_inner());
        report.total = visitor
            .whole_counts
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        report.total.shared = Some(whole.bytes());
        report.total.shared_outside = Some(whole.once());
    }
    report.errors = failures.count();
    report.interrupted = control.is_stopped();
    report.elapsed = start.elapsed();
    report
}

/// The depth of a directory below its root: the number of its components.
fn depth_of(rel: &[u8]) -> u32 {
    if rel.is_empty() {
        0
    } else {
        rel.iter().filter(|&&b| b == b'/').count() as u32 + 1
    }
}

/// The first `depth` components of `rel`.
fn ancestor(rel: &[u8], depth: u32) -> &[u8] {
    if depth == 0 {
        return b"";
    }
    let mut seen = 0;
    for (i, &b) in rel.iter().enumerate() {
        if b == b'/' {
            seen += 1;
            if seen == depth {
                return &rel[..i];
            }
        }
    }
    rel
}

/// The directory holding `rel` (empty for a child of the root).
fn parent(rel: &[u8]) -> &[u8] {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => &rel[..i],
        None => b"",
    }
}

struct Du<'a> {
    roots: &'a Roots,
    opts: &'a DuOptions,
    /// Deepest directories reported on their own.
    depth: u32,
    observer: &'a dyn SpaceObserver,
    progress: &'a Progress,
    failures: &'a Failures<'a>,
    /// Whether each root adds to the whole set (it is not inside another root).
    top: Vec<bool>,
    /// Each root's shared extents.
    sets: Vec<Mutex<Physical>>,
    /// The whole set's shared extents, when there is more than one root.
    whole: Option<Mutex<Physical>>,
    /// Inodes with several links seen so far, per root: (dev, ino, root).
    links: Mutex<HashSet<(u64, u64, u32)>>,
    /// The same for the whole set.
    whole_links: Mutex<HashSet<(u64, u64)>>,
    /// Counts of directories at most `depth` deep that are still being walked.
    dirs: Mutex<HashMap<(u32, Vec<u8>), Usage>>,
    whole_counts: Mutex<Usage>,
}

/// A worker's counts for the directory it is listing, added to the shared ones at `flush`.
struct State {
    extents: Vec<Extent>,
    here: Usage,
    whole: Usage,
    /// Shared extents: (start, length, compressed, also for the whole set).
    shared: Vec<(u64, u64, bool, bool)>,
}

impl Visitor for Du<'_> {
    type State = State;

    fn state(&self) -> State {
        State {
            extents: Vec::new(),
            here: Usage::default(),
            whole: Usage::default(),
            shared: Vec::new(),
        }
    }

    fn entry(&self, st: &mut State, e: &Entry<'_>) -> bool {
        if e.is_dir() {
            return true;
        }
        let maybe_file = match e.meta {
            Some(m) => m.is_reg(),
            None => e.dtype == sys::DType::Reg,
        };
        if maybe_file {
            self.file(st, e);
        }
        false
    }

    fn flush(&self, st: &mut State, root: u32, dir_rel: &[u8]) {
        if st.here != Usage::default() {
            let key = (root, ancestor(dir_rel, self.depth).to_vec());
            let mut dirs = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
            dirs.entry(key).or_default().add(&st.here);
            st.here = Usage::default();
        }
        if st.whole != Usage::default() {
            self.whole_counts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .add(&st.whole);
            st.whole = Usage::default();
        }
        if !st.shared.is_empty() {
            {
                let mut set = self.sets[root as usize]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                for &(start, len, enc, _) in &st.shared {
                    set.add(start, len, enc);
                }
            }
            if let Some(whole) = &self.whole {
                let mut set = whole.lock().unwrap_or_else(|e| e.into_inner());
                for &(start, len, enc, _) in st.shared.iter().filter(|s| s.3) {
                    set.add(start, len, enc);
                }
            }
            st.shared.clear();
        }
    }

    fn complete(&self, root: u32, dir_rel: &[u8]) {
        let depth = depth_of(dir_rel);
        if dir_rel.is_empty() || depth > self.depth {
            return;
        }
        let usage = {
            let mut dirs = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
            let usage = dirs.remove(&(root, dir_rel.to_vec())).unwrap_or_default();
            dirs.entry((root, parent(dir_rel).to_vec()))
                .or_default()
                .add(&usage);
            usage
        };
        self.observer.event(SpaceEvent::Directory {
            path: self.roots.path(root, dir_rel),
            depth,
            usage,
        });
    }

    fn error(&self, error: Error) {
        self.failures.fail(error);
    }
}

impl Du<'_> {
    /// Counts one regular file.
    fn file(&self, st: &mut State, e: &Entry<'_>) {
        let fd = match sys::open_read(e.dir, e.name, e.follow) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return, // gone since it was listed: nothing to count
            Err(err) => {
                return self
                    .failures
                    .fail(Error::sys(Op::Open, e.path(self.roots), err));
            }
        };
        let meta = match sys::fstat(fd.as_fd()) {
            Ok(m) if m.is_reg() => m,
            Ok(_) => return,
            Err(err) => {
                return self
                    .failures
                    .fail(Error::sys(Op::Stat, e.path(self.roots), err));
            }
        };
        let mut whole = self.top[e.root as usize];
        if meta.nlink > 1 {
            let new = self
                .links
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((meta.dev, meta.ino, e.root));
            if !new {
                return;
            }
            if whole && self.whole.is_some() {
                whole = self
                    .whole_links
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert((meta.dev, meta.ino));
            }
        }
        let mut usage = Usage {
            files: 1,
            ..Usage::default()
        };
        match sys::extent_map(fd.as_fd(), self.opts.sync, &mut st.extents) {
            Ok(()) => {}
            Err(Errno::OPNOTSUPP | Errno::NOTTY) => {
                // No extent maps here: what is allocated is data at an unknown address.
                st.extents.clear();
                let bytes = meta.blocks * 512;
                usage.total = bytes;
                usage.exclusive = bytes;
                usage.unknown_bytes = bytes;
                usage.unknown_extents = u64::from(bytes > 0);
            }
            Err(err) => {
                return self
                    .failures
                    .fail(Error::sys(Op::MapExtents, e.path(self.roots), err));
            }
        }
        for x in &st.extents {
            usage.total += x.length;
            match class(x) {
                Class::Unknown => {
                    usage.exclusive += x.length;
                    usage.unknown_extents += 1;
                    usage.unknown_bytes += x.length;
                }
                Class::Exclusive => usage.exclusive += x.length,
                Class::Shared => st.shared.push((x.physical, x.length, is_encoded(x), whole)),
            }
        }
        self.progress.add_file(usage.total);
        st.here.add(&usage);
        if whole && self.whole.is_some() {
            st.whole.add(&usage);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_and_ancestors() {
        assert_eq!(depth_of(b""), 0);
        assert_eq!(depth_of(b"a"), 1);
        assert_eq!(depth_of(b"a/b/c"), 3);
        assert_eq!(ancestor(b"a/b/c", 0), b"");
        assert_eq!(ancestor(b"a/b/c", 1), b"a");
        assert_eq!(ancestor(b"a/b/c", 2), b"a/b");
        assert_eq!(ancestor(b"a/b/c", 9), b"a/b/c");
        assert_eq!(parent(b"a/b/c"), b"a/b");
        assert_eq!(parent(b"a"), b"");
    }
}
