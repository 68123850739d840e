//! `mimeo-cat`: `cat` that clones. Parses arguments, runs [`mimeo::concat`], renders errors,
//! progress and a JSON summary, and picks the exit code; the copying is the library's.
//!
//! Exit status: 0 when every part was written; 1 when a part or the output failed (each
//! failure is reported, and the other parts are still written, as with `cat`); 2 for a usage
//! error; 128 + N when stopped by signal N (141 when the reader of the output went away).

use clap::{Parser, ValueEnum};
use mimeo::{Control, Event, Observer, Summary};
use signal_hook::consts::{SIGINT, SIGTERM};
use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

const PROG: &str = "mimeo-cat";
const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;
/// What `cat` exits with when its reader goes away: killed by SIGPIPE.
const EXIT_BROKEN_PIPE: u8 = 128 + 13;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum When {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Parser)]
#[command(
    name = PROG,
    version,
    about = "Concatenate files, cloning what the filesystem can share.",
    long_about = "Write the concatenation of the PARTs to standard output, or to OUT.\n\n\
        Where the output is a regular file on the filesystem of a part, each part that starts \
        at a block-aligned offset of the output is cloned (its extents shared, whole or up to \
        its unaligned tail), so reassembling `split -b 1G` pieces costs no data. Everything \
        else is copied inside the kernel where possible (copy_file_range, or splice into a \
        pipe), and read and written otherwise. Where a part's bytes must be read, the blocks \
        it shares with another file (its origin, recorded by `mimeo --record-origin`, or an \
        earlier part) are read through that file's page cache. The bytes are always those \
        cat would write.",
    override_usage = "mimeo-cat [OPTIONS] [PART]... > OUT\n       mimeo-cat [OPTIONS] -o OUT [PART]...",
    after_long_help = "With no PART, or where PART is -, standard input is read."
)]
struct Args {
    /// Write to OUT (created, or truncated) instead of standard output
    #[arg(short = 'o', long, value_name = "OUT")]
    output: Option<PathBuf>,

    /// Print a JSON summary with the bytes cloned and copied (and errors as JSON lines): on
    /// standard output with -o, else on standard error
    #[arg(long)]
    json: bool,

    /// Show a progress bar on stderr: auto (when stderr is a terminal), always, never
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "always", default_value = "auto")]
    progress: When,

    /// Read every byte from its own part, never through another file that holds the same
    /// blocks (for measurements)
    #[arg(long, hide = true)]
    no_shared_reads: bool,

    /// The files to concatenate, in order; - is standard input
    #[arg(value_name = "PART")]
    parts: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let control = Arc::new(Control::new());
    let stopped = Arc::new(AtomicI32::new(0));
    if let Err(e) = install_signals(control.clone(), stopped.clone()) {
        error(&format!("cannot install signal handlers: {e}"));
    }
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            usage_error(&clap_message(&e));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let parts = if args.parts.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.parts.clone()
    };
    let json_on_stdout = args.output.is_some();
    let printer = Printer {
        json: args.json,
        json_on_stdout,
        out_name: args
            .output
            .clone()
            .unwrap_or_else(|| PathBuf::from("standard output")),
        broken_pipe: AtomicBool::new(false),
    };
    let stdout = std::io::stdout();
    let opened;
    let out_fd = match &args.output {
        Some(path) => match open_output(path, &parts) {
            Ok(f) => {
                opened = f;
                opened.as_fd()
            }
            Err(errors) => {
                let mut summary = Summary::default();
                summary.errors = errors.len() as u64;
                for err in errors {
                    printer.event(Event::Failed(err));
                }
                if args.json {
                    printer.json_line(&summary_json(&summary));
                }
                return ExitCode::from(EXIT_FAILED);
            }
        },
        None => stdout.as_fd(),
    };
    let out_name = printer.out_name.clone();
    let show_progress = match args.progress {
        When::Always => true,
        When::Never => false,
        When::Auto => std::io::stderr().is_terminal(),
    };
    let bar = show_progress.then(|| Progress::start(&parts, control.clone()));
    let mut options = mimeo::ConcatOptions::default();
    options.shared_reads = !args.no_shared_reads;
    let summary = mimeo::concat_with(&parts, out_fd, &out_name, &options, &printer, &control);
    if let Some(bar) = bar {
        bar.finish();
    }
    if args.json {
        printer.json_line(&summary_json(&summary));
    }
    let signal = stopped.load(Ordering::SeqCst);
    if signal != 0 {
        ExitCode::from((128 + signal) as u8)
    } else if printer.broken_pipe.load(Ordering::SeqCst) {
        ExitCode::from(EXIT_BROKEN_PIPE)
    } else if summary.errors > 0 {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// Opens OUT for `-o`: created if absent, and truncated only once no part is OUT itself.
/// A part that is OUT (by its name, a hard or symbolic link, or as standard input) with
/// bytes left to read is refused, as `cat` refuses it, before anything is written: OUT is
/// then left as it was. Returns those refusals, or the failure to open OUT.
fn open_output(path: &Path, parts: &[PathBuf]) -> Result<std::fs::File, Vec<mimeo::Error>> {
    let fail = |op, e: &std::io::Error| vec![mimeo::Error::io(op, path, e)];
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .open(path)
        .map_err(|e| fail(mimeo::Op::Create, &e))?;
    let out = file.metadata().map_err(|e| fail(mimeo::Op::Stat, &e))?;
    // Only a regular output with bytes in it has something to lose (a new one has none), so
    // only then are the parts looked at first.
    if !out.is_file() || out.len() == 0 {
        return Ok(file);
    }
    let refused: Vec<_> = parts
        .iter()
        .filter(|part| is_output(part, &out))
        .map(|part| mimeo::Error::refused(mimeo::Op::Refuse, part, mimeo::Refusal::InputIsOutput))
        .collect();
    if !refused.is_empty() {
        return Err(refused);
    }
    // Not O_TRUNC at open: only now is it known that no part is lost by truncating. (A
    // FIFO or device is not truncated: O_TRUNC would not have either.)
    file.set_len(0).map_err(|e| fail(mimeo::Op::Write, &e))?;
    Ok(file)
}

/// Whether `part` is the regular file `out` with bytes left to read: cat's test of an
/// input that is its output (`-` is standard input, read from its offset).
fn is_output(part: &Path, out: &std::fs::Metadata) -> bool {
    use std::io::Seek;
    use std::os::unix::fs::MetadataExt;
    let (meta, at) = if part.as_os_str() == "-" {
        let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() else {
            return false;
        };
        let mut file = std::fs::File::from(fd);
        match (file.metadata(), file.stream_position()) {
            (Ok(m), Ok(at)) => (m, at),
            _ => return false,
        }
    } else {
        match std::fs::metadata(part) {
            Ok(m) => (m, 0),
            Err(_) => return false, // reported when the part is read
        }
    };
    meta.is_file() && meta.dev() == out.dev() && meta.ino() == out.ino() && at < meta.size()
}

/// Turns the first SIGINT or SIGTERM into a stop request; a second one ends the process.
fn install_signals(control: Arc<Control>, stopped: Arc<AtomicI32>) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("mimeo-cat-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if stopped.swap(sig, Ordering::SeqCst) != 0 {
                    std::process::exit(128 + sig);
                }
                control.stop();
            }
        })?;
    Ok(())
}

/// Renders the engine's events: cp-style messages on stderr, and JSON error lines.
struct Printer {
    json: bool,
    json_on_stdout: bool,
    out_name: PathBuf,
    /// The output's reader went away: stop quietly, as cat does (killed by SIGPIPE).
    broken_pipe: AtomicBool,
}

impl Printer {
    fn json_line(&self, line: &str) {
        if self.json_on_stdout {
            let _ = std::io::stdout().lock().write_all(line.as_bytes());
        } else {
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }
}

impl Observer for Printer {
    fn event(&self, event: Event) {
        if let Event::Failed(err) = event {
            if err.errno() == Some(libc_epipe()) && err.path == self.out_name {
                self.broken_pipe.store(true, Ordering::SeqCst);
                return;
            }
            if self.json {
                let line = serde_json::json!({
                    "type": "error",
                    "path": display(&err.path),
                    "operation": err.op.name(),
                    "message": err.to_string(),
                    "errno": err.errno(),
                });
                self.json_line(&format!("{line}\n"));
            }
            error(&err.to_string());
        }
    }
}

/// EPIPE, without a libc dependency for one number.
fn libc_epipe() -> i32 {
    std::io::Error::from(std::io::ErrorKind::BrokenPipe)
        .raw_os_error()
        .unwrap_or(32)
}

/// The JSON summary: parts written, bytes in all, how many of them were cloned (share
/// extents with their part) and copied, and how many were read through a canonical file
/// (`shared_read_bytes`, as in mimeo's summary). Field names are stable.
fn summary_json(s: &Summary) -> String {
    let line = serde_json::json!({
        "type": "summary",
        "parts": s.files,
        "bytes": s.bytes,
        "cloned": s.clone_bytes,
        "copied": s.offload_bytes + s.stream_bytes,
        "by_method": {
            "clone": s.clone_bytes,
            "offload": s.offload_bytes,
            "stream": s.stream_bytes,
        },
        "shared_read_bytes": s.shared_read_bytes,
        "errors": s.errors,
        "interrupted": s.interrupted,
        "elapsed_s": s.elapsed.as_secs_f64(),
    });
    format!("{line}\n")
}

/// A progress bar on stderr: bytes written of the parts' total, rate, ETA, and how much was
/// cloned and copied so far.
struct Progress {
    done: Arc<AtomicBool>,
    ticker: std::thread::JoinHandle<()>,
}

impl Progress {
    fn start(parts: &[PathBuf], control: Arc<Control>) -> Progress {
        let total: u64 = parts
            .iter()
            .filter(|p| p.as_os_str() != "-")
            .filter_map(|p| std::fs::metadata(p).ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum();
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr_with_hz(10),
        );
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{percent:>3}% [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta} {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let ticker = std::thread::spawn(move || {
            loop {
                let cloned = control.bytes_by(mimeo::Method::Clone);
                bar.set_position(control.bytes_done());
                bar.set_message(format!(
                    "cloned {} copied {}",
                    indicatif::HumanBytes(cloned),
                    indicatif::HumanBytes(control.bytes_done() - cloned)
                ));
                if stop.load(Ordering::SeqCst) {
                    bar.finish_and_clear();
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Progress { done, ticker }
    }

    fn finish(self) {
        self.done.store(true, Ordering::SeqCst);
        let _ = self.ticker.join();
    }
}

fn error(message: &str) {
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("{PROG}: {message}\n").as_bytes());
}

fn usage_error(message: &str) {
    let _ = std::io::stderr().lock().write_all(
        format!("{PROG}: {message}\nTry '{PROG} --help' for more information.\n").as_bytes(),
    );
}

/// A clap error as one line, without clap's "error:" and usage.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

fn display(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = p.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.escape_ascii().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Args::command().debug_assert();
    }
}
