//! In-progress markers of destination directories.
//!
//! A file killed (SIGKILL) after its data but before its times or mode are set looks complete
//! by size and mtime, so `--update` has to be able to tell that it is not. Each destination
//! directory therefore holds an empty entry `.mimeo-PID-RUN.partial` from before its first new
//! file, symlink or special file is created until all of its own entries are complete. That
//! costs two calls per directory, where a mark on each file (created with the sticky bit,
//! cleared by a final chmod) cost one call per file.
//!
//! A later `--update` that finds the marker of a process that no longer runs removes it, and
//! treats an entry of that directory as up to date only if what the copy sets last matches
//! the source exactly (`place::provably_finished`). A stopped run (SIGINT, SIGTERM) removes its
//! markers once every entry in progress has been finished or removed.

use crate::sys::{self, Errno};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A directory, as the anchor it is below and its path from there.
type DirAt = (Arc<OwnedFd>, Arc<[u8]>);

/// The markers of one run.
#[derive(Debug)]
pub(crate) struct Journals {
    name: CString,
    /// Where markers were created and are not removed yet: anchor and directory below it.
    open: Mutex<Vec<DirAt>>,
}

impl Journals {
    pub(crate) fn new() -> Journals {
        // Runs of one process (library callers) may write into the same directory at once.
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        Journals {
            name: sys::cstring(format!(".mimeo-{pid}-{run:x}.partial").as_bytes()),
            open: Mutex::new(Vec::new()),
        }
    }

    /// Creates the marker in `dir`, the directory at `rel` below `anchor`. False when it cannot
    /// be created; the caller then marks its files one by one.
    pub(crate) fn create(
        &self,
        dir: BorrowedFd<'_>,
        anchor: &Arc<OwnedFd>,
        rel: &Arc<[u8]>,
    ) -> bool {
        match sys::mknod(dir, &self.name, sys::S_IFREG | 0o600, 0) {
            Ok(()) | Err(Errno::EXIST) => {
                self.registry().push((anchor.clone(), rel.clone()));
                true
            }
            Err(_) => false,
        }
    }

    /// Removes the marker of a directory whose own entries are all complete. `dir` is the
    /// directory if the caller has it open.
    pub(crate) fn remove(&self, dir: Option<BorrowedFd<'_>>, anchor: &Arc<OwnedFd>, rel: &[u8]) {
        match dir {
            Some(fd) => self.unlink(fd),
            None => {
                if let Ok(fd) = sys::open_dir_beneath(anchor.as_fd(), rel) {
                    self.unlink(fd.as_fd());
                }
            }
        }
        let mut open = self.registry();
        if let Some(i) = open
            .iter()
            .position(|(a, r)| Arc::ptr_eq(a, anchor) && &r[..] == rel)
        {
            open.swap_remove(i);
        }
    }

    /// Removes every marker still present. Only for a run whose workers have all returned
    /// normally: each entry they had in progress is then complete or removed.
    pub(crate) fn remove_all(&self) {
        let open = std::mem::take(&mut *self.registry());
        for (anchor, rel) in open {
            if let Ok(fd) = sys::open_dir_beneath(anchor.as_fd(), &rel) {
                self.unlink(fd.as_fd());
            }
        }
    }

    fn unlink(&self, dir: BorrowedFd<'_>) {
        let _ = sys::unlink(dir, &self.name, false);
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Vec<DirAt>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}
