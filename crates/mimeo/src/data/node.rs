//! Writing a regular file's bytes into an existing FIFO, socket or device node, as cp does
//! (how images are written to block devices). The node is opened without blocking, and a
//! FIFO without a reader, or a full one, is waited for in short polls, so that a stop request
//! is still seen.

use super::error::{DataError, POLL, interrupted};
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
    let bs = buffer(buf, buffer_size);
    let mut pos = 0u64;
    loop {
        interrupted(control)?;
        let n = sys::pread(src, &mut buf[..bs], pos)
            .map_err(|errno| DataError::new(Op::Read, errno))?;
        if n == 0 {
            return Ok(pos);
        }
        let mut data = &buf[..n];
        while !data.is_empty() {
            match sys::write(dst.as_fd(), data) {
                Ok(w) => data = &data[w..],
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => {
                    interrupted(control)?;
                    sys::wait_writable(dst.as_fd(), POLL.as_millis() as i32);
                }
                Err(errno) => {
                    return Err(DataError::new(Op::Write, errno));
                }
            }
        }
        control.add_bytes(crate::report::Method::Stream, n as u64);
        pos += n as u64;
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
    let bs = buffer(buf, buffer_size);
    let read_error = |errno| DataError::new(Op::Read, errno);
    let mut total = 0u64;
    loop {
        interrupted(control)?;
        if !sys::wait_readable(src, POLL.as_millis() as i32) {
            continue;
        }
        let n = match sys::read(src, &mut buf[..bs]) {
            Ok(n) => n,
            Err(Errno::INTR | Errno::AGAIN) => continue,
            Err(errno) => return Err(read_error(errno)),
        };
        if n == 0 {
            return Ok(total);
        }
        sys::write_all(dst, &buf[..n], None).map_err(|errno| DataError::new(Op::Write, errno))?;
        control.add_bytes(crate::report::Method::Stream, n as u64);
        total += n as u64;
    }
}

/// Makes `buf` hold at least one buffer of the size asked for (within 4 KiB–1 MiB), and
/// returns that size.
fn buffer(buf: &mut IoBuf, buffer_size: usize) -> usize {
    let bs = buffer_size.clamp(4096, 1 << 20);
    buf.grow_to(bs);
    bs
}
