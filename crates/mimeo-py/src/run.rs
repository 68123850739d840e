//! Running a copy with the interpreter released: the copy runs on a thread of its own while
//! the calling thread waits without the GIL, waking every 10 ms to let Python handle signals
//! (Ctrl-C stops the copy: [`Control::stop`] removes the entries in progress) and, at most ten
//! times a second, to call the caller's `progress` with what was done since its last call.

use mimeo::{Control, Event, Method, Observer};
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often the waiting thread lets Python run its signal handlers.
const TICK: Duration = Duration::from_millis(10);
/// The shortest time between two calls of `progress`.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// How a copy is going, as `progress` is told: counts since the start, and the entries
/// completed since the previous call.
#[pyclass(module = "mimeo", frozen, get_all)]
pub(crate) struct Progress {
    /// Entries completed so far (files, directories, links, special files).
    entries: u64,
    /// Bytes of file data written so far.
    bytes: u64,
    /// Of those, bytes cloned (extents shared with the source).
    clone_bytes: u64,
    /// Bytes copied inside the kernel (`copy_file_range`).
    offload_bytes: u64,
    /// Bytes read and written through a buffer.
    stream_bytes: u64,
    /// `(src, dst)` of the entries completed since the previous call, in this batch.
    copied: Py<PyList>,
    /// Whether this is the last call, made once the copy has ended.
    done: bool,
}

#[pymethods]
impl Progress {
    fn __repr__(&self) -> String {
        format!(
            "Progress(entries={}, bytes={}, clone_bytes={}, offload_bytes={}, stream_bytes={}, done={})",
            self.entries,
            self.bytes,
            self.clone_bytes,
            self.offload_bytes,
            self.stream_bytes,
            if self.done { "True" } else { "False" }
        )
    }
}

/// Collects what a run reports: its failures, and (for `progress`) the entries it completed.
#[derive(Default)]
pub(crate) struct Collect {
    pub failed: Mutex<Vec<mimeo::Error>>,
    copied: Mutex<Vec<(PathBuf, PathBuf)>>,
    entries: bool,
}

impl Collect {
    /// A collector; `entries` asks for the completed entries as well.
    pub fn new(entries: bool) -> Self {
        Collect {
            entries,
            ..Collect::default()
        }
    }

    pub fn take_failed(&self) -> Vec<mimeo::Error> {
        std::mem::take(&mut *self.failed.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Observer for Collect {
    fn event(&self, event: Event) {
        match event {
            Event::Failed(e) => self
                .failed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(e),
            Event::Copied { src, dst, .. } if self.entries => self
                .copied
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((src, dst)),
            _ => {}
        }
    }

    fn wants_entries(&self) -> bool {
        self.entries
    }
}

/// The caller's `progress`, and where paths come from for it.
pub(crate) struct Reporting<'a, 'py> {
    pub progress: &'a Bound<'py, PyAny>,
    pub collect: Option<&'a Collect>,
    /// Paths are handed over as bytes.
    pub bytes: bool,
    /// `(src, dst)` to report at the end, for a copy without a collector (one file).
    pub last: Option<(PathBuf, PathBuf)>,
    /// When `progress` was last called.
    pub called: Option<Instant>,
}

impl Reporting<'_, '_> {
    fn call(&mut self, control: &Control, done: bool) -> PyResult<()> {
        let py = self.progress.py();
        let mut copied: Vec<(PathBuf, PathBuf)> = match self.collect {
            Some(c) => std::mem::take(&mut *c.copied.lock().unwrap_or_else(|e| e.into_inner())),
            None => Vec::new(),
        };
        if done && control.entries_done() > 0 {
            copied.extend(self.last.take());
        }
        let list = PyList::empty(py);
        for (s, d) in &copied {
            list.append((
                crate::paths::to_py(py, s, self.bytes)?,
                crate::paths::to_py(py, d, self.bytes)?,
            ))?;
        }
        let p = Progress {
            entries: control.entries_done(),
            bytes: control.bytes_done(),
            clone_bytes: control.bytes_by(Method::Clone),
            offload_bytes: control.bytes_by(Method::Offload),
            stream_bytes: control.bytes_by(Method::Stream),
            copied: list.unbind(),
            done,
        };
        self.called = Some(Instant::now());
        self.progress.call1((p,))?;
        Ok(())
    }
}

/// Runs `work` on a thread of its own while this thread waits with the GIL released. Python
/// runs its signal handlers every [`TICK`]: an exception from one (KeyboardInterrupt) stops
/// the copy through `control`, waits for it to remove its entries in progress, and is
/// returned. So is an exception from `progress`.
pub(crate) fn supervise<T: Send>(
    py: Python<'_>,
    control: &Control,
    mut reporting: Option<Reporting<'_, '_>>,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let done = (Mutex::new(false), Condvar::new());
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("mimeo-py".into())
            .spawn_scoped(s, || {
                // Set also when `work` panics, so that the waiting thread wakes.
                struct Done<'a>(&'a (Mutex<bool>, Condvar));
                impl Drop for Done<'_> {
                    fn drop(&mut self) {
                        *self.0.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
                        self.0.1.notify_all();
                    }
                }
                let _done = Done(&done);
                work()
            })
            .expect("spawn the copy thread");
        let mut pending: Option<PyErr> = None;
        let start = Instant::now();
        loop {
            let finished = py.detach(|| {
                let flag = done.0.lock().unwrap_or_else(|e| e.into_inner());
                let (flag, _) = done
                    .1
                    .wait_timeout_while(flag, TICK, |d| !*d)
                    .unwrap_or_else(|e| e.into_inner());
                *flag
            });
            if finished {
                break;
            }
            if pending.is_some() {
                continue;
            }
            if let Err(e) = py.check_signals() {
                control.stop();
                pending = Some(e);
                continue;
            }
            if let Some(r) = reporting.as_mut() {
                if r.called.unwrap_or(start).elapsed() >= PROGRESS_EVERY {
                    if let Err(e) = r.call(control, false) {
                        control.stop();
                        pending = Some(e);
                    }
                }
            }
        }
        let result = match py.detach(|| handle.join()) {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        if let Some(e) = pending {
            return Err(e);
        }
        if let Some(r) = reporting.as_mut() {
            // At most ten calls a second, the last one included.
            if let Some(at) = r.called {
                let wait = PROGRESS_EVERY.saturating_sub(at.elapsed());
                py.detach(|| std::thread::sleep(wait));
            }
            r.call(control, true)?;
        }
        Ok(result)
    })
}

/// Calls `progress` once, for a copy so short that it ran without a thread of its own.
pub(crate) fn report_once(reporting: Option<Reporting<'_, '_>>, control: &Control) -> PyResult<()> {
    match reporting {
        Some(mut r) => r.call(control, true),
        None => Ok(()),
    }
}
