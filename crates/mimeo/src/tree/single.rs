//! One regular file copied on its own ([`copy_file`]).
//!
//! A tree copy opens each directory once and works relative to it. A single file gains nothing
//! from that: its source and destination are resolved by path from the working directory, and
//! the only calls made are the ones the copy itself needs. Replacing a cloned file costs a
//! `statx` of the destination, `open` and `statx` of the source, the temporary's `open`,
//! `FICLONE`, `rename` and two `close`s.

use super::context::{Ctx, DstFacts, Here, Loc};
use super::file::RegularFile;
use super::hooks::{HookSet, NoHooks};
use super::roots::{cow_matters, is_cow, stat_error};
use crate::data::meta;
use crate::options::{Dereference, Options};
use crate::report::{Control, Error, FileOutcome, NoObserver, Op, Refusal, Reporter};
use crate::sys::{self, Errno, Meta, XattrTarget};
use rustix::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Copies one regular file to `dst`, replacing an existing `dst` atomically.
///
/// `dst` is the exact destination path (no "copy into a directory" rule is applied). The
/// options work as for a tree copy, except those about what is made instead of a copy or
/// around it ([`Options::link`](crate::Options::link), [`Options::parents`](crate::Options::parents)),
/// which [`copy`](crate::copy) applies.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
/// std::fs::write(&src, b"hello")?;
/// let outcome = mimeo::copy_file(&src, &dst, &mimeo::Options::default())?;
/// assert_eq!(outcome.bytes, 5);
/// assert_eq!(std::fs::read(&dst)?, b"hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// A missing or unreadable source, a source that is not a regular file
/// ([`Refusal::NotRegular`]), `src` and `dst` being the same file ([`Refusal::SameFile`]),
/// an existing `dst` kept because of [`Overwrite::NoClobber`](crate::Overwrite) or `-u`
/// ([`Refusal::Exists`]), and any failure of the copy itself. Nothing is left at `dst`
/// after an error, and an existing `dst` is unchanged.
pub fn copy_file(src: &Path, dst: &Path, opts: &Options) -> Result<FileOutcome, Error> {
    copy_file_with(src, dst, opts, &Control::new())
}

/// [`copy_file`] with a [`Control`]: its byte counters grow as the data is written, and
/// [`Control::stop`] from another thread stops the copy between two chunks of data.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
/// std::fs::write(&src, vec![1u8; 4096])?;
/// let control = mimeo::Control::new();
/// mimeo::copy_file_with(&src, &dst, &mimeo::Options::default(), &control)?;
/// assert_eq!((control.bytes_done(), control.entries_done()), (4096, 1));
///
/// control.stop();
/// let stopped = mimeo::copy_file_with(&src, &dir.path().join("new"), &mimeo::Options::default(), &control);
/// assert_eq!(stopped.unwrap_err().op, mimeo::Op::Interrupted);
/// assert!(!dir.path().join("new").exists());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`copy_file`]; a stopped copy fails with [`Op::Interrupted`] and leaves nothing at
/// `dst`.
pub fn copy_file_with(
    src: &Path,
    dst: &Path,
    opts: &Options,
    control: &Control,
) -> Result<FileOutcome, Error> {
    if control.is_stopped() {
        return Err(Error::os(Op::Interrupted, dst, libc::EINTR));
    }
    let ctx = Ctx::new(
        opts,
        Reporter::new(&NoObserver, control),
        HookSet::new(&NoHooks),
    );
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
            stat_error(src.to_path_buf(), e)
        }
    })?;
    let meta = sys::fstat(file.as_fd()).map_err(|e| stat_error(src.to_path_buf(), e))?;
    if !meta.is_reg() {
        return Err(not_regular(src));
    }
    let found = sys::stat_at(sys::CWD, &dst_name, false).ok();
    let prefix_len = dst_bytes
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |i| i + 1);
    let dst_prefix = &dst_bytes[..prefix_len];
    let here = Here {
        src_dir: sys::CWD,
        dst_dir: sys::CWD,
        loc: Loc::Alone {
            src,
            dst,
            dst_prefix,
        },
        root: None,
        dir: None,
        marker: None,
        dst: dst_facts(opts, dst, dst_prefix, found.as_ref())?,
        root_src_dev: meta.dev,
        sized_dev: u64::MAX,
        spawn: None,
    };
    let mut buf = crate::sys::IoBuf::default();
    RegularFile::new(&ctx, &here, (&src_name, &dst_name), &file, meta)
        .copy(&mut buf, found.as_ref())?
        .ok_or_else(|| Error::refused(Op::Refuse, dst, Refusal::Exists))
}

/// What the copy needs to know of the destination's directory. Its device is the existing
/// destination's, so the directory itself is only looked at for a new file, for the set-gid
/// bit when owners are kept, and for --reflink=never.
fn dst_facts(
    opts: &Options,
    dst: &Path,
    prefix: &[u8],
    found: Option<&Meta>,
) -> Result<DstFacts, Error> {
    let cow_matters = cow_matters(opts);
    // With --preserve=mode or --no-preserve=mode, a default ACL of the directory matters (see
    // `DstFacts`).
    let acl_matters = opts.preserve.mode || opts.preserve.default_mode;
    if let Some(d) = found {
        if !opts.preserve.ownership && !cow_matters && !acl_matters {
            return Ok(DstFacts {
                dev: d.dev,
                cow: false,
                setgid: false,
                // A file given alone makes no directory.
                sgid_foreign: false,
                share: None,
                default_acl: false,
                acl_perm: None,
            });
        }
    }
    let dir = sys::cstring(if prefix.is_empty() { b"." } else { prefix });
    let create_error = |e: Errno| Error::sys(Op::Create, dst, e);
    if cow_matters || acl_matters {
        let fd = sys::open_dir(sys::CWD, &dir, true).map_err(create_error)?;
        let m = sys::fstat(fd.as_fd()).map_err(create_error)?;
        return Ok(DstFacts {
            dev: m.dev,
            cow: cow_matters && is_cow(fd.as_fd()),
            setgid: m.mode & sys::S_ISGID != 0,
            sgid_foreign: false,
            share: None,
            default_acl: acl_matters && sys::has_xattr(fd.as_fd(), sys::ACL_DEFAULT),
            acl_perm: (!acl_matters && !opts.preserve.ownership)
                .then(|| meta::default_acl_perm(XattrTarget::Fd(fd.as_fd())))
                .flatten(),
        });
    }
    let m = sys::stat_at(sys::CWD, &dir, true).map_err(create_error)?;
    Ok(DstFacts {
        dev: m.dev,
        cow: false,
        setgid: m.mode & sys::S_ISGID != 0,
        sgid_foreign: false,
        share: None,
        default_acl: false,
        // Without --preserve=mode or --no-preserve=mode (which looked above).
        acl_perm: (!opts.preserve.ownership)
            .then(|| meta::default_acl_perm(XattrTarget::NoFollow(&dir)))
            .flatten(),
    })
}

fn not_regular(src: &Path) -> Error {
    Error::refused(Op::Refuse, src, Refusal::NotRegular)
}
