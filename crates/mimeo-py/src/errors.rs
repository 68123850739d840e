//! mimeo's errors as the exceptions `shutil` raises, with `errno`, `filename` and `filename2`
//! set as `shutil` sets them; and the `(src, dst, why)` triples of `shutil.Error`.

use crate::paths::Arg;
use mimeo::{Cause, Error, Refusal};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyType};

/// One of the exception classes of `mimeo._errors` (`Error`, `SameFileError`,
/// `SpecialFileError`).
pub(crate) fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module =
        MODULE.get_or_try_init(py, || Ok::<_, PyErr>(py.import("mimeo._errors")?.unbind()))?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// strerror's words for an errno.
pub(crate) fn strerror(errno: i32) -> String {
    Error::os(mimeo::Op::Stat, "", errno).message()
}

/// `OSError(errno, strerror, filename[, None, filename2])`: Python picks the subclass
/// (`FileNotFoundError`, `PermissionError`, ...) from the errno.
pub(crate) fn os_error(
    py: Python<'_>,
    errno: i32,
    filename: Option<&Bound<'_, PyAny>>,
    filename2: Option<&Bound<'_, PyAny>>,
) -> PyErr {
    let msg = strerror(errno);
    match (filename, filename2) {
        (None, _) => PyOSError::new_err((errno, msg)),
        (Some(f), None) => PyOSError::new_err((errno, msg, f.clone().unbind())),
        (Some(f), Some(g)) => PyOSError::new_err((
            errno,
            msg,
            f.clone().unbind(),
            py.None(),
            g.clone().unbind(),
        )),
    }
}

/// An exception of one of mimeo's classes, made from `args`.
pub(crate) fn raise<'py, A: IntoPyObject<'py>>(py: Python<'py>, name: &str, args: A) -> PyErr {
    match class(py, name).and_then(|c| c.call1((args,))) {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// `SameFileError("'a' and 'b' are the same file")`, worded as `shutil` words it.
pub(crate) fn same_file(py: Python<'_>, src: &Bound<'_, PyAny>, dst: &Bound<'_, PyAny>) -> PyErr {
    let words = (|| -> PyResult<String> {
        Ok(format!(
            "{} and {} are the same file",
            src.repr()?,
            dst.repr()?
        ))
    })();
    match words {
        Ok(w) => raise(py, "SameFileError", w),
        Err(e) => e,
    }
}

/// `SpecialFileError("`name` is a named pipe")`, as `shutil` words it.
pub(crate) fn special_file(py: Python<'_>, path: &Bound<'_, PyAny>, what: &str) -> PyErr {
    // Formatted by Python: a name that is not UTF-8 keeps its surrogate escapes.
    let words = PyString::new(py, "`%s` is a %s").rem((path, what));
    match words {
        Ok(w) => raise(py, "SpecialFileError", w),
        Err(e) => e,
    }
}

/// The exception `shutil` raises for the failure `err` of copying `src` to `dst`.
pub(crate) fn file_error(py: Python<'_>, err: &Error, src: &Arg<'_>, dst: &Arg<'_>) -> PyErr {
    let name = |p: &std::path::Path| -> PyResult<Bound<'_, PyAny>> {
        if p == src.path {
            Ok(src.fs.clone())
        } else if p == dst.path {
            Ok(dst.fs.clone())
        } else {
            src.like(p)
        }
    };
    let result = (|| -> PyResult<PyErr> {
        Ok(match &err.cause {
            Cause::Os(errno) => os_error(py, *errno, Some(&name(&err.path)?), None),
            Cause::Refused(Refusal::SameFile { .. }) => same_file(py, &src.obj, &dst.obj),
            Cause::Refused(Refusal::DirectoryInTheWay) => {
                os_error(py, libc::EISDIR, Some(&dst.fs), None)
            }
            Cause::Refused(Refusal::NonDirectoryInTheWay { .. } | Refusal::Exists) => {
                os_error(py, libc::EEXIST, Some(&dst.fs), None)
            }
            Cause::Refused(Refusal::IntoItself { .. }) => raise(
                py,
                "Error",
                vec![(src.obj.clone(), dst.obj.clone(), err.to_string())],
            ),
            _ => PyOSError::new_err(err.to_string()),
        })
    })();
    result.unwrap_or_else(|e| e)
}

/// The `why` of a `(src, dst, why)` triple: `str()` of the exception `shutil` would have
/// caught for this failure.
pub(crate) fn why<'py>(
    py: Python<'py>,
    err: &Error,
    src: &Arg<'py>,
    dst: &Arg<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let e = match &err.cause {
        Cause::Os(errno) => os_error(py, *errno, Some(&src.like(&err.path)?), None),
        // Both refusals name the destination entry.
        Cause::Refused(Refusal::DirectoryInTheWay) => {
            os_error(py, libc::EISDIR, Some(&dst.like(&err.path)?), None)
        }
        Cause::Refused(Refusal::NonDirectoryInTheWay { .. }) => {
            os_error(py, libc::EEXIST, Some(&dst.like(&err.path)?), None)
        }
        Cause::Refused(Refusal::SameFile { .. }) => same_file(py, &src.obj, &dst.obj),
        _ => return Ok(PyString::new(py, &err.to_string()).into_any()),
    };
    Ok(e.value(py).str()?.into_any())
}
