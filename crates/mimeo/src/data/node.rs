//! Writing a regular file's bytes into an existing FIFO, socket or device node, as cp does
//! (how images are written to block devices). The node is opened without blocking, and a
//! FIFO without a reader, or a full one, is waited for in short polls, so that a stop request
//! is still seen.

use super::error::{DataError, POLL, interrupted};
use super::wait;
use crate::report::{Control, Op};
use crate::sys::{self, Errno, IoBuf};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ffi::CStr;

/// Opens the existing node `dir/name` for writing. A FIFO that nobody reads yet is waited for.
pub(crate) fn open_node(
    dir: BorrowedFd<'_>,
    name: &CStr,
    control: &Control,
) -> Result<OwnedFd, DataError> {
    loop {
        match sys::open_node_for_writing(dir, name) {
            Err(Errno::NXIO)
                if sys::stat_at(dir, name, false).is_ok_and(|m| m.file_type() == sys::S_IFIFO) =>
            {
                interrupted(control)?;
                std::thread::sleep(POLL);
            }
            Err(errno) => {
                return Err(DataError::new(Op::Create, errno));
            }
            Ok(fd) => return Ok(fd),
        }
    }
}

/// Writes the whole of `src`, read from its start to its end, into the node `dst`. Returns
/// the bytes written.
pub(crate) fn stream_into(
    src: BorrowedFd<'_>,
    dst: &OwnedFd,
    buf: &mut IoBuf,
    buffer_size: usize,
    control: &Control,
) -> Result<u64, DataError> {
    let buf = wait::buffer(buf, buffer_size);
    let mut pos = 0u64;
    loop {
        interrupted(control)?;
        let n = sys::pread(src, buf, pos).map_err(|errno| DataError::new(Op::Read, errno))?;
        if n == 0 {
            return Ok(pos);
        }
        wait::write_all(dst.as_fd(), &buf[..n], None, control)?;
        control.add_bytes(crate::report::Method::Stream, n as u64);
        pos += n as u64;
    }
}

/// Waits until the FIFO `src` (opened without blocking) has had a writer: until it can be
/// read, or its writer has gone. cp's blocking open waits so, before it looks at the
/// destination. In short polls, so that a stop request is still seen.
pub(crate) fn wait_for_writer(src: BorrowedFd<'_>, control: &Control) -> Result<(), DataError> {
    loop {
        interrupted(control)?;
        if sys::wait_readable(src, POLL.as_millis() as i32) {
            return Ok(());
        }
    }
}

/// Reads a FIFO or device node named as a source to its end and writes what it gives into
/// `dst` (`--copy-contents`), as cp reads it. A FIFO is waited for until a writer has
/// written or gone, in short polls, so that a stop request is still seen.
pub(crate) fn read_contents(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    buf: &mut IoBuf,
    buffer_size: usize,
    control: &Control,
) -> Result<u64, DataError> {
    wait::read_to_end(src, dst, buf, buffer_size, control, true)
}
