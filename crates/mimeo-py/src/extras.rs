//! The keyword-only extras every function takes (`workers=`, `reflink=`, `progress=`,
//! `preserve=`), read into the engine's [`Options`].

use mimeo::{Options, Preserve, Reflink};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::sync::OnceLock;

/// The extras of one call.
pub(crate) struct Extras<'py> {
    pub workers: Option<usize>,
    pub reflink: Reflink,
    pub progress: Option<Bound<'py, PyAny>>,
    pub preserve: Option<Preserve>,
}

impl<'py> Extras<'py> {
    pub fn new(
        workers: Option<i64>,
        reflink: &str,
        progress: Option<Bound<'py, PyAny>>,
        preserve: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Self> {
        let workers = match workers {
            None => None,
            Some(n) if n >= 1 => Some(n as usize),
            Some(n) => {
                return Err(PyValueError::new_err(format!(
                    "workers must be at least 1, not {n}"
                )));
            }
        };
        let reflink = match reflink {
            "auto" => Reflink::Auto,
            "always" => Reflink::Always,
            "never" => Reflink::Never,
            other => {
                return Err(PyValueError::new_err(format!(
                    "reflink must be 'auto', 'always' or 'never', not {other:?}"
                )));
            }
        };
        if let Some(p) = &progress {
            if !p.is_callable() {
                return Err(PyTypeError::new_err("progress must be callable"));
            }
        }
        let preserve = preserve.map(parse_preserve).transpose()?;
        Ok(Extras {
            workers,
            reflink,
            progress,
            preserve,
        })
    }

    /// `base` with these extras applied; `preserve` is the function's own default. What
    /// `shutil` creates without copying the mode gets the default mode (0666 for files, 0777
    /// for directories, less the umask), as `open` and `os.makedirs` make them.
    pub fn options(&self, base: &Options, preserve: Preserve) -> Options {
        let mut o = base.clone();
        o.reflink = self.reflink;
        o.preserve = self.preserve.unwrap_or(preserve);
        o.preserve.default_mode = true;
        if let Some(n) = self.workers {
            // A fixed count: the pool does not grow past what the caller asked for.
            o.jobs = n;
            o.max_jobs = n;
        }
        o
    }
}

/// The engine's defaults, made once: `Options::default()` asks the system for the number of
/// CPUs, which costs more system calls than copying a small file.
pub(crate) fn defaults() -> &'static Options {
    static DEFAULTS: OnceLock<Options> = OnceLock::new();
    DEFAULTS.get_or_init(Options::default)
}

/// What `preserve=` names: a comma-separated string or an iterable of names, as cp's
/// `--preserve` list (`mode`, `ownership`, `timestamps`, `links`, `xattr`, `all`).
fn parse_preserve(obj: &Bound<'_, PyAny>) -> PyResult<Preserve> {
    let names: Vec<String> = if let Ok(s) = obj.cast::<PyString>() {
        s.to_cow()?
            .split(',')
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect()
    } else {
        obj.try_iter()?
            .map(|n| n.and_then(|n| n.extract::<String>()))
            .collect::<PyResult<_>>()?
    };
    let mut p = Preserve::default();
    for name in names {
        match name.as_str() {
            "mode" => p.mode = true,
            "ownership" => p.ownership = true,
            "timestamps" => p.timestamps = true,
            "links" => p.links = true,
            "xattr" => p.xattr = true,
            "all" => p = Preserve::all(),
            other => {
                return Err(PyValueError::new_err(format!(
                    "preserve: unknown attribute {other:?} (mode, ownership, timestamps, links, xattr, all)"
                )));
            }
        }
    }
    Ok(p)
}

/// What `shutil.copystat` copies: permission bits, times and extended attributes (ACLs among
/// them); and `shutil.copymode`: the permission bits.
pub(crate) fn stat_preserve() -> Preserve {
    let mut p = Preserve::default();
    p.mode = true;
    p.timestamps = true;
    p.xattr = true;
    p
}

pub(crate) fn mode_preserve() -> Preserve {
    let mut p = Preserve::default();
    p.mode = true;
    p
}
