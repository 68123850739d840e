//! Changing files behind a reader's back, and watching the page cache and the device: mmap
//! stores, range clones, writeback started by hand, cached pages (`cachestat`) and sectors
//! read from a block device. For tests of readers that must notice every change (shared
//! reads) and for benchmarks that count what reached the device.
//!
//! The raw calls are fenced here, each with its safety argument.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

fn check(rc: libc::c_long) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A shared, writable mapping of the start of a file: stores through it change the file
/// the way an application's mmap writes do (a fault marks the page dirty and sets ctime).
#[derive(Debug)]
pub struct Mapped {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory shared with the page cache; `Mapped` hands out no
// references into it, and stores are made through `store`, which takes `&mut self`.
unsafe impl Send for Mapped {}

impl Mapped {
    /// Maps the first `len` bytes of `file` (opened read-write) shared and writable.
    ///
    /// # Errors
    ///
    /// Those of `mmap(2)`.
    pub fn new(file: &File, len: usize) -> io::Result<Mapped> {
        // SAFETY: a new mapping at an address of the kernel's choosing; nothing else in
        // this process refers to it, and `Drop` unmaps exactly this range.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapped {
            ptr: ptr.cast(),
            len,
        })
    }

    /// The mapped length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Stores `data` at `off`. The caller keeps the range inside the file's current size,
    /// rounded up to a page (a store to a page wholly past the end of the file is SIGBUS).
    ///
    /// # Panics
    ///
    /// When the range is outside the mapping.
    pub fn store(&mut self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.len, "store outside the mapping");
        // SAFETY: the range is inside the live mapping (asserted), and nothing else in this
        // process reads or writes it while `&mut self` is held.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), data.len()) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, which nothing uses any more.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// `FICLONERANGE`: shares `len` bytes of `src` at `src_off` into `dst` at `dst_off`.
///
/// # Errors
///
/// Those of the ioctl (EINVAL for unaligned ranges, EOPNOTSUPP where there is no reflink).
pub fn clone_range(
    src: BorrowedFd<'_>,
    src_off: u64,
    dst: BorrowedFd<'_>,
    dst_off: u64,
    len: u64,
) -> io::Result<()> {
    #[repr(C)]
    struct FileCloneRange {
        src_fd: i64,
        src_offset: u64,
        src_length: u64,
        dest_offset: u64,
    }
    const FICLONERANGE: libc::c_ulong = 0x4020_940D;
    let arg = FileCloneRange {
        src_fd: i64::from(src.as_raw_fd()),
        src_offset: src_off,
        src_length: len,
        dest_offset: dst_off,
    };
    // SAFETY: FICLONERANGE reads one `struct file_clone_range`, laid out as above and live
    // for the call; both descriptors are borrowed for its duration.
    let rc = unsafe { libc::ioctl(dst.as_raw_fd(), FICLONERANGE, &arg as *const FileCloneRange) };
    check(rc.into())
}

/// Starts writeback of a range without waiting for it (`sync_file_range(WRITE)`), so that
/// pages go from dirty to writeback to clean while a test reads.
///
/// # Errors
///
/// Those of `sync_file_range(2)`.
pub fn start_writeback(fd: BorrowedFd<'_>, off: u64, len: u64) -> io::Result<()> {
    // SAFETY: plain integers and a descriptor borrowed for the call.
    let rc = unsafe {
        libc::sync_file_range(
            fd.as_raw_fd(),
            off as i64,
            len as i64,
            libc::SYNC_FILE_RANGE_WRITE,
        )
    };
    check(rc.into())
}

/// Pages of `[off, off + len)` of `fd` in the page cache (`cachestat`, Linux 6.5+; `len` 0
/// means to the end of the file), and how many of them are dirty.
///
/// # Errors
///
/// Those of `cachestat(2)` (ENOSYS on older kernels).
pub fn cached_pages(fd: BorrowedFd<'_>, off: u64, len: u64) -> io::Result<(u64, u64)> {
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        cache: u64,
        dirty: u64,
        writeback: u64,
        evicted: u64,
        recently_evicted: u64,
    }
    const SYS_CACHESTAT: libc::c_long = 451;
    let range = Range { off, len };
    let mut out = Stat::default();
    // SAFETY: cachestat reads one range and writes one stat struct, both repr(C) as in
    // <linux/mman.h> and live for the call.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd.as_raw_fd() as libc::c_uint,
            &range as *const Range,
            &mut out as *mut Stat,
            0 as libc::c_uint,
        )
    };
    check(rc)?;
    Ok((out.cache, out.dirty))
}

/// The block device a mount point's filesystem is on (`/dev/loop3`), from
/// `/proc/self/mountinfo`.
pub fn mount_source(mount_point: &Path) -> Option<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let want = mount_point.to_str()?;
    info.lines().rev().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let sep = fields.iter().position(|&f| f == "-")?;
        (fields.get(4) == Some(&want)).then(|| fields.get(sep + 2).map(|s| s.to_string()))?
    })
}

/// Sectors (512 bytes) read so far from the block device `dev` (`/dev/loop3` or `loop3`),
/// from `/proc/diskstats`.
pub fn sectors_read(dev: &str) -> Option<u64> {
    let name = dev.rsplit('/').next()?;
    let stats = std::fs::read_to_string("/proc/diskstats").ok()?;
    stats.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.get(2) == Some(&name)).then(|| f.get(5)?.parse().ok())?
    })
}
