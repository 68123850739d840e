//! `mimeo.du` and `mimeo.dedupe`: the engine's space functions (`mimeo-du`, `mimeo-dedupe`),
//! run on a thread of their own while the caller waits without the GIL (Ctrl-C stops them).

use crate::paths::{Arg, to_py};
use crate::run::supervise;
use mimeo::Control;
use mimeo::space::{DedupeOptions, DuOptions, NoSpaceObserver, Progress, Usage};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::path::PathBuf;

/// The paths of a call, and whether to give paths back as `bytes`.
fn read_paths(paths: &Bound<'_, PyTuple>) -> PyResult<(Vec<PathBuf>, bool)> {
    let args: Vec<Arg<'_>> = paths
        .iter()
        .map(|p| Arg::new(&p))
        .collect::<PyResult<_>>()?;
    if args.is_empty() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "at least one path is required",
        ));
    }
    let bytes = args.iter().all(|a| a.bytes);
    Ok((args.into_iter().map(|a| a.path).collect(), bytes))
}

fn jobs(workers: Option<usize>) -> PyResult<Option<usize>> {
    match workers {
        Some(0) => Err(pyo3::exceptions::PyValueError::new_err(
            "workers must be at least 1",
        )),
        other => Ok(other),
    }
}

fn usage<'py>(py: Python<'py>, u: &Usage) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("total", u.total)?;
    d.set_item("exclusive", u.exclusive)?;
    d.set_item("shared", u.shared)?;
    d.set_item("shared_outside", u.shared_outside)?;
    d.set_item("unknown_extents", u.unknown_extents)?;
    d.set_item("unknown_bytes", u.unknown_bytes)?;
    d.set_item("files", u.files)?;
    Ok(d)
}

/// du(*paths, one_file_system=False, sync=False, workers=None)
/// --
///
/// The space that ``paths`` use, as ``mimeo-du -s`` measures it from the extent maps: a dict
/// with ``paths`` (a list of ``(path, usage)``, each path with hard links counted once),
/// ``total`` (the whole set: every file and every physical byte once), ``errors`` (entries
/// that could not be read), ``interrupted`` and ``elapsed_s``. A usage is a dict of bytes:
/// ``total`` (data, holes left out), ``exclusive`` (referenced by nothing else), ``shared``
/// (shared extents, each physical byte once), ``shared_outside`` (of those, referenced from
/// outside the set), and ``unknown_extents``, ``unknown_bytes`` (no known address: inline or
/// not yet written data, counted as exclusive), ``files``. ``sync=True`` writes unwritten data
/// back first, so that it counts where it will lie.
#[pyfunction]
#[pyo3(signature = (*paths, one_file_system=false, sync=false, workers=None))]
pub(crate) fn du<'py>(
    py: Python<'py>,
    paths: &Bound<'py, PyTuple>,
    one_file_system: bool,
    sync: bool,
    workers: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let (paths, bytes) = read_paths(paths)?;
    let mut opts = DuOptions::default();
    opts.one_file_system = one_file_system;
    opts.sync = sync;
    if let Some(n) = jobs(workers)? {
        opts.jobs = n;
    }
    let control = Control::new();
    let report = supervise(py, &control, None, || {
        mimeo::space::du(&paths, &opts, &NoSpaceObserver, &control)
    })?;
    let out = PyDict::new(py);
    let list = PyList::empty(py);
    for (path, u) in &report.paths {
        list.append((to_py(py, path, bytes)?, usage(py, u)?))?;
    }
    out.set_item("paths", list)?;
    out.set_item("total", usage(py, &report.total)?)?;
    out.set_item("errors", report.errors)?;
    out.set_item("interrupted", report.interrupted)?;
    out.set_item("elapsed_s", report.elapsed.as_secs_f64())?;
    Ok(out)
}

/// dedupe(*paths, min_size=1, one_file_system=False, dry_run=False, workers=None)
/// --
///
/// Finds files with the same content below ``paths`` and makes them share their extents
/// (``FIDEDUPERANGE``: the kernel compares the bytes again under a lock), changing nothing
/// else, as ``mimeo-dedupe`` does. Returns a dict of counts: ``files``, ``candidates``,
/// ``already_shared``, ``groups``, ``duplicates``, ``deduped_files``, ``bytes_read``,
/// ``bytes_deduped``, ``bytes_saved`` (physical bytes freed; with ``dry_run=True``, that would
/// be freed, and nothing is changed), ``skipped``, ``errors``, ``dry_run``, ``interrupted``,
/// ``elapsed_s``. On a filesystem that cannot share extents (ext4, tmpfs) it counts an error.
#[pyfunction]
#[pyo3(signature = (*paths, min_size=1, one_file_system=false, dry_run=false, workers=None))]
pub(crate) fn dedupe<'py>(
    py: Python<'py>,
    paths: &Bound<'py, PyTuple>,
    min_size: u64,
    one_file_system: bool,
    dry_run: bool,
    workers: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let (paths, _) = read_paths(paths)?;
    let mut opts = DedupeOptions::default();
    opts.min_size = min_size;
    opts.one_file_system = one_file_system;
    opts.dry_run = dry_run;
    if let Some(n) = jobs(workers)? {
        opts.jobs = n;
    }
    let control = Control::new();
    let s = supervise(py, &control, None, || {
        mimeo::space::dedupe(
            &paths,
            &opts,
            &NoSpaceObserver,
            &control,
            &Progress::default(),
        )
    })?;
    let out = PyDict::new(py);
    out.set_item("files", s.files)?;
    out.set_item("candidates", s.candidates)?;
    out.set_item("already_shared", s.already_shared)?;
    out.set_item("groups", s.groups)?;
    out.set_item("duplicates", s.duplicates)?;
    out.set_item("deduped_files", s.deduped_files)?;
    out.set_item("bytes_read", s.bytes_read)?;
    out.set_item("bytes_deduped", s.bytes_deduped)?;
    out.set_item("bytes_saved", s.bytes_saved)?;
    out.set_item("skipped", s.skipped)?;
    out.set_item("errors", s.errors)?;
    out.set_item("dry_run", s.dry_run)?;
    out.set_item("interrupted", s.interrupted)?;
    out.set_item("elapsed_s", s.elapsed.as_secs_f64())?;
    Ok(out)
}
