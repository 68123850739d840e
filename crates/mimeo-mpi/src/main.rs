//! `mimeo-mpi`: one copy spread over the ranks of an MPI job (`mpirun -np N mimeo-mpi
//! [OPTION]... SOURCE... DEST`, or `srun`), on a filesystem every rank sees.
//!
//! Every rank parses the same command line as `mimeo`. Rank 0 resolves the targets, creates
//! the destination roots and hands every rank the resolved pairs, the sources named twice as
//! cp counts them, the roots that follow another to its destination, and the initial work
//! items; the other ranks open the same roots. Work then spreads by stealing (`sched`), hard-link
//! groups are kept by their owner rank (`links`), and at the end rank 0 merges every rank's
//! summary, prints it as `mimeo` does and gives the job's exit status to every rank.

mod links;
mod msg;
mod ranges;
mod sched;

use links::DistLinks;
use mimeo::work::{Executor, Named, WorkItem};
use mimeo::{CopyPair, Scheduler, Summary};
use mimeo_cli::config::{Config, ConfigError};
use mimeo_cli::{EXIT_FAILED, EXIT_USAGE, args, config, exit_code, output, progress, signals};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use ranges::DistRanges;
use sched::{AllLive, MpiScheduler, Net};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What rank 0 tells every rank once it has read the command line.
#[derive(Debug, Serialize, Deserialize)]
enum Start {
    /// Nothing to copy: every rank exits with this status.
    Exit(u8),
    /// A dry run, done by rank 0 alone.
    DryRun,
    /// Copy: the resolved pairs (as bytes), the sources cp counts as named (for its "specified
    /// more than once" rules, whichever rank meets them), the roots that follow each root to
    /// its destination (run with it, wherever it runs) and the initial items.
    Copy {
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
        named: Box<Named>,
        followers: Vec<Vec<u32>>,
        items: Vec<WorkItem>,
    },
}

fn main() -> ExitCode {
    let control = Arc::new(mimeo::Control::new());
    let stopped = Arc::new(signals::Stopped::default());
    if let Err(e) = signals::install(control.clone(), stopped.clone()) {
        output::error(&format!("cannot install signal handlers: {e}"));
    }
    output::set_prog("mimeo-mpi");
    let Some((universe, _)) = mpi::initialize_with_threading(mpi::Threading::Funneled) else {
        output::error("cannot initialize MPI");
        return ExitCode::from(EXIT_FAILED);
    };
    let world = universe.world();
    let code = run(&world, control, &stopped);
    drop(universe);
    ExitCode::from(code)
}

/// The size of the ranges large files are split into across ranks, unless `--split` says
/// otherwise: files of twice this size or more are shared out (a clone is tried first, and
/// is never split).
const SPLIT: u64 = 256 << 20;

/// How long a rank may stay silent before the run is given up: `MIMEO_MPI_TIMEOUT` seconds,
/// 10 by default.
fn timeout() -> Duration {
    let secs = std::env::var("MIMEO_MPI_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(10);
    Duration::from_secs(secs.max(1))
}

fn run(world: &SimpleCommunicator, control: Arc<mimeo::Control>, stopped: &signals::Stopped) -> u8 {
    let rank = world.rank();
    let lead = rank == 0;
    let parsed = match args::parse(output::prog(), std::env::args_os().collect()) {
        Ok(a) => Ok(a),
        Err(args::Stop::Display(help)) => {
            if lead {
                let _ = help.print();
            }
            return 0;
        }
        Err(args::Stop::Usage(message)) => Err(message),
    };
    let args = match parsed {
        Ok(a) => a,
        Err(message) => {
            if lead {
                output::usage_error(&message);
            }
            return EXIT_USAGE;
        }
    };
    if args.interactive_last {
        // Only rank 0 gets mpirun's standard input: the other ranks could not ask, and would
        // take every question as a no.
        if lead {
            output::usage_error("-i/--interactive is not supported: only rank 0 has a terminal");
        }
        return EXIT_USAGE;
    }
    let split_given = args.split.is_some();
    if lead {
        for warning in config::warnings(&args) {
            output::error(&warning);
        }
    }
    // Every rank reads the command line before rank 0 creates anything.
    let config = Config::from_args(args).map(|mut c| {
        if !split_given && world.size() > 1 {
            c.options.split = Some(SPLIT);
        }
        c
    });
    world.barrier();
    let start = if lead {
        None
    } else {
        Some(receive_start(world))
    };
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            let code = match e {
                ConfigError::Usage(u) => {
                    if lead {
                        output::usage_error(&u.0);
                    }
                    EXIT_USAGE
                }
                ConfigError::Fatal(f) => {
                    if lead {
                        output::error(&f.0);
                    }
                    EXIT_FAILED
                }
            };
            if lead {
                send_start(world, &Start::Exit(code));
            }
            return c_or(&start, code);
        }
    };
    let printer = output::Printer {
        verbose: config.verbose,
        debug: config.debug,
        json: config.json,
        force: config.options.force || config.options.remove_destination,
        looks: output::Looks::new(&config.options),
    };
    if config.dry_run {
        if !lead {
            return 0;
        }
        send_start(world, &Start::DryRun);
        let summary = mimeo::dry_run(&config.pairs, &config.options, &printer);
        print_summary(&config, &summary);
        return exit_code(&summary, stopped);
    }
    let links = DistLinks::new(rank, world.size());
    let (exec, items) = if lead {
        let (exec, items) = Executor::new(&config.pairs, &config.options, &printer, &control);
        let pairs = exec
            .pairs()
            .iter()
            .map(|p| (bytes(&p.src), bytes(&p.dst)))
            .collect();
        send_start(
            world,
            &Start::Copy {
                pairs,
                named: Box::new(exec.named()),
                followers: exec.followers(),
                items: items.clone(),
            },
        );
        (exec, items)
    } else {
        let (pairs, named, followers) = match start {
            Some(Start::Copy {
                pairs,
                named,
                followers,
                ..
            }) => (pairs, named, followers),
            Some(Start::Exit(code)) => return code,
            _ => return 0,
        };
        let pairs: Vec<CopyPair> = pairs
            .into_iter()
            .map(|(s, d)| CopyPair::new(OsString::from_vec(s), OsString::from_vec(d)))
            .collect();
        match Executor::attach(&pairs, &config.options, &printer, &control) {
            Ok(exec) => (
                exec.with_named(*named).with_followers(followers),
                Vec::new(),
            ),
            Err(e) => {
                output::error(&format!("rank {rank}: {e}"));
                world.abort(i32::from(EXIT_FAILED));
            }
        }
    };
    let ranges = DistRanges::new(rank);
    let exec = exec.with_link_groups(&links);
    let exec = if world.size() > 1 {
        exec.lending_ranges()
    } else {
        exec
    };
    let live = lead.then(|| Arc::new(AllLive::new(control.clone())));
    let bar = match &live {
        Some(live) if config.progress => Some(progress::Progress::start_with(
            &config.pairs,
            &config.options,
            control.clone(),
            live.clone(),
            config.options.sync,
        )),
        _ => None,
    };
    let mut net = Net::new(world, timeout());
    let scheduler = MpiScheduler {
        net: std::sync::Mutex::new(&mut net),
        links: &links,
        ranges: &ranges,
        live,
        jobs: config.options.jobs,
        max_jobs: config.options.max_jobs,
    };
    scheduler.run(&exec, items);
    drop(scheduler);
    let summary = exec.finish();
    if std::env::var_os("MIMEO_MPI_RANK_STATS").is_some() {
        // One line per rank on stderr: how the work spread, and what it cost in messages.
        let line = serde_json::json!({
            "rank": rank,
            "files": summary.files,
            "directories": summary.directories,
            "hard_links": summary.hard_links,
            "bytes": summary.bytes,
            "ranges_copied": ranges.copied.load(std::sync::atomic::Ordering::Relaxed),
            "sent": net.sent,
        });
        output::err_line(&format!("{line}\n"));
    }
    let (summary, code) = gather(&mut net, summary, stopped);
    if let Some(bar) = bar {
        bar.finish();
    }
    if lead {
        print_summary(&config, &summary);
        // Only now: a rank that ends with a failure makes mpirun stop the others at once.
        net.broadcast(msg::Tag::Bye, &[code]);
    }
    code
}

/// The status rank 0 announced, or `code`.
fn c_or(start: &Option<Start>, code: u8) -> u8 {
    match start {
        Some(Start::Exit(c)) => *c,
        _ => code,
    }
}

fn bytes(p: &std::path::Path) -> Vec<u8> {
    p.as_os_str().as_bytes().to_vec()
}

fn print_summary(config: &Config, summary: &Summary) {
    if config.json {
        output::out(&output::summary_json(summary));
    } else if config.stats {
        output::out(&output::summary_text(summary));
    }
}

fn send_start(world: &SimpleCommunicator, start: &Start) {
    let mut body = msg::encode(start);
    let mut len = body.len() as u64;
    let root = world.process_at_rank(0);
    root.broadcast_into(&mut len);
    root.broadcast_into(&mut body[..]);
}

fn receive_start(world: &SimpleCommunicator) -> Start {
    let root = world.process_at_rank(0);
    let mut len = 0u64;
    root.broadcast_into(&mut len);
    let mut body = vec![0u8; len as usize];
    root.broadcast_into(&mut body[..]);
    msg::decode(&body).unwrap_or(Start::Exit(EXIT_FAILED))
}

/// Rank 0 merges every rank's summary into the run's, with the run's exit status (it tells
/// the others once it has printed); the others send theirs and wait for rank 0 to be done,
/// then end with status 0, so that the job's status is rank 0's. A rank that does not answer
/// in time fails the run.
fn gather(net: &mut Net<'_>, own: Summary, stopped: &signals::Stopped) -> (Summary, u8) {
    let deadline = Instant::now() + net.timeout;
    let status = |s: &Summary| match exit_code(s, stopped) {
        // Stopped because another rank was: not a success.
        0 if s.interrupted => EXIT_FAILED,
        code => code,
    };
    if net.rank != 0 {
        net.send(0, msg::Tag::Summary, &msg::encode(&own));
        while Instant::now() < deadline {
            match net.poll() {
                Some((0, msg::Tag::Bye, _)) => return (own, 0),
                Some(_) => {}
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        output::error("rank 0 did not end the run in time");
        return (own, EXIT_FAILED);
    }
    let mut merged = own;
    let mut missing = net.size - 1;
    while missing > 0 && Instant::now() < deadline {
        match net.poll() {
            Some((_, msg::Tag::Summary, body)) => {
                if let Some(s) = msg::decode::<Summary>(&body) {
                    merged.merge(&s);
                }
                missing -= 1;
            }
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    let mut code = status(&merged);
    if missing > 0 {
        output::error(&format!("{missing} rank(s) did not report their summary"));
        code = EXIT_FAILED;
    }
    (merged, code)
}
