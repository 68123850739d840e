//! The engine's side of reporting: failures, copied and skipped entries go to the observer
//! and the counters; paths are only built when the observer wants them.

use super::control::Control;
use super::error::{Error, Op};
use super::event::{Action, EntryKind, Event, Observer, Warning};
use super::outcome::FileOutcome;
use super::summary::{Counters, Summary};
use std::path::PathBuf;
use std::time::Duration;

/// Where one run reports.
pub(crate) struct Reporter<'a> {
    observer: &'a dyn Observer,
    wants_entries: bool,
    counters: Counters,
    asking: std::sync::Mutex<()>,
    /// Destinations whose removal is said after their entry's `-v` line (see
    /// [`Reporter::removed_after_open`]).
    removed_after: std::sync::Mutex<Vec<PathBuf>>,
    pub control: &'a Control,
}

impl<'a> Reporter<'a> {
    pub fn new(observer: &'a dyn Observer, control: &'a Control) -> Self {
        Reporter {
            observer,
            wants_entries: observer.wants_entries(),
            counters: Counters::default(),
            asking: std::sync::Mutex::new(()),
            removed_after: std::sync::Mutex::new(Vec::new()),
            control,
        }
    }

    /// A failed entry. An entry removed because the run was stopped is not a failure of its
    /// own: the run reports that it was interrupted.
    pub fn fail(&self, err: Error) {
        if err.op == Op::Interrupted {
            return;
        }
        if self.wants_entries {
            self.said_removed(&err.path);
        }
        self.counters.error(&err);
        self.observer.event(Event::Failed(err));
    }

    /// A failed non-directory entry (`src` to `dst`). cp names an entry on its `-v` line once
    /// the destination is decided, before it opens, makes or writes anything, so a failure
    /// from then on follows that line.
    pub fn entry_failed(
        &self,
        src: impl FnOnce() -> PathBuf,
        dst: impl FnOnce() -> PathBuf,
        err: Error,
    ) {
        if self.wants_entries && err.begun() {
            let dst = dst();
            self.observer.event(Event::Begun {
                src: src(),
                dst: dst.clone(),
            });
            self.said_removed(&dst);
        }
        self.fail(err);
    }

    /// cp's `-v` line for an entry whose copy fails from a step that is no failure of the
    /// copy itself (under -f, removing the destination it could not open): sent before the
    /// failure, which [`Reporter::entry_failed`] would not name.
    pub fn begun(&self, src: impl FnOnce() -> PathBuf, dst: impl FnOnce() -> PathBuf) {
        if self.wants_entries {
            let dst = dst();
            self.observer.event(Event::Begun {
                src: src(),
                dst: dst.clone(),
            });
            self.said_removed(&dst);
        }
    }

    /// A warning: reported, not counted as a failure.
    pub fn warn(&self, warning: Warning) {
        self.observer.event(Event::Warning(warning));
    }

    /// An extended attribute the copy goes on without, named as cp names it.
    pub fn attribute(&self, err: Error) {
        self.warn(Warning::Attribute(err));
    }

    /// An entry copied completely.
    pub fn copied(
        &self,
        src: impl FnOnce() -> PathBuf,
        dst: impl FnOnce() -> PathBuf,
        kind: EntryKind,
        outcome: Option<FileOutcome>,
    ) {
        self.counters.entry(kind, outcome.as_ref());
        self.control.add_entry();
        if self.wants_entries {
            let dst = dst();
            self.observer.event(Event::Copied {
                src: src(),
                dst: dst.clone(),
                kind,
                outcome,
            });
            self.said_removed(&dst);
        }
    }

    /// A directory copied into one that was there already: counted as copied, with no
    /// event.
    pub fn merged(&self) {
        self.counters.entry(EntryKind::Directory, None);
        self.control.add_entry();
    }

    /// Whether entries are reported one by one (`-v`).
    pub fn wants_entries(&self) -> bool {
        self.wants_entries
    }

    /// An existing destination removed before its copy is made (cp's "removed 'x'").
    pub fn removed(&self, path: impl FnOnce() -> PathBuf) {
        if self.wants_entries {
            self.observer.event(Event::Removed { path: path() });
        }
    }

    /// An existing destination removed because cp could not open it for writing: cp tried
    /// the open after its `-v` line, so its "removed 'x'" follows that line, or comes before
    /// the failure of a copy that has none. Held until then (or the end of the run).
    pub fn removed_after_open(&self, path: impl FnOnce() -> PathBuf) {
        if self.wants_entries {
            let mut held = self.removed_after.lock().unwrap_or_else(|e| e.into_inner());
            // Said once, however many steps of the copy find they remove it.
            let path = path();
            if !held.contains(&path) {
                held.push(path);
            }
        }
    }

    /// Sends the removal of `path` that [`Reporter::removed_after_open`] holds, if any.
    fn said_removed(&self, path: &std::path::Path) {
        let mut held = self.removed_after.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = held.iter().position(|p| p == path) {
            let path = held.swap_remove(at);
            drop(held);
            self.observer.event(Event::Removed { path });
        }
    }

    /// An entry left alone (`-n`, `-u`).
    pub fn skipped(&self, src: impl FnOnce() -> PathBuf, dst: impl FnOnce() -> PathBuf) {
        self.counters.skipped();
        if self.wants_entries {
            self.observer.event(Event::Skipped {
                src: src(),
                dst: dst(),
            });
        }
    }

    /// `-i`: asks the observer whether `dst` may be replaced; one question at a time, so
    /// that prompts of several workers never interleave.
    pub fn confirm_overwrite(&self, src: &std::path::Path, dst: &std::path::Path) -> bool {
        let _one = self.asking.lock().unwrap_or_else(|e| e.into_inner());
        self.observer.confirm_overwrite(src, dst)
    }

    /// `--dry-run`: what the copy would do with an entry.
    pub fn planned(&self, src: PathBuf, dst: PathBuf, kind: EntryKind, action: Action) {
        self.counters.entry(kind, None);
        self.observer.event(Event::Planned {
            src,
            dst,
            kind,
            action,
        });
    }

    /// The counts so far, and tells the observer the run has finished.
    pub fn finish(&self, elapsed: Duration) -> Summary {
        // Removals whose entry said nothing more.
        let held =
            std::mem::take(&mut *self.removed_after.lock().unwrap_or_else(|e| e.into_inner()));
        for path in held {
            self.observer.event(Event::Removed { path });
        }
        self.observer.finished();
        let mut summary = self.counters.summary(elapsed);
        summary.interrupted = self.control.is_stopped();
        summary
    }
}
