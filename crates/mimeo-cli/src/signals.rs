//! SIGINT and SIGTERM: the first one stops the run cleanly (entries in progress are removed),
//! a second one ends the process at once.

use mimeo::Control;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// Which signal stopped the run (0 while none has).
#[derive(Debug, Default)]
pub struct Stopped(AtomicI32);

impl Stopped {
    /// The exit status cp-like tools use for a run stopped by a signal: 128 + its number.
    pub fn exit_code(&self) -> Option<u8> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            sig => Some((128 + sig) as u8),
        }
    }
}

/// Starts a thread that turns SIGINT/SIGTERM into a stop request on `control`.
pub fn install(control: Arc<Control>, stopped: Arc<Stopped>) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("mimeo-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if stopped.0.swap(sig, Ordering::SeqCst) != 0 {
                    // Asked twice: stop waiting for the clean-up.
                    std::process::exit(128 + sig);
                }
                control.stop();
            }
        })?;
    Ok(())
}
