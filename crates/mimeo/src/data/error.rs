//! A data-path failure ([`DataError`]), and the stop check every data loop makes. Used by
//! every module of the data layer; imports nothing of it.

use crate::report::{Control, Op};
use crate::sys::Errno;

/// A data-path failure: which step failed and the errno. Terminal for the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DataError {
    pub op: Op,
    pub errno: Errno,
    /// For a copy stopped by [`Op::Interrupted`]: the part `[from, to)` of the range it was
    /// copying that was complete, bytes and holes final.
    pub stopped_at: Option<(u64, u64)>,
}

impl DataError {
    pub fn new(op: Op, errno: Errno) -> Self {
        DataError {
            op,
            errno,
            stopped_at: None,
        }
    }
}

/// How long one wait (for a FIFO's reader, for room in an output, for a source's data) lasts
/// before the stop switch is looked at again.
pub(crate) const POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Fails the file when the run has been stopped, so it is removed promptly.
pub(crate) fn interrupted(control: &Control) -> Result<(), DataError> {
    if control.is_stopped() {
        Err(DataError::new(Op::Interrupted, Errno::INTR))
    } else {
        Ok(())
    }
}
