//! `mimeo-cat`: `cat` that clones. Parses arguments, runs [`mimeo::concat`], renders errors,
//! progress and a JSON summary, and picks the exit code; the copying is the library's.
//!
//! Exit status: 0 when every part was written; 1 when a part or the output failed (each
//! failure is reported, and the other parts are still written, as with `cat`); 2 for a usage
//! error; 128 + N when stopped by signal N (141 when the reader of the output went away).

use clap::Parser;
use mimeo::{Event, Observer, Summary};
use mimeo_cli::family::{self, Page};
use mimeo_cli::output::{self, Json};
use mimeo_cli::{EXIT_FAILED, signals};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

const PROG: &str = "mimeo-cat";

const PAGE: Page = Page {
    usages: &[
        "[OPTION]... [PART]... > OUT",
        "[OPTION]... -o OUT [PART]...",
    ],
    exit_status: &[
        ("0", "Every part was written."),
        (
            "1",
            "A part or the output failed (each failure is reported, and the other parts are still written, as with cat).",
        ),
        ("2", "The command line was wrong."),
        (
            "128+N",
            "Stopped by signal N: 130 for SIGINT, 143 for SIGTERM, 141 when the reader of the output went away.",
        ),
    ],
    examples: &[
        (
            "-o big.img big.img.part*",
            "Reassemble the pieces of split -b 1G into big.img, sharing their blocks where the filesystem can.",
        ),
        ("a b > c", "Write a then b into c, as cat does."),
        (
            "--json -o out a b",
            "The same, with a JSON summary of the bytes cloned and copied on stdout.",
        ),
    ],
};

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
    after_long_help = "With no PART, or where PART is -, standard input is read.",
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true
)]
struct Args {
    /// Write to OUT (created, or truncated) instead of standard output
    #[arg(short = 'o', long, value_name = "OUT")]
    output: Option<PathBuf>,

    /// Print JSON Lines: an object per error, then a summary with the bytes cloned and
    /// copied; on standard output with -o, else on standard error, in place of the messages
    #[arg(long)]
    json: bool,

    /// Read every byte from its own part, never through another file that holds the same
    /// blocks (for measurements)
    #[arg(long)]
    no_shared_reads: bool,

    #[command(flatten)]
    common: family::FamilyOptions,

    /// The files to concatenate, in order; - is standard input
    #[arg(value_name = "PART")]
    parts: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let family::Started { control, stopped } = family::start(PROG);
    let argv: Vec<_> = std::env::args_os().collect();
    // With --json, a usage error is an error object in the JSON stream, then a summary.
    let json_asked = family::json_asked(&argv);
    output::errors_as_json(json_asked);
    let parsed = family::parse_json::<Args>(argv, |_| {
        output::err_line(&summary_json(&failed_summary()));
    });
    let args = match parsed {
        Ok((args, _)) => args,
        Err(code) => return code,
    };
    output::errors_as_json(false);
    if let Some(what) = &args.common.generate {
        return family::generate(<Args as clap::CommandFactory>::command(), &PAGE, what);
    }
    let parts = if args.parts.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.parts.clone()
    };
    let printer = Printer {
        json: args.json,
        json_on_stdout: args.output.is_some(),
        out_name: PathBuf::from("standard output"),
        write_error: Mutex::new(None),
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
                for err in &errors {
                    printer.failed(err);
                }
                return printer.end(&summary, EXIT_FAILED);
            }
        },
        None if output::stdout_closed() => {
            // As cat: nothing is read when there is nowhere to write.
            printer.say("standard output: Bad file descriptor");
            return printer.end(&failed_summary(), EXIT_FAILED);
        }
        None => stdout.as_fd(),
    };
    let out_name = args.output.clone().unwrap_or(printer.out_name.clone());
    let printer = Printer {
        out_name,
        ..printer
    };
    let bar = args.common.progress().then(|| {
        mimeo_cli::progress::Progress::start_known(
            total(&parts),
            parts.len() as u64,
            control.clone(),
        )
    });
    let mut options = mimeo::ConcatOptions::default();
    options.shared_reads = !args.no_shared_reads;
    let summary = mimeo::concat_with(
        &parts,
        out_fd,
        &printer.out_name,
        &options,
        &printer,
        &control,
    );
    if let Some(bar) = bar {
        bar.finish();
    }
    let code = family::status(&stopped, summary.errors > 0);
    printer.end(&summary, code)
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
        // Truncated below, once no part is OUT.
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

/// The bytes of the parts that are regular files: the progress line's total.
fn total(parts: &[PathBuf]) -> u64 {
    parts
        .iter()
        .filter(|p| p.as_os_str() != "-")
        .filter_map(|p| std::fs::metadata(p).ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// The summary of a run that failed before writing anything.
fn failed_summary() -> Summary {
    let mut summary = Summary::default();
    summary.errors = 1;
    summary
}

/// Renders the engine's events: cp-style messages on stderr, or with `--json` error objects
/// in the JSON stream (on stderr without -o, where no plain line may then go).
struct Printer {
    json: bool,
    json_on_stdout: bool,
    out_name: PathBuf,
    /// The first error writing standard output other than EPIPE: reported once, as cat's
    /// "write error".
    write_error: Mutex<Option<i32>>,
}

impl Printer {
    fn json_line(&self, line: &str) {
        if self.json_on_stdout {
            output::out(line);
        } else {
            output::err_line(line);
        }
    }

    /// A failure about the output: `mimeo-cat: message` on stderr, and with `--json` an
    /// error object in the JSON stream (only that when the stream is on stderr).
    fn say(&self, message: &str) {
        if self.json {
            self.json_line(&output::error_object("output", message));
        }
        if !self.json || self.json_on_stdout {
            output::error(message);
        }
    }

    fn failed(&self, err: &mimeo::Error) {
        if self.json {
            self.json_line(&output::error_json(err).line());
        }
        if !self.json || self.json_on_stdout {
            output::error(&err.cat_sentence());
        }
    }

    /// The end of the run: `write error` if standard output failed, the JSON summary last,
    /// and the exit status.
    fn end(&self, summary: &Summary, code: u8) -> ExitCode {
        if let Some(errno) = *self.write_error.lock().unwrap_or_else(|e| e.into_inner()) {
            let e = std::io::Error::from_raw_os_error(errno);
            let text = e.to_string();
            let text = text.split(" (os error").next().unwrap_or_default();
            self.say(&format!("write error: {text}"));
        }
        if self.json {
            self.json_line(&summary_json(summary));
        }
        family::finish(code)
    }
}

impl Observer for Printer {
    fn event(&self, event: Event) {
        let Event::Failed(err) = event else { return };
        if err.path == self.out_name && !self.json_on_stdout && err.op == mimeo::Op::Write {
            match err.errno() {
                Some(e) if e == libc_epipe() => signals::stop_as(signals::SIGPIPE),
                Some(e) => {
                    let mut first = self.write_error.lock().unwrap_or_else(|e| e.into_inner());
                    first.get_or_insert(e);
                }
                None => self.failed(&err),
            }
            return;
        }
        self.failed(&err);
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
    Json::new("summary")
        .with("parts", s.files)
        .with("bytes", s.bytes)
        .with("cloned", s.clone_bytes)
        .with("copied", s.offload_bytes + s.stream_bytes)
        .with(
            "by_method",
            serde_json::json!({
                "clone": s.clone_bytes,
                "offload": s.offload_bytes,
                "stream": s.stream_bytes,
            }),
        )
        .with("shared_read_bytes", s.shared_read_bytes)
        .with("errors", s.errors)
        .with("interrupted", s.interrupted)
        .with("elapsed_s", s.elapsed.as_secs_f64())
        .line()
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
