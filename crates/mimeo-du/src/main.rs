//! `mimeo-du`: how much space trees really use. Parses the command line, runs
//! `mimeo::space::du`, renders its lines, and picks the exit status.

use clap::Parser;
use mimeo::space::{DuOptions, DuReport, Progress, SpaceEvent, SpaceObserver, Usage};
use mimeo_du::{Json, Ticker, display, duration, size};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

const PROG: &str = "mimeo-du";

#[derive(Debug, Parser)]
#[command(
    name = "mimeo-du",
    version,
    about = "Show how much space trees really use: total, exclusive and shared bytes.",
    long_about = "Show how much space each PATH really uses, from its files' extent maps \
        (FIEMAP): total data, bytes no other file shares (exclusive), bytes shared with \
        other files, each physical byte counted once (shared), and the part of those shared \
        only with files outside the PATHs (outside). The numbers mean what \
        `btrfs filesystem du` means, on btrfs, XFS and any filesystem with FIEMAP; shared is \
        0 where nothing can be shared (ext4). Holes are not data, a file with several hard \
        links counts once, and extents at no known address (inline data, unwritten data) \
        count as exclusive and are reported.",
    after_help = "Exit status: 0 all read; 1 something could not be read (each is reported); \
        2 usage error; 130/143 stopped by SIGINT/SIGTERM."
)]
struct Args {
    /// Report each PATH only (same as --depth 0)
    #[arg(short = 's', long)]
    summarize: bool,

    /// Report directories down to N levels below each PATH (default: all)
    #[arg(short = 'd', long, value_name = "N")]
    depth: Option<u32>,

    /// Flush unwritten data before reading each extent map, so it counts where it will lie
    #[arg(long)]
    sync: bool,

    #[command(flatten)]
    common: mimeo_du::Common,

    /// Paths to measure
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let mimeo_du::Started {
        args,
        control,
        stopped,
    } = match mimeo_du::start::<Args>(PROG) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let mut opts = DuOptions::default();
    opts.depth = if args.summarize { Some(0) } else { args.depth };
    opts.one_file_system = args.common.one_file_system;
    opts.sync = args.sync;
    if let Some(j) = args.common.jobs() {
        opts.jobs = j;
    }
    let printer = Printer {
        json: args.common.json,
        raw: args.common.bytes,
    };
    if !args.common.json {
        printer.header();
    }
    let progress = Arc::new(Progress::default());
    let ticker = args.common.progress().then(|| {
        let p = progress.clone();
        let raw = args.common.bytes;
        Ticker::start(move |t| {
            format!(
                "{PROG}: {} files, {} of data, {}",
                p.files(),
                size(p.bytes(), raw),
                duration(t)
            )
        })
    });
    let report = mimeo::space::du_with(&args.paths, &opts, &printer, &control, &progress);
    if let Some(t) = ticker {
        t.finish();
    }
    printer.report(&report);
    mimeo_du::exit_code(stopped.as_deref(), report.errors)
}

/// Renders lines as they come.
struct Printer {
    json: bool,
    raw: bool,
}

impl SpaceObserver for Printer {
    fn event(&self, event: SpaceEvent) {
        match event {
            SpaceEvent::Failed(e) => mimeo_du::failed(PROG, self.json, &e),
            SpaceEvent::Directory { path, depth, usage } => {
                if self.json {
                    usage_json("directory", Some(&path), &usage)
                        .with("depth", depth)
                        .print();
                } else {
                    self.line(&usage, &display(&path));
                }
            }
            _ => {}
        }
    }
}

impl Printer {
    fn header(&self) {
        mimeo_du::out(&format!(
            "{:>10} {:>10} {:>10} {:>10}  Path\n",
            "Total", "Exclusive", "Shared", "Outside"
        ));
    }

    fn line(&self, u: &Usage, name: &str) {
        let opt = |v: Option<u64>| v.map_or("-".to_string(), |b| size(b, self.raw));
        mimeo_du::out(&format!(
            "{:>10} {:>10} {:>10} {:>10}  {name}\n",
            size(u.total, self.raw),
            size(u.exclusive, self.raw),
            opt(u.shared),
            opt(u.shared_outside),
        ));
    }

    fn report(&self, r: &DuReport) {
        if self.json {
            for (path, usage) in &r.paths {
                usage_json("path", Some(path), usage).print();
            }
            usage_json("total", None, &r.total)
                .with("errors", r.errors)
                .with("interrupted", r.interrupted)
                .with("elapsed_s", r.elapsed.as_secs_f64())
                .print();
            return;
        }
        for (path, usage) in &r.paths {
            self.line(usage, &display(path));
        }
        if r.paths.len() > 1 {
            self.line(&r.total, "total");
        }
        if r.total.unknown_extents > 0 {
            mimeo_du::out(&format!(
                "{} extents ({}) at no known address (inline or unwritten data) are counted \
                 as exclusive\n",
                r.total.unknown_extents,
                size(r.total.unknown_bytes, self.raw)
            ));
        }
    }
}

/// `{"type":kind,"path":…,"total":…,"exclusive":…,"shared":…,"shared_outside":…,
/// "unknown_extents":…,"unknown_bytes":…,"files":…}`; the shared fields only where known.
fn usage_json(kind: &str, path: Option<&std::path::Path>, u: &Usage) -> Json {
    let mut j = Json::new(kind);
    if let Some(p) = path {
        j = j.path("path", p);
    }
    j = j.with("total", u.total).with("exclusive", u.exclusive);
    if let (Some(s), Some(o)) = (u.shared, u.shared_outside) {
        j = j.with("shared", s).with("shared_outside", o);
    }
    j.with("unknown_extents", u.unknown_extents)
        .with("unknown_bytes", u.unknown_bytes)
        .with("files", u.files)
}
