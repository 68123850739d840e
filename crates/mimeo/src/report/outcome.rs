//! How one regular file was copied.

/// The data path a regular file took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Extents shared with the source (`FICLONE`).
    Clone = 0,
    /// Copied inside the kernel (`copy_file_range`).
    Offload,
    /// Read and written through a user-space buffer.
    Stream,
}

impl Method {
    /// Every method, in the order of the data path.
    pub const ALL: [Method; 3] = [Method::Clone, Method::Offload, Method::Stream];

    /// A stable lower-case name, used in JSON output.
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
#[non_exhaustive]
pub struct FileOutcome {
    /// The data path it took.
    pub method: Method,
    /// Bytes of data in the copy (its size less its holes).
    pub bytes: u64,
    /// Bytes of the copy's size left as holes.
    pub hole_bytes: u64,
    /// Bytes of `bytes` read through a canonical file: another source file that holds the
    /// same blocks and was read earlier in the run (shared reads, for copies that cannot
    /// clone). They count under the file's method as well.
    pub shared_read_bytes: u64,
    /// Bytes of `bytes` cloned by range (`FICLONERANGE`) in a file copied otherwise: extents
    /// that an earlier copy in the run already holds (`--preserve=sharing`), or the aligned
    /// parts of a concatenation. Counted as cloned in the [`Summary`](crate::Summary).
    pub cloned_bytes: u64,
    /// Bytes of `bytes` kept from an earlier run that was interrupted: the prefix it had
    /// written, which this run verified and did not copy again.
    pub resumed_bytes: u64,
}

impl FileOutcome {
    /// An outcome of `bytes` data bytes and `hole_bytes` of holes by `method`.
    pub fn new(method: Method, bytes: u64, hole_bytes: u64) -> Self {
        FileOutcome {
            method,
            bytes,
            hole_bytes,
            shared_read_bytes: 0,
            cloned_bytes: 0,
            resumed_bytes: 0,
        }
    }
}
