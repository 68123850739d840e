//! The progress line: percent, bytes done of the total, rate, ETA, entries, a bar, and bytes by
//! method, fitted to the terminal's width.
//!
//! Totals come from a scan on its own thread, so copying starts at once; until the scan is
//! complete the totals are shown as lower bounds (`+`). A ticker thread reads the engine's atomic
//! counters and the terminal's width at most 10 times a second and builds the line for that width
//! with [`render`]; indicatif only draws it. Reading the width on every tick is what makes a
//! resized terminal get a line of its new width at the next redraw.
//!
//! A line wider than the terminal wraps onto the next row, and the bar then scrolls instead of
//! redrawing in place. So the line is built to fit: every field has a priority and a reserved
//! width, and the fields are taken in priority order while their reserved widths fit (see
//! [`PRIORITY`]). The reserved width is the widest the field can get (a byte count takes at most
//! 8 columns), so a field does not flicker in and out as its digits change, and the fields after
//! it do not move. The line is plain ASCII, so its display width is its length.
//!
//! When the terminal is made narrower than the line already drawn, a terminal that re-wraps its
//! contents (tmux, most current ones) turns that line into several rows before the next redraw.
//! The redraw replaces the last of them; the rows above stay until they scroll away. Erasing them
//! too would erase real output on terminals that do not re-wrap, so the line leaves them.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mimeo::{Control, CopyPair, Method, Options, Totals};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running progress display; [`Progress::finish`] clears it.
#[derive(Debug)]
pub struct Progress(Ticker);

/// The live counters a progress line shows: a run's [`Control`], or the sum of several
/// processes' counters.
pub trait Live: Send + Sync {
    /// Bytes written so far by one method.
    fn bytes_by(&self, method: Method) -> u64;
    /// Entries completed so far.
    fn entries_done(&self) -> u64;
}

impl Live for Control {
    fn bytes_by(&self, method: Method) -> u64 {
        Control::bytes_by(self, method)
    }

    fn entries_done(&self) -> u64 {
        Control::entries_done(self)
    }
}

impl Progress {
    /// Starts the line for a run of `pairs`, reading `control`'s counters.
    pub fn start(pairs: &[CopyPair], opts: &Options, control: Arc<Control>, sync: bool) -> Self {
        Progress::start_with(pairs, opts, control.clone(), control, sync)
    }

    /// Starts the line for a run of `pairs` whose counters are `live` (`control` stops the
    /// scan of totals).
    pub fn start_with(
        pairs: &[CopyPair],
        opts: &Options,
        control: Arc<Control>,
        live: Arc<dyn Live>,
        sync: bool,
    ) -> Self {
        let totals = Arc::new(Totals::default());
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
        Progress::draw(totals, live, sync)
    }

    /// Starts the line for a run whose totals are known: `bytes` in `entries` entries.
    pub fn start_known(bytes: u64, entries: u64, live: Arc<dyn Live>) -> Self {
        let totals = Arc::new(Totals::default());
        totals.bytes.store(bytes, Relaxed);
        totals.entries.store(entries, Relaxed);
        totals.complete.store(true, Relaxed);
        Progress::draw(totals, live, false)
    }

    fn draw(totals: Arc<Totals>, live: Arc<dyn Live>, sync: bool) -> Self {
        let mut meter = Meter::default();
        Progress(Ticker::start(move |width, _| {
            let snap = snapshot(&*live, &totals, &mut meter, Instant::now(), sync);
            render(width, &snap)
        }))
    }

    pub fn finish(self) {
        self.0.finish();
    }
}

/// A line on stderr, built again from `line(width, elapsed)` at most ten times a second for
/// the terminal's width at that moment, until [`Ticker::finish`] clears it: the progress line
/// of every command of the family.
#[derive(Debug)]
pub struct Ticker {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts redrawing. A line longer than the width is cut to it.
    pub fn start(mut line: impl FnMut(usize, Duration) -> String + Send + 'static) -> Ticker {
        let done = Arc::new(AtomicBool::new(false));
        // The message is the whole line. Length and position are never set on the bar, so each
        // tick draws once, and never a line that was built for another width.
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(ProgressStyle::with_template("{msg}").expect("valid template"));
        let stop = done.clone();
        let thread = std::thread::Builder::new()
            .name("mimeo-progress".into())
            .spawn(move || {
                let start = Instant::now();
                while !stop.load(Relaxed) {
                    let width = terminal_width();
                    let mut text = line(width, start.elapsed());
                    if let Some((cut, _)) = text.char_indices().nth(width) {
                        text.truncate(cut);
                    }
                    bar.set_message(text);
                    // Parked, not asleep: `finish` wakes it at once, so the line never delays
                    // the end of a run.
                    std::thread::park_timeout(Duration::from_millis(100));
                }
                bar.finish_and_clear();
            })
            .ok();
        Ticker { done, thread }
    }

    /// Clears the line.
    pub fn finish(mut self) {
        self.done.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// The width of the terminal on stderr, read now (`TIOCGWINSZ`). A terminal that reports no
/// width counts as 80 columns, as it does for indicatif, which pads the line to the same width.
fn terminal_width() -> usize {
    match rustix::termios::tcgetwinsize(std::io::stderr()) {
        Ok(ws) if ws.ws_col > 0 && ws.ws_row > 0 => usize::from(ws.ws_col),
        _ => 80,
    }
}

/// Reads the counters once.
fn snapshot(
    control: &dyn Live,
    totals: &Totals,
    meter: &mut Meter,
    now: Instant,
    sync: bool,
) -> Snapshot {
    let by_method = [Method::Clone, Method::Offload, Method::Stream].map(|m| control.bytes_by(m));
    let bytes_done = by_method.iter().sum();
    let entries_done = control.entries_done();
    Snapshot {
        bytes_done,
        bytes_total: totals.bytes.load(Relaxed).max(bytes_done),
        entries_done,
        entries_total: totals.entries.load(Relaxed).max(entries_done),
        scan_complete: totals.complete.load(Relaxed),
        rate: meter.rate(now, bytes_done),
        by_method,
        sync,
    }
}

/// What one redraw shows: plain numbers, so that [`render`] is a pure function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Snapshot {
    bytes_done: u64,
    /// At least `bytes_done`.
    bytes_total: u64,
    entries_done: u64,
    /// At least `entries_done`.
    entries_total: u64,
    /// Whether the totals are final; until then they are lower bounds.
    scan_complete: bool,
    /// Bytes per second over the last few seconds, once there is enough to tell.
    rate: Option<u64>,
    /// Bytes cloned, offloaded and copied (streamed).
    by_method: [u64; 3],
    /// `--sync`: each file is flushed before it counts.
    sync: bool,
}

/// The fields of the line. Declared in the order they appear on the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Field {
    Percent,
    Bar,
    Bytes,
    Rate,
    Eta,
    Entries,
    Methods,
    Flushing,
}

/// The fields from the most to the least important. A narrower terminal drops fields from the
/// end of this list, always in this order, and a field is shown only when every field before
/// it is. The bar first gives up its extra width: it takes only the columns left over by every
/// other field that fits, between [`BAR_MIN`] and [`BAR_MAX`].
///
/// - The percentage is never dropped: it alone tells how far the copy is.
/// - Bytes done of the total, then the ETA and the rate answer "how long still".
/// - Entries: how many files and directories, which the bytes do not tell.
/// - The bar repeats the percentage, but is what the eye finds first.
/// - Bytes by method and the `--sync` note explain the rate; the summary repeats them.
const PRIORITY: [Field; 8] = [
    Field::Percent,
    Field::Bytes,
    Field::Eta,
    Field::Rate,
    Field::Entries,
    Field::Bar,
    Field::Methods,
    Field::Flushing,
];

/// The bar's width with its brackets: at least this, or no bar at all.
const BAR_MIN: usize = 10;
/// The bar's width with its brackets, at most.
const BAR_MAX: usize = 42;

/// The widest a byte count gets in [`bytes`]: `1023 KiB`.
const BYTES_MAX: usize = 8;

/// Builds the progress line for a terminal `width` columns wide: at most `width` columns of
/// printable ASCII, with no trailing spaces. Below 4 columns it is empty.
fn render(width: usize, s: &Snapshot) -> String {
    let mut shown: Vec<(Field, String, usize)> = Vec::new();
    let mut used = 0;
    for field in PRIORITY {
        let (text, reserve) = match field {
            // Drawn last, in the room the others leave.
            Field::Bar => (String::new(), BAR_MIN),
            _ => field_text(field, s),
        };
        if reserve == 0 {
            continue;
        }
        let need = reserve + usize::from(!shown.is_empty());
        if used + need > width {
            break;
        }
        used += need;
        shown.push((field, text, reserve));
    }
    if let Some(bar) = shown.iter_mut().find(|(f, _, _)| *f == Field::Bar) {
        let room = (BAR_MIN + (width - used)).min(BAR_MAX);
        bar.1 = bar_text(room, s);
        bar.2 = room;
    }
    shown.sort_by_key(|(f, _, _)| *f);
    let mut line = String::with_capacity(width);
    for (i, (_, text, reserve)) in shown.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        let _ = write!(line, "{text:<reserve$}");
    }
    line.truncate(line.trim_end().len());
    debug_assert!(line.len() <= width, "{line:?} is wider than {width}");
    // Never wrap, even if a reserve above were too small.
    line.truncate(width);
    line
}

/// One field's text and the columns reserved for it (the widest its text can get).
fn field_text(field: Field, s: &Snapshot) -> (String, usize) {
    let plus = if s.scan_complete { "" } else { "+" };
    match field {
        Field::Percent => (format!("{:>3}%", percent(s)), 4),
        Field::Bytes => (
            format!(
                "{:>BYTES_MAX$}/{}{plus}",
                bytes(s.bytes_done),
                bytes(s.bytes_total)
            ),
            2 * BYTES_MAX + 1 + plus.len(),
        ),
        Field::Rate => {
            let rate = s.rate.map_or_else(|| "-- B".to_owned(), bytes);
            (format!("{rate:>BYTES_MAX$}/s"), BYTES_MAX + 2)
        }
        Field::Eta => {
            let eta = eta(s).map_or_else(|| "--".to_owned(), duration);
            (format!("eta {eta}"), 4 + DURATION_MAX)
        }
        Field::Entries => {
            let digits = s.entries_total.max(s.entries_done).to_string().len();
            (
                format!(
                    "{:>digits$}/{}{plus} entries",
                    s.entries_done, s.entries_total
                ),
                2 * digits + 1 + plus.len() + " entries".len(),
            )
        }
        Field::Methods => {
            let [clone, offload, copy] = s.by_method.map(bytes);
            (
                format!("cloned {clone} offloaded {offload} copied {copy}"),
                "cloned  offloaded  copied ".len() + 3 * BYTES_MAX,
            )
        }
        Field::Flushing => {
            let note = if s.sync { "(flushing each file)" } else { "" };
            (note.to_owned(), note.len())
        }
        Field::Bar => unreachable!("the bar is sized last"),
    }
}

/// Whole percent done, rounded down: 100 only when everything is.
fn percent(s: &Snapshot) -> u64 {
    if s.bytes_total == 0 {
        return if s.scan_complete { 100 } else { 0 };
    }
    (u128::from(s.bytes_done.min(s.bytes_total)) * 100 / u128::from(s.bytes_total)) as u64
}

/// `[=====>    ]`, `width` columns with the brackets.
fn bar_text(width: usize, s: &Snapshot) -> String {
    let inner = width.saturating_sub(2);
    let filled = if s.bytes_total == 0 {
        if s.scan_complete { inner } else { 0 }
    } else {
        let done = s.bytes_done.min(s.bytes_total);
        (u128::from(done) * inner as u128 / u128::from(s.bytes_total)) as usize
    };
    let mut bar = String::with_capacity(width);
    bar.push('[');
    bar.extend(std::iter::repeat_n('=', filled));
    if filled < inner {
        bar.push(if filled > 0 { '>' } else { ' ' });
        bar.extend(std::iter::repeat_n(' ', inner - filled - 1));
    }
    bar.push(']');
    bar
}

/// The time left at the current rate, if there is one.
fn eta(s: &Snapshot) -> Option<Duration> {
    let left = s.bytes_total.saturating_sub(s.bytes_done);
    if left == 0 {
        return Some(Duration::ZERO);
    }
    let rate = s.rate.filter(|&r| r > 0)?;
    Some(Duration::from_secs(left.div_ceil(rate)))
}

/// A byte count in at most [`BYTES_MAX`] columns, with three significant digits: `512 B`,
/// `1.50 KiB`, `12.3 MiB`, `1023 GiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    // Decimals by the rounded value: 9.996 is "10.0", not "10.00".
    let decimals = if value < 9.995 {
        2
    } else if value < 99.95 {
        1
    } else {
        0
    };
    format!("{value:.decimals$} {}", UNITS[unit])
}

/// The widest a duration gets in [`duration`]: `59m59s`, `99h59m`, `99d23h`.
const DURATION_MAX: usize = 6;

/// A duration in at most [`DURATION_MAX`] columns: `42s`, `3m05s`, `2h10m`, `4d03h`, `>99d`.
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    let (m, h, days) = (s / 60, s / 3600, s / 86_400);
    if s < 60 {
        format!("{s}s")
    } else if m < 60 {
        format!("{m}m{:02}s", s % 60)
    } else if h < 100 {
        format!("{h}h{:02}m", m % 60)
    } else if days < 100 {
        format!("{days}d{:02}h", h % 24)
    } else {
        ">99d".to_owned()
    }
}

/// The rate over a sliding window: the bytes done between the oldest sample in the last
/// [`Meter::WINDOW`] and now. Short enough to follow a change of pace, long enough not to jump
/// with each file.
#[derive(Debug, Default)]
struct Meter {
    samples: VecDeque<(Instant, u64)>,
}

impl Meter {
    const WINDOW: Duration = Duration::from_secs(5);
    /// Less history than this gives no rate.
    const MIN_SPAN: Duration = Duration::from_millis(500);

    /// Records `bytes` done at `now` and returns the rate in bytes per second.
    fn rate(&mut self, now: Instant, bytes: u64) -> Option<u64> {
        while self
            .samples
            .get(1)
            .is_some_and(|&(t, _)| now.duration_since(t) >= Self::WINDOW)
        {
            self.samples.pop_front();
        }
        self.samples.push_back((now, bytes));
        let &(t0, b0) = self.samples.front()?;
        let span = now.duration_since(t0);
        if span < Self::MIN_SPAN {
            return None;
        }
        Some((bytes.saturating_sub(b0) as f64 / span.as_secs_f64()) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy under way, with numbers of every size up to `scale`.
    fn snap(scale: u64) -> Snapshot {
        Snapshot {
            bytes_done: scale / 3,
            bytes_total: scale,
            entries_done: scale / 7,
            entries_total: scale,
            scan_complete: false,
            rate: Some(scale / 11),
            by_method: [scale / 5, scale / 13, scale / 17],
            sync: true,
        }
    }

    fn has(line: &str, field: Field) -> bool {
        match field {
            Field::Percent => line.contains('%'),
            Field::Bar => line.contains('['),
            // `5.00 MiB/80.0 MiB`, not the rate's `MiB/s`.
            Field::Bytes => line
                .match_indices("B/")
                .any(|(i, _)| line[i + 2..].starts_with(|c: char| c.is_ascii_digit())),
            Field::Rate => line.contains("/s"),
            Field::Eta => line.contains("eta "),
            Field::Entries => line.contains("entries"),
            Field::Methods => line.contains("cloned "),
            Field::Flushing => line.contains("flushing"),
        }
    }

    /// Display width, counting no escape sequence; the line must have none.
    fn display_width(line: &str) -> usize {
        assert!(
            line.bytes().all(|b| b.is_ascii_graphic() || b == b' '),
            "not printable ASCII: {line:?}"
        );
        line.len()
    }

    fn snapshots() -> Vec<Snapshot> {
        let mut all: Vec<Snapshot> = [0, 1, 999, 1 << 20, 123_456_789_012, u64::MAX]
            .into_iter()
            .map(snap)
            .collect();
        all.push(Snapshot::default());
        all.push(Snapshot {
            scan_complete: true,
            sync: false,
            rate: None,
            ..snap(u64::MAX)
        });
        all.push(Snapshot {
            bytes_done: u64::MAX,
            entries_done: u64::MAX,
            scan_complete: true,
            rate: Some(1),
            ..snap(u64::MAX)
        });
        // Counters ahead of totals that are behind: still within the width.
        all.push(Snapshot {
            bytes_done: u64::MAX,
            bytes_total: 1,
            entries_done: u64::MAX,
            entries_total: 1,
            ..snap(1)
        });
        all
    }

    #[test]
    fn fits_every_width() {
        for s in snapshots() {
            for width in 0..=300 {
                let line = render(width, &s);
                assert!(
                    display_width(&line) <= width,
                    "{} columns at width {width}: {line:?} for {s:?}",
                    line.len()
                );
                assert_eq!(line.trim_end(), line);
                assert_eq!(width >= 4, has(&line, Field::Percent), "{width}: {line:?}");
            }
        }
    }

    #[test]
    fn fields_drop_in_priority_order() {
        for s in snapshots() {
            let mut last = Vec::new();
            for width in (0..=300).rev() {
                let line = render(width, &s);
                let shown: Vec<Field> = PRIORITY.into_iter().filter(|&f| has(&line, f)).collect();
                // A prefix of the priority list, and never more than at a wider width.
                assert_eq!(shown, PRIORITY[..shown.len()], "{width}: {line:?}");
                if !last.is_empty() {
                    assert!(shown.len() <= last.len(), "{width}: {line:?}");
                }
                last = shown;
            }
        }
    }

    #[test]
    fn everything_at_200_columns_and_the_essentials_at_40() {
        let s = Snapshot {
            bytes_done: 5 << 30,
            bytes_total: 80 << 30,
            entries_done: 1234,
            entries_total: 98_765,
            scan_complete: false,
            rate: Some(412 << 20),
            by_method: [3 << 30, 1 << 30, 1 << 30],
            sync: true,
        };
        assert_eq!(
            render(200, &s),
            concat!(
                "  6% [==>                                     ] 5.00 GiB/80.0 GiB+ ",
                " 412 MiB/s eta 3m07s   1234/98765+ entries ",
                "cloned 3.00 GiB offloaded 1.00 GiB copied 1.00 GiB (flushing each file)"
            )
        );
        assert_eq!(
            render(80, &s),
            "  6% [           ] 5.00 GiB/80.0 GiB+  412 MiB/s eta 3m07s   1234/98765+ entries"
        );
        assert_eq!(render(40, &s), "  6% 5.00 GiB/80.0 GiB+ eta 3m07s");
        // At 120 columns the bytes by method no longer fit, and the bar has the room left.
        let line = render(120, &s);
        assert!(line.len() <= 120 && has(&line, Field::Bar), "{line:?}");
    }

    #[test]
    fn the_bar_takes_the_room_left() {
        let s = Snapshot {
            bytes_done: 50,
            bytes_total: 100,
            scan_complete: true,
            ..Snapshot::default()
        };
        // Percent 4, bytes 17, eta 10, rate 10, entries `0/0 entries` 11, and a space each.
        let without_bar = 4 + 1 + 17 + 1 + 10 + 1 + 10 + 1 + 11;
        assert!(!has(&render(without_bar + BAR_MIN, &s), Field::Bar));
        let line = render(without_bar + 1 + BAR_MIN, &s);
        assert!(line.contains(" 50% [====>   ] "), "{line:?}");
        let line = render(300, &s);
        let bar = &line[line.find('[').unwrap()..=line.find(']').unwrap()];
        assert_eq!(bar.len(), BAR_MAX, "{line:?}");
        assert_eq!(&bar[..22], "[====================>");
    }

    #[test]
    fn bars_at_the_ends() {
        let mut s = Snapshot::default();
        assert_eq!(bar_text(10, &s), "[        ]");
        s.scan_complete = true;
        assert_eq!(bar_text(10, &s), "[========]");
        s.bytes_total = 3;
        s.bytes_done = 1;
        assert_eq!(bar_text(10, &s), "[==>     ]");
        s.bytes_done = 3;
        assert_eq!(bar_text(10, &s), "[========]");
        assert_eq!(percent(&s), 100);
        s.bytes_done = 2;
        assert_eq!(percent(&s), 66);
    }

    #[test]
    fn byte_counts_fit_their_columns() {
        for (n, text) in [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.00 KiB"),
            (1536, "1.50 KiB"),
            (10_234, "9.99 KiB"),
            (10_235, "10.0 KiB"),
            (102_348, "99.9 KiB"),
            (102_349, "100 KiB"),
            ((1 << 20) - 1, "1024 KiB"),
            (5 << 30, "5.00 GiB"),
            (u64::MAX, "16.0 EiB"),
        ] {
            assert_eq!(bytes(n), text, "{n}");
        }
        let mut n = 1u64;
        while let Some(next) = n.checked_mul(3) {
            assert!(bytes(n).len() <= BYTES_MAX, "{n}: {}", bytes(n));
            n = next;
        }
    }

    #[test]
    fn durations_fit_their_columns() {
        for (s, text) in [
            (0, "0s"),
            (59, "59s"),
            (60, "1m00s"),
            (3599, "59m59s"),
            (3600, "1h00m"),
            (99 * 3600 + 3599, "99h59m"),
            (100 * 3600, "4d04h"),
            (100 * 86_400 - 1, "99d23h"),
            (100 * 86_400, ">99d"),
            (u64::MAX, ">99d"),
        ] {
            let d = duration(Duration::from_secs(s));
            assert_eq!(d, text, "{s}");
            assert!(d.len() <= DURATION_MAX);
        }
    }

    #[test]
    fn eta_from_the_rate() {
        let mut s = Snapshot {
            bytes_done: 100,
            bytes_total: 1000,
            ..Snapshot::default()
        };
        assert_eq!(eta(&s), None);
        s.rate = Some(0);
        assert_eq!(eta(&s), None);
        s.rate = Some(100);
        assert_eq!(eta(&s), Some(Duration::from_secs(9)));
        s.rate = Some(1000);
        assert_eq!(eta(&s), Some(Duration::from_secs(1)));
        s.bytes_done = 1000;
        s.rate = None;
        assert_eq!(eta(&s), Some(Duration::ZERO));
    }

    #[test]
    fn rate_over_the_window() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut m = Meter::default();
        assert_eq!(m.rate(at(0), 0), None);
        assert_eq!(m.rate(at(100), 1000), None);
        assert_eq!(m.rate(at(1000), 10_000), Some(10_000));
        // Steady at 10 kB/s, then stalled: the window forgets the old pace.
        for ms in (1100..=6000).step_by(100) {
            m.rate(at(ms), ms * 10);
        }
        assert_eq!(m.rate(at(6100), 61_000), Some(10_000));
        for ms in (6200..=11_100).step_by(100) {
            m.rate(at(ms), 61_000);
        }
        assert_eq!(m.rate(at(11_200), 61_000), Some(0));
        assert!(m.samples.len() <= 52, "{}", m.samples.len());
    }
}
