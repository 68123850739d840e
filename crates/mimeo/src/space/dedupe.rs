//! Dedupe: files with the same content are made to share their extents, with
//! `FIDEDUPERANGE` only, so the kernel compares every byte under its locks and a file that
//! changed after it was hashed is never clobbered (docs/guarantees.md §9).
//!
//! 1. **Walk** (the one walker, in parallel): every regular file of at least `min_size`
//!    bytes is a candidate, with its extent map (`FIEMAP`), read while its directory is
//!    open. Files with nothing to share are left out here: holes only, or inline data
//!    (btrfs), which lives in metadata. A file with several hard links counts once.
//! 2. **Group by size** on each filesystem. Each group is one task for the local pool, so
//!    groups are compared in parallel.
//! 3. **Extent maps**: files whose maps are the same extents at the same physical addresses
//!    already share everything; one of them stands for all, and nothing of the others is
//!    read. A second run over deduped files reads only what same-size files of different
//!    content need.
//! 4. **Hash** the first and last blocks of each distinct file, then the whole of those that
//!    still match, with BLAKE3.
//! 5. **Dedupe** each set of equal files onto the one most others already share with, in
//!    16 MiB pieces ([`sys::DEDUPE_CHUNK`]) of at most 127 targets a call. Each target's status
//!    is handled on its own: `DIFFERS` (it changed), `EAGAIN` (retried, then reported busy),
//!    `EINVAL`, `EPERM`/`EACCES`; each becomes a [`SpaceEvent::Skipped`] and the run goes on.
//!
//! Bytes saved are measured as [`du`](fn@super::du) measures space: the physical bytes the
//! candidates reference (every byte once) before, less those they reference after (read
//! again from the extent maps). So `mimeo-du` before and after agrees with it, unless a
//! file that is not a candidate shares part of a deduped file's old extents.

use super::physical::{Class, Physical, class, is_encoded, is_inline, is_unwritten};
use super::{Failures, Phase, Progress, SkipReason, SpaceEvent, SpaceObserver, walk_roots};
use crate::report::{Control, Error, Op};
use crate::sched::grow::Grow;
use crate::sched::{pool, walk};
use crate::sys::{self, DedupeStatus, DedupeTarget, Errno, Extent, IoBuf, Meta};
use crate::tree::{Entry, Roots, Visitor, join_rel};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Bytes hashed at each end of a file in the first comparison.
const END_BLOCK: u64 = 4096;
/// Files up to this size are hashed whole at once.
const SMALL: u64 = 64 * 1024;
/// Read buffer for hashing.
const READ_BUF: usize = 256 << 10;
/// Tries of a call the filesystem answers with `EAGAIN`.
const TRIES: u32 = 5;

/// How [`dedupe`](fn@dedupe) runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DedupeOptions {
    /// Files smaller than this are left alone (empty files always are).
    pub min_size: u64,
    /// Do not descend into directories on other filesystems (`-x`).
    pub one_file_system: bool,
    /// Find and report the duplicates and what sharing them would save; change nothing.
    pub dry_run: bool,
    /// Workers (default: four per CPU, from 4 to 16; the work waits on the device more
    /// than it computes).
    pub jobs: usize,
}

impl Default for DedupeOptions {
    fn default() -> Self {
        DedupeOptions {
            min_size: 1,
            one_file_system: false,
            dry_run: false,
            jobs: super::default_jobs(),
        }
    }
}

/// What [`dedupe`](fn@dedupe) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DedupeSummary {
    /// Regular files found.
    pub files: u64,
    /// Files with the size of another (at least `min_size`): the ones compared.
    pub candidates: u64,
    /// Candidates not read because they share all their extents with another already.
    pub already_shared: u64,
    /// Sets of files with the same content (and not all sharing already).
    pub groups: u64,
    /// Files to share another's extents: the targets of those sets.
    pub duplicates: u64,
    /// Targets that now share all their data.
    pub deduped_files: u64,
    /// Bytes read to compare.
    pub bytes_read: u64,
    /// Bytes compared and shared by the kernel (the targets' lengths).
    pub bytes_deduped: u64,
    /// Physical bytes freed, measured as [`du`](fn@super::du) measures (with `dry_run`: that
    /// would be freed).
    pub bytes_saved: u64,
    /// Targets left as they were ([`SpaceEvent::Skipped`]).
    pub skipped: u64,
    /// Failures: entries that could not be read, and skips with an errno.
    pub errors: u64,
    /// Nothing was changed.
    pub dry_run: bool,
    /// The run was stopped before it finished.
    pub interrupted: bool,
    /// Wall time.
    pub elapsed: Duration,
}

/// Finds files with the same content below `paths` and makes them share their extents,
/// changing nothing else: content, times, modes, owners and xattrs stay as they were.
/// See the [module](super) for how, and [`DedupeOptions::dry_run`] to only look.
///
/// ```
/// use mimeo::space::{DedupeOptions, NoSpaceObserver, Progress};
///
/// # let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("a"), vec![7u8; 100_000])?;
/// std::fs::write(dir.path().join("b"), vec![7u8; 100_000])?;
/// let mut opts = DedupeOptions::default();
/// opts.dry_run = true;
/// let summary = mimeo::space::dedupe(
///     &[dir.path().to_path_buf()],
///     &opts,
///     &NoSpaceObserver,
///     &mimeo::Control::new(),
///     &Progress::default(),
/// );
/// assert_eq!(summary.candidates, 2);
/// // One group of one duplicate, or, on a filesystem that cannot share extents (ext4,
/// // tmpfs), one error that says so.
/// assert!((summary.groups, summary.duplicates) == (1, 1) || summary.errors == 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// Failures are reported as [`SpaceEvent::Failed`] (a path or directory that cannot be read,
/// a filesystem without dedupe) or [`SpaceEvent::Skipped`] (one file), counted, and the run
/// goes on.
pub fn dedupe(
    paths: &[PathBuf],
    opts: &DedupeOptions,
    observer: &dyn SpaceObserver,
    control: &Control,
    progress: &Progress,
) -> DedupeSummary {
    let start = Instant::now();
    #[cfg(feature = "failpoints")]
    sys::failpoints::setup();
    sys::raise_nofile_limit();
    let counts = Counts::default();
    let failures = Failures::new(observer);
    let (wopts, roots, items) = walk_roots(paths, opts.one_file_system, opts.jobs, &failures);
    let collect = Collect {
        roots: &roots,
        min_size: opts.min_size.max(1),
        found: Mutex::new(Found::default()),
        progress,
        failures: &failures,
    };
    walk(&roots, &wopts, &collect, control, items);
    let found = collect
        .found
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    counts.files.store(progress.files(), Relaxed);
    progress.set_phase(Phase::Comparing);
    let mut found = found;
    let (cands, groups) = size_groups(std::mem::take(&mut found.cands));
    counts
        .candidates
        .store(groups.iter().map(|g| g.len() as u64).sum(), Relaxed);
    progress.work_total.store(
        groups
            .iter()
            .map(|g| cands[g.start].size * g.len() as u64)
            .sum(),
        Relaxed,
    );
    let run = Run {
        roots: &roots,
        found: &found,
        cands: &cands,
        opts,
        observer,
        progress,
        control,
        failures: &failures,
        counts: &counts,
        before: Mutex::new(Physical::default()),
        after: Mutex::new(Physical::default()),
        filesystems: Mutex::new(HashMap::new()),
    };
    let jobs = opts.jobs.max(1);
    pool::run(
        pool::Sizing {
            start: jobs,
            max: jobs,
        },
        groups,
        || {
            sys::private_fd_table();
            Worker {
                buf: IoBuf::zeroed(READ_BUF),
                extents: Vec::new(),
            }
        },
        |w, group, _| run.group(w, group),
        Grow::Never,
    );
    progress.set_phase(Phase::Finished);
    let saved = {
        let mut before = run.before.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut after = run.after.into_inner().unwrap_or_else(|e| e.into_inner());
        before.bytes().saturating_sub(after.bytes())
    };
    let at_end = (failures.count(), control.is_stopped(), start.elapsed());
    counts.summary(saved, opts.dry_run, at_end)
}

#[derive(Default)]
struct Counts {
    files: AtomicU64,
    candidates: AtomicU64,
    already_shared: AtomicU64,
    groups: AtomicU64,
    duplicates: AtomicU64,
    deduped_files: AtomicU64,
    bytes_read: AtomicU64,
    bytes_deduped: AtomicU64,
    skipped: AtomicU64,
}

impl Counts {
    /// The run's summary: these counts, the bytes saved, and (errors, whether it was
    /// stopped, how long it took) from its end.
    fn summary(
        &self,
        saved: u64,
        dry_run: bool,
        (errors, interrupted, elapsed): (u64, bool, Duration),
    ) -> DedupeSummary {
        let c = |a: &AtomicU64| a.load(Relaxed);
        let counts = self;
        DedupeSummary {
            files: c(&counts.files),
            candidates: c(&counts.candidates),
            already_shared: c(&counts.already_shared),
            groups: c(&counts.groups),
            duplicates: c(&counts.duplicates),
            deduped_files: c(&counts.deduped_files),
            bytes_read: c(&counts.bytes_read),
            bytes_deduped: c(&counts.bytes_deduped),
            bytes_saved: saved,
            skipped: c(&counts.skipped),
            errors,
            dry_run,
            interrupted,
            elapsed,
        }
    }
}

/// A file found by the walk.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    /// Its directory: an index into [`Found::dirs`].
    dir: u32,
    /// Its name in that directory: `names[name.0 .. name.0 + name.1]` (empty for a file
    /// given as a path).
    name: (u32, u32),
    size: u64,
    dev: u64,
    ino: u64,
    mtime: (i64, u32),
    /// Its extent map when the walk read it: `extents[ext.0 .. ext.0 + ext.1]`; `None`
    /// where the filesystem has no FIEMAP.
    ext: Option<(u32, u32)>,
}

/// What the walk found: candidates, and the arenas their names, directories and extents
/// live in (a few bytes a file rather than an allocation each).
#[derive(Default)]
struct Found {
    cands: Vec<Candidate>,
    names: Vec<u8>,
    extents: Vec<Extent>,
    /// (root, path below it) of each directory holding candidates.
    dirs: Vec<(u32, Box<[u8]>)>,
}

/// The walk: collects candidates with their extent maps, read while their directory is
/// open (no second lookup by path later).
struct Collect<'a> {
    roots: &'a Roots,
    min_size: u64,
    found: Mutex<Found>,
    progress: &'a Progress,
    failures: &'a Failures<'a>,
}

/// A worker's candidates not yet handed over, and a buffer for extent maps.
#[derive(Default)]
struct Local {
    found: Found,
    map: Vec<Extent>,
}

impl Visitor for Collect<'_> {
    type State = Local;

    fn state(&self) -> Local {
        Local::default()
    }

    fn entry(&self, local: &mut Local, e: &Entry<'_>) -> bool {
        if e.is_dir() {
            return true;
        }
        if !e.meta.map_or(e.dtype == sys::DType::Reg, |m| m.is_reg()) {
            return false;
        }
        if let Some(m) = e.meta.filter(|m| m.size < self.min_size) {
            self.progress.add_file(m.size);
            return false;
        }
        let fd = match sys::open_read(e.dir, e.name, e.follow) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return false,
            Err(err) => {
                self.failures
                    .fail(Error::sys(Op::Open, e.path(self.roots), err));
                return false;
            }
        };
        let meta = match sys::fstat(fd.as_fd()) {
            Ok(m) if m.is_reg() => m,
            Ok(_) => return false,
            Err(err) => {
                self.failures
                    .fail(Error::sys(Op::Stat, e.path(self.roots), err));
                return false;
            }
        };
        self.progress.add_file(meta.size);
        if meta.size < self.min_size {
            return false;
        }
        let st = &mut local.found;
        let ext = match sys::extent_map(fd.as_fd(), true, &mut local.map) {
            // Nothing to share: holes only, or inline data (kept in metadata).
            Ok(()) if local.map.is_empty() || local.map.iter().any(is_inline) => return false,
            Ok(()) => {
                let start = st.extents.len() as u32;
                st.extents.extend_from_slice(&local.map);
                Some((start, local.map.len() as u32))
            }
            Err(Errno::OPNOTSUPP) => None,
            Err(err) => {
                self.failures
                    .fail(Error::sys(Op::MapExtents, e.path(self.roots), err));
                return false;
            }
        };
        let name = if e.is_root {
            &b""[..]
        } else {
            e.name.to_bytes()
        };
        st.cands.push(Candidate {
            dir: e.root,
            name: (st.names.len() as u32, name.len() as u32),
            size: meta.size,
            dev: meta.dev,
            ino: meta.ino,
            mtime: meta.mtime,
            ext,
        });
        st.names.extend_from_slice(name);
        false
    }

    fn flush(&self, local: &mut Local, root: u32, dir_rel: &[u8]) {
        let st = &mut local.found;
        if st.cands.is_empty() {
            return;
        }
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        let dir = found.dirs.len() as u32;
        found.dirs.push((root, dir_rel.into()));
        let (names, extents) = (found.names.len() as u32, found.extents.len() as u32);
        found.cands.extend(st.cands.drain(..).map(|mut c| {
            c.dir = dir;
            c.name.0 += names;
            if let Some(x) = c.ext.as_mut() {
                x.0 += extents;
            }
            c
        }));
        found.names.append(&mut st.names);
        found.extents.append(&mut st.extents);
    }

    fn error(&self, error: Error) {
        self.failures.fail(error);
    }
}

/// Sorts the candidates by filesystem and size, drops extra hard links, and returns the
/// ranges of those that share a size with another, largest first.
fn size_groups(mut cands: Vec<Candidate>) -> (Vec<Candidate>, Vec<Range<usize>>) {
    cands.sort_unstable_by_key(|c| (c.dev, c.size, c.ino));
    cands.dedup_by_key(|c| (c.dev, c.ino));
    let mut groups = Vec::new();
    let mut i = 0;
    while i < cands.len() {
        let j = i + cands[i..]
            .iter()
            .take_while(|c| (c.dev, c.size) == (cands[i].dev, cands[i].size))
            .count();
        if j - i > 1 {
            groups.push(i..j);
        }
        i = j;
    }
    groups.sort_by_key(|g| std::cmp::Reverse(cands[g.start].size * g.len() as u64));
    (cands, groups)
}

/// A worker's buffers.
struct Worker {
    buf: IoBuf,
    extents: Vec<Extent>,
}

/// A candidate being compared.
struct Member {
    index: usize,
    /// Its extent map, when every extent has a known address: two files with the same map
    /// share all their data.
    layout: Option<Vec<(u64, u64, u64, bool)>>,
    /// Its extents with a known address, as physical references: (start, length,
    /// compressed).
    placed: Vec<(u64, u64, bool)>,
    /// Where the filesystem leaves a target's unwritten extents alone (XFS): its unwritten
    /// extents, (logical, physical, length).
    unwritten: Vec<(u64, u64, u64)>,
}

impl Member {
    /// What a target would still reference after a dedupe onto `keep`: its unwritten
    /// extents where `keep` is unwritten too (XFS leaves those alone).
    fn kept_after(&self, keep: &Member) -> Vec<(u64, u64, bool)> {
        let mut out = Vec::new();
        for &(tl, tp, tn) in &self.unwritten {
            for &(kl, _, kn) in &keep.unwritten {
                let (lo, hi) = (tl.max(kl), (tl + tn).min(kl + kn));
                if lo < hi {
                    out.push((tp + (lo - tl), hi - lo, false));
                }
            }
        }
        out
    }
}

/// What a filesystem can do, probed once per device.
#[derive(Debug, Clone, Copy)]
struct FsInfo {
    /// It dedupes at all.
    dedupe: bool,
    /// A dedupe leaves a target's unwritten extent alone where the source's is unwritten
    /// too (XFS), so such extents are neither compared nor counted as freed.
    keeps_unwritten: bool,
}

struct Run<'a> {
    roots: &'a Roots,
    found: &'a Found,
    cands: &'a [Candidate],
    opts: &'a DedupeOptions,
    observer: &'a dyn SpaceObserver,
    progress: &'a Progress,
    control: &'a Control,
    failures: &'a Failures<'a>,
    counts: &'a Counts,
    /// Physical bytes of the candidates before and after (or as they would be after).
    before: Mutex<Physical>,
    after: Mutex<Physical>,
    /// What each device's filesystem can do, once probed.
    filesystems: Mutex<HashMap<u64, FsInfo>>,
}

impl Run<'_> {
    /// The path of candidate `i` below its root, and the root.
    fn rel(&self, i: usize) -> (u32, Vec<u8>) {
        let c = &self.cands[i];
        let (root, dir) = &self.found.dirs[c.dir as usize];
        let name = &self.found.names[c.name.0 as usize..(c.name.0 + c.name.1) as usize];
        let rel = if name.is_empty() {
            dir.to_vec()
        } else {
            join_rel(dir, name)
        };
        (*root, rel)
    }

    fn path(&self, i: usize) -> PathBuf {
        let (root, rel) = self.rel(i);
        self.roots.path(root, &rel)
    }

    fn extents(&self, i: usize) -> Option<&[Extent]> {
        self.cands[i]
            .ext
            .map(|(off, n)| &self.found.extents[off as usize..(off + n) as usize])
    }

    /// Opens a candidate and checks it is still the file the walk found.
    fn open(&self, i: usize) -> Result<OwnedFd, SkipReason> {
        let (root, rel) = self.rel(i);
        let fd = self
            .roots
            .open_file(root, &rel, true)
            .map_err(|e| SkipReason::from_errno(e.raw_os_error()))?;
        match sys::fstat(fd.as_fd()) {
            Ok(m) if self.unchanged(i, &m) => Ok(fd),
            Ok(_) => Err(SkipReason::Changed),
            Err(e) => Err(SkipReason::from_errno(e.raw_os_error())),
        }
    }

    fn unchanged(&self, i: usize, m: &Meta) -> bool {
        let c = &self.cands[i];
        m.is_reg() && (m.dev, m.ino, m.size, m.mtime) == (c.dev, c.ino, c.size, c.mtime)
    }

    fn skip(&self, i: usize, keep: Option<usize>, reason: SkipReason) {
        self.counts.skipped.fetch_add(1, Relaxed);
        if reason.is_error() {
            self.failures.counted();
        }
        self.observer.event(SpaceEvent::Skipped {
            path: self.path(i),
            keep: keep.map(|k| self.path(k)),
            reason,
        });
    }

    /// Compares one group of same-size candidates and dedupes the duplicates among them.
    fn group(&self, w: &mut Worker, group: Range<usize>) {
        if self.control.is_stopped() {
            return;
        }
        let size = self.cands[group.start].size;
        let total = size * group.len() as u64;
        let fs = self.filesystem(group.start);
        if !fs.dedupe {
            self.progress.work_done.fetch_add(total, Relaxed);
            return;
        }
        let mut accounted = 0u64;
        let members: Vec<Member> = group.filter_map(|i| self.member(i, fs)).collect();
        // Files with the same extents at the same addresses are one file as far as data
        // goes: the first stands for the rest.
        let mut classes: Vec<Vec<usize>> = Vec::new();
        let mut by_layout: HashMap<&[(u64, u64, u64, bool)], usize> = HashMap::new();
        for (k, m) in members.iter().enumerate() {
            match &m.layout {
                Some(l) => match by_layout.get(l.as_slice()) {
                    Some(&c) => classes[c].push(k),
                    None => {
                        by_layout.insert(l.as_slice(), classes.len());
                        classes.push(vec![k]);
                    }
                },
                None => classes.push(vec![k]),
            }
        }
        let shared: usize = classes.iter().map(|c| c.len() - 1).sum();
        self.counts.already_shared.fetch_add(shared as u64, Relaxed);
        accounted += size * shared as u64;
        self.progress
            .work_done
            .fetch_add(size * shared as u64, Relaxed);
        let mut sets = Vec::new();
        if classes.len() > 1 {
            sets = self.compare(w, &members, classes, size, &mut accounted);
        }
        // The extent maps of targets that now share data, read again.
        let mut after: HashMap<usize, Vec<(u64, u64, bool)>> = HashMap::new();
        for set in &sets {
            if self.control.is_stopped() {
                break;
            }
            self.announce(&members, set, size);
            if !self.opts.dry_run {
                self.dedupe_set(w, &members, set, size, &mut after);
            }
        }
        self.account(&members, &sets, &after);
        self.progress
            .work_done
            .fetch_add(total.saturating_sub(accounted), Relaxed);
    }

    /// A candidate as the walk mapped it. `None`: nothing of it can be shared where the
    /// filesystem keeps unwritten extents (nothing but holes and unwritten extents).
    fn member(&self, i: usize, fs: FsInfo) -> Option<Member> {
        let Some(extents) = self.extents(i) else {
            return Some(Member {
                index: i,
                layout: None,
                placed: Vec::new(),
                unwritten: Vec::new(),
            });
        };
        let kept = |e: &&Extent| fs.keeps_unwritten && is_unwritten(e);
        if extents.iter().all(|e| kept(&e)) {
            return None;
        }
        let known = extents.iter().all(|e| class(e) != Class::Unknown);
        let mut m = Member {
            index: i,
            layout: known.then(|| {
                extents
                    .iter()
                    .filter(|e| !kept(e))
                    .map(|e| (e.logical, e.physical, e.length, is_encoded(e)))
                    .collect()
            }),
            placed: Vec::new(),
            unwritten: extents
                .iter()
                .filter(kept)
                .map(|e| (e.logical, e.physical, e.length))
                .collect(),
        };
        fill_placed(extents, &mut m.placed);
        Some(m)
    }

    /// Hashes one file of each class, first its ends, then all of it where the ends match;
    /// returns the sets of classes with equal content (two or more).
    fn compare(
        &self,
        w: &mut Worker,
        members: &[Member],
        classes: Vec<Vec<usize>>,
        size: u64,
        accounted: &mut u64,
    ) -> Vec<Vec<Vec<usize>>> {
        let whole_at_once = size <= SMALL;
        // (class, hash); a class whose representative changed is dropped.
        let mut ends: Vec<(Vec<usize>, [u8; 32])> = Vec::new();
        for class in classes {
            if self.control.is_stopped() {
                return Vec::new();
            }
            let rep = members[class[0]].index;
            let hashed = if whole_at_once {
                self.hash(w, rep, &[(0, size)])
            } else {
                self.hash(w, rep, &[(0, END_BLOCK), (size - END_BLOCK, END_BLOCK)])
            };
            let counted = if whole_at_once { size } else { 2 * END_BLOCK };
            *accounted += counted;
            self.progress.work_done.fetch_add(counted, Relaxed);
            match hashed {
                Ok(h) => ends.push((class, h)),
                Err(reason) => self.skip(rep, None, reason),
            }
        }
        let mut sets = Vec::new();
        for same_ends in partition(ends) {
            if same_ends.len() < 2 {
                continue;
            }
            if whole_at_once {
                sets.push(same_ends);
                continue;
            }
            let mut full = Vec::new();
            for class in same_ends {
                if self.control.is_stopped() {
                    return Vec::new();
                }
                let rep = members[class[0]].index;
                let hashed = self.hash(w, rep, &[(0, size)]);
                let counted = size - 2 * END_BLOCK;
                *accounted += counted;
                self.progress.work_done.fetch_add(counted, Relaxed);
                match hashed {
                    Ok(h) => full.push((class, h)),
                    Err(reason) => self.skip(rep, None, reason),
                }
            }
            sets.extend(partition(full).into_iter().filter(|s| s.len() > 1));
        }
        sets
    }

    /// BLAKE3 of the given ranges of a candidate, checked to be still the file found.
    fn hash(
        &self,
        w: &mut Worker,
        i: usize,
        ranges: &[(u64, u64)],
    ) -> Result<[u8; 32], SkipReason> {
        let fd = self.open(i)?;
        let len: u64 = ranges.iter().map(|r| r.1).sum();
        if len > 2 * SMALL {
            sys::advise_sequential(fd.as_fd());
        }
        let mut h = blake3::Hasher::new();
        for &(mut off, len) in ranges {
            let end = off + len;
            while off < end {
                let want = ((end - off) as usize).min(w.buf.len());
                let n = match sys::pread(fd.as_fd(), &mut w.buf[..want], off) {
                    Ok(0) => return Err(SkipReason::Changed),
                    Ok(n) => n,
                    Err(e) => {
                        self.failures.fail(Error::sys(Op::Read, self.path(i), e));
                        return Err(SkipReason::Os(e.raw_os_error()));
                    }
                };
                h.update(&w.buf[..n]);
                off += n as u64;
                self.counts.bytes_read.fetch_add(n as u64, Relaxed);
            }
        }
        match sys::fstat(fd.as_fd()) {
            Ok(m) if self.unchanged(i, &m) => Ok(*h.finalize().as_bytes()),
            _ => Err(SkipReason::Changed),
        }
    }

    /// Which class of a set the others will share: the one most files share already.
    fn keep_of(set: &[Vec<usize>]) -> usize {
        let mut best = 0;
        for (k, class) in set.iter().enumerate() {
            if class.len() > set[best].len() {
                best = k;
            }
        }
        best
    }

    /// Reports a set of duplicates and what sharing it would save.
    fn announce(&self, members: &[Member], set: &[Vec<usize>], size: u64) {
        let keep = Self::keep_of(set);
        let keeper = &members[set[keep][0]];
        let mut before = Physical::default();
        let mut after = Physical::default();
        for (k, class) in set.iter().enumerate() {
            for &m in class {
                for &(s, l, e) in &members[m].placed {
                    before.add(s, l, e);
                    if k == keep {
                        after.add(s, l, e);
                    }
                }
                if k != keep {
                    for (s, l, e) in members[m].kept_after(keeper) {
                        after.add(s, l, e);
                    }
                }
            }
        }
        let targets: Vec<PathBuf> = set
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != keep)
            .flat_map(|(_, c)| c.iter().map(|&m| self.path(members[m].index)))
            .collect();
        self.counts.groups.fetch_add(1, Relaxed);
        self.counts
            .duplicates
            .fetch_add(targets.len() as u64, Relaxed);
        let keep_class = &set[keep];
        self.observer.event(SpaceEvent::Duplicates {
            size,
            keep: self.path(members[keep_class[0]].index),
            targets,
            sharing: keep_class[1..]
                .iter()
                .map(|&m| self.path(members[m].index))
                .collect(),
            saves: before.bytes().saturating_sub(after.bytes()),
        });
    }

    /// Shares the keep's extents with every target of a set.
    fn dedupe_set(
        &self,
        w: &mut Worker,
        members: &[Member],
        set: &[Vec<usize>],
        size: u64,
        after: &mut HashMap<usize, Vec<(u64, u64, bool)>>,
    ) {
        let keep_class = Self::keep_of(set);
        let keep = members[set[keep_class][0]].index;
        let targets: Vec<usize> = set
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != keep_class)
            .flat_map(|(_, c)| c.iter().copied())
            .collect();
        let src = match self.open(keep) {
            Ok(fd) => fd,
            Err(reason) => {
                for &t in &targets {
                    self.skip(members[t].index, Some(keep), reason);
                }
                return;
            }
        };
        for batch in targets.chunks(sys::DEDUPE_MAX_TARGETS) {
            let mut open: Vec<(usize, OwnedFd)> = Vec::new();
            for &t in batch {
                match self.open(members[t].index) {
                    Ok(fd) => open.push((t, fd)),
                    Err(reason) => self.skip(members[t].index, Some(keep), reason),
                }
            }
            let fds: Vec<BorrowedFd<'_>> = open.iter().map(|(_, fd)| fd.as_fd()).collect();
            let results = self.share(src.as_fd(), &fds, size);
            for ((t, fd), (bytes, failed)) in open.iter().zip(results) {
                let i = members[*t].index;
                if bytes > 0 {
                    // What the target references now (the proof of sharing).
                    let mut placed = Vec::new();
                    if sys::extent_map(fd.as_fd(), true, &mut w.extents).is_ok() {
                        fill_placed(&w.extents, &mut placed);
                    }
                    after.insert(*t, placed);
                }
                self.counts.bytes_deduped.fetch_add(bytes, Relaxed);
                match failed {
                    None => {
                        self.counts.deduped_files.fetch_add(1, Relaxed);
                        self.observer.event(SpaceEvent::Deduped {
                            path: self.path(i),
                            keep: self.path(keep),
                            bytes,
                        });
                    }
                    Some(reason) => self.skip(i, Some(keep), reason),
                }
            }
        }
    }

    /// `FIDEDUPERANGE` of all of `src` onto each target, piece by piece: the bytes each
    /// target shares now, and why it stopped short if it did.
    fn share(
        &self,
        src: BorrowedFd<'_>,
        targets: &[BorrowedFd<'_>],
        size: u64,
    ) -> Vec<(u64, Option<SkipReason>)> {
        let mut out: Vec<(u64, Option<SkipReason>)> = vec![(0, None); targets.len()];
        let mut off = 0;
        while off < size {
            if self.control.is_stopped() {
                break;
            }
            let len = sys::DEDUPE_CHUNK.min(size - off);
            // Targets still going, retried while the filesystem says EAGAIN.
            let mut pending: Vec<usize> =
                (0..targets.len()).filter(|&k| out[k].1.is_none()).collect();
            if pending.is_empty() {
                break;
            }
            for attempt in 1..=TRIES {
                let mut call: Vec<DedupeTarget<'_>> = pending
                    .iter()
                    .map(|&k| DedupeTarget::new(targets[k], off))
                    .collect();
                let mut again = Vec::new();
                match sys::dedupe_range(src, off, len, &mut call) {
                    Err(Errno::AGAIN) => again = pending.clone(),
                    Err(e) => {
                        let reason = match e {
                            // The keep no longer reaches this far: it changed.
                            Errno::INVAL => SkipReason::Changed,
                            e => SkipReason::from_errno(e.raw_os_error()),
                        };
                        for &k in &pending {
                            out[k].1 = Some(reason);
                        }
                    }
                    Ok(()) => {
                        for (&k, t) in pending.iter().zip(&call) {
                            match t.status {
                                DedupeStatus::Same { bytes } => {
                                    out[k].0 += bytes.min(len);
                                    self.progress.deduped.fetch_add(bytes.min(len), Relaxed);
                                }
                                DedupeStatus::Differs => out[k].1 = Some(SkipReason::Changed),
                                DedupeStatus::Failed(Errno::AGAIN) | DedupeStatus::NotRun => {
                                    again.push(k)
                                }
                                DedupeStatus::Failed(e) => {
                                    out[k].1 = Some(SkipReason::from_errno(e.raw_os_error()))
                                }
                                DedupeStatus::Unknown(s) => out[k].1 = Some(SkipReason::Os(s)),
                            }
                        }
                    }
                }
                if again.is_empty() {
                    break;
                }
                if attempt == TRIES {
                    for k in again {
                        out[k].1 = Some(SkipReason::Busy);
                    }
                    break;
                }
                std::thread::sleep(Duration::from_millis(10 << attempt));
                pending = again;
            }
            off += len;
        }
        out
    }

    /// What the filesystem of candidate `i` can do, asked once per device (and said once
    /// where it cannot dedupe). The probe asks to dedupe the start of the file onto itself,
    /// which every filesystem that dedupes refuses for the overlap (`EINVAL`) and one that
    /// does not refuses as unsupported: nothing changes either way.
    fn filesystem(&self, i: usize) -> FsInfo {
        let dev = self.cands[i].dev;
        let mut known = self.filesystems.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&fs) = known.get(&dev) {
            return fs;
        }
        let Ok(fd) = self.open(i) else {
            // Another file of the device will answer.
            return FsInfo {
                dedupe: true,
                keeps_unwritten: false,
            };
        };
        let mut target = [DedupeTarget::new(fd.as_fd(), 0)];
        let len = self.cands[i].size.min(END_BLOCK);
        let dedupe = match sys::dedupe_range(fd.as_fd(), 0, len, &mut target) {
            Err(Errno::OPNOTSUPP | Errno::NOTTY | Errno::XDEV) => false,
            Ok(()) => !matches!(
                target[0].status,
                DedupeStatus::Failed(Errno::OPNOTSUPP | Errno::NOTTY)
            ),
            Err(_) => true,
        };
        let fs = FsInfo {
            dedupe,
            keeps_unwritten: sys::fs_type(fd.as_fd()) == Ok(sys::XFS_MAGIC),
        };
        known.insert(dev, fs);
        if !dedupe {
            self.failures
                .fail(Error::os(Op::Dedupe, self.fs_path(dev), libc::EOPNOTSUPP));
        }
        fs
    }

    /// A path on the filesystem `dev`, for a message: the first root on it.
    fn fs_path(&self, dev: u64) -> PathBuf {
        (0..self.roots.len() as u32)
            .find(|&i| self.roots.root(i).meta.dev == dev)
            .map(|i| self.roots.root(i).path.clone())
            .unwrap_or_default()
    }

    /// Adds the group's physical references before and after to the run's.
    fn account(
        &self,
        members: &[Member],
        sets: &[Vec<Vec<usize>>],
        remapped: &HashMap<usize, Vec<(u64, u64, bool)>>,
    ) {
        let mut before = Physical::default();
        let mut after = Physical::default();
        // With `dry_run`, every target would share its keep's extents, which are counted
        // already; without, the targets' maps were read again.
        let mut keeps: HashMap<usize, usize> = HashMap::new();
        if self.opts.dry_run {
            for set in sets {
                let keep = Self::keep_of(set);
                for (_, class) in set.iter().enumerate().filter(|(k, _)| *k != keep) {
                    for &m in class {
                        keeps.insert(m, set[keep][0]);
                    }
                }
            }
        }
        for (k, m) in members.iter().enumerate() {
            for &(s, l, e) in &m.placed {
                before.add(s, l, e);
            }
            let placed = match (keeps.get(&k), remapped.get(&k)) {
                (Some(&keep), _) => m.kept_after(&members[keep]),
                (None, Some(placed)) => placed.clone(),
                (None, None) => m.placed.clone(),
            };
            for (s, l, e) in placed {
                after.add(s, l, e);
            }
        }
        self.before
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .merge(before);
        self.after
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .merge(after);
    }
}

/// A file's extents with a known address as physical references. (Those without one are
/// the same before and after: dedupe maps files again with `FIEMAP_FLAG_SYNC`.)
fn fill_placed(extents: &[Extent], placed: &mut Vec<(u64, u64, bool)>) {
    placed.clear();
    placed.extend(
        extents
            .iter()
            .filter(|e| class(e) != Class::Unknown)
            .map(|e| (e.physical, e.length, is_encoded(e))),
    );
}

/// Groups classes by equal hash, keeping the order they came in.
fn partition(hashed: Vec<(Vec<usize>, [u8; 32])>) -> Vec<Vec<Vec<usize>>> {
    let mut by_hash: HashMap<[u8; 32], usize> = HashMap::new();
    let mut out: Vec<Vec<Vec<usize>>> = Vec::new();
    for (class, h) in hashed {
        match by_hash.get(&h) {
            Some(&k) => out[k].push(class),
            None => {
                by_hash.insert(h, out.len());
                out.push(vec![class]);
            }
        }
    }
    out
}
