//! mimeo: fast, faithful, copy-on-write aware copying of files and trees on Linux.
//!
//! Every regular file goes down the cheapest data path its filesystems allow: a clone
//! (`FICLONE`) shares extents, an offload (`copy_file_range`) copies inside the kernel, and
//! a stream (read/write with a large buffer) is the last resort. Trees are walked in
//! parallel with directory file descriptors, and everything `cp -a` keeps is kept.
//!
//! The engine never prints: it reports through an [`Observer`] and returns a [`Summary`].

#![cfg_attr(not(test), warn(missing_docs))]
#![allow(missing_docs)]

mod error;
mod file;
mod journal;
mod links;
mod meta;
mod options;
mod place;
mod single;
mod special;
mod summary;
mod survey;
mod sys;
mod tree;
mod verify;
mod walk;

pub use error::{Cause, Error, Op, Result, io_message};
pub use file::{FileOutcome, Method};
pub use options::{
    DEFAULT_BUFFER_SIZE, Dereference, Options, Overwrite, Preserve, Reflink, Sparse, default_jobs,
};
pub use single::copy_file;
pub use summary::{Control, EntryKind, Event, NoObserver, Observer, Summary};
pub use survey::{Action, Totals, dry_run, scan};
pub use tree::{CopyPair, copy, copy_with};

use std::path::Path;

/// A path as text for messages; bytes that are not UTF-8 are shown escaped.
pub fn path_display(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.escape_ascii().to_string(),
    }
}
