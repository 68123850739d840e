//! `SharedReader`: the engine's shared reads (`mimeo::SharedFile`) for Python. The package
//! wraps it in `mimeo.SharedFile`, an `io.RawIOBase` (`python/mimeo/_shared.py`); reads run
//! with the GIL released.

use crate::errors::os_error;
use crate::paths::Arg;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;

/// A file opened for reading with shared reads.
#[pyclass(module = "mimeo._mimeo")]
pub(crate) struct SharedReader {
    /// None once closed.
    file: Option<mimeo::SharedFile>,
    /// The position, kept here: asking the file for it would discard its buffer.
    pos: u64,
    /// The path as given, for errors.
    name: Py<PyAny>,
}

impl SharedReader {
    fn open_file(&mut self) -> PyResult<&mut mimeo::SharedFile> {
        self.file
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("I/O operation on closed file."))
    }

    fn error(&self, py: Python<'_>, e: &io::Error) -> PyErr {
        match e.raw_os_error() {
            Some(errno) => os_error(py, errno, Some(self.name.bind(py)), None),
            None => PyOSError::new_err(e.to_string()),
        }
    }
}

/// Reads into `buf` until it is full or the file ends; returns the bytes read.
fn fill(f: &mut mimeo::SharedFile, buf: &mut [u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[pymethods]
impl SharedReader {
    #[new]
    #[pyo3(signature = (path, *, canonical=None, origin=true, registry=true, buffer=None))]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        canonical: Option<&Bound<'_, PyAny>>,
        origin: bool,
        registry: bool,
        buffer: Option<usize>,
    ) -> PyResult<Self> {
        let arg = Arg::new(path)?;
        let mut opts = mimeo::SharedFile::options();
        if let Some(c) = canonical.filter(|c| !c.is_none()) {
            opts.canonical(Arg::new(c)?.path);
        }
        opts.origin(origin).registry(registry);
        if let Some(b) = buffer {
            opts.buffer(b);
        }
        let at = arg.path.clone();
        match py.detach(|| opts.open(&at)) {
            Ok(file) => Ok(SharedReader {
                file: Some(file),
                pos: 0,
                name: arg.fs.unbind(),
            }),
            Err(e) => Err(match e.raw_os_error() {
                Some(errno) => os_error(py, errno, Some(&arg.fs), None),
                None => PyOSError::new_err(e.to_string()),
            }),
        }
    }

    /// Reads `size` bytes (fewer only at the end of the file), or to the end when `size`
    /// is negative.
    #[pyo3(signature = (size=-1))]
    fn read<'py>(&mut self, py: Python<'py>, size: i64) -> PyResult<Bound<'py, PyBytes>> {
        let f = self.open_file()?;
        let got = py.detach(|| {
            let mut buf = Vec::new();
            if size < 0 {
                f.read_to_end(&mut buf).map(|_| buf)
            } else {
                buf.resize(size as usize, 0);
                let n = fill(f, &mut buf)?;
                buf.truncate(n);
                Ok(buf)
            }
        });
        match got {
            Ok(buf) => {
                self.pos += buf.len() as u64;
                Ok(PyBytes::new(py, &buf))
            }
            Err(e) => Err(self.error(py, &e)),
        }
    }

    /// Moves to `offset` from the start (`whence` 0), the current position (1) or the end
    /// (2); returns the new position.
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&mut self, py: Python<'_>, offset: i64, whence: i32) -> PyResult<u64> {
        // As `io.FileIO`: a negative position is EINVAL.
        let einval = || os_error(py, libc::EINVAL, None, None);
        let to = match whence {
            0 => SeekFrom::Start(u64::try_from(offset).map_err(|_| einval())?),
            1 => SeekFrom::Current(offset),
            2 => SeekFrom::End(offset),
            _ => return Err(PyValueError::new_err(format!("invalid whence ({whence})"))),
        };
        let f = self.open_file()?;
        match f.seek(to) {
            Ok(pos) => {
                self.pos = pos;
                Ok(pos)
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => Err(einval()),
            Err(e) => Err(self.error(py, &e)),
        }
    }

    /// The current position.
    fn tell(&mut self) -> PyResult<u64> {
        self.open_file()?;
        Ok(self.pos)
    }

    /// The file's descriptor (reading from it directly is a plain read).
    fn fileno(&mut self) -> PyResult<i32> {
        Ok(self.open_file()?.file().as_raw_fd())
    }

    /// Closes the file; closing again does nothing.
    fn close(&mut self) {
        self.file = None;
    }

    /// Whether the file is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.file.is_none()
    }

    /// Bytes read so far: `{"canonical": B, "own": B, "rejected": B}`.
    fn stats<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.open_file()?.stats();
        let d = PyDict::new(py);
        d.set_item("canonical", s.canonical_bytes)?;
        d.set_item("own", s.own_bytes)?;
        d.set_item("rejected", s.rejected_bytes)?;
        Ok(d)
    }

    /// Bytes of the file currently read through a canonical file.
    fn shared_len(&mut self) -> PyResult<u64> {
        Ok(self.open_file()?.shared_len())
    }

    /// How many canonical files the file is read through.
    fn canonical_count(&mut self) -> PyResult<usize> {
        Ok(self.open_file()?.canonical_count())
    }
}
