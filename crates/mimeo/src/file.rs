//! One regular file: the data-path chain clone → offload → stream.

/// The data path a regular file took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Extents shared with the source (`FICLONE`).
    Clone,
    /// Copied inside the kernel (`copy_file_range`).
    Offload,
    /// Read and written through a user-space buffer.
    Stream,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Clone => "clone",
            Method::Offload => "offload",
            Method::Stream => "stream",
        }
    }
}

/// How one regular file was copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileOutcome {
    pub method: Method,
    /// Bytes of data in the copy (its size less its holes).
    pub bytes: u64,
    /// Bytes of the copy's size left as holes.
    pub hole_bytes: u64,
}
