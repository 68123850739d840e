//! Extent inspection: FIEMAP (is the data shared with a clone?) and
//! allocation (`st_blocks`).
//!
//! Tests must prove that a clone really happened, and the kernel's
//! `FIEMAP_EXTENT_SHARED` flag is the direct evidence. No safe wrapper for
//! FIEMAP exists in rustix, so the one raw ioctl lives in [`fiemap_ioctl`].

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// `FS_IOC_FIEMAP` = `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// Flush dirty pages first so delayed allocations show up as extents.
const FIEMAP_FLAG_SYNC: u32 = 0x1;
const FIEMAP_EXTENT_LAST: u32 = 0x1;
const FIEMAP_EXTENT_SHARED: u32 = 0x2000;
/// Extents fetched per ioctl call.
const BATCH: usize = 128;

/// `struct fiemap_extent` from `<linux/fiemap.h>`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// `struct fiemap` followed by room for [`BATCH`] extents.
#[repr(C)]
#[derive(Debug)]
struct RawFiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [RawExtent; BATCH],
}

/// One mapped extent of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: u32,
}

impl Extent {
    /// Whether the kernel reports this extent as shared with another file.
    pub fn is_shared(&self) -> bool {
        self.flags & FIEMAP_EXTENT_SHARED != 0
    }
}

/// Extent counts of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sharing {
    /// Number of mapped extents.
    pub extents: usize,
    /// How many of them carry `FIEMAP_EXTENT_SHARED`.
    pub shared: usize,
}

impl Sharing {
    /// True when the file has data and every extent of it is shared.
    pub fn fully_shared(&self) -> bool {
        self.extents > 0 && self.shared == self.extents
    }
}

/// Issues one FIEMAP ioctl on `fd` with the request in `map`.
#[allow(unsafe_code)]
fn fiemap_ioctl(fd: BorrowedFd<'_>, map: &mut RawFiemap) -> io::Result<()> {
    // SAFETY: `map` is an exclusively borrowed, properly aligned
    // `#[repr(C)] struct fiemap` whose `fm_extent_count` equals the length
    // of the trailing array, so the kernel writes only inside it; `fd` is a
    // live descriptor for the duration of the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), FS_IOC_FIEMAP, map as *mut RawFiemap) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// All extents of the file at `path` (not following a final symlink).
pub fn extents(path: &Path) -> io::Result<Vec<Extent>> {
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let mut out = Vec::new();
    let mut start = 0u64;
    loop {
        let mut map = RawFiemap {
            fm_start: start,
            fm_length: u64::MAX - start,
            fm_flags: FIEMAP_FLAG_SYNC,
            fm_mapped_extents: 0,
            fm_extent_count: BATCH as u32,
            fm_reserved: 0,
            fm_extents: [RawExtent::default(); BATCH],
        };
        fiemap_ioctl(std::os::fd::AsFd::as_fd(&file), &mut map)?;
        let mapped = map.fm_mapped_extents as usize;
        let batch = &map.fm_extents[..mapped.min(BATCH)];
        out.extend(batch.iter().map(|e| Extent {
            logical: e.fe_logical,
            physical: e.fe_physical,
            length: e.fe_length,
            flags: e.fe_flags,
        }));
        match batch.last() {
            Some(last) if last.fe_flags & FIEMAP_EXTENT_LAST == 0 => {
                start = last.fe_logical + last.fe_length;
            }
            _ => return Ok(out),
        }
    }
}

/// Counts the extents of `path` and how many are shared (reflinked).
pub fn sharing(path: &Path) -> io::Result<Sharing> {
    let all = extents(path)?;
    Ok(Sharing {
        extents: all.len(),
        shared: all.iter().filter(|e| e.is_shared()).count(),
    })
}

/// `st_blocks` (512-byte units) of `path`, not following symlinks.
pub fn st_blocks(path: &Path) -> io::Result<u64> {
    Ok(std::fs::symlink_metadata(path)?.blocks())
}
