//! Page-aligned buffers for reads and writes of file data.
//!
//! The kernel copies file data between the page cache and user memory with one block move
//! (`copy_to_user`, `copy_from_user`). The page cache side is page-aligned; when the user
//! side is not even cache-line aligned, the move is much slower. A `Vec<u8>` of a buffer's
//! size comes from `malloc`, whose large blocks start 16 bytes into a page. Measured on a
//! 2-core AMD EPYC VM (Linux 6.18), reading 1 GiB of cached btrfs data in 8 MiB `pread`s took
//! 0.103–0.136 s into a page-aligned buffer and 0.166–0.169 s at 16 bytes past a page; with
//! these buffers `mimeo-cat` reads a clone through its cached parent in 1.03–1.12× the time
//! of `cat` of the parent, against 1.42–1.47× before (`bench/buffers.sh`, results of
//! 2026-11-26).
//!
//! [`IoBuf`] keeps its bytes page-aligned without `unsafe`: it over-allocates by a page and
//! starts at the first page boundary inside the allocation.

use std::ops::{Deref, DerefMut};

/// The alignment of an [`IoBuf`]'s start: 4 KiB, the smallest page size, and a multiple of
/// every cache line (what the kernel's block copy cares about).
const ALIGN: usize = 4096;

/// A growable byte buffer whose first byte lies on a page boundary. It dereferences to its
/// bytes, like a `Vec<u8>` of the same length.
#[derive(Debug, Default)]
pub(crate) struct IoBuf {
    /// The allocation: at least `ALIGN - 1` bytes more than the buffer's length.
    raw: Vec<u8>,
    /// Where the aligned bytes start in `raw`.
    start: usize,
    len: usize,
}

impl IoBuf {
    /// A new buffer of `len` zero bytes.
    pub(crate) fn zeroed(len: usize) -> Self {
        let mut b = IoBuf::default();
        b.resize(len);
        b
    }

    /// Makes the buffer `len` bytes long, keeping its first bytes (growing may move it, and
    /// keeps it aligned). Bytes beyond the old length are not cleared: they hold what an
    /// earlier use left there, or zeros where the allocation is new. Every caller reads into
    /// the buffer before it looks at it, and a refill of a reader's buffer after a short read
    /// should not cost a memset of the whole buffer.
    pub(crate) fn resize(&mut self, len: usize) {
        let need = len + ALIGN - 1;
        if self.raw.len() < need {
            let old = std::mem::take(self);
            let mut raw = vec![0u8; need];
            let start = raw.as_ptr().align_offset(ALIGN);
            raw[start..start + old.len].copy_from_slice(&old);
            *self = IoBuf { raw, start, len };
        } else {
            self.len = len;
        }
    }

    /// Makes the buffer at least `len` bytes long (as [`resize`](Self::resize) does when it
    /// is shorter; a longer buffer stays as it is).
    pub(crate) fn grow_to(&mut self, len: usize) {
        if self.len < len {
            self.resize(len);
        }
    }

    /// Makes the buffer empty, keeping its allocation.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}

impl Deref for IoBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }
}

impl DerefMut for IoBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(b: &IoBuf) -> bool {
        b.as_ptr().align_offset(ALIGN) == 0
    }

    #[test]
    fn starts_on_a_page_at_every_size_and_keeps_its_bytes_when_it_grows() {
        let mut b = IoBuf::zeroed(100);
        assert!(aligned(&b));
        assert_eq!(&b[..], &[0u8; 100][..]);
        b[..3].copy_from_slice(b"abc");
        for len in [4096, 1 << 20, 8 << 20, 5, 300 << 10] {
            b.resize(len);
            assert_eq!(b.len(), len);
            assert!(aligned(&b), "{len}");
            assert_eq!(&b[..3], b"abc", "{len}");
        }
    }

    #[test]
    fn a_shrink_and_a_regrowth_keep_the_allocation_and_the_first_bytes() {
        let mut b = IoBuf::zeroed(8192);
        let at = b.as_ptr();
        b.fill(7);
        b.resize(10);
        assert_eq!(b.len(), 10);
        b.resize(8192);
        assert_eq!(b.as_ptr(), at);
        assert!(b[..10].iter().all(|&x| x == 7));
        b.clear();
        assert!(b.is_empty());
        b.resize(4);
        assert_eq!(b.as_ptr(), at);
        assert_eq!(b.len(), 4);
        b.grow_to(2);
        assert_eq!(b.len(), 4);
        b.grow_to(4096);
        assert_eq!((b.len(), b.as_ptr()), (4096, at));
    }
}
