//! `mimeo-du`: how much space trees really use. Parses the command line, runs
//! `mimeo::space::du`, renders its lines, and picks the exit status.

use clap::{ArgAction, ArgMatches, Parser};
use mimeo::space::{DuOptions, DuReport, Progress, SpaceEvent, SpaceObserver, Usage};
use mimeo_cli::family::{self, Page};
use mimeo_cli::output::{self, Json, display};
use mimeo_cli::progress::Ticker;
use mimeo_du::{Units, duration};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

const PROG: &str = "mimeo-du";

const PAGE: Page = Page {
    usages: &["[OPTION]... [PATH]..."],
    exit_status: &[
        ("0", "Every PATH was read."),
        (
            "1",
            "Something could not be read (each is reported), or standard output could not be written.",
        ),
        ("2", "The command line was wrong."),
        (
            "128+N",
            "Stopped by signal N: 130 for SIGINT, 143 for SIGTERM, 141 when the reader of standard output went away.",
        ),
    ],
    examples: &[
        (
            "-sh dir",
            "The space dir uses, in powers of 1024, with one line for dir.",
        ),
        (
            "-c -h a b",
            "The space a and b use, and a total line counting shared bytes once.",
        ),
        (
            "-d 1 --si /srv",
            "Each directory of /srv down to one level, in powers of 1000.",
        ),
        ("--json -s dir", "The same numbers as JSON Lines, in bytes."),
    ],
};

#[derive(Debug, Parser)]
#[command(
    name = "mimeo-du",
    version,
    about = "Show how much space trees really use: total, exclusive and shared bytes.",
    long_about = "Show how much space each PATH (the current directory by default) really \
        uses, from its files' extent maps (FIEMAP): total data, bytes no other file shares \
        (exclusive), bytes shared with other files, each physical byte counted once (shared), \
        and the part of those shared only with files outside the PATHs (outside). The numbers \
        mean what `btrfs filesystem du` means, on btrfs, XFS and any filesystem with FIEMAP; \
        shared is 0 where nothing can be shared (ext4). Holes are not data, a file with \
        several hard links counts once, and extents at no known address (inline data, \
        unwritten data) count as exclusive and are reported. Sizes are in units of 1024 \
        bytes, rounded up, as du shows them, unless -b, -h or --si says otherwise.",
    after_help = "Exit status: 0 all read; 1 something could not be read (each is reported); \
        2 usage error; 130/143 stopped by SIGINT/SIGTERM.",
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true
)]
struct Args {
    /// Report each PATH only (same as --max-depth=0)
    #[arg(short = 's', long)]
    summarize: bool,

    /// Report directories down to N levels below each PATH (default: all)
    #[arg(short = 'd', long, value_name = "N")]
    max_depth: Option<u32>,

    /// Print a total line for all PATHs
    #[arg(short = 'c', long)]
    total: bool,

    /// Sizes in bytes
    #[arg(short = 'b', long, action = ArgAction::SetTrue)]
    bytes: bool,

    /// Sizes in powers of 1024, as 1.5K, 234M, 2.0G
    #[arg(short = 'h', long, action = ArgAction::SetTrue)]
    human_readable: bool,

    /// Sizes in powers of 1000, as 1.5k, 234M, 2.0G
    #[arg(long, action = ArgAction::SetTrue)]
    si: bool,

    /// Sizes in units of 1024 bytes (the default)
    #[arg(short = 'k', action = ArgAction::SetTrue)]
    kibibytes: bool,

    /// Flush unwritten data before reading each extent map, so it counts where it will lie
    #[arg(long)]
    sync: bool,

    #[command(flatten)]
    common: mimeo_du::Common,

    /// Paths to measure (default: the current directory)
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
}

/// The units the last of -k, -b, -h and --si asks for, as in du.
fn units(m: &ArgMatches) -> Units {
    [
        ("kibibytes", Units::Kib),
        ("bytes", Units::Bytes),
        ("human_readable", Units::Human),
        ("si", Units::Si),
    ]
    .into_iter()
    .filter(|(id, _)| m.get_flag(id))
    .max_by_key(|(id, _)| m.index_of(id))
    .map_or(Units::Kib, |(_, u)| u)
}

fn main() -> ExitCode {
    let family::Started { control, stopped } = family::start(PROG);
    let parsed = family::parse_json::<Args>(std::env::args_os().collect(), |message| {
        output::out(&output::error_object("usage", message));
        let mut refused = DuReport::default();
        refused.errors = 1;
        let printer = Printer {
            json: true,
            units: Units::Bytes,
            total: false,
        };
        printer.report(&refused);
    });
    let (mut args, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    if let Some(what) = &args.common.family.generate {
        return family::generate(<Args as clap::CommandFactory>::command(), &PAGE, what);
    }
    if args.paths.is_empty() {
        args.paths.push(PathBuf::from("."));
    }
    let mut opts = DuOptions::default();
    opts.depth = if args.summarize {
        Some(0)
    } else {
        args.max_depth
    };
    opts.one_file_system = args.common.one_file_system;
    opts.sync = args.sync;
    if let Some(j) = args.common.jobs() {
        opts.jobs = j;
    }
    let printer = Printer {
        json: args.common.json,
        units: units(&matches),
        total: args.total,
    };
    if !args.common.json {
        printer.header();
    }
    let progress = Arc::new(Progress::default());
    let ticker = args.common.progress().then(|| {
        let (p, units) = (progress.clone(), printer.units);
        Ticker::start(move |_, t| {
            format!(
                "{PROG}: {} files, {} of data, {}",
                p.files(),
                units.show(p.bytes()),
                duration(t)
            )
        })
    });
    let report = mimeo::space::du_with(&args.paths, &opts, &printer, &control, &progress);
    if let Some(t) = ticker {
        t.finish();
    }
    printer.report(&report);
    family::finish(family::status(&stopped, report.errors > 0))
}

/// Renders lines as they come.
struct Printer {
    json: bool,
    units: Units,
    /// `-c`: a total line.
    total: bool,
}

impl SpaceObserver for Printer {
    fn event(&self, event: SpaceEvent) {
        match event {
            SpaceEvent::Failed(e) => mimeo_du::failed(self.json, &e),
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
        output::out(&format!(
            "{:>10} {:>10} {:>10} {:>10}  Path\n",
            "Total", "Exclusive", "Shared", "Outside"
        ));
    }

    fn line(&self, u: &Usage, name: &str) {
        let opt = |v: Option<u64>| v.map_or("-".to_string(), |b| self.units.show(b));
        output::out(&format!(
            "{:>10} {:>10} {:>10} {:>10}  {name}\n",
            self.units.show(u.total),
            self.units.show(u.exclusive),
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
        if self.total {
            self.line(&r.total, "total");
        }
        if r.total.unknown_extents > 0 {
            output::out(&format!(
                "{} extents ({}) at no known address (inline or unwritten data) are counted \
                 as exclusive\n",
                r.total.unknown_extents,
                self.units.show(r.total.unknown_bytes)
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
