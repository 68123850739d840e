//! `--verify`: proves a copy's content equals its source's.
//!
//! A clone is proven by its extent map: when every data extent of the copy is shared and maps
//! to the same physical range as the source's, the bytes are the same blocks. Anything else is
//! read back: the copy is written back and dropped from the page cache first, so its bytes come
//! from the device, then both sides are hashed with BLAKE3 in parallel over the union of their
//! data ranges (a hole reads as zeros, so holes common to both are skipped, not hashed).

use crate::report::{Error, Op};
use crate::report::{Method, Refusal};
use crate::sys::{self, Errno, IoBuf, Meta};
use rustix::fd::BorrowedFd;
use std::path::PathBuf;

/// Why verification failed.
#[derive(Debug)]
pub(crate) enum Mismatch {
    Io { errno: Errno, on_source: bool },
    Differs(Refusal),
}

impl Mismatch {
    pub fn into_error(self, src: PathBuf, dst: PathBuf) -> Error {
        match self {
            Mismatch::Io { errno, on_source } => {
                Error::sys(Op::Verify, if on_source { src } else { dst }, errno)
            }
            Mismatch::Differs(why) => Error::refused(Op::Verify, dst, why),
        }
    }
}

/// Checks that `dst` holds exactly the content of `src`.
pub(crate) fn same_content(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    meta: &Meta,
    method: Method,
) -> Result<(), Mismatch> {
    let dmeta = sys::fstat(dst).map_err(|errno| Mismatch::Io {
        errno,
        on_source: false,
    })?;
    let smeta = sys::fstat(src).map_err(|errno| Mismatch::Io {
        errno,
        on_source: true,
    })?;
    if dmeta.size != smeta.size || smeta.size != meta.size {
        return Err(Mismatch::Differs(Refusal::SizeDiffers {
            copy: dmeta.size,
            source: smeta.size,
        }));
    }
    if method == Method::Clone && shares_all_extents(src, dst) {
        return Ok(());
    }
    let size = smeta.size;
    sys::write_back(dst, 0, 0).map_err(|errno| Mismatch::Io {
        errno,
        on_source: false,
    })?;
    sys::drop_cache(dst, 0, 0);
    let ranges = union(
        &data_ranges(src, size).map_err(|errno| Mismatch::Io {
            errno,
            on_source: true,
        })?,
        &data_ranges(dst, size).map_err(|errno| Mismatch::Io {
            errno,
            on_source: false,
        })?,
    );
    let (a, b) = std::thread::scope(|s| {
        let other = s.spawn(|| hash(src, &ranges));
        let mine = hash(dst, &ranges);
        (other.join().expect("hash thread"), mine)
    });
    let a = a.map_err(|errno| Mismatch::Io {
        errno,
        on_source: true,
    })?;
    let b = b.map_err(|errno| Mismatch::Io {
        errno,
        on_source: false,
    })?;
    if a == b {
        Ok(())
    } else {
        Err(Mismatch::Differs(Refusal::ContentDiffers))
    }
}

/// Whether every data extent of `dst` is the source's extent at the same place.
fn shares_all_extents(src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> bool {
    let (Ok(a), Ok(b)) = (sys::extents(src), sys::extents(dst)) else {
        return false;
    };
    let unreliable =
        sys::FIEMAP_EXTENT_UNKNOWN | sys::FIEMAP_EXTENT_DELALLOC | sys::FIEMAP_EXTENT_ENCODED;
    let usable = |e: &sys::Extent| e.flags & unreliable == 0;
    !b.is_empty()
        && a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            usable(x)
                && usable(y)
                && y.flags & sys::FIEMAP_EXTENT_SHARED != 0
                && (x.logical, x.physical, x.length) == (y.logical, y.physical, y.length)
        })
}

/// The data ranges of a file below `size` (one range when it has no holes).
fn data_ranges(fd: BorrowedFd<'_>, size: u64) -> sys::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < size {
        let Some(start) = sys::seek_data(fd, pos)? else {
            break;
        };
        if start >= size {
            break;
        }
        let end = sys::seek_hole(fd, start)?.min(size);
        out.push((start, end));
        pos = end;
    }
    Ok(out)
}

/// Merges two sorted lists of ranges into their union.
fn union(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut all: Vec<(u64, u64)> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(all.len());
    for (s, e) in all {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn hash(fd: BorrowedFd<'_>, ranges: &[(u64, u64)]) -> sys::Result<blake3::Hash> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = IoBuf::zeroed(1 << 20);
    for &(start, end) in ranges {
        hasher.update(&start.to_le_bytes());
        let mut pos = start;
        while pos < end {
            let want = ((end - pos) as usize).min(buf.len());
            let n = sys::pread(fd, &mut buf[..want], pos)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            pos += n as u64;
        }
        hasher.update(&pos.to_le_bytes());
    }
    Ok(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::union;

    #[test]
    fn union_merges_overlapping_and_touching_ranges() {
        assert_eq!(
            union(&[(0, 10), (20, 30)], &[(5, 12), (30, 40), (50, 60)]),
            vec![(0, 12), (20, 40), (50, 60)]
        );
    }
}
