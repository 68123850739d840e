//! Terminal helpers of the `mimeo-du` and `mimeo-dedupe` commands: the stop switch behind
//! SIGINT/SIGTERM, a progress line redrawn from the engine's live counters, sizes for people,
//! and JSON Lines. The commands stay thin: they parse, call `mimeo::space`, and render.

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use mimeo::Control;
use serde_json::Value;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Exit status: some entry failed (each was reported).
pub const EXIT_FAILED: u8 = 1;
/// Exit status: the command line was wrong.
pub const EXIT_USAGE: u8 = 2;

/// The signal that stopped the run, if one did: `mimeo`'s own stop switch.
pub use mimeo_cli::signals::Stopped;

/// Turns the first SIGINT or SIGTERM into `control.stop()`; a second one exits at once.
///
/// # Errors
///
/// When the handlers cannot be installed.
pub fn on_signals(control: Arc<Control>) -> std::io::Result<Arc<Stopped>> {
    let stopped = Arc::new(Stopped::default());
    mimeo_cli::signals::install(control, stopped.clone())?;
    Ok(stopped)
}

/// The options both commands take.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// Do not descend into directories on other filesystems
    #[arg(short = 'x', long)]
    pub one_file_system: bool,

    /// Sizes in bytes (default: human-readable, powers of 1024)
    #[arg(short = 'b', long)]
    pub bytes: bool,

    /// JSON Lines on stdout, with stable field names
    #[arg(long)]
    pub json: bool,

    /// Progress line on stderr: auto (when stderr is a terminal), always or never
    #[arg(long, value_name = "WHEN", default_value = "auto",
          value_parser = ["auto", "always", "never"])]
    pub progress: String,

    /// Number of workers (default: four per CPU, from 4 to 16)
    #[arg(short = 'j', long, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

impl Common {
    /// Whether to draw a progress line.
    pub fn progress(&self) -> bool {
        want_progress(&self.progress)
    }

    /// The number of workers asked for, if any.
    pub fn jobs(&self) -> Option<usize> {
        self.jobs.map(usize::from)
    }
}

/// A command that has started: its arguments, and the stop switch SIGINT/SIGTERM turn.
#[derive(Debug)]
pub struct Started<A> {
    /// The parsed command line.
    pub args: A,
    /// Stopped by the first SIGINT or SIGTERM.
    pub control: Arc<Control>,
    /// Which signal stopped the run (none when the handlers could not be installed).
    pub stopped: Option<Arc<Stopped>>,
}

/// The start of a command: SIGINT/SIGTERM turned into a stop, and the command line parsed.
/// `Err` holds the exit status when there is nothing more to do (`--help`, `--version`, a
/// usage error, already printed).
pub fn start<A: clap::Parser>(prog: &str) -> Result<Started<A>, ExitCode> {
    let control = Arc::new(Control::new());
    let stopped = match on_signals(control.clone()) {
        Ok(s) => Some(s),
        Err(e) => {
            warn(prog, &format!("cannot install signal handlers: {e}"));
            None
        }
    };
    match A::try_parse() {
        Ok(args) => Ok(Started {
            args,
            control,
            stopped,
        }),
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            Err(ExitCode::from(code))
        }
    }
}

/// The exit status at the end: 128 + the signal that stopped the run, 1 after errors, else 0.
pub fn exit_code(stopped: Option<&Stopped>, errors: u64) -> ExitCode {
    if let Some(code) = stopped.and_then(|s| s.exit_code()) {
        ExitCode::from(code)
    } else if errors > 0 {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// Whether to draw a progress line: `--progress=always|never|auto` (auto: when stderr is a
/// terminal).
pub fn want_progress(when: &str) -> bool {
    match when {
        "always" => true,
        "never" => false,
        _ => std::io::stderr().is_terminal(),
    }
}

/// A line on stderr, redrawn ten times a second from `line(elapsed)` until [`Ticker::finish`].
#[derive(Debug)]
pub struct Ticker {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts redrawing.
    pub fn start(line: impl Fn(Duration) -> String + Send + 'static) -> Ticker {
        let done = Arc::new(AtomicBool::new(false));
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(ProgressStyle::with_template("{msg}").expect("valid template"));
        let stop = done.clone();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let start = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    bar.set_message(line(start.elapsed()));
                    std::thread::park_timeout(Duration::from_millis(100));
                }
                bar.finish_and_clear();
            })
            .ok();
        Ticker { done, thread }
    }

    /// Clears the line.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// A size for people: `1.50 GiB`, or bytes with `raw`.
pub fn size(bytes: u64, raw: bool) -> String {
    if raw {
        bytes.to_string()
    } else {
        HumanBytes(bytes).to_string()
    }
}

/// A duration as `1m05s` or `4.2s`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// A path as text; bytes that are not UTF-8 are shown escaped.
pub fn display(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.escape_ascii().to_string(),
    }
}

/// Builds one JSON Lines object, fields in the order given.
#[derive(Debug, Default)]
pub struct Json(Vec<(&'static str, Value)>);

impl Json {
    /// An object whose `type` is `kind`.
    pub fn new(kind: &str) -> Json {
        Json::default().with("type", kind)
    }

    /// Adds a field.
    pub fn with(mut self, key: &'static str, value: impl Into<Value>) -> Json {
        self.0.push((key, value.into()));
        self
    }

    /// Adds a path field.
    pub fn path(self, key: &'static str, path: &Path) -> Json {
        self.with(key, display(path))
    }

    /// Prints it as one line on stdout.
    pub fn print(self) {
        out(&(self.line() + "\n"));
    }

    /// The object as one line of text.
    pub fn line(&self) -> String {
        let fields: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{}:{v}", Value::from(*k)))
            .collect();
        format!("{{{}}}", fields.join(","))
    }
}

/// The object of an engine failure: `{"type":"error","path","operation","message","errno"}`.
pub fn error_json(e: &mimeo::Error) -> Json {
    Json::new("error")
        .path("path", &e.path)
        .with("operation", e.op.name())
        .with("message", e.to_string())
        .with("errno", e.errno())
}

/// Reports an engine failure: its sentence on stderr, and its JSON object on stdout with
/// `json`.
pub fn failed(prog: &str, json: bool, e: &mimeo::Error) {
    if json {
        error_json(e).print();
    }
    warn(prog, &e.to_string());
}

/// Writes to stdout; a reader that went away is not an error.
pub fn out(s: &str) {
    let _ = std::io::stdout().lock().write_all(s.as_bytes());
}

/// Prints `prog: message` on stderr.
pub fn warn(prog: &str, message: &str) {
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("{prog}: {message}\n").as_bytes());
}
