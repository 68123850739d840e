//! `mimeo-cat` against `cat` (GNU coreutils 9.1): parts of every size, sparse ones, a
//! symlink, a directory and missing parts, `-` and standard input from a pipe or a file,
//! and an output that is absent, a file, a hard link or symlink of a part, or a part itself,
//! opened as a shell opens `>`, `>>` or `<>`, or a pipe.
//!
//! Both programs get the same place (built twice from the seed, as for cp) and the same
//! redirections; stdout, stderr (with the program name normalised), the exit status and the
//! place must match. `mimeo-cat -o OUT` runs against `cat > OUT`, except where OUT is one of
//! the parts and has bytes: there cat has no counterpart (the shell truncates before cat can
//! refuse), and the rule of issue 23 item 1 is checked instead: mimeo-cat refuses with "input
//! file is output file" and the output keeps every byte.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;

use super::exec::{Ran, reader, wait};
use super::{Config, Outcome, Report, clock_times, judge, now, remove};
use crate::compare::{CompareOptions, compare_trees};
use crate::rng::Rng;

/// How the output reaches the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// stdout is a pipe, captured.
    Pipe,
    /// stdout is `out`, opened like `>`, `>>` or `<>`.
    Redirect(&'static str),
    /// `mimeo-cat -o out`, `cat > out`.
    Option,
}

/// What is at `out` before the run.
const OUT_STATES: &[&str] = &["absent", "file", "hardlink", "symlink", "part"];

/// A built cat case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatPlan {
    pub seed: u64,
    pub parts: Vec<OsString>,
    pub out_state: &'static str,
    /// The output path (relative).
    pub out: PathBuf,
    pub output: Output,
    /// Standard input: "null", "pipe" or "file".
    pub stdin: &'static str,
}

fn sizes(rng: &mut Rng) -> u64 {
    *rng.pick(&[0, 1, 4095, 4096, 4097, 65536, 100_000, 1 << 20])
}

/// Builds case `seed` in `place`.
pub fn build(place: &Path, seed: u64) -> io::Result<CatPlan> {
    let mut rng = Rng::new(seed);
    fs::create_dir(place)?;
    for name in ["a", "b", "c"] {
        let len = sizes(&mut rng);
        let mut data = vec![0u8; len as usize];
        rng.fill(&mut data);
        let f = File::create(place.join(name))?;
        if rng.chance(20) {
            // Sparse: the data after a hole.
            use std::os::unix::fs::FileExt;
            f.write_all_at(&data, 1 << 20)?;
        } else {
            (&f).write_all(&data)?;
        }
    }
    symlink("a", place.join("l"))?;
    fs::create_dir(place.join("dir"))?;
    let out_state = *rng.pick(OUT_STATES);
    let part = *rng.pick(&["a", "b", "c"]);
    let mut out = PathBuf::from("out");
    match out_state {
        "file" => fs::write(place.join("out"), b"old output\n")?,
        "hardlink" => fs::hard_link(place.join(part), place.join("out"))?,
        "symlink" => symlink(part, place.join("out"))?,
        "part" => out = PathBuf::from(part),
        _ => {}
    }
    let n = rng.below(5);
    let names = ["a", "b", "c", "l", "-", "missing", "dir", "out", "a", "b"];
    let parts = (0..n).map(|_| OsString::from(*rng.pick(&names))).collect();
    let output = match rng.below(4) {
        0 => Output::Pipe,
        1 => Output::Option,
        _ => {
            const HOW: &[&str] = &[">", ">>", "<>"];
            Output::Redirect(HOW[rng.below(3) as usize])
        }
    };
    let stdin = *rng.pick(&["null", "pipe", "file"]);
    Ok(CatPlan {
        seed,
        parts,
        out_state,
        out,
        output,
        stdin,
    })
}

/// Opens `path` as the shell opens it for `how`.
fn open_output(path: &Path, how: &str) -> io::Result<File> {
    let mut o = OpenOptions::new();
    match how {
        ">" => o.write(true).create(true).truncate(true),
        ">>" => o.append(true).create(true),
        _ => o.read(true).write(true).create(true),
    };
    o.mode(0o644).open(path)
}

/// Runs `program` (cat, or mimeo-cat with `-o` when `option`) in `place` per `plan`.
fn run_side(
    place: &Path,
    program: &Path,
    option: bool,
    plan: &CatPlan,
    cfg: &Config,
) -> io::Result<Ran> {
    let mut cmd = Command::new(program);
    // cat names itself by argv[0].
    cmd.arg0("cat")
        .current_dir(place)
        .env_clear()
        .env("LC_ALL", "C");
    if option {
        cmd.arg("-o").arg(&plan.out);
    }
    cmd.args(&plan.parts);
    let stdout = match plan.output {
        Output::Pipe => Stdio::piped(),
        Output::Redirect(how) => open_output(&place.join(&plan.out), how)?.into(),
        Output::Option if option => Stdio::piped(),
        Output::Option => open_output(&place.join(&plan.out), ">")?.into(),
    };
    let stdin = match plan.stdin {
        "pipe" => Stdio::piped(),
        "file" => File::open(place.join("b"))?.into(),
        _ => Stdio::null(),
    };
    cmd.stdout(stdout).stdin(stdin).stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    if let Some(mut w) = child.stdin.take() {
        thread::spawn(move || {
            for _ in 0..3 {
                let _ = w.write_all(b"from standard input\n");
            }
        });
    }
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let (code, timed_out) = wait(&mut child, cfg.timeout)?;
    let stderr = err.join().unwrap_or_default();
    Ok(Ran {
        code,
        timed_out,
        stdout: out.join().unwrap_or_default(),
        // The same messages under the other name.
        stderr: stderr.replace("mimeo-cat: ", "cat: "),
    })
}

/// Whether the output is one of the parts (the same inode), before the run.
fn output_is_part(place: &Path, plan: &CatPlan) -> bool {
    let Ok(o) = fs::metadata(place.join(&plan.out)) else {
        return false;
    };
    let same = |p: &Path| fs::metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == (o.dev(), o.ino()));
    // No parts is standard input alone.
    let stdin_only = [OsString::from("-")];
    let parts = if plan.parts.is_empty() {
        &stdin_only[..]
    } else {
        &plan.parts[..]
    };
    parts.iter().any(|p| {
        if p == "-" {
            plan.stdin == "file" && same(&place.join("b"))
        } else {
            same(&place.join(p))
        }
    })
}

/// Runs the cat cases `seeds`.
pub fn run_cat(cfg: &Config, seeds: &[u64]) -> io::Result<Report> {
    fs::create_dir_all(&cfg.root)?;
    let mut report = Report::default();
    for &seed in seeds {
        report.cases += 1;
        match cat_case(cfg, seed)? {
            Ok(mut outcome) => {
                if std::env::var_os(super::RAW_ENV).is_some() {
                    eprintln!("{outcome:#?}");
                }
                judge(cfg, &mut outcome, &mut report)
            }
            Err(problem) => {
                report.failed += 1;
                let e = report
                    .classes
                    .entry(format!("output is a part: {}", problem.0))
                    .or_default();
                if e.count == 0 {
                    e.example = format!(
                        "seed {seed:#x} on {}: {}\n  reproduce: {}",
                        cfg.label,
                        problem.1,
                        cfg.reproduce.replace("{seed}", &format!("{seed:#x}"))
                    );
                }
                e.count += 1;
            }
        }
    }
    Ok(report)
}

const CHANGED: &str = "the output changed";

/// A broken rule for an output that is a part: the rule, and the details.
type Broken = (&'static str, String);

fn cat_case(cfg: &Config, seed: u64) -> io::Result<Result<Outcome, Broken>> {
    let place = cfg.root.join("case");
    let (left, right) = (cfg.root.join("cat"), cfg.root.join("ours"));
    for p in [&place, &left, &right] {
        remove(p)?;
    }
    let start = now() - 2;
    let plan = build(&place, seed)?;
    let option = plan.output == Output::Option;
    // An empty output loses nothing to the shell's `>`: there `-o` is `>` exactly.
    let has_bytes = fs::metadata(place.join(&plan.out)).is_ok_and(|m| m.len() > 0);
    if option && has_bytes && output_is_part(&place, &plan) {
        let before = fs::read(place.join(&plan.out))?;
        let ran = run_side(&place, &cfg.program, true, &plan, cfg)?;
        let after = fs::read(place.join(&plan.out))?;
        remove(&place)?;
        let detail = format!("{plan:?}: {ran:?}");
        if after != before {
            return Ok(Err((CHANGED, detail)));
        }
        if ran.code != Some(1) || !ran.stderr.contains("input file is output file") {
            return Ok(Err((
                "not refused with \"input file is output file\"",
                detail,
            )));
        }
        return Ok(Ok(empty(plan)));
    }
    let cat = run_side(&place, Path::new("/bin/cat"), false, &plan, cfg)?;
    fs::rename(&place, &left)?;
    let plan2 = build(&place, seed)?;
    assert_eq!(
        plan, plan2,
        "cat case {seed:#x} is not built the same twice"
    );
    let ours = run_side(&place, &cfg.program, option, &plan, cfg)?;
    fs::rename(&place, &right)?;
    let mut tree = compare_trees(&left, &right, &CompareOptions::default())?.differences;
    tree.retain(|d| !clock_times(d, start, now() + 2));
    remove(&left)?;
    remove(&right)?;
    Ok(Ok(Outcome {
        plan: as_cp_plan(&plan),
        cp: cat,
        ours,
        tree,
        through: Vec::new(),
        regular: Vec::new(),
        target_leads: None,
        source_leads: Vec::new(),
    }))
}

/// An outcome with nothing to compare: the case was judged by its own rule.
fn empty(plan: CatPlan) -> Outcome {
    Outcome {
        plan: as_cp_plan(&plan),
        cp: Ran::default(),
        ours: Ran::default(),
        tree: Vec::new(),
        through: Vec::new(),
        regular: Vec::new(),
        target_leads: None,
        source_leads: Vec::new(),
    }
}

/// The cat case in the form the shared reports print.
fn as_cp_plan(plan: &CatPlan) -> super::case::Plan {
    let redirect = match plan.output {
        Output::Pipe => "| ...".to_string(),
        Output::Redirect(how) => format!("{how} {}", plan.out.display()),
        Output::Option => format!("(-o) > {}", plan.out.display()),
    };
    let mut args = plan.parts.clone();
    args.push(format!("{redirect} < {} (out was {})", plan.stdin, plan.out_state).into());
    super::case::Plan {
        tool: "cat",
        seed: plan.seed,
        args,
        env: Vec::new(),
        opts: Vec::new(),
        dest: super::case::DestState::Absent,
        target: plan.out.clone().into_os_string(),
        sources: plan.parts.clone(),
        feed: None,
        drains: Vec::new(),
        odd_dirs: false,
        place: PathBuf::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(parts: &[&str], out: &str, stdin: &'static str) -> CatPlan {
        CatPlan {
            seed: 0,
            parts: parts.iter().map(OsString::from).collect(),
            out_state: "part",
            out: out.into(),
            output: Output::Option,
            stdin,
        }
    }

    /// No parts is standard input: from the file b, the output b is a part.
    #[test]
    fn standard_input_alone_can_be_the_output() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("b"), b"bytes").unwrap();
        fs::write(dir.path().join("a"), b"bytes").unwrap();
        assert!(output_is_part(dir.path(), &plan(&[], "b", "file")));
        assert!(!output_is_part(dir.path(), &plan(&[], "b", "null")));
        assert!(!output_is_part(dir.path(), &plan(&["a"], "b", "file")));
        assert!(output_is_part(dir.path(), &plan(&["a", "-"], "b", "file")));
    }
}
