//! Fault injection for tests, compiled only with the `failpoints` feature.
//!
//! Points are configured from `MIMEO_FAILPOINTS`, e.g. `write=return(ENOSPC);clone=return(EXDEV)`
//! (any action of the `fail` crate; `return(ERRNO)` makes the call fail with that errno).
//! Points: read, write, clone, clone_range, dedupe, copy_file_range, fsetxattr, utimensat, rename,
//! fiemap, cachestat. `clone_range_short` (any action, e.g. `1*return`) makes a range clone
//! behave as the kernel does when it remaps less than asked: it really clones the first half
//! (block-aligned), then fails with EINVAL.

use rustix::io::Errno;
use std::sync::Once;

/// Reads `MIMEO_FAILPOINTS` once per process.
pub(crate) fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let Ok(spec) = std::env::var("MIMEO_FAILPOINTS") else {
            return;
        };
        for item in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            if let Some((name, action)) = item.split_once('=') {
                fail::cfg(name.trim(), action.trim()).expect("valid failpoint action");
            }
        }
    });
}

/// The errno a `return(NAME)` action asks for; EIO when unnamed or unknown.
pub(crate) fn errno(arg: Option<String>) -> Errno {
    match arg.as_deref().map(str::trim) {
        Some("ENOSPC") => Errno::NOSPC,
        Some("EDQUOT") => Errno::DQUOT,
        Some("ENOMEM") => Errno::NOMEM,
        Some("EXDEV") => Errno::XDEV,
        Some("EOPNOTSUPP") | Some("ENOTSUP") => Errno::OPNOTSUPP,
        Some("EINVAL") => Errno::INVAL,
        Some("ENOSYS") => Errno::NOSYS,
        Some("ETXTBSY") => Errno::TXTBSY,
        Some("EPERM") => Errno::PERM,
        Some("EAGAIN") => Errno::AGAIN,
        Some("EBADF") => Errno::BADF,
        Some("EACCES") => Errno::ACCESS,
        Some("EINTR") => Errno::INTR,
        _ => Errno::IO,
    }
}
