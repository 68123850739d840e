//! `mimeo._mimeo`: the Python binding of the mimeo engine, a parallel, cloning drop-in for
//! `shutil`'s copy functions.
//!
//! The binding is thin: the engine copies; this crate reads Python arguments into engine
//! options ([`extras`], [`paths`]), turns engine errors into the exceptions `shutil` raises
//! ([`errors`]), and runs every copy with the GIL released ([`run`]). The Python package
//! around it (`python/mimeo`) holds the exception classes, the stubs and the asyncio
//! wrappers.

mod archiving;
mod errors;
mod extras;
mod files;
mod paths;
mod run;
mod shared;
mod space;
mod tree;

use extras::Extras;
use files::FileFn;
use pyo3::prelude::*;

/// One of `shutil`'s file functions: the same signature for each, with its own docstring.
macro_rules! file_function {
    ($(#[$doc:meta])* $name:ident, $which:expr) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (src, dst, *, follow_symlinks=true, workers=None, reflink="auto", progress=None, preserve=None))]
        #[allow(clippy::too_many_arguments)]
        fn $name<'py>(
            py: Python<'py>,
            src: &Bound<'py, PyAny>,
            dst: &Bound<'py, PyAny>,
            follow_symlinks: bool,
            workers: Option<i64>,
            reflink: &str,
            progress: Option<Bound<'py, PyAny>>,
            preserve: Option<Bound<'py, PyAny>>,
        ) -> PyResult<Bound<'py, PyAny>> {
            let extras = Extras::new(workers, reflink, progress, preserve.as_ref())?;
            files::copy_one(py, $which, src, dst, follow_symlinks, extras)
        }
    };
}

file_function!(
    /// copyfile(src, dst, *, follow_symlinks=True, workers=None, reflink="auto", progress=None, preserve=None)
    /// --
    ///
    /// Copy the data of the file ``src`` to ``dst`` and return ``dst``, as
    /// :func:`shutil.copyfile` does. The data is cloned where the filesystem can share extents
    /// (btrfs, XFS), copied inside the kernel elsewhere; an existing ``dst`` is replaced
    /// atomically, and a symlink at ``dst`` is replaced rather than written through.
    ///
    /// With ``follow_symlinks=False`` a symlink ``src`` is copied as a new symlink.
    /// Raises :class:`SameFileError` when both name the same file, ``SpecialFileError`` for a
    /// named pipe, and ``OSError`` subclasses with ``errno`` and ``filename`` set as shutil sets
    /// them. ``reflink`` is ``"auto"``, ``"always"`` (clone or fail) or ``"never"``;
    /// ``progress`` is called with a :class:`Progress` at most ten times a second;
    /// ``preserve`` names metadata to keep (``"mode,timestamps"``, ``["xattr"]``, ``"all"``).
    copyfile,
    FileFn::CopyFile
);

file_function!(
    /// copy(src, dst, *, follow_symlinks=True, workers=None, reflink="auto", progress=None, preserve=None)
    /// --
    ///
    /// Copy the data and permission bits of ``src`` to ``dst`` and return the new file's path,
    /// as :func:`shutil.copy` does: when ``dst`` is a directory the copy goes into it under the
    /// source's base name. See :func:`copyfile` for the rest.
    copy,
    FileFn::Copy
);

file_function!(
    /// copy2(src, dst, *, follow_symlinks=True, workers=None, reflink="auto", progress=None, preserve=None)
    /// --
    ///
    /// Copy ``src`` to ``dst`` with its permission bits, access and modification times (in
    /// nanoseconds) and extended attributes, and return the new file's path, as
    /// :func:`shutil.copy2` does. See :func:`copy` and :func:`copyfile`.
    copy2,
    FileFn::Copy2
);

/// copytree(src, dst, symlinks=False, ignore=None, copy_function=copy2, ignore_dangling_symlinks=False, dirs_exist_ok=False, *, workers=None, reflink="auto", progress=None, preserve=None)
/// --
///
/// Copy the directory tree ``src`` to ``dst`` and return ``dst``, as
/// :func:`shutil.copytree` does, with ``workers`` threads (one per CPU by default).
///
/// ``symlinks``, ``ignore`` (called for each directory with its path and the names in it),
/// ``ignore_dangling_symlinks`` and ``dirs_exist_ok`` mean what they mean to shutil.
/// Failures of single entries are collected and raised at the end as :class:`Error` (a
/// :class:`shutil.Error`) with the list of ``(src, dst, why)``.
///
/// ``copy_function`` may be mimeo's :func:`copy2` (the default), :func:`copy` or
/// :func:`copyfile`, which run in the worker threads. Any other callable is called for each
/// file as shutil calls it, holding the GIL: that is much slower.
#[pyfunction]
#[pyo3(signature = (src, dst, symlinks=false, ignore=None, copy_function=None, ignore_dangling_symlinks=false, dirs_exist_ok=false, *, workers=None, reflink="auto", progress=None, preserve=None))]
#[allow(clippy::too_many_arguments)]
fn copytree<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    dst: &Bound<'py, PyAny>,
    symlinks: bool,
    ignore: Option<Bound<'py, PyAny>>,
    copy_function: Option<Bound<'py, PyAny>>,
    ignore_dangling_symlinks: bool,
    dirs_exist_ok: bool,
    workers: Option<i64>,
    reflink: &str,
    progress: Option<Bound<'py, PyAny>>,
    preserve: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let extras = Extras::new(workers, reflink, progress, preserve.as_ref())?;
    let args = tree::TreeArgs {
        symlinks,
        ignore: ignore.filter(|i| !i.is_none()),
        copy_function: copy_function.filter(|f| !f.is_none()),
        ignore_dangling_symlinks,
        dirs_exist_ok,
    };
    tree::copytree(py, src, dst, args, extras)
}

/// archive(src, dst, *, workers=None, reflink="auto", progress=None, preserve=None, sparse="auto", update=False, no_clobber=False, one_file_system=False, sync=False, nocache=False, verify=False)
/// --
///
/// Copy ``src`` (a path, or a list of paths) to ``dst`` as ``mimeo -a`` does: recursively,
/// symlinks as symlinks, keeping mode, owner, times, extended attributes and ACLs, hard-link
/// groups, FIFOs, sockets and device nodes, and directory times. As with cp, a source goes
/// into ``dst`` when ``dst`` is an existing directory.
///
/// Failures of single entries do not raise: the returned :class:`Summary` counts them and
/// lists them in ``failures``. Its fields are those of ``mimeo --json``'s summary.
#[pyfunction]
#[pyo3(signature = (src, dst, *, workers=None, reflink="auto", progress=None, preserve=None, sparse="auto".to_owned(), update=false, no_clobber=false, one_file_system=false, sync=false, nocache=false, verify=false))]
#[allow(clippy::too_many_arguments)]
fn archive<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    dst: &Bound<'py, PyAny>,
    workers: Option<i64>,
    reflink: &str,
    progress: Option<Bound<'py, PyAny>>,
    preserve: Option<Bound<'py, PyAny>>,
    sparse: String,
    update: bool,
    no_clobber: bool,
    one_file_system: bool,
    sync: bool,
    nocache: bool,
    verify: bool,
) -> PyResult<archiving::Summary> {
    let extras = Extras::new(workers, reflink, progress, preserve.as_ref())?;
    let args = archiving::ArchiveArgs {
        sparse,
        update,
        no_clobber,
        one_file_system,
        sync,
        nocache,
        verify,
    };
    archiving::archive(py, src, dst, args, extras)
}

#[pymodule]
fn _mimeo(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(copyfile, m)?)?;
    m.add_function(wrap_pyfunction!(copy, m)?)?;
    m.add_function(wrap_pyfunction!(copy2, m)?)?;
    m.add_function(wrap_pyfunction!(copytree, m)?)?;
    m.add_function(wrap_pyfunction!(archive, m)?)?;
    m.add_function(wrap_pyfunction!(space::du, m)?)?;
    m.add_function(wrap_pyfunction!(space::dedupe, m)?)?;
    m.add_class::<archiving::Summary>()?;
    m.add_class::<run::Progress>()?;
    m.add_class::<shared::SharedReader>()?;
    let py = m.py();
    let own = [
        m.getattr("copyfile")?.unbind(),
        m.getattr("copy")?.unbind(),
        m.getattr("copy2")?.unbind(),
    ];
    let _ = tree::OWN.set(py, own);
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
