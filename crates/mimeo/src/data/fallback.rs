//! The one table of errnos that send a copy to its next mechanism (clone → offload →
//! stream). Every other errno is terminal for the file, so no fallback ever hides ENOSPC,
//! EIO, EDQUOT or ENOMEM (docs/guarantees.md §1). The whole-file clone, range clones and every
//! offload use it, so that they cannot disagree.

use crate::sys::Errno;

/// A mechanism that can be unavailable where it is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mechanism {
    /// `FICLONE` or `FICLONERANGE`.
    Clone,
    /// `copy_file_range`.
    Offload,
}

/// Whether `e` from `m` means "not here": the next mechanism is tried. For a clone:
/// another filesystem, no reflink support (EBADF, EOPNOTSUPP, ENOTTY, ENOSYS), alignment or
/// NOCOW on one side (EINVAL), a swap file (ETXTBSY), an immutable or append-only file
/// (EPERM), a directory, or a subvolume being sent (EAGAIN, after retries). For an offload,
/// before its first byte: another filesystem, no support, or a file it will not take.
pub(crate) fn falls_back(m: Mechanism, e: Errno) -> bool {
    match m {
        Mechanism::Clone => matches!(
            e,
            Errno::XDEV
                | Errno::OPNOTSUPP
                | Errno::INVAL
                | Errno::TXTBSY
                | Errno::NOSYS
                | Errno::NOTTY
                | Errno::BADF
                | Errno::ISDIR
                | Errno::PERM
                | Errno::AGAIN
        ),
        Mechanism::Offload => matches!(
            e,
            Errno::XDEV
                | Errno::NOSYS
                | Errno::OPNOTSUPP
                | Errno::INVAL
                | Errno::BADF
                | Errno::TXTBSY
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_errnos_never_fall_back() {
        for m in [Mechanism::Clone, Mechanism::Offload] {
            for e in [
                Errno::NOSPC,
                Errno::IO,
                Errno::DQUOT,
                Errno::NOMEM,
                Errno::INTR,
                Errno::FBIG,
            ] {
                assert!(!falls_back(m, e), "{m:?} {e:?}");
            }
        }
    }

    #[test]
    fn unsupported_mechanisms_fall_back() {
        for e in [Errno::XDEV, Errno::OPNOTSUPP, Errno::INVAL, Errno::NOSYS] {
            assert!(falls_back(Mechanism::Clone, e), "{e:?}");
            assert!(falls_back(Mechanism::Offload, e), "{e:?}");
        }
        assert!(falls_back(Mechanism::Clone, Errno::TXTBSY));
        assert!(falls_back(Mechanism::Clone, Errno::AGAIN));
        assert!(!falls_back(Mechanism::Offload, Errno::AGAIN));
    }
}
