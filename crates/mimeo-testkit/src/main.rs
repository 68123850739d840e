//! `mimeo-testkit`: generate test trees and compare trees from the shell
//! (used by the benchmark harness for its fidelity column).
//!
//! ```text
//! mimeo-testkit gen [--seed N] [--entries N] [--no-devices] DIR
//! mimeo-testkit gen-small --files N [--seed N] DIR
//! mimeo-testkit gen-empty --files N DIR
//! mimeo-testkit compare [--no-atime] [--no-mtime] [--blocks-le] LEFT RIGHT
//! mimeo-testkit fuzz-cp|fuzz-cat PROGRAM [--cases N] [--base N] [--seed N] [--fs KIND] [--user root|nobody]
//! ```
//!
//! `fuzz-cp` and `fuzz-cat` are the long mode of the differential fuzzers: PROGRAM (the
//! `mimeo` or `mimeo-cat` binary) against GNU cp or cat, on loop-mounted btrfs, XFS and
//! ext4 (or the one `--fs` names), as root and as `nobody` (or the one `--user` names).
//! They print the counts and every distinct class of difference.
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
  mimeo-testkit compare [--no-atime] [--no-mtime] [--blocks-le] LEFT RIGHT
  mimeo-testkit fuzz-cp|fuzz-cat PROGRAM [--cases N] [--base N] [--seed N] [--fs KIND] [--user root|nobody]";

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
        "fuzz-cp" | "fuzz-cat" => return fuzz(&cmd, rest),
        _ => return Err(format!("unknown command {cmd:?}")),
    }
    Ok(true)
}

/// The value after each `--flag` in `args`, and the one positional argument.
fn flags(args: Vec<OsString>) -> Result<(PathBuf, Vec<(String, String)>), String> {
    let mut it = args.into_iter();
    let mut program = None;
    let mut out = Vec::new();
    while let Some(a) = it.next() {
        match a.to_str().filter(|s| s.starts_with("--")) {
            Some(flag) => {
                let v = it.next().ok_or(format!("{flag} needs a value"))?;
                out.push((flag.to_owned(), v.to_string_lossy().into_owned()));
            }
            None => program = Some(PathBuf::from(a)),
        }
    }
    Ok((program.ok_or("PROGRAM is required")?, out))
}

fn fuzz(cmd: &str, args: Vec<OsString>) -> Result<bool, String> {
    use mimeo_testkit::fuzz::{self, Config, NOBODY, Report, parse_seed};
    use mimeo_testkit::{FsKind, LoopFs};
    let (program, flags) = flags(args)?;
    let program = program
        .canonicalize()
        .map_err(|e| format!("{program:?}: {e}"))?;
    let get = |name: &str| {
        flags
            .iter()
            .find(|(f, _)| f == name)
            .map(|(_, v)| v.as_str())
    };
    let number = |name: &str| get(name).map(|v| parse_seed(v).ok_or(format!("{name}: {v:?}")));
    let cases = number("--cases").transpose()?.unwrap_or(1000) as usize;
    let base = number("--base").transpose()?.unwrap_or(1);
    let kinds: Vec<FsKind> = FsKind::ALL
        .into_iter()
        .filter(|k| get("--fs").is_none_or(|f| f == k.to_string()))
        .collect();
    let users: Vec<Option<u32>> = [None, Some(NOBODY)]
        .into_iter()
        .filter(|u| get("--user").is_none_or(|f| (f == "nobody") == u.is_some()))
        .collect();
    let mut total = Report::default();
    for &kind in &kinds {
        // The same seeds as the tests' for this filesystem and user.
        let i = FsKind::ALL.iter().position(|&k| k == kind).unwrap_or(0);
        let fs = LoopFs::try_new(kind, 2048).ok_or(format!("cannot mount {kind}"))?;
        for &user in &users {
            let who = if user.is_some() { "nobody" } else { "root" };
            let cfg = Config {
                program: program.clone(),
                root: fs.path().join("fuzz"),
                user,
                timeout: std::time::Duration::from_secs(20),
                label: format!("{kind}/{who}"),
                reproduce: format!(
                    "mimeo-testkit {cmd} {} --fs {kind} --user {who} --seed {{seed}}",
                    program.display()
                ),
            };
            let seeds = match number("--seed").transpose()? {
                Some(seed) => vec![seed],
                None => fuzz::seeds(cases, base, (i * 2 + usize::from(user.is_some())) as u64),
            };
            let started = std::time::Instant::now();
            let report = if cmd == "fuzz-cp" {
                fuzz::run_cp(&cfg, &seeds)
            } else {
                fuzz::cat::run_cat(&cfg, &seeds)
            }
            .map_err(|e| format!("{}: {e}", cfg.label))?;
            println!(
                "--- {} ({:.0?}) ---\n{report}",
                cfg.label,
                started.elapsed()
            );
            total.merge(report);
        }
    }
    println!("--- all ---\n{total}");
    Ok(total.failed == 0 && total.not_built.is_empty())
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
