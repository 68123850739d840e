//! Runs that share a filesystem never remove each other's live temporaries or markers
//! (docs/guarantees.md §10). Scratch entries are named `.mimeo-HOST-BOOT-PIDNS-PID-START-N.tmp|partial`;
//! the names here are of the previous version, `.mimeo-HOST-PID-START-N`, which count as this
//! boot's and PID namespace's. A re-run removes another run's leftovers only when that run is
//! provably dead (this host, and no process with that pid and start time), or, for other
//! hosts, when told to. Other namespaces: `crates/mimeo-cli/tests/hardening.rs`.

use std::fs;
use std::path::Path;

use mimeo::{CopyPair, NoObserver, Options, Overwrite};
use mimeo_testkit::FsKind;
use mimeo_testkit::files::scratch;

/// This host's id as mimeo derives it: the first 32 bits of /etc/machine-id.
fn host_id() -> u32 {
    let id = fs::read_to_string("/etc/machine-id").expect("/etc/machine-id");
    u32::from_str_radix(&id.trim()[..8], 16).unwrap()
}

/// Field 22 of /proc/PID/stat: when the process started.
fn start_time(pid: u32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_ascii_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
}

fn scratch_name(host: u32, pid: u32, start: u64, n: u32, suffix: &str) -> String {
    format!(".mimeo-{host:08x}-{pid}-{start:x}-{n:x}.{suffix}")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn only_provably_dead_runs_leftovers_are_removed() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
        fs::create_dir(&src).unwrap();
        fs::write(src.join("f"), b"data").unwrap();
        mimeo::copy(
            &[CopyPair::new(&src, &dst)],
            &Options::archive(),
            &NoObserver,
        );

        let me = std::process::id();
        let (here, start) = (host_id(), start_time(me));
        let init_start = start_time(1);
        // A process id no process can have on this host.
        let dead = 4_000_000;
        let dead_here = [
            scratch_name(here, dead, 77, 1, "tmp"),
            scratch_name(here, dead, 77, 2, "partial"),
            // This very pid, with another start time: a run before the pid was reused.
            scratch_name(here, me, start - 1, 3, "tmp"),
        ];
        let live = [
            // A live process of this host (init, with its own start time).
            scratch_name(here, 1, init_start, 4, "tmp"),
            // The same pid and start time as this process, but another host: from here it
            // can never be proven dead.
            scratch_name(here ^ 1, me, start, 5, "tmp"),
            scratch_name(here ^ 1, dead, 77, 6, "partial"),
        ];
        for name in dead_here.iter().chain(&live) {
            fs::write(dst.join(name), b"").unwrap();
        }
        let merge = Options::archive();
        mimeo::copy(&[CopyPair::new(&src, &dst)], &merge, &NoObserver);
        let mut expected: Vec<String> = live.to_vec();
        expected.push("f".into());
        expected.sort();
        assert_eq!(
            names(&dst),
            expected,
            "{kind}: only dead runs' leftovers go"
        );

        // -n replaces nothing and keeps everything.
        let mut no_clobber = Options::archive();
        no_clobber.overwrite = Overwrite::NoClobber;
        fs::write(dst.join(&dead_here[0]), b"").unwrap();
        mimeo::copy(&[CopyPair::new(&src, &dst)], &no_clobber, &NoObserver);
        assert!(
            dst.join(&dead_here[0]).exists(),
            "{kind}: -n keeps leftovers"
        );

        // Told that no run elsewhere goes on, the other host's leftovers go too; a live run
        // of this host is still never touched.
        let mut all_hosts = Options::archive();
        all_hosts.clean_other_hosts = true;
        mimeo::copy(&[CopyPair::new(&src, &dst)], &all_hosts, &NoObserver);
        assert_eq!(
            names(&dst),
            vec![live[0].clone(), "f".to_string()],
            "{kind}"
        );
        assert_eq!(fs::read(dst.join("f")).unwrap(), b"data", "{kind}");
    }
}

/// Another host's in-progress marker means its entries may be incomplete: `-u` takes an
/// entry there as up to date only if it is provably finished, and keeps the marker.
#[test]
fn another_hosts_marker_makes_update_strict_and_stays() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
    fs::create_dir(&src).unwrap();
    fs::write(src.join("f"), b"new data").unwrap();
    let stamp = |p: &Path, when: &str| {
        mimeo_testkit::run_ok("touch", &["-d", when, p.to_str().unwrap()]);
    };
    stamp(&src.join("f"), "2001-01-01");
    fs::create_dir(&dst).unwrap();
    // Same size, newer: a plain -u would take it as up to date.
    fs::write(dst.join("f"), b"old data").unwrap();
    stamp(&dst.join("f"), "2002-02-02");
    let marker = scratch_name(host_id() ^ 1, std::process::id(), 5, 1, "partial");
    fs::write(dst.join(&marker), b"").unwrap();
    let mut update = Options::archive();
    update.overwrite = Overwrite::Update;
    mimeo::copy(&[CopyPair::new(&src, &dst)], &update, &NoObserver);
    assert_eq!(fs::read(dst.join("f")).unwrap(), b"new data");
    assert!(dst.join(&marker).exists(), "a live run's marker stays");
}
