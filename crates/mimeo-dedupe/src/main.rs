//! `mimeo-dedupe`: makes duplicate files share their extents, verified by the kernel.
//! Parses the command line, runs `mimeo::space::dedupe`, renders its events, and picks the
//! exit status.

use clap::Parser;
use indicatif::HumanBytes;
use mimeo::space::{DedupeOptions, DedupeSummary, Phase, Progress, SpaceEvent, SpaceObserver};
use mimeo_cli::family::{self, Page};
use mimeo_cli::output::{self, Json, display, quote};
use mimeo_cli::progress::Ticker;
use mimeo_du::duration;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

const PROG: &str = "mimeo-dedupe";

const PAGE: Page = Page {
    usages: &["[OPTION]... PATH..."],
    exit_status: &[
        (
            "0",
            "Done: files that changed under the run are reported and left alone.",
        ),
        (
            "1",
            "Something could not be read or deduped (each is reported), or standard output could not be written.",
        ),
        ("2", "The command line was wrong."),
        (
            "128+N",
            "Stopped by signal N: 130 for SIGINT, 143 for SIGTERM, 141 when the reader of standard output went away.",
        ),
    ],
    examples: &[
        (
            "-n /srv/images",
            "List the duplicates below /srv/images and what sharing them would save; change nothing.",
        ),
        (
            "-v --min-size 64K a b",
            "Dedupe the files of 64 KiB or more below a and b, one line per file deduped.",
        ),
        (
            "--json /srv",
            "Dedupe below /srv, with JSON Lines of groups, files deduped and a summary.",
        ),
    ],
};

/// A size for people: `1.50 GiB`, or bytes with `raw`.
fn size(bytes: u64, raw: bool) -> String {
    if raw {
        bytes.to_string()
    } else {
        HumanBytes(bytes).to_string()
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "mimeo-dedupe",
    version,
    about = "Make duplicate files share their extents, changing nothing else.",
    long_about = "Find files with the same content below each PATH and make them share their \
        extents, with FIDEDUPERANGE only: the kernel compares every byte before it shares \
        any, so a file that changes meanwhile is left as it is. Content, times, modes, owners \
        and xattrs stay as they were. Files are grouped by size, then by a hash of their \
        first and last blocks, then by a BLAKE3 hash of all of them; files that share all \
        their extents already are not read.",
    after_help = "Exit status: 0 done (files that changed under the run are reported and left \
        alone); 1 something could not be read or deduped (each is reported); 2 usage error; \
        130/143 stopped by SIGINT/SIGTERM.",
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true
)]
struct Args {
    /// List the duplicates and the bytes sharing them would save; change nothing
    #[arg(short = 'n', long)]
    dry_run: bool,

    /// Leave files smaller than SIZE alone (bytes, or with K, M, G: powers of 1024)
    #[arg(long, value_name = "SIZE", default_value = "1", value_parser = parse_size)]
    min_size: u64,

    /// One line per file deduped
    #[arg(short = 'v', long)]
    verbose: bool,

    /// Sizes in bytes (default: powers of 1024, as 1.50 MiB)
    #[arg(short = 'b', long)]
    bytes: bool,

    #[command(flatten)]
    common: mimeo_du::Common,

    /// Trees or files to dedupe
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
}

/// `4096`, `64K`, `1M`, `2G` (powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let (digits, shift) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 10),
        Some((i, 'm' | 'M')) => (&s[..i], 20),
        Some((i, 'g' | 'G')) => (&s[..i], 30),
        _ => (s, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("invalid size '{s}'"))
}

fn main() -> ExitCode {
    let family::Started { control, stopped } = family::start(PROG);
    let parsed = family::parse_json::<Args>(std::env::args_os().collect(), |message| {
        output::out(&output::error_object("usage", message));
        let mut refused = DedupeSummary::default();
        refused.errors = 1;
        let printer = Printer {
            json: true,
            raw: true,
            verbose: false,
            dry_run: false,
        };
        printer.summary(&refused);
    });
    let args = match parsed {
        Ok((args, _)) => args,
        Err(code) => return code,
    };
    if let Some(what) = &args.common.family.generate {
        return family::generate(<Args as clap::CommandFactory>::command(), &PAGE, what);
    }
    if args.paths.is_empty() {
        if args.common.json {
            output::out(&output::error_object("usage", "missing operand"));
        }
        let code = family::usage("missing operand");
        if args.common.json {
            let mut refused = DedupeSummary::default();
            refused.errors = 1;
            Printer {
                json: true,
                raw: true,
                verbose: false,
                dry_run: false,
            }
            .summary(&refused);
        }
        return code;
    }
    let mut opts = DedupeOptions::default();
    opts.min_size = args.min_size;
    opts.one_file_system = args.common.one_file_system;
    opts.dry_run = args.dry_run;
    if let Some(j) = args.common.jobs() {
        opts.jobs = j;
    }
    let printer = Printer {
        json: args.common.json,
        raw: args.bytes,
        verbose: args.verbose,
        dry_run: args.dry_run,
    };
    let progress = Arc::new(Progress::default());
    let ticker = args.common.progress().then(|| {
        let p = progress.clone();
        let raw = args.bytes;
        Ticker::start(move |_, t| progress_line(&p, t, raw))
    });
    let summary = mimeo::space::dedupe(&args.paths, &opts, &printer, &control, &progress);
    if let Some(t) = ticker {
        t.finish();
    }
    printer.summary(&summary);
    family::finish(family::status(&stopped, summary.errors > 0))
}

/// `walking: N files, X` then `comparing: 42% X/Y, R/s, eta T, deduped Z`.
fn progress_line(p: &Progress, t: Duration, raw: bool) -> String {
    match p.phase() {
        Phase::Walking => format!(
            "{PROG}: walking: {} files, {}, {}",
            p.files(),
            size(p.bytes(), raw),
            duration(t)
        ),
        _ => {
            let (done, total) = (p.work_done(), p.work_total().max(1));
            let pct = (done as f64 * 100.0 / total as f64).min(100.0);
            let secs = t.as_secs_f64().max(0.001);
            let rate = done as f64 / secs;
            let eta = if rate > 0.0 && done < total {
                duration(Duration::from_secs_f64((total - done) as f64 / rate))
            } else {
                "-".into()
            };
            format!(
                "{PROG}: comparing: {pct:3.0}% {}/{}, {}/s, eta {eta}, deduped {}",
                size(done, raw),
                size(total, raw),
                size(rate as u64, raw),
                size(p.deduped(), raw)
            )
        }
    }
}

/// Renders events as they come.
struct Printer {
    json: bool,
    raw: bool,
    verbose: bool,
    dry_run: bool,
}

impl SpaceObserver for Printer {
    fn event(&self, event: SpaceEvent) {
        match event {
            SpaceEvent::Failed(e) => mimeo_du::failed(self.json, &e),
            SpaceEvent::Duplicates {
                size: bytes,
                keep,
                targets,
                sharing,
                saves,
            } => {
                if self.json {
                    Json::new("group")
                        .with("size", bytes)
                        .path("keep", &keep)
                        .paths("targets", &targets)
                        .paths("sharing", &sharing)
                        .with("saves", saves)
                        .print();
                } else if self.dry_run || self.verbose {
                    let mut text = format!(
                        "{} files of {}, would save {}:\n  keep {}\n",
                        targets.len() + sharing.len() + 1,
                        size(bytes, self.raw),
                        size(saves, self.raw),
                        display(&keep)
                    );
                    for s in &sharing {
                        text.push_str(&format!("  sharing already {}\n", display(s)));
                    }
                    for t in &targets {
                        text.push_str(&format!("  dedupe {}\n", display(t)));
                    }
                    output::out(&text);
                }
            }
            SpaceEvent::Deduped { path, keep, bytes } => {
                if self.json {
                    Json::new("deduped")
                        .path("path", &path)
                        .path("keep", &keep)
                        .with("bytes", bytes)
                        .print();
                } else if self.verbose {
                    output::out(&format!(
                        "deduped {} onto {} ({})\n",
                        display(&path),
                        display(&keep),
                        size(bytes, self.raw)
                    ));
                }
            }
            SpaceEvent::Skipped { path, keep, reason } => {
                if self.json {
                    let mut j = Json::new("skipped").path("path", &path);
                    if let Some(k) = &keep {
                        j = j.path("keep", k);
                    }
                    j.with("reason", reason.name())
                        .with("errno", reason.errno())
                        .with("message", reason.message())
                        .print();
                }
                let with = keep
                    .map(|k| format!(" with {}", quote(&k)))
                    .unwrap_or_default();
                output::error(&format!(
                    "{} not deduped{with}: {}",
                    quote(&path),
                    reason.message()
                ));
            }
            _ => {}
        }
    }
}

impl Printer {
    fn summary(&self, s: &DedupeSummary) {
        if self.json {
            Json::new("summary")
                .with("files", s.files)
                .with("candidates", s.candidates)
                .with("already_shared", s.already_shared)
                .with("groups", s.groups)
                .with("duplicates", s.duplicates)
                .with("deduped_files", s.deduped_files)
                .with("bytes_read", s.bytes_read)
                .with("bytes_deduped", s.bytes_deduped)
                .with("bytes_saved", s.bytes_saved)
                .with("skipped", s.skipped)
                .with("errors", s.errors)
                .with("dry_run", s.dry_run)
                .with("interrupted", s.interrupted)
                .with("elapsed_s", s.elapsed.as_secs_f64())
                .print();
            return;
        }
        let z = |b| size(b, self.raw);
        let text = if s.dry_run {
            format!(
                "{} files, {} compared ({} sharing already, {} read): {} groups of duplicates; \
                 deduping {} files would save {}\n",
                s.files,
                s.candidates,
                s.already_shared,
                z(s.bytes_read),
                s.groups,
                s.duplicates,
                z(s.bytes_saved)
            )
        } else {
            format!(
                "{} files, {} compared ({} sharing already, {} read): {} groups of duplicates; \
                 {} files deduped, {} deduped, {} saved; {} skipped, {} errors, {}\n",
                s.files,
                s.candidates,
                s.already_shared,
                z(s.bytes_read),
                s.groups,
                s.deduped_files,
                z(s.bytes_deduped),
                z(s.bytes_saved),
                s.skipped,
                s.errors,
                duration(s.elapsed)
            )
        };
        output::out(&text);
    }
}
