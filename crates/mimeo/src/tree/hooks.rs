//! A caller's say in a tree copy ([`Hooks`]): which entries of each directory to leave out,
//! and copying some kinds of entries itself. This is what a `shutil.copytree` work-alike needs
//! for its `ignore` and `copy_function` arguments.
//!
//! The per-entry cost stays a table lookup: which kinds a hook takes is asked once per run
//! ([`HookSet`]), and paths are only built for entries a hook is called for.

use crate::report::{EntryKind, Error};
use std::ffi::OsStr;
use std::path::Path;

/// What [`Hooks::copy_entry`] did with an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hooked {
    /// The hook copied the entry; it is reported and counted as copied.
    Copied,
    /// The hook left the entry out (or dealt with it and reported on its own); it is counted
    /// as skipped.
    Skipped,
    /// The hook declined: the engine copies the entry as usual.
    Declined,
}

/// A caller's say in a tree copy, for [`copy_hooked`](crate::copy_hooked) and
/// [`Executor::with_hooks`](crate::work::Executor::with_hooks). Hooks are called from the
/// worker threads, several at once.
///
/// ```
/// use mimeo::{CopyPair, Control, EntryKind, Hooks, NoObserver, Options};
/// use std::ffi::OsStr;
/// use std::path::Path;
///
/// /// Leaves out `*.tmp` files, like `shutil.ignore_patterns("*.tmp")`.
/// struct NoTmp;
///
/// impl Hooks for NoTmp {
///     fn ignores(&self) -> bool {
///         true
///     }
///     fn ignore(&self, _dir: &Path, names: &[&OsStr]) -> Vec<bool> {
///         names.iter().map(|n| n.as_encoded_bytes().ends_with(b".tmp")).collect()
///     }
/// }
///
/// # let dir = tempfile::tempdir()?;
/// # let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
/// std::fs::create_dir(&src)?;
/// std::fs::write(src.join("keep"), b"1")?;
/// std::fs::write(src.join("drop.tmp"), b"2")?;
/// let pairs = [CopyPair::new(&src, &dst)];
/// let summary = mimeo::copy_hooked(&pairs, &Options::archive(), &NoObserver, &Control::new(), &NoTmp);
/// assert_eq!(summary.files, 1);
/// assert!(!dst.join("drop.tmp").exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Hooks: Sync {
    /// Whether [`Hooks::ignore`] is to be called. Asked once per run.
    fn ignores(&self) -> bool {
        false
    }

    /// Called once for each source directory copied, after it is listed and before any of
    /// its entries is copied. `dir` is the directory's path as the run names it (the source
    /// given, joined with the path below it), `names` its entries in the order the directory
    /// listed them. Returns, for each name, whether to leave that entry out; names past the
    /// end of the returned vector are copied.
    fn ignore(&self, dir: &Path, names: &[&OsStr]) -> Vec<bool> {
        let _ = (dir, names);
        Vec::new()
    }

    /// Whether [`Hooks::copy_entry`] is to be called for entries of this kind. Asked once per
    /// run for each kind. Directories are never given to a hook.
    fn takes(&self, kind: EntryKind) -> bool {
        let _ = kind;
        false
    }

    /// Copies the entry `src` to `dst` in place of the engine, for the kinds it
    /// [takes](Hooks::takes). `kind` is what the entry is, after following a symlink where
    /// the run follows symlinks ([`Dereference`](crate::Dereference)). Entries copied by a
    /// hook are not part of hard-link groups.
    ///
    /// # Errors
    ///
    /// An error is reported as the entry's failure, and the run goes on.
    fn copy_entry(&self, src: &Path, dst: &Path, kind: EntryKind) -> Result<Hooked, Error> {
        let _ = (src, dst, kind);
        Ok(Hooked::Declined)
    }
}

/// No hooks: every entry is copied by the engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl Hooks for NoHooks {}

/// A run's hooks with what they take, asked once.
#[derive(Clone, Copy)]
pub(crate) struct HookSet<'a> {
    pub hooks: &'a dyn Hooks,
    pub ignores: bool,
    /// One bit per [`EntryKind`], by [`kind_bit`].
    takes: u16,
}

impl<'a> HookSet<'a> {
    pub fn new(hooks: &'a dyn Hooks) -> Self {
        const KINDS: [EntryKind; 7] = [
            EntryKind::File,
            EntryKind::Symlink,
            EntryKind::Fifo,
            EntryKind::Socket,
            EntryKind::CharDevice,
            EntryKind::BlockDevice,
            EntryKind::HardLink,
        ];
        let takes = KINDS
            .iter()
            .filter(|&&k| hooks.takes(k))
            .fold(0, |bits, &k| bits | kind_bit(k));
        HookSet {
            hooks,
            ignores: hooks.ignores(),
            takes,
        }
    }

    /// Whether a hook copies entries of this kind.
    pub fn takes(&self, kind: EntryKind) -> bool {
        self.takes & kind_bit(kind) != 0
    }
}

fn kind_bit(kind: EntryKind) -> u16 {
    1 << (kind as u16)
}
