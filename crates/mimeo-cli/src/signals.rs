//! The stop switch of every command of the family: SIGINT and SIGTERM stop the run cleanly
//! (entries in progress are removed), a second one ends the process at once. A reader of
//! standard output that goes away stops the run the same way, as SIGPIPE would end cp or cat
//! (see [`output::out`](crate::output::out)).

use mimeo::Control;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

/// SIGPIPE's number: what a write to a pipe without a reader raises.
pub const SIGPIPE: i32 = 13;

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

    /// Records `sig` as the one that stopped the run, unless one already did. Returns the
    /// signal recorded before (0 for none).
    fn record(&self, sig: i32) -> i32 {
        self.0
            .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
            .unwrap_or_else(|before| before)
    }
}

/// The switch [`install`] set up, for stops that do not come as signals.
static SWITCH: OnceLock<(Arc<Control>, Arc<Stopped>)> = OnceLock::new();

/// Starts a thread that turns SIGINT/SIGTERM into a stop request on `control`.
pub fn install(control: Arc<Control>, stopped: Arc<Stopped>) -> std::io::Result<()> {
    let _ = SWITCH.set((control.clone(), stopped.clone()));
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("mimeo-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if stopped.record(sig) != 0 {
                    // Asked twice: stop waiting for the clean-up.
                    std::process::exit(128 + sig);
                }
                control.stop();
            }
        })?;
    Ok(())
}

/// Stops the run as if by signal `sig` (its exit status becomes 128 + `sig`), through the
/// switch [`install`] set up. Without one, the process ends at once with that status.
pub fn stop_as(sig: i32) {
    match SWITCH.get() {
        Some((control, stopped)) => {
            stopped.record(sig);
            control.stop();
        }
        None => std::process::exit(128 + sig),
    }
}
