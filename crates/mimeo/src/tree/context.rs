//! The state one run shares across its workers ([`Ctx`]), the opened roots, and where an
//! entry is being copied ([`Here`]).

use super::hooks::HookSet;
use super::split_state::Splits;
use super::work::Named;
use super::work::{DirInfo, WorkItem};
use crate::data::copy::{DataPlan, NoCloneDevs};
use crate::data::meta::Process;
use crate::data::origin::Mounts;
use crate::data::shared_reads::ReadVia;
use crate::options::{Dereference, Options};
use crate::place::crash::{PartMarker, Sweep};
use crate::place::decide::Rules;
use crate::place::links::{LinkGroups, LinkLoc, LinkMap};
use crate::place::shared_reads::CanonMap;
use crate::place::sharing::ExtentMap;
use crate::report::Reporter;
use crate::sys::{self, IoBuf, Meta};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Per-worker reusable buffers, and the destination directory of the worker's last pass.
pub(crate) struct Buffers {
    pub reader: sys::DirReader,
    pub data: IoBuf,
    /// The destination directory the worker's last pass wrote into (root, path, descriptor):
    /// a directory is most often completed right after its own pass, by the same worker,
    /// which then needs no second open.
    pub last_dst: Option<(u32, Vec<u8>, OwnedFd)>,
}

impl Buffers {
    pub fn new() -> Self {
        Buffers {
            reader: sys::DirReader::new(64 * 1024),
            data: IoBuf::default(),
            last_dst: None,
        }
    }
}

/// State shared by every worker of one run.
pub(crate) struct Ctx<'a> {
    pub opts: &'a Options,
    pub report: Reporter<'a>,
    pub process: Process,
    pub links: LinkMap<LinkLoc>,
    /// The run's link groups when they are kept elsewhere than in `links` (a run spread over
    /// processes).
    pub groups: Option<&'a dyn LinkGroups>,
    /// Shared extents of the sources and the copies that hold them (`--preserve=sharing`).
    pub extents: ExtentMap,
    /// Source devices whose filesystem can share extents, as far as looked at.
    pub sharing_devs: std::sync::Mutex<Vec<(u64, bool)>>,
    pub no_clone: NoCloneDevs,
    /// Large files being copied in ranges by several workers.
    pub splits: Splits,
    /// Mount points met, for origin records (`--record-origin`).
    pub mounts: Mounts,
    /// The canonical source files of shared extents (shared reads).
    pub canon: CanonMap,
    pub sweep: Sweep,
    pub roots: Vec<Root>,
    /// A root's source is another directory root or lies below one, so a file may be met
    /// twice by the same path: link groups are then kept for the whole run (see
    /// [`roots_overlap`]).
    pub overlapping_roots: bool,
    /// Two non-directory roots are one source file (see [`roots_share_a_file`]).
    pub roots_share_a_file: bool,
    pub hooks: HookSet<'a>,
    /// Under `-L`, the directories this run made: a symlink that leads back into the copy
    /// must not make it copy itself into itself without end.
    pub made_dirs: std::sync::Mutex<std::collections::HashSet<(u64, u64)>>,
    /// The sources named on the command line (see [`Named`]): cp will not copy a directory
    /// root again when a later root holds it.
    pub named: Named,
    /// Directories a later directory root made (up front, or in its walk) that cp, copying
    /// its sources in order, made in an earlier root's walk (see [`Root::made_early`]): by
    /// (dev, ino), that earlier root's index. Claimed (taken out) by that walk, which names
    /// it under `-v`. With each, its source directory's (dev, ino), where known.
    pub early_dirs: std::sync::Mutex<EarlyDirs>,
}

/// Directories made early (see [`Ctx::early_dirs`]): by (dev, ino), the earlier root that
/// names each, and its source directory's (dev, ino).
pub type EarlyDirs = std::collections::HashMap<(u64, u64), (u32, (u64, u64))>;

impl<'a> Ctx<'a> {
    pub fn new(opts: &'a Options, report: Reporter<'a>, hooks: HookSet<'a>) -> Self {
        #[cfg(feature = "failpoints")]
        sys::failpoints::setup();
        Ctx {
            opts,
            report,
            process: Process::current(),
            links: LinkMap::new(),
            groups: None,
            extents: ExtentMap::default(),
            sharing_devs: std::sync::Mutex::new(Vec::new()),
            no_clone: NoCloneDevs::default(),
            splits: Splits::default(),
            mounts: Mounts::default(),
            canon: CanonMap::default(),
            sweep: Sweep::of(opts),
            made_dirs: Default::default(),
            named: Named::default(),
            early_dirs: Default::default(),
            roots: Vec::new(),
            overlapping_roots: false,
            roots_share_a_file: false,
            hooks,
        }
    }

    /// The rules of the overwrite decision for an entry `here` (no `-i` question: the caller
    /// adds it where it applies). `writable` tells whether the destination may be written.
    pub fn rules<'r>(&'r self, here: &Here<'_>, writable: &'r dyn Fn() -> bool) -> Rules<'r> {
        let just_created = match here.loc {
            Loc::Root(_) => here.root.and_then(|r| r.just_created.get().copied()),
            _ => None,
        };
        let follows = match self.opts.dereference {
            Dereference::Always => true,
            Dereference::CommandLine => !matches!(here.loc, Loc::Below(..)),
            Dereference::Never => false,
        };
        Rules {
            opts: self.opts,
            process: &self.process,
            follows,
            suspect: here.suspect(),
            just_created,
            ask: None,
            writable,
            backup_is_source: None,
            changeable: None,
            read_node: false,
        }
    }

    /// Where the run's hard-link groups are kept.
    pub fn link_groups(&self) -> &dyn LinkGroups {
        self.groups.unwrap_or(&self.links)
    }

    /// How the data of the source `meta` goes into a directory like `dst`; `via` are the
    /// ranges of the source read through canonical files (shared reads).
    pub fn plan<'s>(
        &'s self,
        meta: &Meta,
        dst: &DstFacts,
        sized_dev: u64,
        via: &'s [ReadVia<'s>],
    ) -> DataPlan<'s> {
        DataPlan {
            reflink: self.opts.reflink,
            sparse: self.opts.sparse,
            buffer_size: self.opts.buffer_size,
            same_fs: meta.dev == dst.dev,
            dst_cow: dst.cow,
            nocache: self.opts.nocache,
            size_is_true: meta.dev == sized_dev,
            no_clone: &self.no_clone,
            via,
        }
    }

    pub fn root(&self, index: u32) -> &Root {
        &self.roots[index as usize]
    }

    /// Opens the directory of an earlier copy (a hard-link group's first, or a holder of
    /// shared extents): None for a root entry, which sits in its root's destination parent
    /// (open already).
    pub fn open_loc_dir(&self, loc: &LinkLoc) -> sys::Result<Option<OwnedFd>> {
        match &loc.dir {
            None => Ok(None),
            Some(rel) => {
                let (_, dst) = self.root(loc.root).dirs();
                sys::open_dir_beneath(dst, rel).map(Some)
            }
        }
    }
}

/// A command-line source, resolved to parent directory + name on both sides.
pub(crate) struct Root {
    pub src_parent: OwnedFd,
    pub src_name: CString,
    pub dst_parent: OwnedFd,
    pub dst_name: CString,
    pub meta: Meta,
    /// The source itself is followed if it is a symlink (`-L`, `-H`, a trailing slash).
    pub follow: bool,
    pub src_path: PathBuf,
    pub dst_path: PathBuf,
    /// Facts of the destination's parent directory.
    pub dst: DstFacts,
    /// The source device whose files' sizes can be trusted (see [`Here::sized_dev`]).
    pub sized_dev: u64,
    /// A directory root's source and destination directories, opened before the workers
    /// start so that every worker can use them (see `sched`).
    pub dirs: Option<(OwnedFd, OwnedFd)>,
    /// Roots given later with the same destination, copied right after this one by the same
    /// worker, in command-line order (cp's "will not overwrite just-created").
    pub followers: Vec<u32>,
    /// The entry that an earlier root with the same destination made in this run.
    pub just_created: std::sync::OnceLock<(u64, u64)>,
    /// The earlier file root with the same destination, where a directory root between
    /// them runs in between (see `Queue::add`): this root meets what that one made as just
    /// made only where it is still there. cp knows what the walk made there by another name
    /// (`d/./x`), not as just made by `d/x`.
    pub lead: Option<u32>,
    /// What this root made at its destination, for a later root whose `lead` it is.
    pub made_at: std::sync::OnceLock<(u64, u64)>,
    /// A later root's `lead`: what it makes is noted in `made_at`.
    pub leads: bool,
    /// `--parents`: the directories made or found on the way to the destination.
    pub parents: Vec<Parent>,
    /// The root entry was made or written at its destination (for `followers`).
    pub made: std::sync::atomic::AtomicBool,
    /// ... as a link to the copy of an earlier name of its file (cp's link map): cp does not
    /// note such a link as just created, so a later root may replace it (see
    /// [`Root::just_made`]).
    pub linked: std::sync::atomic::AtomicBool,
    /// The root took away what was at its destination and then failed (cp's order: it
    /// removed it, or renamed it to its backup and back), which wrote into its directory as
    /// much as a copy made there; unlike `made`, nothing is there for later roots.
    pub emptied: std::sync::atomic::AtomicBool,
    /// A directory copied into itself: refused once a source named twice is told apart
    /// (see [`Root::resolve_named`]).
    pub into_itself: bool,
    /// A directory this root made came up again as a source below it (under `-L`): cp says
    /// so once, for the root.
    pub reached_copy: std::sync::atomic::AtomicBool,
    /// That directory came up where cp tells it is the copy (under the copy's own name, in
    /// the copy's parent): cp stops copying the source there, and so does the walk.
    pub stopped_at_copy: std::sync::atomic::AtomicBool,
    /// A file named before on the command line: cp skips it with a warning, in its turn.
    pub named_twice: bool,
    /// `--parents`: cp takes the destination to be new (a parent was just made on the way
    /// to it, see `roots::make_parents`) and does not look at what is there.
    pub taken_new: bool,
    /// The earlier directory root whose walk copies this root's source to the same place
    /// (`cp -r s/. s/x/ d`: `s/./x` to `d/./x`): cp made the directories there in that walk,
    /// before it came to this root, and named them there under `-v`; those this root makes
    /// are that walk's to name (see [`Ctx::early_dirs`]).
    pub made_early: Option<u32>,
}

impl Root {
    /// The root's source and destination directories (a directory root only).
    pub fn dirs(&self) -> (BorrowedFd<'_>, BorrowedFd<'_>) {
        let (s, d) = self.dirs.as_ref().expect("a directory root");
        (s.as_fd(), d.as_fd())
    }

    /// Whether the root entry is what cp takes as just created at its destination, which a
    /// later root of the same destination will not replace: made there, but not as a link
    /// to the copy of an earlier name of its file.
    pub fn just_made(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.made.load(Relaxed) && !self.linked.load(Relaxed)
    }
}

/// A directory on the way to a `--parents` destination, and its source.
pub(crate) struct Parent {
    pub src: Meta,
    pub src_path: PathBuf,
    pub dst: PathBuf,
    /// Made by this run (an existing one keeps its mode unless modes are preserved).
    pub created: bool,
    /// Without --preserve=mode, the mode cp gives a new one back once the copy is done: it
    /// made it without bits it may have lost, or opened it up to its owner (see
    /// `roots::make_parent`). None leaves it as made.
    pub restore: Option<u32>,
    /// Made where an earlier root's walk makes it too: that walk names it under `-v` and
    /// gives it its times (see [`Root::made_early`]).
    pub early: bool,
    /// Given its source's times: cp stops at the first parent it fails on, after its times,
    /// and those above keep the times they have.
    pub timed: std::sync::atomic::AtomicBool,
}

/// Whether the source of one of `roots` is a directory root or lies below one (cp copies
/// `s` and `s/f` both; a file with two links is then met three times, and cp, which
/// remembers every multiply-linked file, links all three copies). Found by walking each
/// root's source parent up to `/`; only runs with a directory root and another root look.
pub(crate) fn roots_overlap(roots: &[Root]) -> bool {
    roots_overlap_refs(&roots.iter().collect::<Vec<_>>())
}

/// [`roots_overlap`] of roots not all in one slice.
pub(crate) fn roots_overlap_refs(roots: &[&Root]) -> bool {
    let dirs: std::collections::HashSet<(u64, u64)> = roots
        .iter()
        .filter(|r| r.meta.is_dir())
        .map(|r| r.meta.id())
        .collect();
    if roots.len() < 2 || dirs.is_empty() {
        return false;
    }
    for (i, r) in roots.iter().enumerate() {
        // A directory named twice.
        if r.meta.is_dir() && roots[..i].iter().any(|o| o.meta.id() == r.meta.id()) {
            return true;
        }
        let Ok(mut at) = sys::open_dir(r.src_parent.as_fd(), c".", false) else {
            continue;
        };
        while let Ok(m) = sys::fstat(at.as_fd()) {
            if dirs.contains(&m.id()) {
                return true;
            }
            match sys::open_dir(at.as_fd(), c"..", false) {
                Ok(up) if sys::fstat(up.as_fd()).is_ok_and(|u| u.id() != m.id()) => at = up,
                _ => break,
            }
        }
    }
    false
}

/// Whether two roots that are not directories are one source file (`cp -aL f lf d`, with
/// `lf` a symlink to `f`): which of them copies it and which links to that copy, or names it
/// in a message, is cp's command-line order, so they run in it. Known from the roots' own
/// looks: no system call.
pub(crate) fn roots_share_a_file(roots: &[Root]) -> bool {
    let mut seen = std::collections::HashSet::new();
    roots
        .iter()
        .filter(|r| !r.meta.is_dir())
        .any(|r| !seen.insert(r.meta.id()))
}

/// What a destination directory is like, as far as copying into it goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DstFacts {
    pub dev: u64,
    /// Copy-on-write: `copy_file_range` may share extents there (only --reflink=never cares).
    pub cow: bool,
    /// Set-gid: new entries take the directory's group.
    pub setgid: bool,
    /// Set-gid, of a group this process's chmod may not keep the bit for (see
    /// [`sys::chmod_keeps_sgid`]): a new directory keeps the bit it inherits only where it is
    /// made with its final mode (see `dir::whole_perm`).
    pub sgid_foreign: bool,
    /// A default ACL, which new entries inherit (only looked at with --preserve=mode).
    pub default_acl: bool,
    /// `--preserve=sharing` and a filesystem that can clone: its clone granularity.
    pub share: Option<u64>,
    /// A root's destination directory with a default ACL, with neither --preserve=mode nor
    /// --no-preserve=mode (which set the mode outright, as cp does) nor --preserve=ownership
    /// (after which cp adds what the umask allows): the permission bits its ACL lets a new
    /// entry keep, which stand in for the umask, as the kernel's creation has them.
    pub acl_perm: Option<u32>,
}

impl DstFacts {
    /// The process as it applies a new entry's permission bits here.
    pub fn process(&self, process: &Process) -> Process {
        match self.acl_perm {
            Some(bits) => Process {
                umask: !bits & 0o777,
                ..*process
            },
            None => *process,
        }
    }
}

/// Hands work items to the scheduler from inside an item's run: subdirectories, shares of a
/// large directory, ranges of a large file.
pub(crate) trait Spawner {
    fn push(&self, item: WorkItem);
}

/// The scheduler's `spawn` callback, shared by the places of one item's run that spawn.
pub(crate) struct Spawn<'s>(std::cell::RefCell<&'s mut dyn FnMut(WorkItem)>);

impl<'s> Spawn<'s> {
    pub fn new(spawn: &'s mut dyn FnMut(WorkItem)) -> Self {
        Spawn(std::cell::RefCell::new(spawn))
    }
}

impl Spawner for Spawn<'_> {
    fn push(&self, item: WorkItem) {
        (self.0.borrow_mut())(item)
    }
}

/// Where, relative to the run's roots, an entry is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Loc<'a> {
    /// A root entry itself: its names and paths are the root's.
    Root(u32),
    /// An entry of the directory `rel` below a root.
    Below(u32, &'a [u8]),
    /// A file copied on its own ([`copy_file`](crate::copy_file)): no root; names are the
    /// paths given, resolved from the working directory.
    Alone {
        src: &'a Path,
        dst: &'a Path,
        /// The destination's directory with a trailing slash (empty for the working
        /// directory itself), which temporaries are put in.
        dst_prefix: &'a [u8],
    },
}

/// Whether `src_dir/name` and `dst_dir/dst_name` are one directory entry: one name in one
/// directory (cp's `same_nameat`). Looked up only when two entries may be one file.
pub(crate) fn same_entry(
    src_dir: BorrowedFd<'_>,
    name: &CStr,
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
) -> bool {
    fn split(n: &[u8]) -> (&[u8], &[u8]) {
        match n.iter().rposition(|&b| b == b'/') {
            Some(i) => (&n[..=i], &n[i + 1..]),
            None => (b".", n),
        }
    }
    let (src_parent, src_base) = split(name.to_bytes());
    let (dst_parent, dst_base) = split(dst_name.to_bytes());
    let parent = |dir, p| sys::stat_at(dir, &sys::cstring(p), true).map(|m| m.id());
    src_base == dst_base
        && matches!(
            (parent(src_dir, src_parent), parent(dst_dir, dst_parent)),
            (Ok(a), Ok(b)) if a == b
        )
}

/// cp's `same_nameat` for two paths from the working directory: the same last name (less
/// trailing slashes) in the same directory.
pub(crate) fn same_name_paths(a: &[u8], b: &[u8]) -> bool {
    /// The directory part and the last name of `p`, as gnulib's `dir_name` and
    /// `last_component` (less trailing slashes) tell them.
    fn parts(p: &[u8]) -> (&[u8], &[u8]) {
        let end = p
            .iter()
            .rposition(|&b| b != b'/')
            .map_or(p.len().min(1), |i| i + 1);
        let start = p[..end]
            .iter()
            .rposition(|&b| b == b'/')
            .map_or(0, |i| i + 1);
        let base = &p[start..end];
        if start == 0 {
            return (b".", base);
        }
        let dir_end = p[..start]
            .iter()
            .rposition(|&b| b != b'/')
            .map_or(1, |i| i + 1);
        (&p[..dir_end], base)
    }
    let ((a_dir, a_base), (b_dir, b_base)) = (parts(a), parts(b));
    let id = |d: &[u8]| sys::stat_at(sys::CWD, &sys::cstring(d), true).map(|m| m.id());
    a_base == b_base && matches!((id(a_dir), id(b_dir)), (Ok(x), Ok(y)) if x == y)
}

/// Where an entry is being copied: its source and destination directories, and what is known
/// of them.
pub(crate) struct Here<'a> {
    pub src_dir: BorrowedFd<'a>,
    pub dst_dir: BorrowedFd<'a>,
    pub loc: Loc<'a>,
    /// The root the entry is under (none for a file copied on its own).
    pub root: Option<&'a Root>,
    /// The directory's work info, for entries below a root directory.
    pub dir: Option<&'a DirInfo>,
    /// The marker of the part of the directory's work that copies this entry.
    pub marker: Option<&'a PartMarker>,
    pub dst: DstFacts,
    pub root_src_dev: u64,
    /// The device of a root on a filesystem whose files report their true size, so an empty
    /// file there needs no read; files elsewhere (procfs, sysfs, ...) are read to the end.
    pub sized_dev: u64,
    /// Where work found while copying the entry goes (ranges of a large file); None where
    /// there is no scheduler (a file copied on its own).
    pub spawn: Option<&'a dyn Spawner>,
}

impl<'a> Here<'a> {
    /// A root entry, copied from its source parent into its destination parent.
    pub fn at_root(index: u32, root: &'a Root) -> Here<'a> {
        Here {
            src_dir: root.src_parent.as_fd(),
            dst_dir: root.dst_parent.as_fd(),
            loc: Loc::Root(index),
            root: Some(root),
            dir: None,
            marker: None,
            dst: root.dst,
            root_src_dev: root.meta.dev,
            sized_dev: root.sized_dev,
            spawn: None,
        }
    }

    /// Whether the source `name` and the destination `dst_name` are one directory entry
    /// (see [`same_entry`]). A root is told by its paths as given, as cp tells it: `s/.` and
    /// `s/./` are one entry, and so are `s/` and `l/s` where `l` leads to the working
    /// directory.
    pub fn same_entry(&self, name: &CStr, dst_name: &CStr) -> bool {
        match (self.loc, self.root) {
            (Loc::Root(_), Some(root)) => same_name_paths(
                root.src_path.as_os_str().as_bytes(),
                root.dst_path.as_os_str().as_bytes(),
            ),
            _ => same_entry(self.src_dir, name, self.dst_dir, dst_name),
        }
    }

    /// The same place, with a scheduler to hand work to.
    pub fn with_spawner(self, spawn: &'a dyn Spawner) -> Here<'a> {
        Here {
            spawn: Some(spawn),
            ..self
        }
    }

    /// An entry of a directory below a root.
    pub fn below(
        index: u32,
        root: &'a Root,
        rel: &'a [u8],
        dirs: (BorrowedFd<'a>, BorrowedFd<'a>),
        info: &'a DirInfo,
        marker: &'a PartMarker,
    ) -> Here<'a> {
        Here {
            src_dir: dirs.0,
            dst_dir: dirs.1,
            loc: Loc::Below(index, rel),
            root: Some(root),
            dir: Some(info),
            marker: Some(marker),
            dst: DstFacts {
                setgid: info.dst_setgid,
                sgid_foreign: info.dst_sgid_foreign,
                default_acl: info.default_acl,
                acl_perm: None,
                ..root.dst
            },
            root_src_dev: root.meta.dev,
            sized_dev: root.sized_dev,
            spawn: None,
        }
    }

    /// The destination directory's path prefix for temporary names.
    pub fn dst_prefix(&self) -> &'a [u8] {
        match self.loc {
            Loc::Alone { dst_prefix, .. } => dst_prefix,
            _ => b"",
        }
    }

    /// Whether the destination directory held another run's marker.
    pub fn suspect(&self) -> bool {
        self.dir.is_some_and(|d| d.suspect)
    }

    pub fn src_path(&self, name: &CStr) -> PathBuf {
        match self.loc {
            Loc::Root(_) => self.root.expect("root").src_path.clone(),
            Loc::Below(_, rel) => join(&self.root.expect("root").src_path, rel, name),
            Loc::Alone { src, .. } => src.to_path_buf(),
        }
    }

    pub fn dst_path(&self, name: &CStr) -> PathBuf {
        match self.loc {
            Loc::Root(_) => self.root.expect("root").dst_path.clone(),
            Loc::Below(_, rel) => join(&self.root.expect("root").dst_path, rel, name),
            Loc::Alone { dst, .. } => dst.to_path_buf(),
        }
    }

    /// Where a hard-link group's first copy made here as `dst_name` is, for the links that
    /// follow; none for a file copied on its own.
    pub fn link_loc(&self, dst_name: &CStr) -> Option<LinkLoc> {
        let (root, dir) = match self.loc {
            Loc::Root(i) => (i, None),
            Loc::Below(i, rel) => (i, Some(rel.to_vec())),
            Loc::Alone { .. } => return None,
        };
        Some(LinkLoc {
            root,
            dir,
            name: dst_name.to_bytes().to_vec(),
        })
    }

    /// Whether `loc`'s directory is this entry's destination directory.
    pub fn holds(&self, loc: &LinkLoc) -> bool {
        match (self.loc, &loc.dir) {
            (Loc::Root(i), None) => i == loc.root,
            (Loc::Below(i, rel), Some(dir)) => i == loc.root && rel == &dir[..],
            _ => false,
        }
    }

    /// Records that this root entry took away what was at its destination and failed: its
    /// directory was written all the same.
    pub fn emptied(&self) {
        if let (Loc::Root(_), Some(root)) = (self.loc, self.root) {
            root.emptied
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Records that this entry was made or written at its destination: for a root entry,
    /// the later roots with the same destination must not replace it.
    pub fn made(&self) {
        if let (Loc::Root(_), Some(root)) = (self.loc, self.root) {
            root.made.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// [`Here::made`] for an entry made as a link to its group's copy: for a root entry, not
    /// one cp takes as just created.
    pub fn made_as_link(&self) {
        self.made();
        if let (Loc::Root(_), Some(root)) = (self.loc, self.root) {
            root.linked
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// A path that reaches the destination entry `dst_name` for the calls that have no
    /// fd-relative form (l*xattr), never following it.
    pub fn dst_entry_path(&self, dst_name: &CStr) -> CString {
        match self.loc {
            Loc::Alone { .. } => dst_name.to_owned(),
            _ => sys::proc_fd_path(self.dst_dir, Some(dst_name)),
        }
    }

    /// Flushes the destination directory's entries.
    pub fn sync_dst_dir(&self) -> sys::Result<()> {
        let Loc::Alone { dst_prefix, .. } = self.loc else {
            return sys::fsync(self.dst_dir);
        };
        let dir = if dst_prefix.is_empty() {
            c".".to_owned()
        } else {
            sys::cstring(dst_prefix)
        };
        sys::fsync(sys::open_dir(self.dst_dir, &dir, true)?.as_fd())
    }
}

/// `base/rel/name`: the display path of an entry below a root.
pub(crate) fn join(base: &Path, rel: &[u8], name: &CStr) -> PathBuf {
    let mut p = trimmed(base).join(OsStr::from_bytes(rel));
    p.push(OsStr::from_bytes(name.to_bytes()));
    p
}

/// The display path of a directory below a root.
pub(crate) fn rel_path(base: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        base.to_path_buf()
    } else {
        trimmed(base).join(OsStr::from_bytes(rel))
    }
}

/// A root's path to join names to: as cp joins them, its trailing slashes give way to one
/// (`a//` and `b` make `a/b`; slashes inside it stay, `a//b/` and `f` make `a//b/f`).
fn trimmed(base: &Path) -> &Path {
    let bytes = base.as_os_str().as_bytes();
    let end = bytes.iter().rposition(|&b| b != b'/').map_or(1, |i| i + 1);
    Path::new(OsStr::from_bytes(&bytes[..end.min(bytes.len())]))
}

/// `-s`: whether a link to the relative source path `target` would be made in `dir`, a
/// directory other than the working directory, where it would point elsewhere (cp refuses).
/// cp looks up "." in both; where either lookup fails (a directory it may not search), it
/// lets the link be tried, and making it reports the failure.
pub(crate) fn relative_symlink_elsewhere(target: &[u8], dir: BorrowedFd<'_>) -> bool {
    if target.starts_with(b"/") {
        return false;
    }
    let cwd = sys::stat_at(sys::CWD, c".", true).map(|m| m.id());
    let here = sys::stat_at(dir, c".", true).map(|m| m.id());
    matches!((cwd, here), (Ok(a), Ok(b)) if a != b)
}
