//! Reading and writing files that can keep a copy waiting: FIFOs, devices, sockets and
//! terminals, and files such as those of /proc, which are opened without blocking. Where
//! such a file has nothing to give, or no room to take, it is waited for in short polls
//! ([`POLL`]), so that a stop request is still seen. The calls themselves, and their retry
//! after a signal, are `sys`'s.

use super::error::{DataError, POLL, interrupted};
use crate::report::{Control, Method, Op};
use crate::sys::{self, Errno, IoBuf};
use rustix::fd::BorrowedFd;

/// The part of `buf` used for files that may wait: `buffer_size`, within 4 KiB-1 MiB.
pub(crate) fn buffer(buf: &mut IoBuf, buffer_size: usize) -> &mut [u8] {
    let bs = buffer_size.clamp(4096, 1 << 20);
    buf.grow_to(bs);
    &mut buf[..bs]
}

/// Reads `src` to its end and writes what it gives to `dst` at its file offset, through
/// a buffer of `buffer_size` (within 4 KiB-1 MiB); returns the bytes copied. A source with
/// nothing to read yet (EAGAIN) is waited for as a blocking read waits; with `poll_first`
/// it is waited for before every read, as a FIFO must be: without a writer yet it would
/// read as ended.
pub(crate) fn read_to_end(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    buf: &mut IoBuf,
    buffer_size: usize,
    control: &Control,
    poll_first: bool,
) -> Result<u64, DataError> {
    let buf = buffer(buf, buffer_size);
    let poll_ms = POLL.as_millis() as i32;
    let mut total = 0u64;
    loop {
        interrupted(control)?;
        if poll_first && !sys::wait_readable(src, poll_ms) {
            continue;
        }
        let n = match sys::read(src, buf) {
            Ok(n) => n,
            Err(Errno::AGAIN) => {
                if !poll_first {
                    sys::wait_readable(src, poll_ms);
                }
                continue;
            }
            Err(e) => return Err(DataError::new(Op::Read, e)),
        };
        if n == 0 {
            return Ok(total);
        }
        // `dst` may be a FIFO or device opened without blocking: a full one is waited for.
        write_all(dst, &buf[..n], None, control)?;
        total += n as u64;
        control.add_bytes(Method::Stream, n as u64);
    }
}

/// Writes all of `data` to `dst` at `*pos` (moved on as it is written), or at its file
/// offset when None. An output without room (EAGAIN: a full pipe, a terminal) is waited
/// for; the run's stop ends the wait as [`Op::Interrupted`].
pub(crate) fn write_all(
    dst: BorrowedFd<'_>,
    data: &[u8],
    pos: Option<&mut u64>,
    control: &Control,
) -> Result<(), DataError> {
    let mut stop = None;
    let mut wait = || match interrupted(control) {
        Ok(()) => {
            sys::wait_writable(dst, POLL.as_millis() as i32);
            true
        }
        Err(e) => {
            stop = Some(e);
            false
        }
    };
    let result = sys::write_all_waiting(dst, data, pos, &mut wait);
    result.map_err(|e| stop.unwrap_or(DataError::new(Op::Write, e)))
}
