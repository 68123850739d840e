//! The progress bar: bytes and files done of the total, rate, ETA, and bytes by method.
//!
//! Totals come from a scan on its own thread, so copying starts at once; until the scan is
//! complete the totals are shown as lower bounds. The bar is redrawn at most 10 times a second
//! from a ticker thread that only reads the engine's atomic counters.

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use mimeo::{Control, CopyPair, Method, Options, Totals};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running progress display; [`Progress::finish`] clears it.
#[derive(Debug)]
pub struct Progress {
    done: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl Progress {
    pub fn start(pairs: &[CopyPair], opts: &Options, control: Arc<Control>, sync: bool) -> Self {
        let totals = Arc::new(Totals::default());
        let done = Arc::new(AtomicBool::new(false));
        {
            let (pairs, opts, totals, control) = (
                pairs.to_vec(),
                opts.clone(),
                totals.clone(),
                control.clone(),
            );
            let _ = std::thread::Builder::new()
                .name("mimeo-scan".into())
                .spawn(move || {
                    // The scan only feeds the totals: at the lowest priority it uses idle CPU
                    // and never slows the copy it describes.
                    let _ =
                        rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
                    mimeo::scan(&pairs, &opts, &totals, &control)
                });
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30.cyan/blue} {percent:>3}% {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta} {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        let ticker = {
            let done = done.clone();
            std::thread::Builder::new()
                .name("mimeo-progress".into())
                .spawn(move || {
                    while !done.load(Relaxed) {
                        draw(&bar, &control, &totals, sync);
                        // Parked, not asleep: `finish` wakes it at once, so the bar never
                        // delays the end of a copy.
                        std::thread::park_timeout(Duration::from_millis(100));
                    }
                    bar.finish_and_clear();
                })
                .ok()
        };
        Progress { done, ticker }
    }

    pub fn finish(mut self) {
        self.done.store(true, Relaxed);
        if let Some(t) = self.ticker.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn draw(bar: &ProgressBar, control: &Control, totals: &Totals, sync: bool) {
    let complete = totals.complete.load(Relaxed);
    let bytes = control.bytes_done();
    let total = totals.bytes.load(Relaxed).max(bytes);
    bar.set_length(total);
    bar.set_position(bytes);
    let more = if complete { "" } else { "+" };
    let flushing = if sync { " (flushing each file)" } else { "" };
    bar.set_message(format!(
        "{}/{}{more} entries · cloned {} offloaded {} copied {}{flushing}",
        control.entries_done(),
        totals.entries.load(Relaxed),
        HumanBytes(control.bytes_by(Method::Clone)),
        HumanBytes(control.bytes_by(Method::Offload)),
        HumanBytes(control.bytes_by(Method::Stream)),
    ));
}
