//! Differential fuzzing of mimeo's drop-ins against the tools they replace.
//!
//! - [`run_cp`]: mimeo called as `cp` against GNU cp 9.1. Each case (see [`case`]) is built
//!   from its seed, run by cp, set aside, built again at the same path and run by mimeo. The
//!   two places (source and destination alike: a source must never change) are compared
//!   with [`compare_trees`], and so are the exit status, stdout and stderr. What is left
//!   after the [`allow::ALLOWLIST`] fails the case.
//! - [`cat`]: `mimeo-cat` against `cat`.
//!
//! Times that a run set from the clock differ by nature; a time difference counts only
//! where a side kept a time that was not taken during the case.

pub mod allow;
pub mod case;
pub mod cat;
pub mod exec;
pub mod known;
pub mod opts;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::compare::{CompareOptions, Difference, Field, compare_trees};
use crate::rng::Rng;
use case::Plan;
use exec::{Pump, Ran, Runner};

/// The unprivileged user the fuzzers run as (`nobody`).
pub const NOBODY: u32 = 65534;

/// Environment: how many cases a test runs instead of its CI number.
pub const CASES_ENV: &str = "MIMEO_FUZZ_CASES";
/// Environment: run this one seed (decimal or 0x-hex) only.
pub const SEED_ENV: &str = "MIMEO_FUZZ_SEED";
/// Environment: print each outcome as it is, before any judging (for looking into a seed).
pub const RAW_ENV: &str = "MIMEO_FUZZ_RAW";
/// Environment: the seed the case seeds are derived from (default: fixed for CI).
pub const BASE_ENV: &str = "MIMEO_FUZZ_BASE";
/// Environment: print each case a known bug whose item contains this text took out (to
/// find cases for its fix).
pub const SHOW_KNOWN_ENV: &str = "MIMEO_FUZZ_SHOW_KNOWN";

/// Where and how to fuzz.
#[derive(Debug, Clone)]
pub struct Config {
    /// The program under test (`mimeo` or `mimeo-cat`), run through a link with the
    /// replaced tool's name.
    pub program: PathBuf,
    /// A scratch directory on the filesystem under test.
    pub root: PathBuf,
    /// Run as this user instead of root.
    pub user: Option<u32>,
    pub timeout: Duration,
    /// Names the filesystem and user in messages, e.g. "xfs/nobody".
    pub label: String,
    /// How to rerun one case: `{seed}` is replaced by the seed.
    pub reproduce: String,
}

/// The two sides of one case and what differs between their trees.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub plan: Plan,
    pub cp: Ran,
    pub ours: Ran,
    pub tree: Vec<Difference>,
    /// Where the symlinks cp's side kept and mimeo's replaced lead inside the case: the
    /// files cp wrote through them, and their other names (relative to the case's place).
    pub through: Vec<PathBuf>,
    /// The paths of `tree` that are regular files on both sides.
    pub regular: Vec<PathBuf>,
    /// Where the destination led before the run (relative to the case's place) where a
    /// symlink on its way made that other than its name: a symlink to `.` in the source.
    pub target_leads: Option<PathBuf>,
    /// The sources whose names lead elsewhere before the run through a symlink on their way
    /// (`s/l/` with `s/l` a symlink to `..`): each as named, with where it leads (relative
    /// to the case's place).
    pub source_leads: Vec<(PathBuf, PathBuf)>,
}

/// A kind of difference: the same message shapes, exit codes and fields.
#[derive(Debug, Clone, Default)]
pub struct Class {
    pub count: usize,
    /// The first case that showed it.
    pub example: String,
}

/// What a run of many cases found.
#[derive(Debug, Default)]
pub struct Report {
    pub cases: usize,
    /// Cases equal without any allowlist entry.
    pub identical: usize,
    /// How often each allowlist entry took a difference out.
    pub allowed: BTreeMap<&'static str, usize>,
    /// Failing cases put down to a known bug.
    pub known: BTreeMap<&'static str, usize>,
    /// Distinct classes of unexplained differences.
    pub classes: BTreeMap<String, Class>,
    /// Cases with an unexplained difference.
    pub failed: usize,
    /// Cases where GNU cp itself hit the timeout (waiting on something the case does not
    /// feed): not judged, and counted so that none goes unnoticed.
    pub oracle_timeouts: usize,
    /// Cases that could not be built or compared, with the error.
    pub not_built: Vec<String>,
}

impl Report {
    pub fn merge(&mut self, other: Report) {
        self.cases += other.cases;
        self.identical += other.identical;
        self.failed += other.failed;
        self.oracle_timeouts += other.oracle_timeouts;
        self.not_built.extend(other.not_built);
        for (k, v) in other.allowed {
            *self.allowed.entry(k).or_default() += v;
        }
        for (k, v) in other.known {
            *self.known.entry(k).or_default() += v;
        }
        for (k, c) in other.classes {
            let e = self.classes.entry(k).or_insert_with(|| Class {
                count: 0,
                example: c.example.clone(),
            });
            e.count += c.count;
        }
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} cases: {} identical, {} failed, {} known bugs, {} not judged (cp timed out)",
            self.cases,
            self.identical,
            self.failed,
            self.known.values().sum::<usize>(),
            self.oracle_timeouts
        )?;
        for e in &self.not_built {
            writeln!(f, "  not built: {e}")?;
        }
        for (k, v) in &self.allowed {
            writeln!(f, "  allowed {k}: {v}")?;
        }
        for (k, v) in &self.known {
            writeln!(f, "  known {k}: {v}")?;
        }
        for (k, c) in &self.classes {
            writeln!(f, "=== class ({} cases): {k}\n{}", c.count, c.example)?;
        }
        Ok(())
    }
}

/// The seeds of a run: [`SEED_ENV`] alone, or `cases` seeds derived from [`BASE_ENV`] (or
/// `base`) and `stream` (so each filesystem and user gets its own).
pub fn seeds(cases: usize, base: u64, stream: u64) -> Vec<u64> {
    if let Some(seed) = std::env::var(SEED_ENV).ok().and_then(|s| parse_seed(&s)) {
        return vec![seed];
    }
    let base = std::env::var(BASE_ENV)
        .ok()
        .and_then(|s| parse_seed(&s))
        .unwrap_or(base);
    let cases = std::env::var(CASES_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    let mut rng = Rng::new(base ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    (0..cases).map(|_| rng.next_u64()).collect()
}

pub fn parse_seed(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Makes `root` (and the mountpoint above it) reachable by `user`.
pub fn open_up(root: &Path) -> io::Result<()> {
    fs::create_dir_all(root)?;
    for dir in root.ancestors().take(3) {
        let mode = fs::metadata(dir)?.permissions().mode();
        fs::set_permissions(dir, fs::Permissions::from_mode(mode | 0o711))?;
    }
    Ok(())
}

/// A directory in `root` holding `name`, a link to `program`; returns the directory.
pub fn link_as(root: &Path, program: &Path, name: &str) -> io::Result<PathBuf> {
    let bin = root.join("bin");
    fs::create_dir_all(&bin)?;
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755))?;
    let link = bin.join(name);
    let _ = fs::remove_file(&link);
    symlink(program, &link)?;
    Ok(bin)
}

/// Runs the cp cases `seeds` as `cfg` says.
pub fn run_cp(cfg: &Config, seeds: &[u64]) -> io::Result<Report> {
    open_up(&cfg.root)?;
    let bin = link_as(&cfg.root, &cfg.program, "cp")?;
    let mut ours_path = OsString::from(&bin);
    ours_path.push(":/usr/bin:/bin");
    let mut report = Report::default();
    for &seed in seeds {
        let mut outcome = match cp_case(cfg, &ours_path, seed) {
            Ok(o) => o,
            // A case that cannot be built or compared (ENOSPC after a run that filled the
            // filesystem, say) is counted and named, and the next one goes on.
            Err(e) => {
                report.cases += 1;
                report
                    .not_built
                    .push(format!("seed {seed:#x} on {}: {e}", cfg.label));
                for p in ["case", "cp", "ours"] {
                    let _ = remove(&cfg.root.join(p));
                }
                continue;
            }
        };
        if std::env::var_os(RAW_ENV).is_some() {
            eprintln!("{outcome:#?}");
        }
        report.cases += 1;
        judge(cfg, &mut outcome, &mut report);
    }
    Ok(report)
}

/// Builds and runs case `seed` on both sides; the places are removed again.
fn cp_case(cfg: &Config, ours_path: &OsString, seed: u64) -> io::Result<Outcome> {
    let place = cfg.root.join("case");
    let (left, right) = (cfg.root.join("cp"), cfg.root.join("ours"));
    for p in [&place, &left, &right] {
        remove(p)?;
    }
    let start = now() - 2;
    let mut leads = None;
    let mut source_leads = Vec::new();
    let mut side = |path: &OsString, to: &Path| -> io::Result<(Plan, Ran)> {
        let plan = case::build(&place, seed, cfg.user)?;
        leads = leads_to(&place, &plan.target_path());
        source_leads = plan
            .sources
            .iter()
            .filter_map(|s| Some((s.into(), source_leads_to(&place, Path::new(s))?)))
            .collect();
        let pump = Pump::start(&place, plan.feed.as_deref(), &plan.drains);
        let runner = Runner {
            path,
            user: cfg.user,
            timeout: cfg.timeout,
        };
        let ran = runner.run(&place, &plan.args, &plan.env);
        pump.stop();
        fs::rename(&place, to)?;
        Ok((plan, ran?))
    };
    let (plan, cp) = side(&OsString::from("/usr/bin:/bin"), &left)?;
    let (plan2, ours) = side(ours_path, &right)?;
    assert_eq!(plan, plan2, "case {seed:#x} is not built the same twice");
    let opts = CompareOptions {
        atime: true,
        dir_atime: true,
        ..CompareOptions::default()
    };
    let mut tree = compare_trees(&left, &right, &opts)?.differences;
    tree.retain(|d| !clock_times(d, start, now() + 2));
    for d in tree.iter_mut() {
        mark_one_file_targets(d, &place, [&left, &right]);
    }
    let through = replaced_link_targets(&tree, &place, &left);
    let regular = regular_on_both(&tree, [&left, &right]);
    remove(&left)?;
    remove(&right)?;
    Ok(Outcome {
        plan,
        cp,
        ours,
        tree,
        through,
        regular,
        target_leads: leads,
        source_leads,
    })
}

/// Where an existing `source` below `place` leads, relative to `place`, where that is not
/// its own name there.
fn source_leads_to(place: &Path, source: &Path) -> Option<PathBuf> {
    let root = fs::canonicalize(place).ok()?;
    let real = fs::canonicalize(place.join(source)).ok()?;
    let real = real.strip_prefix(&root).ok()?.to_path_buf();
    let named = source.strip_prefix(place).unwrap_or(source);
    let plain: PathBuf = named
        .components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect();
    (real != plain).then_some(real)
}

/// Where `target` below `place` leads, relative to `place`, where that is not `target`.
/// A target not there yet leads where its directory does (`s/l/d` with `s/l` a symlink to
/// `..` is `d`): the copy is made there.
fn leads_to(place: &Path, target: &Path) -> Option<PathBuf> {
    let root = fs::canonicalize(place).ok()?;
    let full = place.join(target);
    let real = fs::canonicalize(&full).ok().or_else(|| {
        let name = full.file_name()?;
        Some(fs::canonicalize(full.parent()?).ok()?.join(name))
    })?;
    let real = real.strip_prefix(&root).ok()?.to_path_buf();
    (real != target).then_some(real)
}

/// What a symlink target that differs is marked with where both targets name one file on each
/// side: two names of one hard-link group, of which cp links to the one its directory order
/// meets first (which the case cannot fix).
pub const ONE_FILE: &str = " (names of one file)";

/// Marks a symlink target difference whose two targets are names of one file in both trees
/// (the same text on both sides, with [`ONE_FILE`]), so that the allowlist can tell it from a
/// real one.
fn mark_one_file_targets(d: &mut Difference, place: &Path, roots: [&Path; 2]) {
    if d.field != Field::Target {
        return;
    }
    let target = |root: &Path| fs::read_link(root.join(&d.path)).ok();
    let (Some(lt), Some(rt)) = (target(roots[0]), target(roots[1])) else {
        return;
    };
    // Where a target leads in `root`: an absolute one named the case's place.
    let at = |root: &Path, t: &Path| match t.strip_prefix(place) {
        Ok(rel) => root.join(rel),
        Err(_) if t.is_absolute() => t.to_path_buf(),
        Err(_) => root.join(&d.path).parent().unwrap_or(root).join(t),
    };
    let id = |p: PathBuf| {
        use std::os::unix::fs::MetadataExt;
        fs::symlink_metadata(p).ok().map(|m| (m.dev(), m.ino()))
    };
    let one_file = roots.iter().all(|root| {
        let (a, b) = (id(at(root, &lt)), id(at(root, &rt)));
        a.is_some() && a == b
    });
    if one_file {
        let both = format!("{} or {}{ONE_FILE}", d.left, d.right);
        d.left.clone_from(&both);
        d.right = both;
    }
}

/// Where each symlink of cp's tree that is another type in mimeo's (a destination symlink
/// mimeo replaced) leads, relative to the case's place, where that is inside it: cp wrote
/// into that file. `root` is cp's tree, which was the place.
fn replaced_link_targets(tree: &[Difference], place: &Path, root: &Path) -> Vec<PathBuf> {
    let mut targets: Vec<PathBuf> = tree
        .iter()
        .filter(|d| d.field == Field::Type && d.left == "symlink")
        .filter_map(|d| {
            let t = fs::read_link(root.join(&d.path)).ok()?;
            let joined = match t.strip_prefix(place) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) if t.is_absolute() => return None,
                Err(_) => d.path.parent().unwrap_or(Path::new("")).join(t),
            };
            // Lexically: the case's own symlinks do not lead up through others.
            let mut out = PathBuf::new();
            for c in joined.components() {
                match c {
                    std::path::Component::ParentDir if !out.pop() => return None,
                    std::path::Component::Normal(n) => out.push(n),
                    _ => {}
                }
            }
            Some(out)
        })
        .collect();
    // cp's write through the symlink also gave the target's other names (hard links in the
    // case, as cp's side has them) its times.
    let inode = |p: &Path| {
        fs::symlink_metadata(root.join(p))
            .ok()
            .filter(|m| m.file_type().is_file())
            .map(|m| (m.dev(), m.ino()))
    };
    let written: Vec<_> = targets.iter().filter_map(|t| inode(t)).collect();
    for d in tree {
        let linked = inode(&d.path).is_some_and(|i| written.contains(&i));
        if linked && !targets.contains(&d.path) {
            targets.push(d.path.clone());
        }
    }
    targets
}

/// The paths of `tree` that are regular files in both `roots`.
fn regular_on_both(tree: &[Difference], roots: [&Path; 2]) -> Vec<PathBuf> {
    let regular = |root: &Path, p: &Path| {
        fs::symlink_metadata(root.join(p)).is_ok_and(|m| m.file_type().is_file())
    };
    let mut out: Vec<PathBuf> = tree
        .iter()
        .map(|d| d.path.clone())
        .filter(|p| roots.iter().all(|r| regular(r, p)))
        .collect();
    out.dedup();
    out
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A time difference where both sides took the time from the clock during the case.
fn clock_times(d: &Difference, from: i64, to: i64) -> bool {
    let recent = |s: &str| {
        s.split('.')
            .next()
            .and_then(|s| s.parse::<i64>().ok())
            .is_some_and(|t| (from..=to).contains(&t))
    };
    matches!(d.field, Field::Mtime | Field::Atime) && recent(&d.left) && recent(&d.right)
}

/// Removes `path` (a tree of any modes: the caller is root) if it exists.
pub fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => fs::remove_file(path),
        other => other,
    }
}

/// Applies the allowlist, then files what is left under its class (or a known bug).
fn judge(cfg: &Config, o: &mut Outcome, report: &mut Report) {
    if problems(o).is_empty() {
        report.identical += 1;
        return;
    }
    if o.cp.timed_out {
        // The oracle waited for something the case did not provide: nothing to judge by.
        report.oracle_timeouts += 1;
        return;
    }
    let before = o.clone();
    let mut known = Vec::new();
    let mut allowed = std::collections::BTreeSet::new();
    for last in [false, true] {
        for a in allow::ALLOWLIST.iter().filter(|a| a.last == last || last) {
            if (a.apply)(o) {
                allowed.insert(a.name);
            }
        }
        if last {
            break;
        }
        for k in known::KNOWN {
            if (k.apply)(o) {
                known.push(k.item);
            }
        }
    }
    for name in allowed {
        *report.allowed.entry(name).or_default() += 1;
    }
    let left = problems(o);
    if left.is_empty() {
        show_known(cfg, &before, &known);
        for item in known {
            *report.known.entry(item).or_default() += 1;
        }
        return;
    }
    report.failed += 1;
    let class = classify(&left);
    let e = report.classes.entry(class).or_default();
    if e.count == 0 {
        e.example = describe(cfg, o, &left);
    }
    e.count += 1;
}

/// Prints a case that `known` took out if [`SHOW_KNOWN_ENV`] names one of them.
fn show_known(cfg: &Config, o: &Outcome, known: &[&'static str]) {
    let Ok(want) = std::env::var(SHOW_KNOWN_ENV) else {
        return;
    };
    if let Some(item) = known.iter().find(|k| k.contains(want.as_str())) {
        eprintln!("known {item}: {}", describe(cfg, o, &problems(o)));
    }
}

/// Each remaining difference, as one line.
pub fn problems(o: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    let status = |r: &Ran| match (r.timed_out, r.code) {
        (true, _) => "timeout".to_string(),
        (_, Some(c)) => c.to_string(),
        (_, None) => "signal".to_string(),
    };
    if status(&o.cp) != status(&o.ours) {
        out.push(format!(
            "exit cp={} mimeo={}",
            status(&o.cp),
            status(&o.ours)
        ));
    }
    for (what, l, r) in [
        ("stdout", &o.cp.stdout, &o.ours.stdout),
        ("stderr", &o.cp.stderr, &o.ours.stderr),
    ] {
        if l != r {
            out.extend(line_diff(what, l, r));
        }
    }
    for d in &o.tree {
        let kinds = matches!(d.field, Field::Presence | Field::Type);
        let what = if kinds {
            format!("{} {}/{}", d.field, d.left, d.right)
        } else {
            d.field.to_string()
        };
        out.push(format!("tree {what} at {d}"));
    }
    out
}

/// Lines only cp printed (`-`) and only mimeo printed (`+`).
fn line_diff(what: &str, l: &str, r: &str) -> Vec<String> {
    let ls: Vec<&str> = l.split_inclusive('\n').collect();
    let rs: Vec<&str> = r.split_inclusive('\n').collect();
    let mut out = Vec::new();
    for x in &ls {
        if !rs.contains(x) {
            out.push(format!("{what} -{x:?}"));
        }
    }
    for x in &rs {
        if !ls.contains(x) {
            out.push(format!("{what} +{x:?}"));
        }
    }
    if out.is_empty() {
        out.push(format!("{what} differs in order or repetition"));
    }
    out
}

/// The class of a set of problems: quoted names and numbers blanked, tree paths dropped.
pub fn classify(problems: &[String]) -> String {
    let mut keys: Vec<String> = problems
        .iter()
        .map(|p| match p.strip_prefix("tree ") {
            Some(t) => format!("tree {}", t.split(" at ").next().unwrap_or(t)),
            None if p.starts_with("exit ") => p.clone(),
            None => blank(p),
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys.join(" | ")
}

/// `text` with quoted parts as `Q` and digits as `N`.
pub fn blank(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                }
                if !out.ends_with('Q') {
                    out.push('Q');
                }
            }
            '0'..='9' => {
                if !out.ends_with('N') {
                    out.push('N');
                }
            }
            '$' if chars.peek() == Some(&'\'') => {}
            _ => out.push(c),
        }
    }
    out
}

/// A failing case in full, with the line that reproduces it.
fn describe(cfg: &Config, o: &Outcome, problems: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "seed {:#x} on {}: dest {:?}: {}",
        o.plan.seed,
        cfg.label,
        o.plan.dest,
        o.plan.command()
    );
    for p in problems.iter().take(12) {
        let _ = writeln!(s, "  {p}");
    }
    if problems.len() > 12 {
        let _ = writeln!(s, "  ... {} more", problems.len() - 12);
    }
    let cut = |t: &str| t.chars().take(800).collect::<String>();
    let _ = writeln!(s, "  cp: {:?} {:?}", o.cp.code, cut(&o.cp.stderr));
    let _ = writeln!(s, "  mimeo: {:?} {:?}", o.ours.code, cut(&o.ours.stderr));
    if o.cp.stdout != o.ours.stdout {
        let _ = writeln!(s, "  cp stdout: {:?}", cut(&o.cp.stdout));
        let _ = writeln!(s, "  mimeo stdout: {:?}", cut(&o.ours.stdout));
    }
    let _ = write!(
        s,
        "  reproduce: {}",
        cfg.reproduce
            .replace("{seed}", &format!("{:#x}", o.plan.seed))
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cp --link -r ls s/l/d` with `s/l` a symlink to `..`: the copy is made at `d`, which is
    /// not there before the run.
    #[test]
    fn a_target_not_there_yet_leads_where_its_directory_does() {
        let dir = tempfile::tempdir().unwrap();
        let place = dir.path();
        fs::create_dir(place.join("s")).unwrap();
        std::os::unix::fs::symlink("..", place.join("s/l")).unwrap();
        assert_eq!(
            leads_to(place, Path::new("s/l/d")),
            Some(PathBuf::from("d"))
        );
        assert_eq!(leads_to(place, Path::new("s/d")), None);
        assert_eq!(leads_to(place, Path::new("s/x/d")), None);
    }

    #[test]
    fn symlink_targets_naming_one_file_are_marked_and_others_not() {
        let dir = tempfile::tempdir().unwrap();
        let place = dir.path().join("case");
        let roots = [dir.path().join("cp"), dir.path().join("ours")];
        for (root, to) in roots.iter().zip(["x", "y"]) {
            fs::create_dir_all(root.join("s")).unwrap();
            fs::write(root.join("s/x"), "x").unwrap();
            fs::hard_link(root.join("s/x"), root.join("s/y")).unwrap();
            fs::write(root.join("s/z"), "z").unwrap();
            symlink(Path::new("s").join(to), root.join("l")).unwrap();
            symlink(place.join("s").join(to), root.join("m")).unwrap();
            symlink(
                Path::new("s").join(if to == "x" { "x" } else { "z" }),
                root.join("n"),
            )
            .unwrap();
        }
        let diff = |path: &str| Difference {
            path: path.into(),
            field: Field::Target,
            left: "\"s/x\"".into(),
            right: "\"s/y\"".into(),
        };
        let roots = [roots[0].as_path(), roots[1].as_path()];
        for path in ["l", "m"] {
            let mut d = diff(path);
            mark_one_file_targets(&mut d, &place, roots);
            assert_eq!(d.left, d.right, "{path}");
            assert!(d.left.ends_with(ONE_FILE), "{path}");
        }
        // Another file: left as it is.
        let mut d = diff("n");
        mark_one_file_targets(&mut d, &place, roots);
        assert_ne!(d.left, d.right);
    }

    #[test]
    fn only_paths_that_are_files_on_both_sides_are_regular() {
        let dir = tempfile::tempdir().unwrap();
        let roots = [dir.path().join("cp"), dir.path().join("ours")];
        for root in &roots {
            fs::create_dir_all(root.join("d")).unwrap();
            fs::write(root.join("f"), "f").unwrap();
        }
        fs::write(roots[0].join("g"), "g").unwrap();
        symlink("f", roots[1].join("g")).unwrap();
        let diff = |path: &str| Difference {
            path: path.into(),
            field: Field::Mode,
            left: "1644".into(),
            right: "0644".into(),
        };
        let tree = [diff("d"), diff("f"), diff("f"), diff("g")];
        let regular = regular_on_both(&tree, [roots[0].as_path(), roots[1].as_path()]);
        assert_eq!(regular, [Path::new("f")]);
    }

    #[test]
    fn replaced_symlinks_name_the_files_they_lead_to_inside_the_case() {
        let dir = tempfile::tempdir().unwrap();
        let place = dir.path().join("case");
        let root = dir.path().join("cp");
        fs::create_dir_all(root.join("d")).unwrap();
        symlink(place.join("s/x"), root.join("d/abs")).unwrap();
        symlink("../f", root.join("d/rel")).unwrap();
        symlink("/elsewhere/f", root.join("d/out")).unwrap();
        symlink("../../up", root.join("d/up")).unwrap();
        symlink("f", root.join("d/kept")).unwrap();
        let diff = |path: &str, field: Field| Difference {
            path: path.into(),
            field,
            left: "symlink".into(),
            right: "file".into(),
        };
        let tree = [
            diff("d/abs", Field::Type),
            diff("d/rel", Field::Type),
            diff("d/out", Field::Type),
            diff("d/up", Field::Type),
            diff("d/kept", Field::Presence),
        ];
        let through = replaced_link_targets(&tree, &place, &root);
        assert_eq!(through, [Path::new("s/x"), Path::new("f")]);
    }

    /// cp -R f s/l with s/l a symlink to s/x, a file hard-linked as s/y and s/z: cp writes
    /// s/x through s/l, and so its other names get the time of that too (fuzz seed
    /// 0x2ee36ed220053b96 on ext4). Its other names are targets; a file of its own is not.
    #[test]
    fn a_replaced_symlinks_target_takes_its_hard_links_along() {
        let dir = tempfile::tempdir().unwrap();
        let place = dir.path().join("case");
        let root = dir.path().join("cp");
        fs::create_dir_all(root.join("s")).unwrap();
        fs::write(root.join("s/x"), "x").unwrap();
        fs::hard_link(root.join("s/x"), root.join("s/y")).unwrap();
        fs::hard_link(root.join("s/x"), root.join("s/z")).unwrap();
        fs::write(root.join("s/other"), "o").unwrap();
        symlink("x", root.join("s/l")).unwrap();
        let diff = |path: &str, field: Field, left: &str, right: &str| Difference {
            path: path.into(),
            field,
            left: left.into(),
            right: right.into(),
        };
        let tree = [
            diff("s/l", Field::Type, "symlink", "file"),
            diff("s/x", Field::Mtime, "2", "1"),
            diff("s/y", Field::Mtime, "2", "1"),
            diff("s/z", Field::Mtime, "2", "1"),
            diff("s/other", Field::Mtime, "2", "1"),
        ];
        let through = replaced_link_targets(&tree, &place, &root);
        assert_eq!(
            through,
            [Path::new("s/x"), Path::new("s/y"), Path::new("s/z")]
        );
    }
}
