//! Benchmark helper: copy one file over and over through the library and report ops/s.
//!
//! Usage: `copy_loop SRC DST ITERATIONS [WARMUP]`
//!
//! Each iteration calls [`mimeo::copy_file`] with the default options, which replaces `DST`
//! atomically. `WARMUP` iterations (default: a tenth of `ITERATIONS`, at least one) run first
//! and are not timed. The result is printed as one JSON line on stdout, so that the benchmark
//! harness in `bench/` can parse it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn parse(arg: &str, what: &str) -> Result<u64, ExitCode> {
    arg.parse::<u64>().map_err(|_| {
        eprintln!("copy_loop: {what} must be a non-negative integer, not {arg:?}");
        ExitCode::from(2)
    })
}

fn run() -> Result<(), ExitCode> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 || args.len() > 5 {
        eprintln!("usage: copy_loop SRC DST ITERATIONS [WARMUP]");
        return Err(ExitCode::from(2));
    }
    let src = PathBuf::from(&args[1]);
    let dst = PathBuf::from(&args[2]);
    let iterations = parse(&args[3], "ITERATIONS")?.max(1);
    let warmup = match args.get(4) {
        Some(w) => parse(w, "WARMUP")?,
        None => (iterations / 10).max(1),
    };
    let opts = mimeo::Options::default();

    // Not timed: brings the source's metadata and the destination directory into cache.
    for _ in 0..warmup {
        mimeo::copy_file(&src, &dst, &opts).map_err(|e| {
            eprintln!("copy_loop: warmup: {e}");
            ExitCode::FAILURE
        })?;
    }

    let mut last = None;
    let start = Instant::now();
    for _ in 0..iterations {
        let outcome = mimeo::copy_file(&src, &dst, &opts).map_err(|e| {
            eprintln!("copy_loop: {e}");
            ExitCode::FAILURE
        })?;
        last = Some(outcome);
    }
    let seconds = start.elapsed().as_secs_f64();
    let method = last.map_or("none", |o| o.method.name());
    println!(
        "{{\"tool\":\"mimeo\",\"iterations\":{iterations},\"warmup\":{warmup},\"seconds\":{seconds:.6},\"ops_per_sec\":{:.3},\"method\":\"{method}\"}}",
        iterations as f64 / seconds
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}
