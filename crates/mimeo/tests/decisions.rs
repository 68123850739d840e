//! The dry run and the copy decide alike: every combination of a source entry (file,
//! directory, symlink, FIFO) over an existing destination entry (none, file, directory,
//! symlink, device node), under replace, `-n` and `-u` (with the destination older and
//! newer), `--remove-destination`, `--backup`, `--inplace`, `--attributes-only`, `-l` (with
//! and without `-f`) and `-s -f`, goes through `dry_run` and then through `copy`, and what
//! the dry run planned is what the copy did. Each case runs both as a command-line pair of
//! its own (the pair is the exact destination, as with `-T`) and as an entry inside a merged
//! tree, on btrfs, XFS and ext4.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mimeo::{Action, Backup, CopyPair, Event, LinkInstead, Observer, Options, Overwrite, Refusal};
use mimeo_testkit::files::scratch;
use mimeo_testkit::{FsKind, run_ok};

/// What happened to one destination path, in the dry run's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Planned, or done: create, replace, write into.
    Done,
    /// Planned: merge into a directory, which the copy does without an event (cp's -v
    /// names only the directories it makes).
    Merged,
    Skipped,
    Refused(Refusal),
    Failed(String),
}

/// Collects what happened to each destination path.
#[derive(Default)]
struct Record(Mutex<Vec<(PathBuf, Outcome)>>);

impl Observer for Record {
    fn event(&self, event: Event) {
        let entry = match event {
            Event::Planned { dst, action, .. } => {
                let o = match action {
                    Action::Skip => Outcome::Skipped,
                    Action::Merge => Outcome::Merged,
                    _ => Outcome::Done,
                };
                (dst, o)
            }
            Event::Copied { dst, .. } => (dst, Outcome::Done),
            Event::Skipped { dst, .. } => (dst, Outcome::Skipped),
            Event::Failed(e) => {
                let path = match e.refusal() {
                    // A same-file refusal names the source; the test keys by destination.
                    Some(Refusal::SameFile { dst }) => dst.clone(),
                    _ => e.path.clone(),
                };
                let o = match e.refusal() {
                    Some(r) => Outcome::Refused(r.clone()),
                    None => Outcome::Failed(e.to_string()),
                };
                (path, o)
            }
            // The copy says what it removed before replacing it (cp's -v "removed" line);
            // the outcome that follows is what is compared.
            Event::Removed { .. } => return,
            // A copy begun before it failed (cp's -v line): its failure follows.
            Event::Begun { .. } => return,
            other => panic!("unexpected event {other:?}"),
        };
        self.0.lock().unwrap().push(entry);
    }
}

impl Record {
    fn of(&self, dst: &Path) -> Vec<Outcome> {
        let all = self.0.lock().unwrap();
        all.iter()
            .filter(|(p, _)| p == dst)
            .map(|(_, o)| o.clone())
            .collect()
    }
}

const SOURCES: [&str; 4] = ["file", "dir", "symlink", "fifo"];
const EXISTING: [&str; 5] = ["none", "file", "dir", "symlink", "node"];

/// Makes an entry of `kind` at `path`, with a fixed mtime (`older` or newer than the rest).
fn make(path: &Path, kind: &str, older: bool) {
    match kind {
        "none" => return,
        "file" => fs::write(path, if older { "old\n" } else { "data\n" }).unwrap(),
        "dir" => {
            fs::create_dir(path).unwrap();
            fs::write(path.join("inner"), "inner\n").unwrap();
        }
        "symlink" => symlink("elsewhere", path).unwrap(),
        "fifo" => drop(run_ok("mkfifo", &[path])),
        // A private null device: data written into it goes nowhere, and never blocks.
        "node" => drop(run_ok("mknod", &[path.to_str().unwrap(), "c", "1", "3"])),
        other => unreachable!("{other}"),
    }
    let when = if older { "2001-01-01" } else { "2031-01-01" };
    run_ok("touch", &["-h", "-d", when, path.to_str().unwrap()]);
}

/// The option sets of the table.
fn rules() -> Vec<(&'static str, Options, bool)> {
    let mut replace = Options::archive();
    replace.jobs = 2;
    let mut no_clobber = replace.clone();
    no_clobber.overwrite = Overwrite::NoClobber;
    let mut update = replace.clone();
    update.overwrite = Overwrite::Update;
    let with = |change: &dyn Fn(&mut Options)| {
        let mut o = replace.clone();
        change(&mut o);
        o
    };
    let remove = with(&|o| o.remove_destination = true);
    let backup = with(&|o| o.backup = Some(Backup::Numbered));
    let inplace = with(&|o| o.inplace = true);
    let attributes = with(&|o| o.attributes_only = true);
    let link = with(&|o| o.link = Some(LinkInstead::Hard));
    let link_force = with(&|o| {
        o.link = Some(LinkInstead::Hard);
        o.force = true;
    });
    let symlink_force = with(&|o| {
        o.link = Some(LinkInstead::Symbolic);
        o.force = true;
    });
    // (name, options, whether the existing destination is older than the source)
    vec![
        ("replace", replace, true),
        ("no-clobber", no_clobber, true),
        ("update-older", update.clone(), true),
        ("update-newer", update, false),
        ("remove-destination", remove, true),
        ("backup", backup, true),
        ("inplace", inplace, true),
        ("attributes-only", attributes, true),
        ("link", link, true),
        ("link-force", link_force, true),
        ("symlink-force", symlink_force, true),
    ]
}

/// Runs the dry run and then the copy of `pairs`, and asserts that every destination in
/// `dsts` had the same outcome in both.
fn agree(what: &str, pairs: &[CopyPair], opts: &Options, dsts: &[PathBuf]) {
    let planned = Record::default();
    mimeo::dry_run(pairs, opts, &planned);
    let done = Record::default();
    mimeo::copy(pairs, opts, &done);
    for dst in dsts {
        let (p, mut d) = (planned.of(dst), done.of(dst));
        if p == [Outcome::Merged] && d.is_empty() {
            d.push(Outcome::Merged);
        }
        assert_eq!(
            p, d,
            "{what}: {dst:?}: the dry run planned {p:?}, the copy did {d:?}"
        );
        assert_eq!(p.len(), 1, "{what}: {dst:?}: {p:?}");
    }
}

#[test]
fn dry_run_and_copy_agree_on_every_existing_destination() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let mut n = 0;
        let mut seen = Vec::new();
        for (name, opts, older) in rules() {
            // One pair per case: the destination is the pair's own.
            let mut pairs = Vec::new();
            let mut dsts = Vec::new();
            let base = fs.path().join(format!("pairs-{name}"));
            fs::create_dir(&base).unwrap();
            for src_kind in SOURCES {
                for dst_kind in EXISTING {
                    n += 1;
                    let (src, dst) = (base.join(format!("s{n}")), base.join(format!("d{n}")));
                    make(&src, src_kind, !older);
                    make(&dst, dst_kind, older);
                    pairs.push(CopyPair::new(&src, &dst));
                    dsts.push(dst);
                }
            }
            agree(&format!("{kind} {name}, pairs"), &pairs, &opts, &dsts);

            // The same cases as entries of a tree merged into an existing one.
            let (src, dst) = (
                fs.path().join(format!("src-{name}")),
                fs.path().join(format!("dst-{name}")),
            );
            fs::create_dir(&src).unwrap();
            fs::create_dir(&dst).unwrap();
            let mut dsts = Vec::new();
            for src_kind in SOURCES {
                for dst_kind in EXISTING {
                    let entry = format!("{src_kind}-over-{dst_kind}");
                    make(&src.join(&entry), src_kind, !older);
                    make(&dst.join(&entry), dst_kind, older);
                    dsts.push(dst.join(&entry));
                }
            }
            agree(
                &format!("{kind} {name}, tree"),
                &[CopyPair::new(&src, &dst)],
                &opts,
                &dsts,
            );
            seen.push(dst);
        }
        // The table has teeth: the directory-over-file case is refused in both.
        let refusal = Record::default();
        let tree = &seen[0];
        mimeo::copy(
            &[CopyPair::new(
                fs.path().join("src-replace"),
                fs.path().join("dst-replace"),
            )],
            &rules()[0].1,
            &refusal,
        );
        assert!(matches!(
            refusal.of(&tree.join("dir-over-file"))[..],
            [Outcome::Refused(Refusal::NonDirectoryInTheWay { .. })]
        ));
    }
}

/// Sorted, so that two runs that met the entries in different orders compare.
fn sorted(record: &Record) -> Vec<(PathBuf, Outcome)> {
    let mut all = record.0.lock().unwrap().clone();
    all.sort_by_key(|(p, o)| format!("{p:?} {o:?}"));
    all
}

/// Under `-L`, a symlink that leads back up to an ancestor is a cycle: the copy refuses it,
/// and the dry run, walking as the copy walks, refuses the same entry instead of planning the
/// loop over and over.
#[test]
fn dry_run_and_copy_agree_on_a_cycle_under_dereference() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    fs::create_dir_all(src.join("a/b")).unwrap();
    fs::write(src.join("a/b/f"), "f\n").unwrap();
    symlink("../..", src.join("a/b/up")).unwrap();
    let mut opts = Options::archive();
    opts.dereference = mimeo::Dereference::Always;
    let pairs = [CopyPair::new(&src, &dst)];
    let planned = Record::default();
    mimeo::dry_run(&pairs, &opts, &planned);
    let done = Record::default();
    mimeo::copy(&pairs, &opts, &done);
    assert_eq!(
        done.of(&src.join("a/b/up")),
        [Outcome::Refused(Refusal::Cycle)]
    );
    assert_eq!(sorted(&planned), sorted(&done));
}

/// The progress totals count what the copy copies: every entry, the regular files and their
/// sizes, also in a directory large enough to be shared among workers.
#[test]
fn scan_totals_match_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    fs::create_dir_all(src.join("many")).unwrap();
    fs::create_dir_all(src.join("a/b")).unwrap();
    for i in 0..1500 {
        fs::write(src.join(format!("many/{i}")), "x".repeat(i % 7)).unwrap();
    }
    fs::write(src.join("a/b/f"), "some data\n").unwrap();
    symlink("b/f", src.join("a/l")).unwrap();
    let mut opts = Options::archive();
    opts.jobs = 2;
    let pairs = [CopyPair::new(&src, &dst)];
    let totals = mimeo::Totals::default();
    mimeo::scan(&pairs, &opts, &totals, &mimeo::Control::new());
    let copied = mimeo::copy(&pairs, &opts, &mimeo::NoObserver);
    assert_eq!(copied.errors, 0);
    let total = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
    assert!(totals.complete.load(std::sync::atomic::Ordering::Relaxed));
    assert_eq!(total(&totals.files), copied.files);
    assert_eq!(total(&totals.files), 1501);
    assert_eq!(total(&totals.bytes), copied.bytes);
    assert_eq!(
        total(&totals.entries),
        copied.files + copied.directories + copied.symlinks
    );
}
