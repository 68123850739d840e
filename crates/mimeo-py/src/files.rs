//! `copyfile`, `copy` and `copy2`: one file, as `shutil` copies it.
//!
//! A small file is copied right here with the GIL released: that takes less time than
//! starting a thread, and less than Ctrl-C is allowed to take to stop it. A larger one is
//! copied on a thread of its own ([`supervise`]), so that Ctrl-C stops it midway.

use crate::errors::{file_error, os_error, same_file, special_file};
use crate::extras::{Extras, defaults, mode_preserve, stat_preserve};
use crate::paths::{Arg, join_basename};
use crate::run::{Collect, Reporting, report_once, supervise};
use mimeo::{Control, CopyPair, Dereference, FileOutcome, Options, Overwrite, Preserve, Refusal};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

/// Files up to this size are copied without a thread of their own.
const LEAN_MAX: u64 = 1 << 20;

/// Which of `shutil`'s file functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileFn {
    /// Data only.
    CopyFile,
    /// Data and permission bits.
    Copy,
    /// Data, permission bits, times and extended attributes.
    Copy2,
}

impl FileFn {
    pub fn preserve(self) -> Preserve {
        match self {
            FileFn::CopyFile => Preserve::default(),
            FileFn::Copy => mode_preserve(),
            FileFn::Copy2 => stat_preserve(),
        }
    }
}

/// One call of `copyfile`, `copy` or `copy2`. Returns the destination, as `shutil` does.
pub(crate) fn copy_one<'py>(
    py: Python<'py>,
    f: FileFn,
    src: &Bound<'py, PyAny>,
    dst: &Bound<'py, PyAny>,
    follow: bool,
    extras: Extras<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let src = Arg::new(src)?;
    let mut dst = Arg::new(dst)?;
    let mut dst_meta = std::fs::metadata(&dst.path).ok();
    if f != FileFn::CopyFile && dst_meta.as_ref().is_some_and(|m| m.is_dir()) {
        dst = dst.derived(join_basename(&dst.path, &src.path))?;
        dst_meta = std::fs::metadata(&dst.path).ok();
    }
    if let Some(m) = &dst_meta {
        if m.file_type().is_fifo() {
            if same_inode(&src, m) {
                return Err(same_file(py, &src.obj, &dst.obj));
            }
            return Err(special_file(py, &dst.obj, "named pipe"));
        }
    }
    let mut opts = extras.options(defaults(), f.preserve());
    opts.dereference = if follow {
        Dereference::Always
    } else {
        Dereference::Never
    };
    match run_file(py, &src, &dst, &opts, &extras)? {
        Ok(_) => Ok(dst.obj),
        Err(e) if e.refusal() == Some(&Refusal::NotRegular) => {
            not_regular(py, &src, &dst, follow, &opts)
        }
        Err(e) => Err(file_error(py, &e, &src, &dst)),
    }
}

fn same_inode(src: &Arg<'_>, dst: &std::fs::Metadata) -> bool {
    std::fs::metadata(&src.path).is_ok_and(|s| (s.dev(), s.ino()) == (dst.dev(), dst.ino()))
}

/// Copies the file: inline when it is small and nobody watches, else on a thread.
fn run_file(
    py: Python<'_>,
    src: &Arg<'_>,
    dst: &Arg<'_>,
    opts: &Options,
    extras: &Extras<'_>,
) -> PyResult<Result<FileOutcome, mimeo::Error>> {
    let reporting = extras.progress.as_ref().map(|p| Reporting {
        progress: p,
        collect: None,
        bytes: src.bytes,
        last: Some((src.path.clone(), dst.path.clone())),
        called: None,
    });
    let (s, d) = (&src.path, &dst.path);
    let control = Control::new();
    let small = std::fs::metadata(s).map_or(true, |m| m.len() <= LEAN_MAX);
    if small {
        let result = py.detach(|| mimeo::copy_file_with(s, d, opts, &control));
        report_once(reporting, &control)?;
        return Ok(result);
    }
    supervise(py, &control, reporting, || {
        mimeo::copy_file_with(s, d, opts, &control)
    })
}

/// The source is not a regular file: a symlink not to be followed is copied as a symlink;
/// anything else fails as it fails in `shutil`.
fn not_regular<'py>(
    py: Python<'py>,
    src: &Arg<'py>,
    dst: &Arg<'py>,
    follow: bool,
    opts: &Options,
) -> PyResult<Bound<'py, PyAny>> {
    let meta = if follow {
        std::fs::metadata(&src.path)
    } else {
        std::fs::symlink_metadata(&src.path)
    };
    let t = match meta {
        Ok(m) => m.file_type(),
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            return Err(os_error(py, errno, Some(&src.fs), None));
        }
    };
    if t.is_symlink() {
        return copy_symlink(py, src, dst, opts);
    }
    Err(if t.is_dir() {
        os_error(py, libc::EISDIR, Some(&src.fs), None)
    } else if t.is_fifo() {
        special_file(py, &src.obj, "named pipe")
    } else if t.is_socket() {
        os_error(py, libc::ENXIO, Some(&src.fs), None)
    } else if t.is_char_device() || t.is_block_device() {
        special_file(py, &src.obj, "device node")
    } else {
        PyOSError::new_err(format!("{}: not a regular file", src.obj.repr()?))
    })
}

/// `follow_symlinks=False` on a symlink: a new symlink with the same target (and, for
/// `copy2`, the link's own times), never replacing an existing `dst`.
fn copy_symlink<'py>(
    py: Python<'py>,
    src: &Arg<'py>,
    dst: &Arg<'py>,
    opts: &Options,
) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(d) = std::fs::metadata(&dst.path) {
        if same_inode(src, &d) {
            return Err(same_file(py, &src.obj, &dst.obj));
        }
    }
    let mut o = opts.clone();
    o.overwrite = Overwrite::NoClobber;
    o.dereference = Dereference::Never;
    o.recursive = false;
    let collect = Collect::new(false);
    let pairs = [CopyPair::new(&src.path, &dst.path)];
    let summary = py.detach(|| mimeo::copy(&pairs, &o, &collect));
    if let Some(e) = collect.take_failed().first() {
        return Err(file_error(py, e, src, dst));
    }
    if summary.skipped > 0 {
        // os.symlink(os.readlink(src), dst) names the target and the destination.
        let target = std::fs::read_link(&src.path).unwrap_or_default();
        return Err(os_error(
            py,
            libc::EEXIST,
            Some(&src.like(&target)?),
            Some(&dst.fs),
        ));
    }
    Ok(dst.obj.clone())
}
