//! `mimeo-testkit`: generate test trees and compare trees from the shell
//! (used by the benchmark harness for its fidelity column).
//!
//! ```text
//! mimeo-testkit gen [--seed N] [--entries N] [--no-devices] DIR
//! mimeo-testkit gen-small --files N [--seed N] DIR
//! mimeo-testkit gen-empty --files N DIR
//! mimeo-testkit compare [--no-atime] [--no-mtime] [--blocks-le] LEFT RIGHT
//! ```
//!
//! Exit status: 0 on success (trees equal), 1 when `compare` finds
//! differences, 2 on usage or I/O errors.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use mimeo_testkit::{CompareOptions, GenOptions, compare_trees, gen_empty, gen_small, generate};

const USAGE: &str = "usage:
  mimeo-testkit gen [--seed N] [--entries N] [--no-devices] DIR
  mimeo-testkit gen-small --files N [--seed N] DIR
  mimeo-testkit gen-empty --files N DIR
  mimeo-testkit compare [--no-atime] [--no-mtime] [--blocks-le] LEFT RIGHT";

/// Flags and positional arguments of one subcommand.
#[derive(Debug, Default)]
struct Args {
    numbers: Vec<(String, u64)>,
    switches: Vec<String>,
    paths: Vec<PathBuf>,
}

impl Args {
    fn number(&self, name: &str) -> Option<u64> {
        self.numbers
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| v)
    }

    fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }
}

/// Splits `args` into `--flag N` numbers (for `numeric` flags), bare
/// switches and paths, rejecting anything else.
fn parse(args: Vec<OsString>, numeric: &[&str], switches: &[&str]) -> Result<Args, String> {
    let mut out = Args::default();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let Some(flag) = arg.to_str().filter(|s| s.starts_with("--")) else {
            out.paths.push(arg.into());
            continue;
        };
        if numeric.contains(&flag) {
            let value = it.next().ok_or(format!("{flag} needs a value"))?;
            let value = value
                .to_str()
                .and_then(|v| v.parse().ok())
                .ok_or(format!("{flag}: not a number: {value:?}"))?;
            out.numbers.push((flag.to_owned(), value));
        } else if switches.contains(&flag) {
            out.switches.push(flag.to_owned());
        } else {
            return Err(format!("unknown option {flag}"));
        }
    }
    Ok(out)
}

fn one_dir(args: &Args) -> Result<&PathBuf, String> {
    match args.paths.as_slice() {
        [dir] => Ok(dir),
        _ => Err("expected exactly one DIR".into()),
    }
}

fn run() -> Result<bool, String> {
    let mut argv = std::env::args_os().skip(1);
    let cmd = argv
        .next()
        .and_then(|c| c.into_string().ok())
        .unwrap_or_default();
    let rest: Vec<OsString> = argv.collect();
    let io = |e: std::io::Error| e.to_string();
    match cmd.as_str() {
        "gen" => {
            let a = parse(rest, &["--seed", "--entries"], &["--no-devices"])?;
            let mut opts = GenOptions::new(
                a.number("--seed").unwrap_or(1),
                a.number("--entries").unwrap_or(200) as usize,
            );
            // Device nodes whose data is endless (/dev/zero's numbers), for tools that read
            // special files as files (shutil).
            opts.devices &= !a.switch("--no-devices");
            let stats = generate(one_dir(&a)?, &opts).map_err(io)?;
            println!("{stats:?}");
        }
        "gen-small" => {
            let a = parse(rest, &["--files", "--seed"], &[])?;
            let files = a.number("--files").ok_or("--files is required")?;
            gen_small(
                one_dir(&a)?,
                files as usize,
                a.number("--seed").unwrap_or(1),
            )
            .map_err(io)?;
        }
        "gen-empty" => {
            let a = parse(rest, &["--files"], &[])?;
            let files = a.number("--files").ok_or("--files is required")?;
            gen_empty(one_dir(&a)?, files as usize).map_err(io)?;
        }
        "compare" => {
            let a = parse(rest, &[], &["--no-atime", "--no-mtime", "--blocks-le"])?;
            let [left, right] = a.paths.as_slice() else {
                return Err("expected LEFT and RIGHT".into());
            };
            let opts = CompareOptions {
                atime: !a.switch("--no-atime") && !a.switch("--no-mtime"),
                mtime: !a.switch("--no-mtime"),
                blocks_le: a.switch("--blocks-le"),
                ..CompareOptions::default()
            };
            let result = compare_trees(left, right, &opts).map_err(io)?;
            println!("{result}");
            return Ok(result.is_equal());
        }
        _ => return Err(format!("unknown command {cmd:?}")),
    }
    Ok(true)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(msg) => {
            eprintln!("mimeo-testkit: {msg}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
