//! `copytree`: `shutil.copytree`'s semantics on the engine's parallel walk.
//!
//! - `symlinks=False` follows every symlink below the source (`-L`), `symlinks=True` copies
//!   them as symlinks (`-H`: the source itself is followed, as `os.scandir` follows it).
//! - Files, directories and symlinks get what `shutil.copy2` and `shutil.copystat` give
//!   them: permission bits, times and extended attributes.
//! - `ignore` is called for each directory, with shutil's arguments ([`Hooks::ignore`]).
//! - A `copy_function` other than mimeo's own is called for each file ([`Hooks::copy_entry`]),
//!   holding the GIL; `copy` and `copyfile` run in the workers without it.
//! - FIFOs and sockets fail as they fail in `shutil` (`SpecialFileError`, ENXIO).
//! - Failures of single entries are collected into `mimeo.Error`, a `shutil.Error`; failures
//!   that keep the copy from starting are raised as `shutil` raises them.

use crate::errors::{os_error, raise, why};
use crate::extras::{Extras, defaults, stat_preserve};
use crate::files::FileFn;
use crate::paths::{Arg, join_basename, to_py};
use crate::run::{Collect, Reporting, supervise};
use mimeo::{
    Cause, Control, CopyPair, Dereference, EntryKind, Hooked, Hooks, Op, Options, Refusal,
};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// mimeo's own `copyfile`, `copy` and `copy2`, to tell them from other callables.
pub(crate) static OWN: PyOnceLock<[Py<PyAny>; 3]> = PyOnceLock::new();

/// How files are copied.
enum CopyFn {
    /// mimeo's `copy2`: by the engine itself (the options are for files copied into a
    /// directory that is in their way, as `shutil.copy2` does).
    Copy2(Options),
    /// mimeo's `copy` or `copyfile`: by the engine, one file at a time, without the GIL.
    Native(Options),
    /// Any other callable, called as `copy_function(srcname, dstname)`.
    Python(Py<PyAny>),
}

/// `ignore` and `copy_function`, as hooks of the engine's walk.
struct TreeHooks<'a> {
    ignore: Option<Py<PyAny>>,
    copy: CopyFn,
    bytes: (bool, bool),
    control: &'a Control,
    /// Failures of copies made here by the engine.
    own: Mutex<Vec<(PathBuf, PathBuf, mimeo::Error)>>,
    /// `(src, dst, why)` from callables and special files.
    triples: Mutex<Vec<Py<PyAny>>>,
    /// An exception other than `OSError` from a callable: it ends the copy and is raised.
    raised: Mutex<Option<PyErr>>,
}

impl TreeHooks<'_> {
    fn fail(&self, e: PyErr) {
        self.control.stop();
        self.raised
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(e);
    }

    fn triple(
        &self,
        py: Python<'_>,
        src: &Path,
        dst: &Path,
        why: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let t = PyTuple::new(
            py,
            [
                to_py(py, src, self.bytes.0)?,
                to_py(py, dst, self.bytes.1)?,
                why,
            ],
        )?;
        self.triples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(t.into_any().unbind());
        Ok(())
    }

    /// Calls the user's `copy_function` as `shutil.copytree` does, and sorts its outcome as
    /// `shutil.copytree` sorts it.
    fn call(&self, py: Python<'_>, f: &Py<PyAny>, src: &Path, dst: &Path) -> PyResult<Hooked> {
        let args = (to_py(py, src, self.bytes.0)?, to_py(py, dst, self.bytes.1)?);
        let err = match f.bind(py).call1(args) {
            Ok(_) => return Ok(Hooked::Copied),
            Err(e) => e,
        };
        static SHUTIL_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let shutil_error = SHUTIL_ERROR
            .get_or_try_init(py, || {
                Ok::<_, PyErr>(py.import("shutil")?.getattr("Error")?.unbind())
            })?
            .bind(py);
        if err.is_instance(py, shutil_error) {
            let listed = err.value(py).getattr("args")?.get_item(0)?;
            let mut triples = self.triples.lock().unwrap_or_else(|e| e.into_inner());
            for t in listed.try_iter()? {
                triples.push(t?.unbind());
            }
        } else if err.is_instance_of::<PyOSError>(py) {
            let text = err.value(py).str()?.into_any();
            self.triple(py, src, dst, text)?;
        } else {
            self.fail(err);
        }
        Ok(Hooked::Skipped)
    }
}

impl Hooks for TreeHooks<'_> {
    fn ignores(&self) -> bool {
        self.ignore.is_some()
    }

    fn ignore(&self, dir: &Path, names: &[&OsStr]) -> Vec<bool> {
        let Some(ignore) = &self.ignore else {
            return Vec::new();
        };
        Python::attach(|py| {
            let listed = (|| -> PyResult<Vec<bool>> {
                let objs = names
                    .iter()
                    .map(|n| to_py(py, Path::new(n), self.bytes.0))
                    .collect::<PyResult<Vec<_>>>()?;
                let list = PyList::new(py, &objs)?;
                let ignored = ignore
                    .bind(py)
                    .call1((to_py(py, dir, self.bytes.0)?, list))?;
                objs.iter().map(|n| ignored.contains(n)).collect()
            })();
            listed.unwrap_or_else(|e| {
                self.fail(e);
                vec![true; names.len()]
            })
        })
    }

    fn takes(&self, kind: EntryKind) -> bool {
        match &self.copy {
            CopyFn::Copy2(_) => matches!(kind, EntryKind::Fifo | EntryKind::Socket),
            CopyFn::Native(_) => {
                matches!(kind, EntryKind::File | EntryKind::Fifo | EntryKind::Socket)
            }
            CopyFn::Python(_) => !matches!(kind, EntryKind::Directory | EntryKind::Symlink),
        }
    }

    fn copy_entry(&self, src: &Path, dst: &Path, kind: EntryKind) -> Result<Hooked, mimeo::Error> {
        if self.control.is_stopped() {
            return Ok(Hooked::Skipped);
        }
        if let CopyFn::Python(f) = &self.copy {
            return Python::attach(|py| {
                self.call(py, f, src, dst).or_else(|e| {
                    self.fail(e);
                    Ok(Hooked::Skipped)
                })
            });
        }
        match (kind, &self.copy) {
            (EntryKind::Fifo, _) => Python::attach(|py| {
                let text =
                    crate::errors::special_file(py, &to_py(py, src, self.bytes.0)?, "named pipe")
                        .value(py)
                        .str()?
                        .into_any();
                self.triple(py, src, dst, text)
            })
            .map_or_else(|e| self.fail(e), |()| ()),
            (EntryKind::Socket, _) => {
                self.own_failure(src, dst, mimeo::Error::os(Op::Open, src, libc::ENXIO))
            }
            (_, CopyFn::Native(opts)) => {
                let copied = mimeo::copy_file_with(src, dst, opts, self.control)
                    .map(drop)
                    .or_else(|e| match e.refusal() {
                        Some(Refusal::DirectoryInTheWay) => {
                            into_directory(src, dst, opts, self.control)
                        }
                        _ => Err(e),
                    });
                match copied {
                    Ok(()) => return Ok(Hooked::Copied),
                    Err(e) if e.op == Op::Interrupted => {}
                    Err(e) => self.own_failure(src, dst, e),
                }
            }
            _ => return Ok(Hooked::Declined),
        }
        Ok(Hooked::Skipped)
    }
}

impl TreeHooks<'_> {
    fn own_failure(&self, src: &Path, dst: &Path, e: mimeo::Error) {
        self.own
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((src.into(), dst.into(), e));
    }
}

/// The arguments of one `copytree` call.
pub(crate) struct TreeArgs<'py> {
    pub symlinks: bool,
    pub ignore: Option<Bound<'py, PyAny>>,
    pub copy_function: Option<Bound<'py, PyAny>>,
    pub ignore_dangling_symlinks: bool,
    pub dirs_exist_ok: bool,
}

pub(crate) fn copytree<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    dst: &Bound<'py, PyAny>,
    args: TreeArgs<'py>,
    extras: Extras<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let src = Arg::new(src)?;
    let dst = Arg::new(dst)?;
    // os.scandir(src) comes first in shutil: its failures are raised as they are.
    match std::fs::metadata(&src.path) {
        Err(e) => return Err(io_error(py, &e, &src.fs)),
        Ok(m) if !m.is_dir() => return Err(os_error(py, libc::ENOTDIR, Some(&src.fs), None)),
        Ok(_) => {}
    }
    // shutil lists src before it makes dst (bpo-38688).
    let listed = listed_first(&src.path, &dst.path);
    // Then os.makedirs(dst, exist_ok=dirs_exist_ok).
    match std::fs::symlink_metadata(&dst.path) {
        Ok(_) if !args.dirs_exist_ok || !std::fs::metadata(&dst.path).is_ok_and(|m| m.is_dir()) => {
            return Err(os_error(py, libc::EEXIST, Some(&dst.fs), None));
        }
        Ok(_) => {}
        Err(_) => {
            if let Some(parent) = dst.path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| match dst.like(parent) {
                    Ok(p) => io_error(py, &e, &p),
                    Err(e) => e,
                })?;
            }
        }
    }
    let mut opts = extras.options(defaults(), stat_preserve());
    opts.recursive = true;
    opts.dereference = if args.symlinks {
        Dereference::CommandLine
    } else {
        Dereference::Always
    };
    let copy = copy_fn(py, args.copy_function.as_ref(), &extras)?;
    let control = Control::new();
    let hooks = TreeHooks {
        ignore: args.ignore.map(Bound::unbind),
        copy,
        bytes: (src.bytes, dst.bytes),
        control: &control,
        own: Mutex::default(),
        triples: Mutex::default(),
        raised: Mutex::default(),
    };
    let collect = Collect::new(extras.progress.is_some());
    let reporting = extras.progress.as_ref().map(|p| Reporting {
        progress: p,
        collect: Some(&collect),
        bytes: src.bytes,
        last: None,
        called: None,
    });
    let pairs = match &listed {
        None => vec![CopyPair::new(&src.path, &dst.path)],
        Some(names) => {
            // The entries listed are the roots, the top directory is made here, and its
            // attributes are copied last, as copystat does.
            std::fs::create_dir(&dst.path).map_err(|e| io_error(py, &e, &dst.fs))?;
            if args.symlinks {
                opts.dereference = Dereference::Never;
            }
            listed_pairs(&hooks, &src.path, &dst.path, names)
        }
    };
    supervise(py, &control, reporting, || {
        mimeo::copy_hooked(&pairs, &opts, &collect, &control, &hooks)
    })?;
    if listed.is_some() {
        copystat_dir(&src.path, &dst.path).map_err(|e| io_error(py, &e, &dst.fs))?;
    }
    if let Some(e) = hooks
        .raised
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        return Err(e);
    }
    let mut triples: Vec<Bound<'py, PyAny>> = Vec::new();
    for e in collect.take_failed() {
        if let Some(raised) = at_root(py, &e, &src, &dst) {
            return Err(raised);
        }
        if args.ignore_dangling_symlinks && dangling(&e) {
            continue;
        }
        let (s, d) = counterpart(&e.path, &src, &dst);
        let mut e = e;
        if let (CopyFn::Copy2(opts), Some(Refusal::DirectoryInTheWay)) = (&hooks.copy, e.refusal())
        {
            let file = std::fs::metadata(&s).is_ok_and(|m| m.is_file())
                && (!args.symlinks || std::fs::symlink_metadata(&s).is_ok_and(|m| m.is_file()));
            if file {
                match py.detach(|| into_directory(&s, &d, opts, &control)) {
                    Ok(()) => continue,
                    Err(again) => e = again,
                }
            }
        }
        let names = if s == src.path && d == dst.path {
            (src.obj.clone(), dst.obj.clone())
        } else {
            (src.like(&s)?, dst.like(&d)?)
        };
        let text = why(py, &e, &src, &dst)?;
        triples.push(PyTuple::new(py, [names.0, names.1, text])?.into_any());
    }
    for (s, d, e) in hooks.own.into_inner().unwrap_or_else(|e| e.into_inner()) {
        let text = why(py, &e, &src, &dst)?;
        let t = (src.like(&s)?, dst.like(&d)?, text);
        triples.push(t.into_pyobject(py)?.into_any());
    }
    for t in hooks
        .triples
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
    {
        triples.push(t.into_bound(py));
    }
    if !triples.is_empty() {
        return Err(raise(py, "Error", PyList::new(py, triples)?));
    }
    Ok(dst.obj)
}

/// When `dst` is to be made below `src`, under a name `src` does not hold yet: the names
/// `src` holds now. shutil lists `src` before it makes `dst` and copies that listing once
/// (CPython's `test_copytree_subdirectory`, bpo-38688). None otherwise: the engine copies
/// the tree, and refuses a copy into itself that its walk would reach (as cp does).
fn listed_first(src: &Path, dst: &Path) -> Option<Vec<std::ffi::OsString>> {
    let src_abs = std::fs::canonicalize(src).ok()?;
    // dst and some of its parents do not exist yet: the nearest that does, resolved.
    let mut existing = dst;
    let mut rest = Vec::new();
    let dst_abs = loop {
        let here = if existing.as_os_str().is_empty() {
            Path::new(".")
        } else {
            existing
        };
        if let Ok(found) = std::fs::canonicalize(here) {
            break rest.iter().rev().fold(found, |p: PathBuf, n| p.join(n));
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    };
    let first = dst_abs.strip_prefix(&src_abs).ok()?.components().next()?;
    if std::fs::symlink_metadata(src_abs.join(first)).is_ok() {
        return None;
    }
    let entries = std::fs::read_dir(src).ok()?;
    Some(
        entries
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect(),
    )
}

/// The (source, destination) pairs of the names listed that `ignore` keeps.
fn listed_pairs(
    hooks: &TreeHooks<'_>,
    src: &Path,
    dst: &Path,
    names: &[std::ffi::OsString],
) -> Vec<CopyPair> {
    let all: Vec<&OsStr> = names.iter().map(|n| n.as_os_str()).collect();
    let ignored = hooks.ignore(src, &all);
    all.iter()
        .enumerate()
        .filter(|(i, _)| !ignored.get(*i).copied().unwrap_or(false))
        .map(|(_, n)| CopyPair::new(src.join(n), dst.join(n)))
        .collect()
}

/// `shutil.copystat(src, dst)` for the top directory made by hand: permission bits and
/// times.
fn copystat_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    let m = std::fs::metadata(src)?;
    std::fs::set_permissions(dst, m.permissions())?;
    let times = std::fs::FileTimes::new()
        .set_accessed(m.accessed()?)
        .set_modified(m.modified()?);
    std::fs::File::open(dst)?.set_times(times)
}

/// How files are to be copied, from `copy_function`.
fn copy_fn(py: Python<'_>, f: Option<&Bound<'_, PyAny>>, extras: &Extras<'_>) -> PyResult<CopyFn> {
    let opts = |which: FileFn| {
        let mut o = extras.options(defaults(), which.preserve());
        o.dereference = Dereference::Always;
        o
    };
    let Some(f) = f else {
        return Ok(CopyFn::Copy2(opts(FileFn::Copy2)));
    };
    let own = OWN.get(py).expect("set when the module was made");
    Ok(if f.is(&own[2]) {
        CopyFn::Copy2(opts(FileFn::Copy2))
    } else if f.is(&own[1]) {
        CopyFn::Native(opts(FileFn::Copy))
    } else if f.is(&own[0]) {
        CopyFn::Native(opts(FileFn::CopyFile))
    } else if f.is_callable() {
        CopyFn::Python(f.clone().unbind())
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "copy_function must be callable",
        ));
    })
}

fn io_error(py: Python<'_>, e: &std::io::Error, name: &Bound<'_, PyAny>) -> PyErr {
    os_error(py, e.raw_os_error().unwrap_or(libc::EIO), Some(name), None)
}

/// A failure that keeps the whole copy from starting, raised as `shutil` raises it: the
/// source cannot be listed, the destination cannot be made, or a copy into itself.
fn at_root(py: Python<'_>, e: &mimeo::Error, src: &Arg<'_>, dst: &Arg<'_>) -> Option<PyErr> {
    let on_src =
        e.path == src.path && matches!(e.op, Op::Stat | Op::Open | Op::ReadDir | Op::Vanished);
    let on_dst = e.path == dst.path && matches!(e.op, Op::Stat | Op::Open | Op::CreateDir);
    match &e.cause {
        Cause::Os(errno) if on_src => Some(os_error(py, *errno, Some(&src.fs), None)),
        Cause::Os(errno) if on_dst => Some(os_error(py, *errno, Some(&dst.fs), None)),
        Cause::Refused(Refusal::NonDirectoryInTheWay { .. }) if e.path == dst.path => {
            Some(os_error(py, libc::EEXIST, Some(&dst.fs), None))
        }
        Cause::Refused(Refusal::IntoItself { .. }) => Some(raise(
            py,
            "Error",
            vec![(src.obj.clone(), dst.obj.clone(), e.to_string())],
        )),
        _ => None,
    }
}

/// A symlink whose target does not exist (or is a loop): what `ignore_dangling_symlinks`
/// leaves out.
fn dangling(e: &mimeo::Error) -> bool {
    matches!(e.op, Op::Stat | Op::Vanished)
        && matches!(e.errno(), Some(libc::ENOENT | libc::ELOOP))
        && std::fs::symlink_metadata(&e.path).is_ok_and(|m| m.file_type().is_symlink())
        && std::fs::metadata(&e.path).is_err()
}

/// The source and destination of the entry a failure is about, as `shutil` joins them.
fn counterpart(path: &Path, src: &Arg<'_>, dst: &Arg<'_>) -> (PathBuf, PathBuf) {
    let below = |root: &Path| path.strip_prefix(root).ok().map(Path::to_path_buf);
    let rel = match (below(&src.path), below(&dst.path)) {
        (Some(a), Some(b)) => {
            if a.as_os_str().len() <= b.as_os_str().len() {
                a
            } else {
                b
            }
        }
        (Some(r), None) | (None, Some(r)) => r,
        (None, None) => return (path.into(), path.into()),
    };
    if rel.as_os_str().is_empty() {
        return (src.path.clone(), dst.path.clone());
    }
    (src.path.join(&rel), dst.path.join(&rel))
}

/// `shutil.copy` and `copy2` copy a file onto an existing directory into that directory.
fn into_directory(
    src: &Path,
    dst: &Path,
    opts: &Options,
    control: &Control,
) -> Result<(), mimeo::Error> {
    mimeo::copy_file_with(src, &join_basename(dst, src), opts, control).map(drop)
}
