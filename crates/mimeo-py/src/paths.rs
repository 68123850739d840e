//! Path arguments: `str`, `bytes` and any `os.PathLike`, read as `os.fspath` reads them, and
//! paths handed back in the type the caller used (names that are not UTF-8 round-trip: as
//! bytes, or as `str` with surrogate escapes, like `os.fsdecode`).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// A path argument: the object as given, its path, and whether `os.fspath` gave bytes.
pub(crate) struct Arg<'py> {
    /// The object as given (returned as given, and shown in `SameFileError`'s words).
    pub obj: Bound<'py, PyAny>,
    /// What `os.fspath` made of it: the `filename` of exceptions, as in `shutil`'s.
    pub fs: Bound<'py, PyAny>,
    pub path: PathBuf,
    pub bytes: bool,
}

impl<'py> Arg<'py> {
    /// Reads `obj` as `os.fspath` does (a `TypeError` for anything else).
    pub fn new(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        let fs = if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
            obj.clone()
        } else {
            static FSPATH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
            FSPATH
                .get_or_try_init(py, || {
                    Ok::<_, PyErr>(py.import("os")?.getattr("fspath")?.unbind())
                })?
                .bind(py)
                .call1((obj,))?
        };
        let (path, bytes) = match fs.cast::<PyBytes>() {
            Ok(b) => (OsString::from_vec(b.as_bytes().to_vec()), true),
            Err(_) => (fs.extract::<OsString>()?, false),
        };
        Ok(Arg {
            obj: obj.clone(),
            fs,
            path: path.into(),
            bytes,
        })
    }

    /// An argument made by the binding itself (a joined path), of the same type as `self`.
    pub fn derived(&self, path: PathBuf) -> PyResult<Arg<'py>> {
        let obj = to_py(self.obj.py(), &path, self.bytes)?;
        Ok(Arg {
            fs: obj.clone(),
            obj,
            path,
            bytes: self.bytes,
        })
    }

    /// `path` as `str` or `bytes`, like this argument.
    pub fn like(&self, path: &Path) -> PyResult<Bound<'py, PyAny>> {
        to_py(self.obj.py(), path, self.bytes)
    }
}

/// `path` as `bytes`, or as `str` decoded as `os.fsdecode` decodes.
pub(crate) fn to_py<'py>(py: Python<'py>, path: &Path, bytes: bool) -> PyResult<Bound<'py, PyAny>> {
    if bytes {
        Ok(PyBytes::new(py, path.as_os_str().as_bytes()).into_any())
    } else {
        Ok(path.as_os_str().into_pyobject(py)?.into_any())
    }
}

/// `os.path.join(dir, os.path.basename(file))`, as `shutil.copy` names a copy into a
/// directory.
pub(crate) fn join_basename(dir: &Path, file: &Path) -> PathBuf {
    let bytes = file.as_os_str().as_bytes();
    let base = match bytes.iter().rposition(|&b| b == b'/') {
        Some(i) => &bytes[i + 1..],
        None => bytes,
    };
    let dir_bytes = dir.as_os_str().as_bytes();
    let mut joined = dir_bytes.to_vec();
    if base.first() == Some(&b'/') {
        joined.clear();
    } else if !joined.is_empty() && !joined.ends_with(b"/") {
        joined.push(b'/');
    }
    joined.extend_from_slice(base);
    PathBuf::from(OsString::from_vec(joined))
}
