//! `archive`: `mimeo -a` from Python, returning the summary the command prints as JSON.

use crate::extras::{Extras, defaults};
use crate::paths::{Arg, join_basename};
use crate::run::{Collect, Reporting, supervise};
use mimeo::{Control, CopyPair, Overwrite, Preserve, Sparse, Summary as Counts};
use pyo3::exceptions::{PyNotADirectoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

/// What a run did: the fields of `mimeo --json`'s summary line, and its failures.
#[pyclass(module = "mimeo", frozen, get_all)]
pub(crate) struct Summary {
    /// Regular files copied (hard links to an earlier copy not included).
    files: u64,
    /// Directories copied or merged into.
    directories: u64,
    /// Symbolic links copied.
    symlinks: u64,
    /// Hard links made to an earlier copy in the run.
    hard_links: u64,
    /// FIFOs, sockets and device nodes.
    specials: u64,
    /// Entries left alone (`update=`, `no_clobber=`).
    skipped: u64,
    /// Bytes of file data in the copies (holes excluded).
    bytes: u64,
    /// Bytes by data path: `{"clone": B, "offload": B, "stream": B}`.
    by_method: Py<PyDict>,
    /// Files by data path: `{"clone": N, "offload": N, "stream": N}`.
    files_by_method: Py<PyDict>,
    /// Bytes of the files' sizes left as holes.
    hole_bytes: u64,
    /// Bytes read through a canonical file (shared reads of clones).
    shared_read_bytes: u64,
    /// Bytes kept from copies an interrupted run had begun, verified and not copied again.
    resumed_bytes: u64,
    /// Entries that failed.
    errors: u64,
    /// Sources that vanished during the run (also counted in `errors`).
    vanished: u64,
    /// Whether the run was stopped before it finished.
    interrupted: bool,
    /// Wall time of the run, in seconds.
    elapsed_s: f64,
    /// Each failure as `(path, operation, message, errno)`, as in `mimeo --json`'s error
    /// lines (`errno` is None for a refusal).
    failures: Py<PyList>,
}

#[pymethods]
impl Summary {
    /// The summary as `mimeo --json` prints it (`{"type": "summary", ...}`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("type", "summary")?;
        d.set_item("files", self.files)?;
        d.set_item("directories", self.directories)?;
        d.set_item("symlinks", self.symlinks)?;
        d.set_item("hard_links", self.hard_links)?;
        d.set_item("specials", self.specials)?;
        d.set_item("skipped", self.skipped)?;
        d.set_item("bytes", self.bytes)?;
        d.set_item("by_method", self.by_method.bind(py).copy()?)?;
        d.set_item("files_by_method", self.files_by_method.bind(py).copy()?)?;
        d.set_item("hole_bytes", self.hole_bytes)?;
        d.set_item("shared_read_bytes", self.shared_read_bytes)?;
        d.set_item("resumed_bytes", self.resumed_bytes)?;
        d.set_item("errors", self.errors)?;
        d.set_item("vanished", self.vanished)?;
        d.set_item("interrupted", self.interrupted)?;
        d.set_item("elapsed_s", self.elapsed_s)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Summary(files={}, directories={}, symlinks={}, hard_links={}, specials={}, skipped={}, bytes={}, errors={}, interrupted={})",
            self.files,
            self.directories,
            self.symlinks,
            self.hard_links,
            self.specials,
            self.skipped,
            self.bytes,
            self.errors,
            if self.interrupted { "True" } else { "False" }
        )
    }
}

/// The options of `archive` beyond the common extras.
pub(crate) struct ArchiveArgs {
    pub sparse: String,
    pub update: bool,
    pub no_clobber: bool,
    pub one_file_system: bool,
    pub sync: bool,
    pub nocache: bool,
    pub verify: bool,
}

pub(crate) fn archive<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    dst: &Bound<'py, PyAny>,
    args: ArchiveArgs,
    extras: Extras<'py>,
) -> PyResult<Summary> {
    let sources: Vec<Arg<'py>> = if src.is_instance_of::<PyString>()
        || src.is_instance_of::<PyBytes>()
        || src.hasattr("__fspath__")?
    {
        vec![Arg::new(src)?]
    } else {
        src.try_iter()?
            .map(|s| Arg::new(&s?))
            .collect::<PyResult<_>>()?
    };
    let dst = Arg::new(dst)?;
    // cp's rule: into an existing directory, else to the name given (one source only).
    let into = std::fs::metadata(&dst.path).is_ok_and(|m| m.is_dir());
    if !into && sources.len() != 1 {
        return Err(PyNotADirectoryError::new_err((
            libc::ENOTDIR,
            crate::errors::strerror(libc::ENOTDIR),
            dst.fs.clone().unbind(),
        )));
    }
    let pairs: Vec<CopyPair> = sources
        .iter()
        .map(|s| {
            let to = if into {
                join_basename(&dst.path, &s.path)
            } else {
                dst.path.clone()
            };
            CopyPair::new(&s.path, to)
        })
        .collect();
    let mut opts = extras.options(&mimeo::Options::archive(), Preserve::all());
    // cp's rule, not shutil's, for what is created without its mode.
    opts.preserve.default_mode = false;
    if extras.workers.is_none() {
        opts.jobs = defaults().jobs;
    }
    opts.sparse = match args.sparse.as_str() {
        "auto" => Sparse::Auto,
        "always" => Sparse::Always,
        "never" => Sparse::Never,
        other => {
            return Err(PyValueError::new_err(format!(
                "sparse must be 'auto', 'always' or 'never', not {other:?}"
            )));
        }
    };
    opts.overwrite = if args.no_clobber {
        Overwrite::NoClobber
    } else if args.update {
        Overwrite::Update
    } else {
        Overwrite::Replace
    };
    opts.one_file_system = args.one_file_system;
    opts.sync = args.sync;
    opts.nocache = args.nocache;
    opts.verify = args.verify;
    let control = Control::new();
    let collect = Collect::new(extras.progress.is_some());
    let bytes = dst.bytes;
    let reporting = extras.progress.as_ref().map(|p| Reporting {
        progress: p,
        collect: Some(&collect),
        bytes,
        last: None,
        called: None,
    });
    let counts = supervise(py, &control, reporting, || {
        mimeo::copy_with(&pairs, &opts, &collect, &control)
    })?;
    summary(py, &counts, collect.take_failed(), bytes)
}

fn summary(
    py: Python<'_>,
    s: &Counts,
    failed: Vec<mimeo::Error>,
    bytes: bool,
) -> PyResult<Summary> {
    let by_method = PyDict::new(py);
    let files_by_method = PyDict::new(py);
    for m in mimeo::Method::ALL {
        by_method.set_item(m.name(), s.bytes_by(m))?;
        files_by_method.set_item(m.name(), s.files_by(m))?;
    }
    let failures = PyList::empty(py);
    for e in failed {
        failures.append((
            crate::paths::to_py(py, &e.path, bytes)?,
            e.op.name(),
            e.message(),
            e.errno(),
        ))?;
    }
    Ok(Summary {
        files: s.files,
        directories: s.directories,
        symlinks: s.symlinks,
        hard_links: s.hard_links,
        specials: s.specials,
        skipped: s.skipped,
        bytes: s.bytes,
        by_method: by_method.unbind(),
        files_by_method: files_by_method.unbind(),
        hole_bytes: s.hole_bytes,
        shared_read_bytes: s.shared_read_bytes,
        resumed_bytes: s.resumed_bytes,
        errors: s.errors,
        vanished: s.vanished,
        interrupted: s.interrupted,
        elapsed_s: s.elapsed.as_secs_f64(),
        failures: failures.unbind(),
    })
}
