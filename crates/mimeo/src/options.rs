//! What a copy should do: data-path policy, preserved metadata, link handling, overwrite policy.
//! Plain configuration: this module imports nothing of the engine.

use std::ffi::OsString;

/// When to share extents with the source instead of copying bytes (`--reflink`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reflink {
    /// Clone where the filesystem can, otherwise offload or stream.
    #[default]
    Auto,
    /// Clone or fail the file.
    Always,
    /// Never share extents, not even through `copy_file_range` on a CoW filesystem.
    Never,
}

/// How holes are handled (`--sparse`), with cp's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sparse {
    /// Keep the source's holes.
    #[default]
    Auto,
    /// Keep holes, and also turn runs of zero blocks into holes when streaming.
    Always,
    /// Write every byte; disables clone and offload.
    Never,
}

/// Which metadata to carry over (`--preserve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Preserve {
    /// Permission bits, set-id and sticky bits, and POSIX ACLs.
    pub mode: bool,
    /// Owner and group (only root can give files away; others keep the group if they can).
    pub ownership: bool,
    /// Access and modification times, in nanoseconds.
    pub timestamps: bool,
    /// Every extended attribute.
    pub xattr: bool,
    /// Hard-link groups: files that are links of one inode stay links of one inode.
    pub links: bool,
    /// Extent sharing: extents that source files share (reflink clones, dedupe results)
    /// stay shared in the copy, also where it cannot clone from its source (another
    /// filesystem): the first reference is written, later ones are cloned from it. Costs
    /// nothing where the copy clones from the source anyway, or cannot clone at all.
    pub sharing: bool,
    /// Whether a failure to preserve xattrs that the destination cannot hold is an error
    /// (`--preserve=xattr` asked explicitly) or silently tolerated (`-a`), as in cp.
    pub xattr_required: bool,
    /// `-a`: a failure to copy an xattr that the copy goes on without is not named (cp's
    /// reduced diagnostics); `--preserve=all` names those that do not say the destination
    /// takes no xattrs, and `--attributes-only` or `--preserve=xattr` name every one.
    pub xattr_quiet: bool,
    /// With `mode` off: new entries get the default mode, 0666 (0777 for directories and
    /// sockets) less the umask, rather than the source's bits less the umask. This is
    /// `cp --no-preserve=mode`, which makes writable copies of read-only files. Existing
    /// destinations keep their mode either way.
    pub default_mode: bool,
    /// `--no-preserve=mode` (or `all`) with no later `--preserve=mode` (or `all`): cp's
    /// `explicit_no_preserve_mode`, which `-p`, `--preserve` and `-a` leave set. It matters
    /// where `mode` is on again only for the directories `--parents` makes: cp makes them
    /// from 0777 rather than the source's mode, so without its sticky and set-id bits.
    pub explicit_no_mode: bool,
}

impl Preserve {
    /// Everything `cp -a` keeps.
    pub fn all() -> Self {
        Preserve {
            mode: true,
            ownership: true,
            timestamps: true,
            xattr: true,
            links: true,
            sharing: true,
            xattr_required: false,
            xattr_quiet: true,
            default_mode: false,
            explicit_no_mode: false,
        }
    }
}

/// When symbolic links in the source are followed (`-P`, `-H`, `-L`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dereference {
    /// Copy symlinks as symlinks (`-P`).
    #[default]
    Never,
    /// Follow symlinks named on the command line only (`-H`).
    CommandLine,
    /// Follow every symlink (`-L`).
    Always,
}

/// What to do when a destination entry already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Overwrite {
    /// Replace it atomically (temporary + rename).
    #[default]
    Replace,
    /// Leave it alone (`-n`).
    NoClobber,
    /// Replace it only if it is incomplete, of another size, or older than the source (`-u`).
    Update,
    /// Leave it alone, and count that as a failure: "not replacing" (`--update=none-fail`).
    NoneFail,
}

/// What a regular file copied onto a destination symlink that points to nothing does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DanglingSymlink {
    /// Replace the symlink by the copy (mimeo's way: nothing is written outside the tree).
    #[default]
    Replace,
    /// Refuse it, as cp does: "not writing through dangling symlink".
    Refuse,
}

/// Whether, and how, an existing destination is kept under another name before it is
/// replaced (`--backup`), as cp names backups.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backup {
    /// `NAME` + suffix (`--backup=simple`, `never`).
    Simple {
        /// Appended to the name (`~` unless `-S`/`SIMPLE_BACKUP_SUFFIX` say otherwise); any
        /// bytes, as names are.
        suffix: OsString,
    },
    /// `NAME.~N~`, one more than the highest number there (`--backup=numbered`, `t`).
    Numbered,
    /// Numbered if numbered backups of the name exist already, simple otherwise
    /// (`--backup=existing`, `nil`; `-b` with `VERSION_CONTROL` unset, as in cp).
    Existing {
        /// The suffix of a simple backup.
        suffix: OsString,
    },
}

/// Links made instead of copies of files (`-l`, `-s`). Directories are still copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkInstead {
    /// A hard link to the source (`-l`); to what a source symlink points to unless symlinks
    /// are never followed (`-P`, `-d`, `-a`), as in cp.
    Hard,
    /// A symbolic link to the source's path as given (`-s`): relative only in the working
    /// directory.
    Symbolic,
}

/// Options of one copy run. Start from [`Options::default`] (cp's defaults) or
/// [`Options::archive`] (`cp -a`) and change fields:
///
/// ```
/// let mut opts = mimeo::Options::archive();
/// opts.jobs = 4;
/// opts.overwrite = mimeo::Overwrite::Update;
/// assert!(opts.recursive && opts.preserve.links);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// When to share extents with the source.
    pub reflink: Reflink,
    /// How holes are handled.
    pub sparse: Sparse,
    /// Which metadata to carry over.
    pub preserve: Preserve,
    /// When source symlinks are followed.
    pub dereference: Dereference,
    /// What to do with existing destination entries.
    pub overwrite: Overwrite,
    /// Copy directories recursively (`-r`). Without it, directories are refused, and FIFOs
    /// and device nodes named as sources are read as files, as cp reads them.
    pub recursive: bool,
    /// Do not descend into other filesystems (`-x`).
    pub one_file_system: bool,
    /// Worker threads for tree copies: how many start.
    pub jobs: usize,
    /// The most worker threads a tree copy may grow to while its workers wait on I/O (a cold
    /// cache), it reads file data (a copy that clones every file does not grow) and more of
    /// them copy faster. Equal to `jobs` (as `-j N` sets it), the count is fixed. See
    /// [`default_max_jobs`].
    pub max_jobs: usize,
    /// Buffer size for the streaming fallback.
    pub buffer_size: usize,
    /// Flush every file and directory to stable storage before it counts as copied (`--sync`).
    pub sync: bool,
    /// Drop copied data from the page cache as it goes (`--nocache`).
    pub nocache: bool,
    /// Re-read each copied file and compare it with its source (`--verify`).
    pub verify: bool,
    /// Record on each clone the file it was cloned from (`--record-origin`): the extended
    /// attribute `user.mimeo.origin`, which [`SharedFile`](crate::SharedFile) follows to
    /// read the clone's shared ranges through its origin's page cache. A clone of a file
    /// that carries a valid record gets the same record (the first origin). A file that is
    /// copied, not cloned, gets none, even if its source carries one.
    pub record_origin: bool,
    /// Read the shared extents of sources through the first source file of the run that
    /// held them, when the destination cannot clone (another filesystem, `--reflink=never`):
    /// the device and the page cache then hold those bytes once. The bytes are always those
    /// of a plain read (see [`SharedFile`](crate::SharedFile)). On by default.
    pub shared_reads: bool,
    /// Split files of at least twice this size, copied by offload or stream, into ranges of
    /// this size that several workers copy at once; their metadata is applied once, after
    /// the last range. `None` copies every file in one piece. See [`DEFAULT_SPLIT`].
    pub split: Option<u64>,
    /// A large file being copied by offload or stream when the run is stopped
    /// ([`Control::stop`](crate::Control::stop): SIGINT, SIGTERM) keeps its written prefix
    /// and the record of what it is a prefix of, instead of being removed, so that a later
    /// run with [`Overwrite::Update`] resumes it (`--partial`). It stays marked incomplete.
    pub partial: bool,
    /// Also remove the temporaries and in-progress markers that runs on other hosts left in
    /// the directories copied into. Only for when no run elsewhere is still going on: from
    /// here, another host's run can never be proven dead.
    pub clean_other_hosts: bool,
    /// Write an existing regular destination in place (truncate, then write), as cp does, so
    /// that every hard link of it sees the new bytes (`--inplace`). This gives up the atomic
    /// replacement: a reader may see a half-written file, and a copy killed meanwhile leaves
    /// one, marked incomplete by the sticky bit where mimeo may change the file's mode.
    pub inplace: bool,
    /// Replace an existing destination by a new entry made as if nothing were there: no
    /// mode, owner or ACL of the old one is kept, and a FIFO or device node is replaced
    /// rather than written into (`--remove-destination`). The replacement is still atomic.
    pub remove_destination: bool,
    /// Keep each destination that is replaced under a backup name first (`--backup`). The
    /// backup is a hard link made before the copy is renamed over the name, so the name
    /// always refers to the old or the new file.
    pub backup: Option<Backup>,
    /// Ask before replacing an existing destination (`-i`), through
    /// [`Observer::confirm_overwrite`](crate::Observer::confirm_overwrite).
    pub interactive: bool,
    /// Copy no file data, only the attributes asked for: a new file is empty, and an existing
    /// one keeps its data (`--attributes-only`).
    pub attributes_only: bool,
    /// Make links instead of copying files (`-l`, `-s`).
    pub link: Option<LinkInstead>,
    /// Replace an existing destination that cp could not open or link over (cp's `-f`):
    /// with [`Options::link`], an existing destination is otherwise an error.
    pub force: bool,
    /// Copy FIFOs and device nodes met in a recursive copy as regular files holding what
    /// reading them gives (`--copy-contents`).
    pub copy_contents: bool,
    /// Make the directories of each source's path that are missing at its destination, which
    /// ends with that path (`--parents`: `a/b/c` into `DIR` is `DIR/a/b/c`). They get the
    /// source directories' attributes as the options say.
    pub parents: bool,
    /// What a regular file copied onto a dangling destination symlink does.
    pub dangling_symlink: DanglingSymlink,
    /// A directory copied onto an existing symlink to a directory goes into the directory
    /// it points to, instead of failing (`--keep-directory-symlink`).
    pub keep_directory_symlink: bool,
}

/// Default number of workers for tree copies: one per CPU, at most 8. Measured with W4
/// (bench/results/2026-11-22-2core-vm-final-w1w2w4.md, 2 cores): on XFS `-j 2` took 0.63× the
/// time of `-j 1`, `-j 4` 0.74× and `-j 8` 0.96×; on ext4 `-j 2` to `-j 16` were within noise
/// of each other (0.49–0.55×). The copy is CPU-bound in the kernel, so the knee is at the CPU
/// count.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
}

/// The default ceiling for a growing pool (see [`Options::max_jobs`]): a cold copy kept
/// getting faster up to 16–32 workers on 2 CPUs (bench W14), and each idle worker costs
/// little (its buffers, a thread).
pub fn default_max_jobs() -> usize {
    64
}

/// Default buffer size for the streaming fallback. Measured on a 1 GiB ext4 → XFS stream
/// (bench/results/2026-11-22-buffer-size.md): 256 KiB–1 MiB are equal within noise warm and
/// cold; 2 MiB and up cost 15–20% more system time once the buffer leaves the CPU caches.
pub const DEFAULT_BUFFER_SIZE: usize = 256 << 10;

/// Default of [`Options::split`]: off. Measured with W3 (4 GiB, cold, durable;
/// bench/results/2026-11-23-2core-vm-ranges.md, 2 cores, one virtual disk, shared and
/// noisy), 1 GiB ranges took 0.83× the time of the file in one piece from ext4 to XFS and
/// 0.43× from ext4 to ext4 (medians of 5 rounds), but the spread of the runs (up to 4× between
/// rounds) is wider than the gain, and splitting changes how the worker pool is sized: it
/// stays opt-in until it is measured on a quieter machine.
pub const DEFAULT_SPLIT: Option<u64> = None;

impl Options {
    /// What `cp -a` does: recursive, symlinks copied as symlinks, everything preserved.
    pub fn archive() -> Self {
        Options {
            preserve: Preserve::all(),
            dereference: Dereference::Never,
            recursive: true,
            ..Options::default()
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            reflink: Reflink::Auto,
            sparse: Sparse::Auto,
            preserve: Preserve::default(),
            dereference: Dereference::Never,
            overwrite: Overwrite::Replace,
            recursive: false,
            one_file_system: false,
            jobs: default_jobs(),
            max_jobs: default_max_jobs(),
            buffer_size: DEFAULT_BUFFER_SIZE,
            sync: false,
            nocache: false,
            verify: false,
            record_origin: false,
            shared_reads: true,
            split: DEFAULT_SPLIT,
            partial: false,
            clean_other_hosts: false,
            inplace: false,
            remove_destination: false,
            backup: None,
            interactive: false,
            attributes_only: false,
            link: None,
            force: false,
            copy_contents: false,
            parents: false,
            dangling_symlink: DanglingSymlink::Replace,
            keep_directory_symlink: false,
        }
    }
}
