//! Shared reads in `mimeo-cat`, on loop-mounted btrfs and XFS (reflink=1): where a part's
//! bytes must be read (a pipe, `/dev/null`, a file on ext4), the blocks a clone shares with
//! its origin, or with an earlier part of the run, are read through that file, and the JSON
//! summary counts them in `shared_read_bytes`. The output is always byte for byte `cat`'s.
//! Parts on ext4 and tmpfs, which share no blocks, are read plainly.

use mimeo_testkit::files::scratch;
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{FsKind, LoopFs};
use serde_json::Value;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const MIB: u64 = 1 << 20;

fn random_file(path: &Path, len: u64, seed: u64) {
    let mut v = vec![0u8; len as usize];
    Rng::new(seed).fill(&mut v);
    let mut f = File::create(path).unwrap();
    f.write_all(&v).unwrap();
    f.sync_all().unwrap();
}

/// A clone of `src` at `dst` made by the engine, as `mimeo --record-origin` makes it, or a
/// bare `FICLONE` without a record.
fn clone_of(src: &Path, dst: &Path, record: bool) {
    if record {
        let mut o = mimeo::Options::default();
        o.record_origin = true;
        let out = mimeo::copy_file(src, dst, &o).unwrap();
        assert_eq!(out.method, mimeo::Method::Clone, "{}", dst.display());
    } else {
        let d = File::create(dst).unwrap();
        rustix::fs::ioctl_ficlone(&d, File::open(src).unwrap()).unwrap();
    }
}

/// Waits until the files' ctimes are older than shared reads require.
fn settle() {
    std::thread::sleep(Duration::from_millis(120));
}

/// Drops the files' clean pages from the page cache.
fn drop_cache(paths: &[&Path]) {
    for p in paths {
        let f = File::open(p).unwrap();
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    }
}

/// Runs `mimeo-cat --json [extra] parts` with its output to `out` (a pipe when None);
/// returns the run and its summary.
fn mimeo_cat(parts: &[&Path], extra: &[&str], out: Option<File>) -> (Output, Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mimeo-cat"));
    cmd.arg("--json").args(extra).args(parts);
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    match out {
        Some(f) => cmd.stdout(f),
        None => cmd.stdout(Stdio::piped()),
    };
    let run = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr).to_string();
    assert!(run.status.success(), "mimeo-cat: {err}");
    let summary: Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
    assert_eq!(summary["type"], "summary", "{err}");
    (run, summary)
}

fn cat(parts: &[&Path]) -> Vec<u8> {
    let run = Command::new("cat").args(parts).output().unwrap();
    assert!(run.status.success());
    run.stdout
}

fn shared_bytes(summary: &Value) -> u64 {
    summary["shared_read_bytes"]
        .as_u64()
        .unwrap_or_else(|| panic!("no shared_read_bytes in {summary}"))
}

fn ext4() -> Option<LoopFs> {
    LoopFs::try_new(FsKind::Ext4, 300)
}

/// A clone made with an origin record, catted alone after its parent was read: to a pipe, to
/// `/dev/null` and to a file on ext4, its shared blocks are read through the parent, and
/// the bytes are cat's. Without shared reads, nothing is.
#[test]
fn a_clone_with_an_origin_record_is_read_through_its_parent() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let (Some(fs), Some(other)) = (scratch(kind), ext4()) else {
            continue;
        };
        let (parent, clone) = (fs.path().join("parent"), fs.path().join("clone"));
        random_file(&parent, 6 * MIB + 123, 1);
        clone_of(&parent, &clone, true);
        settle();
        let want = cat(&[&clone]);
        let (run, s) = mimeo_cat(&[&clone], &[], None);
        assert!(
            run.stdout == want,
            "{kind}: piped output differs from cat's"
        );
        assert_eq!(shared_bytes(&s), 6 * MIB + 123, "{kind}: pipe: {s}");

        drop_cache(&[&parent, &clone]);
        let (_, s) = mimeo_cat(&[&clone], &[], Some(File::create("/dev/null").unwrap()));
        assert_eq!(shared_bytes(&s), 6 * MIB + 123, "{kind}: /dev/null: {s}");

        let out = other.path().join("out");
        let (_, s) = mimeo_cat(&[&clone], &[], Some(File::create(&out).unwrap()));
        assert_eq!(shared_bytes(&s), 6 * MIB + 123, "{kind}: ext4: {s}");
        assert!(std::fs::read(&out).unwrap() == want, "{kind}: ext4 output");

        let (run, s) = mimeo_cat(&[&clone], &["--no-shared-reads"], None);
        assert_eq!(shared_bytes(&s), 0, "{kind}: --no-shared-reads: {s}");
        assert!(
            run.stdout == want,
            "{kind}: plain output differs from cat's"
        );

        // A regular output on the parts' own filesystem is cloned into: no byte is read.
        let same = fs.path().join("same");
        let (_, s) = mimeo_cat(&[&clone], &[], Some(File::create(&same).unwrap()));
        assert_eq!(shared_bytes(&s), 0, "{kind}: same filesystem: {s}");
        assert!(
            std::fs::read(&same).unwrap() == want,
            "{kind}: cloned output"
        );
    }
}

/// Two clones of one file with no origin record, and the file itself nowhere in the run: the
/// second part is read through the first (the run's registry), wholly or, where it was
/// rewritten, from itself; the parts between them and around them are plain.
#[test]
fn a_later_part_reads_through_an_earlier_part_that_holds_its_blocks() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = scratch(kind) else { continue };
        let d = fs.path();
        let (parent, a, b) = (d.join("parent"), d.join("a"), d.join("b"));
        random_file(&parent, 4 * MIB, 2);
        clone_of(&parent, &a, false);
        clone_of(&parent, &b, false);
        // 1 MiB of b rewritten: its own blocks, read from b itself.
        let f = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &[9u8; MIB as usize], MIB).unwrap();
        f.sync_all().unwrap();
        let small = d.join("small");
        random_file(&small, 1000, 3);
        settle();
        let parts: [&Path; 4] = [&small, &a, &small, &b];
        let want = cat(&parts);
        drop_cache(&[&parent, &a, &b]);
        let (run, s) = mimeo_cat(&parts, &[], None);
        assert!(run.stdout == want, "{kind}: output differs from cat's");
        assert_eq!(shared_bytes(&s), 3 * MIB, "{kind}: {s}");
        // Alone, b has nothing to read through.
        let (_, s) = mimeo_cat(&[&b], &[], None);
        assert_eq!(shared_bytes(&s), 0, "{kind}: {s}");
    }
}

/// Parts on ext4 and tmpfs, which share no blocks, are read plainly, and right.
#[test]
fn parts_on_filesystems_without_sharing_are_read_plainly() {
    let Some(fs) = ext4() else { return };
    let tmp = tempfile::tempdir_in("/dev/shm").unwrap();
    let mut parts: Vec<PathBuf> = Vec::new();
    for (i, dir) in [fs.path(), tmp.path()].into_iter().enumerate() {
        let (p, q) = (dir.join("p"), dir.join("q"));
        random_file(&p, 3 * MIB + 5, 10 + i as u64);
        std::fs::copy(&p, &q).unwrap();
        parts.extend([p, q]);
    }
    settle();
    let parts: Vec<&Path> = parts.iter().map(|p| p.as_path()).collect();
    let want = cat(&parts);
    let (run, s) = mimeo_cat(&parts, &[], None);
    assert!(run.stdout == want, "output differs from cat's");
    assert_eq!(shared_bytes(&s), 0, "{s}");
    assert_eq!(s["bytes"].as_u64(), Some(want.len() as u64), "{s}");
}
