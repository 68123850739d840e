//! One regular file copied on its own ([`copy_file`]).
//!
//! A tree copy opens each directory once and works relative to it. A single file gains nothing
//! from that: its source and destination are resolved by path from the working directory, and
//! the only calls made are the ones the copy itself needs. Replacing a cloned file costs a
//! `statx` of the destination, `open` and `statx` of the source, the temporary's `open`,
//! `FICLONE`, `rename` and two `close`s.

use crate::error::{Error, Op};
use crate::file::{self, FileOutcome};
use crate::options::{Dereference, Options};
use crate::place;
use crate::summary::{Control, NoObserver};
use crate::sys::{self, Errno, Meta};
use crate::tree::{self, DstFacts, Here, Run};
use rustix::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

/// Copies one regular file to `dst`, replacing an existing `dst` atomically.
///
/// `dst` is the exact destination path (no "copy into a directory" rule is applied). The
/// options work as for a tree copy; `dst` and `src` naming the same file is refused.
pub fn copy_file(src: &Path, dst: &Path, opts: &Options) -> Result<FileOutcome, Error> {
    let control = Control::new();
    let run = Run::new(opts, &NoObserver, &control);
    let src_bytes = src.as_os_str().as_bytes();
    let dst_bytes = dst.as_os_str().as_bytes();
    let follow = opts.dereference != Dereference::Never || src_bytes.ends_with(b"/");
    let src_name = sys::cstring(src_bytes);
    let dst_name = sys::cstring(dst_bytes);

    let file = sys::open_read(sys::CWD, &src_name, follow).map_err(|e| {
        let symlink = e == Errno::LOOP
            && !follow
            && sys::stat_at(sys::CWD, &src_name, false).is_ok_and(|m| m.is_symlink());
        if symlink {
            not_regular(src)
        } else {
            tree::stat_error(src.to_path_buf(), e)
        }
    })?;
    let meta = sys::fstat(file.as_fd()).map_err(|e| tree::stat_error(src.to_path_buf(), e))?;
    if !meta.is_reg() {
        return Err(not_regular(src));
    }

    let found = sys::stat_at(sys::CWD, &dst_name, false).ok();
    if found.is_some_and(|d| {
        place::is_same_file(&meta, || None, &d, place::followed(sys::CWD, &dst_name))
    }) {
        return Err(tree::same_file(src, dst));
    }

    let prefix_len = dst_bytes
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |i| i + 1);
    let prefix = &dst_bytes[..prefix_len];
    let facts = dst_facts(&run, dst, prefix, found.as_ref())?;
    let empty_rel: Arc<[u8]> = Arc::from(&b""[..]);
    let here = Here::by_path(src, dst, prefix, &empty_rel, facts, meta.dev);
    let mut buf = Vec::new();
    file::copy_opened(
        &run,
        &here,
        &mut buf,
        &src_name,
        &dst_name,
        &file,
        &meta,
        found.as_ref(),
    )?
    .ok_or_else(|| Error::refused(Op::Refuse, dst, "destination exists"))
}

/// What the copy needs to know of the destination's directory. Its device is the existing
/// destination's, so the directory itself is only looked at for a new file, for the set-gid
/// bit when owners are kept, and for --reflink=never.
fn dst_facts(
    run: &Run<'_>,
    dst: &Path,
    prefix: &[u8],
    found: Option<&Meta>,
) -> Result<DstFacts, Error> {
    let opts = run.opts;
    let cow_matters = tree::cow_matters(opts);
    if let Some(d) = found {
        if !opts.preserve.ownership && !cow_matters {
            return Ok(DstFacts {
                dev: d.dev,
                cow: false,
                setgid: false,
            });
        }
    }
    let dir = sys::cstring(if prefix.is_empty() { b"." } else { prefix });
    let create_error = |e: Errno| Error::io(Op::Create, dst, sys::io_err(e));
    if cow_matters {
        let fd = sys::open_dir(sys::CWD, &dir, true).map_err(create_error)?;
        let m = sys::fstat(fd.as_fd()).map_err(create_error)?;
        return Ok(DstFacts {
            dev: m.dev,
            cow: tree::is_cow(fd.as_fd()),
            setgid: m.mode & sys::S_ISGID != 0,
        });
    }
    let m = sys::stat_at(sys::CWD, &dir, true).map_err(create_error)?;
    Ok(DstFacts {
        dev: m.dev,
        cow: false,
        setgid: m.mode & sys::S_ISGID != 0,
    })
}

fn not_regular(src: &Path) -> Error {
    Error::refused(Op::Refuse, src, "not a regular file")
}
